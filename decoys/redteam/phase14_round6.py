"""Red team, phase 14, round 6: wrong answers of kinds the earlier rounds did not write."""

from __future__ import annotations

import re
import statistics

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

# ---- helpers (right unless a decoy says otherwise) -------------------------------------------


def _rt6_a(e):
    return dict(e.args)


def _rt6_is_instr(e):
    return "hlo_op" in _rt6_a(e) and "hlo_module" in _rt6_a(e)


def _rt6_end(e):
    return e.start_ns + e.duration_ns


def _rt6_inside(e, s):
    return e.start_ns >= s.start_ns and _rt6_end(e) <= _rt6_end(s)


def _rt6_steps(events, step_name):
    return sorted(
        (e for e in events if e.name == step_name and "step_num" in _rt6_a(e)),
        key=lambda s: int(_rt6_a(s)["step_num"]),
    )


def _rt6_parents(instr):
    """id(event) -> the instruction event it is nested in directly (same thread), or None."""
    parent = {}
    by_thread = {}
    for e in instr:
        by_thread.setdefault(e.thread, []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -_rt6_end(e)))
        stack = []
        for e in evs:
            while stack and not _rt6_inside(e, stack[-1]):
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)
    return parent


def _rt6_step_instr(events, step_name):
    """[(step_num, [instruction events inside it])]"""
    instr = [e for e in events if _rt6_is_instr(e)]
    return [
        (int(_rt6_a(s)["step_num"]), [e for e in instr if _rt6_inside(e, s)])
        for s in _rt6_steps(events, step_name)
    ]


def _rt6_self_times(events, hlo_text, step_name):
    """[(instruction, self time, step_num)] for the module's events inside the steps."""
    module = parse_hlo(hlo_text)
    by_name = {}
    for comp in module.computations:
        for ins in comp.instructions:
            by_name[ins.name] = ins
    instr = [e for e in events if _rt6_is_instr(e)]
    parent = _rt6_parents(instr)
    child_sum = {}
    for e in instr:
        p = parent[id(e)]
        if p is not None:
            child_sum[id(p)] = child_sum.get(id(p), 0) + e.duration_ns
    out = []
    for num, evs in _rt6_step_instr(events, step_name):
        for e in evs:
            if _rt6_a(e)["hlo_module"] != module.name or _rt6_a(e)["hlo_op"] not in by_name:
                continue
            out.append((by_name[_rt6_a(e)["hlo_op"]], e.duration_ns - child_sum.get(id(e), 0), num))
    return out


def _rt6_kind(ins):
    if ins.opcode == "fusion":
        found = re.search(r"kind=(\w+)", ins.attributes_text)
        return found.group(1) if found else "fusion"
    return ins.opcode


def _rt6_share(pairs):
    total = {}
    for label, t in pairs:
        total[label] = total.get(label, 0) + t
    whole = sum(total.values())
    return {k: (v / whole if whole else 0.0) for k, v in total.items()}


def _rt6_op_name(ins):
    found = re.search(r'op_name="([^"]*)"', ins.attributes_text)
    return found.group(1) if found else ""


def _rt6_unwrap(part):
    while True:
        m = re.fullmatch(r"[\w.\-]+\((.*)\)", part)
        if not m:
            return part
        part = m.group(1)


def _rt6_tables(hlo_text):
    names, locs, frames = {}, {}, {}
    section = None
    for line in hlo_text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = line
            continue
        if not line.strip() or line.startswith(("HloModule", "%", "ENTRY", "ROOT", " ")):
            if line.startswith(("%", "ENTRY")):
                break
            continue
        row = line.split(" ", 1)
        if section == "FileNames":
            names[int(row[0])] = row[1].strip('"').rsplit("/", 1)[-1]
        elif section == "FileLocations":
            locs[int(row[0])] = (
                int(re.search(r"file_name_id=(\d+)", row[1]).group(1)),
                int(re.search(r"\bline=(\d+)", row[1]).group(1)),
            )
        elif section == "StackFrames":
            frames[int(row[0])] = int(re.search(r"file_location_id=(\d+)", row[1]).group(1))
    return names, locs, frames


def _rt6_frame_id(ins):
    found = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
    return int(found.group(1)) if found else None


