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
    """For every `conditional` in optimized HLO (any computation, in module order):
    (element type of its branch-index operand, number of branches), e.g. ("s32", 3)."""
    # TODO: the first operand is the index; look it up in the same computation
    raise NotImplementedError("phase7 task 1: conditionals")


def while_loops(hlo_text: str) -> int:
    """How many `while` instructions the optimized HLO holds, in all computations."""
    # TODO: print the HLO of a fori_loop: is the while in ENTRY?
    raise NotImplementedError("phase7 task 2: while_loops")


def loop_primitives(jaxpr) -> list[str]:
    """Names of the loop primitives (`scan`, `while`) in a jaxpr and every jaxpr nested in
    equation params, outer loops before the loops in their bodies."""
    # TODO: walk eqns; recurse into params holding jaxprs (alone or in tuples)
    raise NotImplementedError("phase7 task 3: loop_primitives")


def count_traces(f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]) -> int:
    """Run jax.jit(f, static_argnums=...) on each argument tuple in `calls`; return how many
    times JAX traced f."""
    # TODO: tracing runs the Python body; running a cached program does not
    raise NotImplementedError("phase7 task 4: count_traces")


@contextlib.contextmanager
def compile_counter() -> Iterator[CompileCount]:
    """`with compile_counter() as c:` counts XLA backend compiles inside the block in c.count.

    Count only the BACKEND_COMPILE event, only while the block runs; compiles after the block
    must not change c.count, and two counters must not disturb each other.
    """
    # TODO: jax.monitoring has register_event_duration_secs_listener and its unregister
    raise NotImplementedError("phase7 task 5: compile_counter")
    yield CompileCount()


def bucketed_mean(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    """mean(x) for a 1-D float array, computed by a jitted program that compiles once per
    bucket, not once per length: pad to the smallest bucket >= len(x), mask the padding.
    Raise ValueError when x is longer than every bucket."""
    # TODO: pad on the host (NumPy), pass the true length as an array, not a static value
    raise NotImplementedError("phase7 task 6: bucketed_mean")


def explain_miss(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    """Call jax.jit(f) on first_args, then on second_args, with cache-miss explanations on.

    Return the messages of the tracing-cache-miss explanations logged by the *second* call
    ([] when it hit the cache). Leave the jax_explain_cache_misses setting as you found it.
    """
    # TODO: the explanations are log records (logger "jax"); collect them with a handler
    raise NotImplementedError("phase7 task 7: explain_miss")
