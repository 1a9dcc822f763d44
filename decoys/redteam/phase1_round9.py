"""Phase 1, red-team round 9: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT9_NARROW = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _rt9_aval(x, *, squeeze=False, int_weak=True):
    if type(x) is bool:
        return ((), "bool", False)
    if type(x) is int:
        return ((), "int32", int_weak)
    if type(x) is float:
        return ((), "float32", True)
    a = np.asarray(x)
    shape = tuple(np.squeeze(a).shape) if squeeze else tuple(a.shape)
    return (shape, str(_RT9_NARROW.get(a.dtype, a.dtype)), False)


def _rt9_forward(params, x):
    h = jax.nn.relu(jnp.matmul(x, params["w1"]) + params["b1"])
    return jnp.matmul(h, params["w2"]) + params["b2"]


def _rt9_mse(params, x, y):
    return jnp.mean(jnp.square(_rt9_forward(params, x) - y))


@wrong(
    "init_params",
    why="'A key is used once': splits `key` twice (jax.random.split(key)[0] for w1, a second "
    "jax.random.split(key)[1] for w2), the 'split inline' habit; each subkey is drawn once but "
    "key itself is split twice, a reuse. Values look right on init_params(key(0), 16, 32, 4).",
)
def _rt9_init_params_split_inline_twice(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    w1 = jax.random.normal(jax.random.split(key)[0], (in_dim, hidden), jnp.float32)
    w2 = jax.random.normal(jax.random.split(key)[1], (hidden, out_dim), jnp.float32)
    return {
        "w1": w1 / jnp.sqrt(jnp.float32(in_dim)),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2 / jnp.sqrt(jnp.float32(hidden)),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="'the relu's gradient is ... 0 at exactly 0 too': relu spelled "
    "jnp.where(jnp.signbit(h), 0, h) ('negative means the sign bit is set'); at h == +0.0 (zero "
    "b1 entries and an all-zero row of x, programs.data(zero_rows=True)) it selects h, gradient 1.",
)
def _rt9_mlp_forward_signbit_relu(params: dict, x) -> jax.Array:
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    h = jnp.where(jnp.signbit(h), jnp.zeros_like(h), h)
    return jnp.matmul(h, params["w2"]) + params["b2"]


@wrong(
    "loss_and_grad",
    why="'(loss, grads): mse_loss and its gradient': returns the DESCENT direction "
    "(tree_map(-g)), the learner folding the update sign into the helper; every grad has the "
    "wrong sign on data() (loss right, grads = -d loss / d params).",
)
def _rt9_loss_and_grad_descent_direction(params: dict, x, y):
    loss, grads = jax.value_and_grad(_rt9_mse)(params, x, y)
    return loss, jax.tree_util.tree_map(lambda g: -g, grads)


@wrong(
    "predict_traces",
    why="'a jitted function g ... in each scenario': believes ONE g is shared across the "
    "scenarios in the listed order, so f32[3] is already cached when new_shape and new_dtype "
    "run: predicts new_shape 1 and new_dtype 1 (each scenario is measured on a fresh g: 2, 2).",
)
def _rt9_predict_traces_shared_cache() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 1,
        "new_dtype": 1,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


@wrong(
    "count_traces",
    why="'shapes apart only by axes of size 1' are different avals: keys x by np.squeeze(x).shape "
    "('size-1 axes broadcast away'), so np.ones((1,), f32), np.ones((1, 1), f32) and "
    "np.float32 arrays of shape (3,) vs (1, 3) share a key; [(np.ones(3, f32), 0), "
    "(np.ones((1, 3), f32), 0)] gives 1, jit traces 2.",
)
def _rt9_count_traces_squeezed_shape(calls: list[tuple]) -> int:
    return len({(_rt9_aval(x, squeeze=True), n) for x, n in calls})


@wrong(
    "count_traces",
    why="'a Python int or float has no dtype of its own, so it stays weak': believes only a "
    "Python FLOAT is weak (an int literal 'is int32'), so g(1, 0) and g(np.int32(1), 0) share a "
    "key: answers 1 where jit traces 2 (weak int32[] vs int32[]).",
)
def _rt9_count_traces_only_float_weak(calls: list[tuple]) -> int:
    return len({(_rt9_aval(x, int_weak=False), n) for x, n in calls})


@wrong(
    "count_traces",
    why="'a static argument enters the key by its value': the learner dedups by identity "
    "(`any(k == key and m is n ...)`, 'static args are hashed by id' folklore); equal ints "
    "outside CPython's small-int cache (n=1000 built twice, e.g. int('1000')) count twice; "
    "jit traces once.",
)
def _rt9_count_traces_static_by_identity(calls: list[tuple]) -> int:
    seen: list = []
    for x, n in calls:
        k = _rt9_aval(x)
        if not any(k == k2 and n is n2 for k2, n2 in seen):
            seen.append((k, n))
    return len(seen)
