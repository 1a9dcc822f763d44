"""Plausible wrong answers to phase 14; each must be caught by the tests it names.

Most are the reading mistakes a profile invites: counting nested events twice (a while and its
body), taking durations for self time, reading the step events instead of the device's work,
the label or the scope one level off, the caller's line for the instruction's. Accepted
variants are correct answers spelled differently; every test of their task must pass.
"""

import re
from collections import defaultdict

import jax

from kata_harness.decoys import accepted, decoy
from xla_inspect import parse_hlo

_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_FRAME = re.compile(r"stack_frame_id=(\d+)")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_ROW = re.compile(r"^(\d+) (.*)$")
_FIELD = re.compile(r"(\w+)=(\d+)")
_WRAPPED = re.compile(r"^[\w-]+\((.*)\)$")
_PLUMBING = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


# ---- shared pieces (each decoy changes one of them) ----------------------------------------------


def _w_steps(events, step_name):
    found = [(e.arg("step_num"), e) for e in events if e.name == step_name]
    return sorted((int(n), e) for n, e in found if n is not None)


def _w_inside(event, step):
    return step.start_ns <= event.start_ns and event.end_ns <= step.end_ns


def _w_top_level(events):
    by_thread = defaultdict(list)
    for event in events:
        by_thread[event.thread].append(event)
    top = []
    for group in by_thread.values():
        group.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        end = -1
        for event in group:
            if event.start_ns >= end:
                top.append(event)
                end = event.end_ns
    return sorted(top, key=lambda e: e.start_ns)


def _w_times(events, hlo_text, step_name, *, self_time=True, in_steps=True, own_module=True):
    module = parse_hlo(hlo_text)
    names = {i.name for c in module.computations for i in c.instructions}
    steps = [s for _, s in _w_steps(events, step_name)]
    ops = [
        e
        for e in events
        if e.hlo_op is not None
        and (not own_module or (e.hlo_op in names and e.arg("hlo_module") == module.name))
        and (not in_steps or any(_w_inside(e, s) for s in steps))
    ]
    by_thread = defaultdict(list)
    for event in ops:
        by_thread[event.thread].append(event)
    total = defaultdict(int)
    for group in by_thread.values():
        group.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for event in group:
            while stack and stack[-1].end_ns <= event.start_ns:
                stack.pop()
            if stack and self_time:
                total[stack[-1].hlo_op] -= event.duration_ns
            total[event.hlo_op] += event.duration_ns
            stack.append(event)
    return dict(total)


def _w_shares(times, group):
    grouped = defaultdict(int)
    for name, ns in times.items():
        grouped[group(name)] += ns
    whole = sum(grouped.values())
    return {k: v / whole for k, v in grouped.items()}


def _w_by_name(hlo_text):
    return {i.name: i for c in parse_hlo(hlo_text).computations for i in c.instructions}


def _w_kind(by_name, name):
    ins = by_name.get(name)
    if ins is None:
        return "other"
    return ins.attribute("kind", "") if ins.opcode == "fusion" else ins.opcode


def _w_scope(op_name, *, cut=True, first=True):
    text = op_name.split(";", 1)[0] if cut else op_name
    parts = text.split("/")[1:-1]
    for part in parts if first else reversed(parts):
        while match := _WRAPPED.match(part):
            part = match.group(1)
        if part:
            return part
    return ""


def _w_op_name(ins):
    match = _OP_NAME.search(ins.attributes_text)
    return match.group(1) if match else ""


def _w_frames(hlo_text, *, parent=False, full_path=False):
    tables = {}
    current = None
    for line in hlo_text.split("\n%", 1)[0].splitlines():
        if line.strip() in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(line.strip(), {})
        elif current is not None and (row := _ROW.match(line)):
            current[int(row.group(1))] = row.group(2)
        else:
            current = None
    files = {
        k: v.strip('"') if full_path else v.strip('"').rsplit("/", 1)[-1]
        for k, v in tables.get("FileNames", {}).items()
    }
    places = {}
    for key, row in tables.get("FileLocations", {}).items():
        fields = dict(_FIELD.findall(row))
        places[key] = f"{files[int(fields['file_name_id'])]}:{fields['line']}"
    stack = {k: dict(_FIELD.findall(row)) for k, row in tables.get("StackFrames", {}).items()}
    frames = {}
    for key, fields in stack.items():
        up = int(fields.get("parent_frame_id", 0))
        frame = stack[up] if parent and up in stack else fields
        frames[key] = places[int(frame["file_location_id"])]
    return frames


