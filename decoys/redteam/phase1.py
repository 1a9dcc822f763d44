"""Red-team wrong answers for phase 1, written from the contract only."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

_TO32 = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}


def _rt_aval(x, *, canonicalize=True, python_bool_weak=False, weak_types=True):
    """(shape, dtype name, weak) as a learner might compute jit's key for x."""
    if isinstance(x, bool):
        return ((), "bool", python_bool_weak and weak_types)
    if isinstance(x, int):
        return ((), "int32", weak_types)
    if isinstance(x, float):
        return ((), "float32", weak_types)
    array = np.asarray(x)
    name = array.dtype.name
    if canonicalize:
        name = _TO32.get(name, name)
    return (array.shape, name, False)


@wrong(
    "count_traces",
    why="'JAX runs with its default 32-bit types' (a 64-bit NumPy input is converted before "
    "lookup): keys NumPy arrays by their raw dtype; on [(np.ones(3),1), (f32[3],1), "
    "(np.ones(3,int64),1), (np.ones(3,int32),1)] says 4, the truth is 2",
)
def rt_count_traces_no_x64_canonicalize(calls):
    return len({(_rt_aval(x, canonicalize=False), n) for x, n in calls})


@wrong(
    "count_traces",
    why="weak types are part of the key (a Python float is not np.float32(1.0)): ignores weak; "
    "on [(1.0,2),(2.5,2),(np.float32(1.0),2),(1,2),(np.int32(1),2),(7,2)] says 2, truth 4",
)
def rt_count_traces_ignores_weak(calls):
    return len({(_rt_aval(x, weak_types=False), n) for x, n in calls})


@wrong(
    "count_traces",
    why="only Python int and float are weak, a Python bool has dtype bool like np.bool_: treats "
    "every Python scalar as weak; on [(True,1),(np.bool_(False),1),(np.ones(2,bool),1),"
    "(False,1)] says 3, truth 2",
)
def rt_count_traces_weak_python_bool(calls):
    return len({(_rt_aval(x, python_bool_weak=True), n) for x, n in calls})


@wrong(
    "count_traces",
    why="the cache remembers every signature seen, not just the last one: counts changes between "
    "consecutive calls; on shapes (3,1),(1,3),(3,),(3,1) says 4, truth 3",
)
def rt_count_traces_cache_of_one(calls):
    count, last = 0, None
    for x, n in calls:
        key = (_rt_aval(x), n)
        if key != last:
            count += 1
        last = key
    return count


@wrong(
    "count_traces",
    why="x enters the key by shape and dtype, not by rank-and-size: keys on x.size and dtype; "
    "on shapes (3,1),(1,3),(3,),(3,1) says 1, truth 3",
)
def rt_count_traces_by_size(calls):
    keys = set()
    for x, n in calls:
        shape, dtype, weak = _rt_aval(x)
        keys.add((int(np.prod(shape)), dtype, weak, n))
    return len(keys)


@wrong(
    "predict_traces",
    why="jit keys a Python float by its aval (weak f32[]), not its value: says g(1.0), g(2.0) "
    "traces twice; python_floats_1_and_2 is 1",
)
def rt_predict_traces_python_floats_by_value():
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 2,
    }


@wrong(
    "predict_traces",
    why="a static argument enters the key by its value, so h(x,1), h(x,1), h(x,2) traces twice; "
    "says 3 (a retrace per call with a static arg)",
)
def rt_predict_traces_static_every_call():
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 3,
        "python_floats_1_and_2": 1,
    }


@wrong(
    "python_if_error",
    why="'the exact exception class': returns the parent ConcretizationTypeError, not "
    "TracerBoolConversionError",
)
def rt_python_if_error_parent_class():
    return jax.errors.ConcretizationTypeError


@wrong(
    "abs_where",
    why="'the result has x's shape and dtype (int32 in, int32 out)': multiplies by -1.0, a float "
    "literal, so int32 x comes back float32; right on the f32 example",
)
def rt_abs_where_float_literal(x):
    return jnp.where(x < 0, x * -1.0, x)


@wrong(
    "abs_cond",
    why="'the negation happens inside a branch ... nothing is computed outside the cond but the "
    "predicate': negates before the cond and has the branches pick; values are right",
)
def rt_abs_cond_negate_outside(x):
    negated = -x
    return lax.cond(x < 0, lambda pair: pair[0], lambda pair: pair[1], (negated, x))


@wrong(
    "mlp_forward",
    why="'the result keeps the inputs' dtype (bf16 params and x give a bf16 result)': "
    "accumulates the matmuls in f32 (preferred_element_type) and never casts back; "
    "right on f32, f32 out for bf16",
)
def rt_mlp_forward_f32_accumulate(params, x):
    h = jnp.dot(x, params["w1"], preferred_element_type=jnp.float32) + params["b1"]
    h = jax.nn.relu(h)
    return jnp.dot(h, params["w2"], preferred_element_type=jnp.float32) + params["b2"]


@wrong(
    "mse_loss",
    why="'the mean runs over every element (batch and outputs alike)': sums over outputs, means "
    "over batch; right only when out_dim is 1, 4x too large for out 4",
)
def rt_mse_loss_sum_outputs(params, x, y):
    return jnp.mean(jnp.sum((mlp_forward(params, x) - y) ** 2, axis=-1))  # noqa: F821


@wrong(
    "init_params",
    why="'standard normal values times 1/sqrt(fan_in), fan_in being the weight's number of "
    "rows': scales by the number of columns; right only on square layers (16->16)",
)
def rt_init_params_fan_out(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(hidden),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(out_dim),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }
