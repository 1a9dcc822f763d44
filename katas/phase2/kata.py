"""Phase 2: reading jaxprs. Edit this file only; run `uv run pytest katas/phase2 -x` until green.

A jaxpr is JAX's own IR: what tracing your Python produced, before XLA sees anything.
Print one (`print(jax.make_jaxpr(f)(x))`) whenever you are unsure what you are walking.
"""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np  # noqa: F401  (you will need it)


def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mlp_jaxpr(params: dict, x):
    """Return the (closed) jaxpr of `mlp` for these arguments."""
    # TODO: one call traces mlp with abstract values
    raise NotImplementedError("phase2 task 1: mlp_jaxpr")


def primitive_census(jaxpr) -> Counter:
    """Count primitives by name in `jaxpr` and in every jaxpr nested in equation params.

    Nested jaxprs hide in params such as `jaxpr` (jit, scan), `call_jaxpr` (custom_jvp_call),
    `branches` (cond: a tuple), `cond_jaxpr` and `body_jaxpr` (while). The nesting equation
    itself counts too (e.g. one `cond` plus what its branches contain).
    """
    # TODO: walk jaxpr.eqns, count eqn.primitive.name, recurse into nested jaxprs
    raise NotImplementedError("phase2 task 2: primitive_census")


def io_avals(jaxpr) -> tuple[list, list]:
    """Return (inputs, outputs): lists of (shape tuple, dtype name) for the jaxpr's avals."""
    # TODO: the closed jaxpr knows its input and output abstract values
    raise NotImplementedError("phase2 task 3: io_avals")


def literal_operands(jaxpr, primitive: str) -> list[float]:
    """The literal (inline constant) operands of every top-level equation of `primitive`."""
    # TODO: a literal invar carries its value in `.val`
    raise NotImplementedError("phase2 task 4: literal_operands")


def unused_equations(jaxpr) -> list[str]:
    """Primitive names of top-level equations whose results nothing reads (printed as `_`)."""
    # TODO: walk backwards from the outputs, remembering which variables are read
    raise NotImplementedError("phase2 task 5: unused_equations")


def stablehlo_of(f, *args) -> str:
    """The StableHLO text of jax.jit(f) lowered for `args`."""
    # TODO: jit, lower, as text
    raise NotImplementedError("phase2 task 6: stablehlo_of")


def closure_consts(jaxpr) -> list:
    """The values of the constants the traced function closed over, as NumPy arrays."""
    # TODO: the closed jaxpr keeps them beside its constvars
    raise NotImplementedError("phase2 task 7: closure_consts")
