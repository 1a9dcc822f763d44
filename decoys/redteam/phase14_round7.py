"""Red team, phase 14, round 7: plausible wrong answers (each wrong per the kata.py contract)."""

from __future__ import annotations

import re
from collections import defaultdict

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

# ---- shared helpers (each decoy bends one of them) ------------------------------------------


def _rt7_end(e):
    return e.start_ns + e.duration_ns


def _rt7_is_instr(e):
    return e.arg("hlo_op") is not None and e.arg("hlo_module") is not None


def _rt7_steps(events, step_name):
    return [e for e in events if e.name == step_name and e.arg("step_num") is not None]


def _rt7_inside(e, s):
    return e.start_ns >= s.start_ns and _rt7_end(e) <= _rt7_end(s)


def _rt7_parents(instr, strict_end=False):
    """id(event) -> its direct parent instruction event (same thread) or None."""
    parent = {}
    by_thread = defaultdict(list)
    for e in instr:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            while stack:
                top = stack[-1]
                ok = e.start_ns >= top.start_ns and (
                    _rt7_end(e) < _rt7_end(top) if strict_end else _rt7_end(e) <= _rt7_end(top)
                )
                if ok:
                    break
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)
    return parent


def _rt7_module(hlo_text):
    mod = parse_hlo(hlo_text)
    table = {}
    for comp in mod.computations:
        for ins in comp.instructions:
            table[ins.name] = ins
    return mod, table


def _rt7_self_times(events, hlo_text, step_name):
    """[(instruction, self time)] for the module's instruction events inside the steps."""
    mod, table = _rt7_module(hlo_text)
    instr = [e for e in events if _rt7_is_instr(e)]
    parent = _rt7_parents(instr)
    child_sum = defaultdict(int)
    for e in instr:
        p = parent[id(e)]
        if p is not None:
            child_sum[id(p)] += e.duration_ns
    steps = _rt7_steps(events, step_name)
    out = []
    for e in instr:
        if e.arg("hlo_module") != mod.name or e.arg("hlo_op") not in table:
            continue
        if not any(_rt7_inside(e, s) for s in steps):
            continue
        out.append((table[e.arg("hlo_op")], e.duration_ns - child_sum[id(e)]))
    return out


def _rt7_shares(pairs, label_of):
    acc = defaultdict(float)
    for ins, t in pairs:
        acc[label_of(ins)] += t
    total = sum(acc.values())
    return {k: v / total for k, v in acc.items()} if total else {}


def _rt7_kind(ins):
    if ins.opcode == "fusion":
        m = re.search(r"kind=(\w+)", ins.attributes_text)
        return m.group(1) if m else "fusion"
    return ins.opcode


def _rt7_op_name(ins):
    m = re.search(r'op_name="([^"]*)"', ins.attributes_text)
    return m.group(1) if m else ""


def _rt7_unwrap(part):
    while True:
        m = re.fullmatch(r"[\w\-.]+\((.*)\)", part)
        if not m:
            return part
        part = m.group(1)


# ---- step_instructions -----------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="'an event is nested in another of the same thread when it LIES INSIDE it' (inside = "
    "ends at or before its end): nesting is tested with a strict end (child end < parent end), "
    "so the last body event of a while, ending at the very ns the while's event ends (a "
    "hand-built trace, or a coarse clock), is listed at top level after the while.",
)
def _rt7_step_instructions_strict_end(events, step_name):
    instr = [e for e in events if _rt7_is_instr(e)]
    parent = _rt7_parents(instr, strict_end=True)
    out = {}
    for s in _rt7_steps(events, step_name):
        top = [e for e in instr if _rt7_inside(e, s) and parent[id(e)] is None]
        top.sort(key=lambda e: e.start_ns)
        out[s.arg("step_num")] = [e.arg("hlo_op") for e in top]
    return out


@wrong(
    "step_instructions",
    why="'List the instruction events inside the step event that are not nested in another "
    "instruction event': an event is treated as nested when it lies inside ANY event of its "
    "thread with a duration (ThunkExecutor::Execute, ThreadpoolListener regions, not only "
    "instruction events), which drops top-level kernels that the runtime wraps in its own "
    "region events; wrong whenever an execute thread carries such a wrapper around them.",
)
def _rt7_step_instructions_any_parent(events, step_name):
    timed = [e for e in events if e.duration_ns > 0 and e.name != step_name]
    by_thread = defaultdict(list)
    for e in timed:
        by_thread[e.thread].append(e)
    out = {}
    for s in _rt7_steps(events, step_name):
        top = []
        for e in events:
            if not _rt7_is_instr(e) or not _rt7_inside(e, s):
                continue
            nested = any(
                o is not e
                and _rt7_inside(e, o)
                and o.duration_ns >= e.duration_ns
                and not o.name.startswith("PjitFunction")
                for o in by_thread[e.thread]
            )
            if not nested:
                top.append(e)
        top.sort(key=lambda e: e.start_ns)
        out[s.arg("step_num")] = [e.arg("hlo_op") for e in top]
    return out


# ---- expected_counts -------------------------------------------------------------------------

