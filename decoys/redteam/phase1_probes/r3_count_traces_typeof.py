# probe: count_traces: asks JAX for each argument's abstract value (jax.typeof: the shape, canonical dtype and weak type jit keys on) instead of working the cache key out
"""Phase 1: JAX basics. Edit this file only; run `uv run pytest katas/phase1 -x` until green.

Every function below is one task. Replace each `raise NotImplementedError(...)` with your code.
"""

from __future__ import annotations

import jax  # noqa: F401  (you will need these)
import jax.numpy as jnp  # noqa: F401
import numpy as np  # noqa: F401
from jax import lax  # noqa: F401


def init_params(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / jnp.sqrt(jnp.float32(in_dim)),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(jnp.float32(hidden)),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


def mlp_forward(params: dict, x):
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def mse_loss(params: dict, x, y):
    return jnp.mean(jnp.square(mlp_forward(params, x) - y))


def loss_and_grad(params: dict, x, y):
    return jax.value_and_grad(mse_loss)(params, x, y)


def make_power_jit(f):
    return jax.jit(f, static_argnums=1)


def predict_traces() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


def python_if_error() -> type[Exception]:
    return jax.errors.TracerBoolConversionError


def abs_where(x):
    return jnp.where(x < 0, -x, x)


def abs_cond(x):
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


def count_traces(calls: list[tuple]) -> int:
    return len({(jax.typeof(x), type(n), n) for x, n in calls})
