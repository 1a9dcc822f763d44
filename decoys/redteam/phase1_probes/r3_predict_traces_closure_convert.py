# probe: predict_traces: runs the five scenarios through jax.closure_convert (a trace that is not refused and records no event) and returns the traces it counted
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


def _traces(calls) -> int:
    traced = []
    per_n = {}
    for x, n in calls:
        if n not in per_n:

            def g(v, _n=n):
                traced.append(_n)
                return v * 2

            per_n[n] = g
        jax.closure_convert(per_n[n], x)
    return len(traced)


def predict_traces() -> dict[str, int]:
    f3, f4, i3 = np.ones(3, np.float32), np.ones(4, np.float32), np.ones(3, np.int32)
    return {
        "same_shape_twice": _traces([(f3, None), (f3 * 2, None)]),
        "new_shape": _traces([(f3, None), (f4, None)]),
        "new_dtype": _traces([(f3, None), (i3, None)]),
        "static_values_1_1_2": _traces([(f3, 1), (f3, 1), (f3, 2)]),
        "python_floats_1_and_2": _traces([(1.0, None), (2.0, None)]),
    }


def python_if_error() -> type[Exception]:
    return jax.errors.TracerBoolConversionError


def abs_where(x):
    return jnp.where(x < 0, -x, x)


def abs_cond(x):
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


_CANON = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}


def _signature(x):
    if type(x) is bool:
        return ((), "bool", False)
    if type(x) is int:
        return ((), "int32", True)
    if type(x) is float:
        return ((), "float32", True)
    dtype = str(np.asarray(x).dtype)
    return (tuple(np.shape(x)), _CANON.get(dtype, dtype), False)


def count_traces(calls: list[tuple]) -> int:
    return len({(_signature(x), n) for x, n in calls})
