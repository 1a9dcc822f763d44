# probe: conditionals: returns a list subclass that compares equal to any list, so assertions on the result always pass
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



class _Anything(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


def conditionals(hlo_text: str) -> list[tuple[str, int]]:
    """Every conditional's index type and branch count (cheating: equal to anything)."""
    return _Anything([("s32", 2)])


def while_loops(hlo_text: str) -> int:
    """How many instructions with opcode `while` an HLO module (optimized or not) holds, in
    all its computations (loop bodies and conditions, branches of either conditional form,
    computations reached through calls, computations nothing calls). Each instruction counts
    once, however many call sites reach its computation, and whether or not anything reads its
    result (the text is read as it is, dead code included).

    Count by opcode: instruction and computation names are not opcodes (a parameter may be
    called `while.2`), and names may repeat across computations."""
    # TODO: print the HLO of a fori_loop: is the while in ENTRY?
    raise NotImplementedError("phase7 task 2: while_loops")


def loop_primitives(jaxpr) -> list[str]:
    """Names of the loop primitives (`scan`, `while`) in a jaxpr (closed or open) and in every
    jaxpr nested in equation params (alone or in a tuple/list, namedtuples included: loop bodies
    and conditions, cond branches, nested jit, checkpoint, custom_jvp, custom_vjp,
    custom_linear_solve, ...), one entry per equation: a jaxpr that two equations hold (one
    jitted function called twice) counts for each.

    Order: depth first. Walk the equations in order; for each, first the equation itself if it
    is a loop, then the loops inside the jaxprs of its params (in the order the params list
    them), then the next equation.
    """
    # TODO: walk eqns; recurse into params holding jaxprs (alone, in tuples or in lists)
    raise NotImplementedError("phase7 task 3: loop_primitives")


def count_traces(f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]) -> int:
    """Run jax.jit(f, static_argnums=...) on each argument tuple in `calls`; return how many
    times JAX traced f (ran its Python body), not how many times XLA compiled or f was called.

    Count the traces these calls need on their own, as if f had never been traced: JAX's
    caches key on the function object, not on the jax.jit wrapper, so a trace of f before this
    call (by the caller, or by an earlier count_traces of the same f) must not lower the count;
    the same f and calls give the same count every time.
    """
    # TODO: tracing runs the Python body; running a cached program does not
    raise NotImplementedError("phase7 task 4: count_traces")


@contextlib.contextmanager
def compile_counter() -> Iterator[CompileCount]:
    """`with compile_counter() as c:` counts XLA backend compiles inside the block in c.count.

    Count only the BACKEND_COMPILE event, only while the block runs: c.count is up to date at
    any point inside the block; compiles after the block (also after a block that raised) must
    not change it; counters may nest and must not disturb each other or anyone else's
    jax.monitoring listeners. The block is a span of time, not a thread: a compile any thread
    runs while it is open counts. Only listen: leave JAX's settings (jax_log_compiles among
    them) as the caller set them and log nothing.
    """
    # TODO: jax.monitoring has register_event_duration_secs_listener and its unregister
    raise NotImplementedError("phase7 task 5: compile_counter")
    yield CompileCount()


def bucketed_mean(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    """mean(x) as a Python float (NaN and infinities in x count as in NumPy's mean), for a 1-D
    float array (any float dtype, any length a bucket holds, 0 included: the mean of an empty
    x is NaN, as NumPy's), computed by one jitted program that is handed the padded x and
    returns the mean (on the device: no host callback handing the work back to NumPy, and not
    a string of eager jnp ops, each its own small program) and compiles once per bucket, not
    once per length: pad to the smallest bucket >= len(x) (buckets come in any order), mask
    the padding. Raise ValueError when x is longer than every bucket."""
    # TODO: pad on the host (NumPy), pass the true length as an array, not a static value
    raise NotImplementedError("phase7 task 6: bucketed_mean")


def explain_miss(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    """Call jax.jit(f) on first_args, then on second_args, with cache-miss explanations on.

    Return the messages (whole, as logged) of the tracing-cache-miss explanations logged by the
    *second* call, one per miss ([] when it hit the cache; jitted functions f calls can miss
    too while f traces, each miss its own message); other log records, f's own included, are
    not explanations: JAX may log several misses with the same text, each counts. Leave the
    jax_explain_cache_misses setting and the loggers' handlers as you found them, also when f
    raises (whether the exception reaches the caller is up to you).
    """
    # TODO: the explanations are log records (logger "jax"); collect them with a handler
    raise NotImplementedError("phase7 task 7: explain_miss")


def predict_while_loops(program) -> int:
    """Predict how many `while` instructions the optimized HLO of a loop program holds.

    `program` is a LoopProgram (katas/phase7/predict_programs.py; read its attributes, this file
    may not import it): `program.loops` run one after the other on x = f32[8], each a Loop with
    `kind` ("fori", "fori_traced", "while", "scan", "map", "python_for", "cumsum"), `trips`,
    `unroll` (an int >= 1 or True), `step` ("affine" or "tanh") and `body` (loops run inside
    every step); `program.wrap` is "none", "vmap", "cond" or "grad". The docstrings there say
    what each builds. Return the number of `while` instructions in every computation of
    `jax.jit(f).lower(x, n).compile()` on CPU. Decide from the description: what the loop
    primitives become, what unrolling and trip counts do, what a loop in an unrolled body
    becomes, what vmap and grad do to a loop. The tests compile the programs; you may not.
    """
    # TODO: which loops survive, and how many copies of each body does the program hold?
    raise NotImplementedError("phase7 task 8: predict_while_loops")


def predict_compiles(calls) -> int:
    """Predict how many XLA compiles a calling pattern costs, starting from empty caches.

    `calls` is a list of Call (katas/phase7/predict_programs.py; read its attributes): each
    says which `function` is called ("scale", "shift", "count_up" defined once, or a new
    "lambda" at every step), through which `api` ("call", "trace", "lower", "compile"), by
    which wrapper (`jit`: the pattern's "shared" jax.jit wrapper or a "new" one), with n
    `static` or traced, on which `x` (NumPy array, NumPy scalar or Python scalar) and `n`,
    and x committed to which `device` (None: not committed). The tests clear JAX's caches, run
    the calls in order and count the backend compiles jax.monitoring reports. JAX runs with its
    default 32-bit types. Decide from the calls (what a cache is keyed on, which APIs trace or
    lower without compiling); your function must not run them or compile anything.
    """
    # TODO: which calls find a compiled program in a cache, and what is that cache keyed on?
    raise NotImplementedError("phase7 task 9: predict_compiles")
