"""JAX programs phase 16's reading tests have XLA compile on this host and read beside recorded
Inductor code: spellings of XLA's module that the float32 twins of programs.PAIRS never show.

- `dense_relu_int32`: programs.j_dense_relu on int32 arrays. XLA:CPU hands no integer GEMM to a
  library fusion: the ENTRY computation holds a bare `dot` (a library kernel for kernel_census).
- `dense_relu_bias_first`: the same layer written `f(b, x, w)`: the bias is ENTRY parameter 0.
- `dense_relu_loop`: three such layers in a `jax.lax.fori_loop`: ENTRY holds a `while`, and the
  fusions are in its body, not ENTRY kernels.
- `dense_branches`: `jax.lax.cond` between two layers: ENTRY holds a `conditional`, whose branch
  computations hold the fusions.
- `scatter_add_sum`, `scatter_max_tanh`: rows of x updated at fixed indices (`x.at[i].add(v)`,
  `.max(v)`), then summed per row or put through tanh: a `wrapped_scatter` fusion holds a
  `scatter`, which names its combiner with `to_apply=` as a `reduce` does but is no reduction
  (the second program reduces nothing at all).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import katas.phase16.programs as P


def j_dense_relu_bias_first(b, x, w):
    return jax.nn.relu(x @ w.T + b)


def j_dense_relu_loop(x, w, b):
    return jax.lax.fori_loop(0, 3, lambda _, h: jax.nn.relu(h @ w.T + b), x)


def j_dense_branches(x, w, b):
    def dense(h):
        return jax.nn.relu(h @ w.T + b)

    def no_bias(h):
        return jnp.tanh(h @ w.T)

    return jax.lax.cond(x.sum() > 0, dense, no_bias, x)


# rows of a 16-row x to update, one of them twice (a scatter adds both updates)
_ROWS = np.array([11, 2, 11, 5])


def j_scatter_add_sum(x, v):
    return x.at[_ROWS].add(v).sum(-1)


def j_scatter_max_tanh(x, v):
    return jnp.tanh(x.at[_ROWS].max(v))


LAYER = ((16, 48), (24, 48), (24,))
SQUARE = ((16, 24), (24, 24), (24,))

# name: (the JAX program, its arrays' shapes, their dtype)
XLA_ONLY: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...], Any]] = {
    "dense_relu_int32": (P.j_dense_relu, LAYER, jnp.int32),
    "dense_relu_bias_first": (j_dense_relu_bias_first, ((24,), (16, 48), (24, 48)), jnp.float32),
    "dense_relu_loop": (j_dense_relu_loop, SQUARE, jnp.float32),
    "dense_branches": (j_dense_branches, LAYER, jnp.float32),
    "scatter_add_sum": (j_scatter_add_sum, ((16, 8), (4, 8)), jnp.float32),
    "scatter_max_tanh": (j_scatter_max_tanh, ((16, 8), (4, 8)), jnp.float32),
}

# the programs that are one layer (a bias, a product, maybe an activation): bias_homes reads them
LAYERS = ("dense_relu_int32", "dense_relu_bias_first")


@functools.cache  # one compile per program: several tests read each
def xla_hlo(name: str) -> str:
    """The optimized HLO XLA makes for XLA_ONLY[name] on this host's CPU."""
    fn, shapes, dtype = XLA_ONLY[name]
    text = jax.jit(fn).lower(*(jax.ShapeDtypeStruct(s, dtype) for s in shapes)).compile().as_text()
    assert text is not None
    return text
