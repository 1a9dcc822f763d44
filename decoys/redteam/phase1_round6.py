"""Phase 1, red-team round 6: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt6_forward(params, x):
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    return jnp.matmul(jax.nn.relu(h), params["w2"]) + params["b2"]


def _rt6_mse(params, x, y):
    return jnp.mean(jnp.square(_rt6_forward(params, x) - y))


_RT6_NARROW = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _rt6_key(x, *, weak_scalars_share=False):
    """jit's cache key for x, as a learner who read the README would write it."""
    if type(x) is bool:
        return ("bool", (), False)
    if type(x) is int:
        return ("weak", (), True) if weak_scalars_share else ("int32", (), True)
    if type(x) is float:
        return ("weak", (), True) if weak_scalars_share else ("float32", (), True)
    a = np.asarray(x)
    return (str(_RT6_NARROW.get(a.dtype, a.dtype)), tuple(a.shape), False)


# ---------------------------------------------------------------- init_params


@wrong(
    "init_params",
    why="'fan_in being the weight's number of rows': copy-pasted the w1 line for w2 and scales "
    "both weights by 1/sqrt(in_dim); w2's rows are `hidden`, so wrong whenever in_dim != hidden "
    "(init_params(key, 16, 32, 4): w2's std is 0.25, must be 1/sqrt(32) ~ 0.177)",
)
def _rt6_init_params_copy_paste_fan_in(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    scale = 1.0 / np.sqrt(in_dim)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) * scale,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) * scale,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward


@wrong(
    "mlp_forward",
    why="'the relu's gradient is ... 0 at exactly 0 too': relu spelled jax.nn.leaky_relu(h, "
    "negative_slope=0.0) ('leaky relu with slope 0 is relu'): same values, but leaky_relu is "
    "where(h >= 0, h, slope*h), so its gradient at h == 0 is 1; wrong on data(zero_rows=True) "
    "(zero biases and all-zero rows of x), e.g. jax.grad of sum(mlp_forward) w.r.t. b1",
)
def _rt6_mlp_forward_leaky_relu_zero_slope(params: dict, x) -> jax.Array:
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    return jnp.matmul(jax.nn.leaky_relu(h, negative_slope=0.0), params["w2"]) + params["b2"]


# ---------------------------------------------------------------- mse_loss


@wrong(
    "mse_loss",
    why="'Mean squared error between mlp_forward(params, x) and y': jnp.var(pred - y) (the "
    "'spread of the residuals'), which subtracts the residuals' mean first; wrong whenever the "
    "mean residual is not 0, and exactly 0 on SHAPES[1] (batch 1, out 1), where MSE is not",
)
def _rt6_mse_loss_variance_of_residuals(params: dict, x, y) -> jax.Array:
    return jnp.var(_rt6_forward(params, x) - y)


# ---------------------------------------------------------------- loss_and_grad


@wrong(
    "loss_and_grad",
    why="'grads has the same structure as params (a dict with the same keys)': "
    "value_and_grad(mse_loss, argnums=(0,)) 'to be explicit'; a TUPLE argnums makes grads a "
    "1-tuple (dict,), not the dict, on every input",
)
def _rt6_loss_and_grad_argnums_tuple(params: dict, x, y) -> tuple[jax.Array, dict]:
    return jax.value_and_grad(_rt6_mse, argnums=(0,))(params, x, y)


# ---------------------------------------------------------------- predict_traces


@wrong(
    "predict_traces",
    why="'how many times g is traced': counts RE-traces (traces after the first call) instead "
    "of traces: same_shape_twice 0 (is 1), new_shape 1 (is 2), new_dtype 1 (is 2), "
    "static_values_1_1_2 1 (is 2), python_floats_1_and_2 0 (is 1)",
)
def _rt6_predict_traces_retraces_only() -> dict[str, int]:
    return {
        "same_shape_twice": 0,
        "new_shape": 1,
        "new_dtype": 1,
        "static_values_1_1_2": 1,
        "python_floats_1_and_2": 0,
    }


# ---------------------------------------------------------------- python_if_error


