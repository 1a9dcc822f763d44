"""Phase 1 reference: JAX basics (pure functions, jit, grad, tracing)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def init_params(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    # A params pytree is a plain dict of arrays; shapes follow x @ w (inputs on the left).
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros((hidden,)),
        "w2": jax.random.normal(k2, (hidden, out_dim)) / jnp.sqrt(hidden),
        "b2": jnp.zeros((out_dim,)),
    }


def mlp_forward(params: dict, x) -> jax.Array:
    # relu between the layers, none after the last one. jnp.matmul, not `@`: on two NumPy arrays
    # `@` is NumPy's own matmul (ml_dtypes' bf16 @ bf16 gives float32), called eagerly.
    hidden = jax.nn.relu(jnp.matmul(x, params["w1"]) + params["b1"])
    return jnp.matmul(hidden, params["w2"]) + params["b2"]


def mse_loss(params: dict, x, y) -> jax.Array:
    # Mean over every element, not the sum: the scale of the loss must not grow with the batch.
    return jnp.mean((mlp_forward(params, x) - y) ** 2)


def loss_and_grad(params: dict, x, y) -> tuple[jax.Array, dict]:
    # value_and_grad differentiates with respect to the first argument only: the params.
    return jax.value_and_grad(mse_loss)(params, x, y)


def make_power_jit(f) -> Callable:
    # n drives a Python loop, so it must be a compile-time constant: one trace per value of n.
    return jax.jit(f, static_argnums=1)


def predict_traces() -> dict[str, int]:
    # jit traces once per new (shape, dtype, static values) signature; values alone never retrace.
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


def python_if_error() -> type[Exception]:
    # `if tracer:` asks a tracer for a bool; JAX refuses with this ConcretizationTypeError subclass.
    return jax.errors.TracerBoolConversionError


def abs_where(x) -> jax.Array:
    # Both branches are computed; select_n picks per element. Fine for cheap branches.
    return jnp.where(x > 0, x, -x)


def abs_cond(x) -> jax.Array:
    # Only one branch runs; the predicate must be a scalar.
    return lax.cond(x > 0, lambda v: v, lambda v: -v, x)


_TO_32_BITS = {
    "float64": "float32",
    "int64": "int32",
    "uint64": "uint32",
    "complex128": "complex64",
}


def _cache_key(x, n) -> tuple:
    # Shape, dtype after 64 -> 32 bit canonicalization, weak type (Python int and float), n.
    dtype = np.result_type(x).name
    weak = type(x) in (int, float)
    return np.shape(x), _TO_32_BITS.get(dtype, dtype), weak, n


def count_traces(calls: list[tuple]) -> int:
    # One trace per distinct cache key; values never enter the key, static values do.
    return len({_cache_key(x, n) for x, n in calls})
