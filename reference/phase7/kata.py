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


def _kept_and_copies(loop) -> tuple[int, int]:
    """(1 if XLA keeps a while for the loop, how many copies of its step the program holds)."""
    if loop.kind == "cumsum":
        return 0, 0
    if loop.kind == "fori_traced":
        return 1, 1  # an unknown trip count: always a loop, one body
    if loop.kind == "python_for":
        return 0, loop.trips  # unrolled while tracing
    unroll = loop.trips if loop.unroll is True else loop.unroll
    trips, remainder = divmod(loop.trips, unroll) if unroll else (0, loop.trips)
    if unroll != 1 and trips == 1 and remainder == 0:
        trips, remainder = 0, loop.trips  # scan unrolls this one completely
    copies = (unroll if trips else 0) + remainder
    return int(trips >= 2), copies  # XLA inlines a loop that runs at most once


def _whiles(loop) -> int:
    kept, copies = _kept_and_copies(loop)
    return kept + copies * sum(_whiles(inner) for inner in loop.body)


def predict_while_loops(program) -> int:
    # A loop primitive is one while when it runs 2 trips or more after unrolling (XLA inlines a
    # loop of 0 or 1 trip), and each copy of its step holds the loops of its body: a Python for
    # or an unroll copies them. vmap batches the carry of the same loops, a cond branch keeps
    # them. grad adds one backward loop per loop, and keeps a forward loop only when the
    # backward pass reads what it computed: tanh's derivative needs its values, and a later
    # tanh loop needs its input; an affine step needs nothing.
    if program.wrap != "grad":
        return sum(_whiles(loop) for loop in program.loops)
    total = 0
    for number, loop in enumerate(program.loops):
        kept, _ = _kept_and_copies(loop)
        needed = any(
            later.step == "tanh" and later.kind != "cumsum" for later in program.loops[number:]
        )
        total += kept * (1 + needed)
    return total


_NARROW = {"float64": "float32", "int64": "int32", "uint64": "uint32"}  # x64 is off


def _abstract(value) -> tuple:
    """What jit's cache remembers of an argument: shape, dtype (32-bit: x64 is off), weak type."""
    if isinstance(value, np.generic):  # before float: np.float64 subclasses it, yet is strong
        return ((), _NARROW.get(value.dtype.name, value.dtype.name), False)
    if isinstance(value, bool):
        return ((), "bool", False)
    if isinstance(value, int):
        return ((), "int32", True)
    if isinstance(value, float):
        return ((), "float32", True)
    dtype = np.dtype(value.dtype)
    return (np.shape(value), _NARROW.get(dtype.name, dtype.name), False)


def predict_compiles(calls) -> int:
    # One compile per new key: the function object (not the jax.jit wrapper), static or
    # traced n, x's abstract type and where it is committed, n's abstract type when traced or
    # its type and value when static. trace() and lower() never compile; lower().compile()
    # and a call share one cache.
    seen = set()
    for number, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        function = (call.function, number) if call.function == "lambda" else call.function
        n = (type(call.n), call.n) if call.static else _abstract(call.n)
        seen.add((function, call.static, _abstract(call.x), call.device, n))
    return len(seen)
