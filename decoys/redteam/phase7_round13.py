"""Red-team round 13 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


# ---- task 2: while_loops ----------------------------------------------------------------------


def _rt13_condition_names(module) -> set[str]:
    names = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "while":
                cond = ins.attribute("condition")
                if cond is not None:
                    names.add(str(cond).lstrip("%"))
    return names


@wrong(
    "while_loops",
    why="'in all its computations (loop bodies and conditions, ...)': skips the computations "
    "named by condition= ('a condition is a predicate, it computes a pred, not a loop'); wrong "
    "on WHILE_IN_CONDITION: three whiles, one of them in %outer_cond, answers 2",
)
def _rt13_while_loops_skip_conditions(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    skip = _rt13_condition_names(module)
    total = 0
    for comp in module.computations:
        if comp.name.lstrip("%") in skip:
            continue
        total += sum(1 for ins in comp.instructions if ins.opcode == "while")
    return total


# ---- task 3: loop_primitives ------------------------------------------------------------------


def _rt13_walk_named(jaxpr, out: list[str]) -> None:
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in inner.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        for pname, value in eqn.params.items():
            if "jaxpr" not in pname:  # body_jaxpr, cond_jaxpr, jaxpr, call_jaxpr, jaxprs
                continue
            values = value if isinstance(value, (tuple, list)) else (value,)
            for v in values:
                if hasattr(v, "eqns"):
                    _rt13_walk_named(v, out)


@wrong(
    "loop_primitives",
    why="'in every jaxpr nested in equation params ... cond branches': recurses only into params "
    "whose NAME says jaxpr (body_jaxpr, cond_jaxpr, jaxpr, call_jaxpr, jaxprs), so cond's "
    "`branches` tuple is never opened; wrong on JAXPR_PROGRAMS['while_in_cond'] (x=1.0, n=4): "
    "['while'], answers []",
)
def _rt13_loop_primitives_param_name_has_jaxpr(jaxpr) -> list[str]:
    out: list[str] = []
    _rt13_walk_named(jaxpr, out)
    return out


# ---- task 4: count_traces ---------------------------------------------------------------------


# ---- task 5: compile_counter ------------------------------------------------------------------


class _RT13Count:
    def __init__(self):
        self.count = 0


@wrong(
    "compile_counter",
    why="'Only listen: leave JAX's settings as the caller set them': calls jax.clear_caches() "
    "on entry so that the count starts 'from empty caches', which makes a program the caller "
    "compiled before the block compile again inside it; wrong on jit(f)(x) before the block, "
    "jit(f)(x) inside: 0 compiles, answers 1",
)
@contextlib.contextmanager
def _rt13_compile_counter_fresh_caches():
    c = _RT13Count()

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            c.count += 1

    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


# ---- task 7: explain_miss ---------------------------------------------------------------------


class _RT13Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("TRACING CACHE MISS"):
            self.messages.append(msg)


@wrong(
    "explain_miss",
    why="'the messages (whole, as logged)' of jax.jit(f)'s misses: jits a forwarding "
    "`lambda *args: f(*args)` (to accept any argument tuple), so every explanation names the "
    "lambda, its kata line and args[0] instead of f and its parameter; wrong on f = "
    "def f(x): x*2, first (f32[3],), second (f32[4],): the message reads 'for <lambda> "
    "defined at kata.py ... at args[0]' instead of 'for f ... at x'",
)
def _rt13_explain_miss_forwarding_lambda(f: Callable, first_args: tuple, second_args: tuple):
    g = jax.jit(lambda *args: f(*args))
    logger = logging.getLogger("jax")
    handler = _RT13Collect()
    old = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        g(*first_args)
        logger.addHandler(handler)
        try:
            g(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", old)
    return handler.messages


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt13_unroll(loop) -> int:
    if loop.unroll is True:
        return max(1, loop.trips)
    return max(1, int(loop.unroll))


def _rt13_count(loops, *, ceil_trips=False, fori_ignores_unroll=False, runs=False) -> int:
    total = 0
    for loop in loops:
        inner = _rt13_count(
            loop.body, ceil_trips=ceil_trips, fori_ignores_unroll=fori_ignores_unroll, runs=runs
        )
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan"):
            if trips == 0:
                continue
            u = min(_rt13_unroll(loop), trips)
            if fori_ignores_unroll and kind == "fori":
                u = 1
            full, rest = divmod(trips, u)
            loop_trips = -(-trips // u) if ceil_trips else full
            if loop_trips >= 2:
                total += 1 + ((trips if runs else u + rest) * inner)
            else:
                total += trips * inner
        elif kind == "fori_traced":
            total += 1 + (max(trips, 1) * inner if runs else inner)
        elif kind in ("while", "map"):
            if trips >= 2:
                total += 1 + (trips * inner if runs else inner)
            else:
                total += trips * inner
    return total


def _rt13_survives(loop, **kw) -> bool:
    if loop.kind in ("fori", "scan"):
        u = min(_rt13_unroll(loop), max(loop.trips, 1))
        if kw.get("fori_ignores_unroll") and loop.kind == "fori":
            u = 1
        n = -(-loop.trips // u) if kw.get("ceil_trips") else loop.trips // u
        return loop.trips > 0 and n >= 2
    if loop.kind == "map":
        return loop.trips >= 2
    return False


def _rt13_grad(loops, **kw) -> int:
    total = 0
    for k, loop in enumerate(loops):
        if not _rt13_survives(loop, **kw):
            continue
        later_tanh = any(l.step == "tanh" and l.kind != "cumsum" for l in loops[k + 1 :])
        total += 1 + (1 if (loop.step == "tanh" or later_tanh) else 0)
    return total


@wrong(
    "predict_while_loops",
    why="scan/fori with unroll=u runs length // u trips and unrolls the length % u rest after "
    "it; this counts the trips as ceil(length / u) ('the last trip is a partial one'), so a "
    "loop of one full trip plus a remainder looks like two trips and survives; wrong on "
    "[fori trips=3 unroll=2] wrap none: 0 whiles (1 trip inlined), answers 1",
)
def _rt13_predict_while_loops_ceil_trips(program) -> int:
    if program.wrap == "grad":
        return _rt13_grad(program.loops, ceil_trips=True)
    return _rt13_count(program.loops, ceil_trips=True)


@wrong(
    "predict_while_loops",
    why="fori_loop with static bounds is a scan and takes its unroll= like scan does; this "
    "honours unroll only for `scan` and treats fori_loop's unroll as a hint XLA ignores; wrong "
    "on [fori trips=4 unroll=True] wrap none: 0 whiles, answers 1",
)
def _rt13_predict_while_loops_fori_unroll_ignored(program) -> int:
    if program.wrap == "grad":
        return _rt13_grad(program.loops, fori_ignores_unroll=True)
    return _rt13_count(program.loops, fori_ignores_unroll=True)


@wrong(
    "predict_while_loops",
    why="count `while` INSTRUCTIONS: a surviving loop holds its body once (u + rest copies "
    "when unrolled), however many trips it runs; this counts the loops the program runs, one "
    "inner loop per trip of the surviving outer loop; wrong on [fori trips=5 unroll=1 "
    "body=[while trips=5]] wrap none: 2 whiles, answers 6",
)
def _rt13_predict_while_loops_runs_not_copies(program) -> int:
    if program.wrap == "grad":
        return _rt13_grad(program.loops)
    return _rt13_count(program.loops, runs=True)


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt13_aval(v, *, scalar_distinct=False, size_only=False, keep_f64_scalar=False):
    if isinstance(v, np.ndarray):
        dt = {"float64": "float32", "int64": "int32", "complex128": "complex64"}.get(
            str(v.dtype), str(v.dtype)
        )
        shape = (int(v.size),) if size_only else v.shape
        return ("ndarray" if scalar_distinct else "arr", dt, shape, False)
    if isinstance(v, np.generic):
        conv = {"int64": "int32"} if keep_f64_scalar else {"float64": "float32", "int64": "int32"}
        dt = conv.get(str(v.dtype), str(v.dtype))
        shape = (1,) if size_only else ()
        return ("generic" if scalar_distinct else "arr", dt, shape, False)
    if isinstance(v, bool):
        return ("py", "bool", (), False)
    if isinstance(v, int):
        return ("py", "int32", (), True)
    if isinstance(v, float):
        return ("py", "float32", (), True)
    return ("py", type(v).__name__, (), False)


def _rt13_compiles(calls, **kw) -> int:
    seen = set()
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        if call.static:
            n = ("static", type(call.n), call.n)
        else:
            n = _rt13_aval(call.n, **kw)
        seen.add((fn, call.static, _rt13_aval(call.x, **kw), n, call.device))
    return len(seen)


@wrong(
    "predict_compiles",
    why="the cache keys on abstract types: np.float32(2.0) and np.array(2.0, np.float32) are "
    "both a strong f32[]; this keys NumPy scalars apart from (0-d) NumPy arrays by Python "
    "type; wrong on [call scale x=np.array(1.0, f32), call scale x=np.float32(1.0)] same n: "
    "1 compile, answers 2",
)
def _rt13_predict_compiles_scalar_vs_0d(calls) -> int:
    return _rt13_compiles(calls, scalar_distinct=True)


@wrong(
    "predict_compiles",
    why="the cache keys on each array's shape; this keys arrays on dtype and element count "
    "('same bytes, same buffer, same program'), so a reshape looks free; wrong on [call scale "
    "x=f32[8], call scale x=f32[2,4]] same n: 2 compiles, answers 1",
)
def _rt13_predict_compiles_size_not_shape(calls) -> int:
    return _rt13_compiles(calls, size_only=True)


@wrong(
    "predict_compiles",
    why="'with JAX's default 32-bit types ... a NumPy float64 scalar is a strong float32': this "
    "canonicalises float64 arrays but keeps NumPy float64 scalars as float64 ('only arrays "
    "are converted'); wrong on [call scale x=np.float32(2.0), call scale x=np.float64(2.0)] "
    "same n: 1 compile, answers 2",
)
def _rt13_predict_compiles_f64_scalar_kept(calls) -> int:
    return _rt13_compiles(calls, keep_f64_scalar=True)
