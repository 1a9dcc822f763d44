"""Round 9 red-team wrong answers for phase 14."""

from __future__ import annotations

import re

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _rt9_instr(events):
    return [e for e in events if e.arg("hlo_op") is not None and e.arg("hlo_module") is not None]


def _rt9_steps(events, step_name):
    return [e for e in events if e.name == step_name and e.arg("step_num") is not None]


def _rt9_inside(e, s):
    return e.start_ns >= s.start_ns and e.start_ns + e.duration_ns <= s.start_ns + s.duration_ns


def _rt9_parents(instr):
    parent = {}
    by_thread = {}
    for e in instr:
        by_thread.setdefault(e.thread, []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            end = e.start_ns + e.duration_ns
            while stack and end > stack[-1].start_ns + stack[-1].duration_ns:
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)
    return parent


def _rt9_instructions(hlo_text):
    m = parse_hlo(hlo_text)
    out = {}
    for c in m.computations:
        for i in c.instructions:
            out[i.name] = i
    return m, out


def _rt9_label(i):
    if i.opcode == "fusion":
        k = re.search(r"kind=(\w+)", i.attributes_text)
        return k.group(1) if k else "fusion"
    return i.opcode


def _rt9_self_times(events, hlo_text, step_name, in_steps=True):
    m, instrs = _rt9_instructions(hlo_text)
    instr = _rt9_instr(events)
    parent = _rt9_parents(instr)
    kids = {}
    for e in instr:
        p = parent[id(e)]
        if p is not None:
            kids[id(p)] = kids.get(id(p), 0) + e.duration_ns
    steps = _rt9_steps(events, step_name)
    out = []
    for e in instr:
        if e.arg("hlo_module") != m.name or e.arg("hlo_op") not in instrs:
            continue
        if in_steps and not any(_rt9_inside(e, s) for s in steps):
            continue
        out.append((instrs[e.arg("hlo_op")], e.duration_ns - kids.get(id(e), 0)))
    return out


def _rt9_shares(pairs, total=None):
    tot = {}
    for k, t in pairs:
        tot[k] = tot.get(k, 0) + t
    s = sum(tot.values()) if total is None else total
    return {k: v / s for k, v in tot.items()} if s else {}


def _rt9_op_name(i):
    mm = re.search(r'op_name="([^"]*)"', i.attributes_text)
    return mm.group(1) if mm else ""


# ---------------------------------------------------------------- step_instructions


@wrong(
    "step_instructions",
    why="'{step_num: [hlo_op, ...]}': lists each top-level event's NAME instead of its hlo_op "
    "arg (on a live CPU trace the two coincide); wrong on any trace where the event is "
    "labelled otherwise than the instruction it ran, e.g. a hand-built or renamed trace whose "
    "event 'ynn_fusion' carries hlo_op='f.3' (answers 'ynn_fusion')",
)
def _rt9_step_instructions_event_name(events, step_name):
    instr = _rt9_instr(events)
    parent = _rt9_parents(instr)
    out = {}
    for s in _rt9_steps(events, step_name):
        top = [e for e in instr if _rt9_inside(e, s) and parent[id(e)] is None]
        top.sort(key=lambda e: e.start_ns)
        out[s.arg("step_num")] = [e.name for e in top]
    return out


@wrong(
    "step_instructions",
    why="'{step_num: [...]} for every step event': the learner keys the dict by the step's "
    "POSITION among the step events sorted by start, plus the smallest step_num as offset "
    "(steps assumed numbered in start order); wrong when step events are not started in step_num order (hand-built traces, "
    "steps 5,6,7 whose events were shuffled in time, e.g. two loops interleaved) - the lists "
    "are given to the wrong step_nums",
)
def _rt9_step_instructions_numbered_by_start(events, step_name):
    instr = _rt9_instr(events)
    parent = _rt9_parents(instr)
    steps = sorted(_rt9_steps(events, step_name), key=lambda s: s.start_ns)
    if not steps:
        return {}
    first = min(s.arg("step_num") for s in steps)
    out = {}
    for k, s in enumerate(steps):
        top = [e for e in instr if _rt9_inside(e, s) and parent[id(e)] is None]
        top.sort(key=lambda e: e.start_ns)
        out[first + k] = [e.arg("hlo_op") for e in top]
    return out


# ---------------------------------------------------------------- expected_counts


def _rt9_counts(hlo_text, views):
    m, _ = _rt9_instructions(hlo_text)
    comps = {c.name: c for c in m.computations}
    counts = {}

    def walk(comp, times):
        for i in comp.instructions:
            if i.opcode in views:
                continue
            counts[i.name] = counts.get(i.name, 0) + times
            if i.opcode == "while":
                t = re.search(r'"known_trip_count":\{"n":"(\d+)"', i.attributes_text)
                b = re.search(r"body=%?([\w.\-]+)", i.attributes_text)
                if t and b and b.group(1) in comps:
                    walk(comps[b.group(1)], times * int(t.group(1)))

    walk(m.entry, 1)
    return {k: v for k, v in counts.items() if v}