_RT7_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _rt7_counts(hlo_text, skip_opcodes=(), nested_while_once=False):
    mod = parse_hlo(hlo_text)
    comps = {c.name: c for c in mod.computations}
    counts: dict[str, int] = {}

    def walk(comp, times, depth):
        for ins in comp.instructions:
            if ins.opcode in _RT7_VIEWS or ins.opcode in skip_opcodes:
                continue
            n = 1 if (nested_while_once and depth > 0 and ins.opcode == "while") else times
            counts[ins.name] = counts.get(ins.name, 0) + n
            if ins.opcode == "while":
                trips = re.search(r"known_trip_count[^0-9]*(\d+)", ins.attributes_text)
                body = re.search(r"body=%?([\w.\-]+)", ins.attributes_text)
                if trips and body and body.group(1) in comps:
                    walk(comps[body.group(1)], times * int(trips.group(1)), depth + 1)

    walk(mod.entry, 1, 0)
    return counts


@wrong(
    "expected_counts",
    why="README 'a library call such as the Eigen dot of a large matmul emits none' read as "
    "'an unfused dot leaves no event' (it is about the `end:` marker only): drops every `dot` "
    "instruction; wrong on programs.mlp_grad, whose backward pass keeps two unfused ENTRY "
    "dots (dot, dot.1) that each leave one event per call.",
)
def _rt7_expected_counts_no_dot(hlo_text):
    return _rt7_counts(hlo_text, skip_opcodes=("dot",))


@wrong(
    "expected_counts",
    why="'a while printed with known_trip_count ... runs nested, once per trip': the body's "
    "instructions are multiplied through every enclosing loop, but a `while` inside a body is "
    "counted once as if it were an ENTRY instruction; on programs.nested the inner fori_loop's "
    "while runs once per outer trip (3 events per call), this says 1.",
)
def _rt7_expected_counts_inner_while_once(hlo_text):
    return _rt7_counts(hlo_text, nested_while_once=True)


# ---- compiled_steps --------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="'a backend compile started INSIDE the step event': each backend_compile_and_load is "
    "given to the last step event that STARTED before it, even when that step had already "
    "ended; a loop that recompiles between two steps (a compile starting after step n closed "
    "and before step n + 1 opened, e.g. a shape change handled outside the annotation) lists "
    "step n, which held no compile.",
)
def _rt7_compiled_steps_last_started(events, step_name):
    steps = sorted(_rt7_steps(events, step_name), key=lambda s: s.start_ns)
    out = set()
    for c in events:
        if c.name != "backend_compile_and_load":
            continue
        before = [s for s in steps if s.start_ns <= c.start_ns]
        if before:
            out.add(before[-1].arg("step_num"))
    return sorted(out)


# ---- kind_shares -----------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="'every label that ran appears': labels under 1% of the time are dropped as profiler "
    "noise and the rest renormalised; on programs.heavy_line (f32[256,256] matmul) the kLoop "
    "add fusion takes ~0.4% and vanishes, kCustom is reported as 1.0.",
)
def _rt7_kind_shares_drop_tiny(events, hlo_text, step_name):
    shares = _rt7_shares(_rt7_self_times(events, hlo_text, step_name), _rt7_kind)
    kept = {k: v for k, v in shares.items() if v >= 0.01}
    total = sum(kept.values())
    return {k: v / total for k, v in kept.items()} if total else {}


@wrong(
    "kind_shares",
    why="'its fusion kind when it is a fusion (kLoop, kCustom...)': the kind is read from the "
    "last `kind` in the line, which for a YNNPACK fusion is backend_config's "
    'fusion_config kind "__ynn_fusion", not kind=kCustom; every f32 matmul fusion of '
    "programs.mlp_grad is labelled __ynn_fusion.",
)
def _rt7_kind_shares_backend_config_kind(events, hlo_text, step_name):
    def label(ins):
        if ins.opcode != "fusion":
            return ins.opcode
        kinds = re.findall(r'kind"?[=:]"?(\w+)', ins.attributes_text)
        return kinds[-1] if kinds else "fusion"

    return _rt7_shares(_rt7_self_times(events, hlo_text, step_name), label)


# ---- scope_shares ----------------------------------------------------------------------------


@wrong(
    "scope_shares",
    why="'the FIRST part that is not empty then is the scope': joins all the unwrapped parts "
    "between jit(fn) and the primitive into a path; right on programs.layered (one scope "
    "level), wrong on programs.looped, whose body matmul's op_name "
    "jit(looped)/while/body/eval_jaxpr/dot_general has scope 'while', not "
    "'while/body/eval_jaxpr'.",
)
def _rt7_scope_shares_whole_path(events, hlo_text, step_name):
    def label(ins):
        name = _rt7_op_name(ins).split(";")[0]
        parts = name.split("/")[1:-1]
        parts = [p for p in (_rt7_unwrap(p) for p in parts) if p]
        return "/".join(parts)

    return _rt7_shares(_rt7_self_times(events, hlo_text, step_name), label)


# ---- line_shares -----------------------------------------------------------------------------