def _rt6_counts(
    hlo_text,
    skip=("parameter", "constant", "bitcast", "get-tuple-element", "tuple"),
    count_while=True,
    names=None,
):
    """Events per call: ENTRY's working instructions once, a while's body times its trip count
    (nested whiles multiply), a small call one kernel, fusions one kernel."""
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = {}

    def visit(comp, times):
        for ins in comp.instructions:
            if ins.opcode in skip:
                continue
            if names is not None and ins.name not in names:
                continue
            if ins.opcode == "while":
                if count_while:
                    counts[ins.name] = counts.get(ins.name, 0) + times
                trips = int(
                    re.search(r'"known_trip_count":\{"n":"(\d+)"', ins.attributes_text).group(1)
                )
                body = re.search(r"body=%?([\w.\-]+)", ins.attributes_text).group(1)
                visit(comps[body.lstrip("%")], times * trips)
            else:
                counts[ins.name] = counts.get(ins.name, 0) + times

    visit(module.entry, 1)
    return counts


# ---- step_instructions ------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="nesting checked against the previous instruction event only, not a stack of open "
    "events ('not nested in another instruction event'): a while body's second event does not "
    "lie inside the first body event, so it is listed at top level; wrong on recorded/"
    "looped_warm (copy.4, ynn_fusion... of region_0.3 appear after while.10)",
)
def _rt6_step_instructions_prev_only(events, step_name):
    out = {}
    for num, evs in _rt6_step_instr(events, step_name):
        evs = sorted(evs, key=lambda e: (e.start_ns, -_rt6_end(e)))
        top, prev = [], None
        for e in evs:
            if prev is None or not (e.thread == prev.thread and _rt6_inside(e, prev)):
                top.append(_rt6_a(e)["hlo_op"])
            prev = e
        out[num] = top
    return out


@wrong(
    "step_instructions",
    why="decides nesting by name (an event lying inside an event whose hlo_op starts with "
    "'while', 'conditional' or 'call') instead of by time; right on the recordings, wrong on "
    "the renamed instructions the contract announces ('names are labels'): rename while.10 of "
    "looped to 'op_7' and its body's events are listed at top level",
)
def _rt6_step_instructions_loops_by_name(events, step_name):
    out = {}
    for num, evs in _rt6_step_instr(events, step_name):
        loops = [e for e in evs if _rt6_a(e)["hlo_op"].startswith(("while", "conditional", "call"))]
        top = [
            e
            for e in evs
            if not any(l is not e and l.thread == e.thread and _rt6_inside(e, l) for l in loops)
        ]
        out[num] = [_rt6_a(e)["hlo_op"] for e in sorted(top, key=lambda e: e.start_ns)]
    return out


@wrong(
    "step_instructions",
    why="takes every event with a step_num arg as a step, whatever its name ('every step event "
    "named step_name'); wrong on a trace that annotates two loops (StepTraceAnnotation('train', "
    "...) and StepTraceAnnotation('eval', ...)): the eval steps are merged in, their step_nums "
    "overwriting the train steps' lists",
)
def _rt6_step_instructions_any_step_num(events, step_name):
    instr = [e for e in events if _rt6_is_instr(e)]
    parent = _rt6_parents(instr)
    out = {}
    for s in sorted((e for e in events if "step_num" in _rt6_a(e)), key=lambda e: e.start_ns):
        evs = [e for e in instr if _rt6_inside(e, s) and parent[id(e)] is None]
        out[int(_rt6_a(s)["step_num"])] = [
            _rt6_a(e)["hlo_op"] for e in sorted(evs, key=lambda e: e.start_ns)
        ]
    return out


# ---- expected_counts ---------------------------------------------------------------------------


@wrong(
    "expected_counts",
    why="instruction lines parsed with a hand-written regex r'%([\\w.]+) = ' whose name class "
    "has no '-', so instructions named with a dash (bitcast_dynamic-update-slice_fusion, the "
    "scan body's write of its ys) are never counted; wrong on programs.looped and on every "
    "drawn program with a scan stage ('which instructions become work at run time')",
)
def _rt6_expected_counts_dashless_names(hlo_text):
    names = set(re.findall(r"^\s*(?:ROOT )?%([\w.]+) = ", hlo_text, re.MULTILINE))
    return _rt6_counts(hlo_text, names=names)