def _w_line_shares(events, hlo_text, step_name, *, parent=False, full_path=False, self_time=True):
    by_name = _w_by_name(hlo_text)
    frames = _w_frames(hlo_text, parent=parent, full_path=full_path)

    def line(name):
        match = _FRAME.search(by_name[name].attributes_text)
        return frames.get(int(match.group(1)), "") if match else ""

    return _w_shares(_w_times(events, hlo_text, step_name, self_time=self_time), line)


# ---- step_instructions --------------------------------------------------------------------------


@decoy(
    "step_instructions",
    caught_by=["test_step_instructions_on_recordings", "test_step_instructions_live"],
    why="lists the while body's nested events too: each trip's instructions appear in the step",
)
def steps_with_nested(events, step_name):
    ops = [e for e in events if e.hlo_op is not None]
    return {
        n: [e.hlo_op for e in sorted((e for e in ops if _w_inside(e, s)), key=lambda e: e.start_ns)]
        for n, s in _w_steps(events, step_name)
    }


@decoy(
    "step_instructions",
    caught_by=["test_step_instructions_live"],
    why="keeps only the module that ran most: another module's run inside the step is lost",
)
def steps_of_one_module(events, step_name):
    ops = [e for e in events if e.hlo_op is not None]
    counts = defaultdict(int)
    for e in ops:
        counts[e.arg("hlo_module")] += 1
    main = max(counts, key=lambda m: counts[m])
    ops = [e for e in ops if e.arg("hlo_module") == main]
    return {
        n: [e.hlo_op for e in _w_top_level([e for e in ops if _w_inside(e, s)])]
        for n, s in _w_steps(events, step_name)
    }


@decoy(
    "step_instructions",
    caught_by=[
        "test_step_instructions_on_recordings",
        "test_step_instructions_live",
        "test_step_instructions_match_the_entry",
    ],
    why="takes every event of an execute thread: the end: markers and the runtime's own events",
)
def steps_every_execute_event(events, step_name):
    on_execute = [e for e in events if "execute" in e.thread or e.hlo_op is not None]
    return {
        n: [e.name for e in _w_top_level([e for e in on_execute if _w_inside(e, s)])]
        for n, s in _w_steps(events, step_name)
    }


@decoy(
    "step_instructions",
    caught_by=["test_step_instructions_on_recordings", "test_step_instructions_live"],
    why="orders by name, not by start: the runtime's order is lost",
)
def steps_sorted_by_name(events, step_name):
    ops = [e for e in events if e.hlo_op is not None]
    return {
        n: sorted(e.hlo_op for e in _w_top_level([e for e in ops if _w_inside(e, s)]))
        for n, s in _w_steps(events, step_name)
    }


@accepted("step_instructions", why="nesting by a per-thread stack instead of a running end")
def steps_by_stack(events, step_name):
    ops = sorted(
        (e for e in events if e.hlo_op is not None and e.arg("hlo_module") is not None),
        key=lambda e: (e.start_ns, -e.end_ns),
    )
    open_by_thread = defaultdict(list)
    top = []
    for e in ops:
        stack = open_by_thread[e.thread]
        while stack and stack[-1].end_ns <= e.start_ns:
            stack.pop()
        if not stack:
            top.append(e)
        stack.append(e)
    return {
        n: [e.hlo_op for e in top if _w_inside(e, step)] for n, step in _w_steps(events, step_name)
    }


# ---- expected_counts ----------------------------------------------------------------------------


def _w_counts(hlo_text, *, plumbing=_PLUMBING, body_once=False, condition=False):
    module = parse_hlo(hlo_text)
    counts = {}

    def visit(name, times):
        for ins in module[name].instructions:
            if ins.opcode in plumbing:
                continue
            counts[ins.name] = counts.get(ins.name, 0) + times
            if ins.opcode == "while":
                trips = _TRIPS.search(ins.attribute("backend_config", ""))
                n = 1 if body_once or not trips else int(trips.group(1))
                visit(ins.attribute("body", "").lstrip("%"), times * n)
                if condition:
                    visit(ins.attribute("condition", "").lstrip("%"), times * (n + 1))

    visit(module.entry.name, 1)
    return counts


@decoy(
    "expected_counts",
    caught_by=[
        "test_expected_counts_match_a_live_profile",
        "test_expected_counts_on_renamed_modules",
    ],
    why="counts a while body once: the trips of known_trip_count are ignored",
)
def counts_body_once(hlo_text):
    return _w_counts(hlo_text, body_once=True)


@decoy(
    "expected_counts",
    caught_by=[
        "test_expected_counts_match_a_live_profile",
        "test_expected_counts_on_renamed_modules",
    ],
    why="only parameters and constants leave no event: bitcasts, tuples and get-tuple-elements do",
)
def counts_views_too(hlo_text):
    return _w_counts(hlo_text, plumbing={"parameter", "constant"})


