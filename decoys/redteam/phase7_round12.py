"""Red-team round 12 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---- task 3: loop_primitives ------------------------------------------------------------------


def _rt12_jaxprs(value, sequences):
    if hasattr(value, "eqns"):
        return [value]
    if hasattr(value, "jaxpr") and hasattr(value, "consts"):
        return [value.jaxpr]
    if isinstance(value, sequences):
        out = []
        for v in value:
            out += _rt12_jaxprs(v, ())  # one level of container
        return out
    return []


def _rt12_walk(jaxpr, out, sequences):
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in _rt12_jaxprs(value, sequences):
                _rt12_walk(sub, out, sequences)


@wrong(
    "loop_primitives",
    why="'jaxpr nested in equation params (alone or in a tuple/list ...)': recurses into tuple "
    "params (cond branches, custom_linear_solve's namedtuple) but not lists, since every "
    "built-in primitive it printed stores tuples; wrong on a jaxpr whose equation (a custom "
    "primitive, or an eqn rebuilt with new_eqn) holds jaxprs=[closed make_jaxpr of fori(x, 5)]: "
    "expects ['scan'], answers []",
)
def _rt12_loop_primitives_tuples_only(jaxpr) -> list[str]:
    out: list[str] = []
    top = jaxpr.jaxpr if hasattr(jaxpr, "consts") else jaxpr
    _rt12_walk(top, out, (tuple,))
    return out


# ---- task 4: count_traces ---------------------------------------------------------------------

_rt12_TRACES = {"n": 0}


@wrong(
    "count_traces",
    why="'return how many times JAX traced f' (per call of count_traces): the counter lives at "
    "module level and is never reset, so a second count_traces in the same process adds the "
    "first one's traces; wrong on count_traces(powers, (1,), [(x, 2)]) called twice: 1 each "
    "time, answers 1 then 2",
)
def _rt12_count_traces_module_counter(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    def counted(*args):
        _rt12_TRACES["n"] += 1
        return f(*args)

    jitted = jax.jit(counted, static_argnums=static_argnums)
    for args in calls:
        jax.block_until_ready(jitted(*args))
    return _rt12_TRACES["n"]


@wrong(
    "count_traces",
    why="'how many times JAX traced f': records the static arguments each trace sees and "
    "returns how many DISTINCT static tuples were traced ('one trace per static value'); "
    "wrong when a shape or dtype change retraces with the same static value: "
    "powers f, static (1,), calls [(f32[4], 2), (f32[8], 2)]: 2 traces, answers 1",
)
def _rt12_count_traces_distinct_statics(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    seen: list[tuple] = []

    def counted(*args):
        seen.append(tuple(args[i] for i in static_argnums))
        return f(*args)

    jitted = jax.jit(counted, static_argnums=static_argnums)
    for args in calls:
        jax.block_until_ready(jitted(*args))
    return len(set(seen))


# ---- task 6: bucketed_mean --------------------------------------------------------------------


@jax.jit
def _rt12_sentinel_mean(xp):
    keep = xp != -jnp.inf  # padding is -inf
    return jnp.sum(jnp.where(keep, xp, 0)) / jnp.sum(keep)


@wrong(
    "bucketed_mean",
    why="'NaN and infinities in x count as in NumPy's mean' / 'mask the padding': pads with a "
    "-inf sentinel and masks by value instead of by position, so a real -inf in x is taken for "
    "padding; wrong on x=[1.0, -inf, 3.0] f32, buckets (4, 8): NumPy -inf, answers 2.0",
)
def _rt12_bucketed_mean_neginf_sentinel(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    size = min(fits)
    xp = np.full(size, -np.inf, np.float32)
    xp[:n] = x
    return float(_rt12_sentinel_mean(xp))


@jax.jit
def _rt12_masked_mean(xp, n):
    keep = jnp.arange(xp.shape[0]) < n
    return jnp.sum(jnp.where(keep, xp, 0)) / n


@wrong(
    "bucketed_mean",
    why="'for ... any length a bucket holds' (0 included: NumPy's mean of an empty array is "
    "NaN): guards the empty case by raising ValueError ('mean of nothing'), a ValueError the "
    "contract keeps for x longer than every bucket; wrong on x=f32[0], buckets (4,): NaN "
    "expected, raises",
)
def _rt12_bucketed_mean_empty_raises(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    if n == 0:
        raise ValueError("mean of an empty array")
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    size = min(fits)
    xp = np.zeros(size, np.float32)
    xp[:n] = x
    return float(_rt12_masked_mean(xp, np.int32(n)))


# ---- task 7: explain_miss ---------------------------------------------------------------------


class _rt12_Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("TRACING CACHE MISS"):
            self.messages.append(msg)


@wrong(
    "explain_miss",
    why="'one per miss ... each miss its own message': de-duplicates the collected messages "
    "(dict.fromkeys, 'JAX sometimes logs twice'), so two misses with the same text collapse; "
    "wrong when f calls a fresh jax.jit(lambda v: v + 1) twice in a Python for loop on the "
    "second call's new shape: both inner misses log the same message, answers one fewer",
)
def _rt12_explain_miss_dedupe(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    jitted = jax.jit(f)
    logger = logging.getLogger("jax")
    with jax.explain_cache_misses(True):
        jitted(*first_args)
        handler = _rt12_Collect()
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    return list(dict.fromkeys(handler.messages))


# ---- task 5: compile_counter ------------------------------------------------------------------


@dataclass
class _rt12_CompileCount:  # same as the kata's CompileCount: a dataclass, so == compares counts
    count: int = 0


_rt12_OPEN: list = []
_rt12_REGISTERED = {"done": False}


def _rt12_listener(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        for counter in _rt12_OPEN:
            counter.count += 1


@wrong(
    "compile_counter",
    why="'counters may nest and must not disturb each other': one listener for all counters and "
    "a list of open ones, closed with _OPEN.remove(c); CompileCount is a dataclass, so remove() "
    "drops the first counter that is EQUAL (same count), not this one; wrong on `with "
    "compile_counter() as a: (with compile_counter() as b: pass); compile once` : a.count "
    "should be 1, answers 0 (a was closed when b exited, and b keeps counting after its block)",
)
@contextlib.contextmanager
def _rt12_compile_counter_remove_by_equality() -> Iterator:
    if not _rt12_REGISTERED["done"]:
        jax.monitoring.register_event_duration_secs_listener(_rt12_listener)
        _rt12_REGISTERED["done"] = True
    counter = _rt12_CompileCount()
    _rt12_OPEN.append(counter)
    try:
        yield counter
    finally:
        if counter in _rt12_OPEN:
            _rt12_OPEN.remove(counter)


# ---- task 6 (more): bucketed_mean -------------------------------------------------------------


@jax.jit
def _rt12_device_masked_mean(xp, n):
    keep = jnp.arange(xp.shape[0]) < n
    return jnp.sum(jnp.where(keep, xp, 0)) / n


@wrong(
    "bucketed_mean",
    why="'compiles once per bucket, not once per length': pads with jnp.pad on the device "
    "OUTSIDE the jitted function ('only jit compiles'); eager jnp.pad compiles one pad program "
    "per input length, so lengths 3, 4, 5 with buckets (8,) cost 1 + 3 compiles instead of 1; "
    "the mean itself is right",
)
def _rt12_bucketed_mean_eager_device_pad(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    size = min(fits)
    xp = jnp.pad(jnp.asarray(x, jnp.float32), (0, size - n))
    return float(_rt12_device_masked_mean(xp, np.int32(n)))


# ---- task 7 (more): explain_miss --------------------------------------------------------------


@wrong(
    "explain_miss",
    why="'Leave the jax_explain_cache_misses setting as you found it': turns it on with "
    "jax.config.update and turns it back (and removes its handler) after the second call, but "
    "not in a finally; when f raises on second_args (f = lambda x: x.reshape(2, -1), first "
    "f32[4], second f32[3]: the retrace raises) the setting stays True for the rest of the "
    "process and the handler stays on the 'jax' logger",
)
def _rt12_explain_miss_restore_without_finally(
    f: Callable, first_args: tuple, second_args: tuple
) -> list[str]:
    before = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    jitted = jax.jit(f)
    jitted(*first_args)
    handler = _rt12_Collect()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    jitted(*second_args)
    logger.removeHandler(handler)
    jax.config.update("jax_explain_cache_misses", before)
    return handler.messages


# ---- task 3 (more): loop_primitives -----------------------------------------------------------


@wrong(
    "loop_primitives",
    why="'and in every jaxpr nested in equation params': looks one level down only (the "
    "equations of the jaxprs the top-level equations hold, e.g. a loop's body) with two nested "
    "for-loops instead of recursion; wrong on fori_loop(0, n, lambda i, c: fori_loop(0, n, "
    "lambda j, d: fori(d, 3), c), x) (n traced): expects ['while', 'while', 'scan'], answers "
    "['while', 'while']",
)
def _rt12_loop_primitives_two_levels(jaxpr) -> list[str]:
    out: list[str] = []
    top = jaxpr.jaxpr if hasattr(jaxpr, "consts") else jaxpr
    for eqn in top.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in _rt12_jaxprs(value, (tuple, list)):
                for inner in sub.eqns:
                    if inner.primitive.name in ("scan", "while"):
                        out.append(inner.primitive.name)
    return out