@wrong(
    "expected_counts",
    why="treats a while as control flow that leaves no event of its own, counting only its "
    "body's instructions (the README: 'A while is one event, and its body's working "
    "instructions run inside it'); wrong on every drawn program with a loop whose while is not "
    "wrapped in a small call (while.10 of programs.looped: 1 expected, absent here)",
)
def _rt6_expected_counts_while_invisible(hlo_text):
    return _rt6_counts(hlo_text, count_while=False)


# ---- compiled_steps ----------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="a step counts when a backend compile OVERLAPS it at all (started before and still "
    "running, or started inside), not when the compile 'started inside the step event'; wrong "
    "on a compile on a worker thread that starts in step 3 and outlasts it: answers [3, 4]",
)
def _rt6_compiled_steps_overlap(events, step_name):
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    out = set()
    for s in _rt6_steps(events, step_name):
        for c in compiles:
            if c.start_ns <= _rt6_end(s) and _rt6_end(c) >= s.start_ns:
                out.add(int(_rt6_a(s)["step_num"]))
    return sorted(out)


@wrong(
    "compiled_steps",
    why="finds the compiling steps by their length (a step more than 3x the median step "
    "duration 'must' hold a compile) instead of by the backend compile event; wrong on a warm "
    "loop whose step 2 sleeps or logs for 50 ms (listed though nothing compiled) and on a trace "
    "where every step compiles (none is 3x the median: [] returned)",
)
def _rt6_compiled_steps_slow_steps(events, step_name):
    steps = _rt6_steps(events, step_name)
    if not steps:
        return []
    median = statistics.median(s.duration_ns for s in steps)
    return sorted(int(_rt6_a(s)["step_num"]) for s in steps if s.duration_ns > 3 * median)


# ---- kind_shares -------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="labels an unfused instruction by its name up to the first '.' (copy.16 -> copy, "
    "while.10 -> while) instead of its opcode; right on the recordings, wrong on the renamed "
    "instructions the tests use (a copy renamed 'step_a.3' is labelled 'step_a')",
)
def _rt6_kind_shares_opcode_from_name(events, hlo_text, step_name):
    pairs = []
    for ins, t, _ in _rt6_self_times(events, hlo_text, step_name):
        label = _rt6_kind(ins) if ins.opcode == "fusion" else ins.name.split(".")[0]
        pairs.append((label, t))
    return _rt6_share(pairs)


# ---- scope_shares ------------------------------------------------------------------------------


@wrong(
    "scope_shares",
    why="looks for the scope only in parts written word(inner) (jvp(layer_1), "
    "transpose(jvp(layer_1))), skipping plain parts; 'the first part that is not empty' may be "
    "plain: the body of programs.looped has op_name jit(looped)/while/body/.../dot_general, "
    "scope 'while', which this files under \"\"",
)
def _rt6_scope_shares_wrapped_parts_only(events, hlo_text, step_name):
    pairs = []
    for ins, t, _ in _rt6_self_times(events, hlo_text, step_name):
        parts = _rt6_op_name(ins).split(";")[0].split("/")[1:-1]
        scope = ""
        for part in parts:
            if "(" in part and _rt6_unwrap(part):
                scope = _rt6_unwrap(part)
                break
        pairs.append((scope, t))
    return _rt6_share(pairs)


@wrong(
    "scope_shares",
    why="drops the primitive (the last part) only when a part is left between jit(...) and it; "
    "an op_name of two parts keeps its primitive as the scope ('drop the first part and the "
    "last'): the while of programs.looped (op_name jit(looped)/while) is put under 'while' "
    'instead of ""',
)
def _rt6_scope_shares_short_op_name(events, hlo_text, step_name):
    pairs = []
    for ins, t, _ in _rt6_self_times(events, hlo_text, step_name):
        parts = _rt6_op_name(ins).split(";")[0].split("/")
        middle = parts[1:-1] if len(parts) > 2 else parts[1:]
        scope = next((_rt6_unwrap(p) for p in middle if _rt6_unwrap(p)), "")
        pairs.append((scope, t))
    return _rt6_share(pairs)


# ---- line_shares -------------------------------------------------------------------------------


