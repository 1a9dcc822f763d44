"""Round 11 red-team wrong answers for phase 1 (written from the contract only)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong


def _rt11_forward(params, x):
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    return jax.nn.relu(h) @ params["w2"] + params["b2"]


def _rt11_mse(params, x, y):
    return jnp.mean(jnp.square(_rt11_forward(params, x) - y))


# ---------------------------------------------------------------- init_params
@wrong(
    "init_params",
    why="'standard normal values times 1/sqrt(fan_in)': counts the bias as one more input and "
    "scales by 1/sqrt(fan_in + 1); init_params(key, 16, 32, 4) gives w1 std 1/sqrt(17)=0.243 "
    "instead of 0.25 and w2 std 1/sqrt(33) instead of 1/sqrt(32) (a 3% error a loose std check "
    "lets through)",
)
def _rt11_init_params_fan_in_plus_bias(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    w1 = jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim + 1)
    w2 = jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden + 1)
    return {
        "w1": w1.astype(jnp.float32),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2.astype(jnp.float32),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="'times 1/sqrt(fan_in)': confuses variance with standard deviation and multiplies by "
    "1/fan_in; right when fan_in is 1 (the size-1 shape (1, 1, 3, 1) for w1), wrong elsewhere: "
    "init_params(key, 16, 32, 4) gives w1 std 1/16 instead of 1/4 and w2 std 1/32 instead of "
    "1/sqrt(32)",
)
def _rt11_init_params_variance_not_std(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) * (1.0 / in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) * (1.0 / hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward
@wrong(
    "mlp_forward",
    why="'a JAX array of the inputs' dtype (bf16 params and x give a bf16 result, f16 an f16 one)': "
    "normalises x with jnp.asarray(x, dtype=float) ('make sure it is a float array'), and float "
    "means float32 in JAX's 32-bit mode, so data(dtype=bfloat16) or float16 gives a float32 "
    "result; right on float32 data",
)
def _rt11_mlp_forward_dtype_float(params: dict, x) -> jax.Array:
    x = jnp.asarray(x, dtype=float)
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


# ---------------------------------------------------------------- make_power_jit
@wrong(
    "make_power_jit",
    why="'jit f itself, not a function that calls f (the result's __wrapped__ is f)': jits "
    "functools.partial(f) ('so jit sees a fresh callable'); n is static and traces are one per n, "
    "but make_power_jit(power).__wrapped__ is a partial object, not power",
)
def _rt11_make_power_jit_partial(f):
    import functools

    return jax.jit(functools.partial(f), static_argnums=1)


# ---------------------------------------------------------------- mse_loss
@wrong(
    "mse_loss",
    why="'mean squared error ... over every element': divides the sum by batch and then "
    "MULTIPLIES by out_dim (operator precedence, sum / b * o instead of sum / (b * o)); right "
    "whenever out_dim is 1, off by out_dim**2 otherwise: shape (8, 16, 32, 4) gives 16x the loss, "
    "(7, 5, 9, 3) 9x; repeating the batch still leaves it unchanged",
)
def _rt11_mse_loss_precedence(params: dict, x, y) -> jax.Array:
    pred = _rt11_forward(params, x)
    sq = jnp.square(pred - y)
    return jnp.sum(sq) / y.shape[0] * y.shape[1]


@wrong(
    "mse_loss",
    why="'mean squared error': returns the ROOT mean squared error (sqrt of the mean), a scalar of "
    "the right dtype that is also unchanged when the batch is repeated; wrong whenever the MSE is "
    "not 0 or 1, e.g. data() at the usual shape",
)
def _rt11_mse_loss_rmse(params: dict, x, y) -> jax.Array:
    return jnp.sqrt(jnp.mean(jnp.square(_rt11_forward(params, x) - y)))


# ---------------------------------------------------------------- loss_and_grad
@wrong(
    "loss_and_grad",
    why="'mse_loss and its gradient': divides the gradients by the batch size once more ('average "
    "the per-example gradients'), though the mean in the loss already did; right at batch 1 "
    "(shape (1, 1, 3, 1)), grads 8x too small at the usual shape, 7x at (7, 5, 9, 3)",
)
def _rt11_loss_and_grad_batch_averaged_grads(params: dict, x, y):
    loss, grads = jax.value_and_grad(_rt11_mse)(params, x, y)
    batch = np.shape(x)[0]
    return loss, jax.tree.map(lambda g: g / batch, grads)


@wrong(
    "loss_and_grad",
    why="'its gradient with respect to params': clips every gradient entry to [-1, 1] for 'stable "
    "training'; the data's hidden layer has large values of both signs, so at the usual shape "
    "grads of w2 and b2 far exceed 1 and come back as +-1",
)
def _rt11_loss_and_grad_clipped_grads(params: dict, x, y):
    loss, grads = jax.value_and_grad(_rt11_mse)(params, x, y)
    return loss, jax.tree.map(lambda g: jnp.clip(g, -1, 1), grads)


# ---------------------------------------------------------------- abs_where
@wrong(
    "abs_where",
    why="'exact for every value of the dtype (..., infinities, NaN)': sanitises x with "
    "jnp.nan_to_num before the select, so abs_where(f32[-inf, inf, nan]) gives [3.4e38, 3.4e38, "
    "0] instead of [inf, inf, nan]; right on every finite input",
)
def _rt11_abs_where_nan_to_num(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.floating):
        x = jnp.nan_to_num(x)
    return jnp.where(x < 0, -x, x)


@wrong(
    "abs_where",
    why="'it picks x or -x per element': saturates the most negative integer (whose negation "
    "wraps) to the dtype's max, so abs_where(int8[-128]) gives 127 and abs_where(int32[-2**31]) "
    "2**31-1, neither x nor -x (both are -128 / -2**31); right on every other value",
)
def _rt11_abs_where_saturating_min_int(x) -> jax.Array:
    x = jnp.asarray(x)
    neg = -x
    if jnp.issubdtype(x.dtype, jnp.signedinteger):
        info = jnp.iinfo(x.dtype)
        neg = jnp.where(x == info.min, jnp.array(info.max, x.dtype), neg)
    return jnp.where(x < 0, neg, x)


# ---------------------------------------------------------------- abs_cond
@wrong(
    "abs_cond",
    why="'the negation happens inside a branch ... nothing is computed outside the cond but the "
    "predicate': writes the test as `-x > 0` ('take -x when it is positive'), so a neg runs "
    "outside the cond on every call; values are right (f32 -2.5 gives 2.5, NaN stays NaN) but the "
    "jaxpr of abs_cond(f32[]) has neg before the cond",
)
def _rt11_abs_cond_negated_predicate(x) -> jax.Array:
    return lax.cond(-x > 0, lambda v: -v, lambda v: v, x)


# ---------------------------------------------------------------- count_traces
def _rt11_key(x):
    if type(x) is bool:
        return ((), "bool", False)
    if type(x) is int:
        return ((), "int32", True)
    if type(x) is float:
        return ((), "float32", True)
    if type(x) is complex:
        return ((), "complex64", True)
    a = np.asarray(x)
    kind = a.dtype.kind
    if kind in "iu":
        name = "int32"  # 'JAX's 32-bit mode makes every integer an int32'
    elif a.dtype == np.float64:
        name = "float32"
    elif a.dtype == np.complex128:
        name = "complex64"
    else:
        name = a.dtype.name
    return (a.shape, name, False)


@wrong(
    "count_traces",
    why="'what does one entry of jit's cache remember about x': maps EVERY NumPy integer dtype to "
    "int32 (int8, int16, uint8, uint16, uint32, int64 alike), as if 32-bit mode widened small "
    "ints too; [(np.int8 [1,2,3], 1), (np.int32 [1,2,3], 1)] gives 1, JAX traces 2 (int8 stays "
    "int8); likewise uint8 vs int32 and uint32 vs int32",
)
def _rt11_count_traces_every_int_is_int32(calls: list[tuple]) -> int:
    return len({(_rt11_key(x), n) for x, n in calls})
