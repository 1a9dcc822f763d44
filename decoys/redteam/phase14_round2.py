"""Red-team wrong answers for phase 14, written from the contract only.

Round 2. Every answer here is what a capable learner in a hurry writes for a profile and believes
correct; each `why` names the contract clause it breaks and a valid input where it answers wrong.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent

# ---- shared helpers (all _rt2_) -----------------------------------------------------------------

_RT2_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _rt2_is_instr(e: TraceEvent) -> bool:
    return e.arg("hlo_op") is not None and e.arg("hlo_module") is not None


def _rt2_steps(events, step_name) -> list[TraceEvent]:
    found = [e for e in events if e.name == step_name and e.arg("step_num") is not None]
    return sorted(found, key=lambda e: e.start_ns)


def _rt2_inside(e: TraceEvent, s: TraceEvent) -> bool:
    return s.start_ns <= e.start_ns and e.start_ns + e.duration_ns <= s.start_ns + s.duration_ns


def _rt2_nest(events) -> list[tuple[TraceEvent, int, int]]:
    """(event, depth, self_ns) for instruction events, nesting per thread."""
    by_thread: dict[str, list[TraceEvent]] = defaultdict(list)
    for e in events:
        by_thread[e.thread].append(e)
    out = []
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack: list[list[Any]] = []
        rows: list[list[Any]] = []
        for e in evs:
            while stack and stack[-1][0].end_ns <= e.start_ns:
                stack.pop()
            if stack:
                stack[-1][2] += e.duration_ns
            row = [e, len(stack), 0]
            rows.append(row)
            stack.append(row)
        out += [(e, d, max(0, e.duration_ns - nested)) for e, d, nested in rows]
    return out


def _rt2_module_name(hlo_text: str) -> str:
    return hlo_text.split(None, 2)[1].rstrip(",")


def _rt2_all_instructions(hlo_text: str) -> dict:
    module = parse_hlo(hlo_text)
    return {i.name: i for c in module.computations for i in c.instructions}


def _rt2_label(ins) -> str:
    return (ins.attribute("kind") if ins.opcode == "fusion" else None) or ins.opcode


def _rt2_shares_of(groups: dict[str, int]) -> dict[str, float]:
    total = sum(groups.values())
    return {k: v / total for k, v in groups.items()} if total else {}


def _rt2_selftimes(events, hlo_text, step_name) -> list[tuple[str, int, TraceEvent]]:
    """(hlo_op, self_ns, event) of the module's instruction events inside the steps (correct)."""
    module = _rt2_module_name(hlo_text)
    known = _rt2_all_instructions(hlo_text)
    mine = [e for e in events if _rt2_is_instr(e) and e.arg("hlo_module") == module]
    steps = _rt2_steps(events, step_name)
    out = []
    for e, _d, self_ns in _rt2_nest(mine):
        if e.hlo_op in known and any(_rt2_inside(e, s) for s in steps):
            out.append((e.hlo_op, self_ns, e))
    return out


def _rt2_group(events, hlo_text, step_name, key: Callable[[Any], str]) -> dict[str, float]:
    known = _rt2_all_instructions(hlo_text)
    groups: dict[str, int] = defaultdict(int)
    for op, self_ns, _e in _rt2_selftimes(events, hlo_text, step_name):
        groups[key(known[op])] += self_ns
    return _rt2_shares_of(groups)


_RT2_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_RT2_WRAP = re.compile(r"^([\w-]+)\((.*)\)$")


def _rt2_op_name(ins) -> str:
    m = _RT2_OP_NAME.search(ins.attributes_text)
    return m.group(1) if m else ""


def _rt2_tables(hlo_text: str) -> dict[str, dict[int, str]]:
    head = hlo_text[: hlo_text.find("\n%")] if "\n%" in hlo_text else hlo_text
    tables: dict[str, dict[int, str]] = {}
    current = None
    for line in head.splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(s, {})
        elif current is not None and (m := re.match(r"^(\d+)\s+(.*)$", s)):
            current[int(m.group(1))] = m.group(2)
        elif s:
            current = None
    return tables


