# probe: predict_while_loops: compiles a copy of LOOP_BANK at module import, before the refusal starts
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

import functools as _functools

from jax import lax as _lax


def _vec(n=8, dtype=np.float32):
    return np.ones(n, dtype)


def affine_step(i, c):
    return c * 1.01 + i


def tanh_step(i, c):
    return jnp.tanh(c) * 1.5 + i


functools = _functools
lax = _lax

LOOP_BANK = {
    "fori_loop(0, 5)": lambda x: lax.fori_loop(0, 5, affine_step, x),
    "fori_loop(0, n), n traced": lambda x, n: lax.fori_loop(0, n, affine_step, x),
    "fori_loop(0, 5, unroll=True)": lambda x: lax.fori_loop(0, 5, affine_step, x, unroll=True),
    "fori_loop(0, 6, unroll=2)": lambda x: lax.fori_loop(0, 6, affine_step, x, unroll=2),
    "fori_loop(0, 1)": lambda x: lax.fori_loop(0, 1, affine_step, x),
    "while_loop counting to 7": lambda x: lax.while_loop(
        lambda c: c[0] < 7, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)
    )[1],
    "scan over 4 rows": lambda x: lax.scan(lambda c, r: (c + r, c * r), x, jnp.ones((4, 8)))[0],
    "fori_loop inside fori_loop": lambda x: lax.fori_loop(
        0, 3, lambda i, c: lax.fori_loop(0, 4, affine_step, c), x
    ),
    "Python for over range(5)": lambda x: functools.reduce(
        lambda c, i: affine_step(i, c), range(5), x
    ),
    "lax.map over 3 rows": lambda x: lax.map(jnp.sin, jnp.stack([x, x * 2.0, x * 3.0])),
    "vmap of a fori_loop": lambda x: jax.vmap(lambda r: lax.fori_loop(0, 5, affine_step, r))(
        jnp.stack([x, x])
    ),
    "two fori_loops, one after the other": lambda x: (
        lax.fori_loop(0, 3, affine_step, x) + lax.fori_loop(0, 4, affine_step, x * 2.0)
    ),
    "fori_loop in one branch of a cond": lambda x: lax.cond(
        x[0] > 0, lambda c: lax.fori_loop(0, 4, affine_step, c), lambda c: c, x
    ),
    "jnp.cumsum": jnp.cumsum,
    "grad of an affine fori_loop": jax.grad(lambda x: lax.fori_loop(0, 5, affine_step, x).sum()),
    "grad of a tanh fori_loop": jax.grad(lambda x: lax.fori_loop(0, 5, tanh_step, x).sum()),
}


def _count_whiles(text):
    return sum(1 for c in parse_hlo(text) for i in c if i.opcode == "while")


# Work done while the module imports: the harness refuses the compiler only while the
# prediction runs, so compile every program now and keep the counts.
_IMPORT_TIME_COUNTS = {
    name: _count_whiles(
        jax.jit(f)
        .lower(*((_vec(), np.int32(3)) if "traced" in name else (_vec(),)))
        .compile()
        .as_text()
    )
    for name, f in LOOP_BANK.items()
}


BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class CompileCount:
    count: int = 0


def conditionals(hlo_text: str) -> list[tuple[str, int]]:
    """For every `conditional` instruction of an HLO module (optimized or not): the element type
    of its branch-index operand and its number of branches, e.g. ("s32", 3) or ("pred", 2). A
    branch is an entry of branch_computations: one computation may serve several branches.

    Look in every computation (branches, loop bodies, called computations), find conditionals by
    opcode, and list them in module order: computation by computation as the text lists them,
    instruction by instruction inside each. One entry per instruction, duplicates included.
    """
    # TODO: the first operand is the index; look it up in the same computation
    raise NotImplementedError("phase7 task 1: conditionals")


def while_loops(hlo_text: str) -> int:
    """How many instructions with opcode `while` an HLO module (optimized or not) holds, in
    all its computations (loop bodies, branches, computations reached through calls).

    Count by opcode: instruction and computation names are not opcodes (a parameter may be
    called `while.2`)."""
    # TODO: print the HLO of a fori_loop: is the while in ENTRY?
    raise NotImplementedError("phase7 task 2: while_loops")


