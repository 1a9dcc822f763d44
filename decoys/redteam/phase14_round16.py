"""Red team, phase 14, round 16: plausible wrong answers of kinds earlier rounds did not write
(each event given to one step only, zero-length events taken for markers, in-place updates taken
for views, a hand-written op_name pattern without spaces, FileNames split on whitespace, gaps
relative to the step's work, compiles between steps given to the step before, custom-calls
labelled as kCustom kernels, a loss summary after the loop)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------

_rt16_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_rt16_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_rt16_OP_NAME = re.compile(r'op_name="([^"]*)"')
_rt16_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _rt16_args(e):
    return dict(e.args)


def _rt16_is_instr(e):
    a = _rt16_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt16_steps(events, step_name, any_name=False):
    return [
        e
        for e in events
        if (any_name or e.name == step_name) and isinstance(_rt16_args(e).get("step_num"), int)
    ]


def _rt16_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt16_nesting(instrs, shorter_first=False):
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
            while stack and not _rt16_inside(e, stack[-1]):
                stack.pop()
            out.append((e, stack[-1] if stack else None))
            stack.append(e)
    return out


def _rt16_instrs(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _rt16_self_times(events, hlo_text, step_name, any_name=False):
    module, info = _rt16_instrs(hlo_text)
    steps = _rt16_steps(events, step_name, any_name=any_name)
    pairs = _rt16_nesting([e for e in events if _rt16_is_instr(e)])
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen = []
    for e, _parent in pairs:
        if not any(_rt16_inside(e, s) for s in steps):
            continue
        a = _rt16_args(e)
        if a["hlo_module"] != module.name or a["hlo_op"] not in info:
            continue
        chosen.append((info[a["hlo_op"]], e.duration_ns - kids[id(e)]))
    return chosen


def _rt16_share(pairs):
    total = defaultdict(float)
    for k, v in pairs:
        total[k] += v
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt16_kind(ins):
    return ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode


def _rt16_tables(hlo_text):
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


def _rt16_line_label(ins, tables):
    found = _rt16_FRAME.search(ins.attributes_text)
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


def _rt16_bounds(events, step_name):
    steps = _rt16_steps(events, step_name)
    instrs = [e for e in events if _rt16_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instrs if _rt16_inside(e, s)]
        if inside:
            out[_rt16_args(s)["step_num"]] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return out


def _rt16_called(comps, name):
    return comps.get(name.lstrip("%"))


def _rt16_top(events, step_name, order_key=None):
    pairs = _rt16_nesting([e for e in events if _rt16_is_instr(e)])
    out = {}
    for s in _rt16_steps(events, step_name):
        top = [e for e, p in pairs if p is None and _rt16_inside(e, s)]
        top.sort(key=order_key or (lambda e: e.start_ns))
        out[_rt16_args(s)["step_num"]] = top
    return out


_rt16_VIEW_SET = _rt16_VIEWS


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="Clause 'the instruction events inside the step event' (for EVERY step event): each "
    "instruction event is given to the first step (by start) that holds it and the search "
    "stops there (`break`), as if steps could not overlap; wrong when two step events overlap "
    "(two executions at once on two threads): step 0 [0, 100] on thread A, step 1 [50, 150] on "
    "thread B, instruction k.1 at [60, 90]: expected {0: [k.1], 1: [k.1]}, answered "
    "{0: [k.1], 1: []}",
)
def _rt16_step_instructions_first_step(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    pairs = _rt16_nesting([e for e in events if _rt16_is_instr(e)])
    steps = sorted(_rt16_steps(events, step_name), key=lambda s: s.start_ns)
    out = {_rt16_args(s)["step_num"]: [] for s in steps}
    for e, parent in sorted(pairs, key=lambda p: p[0].start_ns):
        if parent is not None:
            continue
        for s in steps:
            if _rt16_inside(e, s):
                out[_rt16_args(s)["step_num"]].append(_rt16_args(e)["hlo_op"])
                break
    return out


@wrong(
    "step_instructions",
    why="Clause 'an instruction event is an event with an hlo_op arg': events of zero duration "
    "are dropped as the sub-microsecond 'end: <op>' markers (filtered by duration, not by the "
    "hlo_op arg); a tiny kernel rounded to 0 ns is an instruction event all the same: a step "
    "[0, 100] holding c.1 at [10, 0 ns] and d.2 at [20, 30]: expected [c.1, d.2], answered [d.2]",
)
def _rt16_step_instructions_zero_length(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    kept = [e for e in events if e.duration_ns > 0 or _rt16_args(e).get("step_num") is not None]
    return {
        n: [_rt16_args(e)["hlo_op"] for e in top] for n, top in _rt16_top(kept, step_name).items()
    }


# ---- expected_counts ----------------------------------------------------------------------------


def _rt16_counts(hlo_text, skip_fusion=None):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts: dict[str, int] = defaultdict(int)

    def walk(comp, times):
        for ins in comp.instructions:
            if ins.opcode in _rt16_VIEWS:
                continue
            if skip_fusion is not None and ins.opcode == "fusion" and skip_fusion(ins, comps):
                continue
            counts[ins.name] += times
            if ins.opcode == "while":
                trip = _rt16_TRIP.search(ins.attributes_text)
                body = re.search(r"body=%?([\w.\-]+)", ins.attributes_text)
                if trip and body:
                    walk(comps[body.group(1)], times * int(trip.group(1)))

    entry = next(c for c in module.computations if c.is_entry)
    walk(entry, 1)
    return dict(counts)


def _rt16_in_place(ins, comps):
    called = re.search(r"calls=%?([\w.\-]+)", ins.attributes_text)
    comp = comps.get(called.group(1)) if called else None
    if comp is None:
        return False
    root = next((i for i in comp.instructions if i.is_root), comp.instructions[-1])
    return root.opcode in ("dynamic-update-slice",)


@wrong(
    "expected_counts",
    why="Clause 'decide from the text which instructions become work at run time': a fusion whose "
    "fused root is a dynamic-update-slice is taken for an in-place update of the loop carry (a "
    "view of the buffer, 'no kernel'), like a bitcast; it is a kLoop kernel that writes the slice "
    "and leaves an event every trip: programs.looped's body fusion "
    "bitcast_dynamic-update-slice_fusion (the scan's stacked output) is missing from the answer",
)
def _rt16_expected_counts_in_place_update(hlo_text: str) -> dict[str, int]:
    return _rt16_counts(hlo_text, skip_fusion=_rt16_in_place)


# ---- compiled_steps -----------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="Clause 'a backend compile started INSIDE the step event': a step is taken to run from its "
    "start until the next step starts (the Python between two steps counted as the step before), "
    "so a compile that starts between step events is given to the step before; wrong on a loop "
    "that compiles something between its steps, e.g. step 0 [0, 100], backend_compile_and_load "
    "at [120, 300], step 1 [400, 500]: expected [], answered [0]",
)
def _rt16_compiled_steps_until_next(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = sorted(_rt16_steps(events, step_name), key=lambda s: s.start_ns)
    compiles = [e.start_ns for e in events if e.name == "backend_compile_and_load"]
    found = set()
    for k, s in enumerate(steps):
        stop = steps[k + 1].start_ns if k + 1 < len(steps) else s.start_ns + s.duration_ns
        stop = max(stop, s.start_ns + s.duration_ns)
        if any(s.start_ns <= c < stop for c in compiles):
            found.add(_rt16_args(s)["step_num"])
    return sorted(found)


# ---- kind_shares --------------------------------------------------------------------------------


def _rt16_kind_custom_merged(ins):
    if ins.opcode == "fusion":
        return ins.attribute("kind")
    if ins.opcode == "custom-call":
        return "kCustom"  # 'a custom kernel, like the YNNPACK kCustom fusions'
    return ins.opcode


@wrong(
    "kind_shares",
    why="Clause 'its fusion kind when it is a fusion ... and its opcode otherwise': a custom-call "
    "(a library kernel: LAPACK potrf, TopK) is put with the kCustom fusions as 'custom kernels', "
    "so its time is labelled kCustom and no 'custom-call' label appears; wrong on "
    "programs.solving, whose custom-calls (potrf, TopK) run next to a kCustom matmul fusion",
)
def _rt16_kind_shares_custom_merged(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt16_share(
        (_rt16_kind_custom_merged(ins), t)
        for ins, t in _rt16_self_times(events, hlo_text, step_name)
    )


# ---- scope_shares -------------------------------------------------------------------------------

_rt16_OP_NAME_NARROW = re.compile(r'op_name="([\w().:;/\-]+)"')


def _rt16_scope(op_name):
    parts = op_name.split(";", 1)[0].split("/")
    for part in parts[1:-1]:
        while True:
            m = re.fullmatch(r"[^()]*\((.*)\)", part)
            if not m:
                break
            part = m.group(1)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="Clause 'The scope comes from the instruction's metadata={op_name=\"...\"}': the op_name "
    'is read with a hand-written pattern op_name="([\\w().:;/\\-]+)" (names, dots, dashes, '
    "colons) that has no space, so an op_name whose scope holds a space ('attn 2', a name as "
    'people write them) does not match and its time goes to ""; wrong on programs.scoped '
    "with params keyed 'attn 2' and 'block.0': 'attn 2' answered as \"\"",
)
def _rt16_scope_shares_no_space(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    def label(ins):
        m = _rt16_OP_NAME_NARROW.search(ins.attributes_text)
        return _rt16_scope(m.group(1)) if m else ""

    return _rt16_share((label(ins), t) for ins, t in _rt16_self_times(events, hlo_text, step_name))


# ---- line_shares --------------------------------------------------------------------------------


def _rt16_tables_split(hlo_text):
    head = hlo_text[: hlo_text.find("\n%")]
    tables, current = {}, None
    for line in head.splitlines():
        text = line.strip()
        if text in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(text, {})
            continue
        fields = text.split()
        if current is not None and fields and fields[0].isdigit():
            # a FileNames row is `<id> "<path>"`: the second field is the path
            current[int(fields[0])] = (
                fields[1] if text[len(fields[0]) + 1 :][:1] == '"' else (text[len(fields[0]) + 1 :])
            )
        else:
            current = None
    return tables


@wrong(
    "line_shares",
    why="Clause 'its file name without directories': the FileNames rows are split on whitespace "
    "and the second field taken as the path, so a path with a space in a directory "
    "(\"/tmp/rt14_space dir/progs.py\") is cut at the space and labelled 'rt14_space:LINE' "
    "instead of 'progs.py:LINE'; wrong on any live capture of a program kept under a "
    "directory whose name holds a space, e.g. programs.heavy_line copied to '/tmp/rt dir/'",
)
def _rt16_line_shares_split_fields(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    tables = _rt16_tables_split(hlo_text)
    return _rt16_share(
        (_rt16_line_label(ins, tables), t)
        for ins, t in _rt16_self_times(events, hlo_text, step_name)
    )


# ---- longest_gap --------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="Clause 'the step_num after which the device waited longest': each gap is weighed by the "
    "busy time of step n (gap / (last end - first start)), 'the idle share after the step', so "
    "a short step followed by a short gap beats a long step followed by a longer one: step 0 "
    "works [0, 1000] then step 1 [1500, 1510] then step 2 [1610, 1620]: gaps 500 and 100, "
    "expected 0, answered 1 (100/10 > 500/1000)",
)
def _rt16_longest_gap_relative(events: list[TraceEvent], step_name: str) -> int:
    bounds = _rt16_bounds(events, step_name)
    best, best_n = None, None
    for n in sorted(bounds):
        if n + 1 not in bounds:
            continue
        first, last = bounds[n]
        gap = (bounds[n + 1][0] - last) / max(last - first, 1)
        if best is None or gap > best:
            best, best_n = gap, n
    return int(best_n)


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="Clause 'Outside the step events the trace holds at most one execution: a warm-up call "
    "before step 0': the loop is right inside the steps, but after it the mean loss is logged "
    "with jnp.mean(jnp.stack(losses)) (an eager stack and mean: executions of their own after "
    "the last step); wrong on any call, e.g. programs.sgd_step over 3 batches: the trace holds "
    "the warm-up and two more executions outside the steps",
)
def _rt16_train_loop_mean_loss_after(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    losses = []
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
        losses.append(loss)
    mean_loss = float(jnp.mean(jnp.stack(losses)))
    _rt16_LOG.append(mean_loss)
    return state


_rt16_LOG: list[float] = []


# ---- more: expected_counts, train_loop ----------------------------------------------------------


def _rt16_counts_alias(hlo_text):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts: dict[str, int] = defaultdict(int)

    def walk(comp, times):
        opcodes = {i.name: i.opcode for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode in _rt16_VIEWS:
                continue
            if ins.opcode == "copy" and all(
                opcodes.get(o.lstrip("%")) in ("parameter", "constant") for o in ins.operands
            ):
                continue  # 'a copy of an argument or a literal is aliased, not moved'
            counts[ins.name] += times
            if ins.opcode == "while":
                trip = _rt16_TRIP.search(ins.attributes_text)
                body = re.search(r"body=%?([\w.\-]+)", ins.attributes_text)
                if trip and body:
                    walk(comps[body.group(1)], times * int(trip.group(1)))

    walk(module.entry, 1)
    return dict(counts)


@wrong(
    "expected_counts",
    why="Clause 'decide from the text which instructions become work at run time': a `copy` whose "
    "operand is a parameter or a constant is taken for buffer aliasing (the argument or literal "
    "handed over, 'nothing moves'), other copies counted; XLA:CPU runs it as a copy kernel with an "
    "event: programs.looped's ENTRY copy.16 = copy(x.1) and copy.17 = copy(constant.16) each "
    "leave one event per call (measured) and are missing from the answer",
)
def _rt16_expected_counts_aliased_copies(hlo_text: str) -> dict[str, int]:
    return _rt16_counts_alias(hlo_text)


@wrong(
    "train_loop",
    why="Clause 'each holding exactly one execution of the jitted step ..., all of it': the step "
    "is waited for with jax.effects_barrier() (read as 'wait for all dispatched work'), which "
    "waits for ordered effects only, not for the results; the warm-up is waited for the same "
    "way, so executions land after their step event (or after the trace); wrong on "
    "programs.sgd_step over 3 batches x f32[2048,256], y f32[2048,8] (w f32[256,8]): measured, "
    "the step events held none of their executions in 3 runs of 4",
)
def _rt16_train_loop_effects_barrier(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    jitted = jax.jit(step)
    jitted(state, batches[0])
    jax.effects_barrier()
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, _loss = jitted(state, batch)
            jax.effects_barrier()
    return state
