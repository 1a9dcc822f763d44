"""Phase 1, red-team round 7: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

_RT7_NARROW = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _rt7_key(x):
    """jit's cache key for x (shape, canonical dtype, weak), right for every kind of x."""
    if type(x) is bool:
        return ((), "bool", False)
    if type(x) is int:
        return ((), "int32", True)
    if type(x) is float:
        return ((), "float32", True)
    a = np.asarray(x)
    return (tuple(a.shape), str(_RT7_NARROW.get(a.dtype, a.dtype)), False)


def _rt7_forward(params, x):
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    return jnp.matmul(jax.nn.relu(h), params["w2"]) + params["b2"]


def _rt7_mse(params, x, y):
    return jnp.mean(jnp.square(_rt7_forward(params, x) - y))


# ---------------------------------------------------------------- init_params


@wrong(
    "init_params",
    why="'split `key` and give each layer its own subkey': derives the layer keys with "
    "jax.random.fold_in(key, 0) and fold_in(key, 1) ('one key per layer index', as in "
    "Flax-style code) instead of jax.random.split(key); shapes, scale, normality and "
    "determinism are all right, but the key is never split (init_params(key, 16, 32, 4) draws "
    "w1 from fold_in(key, 0), not from a subkey of split(key))",
)
def _rt7_init_params_fold_in(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1 = jax.random.fold_in(key, 0)
    k2 = jax.random.fold_in(key, 1)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="'Weights: standard NORMAL values times 1/sqrt(fan_in)': draws uniform(-a, a) with "
    "a = sqrt(3/fan_in), which has exactly the right variance 1/fan_in (LeCun-uniform, "
    "torch.nn.Linear's family), so a std/scale check passes; the distribution is not normal "
    "(bounded: no |w| beyond sqrt(3/fan_in), kurtosis 1.8 instead of 3), e.g. "
    "init_params(key, 16, 32, 4)['w1'] never exceeds 0.433 in magnitude",
)
def _rt7_init_params_uniform_matched_variance(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    a1 = float(np.sqrt(3.0 / in_dim))
    a2 = float(np.sqrt(3.0 / hidden))
    return {
        "w1": jax.random.uniform(k1, (in_dim, hidden), jnp.float32, -a1, a1),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.uniform(k2, (hidden, out_dim), jnp.float32, -a2, a2),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward


@wrong(
    "mlp_forward",
    why="'the relu's gradient is ... 0 at exactly 0 too': relu spelled h * jnp.heaviside(h, 1.0) "
    "('h times the unit step'); values are right everywhere (0 * 1 == 0 at h == 0) and the dtype "
    "is kept, but the product rule gives gradient heaviside(0, 1.0) == 1 at h == 0; wrong on "
    "data(zero_rows=True) (zero b1 entries and all-zero rows of x), e.g. jax.grad of "
    "sum(mlp_forward) w.r.t. b1",
)
def _rt7_mlp_forward_heaviside_step(params: dict, x) -> jax.Array:
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    return jnp.matmul(h * jnp.heaviside(h, 1.0), params["w2"]) + params["b2"]


# ---------------------------------------------------------------- mse_loss


@wrong(
    "mse_loss",
    why="'The mean runs over every element (batch and outputs)': sum of squares divided by "
    "x.size (the wrong array's element count: batch * in_dim instead of batch * out_dim); "
    "right only when in_dim == out_dim (SHAPES[1]), 4x too small on data() (in 16, out 4), "
    "3/5 of the MSE on SHAPES[2] (in 5, out 3)",
)
def _rt7_mse_loss_divides_by_x_size(params: dict, x, y) -> jax.Array:
    err = _rt7_forward(params, x) - y
    return jnp.sum(jnp.square(err)) / jnp.size(x)


# ---------------------------------------------------------------- loss_and_grad


@wrong(
    "loss_and_grad",
    why="'(loss, grads): mse_loss and ITS gradient': loss from mse_loss, but grads from the sum "
    "of squared errors ('the sum's gradient points the same way, and is cheaper'); the loss is "
    "right, every grad is batch*out times too large (32x on data(): batch 8, out 4); right "
    "only on SHAPES[1] (batch 1, out 1)",
)
def _rt7_loss_and_grad_grad_of_sum(params: dict, x, y) -> tuple[jax.Array, dict]:
    loss = _rt7_mse(params, x, y)
    grads = jax.grad(lambda p: jnp.sum(jnp.square(_rt7_forward(p, x) - y)))(params)
    return loss, grads


# ---------------------------------------------------------------- predict_traces


@wrong(
    "predict_traces",
    why="'new_shape: g(f32[3]) then g(f32[4])': believes jit keys on rank and dtype only (shape "
    "dimensions dynamic, as torch.compile(dynamic=True) does), so f32[3] then f32[4] share a "
    "trace: says new_shape 1 (is 2); the other four are right",
)
def _rt7_predict_traces_shape_polymorphic() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 1,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


# ---------------------------------------------------------------- abs_cond


@wrong(
    "abs_cond",
    why="'nothing is computed outside the cond but the predicate (no conversion before or after "
    "it)' / README 'convert nothing before or after the cond': predicate written x < 0.0 (a "
    "float literal out of habit); for int32 x the comparison converts x to float32 before the "
    "cond (convert_element_type i32 -> f32 outside the cond in the jaxpr of abs_cond(int32(-3))); "
    "values and dtypes are all right, f32 and bf16 have no conversion",
)
def _rt7_abs_cond_float_predicate(x) -> jax.Array:
    return lax.cond(x < 0.0, lambda v: -v, lambda v: v, x)


# ---------------------------------------------------------------- count_traces


@wrong(
    "count_traces",
    why="'x is a NumPy array, a NumPy scalar or a Python scalar': treats NumPy SCALARS as "
    "hashable constants keyed by value, like the static n ('np.float32(1.0) is hashable, arrays "
    "are not'); jit keys a NumPy scalar by shape and dtype only: [(np.float32(1), 0), "
    "(np.float32(2), 0)] traces once, this says 2",
)
def _rt7_count_traces_numpy_scalars_static(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        if isinstance(x, np.generic):
            seen.add(("value", str(x.dtype), x.item(), n))
        else:
            seen.add((_rt7_key(x), n))
    return len(seen)


@wrong(
    "count_traces",
    why="'jit's cache key is the abstract value (shape ...)': normalises every x with "
    "np.atleast_1d first ('so scalars and arrays are handled alike'), so a rank-0 x and a "
    "shape-(1,) array of one dtype share a key; [(np.float32(1.0), 0), (np.ones(1, np.float32), "
    "0)] traces twice (f32[] vs f32[1]), this says 1",
)
def _rt7_count_traces_atleast_1d(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        shape, dtype, weak = _rt7_key(x)
        seen.add((tuple(np.atleast_1d(np.asarray(x)).shape), dtype, weak, n))
    return len(seen)


@wrong(
    "predict_traces",
    why="'static_values_1_1_2: h(x, 1), h(x, 1), h(x, 2) where n is static': believes static "
    "arguments are compile-time constants that never retrace (only array shapes and dtypes "
    "do), so says 1; each new static value is a new cache entry: h traces for n=1 and for "
    "n=2, 2 traces; the other four are right",
)
def _rt7_predict_traces_static_never_retraces() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 1,
        "python_floats_1_and_2": 1,
    }
