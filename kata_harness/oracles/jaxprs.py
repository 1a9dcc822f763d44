"""Phase 2's oracles: the MLP in float64 NumPy, the input and output avals ``jax.eval_shape``
gives a program, and the dtype ``x + y`` gets in its jaxpr for every pair of kinds.

Each function takes the program or its inputs, never the kata's answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from xla_inspect.jaxpr import out_avals


def np_mlp(params, x):
    """relu(x w1 + b1) w2 + b2 in float64 NumPy."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    hidden = np.maximum(np.asarray(x, np.float64) @ p["w1"] + p["b1"], 0.0)
    return hidden @ p["w2"] + p["b2"]


def expected_avals(fn, args):
    """([(shape, dtype)] of the arguments' leaves, the same of fn's outputs by eval_shape)."""

    def describe(leaves):
        return [(tuple(v.shape), str(v.dtype)) for v in leaves]

    return describe(jax.tree.leaves(args)), describe(jax.tree.leaves(jax.eval_shape(fn, *args)))


def promotions(kinds: Sequence[str], value_of: Callable) -> dict[tuple[str, str], str]:
    """The dtype of x + y in its jaxpr, for every pair of kinds (``value_of(kind)`` makes a
    value of that kind; traced here)."""
    return {
        (a, b): out_avals(jax.make_jaxpr(jnp.add)(value_of(a), value_of(b)))[0].dtype
        for a, b in itertools.product(kinds, kinds)
    }
