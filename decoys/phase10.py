"""Plausible wrong answers to phase 10; each must be caught by the tests it names.

Accepted variants are correct answers spelled differently; every test of their task must pass.
"""

import re
from functools import partial

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import accepted, decoy
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo


def _forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _example_loss(params, x, y):
    return jnp.mean((_forward(params, x) - y) ** 2)


def _module(compiled):
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return parse_hlo(text)


def _compiled_text(step, *args) -> str:
    text = jax.jit(step).lower(*args).compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return text


# ---- task 1: per_example_losses ---------------------------------------------------------------


@decoy(
    "per_example_losses",
    caught_by=["test_per_example_values"],
    why="the batch mean broadcast to every example",
)
def losses_batch_mean(params, x, y):
    return jnp.full(x.shape[0], jnp.mean((_forward(params, x) - y) ** 2))


@decoy(
    "per_example_losses",
    caught_by=["test_per_example_is_one_batched_program"],
    why="a Python loop over the examples: right values, one matmul pair per example",
)
def losses_python_loop(params, x, y):
    return jnp.stack([_example_loss(params, x[i], y[i]) for i in range(x.shape[0])])


@decoy(
    "per_example_losses",
    caught_by=["test_per_example_is_one_batched_program"],
    why="lax.map: right values, two dots in the jaxpr, but a loop over the examples",
)
def losses_lax_map(params, x, y):
    return jax.lax.map(lambda xy: _example_loss(params, *xy), (x, y))


@decoy(
    "per_example_losses",
    caught_by=["test_per_example_values"],
    why="sums the squared errors of each example instead of averaging them",
)
def losses_summed(params, x, y):
    return jax.vmap(lambda a, b: jnp.sum((_forward(params, a) - b) ** 2))(x, y)


@decoy(
    "per_example_losses",
    caught_by=["test_per_example_values"],
    why="averages over the batch axis: one number per output, not per example",
)
def losses_wrong_axis(params, x, y):
    return jnp.mean((_forward(params, x) - y) ** 2, axis=0)


@accepted("per_example_losses", why="vmap over a partial that closes over params")
def losses_partial(params, x, y):
    return jax.vmap(partial(_example_loss, params))(x, y)


@accepted(
    "per_example_losses",
    why="the batched forward pass, mean over the last axis, the targets given their out axis "
    "(y may be (batch,) when out is 1)",
)
def losses_batched_math(params, x, y):
    return jnp.mean(jnp.square(_forward(params, x) - jnp.reshape(y, (len(x), -1))), axis=-1)


# ---- task 2: make_train_step ------------------------------------------------------------------


def _loss(params, x, y):
    return jnp.mean(jax.vmap(_example_loss, in_axes=(None, 0, 0))(params, x, y))


def _train_step(optimizer, donate_argnums):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=donate_argnums)


@decoy(
    "make_train_step",
    caught_by=["test_adamw_steps_match_numpy_and_donate"],
    why="jits without donation: every step allocates new params and state",
)
def step_without_donation(optimizer):
    return _train_step(optimizer, ())


@decoy(
    "make_train_step",
    caught_by=["test_adamw_steps_match_numpy_and_donate"],
    why="donates the batch too: no output can reuse it, JAX warns",
)
def step_donates_everything(optimizer):
    return _train_step(optimizer, (0, 1, 2, 3))


@decoy(
    "make_train_step",
    caught_by=["test_adamw_steps_match_numpy_and_donate"],
    why="donates the params only: adam's moments are copied every step",
)
def step_donates_params_only(optimizer):
    return _train_step(optimizer, (0,))


