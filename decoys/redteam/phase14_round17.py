"""Red team, phase 14, round 17: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect import op_metadata, parse_hlo
from xla_inspect.profile import Profile, TraceEvent
from xla_inspect.profile_query import shares, time_by


def _rt17_steps(events, step_name):
    return [e for e in events if e.name == step_name and e.arg("step_num") is not None]


def _rt17_inside(e, s):
    return s.start_ns <= e.start_ns and e.start_ns + e.duration_ns <= s.start_ns + s.duration_ns


def _rt17_nest(events, per_thread=True):
    """[(event, depth, nested duration)] for the instruction events, nesting per thread."""
    groups = defaultdict(list)
    for e in events:
        if e.hlo_op is not None:
            groups[e.thread if per_thread else ""].append(e)
    out = []
    for evs in groups.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            while stack and not _rt17_inside(e, stack[-1][0]):
                stack.pop()
            rec = [e, len(stack), 0]
            if stack:
                stack[-1][2] += e.duration_ns
            out.append(rec)
            stack.append(rec)
    return out


# ---- step_instructions ----------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="Clause 'an event is nested in another of the same thread': keeps "
    "one stack of open events for all threads, so with two executions at once on two threads "
    "(a step holding two runs that overlap on execute:0 and execute:1) the second thread's "
    "events are taken as nested in the first's and dropped.",
)
def _rt17_step_instructions_one_stack(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    recs = _rt17_nest(events, per_thread=False)
    out = {}
    for s in _rt17_steps(events, step_name):
        top = sorted(
            (r[0] for r in recs if r[1] == 0 and _rt17_inside(r[0], s)), key=lambda e: e.start_ns
        )
        out[int(s.arg("step_num"))] = [e.hlo_op for e in top]
    return out


@wrong(
    "step_instructions",
    why="Clause 'keyed by that step event's own step_num arg ... a loop "
    "need not start at 0': numbers the steps by their order of start (0, 1, 2...), so a loop "
    "resumed at step 5 comes back keyed 0, 1, 2.",
)
def _rt17_step_instructions_enumerated(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    recs = _rt17_nest(events)
    steps = sorted(_rt17_steps(events, step_name), key=lambda s: s.start_ns)
    out = {}
    for i, s in enumerate(steps):
        top = sorted(
            (r[0] for r in recs if r[1] == 0 and _rt17_inside(r[0], s)), key=lambda e: e.start_ns
        )
        out[i] = [e.hlo_op for e in top]
    return out


@wrong(
    "step_instructions",
    why="Clause 'an instruction that ran twice is listed twice': drops "
    "repeated hlo_ops within a step (dict.fromkeys), so a step that runs the program twice "
    "lists each instruction once.",
)
def _rt17_step_instructions_dedup(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    recs = _rt17_nest(events)
    out = {}
    for s in _rt17_steps(events, step_name):
        top = sorted(
            (r[0] for r in recs if r[1] == 0 and _rt17_inside(r[0], s)), key=lambda e: e.start_ns
        )
        out[int(s.arg("step_num"))] = list(dict.fromkeys(e.hlo_op for e in top))
    return out


# ---- expected_counts ------------------------------------------------------------------------

_rt17_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _rt17_known_trips(ins) -> int:
    found = re.search(r'"known_trip_count":\{"n":"(\d+)"', ins.attribute("backend_config") or "")
    return int(found.group(1)) if found else 1


def _rt17_bound_from_condition(module, ins) -> int:
    cond = module[ins.attribute("condition").lstrip("%")]
    for i in cond:
        if i.opcode == "constant" and i.shape.startswith("s32[]"):
            return int(i.payload)
    return _rt17_known_trips(ins)


def _rt17_counts(hlo_text, trips=None, multiply_nested=True):
    module = parse_hlo(hlo_text)
    out = Counter()

    def walk(comp, mult):
        for i in module[comp]:
            if i.opcode in _rt17_VIEWS:
                continue
            out[i.name] += mult
            if i.opcode == "while":
                t = trips(module, i) if trips else _rt17_known_trips(i)
                walk(i.attribute("body").lstrip("%"), (mult if multiply_nested else 1) * t)

    walk(module.entry.name, 1)
    return dict(out)


@wrong(
    "expected_counts",
    why="Clause 'a while printed with known_trip_count' (and the drawn "
    "lax.while_loop whose condition's bound is not its trip count): reads the trip count from "
    "the s32 constant the condition compares with; a while_loop from 3 by 2 below 12 runs 5 "
    "trips, not 12.",
)
def _rt17_expected_counts_condition_bound(hlo_text: str) -> dict[str, int]:
    return _rt17_counts(hlo_text, trips=_rt17_bound_from_condition)


@wrong(
    "expected_counts",
    why="Clause 'which run nested in another's event, and how many times': "
    "multiplies a body by its own while's trip count only, not by the enclosing loops'; a "
    "scan of 3 holding a fori_loop of 4 gives the inner body 4 events per call instead of 12.",
)
def _rt17_expected_counts_no_outer_multiply(hlo_text: str) -> dict[str, int]:
    return _rt17_counts(hlo_text, multiply_nested=False)


@wrong(
    "expected_counts",
    why="Clause 'which instructions become work at run time': walks every "
    "computation's instructions except fusions' own, so a call marked xla_cpu_small_call "
    "(a small while wrapped by XLA:CPU) gets its inner while and body counted though it is one "
    "kernel: differs on looped / any drawn fori stage wrapped in a call.",
)
def _rt17_expected_counts_into_calls(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out = Counter()

    def walk(comp, mult):
        for i in module[comp]:
            if i.opcode in _rt17_VIEWS:
                continue
            out[i.name] += mult
            if i.opcode == "while":
                walk(i.attribute("body").lstrip("%"), mult * _rt17_known_trips(i))
            elif i.opcode == "call":
                for callee in i.called_computations:
                    walk(callee, mult)

    walk(module.entry.name, 1)
    return dict(out)


# ---- compiled_steps -------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="Clause 'a backend compile started inside the step event': requires "
    "the whole backend_compile_and_load to lie inside the step (the task 1 'inside' test), so "
    "a compile on a worker thread that outlasts its step is missed.",
)
def _rt17_compiled_steps_whole_compile_inside(
    events: list[TraceEvent], step_name: str
) -> list[int]:
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    return sorted(
        {
            int(s.arg("step_num"))
            for s in _rt17_steps(events, step_name)
            if any(_rt17_inside(c, s) for c in compiles)
        }
    )


@wrong(
    "compiled_steps",
    why="Clause 'tracing and lowering alone are not a compile': takes any "
    "trace_to_jaxpr_dynamic / lower_sharding_computation / backend_compile_and_load event as a "
    "compile, so a step that retraces (a new jax.jit wrapper of the same function, compile "
    "cache hit) is listed.",
)
def _rt17_compiled_steps_tracing_counts(events: list[TraceEvent], step_name: str) -> list[int]:
    marks = ("backend_compile_and_load", "trace_to_jaxpr_dynamic", "lower_sharding_computation")
    hits = [e for e in events if e.name in marks or e.name.startswith(marks)]
    return sorted(
        {
            int(s.arg("step_num"))
            for s in _rt17_steps(events, step_name)
            if any(s.start_ns <= c.start_ns <= s.start_ns + s.duration_ns for c in hits)
        }
    )


# ---- shares ---------------------------------------------------------------------------------


def _rt17_shares(events, hlo_text, step_name, key, self_time=True, check_module=True):
    module = parse_hlo(hlo_text)
    infos = {i.name: i for c in module for i in c}
    kept = [
        e
        for e in events
        if e.hlo_op is not None
        and e.hlo_op in infos
        and (not check_module or e.arg("hlo_module") == module.name)
    ]
    steps = _rt17_steps(events, step_name)
    total = defaultdict(int)
    for e, _depth, nested in _rt17_nest(kept):
        if any(_rt17_inside(e, s) for s in steps):
            total[key(infos[e.hlo_op])] += (
                max(0, e.duration_ns - nested) if self_time else e.duration_ns
            )
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt17_kind(i):
    return i.attribute("kind") if i.opcode == "fusion" else i.opcode


@wrong(
    "kind_shares",
    why="Clause 'self time, not duration': sums durations, so a while's body "
    "counts twice (once in the while's event); looped's 'while' share is far too large.",
)
def _rt17_kind_shares_durations(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt17_shares(events, hlo_text, step_name, _rt17_kind, self_time=False)


@wrong(
    "kind_shares",
    why="Clause 'whose hlo_module is the module of hlo_text': joins on hlo_op "
    "alone, so another program run inside the steps (jit_other with its own ynn_fusion, "
    "copy.1...) adds its time to this module's kinds.",
)
def _rt17_kind_shares_any_module(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt17_shares(events, hlo_text, step_name, _rt17_kind, check_module=False)


@wrong(
    "scope_shares",
    why="Clause 'the forward and the backward pass of layer_1 both count for "
    "layer_1' and 'no scope: \"\"': uses xla_inspect's time_by(profile, 'scope'), which labels "
    "backward ops 'layer_1 (backward)' and unscoped ones '(no scope)'; differs on layered.",
)
def _rt17_scope_shares_library(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    module = parse_hlo(hlo_text).name
    return shares(time_by(Profile(tuple(events), hlo_text, module, step_name), "scope"))


_rt17_WRAP = re.compile(r"^\w+\((.*)\)$")


def _rt17_scope_one_unwrap(op_name: str) -> str:
    parts = op_name.split(";")[0].split("/")
    for part in parts[1:-1]:
        found = _rt17_WRAP.match(part)
        if found:
            part = found.group(1)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="Clause 'unwrap every remaining part written word(inner) ... to its "
    "innermost content': unwraps one level, so transpose(jvp(layer_1)) gives 'jvp(layer_1)' "
    "as its own scope; differs on layered's backward pass.",
)
def _rt17_scope_shares_one_unwrap(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt17_shares(
        events, hlo_text, step_name, lambda i: _rt17_scope_one_unwrap(op_metadata.op_name(i))
    )


def _rt17_full_path_frames(hlo_text: str) -> dict[int, str]:
    def table(name):
        m = re.search(rf"^{name}\n(.*?)(?:\n\n|\Z)", hlo_text, re.S | re.M)
        return m.group(1).splitlines() if m else []

    files = {int(l.split(" ", 1)[0]): l.split(" ", 1)[1].strip('"') for l in table("FileNames")}
    locs = {}
    for l in table("FileLocations"):
        n = int(l.split(" ", 1)[0])
        f = re.search(r"file_name_id=(\d+)", l)
        ln = re.search(r"\bline=(\d+)", l)
        locs[n] = f"{files.get(int(f.group(1)), '')}:{ln.group(1)}"
    frames = {}
    for l in table("StackFrames"):
        n = int(l.split(" ", 1)[0])
        frames[n] = locs.get(int(re.search(r"file_location_id=(\d+)", l).group(1)), "")
    return frames


@wrong(
    "line_shares",
    why="Clause 'its file name without directories': keeps FileNames' text as "
    "printed, which in a live capture is the full path (/work/.../programs.py:94), not "
    "programs.py:94.",
)
def _rt17_line_shares_full_path(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    frames = _rt17_full_path_frames(hlo_text)

    def key(i):
        m = re.search(r"stack_frame_id=(\d+)", i.attributes_text)
        return frames.get(int(m.group(1)), "") if m else ""

    return _rt17_shares(events, hlo_text, step_name, key)


@wrong(
    "line_shares",
    why="Clause 'No stack frame: \"\"' and the join to this module only: uses "
    "time_by(profile, 'source'), which labels instructions without a frame '(no source)'; "
    "differs on layered (wrapped_reduce-window has no metadata).",
)
def _rt17_line_shares_library(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    module = parse_hlo(hlo_text).name
    return shares(time_by(Profile(tuple(events), hlo_text, module, step_name), "source"))


# ---- longest_gap ----------------------------------------------------------------------------


def _rt17_spans(events, step_name):
    ins = [e for e in events if e.hlo_op is not None]
    spans = {}
    for s in _rt17_steps(events, step_name):
        inside = [e for e in ins if _rt17_inside(e, s)]
        if inside:
            spans[int(s.arg("step_num"))] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return spans


@wrong(
    "longest_gap",
    why="Clause 'the step events themselves do not show it: they include the "
    "Python': measures from the end of step event n to the start of step event n + 1, which "
    "misses a float(loss) or logging inside the step's with block.",
)
def _rt17_longest_gap_step_events(events: list[TraceEvent], step_name: str) -> int:
    steps = {int(s.arg("step_num")): s for s in _rt17_steps(events, step_name)}
    gaps = {
        n: steps[n + 1].start_ns - (steps[n].start_ns + steps[n].duration_ns)
        for n in steps
        if n + 1 in steps
    }
    return max(gaps, key=gaps.get)


@wrong(
    "longest_gap",
    why="Clause 'steps need not run in step_num order': pairs the steps in the "
    "order they started, not n with n + 1, so steps run 0, 2, 1 pair (0, 2) and (2, 1).",
)
def _rt17_longest_gap_start_order(events: list[TraceEvent], step_name: str) -> int:
    spans = _rt17_spans(events, step_name)
    order = sorted(spans, key=lambda n: spans[n][0])
    gaps = {a: spans[b][0] - spans[a][1] for a, b in zip(order, order[1:])}
    return max(gaps, key=gaps.get)


@wrong(
    "longest_gap",
    why="Clause 'the largest (the one closest to zero when all are negative)': "
    "takes the gap's size (abs), so a large overlap (-900 ns) beats a real wait of 500 ns.",
)
def _rt17_longest_gap_abs(events: list[TraceEvent], step_name: str) -> int:
    spans = _rt17_spans(events, step_name)
    gaps = {n: abs(spans[n + 1][0] - spans[n][1]) for n in spans if n + 1 in spans}
    return max(gaps, key=gaps.get)


# ---- train_loop -----------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="Clause 'each holding exactly one execution ... all of it': warms up "
    "and steps without block_until_ready inside the with block, so each step event closes at "
    "dispatch and its instruction events land after it.",
)
def _rt17_train_loop_no_block(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fast = jax.jit(step)
    jax.block_until_ready(fast(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = fast(state, batch)
    return jax.block_until_ready(state)


@wrong(
    "train_loop",
    why="Clause 'no backend compile: the one compile happens before step 0': "
    "no warm-up, so step 0 holds backend_compile_and_load.",
)
def _rt17_train_loop_no_warmup(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fast = jax.jit(step)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = fast(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="Clause 'step_num i' for the i-th batch: numbers steps from 1 "
    "(enumerate(batches, 1)), as people count training steps.",
)
def _rt17_train_loop_from_one(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    fast = jax.jit(step)
    jax.block_until_ready(fast(state, batches[0]))
    for i, batch in enumerate(batches, 1):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = fast(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="Clause 'at most one execution outside the steps: a warm-up': warms up "
    "with a full extra pass (two warm-up calls, the second to 'settle' caches), leaving two "
    "executions outside the steps.",
)
def _rt17_train_loop_double_warmup(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    fast = jax.jit(step)
    for _ in range(2):
        jax.block_until_ready(fast(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = fast(state, batch)
            jax.block_until_ready((state, loss))
    return state
