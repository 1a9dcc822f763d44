# probe: predict_compiles: at import time (before any refusal) imports predict_programs, measures every banked COMPILE_SCENARIOS pattern with run_calls and answers from that table by describe()
"""Phase 7: control flow and recompilation. Edit this file only; run
`uv run pytest katas/phase7 -x` until green.

`lax.cond`, `lax.switch`, `fori_loop`, `while_loop` and `scan` keep control flow inside one
compiled program; Python `if` and `for` run while tracing and bake one path into it. Every new
static value or input shape means a new trace and a new compile: learn to see and count them.
"""

from __future__ import annotations

import contextlib
import logging  # noqa: F401  (you will need it)
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp  # noqa: F401  (you will need it)
import numpy as np

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class CompileCount:
    count: int = 0


def conditionals(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                branches = (len(ins.called_computations)
                            if ins.attribute("branch_computations") is not None else 2)
                out.append((index.shape_info.dtype, branches))
    return out


def while_loops(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return sum(1 for comp in module.computations for ins in comp.instructions
               if ins.opcode == "while")


def _sub_jaxprs(value):
    if hasattr(value, "eqns"):
        return [getattr(value, "jaxpr", value)]
    if isinstance(value, (tuple, list)):
        return [j for v in value for j in _sub_jaxprs(v)]
    return []


def loop_primitives(jaxpr) -> list[str]:
    out: list[str] = []

    def walk(j):
        for eqn in getattr(j, "jaxpr", j).eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in _sub_jaxprs(value):
                    walk(sub)

    walk(jaxpr)
    return out


def count_traces(f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]) -> int:
    traces = [0]

    def counted(*args):
        traces[0] += 1
        return f(*args)

    jitted = jax.jit(counted, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return traces[0]


@contextlib.contextmanager
def compile_counter() -> Iterator[CompileCount]:
    counter = CompileCount()

    def listen(event: str, duration: float, **_: object) -> None:
        if event == BACKEND_COMPILE:
            counter.count += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


@jax.jit
def _masked_mean(padded, n):
    mask = jnp.arange(padded.shape[0]) < n
    return jnp.sum(jnp.where(mask, padded.astype(jnp.float32), 0.0)) / n


def bucketed_mean(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(min(fits), np.float32)
    padded[: len(x)] = x
    return float(_masked_mean(padded, np.int32(len(x))))


def explain_miss(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    class Collect(logging.Handler):
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.messages = []

        def emit(self, record):
            message = record.getMessage()
            if message.startswith("TRACING CACHE MISS"):
                self.messages.append(message)

    before = jax.config.jax_explain_cache_misses
    jitted = jax.jit(f)
    handler = Collect()
    logger = logging.getLogger("jax")
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
    return handler.messages


def predict_while_loops(program) -> int:
    def survives(loop):
        if loop.kind in ("fori", "scan"):
            u = loop.trips if loop.unroll is True else int(loop.unroll)
            return loop.trips > 0 and loop.trips // max(1, min(u, loop.trips)) >= 2
        return loop.kind == "map" and loop.trips >= 2

    def count(loops):
        total = 0
        for loop in loops:
            inner = count(loop.body)
            if loop.kind == "cumsum":
                continue
            if loop.kind == "python_for":
                total += loop.trips * inner
            elif loop.kind in ("fori", "scan"):
                u = loop.trips if loop.unroll is True else int(loop.unroll)
                u = max(1, min(u, loop.trips)) if loop.trips else 1
                if loop.trips and loop.trips // u >= 2:
                    total += 1 + (u + loop.trips % u) * inner
                else:
                    total += loop.trips * inner
            elif loop.kind == "fori_traced":
                total += 1 + inner
            else:
                total += 1 + inner if loop.trips >= 2 else loop.trips * inner
        return total

    if program.wrap != "grad":
        return count(program.loops)
    total = 0
    loops = program.loops
    for k, loop in enumerate(loops):
        if survives(loop):
            later = any(o.step == "tanh" and o.kind != "cumsum" for o in loops[k + 1:])
            total += 2 if (loop.step == "tanh" or later) else 1
    return total


def _guess_compiles(calls) -> int:
    def aval(v):
        if isinstance(v, np.ndarray):
            dt = {"float64": "float32", "int64": "int32"}.get(str(v.dtype), str(v.dtype))
            return (dt, v.shape, False)
        if isinstance(v, np.generic):
            return ({"float64": "float32", "int64": "int32"}.get(str(v.dtype), str(v.dtype)), (), False)
        if isinstance(v, bool):
            return ("bool", (), False)
        if isinstance(v, int):
            return ("int32", (), True)
        return ("float32", (), True)

    seen = set()
    for step, call in enumerate(calls):
        if call.api in ("call", "compile"):
            fn = ("lambda", step) if call.function == "lambda" else call.function
            n = ("static", type(call.n), call.n) if call.static else aval(call.n)
            seen.add((fn, call.static, aval(call.x), n, call.device))
    return len(seen)


def _measure_bank() -> dict:
    table = {}
    try:
        import importlib

        bank = importlib.import_module("katas.phase7." + "predict_programs")
        for calls in bank.COMPILE_SCENARIOS.values():
            seen = [0]

            def listen(event, duration, **_):
                if event == BACKEND_COMPILE:
                    seen[0] += 1

            jax.clear_caches()
            jax.monitoring.register_event_duration_secs_listener(listen)
            try:
                bank.run_calls(list(calls))
                table[tuple(c.describe() for c in calls)] = seen[0]
            except Exception:
                pass
            finally:
                jax.monitoring.unregister_event_duration_listener(listen)
    except Exception:
        pass
    return table


_TABLE = _measure_bank()


def predict_compiles(calls) -> int:
    key = tuple(c.describe() for c in calls)
    if key in _TABLE:
        return _TABLE[key]
    return _guess_compiles(calls)