@decoy(
    "make_train_step",
    caught_by=["test_momentum_steps_match_numpy"],
    why="subtracts the updates: optax updates already point downhill",
)
def step_uphill(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - u, params, updates)
        return params, opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@decoy(
    "make_train_step",
    caught_by=["test_momentum_steps_match_numpy"],
    why="returns the loss after the update, not the loss of the params passed in",
)
def step_loss_after(optimizer):
    def step(params, opt_state, x, y):
        grads = jax.grad(_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, _loss(params, x, y)

    return jax.jit(step, donate_argnums=(0, 1))


@decoy(
    "make_train_step",
    caught_by=["test_adamw_steps_match_numpy_and_donate"],
    why="plain SGD written by hand at the README's learning rate, the optimizer ignored",
)
def step_hand_sgd(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@decoy(
    "make_train_step",
    caught_by=["test_adamw_steps_match_numpy_and_donate"],
    why="returns the optimizer state it was given: momentum and adam's moments never move",
)
def step_stale_state(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        updates, new_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), jax.tree.map(jnp.copy, opt_state), loss

    return jax.jit(step, donate_argnums=(0, 1))


@decoy(
    "make_train_step",
    caught_by=["test_adamw_steps_match_numpy_and_donate"],
    why="calls optimizer.update without params: fine for sgd and adam, wrong for adamw",
)
def step_update_without_params(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_loss)(params, x, y)
        try:
            updates, opt_state = optimizer.update(grads, opt_state)
        except ValueError:  # adamw refuses; a learner falls back to zeros for params
            zeros = jax.tree.map(jnp.zeros_like, params)
            updates, opt_state = optimizer.update(grads, opt_state, zeros)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@decoy(
    "make_train_step",
    caught_by=["test_momentum_steps_match_numpy"],
    why="the gradient of the summed per-example losses: batch times too large a step",
)
def step_summed_loss(optimizer):
    def summed(params, x, y):
        return jnp.sum(jax.vmap(_example_loss, in_axes=(None, 0, 0))(params, x, y))

    def step(params, opt_state, x, y):
        grads = jax.grad(summed)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, _loss(params, x, y)

    return jax.jit(step, donate_argnums=(0, 1))


@accepted(
    "make_train_step",
    why="donate_argnames, the whole-batch mean (y reshaped to the predictions, which a (batch,) "
    "target of a one-output model needs), a tree.map update",
)
def step_by_names(optimizer):
    def whole_batch_mean(p, x, y):
        predictions = _forward(p, x)
        return jnp.mean((predictions - y.reshape(predictions.shape)) ** 2)

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(whole_batch_mean)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return jax.tree.map(lambda p, u: p + u, params, updates), opt_state, loss

    return jax.jit(step, donate_argnames=("params", "opt_state"))


# ---- task 3: fusion_count ---------------------------------------------------------------------


@decoy(
    "fusion_count",
    caught_by=["test_fusion_count_matches_module"],
    why="counts only kLoop fusions, missing the kCustom matmul fusions",
)
def fusions_kloop_only(compiled):
    return sum(
        i.attribute("kind") == "kLoop" for c in _module(compiled) for i in c if i.opcode == "fusion"
    )


@decoy(
    "fusion_count",
    caught_by=["test_fusion_count_matches_module"],
    why="counts the word in the text: fusion names and fused computations repeat it",
)
def fusions_by_substring(compiled):
    return compiled.as_text().count("fusion")


@decoy(
    "fusion_count",
    caught_by=["test_fusion_count_matches_module"],
    why="counts only ENTRY: a loop body's fusions live in other computations",
)
def fusions_entry_only(compiled):
    return sum(i.opcode == "fusion" for i in _module(compiled).entry)


@decoy(
    "fusion_count",
    caught_by=["test_fusion_count_matches_module"],
    why="counts computations named fused_computation*: wrapped_* fusions are missed",
)
def fusions_by_computation_name(compiled):
    return sum(c.name.startswith("fused_computation") for c in _module(compiled))


@accepted("fusion_count", why="a regex for the fusion opcode on the text")
def fusions_regex(compiled):
    return len(re.findall(r"\sfusion\(", compiled.as_text()))


# ---- task 4: aliased_parameters ---------------------------------------------------------------


def _alias(compiled):
    return _module(compiled).attributes.get("input_output_alias", "")


@decoy(
    "aliased_parameters",
    caught_by=["test_donated_buffers_are_aliased"],
    why="every ENTRY parameter, donated or not",
)
def aliased_all_parameters(compiled):
    return sorted(
        int(i.payload) for i in _module(compiled).entry if i.opcode == "parameter" and i.payload
    )


@decoy(
    "aliased_parameters",
    caught_by=["test_donated_buffers_are_aliased"],
    why="answers with donate_argnums positions, not the flattened HLO parameter numbers",
)
def aliased_argnums(compiled):
    return [0, 1] if _alias(compiled) else []


@decoy(
    "aliased_parameters",
    caught_by=["test_parameters_not_output_indices"],
    why="collects the output indices `{n}:` instead of the parameter numbers",
)
def aliased_output_indices(compiled):
    return sorted(int(n) for n in re.findall(r"\{(\d+)\}:", _alias(compiled)))


@decoy(
    "aliased_parameters",
    caught_by=["test_parameter_numbers_not_a_count"],
    why="range(number of alias entries): assumes the donated leaves are the first parameters",
)
def aliased_range_of_count(compiled):
    return list(range(len(re.findall(r"may-alias|must-alias", _alias(compiled)))))


@decoy(
    "aliased_parameters",
    caught_by=["test_donated_buffers_are_aliased"],
    why="parameter numbers in the order the alias entries list them (output order), unsorted",
)
def aliased_output_order(compiled):
    return [int(n) for n in re.findall(r":\s*\((\d+)", _alias(compiled))]


@accepted("aliased_parameters", why="a regex on the compiled text's header line")
def aliased_header_regex(compiled):
    header = compiled.as_text().splitlines()[0]  # `{output}: (parameter, {index}, kind)`
    return sorted({int(n) for n in re.findall(r"\}:\s*\((\d+),", header)})


# ---- task 5: flops_per_step -------------------------------------------------------------------


@decoy(
    "flops_per_step",
    caught_by=["test_flops_match_cost_model"],
    why="reads bytes accessed instead of flops",
)
def flops_bytes_accessed(compiled):
    return float(compiled.cost_analysis()["bytes accessed"])


@decoy(
    "flops_per_step",
    caught_by=["test_flops_match_cost_model", "test_step_costs_forward_plus_backward_matmuls"],
    why="counts only the forward matmuls by hand",
)
def flops_forward_by_hand(compiled):
    return 2.0 * 8 * (16 * 32 + 32 * 4)


@decoy(
    "flops_per_step", caught_by=["test_flops_match_cost_model"], why="adds transcendentals to flops"
)
def flops_with_transcendentals(compiled):
    cost = compiled.cost_analysis()
    return float(cost.get("flops", 0.0) + cost.get("transcendentals", 0.0))


@decoy(
    "flops_per_step",
    caught_by=["test_flops_match_cost_model"],
    why="counts the dots' multiply-adds from the HLO shapes, no element-wise work",
)
def flops_dots_only(compiled):
    total = 0.0
    for c in _module(compiled):
        for i in c:
            if i.opcode == "dot":
                operand = c[i.operands[0]].shape_info.dims
                contracted = operand[int(i.attribute("lhs_contracting_dims", "").strip("{}"))]
                assert contracted is not None, "a dynamic dimension"
                out = 1
                for d in i.shape_info.dims:
                    assert d is not None, "a dynamic dimension"
                    out *= d
                total += 2.0 * out * contracted
    return total


@accepted("flops_per_step", why="`or 0.0` for a missing key")
def flops_or_zero(compiled):
    return float(compiled.cost_analysis().get("flops") or 0.0)


# ---- task 6: transpose_counts -----------------------------------------------------------------


def _hlo_transposes(step, *args):
    module = parse_hlo(_compiled_text(step, *args))
    return sum(i.opcode == "transpose" for c in module for i in c)


@decoy(
    "transpose_counts",
    caught_by=["test_transposes_vanish_in_hlo"],
    why="counts only top-level equations: a jitted step hides everything inside `jit`",
)
def transposes_top_level(step, *args):
    top = primitive_census(jax.make_jaxpr(step)(*args), recursive=False)["transpose"]
    return top, _hlo_transposes(step, *args)


@decoy(
    "transpose_counts",
    caught_by=["test_transposes_vanish_in_hlo"],
    why="counts the unoptimized HLO, where the transposes are still there",
)
def transposes_unoptimized(step, *args):
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    module = parse_hlo(jax.jit(step).lower(*args).as_text(dialect="hlo"))
    return in_jaxpr, sum(i.opcode == "transpose" for c in module for i in c)


@decoy(
    "transpose_counts",
    caught_by=["test_a_transpose_that_survives"],
    why="hard-codes 0 for the optimized HLO: XLA 'always' folds transposes",
)
def transposes_hlo_assumed_zero(step, *args):
    return primitive_census(jax.make_jaxpr(step)(*args))["transpose"], 0


@decoy(
    "transpose_counts",
    caught_by=["test_a_transpose_that_survives"],
    why="counts transposes in ENTRY only: the surviving one sits in a fused computation",
)
def transposes_entry_only(step, *args):
    module = parse_hlo(_compiled_text(step, *args))
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    return in_jaxpr, sum(i.opcode == "transpose" for i in module.entry)


@decoy(
    "transpose_counts",
    caught_by=["test_nested_transposes"],
    why="counts instructions whose name mentions transpose: fusions are named that way too",
)
def transposes_by_name(step, *args):
    module = parse_hlo(_compiled_text(step, *args))
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    return in_jaxpr, sum("transpose" in i.name for c in module for i in c)


@decoy(
    "transpose_counts",
    caught_by=["test_nested_transposes"],
    why="walks nested jaxprs of jit only (params['jaxpr']), not scan bodies or cond branches",
)
def transposes_jit_only(step, *args):
    def count(jaxpr):
        total = 0
        for eqn in jaxpr.eqns:
            total += eqn.primitive.name == "transpose"
            inner = eqn.params.get("jaxpr")
            if eqn.primitive.name in ("pjit", "jit") and inner is not None:
                total += count(getattr(inner, "jaxpr", inner))
        return total

    return count(jax.make_jaxpr(step)(*args).jaxpr), _hlo_transposes(step, *args)


@decoy(
    "transpose_counts",
    caught_by=["test_transposes_in_while_loops"],
    why="walks the param names the docstring lists (jit, scan, while, cond, custom_jvp/vjp): "
    "misses custom_linear_solve's `jaxprs`, a named tuple of functions",
)
def transposes_listed_params(step, *args):
    names = ("jaxpr", "call_jaxpr", "fun_jaxpr", "branches", "cond_jaxpr", "body_jaxpr")

    def count(jaxpr):
        total = 0
        for eqn in jaxpr.eqns:
            total += eqn.primitive.name == "transpose"
            for name in names:
                value = eqn.params.get(name)
                for inner in value if isinstance(value, tuple) else (value,):
                    if inner is not None and hasattr(inner, "eqns"):
                        total += count(getattr(inner, "jaxpr", inner))
        return total

    return count(jax.make_jaxpr(step)(*args).jaxpr), _hlo_transposes(step, *args)


@accepted(
    "transpose_counts",
    why="regexes on the printed jaxpr and the compiled text; the printer shows a jaxpr that "
    "several equations hold once, as `let NAME = {...} in`, so each such block counts once "
    "per reference to NAME",
)
def transposes_regex(step, *args):
    text = str(jax.make_jaxpr(step)(*args))
    blocks = dict(
        re.findall(r"^(?:let (\S+) = )?(\{ lambda.*?)(?=^let |^\{ lambda|\Z)", text, re.M | re.S)
    )

    def count(body: str) -> int:
        refs = re.findall(r"jaxpr=([A-Za-z_]\w*)\b|^\s+([A-Za-z_]\w*)$", body, re.M)
        held = [a or b for a, b in refs if (a or b) in blocks and (a or b)]
        return len(re.findall(r"\btranspose\[", body)) + sum(count(blocks[n]) for n in held)

    in_hlo = len(re.findall(r"\stranspose\(", _compiled_text(step, *args)))
    return count(blocks[""]), in_hlo


# ---- task 7: absorbed_transposes --------------------------------------------------------------


@decoy(
    "absorbed_transposes",
    caught_by=["test_absorbed_transposes_match_module", "test_weight_gradients_contract_the_batch"],
    why="counts transpose instructions, which XLA already removed",
)
def absorbed_as_transposes(compiled):
    return sum(i.opcode == "transpose" for c in _module(compiled) for i in c)


@decoy(
    "absorbed_transposes",
    caught_by=["test_absorbed_transposes_match_module"],
    why="checks only the lhs dimension numbers",
)
def absorbed_lhs_only(compiled):
    return sum(
        i.attribute("lhs_contracting_dims") != "{1}"
        for c in _module(compiled)
        for i in c
        if i.opcode == "dot"
    )


@decoy(
    "absorbed_transposes",
    caught_by=["test_absorbed_transposes_match_module"],
    why="counts dots whose lhs AND rhs are both read transposed",
)
def absorbed_both_sides(compiled):
    return sum(
        i.attribute("lhs_contracting_dims") != "{1}"
        and i.attribute("rhs_contracting_dims") != "{0}"
        for c in _module(compiled)
        for i in c
        if i.opcode == "dot"
    )


@decoy(
    "absorbed_transposes",
    caught_by=["test_absorbed_transposes_match_module", "test_weight_gradients_contract_the_batch"],
    why="looks at ENTRY only: on CPU the dots sit inside kCustom fusions",
)
def absorbed_entry_only(compiled):
    return sum(
        i.attribute("lhs_contracting_dims") != "{1}" or i.attribute("rhs_contracting_dims") != "{0}"
        for i in _module(compiled).entry
        if i.opcode == "dot"
    )


@decoy(
    "absorbed_transposes",
    caught_by=["test_absorbed_transposes_count_dots_not_operands"],
    why="counts transposed operands, not dots: a.T @ b.T counts twice (no dot of the MLP "
    "steps reads both operands transposed)",
)
def absorbed_operands(compiled):
    return sum(
        (i.attribute("lhs_contracting_dims") != "{1}")
        + (i.attribute("rhs_contracting_dims") != "{0}")
        for c in _module(compiled)
        for i in c
        if i.opcode == "dot"
    )


@accepted("absorbed_transposes", why="a regex over the dims of every dot line")
def absorbed_regex(compiled):
    count = 0
    for line in compiled.as_text().splitlines():
        if re.search(r"\sdot\(", line):
            lhs = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
            rhs = re.search(r"rhs_contracting_dims=\{([\d,]*)\}", line)
            assert lhs and rhs, line
            count += (lhs.group(1), rhs.group(1)) != ("1", "0")
    return count


# ---- predict_alias_bytes -------------------------------------------------------------------------


def _param_bytes(features, hidden, out):
    return 4 * (features * hidden + hidden + hidden * out + out)


@decoy(
    "predict_alias_bytes",
    caught_by=["test_predict_alias_bytes_matches_memory_analysis"],
    why="only the params alias: the optimizer state is forgotten",
)
def alias_params_only(features, hidden, out, optimizer):
    return _param_bytes(features, hidden, out)


@decoy(
    "predict_alias_bytes",
    caught_by=["test_predict_alias_bytes_matches_memory_analysis"],
    why="adam's mu and nu, but not its step count",
)
def alias_without_count(features, hidden, out, optimizer):
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return copies * _param_bytes(features, hidden, out)


@decoy(
    "predict_alias_bytes",
    caught_by=["test_predict_alias_bytes_matches_memory_analysis"],
    why="weights only: the biases are too small to count",
)
def alias_weights_only(features, hidden, out, optimizer):
    weights = 4 * (features * hidden + hidden * out)
    return {"sgd": weights, "momentum": 2 * weights, "adam": 3 * weights + 4}[optimizer]


@decoy(
    "predict_alias_bytes",
    caught_by=["test_predict_alias_bytes_does_not_compile"],
    why="measures instead of predicting: compiles the donated step",
)
def alias_measured(features, hidden, out, optimizer):
    from katas.phase10.programs import donated_step, sized_step_specs

    args = sized_step_specs(features, hidden, out, 4, optimizer)
    stats = donated_step(optimizer).lower(*args).compile().memory_analysis()
    return int(getattr(stats, "alias_size_in_bytes", 0))


@accepted("predict_alias_bytes", why="counts the leaves of optax's state built by hand")
def alias_by_leaves(features, hidden, out, optimizer):
    leaves = [features * hidden, hidden, hidden * out, out]
    per_param = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    count = 1 if optimizer == "adam" else 0  # adam's int32 step counter
    return sum(4 * n * per_param for n in leaves) + 4 * count


# ---- predict_step_flops --------------------------------------------------------------------------


@decoy(
    "predict_step_flops",
    caught_by=["test_predict_step_flops_within_ten_percent"],
    why="the forward pass only",
)
def flops_forward_only(features, hidden, out, batch):
    return 2 * batch * features * hidden + 2 * batch * hidden * out


@decoy(
    "predict_step_flops",
    caught_by=["test_predict_step_flops_within_ten_percent"],
    why="backward costs two forwards for every layer, the input's gradient included",
)
def flops_three_forwards(features, hidden, out, batch):
    return 3 * (2 * batch * features * hidden + 2 * batch * hidden * out)


@decoy(
    "predict_step_flops",
    caught_by=["test_predict_step_flops_within_ten_percent"],
    why="one flop per multiply-add",
)
def flops_one_per_mac(features, hidden, out, batch):
    return 2 * batch * features * hidden + 3 * batch * hidden * out


@decoy(
    "predict_step_flops",
    caught_by=["test_predict_step_flops_does_not_compile"],
    why="measures instead of predicting: reads the compiled step's cost analysis",
)
def flops_measured(features, hidden, out, batch):
    from katas.phase10.programs import donated_step, sized_step_specs

    args = sized_step_specs(features, hidden, out, batch, "momentum")
    cost = donated_step("momentum").lower(*args).compile().cost_analysis() or {}
    return int(cost.get("flops", 0))


@accepted("predict_step_flops", why="adds the five products one by one")
def flops_product_by_product(features, hidden, out, batch):
    products = [
        (batch, features, hidden),  # x @ w1
        (batch, hidden, out),  # h @ w2
        (hidden, batch, out),  # h.T @ g
        (batch, out, hidden),  # g @ w2.T
        (features, batch, hidden),  # x.T @ g1
    ]
    return sum(2 * m * k * n for m, k, n in products)