@decoy(
    "expected_counts",
    caught_by=[
        "test_expected_counts_match_a_live_profile",
        "test_expected_counts_on_renamed_modules",
    ],
    why="runs the while's condition once per trip and once more, as the loop would evaluate it",
)
def counts_condition_too(hlo_text):
    return _w_counts(hlo_text, condition=True)


@accepted("expected_counts", why="ENTRY first, then each while body by an explicit work list")
def counts_by_work_list(hlo_text):
    module = parse_hlo(hlo_text)
    counts = {}
    todo = [(module.entry.name, 1)]
    while todo:
        name, times = todo.pop()
        for ins in module[name].instructions:
            if ins.opcode not in _PLUMBING:
                counts[ins.name] = counts.get(ins.name, 0) + times
            if ins.opcode == "while":
                found = _TRIPS.findall(ins.attribute("backend_config", ""))
                todo.append((ins.attribute("body", "").lstrip("%"), times * int(found[0])))
    return counts


# ---- compiled_steps -----------------------------------------------------------------------------


@decoy(
    "compiled_steps",
    caught_by=["test_compiled_steps_live"],
    why="takes lowering for compiling: any event named like lower or compile marks the step",
)
def compiled_lowered_too(events, step_name):
    marks = [e for e in events if "compile" in e.name.lower() or "lower" in e.name.lower()]
    return [n for n, s in _w_steps(events, step_name) if any(_w_inside(m, s) for m in marks)]


@decoy(
    "compiled_steps",
    caught_by=["test_compiled_steps_live"],
    why="only the first call compiles: [0] whenever the trace holds a compile",
)
def compiled_first_only(events, step_name):
    return [0] if any(e.name == "backend_compile_and_load" for e in events) else []


@accepted("compiled_steps", why="by the compile's start between the step's bounds, via a map")
def compiled_by_start(events, step_name):
    starts = sorted(e.start_ns for e in events if e.name == "backend_compile_and_load")
    return sorted(
        {n for n, s in _w_steps(events, step_name) for t in starts if s.start_ns <= t < s.end_ns}
    )


# ---- kind_shares --------------------------------------------------------------------------------


@decoy(
    "kind_shares",
    caught_by=["test_kind_shares"],
    why="durations, not self time: a while counts its body's time twice",
)
def kinds_by_duration(events, hlo_text, step_name):
    by_name = _w_by_name(hlo_text)
    times = _w_times(events, hlo_text, step_name, self_time=False)
    return _w_shares(times, lambda n: _w_kind(by_name, n))


@decoy(
    "kind_shares",
    caught_by=["test_kind_shares"],
    why="counts every module's events: another module's kernels land under 'other'",
)
def kinds_of_every_module(events, hlo_text, step_name):
    by_name = _w_by_name(hlo_text)
    times = _w_times(events, hlo_text, step_name, own_module=False)
    return _w_shares(times, lambda n: _w_kind(by_name, n))


@decoy(
    "kind_shares",
    caught_by=["test_kind_shares"],
    why="counts the run before the first step too: only the steps are asked for",
)
def kinds_outside_steps(events, hlo_text, step_name):
    by_name = _w_by_name(hlo_text)
    times = _w_times(events, hlo_text, step_name, in_steps=False)
    return _w_shares(times, lambda n: _w_kind(by_name, n))


@decoy(
    "kind_shares",
    caught_by=["test_kind_shares"],
    why="labels every fusion 'fusion': the kind is in kind=, not in the opcode",
)
def kinds_by_opcode(events, hlo_text, step_name):
    by_name = _w_by_name(hlo_text)
    return _w_shares(_w_times(events, hlo_text, step_name), lambda n: by_name[n].opcode)


# ---- scope_shares -------------------------------------------------------------------------------


def _w_scope_shares(events, hlo_text, step_name, scope):
    by_name = _w_by_name(hlo_text)
    return _w_shares(_w_times(events, hlo_text, step_name), lambda n: scope(_w_op_name(by_name[n])))


@decoy(
    "scope_shares",
    caught_by=["test_scope_shares", "test_scope_shares_name_every_layer"],
    why="keeps the backward pass apart ('layer_1 (backward)'), as xla-inspect graph labels it",
)
def scopes_backward_apart(events, hlo_text, step_name):
    def scope(op_name):
        found = _w_scope(op_name)
        return f"{found} (backward)" if found and "transpose(" in op_name else found

    return _w_scope_shares(events, hlo_text, step_name, scope)


