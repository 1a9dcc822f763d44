"""Red-team round 10 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _rt10_branches(ins) -> int:
    if ins.attribute("branch_computations") is not None:
        return len(ins.called_computations)
    return 2


# ---- task 1: conditionals ---------------------------------------------------------------------


@wrong(
    "conditionals",
    why="module order is the order the text lists computations, ENTRY included where the "
    "text prints it (last, in XLA's printing); this puts ENTRY first and the others after "
    "('start from the entry point'); wrong on PROGRAMS['switch_in_cond'] (optimized): the "
    "branch holding the 3-way switch is printed before ENTRY, so [('s32',3),('s32',2)] is "
    "expected and this answers [('s32',2),('s32',3)]",
)
def _rt10_conditionals_entry_first(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    comps = [module.entry] + [c for c in module.computations if c is not module.entry]
    out = []
    for comp in comps:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                out.append((index.shape_info.dtype, _rt10_branches(ins)))
    return out


# ---- task 2: while_loops ----------------------------------------------------------------------


@wrong(
    "while_loops",
    why="each while instruction counts once; this counts the computations that hold at least "
    "one while ('where is the loop?'), so two whiles in one computation count once; wrong on "
    "PROGRAMS['two_loops'] where doubling_while and the scan both stay in one computation "
    "(unoptimized ENTRY holds both): 2 whiles, answers 1",
)
def _rt10_while_loops_computations_holding(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return sum(
        1 for comp in module.computations if any(i.opcode == "while" for i in comp.instructions)
    )


# ---- task 3: loop_primitives ------------------------------------------------------------------


def _rt10_sub(v):
    if hasattr(v, "eqns"):
        return [v]
    if hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
        return [v.jaxpr]
    if isinstance(v, (tuple, list)):
        return [j for e in v for j in _rt10_sub(e)]
    return []


_RT10_BODY_FIRST = ("body_jaxpr", "jaxpr", "branches", "call_jaxpr", "jaxprs", "cond_jaxpr")


def _rt10_walk_body_first(jaxpr, out):
    jaxpr = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        keys = sorted(
            eqn.params,
            key=lambda k: _RT10_BODY_FIRST.index(k) if k in _RT10_BODY_FIRST else -1,
        )
        for k in keys:
            for sub in _rt10_sub(eqn.params[k]):
                _rt10_walk_body_first(sub, out)
    return out


@wrong(
    "loop_primitives",
    why="inside an equation the nested jaxprs come in the order the params list them (a "
    "while lists cond_jaxpr before body_jaxpr); this visits a loop's body before its "
    "condition ('the body is the loop'); wrong on JAXPR_PROGRAMS['loop_in_while_cond']: "
    "['while','scan','while'] expected, answers ['while','while','scan']",
)
def _rt10_loop_primitives_body_before_cond(jaxpr) -> list[str]:
    return _rt10_walk_body_first(jaxpr, [])


_RT10_COND_LINE = __import__("re").compile(
    r"\bconditional\(\s*(?:(?P<ty>[a-z]+[0-9]*)\[\]\S*\s+)?%?(?P<name>[\w.\-]+)"
)


@wrong(
    "conditionals",
    why="the index's element type is the type of the operand's defining instruction in the "
    "same computation; this reads it from the operand type XLA prints inline in compiled text "
    "(`conditional(s32[] %x, ...)`) and assumes s32 (what JAX always emits) when the text does "
    "not print operand types; wrong on SIBLING_CALLS (no inline operand types): the %first "
    "conditional is indexed by pred, answers ('s32', 2)",
)
def _rt10_conditionals_inline_operand_type(hlo_text: str) -> list[tuple[str, int]]:
    import re

    out = []
    for line in hlo_text.splitlines():
        m = _RT10_COND_LINE.search(line)
        if m is None:
            continue
        ty = m.group("ty") or "s32"
        b = re.search(r"branch_computations=\{([^}]*)\}", line)
        n = len([s for s in b.group(1).split(",") if s.strip()]) if b else 2
        out.append((ty, n))
    return out


# ---- task 7: explain_miss ---------------------------------------------------------------------


class _RT10Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def _rt10_explain_records(f, first_args, second_args):
    handler = _RT10Collect()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    jitted = jax.jit(f)
    try:
        with jax.explain_cache_misses(True):
            jitted(*first_args)
            handler.records.clear()
            jitted(*second_args)
    finally:
        logger.removeHandler(handler)
    return [r for r in handler.records if r.getMessage().startswith("TRACING CACHE MISS")]


@wrong(
    "explain_miss",
    why="return the explanations' messages whole, as logged: the message is the text the "
    "record carries; this formats each record with logging.BASIC_FORMAT (what the console "
    "shows: 'WARNING:jax._src...:TRACING CACHE MISS ...'), prefixing level and logger name; "
    "wrong on f = lambda x: x * 2, first f32[3], second f32[4]: the one message starts "
    "'TRACING CACHE MISS', answers 'WARNING:jax._src.interpreters.partial_eval:TRACING ...'",
)
def _rt10_explain_miss_basic_format(
    f: Callable, first_args: tuple, second_args: tuple
) -> list[str]:
    fmt = logging.Formatter(logging.BASIC_FORMAT)
    return [fmt.format(r) for r in _rt10_explain_records(f, first_args, second_args)]


@wrong(
    "explain_miss",
    why="jitted functions f calls miss too while f traces, each miss its own message; this "
    "keeps only the explanations that name f ('for f defined at'), taking the inner misses for "
    "noise; wrong on f(x) = d(x) + 1 with d = programs.doubler(), first f32[3], second f32[4]: "
    "two messages (f and the lambda), answers only f's",
)
def _rt10_explain_miss_only_f(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    name = getattr(f, "__name__", "")
    return [
        r.getMessage()
        for r in _rt10_explain_records(f, first_args, second_args)
        if f"for {name} defined" in r.getMessage()
    ]


# ---- task 6: bucketed_mean --------------------------------------------------------------------


@jax.jit
def _rt10_masked_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    return jnp.sum(jnp.where(mask, xp.astype(jnp.float32), 0.0)) / n.astype(jnp.float32)


@wrong(
    "bucketed_mean",
    why="raise ValueError when x is longer than every bucket; this degrades gracefully "
    "instead, truncating x to the largest bucket and returning the mean of its head; wrong "
    "on x = arange(10.) with buckets (4, 8): must raise, answers mean(x[:8]) = 3.5",
)
def _rt10_bucketed_mean_truncate_overflow(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    x = np.asarray(x)
    fits = [b for b in buckets if b >= len(x)]
    b = min(fits) if fits else max(buckets)
    x = x[:b]
    xp = np.zeros(b, x.dtype)
    xp[: len(x)] = x
    return float(_rt10_masked_mean(xp, np.int32(len(x))))


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt10_unroll(loop) -> int:
    return loop.trips if loop.unroll is True else int(loop.unroll)


def _rt10_count(loops) -> int:
    total = 0
    for loop in loops:
        inner = _rt10_count(loop.body)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan"):
            if trips == 0:
                continue
            u = max(1, min(_rt10_unroll(loop), trips))
            full, rest = divmod(trips, u)
            total += (1 + u * inner) if full >= 2 else full * u * inner
            # the learner's mistake: the remainder is a second loop of `rest` trips
            total += (1 + inner) if rest >= 2 else rest * inner
        elif kind == "fori_traced":
            total += 1 + inner
        elif kind in ("while", "map"):
            total += (1 + inner) if trips >= 2 else trips * inner
    return total


@wrong(
    "predict_while_loops",
    why="scan/fori with unroll=u runs length // u trips, then the length % u remaining steps "
    "UNROLLED after the loop; this thinks the remainder is a second, shorter loop (a while "
    "of length % u trips, deleted only when it runs at most once); wrong on [fori trips=8 "
    "unroll=3] wrap none: one while (2 trips of 3 steps + 2 unrolled), answers 2",
)
def _rt10_predict_while_loops_remainder_loop(program) -> int:
    return _rt10_count(program.loops)


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt10_aval(v):
    def canon(dt):
        dt = np.dtype(dt)
        if dt.kind == "f":
            return "float32"  # the learner: 'every float becomes f32 with 32-bit types'
        if dt.kind in "iu":
            return "int32"
        if dt.kind == "c":
            return "complex64"
        return str(dt)

    if isinstance(v, np.ndarray):
        return (canon(v.dtype), v.shape, False)
    if isinstance(v, np.generic):
        return (canon(v.dtype), (), False)
    if isinstance(v, bool):
        return ("bool", (), False)
    if isinstance(v, int):
        return ("int32", (), True)
    if isinstance(v, float):
        return ("float32", (), True)
    return (type(v).__name__, (), False)


@wrong(
    "predict_compiles",
    why="with 32-bit defaults only the 64-bit types are narrowed (float64 -> float32, int64 -> "
    "int32); this canonicalizes every float to float32 and every int to int32, so a float16 "
    "(or int8, uint8) array finds the float32 (int32) program; wrong on [call scale "
    "x=f32[4] n=2, call scale x=f16[4] n=2]: 2 compiles, answers 1",
)
def _rt10_predict_compiles_all_floats_f32(calls) -> int:
    seen = set()
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        n = ("static", type(call.n), call.n) if call.static else _rt10_aval(call.n)
        seen.add((fn, call.static, _rt10_aval(call.x), n, call.device))
    return len(seen)


@wrong(
    "bucketed_mean",
    why="buckets come in any order; this finds the smallest fitting bucket with "
    "bisect.bisect_left on the buckets as given (bisect assumes sorted input) and raises "
    "ValueError when bisect runs off the end; wrong on x = ones(10), buckets (16, 4, 8): 16 "
    "holds it (mean 1.0), bisect returns index 3 and this raises ValueError",
)
def _rt10_bucketed_mean_bisect_unsorted(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    import bisect

    x = np.asarray(x)
    i = bisect.bisect_left(buckets, len(x))
    if i == len(buckets):
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    b = max(buckets[i], len(x))
    xp = np.zeros(b, x.dtype)
    xp[: len(x)] = x
    return float(_rt10_masked_mean(xp, np.int32(len(x))))


# ---- task 5: compile_counter ------------------------------------------------------------------


class _RT10Count:
    def __init__(self):
        self.count = 0


@wrong(
    "compile_counter",
    why="counters must not disturb anyone else's jax.monitoring listeners; this snapshots the "
    "duration-listener list on entry and restores that snapshot on exit ('put things back as "
    "they were'), which also removes every listener someone else registered inside the block; "
    "wrong on: with compile_counter(): register L; after the block L no longer hears compiles",
)
@contextlib.contextmanager
def _rt10_compile_counter_snapshot_restore() -> Iterator[_RT10Count]:
    from jax._src import monitoring as _m

    saved = list(_m._event_duration_secs_listeners)
    c = _RT10Count()

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        _m._event_duration_secs_listeners[:] = saved
