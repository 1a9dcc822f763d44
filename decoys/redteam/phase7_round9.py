"""Red-team round 9 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo  # noqa: F401

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


class _RT9CompileCount:
    def __init__(self):
        self.count = 0


# ---- task 4: count_traces ---------------------------------------------------------------------


@wrong(
    "count_traces",
    why="the trace cache keys on the pytree structure of each argument (a tuple that became a "
    "list is a miss) and a tuple of floats is not an array; this 'normalises' every non-array, "
    "non-static argument with jnp.asarray before calling, so (1.0, 2.0) and [1.0, 2.0] both "
    "become f32[2]; wrong on f = lambda x, n: x[0] * n, static_argnums=(1,), calls "
    "[((1.0, 2.0), 2), ([1.0, 2.0], 2)]: 2 traces, answers 1",
)
def _rt9_count_traces_asarray_args(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    count = [0]

    def counted(*args):
        count[0] += 1
        return f(*args)

    jitted = jax.jit(counted, static_argnums=static_argnums)
    for args in calls:
        fixed = []
        for i, a in enumerate(args):
            if i in static_argnums or hasattr(a, "shape"):
                fixed.append(a)
                continue
            try:
                fixed.append(jnp.asarray(a))
            except Exception:
                fixed.append(a)
        jitted(*fixed)
    return count[0]


# ---- task 5: compile_counter ------------------------------------------------------------------


@wrong(
    "compile_counter",
    why="README: listen only while you measure and unregister afterwards; this never calls "
    "unregister_event_duration_listener and only flips an 'active' flag on exit, so every counter "
    "leaves a dead listener registered in jax.monitoring forever (the listener list grows by "
    "one per `with compile_counter()`; anyone inspecting or timing listeners is disturbed)",
)
@contextlib.contextmanager
def _rt9_compile_counter_flag_not_unregister() -> Iterator[_RT9CompileCount]:
    c = _RT9CompileCount()
    state = {"active": True}

    def listener(event, duration, **kw):
        if state["active"] and event == BACKEND_COMPILE:
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        state["active"] = False


# ---- task 6: bucketed_mean --------------------------------------------------------------------


@jax.jit
def _rt9_masked_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    return jnp.sum(jnp.where(mask, xp, 0)) / n


@wrong(
    "bucketed_mean",
    why="pad to the SMALLEST bucket >= len(x); this pads everything to the largest bucket "
    "('fewest compiles: one program for all lengths'), so the first call of a small length "
    "compiles the big bucket's program, and the small bucket is never compiled; wrong on "
    "buckets (8, 64), lengths 3 then 40: must compile one program per bucket used (2), "
    "compiles 1 program of shape f32[64] (and raises only when len > max, which is right)",
)
def _rt9_bucketed_mean_largest_bucket(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    x = np.asarray(x)
    if len(x) > max(buckets):
        raise ValueError("longer than every bucket")
    b = max(buckets)
    xp = np.zeros(b, dtype=x.dtype)
    xp[: len(x)] = x
    return float(_rt9_masked_mean(xp, np.int32(len(x))))


# ---- task 7: explain_miss ---------------------------------------------------------------------


@wrong(
    "explain_miss",
    why="return every tracing-cache-miss explanation of the second call; this keeps only the "
    "records that compare against a previous key ('all previously seen cache keys differ') "
    "and drops 'never seen function' ones as 'first sightings, not misses'; wrong on "
    "f = lambda x: jax.jit(lambda v: v + 1)(x) (a new inner jit per trace), first (f32[3],), "
    "second (f32[4],): the second call logs 2 explanations (f's keys differ, the new inner "
    "lambda never seen), answers 1",
)
def _rt9_explain_miss_drops_never_seen(
    f: Callable, first_args: tuple, second_args: tuple
) -> list[str]:
    records: list[logging.LogRecord] = []

    class H(logging.Handler):
        def emit(self, record):
            records.append(record)

    jitted = jax.jit(f)
    before = jax.config.jax_explain_cache_misses
    logger = logging.getLogger("jax")
    h = H(level=logging.WARNING)
    try:
        jax.config.update("jax_explain_cache_misses", True)
        jitted(*first_args)
        logger.addHandler(h)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(h)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
    out = []
    for r in records:
        msg = r.getMessage()
        if msg.startswith("TRACING CACHE MISS") and "never seen function" not in msg:
            out.append(msg)
    return out


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt9_unroll(loop) -> int:
    return loop.trips if loop.unroll is True else int(loop.unroll)


def _rt9_count(loops, zero_trip_keeps_body: bool = False) -> int:
    total = 0
    for loop in loops:
        inner = _rt9_count(loop.body, zero_trip_keeps_body)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan"):
            if trips == 0:
                continue
            u = max(1, _rt9_unroll(loop))
            if not zero_trip_keeps_body:
                u = min(u, trips)
            full, rest = divmod(trips, u)
            if full >= 2:
                total += 1 + (u + rest) * inner
            elif full == 1:
                total += (u + rest) * inner
            else:  # no full trip: the learner thinks the inlined loop leaves its body
                total += ((u if zero_trip_keeps_body else 0) + rest) * inner
        elif kind == "fori_traced":
            total += 1 + inner
        elif kind in ("while", "map"):
            total += (1 + inner) if trips >= 2 else trips * inner
    return total


def _rt9_survives(loop) -> bool:
    if loop.kind in ("fori", "scan"):
        u = max(1, min(_rt9_unroll(loop), loop.trips or 1))
        return loop.trips > 0 and loop.trips // u >= 2
    if loop.kind == "map":
        return loop.trips >= 2
    return False


def _rt9_grad(loops) -> int:
    total = 0
    for k, loop in enumerate(loops):
        if not _rt9_survives(loop):
            continue
        later_tanh = any(l.step == "tanh" and l.kind != "cumsum" for l in loops[k + 1 :])
        total += 1 + (1 if (loop.step == "tanh" or later_tanh) else 0)
    return total


@wrong(
    "predict_while_loops",
    why="scan/fori with unroll u > trips makes 0 full trips: that empty loop is deleted with "
    "its u-step body and only the trips remaining steps are unrolled; this reads 'a loop that "
    "runs at most once is replaced by its body' literally and keeps the u copies of the body "
    "too; wrong on [fori trips=3 unroll=4 body=[while trips=5]] wrap none: 3 whiles, answers 7",
)
def _rt9_predict_while_loops_empty_loop_keeps_body(program) -> int:
    if program.wrap == "grad":
        return _rt9_grad(program.loops)
    return _rt9_count(program.loops, zero_trip_keeps_body=True)


@wrong(
    "predict_while_loops",
    why="under grad, a loop fully unrolled (unroll=True or unroll == trips) leaves no forward "
    "loop and its transpose is unrolled too (no backward loop); this adds one backward while "
    "per primitive loop written, unrolled or not ('grad adds a backward loop to each loop'); "
    "wrong on [fori trips=4 unroll=True step=tanh] wrap grad: 0 whiles, answers 1",
)
def _rt9_predict_while_loops_grad_backward_always(program) -> int:
    if program.wrap != "grad":
        return _rt9_count(program.loops)
    total = 0
    for k, loop in enumerate(program.loops):
        if loop.kind in ("python_for", "cumsum"):
            continue
        later_tanh = any(l.step == "tanh" and l.kind != "cumsum" for l in program.loops[k + 1 :])
        fwd = _rt9_survives(loop) and (loop.step == "tanh" or later_tanh)
        total += 1 + (1 if fwd else 0)
    return total


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt9_aval(v, with_shape: bool = True):
    if isinstance(v, np.ndarray):
        dt = {"float64": "float32", "int64": "int32", "complex128": "complex64"}.get(
            str(v.dtype), str(v.dtype)
        )
        return (dt, v.shape if with_shape else None, False)
    if isinstance(v, np.generic):
        dt = {"float64": "float32", "int64": "int32"}.get(str(v.dtype), str(v.dtype))
        return (dt, (), False)
    if isinstance(v, bool):
        return ("bool", (), True)
    if isinstance(v, int):
        return ("int32", (), True)
    if isinstance(v, float):
        return ("float32", (), True)
    return (type(v).__name__, (), False)


def _rt9_compiles(
    calls, *, lambda_shared=False, committed_flag=False, traced_value=False, with_shape=True
) -> int:
    seen = set()
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        if call.function == "lambda":
            fn = "lambda" if lambda_shared else ("lambda", step)
        else:
            fn = call.function
        if call.static:
            n = ("static", type(call.n), call.n)
        else:
            n = _rt9_aval(call.n)
            if traced_value:
                n = (n, repr(call.n))
        dev = (call.device is not None) if committed_flag else call.device
        seen.add((fn, call.static, _rt9_aval(call.x, with_shape), n, dev))
    return len(seen)


@wrong(
    "predict_compiles",
    why="a new lambda at every step is a new function object and compiles again; this keys "
    "functions by name and treats every 'lambda' as the same code, hence one cache; wrong on "
    "[call lambda x=f32[4] n=2, call lambda x=f32[4] n=2]: 2 compiles, answers 1",
)
def _rt9_predict_compiles_lambda_same_code(calls) -> int:
    return _rt9_compiles(calls, lambda_shared=True)


@wrong(
    "predict_compiles",
    why="the same array committed to device 0 and committed to device 1 are two compiles; "
    "this keys only on 'committed or not'; wrong on [call scale x committed device 0, call "
    "scale x committed device 1]: 2 compiles, answers 1",
)
def _rt9_predict_compiles_committed_flag(calls) -> int:
    return _rt9_compiles(calls, committed_flag=True)


@wrong(
    "predict_compiles",
    why="a traced n is keyed on its abstract type only (shape, dtype, weak type), not its "
    "value; this keys traced n by value too ('a new n recompiles'); wrong on [call scale "
    "n=2 traced, call scale n=3 traced] same x: 1 compile, answers 2",
)
def _rt9_predict_compiles_traced_value(calls) -> int:
    return _rt9_compiles(calls, traced_value=True)


@wrong(
    "predict_compiles",
    why="the cache keys on each array's shape as well as its dtype; this keys NumPy arrays on "
    "dtype only ('same dtype, same program'); wrong on [call scale x=f32[4], call scale "
    "x=f32[8]] same n: 2 compiles, answers 1",
)
def _rt9_predict_compiles_dtype_only(calls) -> int:
    return _rt9_compiles(calls, with_shape=False)


# ---- task 3: loop_primitives ------------------------------------------------------------------


@wrong(
    "loop_primitives",
    why="one entry per equation, depth first, a jaxpr two equations hold counted for each; "
    "this greps the pretty-printed jaxpr for `scan[` / `while[`, but the printer hoists a "
    "jaxpr shared by two equations into one `let name = {...}` (counted once, and printed "
    "before the equations) and prints params sorted by name (a while's body_jaxpr before its "
    "cond_jaxpr); wrong on lambda x, n: inner_jit(x) + inner_jit(2 * x) (inner_jit a jitted "
    "fori_loop(0, 3)): answer ['scan', 'scan'], gives ['scan']",
)
def _rt9_loop_primitives_grep_printed(jaxpr) -> list[str]:
    import re

    return re.findall(r"\b(scan|while)\[", str(jaxpr))