@decoy(
    "scope_shares",
    caught_by=["test_scope_shares"],
    why="the innermost scope instead of the first: 'eval_jaxpr' for a loop body",
)
def scopes_innermost(events, hlo_text, step_name):
    return _w_scope_shares(events, hlo_text, step_name, lambda o: _w_scope(o, first=False))


@decoy(
    "scope_shares",
    caught_by=["test_scope_shares"],
    why="does not cut a joined op_name at ';': 'mul;jit(f)' becomes a scope",
)
def scopes_uncut(events, hlo_text, step_name):
    return _w_scope_shares(events, hlo_text, step_name, lambda o: _w_scope(o, cut=False))


# ---- line_shares --------------------------------------------------------------------------------


@decoy(
    "line_shares",
    caught_by=["test_line_shares"],
    why="follows the frame to its parent: the caller's line, not the line that made the op",
)
def lines_of_callers(events, hlo_text, step_name):
    return _w_line_shares(events, hlo_text, step_name, parent=True)


@decoy(
    "line_shares",
    caught_by=["test_line_shares"],
    why="keeps the file's directories, against the contract's file name",
)
def lines_with_paths(events, hlo_text, step_name):
    return _w_line_shares(events, hlo_text, step_name, full_path=True)


@decoy(
    "line_shares",
    caught_by=["test_line_shares"],
    why="durations, not self time: a while's line counts its body again",
)
def lines_by_duration(events, hlo_text, step_name):
    return _w_line_shares(events, hlo_text, step_name, self_time=False)


# ---- longest_gap --------------------------------------------------------------------------------


def _w_spans(events, step_name):
    ops = [e for e in events if e.hlo_op is not None]
    spans = {}
    for n, step in _w_steps(events, step_name):
        inside = [e for e in ops if _w_inside(e, step)]
        if inside:
            spans[n] = (min(e.start_ns for e in inside), max(e.end_ns for e in inside))
    return spans


@decoy(
    "longest_gap",
    caught_by=["test_longest_gap"],
    why="the gap between the step events: the host's work inside a step is not seen",
)
def gap_between_step_events(events, step_name):
    steps = dict(_w_steps(events, step_name))
    gaps = {n: steps[n + 1].start_ns - steps[n].end_ns for n in steps if n + 1 in steps}
    return max(gaps, key=lambda n: gaps[n])


@decoy(
    "longest_gap",
    caught_by=["test_longest_gap"],
    why="the longest step event: it holds the host's delay only when the delay is inside it",
)
def gap_longest_step(events, step_name):
    steps = _w_steps(events, step_name)
    return max(steps, key=lambda pair: pair[1].duration_ns)[0]


@decoy(
    "longest_gap",
    caught_by=["test_longest_gap", "test_longest_gap_renamed_and_shuffled"],
    why="names the step after the gap, not the one before it",
)
def gap_step_after(events, step_name):
    spans = _w_spans(events, step_name)
    gaps = {n + 1: spans[n + 1][0] - spans[n][1] for n in spans if n + 1 in spans}
    return max(gaps, key=lambda n: gaps[n])


# ---- train_loop ---------------------------------------------------------------------------------


@decoy(
    "train_loop",
    caught_by=["test_train_loop_reads_cleanly"],
    why="compiles on the first call, inside step 0",
)
def loop_compiles_in_step(step, state, batches, step_name):
    jitted = jax.jit(step)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@decoy(
    "train_loop",
    caught_by=["test_train_loop_reads_cleanly"],
    why="numbers the steps from 1",
)
def loop_from_one(step, state, batches, step_name):
    compiled = jax.jit(step).lower(state, batches[0]).compile()
    for i, batch in enumerate(batches, start=1):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = compiled(state, batch)
            jax.block_until_ready((state, loss))
    return state


@decoy(
    "train_loop",
    caught_by=["test_train_loop_reads_cleanly"],
    why="one step event around the whole loop",
)
def loop_one_annotation(step, state, batches, step_name):
    compiled = jax.jit(step).lower(state, batches[0]).compile()
    with jax.profiler.StepTraceAnnotation(step_name, step_num=0):
        for batch in batches:
            state, _loss = compiled(state, batch)
        jax.block_until_ready(state)
    return state


@decoy(
    "train_loop",
    caught_by=["test_train_loop_reads_cleanly"],
    why="warms up with a real step on the first batch and keeps its state: one step too many",
)
def loop_keeps_warmup(step, state, batches, step_name):
    jitted = jax.jit(step)
    state, _loss = jitted(state, batches[0])
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@accepted("train_loop", why="warms up with a first call whose result is thrown away")
def loop_warm_call(step, state, batches, step_name):
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready(loss)
            jax.block_until_ready(state)
    return state
