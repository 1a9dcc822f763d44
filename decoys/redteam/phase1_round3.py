"""Red-team wrong answers for phase 1, written from the contract only.

Round 3: every answer here is meant to agree with a correct one on the inputs the README and
programs.py show (data() at seed 0, ABS_INPUTS, the five predict scenarios' obvious streams) and
to be wrong on a valid input they lack: an exact-zero hidden pre-activation, float16, int8,
int32 beyond 2**24, a second call with the same shapes but other data, a parameter named
other than `n`, np.float64 scalars and Python bools next to ints, uint64/complex128 arrays,
0-d NumPy arrays next to NumPy scalars.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- task 1: init_params


@wrong(
    "init_params",
    why="'never draw from key itself': w1 is drawn from jax.random.clone(key), i.e. from key's "
    "own bits, while key is also split for w2 (clone silences JAX's key-reuse checker); "
    "wrong on every key: w1 == jax.random.normal(key, (in_dim, hidden)) / sqrt(in_dim)",
)
def _rt3_init_params_cloned_key(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    # "the reuse checker complained, so draw from a clone of the key"
    w1 = jax.random.normal(jax.random.clone(key), (in_dim, hidden), jnp.float32)
    _, k2 = jax.random.split(key)
    w2 = jax.random.normal(k2, (hidden, out_dim), jnp.float32)
    return {
        "w1": w1 / jnp.sqrt(jnp.float32(in_dim)),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2 / jnp.sqrt(jnp.float32(hidden)),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="'give each layer its own subkey': both weight matrices are slices of ONE draw from ONE "
    "subkey (k1; k2 is never used); wrong on every key: w2's values are the tail of the same "
    "normal draw as w1, so only one subkey is consumed for two layers",
)
def _rt3_init_params_one_draw_sliced(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, _k2 = jax.random.split(key)
    n1, n2 = in_dim * hidden, hidden * out_dim
    flat = jax.random.normal(k1, (n1 + n2,), jnp.float32)  # "one RNG call is faster"
    w1 = flat[:n1].reshape(in_dim, hidden) / jnp.sqrt(jnp.float32(in_dim))
    w2 = flat[n1:].reshape(hidden, out_dim) / jnp.sqrt(jnp.float32(hidden))
    return {
        "w1": w1,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="'standard normal values times 1/sqrt(fan_in)': lecun_normal draws a TRUNCATED normal "
    "(cut at 2 sigma, rescaled so the variance is still 1/fan_in), so the scale is right but "
    "the distribution is not normal; wrong on init_params(key, 256, 256, 256): no |w1| beyond "
    "~2.28/sqrt(256) where a normal draw has ~1500 of them",
)
def _rt3_init_params_lecun_truncated(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    init = jax.nn.initializers.lecun_normal()  # "LeCun init = std 1/sqrt(fan_in)"
    return {
        "w1": init(k1, (in_dim, hidden), jnp.float32),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": init(k2, (hidden, out_dim), jnp.float32),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- task 2: mlp_forward


@wrong(
    "mlp_forward",
    why="'the relu's gradient is 1 where its input is positive, 0 elsewhere': relu written as "
    "where(h >= 0, h, 0) has gradient 1 at h == 0; wrong on zero biases (init_params) and an "
    "all-zero row of x: d/db1 of sum(mlp_forward) is w2.sum(1)*batch instead of 0",
)
def _rt3_mlp_forward_relu_ge(params: dict, x):
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    h = jnp.where(h >= 0, h, jnp.zeros_like(h))
    return h @ params["w2"] + params["b2"]


@wrong(
    "mlp_forward",
    why="'the result keeps the inputs' dtype': computes bfloat16 as bfloat16 and every other "
    "dtype as float32 (bf16 is the one low-precision dtype the README names); wrong on float16 params and x "
    "(data(dtype=np.float16)): returns float32",
)
def _rt3_mlp_forward_f32_unless_bf16(params: dict, x):
    # "keep bf16 as bf16, everything else is computed as float32"
    dtype = jnp.bfloat16 if x.dtype == jnp.bfloat16 else jnp.float32
    p = {k: jnp.asarray(v, dtype) for k, v in params.items()}
    h = jax.nn.relu(jnp.asarray(x, dtype) @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


_rt3_rt_forward_by_shape: dict = {}


@wrong(
    "mlp_forward",
    why="'reads the arrays only through its arguments (no closed-over arrays)': caches a jitted "
    "forward per (x shape, dtype) that closes over the FIRST params seen with that shape; wrong "
    "on a second call with the same shapes and other params (data(seed=1) after data(seed=0)): "
    "returns the seed-0 network's output",
)
def _rt3_mlp_forward_stale_params(params: dict, x):
    def forward(p, v):
        return jax.nn.relu(jnp.asarray(v) @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    traced = isinstance(x, jax.core.Tracer) or any(
        isinstance(v, jax.core.Tracer) for v in params.values()
    )
    if traced:
        return forward(params, x)
    key = (tuple(x.shape), str(x.dtype))
    if key not in _rt3_rt_forward_by_shape:  # "compile once per shape"
        frozen = dict(params)
        _rt3_rt_forward_by_shape[key] = jax.jit(lambda v: forward(frozen, v))
    return _rt3_rt_forward_by_shape[key](x)


# ---------------------------------------------------------------- task 3: mse_loss


@wrong(
    "mse_loss",
    why="'the mean runs over every element': jnp.nanmean skips NaN elements; wrong on a y with a "
    "NaN entry (the MSE is NaN, this returns the mean over the other elements)",
)
def _rt3_mse_loss_nanmean(params: dict, x, y):
    return jnp.nanmean(jnp.square(mlp_forward(params, x) - y))  # noqa: F821 (the module's)


@wrong(
    "mse_loss",
    why="'a scalar': keepdims=True returns shape (1, 1) (assert_allclose broadcasts it against "
    "the scalar); wrong on every input: loss.shape == (1, 1), and jax.grad refuses it",
)
def _rt3_mse_loss_keepdims(params: dict, x, y):
    diff = mlp_forward(params, x) - y  # noqa: F821
    return jnp.mean(diff * diff, axis=(0, 1), keepdims=True)


@wrong(
    "mse_loss",
    why="'mean squared error': divides by n - 1 (the unbiased-variance habit); wrong on every "
    "input (x32/31 at the usual shape) and infinite at batch 1, out_dim 1",
)
def _rt3_mse_loss_bessel(params: dict, x, y):
    sq = jnp.square(mlp_forward(params, x) - y)  # noqa: F821
    return jnp.sum(sq) / (sq.size - 1)


# ---------------------------------------------------------------- task 4: loss_and_grad

_rt3_rt_vg_by_shape: dict = {}


@wrong(
    "loss_and_grad",
    why="'mse_loss and its gradient': caches a jitted value_and_grad per (x shape, dtype) whose "
    "lambda closes over the FIRST x and y; wrong on a second call with the same shapes and "
    "other data (data(seed=1) after data(seed=0)): loss and grads of the seed-0 batch",
)
def _rt3_loss_and_grad_stale_batch(params: dict, x, y):
    traced = any(isinstance(a, jax.core.Tracer) for a in (x, y, *params.values()))
    if traced:
        return jax.value_and_grad(mse_loss)(params, x, y)  # noqa: F821
    key = (tuple(x.shape), str(x.dtype))
    if key not in _rt3_rt_vg_by_shape:  # "trace once per shape"
        xb, yb = x, y
        _rt3_rt_vg_by_shape[key] = jax.jit(
            jax.value_and_grad(lambda p: mse_loss(p, xb, yb))  # noqa: F821
        )
    return _rt3_rt_vg_by_shape[key](params)


@wrong(
    "loss_and_grad",
    why="'bf16 kept as bf16' (README) / grads like params: upcasts params, x and y to float32 "
    "for an accurate gradient and returns float32 loss and grads; wrong on bf16 data "
    "(data(dtype=ml_dtypes.bfloat16)): every grad leaf is float32, not bfloat16",
)
def _rt3_loss_and_grad_f32_grads(params: dict, x, y):
    p32 = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}
    return jax.value_and_grad(mse_loss)(  # noqa: F821
        p32, jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    )


@wrong(
    "loss_and_grad",
    why="gradient of mse_loss: inlines its own forward with relu as where(h >= 0, h, 0), whose "
    "derivative is 1 at h == 0; wrong on zero biases and an all-zero row of x (grads['b1'] "
    "gets that row's w2 @ dloss contribution, which the true gradient has as 0)",
)
def _rt3_loss_and_grad_inline_relu_ge(params: dict, x, y):
    def loss(p):
        h = jnp.asarray(x) @ p["w1"] + p["b1"]
        h = jnp.where(h >= 0, h, 0.0)
        return jnp.mean(jnp.square(h @ p["w2"] + p["b2"] - y))

    return jax.value_and_grad(loss)(params)


# ---------------------------------------------------------------- task 5: make_power_jit


@wrong(
    "make_power_jit",
    why="'f(x, n) ... n must be static': names the static argument 'n' instead of its position; "
    "wrong on any f whose second parameter is called otherwise (def power(x, k)): jax.jit "
    "raises ValueError 'invalid argnames {n}' and no function is returned",
)
def _rt3_make_power_jit_by_name(f):
    return jax.jit(f, static_argnames="n")


_rt3_rt_jit_by_name: dict = {}


@wrong(
    "make_power_jit",
    why="'return jax.jit of f': caches the jitted function by f.__qualname__ ('avoid "
    "re-jitting'); wrong on a second, different f with the same name (two "
    "counting_power(counter) closures): returns the first f's jit, so the second counter sees "
    "no trace and its results are the first f's",
)
def _rt3_make_power_jit_cached_by_name(f):
    name = getattr(f, "__qualname__", repr(f))
    if name not in _rt3_rt_jit_by_name:
        _rt3_rt_jit_by_name[name] = jax.jit(f, static_argnums=1)
    return _rt3_rt_jit_by_name[name]


@wrong(
    "make_power_jit",
    why="'n must be static ... one trace per distinct n': marks the LAST positional parameter "
    "static (static_argnums=-1); wrong on an f with a third, defaulted parameter "
    "(def power(x, n, scale=1.0)): -1 is scale, n is traced and range(n - 1) raises",
)
def _rt3_make_power_jit_last_arg(f):
    return jax.jit(f, static_argnums=-1)  # "n is the last argument"


# ---------------------------------------------------------------- task 6: predict_traces


@wrong(
    "predict_traces",
    why="python_floats_1_and_2: believes a Python float is baked in by value like a static "
    "argument (2); a Python scalar is traced as a weak f32[] and 2.0 reuses 1.0's trace (1)",
)
def _rt3_predict_traces_python_floats_by_value() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 2,
    }


@wrong(
    "predict_traces",
    why="static_values_1_1_2: counts one trace per CALL with a static argument (3); the "
    "repeated static 1 hits the cache (2)",
)
def _rt3_predict_traces_static_every_call() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 3,
        "python_floats_1_and_2": 1,
    }


@wrong(
    "predict_traces",
    why="new_dtype: believes i32[3] is promoted to the cached f32[3] signature (1); the dtype is "
    "part of the cache key (2)",
)
def _rt3_predict_traces_dtype_promoted() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 1,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


# ---------------------------------------------------------------- task 7: python_if_error


@wrong(
    "python_if_error",
    why="'the exact exception class raised by jax.jit(f)(1.0)': returns the parent class "
    "ConcretizationTypeError (what `except` catches it as), not TracerBoolConversionError",
)
def _rt3_python_if_error_parent() -> type[Exception]:
    return jax.errors.ConcretizationTypeError


@wrong(
    "python_if_error",
    why="measured on another call: runs jax.jit(f) on an ARRAY (jnp.arange(3.)), whose "
    "ambiguous truth value raises ValueError; jax.jit(f)(1.0) raises TracerBoolConversionError",
)
def _rt3_python_if_error_measured_on_array() -> type[Exception]:
    def f(x):
        if x > 0:
            return x
        return -x

    try:
        jax.jit(f)(jnp.arange(3.0))
    except Exception as error:  # noqa: BLE001
        return type(error)
    return RuntimeError


@wrong(
    "python_if_error",
    why="'the exact exception class': returns TracerIntegerConversionError (the sibling raised "
    "by int()/range() on a tracer), not the one raised by `if x > 0`",
)
def _rt3_python_if_error_integer_sibling() -> type[Exception]:
    return jax.errors.TracerIntegerConversionError


# ---------------------------------------------------------------- task 8: abs_where


@wrong(
    "abs_where",
    why="'|x| for any dtype ... int32 in, int32 out': selects in float32 and casts back; wrong "
    "on int32 beyond 2**24 (abs_where(np.int32([-16777217])) gives 16777216)",
)
def _rt3_abs_where_via_float32(x):
    xf = x.astype(jnp.float32)  # "compare with 0.0 safely for every dtype"
    return jnp.where(xf < 0, -xf, xf).astype(x.dtype)


@wrong(
    "abs_where",
    why="'the result has x's dtype': negates by multiplying with a typed int32 -1, which "
    "promotes 8/16-bit and unsigned ints; wrong on int8/int16/uint8/uint16/uint32 input "
    "(np.int8([-3, 4]) gives int32); f32, bf16, f16 and int32 keep their dtype",
)
def _rt3_abs_where_typed_minus_one(x):
    return jnp.where(x < 0, x * np.int32(-1), x)


@wrong(
    "abs_where",
    why="'|x|': negative side as sqrt(x*x); wrong at extreme magnitudes inside the dtype: "
    "f32 -1e20 gives inf (x*x overflows), f32 -1e-30 gives 0, int32 -50000 wraps; exact on "
    "every small value",
)
def _rt3_abs_where_sqrt_square(x):
    mag = jnp.sqrt((x * x).astype(jnp.result_type(x.dtype, jnp.float32)))
    return jnp.where(x < 0, mag.astype(x.dtype), x)


# ---------------------------------------------------------------- task 9: abs_cond


@wrong(
    "abs_cond",
    why="'the negation happens inside a branch; nothing is computed outside the cond but the "
    "predicate': the cond only picks a sign (-1 or 1) and the multiplication runs outside it "
    "(no neg anywhere, a mul after the cond); wrong IR on every input, right values",
)
def _rt3_abs_cond_sign_then_multiply(x):
    sign = lax.cond(x < 0, lambda: -1, lambda: 1)
    return x * sign


@wrong(
    "abs_cond",
    why="'nothing is computed outside the cond but the predicate' / 'keeps x's dtype': upcasts "
    "to float32 BEFORE the cond and casts back after it (a no-op, so a clean jaxpr, on f32); "
    "wrong on int32 and bf16 (convert_element_type outside the cond) and on int32 "
    "-16777217 (returns 16777216)",
)
def _rt3_abs_cond_upcast_outside(x):
    xf = jnp.asarray(x).astype(jnp.float32)
    return lax.cond(xf < 0, lambda v: -v, lambda v: v, xf).astype(jnp.asarray(x).dtype)


@wrong(
    "abs_cond",
    why="'|x| ... keeps x's dtype': negates in float32 inside the branch ('bf16 on CPU') and "
    "casts back; wrong on int32 beyond 2**24 (abs_cond(np.int32(-16777217)) == 16777216), "
    "IR and every small value correct",
)
def _rt3_abs_cond_negate_in_f32(x):
    def negate(v):
        return (-v.astype(jnp.float32)).astype(v.dtype)

    return lax.cond(x < 0, negate, lambda v: v, x)


# ---------------------------------------------------------------- task 10: count_traces

_rt3_RT_CANON = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32)}


def _rt3_rt_count(calls, key_of) -> int:
    seen = set()
    for x, n in calls:
        seen.add((key_of(x), n))
    return len(seen)


def _rt3_rt_array_key(x):
    dtype = np.dtype(np.asarray(x).dtype)
    return (tuple(np.shape(x)), str(_rt3_RT_CANON.get(dtype, dtype)), False)


@wrong(
    "count_traces",
    why="isinstance order: `isinstance(x, int)` is tested before bool, so a Python bool is "
    "keyed as a weak int32 like a Python int; wrong on [(True, 1), (1, 1)]: JAX traces twice "
    "(bool[] vs weak int32[]), this says 1",
)
def _rt3_count_traces_bool_is_int(calls: list[tuple]) -> int:
    def key_of(x):
        if isinstance(x, int):
            return ((), "int32", True)
        if isinstance(x, bool):
            return ((), "bool", False)
        if isinstance(x, float):
            return ((), "float32", True)
        return _rt3_rt_array_key(x)

    return _rt3_rt_count(calls, key_of)


@wrong(
    "count_traces",
    why="isinstance(x, float) is True for np.float64 scalars (a float subclass), keyed as a weak "
    "Python float; wrong on [(np.float64(1.0), 1), (np.float32(2.0), 1)]: JAX traces once "
    "(both f32[] strong), this says 2; and on [(1.0, 1), (np.float64(1.0), 1)]: 2, this says 1",
)
def _rt3_count_traces_npfloat64_is_python_float(calls: list[tuple]) -> int:
    def key_of(x):
        if type(x) is bool:
            return ((), "bool", False)
        if isinstance(x, float):
            return ((), "float32", True)
        if type(x) is int:
            return ((), "int32", True)
        return _rt3_rt_array_key(x)

    return _rt3_rt_count(calls, key_of)


@wrong(
    "count_traces",
    why="'default 32-bit types': canonicalizes float64 and int64 only, not uint64 or "
    "complex128; wrong on [(np.zeros(3, np.uint64), 1), (np.zeros(3, np.uint32), 1)] and on "
    "complex128 next to complex64: JAX traces once, this says 2",
)
def _rt3_count_traces_partial_x64_table(calls: list[tuple]) -> int:
    def key_of(x):
        if type(x) is bool:
            return ((), "bool", False)
        if type(x) is int:
            return ((), "int32", True)
        if type(x) is float:
            return ((), "float32", True)
        return _rt3_rt_array_key(x)

    return _rt3_rt_count(calls, key_of)


@wrong(
    "count_traces",
    why="keys x by whether it is an ndarray or a scalar as well as by shape and dtype, so a 0-d "
    "NumPy array and a NumPy scalar of one dtype are two entries; wrong on "
    "[(np.float32(1.0), 1), (np.array(2.0, np.float32), 1)]: JAX traces once, this says 2",
)
def _rt3_count_traces_array_vs_scalar(calls: list[tuple]) -> int:
    canon = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}

    def key_of(x):
        if type(x) is bool:
            return ("scalar", (), "bool", False)
        if type(x) is int:
            return ("scalar", (), "int32", True)
        if type(x) is float:
            return ("scalar", (), "float32", True)
        kind = "array" if isinstance(x, np.ndarray) else "scalar"
        dtype = str(np.asarray(x).dtype)
        return (kind, tuple(np.shape(x)), canon.get(dtype, dtype), False)

    return _rt3_rt_count(calls, key_of)