def _rt2_fields(row: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", row)}


# ---- task 1: step_instructions -------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="'not nested in another instruction event' decided by the parent's NAME (while*/"
    "conditional*): names are labels, the tests rename instructions; wrong on a renamed looped "
    "profile (the while's body events are listed at top level)",
)
def step_instructions_nested_by_name(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    instr = sorted((e for e in events if _rt2_is_instr(e)), key=lambda e: e.start_ns)
    loops = [e for e in instr if str(e.hlo_op).split(".")[0] in ("while", "conditional")]
    for s in _rt2_steps(events, step_name):
        ops = []
        for e in instr:
            if not _rt2_inside(e, s):
                continue
            if any(p is not e and p.thread == e.thread and _rt2_inside(e, p) for p in loops):
                continue
            ops.append(str(e.hlo_op))
        result[int(s.arg("step_num"))] = ops
    return result


@wrong(
    "step_instructions",
    why="'in the order they start' ignored: keeps the order the events come in ('events come in "
    "any order'); wrong on any shuffled list of a recorded profile's events",
)
def step_instructions_given_order(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    instr = [e for e in events if _rt2_is_instr(e)]
    depth = {id(e): d for e, d, _ in _rt2_nest(instr)}
    result: dict[int, list[str]] = {}
    for s in _rt2_steps(events, step_name):
        result[int(s.arg("step_num"))] = [
            str(e.hlo_op) for e in instr if _rt2_inside(e, s) and depth[id(e)] == 0
        ]
    return result


@wrong(
    "step_instructions",
    why="'inside' tested on the start only (an event that starts in the step but ends after it "
    "is counted) and one global nesting stack over all threads; wrong on a loop that dispatches "
    "a long program (jnp.sin(x) @ x, 1200x1200) and leaves the step without waiting: its first "
    "kernel starts inside the step and ends after it, and is listed",
)
def step_instructions_start_only(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    instr = sorted(
        (e for e in events if _rt2_is_instr(e)), key=lambda e: (e.start_ns, -e.duration_ns)
    )
    top: list[TraceEvent] = []
    open_end = -1
    for e in instr:
        if e.start_ns >= open_end:
            top.append(e)
            open_end = e.end_ns
    result: dict[int, list[str]] = {}
    for s in _rt2_steps(events, step_name):
        result[int(s.arg("step_num"))] = [
            str(e.hlo_op) for e in top if s.start_ns <= e.start_ns < s.end_ns
        ]
    return result


@wrong(
    "step_instructions",
    why="'an instruction that ran twice is listed twice' broken: de-duplicates per step "
    "(dict.fromkeys) to drop what looked like repeated loop trips; wrong on a step that "
    "executes the module twice (two run_ids in one step event)",
)
def step_instructions_deduplicated(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    instr = [e for e in events if _rt2_is_instr(e)]
    rows = sorted(_rt2_nest(instr), key=lambda r: r[0].start_ns)
    result: dict[int, list[str]] = {}
    for s in _rt2_steps(events, step_name):
        ops = [str(e.hlo_op) for e, d, _ in rows if d == 0 and _rt2_inside(e, s)]
        result[int(s.arg("step_num"))] = list(dict.fromkeys(ops))
    return result


@wrong(
    "step_instructions",
    why="instruction events picked by thread and name (threads named execute*, minus the 'end: ' "
    "markers and the 'X::Y' internals) instead of by their hlo_op arg ('events come ... on any "
    "threads'); wrong on a trace of a tiny jitted program (jax.jit(lambda x: x + 1) on f32[3]), "
    "which XLA:CPU runs inline on the calling Python thread: its step lists nothing",
)
def step_instructions_execute_thread(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    picked = [
        e
        for e in events
        if e.thread.startswith("execute") and not e.name.startswith("end: ") and "::" not in e.name
    ]
    rows = sorted(_rt2_nest(picked), key=lambda r: r[0].start_ns)
    result: dict[int, list[str]] = {}
    for s in _rt2_steps(events, step_name):
        result[int(s.arg("step_num"))] = [
            e.name for e, d, _ in rows if d == 0 and _rt2_inside(e, s)
        ]
    return result


# ---- task 2: expected_counts ---------------------------------------------------------------------


def _rt2_trips(ins) -> int:
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins.attributes_text)
    return int(m.group(1)) if m else 1


def _rt2_count(
    hlo_text: str, *, views, body=True, multiply=True, small_call_inside=False, cond=False
) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = defaultdict(int)

    def walk(comp, times: int, outer: int) -> None:
        for ins in comp.instructions:
            if ins.opcode in views:
                continue
            counts[ins.name] += times
            if ins.opcode == "while" and body:
                attrs = ins.attributes
                trips = _rt2_trips(ins)
                inner = times * trips if multiply else trips
                b = module.computation(attrs.get("body", "").lstrip("%"))
                if b is not None:
                    walk(b, inner, times)
                if cond:
                    c = module.computation(attrs.get("condition", "").lstrip("%"))
                    if c is not None:
                        walk(c, inner + (times if multiply else 1), times)
            elif ins.opcode == "call" and small_call_inside:
                for name in ins.called_computations:
                    c = module.computation(name)
                    if c is not None:
                        walk(c, times, outer)

    walk(module.entry, 1, 1)
    return dict(counts)


@wrong(
    "expected_counts",
    why="ENTRY only: a while counts once and its body's instructions never ('its body's working "
    "instructions run inside it, once per trip'); wrong on looped (copy.5, ynn_fusion... of the "
    "scan body missing)",
)
def expected_counts_entry_only(hlo_text: str) -> dict[str, int]:
    return _rt2_count(hlo_text, views=_RT2_VIEWS, body=False)


@wrong(
    "expected_counts",
    why="trip counts not multiplied through nesting: an inner while's body runs inner-trips times "
    "instead of outer x inner per call; wrong on nested (scan of 3 holding fori_loop of 2: 2 "
    "instead of 6 per inner-body instruction, and the inner while 1 instead of 3)",
)
def expected_counts_trips_not_multiplied(hlo_text: str) -> dict[str, int]:
    return _rt2_count(hlo_text, views=_RT2_VIEWS, multiply=False)


@wrong(
    "expected_counts",
    why="a `call` is looked through (its computation's instructions counted) although an "
    "xla_cpu_small_call call is one kernel with nothing inside, and the while condition is "
    "counted once per trip + 1; wrong on looped (the fori_loop's sine_add_fusion, wrapped_add.1, "
    "while.0 and the conditions' wrapped_compare listed)",
)
def expected_counts_through_calls(hlo_text: str) -> dict[str, int]:
    return _rt2_count(hlo_text, views=_RT2_VIEWS, small_call_inside=True, cond=True)


@wrong(
    "expected_counts",
    why="opcodes read from instruction NAMES and copies taken for views ('copy' moves no data "
    "in my head): names like while.13 (a get-tuple-element) count as whiles, copy.* dropped; "
    "wrong on looped (copy.16, copy.17, copy.1, copy.4, copy.5 missing; while.13/while.17 added)",
)
def expected_counts_by_name(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = {}

    def walk(comp, times: int) -> None:
        for ins in comp.instructions:
            base = re.sub(r"\.\d+$", "", ins.name).replace("_", "-")
            if (
                base in _RT2_VIEWS
                or base in ("copy", "arg-tuple")
                or ins.opcode
                in (
                    "parameter",
                    "constant",
                )
            ):
                continue
            counts[ins.name] = counts.get(ins.name, 0) + times
            if base == "while" and ins.opcode == "while":
                b = module.computation(ins.attributes.get("body", "").lstrip("%"))
                if b is not None:
                    walk(b, times * _rt2_trips(ins))

    walk(module.entry, 1)
    return counts


# ---- task 3: compiled_steps ----------------------------------------------------------------------


def _rt2_step_nums_with(events, step_name, pick: Callable[[TraceEvent], bool]) -> list[int]:
    marks = [e for e in events if pick(e)]
    found = set()
    for s in _rt2_steps(events, step_name):
        if any(s.start_ns <= m.start_ns < s.end_ns for m in marks):
            found.add(int(s.arg("step_num")))
    return sorted(found)


@wrong(
    "compiled_steps",
    why="assumes one compile, the cold first one: returns only the first step holding a "
    "backend compile ('the step_nums ... during which XLA compiled'); wrong on a trace where a "
    "new input shape recompiles in a later step as well (steps 5 and 7 of 5..8)",
)
def compiled_steps_first_only(events: list[TraceEvent], step_name: str) -> list[int]:
    found = _rt2_step_nums_with(events, step_name, lambda e: e.name == "backend_compile_and_load")
    return found[:1]


@wrong(
    "compiled_steps",
    why="a compile recognised by its kernel events (FusionCompiler::Compile on the codegen "
    "threads) instead of the backend compile; wrong on a cold step of jax.jit(lambda x, w: "
    "x @ w) on f32[33,33] (a module with no fusion kernel to generate: no FusionCompiler event)",
)
def compiled_steps_by_kernels(events: list[TraceEvent], step_name: str) -> list[int]:
    return _rt2_step_nums_with(events, step_name, lambda e: e.name.startswith("FusionCompiler"))


@wrong(
    "compiled_steps",
    why="'tracing and lowering alone are not a compile' ignored: any jit pipeline event "
    "(trace_to_jaxpr_dynamic, lower_sharding_computation, *compile*) marks the step; wrong on a "
    "step that only lowers a new shape (jitted.lower(x), to read its module) and compiles "
    "nothing",
)
def compiled_steps_any_pipeline(events: list[TraceEvent], step_name: str) -> list[int]:
    words = ("compile", "lower", "trace_to_jaxpr")
    return _rt2_step_nums_with(
        events, step_name, lambda e: e.hlo_op is None and any(w in e.name.lower() for w in words)
    )


@wrong(
    "compiled_steps",
    why="step numbers taken as positions (0, 1, 2... in start order) instead of the step_num "
    "arg; wrong on a trace whose steps are numbered from 5 (a loop resumed at step 5) and "
    "recompile at 5 and 7",
)
def compiled_steps_by_position(events: list[TraceEvent], step_name: str) -> list[int]:
    marks = [e for e in events if e.name == "backend_compile_and_load"]
    return [
        i
        for i, s in enumerate(_rt2_steps(events, step_name))
        if any(s.start_ns <= m.start_ns < s.end_ns for m in marks)
    ]


# ---- task 4: kind_shares -------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="durations summed instead of self times: a while's body is counted twice ('self time: "
    "its duration minus the instruction events nested directly in it'); wrong on looped "
    "(the 'while' share is ~half the total instead of a few percent)",
)
def kind_shares_durations(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    known = _rt2_all_instructions(hlo_text)
    groups: dict[str, int] = defaultdict(int)
    for op, _self, e in _rt2_selftimes(events, hlo_text, step_name):
        groups[_rt2_label(known[op])] += e.duration_ns
    return _rt2_shares_of(groups)


@wrong(
    "kind_shares",
    why="events joined to the ENTRY computation only ('names one of its instructions, in any "
    "computation'): a while body's fusions are dropped and their time left in the while; wrong "
    "on looped (kCustom of the scan body's ynn_fusion missing, 'while' far too big)",
)
def kind_shares_entry_only(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    module = parse_hlo(hlo_text)
    entry = {i.name: i for i in module.entry.instructions}
    name = module.name
    mine = [e for e in events if _rt2_is_instr(e) and e.arg("hlo_module") == name]
    mine = [e for e in mine if e.hlo_op in entry]  # nesting computed over what was kept
    steps = _rt2_steps(events, step_name)
    groups: dict[str, int] = defaultdict(int)
    for e, _d, self_ns in _rt2_nest(mine):
        if any(_rt2_inside(e, s) for s in steps):
            groups[_rt2_label(entry[e.hlo_op])] += self_ns
    return _rt2_shares_of(groups)


@wrong(
    "kind_shares",
    why="the warm-up excluded by hand: step 0 skipped as 'the cold step' ('inside the step "
    "events named step_name', all of them); wrong on mlp_grad_cold, where step 0's first run "
    "(dot.1 ~59 ms) dominates the 'dot' share",
)
def kind_shares_skip_first(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    steps = _rt2_steps(events, step_name)
    first = min(steps, key=lambda s: int(s.arg("step_num"))) if len(steps) > 1 else None
    rest = [e for e in events if e is not first]
    return _rt2_group(rest, hlo_text, step_name, _rt2_label)


@wrong(
    "kind_shares",
    why="no hlo_module filter: every instruction event whose hlo_op names an instruction counts "
    "('whose hlo_module is the module of hlo_text'); wrong on a loop whose steps run jitted "
    "looped and then jitted nested (jit_nested's ynn_fusion, copy.*, wrapped_add share names "
    "with jit_looped's)",
)
def kind_shares_any_module(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    known = _rt2_all_instructions(hlo_text)
    steps = _rt2_steps(events, step_name)
    instr = [e for e in events if _rt2_is_instr(e) and e.hlo_op in known]
    groups: dict[str, int] = defaultdict(int)
    for e, _d, self_ns in _rt2_nest(instr):
        if any(_rt2_inside(e, s) for s in steps):
            groups[_rt2_label(known[e.hlo_op])] += self_ns
    return _rt2_shares_of(groups)


# ---- task 5: scope_shares ------------------------------------------------------------------------


@wrong(
    "scope_shares",
    why="the toolkit's grouping used as is (profile_query.time_by(..., 'scope') + shares): it "
    "labels the backward pass 'layer_1 (backward)' and the unscoped '(no scope)', where the "
    "contract wants 'layer_1' and ''; wrong on layered",
)
def scope_shares_toolkit(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    from xla_inspect.profile import Profile
    from xla_inspect.profile_query import shares, time_by

    profile = Profile(tuple(events), hlo_text, _rt2_module_name(hlo_text), step_name)
    return shares(time_by(profile, "scope"))


def _rt2_scope_no_semicolon(op_name: str) -> str:
    parts = op_name.split("/")[1:-1]
    for part in parts:
        while m := _RT2_WRAP.match(part):
            part = m.group(2)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="op_name not cut at its first ';' before splitting on '/': a fused instruction joining "
    "two op_names yields a part 'mul;jit(layered)'; wrong on layered (broadcast_multiply_fusion's "
    "'jit(layered)/transpose(jvp())/mul;jit(layered)/...' gets scope 'mul;jit(layered)', not '')",
)
def scope_shares_no_semicolon(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt2_group(
        events, hlo_text, step_name, lambda i: _rt2_scope_no_semicolon(_rt2_op_name(i))
    )


def _rt2_scope_one_unwrap(op_name: str) -> str:
    parts = op_name.split(";")[0].split("/")[1:-1]
    for part in parts:
        m = _RT2_WRAP.match(part)
        if m:
            part = m.group(2)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="unwraps one transformation only ('to its innermost content'): transpose(jvp(layer_1)) "
    "becomes 'jvp(layer_1)', so the backward pass is its own group; wrong on layered",
)
def scope_shares_one_unwrap(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt2_group(events, hlo_text, step_name, lambda i: _rt2_scope_one_unwrap(_rt2_op_name(i)))


def _rt2_scope_correct(op_name: str) -> str:
    parts = op_name.split(";")[0].split("/")[1:-1]
    for part in parts:
        while m := _RT2_WRAP.match(part):
            part = m.group(2)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="unscoped time dropped: instructions with no scope are left out and the shares taken over "
    "the scoped time only ('No op_name, or no such part: \"\"'; shares of the total); wrong on "
    "layered (the loss, outside every scope, missing and every layer's share too big)",
)
def scope_shares_drop_unscoped(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    shares = _rt2_group(events, hlo_text, step_name, lambda i: _rt2_scope_correct(_rt2_op_name(i)))
    shares.pop("", None)
    total = sum(shares.values())
    return {k: v / total for k, v in shares.items()} if total else {}


# ---- task 6: line_shares -------------------------------------------------------------------------


def _rt2_source(ins, hlo_text: str, *, skip_frames=False, full_path=False, outermost=False) -> str:
    m = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
    if not m:
        return ""
    t = _rt2_tables(hlo_text)
    frame = int(m.group(1))
    if skip_frames:
        loc_id = frame
    else:
        row = _rt2_fields(t.get("StackFrames", {}).get(frame, ""))
        if outermost:
            seen = set()
            while row.get("parent_frame_id") and row["parent_frame_id"] not in seen:
                seen.add(frame)
                parent = row["parent_frame_id"]
                if parent == frame:
                    break
                frame = parent
                row = _rt2_fields(t.get("StackFrames", {}).get(frame, ""))
        loc_id = row.get("file_location_id", 0)
    loc = _rt2_fields(t.get("FileLocations", {}).get(loc_id, ""))
    if "file_name_id" not in loc:
        return ""
    name = t.get("FileNames", {}).get(loc["file_name_id"], "?").strip('"')
    if not full_path:
        name = name.rsplit("/", 1)[-1]
    return f"{name}:{loc.get('line', 0)}"


@wrong(
    "line_shares",
    why="stack_frame_id read as a FileLocations id (the StackFrames table skipped); wrong on "
    "heavy_line and looped, where frame ids and location ids differ (looped: frame 10 -> "
    "location 7)",
)
def line_shares_skip_frames(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt2_group(
        events, hlo_text, step_name, lambda i: _rt2_source(i, hlo_text, skip_frames=True)
    )


@wrong(
    "line_shares",
    why="the file name kept with its directories ('its file name without directories'); right on "
    "the recorded profiles (their FileNames were cut) and wrong on every live capture, whose "
    "FileNames hold /.../katas/phase14/programs.py",
)
def line_shares_full_path(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt2_group(
        events, hlo_text, step_name, lambda i: _rt2_source(i, hlo_text, full_path=True)
    )


@wrong(
    "line_shares",
    why="follows parent_frame_id to the outermost frame (the caller) instead of reading 'that "
    "frame's file location'; wrong on looped (scan body lines become the line of the scan call, "
    "or <string>/profile.py)",
)
def line_shares_outermost(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt2_group(
        events, hlo_text, step_name, lambda i: _rt2_source(i, hlo_text, outermost=True)
    )


# ---- task 7: longest_gap -------------------------------------------------------------------------


def _rt2_bounds(events, step_name) -> dict[int, tuple[int, int]]:
    steps = _rt2_steps(events, step_name)
    instr = [e for e in events if _rt2_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instr if _rt2_inside(e, s)]
        if inside:
            out[int(s.arg("step_num"))] = (
                min(e.start_ns for e in inside),
                max(e.end_ns for e in inside),
            )
    return out


@wrong(
    "longest_gap",
    why="measures between the step events (end of step n to start of n+1), not between their "
    "instruction events ('the step events ... include the Python'); wrong on a loop whose "
    "host-side work runs inside the with block of step 1 (20 ms after the block) and 5 ms of "
    "data loading sits between steps 2 and 3 (answer 2, not 1)",
)
def longest_gap_step_events(events: list[TraceEvent], step_name: str) -> int:
    steps = _rt2_steps(events, step_name)
    by_num = {int(s.arg("step_num")): s for s in steps}
    best, best_n = None, 0
    for n in sorted(by_num):
        if n + 1 in by_num:
            gap = by_num[n + 1].start_ns - by_num[n].end_ns
            if best is None or gap > best:
                best, best_n = gap, n
    return best_n


@wrong(
    "longest_gap",
    why="off by one: returns the step that waited (n + 1) instead of 'the step_num after which' "
    "the device waited; wrong on every trace",
)
def longest_gap_waiting_step(events: list[TraceEvent], step_name: str) -> int:
    b = _rt2_bounds(events, step_name)
    best, best_n = None, 0
    for n in sorted(b):
        if n + 1 in b:
            gap = b[n + 1][0] - b[n][1]
            if best is None or gap > best:
                best, best_n = gap, n + 1
    return best_n


@wrong(
    "longest_gap",
    why="the longest idle stretch between ANY two consecutive instruction events, mapped to the "
    "step it ends in minus one (not the gap between steps n and n+1); wrong on a loop whose "
    "step 1 calls the program twice with host work (20 ms) between the calls inside the step, "
    "and waits 5 ms between steps 2 and 3 (answer 2, not 1)",
)
def longest_gap_any_hole(events: list[TraceEvent], step_name: str) -> int:
    steps = _rt2_steps(events, step_name)
    instr = sorted((e for e in events if _rt2_is_instr(e)), key=lambda e: e.start_ns)
    best, best_at = None, None
    last_end = None
    for e in instr:
        if last_end is not None:
            gap = e.start_ns - last_end
            if best is None or gap > best:
                best, best_at = gap, e
        last_end = e.end_ns if last_end is None else max(last_end, e.end_ns)
    for s in steps:
        if best_at is not None and _rt2_inside(best_at, s):
            return max(0, int(s.arg("step_num")) - 1)
    return 0


@wrong(
    "longest_gap",
    why="pairs the step events in the order they come in the list ('events come in any order' "
    "holds for every task), not by step_num; wrong on a shuffled event list",
)
def longest_gap_list_order(events: list[TraceEvent], step_name: str) -> int:
    steps = [e for e in events if e.name == step_name and e.arg("step_num") is not None]
    instr = [e for e in events if _rt2_is_instr(e)]
    bounds = []
    for s in steps:
        inside = [e for e in instr if _rt2_inside(e, s)]
        if inside:
            bounds.append(
                (
                    int(s.arg("step_num")),
                    min(e.start_ns for e in inside),
                    max(e.end_ns for e in inside),
                )
            )
    best, best_n = None, 0
    for (n, _a, end), (_m, start, _b) in zip(bounds, bounds[1:]):
        gap = start - end
        if best is None or gap > best:
            best, best_n = gap, n
    return best_n


# ---- task 8: train_loop --------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="no warm-up: the first call compiles inside step 0 ('no backend compile: the one compile "
    "happens before step 0'); wrong on every batch list",
)
def train_loop_cold_first_step(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="compiled before the loop, but the step is not waited for inside its event (asynchronous "
    "dispatch: 'a step whose result is not waited for inside it leaves its work to land after "
    "it'), one block at the end; wrong on any batch list of a few steps (instruction events fall "
    "outside or in the next step)",
)
def train_loop_no_block(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    compiled = jax.jit(step).lower(state, batches[0]).compile()
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, _loss = compiled(state, batch)
    return jax.block_until_ready(state)


@wrong(
    "train_loop",
    why="warm-up by running the first batch outside the steps and starting the annotated loop at "
    "batches[1] with step_num counted from 1 ('for the i-th batch, one step event with step_num "
    "i'); wrong on every batch list (no step 0, batch 0 ran outside a step)",
)
def train_loop_warmup_is_step0(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    state, loss = jitted(state, batches[0])
    jax.block_until_ready((state, loss))
    for i, batch in enumerate(batches[1:], start=1):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="'warmed up' by lowering only (jitted.lower(state, batches[0]) without .compile(), "
    "read as the compile step): the backend compile still happens in the first call, inside "
    "step 0 ('no backend compile: the one compile happens before step 0'); wrong on every "
    "batch list",
)
def train_loop_lower_only(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    jitted.lower(state, batches[0])
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state
