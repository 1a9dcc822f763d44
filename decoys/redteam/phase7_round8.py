"""Red-team round 8 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt8_branches(ins) -> int:
    if ins.attribute("branch_computations") is not None:
        return len(ins.called_computations)
    return 2


# ---- task 1: conditionals ---------------------------------------------------------------------


@wrong(
    "conditionals",
    why="module order is the order the text lists computations; this walks computations sorted "
    "by name (a 'stable' order the learner thinks is canonical); wrong on SIBLING_CALLS: the "
    "text lists %first (pred,2), %second (s32,3), %body (s32,2); sorted by name gives "
    "body, first, second -> [('s32',2),('pred',2),('s32',3)]",
)
def _rt8_conditionals_sorted_computations(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in sorted(module.computations, key=lambda c: c.name):
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                out.append((index.shape_info.dtype, _rt8_branches(ins)))
    return out


# ---- task 3: loop_primitives ------------------------------------------------------------------

_RT8_LOOPS = ("scan", "while", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")


def _rt8_sub(v):
    if hasattr(v, "eqns"):
        return [v]
    if hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
        return [v.jaxpr]
    if isinstance(v, (tuple, list)):
        return [j for e in v for j in _rt8_sub(e)]
    return []


def _rt8_walk(jaxpr, names, out):
    jaxpr = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in names:
            out.append(eqn.primitive.name)
        for v in eqn.params.values():
            for sub in _rt8_sub(v):
                _rt8_walk(sub, names, out)
    return out


@wrong(
    "loop_primitives",
    why="loop primitives are scan and while; this also counts the cumulative reductions "
    "(cumsum, cumprod, cummax, ...) as scans ('a cumsum is a scan'); wrong on "
    "make_jaxpr(lambda x: jnp.cumsum(x))(f32[4]): answer [], gives ['cumsum']",
)
def _rt8_loop_primitives_cumulative_are_loops(jaxpr) -> list[str]:
    return _rt8_walk(jaxpr, _RT8_LOOPS, [])


# ---- task 5: compile_counter ------------------------------------------------------------------


class _RT8Count:
    def __init__(self):
        self.count = 0


@wrong(
    "compile_counter",
    why="the backend compile is reported as a DURATION event; this registers with "
    "jax.monitoring.register_event_listener (plain events) and filters on BACKEND_COMPILE, "
    "so it never hears it; wrong on `with compile_counter() as c: jax.jit(lambda v: v + 1)"
    "(np.ones(3))`: 1 compile, c.count stays 0",
)
@contextlib.contextmanager
def _rt8_compile_counter_plain_events() -> Iterator:
    counter = _RT8Count()

    def listen(event, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counter.count += 1

    jax.monitoring.register_event_listener(listen)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_listener(listen)


# ---- task 4: count_traces ---------------------------------------------------------------------


@wrong(
    "count_traces",
    why="how many times JAX traced f; this counts the DISTINCT programs the calls trace to "
    "(str of jitted.trace(*args).jaxpr), as if a trace that gives the same jaxpr were free; "
    "wrong on power (Python for over int(n), n static) with calls n=2 then n=2.0: JAX "
    "traces twice (2 and 2.0 are two static keys), both jaxprs are equal, answers 1",
)
def _rt8_count_traces_distinct_jaxprs(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    jitted = jax.jit(f, static_argnums=static_argnums)
    programs = set()
    for args in calls:
        programs.add(str(jitted.trace(*args).jaxpr))
        jax.block_until_ready(jitted(*args))
    return len(programs)


# ---- task 6: bucketed_mean --------------------------------------------------------------------


@jax.jit
def _rt8_masked_mean_le(p, n):
    m = jnp.arange(p.shape[0]) <= n  # off by one: includes the first padding slot
    return jnp.where(m, p, 0.0).sum() / m.sum()


@wrong(
    "bucketed_mean",
    why="mask the padding; this builds the mask with `arange <= n`, so the first padding zero "
    "counts and the divisor is n+1 whenever len(x) < bucket; wrong on x=[1,1,1], "
    "buckets=(4,): 1.0 expected, gives 0.75 (right only when len(x) equals its bucket)",
)
def _rt8_bucketed_mean_mask_le(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError("x longer than every bucket")
    b = min(fits)
    p = np.zeros(b, np.float32)
    p[: len(x)] = x
    return float(_rt8_masked_mean_le(p, np.int32(len(x))))


@jax.jit
def _rt8_edge_mean(p, n):
    return p.sum() / p.shape[0]


@wrong(
    "bucketed_mean",
    why="pad and MASK the padding; this pads by repeating the last element (np.pad mode='edge') "
    "and averages the whole bucket, 'so no mask is needed'; right when x is constant, wrong "
    "on x=[0,0,3], buckets=(4,): mean 1.0, gives (0+0+3+3)/4 = 1.5",
)
def _rt8_bucketed_mean_edge_pad(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError("x longer than every bucket")
    b = min(fits)
    xx = np.asarray(x, np.float32)
    p = np.pad(xx, (0, b - len(xx)), mode="edge") if len(xx) else np.zeros(b, np.float32)
    return float(_rt8_edge_mean(p, np.int32(len(xx))))


# ---- task 7: explain_miss ---------------------------------------------------------------------


@wrong(
    "explain_miss",
    why="collects explanations for the second call; this attaches its handler to the "
    "'jax._src.pjit' logger (where the learner grepped the message from) instead of 'jax': "
    "the explanation is logged by 'jax._src.interpreters.partial_eval', so nothing is "
    "caught; wrong on f=lambda v: jnp.sin(v) * 2, first (f32[3],), second (f32[4],): one message, gives []",
)
def _rt8_explain_miss_wrong_logger(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    records: list[logging.LogRecord] = []

    class _H(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = _H(level=logging.WARNING)
    logger = logging.getLogger("jax._src.pjit")
    before = jax.config.jax_explain_cache_misses
    jitted = jax.jit(f)
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
    return [r.getMessage() for r in records if "TRACING CACHE MISS" in r.getMessage()]


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt8_count(loops, unroll_of) -> int:
    total = 0
    for loop in loops:
        inner = _rt8_count(loop.body, unroll_of)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan"):
            u = max(1, min(unroll_of(loop), trips)) if trips else 1
            full = trips // u if trips else 0
            rest = trips % u if trips else 0
            if full >= 2:
                total += 1 + (u + rest) * inner
            else:
                total += trips * inner
        elif kind == "fori_traced":
            total += 1 + inner
        elif kind in ("while", "map"):
            total += (1 + inner) if trips >= 2 else trips * inner
    return total


def _rt8_survives(loop, unroll_of) -> bool:
    if loop.kind in ("fori", "scan"):
        u = unroll_of(loop)
        return loop.trips > 0 and loop.trips // max(1, min(u, loop.trips)) >= 2
    if loop.kind == "map":
        return loop.trips >= 2
    return False


def _rt8_grad(loops, unroll_of) -> int:
    total = 0
    for k, loop in enumerate(loops):
        if not _rt8_survives(loop, unroll_of):
            continue
        later_tanh = any(l.step == "tanh" and l.kind != "cumsum" for l in loops[k + 1 :])
        total += 1 + (1 if (loop.step == "tanh" or later_tanh) else 0)
    return total


def _rt8_predict(program, unroll_of) -> int:
    if program.wrap == "grad":
        return _rt8_grad(program.loops, unroll_of)
    return _rt8_count(program.loops, unroll_of)


@wrong(
    "predict_while_loops",
    why="unroll=True unrolls every step (no loop left); this uses `int(loop.unroll)` / "
    "`min(loop.unroll, trips)` and Python's True == 1 makes it unroll=1, a kept loop; "
    "wrong on [fori trips=4 unroll=True] (wrap none): 0 whiles, answers 1",
)
def _rt8_predict_while_loops_true_is_one(program) -> int:
    return _rt8_predict(program, lambda loop: int(loop.unroll))


@wrong(
    "predict_while_loops",
    why="every copy of a step carries the loops written inside it; this counts a python_for's "
    "body loops once ('the same code'), not once per Python iteration; wrong on "
    "[python_for trips=3 body=[while trips=5]]: 3 whiles, answers 1",
)
def _rt8_predict_while_loops_python_for_once(program) -> int:
    def unroll_of(loop):
        return loop.trips if loop.unroll is True else int(loop.unroll)

    def count(loops) -> int:
        total = 0
        for loop in loops:
            if loop.kind == "python_for":
                total += count(loop.body) if loop.trips else 0
            else:
                total += _rt8_count([loop], unroll_of)
        return total

    if program.wrap == "grad":
        return _rt8_grad(program.loops, unroll_of)
    return count(program.loops)


@wrong(
    "predict_while_loops",
    why="jnp.cumsum on CPU is a reduce-window / associative scan, no while; this treats kind "
    "'cumsum' as a scan loop of `trips` steps like any other scan; wrong on [cumsum trips=8] "
    "wrap none: 0 whiles, answers 1",
)
def _rt8_predict_while_loops_cumsum_is_scan(program) -> int:
    def unroll_of(loop):
        return loop.trips if loop.unroll is True else int(loop.unroll)

    def fix(loops):
        out = []
        for loop in loops:
            if loop.kind == "cumsum":
                out.append(_RT8Loop("scan", max(loop.trips, 2), 1, loop.step, fix(loop.body)))
            else:
                out.append(_RT8Loop(loop.kind, loop.trips, loop.unroll, loop.step, fix(loop.body)))
        return out

    loops = fix(program.loops)
    if program.wrap == "grad":
        return _rt8_grad(loops, unroll_of)
    return _rt8_count(loops, unroll_of)


class _RT8Loop:
    def __init__(self, kind, trips, unroll, step, body):
        self.kind, self.trips, self.unroll, self.step, self.body = kind, trips, unroll, step, body


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt8_aval(v):
    if isinstance(v, np.ndarray):
        dt = {"float64": "float32", "int64": "int32", "complex128": "complex64"}.get(
            str(v.dtype), str(v.dtype)
        )
        return (dt, v.shape, False)
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


def _rt8_compiles(calls, key_wrapper: bool, lowering_compiles: bool) -> int:
    seen = set()
    for step, call in enumerate(calls):
        apis = ("call", "compile", "lower") if lowering_compiles else ("call", "compile")
        if call.api not in apis:
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        wrapper = ("new", step) if (key_wrapper and call.jit == "new") else "shared"
        n = ("static", type(call.n), call.n) if call.static else _rt8_aval(call.n)
        seen.add(
            (fn, wrapper if key_wrapper else None, call.static, _rt8_aval(call.x), n, call.device)
        )
    return len(seen)


@wrong(
    "predict_compiles",
    why="the compile cache keys on the function object, not the jax.jit wrapper: jax.jit(f) made "
    "again finds f's program; this keys on the wrapper, so every 'new' wrapper compiles; "
    "wrong on [call scale jit=shared, call scale jit=new] same x and n: 1 compile, answers 2",
)
def _rt8_predict_compiles_wrapper_keyed(calls) -> int:
    return _rt8_compiles(calls, key_wrapper=True, lowering_compiles=False)


@wrong(
    "predict_compiles",
    why="lower() alone traces and lowers but compiles nothing; this counts a lower as a "
    "compile ('lowering is the XLA step'); wrong on [lower scale x=f32[4]]: 0 compiles, answers 1",
)
def _rt8_predict_compiles_lower_compiles(calls) -> int:
    return _rt8_compiles(calls, key_wrapper=False, lowering_compiles=True)


# ---- task 2: while_loops ----------------------------------------------------------------------


@wrong(
    "while_loops",
    why="count every while instruction in every computation; this counts the whiles of ENTRY "
    "plus one per `call` carrying xla_cpu_small_call (taking each hoisted wrapper call for "
    "'a while moved out of line'), never looking inside other computations; wrong on "
    "WHILE_IN_CONDITION (3 whiles, none in a wrapper, two in the outer condition/body): "
    "answers 1, and on a wrapper holding two loops",
)
def _rt8_while_loops_entry_plus_small_calls(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = sum(1 for ins in module.entry.instructions if ins.opcode == "while")
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "call" and "xla_cpu_small_call" in str(
                ins.attribute("frontend_attributes") or ""
            ):
                total += 1
    return total
