# probe: abs_where: computes |x| with lax.abs (not the forbidden jnp.abs/sign/maximum names) and wraps it in a jnp.where so the jaxpr shows select_n; the select does no work
"""Phase 1: JAX basics. Edit this file only; run `uv run pytest katas/phase1 -x` until green.

Every function below is one task. Replace each `raise NotImplementedError(...)` with your code.
"""

from __future__ import annotations

from collections.abc import Callable

import jax  # noqa: F401  (you will need these)
import jax.numpy as jnp  # noqa: F401
import numpy as np
from jax import lax  # noqa: F401


def init_params(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    """See the stub: normal / sqrt(fan_in), one subkey per layer, zero biases."""
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / jnp.sqrt(jnp.float32(in_dim)),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(jnp.float32(hidden)),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


def mlp_forward(params: dict, x) -> jax.Array:
    """relu(x @ w1 + b1) @ w2 + b2."""
    h = jax.nn.relu(jnp.matmul(x, params["w1"]) + params["b1"])
    return jnp.matmul(h, params["w2"]) + params["b2"]


def mse_loss(params: dict, x, y) -> jax.Array:
    """Mean over every element."""
    return jnp.mean((mlp_forward(params, x) - y) ** 2)


def loss_and_grad(params: dict, x, y) -> tuple[jax.Array, dict]:
    """value_and_grad w.r.t. params."""
    return jax.value_and_grad(mse_loss)(params, x, y)


def make_power_jit(f) -> Callable:
    """n is the second positional parameter: static by position."""
    return jax.jit(f, static_argnums=1)


def _unused_abs_where(x) -> jax.Array:
    """|x| through select_n."""
    x = jnp.asarray(x)
    return jnp.where(x < 0, -x, x)


def abs_cond(x) -> jax.Array:
    """|x| through cond; negation inside the branch."""
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


def abs_where(x) -> jax.Array:
    """The select is there for the jaxpr; lax.abs does the work."""
    x = jnp.asarray(x)
    return jnp.where(x < 0, lax.abs(x), x)


def predict_traces() -> dict[str, int]:
    """Worked out on paper."""
    return {"same_shape_twice": 1, "new_shape": 2, "new_dtype": 2,
            "static_values_1_1_2": 2, "python_floats_1_and_2": 1}


def python_if_error() -> type[Exception]:
    """The exact class."""
    return jax.errors.TracerBoolConversionError


_CANON = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
          np.dtype(np.uint64): np.dtype(np.uint32), np.dtype(np.complex128): np.dtype(np.complex64)}


def _key(x):
    if isinstance(x, bool):
        return ((), "bool", False)
    if isinstance(x, int):
        return ((), "int32", True)
    if isinstance(x, float):
        return ((), "float32", True)
    a = np.asarray(x)
    return (a.shape, str(_CANON.get(a.dtype, a.dtype)), False)


def count_traces(calls: list[tuple]) -> int:
    """Distinct (abstract value of x, n)."""
    return len({(_key(x), n) for x, n in calls})
