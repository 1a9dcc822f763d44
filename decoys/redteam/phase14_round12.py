"""Red team, phase 14, round 12: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import defaultdict

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------

_rt12_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_rt12_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_rt12_OP_NAME = re.compile(r'op_name="([^"]*)"')
_rt12_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _rt12_args(e):
    return dict(e.args)


def _rt12_is_instr(e):
    a = _rt12_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt12_steps(events, step_name):
    return [
        e for e in events if e.name == step_name and isinstance(_rt12_args(e).get("step_num"), int)
    ]


def _rt12_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt12_nesting(instrs, single_pop=False):
    """Per thread, a stack of open instruction events; returns [(event, parent-or-None)]."""
    out = []
    by_thread = defaultdict(list)
    for e in instrs:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            if single_pop:
                if stack and not _rt12_inside(e, stack[-1]):
                    stack.pop()
                parent = stack[-1] if stack and _rt12_inside(e, stack[-1]) else None
            else:
                while stack and not _rt12_inside(e, stack[-1]):
                    stack.pop()
                parent = stack[-1] if stack else None
            out.append((e, parent))
            stack.append(e)
    return out


def _rt12_instrs(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _rt12_self_times(events, hlo_text, step_name, top_only_full=False, all_modules_total=False):
    """[(instruction, self ns)] for the module's instruction events inside the steps, and the
    total the shares divide by."""
    module, info = _rt12_instrs(hlo_text)
    steps = _rt12_steps(events, step_name)
    instrs = [e for e in events if _rt12_is_instr(e)]
    pairs = _rt12_nesting(instrs)
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen, other_total = [], 0
    for e, parent in pairs:
        if not any(_rt12_inside(e, s) for s in steps):
            continue
        a = _rt12_args(e)
        self_ns = e.duration_ns - kids[id(e)]
        if a["hlo_module"] != module.name or a["hlo_op"] not in info:
            other_total += self_ns
            continue
        if top_only_full:
            if parent is not None:
                continue
            self_ns = e.duration_ns
        chosen.append((info[a["hlo_op"]], self_ns))
    return chosen, other_total


def _rt12_share(pairs, extra_total=0):
    total = defaultdict(float)
    for k, v in pairs:
        total[k] += v
    whole = sum(total.values()) + extra_total
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt12_tables(hlo_text):
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


def _rt12_line_label(ins, tables):
    found = _rt12_FRAME.search(ins.attributes_text)
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


def _rt12_work_bounds(events, step_name):
    """step_num -> (first start, last end) of the instruction events inside it."""
    steps = _rt12_steps(events, step_name)
    instrs = [e for e in events if _rt12_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instrs if _rt12_inside(e, s)]
        if inside:
            out[_rt12_args(s)["step_num"]] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return out


def _rt12_gaps(events, step_name):
    bounds = _rt12_work_bounds(events, step_name)
    gaps = {}
    for n in sorted(bounds):
        if n + 1 in bounds:
            gaps[n] = bounds[n + 1][0] - bounds[n][1]
    return gaps


def _rt12_counts(hlo_text, *, is_view=None):
    """Correct walk (ENTRY, while bodies times known_trip_count) unless is_view is replaced."""
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = defaultdict(int)
    view = is_view or (lambda ins: ins.opcode in _rt12_VIEWS)

    def called(ins, key):
        m = re.search(key + r"=%?([\w.\-]+)", ins.attributes_text)
        return comps.get(m.group(1)) if m else None

    def walk(comp, mult):
        for ins in comp.instructions:
            if view(ins):
                continue
            counts[ins.name] += mult
            if ins.opcode == "while":
                found = _rt12_TRIP.search(ins.attributes_text)
                body = called(ins, "body")
                if body is not None:
                    walk(body, mult * (int(found.group(1)) if found else 1))

    walk(module.entry, 1)
    return dict(counts)


def _rt12_kind(ins):
    return ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="'the instruction events inside the step event ... an instruction that ran twice is listed "
    "twice': assumes a step holds one execution and keeps only the events of the first run_id "
    "(the run_id arg) seen in each step, so a step whose body calls the jitted function twice "
    "(e.g. two calls of programs.looped inside one StepTraceAnnotation) lists the ops of the "
    "first call only",
)
def _rt12_step_instructions_first_run_only(events, step_name):
    instrs = [e for e in events if _rt12_is_instr(e)]
    parent = dict((id(e), p) for e, p in _rt12_nesting(instrs))
    out = {}
    for s in _rt12_steps(events, step_name):
        inside = sorted(
            (e for e in instrs if _rt12_inside(e, s) and parent[id(e)] is None),
            key=lambda e: e.start_ns,
        )
        first_run = _rt12_args(inside[0]).get("run_id") if inside else None
        out[_rt12_args(s)["step_num"]] = [
            _rt12_args(e)["hlo_op"] for e in inside if _rt12_args(e).get("run_id") == first_run
        ]
    return out


@wrong(
    "step_instructions",
    why="'in the order they start': orders each step's top-level events by their END (as the "
    "'end: <op>' markers list them); the same on one thread, but when top-level events of two "
    "threads overlap (A on thread t1 [0, 10], B on t2 [5, 8]) it lists [B, A] instead of [A, B]",
)
def _rt12_step_instructions_end_order(events, step_name):
    instrs = [e for e in events if _rt12_is_instr(e)]
    parent = dict((id(e), p) for e, p in _rt12_nesting(instrs))
    out = {}
    for s in _rt12_steps(events, step_name):
        inside = sorted(
            (e for e in instrs if _rt12_inside(e, s) and parent[id(e)] is None),
            key=lambda e: (e.start_ns + e.duration_ns, e.start_ns),
        )
        out[_rt12_args(s)["step_num"]] = [_rt12_args(e)["hlo_op"] for e in inside]
    return out


# ---- expected_counts ----------------------------------------------------------------------------


@wrong(
    "expected_counts",
    why="'decide from the text which instructions become work at run time': decides by whether the "
    "instruction carries metadata (op_name), taking instructions without it for compiler "
    "plumbing; but compiler-made kernels have no metadata and still run: in "
    "programs.reshaping the ENTRY's %wrapped_copy, %pad_bitcast_fusion and "
    "%wrapped_reduce-window fusions (no metadata) are left out, though each leaves one event",
)
def _rt12_expected_counts_needs_metadata(hlo_text):
    return _rt12_counts(
        hlo_text,
        is_view=lambda ins: (
            ins.opcode in _rt12_VIEWS
            or ("op_name=" not in ins.attributes_text and ins.opcode != "while")
        ),
    )


@wrong(
    "expected_counts",
    why="'decide from the text which instructions become work at run time': takes a bitcast that "
    "changes the printed shape (f32[40,40] -> f32[100,16]) for a reshape kernel and counts it; "
    "a bitcast is a view of the same buffer and leaves no event: wrong on programs.reshaping "
    "(%bitcast.2 = f32[100,16] bitcast(%ynn_fusion: f32[40,40]) in ENTRY counted 1, no event)",
)
def _rt12_expected_counts_reshaping_bitcast_runs(hlo_text):
    module = parse_hlo(hlo_text)
    shapes = {i.name: i.shape for c in module.computations for i in c.instructions}

    def dims(shape):
        found = re.match(r"^\w+\[([\d,]*)\]", shape or "")
        return found.group(1) if found else None

    def is_view(ins):
        if ins.opcode != "bitcast":
            return ins.opcode in _rt12_VIEWS
        # same dims as its operand: a pure view; other dims: taken as a reshape that runs
        return dims(ins.shape) == dims(shapes.get(ins.operands[0].lstrip("%"), ""))

    return _rt12_counts(hlo_text, is_view=is_view)


# ---- kind_shares --------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="'{label: share of the total} ... the shares add up to 1': returns percentages (shares x "
    "100, adding up to 100) as a profiler's summary table prints them; wrong on any profile, "
    "e.g. recorded/looped_warm.json",
)
def _rt12_kind_shares_percent(events, hlo_text, step_name):
    chosen, _ = _rt12_self_times(events, hlo_text, step_name)
    return {k: 100.0 * v for k, v in _rt12_share([(_rt12_kind(i), t) for i, t in chosen]).items()}


@wrong(
    "kind_shares",
    why="'how the SELF TIME ... divides by kind': reads 'the tests compare shares, counts ... never "
    "a duration' as a hint to share out the NUMBER of events per kind, not their self time; on "
    "programs.heavy_line the one big dot (kCustom) holds almost all the time but only 1 of the "
    "events",
)
def _rt12_kind_shares_count_not_time(events, hlo_text, step_name):
    chosen, _ = _rt12_self_times(events, hlo_text, step_name)
    return _rt12_share([(_rt12_kind(i), 1) for i, _ in chosen])


@wrong(
    "kind_shares",
    why="'whose hlo_module is the module of hlo_text': matches the module by substring "
    "(module name in hlo_module) to tolerate suffixes, so events of another module whose name "
    "contains it (jit_step inside jit_step_2 or jit_train_step, with an instruction of the same "
    "name such as %fusion or %dot.1) are counted as this module's; wrong on a trace of two "
    "jitted functions named f and f_2",
)
def _rt12_kind_shares_module_substring(events, hlo_text, step_name):
    module, info = _rt12_instrs(hlo_text)
    steps = _rt12_steps(events, step_name)
    instrs = [e for e in events if _rt12_is_instr(e)]
    pairs = _rt12_nesting(instrs)
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen = []
    for e, _parent in pairs:
        a = _rt12_args(e)
        if not any(_rt12_inside(e, s) for s in steps):
            continue
        if module.name in str(a["hlo_module"]) and a["hlo_op"] in info:
            chosen.append((_rt12_kind(info[a["hlo_op"]]), e.duration_ns - kids[id(e)]))
    return _rt12_share(chosen)


# ---- scope_shares -------------------------------------------------------------------------------


def _rt12_scope_bare(op_name):
    if "/" not in op_name:
        return op_name.split(";")[0]
    for part in op_name.split(";")[0].split("/")[1:-1]:
        while found := re.match(r"^\w+\((.*)\)$", part):
            part = found.group(1)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="'split it on /, drop the first part ... and the last ... No op_name, or no such part: \"\"': "
    "an op_name without any '/' is taken whole as the scope (as if it were a bare named scope); "
    'in programs.reshaping %add_bitcast_fusion has op_name="reduce_window_sum" and counts for '
    "'reduce_window_sum' instead of ''",
)
def _rt12_scope_shares_bare_name(events, hlo_text, step_name):
    chosen, _ = _rt12_self_times(events, hlo_text, step_name)
    pairs = []
    for ins, t in chosen:
        found = _rt12_OP_NAME.search(ins.attributes_text)
        pairs.append((_rt12_scope_bare(found.group(1)) if found else "", t))
    return _rt12_share(pairs)


# ---- line_shares --------------------------------------------------------------------------------


@wrong(
    "line_shares",
    why="'that frame's file location ... its file name without directories': takes the file name "
    "from the FIRST FileNames row for every instruction (assuming one source file per module) and "
    "only the line from the frame; but the tables also hold the callers' files (the profiling "
    "script, pytest...): on recorded/looped_warm.json it labels 'pytest:57' instead of "
    "'programs.py:57'",
)
def _rt12_line_shares_first_filename(events, hlo_text, step_name):
    chosen, _ = _rt12_self_times(events, hlo_text, step_name)
    tables = _rt12_tables(hlo_text)
    names = tables.get("FileNames", {})
    first = names[min(names)].strip('"').rsplit("/", 1)[-1] if names else ""
    pairs = []
    for ins, t in chosen:
        label = _rt12_line_label(ins, tables)
        pairs.append((f"{first}:{label.rsplit(':', 1)[1]}" if label else "", t))
    return _rt12_share(pairs)


@wrong(
    "step_instructions",
    why="'a step event is an event named step_name WITH a step_num arg': selects the steps by name "
    "only and keys them by .arg('step_num'), so a TraceAnnotation(step_name) without step_num "
    "around the whole loop adds a None key listing the warm-up's and every step's instructions; "
    "wrong on a warm-up + 3 StepTraceAnnotation steps all wrapped in TraceAnnotation('train')",
)
def _rt12_step_instructions_steps_by_name_only(events, step_name):
    instrs = [e for e in events if _rt12_is_instr(e)]
    parent = dict((id(e), p) for e, p in _rt12_nesting(instrs))
    out = {}
    for s in (e for e in events if e.name == step_name):
        inside = sorted(
            (e for e in instrs if _rt12_inside(e, s) and parent[id(e)] is None),
            key=lambda e: e.start_ns,
        )
        out[s.arg("step_num")] = [_rt12_args(e)["hlo_op"] for e in inside]
    return out


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="'step events ... each holding exactly one execution ..., all of it': waits for the step "
    "with jax.effects_barrier() (which waits for ordered effects, not for the computation) "
    "instead of block_until_ready, so the step event closes while the execution still runs and "
    "its instruction events land after it (measured: 7 instruction events of sgd_step outside "
    "the 3 step events)",
)
def _rt12_train_loop_effects_barrier(step, state, batches, step_name):
    fn = jax.jit(step)
    jax.block_until_ready(fn(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, _loss = fn(state, batch)
            jax.effects_barrier()
    return state
