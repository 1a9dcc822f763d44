"""Red team, phase 14, round 15: plausible wrong answers of kinds earlier rounds did not write
(deduplicated names, run_id ordering, lowering taken for a compile, module picked by program_id,
custom-call targets as kinds, outermost stack frames, absolute gaps, last-started end, comparator
computations walked, device-staged batches)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------

_rt15_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_rt15_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_rt15_OP_NAME = re.compile(r'op_name="([^"]*)"')
_rt15_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _rt15_args(e):
    return dict(e.args)


def _rt15_is_instr(e):
    a = _rt15_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt15_steps(events, step_name, any_name=False):
    return [
        e
        for e in events
        if (any_name or e.name == step_name) and isinstance(_rt15_args(e).get("step_num"), int)
    ]


def _rt15_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt15_nesting(instrs, shorter_first=False):
    """Per thread, a stack of open instruction events; returns [(event, parent-or-None)]."""
    out = []
    by_thread = defaultdict(list)
    for e in instrs:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        if shorter_first:
            evs.sort(key=lambda e: (e.start_ns, e.duration_ns))
        else:
            evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            while stack and not _rt15_inside(e, stack[-1]):
                stack.pop()
            out.append((e, stack[-1] if stack else None))
            stack.append(e)
    return out


def _rt15_instrs(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _rt15_self_times(events, hlo_text, step_name, any_name=False):
    module, info = _rt15_instrs(hlo_text)
    steps = _rt15_steps(events, step_name, any_name=any_name)
    pairs = _rt15_nesting([e for e in events if _rt15_is_instr(e)])
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen = []
    for e, _parent in pairs:
        if not any(_rt15_inside(e, s) for s in steps):
            continue
        a = _rt15_args(e)
        if a["hlo_module"] != module.name or a["hlo_op"] not in info:
            continue
        chosen.append((info[a["hlo_op"]], e.duration_ns - kids[id(e)]))
    return chosen


def _rt15_share(pairs):
    total = defaultdict(float)
    for k, v in pairs:
        total[k] += v
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt15_kind(ins):
    return ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode


def _rt15_tables(hlo_text):
    head = hlo_text[: hlo_text.find("\n%")]
    tables, current = {}, None
    for line in head.splitlines():
        text = line.strip()
        if text in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(text, {})
            continue
        row = re.match(r"^(\d+) (.*)$", text)
        if current is not None and row:
            current[int(row.group(1))] = row.group(2)
        else:
            current = None
    return tables


def _rt15_line_label(ins, tables):
    found = _rt15_FRAME.search(ins.attributes_text)
    if not found:
        return ""
    frame = tables.get("StackFrames", {}).get(int(found.group(1)), "")
    loc_id = re.search(r"file_location_id=(\d+)", frame)
    if not loc_id:
        return ""
    loc = tables.get("FileLocations", {}).get(int(loc_id.group(1)), "")
    fid = re.search(r"file_name_id=(\d+)", loc)
    line = re.search(r"\bline=(\d+)", loc)
    if not (fid and line):
        return ""
    name = tables.get("FileNames", {}).get(int(fid.group(1)), "").strip('"')
    return f"{name.rsplit('/', 1)[-1]}:{line.group(1)}"


def _rt15_bounds(events, step_name):
    steps = _rt15_steps(events, step_name)
    instrs = [e for e in events if _rt15_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instrs if _rt15_inside(e, s)]
        if inside:
            out[_rt15_args(s)["step_num"]] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return out


def _rt15_called(comps, name):
    return comps.get(name.lstrip("%"))


def _rt15_top(events, step_name, order_key=None):
    pairs = _rt15_nesting([e for e in events if _rt15_is_instr(e)])
    out = {}
    for s in _rt15_steps(events, step_name):
        top = [e for e, p in pairs if p is None and _rt15_inside(e, s)]
        top.sort(key=order_key or (lambda e: e.start_ns))
        out[_rt15_args(s)["step_num"]] = top
    return out


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="Clause 'an instruction that ran twice is listed twice': the top-level names are "
    "deduplicated with dict.fromkeys (keeping first-start order) to 'list what the step ran'; "
    "wrong on any step that executes the module twice, e.g. a step event around two calls of "
    "jax.jit(programs.heavy_line): [ynn_fusion, broadcast_add_fusion] x2 expected, each "
    "name once answered",
)
def _rt15_step_instructions_dedupe(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return {
        n: list(dict.fromkeys(_rt15_args(e)["hlo_op"] for e in top))
        for n, top in _rt15_top(events, step_name).items()
    }


@wrong(
    "step_instructions",
    why="Clause 'in the order they start': orders the top-level events by (run_id, start_ns), "
    "'one execution after the other', which equals start order only when executions do not "
    "overlap; wrong on two executions at once on two threads in one step (run 7 on thread A: "
    "a.1 at 10, a.2 at 30; run 3 on thread B: b.1 at 20, b.2 at 40): [a.1, b.1, a.2, b.2] "
    "expected, [b.1, b.2, a.1, a.2] answered",
)
def _rt15_step_instructions_run_order(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    top = _rt15_top(
        events, step_name, order_key=lambda e: (_rt15_args(e).get("run_id", 0), e.start_ns)
    )
    return {n: [_rt15_args(e)["hlo_op"] for e in evs] for n, evs in top.items()}


# ---- expected_counts ----------------------------------------------------------------------------


@wrong(
    "expected_counts",
    why="Clause 'which run nested in another's event ... a fusion is one kernel': walks every "
    "called computation except a fusion's (to_apply=, comparator of a sort, a while's body "
    "with its trip count) and counts their working instructions once per call, so a sort's "
    "comparator (compare.N, ...) or a reduce's to_apply is counted as if it left events; "
    "wrong on jax.jit(lambda x: jnp.sort(x, axis=0) + 1) on f32[64,64] (sort's comparator "
    "instructions appear in the answer)",
)
def _rt15_expected_counts_walk_to_apply(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = defaultdict(int)

    def walk(comp, mult):
        for ins in comp.instructions:
            if ins.opcode in _rt15_VIEWS:
                continue
            counts[ins.name] += mult
            if ins.opcode == "fusion":
                continue
            if ins.opcode == "call" and "xla_cpu_small_call" in ins.attributes_text:
                continue
            if ins.opcode == "while":
                found = _rt15_TRIP.search(ins.attributes_text)
                m = re.search(r"body=%?([\w.\-]+)", ins.attributes_text)
                body = comps.get(m.group(1)) if m else None
                if body is not None:
                    walk(body, mult * (int(found.group(1)) if found else 1))
                continue
            for name in ins.called_computations:
                callee = _rt15_called(comps, name)
                if callee is not None:
                    walk(callee, mult)

    walk(module.entry, 1)
    return dict(counts)


# ---- compiled_steps -----------------------------------------------------------------------------

_rt15_COMPILE_MARKS = ("backend_compile_and_load", "lower_sharding_computation")


@wrong(
    "compiled_steps",
    why="Clause 'tracing and lowering alone are not a compile': takes "
    "lower_sharding_computation as well as backend_compile_and_load as the sign of a compile "
    "('every compile lowers first, and lowering is always there even when the compile is on "
    "a worker thread'); wrong on a step that only lowers, e.g. step 1 calling "
    "jax.jit(f).lower(x) for inspection in a warm loop: [] expected, [1] answered",
)
def _rt15_compiled_steps_lowering_counts(events: list[TraceEvent], step_name: str) -> list[int]:
    marks = [e for e in events if e.name in _rt15_COMPILE_MARKS]
    out = set()
    for s in _rt15_steps(events, step_name):
        end = s.start_ns + s.duration_ns
        if any(s.start_ns <= c.start_ns <= end for c in marks):
            out.add(_rt15_args(s)["step_num"])
    return sorted(out)


# ---- kind_shares --------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="Clause 'whose hlo_module is the module of hlo_text': identifies the module by the "
    "program_id of the first instruction event in the steps (the text's HloModule name is "
    "not used), so when another jitted program runs first in a step (e.g. a data-prep "
    "jax.jit(lambda x: x * 2) before the mlp_grad call), only that program's events are "
    "counted, and its hlo_op names are not the module's: a data-prep jax.jit(lambda v: v * 2.0) "
    "before jax.jit(programs.heavy_line) in each step gives {} where {kCustom: ~0.93, "
    "kLoop: ~0.07} is expected",
)
def _rt15_kind_shares_first_program(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    module, info = _rt15_instrs(hlo_text)
    steps = _rt15_steps(events, step_name)
    pairs = _rt15_nesting([e for e in events if _rt15_is_instr(e)])
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    inside = sorted(
        (e for e, _p in pairs if any(_rt15_inside(e, s) for s in steps)), key=lambda e: e.start_ns
    )
    if not inside:
        return {}
    program = _rt15_args(inside[0]).get("program_id")
    out = []
    for e in inside:
        a = _rt15_args(e)
        if a.get("program_id") != program or a["hlo_op"] not in info:
            continue
        out.append((_rt15_kind(info[a["hlo_op"]]), e.duration_ns - kids[id(e)]))
    return _rt15_share(out)


_rt15_TARGET = re.compile(r'custom_call_target="([^"]*)"')


@wrong(
    "kind_shares",
    why="Clause 'its opcode otherwise': labels a custom-call by its custom_call_target (the "
    "library routine that ran) instead of its opcode 'custom-call'; right on the programs "
    "here (no custom-call runs), wrong on a module with one, e.g. jax.jit(lambda a: "
    "jnp.linalg.cholesky(a @ a.T + 64 * jnp.eye(64))) on f32[64,64]: label "
    "'lapack_spotrf_ffi' answered, 'custom-call' expected",
)
def _rt15_kind_shares_custom_target(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    def label(ins):
        if ins.opcode == "custom-call":
            m = _rt15_TARGET.search(ins.attributes_text)
            if m:
                return m.group(1)
        return _rt15_kind(ins)

    pairs = _rt15_self_times(events, hlo_text, step_name)
    return _rt15_share((label(ins), t) for ins, t in pairs)


# ---- scope_shares -------------------------------------------------------------------------------

_rt15_OP_NAME_TOKEN = re.compile(r'op_name="(\S+?)"')


def _rt15_scope_of(op_name):
    parts = op_name.split(";")[0].split("/")
    for part in parts[1:-1]:
        while True:
            found = re.fullmatch(r"\w+\((.*)\)", part)
            if not found:
                break
            part = found.group(1)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="Clause 'The scope comes from the instruction's metadata={op_name=\"...\"}': reads "
    "the op_name with the token regex op_name=\"(\\S+?)\" (an op_name 'is one token'), which "
    'finds nothing when a scope name holds a space, so those instructions count for ""; '
    "the rest of the scope logic is right; wrong on programs.scoped with a scope named "
    "'attn 0' (jax.named_scope('attn 0')): its share goes to \"\"",
)
def _rt15_scope_shares_nonspace_regex(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    pairs = _rt15_self_times(events, hlo_text, step_name)
    out = []
    for ins, t in pairs:
        found = _rt15_OP_NAME_TOKEN.search(ins.attributes_text)
        out.append((_rt15_scope_of(found.group(1)) if found else "", t))
    return _rt15_share(out)


# ---- line_shares --------------------------------------------------------------------------------


def _rt15_outer_label(ins, tables):
    found = _rt15_FRAME.search(ins.attributes_text)
    if not found:
        return ""
    frames = tables.get("StackFrames", {})
    fid = int(found.group(1))
    seen = set()
    while fid not in seen:
        seen.add(fid)
        parent = re.search(r"parent_frame_id=(\d+)", frames.get(fid, ""))
        if not parent or int(parent.group(1)) not in frames:
            break
        fid = int(parent.group(1))
    frame = frames.get(fid, "")
    loc_id = re.search(r"file_location_id=(\d+)", frame)
    if not loc_id:
        return ""
    loc = tables.get("FileLocations", {}).get(int(loc_id.group(1)), "")
    name_id = re.search(r"file_name_id=(\d+)", loc)
    line = re.search(r"\bline=(\d+)", loc)
    if not (name_id and line):
        return ""
    name = tables.get("FileNames", {}).get(int(name_id.group(1)), "").strip('"')
    return f"{name.rsplit('/', 1)[-1]}:{line.group(1)}"


@wrong(
    "line_shares",
    why="Clause 'that frame's file location': follows parent_frame_id up the chain to the "
    "outermost frame ('the line the user wrote is where the call started') instead of using "
    "the instruction's own frame; wrong wherever an instruction's frame has a parent, e.g. "
    "recorded looped_warm: part of programs.py:60's time is reported under programs.py:58 "
    "(0.20 / 0.36 expected, 0.12 / 0.44 answered)",
)
def _rt15_line_shares_outermost_frame(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    tables = _rt15_tables(hlo_text)
    pairs = _rt15_self_times(events, hlo_text, step_name)
    return _rt15_share((_rt15_outer_label(ins, tables), t) for ins, t in pairs)


# ---- longest_gap --------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="Clause 'the largest (the one closest to zero when all are negative)': ranks gaps by "
    "abs(gap), 'how long the device sat apart from the host either way', so a large overlap "
    "beats a real wait; steps 0 [0,100] work 10-90, 1 [100,200] work 40-150 (gap -50), "
    "2 [200,300] work 160-190 (gap +10): answer 1, answered 0",
)
def _rt15_longest_gap_abs(events: list[TraceEvent], step_name: str) -> int:
    bounds = _rt15_bounds(events, step_name)
    gaps = {n: bounds[n + 1][0] - bounds[n][1] for n in bounds if n + 1 in bounds}
    return max(sorted(gaps), key=lambda n: abs(gaps[n]))


@wrong(
    "longest_gap",
    why="Clause 'from the END of the last instruction event inside step n' (the last to "
    "end): takes the end of the LAST-STARTED instruction event of step n (sort by start, "
    "take [-1]); a while's body event starts after the while but ends before it, so the gap "
    "is overstated; step 0 [0,240] while.1 10-200 holding copy.2 20-30, step 1 [240,300] "
    "work 250-260, step 2 [300,500] work 400-410: gaps 50 and 140, answer 1, answered 0 "
    "(its gap read as 220)",
)
def _rt15_longest_gap_last_started_end(events: list[TraceEvent], step_name: str) -> int:
    instrs = [e for e in events if _rt15_is_instr(e)]
    spans = {}
    for s in _rt15_steps(events, step_name):
        inside = sorted((e for e in instrs if _rt15_inside(e, s)), key=lambda e: e.start_ns)
        if inside:
            spans[_rt15_args(s)["step_num"]] = (
                inside[0].start_ns,
                inside[-1].start_ns + inside[-1].duration_ns,
            )
    best_n, best_gap = None, None
    for n in sorted(spans):
        if n + 1 in spans:
            gap = spans[n + 1][0] - spans[n][1]
            if best_gap is None or gap > best_gap:
                best_n, best_gap = n, gap
    return best_n


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="Clause 'each holding exactly one execution of the jitted step' and 'outside the step "
    "events at most one execution: a warm-up': stages the data on the device first "
    "(jax.tree.map(jnp.stack, *batches)) and slices batch i inside step i; the stack is an "
    "execution outside the steps and each slice (a jitted dynamic_slice/gather) a second "
    "execution inside every step, for any batches (including the given sgd_step ones)",
)
def _rt15_train_loop_staged_batches(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    import jax.numpy as jnp

    jitted = jax.jit(step)
    staged = jax.tree.map(lambda *xs: jnp.stack(xs), *batches)
    jax.block_until_ready(jitted(state, batches[0]))
    for i in range(len(batches)):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            batch = jax.tree.map(lambda a: a[i], staged)  # noqa: B023
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state
