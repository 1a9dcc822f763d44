"""Phase 1: JAX basics. Edit this file only; run `uv run pytest katas/phase1 -x` until green.

Every function below is one task. Replace each `raise NotImplementedError(...)` with your code.
"""

from __future__ import annotations

import jax  # noqa: F401  (you will need these)
import jax.numpy as jnp  # noqa: F401
from jax import lax  # noqa: F401


def init_params(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    """Return a params pytree {"w1", "b1", "w2", "b2"} for a 2-layer MLP used as x @ w + b.

    Weights: normal random values scaled by 1/sqrt(fan_in), drawn from `key` (split it);
    biases: zeros. The same key must give the same params.
    """
    # TODO: build the dict with jax.random.split, jax.random.normal and jnp.zeros
    raise NotImplementedError("phase1 task 1: init_params")


def mlp_forward(params: dict, x):
    """relu(x @ w1 + b1) @ w2 + b2, as a pure function of params and x."""
    # TODO: two affine layers with a relu between them
    raise NotImplementedError("phase1 task 2: mlp_forward")


def mse_loss(params: dict, x, y):
    """Mean squared error between mlp_forward(params, x) and y (a scalar)."""
    # TODO: mean of the squared difference
    raise NotImplementedError("phase1 task 3: mse_loss")


def loss_and_grad(params: dict, x, y):
    """Return (loss, grads) where grads has the same structure as params."""
    # TODO: one JAX transformation gives both at once
    raise NotImplementedError("phase1 task 4: loss_and_grad")


def make_power_jit(f):
    """Return a jitted version of f(x, n) where n is a Python int that drives a Python loop."""
    # TODO: tell jit which argument is static
    raise NotImplementedError("phase1 task 5: make_power_jit")


def predict_traces() -> dict[str, int]:
    """Predict how many times a jitted function g is traced in each scenario.

    - "same_shape_twice": g(f32[3]) then g(f32[3]) with other values
    - "new_shape": g(f32[3]) then g(f32[4])
    - "new_dtype": g(f32[3]) then g(i32[3])
    - "static_values_1_1_2": h(x, 1), h(x, 1), h(x, 2) where n is static (static_argnums=1)
    - "python_floats_1_and_2": g(1.0) then g(2.0) with Python floats
    The tests measure each scenario with a trace counter and compare with your numbers.
    """
    # TODO: return a dict with the five keys above
    raise NotImplementedError("phase1 task 6: predict_traces")


def python_if_error() -> type[Exception]:
    """Return the exact exception class raised by jax.jit(f)(1.0) when f does `if x > 0:`."""
    # TODO: run it, read the error, return the class (from jax.errors)
    raise NotImplementedError("phase1 task 7: python_if_error")


def abs_where(x):
    """|x| for a traced x, without Python `if`, using jnp.where."""
    # TODO: a jit-safe select
    raise NotImplementedError("phase1 task 8: abs_where")


def abs_cond(x):
    """|x| for a traced scalar x, without Python `if`, using lax.cond."""
    # TODO: a jit-safe branch that runs only one side
    raise NotImplementedError("phase1 task 9: abs_cond")
