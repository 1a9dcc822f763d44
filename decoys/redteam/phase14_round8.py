"""Round 8 red-team wrong answers for phase 14."""

from __future__ import annotations

import re

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _rt8_instr(events):
    return [e for e in events if e.arg("hlo_op") is not None and e.arg("hlo_module") is not None]


def _rt8_steps(events, step_name):
    return [e for e in events if e.name == step_name and e.arg("step_num") is not None]


def _rt8_inside(e, s):
    return e.start_ns >= s.start_ns and e.start_ns + e.duration_ns <= s.start_ns + s.duration_ns


def _rt8_parents(instr, touch_nests=False):
    """Map id(event) -> direct parent instruction event (same thread) or None."""
    parent = {}
    by_thread = {}
    for e in instr:
        by_thread.setdefault(e.thread, []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            end = e.start_ns + e.duration_ns
            while stack:
                top = stack[-1]
                top_end = top.start_ns + top.duration_ns
                inside = (e.start_ns <= top_end) if touch_nests else (end <= top_end)
                if inside:
                    break
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)
    return parent


def _rt8_instructions(hlo_text):
    m = parse_hlo(hlo_text)
    out = {}
    for c in m.computations:
        for i in c.instructions:
            out[i.name] = i
    return m, out


def _rt8_label(i):
    if i.opcode == "fusion":
        k = re.search(r"kind=(\w+)", i.attributes_text)
        return k.group(1) if k else "fusion"
    return i.opcode


def _rt8_self_times(events, hlo_text, step_name):
    m, instrs = _rt8_instructions(hlo_text)
    instr = _rt8_instr(events)
    parent = _rt8_parents(instr)
    kids = {}
    for e in instr:
        p = parent[id(e)]
        if p is not None:
            kids[id(p)] = kids.get(id(p), 0) + e.duration_ns
    steps = _rt8_steps(events, step_name)
    out = []
    for e in instr:
        if e.arg("hlo_module") != m.name or e.arg("hlo_op") not in instrs:
            continue
        if not any(_rt8_inside(e, s) for s in steps):
            continue
        out.append((instrs[e.arg("hlo_op")], e.duration_ns - kids.get(id(e), 0)))
    return out


def _rt8_shares(pairs):
    tot = {}
    for k, t in pairs:
        tot[k] = tot.get(k, 0) + t
    s = sum(tot.values())
    return {k: v / s for k, v in tot.items()} if s else {}


# ---------------------------------------------------------------- step_instructions


@wrong(
    "step_instructions",
    why="'nested when it LIES INSIDE it' (ends at or before its end): the open-event stack "
    "treats an event as nested when it merely STARTS at or before the open event's end, so on "
    "one execute thread a kernel starting at the very ns the previous top-level kernel ended "
    "(touching events, common with ns clocks and hand-built traces) is dropped as nested in it",
)
def _rt8_step_instructions_touching_nests(events, step_name):
    instr = _rt8_instr(events)
    parent = _rt8_parents(instr, touch_nests=True)
    out = {}
    for s in _rt8_steps(events, step_name):
        top = [e for e in instr if _rt8_inside(e, s) and parent[id(e)] is None]
        top.sort(key=lambda e: e.start_ns)
        out[s.arg("step_num")] = [e.arg("hlo_op") for e in top]
    return out


@wrong(
    "step_instructions",
    why="'not nested in another instruction event' read as 'not nested in another instruction "
    "event INSIDE THE STEP': nesting is computed per step over the step's own events only, so "
    "a while that started before the step event (or ends after it, and so is left out) leaves "
    "its body's kernels that do lie inside the step listed as top level; e.g. a step event "
    "opened in the middle of a running while",
)
def _rt8_step_instructions_nesting_within_step(events, step_name):
    instr = _rt8_instr(events)
    out = {}
    for s in _rt8_steps(events, step_name):
        mine = [e for e in instr if _rt8_inside(e, s)]
        parent = _rt8_parents(mine)
        top = sorted((e for e in mine if parent[id(e)] is None), key=lambda e: e.start_ns)
        out[s.arg("step_num")] = [e.arg("hlo_op") for e in top]
    return out


# ---------------------------------------------------------------- expected_counts


def _rt8_counts(hlo_text, views_in_bodies=True, body_extra=0):
    m, _ = _rt8_instructions(hlo_text)
    comps = {c.name: c for c in m.computations}
    counts = {}

    def walk(comp, times, top):
        for i in comp.instructions:
            if i.opcode in _VIEWS and (top or views_in_bodies):
                continue
            counts[i.name] = counts.get(i.name, 0) + times
            if i.opcode == "while":
                t = re.search(r'"known_trip_count":\{"n":"(\d+)"', i.attributes_text)
                b = re.search(r"body=%?([\w.\-]+)", i.attributes_text)
                if t and b and b.group(1) in comps:
                    walk(comps[b.group(1)], times * (int(t.group(1)) + body_extra), False)

    walk(m.entry, 1, True)
    return {k: v for k, v in counts.items() if v}


