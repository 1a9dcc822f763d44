"""Red team, phase 7, round 17: plausible wrong answers written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt17_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


class _rt17_Count:
    def __init__(self) -> None:
        self.count = 0


def _rt17_branches(ins) -> int:
    bc = ins.attribute("branch_computations")
    if bc is None:
        return 2
    return len([b for b in bc.strip("{}").split(",") if b.strip()])


@wrong(
    "conditionals",
    why="Clause 'one computation may serve several branches': counts distinct branch computations, so SHARED_BRANCHES (branch_computations={double, double, negate}) gives ('s32', 2) instead of ('s32', 3).",
)
def _rt17_conditionals_distinct_branches(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                idx = comp.instruction(ins.operands[0])
                out.append((idx.shape_info.dtype, len(set(ins.called_computations))))
    return out


@wrong(
    "conditionals",
    why="Clause 'Instruction names are per computation': looks the index up in a module-wide name table (last definition wins), so a module where a pred `p` indexes a conditional in one computation and a later computation defines an s32 `p` reports 's32' for the pred one.",
)
def _rt17_conditionals_global_names(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    names = {}
    for comp in module.computations:
        for ins in comp.instructions:
            names[ins.name] = ins
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                out.append((names[ins.operands[0]].shape_info.dtype, _rt17_branches(ins)))
    return out


@wrong(
    "conditionals",
    why="Clause 'computations nothing calls' and 'module order': walks from ENTRY through called computations, so a conditional in a computation nothing calls is dropped (a module whose only conditional, pred-indexed, sits in an uncalled computation gives [] instead of [('pred', 2)]), and a module whose text lists a callee's conditional after ENTRY's own comes out in call order.",
)
def _rt17_conditionals_reachable(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    seen: set[str] = set()
    out = []

    def visit(comp):
        if comp.name in seen:
            return
        seen.add(comp.name)
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                out.append(
                    (comp.instruction(ins.operands[0]).shape_info.dtype, _rt17_branches(ins))
                )
            for callee in ins.called_computations:
                c = module.computation(callee)
                if c is not None:
                    visit(c)

    visit(module.entry)
    return out


@wrong(
    "while_loops",
    why="Clause 'Count by opcode: a parameter may be called while.2': counts instructions whose NAME starts with 'while' (as JAX's compiled HLO names them), so a module with a parameter named while.2, or a while renamed %loop (SIBLING_CALLS: 1 expected, 0 returned), is miscounted.",
)
def _rt17_while_loops_by_name(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return sum(
        1 for c in module.computations for i in c.instructions if i.name.split(".")[0] == "while"
    )


@wrong(
    "while_loops",
    why="Clause 'loop bodies and conditions': follows only body= and to_apply=/branches from ENTRY, never condition=, so WHILE_IN_CONDITION (3 whiles, one in the condition) gives 2.",
)
def _rt17_while_loops_skip_conditions(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    seen: set[str] = set()
    count = 0
    stack = [module.entry]
    while stack:
        comp = stack.pop()
        if comp.name in seen:
            continue
        seen.add(comp.name)
        for ins in comp.instructions:
            if ins.opcode == "while":
                count += 1
                targets = [ins.attribute("body", "").lstrip("%")]
            else:
                targets = list(ins.called_computations)
            for t in targets:
                c = module.computation(t)
                if c is not None:
                    stack.append(c)
    return count


def _rt17_open(j):
    return j.jaxpr if hasattr(j, "consts") else j


def _rt17_is_jaxpr(v) -> bool:
    return hasattr(v, "eqns") or (hasattr(v, "consts") and hasattr(v, "jaxpr"))


@wrong(
    "loop_primitives",
    why="Clause 'alone or in a tuple/list': recurses only into params that are a jaxpr themselves, so cond branches (a tuple of jaxprs) are skipped: JAXPR_PROGRAMS['while_in_cond'] gives [] instead of ['while'].",
)
def _rt17_loop_primitives_no_tuples(jaxpr) -> list[str]:
    out = []
    for eqn in _rt17_open(jaxpr).eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        for v in eqn.params.values():
            if _rt17_is_jaxpr(v):
                out += _rt17_loop_primitives_no_tuples(v)
    return out


@wrong(
    "loop_primitives",
    why="Clause 'Order: depth first': lists the top-level equations' loops first and the nested ones after (breadth first), so 'nested_then_sequential' gives ['while', 'while', 'scan'] instead of ['while', 'scan', 'while'].",
)
def _rt17_loop_primitives_breadth_first(jaxpr) -> list[str]:
    out = []
    queue = [_rt17_open(jaxpr)]
    while queue:
        j = queue.pop(0)
        for eqn in j.eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            for v in eqn.params.values():
                items = v if isinstance(v, (tuple, list)) else (v,)
                for it in items:
                    if _rt17_is_jaxpr(it):
                        queue.append(_rt17_open(it))
    return out


@wrong(
    "loop_primitives",
    why="Clause 'a jaxpr that two equations hold counts for each': remembers jaxprs already walked (by id) and skips them, so a function calling inner_jit twice (lambda x, n: inner_jit(x) + inner_jit(x)) gives ['scan'] instead of ['scan', 'scan'].",
)
def _rt17_loop_primitives_dedupe(jaxpr) -> list[str]:
    seen: set[int] = set()
    out: list[str] = []

    def walk(j):
        j = _rt17_open(j)
        if id(j) in seen:
            return
        seen.add(id(j))
        for eqn in j.eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            for v in eqn.params.values():
                items = v if isinstance(v, (tuple, list)) else (v,)
                for it in items:
                    if _rt17_is_jaxpr(it):
                        walk(it)

    walk(jaxpr)
    return out


_rt17_trace_counters: dict = {}


@wrong(
    "count_traces",
    why="Clause 'the same f and calls give the same count every time': keeps one counting wrapper per f across calls, so a second count_traces(f, (1,), calls) on the same f finds everything cached and returns 0 instead of the first answer.",
)
def _rt17_count_traces_cached_wrapper(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    key = (f, static_argnums)
    if key not in _rt17_trace_counters:
        box = [0]

        def counted(*args):
            box[0] += 1
            return f(*args)

        _rt17_trace_counters[key] = (box, jax.jit(counted, static_argnums=static_argnums))
    box, jitted = _rt17_trace_counters[key]
    before = box[0]
    for args in calls:
        jitted(*args)
    return box[0] - before


@wrong(
    "count_traces",
    why="Clause 'how many times JAX traced f': counts distinct static-argument values only, so calls with the same static n but x of shapes (3,) and (4,) give 1 instead of 2 traces.",
)
def _rt17_count_traces_static_values(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    jitted = jax.jit(f, static_argnums=static_argnums)
    keys = set()
    for args in calls:
        jitted(*args)
        keys.add(tuple(args[i] for i in static_argnums))
    return len(keys)


@wrong(
    "compile_counter",
    why="Clause 'Count only the BACKEND_COMPILE event': counts every duration event whose name starts with /jax/core/compile (jaxpr-to-MLIR lowering, backend compile, ...), so one fresh jax.jit call inside the block gives more than 1.",
)
@contextlib.contextmanager
def _rt17_compile_counter_prefix() -> Iterator:
    c = _rt17_Count()

    def listener(event, duration, **kwargs):
        if event.startswith("/jax/core/compile"):
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@wrong(
    "compile_counter",
    why="Clause 'compiles after the block (also after a block that raised) must not change it': unregisters without try/finally, so when the block raises the listener stays and a later compile bumps c.count from 0 to 1.",
)
@contextlib.contextmanager
def _rt17_compile_counter_no_finally() -> Iterator:
    c = _rt17_Count()

    def listener(event, duration, **kwargs):
        if event == _rt17_BACKEND_COMPILE:
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield c
    jax.monitoring.unregister_event_duration_listener(listener)


@wrong(
    "compile_counter",
    why="Clause 'a compile any thread runs while it is open counts': counts only events fired on the thread that opened the block, so a jit compiled in a worker thread inside the block gives 0 instead of 1.",
)
@contextlib.contextmanager
def _rt17_compile_counter_this_thread() -> Iterator:
    import threading

    c = _rt17_Count()
    me = threading.get_ident()

    def listener(event, duration, **kwargs):
        if event == _rt17_BACKEND_COMPILE and threading.get_ident() == me:
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@jax.jit
def _rt17_masked_nanmean(xp):
    return jnp.nanmean(xp)


@wrong(
    "bucketed_mean",
    why="Clause 'NaN and infinities in x count as in NumPy's mean': pads with NaN and takes nanmean on the device, so x = [1., nan] gives 1.0 instead of nan.",
)
def _rt17_bucketed_mean_nan_padding(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.full(min(fits), np.nan, dtype=x.dtype)
    padded[: len(x)] = x
    return float(_rt17_masked_nanmean(padded))


@jax.jit
def _rt17_masked_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    return jnp.sum(jnp.where(mask, xp, 0)) / jnp.maximum(n, 1)


@wrong(
    "bucketed_mean",
    why="Clause 'the mean of an empty x is NaN': divides by max(n, 1) to avoid 0/0, so an empty float32 x gives 0.0 instead of nan.",
)
def _rt17_bucketed_mean_empty_zero(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(min(fits), dtype=x.dtype)
    padded[: len(x)] = x
    return float(_rt17_masked_mean(padded, np.int32(len(x))))


@wrong(
    "bucketed_mean",
    why="Clause 'the smallest bucket >= len(x)': picks the first bucket strictly greater than len(x), so a length equal to the largest bucket (len 32 with BUCKETS (8, 16, 32)) raises ValueError instead of returning the mean.",
)
def _rt17_bucketed_mean_strict(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = sorted(b for b in buckets if b > len(x))
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(fits[0], dtype=x.dtype)
    padded[: len(x)] = x
    return float(_rt17_masked_mean(padded, np.int32(len(x))))


@jax.jit
def _rt17_mean_in_dtype(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    total = jnp.sum(jnp.where(mask, xp, jnp.zeros((), xp.dtype)), dtype=xp.dtype)
    return total / n.astype(xp.dtype)


@wrong(
    "bucketed_mean",
    why="Clause 'any float dtype ... as in NumPy's mean': accumulates in the input dtype, so float16 x = 40 values of 60000 overflows to inf while NumPy's mean (float32 accumulator) gives 60000.",
)
def _rt17_bucketed_mean_f16_accumulate(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(min(fits), dtype=x.dtype)
    padded[: len(x)] = x
    return float(_rt17_mean_in_dtype(padded, np.int32(len(x))))


class _rt17_Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@wrong(
    "explain_miss",
    why="Clause 'JAX may log several misses with the same text, each counts': dedupes the messages keeping order, so with hs = two jax.jit(lambda v: v * 2) made in one comprehension and f(x) = `for h in hs: x = h(x)`, first f32[3] then f32[5], the two helpers' identical miss messages come back as one (2 messages instead of 3).",
)
def _rt17_explain_miss_dedupe(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    jitted = jax.jit(f)
    logger = logging.getLogger("jax")
    handler = _rt17_Collect()
    with jax.explain_cache_misses(True):
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    msgs = [r.getMessage() for r in handler.records if "TRACING CACHE MISS" in r.getMessage()]
    return list(dict.fromkeys(msgs))


@wrong(
    "explain_miss",
    why="Clause 'Return the messages (whole, as logged)': keeps only the first line of each explanation ('TRACING CACHE MISS at ...'), so mul on (1.0, 2.0) then (np.ones(3), 2.0) returns a message cut after its first line, without the 'different input types' lines.",
)
def _rt17_explain_miss_first_line(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    jitted = jax.jit(f)
    logger = logging.getLogger("jax")
    handler = _rt17_Collect()
    with jax.explain_cache_misses(True):
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    return [
        r.getMessage().splitlines()[0]
        for r in handler.records
        if r.getMessage().startswith("TRACING CACHE MISS")
    ]


@wrong(
    "explain_miss",
    why="Clause 'other log records, f's own included, are not explanations': returns every record the 'jax' logger tree emits during the second call, so an f that logs through logging.getLogger('jax.user') adds its own message to the list (and WARNING-level compile logs would too).",
)
def _rt17_explain_miss_all_records(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    jitted = jax.jit(f)
    logger = logging.getLogger("jax")
    handler = _rt17_Collect()
    with jax.explain_cache_misses(True):
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    return [r.getMessage() for r in handler.records]


# ---------------------------------------------------------------- predict_while_loops


_rt17_PRIMITIVE_LOOPS = ("fori", "fori_traced", "while", "scan", "map")


@wrong(
    "predict_while_loops",
    why="Clause 'what unrolling and trip counts do': counts one while per loop primitive, nested ones included, whatever its unroll and trips, so LoopProgram((Loop('fori', 4, True),)) predicts 1 while the compiled program has 0 (and Loop('fori', 1) too).",
)
def _rt17_predict_while_loops_one_per_primitive(program) -> int:
    def count(loops) -> int:
        return sum((loop.kind in _rt17_PRIMITIVE_LOOPS) + count(loop.body) for loop in loops)

    return count(program.loops)


@wrong(
    "predict_while_loops",
    why="Clause 'what a loop in an unrolled body becomes': drops fully unrolled and single-trip loops correctly but counts the loops of a body once, not once per copy of the body, so Loop('python_for', 3, body=(Loop('fori_traced', 0),)) predicts 1 instead of 3 (and scan(5, unroll=2) over a fori_traced 2 instead of 4).",
)
def _rt17_predict_while_loops_body_once(program) -> int:
    def count(loops) -> int:
        n = 0
        for loop in loops:
            inner = count(loop.body)
            if loop.kind in ("python_for", "cumsum"):
                n += inner
            elif loop.kind in ("fori", "scan") and (loop.unroll is True or loop.trips <= 1):
                n += inner
            elif loop.kind in ("while", "map") and loop.trips <= 1:
                n += inner
            else:
                n += 1 + inner
        return n

    return count(program.loops)


# ---------------------------------------------------------------- predict_compiles


def _rt17_aval(v, weak_types: bool = True, canonical: bool = True):
    if isinstance(v, bool):
        return ((), "bool", False)
    if isinstance(v, int):
        return ((), "int32", weak_types)
    if isinstance(v, float):
        return ((), "float32", weak_types)
    a = np.asarray(v)
    dt = a.dtype
    if canonical:
        dt = {
            np.dtype("float64"): np.dtype("float32"),
            np.dtype("int64"): np.dtype("int32"),
            np.dtype("uint64"): np.dtype("uint32"),
            np.dtype("complex128"): np.dtype("complex64"),
        }.get(dt, dt)
    return (tuple(a.shape), str(dt), False)


def _rt17_compile_model(
    calls,
    *,
    weak_types: bool = True,
    static_by_type: bool = True,
    lower_compiles: bool = False,
    per_wrapper: bool = False,
    devices: bool = True,
    canonical: bool = True,
) -> int:
    seen = set()
    count = 0
    wrappers: dict = {}
    for step, call in enumerate(calls):
        fn = call.function if call.function != "lambda" else ("lambda", step)
        if per_wrapper:
            if call.jit == "shared" and call.function != "lambda":
                w = wrappers.setdefault((call.function, call.static), ("shared", call.function))
            else:
                w = ("new", step)
            fn = (fn, w)
        if call.static:
            n_key = ("static", call.n, type(call.n).__name__ if static_by_type else None)
        else:
            n_key = ("traced", _rt17_aval(call.n, weak_types, canonical))
        key = (
            fn,
            call.static,
            n_key,
            _rt17_aval(call.x, weak_types, canonical),
            call.device if devices else None,
        )
        if call.api in ("call", "compile") or lower_compiles:
            if key not in seen:
                seen.add(key)
                count += 1
    return count


@wrong(
    "predict_compiles",
    why="Clause 'something about Python scalars': keys on shape and dtype only, not weak type, so COMPILE_SCENARIOS 'Python float 2.0 then np.float32(2.0)' predicts 1 where JAX compiles 2.",
)
def _rt17_predict_compiles_no_weak_type(calls) -> int:
    return _rt17_compile_model(calls, weak_types=False)


@wrong(
    "predict_compiles",
    why="Clause 'Are 2, 2.0 and True one static value or three?': keys static values by == and hash (2 == 2.0), so 'static argument 2, 2.0, True' predicts 2 where JAX compiles 3.",
)
def _rt17_predict_compiles_static_by_equality(calls) -> int:
    return _rt17_compile_model(calls, static_by_type=False)


@wrong(
    "predict_compiles",
    why="Clause 'Is the cache attached to the jax.jit wrapper object or to the function it wraps?': gives every jax.jit wrapper its own cache, so 'one function, jax.jit applied on each of 3 calls' predicts 3 where JAX compiles 1.",
)
def _rt17_predict_compiles_per_wrapper(calls) -> int:
    return _rt17_compile_model(calls, per_wrapper=True)


@wrong(
    "predict_compiles",
    why="Clause 'where the arguments live': ignores the device x is committed to, so 'same shapes committed to 3 devices' (3 CPU devices) predicts 1 where XLA compiles 3 (and uncommitted then device 0 predicts 1, not 2).",
)
def _rt17_predict_compiles_no_devices(calls) -> int:
    return _rt17_compile_model(calls, devices=False)


@wrong(
    "predict_compiles",
    why="Clause 'Which of call, trace(), lower() and lower().compile() reach XLA': thinks lower() compiles (it is the 'AOT' step), so 'lower only' predicts 1 where nothing compiles.",
)
def _rt17_predict_compiles_lower_compiles(calls) -> int:
    return _rt17_compile_model(calls, lower_compiles=True)


@wrong(
    "predict_compiles",
    why="Clause 'What does a float64 array become with JAX's default 32-bit types': keys on the NumPy dtype as given, so [Call(x=np.ones(3, np.float64)), Call(x=np.ones(3, np.float32))] predicts 2 where JAX compiles 1.",
)
def _rt17_predict_compiles_no_canonical(calls) -> int:
    return _rt17_compile_model(calls, canonical=False)
