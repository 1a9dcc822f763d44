"""Red-team wrong answers for phase 1, written from the contract only.

Round 4: each answer agrees with a correct one on the obvious inputs and is wrong on a valid
input named in its `why`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- init_params


@wrong(
    "init_params",
    why="weights must be standard normal times 1/sqrt(fan_in); lecun_normal "
    "draws a TRUNCATED normal (no value beyond ~2 std, a rescaled variance), so the values and "
    "their tails differ; wrong on init_params(key, 512, 512, 512) (no |w|*sqrt(512) > 2.0)",
)
def _rt4_init_params_lecun_truncated(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    init = jax.nn.initializers.lecun_normal()
    return {
        "w1": init(k1, (in_dim, hidden), jnp.float32),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": init(k2, (hidden, out_dim), jnp.float32),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="each layer must get its own subkey; this draws both weights in ONE "
    "normal draw from one subkey and slices it (layer 2 shares layer 1's subkey), so w2 is not "
    "normal(subkey2) and the second subkey is unused; wrong on any key, e.g. "
    "init_params(key(0), 16, 32, 4)",
)
def _rt4_init_params_one_draw_sliced(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, _ = jax.random.split(key)
    flat = jax.random.normal(k1, (in_dim * hidden + hidden * out_dim,), jnp.float32)
    w1 = flat[: in_dim * hidden].reshape(in_dim, hidden) / jnp.sqrt(in_dim)
    w2 = flat[in_dim * hidden :].reshape(hidden, out_dim) / jnp.sqrt(hidden)
    return {
        "w1": w1,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="scale is 1/sqrt(fan_in), fan_in = rows; this uses 1/sqrt(fan_in + "
    "fan_out) * sqrt(2) (glorot normal), which only coincides when rows == cols; wrong on the "
    "non-square init_params(key, 16, 32, 4)",
)
def _rt4_init_params_glorot(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    s1 = np.sqrt(2.0 / (in_dim + hidden))
    s2 = np.sqrt(2.0 / (hidden + out_dim))
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) * s1,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) * s2,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward


@wrong(
    "mlp_forward",
    why="relu's gradient at exactly 0 must be 0; (|h| + h) / 2 has exact relu "
    "values but JAX's abs gradient at 0 is +1, so its gradient there is 1; wrong on zero_rows "
    "data (zero biases / all-zero rows of x) under jax.grad",
)
def _rt4_mlp_forward_abs_relu(params: dict, x) -> jax.Array:
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    h = (jnp.abs(h) + h) / 2
    return jnp.matmul(h, params["w2"]) + params["b2"]


@wrong(
    "mlp_forward",
    why="bf16 params and x must give a bf16 result, eagerly too; with the "
    "NumPy bf16 arrays data(dtype=bfloat16) returns, `x @ w1` is NumPy's matmul (ml_dtypes "
    "bf16 @ bf16 -> float32) so the result is float32; wrong on an eager call with "
    "data(dtype=ml_dtypes.bfloat16) (under jit the inputs are tracers and it is right)",
)
def _rt4_mlp_forward_numpy_matmul(params: dict, x) -> jax.Array:
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


_rt4_UPLOADED: dict = {}


@wrong(
    "mlp_forward",
    why="a pure function keeps nothing from an earlier call; caching the "
    "device copy of NumPy params by (name, shape, dtype) 'to avoid re-uploading' reuses the "
    "first call's weights; wrong on an eager call with data(0) then data(1) (same shapes)",
)
def _rt4_mlp_forward_upload_cache(params: dict, x) -> jax.Array:
    p = {}
    for name, v in params.items():
        if isinstance(v, np.ndarray):
            key = (name, v.shape, str(v.dtype))
            if key not in _rt4_UPLOADED:
                _rt4_UPLOADED[key] = jnp.asarray(v)
            p[name] = _rt4_UPLOADED[key]
        else:
            p[name] = v
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


@wrong(
    "mlp_forward",
    why="the result must keep the inputs' dtype; accumulating with "
    "preferred_element_type=float32 returns float32 for bf16/f16 params and x; wrong on "
    "data(dtype=ml_dtypes.bfloat16)",
)
def _rt4_mlp_forward_f32_accum(params: dict, x) -> jax.Array:
    h = jnp.dot(x, params["w1"], preferred_element_type=jnp.float32) + params["b1"]
    h = jax.nn.relu(h)
    return jnp.dot(h, params["w2"], preferred_element_type=jnp.float32) + params["b2"]


# ---------------------------------------------------------------- mse_loss


def _rt4_forward(params, x):
    h = jax.nn.relu(jnp.matmul(x, params["w1"]) + params["b1"])
    return jnp.matmul(h, params["w2"]) + params["b2"]


@wrong(
    "mse_loss",
    why="a NaN target must give a NaN loss; nanmean silently drops it; wrong "
    "on data() with y[0, 0] = nan",
)
def _rt4_mse_loss_nanmean(params: dict, x, y) -> jax.Array:
    return jnp.nanmean((_rt4_forward(params, x) - y) ** 2)


@wrong(
    "mse_loss",
    why="bf16/f16 must be kept as they are; mean(..., dtype=float32) returns an "
    "f32 loss for bf16 inputs; wrong on data(dtype=ml_dtypes.bfloat16)",
)
def _rt4_mse_loss_f32_mean(params: dict, x, y) -> jax.Array:
    return jnp.mean((_rt4_forward(params, x) - y) ** 2, dtype=jnp.float32)


@wrong(
    "mse_loss",
    why="the mean runs over every element; sum / batch is the mean over the batch "
    "of the per-row SUM over outputs, equal only when out_dim == 1; wrong on shape (8,16,32,4)",
)
def _rt4_mse_loss_sum_over_batch(params: dict, x, y) -> jax.Array:
    d = _rt4_forward(params, x) - y
    return jnp.sum(d * d) / d.shape[0]


# ---------------------------------------------------------------- loss_and_grad

_rt4_LG_CACHE: dict = {}


@wrong(
    "loss_and_grad",
    why="every call computes on its own arguments; this caches a jitted "
    "closure over the FIRST x, y per shape/dtype, so a second call with new data of the same "
    "shape returns the old data's loss; wrong on two calls with data(0) then data(1)",
)
def _rt4_loss_and_grad_closure_cache(params: dict, x, y):
    k = (np.shape(x), str(jnp.asarray(x).dtype))
    if k not in _rt4_LG_CACHE:
        xx, yy = x, y
        _rt4_LG_CACHE[k] = jax.jit(
            jax.value_and_grad(lambda p: jnp.mean((_rt4_forward(p, xx) - yy) ** 2))
        )
    return _rt4_LG_CACHE[k](params)


@wrong(
    "loss_and_grad",
    why="grads must keep params' dtypes (bf16 params give bf16 grads); this "
    "differentiates an f32 upcast for 'stability' and casts only the loss back, so grads are "
    "f32; wrong on data(dtype=ml_dtypes.bfloat16)",
)
def _rt4_loss_and_grad_f32_grads(params: dict, x, y):
    dt = jnp.asarray(x).dtype
    p32 = {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}
    x32 = jnp.asarray(x, jnp.float32)
    y32 = jnp.asarray(y, jnp.float32)
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((_rt4_forward(p, x32) - y32) ** 2))(p32)
    return loss.astype(dt), grads


@wrong(
    "loss_and_grad",
    why="the gradient must be mse_loss's; the inlined forward uses "
    "jnp.maximum(h, 0), whose gradient at h == 0 is 0.5 not 0; wrong on zero_rows data "
    "(zero biases and all-zero rows of x)",
)
def _rt4_loss_and_grad_maximum(params: dict, x, y):
    def loss(p):
        h = jnp.maximum(x @ p["w1"] + p["b1"], 0)
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    return jax.value_and_grad(loss)(params)


# ---------------------------------------------------------------- make_power_jit


@wrong(
    "make_power_jit",
    why="n is f's SECOND parameter; taking the LAST parameter's name makes "
    "the third, defaulted parameter static and leaves n traced (range() of a tracer); wrong "
    "on counting_power_renamed (power(x, k, offset=None))",
)
def _rt4_make_power_jit_last_name(f):
    names = f.__code__.co_varnames[: f.__code__.co_argcount]
    return jax.jit(f, static_argnames=names[-1])


@wrong(
    "make_power_jit",
    why="must return what jax.jit returns, with .lower and .trace, and "
    "n baked in per jit; a per-n dict of jits behind a plain Python function has no .lower/"
    ".trace; wrong on make_power_jit(counting_power(c)).lower(x, 3)",
)
def _rt4_make_power_jit_per_n(f):
    jits: dict = {}

    def call(x, n):
        if n not in jits:
            jits[n] = jax.jit(lambda v, _n=n: f(v, _n))
        return jits[n](x)

    return call


# ---------------------------------------------------------------- predict_traces


@wrong(
    "predict_traces",
    why="jit keys on abstract values; Python floats 1.0 and 2.0 are both "
    "weak f32[] so one trace, not two",
)
def _rt4_predict_traces_values_keyed() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 2,
    }


@wrong(
    "predict_traces",
    why="a static argument enters the key by its VALUE and the cache "
    "remembers n=1; h(x,1), h(x,1), h(x,2) is two traces, not three",
)
def _rt4_predict_traces_static_every_call() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 3,
        "python_floats_1_and_2": 1,
    }


@wrong("predict_traces", why="dtype is part of the key: i32[3] after f32[3] retraces (2, not 1)")
def _rt4_predict_traces_dtype_ignored() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 1,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


# ---------------------------------------------------------------- python_if_error


@wrong(
    "python_if_error",
    why="the EXACT class is TracerBoolConversionError; its parent "
    "ConcretizationTypeError also catches it but is not that class",
)
def _rt4_python_if_error_parent() -> type[Exception]:
    return jax.errors.ConcretizationTypeError


@wrong(
    "python_if_error",
    why="the sibling TracerIntegerConversionError is raised by int()/index "
    "of a tracer, not by `if x > 0`",
)
def _rt4_python_if_error_sibling() -> type[Exception]:
    return jax.errors.TracerIntegerConversionError


class _rt4_TracerBoolConversionError(jax.errors.TracerBoolConversionError):
    """A same-named subclass: issubclass(it, the real one) holds, but it is not the class raised."""


@wrong(
    "python_if_error",
    why="must return the exact class raised; a same-named SUBCLASS passes "
    "issubclass(answer, expected) and has the same __name__, but pytest.raises(answer) does not "
    "catch the real error and `answer is expected` is False",
)
def _rt4_python_if_error_subclass() -> type[Exception]:
    return _rt4_TracerBoolConversionError


# ---------------------------------------------------------------- abs_where


@wrong(
    "abs_where",
    why="result must have x's dtype; widening to promote_types(dtype, int32) "
    "to dodge int-min overflow turns int8/int16/uint8 into int32 (f32/int32/bf16 unchanged); "
    "wrong on np.array([-3, 4], np.int8)",
)
def _rt4_abs_where_widened(x) -> jax.Array:
    x = jnp.asarray(x)
    w = x.astype(jnp.promote_types(x.dtype, jnp.int32))
    return jnp.where(w < 0, -w, w)


@wrong(
    "abs_where",
    why="exact for every value incl. largest magnitudes and infinities; x - 2*x "
    "overflows (2*max = inf, inf - inf = nan); wrong on float32 [-3.4e38] and [-inf] "
    "(ints wrap to the right answer)",
)
def _rt4_abs_where_minus_twice(x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.where(x < 0, x - 2 * x, x)


@wrong(
    "abs_where",
    why="exact for every value: int32 beyond 2**24 must stay exact; a round trip "
    "through the float type of weak-float promotion (int32 -> f32) loses low bits; wrong on "
    "np.array([-(2**24 + 1)], np.int32)",
)
def _rt4_abs_where_via_result_type(x) -> jax.Array:
    x = jnp.asarray(x)
    f = x.astype(jnp.result_type(x, 1.0))
    return jnp.where(f < 0, -f, f).astype(x.dtype)


# ---------------------------------------------------------------- abs_cond


@wrong(
    "abs_cond",
    why="nothing but the predicate may be computed outside the cond (no "
    "conversion before or after); upcasting bf16 to f32 around the cond gives exact values "
    "but converts before and after it; wrong (IR) on a bf16 scalar",
)
def _rt4_abs_cond_bf16_upcast(x) -> jax.Array:
    x = jnp.asarray(x)
    if x.dtype == jnp.bfloat16:
        v = x.astype(jnp.float32)
        return lax.cond(v < 0, lambda a: -a, lambda a: a, v).astype(x.dtype)
    return lax.cond(x < 0, lambda a: -a, lambda a: a, x)


@wrong(
    "abs_cond",
    why="the negation must happen inside a branch so only the taken branch runs; "
    "passing (-x, x) as operands computes the negation before the cond; wrong (IR) on f32 "
    "scalar -2.5",
)
def _rt4_abs_cond_both_operands(x) -> jax.Array:
    return lax.cond(x < 0, lambda n, p: n, lambda n, p: p, -x, x)


@wrong(
    "abs_cond",
    why="exact for int32 beyond 2**24 and no conversion around the cond; "
    "result_type(x, 1.0) sends int32 through f32 (bf16/f32 untouched); wrong on "
    "np.int32(-(2**24 + 1))",
)
def _rt4_abs_cond_float_operand(x) -> jax.Array:
    x = jnp.asarray(x)
    f = x.astype(jnp.result_type(x, 1.0))
    return lax.cond(f < 0, lambda a: -a, lambda a: a, f).astype(x.dtype)


# ---------------------------------------------------------------- count_traces


def _rt4_canon(dt: np.dtype) -> np.dtype:
    dt = np.dtype(dt)
    table = {
        np.dtype(np.float64): np.float32,
        np.dtype(np.int64): np.int32,
        np.dtype(np.uint64): np.uint32,
        np.dtype(np.complex128): np.complex64,
    }
    return np.dtype(table.get(dt, dt))


def _rt4_aval(x, weak_bool=False, canon=True, weak=True):
    if isinstance(x, bool):
        return ((), np.dtype(bool), weak_bool)
    if isinstance(x, int):
        return ((), np.dtype(np.int32), weak)
    if isinstance(x, float):
        return ((), np.dtype(np.float32), weak)
    a = np.asarray(x)
    dt = _rt4_canon(a.dtype) if canon else a.dtype
    return (a.shape, dt, False)


@wrong(
    "count_traces",
    why="a Python scalar is weakly typed and keys apart from a NumPy scalar "
    "of its dtype; ignoring weakness counts [(1.0, 2), (np.float32(1.0), 2)] as 1 trace "
    "instead of 2",
)
def _rt4_count_traces_no_weak(calls: list[tuple]) -> int:
    return len({(_rt4_aval(x, weak=False), n) for x, n in calls})


@wrong(
    "count_traces",
    why="JAX runs with 32-bit types: a float64/int64 NumPy input is converted "
    "before lookup; not canonicalizing counts [(np.ones(3), 1), (np.ones(3, np.float32), 1)] "
    "as 2 instead of 1",
)
def _rt4_count_traces_no_canon(calls: list[tuple]) -> int:
    return len({(_rt4_aval(x, canon=False), n) for x, n in calls})


@wrong(
    "count_traces",
    why="the cache keeps every entry; counting changes from the PREVIOUS call "
    "counts A, B, A as 3 instead of 2; wrong on [(f32[3],1), (f32[4],1), (f32[3],1)]",
)
def _rt4_count_traces_consecutive(calls: list[tuple]) -> int:
    count, last = 0, None
    for x, n in calls:
        k = (_rt4_aval(x), n)
        if k != last:
            count += 1
        last = k
    return count


@wrong(
    "count_traces",
    why="a Python bool is NOT weakly typed (bool[] like np.bool_); treating it "
    "as weak like int/float counts [(True, 1), (np.bool_(False), 1)] as 2 instead of 1",
)
def _rt4_count_traces_weak_bool(calls: list[tuple]) -> int:
    return len({(_rt4_aval(x, weak_bool=True), n) for x, n in calls})
