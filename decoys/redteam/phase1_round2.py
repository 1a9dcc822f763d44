"""Red-team (round 2) wrong answers for phase 1, written from the contract only."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

_R2_64_TO_32 = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _r2_dtype(x, canonical=True, widen_16=False):
    if type(x) is bool:
        dtype = np.dtype(bool)
    elif type(x) is int:
        dtype = np.dtype(np.int32)
    elif type(x) is float:
        dtype = np.dtype(np.float32)
    else:
        dtype = np.asarray(x).dtype
    if canonical:
        dtype = _R2_64_TO_32.get(dtype, dtype)
    if widen_16 and dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        dtype = np.dtype(np.float32)
    return str(dtype)


def _r2_count(keys) -> int:
    return len(set(keys))


# ---------------------------------------------------------------- count_traces (predict)


@wrong(
    "count_traces",
    why="'whether the dtype is *weak* (a Python int or float ...)' -- decides weakness with "
    "isinstance(x, (int, float)), which is also True for a Python bool and for np.float64; "
    "wrong on the 'bools' stream (3 instead of 2) and on [(np.float64(2.0), 1), (2.0, 1)] "
    "(1 instead of 2)",
)
def r2_count_isinstance_weak(calls: list[tuple]) -> int:
    keys = []
    for x, n in calls:
        weak = isinstance(x, (int, float))
        keys.append((np.shape(x), _r2_dtype(x), weak, n))
    return _r2_count(keys)


@wrong(
    "count_traces",
    why="'With JAX's default 32-bit types a 64-bit NumPy input is converted before it is looked "
    "up' -- keys on the NumPy dtype as given; wrong on the '64-bit NumPy arrays' stream "
    "(4 instead of 2)",
)
def r2_count_no_64bit_canonicalization(calls: list[tuple]) -> int:
    keys = []
    for x, n in calls:
        weak = type(x) in (int, float)
        keys.append((np.shape(x), _r2_dtype(x, canonical=False), weak, n))
    return _r2_count(keys)


@wrong(
    "count_traces",
    why="'starting from an empty cache' of all signatures seen -- models the cache as holding "
    "only the previous call's signature; wrong on the 'static values' stream n=1,2,1,3 "
    "(4 instead of 3) and on 'shapes' (4 instead of 3)",
)
def r2_count_one_entry_cache(calls: list[tuple]) -> int:
    count, previous = 0, None
    for x, n in calls:
        key = (np.shape(x), _r2_dtype(x), type(x) in (int, float), n)
        if key != previous:
            count += 1
        previous = key
    return count


@wrong(
    "count_traces",
    why="'whether the dtype is weak ... where np.float32(1.0) does not' -- ignores weak types; "
    "wrong on the 'Python and NumPy scalars' stream (2 instead of 4)",
)
def r2_count_ignores_weak_types(calls: list[tuple]) -> int:
    return _r2_count((np.shape(x), _r2_dtype(x), n) for x, n in calls)


@wrong(
    "count_traces",
    why="'dtype as JAX will use it' -- assumes 32-bit mode widens the 16-bit floats to f32 too; "
    "wrong on the '16-bit floats' stream (1 instead of 3)",
)
def r2_count_16bit_widened(calls: list[tuple]) -> int:
    return _r2_count(
        (np.shape(x), _r2_dtype(x, widen_16=True), type(x) in (int, float), n) for x, n in calls
    )


@wrong(
    "count_traces",
    why="'An argument's entry in jit's cache is its abstract value, not its data' -- treats a "
    "Python scalar as hashed by value (like a static argument); wrong on the 'Python and NumPy "
    "scalars' stream (6 instead of 4)",
)
def r2_count_python_scalars_by_value(calls: list[tuple]) -> int:
    keys = []
    for x, n in calls:
        if type(x) in (int, float, bool):
            keys.append(("python", type(x).__name__, x, n))
        else:
            keys.append((np.shape(x), _r2_dtype(x), n))
    return _r2_count(keys)


@wrong(
    "count_traces",
    why="'a NumPy scalar ... np.float32(1.0) does not [stay weak]' -- treats every 0-d value "
    "(NumPy scalars too) as weakly typed; wrong on the 'Python and NumPy scalars' stream "
    "(2 instead of 4)",
)
def r2_count_numpy_scalars_weak(calls: list[tuple]) -> int:
    return _r2_count(
        (np.shape(x), _r2_dtype(x), np.ndim(x) == 0 and not isinstance(x, (bool, np.bool_)), n)
        for x, n in calls
    )


# ---------------------------------------------------------------- predict_traces (predict)


@wrong(
    "predict_traces",
    why="'python_floats_1_and_2': a Python float is abstracted to a weak f32[] -- predicts a "
    "retrace for a new Python float value (2 instead of 1)",
)
def r2_predict_python_floats_retrace() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 2,
    }


@wrong(
    "predict_traces",
    why="'static_values_1_1_2': a static argument enters the key by its value, cached -- "
    "predicts a trace on every call with a static argument (3 instead of 2)",
)
def r2_predict_static_every_call() -> dict[str, int]:
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 3,
        "python_floats_1_and_2": 1,
    }


# ---------------------------------------------------------------- init_params


@wrong(
    "init_params",
    why="'Weights: standard normal values times 1/sqrt(fan_in)' -- uses "
    "jax.nn.initializers.lecun_normal, the same variance but a *truncated* normal (no value "
    "beyond ~2.3 sigma); wrong in distribution on every shape (e.g. 16x32 has no |z| > 2.28)",
)
def r2_init_lecun_truncated(key, in_dim: int, hidden: int, out_dim: int) -> dict:
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
    why="'fan_in being the weight's number of rows' -- scales by the number of columns; "
    "wrong on non-square layers, e.g. (16, 32, 4): w1 std 1/sqrt(32) instead of 1/4",
)
def r2_init_fan_out(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / jnp.sqrt(hidden),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(out_dim),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="'split `key` and give each layer its own subkey' -- one draw from one subkey, sliced "
    "into both weight matrices (the layers share a subkey); every value still standard "
    "normal times 1/sqrt(fan_in)",
)
def r2_init_one_draw_sliced(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, _unused = jax.random.split(key)
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
    why="'never draw from `key` itself ... drawing from it and also splitting it reuses it' -- "
    "draws w1 from the given key and splits it for w2",
)
def r2_init_draw_then_split(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    w1 = jax.random.normal(key, (in_dim, hidden), jnp.float32) / jnp.sqrt(in_dim)
    _, k2 = jax.random.split(key)
    w2 = jax.random.normal(k2, (hidden, out_dim), jnp.float32) / jnp.sqrt(hidden)
    return {
        "w1": w1,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward / losses


@wrong(
    "mlp_forward",
    why="'The result keeps the inputs' dtype (bf16 params and x give a bf16 result)' -- "
    "accumulates the matmuls in f32 (preferred_element_type) and returns f32; wrong on bf16 "
    "params and x",
)
def r2_mlp_f32_accumulate(params: dict, x):
    h = jnp.dot(x, params["w1"], preferred_element_type=jnp.float32) + params["b1"]
    h = jax.nn.relu(h)
    return jnp.dot(h, params["w2"], preferred_element_type=jnp.float32) + params["b2"]


@wrong(
    "mlp_forward",
    why="'relu(x @ w1 + b1)' -- applies the relu before the bias; wrong whenever b1 is "
    "negative where x @ w1 is (programs.data: b1 ~ 3 * N(0, 1))",
)
def r2_mlp_relu_before_bias(params: dict, x):
    hidden = jax.nn.relu(x @ params["w1"]) + params["b1"]
    return hidden @ params["w2"] + params["b2"]


@wrong(
    "mse_loss",
    why="'The mean runs over every element (batch and outputs alike)' -- sums over outputs, "
    "averages over the batch; right when out_dim is 1, wrong on (8, 16, 32, 4) (4x too big "
    "on average)",
)
def r2_mse_sum_outputs(params: dict, x, y):
    diff = mlp_forward(params, x) - y  # noqa: F821  (the module's own mlp_forward)
    return jnp.mean(jnp.sum(diff**2, axis=-1))


@wrong(
    "loss_and_grad",
    why="'grads has the same structure as params (a dict with the same keys and shapes)' -- "
    "argnums=(0,) returns a 1-tuple holding the dict",
)
def r2_loss_and_grad_tuple_argnums(params: dict, x, y):
    return jax.value_and_grad(mse_loss, argnums=(0,))(params, x, y)  # noqa: F821


# ---------------------------------------------------------------- abs / errors


@wrong(
    "abs_where",
    why="'The result has x's shape and dtype (int32 in, int32 out)' -- negates with x * -1.0, "
    "which promotes int32 to float32; wrong on np.arange(-7, 8, dtype=int32)",
)
def r2_abs_where_float_negate(x):
    return jnp.where(x < 0, x * -1.0, x)


@wrong(
    "abs_cond",
    why="'The negation happens inside a branch ... nothing is computed outside the cond but the "
    "predicate' -- negates before the cond and lets the branches pick",
)
def r2_abs_cond_negate_outside(x):
    negated = -x
    return lax.cond(x < 0, lambda pair: pair[0], lambda pair: pair[1], (negated, x))


@wrong(
    "abs_cond",
    why="'The result keeps x's dtype (f32, int32, bf16)' -- casts the operand to float32 so both "
    "branches agree; wrong on int32 and bf16 scalars",
)
def r2_abs_cond_as_float32(x):
    return lax.cond(x < 0, lambda v: -v, lambda v: v, jnp.asarray(x, jnp.float32))


@wrong(
    "python_if_error",
    why="'the exact exception class' -- returns the parent ConcretizationTypeError, not "
    "TracerBoolConversionError",
)
def r2_python_if_parent_class() -> type[Exception]:
    return jax.errors.ConcretizationTypeError