@wrong(
    "line_shares",
    why="the shares of each step averaged over the steps instead of the self time summed over "
    "the steps and shared ('how the self time ... inside the step events divides'); wrong where "
    "steps differ, e.g. a trace whose steps run programs of different sizes or a step that "
    "holds one extra execution: a short step weighs as much as a long one",
)
def _rt6_line_shares_mean_of_steps(events, hlo_text, step_name):
    names, locs, frames = _rt6_tables(hlo_text)
    per_step = {}
    for ins, t, num in _rt6_self_times(events, hlo_text, step_name):
        fid = _rt6_frame_id(ins)
        label = ""
        if fid in frames and frames[fid] in locs:
            file_id, line = locs[frames[fid]]
            label = f"{names.get(file_id, '')}:{line}"
        per_step.setdefault(num, []).append((label, t))
    shares = [_rt6_share(p) for p in per_step.values()]
    labels = {k for s in shares for k in s}
    return {k: sum(s.get(k, 0.0) for s in shares) / len(shares) for k in labels}


@wrong(
    "line_shares",
    why="FileNames read into a list and indexed with file_name_id (0-based list, 1-based ids), "
    "so every line is given the file printed after its own; wrong on every profile "
    "(programs.py is id 11 of recorded/looped_warm, this names it profile.py)",
)
def _rt6_line_shares_filenames_off_by_one(events, hlo_text, step_name):
    names, locs, frames = _rt6_tables(hlo_text)
    listed = [names[k] for k in sorted(names)]
    pairs = []
    for ins, t, _ in _rt6_self_times(events, hlo_text, step_name):
        fid = _rt6_frame_id(ins)
        label = ""
        if fid in frames and frames[fid] in locs:
            file_id, line = locs[frames[fid]]
            name = listed[file_id] if file_id < len(listed) else listed[-1]
            label = f"{name}:{line}"
        pairs.append((label, t))
    return _rt6_share(pairs)


# ---- longest_gap -------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="the gap starts at the END OF STEP EVENT n (not at the end of its last instruction "
    "event) and runs to the first instruction of step n + 1; host work done inside step n after "
    "its result was waited for (float(loss), logging under the annotation) is missed; wrong on "
    "a loop whose step 2 sleeps 30 ms inside its with-block after blocking",
)
def _rt6_longest_gap_from_step_end(events, step_name):
    steps = {int(_rt6_a(s)["step_num"]): s for s in _rt6_steps(events, step_name)}
    first = {}
    for num, evs in _rt6_step_instr(events, step_name):
        if evs:
            first[num] = min(e.start_ns for e in evs)
    best, best_gap = None, None
    for n in sorted(steps):
        if n + 1 in first:
            gap = first[n + 1] - _rt6_end(steps[n])
            if best_gap is None or gap > best_gap:
                best, best_gap = n, gap
    return best if best is not None else min(steps)


# ---- train_loop --------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="the step events are named 'train' whatever step_name says ('one step event named "
    "step_name'); right only when the test asks for 'train', wrong for step_name='epoch'",
)
def _rt6_train_loop_fixed_name(step, state, batches, step_name):
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="warms up on dummy zeros (jax.tree.map(jnp.zeros_like, ...)) to leave the real state "
    "untouched; each zeros_like is an execution of its own (jit(broadcast_in_dim)) outside the "
    "steps, so the trace holds several executions besides the warm-up ('Outside the step events "
    "the trace holds at most one execution'); wrong for any state (w, b)",
)
def _rt6_train_loop_zeros_warmup(step, state, batches, step_name):
    jitted = jax.jit(step)
    dummy_state = jax.tree.map(jnp.zeros_like, state)
    dummy_batch = jax.tree.map(jnp.zeros_like, batches[0])
    jax.block_until_ready(jitted(dummy_state, dummy_batch))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "step_instructions",
    why="nesting done per thread (right) but the top-level events are then listed thread by "
    "thread, never merged by start ('in the order they start', 'on any threads'); wrong on the "
    "hand-built step whose two executions run at once on two execute threads: all of "
    "'execute' is listed before all of 'execute:1' instead of interleaved",
)
def _rt6_step_instructions_thread_by_thread(events, step_name):
    out = {}
    for num, evs in _rt6_step_instr(events, step_name):
        by_thread = {}
        for e in evs:
            by_thread.setdefault(e.thread, []).append(e)
        top = []
        for thread in sorted(by_thread):
            parent = _rt6_parents(by_thread[thread])
            top += [
                _rt6_a(e)["hlo_op"]
                for e in sorted(by_thread[thread], key=lambda e: (e.start_ns, -_rt6_end(e)))
                if parent[id(e)] is None
            ]
        out[num] = top
    return out
