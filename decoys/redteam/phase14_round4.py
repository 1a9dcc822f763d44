"""Red-team wrong answers for phase 14, written from the contract only.

Each function has the stub's signature and is wrong per the contract on the input named in its
`why`; every one agrees with a correct answer on the recorded profiles' common cases.
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

_rt4_NO_EVENT = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


# ---- shared pieces (correct unless a flag says otherwise) ----------------------------------------


def _rt4_steps(events, step_name):
    return sorted(
        (e for e in events if e.name == step_name and e.arg("step_num") is not None),
        key=lambda e: e.start_ns,
    )


def _rt4_is_ins(e):
    return e.hlo_op is not None and e.arg("hlo_module") is not None


def _rt4_inside(e, s, *, start_only=False):
    if start_only:
        return s.start_ns <= e.start_ns <= s.end_ns
    return s.start_ns <= e.start_ns and e.end_ns <= s.end_ns


def _rt4_nesting(evs, *, per_thread=True):
    """[(event, depth, self_ns)] with self = duration - direct children (per thread)."""
    groups = defaultdict(list)
    for e in evs:
        groups[e.thread if per_thread else ""].append(e)
    out = []
    for group in groups.values():
        group.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []  # [event, child_total, record]
        for e in group:
            while stack and stack[-1][0].end_ns <= e.start_ns:
                stack.pop()
            if stack:
                stack[-1][1].append(e.duration_ns)
            kids = []
            out.append((e, len(stack), kids))
            stack.append((e, kids, None))
    return [(e, d, e.duration_ns - sum(k)) for e, d, k in out]


def _rt4_nesting_all_desc(evs):
    """Self time minus ALL descendants (not one level)."""
    groups = defaultdict(list)
    for e in evs:
        groups[e.thread].append(e)
    out = []
    for group in groups.values():
        group.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in group:
            while stack and stack[-1][0].end_ns <= e.start_ns:
                stack.pop()
            for parent in stack:
                parent[1].append(e.duration_ns)
            kids = []
            out.append((e, len(stack), kids))
            stack.append((e, kids))
    return [(e, d, e.duration_ns - sum(k)) for e, d, k in out]


def _rt4_module_name(hlo_text):
    m = re.match(r"\s*HloModule\s+([^\s,]+)", hlo_text)
    return m.group(1) if m else ""


def _rt4_ins_table(hlo_text):
    module = parse_hlo(hlo_text)
    table = {}
    for comp in module.computations:
        for ins in comp.instructions:
            table[ins.name] = (comp, ins)
    return module, table


def _rt4_attrs(ins):
    return ins.attributes_text


def _rt4_op_name(ins):
    m = re.search(r'op_name="([^"]*)"', _rt4_attrs(ins))
    return m.group(1) if m else ""


def _rt4_kind(ins):
    if ins.opcode == "fusion":
        return ins.attribute("kind") or "fusion"
    return ins.opcode


def _rt4_scope(op_name, *, split_semicolon=True, deep_unwrap=True):
    if not op_name:
        return ""
    if split_semicolon:
        op_name = op_name.split(";")[0]
    parts = op_name.split("/")[1:-1]
    for part in parts:
        if deep_unwrap:
            while (m := re.fullmatch(r"[\w.\-]+\((.*)\)", part)) is not None:
                part = m.group(1)
        else:
            m = re.fullmatch(r"[\w.\-]+\((.*)\)", part)
            if m:
                part = m.group(1)
        if part:
            return part
    return ""


def _rt4_tables(hlo_text):
    head = hlo_text.split("\n%", 1)[0].split("\nENTRY", 1)[0]
    tables = {}
    current = None
    for line in head.splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(s, {})
            continue
        m = re.match(r"^(\d+)\s+(.*)$", s)
        if current is not None and m:
            current[int(m.group(1))] = m.group(2)
        elif s:
            current = None
    return tables


def _rt4_fields(row):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", row)}


def _rt4_sources(hlo_text, *, keep_dirs=False, end_line=False, skip_frames=False):
    t = _rt4_tables(hlo_text)
    names = {}
    for k, v in t.get("FileNames", {}).items():
        v = v.strip().strip('"')
        names[k] = v if keep_dirs else v.rsplit("/", 1)[-1]
    locs = {}
    for k, row in t.get("FileLocations", {}).items():
        f = _rt4_fields(row)
        line = f.get("line")
        if end_line:
            for key, value in re.findall(r"(\w+)=(\d+)", row):
                if key.endswith("line"):
                    line = int(value)
        locs[k] = f"{names.get(f.get('file_name_id'), '')}:{line}"
    frames = {}
    for k, row in t.get("StackFrames", {}).items():
        f = _rt4_fields(row)
        frames[k] = locs.get(f.get("file_location_id"), "")
    return locs if skip_frames else frames


def _rt4_source(ins, frames):
    m = re.search(r"stack_frame_id=(\d+)", _rt4_attrs(ins))
    return frames.get(int(m.group(1)), "") if m else ""


def _rt4_shares(
    events,
    hlo_text,
    step_name,
    label,
    *,
    module_filter=True,
    nesting=_rt4_nesting,
    use_duration=False,
    entry_only=False,
    drop_empty_label=False,
):
    module, table = _rt4_ins_table(hlo_text)
    if entry_only:
        entry = module.entry
        table = {i.name: (entry, i) for i in entry.instructions}
    name = _rt4_module_name(hlo_text)
    steps = _rt4_steps(events, step_name)
    evs = [e for e in events if _rt4_is_ins(e)]
    if module_filter:
        evs = [e for e in evs if e.arg("hlo_module") == name]
    totals = defaultdict(int)
    for e, _depth, self_ns in nesting(evs):
        if not any(_rt4_inside(e, s) for s in steps):
            continue
        if e.hlo_op not in table:
            continue
        key = label(table[e.hlo_op][1])
        if drop_empty_label and key == "":
            continue
        totals[key] += e.duration_ns if use_duration else self_ns
    whole = sum(totals.values())
    return {k: v / whole for k, v in totals.items()} if whole else {}


# ---- 1. step_instructions ------------------------------------------------------------------------


def _rt4_step_instr(
    events, step_name, *, per_thread=True, start_only=False, one_module=False, keep_empty=True
):
    evs = [e for e in events if _rt4_is_ins(e)]
    if one_module and evs:
        counts = defaultdict(int)
        for e in evs:
            counts[e.arg("hlo_module")] += 1
        top_module = max(counts, key=counts.get)
        evs = [e for e in evs if e.arg("hlo_module") == top_module]
    top = [e for e, d, _ in _rt4_nesting(evs, per_thread=per_thread) if d == 0]
    top.sort(key=lambda e: e.start_ns)
    out = {}
    for s in _rt4_steps(events, step_name):
        ran = [e.hlo_op for e in top if _rt4_inside(e, s, start_only=start_only)]
        if ran or keep_empty:
            out[int(s.arg("step_num"))] = ran
    return out


@wrong(
    "step_instructions",
    why="nesting is decided per thread ('nested in another of the same "
    "thread'); this one nests across threads, so on a hand-built trace with two executions at "
    "once on two threads an ENTRY copy on thread B that starts during thread A's while is "
    "dropped as if it were body work",
)
def _rt4_step_instructions_cross_thread(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt4_step_instr(events, step_name, per_thread=False)


@wrong(
    "step_instructions",
    why="'inside' requires the event to END at or before the step's end; "
    "this one only checks the start, so on an un-waited async step (or a hand-built trace) "
    "whose last kernel straddles the step's end that kernel is listed in the step",
)
def _rt4_step_instructions_start_only(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt4_step_instr(events, step_name, start_only=True)


@wrong(
    "step_instructions",
    why="an instruction event is any event with hlo_op and hlo_module, "
    "of any module; this keeps only the module with most events, so a step that runs two jitted "
    "functions (e.g. a grad module and a small update module) loses the smaller one's events",
)
def _rt4_step_instructions_one_module(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt4_step_instr(events, step_name, one_module=True)


@wrong(
    "step_instructions",
    why="'A step with no instruction event maps to []'; this omits such "
    "steps, wrong on any trace with an empty step (an un-waited step whose work landed in the "
    "next one, or a step that only did Python)",
)
def _rt4_step_instructions_drops_empty(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt4_step_instr(events, step_name, keep_empty=False)


# ---- 2. expected_counts --------------------------------------------------------------------------


def _rt4_trip(ins):
    m = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)', _rt4_attrs(ins))
    return int(m.group(1)) if m else 1


def _rt4_called(ins, key):
    m = re.search(key + r"=%?([\w.\-]+)", _rt4_attrs(ins))
    return m.group(1) if m else None


def _rt4_counts(
    hlo_text, *, entry_only=False, trip_from_cond=False, into_small_calls=False, flat_trips=False
):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    out = defaultdict(int)

    def cond_bound(cond_name):
        comp = comps.get(cond_name)
        if comp is None:
            return 1
        consts = [int(v) for v in re.findall(r"constant\((\d+)\)", hlo_text_of(comp))]
        return max(consts) if consts else 1

    def hlo_text_of(comp):
        start = hlo_text.find(f"%{comp.name} ")
        end = hlo_text.find("\n}", start)
        return hlo_text[start:end]

    def walk(comp, mult):
        for ins in comp.instructions:
            if ins.opcode in _rt4_NO_EVENT:
                continue
            out[ins.name] += mult
            if entry_only:
                continue
            if ins.opcode == "while":
                body = comps.get(_rt4_called(ins, "body"))
                trips = (
                    cond_bound(_rt4_called(ins, "condition")) if trip_from_cond else _rt4_trip(ins)
                )
                if body is not None:
                    walk(body, trips if flat_trips else mult * trips)
            elif ins.opcode == "call" and into_small_calls:
                callee = comps.get(_rt4_called(ins, "to_apply"))
                if callee is not None:
                    walk(callee, mult)

    walk(module.entry, 1)
    return dict(out)


@wrong(
    "expected_counts",
    why="the trip count is the while's backend_config known_trip_count; "
    "this reads the bound constant of the condition, right for scan/fori_loop from 0 by 1 but "
    "wrong for drawn_program's 'stride' stage (lax.while_loop from lo by 2 or 3: bound != trips)",
)
def _rt4_expected_counts_cond_bound(hlo_text: str) -> dict[str, int]:
    return _rt4_counts(hlo_text, trip_from_cond=True)


@wrong(
    "expected_counts",
    why="a while nested in a while's body runs outer*inner times; this "
    "multiplies the body only by its own while's trip count, wrong on drawn_program's 'nested' "
    "stage / programs.nested (scan of 3 holding fori of 2: inner body 6 per call, not 2) "
    "whenever the inner while is not wrapped in a small call",
)
def _rt4_expected_counts_flat_trips(hlo_text: str) -> dict[str, int]:
    return _rt4_counts(hlo_text, flat_trips=True)


@wrong(
    "expected_counts",
    why="a call marked xla_cpu_small_call is one kernel, nothing inside; "
    "this also counts the called while and its body, wrong on programs.looped (the fori_loop "
    "becomes such a call: while.0 and the region_3.5 body get events they never leave)",
)
def _rt4_expected_counts_into_calls(hlo_text: str) -> dict[str, int]:
    return _rt4_counts(hlo_text, into_small_calls=True)


@wrong(
    "expected_counts",
    why="while bodies run nested, once per trip, and leave events; this "
    "counts ENTRY only, wrong on every drawn program (at least one loop stage)",
)
def _rt4_expected_counts_entry_only(hlo_text: str) -> dict[str, int]:
    return _rt4_counts(hlo_text, entry_only=True)


# ---- 3. compiled_steps ---------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="a compile counts when it STARTS inside the step; this requires it "
    "to also end inside, wrong on the hand-built trace of a compile on a worker thread that "
    "outlasts its step",
)
def _rt4_compiled_steps_contained(events: list[TraceEvent], step_name: str) -> list[int]:
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    return sorted(
        int(s.arg("step_num"))
        for s in _rt4_steps(events, step_name)
        if any(_rt4_inside(c, s) for c in compiles)
    )


@wrong(
    "compiled_steps",
    why="the backend compile may run on a worker thread "
    "(tf_PjRtCompilerThread on 0.10, hand-built worker-thread traces); this only trusts "
    "backend_compile_and_load on the thread holding the step events (the Python thread)",
)
def _rt4_compiled_steps_python_thread(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = _rt4_steps(events, step_name)
    found = []
    for s in steps:
        if any(
            e.name == "backend_compile_and_load"
            and e.thread == s.thread
            and s.start_ns <= e.start_ns < s.end_ns
            for e in events
        ):
            found.append(int(s.arg("step_num")))
    return sorted(found)


@wrong(
    "compiled_steps",
    why="steps are named by step_num, not by position; this returns the "
    "index of the step among the step events, wrong on a loop resumed at step 5 (5,6,7 -> "
    "answers [0] for a compile in step 5)",
)
def _rt4_compiled_steps_position(events: list[TraceEvent], step_name: str) -> list[int]:
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    return sorted(
        i
        for i, s in enumerate(_rt4_steps(events, step_name))
        if any(s.start_ns <= c.start_ns < s.end_ns for c in compiles)
    )


@wrong(
    "compiled_steps",
    why="the compile marker is backend_compile_and_load (every version); "
    "this uses the codegen threads' FusionCompiler::Compile, so a recompile that hits the "
    "kernel cache or a module with no fusion kernel (and traces trimmed to the compile "
    "event alone) is missed, and a fusion compile on a codegen thread that starts after its "
    "step closed lands in the wrong step",
)
def _rt4_compiled_steps_fusion_compiler(events: list[TraceEvent], step_name: str) -> list[int]:
    compiles = [e for e in events if e.name.startswith("FusionCompiler::Compile")]
    return sorted(
        int(s.arg("step_num"))
        for s in _rt4_steps(events, step_name)
        if any(s.start_ns <= c.start_ns < s.end_ns for c in compiles)
    )


# ---- 4. kind_shares ------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="self time subtracts only the events nested DIRECTLY in one (one level "
    "down); this subtracts every descendant, so on programs.nested (a while holding a while "
    "holding the body) the outer while's share is too small, even negative",
)
def _rt4_kind_shares_all_descendants(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt4_shares(events, hlo_text, step_name, _rt4_kind, nesting=_rt4_nesting_all_desc)


@wrong(
    "kind_shares",
    why="self time, not duration: on programs.looped the while's duration "
    "already holds its body's kCustom/kLoop work, which this counts twice",
)
def _rt4_kind_shares_duration(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt4_shares(events, hlo_text, step_name, _rt4_kind, use_duration=True)


@wrong(
    "kind_shares",
    why="only events whose hlo_module is this module count; this counts every "
    "module's event whose hlo_op name also exists here (copy.1, wrapped_add...), wrong on a "
    "trace where a second jitted function runs inside the steps",
)
def _rt4_kind_shares_any_module(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt4_shares(events, hlo_text, step_name, _rt4_kind, module_filter=False)


@wrong(
    "kind_shares",
    why="the instruction may be in 'any computation'; this joins events to "
    "ENTRY instructions only, so on programs.looped the while body's ynn_fusion (kCustom) and "
    "kLoop fusions vanish from the shares",
)
def _rt4_kind_shares_entry_only(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt4_shares(events, hlo_text, step_name, _rt4_kind, entry_only=True)


# ---- 5. scope_shares -----------------------------------------------------------------------------


@wrong(
    "scope_shares",
    why="forward and backward of layer_1 both count for 'layer_1'; this uses "
    "xla_inspect's InstructionInfo.scope, which says 'layer_1 (backward)' for "
    "transpose(jvp(layer_1)): wrong on programs.layered (and mlp_grad's backward relu)",
)
def _rt4_scope_shares_toolkit(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    from xla_inspect.profile_query import instruction_info

    info = instruction_info(hlo_text)
    return _rt4_shares(events, hlo_text, step_name, lambda ins: info[ins.name].scope)


@wrong(
    "scope_shares",
    why="take the op_name up to its first ';' before splitting; this splits "
    "the joined string, so a fused instruction whose first op_name has no scope "
    "('jit(f)/mul;jit(f)/jvp(layer_1)/add') gets scope 'mul;jit(f)' instead of ''",
)
def _rt4_scope_shares_no_semicolon(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt4_shares(
        events,
        hlo_text,
        step_name,
        lambda ins: _rt4_scope(_rt4_op_name(ins), split_semicolon=False),
    )


@wrong(
    "scope_shares",
    why="unwrap EVERY wrapper to its innermost content; this peels one, so the "
    "backward pass transpose(jvp(layer_1)) counts as 'jvp(layer_1)', wrong on programs.layered",
)
def _rt4_scope_shares_one_unwrap(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt4_shares(
        events, hlo_text, step_name, lambda ins: _rt4_scope(_rt4_op_name(ins), deep_unwrap=False)
    )


@wrong(
    "scope_shares",
    why="the scope is the first non-empty part, whatever its name; this "
    "matches layer_<n> only, so a module whose scopes are named otherwise ('block_0', "
    "'encoder', 'attn') puts everything under ''",
)
def _rt4_scope_shares_layer_regex(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    def label(ins):
        m = re.search(r"\blayer_\d+\b", _rt4_op_name(ins).split(";")[0])
        return m.group(0) if m else ""

    return _rt4_shares(events, hlo_text, step_name, label)


# ---- 6. line_shares ------------------------------------------------------------------------------


@wrong(
    "line_shares",
    why="'its file name without directories'; this keeps FileNames' path, "
    "right on recorded/ (directories already cut) but wrong on every live capture "
    "('/abs/path/katas/phase14/programs.py:94')",
)
def _rt4_line_shares_full_path(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    frames = _rt4_sources(hlo_text, keep_dirs=True)
    return _rt4_shares(events, hlo_text, step_name, lambda ins: _rt4_source(ins, frames))


@wrong(
    "line_shares",
    why="the location's `line` (where the call starts); this picks the last "
    "field ending in 'line' (end_line), wrong on programs.spread whose jnp.matmul(...) and "
    "jnp.tanh(...) span several lines",
)
def _rt4_line_shares_end_line(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    frames = _rt4_sources(hlo_text, end_line=True)
    return _rt4_shares(events, hlo_text, step_name, lambda ins: _rt4_source(ins, frames))


@wrong(
    "line_shares",
    why="'No stack frame: \"\"' is a label that counts; this drops the "
    "instructions without a frame (copies, wrapped_broadcast of looped) and renormalises, "
    "wrong on programs.looped",
)
def _rt4_line_shares_drop_unknown(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    frames = _rt4_sources(hlo_text)
    return _rt4_shares(
        events, hlo_text, step_name, lambda ins: _rt4_source(ins, frames), drop_empty_label=True
    )


@wrong(
    "line_shares",
    why="stack_frame_id indexes StackFrames, whose file_location_id leads to "
    "FileLocations; this indexes FileLocations with the frame id directly, wrong whenever the "
    "two numberings differ (every real module with a call stack)",
)
def _rt4_line_shares_skip_frames(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    locs = _rt4_sources(hlo_text, skip_frames=True)
    return _rt4_shares(events, hlo_text, step_name, lambda ins: _rt4_source(ins, locs))


# ---- 7. longest_gap ------------------------------------------------------------------------------


def _rt4_gap(events, step_name, *, end_of_last_started=False, by_position=False, step_bounds=False):
    steps = _rt4_steps(events, step_name)
    ins = [e for e in events if _rt4_is_ins(e)]
    spans = {}
    for i, s in enumerate(steps):
        inside = [e for e in ins if _rt4_inside(e, s)]
        key = i if by_position else int(s.arg("step_num"))
        if step_bounds:
            spans[key] = (s.start_ns, s.end_ns)
        elif inside:
            if end_of_last_started:
                last = max(inside, key=lambda e: e.start_ns)
                spans[key] = (min(e.start_ns for e in inside), last.end_ns)
            else:
                spans[key] = (min(e.start_ns for e in inside), max(e.end_ns for e in inside))
    best, best_gap = None, None
    for n in sorted(spans):
        if n + 1 in spans:
            gap = spans[n + 1][0] - spans[n][1]
            if best_gap is None or gap > best_gap:
                best, best_gap = n, gap
    return best


@wrong(
    "longest_gap",
    why="the gap runs from the END of the last instruction event (max end); "
    "this takes the end of the last-STARTED one, which is a body event nested in a final "
    "while, so on programs.nested/rooted (a while last in the step) each gap is too long by "
    "the rest of the while",
)
def _rt4_longest_gap_last_started(events: list[TraceEvent], step_name: str) -> int:
    return _rt4_gap(events, step_name, end_of_last_started=True)


@wrong(
    "longest_gap",
    why="returns a step_num; this returns the position among the steps, "
    "wrong on a loop resumed at step 5 (answers 1 for the gap after step 6)",
)
def _rt4_longest_gap_position(events: list[TraceEvent], step_name: str) -> int:
    return _rt4_gap(events, step_name, by_position=True)


@wrong(
    "longest_gap",
    why="the gap is between instruction events; this measures between the "
    "step events, which hold the Python too: wrong when a slow host step (float(loss), "
    "logging inside the step) makes the device idle without widening the step-to-step gap",
)
def _rt4_longest_gap_step_events(events: list[TraceEvent], step_name: str) -> int:
    return _rt4_gap(events, step_name, step_bounds=True)


@wrong(
    "longest_gap",
    why="steps are the step events, not executions; this takes each run_id "
    "as a step (in start order, numbered from the first step_num), so a trace where a step "
    "runs two executions (two jitted calls, or two runs on two threads) shifts every later "
    "step and may pick the gap between two runs inside one step",
)
def _rt4_longest_gap_by_run(events: list[TraceEvent], step_name: str) -> int:
    steps = _rt4_steps(events, step_name)
    first = int(steps[0].arg("step_num")) if steps else 0
    runs = defaultdict(list)
    for e in events:
        if _rt4_is_ins(e) and any(_rt4_inside(e, s) for s in steps):
            runs[(e.arg("hlo_module"), e.arg("run_id"))].append(e)
    spans = sorted((min(e.start_ns for e in v), max(e.end_ns for e in v)) for v in runs.values())
    gaps = [spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)]
    return first + max(range(len(gaps)), key=gaps.__getitem__) if gaps else first


# ---- 8. train_loop -------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="each step must hold ALL of its execution; this never waits inside the "
    "step (block_until_ready only after the loop), so with async dispatch a step's kernels "
    "land after its step event closes: wrong on sgd_step with batches of 200000 rows x 8 "
    "(measured: step 0 holds 1 of its 11 kernels, 4 runs land outside the steps)",
)
def _rt4_train_loop_no_block(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fn = jax.jit(step)
    if batches:
        jax.block_until_ready(fn(state, batches[0]))  # warm-up, result dropped
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, _loss = fn(state, batch)
    return jax.block_until_ready(state)


@wrong(
    "train_loop",
    why="the returned state is that of the batches applied once each; this "
    "keeps the warm-up call's state, so every batch list returns one extra SGD step (the "
    "first batch applied twice)",
)
def _rt4_train_loop_warm_state(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fn = jax.jit(step)
    if batches:
        state, _ = jax.block_until_ready(fn(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jax.block_until_ready(fn(state, batch))
    return state


@wrong(
    "train_loop",
    why="'the one compile happens before step 0'; this 'warms up' with "
    "jax.jit(step).lower(...), which traces and lowers but does not compile, so the backend "
    "compile lands inside step 0 on every batch list",
)
def _rt4_train_loop_lower_only(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fn = jax.jit(step)
    if batches:
        fn.lower(state, batches[0])
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jax.block_until_ready(fn(state, batch))
    return state


@wrong(
    "train_loop",
    why="each step must hold exactly one execution of the JITTED step; this "
    "calls `step` as given (not jitted), so every step runs one small module per primitive "
    "(many run_ids) and step 0 holds their compiles: wrong on every batch list",
)
def _rt4_train_loop_eager(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jax.block_until_ready(step(state, batch))
    return state


@wrong(
    "train_loop",
    why="the i-th batch's step event has step_num i (0-based: 'before step "
    "0'); this numbers from 1 like a human count, wrong on every batch list",
)
def _rt4_train_loop_from_one(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fn = jax.jit(step)
    if batches:
        jax.block_until_ready(fn(state, batches[0]))
    for i, batch in enumerate(batches, start=1):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jax.block_until_ready(fn(state, batch))
    return state
