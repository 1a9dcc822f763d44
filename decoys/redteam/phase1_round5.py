"""Red-team wrong answers for phase 1, written from the contract only."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

# the dtypes a hurried learner "remembers" to cast back (f16 forgotten)
_rt5_RT1_LOW = (jnp.bfloat16,)


# ---------------------------------------------------------------- init_params
@wrong(
    "init_params",
    why="a key is used once (subkeys too): draws w1 and w2 from one subkey (the shapes differ, so "
    "the values look independent); wrong on any key, e.g. init_params(key(0), 16, 32, 4)",
)
def _rt5_init_params_one_subkey_two_draws(key, in_dim, hidden, out_dim):
    k1, _ = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / math.sqrt(in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k1, (hidden, out_dim), jnp.float32) / math.sqrt(hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="drawing from a subkey and also splitting it reuses it: w1 from k1, then w2 from a split "
    "of k1; wrong on any key, e.g. init_params(key(0), 16, 32, 4)",
)
def _rt5_init_params_draw_then_split_subkey(key, in_dim, hidden, out_dim):
    k1 = jax.random.split(key)[0]
    w1 = jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(float(in_dim))
    k2 = jax.random.split(k1)[1]
    w2 = jax.random.normal(k2, (hidden, out_dim)) / jnp.sqrt(float(hidden))
    return {"w1": w1, "b1": jnp.zeros(hidden), "w2": w2, "b2": jnp.zeros(out_dim)}


@wrong(
    "init_params",
    why="weights are standard normal times 1/sqrt(fan_in): uses He scaling sqrt(2/fan_in), std "
    "off by sqrt(2); wrong on init_params(key(0), 512, 512, 512) (std 0.0625 instead of 0.0442)",
)
def _rt5_init_params_he_scaling(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden)) * jnp.sqrt(2.0 / in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim)) * jnp.sqrt(2.0 / hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward
@wrong(
    "mlp_forward",
    why="relu's gradient must be 0 at exactly 0: (h + |h|) / 2 has gradient 0.5 there (abs' "
    "gradient at 0 is 0); values exact, wrong in jax.grad on data(zero_rows=True)",
)
def _rt5_mlp_forward_abs_relu(params, x):
    h = x @ params["w1"] + params["b1"]
    h = (h + jnp.abs(h)) / 2
    return h @ params["w2"] + params["b2"]


@wrong(
    "mlp_forward",
    why="result keeps the inputs' dtype (f16 gives f16): accumulates in f32 and casts back only "
    "for bf16; wrong on data(dtype=np.float16) (f32 result)",
)
def _rt5_mlp_forward_f32_accum_bf16_only(params, x):
    x = jnp.asarray(x)
    acc = jnp.float32
    h = jnp.dot(x, params["w1"], preferred_element_type=acc) + params["b1"]
    h = jax.nn.relu(h)
    out = jnp.dot(h, params["w2"], preferred_element_type=acc) + params["b2"]
    return out.astype(x.dtype) if x.dtype in _rt5_RT1_LOW else out


_rt5_RT1_FWD_CACHE: dict = {}


@wrong(
    "mlp_forward",
    why="nothing kept from an earlier call: caches a jitted closure over params by id(params) "
    "(and x's shape); wrong when the same dict is refilled in place with other weights, e.g. "
    "p = data()[0]; f(p, x); p['w2'] = -p['w2']; f(p, x) returns the old result",
)
def _rt5_mlp_forward_cached_by_id(params, x):
    x = jnp.asarray(x)
    key = (id(params), x.shape, str(x.dtype))
    fn = _rt5_RT1_FWD_CACHE.get(key)
    if fn is None:
        w1, b1, w2, b2 = (jnp.asarray(params[k]) for k in ("w1", "b1", "w2", "b2"))

        def fn(xx):
            return jax.nn.relu(xx @ w1 + b1) @ w2 + b2

        leaves = [x, *jax.tree.leaves(params)]
        if not any(isinstance(a, jax.core.Tracer) for a in leaves):
            _rt5_RT1_FWD_CACHE[key] = fn
    return fn(x)


# ---------------------------------------------------------------- mse_loss
@wrong(
    "mse_loss",
    why="the loss keeps the inputs' dtype (f16 an f16 one): means in f32 and casts back for "
    "bf16 only; wrong on data(dtype=np.float16) (f32 loss)",
)
def _rt5_mse_loss_f32_bf16_only(params, x, y):
    pred = _rt5_rt1_forward(params, x)
    loss = jnp.mean(jnp.square(pred.astype(jnp.float32) - jnp.asarray(y, jnp.float32)))
    return loss.astype(pred.dtype) if pred.dtype in _rt5_RT1_LOW else loss


@wrong(
    "mse_loss",
    why="mean over every element: uses the '1/2 MSE' convention (optax.l2_loss), half the "
    "loss; wrong on data() (and every input with a nonzero error)",
)
def _rt5_mse_loss_half(params, x, y):
    pred = _rt5_rt1_forward(params, x)
    return 0.5 * jnp.mean((pred - y) ** 2)


@wrong(
    "mse_loss",
    why="mean over every element: mean over the batch of each row's SUM over outputs (batch-"
    "repeat invariant, equals MSE only when out_dim == 1); wrong on data() (out 4)",
)
def _rt5_mse_loss_sum_outputs(params, x, y):
    pred = _rt5_rt1_forward(params, x)
    return jnp.mean(jnp.sum(jnp.square(pred - y), axis=-1))


def _rt5_rt1_forward(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.asarray(h @ params["w2"] + params["b2"])


def _rt5_rt1_loss(params, x, y):
    return jnp.mean(jnp.square(_rt5_rt1_forward(params, x) - y))


# ---------------------------------------------------------------- loss_and_grad
@wrong(
    "loss_and_grad",
    why="grads are mse_loss's gradient: inlines a faster forward with jnp.maximum(h, 0) (gradient "
    "0.5 at h == 0); wrong on data(zero_rows=True) (b1's grad differs, loss and w1/w2/b2 agree)",
)
def _rt5_loss_and_grad_maximum_relu(params, x, y):
    def loss(p):
        h = jnp.maximum(x @ p["w1"] + p["b1"], 0)
        return jnp.mean(jnp.square(h @ p["w2"] + p["b2"] - y))

    return jax.value_and_grad(loss)(params)


@wrong(
    "loss_and_grad",
    why="bf16 params and data give a bf16 loss: differentiates in f32 for stability and casts "
    "the grads back but not the loss; wrong on data(dtype=ml_dtypes.bfloat16) (f32 loss)",
)
def _rt5_loss_and_grad_f32_loss(params, x, y):
    up = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    loss, g = jax.value_and_grad(_rt5_rt1_loss)(
        up, jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    )
    grads = {k: g[k].astype(jnp.asarray(params[k]).dtype) for k in params}
    return loss, grads


_rt5_RT1_LG_CACHE: dict = {}


@wrong(
    "loss_and_grad",
    why="every call computes on its own arguments: caches a jitted step per (shape, dtype) "
    "closing over the first call's x and y; wrong on a second call with other data of the same "
    "shape, e.g. data(seed=0) then data(seed=1)",
)
def _rt5_loss_and_grad_cached_data(params, x, y):
    x = jnp.asarray(x)
    y = jnp.asarray(y)
    key = (x.shape, str(x.dtype), y.shape)
    step = _rt5_RT1_LG_CACHE.get(key)
    if step is None:
        xs, ys = x, y
        step = jax.value_and_grad(lambda p: _rt5_rt1_loss(p, xs, ys))
        leaves = [x, y, *jax.tree.leaves(params)]
        if not any(isinstance(a, jax.core.Tracer) for a in leaves):
            _rt5_RT1_LG_CACHE[key] = step
    return step(params)


# ---------------------------------------------------------------- make_power_jit
@wrong(
    "make_power_jit",
    why="n is the second positional parameter whatever it is called: names it via "
    "inspect.signature + static_argnames; wrong on a positional-only f, def f(x, n, /) "
    "(jit refuses the argname, so n is never static)",
)
def _rt5_make_power_jit_signature_name(f):
    import inspect

    names = list(inspect.signature(f).parameters)
    try:
        return jax.jit(f, static_argnames=names[1])
    except ValueError:
        return jax.jit(f)


@wrong(
    "make_power_jit",
    why="static n for the f given, whatever its parameter is called: static_argnames for the "
    "names seen in examples ('n', 'k', 'power') else static_argnums; f whose second parameter is "
    "named 'exponent' AND has a third defaulted parameter called n: def f(x, exponent, n=None) "
    "-> n (the unused third) static, exponent traced",
)
def _rt5_make_power_jit_known_names(f):
    import inspect

    params = list(inspect.signature(f).parameters)
    for name in ("n", "k", "power"):
        if name in params:
            return jax.jit(f, static_argnames=name)
    return jax.jit(f, static_argnums=1)


@wrong(
    "make_power_jit",
    why="one trace per distinct n the CALLS use: warms the jit up with n=2 on an f32[3] 'so the "
    "first call is fast', tracing f for an n nobody asked for; wrong on make_power_jit(power) "
    "called only with n=3 (2 traces, counter [2, 3], instead of 1)",
)
def _rt5_make_power_jit_warmed(f):
    jitted = jax.jit(f, static_argnums=1)
    jitted(np.ones(3, np.float32), 2)
    return jitted


# ---------------------------------------------------------------- predict_traces
_rt5_RT1_TRUE_TRACES = {
    "same_shape_twice": 1,
    "new_shape": 2,
    "new_dtype": 2,
    "static_values_1_1_2": 2,
    "python_floats_1_and_2": 1,
}


@wrong(
    "predict_traces",
    why="Python floats are weak-typed f32[] avals, not values: predicts a retrace for 2.0; "
    "wrong on python_floats_1_and_2 (1, not 2)",
)
def _rt5_predict_traces_python_floats_retrace():
    return dict(_rt5_RT1_TRUE_TRACES, python_floats_1_and_2=2)


@wrong(
    "predict_traces",
    why="static values are cached per distinct value: predicts one trace per call; wrong on "
    "static_values_1_1_2 (2, not 3)",
)
def _rt5_predict_traces_static_every_call():
    return dict(_rt5_RT1_TRUE_TRACES, static_values_1_1_2=3)


@wrong(
    "predict_traces",
    why="dtype is part of the cache key: assumes i32 and f32 of one shape share a trace "
    '("shape is what matters"); wrong on new_dtype (2, not 1)',
)
def _rt5_predict_traces_dtype_ignored():
    return dict(_rt5_RT1_TRUE_TRACES, new_dtype=1)


# ---------------------------------------------------------------- python_if_error
@wrong(
    "python_if_error",
    why="the EXACT class: returns the parent ConcretizationTypeError (isinstance-true for the "
    "real error); wrong on jax.jit(if_positive)(1.0), which raises TracerBoolConversionError",
)
def _rt5_python_if_error_parent():
    return jax.errors.ConcretizationTypeError


@wrong(
    "python_if_error",
    why="the exact class raised by bool() of a tracer: returns TracerIntegerConversionError "
    "(the sibling for int()/index); wrong on jax.jit(if_positive)(1.0)",
)
def _rt5_python_if_error_integer_sibling():
    return jax.errors.TracerIntegerConversionError


@wrong(
    "python_if_error",
    why="the exact class: returns TracerArrayConversionError (np.asarray of a tracer); "
    "wrong on jax.jit(if_positive)(1.0)",
)
def _rt5_python_if_error_array_sibling():
    return jax.errors.TracerArrayConversionError


# ---------------------------------------------------------------- abs_where
@wrong(
    "abs_where",
    why="exact for every value incl. int32 beyond 2**24: multiplies by a float sign chosen with "
    "where and casts back; wrong on np.array([2**24 + 1, -(2**31 - 1)], np.int32)",
)
def _rt5_abs_where_float_sign(x):
    x = jnp.asarray(x)
    return (x * jnp.where(x < 0, -1.0, 1.0)).astype(x.dtype)


@wrong(
    "abs_where",
    why="exact for the largest magnitudes and infinities: x - 2*where(x<0, x, 0) overflows for "
    "floats (ints wrap back, so int32 is exact); wrong on np.array([-np.inf, -3e38], np.float32) "
    "(gives nan, inf)",
)
def _rt5_abs_where_subtract_twice(x):
    x = jnp.asarray(x)
    return x - 2 * jnp.where(x < 0, x, jnp.zeros_like(x))


@wrong(
    "abs_where",
    why="the jaxpr must select (select_n) for any dtype: uses where for floats but lax.abs for "
    "integers ('ints have no -0.0 trap'); wrong on the int32 ABS_INPUTS (no select_n, an abs)",
)
def _rt5_abs_where_int_shortcut(x):
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.integer):
        return lax.abs(x)
    return jnp.where(x < 0, -x, x)


# ---------------------------------------------------------------- abs_cond
@wrong(
    "abs_cond",
    why="nothing computed outside the cond but the predicate: negates before the cond and "
    "passes both by closure; wrong on any scalar, e.g. np.float32(-2.5) (neg outside cond)",
)
def _rt5_abs_cond_negate_outside(x):
    neg = -x
    return lax.cond(x < 0, lambda: neg, lambda: x)


@wrong(
    "abs_cond",
    why="exact for int32 beyond 2**24: the taken branch multiplies by -1.0 and casts back "
    "inside the branch; wrong on np.int32(-(2**24 + 1)) (gives 16777216)",
)
def _rt5_abs_cond_float_multiply_in_branch(x):
    return lax.cond(x < 0, lambda v: (v * -1.0).astype(v.dtype), lambda v: v, x)


@wrong(
    "abs_cond",
    why="no conversion before or after the cond: upcasts bf16/f16 to f32 'for precision' and "
    "casts the result back (values exact); wrong on a bf16 scalar, e.g. bfloat16(-1.5) "
    "(convert_element_type outside the cond)",
)
def _rt5_abs_cond_upcast_low_precision(x):
    x = jnp.asarray(x)
    if x.dtype in (jnp.bfloat16, jnp.float16):
        y = x.astype(jnp.float32)
        return lax.cond(y < 0, lambda v: -v, lambda v: v, y).astype(x.dtype)
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


# ---------------------------------------------------------------- count_traces
def _rt5_rt1_canon(dt: np.dtype) -> np.dtype:
    return {
        np.dtype(np.float64): np.dtype(np.float32),
        np.dtype(np.int64): np.dtype(np.int32),
        np.dtype(np.uint64): np.dtype(np.uint32),
        np.dtype(np.complex128): np.dtype(np.complex64),
    }.get(np.dtype(dt), np.dtype(dt))


def _rt5_rt1_key(x):
    if type(x) is bool:
        return ((), "bool", False)
    if type(x) is int:
        return ((), "int32", True)
    if type(x) is float:
        return ((), "float32", True)
    a = np.asarray(x)
    return (a.shape, str(_rt5_rt1_canon(a.dtype)), False)


@wrong(
    "count_traces",
    why="a Python bool is bool[] (not weak), not an int: checks isinstance(x, int) first, so True "
    "counts as a weak int32; wrong on [(True, 1), (1, 1)] (2 traces, says 1)",
)
def _rt5_count_traces_bool_is_int(calls):
    seen = set()
    for x, n in calls:
        if isinstance(x, int):
            k = ((), "int32", True)
        else:
            k = _rt5_rt1_key(x)
        seen.add((k, n))
    return len(seen)


@wrong(
    "count_traces",
    why="32-bit mode only narrows 64-bit types: maps every float to float32 and every int to "
    "int32; wrong on [(np.zeros(3, np.float16), 1), (np.zeros(3, np.float32), 1)] (2, says 1)",
)
def _rt5_count_traces_all_floats_f32(calls):
    seen = set()
    for x, n in calls:
        shape, dt, weak = _rt5_rt1_key(x)
        d = np.dtype(dt)
        if d.kind == "f":
            dt = "float32"
        elif d.kind in "iu":
            dt = "int32"
        seen.add((shape, dt, weak, n))
    return len(seen)


@wrong(
    "count_traces",
    why="canonicalizes f64->f32 and i64->i32 only: complex128 stays distinct from complex64; "
    "wrong on [(np.zeros(2, np.complex128), 1), (np.zeros(2, np.complex64), 1)] (1, says 2)",
)
def _rt5_count_traces_forgets_complex(calls):
    seen = set()
    for x, n in calls:
        if isinstance(x, (bool, int, float)):
            k = _rt5_rt1_key(x)
        else:
            a = np.asarray(x)
            dt = {"float64": "float32", "int64": "int32"}.get(str(a.dtype), str(a.dtype))
            k = (a.shape, dt, False)
        seen.add((k, n))
    return len(seen)


@wrong(
    "count_traces",
    why="jit's cache remembers every entry, not just the last call: counts changes from the "
    "previous call; wrong on [(a, 1), (a, 2), (a, 1)] with a = np.zeros(3, np.float32) (2, says 3)",
)
def _rt5_count_traces_last_call_only(calls):
    count, last = 0, None
    for x, n in calls:
        k = (_rt5_rt1_key(x), n)
        if k != last:
            count += 1
        last = k
    return count


@wrong(
    "count_traces",
    why="NumPy scalars are not weak-typed: tests isinstance(x, float) for 'Python float', which "
    "np.float64 passes (it subclasses float); wrong on [(np.float64(1.0), 1), (np.float32(1.0), "
    "1)] (1 trace, says 2)",
)
def _rt5_count_traces_np_float64_weak(calls):
    seen = set()
    for x, n in calls:
        if isinstance(x, bool):
            k = ((), "bool", False)
        elif isinstance(x, int):
            k = ((), "int32", True)
        elif isinstance(x, float):
            k = ((), "float32", True)
        else:
            k = _rt5_rt1_key(x)
        seen.add((k, n))
    return len(seen)
