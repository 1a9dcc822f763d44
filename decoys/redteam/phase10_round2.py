"""Red-team (round 2) wrong answers for phase 10, written from the contract only."""

import re

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect import jaxpr as xjaxpr
from xla_inspect.parse import parse_hlo
from xla_inspect.query import dots, opcode_counts

# ---- fusion_count -------------------------------------------------------------------------------


@wrong(
    "fusion_count",
    why="'in every computation: ENTRY, while bodies': counts the ENTRY computation only; "
    "wrong on two_steps (fori_loop of two momentum steps): 0 instead of 16",
)
def r2_fusion_count_entry_only(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return opcode_counts(module, entry_only=True)["fusion"]


@wrong(
    "fusion_count",
    why="'any kind, kLoop or kCustom': counts only kLoop element-wise fusions, missing the "
    "kCustom matmul kernels; wrong on the momentum step (15 fusions, some kCustom)",
)
def r2_fusion_count_kloop_only(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return sum(
        1
        for computation in module.computations
        for instruction in computation.instructions
        if instruction.opcode == "fusion" and instruction.attribute("kind") == "kLoop"
    )


# ---- aliased_parameters -------------------------------------------------------------------------


@wrong(
    "aliased_parameters",
    why="'numbers of the ENTRY parameters' (not output indices): reads the {output index} side "
    "of each alias; right for step(params, state, x, y), wrong for step(x, y, params, state) "
    "([0..12] instead of [2..14]) and for donating only the state",
)
def r2_aliased_output_indices(compiled) -> list[int]:
    module = parse_hlo(compiled.as_text())
    text = module.attributes.get("input_output_alias") or ""
    return sorted({int(n) for n in re.findall(r"\{(\d+)\}\s*:", text)})


@wrong(
    "aliased_parameters",
    why="'each number once' of every alias: a regex for one-digit parameter numbers drops "
    "10, 11, 12...; wrong on the adam step with the batch first (params 2..14) or returning "
    "(loss, state, params) (0..12)",
)
def r2_aliased_one_digit_regex(compiled) -> list[int]:
    text = compiled.as_text().split("\n", 1)[0]
    return sorted({int(n) for n in re.findall(r":\s*\((\d)\s*,", text)})


@wrong(
    "aliased_parameters",
    why="'donated params are not always parameters 0..n-1': counts the aliases and returns "
    "range(count); wrong on 'only the state donated' ([0,1,2,3] instead of [4,5,6,7])",
)
def r2_aliased_range_of_count(compiled) -> list[int]:
    text = compiled.as_text().split("\n", 1)[0]
    return list(range(len(re.findall(r"may-alias|must-alias", text))))


# ---- flops_per_step -----------------------------------------------------------------------------


@wrong(
    "flops_per_step",
    why="'transcendentals are a separate count, not added': returns flops + transcendentals; "
    "wrong on a tanh forward pass (tanh_forward) or anything with exp/sqrt (adam's sqrt)",
)
def r2_flops_plus_transcendentals(compiled) -> float:
    analysis = compiled.cost_analysis()
    return float(analysis.get("flops", 0.0) + analysis.get("transcendentals", 0.0))


@wrong(
    "flops_per_step",
    why="'as XLA's cost model counts them' (element-wise work included): sums 2*m*k*n over the "
    "optimized HLO's dots only; wrong on the momentum step (22528 instead of 27148)",
)
def r2_flops_dots_only(compiled) -> float:
    module = parse_hlo(compiled.as_text())
    total = 0
    for dot in dots(module):
        lhs = [int(d) for d in re.findall(r"\d+", dot.lhs_shape.partition("[")[2].split("]")[0])]
        rhs = [int(d) for d in re.findall(r"\d+", dot.rhs_shape.partition("[")[2].split("]")[0])]
        if len(lhs) == 2 and len(rhs) == 2:
            k = lhs[dot.lhs_contracting_dims[0]] if dot.lhs_contracting_dims else 1
            total += 2 * (lhs[0] * lhs[1] // k) * k * (rhs[0] * rhs[1] // k)
    return float(total)


# ---- transpose_counts ---------------------------------------------------------------------------


@wrong(
    "transpose_counts",
    why="'nested jaxprs included: every inner jaxpr ... cond branches': recurses into params "
    "that are a jaxpr but not into tuples of them, so cond's branches are skipped; wrong on "
    "nested_transposes ((2, 2) instead of (3, 2))",
)
def r2_transposes_skip_cond_branches(step, *args) -> tuple[int, int]:
    def walk(jaxpr):
        count = 0
        inner = getattr(jaxpr, "jaxpr", jaxpr)
        for eqn in inner.eqns:
            count += eqn.primitive.name == "transpose"
            for value in eqn.params.values():
                if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
                    count += walk(value)
        return count

    closed = jax.make_jaxpr(step)(*args)
    module = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    return walk(closed), opcode_counts(module)["transpose"]


@wrong(
    "transpose_counts",
    why="'in the HLO count the opcode in every computation, fused computations included': "
    "counts ENTRY only; wrong on a.T * 2 (the transpose sits inside the fusion: 0 instead of 1)",
)
def r2_transposes_hlo_entry_only(step, *args) -> tuple[int, int]:
    closed = jax.make_jaxpr(step)(*args)
    module = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    jaxpr_count = xjaxpr.primitive_census(closed)["transpose"]
    return jaxpr_count, opcode_counts(module, entry_only=True)["transpose"]


# ---- absorbed_transposes ------------------------------------------------------------------------


@wrong(
    "absorbed_transposes",
    why="'contract anything else, on either side': counts only dots whose lhs contracts "
    "another dimension (x^T @ g); wrong on transposed_products (the rhs-only d.T dot: 1 not 2)",
)
def r2_absorbed_lhs_only(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return sum(1 for d in dots(module) if tuple(d.lhs_contracting_dims) != (1,))


@wrong(
    "absorbed_transposes",
    why="'a dot reading both operands transposed is one dot': counts transposed sides; "
    "wrong on a.T @ b.T (3 instead of 2)",
)
def r2_absorbed_per_side(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return sum(
        (tuple(d.lhs_contracting_dims) != (1,)) + (tuple(d.rhs_contracting_dims) != (0,))
        for d in dots(module)
    )


@wrong(
    "absorbed_transposes",
    why="'in every computation: fused computations and loop bodies too': ENTRY dots only; "
    "wrong on acc.T @ w.T in a fori_loop body (0 instead of 1)",
)
def r2_absorbed_entry_only(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return sum(
        1
        for d in dots(module)
        if d.computation == module.entry.name
        and (tuple(d.lhs_contracting_dims) != (1,) or tuple(d.rhs_contracting_dims) != (0,))
    )


# ---- predict_alias_bytes ------------------------------------------------------------------------


@wrong(
    "predict_alias_bytes",
    why="'look at every leaf, the small ones too': adam's int32 step count is donated and "
    "comes back too; this forgets it; wrong on adam (16, 32, 4): 8112 instead of 8116",
)
def r2_alias_adam_without_count(features: int, hidden: int, out: int, optimizer: str) -> int:
    params = 4 * (features * hidden + hidden + hidden * out + out)
    slots = {"sgd": 0, "momentum": 1, "adam": 2}[optimizer]
    return params * (1 + slots)


@wrong(
    "predict_alias_bytes",
    why="'w1, b1, w2, b2' all donated: counts the weight matrices only, the biases forgotten; "
    "wrong everywhere, e.g. sgd (16, 32, 4): 2560 instead of 2704",
)
def r2_alias_weights_only(features: int, hidden: int, out: int, optimizer: str) -> int:
    weights = 4 * (features * hidden + hidden * out)
    slots = {"sgd": 0, "momentum": 1, "adam": 2}[optimizer]
    return weights * (1 + slots) + (4 if optimizer == "adam" else 0)


@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': assumes sgd keeps a trace like momentum "
    "(optax.sgd without momentum keeps nothing); wrong on sgd (16, 32, 4): 5408 instead of 2704",
)
def r2_alias_sgd_has_trace(features: int, hidden: int, out: int, optimizer: str) -> int:
    params = 4 * (features * hidden + hidden + hidden * out + out)
    if optimizer == "adam":
        return 3 * params + 4
    return 2 * params


# ---- predict_step_flops -------------------------------------------------------------------------


@wrong(
    "predict_step_flops",
    why="'the gradient with respect to x ... which products a training step needs for each "
    "layer': forgets the gradient into the hidden layer (dL/dh = g @ w2^T) and counts forward "
    "plus weight gradients only (4BFH + 4BHO); wrong on (8, 64, 64, 16): 360448 vs 464256 "
    "compiled (-22%)",
)
def r2_flops_no_hidden_gradient(features: int, hidden: int, out: int, batch: int) -> int:
    forward = 2 * batch * features * hidden + 2 * batch * hidden * out
    return 2 * forward


@wrong(
    "predict_step_flops",
    why="'no gradient flows into the data': the rule of thumb 'backward = 2 x forward' counts "
    "dL/dx too (6BFH + 6BHO); wrong on (64, 128, 10, 32): 1818624 vs 1361374 compiled (+34%)",
)
def r2_flops_three_times_forward(features: int, hidden: int, out: int, batch: int) -> int:
    forward = 2 * batch * features * hidden + 2 * batch * hidden * out
    return 3 * forward


@wrong(
    "predict_step_flops",
    why="'for each layer, which products does a training step need': puts the activation "
    "gradient on the first layer instead of the second (6BFH + 4BHO); wrong on "
    "(64, 128, 10, 32): 1736704 vs 1361374 (+28%)",
)
def r2_flops_activation_grad_wrong_layer(features: int, hidden: int, out: int, batch: int) -> int:
    return 6 * batch * features * hidden + 4 * batch * hidden * out


# ---- per_example_losses / make_train_step -------------------------------------------------------


@wrong(
    "per_example_losses",
    why="'no lax.map/scan over the examples ... no while loop': maps example_loss with "
    "jax.lax.map; values right, but the optimized HLO has a while loop and per-example matmuls",
)
def r2_per_example_lax_map(params: dict, x, y) -> jax.Array:
    return jax.lax.map(lambda xy: example_loss(params, xy[0], xy[1]), (x, y))


@wrong(
    "make_train_step",
    why="'params and opt_state (every leaf) are donated': donates params only; the momentum "
    "trace is not aliased (aliased parameters [0..3] instead of [0..7])",
)
def r2_train_step_params_only_donated(optimizer):
    import optax

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(per_example_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=0)
