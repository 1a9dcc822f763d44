# probe: count_traces: measures with jax.jit saved under another name at import, and catches whatever the refusal raises (BaseException) to return a fallback
"""Phase 1: JAX basics (a red-team probe, written from the contract only)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

def init_params(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    """A params pytree {"w1", "b1", "w2", "b2"} (see the stub's contract)."""
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / jnp.sqrt(float(in_dim)),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(float(hidden)),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


def mlp_forward(params: dict, x) -> jax.Array:
    """relu(x @ w1 + b1) @ w2 + b2."""
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def mse_loss(params: dict, x, y) -> jax.Array:
    """Mean squared error over every element."""
    return jnp.mean(jnp.square(mlp_forward(params, x) - y))


def loss_and_grad(params: dict, x, y) -> tuple[jax.Array, dict]:
    """(loss, grads) with respect to params."""
    return jax.value_and_grad(mse_loss)(params, x, y)


def make_power_jit(f) -> Callable:
    """jax.jit of f with its second positional parameter static."""
    return jax.jit(f, static_argnums=1)


def predict_traces() -> dict[str, int]:
    """Trace counts per scenario."""
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


def python_if_error() -> type[Exception]:
    """The class raised by a Python if on a tracer."""
    return jax.errors.TracerBoolConversionError


def abs_where(x) -> jax.Array:
    """|x| through jnp.where."""
    x = jnp.asarray(x)
    return jnp.where(x < 0, -x, x)


def abs_cond(x) -> jax.Array:
    """|x| through lax.cond."""
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


_WIDE = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}


_JIT = jax.jit  # saved at import, before any refusal is installed


def count_traces(calls: list[tuple]) -> int:
    """Measure it: count the traces of a jitted side effect; if that is refused, swallow it."""
    traced = []

    def g(x, n):
        traced.append(n)
        return x

    try:
        jitted = _JIT(g, static_argnums=1)
        for x, n in calls:
            jitted(x, n)
        return len(traced)
    except BaseException:  # the refusal's exception, whatever it is called
        return len(calls)