def loop_primitives(jaxpr) -> list[str]:
    """Names of the loop primitives (`scan`, `while`) in a jaxpr (closed or open) and in every
    jaxpr nested in equation params (alone or in a tuple/list: loop bodies and conditions, cond
    branches, nested jit, checkpoint, custom_jvp, ...), one entry per equation.

    Order: depth first. Walk the equations in order; for each, first the equation itself if it
    is a loop, then the loops inside the jaxprs of its params (in the order the params list
    them), then the next equation.
    """
    # TODO: walk eqns; recurse into params holding jaxprs (alone or in tuples)
    raise NotImplementedError("phase7 task 3: loop_primitives")


def count_traces(f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]) -> int:
    """Run jax.jit(f, static_argnums=...) on each argument tuple in `calls`; return how many
    times JAX traced f (ran its Python body), not how many times XLA compiled or f was called.
    """
    # TODO: tracing runs the Python body; running a cached program does not
    raise NotImplementedError("phase7 task 4: count_traces")


@contextlib.contextmanager
def compile_counter() -> Iterator[CompileCount]:
    """`with compile_counter() as c:` counts XLA backend compiles inside the block in c.count.

    Count only the BACKEND_COMPILE event, only while the block runs: c.count is up to date at
    any point inside the block; compiles after the block (also after a block that raised) must
    not change it; counters may nest and must not disturb each other or anyone else's
    jax.monitoring listeners.
    """
    # TODO: jax.monitoring has register_event_duration_secs_listener and its unregister
    raise NotImplementedError("phase7 task 5: compile_counter")
    yield CompileCount()


def bucketed_mean(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    """mean(x) as a Python float, for a 1-D float array (any float dtype), computed by a jitted
    program that compiles once per bucket, not once per length: pad to the smallest bucket
    >= len(x) (buckets come in any order), mask the padding. Raise ValueError when x is longer
    than every bucket."""
    # TODO: pad on the host (NumPy), pass the true length as an array, not a static value
    raise NotImplementedError("phase7 task 6: bucketed_mean")


def explain_miss(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    """Call jax.jit(f) on first_args, then on second_args, with cache-miss explanations on.

    Return the messages (whole, as logged) of the tracing-cache-miss explanations logged by the
    *second* call, one per miss ([] when it hit the cache); other log records, f's own
    included, are not explanations. Leave the jax_explain_cache_misses setting as you found it.
    """
    # TODO: the explanations are log records (logger "jax"); collect them with a handler
    raise NotImplementedError("phase7 task 7: explain_miss")


_BY_DESCRIPTION = {  # the fixed programs' descriptions (program.describe())
    "[fori(5, affine)]": "fori_loop(0, 5)",
    "[fori_traced(3, affine)]": "fori_loop(0, n), n traced",
    "[fori(5, unroll=True, affine)]": "fori_loop(0, 5, unroll=True)",
    "[fori(6, unroll=2, affine)]": "fori_loop(0, 6, unroll=2)",
    "[fori(1, affine)]": "fori_loop(0, 1)",
    "[while(7, affine)]": "while_loop counting to 7",
    "[scan(4, affine)]": "scan over 4 rows",
    "[fori(3, affine, body [fori(4, affine)])]": "fori_loop inside fori_loop",
    "[python_for(5, affine)]": "Python for over range(5)",
    "[map(3, affine)]": "lax.map over 3 rows",
    "[fori(5, affine)] under vmap": "vmap of a fori_loop",
    "[fori(3, affine); fori(4, affine)]": "two fori_loops, one after the other",
    "[fori(4, affine)] under cond": "fori_loop in one branch of a cond",
    "[cumsum]": "jnp.cumsum",
    "[fori(5, affine)] under grad": "grad of an affine fori_loop",
    "[fori(5, tanh)] under grad": "grad of a tanh fori_loop",
}


def predict_while_loops(program) -> int:
    """'Predicted': the counts were compiled when the module was imported."""
    return _IMPORT_TIME_COUNTS.get(_BY_DESCRIPTION.get(program.describe(), ""), 1)


def predict_compiles() -> dict[str, int]:
    """Predict how many XLA compiles each scenario of COMPILE_SCENARIOS costs.

    COMPILE_SCENARIOS (katas/phase7/programs.py) maps a name to a function that calls jitted
    code; the tests clear JAX's caches, run it, and count the backend compiles jax.monitoring
    reports. Return {name: count} for every name, decided from what each scenario does (which
    calls hit a cache, what a cache is keyed on, which APIs trace or lower without compiling).
    Your function must not run the scenarios or compile anything.
    """
    # TODO: one entry per COMPILE_SCENARIOS name
    raise NotImplementedError("phase7 task 9: predict_compiles")
