"""Red team, phase 1, round 17: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong


@wrong(
    "init_params",
    why="Clause 'fan_in being the weight's number of rows': scales each weight by 1/sqrt(number of columns) (fan_out); init_params(key, 16, 32, 4) gives w1 std 1/sqrt(32) instead of 1/sqrt(16) and w2 std 1/2 instead of 1/sqrt(32).",
)
def _rt17_init_params_fan_out(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / jnp.sqrt(hidden),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(out_dim),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="Clause 'never draw from key itself; drawing from it and also splitting it reuses it': w1 is drawn from key, then key is split for w2; for any key w1 equals normal(key) (a reused key).",
)
def _rt17_init_params_reuse_key(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    w1 = jax.random.normal(key, (in_dim, hidden), jnp.float32) / jnp.sqrt(in_dim)
    _, k2 = jax.random.split(key)
    w2 = jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(hidden)
    return {
        "w1": w1,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="Clause 'the relu's gradient is ... 0 at exactly 0 too': relu spelled jnp.where(h >= 0, h, 0) has gradient 1 at h == 0; data(zero_rows=True) (b1 entries 0, zero rows of x) gives a different grad of w1/b1.",
)
def _rt17_mlp_forward_where_ge(params: dict, x) -> jax.Array:
    params = {k: jnp.asarray(v) for k, v in params.items()}
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    h = jnp.where(h >= 0, h, jnp.zeros_like(h))
    return h @ params["w2"] + params["b2"]


@wrong(
    "mlp_forward",
    why="Clause 'a JAX array of the inputs' dtype (bf16 ... gives a bf16 result)': casts x and params to float32 for 'numerical safety', so bf16/f16 data (data(dtype=bfloat16)) give a float32 result.",
)
def _rt17_mlp_forward_upcast(params: dict, x) -> jax.Array:
    p = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}
    h = jax.nn.relu(jnp.asarray(x, jnp.float32) @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


@wrong(
    "mse_loss",
    why="Clause 'The mean runs over every element (batch and outputs alike)': sums over outputs then means over batch; with out_dim 4 (SHAPES[0]) the loss is 4x the right one.",
)
def _rt17_mse_loss_sum_outputs(params: dict, x, y) -> jax.Array:
    pred = _rt17_forward(params, x)
    return jnp.mean(jnp.sum((pred - y) ** 2, axis=-1))


@wrong(
    "mse_loss",
    why="Clause 'The loss keeps the inputs' dtype': computes the mean in float32 (dtype=jnp.float32) and returns it, so bf16 data give a float32 loss.",
)
def _rt17_mse_loss_f32(params: dict, x, y) -> jax.Array:
    pred = _rt17_forward(params, x)
    return jnp.mean(jnp.square(pred - y), dtype=jnp.float32)


@wrong(
    "loss_and_grad",
    why="Clause 'no gradient entry is replaced by a number, nan_to_num or otherwise': sanitises grads with nan_to_num; a NaN in y gives 0 grads instead of NaN.",
)
def _rt17_loss_and_grad_nan_to_num(params: dict, x, y) -> tuple:
    loss, grads = jax.value_and_grad(_rt17_mse)(params, x, y)
    return loss, jax.tree_util.tree_map(jnp.nan_to_num, grads)


@wrong(
    "loss_and_grad",
    why="Clause 'the gradient JAX computes for it, NaN or inf wherever it reaches': clips each gradient to [-1e4, 1e4] for stability; an inf in y (or huge y) gives clipped finite grads instead of inf/NaN.",
)
def _rt17_loss_and_grad_clip(params: dict, x, y) -> tuple:
    loss, grads = jax.value_and_grad(_rt17_mse)(params, x, y)
    return loss, jax.tree_util.tree_map(lambda g: jnp.clip(g, -1e4, 1e4), grads)


@wrong(
    "make_power_jit",
    why="Clause 'n is f's second positional parameter, whatever it is called': static_argnames='n' fails for def power(x, k) (k traced, range(tracer) fails) and for def f(x, m, n=2) makes the wrong parameter static.",
)
def _rt17_make_power_jit_by_name(f):
    return jax.jit(f, static_argnames="n")


@wrong(
    "make_power_jit",
    why="Clause 'x is only read ... (nothing donated)': donates x (donate_argnums=0) to save memory; the lowered program marks x as donated and on a backend that honours donation the caller's x is deleted after the first call.",
)
def _rt17_make_power_jit_donate(f):
    return jax.jit(f, static_argnums=1, donate_argnums=0)


@wrong(
    "make_power_jit",
    why="Clause 'jit f itself, not a function that calls f': wraps f in a lambda, so __wrapped__ is the lambda and the lowered program is jit__lambda_ instead of jit_power.",
)
def _rt17_make_power_jit_lambda(f):
    return jax.jit(lambda x, n: f(x, n), static_argnums=1)


@wrong(
    "predict_traces",
    why="Scenario 'python_floats_1_and_2': believes Python scalars are baked in as constants, predicting 2 traces; jit keys Python floats on weak f32[] so it traces once.",
)
def _rt17_predict_traces_floats_retrace() -> dict:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 2,
    }


@wrong(
    "python_if_error",
    why="Clause 'the exact exception class': returns the parent ConcretizationTypeError; the raised class is TracerBoolConversionError.",
)
def _rt17_python_if_error_parent() -> type:
    return jax.errors.ConcretizationTypeError


@wrong(
    "abs_where",
    why="Clause 'The jaxpr selects (select_n) for every dtype (an unsigned one too)': returns unsigned x directly with no select; abs_where(np.array([1, 2], np.uint8)) has no select_n in its jaxpr.",
)
def _rt17_abs_where_unsigned_shortcut(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return x
    return jnp.where(x < 0, -x, x)


@wrong(
    "abs_where",
    why="Clause 'never clipped to the max': replaces the wrapped-around most negative int by iinfo.max; abs_where(np.array([-128], np.int8)) gives 127, np.abs gives -128.",
)
def _rt17_abs_where_clip_min(x) -> jax.Array:
    x = jnp.asarray(x)
    r = jnp.where(x < 0, -x, x)
    if jnp.issubdtype(x.dtype, jnp.signedinteger):
        r = jnp.where(r < 0, jnp.iinfo(x.dtype).max, r)
    return r


@wrong(
    "abs_where",
    why="Clause 'the select decides: it picks x or -x per element': selects a sign (+1/-1) and multiplies; values right but the select picks constants, not x or -x (e.g. ABS_INPUTS[0]).",
)
def _rt17_abs_where_sign_multiply(x) -> jax.Array:
    x = jnp.asarray(x)
    s = jnp.where(x < 0, jnp.array(-1, x.dtype), jnp.array(1, x.dtype))
    return x * s


@wrong(
    "abs_cond",
    why="Clause 'the predicate compares x in its own dtype (int32 x < 0.0 converts x to float32 first)': uses x < 0.0, so abs_cond(np.int32(-5)) converts x to float32 for the predicate.",
)
def _rt17_abs_cond_float_pred(x) -> jax.Array:
    return lax.cond(x < 0.0, lambda v: -v, lambda v: v, x)


@wrong(
    "abs_cond",
    why="Clause 'The negation happens inside a branch ... nothing is computed outside the cond but the predicate': computes -x before the cond and passes (x, -x) in; abs_cond(np.float32(-2.5)) has a neg outside the cond.",
)
def _rt17_abs_cond_neg_outside(x) -> jax.Array:
    return lax.cond(x < 0, lambda p: p[1], lambda p: p[0], (x, -x))


@wrong(
    "count_traces",
    why="Clause 'JAX runs with its default 32-bit types': keys on the raw NumPy dtype, so [(np.zeros(3), 1), (np.zeros(3, np.float32), 1)] gives 2 (float64 is canonicalised to float32: 1 trace).",
)
def _rt17_count_traces_no_canon(calls: list) -> int:
    seen = set()
    for x, n in calls:
        if isinstance(x, (bool, int, float)):
            key = ((), type(x).__name__, True, n)
        else:
            a = np.asarray(x)
            key = (a.shape, str(a.dtype), False, n)
        seen.add(key)
    return len(seen)


@wrong(
    "count_traces",
    why="Clause 'Is the Python float 1.0 the same kind of argument as np.float32(1.0)': ignores weak types; [(1.0, 1), (np.float32(1.0), 1)] gives 1, JAX traces 2.",
)
def _rt17_count_traces_no_weak(calls: list) -> int:
    seen = set()
    for x, n in calls:
        a = np.asarray(x)
        dt = a.dtype
        if dt == np.float64:
            dt = np.dtype(np.float32)
        elif dt == np.int64:
            dt = np.dtype(np.int32)
        elif dt == np.uint64:
            dt = np.dtype(np.uint32)
        elif dt == np.complex128:
            dt = np.dtype(np.complex64)
        seen.add((a.shape, str(dt), n))
    return len(seen)


def _rt17_forward(params, x):
    params = {k: jnp.asarray(v) for k, v in params.items()}
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def _rt17_mse(params, x, y):
    return jnp.mean((_rt17_forward(params, x) - y) ** 2)