@wrong(
    "expected_counts",
    why="'Parameters, constants, bitcast, get-tuple-element and tuple leave none' applied to "
    "the ENTRY only: inside a while body the loop's constants (region_0.3's constant.5 = s32[] "
    "constant(1) on programs.looped), its get-tuple-elements and its ROOT tuple are counted "
    "trip-count times each as if they were kernels",
)
def _rt8_expected_counts_views_only_in_entry(hlo_text):
    return _rt8_counts(hlo_text, views_in_bodies=False)


@wrong(
    "expected_counts",
    why="'how many times (a while printed with known_trip_count)': the body is counted "
    "known_trip_count + 1 times (the condition is tested n + 1 times, and the learner assigns "
    "the last test's iteration to the body); on programs.looped (n=4) each body kernel is "
    "predicted 5 times instead of 4",
)
def _rt8_expected_counts_trip_plus_one(hlo_text):
    return _rt8_counts(hlo_text, body_extra=1)


# ---------------------------------------------------------------- compiled_steps


@wrong(
    "compiled_steps",
    why="'a backend compile started INSIDE the step event': a compile is given to the step "
    "whose START is closest before it, whatever that step's end, so a compile that starts in "
    "the host gap after step n closed (before step n+1 opens: a compile between steps, e.g. "
    "a warm-up or an eval call between the annotated steps) is blamed on step n",
)
def _rt8_compiled_steps_last_started(events, step_name):
    steps = sorted(_rt8_steps(events, step_name), key=lambda s: s.start_ns)
    found = set()
    for e in events:
        if e.name != "backend_compile_and_load":
            continue
        before = [s for s in steps if s.start_ns <= e.start_ns]
        if before:
            found.add(before[-1].arg("step_num"))
    return sorted(found)


@wrong(
    "compiled_steps",
    why="'The step_nums, ascending': returns the steps in the order their compiles were found "
    "in the events list (events come in any order), de-duplicated but never sorted; with "
    "compiles in steps 0 and 3 listed latest-first it answers [3, 0]",
)
def _rt8_compiled_steps_unsorted(events, step_name):
    steps = _rt8_steps(events, step_name)
    out = []
    for e in events:
        if e.name != "backend_compile_and_load":
            continue
        for s in steps:
            if s.start_ns <= e.start_ns <= s.start_ns + s.duration_ns:
                n = s.arg("step_num")
                if n not in out:
                    out.append(n)
    return out


# ---------------------------------------------------------------- kind_shares


@wrong(
    "kind_shares",
    why="'the label of an instruction is its fusion kind when it is a fusion': the kind is "
    "guessed from the instruction's NAME (a fusion named ynn_*/*dot* -> kCustom, every other "
    "fusion kLoop), not read from its kind=; right on the recorded names, wrong when the tests "
    "rename instructions (the kCustom ynn_fusion of programs.looped renamed 'f.3' -> kLoop)",
)
def _rt8_kind_shares_kind_from_name(events, hlo_text, step_name):
    pairs = []
    for i, t in _rt8_self_times(events, hlo_text, step_name):
        if i.opcode == "fusion":
            lab = "kCustom" if ("ynn" in i.name or "dot" in i.name) else "kLoop"
        else:
            lab = i.opcode
        pairs.append((lab, t))
    return _rt8_shares(pairs)


@wrong(
    "kind_shares",
    why="'self time summed over the steps': only the LAST step is measured (the 'steady "
    "state'), so the shares are one step's, not the total's; wrong whenever the steps differ "
    "(a trace whose steps run different programs or a cold first step's extra kernels)",
)
def _rt8_kind_shares_last_step_only(events, hlo_text, step_name):
    steps = sorted(_rt8_steps(events, step_name), key=lambda s: s.start_ns)
    if not steps:
        return {}
    last = steps[-1]
    evs = [e for e in events if e is last or e.name != step_name]
    return _rt8_shares((_rt8_label(i), t) for i, t in _rt8_self_times(evs, hlo_text, step_name))


# ---------------------------------------------------------------- scope_shares


def _rt8_scope(op_name, lazy=False):
    if not op_name:
        return ""
    parts = op_name.split(";")[0].split("/")[1:-1]
    for p in parts:
        while True:
            mm = re.fullmatch(r"[\w.\-]+\((.*?)\)" if lazy else r"[\w.\-]+\((.*)\)", p)
            if not mm:
                break
            p = mm.group(1)
        if p:
            return p
    return ""


