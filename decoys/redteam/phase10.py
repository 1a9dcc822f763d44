"""Red-team wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.jaxpr import primitive_census
from xla_inspect.model import Shape
from xla_inspect.query import dots, opcode_counts


def _rt_param_bytes(features: int, hidden: int, out: int) -> int:
    return 4 * (features * hidden + hidden + hidden * out + out)


# --- per_example_losses / make_train_step -------------------------------------------------------


@wrong(
    "per_example_losses",
    why="'no lax.map/scan over the examples': the values are right but the optimized HLO holds a "
    "while loop and per-example matmuls, not two matmuls over the whole batch; e.g. on the "
    "wide data (x f32[8,16])",
)
def losses_by_lax_map(params: dict, x, y) -> jax.Array:
    return jax.lax.map(lambda xy: example_loss(params, xy[0], xy[1]), (x, y))  # noqa: F821


@wrong(
    "make_train_step",
    why="donates params only ('params and opt_state (every leaf) are donated'): the momentum "
    "trace is copied every step; sgd(0.05, momentum=0.9) on the wide MLP aliases 2704 bytes "
    "instead of 5408",
)
def donates_params_only(optimizer) -> Callable:
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(
            lambda p: jnp.mean(per_example_losses(p, x, y))  # noqa: F821
        )(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=0)


# --- fusion_count ----------------------------------------------------------------------------


@wrong(
    "fusion_count",
    why="'in every computation (ENTRY, while bodies, ...)': counts ENTRY only; right for a single "
    "step (15 fusions, all in ENTRY), wrong on two_steps (fori_loop): 0 instead of 16",
)
def fusions_of_entry(compiled) -> int:
    return opcode_counts(parse_hlo(compiled.as_text()), entry_only=True)["fusion"]


@wrong(
    "fusion_count",
    why="counts only the element-wise kLoop kernels ('any kind, kLoop or kCustom'); wrong on the "
    "momentum step: 12 instead of 15 (the three __ynn_fusion matmuls are kCustom)",
)
def loop_fusions_only(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return sum(
        i.opcode == "fusion" and i.attribute("kind") == "kLoop"
        for c in module.computations
        for i in c.instructions
    )


# --- aliased_parameters ----------------------------------------------------------------------


def _rt_alias_pairs(compiled) -> list[tuple[int, int]]:
    text = parse_hlo(compiled.as_text()).attributes.get("input_output_alias") or ""
    return [(int(o), int(p)) for o, p in re.findall(r"\{(\d+)\}:\s*\((\d+),", text)]


@wrong(
    "aliased_parameters",
    why="'Sorted ... ascending': lists the parameter numbers in output order; right when the step "
    "returns (params, state, loss), wrong on returns_state_first: [4, 0, 1, 2, 3, 5, ...]",
)
def aliases_in_output_order(compiled) -> list[int]:
    found: list[int] = []
    for _, parameter in _rt_alias_pairs(compiled):
        if parameter not in found:
            found.append(parameter)
    return found


@wrong(
    "aliased_parameters",
    why="reads the output index `{n}` instead of the parameter number; right when outputs and "
    "donated parameters line up (the momentum step), wrong on batch_first "
    "(step(x, y, params, state)): [0..12] instead of [2..14]",
)
def output_indices(compiled) -> list[int]:
    return sorted({output for output, _ in _rt_alias_pairs(compiled)})


# --- flops_per_step --------------------------------------------------------------------------


@wrong(
    "flops_per_step",
    why="adds transcendentals to flops ('Only \"flops\": transcendentals ... not added'); right "
    "on the momentum step (no transcendental), wrong on tanh_forward (wide data): "
    "10784.0 instead of 10528.0",
)
def flops_plus_transcendentals(compiled) -> float:
    cost = compiled.cost_analysis() or {}
    return float(cost.get("flops", 0.0) + cost.get("transcendentals", 0.0))


@wrong(
    "flops_per_step",
    why="counts 2*m*k*n of every dot in the optimized HLO instead of asking the cost model, "
    "which also counts the element-wise work; wrong on the momentum step: 22528.0 instead of "
    "27148.0",
)
def dot_flops_from_text(compiled) -> float:
    module = parse_hlo(compiled.as_text())
    total = 0
    for d in dots(module):
        lhs = list(Shape(d.lhs_shape).dims)
        rhs = list(Shape(d.rhs_shape).dims)
        k = lhs[d.lhs_contracting_dims[0]] if d.lhs_contracting_dims else 1
        m = lhs[1 - d.lhs_contracting_dims[0]] if len(lhs) == 2 else 1
        n = rhs[1 - d.rhs_contracting_dims[0]] if len(rhs) == 2 else 1
        total += 2 * m * k * n
    return float(total)


# --- transpose_counts ------------------------------------------------------------------------


@wrong(
    "transpose_counts",
    why="the HLO count is taken from the lowered (unoptimized StableHLO) text instead of the "
    "optimized module, so transposes XLA folded into a dot are still counted; wrong on "
    "nested_transposes: (3, 3) instead of (3, 2)",
)
def transposes_before_optimization(step, *args) -> tuple[int, int]:
    jaxpr_count = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    lowered = jax.jit(step).lower(*args).as_text()
    return jaxpr_count, len(re.findall(r"stablehlo\.transpose\b", lowered))


@wrong(
    "transpose_counts",
    why="'nested jaxprs included' ignored: counts the top-level equations only; wrong on "
    "nested_transposes (a jit, a scan body, a cond branch): 0 instead of 3",
)
def top_level_jaxpr_only(step, *args) -> tuple[int, int]:
    jaxpr = jax.make_jaxpr(step)(*args)
    top = sum(e.primitive.name == "transpose" for e in jaxpr.jaxpr.eqns)
    module = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    return top, opcode_counts(module)["transpose"]


# --- absorbed_transposes ---------------------------------------------------------------------


@wrong(
    "absorbed_transposes",
    why="counts transposed operands instead of dots: a dot that reads both operands transposed "
    "(a.T @ b.T: lhs_contracting_dims={0}, rhs_contracting_dims={1}) counts twice; right on the "
    "MLP steps (no dot has both), wrong on jit(lambda a, b: a.T @ b.T): 2 instead of 1",
)
def counts_operands_not_dots(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    return sum(
        (d.lhs_contracting_dims != (1,)) + (d.rhs_contracting_dims != (0,)) for d in dots(module)
    )


@wrong(
    "absorbed_transposes",
    why="'on either side': looks at the lhs only (the x^T @ g of the README); wrong on the "
    "momentum step, whose g @ w2^T reads w2 through rhs_contracting_dims={1}: 2 instead of 3",
)
def lhs_side_only(compiled) -> int:
    return sum(d.lhs_contracting_dims != (1,) for d in dots(parse_hlo(compiled.as_text())))


# --- predict_alias_bytes ---------------------------------------------------------------------


@wrong(
    "predict_alias_bytes",
    why="'look at every leaf, the small ones too': adam's int32 step count (4 bytes, aliased) is "
    "left out; wrong on (16, 32, 4, 'adam'): 8112 instead of 8116",
)
def adam_without_count(features: int, hidden: int, out: int, optimizer: str) -> int:
    size = _rt_param_bytes(features, hidden, out)
    return {"sgd": size, "momentum": 2 * size, "adam": 3 * size}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': only the optimizer state is counted as "
    "donated-and-reused, the params are forgotten (sgd then saves nothing); wrong on "
    "(16, 32, 4, 'sgd'): 0 instead of 2704",
)
def state_only(features: int, hidden: int, out: int, optimizer: str) -> int:
    size = _rt_param_bytes(features, hidden, out)
    return {"sgd": 0, "momentum": size, "adam": 2 * size + 4}[optimizer]


# --- predict_step_flops ----------------------------------------------------------------------


@wrong(
    "predict_step_flops",
    why="'the gradient into the hidden layer' left out: forward 2bfh + 2bho, weight gradients "
    "2bfh + 2bho, but no g @ w2^T; within 10% when out is tiny, wrong on (64, 128, 32, 64): "
    "3145728 against a measured 3787232 (17% low; the right count 3670016 is 3% low)",
)
def no_hidden_gradient(features: int, hidden: int, out: int, batch: int) -> int:
    forward = 2 * batch * features * hidden + 2 * batch * hidden * out
    weight_grads = 2 * batch * features * hidden + 2 * batch * hidden * out
    return forward + weight_grads


@wrong(
    "predict_step_flops",
    why="the 'backward is twice the forward' rule of thumb, which also computes the gradient "
    "into the data ('No gradient flows into the data'); wrong on (64, 128, 32, 64): 4718592 "
    "against a measured 3787232 (25% high)",
)
def three_times_forward(features: int, hidden: int, out: int, batch: int) -> int:
    return 3 * (2 * batch * features * hidden + 2 * batch * hidden * out)