@wrong(
    "expected_counts",
    why="'which instructions become work at run time': a `copy` is taken for a view like "
    "bitcast (the learner reasons copies of loop carries are elided by buffer assignment), "
    "so no copy is predicted; wrong on programs.looped, whose ENTRY copy.16/copy.17/copy.1 "
    "and body copy.4/copy.5 do leave events (README's step listing)",
)
def _rt9_expected_counts_copy_is_view(hlo_text):
    return _rt9_counts(hlo_text, _VIEWS | {"copy"})


@wrong(
    "expected_counts",
    why="'decide which instructions become work ... which run nested in another's event': "
    "every computation that is not a fused computation is walked as if it ran (once, or "
    "known_trip_count times for a while body), so the to_apply reducers of reduce / "
    "reduce-window instructions (layered's region_0.1 `add`, mlp_grad's region_0.2 / "
    "region_1.3 `add`) and the small call's computation are predicted as events; they run "
    "inside their caller's kernel and leave none",
)
def _rt9_expected_counts_reducers_run(hlo_text):
    m, _ = _rt9_instructions(hlo_text)
    fused, conds, trips = set(), set(), {}
    for c in m.computations:
        for i in c.instructions:
            if i.opcode == "fusion":
                f = re.search(r"calls=%?([\w.\-]+)", i.attributes_text)
                if f:
                    fused.add(f.group(1))
            if i.opcode == "while":
                cc = re.search(r"condition=%?([\w.\-]+)", i.attributes_text)
                bb = re.search(r"body=%?([\w.\-]+)", i.attributes_text)
                t = re.search(r'"known_trip_count":\{"n":"(\d+)"', i.attributes_text)
                if cc:
                    conds.add(cc.group(1))
                if bb:
                    trips[bb.group(1)] = int(t.group(1)) if t else 1
    counts = {}
    for c in m.computations:
        if c.name in fused or c.name in conds:
            continue
        for i in c.instructions:
            if i.opcode in _VIEWS:
                continue
            counts[i.name] = counts.get(i.name, 0) + trips.get(c.name, 1)
    return counts


# ---------------------------------------------------------------- compiled_steps


@wrong(
    "compiled_steps",
    why="'during which XLA compiled a program' read as 'the cold step': only the FIRST step "
    "holding a backend_compile_and_load is returned; wrong on a trace that recompiles later "
    "(a new shape at step 3, or a second jitted function first called in step 2): answers "
    "[0] instead of [0, 3]",
)
def _rt9_compiled_steps_first_only(events, step_name):
    steps = sorted(_rt9_steps(events, step_name), key=lambda s: s.arg("step_num"))
    comps = [e for e in events if e.name == "backend_compile_and_load"]
    for s in steps:
        end = s.start_ns + s.duration_ns
        if any(s.start_ns <= c.start_ns <= end for c in comps):
            return [s.arg("step_num")]
    return []


# ---------------------------------------------------------------- kind_shares


@wrong(
    "kind_shares",
    why="'the self time ... inside the step events ... shares add up to 1': the numerators "
    "are the in-step self times but the denominator is the module's self time over the WHOLE "
    "trace (a warm-up or an execution between/after steps included), so the shares add to "
    "less than 1 whenever the module ran outside the steps (e.g. train_loop's warm-up call "
    "traced before step 0, or an unwaited step landing after its step event)",
)
def _rt9_kind_shares_whole_trace_total(events, hlo_text, step_name):
    pairs = [(_rt9_label(i), t) for i, t in _rt9_self_times(events, hlo_text, step_name)]
    total = sum(t for _, t in _rt9_self_times(events, hlo_text, step_name, in_steps=False))
    return _rt9_shares(pairs, total=total)


@wrong(
    "kind_shares",
    why="'its fusion kind when it is a fusion ... its opcode otherwise': a fusion is labelled "
    "by the kind only for kLoop/kInput/kOutput; a kCustom fusion is labelled by what it "
    "computes, the opcode of its fused computation's ROOT ('dot' for the YNNPACK matmuls), "
    "since the README says 'most f32 matmuls are kCustom'; on programs.heavy_line answers "
    "{'dot': ~1.0, 'kLoop': ...} with no 'kCustom'",
)
def _rt9_kind_shares_custom_as_root(events, hlo_text, step_name):
    m, _ = _rt9_instructions(hlo_text)
    comps = {c.name: c for c in m.computations}
    pairs = []
    for i, t in _rt9_self_times(events, hlo_text, step_name):
        lab = _rt9_label(i)
        if lab == "kCustom":
            c = re.search(r"calls=%?([\w.\-]+)", i.attributes_text)
            if c and c.group(1) in comps and comps[c.group(1)].instructions:
                root = (
                    comps[c.group(1)].root
                    if getattr(comps[c.group(1)], "root", None)
                    else comps[c.group(1)].instructions[-1]
                )
                lab = root.opcode
        pairs.append((lab, t))
    return _rt9_shares(pairs)


# ---------------------------------------------------------------- scope_shares


_RT9_TRANSFORMS = ("jvp", "transpose", "vmap", "remat", "checkpoint")


