"""Plausible wrong answers to phase 10; each must be caught by the tests it names."""


import re

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import decoy
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo


def _forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _example_loss(params, x, y):
    return jnp.mean((_forward(params, x) - y) ** 2)


@decoy("per_example_losses", caught_by=["test_per_example_values"],
       why="the batch mean broadcast to every example")
def losses_batch_mean(params, x, y):
    return jnp.full(x.shape[0], jnp.mean((_forward(params, x) - y) ** 2))


@decoy("per_example_losses", caught_by=["test_per_example_is_one_batched_program"],
       why="a Python loop over the examples: right values, one matmul pair per example")
def losses_python_loop(params, x, y):
    return jnp.stack([_example_loss(params, x[i], y[i]) for i in range(x.shape[0])])


def _loss(params, x, y):
    return jnp.mean(jax.vmap(_example_loss, in_axes=(None, 0, 0))(params, x, y))


@decoy("make_train_step", caught_by=["test_step_donates_params_and_state"],
       why="jits without donation: every step allocates new params and state")
def step_without_donation(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step)


@decoy("make_train_step", caught_by=["test_loss_decreases", "test_sgd_step_is_a_gradient_step"],
       why="subtracts the updates: optax updates already point downhill")
def step_uphill(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - u, params, updates)
        return params, opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@decoy("make_train_step", caught_by=["test_loss_decreases"],
       why="returns the loss after the update, not the loss of the params passed in")
def step_loss_after(optimizer):
    def step(params, opt_state, x, y):
        grads = jax.grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, _loss(params, x, y)

    return jax.jit(step, donate_argnums=(0, 1))


@decoy("fusion_count", caught_by=["test_fusion_count_matches_module"],
       why="counts only kLoop fusions, missing the kCustom matmul fusions")
def fusions_kloop_only(compiled):
    return sum(i.attribute("kind") == "kLoop" for c in parse_hlo(compiled.as_text()) for i in c
               if i.opcode == "fusion")


@decoy("fusion_count", caught_by=["test_fusion_count_matches_module"],
       why="counts the word in the text: fusion names and fused computations repeat it")
def fusions_by_substring(compiled):
    return compiled.as_text().count("fusion")


@decoy("aliased_parameters", caught_by=["test_donated_buffers_are_aliased"],
       why="every ENTRY parameter, donated or not")
def aliased_all_parameters(compiled):
    module = parse_hlo(compiled.as_text())
    return [int(i.payload) for i in module.entry if i.opcode == "parameter"]


@decoy("aliased_parameters", caught_by=["test_donated_buffers_are_aliased"],
       why="answers with donate_argnums positions, not the flattened HLO parameter numbers")
def aliased_argnums(compiled):
    return [0, 1] if "input_output_alias" in parse_hlo(compiled.as_text()).attributes else []


@decoy("flops_per_step", caught_by=["test_flops_match_cost_model"],
       why="reads bytes accessed instead of flops")
def flops_bytes_accessed(compiled):
    return float(compiled.cost_analysis()["bytes accessed"])


@decoy("flops_per_step", caught_by=["test_flops_match_cost_model",
                                    "test_step_costs_forward_plus_backward_matmuls"],
       why="counts only the forward matmuls by hand")
def flops_forward_by_hand(compiled):
    return 2.0 * 8 * (16 * 32 + 32 * 4)


@decoy("transpose_counts", caught_by=["test_transposes_vanish_in_hlo"],
       why="counts only top-level equations: a jitted step hides everything inside `jit`")
def transposes_top_level(step, *args):
    top = primitive_census(jax.make_jaxpr(step)(*args), recursive=False)["transpose"]
    module = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    return top, sum(i.opcode == "transpose" for c in module for i in c)


@decoy("transpose_counts", caught_by=["test_transposes_vanish_in_hlo"],
       why="counts the unoptimized HLO, where the transposes are still there")
def transposes_unoptimized(step, *args):
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    module = parse_hlo(jax.jit(step).lower(*args).as_text(dialect="hlo"))
    return in_jaxpr, sum(i.opcode == "transpose" for c in module for i in c)


@decoy("absorbed_transposes", caught_by=["test_absorbed_transposes_match_module",
                                         "test_weight_gradients_contract_the_batch"],
       why="counts transpose instructions, which XLA already removed")
def absorbed_as_transposes(compiled):
    return sum(i.opcode == "transpose" for c in parse_hlo(compiled.as_text()) for i in c)


@decoy("absorbed_transposes", caught_by=["test_absorbed_transposes_match_module"],
       why="checks only the lhs dimension numbers")
def absorbed_lhs_only(compiled):
    return sum(i.attribute("lhs_contracting_dims") != "{1}"
               for c in parse_hlo(compiled.as_text()) for i in c if i.opcode == "dot")


def _vmapped_step(optimizer, donate_argnums):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=donate_argnums)


@decoy("make_train_step", caught_by=["test_step_donates_params_and_state"],
       why="donates the batch too: no output can reuse it, JAX warns")
def step_donates_everything(optimizer):
    return _vmapped_step(optimizer, (0, 1, 2, 3))


@decoy("fusion_count", caught_by=["test_fusion_count_matches_module"],
       why="counts only ENTRY: a loop body's fusions live in other computations")
def fusions_entry_only(compiled):
    return sum(i.opcode == "fusion" for i in parse_hlo(compiled.as_text()).entry)


@decoy("aliased_parameters", caught_by=["test_parameters_not_output_indices"],
       why="collects the output indices `{n}:` instead of the parameter numbers")
def aliased_output_indices(compiled):
    alias = parse_hlo(compiled.as_text()).attributes.get("input_output_alias", "")
    return sorted(int(n) for n in re.findall(r"\{(\d+)\}:", alias))


@decoy("flops_per_step", caught_by=["test_flops_match_cost_model"],
       why="adds transcendentals to flops")
def flops_with_transcendentals(compiled):
    cost = compiled.cost_analysis()
    return float(cost.get("flops", 0.0) + cost.get("transcendentals", 0.0))


@decoy("transpose_counts", caught_by=["test_a_transpose_that_survives"],
       why="hard-codes 0 for the optimized HLO: XLA 'always' folds transposes")
def transposes_hlo_assumed_zero(step, *args):
    return primitive_census(jax.make_jaxpr(step)(*args))["transpose"], 0