def _rt7_tables(hlo_text):
    tables = {}
    current = None
    for line in hlo_text.splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(s, {})
            continue
        if current is None:
            continue
        if (
            not s
            or s.startswith(("ENTRY", "%", "HloModule"))
            or "{" in s
            and "=" in s
            and not s[0].isdigit()
        ):
            if s.startswith(("ENTRY", "%")):
                current = None
            continue
        m = re.match(r"(\d+)\s+(.*)", s)
        if m:
            current[int(m.group(1))] = m.group(2)
        else:
            current = None
    return tables


def _rt7_line_label(tables, frame_id, *, location_only_from_first=False):
    if frame_id is None:
        return ""
    frames = tables.get("StackFrames", {})
    locs = tables.get("FileLocations", {})
    names = tables.get("FileNames", {})
    frame = frames.get(frame_id)
    if frame is None:
        return ""
    loc_id = int(re.search(r"file_location_id=(\d+)", frame).group(1))
    loc = locs[loc_id]
    fid = int(re.search(r"file_name_id=(\d+)", loc).group(1))
    line = re.search(r"\bline=(\d+)", loc).group(1)
    fname = names[fid].strip('"').rsplit("/", 1)[-1]
    return f"{fname}:{line}"


@wrong(
    "line_shares",
    why="'No stack frame: \"\"' and 'grouped by the source line of each instruction': a fusion "
    "with no stack_frame_id of its own is given the line of the first fused instruction that "
    'has one (looking into its fused computation) instead of ""; wrong on any module whose '
    "wrapper fusion (wrapped_broadcast, wrapped_reduce...) carries no metadata while its "
    "fused body does: programs.reshaping's pad_bitcast_fusion / bitcast_slice_fusion (no frame, "
    'constants inside with frames) move from "" to programs.py:78.',
)
def _rt7_line_shares_borrow_fused_frame(events, hlo_text, step_name):
    tables = _rt7_tables(hlo_text)
    mod = parse_hlo(hlo_text)
    comps = {c.name: c for c in mod.computations}

    def frame_of(ins):
        m = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
        if m:
            return int(m.group(1))
        c = re.search(r"calls=%?([\w.\-]+)", ins.attributes_text)
        if ins.opcode == "fusion" and c and c.group(1) in comps:
            for inner in comps[c.group(1)].instructions:
                m = re.search(r"stack_frame_id=(\d+)", inner.attributes_text)
                if m:
                    return int(m.group(1))
        return None

    return _rt7_shares(
        _rt7_self_times(events, hlo_text, step_name),
        lambda ins: _rt7_line_label(tables, frame_of(ins)),
    )


# ---- longest_gap -----------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="'from the end of the last instruction event inside step n to the start of the first "
    "instruction event inside step n + 1': only TOP-LEVEL instruction events are used, and "
    "the 'last' one is the one that starts last, so a step ending in a while is measured from "
    "the while's end (right) but a step whose last-starting top-level kernel is short while "
    "an earlier one on a second thread (two executions at once) ends later is measured from "
    "the short one, overstating that gap.",
)
def _rt7_longest_gap_last_started(events, step_name):
    instr = [e for e in events if _rt7_is_instr(e)]
    parent = _rt7_parents(instr)
    top = [e for e in instr if parent[id(e)] is None]
    spans = {}
    for s in _rt7_steps(events, step_name):
        mine = sorted((e for e in top if _rt7_inside(e, s)), key=lambda e: e.start_ns)
        if mine:
            spans[s.arg("step_num")] = (mine[0].start_ns, _rt7_end(mine[-1]))
    best, best_gap = None, None
    for n in sorted(spans):
        if n + 1 in spans:
            gap = spans[n + 1][0] - spans[n][1]
            if best_gap is None or gap > best_gap:
                best, best_gap = n, gap
    return best


# ---- train_loop ------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="'the one compile happens before step 0' and 'outside the step events the trace holds "
    "at most one execution': warms up by calling the plain (unjitted) step once, which runs "
    "op by op (many small executions outside the steps) and does not compile the jitted "
    "step, so jax.jit(step)'s backend compile lands in step 0.",
)
def _rt7_train_loop_eager_warmup(step, state, batches, step_name):
    jax.block_until_ready(step(state, batches[0]))
    jitted = jax.jit(step)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "step_instructions",
    why="'for every step event named step_name' (events 'on any threads'): takes the step "
    "events of one thread only, the thread of the first step event met (the Python main "
    "thread of a plain loop); a trace whose steps are annotated on two threads (two loops, "
    "or two executions at once on two threads) loses every step of the other thread.",
)
def _rt7_step_instructions_one_step_thread(events, step_name):
    steps = _rt7_steps(events, step_name)
    if not steps:
        return {}
    thread = min(steps, key=lambda s: s.start_ns).thread
    steps = [s for s in steps if s.thread == thread]
    instr = [e for e in events if _rt7_is_instr(e)]
    parent = _rt7_parents(instr)
    out = {}
    for s in steps:
        top = [e for e in instr if _rt7_inside(e, s) and parent[id(e)] is None]
        top.sort(key=lambda e: e.start_ns)
        out[s.arg("step_num")] = [e.arg("hlo_op") for e in top]
    return out