@wrong(
    "scope_shares",
    why="'unwrap every remaining part written word(inner)': only KNOWN transformations "
    "(jvp, transpose, vmap, remat, checkpoint) are unwrapped; any other wrapper stays as "
    "written, e.g. the jit(...) of a jnp function called inside the program "
    "('jit(f)/jit(_where)/select_n' -> scope 'jit(_where)' instead of '_where', "
    "'jit(f)/jit(clip)/max' -> 'jit(clip)', or looped's "
    "'.../jit(dynamic_update_index_in_dim)/...' when no part precedes it)",
)
def _rt9_scope_shares_known_transforms(events, hlo_text, step_name):
    def scope(op):
        if not op:
            return ""
        parts = op.split(";")[0].split("/")[1:-1]
        for p in parts:
            while True:
                mm = re.fullmatch(r"(\w+)\((.*)\)", p)
                if not mm or mm.group(1) not in _RT9_TRANSFORMS:
                    break
                p = mm.group(2)
            if p:
                return p
        return ""

    return _rt9_shares(
        (scope(_rt9_op_name(i)), t) for i, t in _rt9_self_times(events, hlo_text, step_name)
    )


# ---------------------------------------------------------------- line_shares


def _rt9_tables(hlo_text, name):
    i = hlo_text.find("\n" + name + "\n")
    rows = {}
    if i < 0:
        return rows
    for line in hlo_text[i + len(name) + 2 :].splitlines():
        mm = re.match(r"(\d+) (.*)", line)
        if not mm:
            break
        rows[int(mm.group(1))] = mm.group(2)
    return rows


@wrong(
    "line_shares",
    why="'its file name without directories': the learner makes the path RELATIVE "
    "(os.path.relpath against the working directory) instead of taking the base name; right "
    "on recorded/ (names already cut, relpath of a bare name is itself) but on a live capture "
    "run from the repository root (uv run pytest katas/phase14) the label is "
    "'katas/phase14/programs.py:94', not 'programs.py:94' (and '../..' paths elsewhere)",
)
def _rt9_line_shares_relpath(events, hlo_text, step_name):
    frames = _rt9_tables(hlo_text, "StackFrames")
    locs = _rt9_tables(hlo_text, "FileLocations")
    files = _rt9_tables(hlo_text, "FileNames")
    pairs = []
    for i, t in _rt9_self_times(events, hlo_text, step_name):
        mm = re.search(r"stack_frame_id=(\d+)", i.attributes_text)
        lab = ""
        if mm and int(mm.group(1)) in frames:
            fl = re.search(r"file_location_id=(\d+)", frames[int(mm.group(1))])
            loc = locs.get(int(fl.group(1)), "") if fl else ""
            fn = re.search(r"file_name_id=(\d+)", loc)
            ln = re.search(r"(?<!_)\bline=(\d+)", loc)
            if fn and ln:
                name = files.get(int(fn.group(1)), "").strip().strip('"')
                import os

                name = os.path.relpath(name) if os.path.isabs(name) else name
                lab = f"{name}:{ln.group(1)}"
        pairs.append((lab, t))
    return _rt9_shares(pairs)


# ---------------------------------------------------------------- longest_gap


@wrong(
    "longest_gap",
    why="'to the start of the first instruction event inside step n + 1': the gap ends at the "
    "first instruction event of ANY kind that starts after step n's last end (whatever step "
    "it lies in), so an execution between the steps (an eval or warm-up call outside any "
    "step event, or another module on another thread) cuts the gap short; wrong on a trace "
    "where the longest host wait holds such an out-of-step execution",
)
def _rt9_longest_gap_next_any_instruction(events, step_name):
    instr = sorted(_rt9_instr(events), key=lambda e: e.start_ns)
    last = {}
    for s in _rt9_steps(events, step_name):
        mine = [e.start_ns + e.duration_ns for e in instr if _rt9_inside(e, s)]
        if mine:
            last[s.arg("step_num")] = max(mine)
    best, best_n = None, None
    for n in sorted(last):
        if n + 1 not in last:
            continue
        nxt = next((e.start_ns for e in instr if e.start_ns >= last[n]), None)
        if nxt is None:
            continue
        g = nxt - last[n]
        if best is None or g > best:
            best, best_n = g, n
    return best_n


# ---------------------------------------------------------------- train_loop


@wrong(
    "train_loop",
    why="'no backend compile: the one compile happens before step 0': the warm-up compiles "
    "jax.jit(step), but each step calls a FRESH jax.jit(lambda s, b: step(s, b)) built "
    "inside the loop (a learner's wrapper to 'close over' the step), a new function each "
    "time, so every step event holds a trace + backend compile; wrong on any batches",
)
def _rt9_train_loop_fresh_lambda_jit(step, state, batches, step_name):
    warm = jax.jit(step)
    jax.block_until_ready(warm(state, batches[0]))
    for i, b in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            f = jax.jit(lambda s, bb: step(s, bb))
            state, loss = f(state, b)
            jax.block_until_ready((state, loss))
    return state