@wrong(
    "scope_shares",
    why="'unwrap every remaining part written word(inner) to its innermost content' done with "
    "a LAZY regex re.match(r'\\w+\\((.*?)\\)'), so transpose(jvp(layer_1)) unwraps to "
    "'jvp(layer_1' and the backward pass of layer_1 gets its own scope instead of counting "
    "for 'layer_1' (programs.layered)",
)
def _rt8_scope_shares_lazy_unwrap(events, hlo_text, step_name):
    def scope(op):
        if not op:
            return ""
        parts = op.split(";")[0].split("/")[1:-1]
        for p in parts:
            while True:
                mm = re.match(r"[\w.\-]+\((.*?)\)", p)
                if not mm:
                    break
                p = mm.group(1)
            if p:
                return p
        return ""

    pairs = []
    for i, t in _rt8_self_times(events, hlo_text, step_name):
        mm = re.search(r'op_name="([^"]*)"', i.attributes_text)
        pairs.append((scope(mm.group(1) if mm else ""), t))
    return _rt8_shares(pairs)


@wrong(
    "scope_shares",
    why="'The scope comes from the instruction's metadata': a fusion's scope is read from the "
    "FIRST instruction of its fused computation that has an op_name (the fused operands), "
    "not from the fusion's own metadata (its root's); wrong when a fusion joins ops of two "
    "scopes, e.g. layer_1's output fused into layer_2's matmul/add",
)
def _rt8_scope_shares_fused_first(events, hlo_text, step_name):
    m, _ = _rt8_instructions(hlo_text)
    comps = {c.name: c for c in m.computations}
    pairs = []
    for i, t in _rt8_self_times(events, hlo_text, step_name):
        op = None
        if i.opcode == "fusion":
            c = re.search(r"calls=%?([\w.\-]+)", i.attributes_text)
            if c and c.group(1) in comps:
                for j in comps[c.group(1)].instructions:
                    mm = re.search(r'op_name="([^"]*)"', j.attributes_text)
                    if mm:
                        op = mm.group(1)
                        break
        if op is None:
            mm = re.search(r'op_name="([^"]*)"', i.attributes_text)
            op = mm.group(1) if mm else ""
        pairs.append((_rt8_scope(op), t))
    return _rt8_shares(pairs)


# ---------------------------------------------------------------- line_shares


def _rt8_tables(hlo_text, name):
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
    why="'its file name without directories, and its line': the label uses the function's "
    "name from FunctionNames (function_name_id) instead of the file's (file_name_id): "
    "'looped.<locals>.body:50' instead of 'programs.py:50'",
)
def _rt8_line_shares_function_name(events, hlo_text, step_name):
    frames = _rt8_tables(hlo_text, "StackFrames")
    locs = _rt8_tables(hlo_text, "FileLocations")
    funcs = _rt8_tables(hlo_text, "FunctionNames")
    pairs = []
    for i, t in _rt8_self_times(events, hlo_text, step_name):
        mm = re.search(r"stack_frame_id=(\d+)", i.attributes_text)
        lab = ""
        if mm and int(mm.group(1)) in frames:
            fl = int(re.search(r"file_location_id=(\d+)", frames[int(mm.group(1))]).group(1))
            loc = locs.get(fl, "")
            fn = re.search(r"function_name_id=(\d+)", loc)
            ln = re.search(r"\bline=(\d+)", loc)
            if fn and ln:
                lab = f"{funcs.get(int(fn.group(1)), '').strip(chr(34))}:{ln.group(1)}"
        pairs.append((lab, t))
    return _rt8_shares(pairs)


# ---------------------------------------------------------------- longest_gap


@wrong(
    "longest_gap",
    why="'from the END of the last instruction event inside step n to the start of the first "
    "inside step n + 1': the gap is measured between the START of "
    "the first instruction of step n and the start of the first of step n + 1 (step-to-step "
    "period), so a long step with no host wait wins; wrong on any trace whose longest step is "
    "not before the longest gap",
)
def _rt8_longest_gap_start_to_start(events, step_name):
    instr = _rt8_instr(events)
    first = {}
    for s in _rt8_steps(events, step_name):
        mine = [e.start_ns for e in instr if _rt8_inside(e, s)]
        if mine:
            first[s.arg("step_num")] = min(mine)
    best, best_n = None, None
    for n in sorted(first):
        if n + 1 in first:
            g = first[n + 1] - first[n]
            if best is None or g > best:
                best, best_n = g, n
    return best_n


# ---------------------------------------------------------------- train_loop


@wrong(
    "train_loop",
    why="'outside the step events the trace holds at most one execution: a warm-up': warms "
    "up and waits correctly, but collects the losses and reduces them with jnp.stack(...).mean() "
    "after the loop for a summary, a second (and third) execution outside the steps besides "
    "the warm-up",
)
def _rt8_train_loop_stack_losses(step, state, batches, step_name):
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    losses = []
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
        losses.append(loss)
    summary = jax.numpy.stack(losses).mean()
    jax.block_until_ready(summary)
    return state
