"""Plausible wrong answers to phase 1; each must be caught by the tests it names.

Accepted variants are correct answers spelled differently from the reference: every test of
their task must pass on them.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import accepted, decoy


def _forward(params, x):
    hidden = jax.nn.relu(jnp.matmul(x, params["w1"]) + params["b1"])
    return jnp.matmul(hidden, params["w2"]) + params["b2"]


def _mse(params, x, y):
    return jnp.mean((_forward(params, x) - y) ** 2)


# ---------------------------------------------------------------------------------- init_params


@decoy(
    "init_params",
    caught_by=["test_init_params_shapes_and_dtypes"],
    why="weights stored transposed (w @ x instead of x @ w)",
)
def init_params_transposed(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (hidden, in_dim)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k2, (out_dim, hidden)) / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }


@decoy(
    "init_params",
    caught_by=["test_init_params_shapes_and_dtypes"],
    why="integer zeros for the biases (jnp.zeros(n, int))",
)
def init_params_int_biases(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden, jnp.int32),
        "w2": jax.random.normal(k2, (hidden, out_dim)) / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim, jnp.int32),
    }


@decoy(
    "init_params",
    caught_by=["test_init_params_values"],
    why="copy-pasted 1/sqrt(in_dim) into the second layer too",
)
def init_params_same_fan_in(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k2, (hidden, out_dim)) / jnp.sqrt(in_dim),
        "b2": jnp.zeros(out_dim),
    }


@decoy(
    "init_params",
    caught_by=["test_init_params_values"],
    why="uniform values of the right variance, not normal ones",
)
def init_params_uniform(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    edge = jnp.sqrt(3.0)
    return {
        "w1": jax.random.uniform(k1, (in_dim, hidden), minval=-edge, maxval=edge)
        / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.uniform(k2, (hidden, out_dim), minval=-edge, maxval=edge)
        / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }


@decoy(
    "init_params",
    caught_by=["test_init_params_values"],
    why="draws w1 from the parent key and splits only for w2 (the key is used twice)",
)
def init_params_reuses_parent(key, in_dim, hidden, out_dim):
    _, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(key, (in_dim, hidden)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k2, (hidden, out_dim)) / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }


@decoy(
    "init_params",
    caught_by=["test_init_params_values"],
    why="splits, then draws both layers from the first subkey",
)
def init_params_one_subkey(key, in_dim, hidden, out_dim):
    k1, _ = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(k1, (hidden, out_dim)) / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }


@accepted("init_params", why="four subkeys, the layers take the last two, lax.rsqrt for the scale")
def init_params_four_keys(key, in_dim, hidden, out_dim):
    keys = jax.random.split(key, 4)
    return {
        "w1": jax.random.normal(keys[2], (in_dim, hidden), jnp.float32) * lax.rsqrt(in_dim * 1.0),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(keys[3], (hidden, out_dim), jnp.float32) * lax.rsqrt(hidden * 1.0),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------------------------- mlp_forward


@decoy(
    "mlp_forward",
    caught_by=[
        "test_mlp_forward_matches_numpy",
        "test_mlp_forward_is_a_pure_differentiable_function",
    ],
    why="forgets the relu",
)
def forward_linear(params, x):
    return (x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@decoy(
    "mlp_forward",
    caught_by=["test_mlp_forward_matches_numpy"],
    why="a relu after the output layer too",
)
def forward_relu_output(params, x):
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jax.nn.relu(hidden @ params["w2"] + params["b2"])


@decoy(
    "mlp_forward",
    caught_by=[
        "test_mlp_forward_matches_numpy",
        "test_mlp_forward_is_a_pure_differentiable_function",
    ],
    why="leaky relu instead of relu",
)
def forward_leaky(params, x):
    hidden = jax.nn.leaky_relu(x @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


@decoy(
    "mlp_forward",
    caught_by=["test_mlp_forward_keeps_the_dtype"],
    why="computes in float32 whatever the inputs' dtype",
)
def forward_float32(params, x):
    params = {k: v.astype(jnp.float32) for k, v in params.items()}
    return _forward(params, x.astype(jnp.float32))


@decoy(
    "mlp_forward",
    caught_by=["test_mlp_forward_is_a_pure_differentiable_function"],
    why="a straight-through relu: right values, but the gradient passes where it should not",
)
def forward_straight_through(params, x):
    pre = x @ params["w1"] + params["b1"]
    hidden = pre + lax.stop_gradient(jnp.maximum(pre, 0) - pre)
    return hidden @ params["w2"] + params["b2"]


@accepted("mlp_forward", why="relu via jnp.where(h > 0, h, 0.), matmuls as jnp.dot")
def forward_where(params, x):
    h = jnp.dot(x, params["w1"]) + params["b1"]
    return jnp.dot(jnp.where(h > 0, h, 0.0), params["w2"]) + params["b2"]


@decoy(
    "mlp_forward",
    caught_by=["test_mlp_forward_is_a_pure_differentiable_function"],
    why="relu via jnp.maximum(h, 0): its gradient at exactly 0 is 0.5 (max splits a tie), not 0",
)
def forward_maximum(params, x):
    h = jnp.maximum(jnp.dot(x, params["w1"]) + params["b1"], 0)
    return jnp.dot(h, params["w2"]) + params["b2"]


@accepted("mlp_forward", why="relu as h * (h > 0), matmuls as einsum")
def forward_mask_einsum(params, x):
    h = jnp.einsum("bi,ih->bh", x, params["w1"]) + params["b1"]
    return jnp.einsum("bh,ho->bo", h * (h > 0), params["w2"]) + params["b2"]


# ------------------------------------------------------------------------------------- mse_loss


@decoy(
    "mse_loss",
    caught_by=["test_mse_loss_matches_numpy", "test_mse_loss_does_not_grow_with_the_batch"],
    why="sum instead of mean",
)
def loss_sum(params, x, y):
    return jnp.sum((_forward(params, x) - y) ** 2)


@decoy(
    "mse_loss",
    caught_by=["test_mse_loss_matches_numpy"],
    why="sums over the outputs, then averages over the batch",
)
def loss_sum_outputs(params, x, y):
    return jnp.mean(jnp.sum((_forward(params, x) - y) ** 2, axis=-1))


@decoy("mse_loss", caught_by=["test_mse_loss_matches_numpy"], why="root mean square error")
def loss_rmse(params, x, y):
    return jnp.sqrt(jnp.mean((_forward(params, x) - y) ** 2))


@decoy(
    "mse_loss",
    caught_by=["test_mse_loss_matches_numpy", "test_mse_loss_does_not_grow_with_the_batch"],
    why="mean over the batch only: one loss per output",
)
def loss_per_output(params, x, y):
    return jnp.mean((_forward(params, x) - y) ** 2, axis=0)


@accepted("mse_loss", why="jnp.square, then sum divided by the number of elements")
def loss_square_sum(params, x, y):
    err = _forward(params, x) - y
    return jnp.sum(jnp.square(err)) / err.size


# -------------------------------------------------------------------------------- loss_and_grad


@decoy(
    "loss_and_grad",
    caught_by=["test_loss_and_grad_matches_numpy"],
    why="differentiates with respect to x",
)
def grad_wrt_x(params, x, y):
    return jax.value_and_grad(_mse, argnums=1)(params, x, y)


@decoy(
    "loss_and_grad",
    caught_by=["test_loss_and_grad_matches_numpy", "test_grad_matches_finite_differences"],
    why="gradient of the summed loss",
)
def grad_of_sum(params, x, y):
    def loss(p):
        return jnp.sum((_forward(p, x) - y) ** 2)

    return _mse(params, x, y), jax.grad(loss)(params)


@decoy(
    "loss_and_grad",
    caught_by=["test_grad_matches_finite_differences"],
    why="returns the descent direction (minus the gradient)",
)
def grad_negated(params, x, y):
    loss, grads = jax.value_and_grad(_mse)(params, x, y)
    return loss, jax.tree.map(lambda g: -g, grads)


@decoy(
    "loss_and_grad",
    caught_by=["test_loss_and_grad_matches_numpy"],
    why="(grads, loss) instead of (loss, grads)",
)
def grad_swapped(params, x, y):
    loss, grads = jax.value_and_grad(_mse)(params, x, y)
    return grads, loss


@accepted("loss_and_grad", why="jax.grad and a separate loss call instead of value_and_grad")
def grad_separately(params, x, y):
    return _mse(params, x, y), jax.grad(_mse)(params, x, y)


# ------------------------------------------------------------------------------- make_power_jit


@decoy(
    "make_power_jit",
    caught_by=["test_power_jit_traces_once_per_static_value"],
    why="jit without static_argnums",
)
def power_not_static(f):
    return jax.jit(f)


@decoy(
    "make_power_jit",
    caught_by=[
        "test_power_jit_traces_once_per_static_value",
        "test_power_jit_is_compiled_with_n_baked_in",
    ],
    why="not jitted at all",
)
def power_eager(f):
    return f


@decoy(
    "make_power_jit",
    caught_by=[
        "test_power_jit_traces_once_per_static_value",
        "test_power_jit_is_compiled_with_n_baked_in",
    ],
    why="binds n with functools.partial on every call: a new function, a new trace each time",
)
def power_partial_per_call(f):
    def power(x, n):
        return jax.jit(functools.partial(f, n=n))(x)

    return power


@decoy(
    "make_power_jit",
    caught_by=["test_power_jit_is_compiled_with_n_baked_in"],
    why="a plain wrapper around a jit made on each call: not what jax.jit returns",
)
def power_wrapped(f):
    def power(x, n):
        return jax.jit(f, static_argnums=1)(x, n)

    return power


@decoy(
    "make_power_jit",
    caught_by=[
        "test_power_jit_traces_once_per_static_value",
        "test_power_jit_is_compiled_with_n_baked_in",
    ],
    why="static_argnames='n': jit refuses an f whose second parameter is called otherwise",
)
def power_by_name(f):
    return jax.jit(f, static_argnames="n")


@accepted("make_power_jit", why="static_argnums as a tuple")
def power_tuple(f):
    return jax.jit(f, static_argnums=(1,))


# ------------------------------------------------------------------------------- predict_traces


@decoy(
    "predict_traces",
    caught_by=["test_predict_traces_matches_measurement"],
    why="believes jit never retraces",
)
def traces_always_one():
    return {
        "same_shape_twice": 1,
        "new_shape": 1,
        "new_dtype": 1,
        "static_values_1_1_2": 1,
        "python_floats_1_and_2": 1,
    }


@decoy(
    "predict_traces",
    caught_by=["test_predict_traces_matches_measurement"],
    why="believes jit retraces on new values",
)
def traces_per_call():
    return {
        "same_shape_twice": 2,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 3,
        "python_floats_1_and_2": 2,
    }


@decoy(
    "predict_traces",
    caught_by=["test_predict_traces_matches_measurement"],
    why="believes Python floats are baked in like static arguments",
)
def traces_python_floats_static():
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 2,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 2,
    }


@decoy(
    "predict_traces",
    caught_by=["test_predict_traces_matches_measurement"],
    why="believes only the shape is in the cache key, not the dtype",
)
def traces_shape_only():
    return {
        "same_shape_twice": 1,
        "new_shape": 2,
        "new_dtype": 1,
        "static_values_1_1_2": 2,
        "python_floats_1_and_2": 1,
    }


# ------------------------------------------------------------------------------ python_if_error


@decoy(
    "python_if_error",
    caught_by=["test_python_if_error_is_exact"],
    why="the parent class, not the exact one",
)
def if_error_parent():
    return jax.errors.ConcretizationTypeError


@decoy(
    "python_if_error",
    caught_by=["test_python_if_error_is_exact"],
    why="the error of range() on a tracer, not of if",
)
def if_error_integer():
    return jax.errors.TracerIntegerConversionError


@decoy("python_if_error", caught_by=["test_python_if_error_is_exact"], why="the builtin base class")
def if_error_type_error():
    return TypeError


# ------------------------------------------------------------------------------------ abs_where


@decoy("abs_where", caught_by=["test_abs_where_selects"], why="jnp.abs has no select")
def abs_builtin(x):
    return jnp.abs(x)


@decoy("abs_where", caught_by=["test_abs_where_selects"], why="jnp.maximum(x, -x): no select")
def abs_maximum(x):
    return jnp.maximum(x, -x)


@decoy(
    "abs_where",
    caught_by=["test_abs_where_values_under_jit", "test_abs_where_any_floats"],
    why="forgets to negate",
)
def where_no_negation(x):
    return jnp.where(x > 0, x, x)


@decoy(
    "abs_where",
    caught_by=["test_abs_where_values_under_jit"],
    why="negates with -1.0 * x: integer inputs come back as floats",
)
def where_float_negation(x):
    return jnp.where(x > 0, x, -1.0 * x)


@decoy(
    "abs_where",
    caught_by=["test_abs_where_values_under_jit", "test_abs_where_any_floats"],
    why="a relu: zero for negatives",
)
def where_relu(x):
    return jnp.where(x > 0, x, 0)


@accepted("abs_where", why="the condition the other way round")
def where_negative_first(x):
    return jnp.where(x < 0, -x, x)


@accepted("abs_where", why="lax.select with a >= condition")
def where_lax_select(x):
    return lax.select(x >= 0, x, -x)


# ------------------------------------------------------------------------------------- abs_cond


@decoy("abs_cond", caught_by=["test_abs_cond_runs_one_branch"], why="a select instead of a branch")
def cond_as_where(x):
    return jnp.where(x > 0, x, -x)


@decoy("abs_cond", caught_by=["test_abs_cond_values"], why="branches swapped")
def cond_swapped(x):
    return lax.cond(x > 0, lambda v: -v, lambda v: v, x)


@decoy(
    "abs_cond",
    caught_by=["test_abs_cond_runs_one_branch"],
    why="computes -x before the cond, so both sides run; the branches only pick one",
)
def cond_precomputed(x):
    negative = -x
    return lax.cond(x > 0, lambda: x, lambda: negative)


@decoy(
    "abs_cond",
    caught_by=["test_abs_cond_values"],
    why="turns the operand into float32 first: int and bf16 inputs change dtype",
)
def cond_float32(x):
    return lax.cond(x > 0, lambda v: v, lambda v: -v, x.astype(jnp.float32))


@accepted("abs_cond", why="the condition the other way round")
def cond_negative_first(x):
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


@accepted("abs_cond", why="branches that close over x instead of taking an operand")
def cond_closure(x):
    return lax.cond(x >= 0, lambda: x, lambda: -x)


@accepted("abs_cond", why="lax.switch on the sign (also a cond in the jaxpr)")
def cond_switch(x):
    return lax.switch((x > 0).astype(jnp.int32), [lambda v: -v, lambda v: v], x)


@decoy(
    "init_params",
    caught_by=["test_init_params_values"],
    why="draws w1 from a subkey, then splits that same subkey for w2 (the subkey is reused)",
)
def init_params_reuses_subkey(key, in_dim, hidden, out_dim):
    k1, _ = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.normal(jax.random.split(k1)[0], (hidden, out_dim)) / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }


@accepted("init_params", why="the `key, sub = split(key)` pattern, once per layer")
def init_params_rolling_key(key, in_dim, hidden, out_dim):
    key, sub = jax.random.split(key)
    w1 = jax.random.normal(sub, (in_dim, hidden)) / jnp.sqrt(in_dim)
    key, sub = jax.random.split(key)
    w2 = jax.random.normal(sub, (hidden, out_dim)) / jnp.sqrt(hidden)
    return {"w1": w1, "b1": jnp.zeros(hidden), "w2": w2, "b2": jnp.zeros(out_dim)}


# -------------------------------------------------------------------------------- count_traces


@decoy("count_traces", caught_by=["test_count_traces_matches_jit"], why="one trace per call")
def traces_every_call(calls):
    return len(calls)


@decoy(
    "count_traces",
    caught_by=["test_count_traces_matches_jit"],
    why="keys on shape and NumPy dtype: float64 stays float64, a Python float is a float64",
)
def traces_numpy_dtypes(calls):
    return len({(np.shape(x), np.result_type(x), n) for x, n in calls})


@decoy(
    "count_traces",
    caught_by=["test_count_traces_matches_jit"],
    why="canonicalizes 64-bit dtypes but forgets weak types (Python 1.0 vs np.float32(1.0))",
)
def traces_no_weak_types(calls):
    return len(
        {(np.shape(x), jax.dtypes.canonicalize_dtype(np.result_type(x)), n) for x, n in calls}
    )


@decoy(
    "count_traces",
    caught_by=["test_count_traces_matches_jit"],
    why="ignores the static argument n",
)
def traces_ignore_static(calls):
    keys = {
        (np.shape(x), jax.dtypes.canonicalize_dtype(np.result_type(x)), type(x)) for x, _ in calls
    }
    return len(keys)


@decoy(
    "count_traces",
    caught_by=["test_count_traces_matches_jit"],
    why="measures instead of predicting: runs the calls through jax.jit",
)
def traces_measured(calls):
    seen: list = []
    jitted = jax.jit(lambda x, n: seen.append(n) or x, static_argnums=1)
    for x, n in calls:
        jitted(x, n)
    return len(seen)


@accepted("count_traces", why="counts first sightings in a loop, canonicalizes with jax.dtypes")
def traces_first_sightings(calls):
    seen, count = set(), 0
    for x, n in calls:
        weak = isinstance(x, (int, float)) and not isinstance(x, (bool, np.generic))
        key = (np.shape(x), jax.dtypes.canonicalize_dtype(np.result_type(x)), weak, n)
        if key not in seen:
            seen.add(key)
            count += 1
    return count


@decoy(
    "init_params",
    caught_by=["test_init_params_values"],
    why="a truncated normal of the right std: no value beyond 2.3 std, where a normal has 2%",
)
def init_params_truncated(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    scale = 1.0 / 0.8796  # the std of a normal truncated to [-2, 2]
    return {
        "w1": jax.random.truncated_normal(k1, -2, 2, (in_dim, hidden)) * scale / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": jax.random.truncated_normal(k2, -2, 2, (hidden, out_dim)) * scale / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }


@decoy(
    "init_params",
    caught_by=["test_init_params_each_layer_draws_alone"],
    why="one subkey's draw sliced between the layers: w2 moves when w1 grows",
)
def init_params_one_draw_sliced(key, in_dim, hidden, out_dim):
    _, k = jax.random.split(key)
    flat = jax.random.normal(k, (in_dim * hidden + hidden * out_dim,))
    return {
        "w1": flat[: in_dim * hidden].reshape(in_dim, hidden) / jnp.sqrt(in_dim),
        "b1": jnp.zeros(hidden),
        "w2": flat[in_dim * hidden :].reshape(hidden, out_dim) / jnp.sqrt(hidden),
        "b2": jnp.zeros(out_dim),
    }
