"""Red-team wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo, primitive_census


def _rt6_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt6_example_loss(params, x, y):
    return jnp.mean((_rt6_forward(params, x) - y) ** 2)


def _rt6_vmapped(params, x, y):
    return jax.vmap(_rt6_example_loss, in_axes=(None, 0, 0))(params, x, y)


# ---------------------------------------------------------------- per_example_losses
@wrong(
    "per_example_losses",
    why="shape (batch,) 'also 1' broken: .squeeze() gives shape () for "
    "batch 1; wrong on SIZES['one'] (batch=1)",
)
def _rt6_per_example_losses_squeezed(params, x, y):
    return jnp.squeeze(_rt6_vmapped(params, x, y))


@wrong(
    "per_example_losses",
    why="'the same holds eagerly': vmap only under a tracer, a Python "
    "loop of per-example matmul pairs when called eagerly; wrong on an eager call with "
    "data('wide')",
)
def _rt6_per_example_losses_eager_loop(params, x, y):
    if isinstance(x, jax.core.Tracer):
        return _rt6_vmapped(params, x, y)
    return jnp.stack([_rt6_example_loss(params, x[i], y[i]) for i in range(x.shape[0])])


@wrong(
    "per_example_losses",
    why="Python loop over rows (unrolled under jit): values right but "
    "the HLO has one dot pair per example, not two matmuls over the batch; wrong on "
    "data('wide') batch 8 (right only for batch 1)",
)
def _rt6_per_example_losses_unrolled(params, x, y):
    return jnp.stack(
        [_rt6_example_loss(params, x[i : i + 1], y[i : i + 1]) for i in range(x.shape[0])]
    )


# ---------------------------------------------------------------- make_train_step
def _rt6_mean_loss(params, x, y):
    return jnp.mean(_rt6_vmapped(params, x, y))


@wrong(
    "make_train_step",
    why="'the batch is not donated': donate_argnums=(0,1,2,3) donates x, y "
    "too; wrong on any call (x's buffer is deleted after the step)",
)
def _rt6_make_train_step_donates_batch(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_rt6_mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1, 2, 3))


@wrong(
    "make_train_step",
    why="'loss before the update' broken: returns the loss of the new "
    "params; wrong on step_args() with sgd momentum (loss changes after the update)",
)
def _rt6_make_train_step_loss_after(optimizer):
    def step(params, opt_state, x, y):
        grads = jax.grad(_rt6_mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, _rt6_mean_loss(params, x, y)

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'params and opt_state (every leaf) are donated': donates only "
    "params (0,), state buffers not aliased; wrong on momentum/adam (state leaves not donated)",
)
def _rt6_make_train_step_params_only(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_rt6_mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0,))


# ---------------------------------------------------------------- fusion_count
def _rt6_module(compiled):
    return parse_hlo(compiled.as_text())


@wrong(
    "fusion_count",
    why="'any kind, kLoop or kCustom': counts only kind=kLoop fusions; wrong "
    "on the momentum step (it has kCustom dot fusions)",
)
def _rt6_fusion_count_kloop_only(compiled):
    return sum(
        1
        for comp in _rt6_module(compiled)
        for i in comp
        if i.opcode == "fusion" and i.attribute("kind") == "kLoop"
    )


def _rt6_reachable(module, follow):
    seen, todo = set(), [module.entry.name]
    while todo:
        name = todo.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen.add(name)
        for inst in module[name]:
            for key in follow:
                val = inst.attribute(key)
                if val:
                    todo.extend(n.strip().lstrip("%") for n in val.strip("{}").split(","))
    return seen


@wrong(
    "fusion_count",
    why="'conditional branches' clause: follows while body/condition and "
    "fusion calls= only, not branch_computations; wrong on switch_program(2) and "
    "branch_with_a_loop(3) (branch kernels missed)",
)
def _rt6_fusion_count_no_branches(compiled):
    m = _rt6_module(compiled)
    names = _rt6_reachable(m, ("body", "condition", "calls"))
    return sum(1 for c in m if c.name in names for i in c if i.opcode == "fusion")


@wrong(
    "fusion_count",
    why="regex over lines '  %name = shape fusion(' misses ROOT fusions "
    "(a branch's or ENTRY's root kernel) and tuple-shaped multi-output fusions; wrong on "
    "branch_with_a_loop(3) and tanh_forward (ENTRY root is a fusion)",
)
def _rt6_fusion_count_regex_lines(compiled):
    return len(re.findall(r"^\s+%[\w.\-]+ = \S+ fusion\(", compiled.as_text(), flags=re.M))


# ---------------------------------------------------------------- aliased_parameters
def _rt6_alias_text(compiled):
    return _rt6_module(compiled).attributes.get("input_output_alias") or ""


@wrong(
    "aliased_parameters",
    why="reads the output index {k} instead of the parameter number; "
    "wrong on returns_state_first and batch_first (outputs not numbered like parameters)",
)
def _rt6_aliased_parameters_output_index(compiled):
    return sorted({int(k) for k in re.findall(r"\{(\d+)[,}]", _rt6_alias_text(compiled))})


@wrong(
    "aliased_parameters",
    why="'sorted ... ascending' broken: parameter numbers in header "
    "(output) order; wrong on returns_state_first where output {0} is not parameter 0",
)
def _rt6_aliased_parameters_header_order(compiled):
    out = []
    for p in re.findall(r":\s*\((\d+)", _rt6_alias_text(compiled)):
        if int(p) not in out:
            out.append(int(p))
    return out


@wrong(
    "aliased_parameters",
    why="assumes donated params are 0..n-1: returns range(count of "
    "aliased parameters); wrong on batch_first (2,3 donated) and 'only the state donated'",
)
def _rt6_aliased_parameters_from_zero(compiled):
    n = len(set(re.findall(r":\s*\((\d+)", _rt6_alias_text(compiled))))
    return list(range(n))


# ---------------------------------------------------------------- flops_per_step
def _rt6_cost(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return ca or {}


@wrong(
    "flops_per_step",
    why="'transcendentals are a separate count, not added': adds them; "
    "wrong on tanh_forward / BRANCH_KINDS[2] (exp)",
)
def _rt6_flops_per_step_plus_transcendentals(compiled):
    ca = _rt6_cost(compiled)
    return float(ca.get("flops", 0.0)) + float(ca.get("transcendentals", 0.0))


@wrong(
    "flops_per_step",
    why="'do not scale a loop by its trip count': multiplies by every "
    "while's known_trip_count; wrong on two_steps (fori_loop of 2)",
)
def _rt6_flops_per_step_scaled_by_trips(compiled):
    flops = float(_rt6_cost(compiled).get("flops", 0.0))
    for n in re.findall(r"known_trip_count[^0-9]*(\d+)", compiled.as_text()):
        flops *= int(n)
    return flops


@wrong(
    "flops_per_step",
    why="sums every cost key mentioning 'flops' or 'utilization' (thinks "
    "the per-operand utilization entries are flop parts); wrong on the momentum step",
)
def _rt6_flops_per_step_summed_keys(compiled):
    ca = _rt6_cost(compiled)
    return float(sum(v for k, v in ca.items() if "flops" in k or "utilization" in k))


# ---------------------------------------------------------------- transpose_counts
def _rt6_hlo_transposes(module, skip_fused=False):
    fused = {n for c in module for i in c if i.opcode == "fusion" for n in i.called_computations}
    return sum(
        1
        for c in module
        if not (skip_fused and c.name in fused)
        for i in c
        if i.opcode == "transpose"
    )


@wrong(
    "transpose_counts",
    why="'fused computations included' broken: HLO count skips "
    "computations called by fusions; wrong on nested_transposes / a transpose fused into a "
    "loop fusion",
)
def _rt6_transpose_counts_no_fused(step, *args):
    jp = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    m = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    return jp, _rt6_hlo_transposes(m, skip_fused=True)


def _rt6_walk(jaxpr):
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        for key in ("jaxpr", "call_jaxpr", "body_jaxpr", "cond_jaxpr"):
            inner = eqn.params.get(key)
            if inner is not None:
                n += _rt6_walk(getattr(inner, "jaxpr", inner))
    return n


@wrong(
    "transpose_counts",
    why="hand-written jaxpr recursion follows jaxpr/body_jaxpr but not a "
    "cond's 'branches' tuple; wrong on nested_transposes (the cond branch m.T)",
)
def _rt6_transpose_counts_no_branches(step, *args):
    jp = _rt6_walk(jax.make_jaxpr(step)(*args).jaxpr)
    m = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    return jp, _rt6_hlo_transposes(m)


@wrong(
    "transpose_counts",
    why="'optimized HLO' broken: counts stablehlo.transpose in the "
    "lowered (unoptimized) text; wrong on nested_transposes and any grad whose transposes "
    "XLA folds into dots",
)
def _rt6_transpose_counts_lowered(step, *args):
    jp = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    text = jax.jit(step).lower(*args).as_text()
    return jp, len(re.findall(r"stablehlo\.transpose\b", text))


# ---------------------------------------------------------------- absorbed_transposes
def _rt6_dots(module, names=None):
    for c in module:
        if names is not None and c.name not in names:
            continue
        for i in c:
            if i.opcode == "dot":
                yield i


def _rt6_transposed(i):
    return (
        i.attribute("lhs_contracting_dims", "{1}").replace(" ", "") != "{1}",
        i.attribute("rhs_contracting_dims", "{0}").replace(" ", "") != "{0}",
    )


@wrong(
    "absorbed_transposes",
    why="'a dot reading both operands transposed is one dot' broken: "
    "counts each transposed side; wrong on transposed_products (a.T @ b.T counts 2)",
)
def _rt6_absorbed_transposes_per_side(compiled):
    return sum(sum(_rt6_transposed(i)) for i in _rt6_dots(_rt6_module(compiled)))


@wrong(
    "absorbed_transposes",
    why="'on either side' broken: only checks lhs_contracting_dims; "
    "wrong on transposed_products (the rhs-only d.T dot is missed)",
)
def _rt6_absorbed_transposes_lhs_only(compiled):
    return sum(1 for i in _rt6_dots(_rt6_module(compiled)) if _rt6_transposed(i)[0])


@wrong(
    "absorbed_transposes",
    why="'loop bodies too' broken: walks ENTRY and what fusions/calls "
    "reach, not while body/condition; wrong on transposed_in_a_loop",
)
def _rt6_absorbed_transposes_no_loops(compiled):
    m = _rt6_module(compiled)
    names = _rt6_reachable(m, ("calls", "to_apply", "branch_computations"))
    return sum(1 for i in _rt6_dots(m, names) if any(_rt6_transposed(i)))


# ---------------------------------------------------------------- predict_alias_bytes
def _rt6_param_elems(features, hidden, out):
    return features * hidden + hidden + hidden * out + out


@wrong(
    "predict_alias_bytes",
    why="adam's count taken as int64 (8 bytes), it is int32 (4); "
    "wrong on every adam size, e.g. (3, 6, 2, 'adam')",
)
def _rt6_predict_alias_bytes_count64(features, hidden, out, optimizer):
    p = 4 * _rt6_param_elems(features, hidden, out)
    return {"sgd": p, "momentum": 2 * p, "adam": 3 * p + 8}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="gives momentum a step count too (+4 bytes), sgd-momentum's "
    "trace keeps only the velocity; wrong on (16, 32, 4, 'momentum')",
)
def _rt6_predict_alias_bytes_momentum_count(features, hidden, out, optimizer):
    p = 4 * _rt6_param_elems(features, hidden, out)
    return {"sgd": p, "momentum": 2 * p + 4, "adam": 3 * p + 4}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="counts elements, not bytes (forgets f32 is 4 bytes, count is "
    "one element); wrong on any size, e.g. (5, 7, 3, 'sgd')",
)
def _rt6_predict_alias_bytes_elements(features, hidden, out, optimizer):
    p = _rt6_param_elems(features, hidden, out)
    return {"sgd": p, "momentum": 2 * p, "adam": 3 * p + 1}[optimizer]


# ---------------------------------------------------------------- predict_step_flops
@wrong(
    "predict_step_flops",
    why="counts the input gradient dx nobody asks for (3x forward); "
    "wrong by 50% when features*hidden dominates, e.g. (512, 512, 1, 64)",
)
def _rt6_predict_step_flops_with_dx(features, hidden, out, batch):
    return 3 * (2 * batch * features * hidden + 2 * batch * hidden * out)


@wrong(
    "predict_step_flops",
    why="backward = forward (one product per layer): 2x forward; "
    "wrong by a third when hidden*out dominates, e.g. (1, 512, 512, 64)",
)
def _rt6_predict_step_flops_twice_forward(features, hidden, out, batch):
    return 2 * (2 * batch * features * hidden + 2 * batch * hidden * out)


@wrong(
    "predict_step_flops",
    why="skips the whole first layer backward (thinks layer 1 needs no "
    "backward product since dx is unused) and drops dW1; wrong by 50% when features*hidden "
    "dominates, e.g. (512, 512, 1, 64)",
)
def _rt6_predict_step_flops_no_dw1(features, hidden, out, batch):
    return 2 * batch * features * hidden + 3 * 2 * batch * hidden * out
