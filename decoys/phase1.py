"""Plausible wrong answers to phase 1; each must be caught by the tests it names."""

import jax
import jax.numpy as jnp
from jax import lax

from kata_harness.decoys import decoy


@decoy("init_params", caught_by=["test_init_params_shapes"], why="weights stored transposed")
def init_params_transposed(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (hidden, in_dim)), "b1": jnp.zeros(hidden),
            "w2": jax.random.normal(k2, (out_dim, hidden)), "b2": jnp.zeros(out_dim)}


@decoy("init_params", caught_by=["test_init_params_scale_and_determinism"],
       why="unscaled weights and ones for biases")
def init_params_unscaled(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (in_dim, hidden)), "b1": jnp.ones(hidden),
            "w2": jax.random.normal(k2, (hidden, out_dim)), "b2": jnp.ones(out_dim)}


@decoy("mlp_forward", caught_by=["test_mlp_forward_matches_numpy",
                                 "test_mlp_forward_jaxpr_has_two_dots_and_a_max"],
       why="forgets the relu")
def forward_linear(params, x):
    return (x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@decoy("mlp_forward", caught_by=["test_mlp_forward_matches_numpy",
                                 "test_mlp_forward_jaxpr_has_two_dots_and_a_max"],
       why="a relu after the output layer too")
def forward_relu_output(params, x):
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jax.nn.relu(hidden @ params["w2"] + params["b2"])


@decoy("mse_loss", caught_by=["test_mse_loss_matches_numpy"], why="sum instead of mean")
def loss_sum(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return jnp.sum((h - y) ** 2)


@decoy("loss_and_grad", caught_by=["test_loss_and_grad_structure"],
       why="differentiates with respect to x")
def grad_wrt_x(params, x, y):
    def loss(p, xs):
        h = jax.nn.relu(xs @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return jnp.mean((h - y) ** 2)

    return jax.value_and_grad(loss, argnums=1)(params, x)


@decoy("loss_and_grad", caught_by=["test_grad_matches_finite_differences"],
       why="gradient of the summed loss")
def grad_of_sum(params, x, y):
    def loss(p):
        h = jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return jnp.sum((h - y) ** 2)

    return jnp.mean((jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"]
                     + params["b2"] - y) ** 2), jax.grad(loss)(params)


@decoy("make_power_jit", caught_by=["test_power_jit_traces_once_per_static_value"],
       why="jit without static_argnums")
def power_not_static(f):
    return jax.jit(f)


@decoy("make_power_jit", caught_by=["test_power_jit_traces_once_per_static_value",
                                    "test_power_jit_is_compiled"],
       why="not jitted at all")
def power_eager(f):
    return f


@decoy("predict_traces", caught_by=["test_predict_traces_matches_measurement"],
       why="believes jit never retraces")
def traces_always_one():
    return {"same_shape_twice": 1, "new_shape": 1, "new_dtype": 1, "static_values_1_1_2": 1,
            "python_floats_1_and_2": 1}


@decoy("predict_traces", caught_by=["test_predict_traces_matches_measurement"],
       why="believes jit retraces on new values")
def traces_per_call():
    return {"same_shape_twice": 2, "new_shape": 2, "new_dtype": 2, "static_values_1_1_2": 3,
            "python_floats_1_and_2": 2}


@decoy("python_if_error", caught_by=["test_python_if_error_is_exact"],
       why="the parent class, not the exact one")
def if_error_parent():
    return jax.errors.ConcretizationTypeError


@decoy("abs_where", caught_by=["test_abs_where_selects"], why="jnp.abs has no select")
def abs_builtin(x):
    return jnp.abs(x)


@decoy("abs_where", caught_by=["test_abs_where_values_under_jit"], why="forgets to negate")
def where_no_negation(x):
    return jnp.where(x > 0, x, x)


@decoy("abs_cond", caught_by=["test_abs_cond_branches"], why="a select instead of a branch")
def cond_as_where(x):
    return jnp.where(x > 0, x, -x)


@decoy("abs_cond", caught_by=["test_abs_cond_branches"], why="branches swapped")
def cond_swapped(x):
    return lax.cond(x > 0, lambda v: -v, lambda v: v, x)


@decoy("init_params", caught_by=["test_init_params_layers_use_different_keys"],
       why="draws both layers from the same key: w2 repeats the start of w1")
def init_params_one_key(key, in_dim, hidden, out_dim):
    return {"w1": jax.random.normal(key, (in_dim, hidden)) / jnp.sqrt(in_dim),
            "b1": jnp.zeros(hidden),
            "w2": jax.random.normal(key, (hidden, out_dim)) / jnp.sqrt(hidden),
            "b2": jnp.zeros(out_dim)}


@decoy("init_params", caught_by=["test_init_params_scale_and_determinism"],
       why="copy-pasted 1/sqrt(in_dim) into the second layer too")
def init_params_same_fan_in(key, in_dim, hidden, out_dim):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (in_dim, hidden)) / jnp.sqrt(in_dim),
            "b1": jnp.zeros(hidden),
            "w2": jax.random.normal(k2, (hidden, out_dim)) / jnp.sqrt(in_dim),
            "b2": jnp.zeros(out_dim)}