@wrong(
    "python_if_error",
    why="'Return the exact exception CLASS': catches the error and returns the exception "
    "INSTANCE (`except Exception as e: return e`); an instance is not the class "
    "(`answer is jax.errors.TracerBoolConversionError` is False, issubclass raises)",
)
def _rt6_python_if_error_instance() -> type[Exception]:
    def f(x):
        if x > 0:
            return x
        return -x

    try:
        jax.jit(f)(1.0)
    except Exception as e:  # noqa: BLE001
        return e  # the instance, not type(e)
    return Exception


# ---------------------------------------------------------------- abs_where


@wrong(
    "abs_where",
    why="'|x| for any dtype, exact for every value': picks the larger of x and -x with "
    "jnp.where(-x > x, -x, x) ('max without jnp.maximum'); right for signed ints and floats, "
    "but for unsigned ints -x wraps around and is larger: uint8 [1, 200] gives [255, 200] (|1| is 1)",
)
def _rt6_abs_where_larger_of_x_and_neg(x) -> jax.Array:
    neg = -x
    return jnp.where(neg > x, neg, x)


# ---------------------------------------------------------------- count_traces


@wrong(
    "count_traces",
    why="'one trace per entry of jit's cache' whose key is (abstract x, n) TOGETHER: counts the "
    "distinct x signatures and the distinct n values separately and adds them (minus the first "
    "trace); [(f32[3],1),(i32[3],2),(f32[3],2),(i32[3],1)] traces 4 times, this says 3",
)
def _rt6_count_traces_additive(calls: list[tuple]) -> int:
    if not calls:
        return 0
    xs = {_rt6_key(x) for x, _ in calls}
    ns = {n for _, n in calls}
    return len(xs) + len(ns) - 1


@wrong(
    "count_traces",
    why="'starting from an empty cache' / the 'no calls' stream: returns max(1, distinct keys) "
    "('a jitted function is traced at least once'); an empty list of calls traces 0 times, "
    "this says 1",
)
def _rt6_count_traces_at_least_one(calls: list[tuple]) -> int:
    return max(1, len({(_rt6_key(x), n) for x, n in calls}))


@wrong(
    "count_traces",
    why="'a Python int or float has no dtype of its own, so it stays weak': reads 'no dtype' as "
    "'one key for every weak scalar' and keys Python 1 and Python 1.0 alike; weak types keep "
    "their dtype (weak i32[] vs weak f32[]): [(1, 0), (1.0, 0)] traces twice, this says 1",
)
def _rt6_count_traces_weak_scalars_share_key(calls: list[tuple]) -> int:
    return len({(_rt6_key(x, weak_scalars_share=True), n) for x, n in calls})


# ---------------------------------------------------------------- round 6, second batch


@wrong(
    "init_params",
    why="'b1 (hidden,), b2 (out_dim,)': biases as ROW vectors (1, hidden) and (1, out_dim), the "
    "layout many tutorials use; x @ w + b still broadcasts, so the forward pass works, but the "
    "shapes break the contract on every input (init_params(key, 16, 32, 4)['b1'].shape == "
    "(1, 32))",
)
def _rt6_init_params_row_biases(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim),
        "b1": jnp.zeros((1, hidden), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden),
        "b2": jnp.zeros((1, out_dim), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="'bf16 params and x give a bf16 result, f16 an f16 one': relu spelled jnp.where(h > 0, "
    "h, jnp.float32(0)) (a 'typed zero to be safe'); a typed f32 scalar is not weak, so it "
    "promotes the bf16/f16 hidden layer to f32 and the result comes out f32 (right values and "
    "relu gradient, f32 inputs fine); wrong on data(dtype=bfloat16) or float16",
)
def _rt6_mlp_forward_relu_typed_zero(params: dict, x) -> jax.Array:
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    return jnp.matmul(jnp.where(h > 0, h, jnp.float32(0.0)), params["w2"]) + params["b2"]


@wrong(
    "count_traces",
    why="'a static argument enters the key by its VALUE': remembers each call by hash((x's key, "
    "n)) ('jit's cache is a hash table'), so two keys whose hashes collide count once; in "
    "CPython hash(-1) == hash(-2), so [(f32[3], -1), (f32[3], -2)] traces twice (jit compares "
    "static values by ==), this says 1",
)
def _rt6_count_traces_keyed_by_hash(calls: list[tuple]) -> int:
    return len({hash((_rt6_key(x), n)) for x, n in calls})
