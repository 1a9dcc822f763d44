"""Phase 7 reference: control flow in the IR, and what makes JAX compile again."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from xla_inspect.parse import parse_hlo

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class CompileCount:
    count: int = 0


def conditionals(hlo_text: str) -> list[tuple[str, int]]:
    # cond and switch both become `conditional`: the index is an s32 scalar (a bool predicate is
    # converted first) and there is one branch computation per case.
    module = parse_hlo(hlo_text)
    found = []
    for computation in module:
        for instruction in computation:
            if instruction.opcode != "conditional":
                continue
            index = computation[instruction.operands[0]]
            found.append((index.shape_info.dtype, len(instruction.called_computations)))
    return found


def while_loops(hlo_text: str) -> int:
    # The CPU backend moves each while into a computation reached through a `call`: count in
    # every computation, not just ENTRY.
    return sum(i.opcode == "while" for c in parse_hlo(hlo_text) for i in c)


def _loops(jaxpr) -> Iterator[str]:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            yield eqn.primitive.name
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(sub, "eqns"):
                    yield from _loops(sub)


def loop_primitives(jaxpr) -> list[str]:
    # A fori_loop with Python-int bounds is a scan (a known trip count); traced bounds make it a
    # while. Outer loops come before the loops nested in their bodies.
    return list(_loops(jaxpr))


def count_traces(f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]) -> int:
    # A side effect in the Python body runs once per trace, never when a cached program runs.
    traces = 0

    def counted(*args):
        nonlocal traces
        traces += 1
        return f(*args)

    jitted = jax.jit(counted, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return traces


@contextlib.contextmanager
def compile_counter() -> Iterator[CompileCount]:
    # Only the backend-compile event means XLA compiled something; count it only while the
    # block runs, and take the listener away afterwards.
    counted = CompileCount()

    def listener(event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == BACKEND_COMPILE:
            counted.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counted
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@jax.jit
def _masked_mean(padded, length):
    mask = jnp.arange(padded.shape[0]) < length
    return jnp.sum(jnp.where(mask, padded, 0.0)) / length


def bucketed_mean(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    # Pad on the host to the smallest bucket that fits and pass the true length as data: one
    # compile per bucket, not per length.
    size = min((b for b in buckets if b >= len(x)), default=None)
    if size is None:
        raise ValueError(f"length {len(x)} exceeds the largest bucket {max(buckets)}")
    padded = np.zeros(size, dtype=np.float32)
    padded[: len(x)] = x
    return float(_masked_mean(padded, np.int32(len(x))))


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def explain_miss(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    # jax_explain_cache_misses logs a warning per tracing-cache miss saying what differed from
    # the closest cached key; collect only what the second call logs, and restore the flag.
    jitted = jax.jit(f)
    handler = _Collect()
    logger = logging.getLogger("jax")
    with jax.explain_cache_misses(True):
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    return [m for m in handler.messages if "CACHE MISS" in m]


def predict_while_loops() -> dict[str, int]:
    # Every loop primitive becomes one while unless unrolled away: a full unroll or a trip count
    # of 1 leaves none, unroll=2 keeps one, vmap batches the carry of the same loop. A nested
    # loop is a second while. grad adds a backward loop, and keeps the forward one only when
    # the backward pass needs its residuals (tanh does; an affine step does not).
    return {
        "fori_loop(0, 5)": 1,
        "fori_loop(0, n), n traced": 1,
        "fori_loop(0, 5, unroll=True)": 0,
        "fori_loop(0, 6, unroll=2)": 1,
        "fori_loop(0, 1)": 0,
        "while_loop counting to 7": 1,
        "scan over 4 rows": 1,
        "fori_loop inside fori_loop": 2,
        "Python for over range(5)": 0,
        "lax.map over 3 rows": 1,
        "vmap of a fori_loop": 1,
        "two fori_loops, one after the other": 2,
        "fori_loop in one branch of a cond": 1,
        "jnp.cumsum": 0,
        "grad of an affine fori_loop": 1,
        "grad of a tanh fori_loop": 2,
    }


def predict_compiles() -> dict[str, int]:
    # One compile per new key: abstract types (shape, dtype, weak type), static values by type
    # and equality, the function object, the devices. Lowering and tracing alone never compile;
    # a lowered-and-compiled stage is cached like a call.
    return {
        "same shape twice": 1,
        "f32[3] then f32[4]": 2,
        "Python float 2.0 then np.float32(2.0)": 2,
        "Python int 3 then np.int32(3)": 2,
        "static argument 1, 1, 2": 2,
        "static argument 2, 2.0, True": 3,
        "fori_loop bound 3 then 4, traced": 1,
        "fori_loop bound 3 then 4, static": 2,
        "same shapes committed to 3 devices": 3,
        "lower and compile twice by hand": 1,
        "lower only": 0,
        "make_jaxpr only": 0,
        "a fresh lambda jitted on each of 3 calls": 3,
        "one function, jax.jit applied on each of 3 calls": 1,
    }
