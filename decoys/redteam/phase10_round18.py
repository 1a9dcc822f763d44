"""Red team, phase 10, round 18: plausible wrong answers written from the contract only."""

from __future__ import annotations

import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt18_forward(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt18_example_loss(params: dict, x, y):
    return jnp.mean((_rt18_forward(params, x) - y) ** 2)


def _rt18_losses(params: dict, x, y):
    return jax.vmap(_rt18_example_loss, in_axes=(None, 0, 0))(params, x, y)


def _rt18_instructions(compiled):
    module = parse_hlo(compiled.as_text())
    return [ins for comp in module.computations for ins in comp.instructions]


# ---------------------------------------------------------------- per_example_losses


@wrong("per_example_losses", why="Clause 'y is (batch,) when out is 1: row i of y is y[i]': takes the batched forward and a mean over axis -1, so out=1 with y of shape (batch,) broadcasts (batch,1) - (batch,) to (batch,batch) and every loss mixes all targets (x (5,3), y (5,), w2 (h,1): values differ).")
def _rt18_per_example_losses_broadcast(params: dict, x, y) -> jax.Array:
    return jnp.mean((_rt18_forward(params, x) - y) ** 2, axis=-1)


@wrong("per_example_losses", why="Clause 'a bfloat16 x against float32 params gives float32 losses': casts the params to x's dtype so the whole example runs in x's precision, so data('wide') with x cast to bfloat16 returns bfloat16 losses (and rounded values) instead of float32.")
def _rt18_per_example_losses_input_dtype(params: dict, x, y) -> jax.Array:
    cast = jax.tree_util.tree_map(lambda a: jnp.asarray(a).astype(x.dtype), params)
    return jax.vmap(_rt18_example_loss, in_axes=(None, 0, 0))(cast, x, y)


@wrong("per_example_losses", why="Clause 'no lax.map/scan over the examples ... no while loop': maps example_loss with lax.map (one example per trip), so values are right but the optimized HLO holds a while loop and per-example matmuls (any batch, e.g. x (8,16)).")
def _rt18_per_example_losses_lax_map(params: dict, x, y) -> jax.Array:
    return jax.lax.map(lambda xy: _rt18_example_loss(params, xy[0], xy[1]), (x, y))


@wrong("per_example_losses", why="Clause 'nor over chunks of them' and 'for a batch of thousands as for a few rows': vmaps inside chunks of 256 rows with lax.map over the chunks when the batch is large, so batch 4096 compiles to a while loop (batch 8 looks fine).")
def _rt18_per_example_losses_chunked(params: dict, x, y) -> jax.Array:
    batch = x.shape[0]
    if batch <= 256 or batch % 256:
        return _rt18_losses(params, x, y)
    xs = x.reshape((batch // 256, 256) + x.shape[1:])
    ys = y.reshape((batch // 256, 256) + y.shape[1:])
    return jax.lax.map(lambda xy: _rt18_losses(params, xy[0], xy[1]), (xs, ys)).reshape(batch)


# ---------------------------------------------------------------- make_train_step


@wrong("make_train_step", why="Clause 'loss is the mean ... *before* the update': recomputes the loss with the new params and returns that, so on data('wide') with MOMENTUM the returned loss is lower than mean(per_example_losses(params)) of the params passed in.")
def _rt18_make_train_step_loss_after(optimizer) -> Callable:
    def step(params, opt_state, x, y):
        grads = jax.grad(lambda p: jnp.mean(_rt18_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, jnp.mean(_rt18_losses(params, x, y))

    return jax.jit(step, donate_argnums=(0, 1))


@wrong("make_train_step", why="Clause 'params and opt_state (every leaf) are donated': donates only params (donate_argnums=0), so the optimizer state's buffers (momentum trace, adam mu/nu/count) are not aliased; values are right.")
def _rt18_make_train_step_donate_params_only(optimizer) -> Callable:
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt18_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=0)


@wrong("make_train_step", why="Clause 'The batch is not donated': donates every argument (0, 1, 2, 3), so x and y are donated too: values and aliases are right, but step.lower(...).args_info marks x and y donated=True and JAX warns that their buffers were not usable (any optimizer, data('wide')).")
def _rt18_make_train_step_donate_all(optimizer) -> Callable:
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt18_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1, 2, 3))


@wrong("make_train_step", why="Clause 'the gradient of that mean loss': differentiates the sum of the per-example losses (loss reported as the mean), so the gradient is batch times too large: with sgd on data('wide') (batch 8) the params move 8x as far.")
def _rt18_make_train_step_sum_grad(optimizer) -> Callable:
    def step(params, opt_state, x, y):
        total, grads = jax.value_and_grad(lambda p: jnp.sum(_rt18_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, total / x.shape[0]

    return jax.jit(step, donate_argnums=(0, 1))


@wrong("make_train_step", why="Clause 'adamw, whose weight decay reads the params': hands optimizer.update the gradients where it wants the params, so adamw's weight decay decays by the gradients instead of the params: optax.adamw(1e-2, weight_decay=0.1) on data('wide') gives other new params (sgd, momentum and adam are unaffected).")
def _rt18_make_train_step_grads_as_params(optimizer) -> Callable:
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt18_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, grads)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


# ---------------------------------------------------------------- fusion_count


@wrong("fusion_count", why="Clause 'in every computation: ENTRY, while bodies and conditions, conditional branches': counts fusions in ENTRY only, so switch_program(3) or loop_with_a_branch(4), whose kernels sit in branches and loop bodies, count too few.")
def _rt18_fusion_count_entry_only(compiled) -> int:
    return sum(1 for ins in parse_hlo(compiled.as_text()).entry.instructions if ins.opcode == "fusion")


@wrong("fusion_count", why="Clause 'counted by opcode': counts instructions whose name contains 'fusion' (names like %broadcast_add_fusion), so fusions whose names lack 'fusion' are missed: jax.jit(switch_program(3)) on w f32[4,4], h f32[3,4], k=1 gives 2 instead of 4, loop_with_a_branch(4) 2 instead of 5.")
def _rt18_fusion_count_by_name(compiled) -> int:
    return sum(1 for ins in _rt18_instructions(compiled) if "fusion" in ins.name)


@wrong("fusion_count", why="Clause 'any kind, kLoop or kCustom': counts only kind=kLoop fusions (the elementwise kernels), so the kCustom (dot) fusions of the momentum step are left out.")
def _rt18_fusion_count_kloop_only(compiled) -> int:
    return sum(
        1
        for ins in _rt18_instructions(compiled)
        if ins.opcode == "fusion" and ins.attribute("kind", "kLoop") == "kLoop"
    )


# ---------------------------------------------------------------- aliased_parameters


@wrong("aliased_parameters", why="Clause 'Sorted numbers ... ascending': lists the parameter numbers in the header's order (by output index), so returns_state_first (outputs loss, state, params) gives the state's parameters 4.. before the params 0..3.")
def _rt18_aliased_parameters_header_order(compiled) -> list[int]:
    header = parse_hlo(compiled.as_text()).attributes.get("input_output_alias", "")
    out: list[int] = []
    for number in re.findall(r"\(\s*(\d+)\s*,", header):
        if int(number) not in out:
            out.append(int(number))
    return out


@wrong("aliased_parameters", why="Clause 'In {output}: (parameter, {index}, may-alias), which number names the parameter?': reads the output index instead, so batch_first (step(x, y, params, state), parameters 2..14) gives 0..12.")
def _rt18_aliased_parameters_output_index(compiled) -> list[int]:
    header = parse_hlo(compiled.as_text()).attributes.get("input_output_alias", "")
    return sorted({int(n) for n in re.findall(r"\{\s*(\d+)\s*\}\s*:", header)})


@wrong("aliased_parameters", why="Clause 'donate_argnums alone is not the answer' / 'A donated buffer no output can reuse is not aliased': counts donated parameters from the entry layout as 0..k-1 where k = number of outputs with an alias, so batch_first (aliases 2..14) gives 0..12.")
def _rt18_aliased_parameters_leading(compiled) -> list[int]:
    header = parse_hlo(compiled.as_text()).attributes.get("input_output_alias", "")
    return list(range(len(re.findall(r"may-alias|must-alias", header))))


# ---------------------------------------------------------------- flops_per_step


@wrong("flops_per_step", why="Clause 'Only \"flops\": transcendentals ... are a separate count, not added': adds transcendentals, so jnp.exp of a float32 array reports its element count instead of 0.0, and tanh_forward more than its flops.")
def _rt18_flops_per_step_plus_transcendentals(compiled) -> float:
    analysis = compiled.cost_analysis()
    return float(analysis.get("flops", 0.0) + analysis.get("transcendentals", 0.0))


@wrong("flops_per_step", why="Clause 'one whose only work is transcendentals ... costs 0.0 flops': falls back to the transcendentals count when the analysis has no 'flops' key, so jnp.exp of a float32 (1000,) array gives 1000.0 instead of 0.0.")
def _rt18_flops_per_step_fallback(compiled) -> float:
    analysis = compiled.cost_analysis()
    if "flops" in analysis:
        return float(analysis["flops"])
    return float(analysis.get("transcendentals", 0.0))


# ---------------------------------------------------------------- transpose_counts


def _rt18_jaxpr_transposes_top(jaxpr) -> int:
    return sum(1 for eqn in jaxpr.eqns if eqn.primitive.name == "transpose")


@wrong("transpose_counts", why="Clause 'nested jaxprs included': counts transpose equations of the top-level jaxpr only, so TRANSPOSE_PROGRAMS['nested'] (transposes in a nested jit, a scan body and a cond branch) gives 0 instead of 3.")
def _rt18_transpose_counts_top_level(step, *args) -> tuple[int, int]:
    jaxpr = jax.make_jaxpr(step)(*args).jaxpr
    compiled = jax.jit(step).lower(*args).compile()
    hlo = sum(1 for ins in _rt18_instructions(compiled) if ins.opcode == "transpose")
    return _rt18_jaxpr_transposes_top(jaxpr), hlo


def _rt18_nested(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value, "consts"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt18_nested(item)


@wrong("transpose_counts", why="Clause 'An inner jaxpr counts once per equation that holds it': walks each distinct inner jaxpr once (a seen-set by id), so step = lambda a: inner(a) + inner(a) with inner = jax.jit(lambda m: m.T * 2) gives 1 jaxpr transpose instead of 2.")
def _rt18_transpose_counts_dedupe(step, *args) -> tuple[int, int]:
    seen: set[int] = set()

    def count(jaxpr) -> int:
        if id(jaxpr) in seen:
            return 0
        seen.add(id(jaxpr))
        n = 0
        for eqn in jaxpr.eqns:
            n += eqn.primitive.name == "transpose"
            for value in eqn.params.values():
                for inner in _rt18_nested(value):
                    n += count(inner)
        return n

    compiled = jax.jit(step).lower(*args).compile()
    hlo = sum(1 for ins in _rt18_instructions(compiled) if ins.opcode == "transpose")
    return count(jax.make_jaxpr(step)(*args).jaxpr), hlo


@wrong("transpose_counts", why="Clause 'In the HLO count the opcode in every computation, fused computations included': skips fused computations (counts only instructions that run as their own op), so a transpose XLA fused into a loop kernel (TRANSPOSE_PROGRAMS['nested']: 2 in the HLO) is missed.")
def _rt18_transpose_counts_unfused(step, *args) -> tuple[int, int]:
    def count(jaxpr) -> int:
        n = 0
        for eqn in jaxpr.eqns:
            n += eqn.primitive.name == "transpose"
            for value in eqn.params.values():
                for inner in _rt18_nested(value):
                    n += count(inner)
        return n

    compiled = jax.jit(step).lower(*args).compile()
    module = parse_hlo(compiled.as_text())
    hlo = sum(
        1
        for comp in module.computations
        if "fused" not in comp.name
        for ins in comp.instructions
        if ins.opcode == "transpose"
    )
    return count(jax.make_jaxpr(step)(*args).jaxpr), hlo


# ---------------------------------------------------------------- absorbed_transposes


def _rt18_dims(ins, key: str, default: str) -> str:
    return ins.attribute(key, default).replace(" ", "")


@wrong("absorbed_transposes", why="Clause 'a dot reading both operands transposed is one dot': counts each transposed side separately, so a.T @ b.T counts 2, and BOTH_TRANSPOSED_PROGRAMS['a.T @ b.T, then ...'] gives 3 instead of 2.")
def _rt18_absorbed_transposes_per_side(compiled) -> int:
    n = 0
    for ins in _rt18_instructions(compiled):
        if ins.opcode == "dot":
            n += _rt18_dims(ins, "lhs_contracting_dims", "{1}") != "{1}"
            n += _rt18_dims(ins, "rhs_contracting_dims", "{0}") != "{0}"
    return n


@wrong("absorbed_transposes", why="Clause 'on either side': counts only dots whose lhs contracts something other than {1} (the x^T @ g of a weight gradient), so an rhs-only transpose (g @ w2^T in the backward pass, d.T in transposed_products) is missed: the compiled momentum step gives 2 instead of 3, BOTH_TRANSPOSED_PROGRAMS['a.T @ b.T, then ...'] 1 instead of 2.")
def _rt18_absorbed_transposes_lhs_only(compiled) -> int:
    return sum(
        1
        for ins in _rt18_instructions(compiled)
        if ins.opcode == "dot" and _rt18_dims(ins, "lhs_contracting_dims", "{1}") != "{1}"
    )


@wrong("absorbed_transposes", why="Clause 'in every computation: fused computations and loop bodies too': looks at ENTRY only, so the acc.T @ w.T in a fori_loop body (BOTH_TRANSPOSED_PROGRAMS) gives 0 instead of 1.")
def _rt18_absorbed_transposes_entry_only(compiled) -> int:
    return sum(
        1
        for ins in parse_hlo(compiled.as_text()).entry.instructions
        if ins.opcode == "dot"
        and (
            _rt18_dims(ins, "lhs_contracting_dims", "{1}") != "{1}"
            or _rt18_dims(ins, "rhs_contracting_dims", "{0}") != "{0}"
        )
    )


# ---------------------------------------------------------------- predictions


def _rt18_param_bytes(features: int, hidden: int, out: int) -> int:
    return 4 * (features * hidden + hidden + hidden * out + out)


@wrong("predict_alias_bytes", why="Clause 'what each optimizer keeps between steps' (the small leaves too): adam keeps mu and nu but also an int32 step count, which is donated and aliased: adam at (16, 32, 4) is 8116 bytes, this says 8112.")
def _rt18_predict_alias_bytes_no_count(features: int, hidden: int, out: int, optimizer: str) -> int:
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return copies * _rt18_param_bytes(features, hidden, out)


@wrong("predict_alias_bytes", why="Clause 'params and optimizer state donated': counts only the optimizer state as aliased (the params 'are new'), so sgd gives 0 instead of the params' bytes (2704 at (16, 32, 4)).")
def _rt18_predict_alias_bytes_state_only(features: int, hidden: int, out: int, optimizer: str) -> int:
    p = _rt18_param_bytes(features, hidden, out)
    return {"sgd": 0, "momentum": p, "adam": 2 * p + 4}[optimizer]


@wrong("predict_alias_bytes", why="Clause 'w1 f32[features, hidden], b1 f32[hidden], ...': counts the weight matrices and forgets the biases, so sgd at (3, 6, 2) gives 120 instead of 152.")
def _rt18_predict_alias_bytes_no_biases(features: int, hidden: int, out: int, optimizer: str) -> int:
    w = 4 * (features * hidden + hidden * out)
    return {"sgd": w, "momentum": 2 * w, "adam": 3 * w + 4}[optimizer]


@wrong("predict_step_flops", why="Clause 'which one does nobody ask for': also counts the gradient with respect to the input x (three products per layer), 6*b*f*h + 6*b*h*o; at (256, 512, 16, 128) that is about 46% above the compiled count.")
def _rt18_predict_step_flops_input_grad(features: int, hidden: int, out: int, batch: int) -> int:
    per_layer = 2 * batch * features * hidden + 2 * batch * hidden * out
    return 3 * per_layer


@wrong("predict_step_flops", why="Clause 'a product of (m, k) by (k, n) is 2*m*k*n flops': counts m*k*n (one multiply-add as one flop), half the compiled count at any size, e.g. (256, 512, 16, 128).")
def _rt18_predict_step_flops_no_factor_two(features: int, hidden: int, out: int, batch: int) -> int:
    return 2 * batch * features * hidden + 3 * batch * hidden * out


@wrong("predict_step_flops", why="Clause 'the forward and the backward pass': counts only the products the forward pass writes (the backward 'is autodiff, not matmuls'), i.e. forward only, 2*b*f*h + 2*b*h*o: about 48% of the compiled count at (256, 512, 16, 128).")
def _rt18_predict_step_flops_forward_only(features: int, hidden: int, out: int, batch: int) -> int:
    return 2 * batch * features * hidden + 2 * batch * hidden * out
