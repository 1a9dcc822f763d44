"""Red-team wrong answers for phase 14, written from the contract only.

Each function has the stub's signature and is wrong per the contract (katas/phase14/kata.py
docstrings and README.md) on the input named in its `why`. Checked to run on the profiles of
recorded/ and on live captures of the programs of programs.py.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect import profile_query as rt_profile_query
from xla_inspect.profile import Profile, TraceEvent

# ---- shared helpers (not answers) ----------------------------------------------------------------

rt_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
rt_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
rt_OP_NAME = re.compile(r'op_name="([^"]*)"')
rt_FRAME = re.compile(r"stack_frame_id=(\d+)")
rt_WRAPPED = re.compile(r"^\w+\((.*)\)$")


def rt_steps(events, step_name):
    return [e for e in events if e.name == step_name and isinstance(e.arg("step_num"), int)]


def rt_inside(event, step) -> bool:
    return step.start_ns <= event.start_ns and event.end_ns <= step.end_ns


def rt_nesting(instr):
    """id(event) -> depth, and id(event) -> direct children, per thread by time."""
    by_thread = defaultdict(list)
    for e in instr:
        by_thread[e.thread].append(e)
    depth, kids = {}, defaultdict(list)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack: list[TraceEvent] = []
        for e in evs:
            while stack and not (stack[-1].start_ns <= e.start_ns and e.end_ns <= stack[-1].end_ns):
                stack.pop()
            depth[id(e)] = len(stack)
            if stack:
                kids[id(stack[-1])].append(e)
            stack.append(e)
    return depth, kids


def rt_instructions(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def rt_module_events(events, hlo_text, step_name, entry_only=False):
    module, info = rt_instructions(hlo_text)
    if entry_only:
        info = {i.name: i for i in module.entry.instructions}
    steps = rt_steps(events, step_name)
    instr = [e for e in events if e.hlo_op in info and e.arg("hlo_module") == module.name]
    return [e for e in instr if any(rt_inside(e, s) for s in steps)], info, instr


def rt_self_times(events, hlo_text, step_name):
    chosen, info, instr = rt_module_events(events, hlo_text, step_name)
    _, kids = rt_nesting(instr)
    return [
        (info[e.hlo_op], e.duration_ns - sum(k.duration_ns for k in kids[id(e)])) for e in chosen
    ]


def rt_share(pairs) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for key, ns in pairs:
        total[key] += ns
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def rt_kind(ins) -> str:
    return ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode


def rt_scope(op_name: str) -> str:
    for part in op_name.split(";")[0].split("/")[1:-1]:
        while found := rt_WRAPPED.match(part):
            part = found.group(1)
        if part:
            return part
    return ""


def rt_op_name(ins) -> str:
    found = rt_OP_NAME.search(ins.attributes_text)
    return found.group(1) if found else ""


def rt_tables(hlo_text):
    head = hlo_text[: hlo_text.find("\n%")]
    tables: dict[str, dict[int, str]] = {}
    current = None
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


def rt_fields(row: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", row)}


def rt_profile(events, hlo_text, step_name) -> Profile:
    return Profile(tuple(events), hlo_text, parse_hlo(hlo_text).name, step_name)


# ---- task 1: step_instructions -------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="'events come in any order': walks the list as given, keeping a stack of open events in "
    "list order, so a nested event is only seen when it follows its while; wrong on the "
    "recorded looped_warm events shuffled (body events listed before their while.10)",
)
def si_assumes_sorted(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for step in rt_steps(events, step_name):
        stack: list[TraceEvent] = []
        ran: list[str] = []
        for e in events:
            if e.hlo_op is None or not rt_inside(e, step):
                continue
            while stack and not (stack[-1].start_ns <= e.start_ns and e.end_ns <= stack[-1].end_ns):
                stack.pop()
            if not stack:
                ran.append(e.hlo_op)
            stack.append(e)
        out[int(step.arg("step_num"))] = ran
    return out


@wrong(
    "step_instructions",
    why="'an instruction that ran twice is listed twice': dedupes names per step "
    "(dict.fromkeys); wrong on a trace whose step calls the jitted program twice",
)
def si_dedupes(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    instr = [e for e in events if e.hlo_op is not None]
    depth, _ = rt_nesting(instr)
    out: dict[int, list[str]] = {}
    for step in rt_steps(events, step_name):
        top = sorted(
            (e for e in instr if depth[id(e)] == 0 and rt_inside(e, step)), key=lambda e: e.start_ns
        )
        out[int(step.arg("step_num"))] = list(dict.fromkeys(e.hlo_op for e in top))
    return out


@wrong(
    "step_instructions",
    why="'inside = starts at or after the step's start and ENDS at or before its end': takes "
    "every event that starts inside the step; wrong on a loop that does not wait for its step "
    "(large sgd_step batches, no block_until_ready): work starting in step i and ending after it "
    "is listed under step i",
)
def si_start_only(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    instr = [e for e in events if e.hlo_op is not None]
    depth, _ = rt_nesting(instr)
    out: dict[int, list[str]] = {}
    for step in rt_steps(events, step_name):
        top = [e for e in instr if depth[id(e)] == 0 and step.start_ns <= e.start_ns <= step.end_ns]
        out[int(step.arg("step_num"))] = [e.hlo_op for e in sorted(top, key=lambda e: e.start_ns)]
    return out


@wrong(
    "step_instructions",
    why="'names are labels (the tests rename instructions)': leaves out the events nested in an "
    "event whose hlo_op starts with while/conditional instead of judging nesting by time; wrong "
    "on looped_warm with while.10 renamed (its body's copies and fusions get listed)",
)
def si_nested_by_name(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    instr = sorted((e for e in events if e.hlo_op is not None), key=lambda e: e.start_ns)
    loops = [e for e in instr if e.hlo_op.startswith(("while", "conditional", "cond"))]
    out: dict[int, list[str]] = {}
    for step in rt_steps(events, step_name):
        ran = [
            e.hlo_op
            for e in instr
            if rt_inside(e, step)
            and not any(l is not e and l.thread == e.thread and rt_inside(e, l) for l in loops)
        ]
        out[int(step.arg("step_num"))] = ran
    return out


@wrong(
    "step_instructions",
    why="'nested in another of the SAME thread': judges nesting against instruction events of "
    "every thread; wrong on a step where two programs (or two thunks) run at once on execute and "
    "execute:1, the shorter one overlapping the longer is dropped",
)
def si_cross_thread(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    instr = sorted(
        (e for e in events if e.hlo_op is not None), key=lambda e: (e.start_ns, -e.duration_ns)
    )
    out: dict[int, list[str]] = {}
    for step in rt_steps(events, step_name):
        inside = [e for e in instr if rt_inside(e, step)]
        top = [
            e
            for e in inside
            if not any(
                o is not e and o.duration_ns > e.duration_ns and rt_inside(e, o) for o in inside
            )
        ]
        out[int(step.arg("step_num"))] = [e.hlo_op for e in top]
    return out


# ---- task 2: expected_counts (predict) -----------------------------------------------------------


def rt_walk_counts(
    module, computation, mult, counts, *, trip_extra=0, into_calls=False, cond=False
):
    for ins in computation.instructions:
        if ins.opcode in rt_VIEWS:
            continue
        counts[ins.name] += mult
        if ins.opcode == "while":
            n = int(rt_TRIP.search(ins.attribute("backend_config") or "").group(1)) + trip_extra
            body = module[ins.attribute("body").lstrip("%")]
            rt_walk_counts(
                module,
                body,
                mult * n,
                counts,
                trip_extra=trip_extra,
                into_calls=into_calls,
                cond=cond,
            )
            if cond:
                condition = module[ins.attribute("condition").lstrip("%")]
                rt_walk_counts(module, condition, mult * (n + 1), counts, cond=cond)
        if ins.opcode == "call" and into_calls:
            for name in ins.called_computations:
                rt_walk_counts(module, module[name], mult, counts, into_calls=into_calls)


@wrong(
    "expected_counts",
    why="'how many times (a while printed with known_trip_count)': counts a while's body "
    "instructions once, not once per trip; wrong on looped (the scan body's ynn_fusion, copies "
    "and kLoop fusions run 4 times)",
)
def ec_body_once(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = defaultdict(int)
    for ins in module.entry.instructions:
        if ins.opcode in rt_VIEWS:
            continue
        counts[ins.name] += 1
        if ins.opcode == "while":
            for body in module[ins.attribute("body").lstrip("%")].instructions:
                if body.opcode not in rt_VIEWS:
                    counts[body.name] += 1
    return dict(counts)


@wrong(
    "expected_counts",
    why="'a call marked xla_cpu_small_call is one kernel: one event, nothing inside': also "
    "counts the while inside the small call and its body x3; wrong on looped (while.0, "
    "sine_add_fusion, wrapped_add.1 leave no event) and branchy",
)
def ec_into_small_call(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = defaultdict(int)
    rt_walk_counts(module, module.entry, 1, counts, into_calls=True)
    return dict(counts)


@wrong(
    "expected_counts",
    why="'decide from the text which instructions become work' (opcodes, not names): drops "
    "instructions by name prefix (bitcast, get-tuple-element, tuple, constant, param); wrong on "
    "looped: the get-tuple-element named while.13 is counted and the fusion "
    "bitcast_dynamic-update-slice_fusion is dropped (reshaping: bitcast_slice_fusion)",
)
def ec_by_name(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    prefixes = ("bitcast", "get-tuple-element", "tuple", "constant", "param", "arg_tuple")
    counts: dict[str, int] = defaultdict(int)

    def walk(computation, mult):
        for ins in computation.instructions:
            if ins.name.startswith(prefixes):
                continue
            counts[ins.name] += mult
            if ins.name.startswith("while") and ins.opcode == "while":
                n = int(rt_TRIP.search(ins.attribute("backend_config") or "").group(1))
                walk(module[ins.attribute("body").lstrip("%")], mult * n)

    walk(module.entry, 1)
    return dict(counts)


@wrong(
    "expected_counts",
    why="'its condition leaves no event when the count is known': also counts the condition's "
    "compare fusion n + 1 times per while; wrong on looped (wrapped_compare x5)",
)
def ec_counts_condition(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = defaultdict(int)
    rt_walk_counts(module, module.entry, 1, counts, cond=True)
    return dict(counts)


@wrong(
    "expected_counts",
    why="every ENTRY instruction that does work leaves an event, the ROOT too: skips the ROOT "
    "(assumed to be the output tuple); wrong on branchy, whose ROOT is the ynn_fusion matmul",
)
def ec_skips_root(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = defaultdict(int)
    rt_walk_counts(module, module.entry, 1, counts)
    root = module.entry.root.name
    counts.pop(root, None)
    return dict(counts)


# ---- task 3: compiled_steps ----------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="'a backend compile started inside the step': takes FusionCompiler::Compile (one per "
    "generated kernel) as the compile; wrong on a cold step of a program with nothing to "
    "codegen (jax.jit(lambda x: x @ x) or an identity: backend_compile_and_load only)",
)
def cs_fusion_kernels(events: list[TraceEvent], step_name: str) -> list[int]:
    kernels = [e for e in events if e.name == "FusionCompiler::Compile"]
    return sorted(
        int(s.arg("step_num"))
        for s in rt_steps(events, step_name)
        if any(s.start_ns <= k.start_ns <= s.end_ns for k in kernels)
    )


@wrong(
    "compiled_steps",
    why="'tracing and lowering alone are not a compile': counts any event named like compile, "
    "lower or trace; wrong on a step that only runs jax.jit(f).lower(x) "
    "(lower_sharding_computation, no backend_compile_and_load)",
)
def cs_lowering_counts(events: list[TraceEvent], step_name: str) -> list[int]:
    marks = [
        e
        for e in events
        if any(w in e.name.lower() for w in ("compile", "lower_", "trace_to_jaxpr"))
    ]
    return sorted(
        int(s.arg("step_num"))
        for s in rt_steps(events, step_name)
        if any(s.start_ns <= m.start_ns <= s.end_ns for m in marks)
    )


@wrong(
    "compiled_steps",
    why="'the step_nums ... during which XLA compiled': returns only the first step holding a "
    "compile (a cold call compiles once); wrong on a loop that recompiles for a new shape at "
    "step 3 ([1, 3] expected)",
)
def cs_first_only(events: list[TraceEvent], step_name: str) -> list[int]:
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    for s in sorted(rt_steps(events, step_name), key=lambda e: e.start_ns):
        if any(s.start_ns <= c.start_ns <= s.end_ns for c in compiles):
            return [int(s.arg("step_num"))]
    return []


@wrong(
    "compiled_steps",
    why="'a backend compile started inside the step event' (an event, not a duration): takes "
    "the steps lasting over 5x the median step as the compiling ones; wrong on a warm trace "
    "where one step sleeps or does slow host work (no compile at all)",
)
def cs_slow_steps(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = rt_steps(events, step_name)
    if not steps:
        return []
    durations = sorted(s.duration_ns for s in steps)
    median = durations[len(durations) // 2]
    return sorted(int(s.arg("step_num")) for s in steps if s.duration_ns > 5 * median)


# ---- task 4: kind_shares -------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="'self time (duration minus the instruction events nested directly in it)': sums raw "
    "durations, so a while's body is counted twice; wrong on looped (the 'while' share absorbs "
    "its body's kernels)",
)
def ks_durations(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    chosen, info, _ = rt_module_events(events, hlo_text, step_name)
    return rt_share((rt_kind(info[e.hlo_op]), e.duration_ns) for e in chosen)


@wrong(
    "kind_shares",
    why="'whose hlo_op names one of its instructions, in any computation': joins events to the "
    "ENTRY's instructions only, so a while body's kernels vanish; wrong on looped (no kCustom: "
    "the scan body's ynn_fusion)",
)
def ks_entry_only(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    chosen, info, instr = rt_module_events(events, hlo_text, step_name, entry_only=True)
    _, kids = rt_nesting(instr)
    return rt_share(
        (rt_kind(info[e.hlo_op]), e.duration_ns - sum(k.duration_ns for k in kids[id(e)]))
        for e in chosen
    )


@wrong(
    "kind_shares",
    why="'share of the total ... the shares add up to 1': divides by the summed durations of the "
    "step events (which include Python), not by the instructions' total; wrong on every "
    "profile (mlp_grad_cold: shares add up to far below 1)",
)
def ks_step_denominator(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for ins, ns in rt_self_times(events, hlo_text, step_name):
        total[rt_kind(ins)] += ns
    whole = sum(s.duration_ns for s in rt_steps(events, step_name))
    return {k: v / whole for k, v in total.items()} if whole else {}


@wrong(
    "kind_shares",
    why="'minus the instruction events nested directly in it (one level down)': subtracts every "
    "descendant; wrong on a scan whose body holds another while (nested lax.scan or a "
    "fori_loop in a scan): the outer while's self time loses its grandchildren twice",
)
def ks_all_descendants(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    chosen, info, instr = rt_module_events(events, hlo_text, step_name)
    pairs = []
    for e in chosen:
        inner = sum(
            o.duration_ns
            for o in instr
            if o is not e
            and o.thread == e.thread
            and rt_inside(o, e)
            and o.duration_ns < e.duration_ns
        )
        pairs.append((rt_kind(info[e.hlo_op]), max(0, e.duration_ns - inner)))
    return rt_share(pairs)


@wrong(
    "kind_shares",
    why="'minus the durations of the INSTRUCTION events nested directly in it': subtracts every "
    "event nested in it on its thread, the `end: <op>` markers too; wrong on looped_warm (each "
    "small copy/kLoop kernel loses its ~100 ns end marker, shifting copy and kLoop shares)",
)
def ks_minus_markers(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    chosen, info, _ = rt_module_events(events, hlo_text, step_name)
    same_thread = defaultdict(list)
    for e in events:
        same_thread[e.thread].append(e)
    pairs = []
    for e in chosen:
        inner = [o for o in same_thread[e.thread] if o is not e and rt_inside(o, e)]
        direct = [
            o
            for o in inner
            if not any(
                p is not o and rt_inside(o, p) and p.duration_ns > o.duration_ns for p in inner
            )
        ]
        pairs.append(
            (rt_kind(info[e.hlo_op]), max(0, e.duration_ns - sum(o.duration_ns for o in direct)))
        )
    return rt_share(pairs)


# ---- task 5: scope_shares ------------------------------------------------------------------------


@wrong(
    "scope_shares",
    why="'the forward and the backward pass of layer_1 both count for \"layer_1\"' and 'No "
    "op_name ... \"\"': uses the toolkit's time_by(..., 'scope'), which labels 'layer_1 "
    "(backward)' and '(no scope)'; wrong on layered_warm",
)
def ss_toolkit_scope(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    return rt_profile_query.shares(
        rt_profile_query.time_by(rt_profile(events, hlo_text, step_name), "scope")
    )


@wrong(
    "scope_shares",
    why="'take the op_name up to its first ;': splits the whole op_name on '/'; wrong on "
    "layered and mlp_grad (broadcast_multiply_fusion's 'jit(f)/transpose(jvp())/mul;jit(f)/...' "
    "gets the scope 'mul;jit(layered)')",
)
def ss_no_semicolon(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    def scope(op_name):
        for part in op_name.split("/")[1:-1]:
            while found := rt_WRAPPED.match(part):
                part = found.group(1)
            if part:
                return part
        return ""

    return rt_share(
        (scope(rt_op_name(i)), ns) for i, ns in rt_self_times(events, hlo_text, step_name)
    )


@wrong(
    "scope_shares",
    why="'unwrap every remaining part ... to its innermost content': unwraps one level only, so "
    "transpose(jvp(layer_1)) gives 'jvp(layer_1)'; wrong on layered (backward time not in layer_i)",
)
def ss_unwrap_once(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    def scope(op_name):
        for part in op_name.split(";")[0].split("/")[1:-1]:
            found = rt_WRAPPED.match(part)
            if found:
                part = found.group(1)
            if part:
                return part
        return ""

    return rt_share(
        (scope(rt_op_name(i)), ns) for i, ns in rt_self_times(events, hlo_text, step_name)
    )


@wrong(
    "scope_shares",
    why="'the FIRST part that is not empty then is the scope': takes the last non-empty part "
    "before the primitive (the innermost scope); wrong on looped ('eval_jaxpr' instead of "
    "'while' for the scan body's kernels)",
)
def ss_innermost(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    def scope(op_name):
        found_scope = ""
        for part in op_name.split(";")[0].split("/")[1:-1]:
            while found := rt_WRAPPED.match(part):
                part = found.group(1)
            if part:
                found_scope = part
        return found_scope

    return rt_share(
        (scope(rt_op_name(i)), ns) for i, ns in rt_self_times(events, hlo_text, step_name)
    )


@wrong(
    "scope_shares",
    why="'unwrap every part written word(inner)': skips parts written jit(...) as if they were "
    "the function's jit, not a scope; wrong on mlp_grad (jit(mlp_grad)/jvp()/jit(relu)/max has "
    "the scope 'relu', answered as '')",
)
def ss_skips_inner_jit(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    def scope(op_name):
        for part in op_name.split(";")[0].split("/")[1:-1]:
            if part.startswith(("jit(", "pjit(")):
                continue
            while found := rt_WRAPPED.match(part):
                part = found.group(1)
            if part:
                return part
        return ""

    return rt_share(
        (scope(rt_op_name(i)), ns) for i, ns in rt_self_times(events, hlo_text, step_name)
    )


# ---- task 6: line_shares -------------------------------------------------------------------------


def rt_line_shares_with(events, hlo_text, step_name, frame_to_source: Callable[[int, dict], str]):
    tables = rt_tables(hlo_text)

    def source(ins):
        found = rt_FRAME.search(ins.attributes_text)
        return frame_to_source(int(found.group(1)), tables) if found else ""

    return rt_share((source(i), ns) for i, ns in rt_self_times(events, hlo_text, step_name))


def rt_location(location_id: int, tables: dict, keep_dirs=False, name_key="file_name_id") -> str:
    row = rt_fields(tables.get("FileLocations", {}).get(location_id, ""))
    if name_key not in row or "line" not in row:
        return ""
    table = "FileNames" if name_key == "file_name_id" else "FunctionNames"
    name = tables.get(table, {}).get(row[name_key], '"?"').strip('"')
    if not keep_dirs:
        name = name.rsplit("/", 1)[-1]
    return f"{name}:{row['line']}"


@wrong(
    "line_shares",
    why="'that frame's file location in the module's StackFrames, FileLocations...': uses the "
    "stack_frame_id as a FileLocations id, skipping StackFrames (the two coincide in "
    "mlp_grad_cold); wrong on layered_warm and looped_warm (frame 12 -> location 10, line 87 not 89)",
)
def ls_frame_as_location(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return rt_line_shares_with(events, hlo_text, step_name, lambda f, t: rt_location(f, t))


@wrong(
    "line_shares",
    why="'its file name without directories': keeps FileNames as printed; right on recorded/ "
    "(whose FileNames were cut) but wrong on every live capture, whose FileNames hold "
    "absolute paths (/.../katas/phase14/programs.py:44)",
)
def ls_keeps_directories(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    def source(frame, tables):
        row = rt_fields(tables.get("StackFrames", {}).get(frame, ""))
        return rt_location(row.get("file_location_id", -1), tables, keep_dirs=True)

    return rt_line_shares_with(events, hlo_text, step_name, source)


@wrong(
    "line_shares",
    why="'No stack frame: \"\"': uses the toolkit's time_by(..., 'source'), which labels "
    "'(no source)'; wrong on looped_warm (its copies and wrapped_broadcast carry no frame)",
)
def ls_toolkit_source(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    return rt_profile_query.shares(
        rt_profile_query.time_by(rt_profile(events, hlo_text, step_name), "source")
    )


@wrong(
    "line_shares",
    why="'that frame's file location': follows parent_frame_id first (the caller's line); wrong "
    "on layered_warm and looped_warm (e.g. frame 10 of looped -> parent 8 -> line 54 col 15, "
    "and frame 12 of layered -> parent 6 -> line 87, not 89)",
)
def ls_parent_frame(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    def source(frame, tables):
        frames = tables.get("StackFrames", {})
        parent = rt_fields(frames.get(frame, "")).get("parent_frame_id", frame)
        row = rt_fields(frames.get(parent, ""))
        return rt_location(row.get("file_location_id", -1), tables)

    return rt_line_shares_with(events, hlo_text, step_name, source)


# ---- task 7: longest_gap -------------------------------------------------------------------------


def rt_spans(events, step_name, pick):
    spans = {}
    for s in rt_steps(events, step_name):
        inside = [e for e in events if pick(e) and rt_inside(e, s)]
        if inside:
            spans[int(s.arg("step_num"))] = inside
    return spans


@wrong(
    "longest_gap",
    why="'the step events themselves do not show it: they include the Python': measures from "
    "the end of step event n to the start of step event n + 1; wrong on a loop whose host "
    "work (time.sleep, float(loss), logging) sits inside the step's `with` block after the step",
)
def lg_step_events(events: list[TraceEvent], step_name: str) -> int:
    steps = {int(s.arg("step_num")): s for s in rt_steps(events, step_name)}
    gaps = {n: steps[n + 1].start_ns - steps[n].end_ns for n in steps if n + 1 in steps}
    return max(gaps, key=gaps.get)


@wrong(
    "longest_gap",
    why="'Return the n with the longest gap' (the step BEFORE the gap): returns n + 1, the step "
    "that waited; wrong on any loop that sleeps after one step",
)
def lg_returns_next(events: list[TraceEvent], step_name: str) -> int:
    spans = rt_spans(events, step_name, lambda e: e.hlo_op is not None)
    gaps = {
        n: min(e.start_ns for e in spans[n + 1]) - max(e.end_ns for e in spans[n])
        for n in spans
        if n + 1 in spans
    }
    return max(gaps, key=gaps.get) + 1


@wrong(
    "longest_gap",
    why="'from the end of the last instruction event inside step n to the start of the first "
    "inside n + 1': measures start to start (device work of step n plus the gap); wrong on a "
    "loop whose step 1 runs a ~100 ms matmul chain and which sleeps 3 ms after step 2 only "
    "(answers 1, the gap is after 2)",
)
def lg_start_to_start(events: list[TraceEvent], step_name: str) -> int:
    spans = rt_spans(events, step_name, lambda e: e.hlo_op is not None)
    gaps = {
        n: min(e.start_ns for e in spans[n + 1]) - min(e.start_ns for e in spans[n])
        for n in spans
        if n + 1 in spans
    }
    return max(gaps, key=gaps.get)


@wrong(
    "longest_gap",
    why="'the instruction events INSIDE step n': assigns executions to steps by run_id order "
    "(k-th run = step k) instead of by time; wrong on a loop where a step runs nothing or runs "
    "the program twice (every later step is shifted)",
)
def lg_by_run_order(events: list[TraceEvent], step_name: str) -> int:
    runs: dict[Any, list[TraceEvent]] = defaultdict(list)
    for e in events:
        if e.hlo_op is not None:
            runs[e.arg("run_id")].append(e)
    ordered = sorted(runs.values(), key=lambda evs: min(e.start_ns for e in evs))
    gaps = {
        k: min(e.start_ns for e in ordered[k + 1]) - max(e.end_ns for e in ordered[k])
        for k in range(len(ordered) - 1)
    }
    return max(gaps, key=gaps.get)


# ---- task 8: train_loop (decide) -----------------------------------------------------------------


@wrong(
    "train_loop",
    why="'no backend compile: the one compile happens before step 0': calls jax.jit(step) first "
    "inside step 0, so step 0 holds backend_compile_and_load; wrong on any batches",
)
def tl_no_warmup(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="'each holding ... one execution ..., all of it': never waits inside the step, so with "
    "asynchronous dispatch a step's instruction events land after its step event; wrong on "
    "sgd_step with large batches (x f32[2048,1024], w f32[1024,64]: steps 1-3 hold no "
    "instruction event, their work lands after them)",
)
def tl_no_block(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, _ = jitted(state, batch)
    return jax.block_until_ready(state)


@wrong(
    "train_loop",
    why="'for the i-th batch, one step event ... with step_num i': numbers the steps from 1; "
    "wrong on any batches",
)
def tl_steps_from_one(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches, start=1):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="'The returned state equals that of jax.jit(step) applied batch by batch': the warm-up "
    "call's new state is kept, so batch 0 is applied twice; wrong on any batches (the trace "
    "itself reads cleanly)",
)
def tl_warmup_keeps_state(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    state, _ = jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state
