"""Red-team wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import optax  # noqa: F401

from kata_harness.decoys import wrong


def _rt5_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt5_example_loss(params, x, y):
    return jnp.mean((_rt5_forward(params, x) - y) ** 2)


# ---------------------------------------------------------------- per_example_losses
@wrong(
    "per_example_losses",
    why="shape must be (batch,) also for batch 1; squeeze gives shape () on batch 1 (SIZES['one'])",
)
def _rt5_per_example_losses_squeezed(params, x, y):
    return jnp.squeeze(jax.vmap(_rt5_example_loss, in_axes=(None, 0, 0))(params, x, y))


@wrong(
    "per_example_losses",
    why="no lax.map over examples: optimized HLO has a while loop and per-example matmuls; "
    "wrong on any batch, e.g. wide (8,16)",
)
def _rt5_per_example_losses_lax_map(params, x, y):
    return jax.lax.map(lambda xy: _rt5_example_loss(params, xy[0], xy[1]), (x, y))


@wrong(
    "per_example_losses",
    why="no Python loop: eagerly this runs one pair of matmuls per example (jitted it unrolls "
    "into batch-many dots); wrong on batch 8",
)
def _rt5_per_example_losses_python_loop(params, x, y):
    return jnp.stack([_rt5_example_loss(params, x[i], y[i]) for i in range(x.shape[0])])


@wrong(
    "per_example_losses",
    why="mean over the output axis computed in bfloat16: the losses are not example_loss's "
    "float32 values (off by ~1e-2 relative); wrong on wide",
)
def _rt5_per_example_losses_bf16(params, x, y):
    p16 = jax.tree.map(lambda a: jnp.asarray(a, jnp.bfloat16), params)
    out = jax.vmap(_rt5_example_loss, in_axes=(None, 0, 0))(
        p16, x.astype(jnp.bfloat16), y.astype(jnp.bfloat16)
    )
    return out.astype(jnp.float32)


# ---------------------------------------------------------------- make_train_step
def _rt5_mean_loss(params, x, y):
    return jnp.mean(jax.vmap(_rt5_example_loss, in_axes=(None, 0, 0))(params, x, y))


@wrong(
    "make_train_step",
    why="optimizer.update must get params (adamw's weight decay reads them); without them "
    "adamw fails/does no decay; wrong on optax.adamw(1e-2)",
)
def _rt5_make_train_step_no_params_to_update(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_rt5_mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="the batch is not donated; donate_argnums=(0,1,2,3) donates x and y too; wrong on any "
    "call (x deleted after the call / aliasing list includes the batch)",
)
def _rt5_make_train_step_donates_batch(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_rt5_mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1, 2, 3))


@wrong(
    "make_train_step",
    why="every leaf of params AND opt_state is donated; donating only params leaves the "
    "momentum trace / adam mu,nu undonated; wrong on sgd(0.05, momentum=0.9)",
)
def _rt5_make_train_step_donates_params_only(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_rt5_mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=0)


@wrong(
    "make_train_step",
    why="returned opt_state must be the optimizer's NEW state; returning the old one makes "
    "momentum/adam restart each call; wrong on the 2nd call with momentum or adam",
)
def _rt5_make_train_step_old_state(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_rt5_mean_loss)(params, x, y)
        updates, new_state = optimizer.update(grads, opt_state, params)
        # keep structure from new_state but values of the old one (a 'reset' bug)
        kept = jax.tree.map(lambda old, new: old + 0 * new, opt_state, new_state)
        return optax.apply_updates(params, updates), kept, loss

    return jax.jit(step, donate_argnums=(0, 1))


# ---------------------------------------------------------------- HLO helpers
_rt5_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")


def _rt5_computations(text):
    """[(name, is_entry, [body lines])]"""
    comps, cur = [], None
    for line in text.splitlines():
        m = _rt5_COMP_HEAD.match(line)
        if m and not line.startswith(" "):
            cur = (m.group(2), bool(m.group(1)), [])
            comps.append(cur)
        elif line.startswith("}"):
            cur = None
        elif cur is not None:
            cur[2].append(line)
    return comps


_rt5_OPCODE = re.compile(r"=\s*(\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(")


def _rt5_opcode(line):
    m = _rt5_OPCODE.search(line)
    return m.group(2) if m else None


def _rt5_fused_names(text):
    return set(re.findall(r"calls=%?([\w.\-]+)", text)) & {
        n for n, _, body in _rt5_computations(text)
    }


# ---------------------------------------------------------------- fusion_count
@wrong(
    "fusion_count",
    why="every computation counts, conditional branches too; this follows ENTRY and while "
    "body/condition only, missing fusions in lax.switch/cond branches (switch_program(3))",
)
def _rt5_fusion_count_skips_branches(compiled):
    text = compiled.as_text()
    comps = {n: (e, b) for n, e, b in _rt5_computations(text)}
    seen, todo, count = set(), [n for n, (e, _) in comps.items() if e], 0
    while todo:
        name = todo.pop()
        if name in seen or name not in comps:
            continue
        seen.add(name)
        for line in comps[name][1]:
            if _rt5_opcode(line) == "fusion":
                count += 1
            for attr in ("body", "condition"):
                m = re.search(attr + r"=%?([\w.\-]+)", line)
                if m:
                    todo.append(m.group(1))
    return count


@wrong(
    "fusion_count",
    why="counted by opcode, not by names: counting `%fused_computation*` definitions misses "
    "fusions whose computation is named `%wrapped_*` (single-op kLoop wrappers); wrong on "
    "jnp.sin(a).sum(0), jnp.sin(a).sum(1) (says 1, has 4) and on the momentum step at "
    "(64,128,256,32)",
)
def _rt5_fusion_count_by_computation_names(compiled):
    return len(re.findall(r"^%fused_computation[\w.]*\s*\(", compiled.as_text(), re.M))


@wrong(
    "fusion_count",
    why="any kind counts, kLoop or kCustom; counting `kind=kLoop` only misses the kCustom "
    "(ynn) dot/reduce fusions; wrong on the momentum step (wide: 12 instead of 15; "
    "(64,128,256,32): 13 instead of 19)",
)
def _rt5_fusion_count_kloop_only(compiled):
    return sum(
        1
        for line in compiled.as_text().splitlines()
        if _rt5_opcode(line) == "fusion" and "kind=kLoop" in line
    )


# ---------------------------------------------------------------- aliased_parameters
_rt5_ALIAS = re.compile(r"\{[\d,\s]*\}:\s*\((\d+),\s*\{[\d,\s]*\},\s*(?:may|must)-alias\)")


@wrong(
    "aliased_parameters",
    why="each number once, ascending: header order follows OUTPUT index, so for "
    "returns_state_first (loss, state, params) the list comes out unsorted",
)
def _rt5_aliased_parameters_header_order(compiled):
    out = []
    for p in _rt5_ALIAS.findall(compiled.as_text().splitlines()[0]):
        if int(p) not in out:
            out.append(int(p))
    return out


@wrong(
    "aliased_parameters",
    why="donated params are not always 0..n-1; range(len(aliases)) is wrong for "
    "batch_first step(x, y, params, state) donating 2,3 (params start at parameter 2)",
)
def _rt5_aliased_parameters_from_zero(compiled):
    return list(range(len(_rt5_ALIAS.findall(compiled.as_text().splitlines()[0]))))


@wrong(
    "aliased_parameters",
    why="reads the header's OUTPUT index instead of the parameter number; equal on the "
    "momentum step, wrong on returns_state_first where param i is output {2,..}",
)
def _rt5_aliased_parameters_output_index(compiled):
    head = compiled.as_text().splitlines()[0]
    nums = set()
    for m in re.finditer(r"\{([\d,\s]*)\}:\s*\(\d+,", head):
        parts = [s for s in m.group(1).split(",") if s.strip()]
        nums.add(int(parts[-1]) if parts else 0)
    return sorted(nums)


# ---------------------------------------------------------------- flops_per_step
def _rt5_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return ca or {}


@wrong(
    "flops_per_step",
    why="transcendentals are a separate count, not added; wrong on tanh_forward (tanh counted)",
)
def _rt5_flops_per_step_plus_transcendentals(compiled):
    ca = _rt5_ca(compiled)
    return float(ca.get("flops", 0.0) + ca.get("transcendentals", 0.0))


@wrong(
    "flops_per_step",
    why="XLA counts a while body once; scaling by known_trip_count doubles two_steps' flops",
)
def _rt5_flops_per_step_scaled_by_trips(compiled):
    flops = float(_rt5_ca(compiled).get("flops", 0.0))
    trips = [int(t) for t in re.findall(r"known_trip_count[^0-9]*(\d+)", compiled.as_text())]
    return flops * (max(trips) if trips else 1)


@wrong(
    "flops_per_step",
    why="the flops XLA's cost model reports, not a hand count of 2*m*k*n per dot: elementwise "
    "work is left out; wrong on a.T * 2 (128 multiplies, this says 0) and off on tanh_forward",
)
def _rt5_flops_per_step_dots_only(compiled):
    text = compiled.as_text()
    shapes = {}
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\w+\[([\d,]*)\]", line)
        if m:
            shapes[m.group(1)] = [int(d) for d in m.group(2).split(",") if d]
    total = 0.0
    for line in text.splitlines():
        m = re.match(
            r"\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*\w+\[([\d,]*)\]\S*\s+dot\(%?([\w.\-]+).*"
            r"lhs_contracting_dims=\{(\d+)\}",
            line,
        )
        if m:
            out = [int(d) for d in m.group(1).split(",") if d]
            lhs = shapes.get(m.group(2))
            k = lhs[int(m.group(3))] if lhs else 1
            n = 1
            for d in out:
                n *= d
            total += 2.0 * n * k
    return total


# ---------------------------------------------------------------- transpose_counts
def _rt5_hlo_transposes_all(text):
    return sum(1 for line in text.splitlines() if _rt5_opcode(line) == "transpose")


def _rt5_jaxpr_count(jaxpr, into_branches=True, into_nested=True):
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        if not into_nested:
            continue
        for v in eqn.params.values():
            vals = v if isinstance(v, (list, tuple)) else [v]
            if isinstance(v, (list, tuple)) and not into_branches:
                continue
            for item in vals:
                inner = getattr(item, "jaxpr", None)
                if hasattr(item, "eqns"):
                    n += _rt5_jaxpr_count(item, into_branches, into_nested)
                elif inner is not None and hasattr(inner, "eqns"):
                    n += _rt5_jaxpr_count(inner, into_branches, into_nested)
    return n


@wrong(
    "transpose_counts",
    why="nested jaxprs count; top-level eqns only miss the transposes inside pjit/scan/cond "
    "(nested_transposes gives 0 jaxpr transposes instead of 3)",
)
def _rt5_transpose_counts_top_level(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    return (_rt5_jaxpr_count(closed.jaxpr, into_nested=False), _rt5_hlo_transposes_all(text))


@wrong(
    "transpose_counts",
    why="cond branches are nested jaxprs too; recursing only into single-jaxpr params (jaxpr, "
    "body) skips `branches` tuples; wrong on nested_transposes (cond's m.T) -> 2 not 3",
)
def _rt5_transpose_counts_no_branches(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    return (_rt5_jaxpr_count(closed.jaxpr, into_branches=False), _rt5_hlo_transposes_all(text))


@wrong(
    "transpose_counts",
    why="HLO count is by opcode; counting lines mentioning 'transpose' also counts fusion "
    "names and metadata op_name=.../transpose(jvp())...; wrong on any grad step",
)
def _rt5_transpose_counts_by_name(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = sum(1 for line in text.splitlines() if " = " in line and "transpose" in line)
    return (_rt5_jaxpr_count(closed.jaxpr), hlo)


@wrong(
    "transpose_counts",
    why="the HLO count is of the OPTIMIZED module; counting the unoptimized lowered HLO "
    "counts transposes XLA later folds into dots; wrong on any grad step (momentum_step)",
)
def _rt5_transpose_counts_unoptimized(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).as_text(dialect="hlo")
    return (_rt5_jaxpr_count(closed.jaxpr), _rt5_hlo_transposes_all(text))


# ---------------------------------------------------------------- absorbed_transposes
_rt5_DOT_DIMS = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}.*?rhs_contracting_dims=\{([\d,]*)\}")


def _rt5_dots(text, skip=()):
    for name, _, body in _rt5_computations(text):
        if name in skip:
            continue
        for line in body:
            if _rt5_opcode(line) == "dot":
                m = _rt5_DOT_DIMS.search(line)
                if m:
                    yield m.group(1), m.group(2)


@wrong(
    "absorbed_transposes",
    why="either side counts; only looking at lhs_contracting_dims misses dots whose rhs is "
    "read transposed (rhs_contracting_dims={1}), e.g. the x@w2 backward dot of momentum_step",
)
def _rt5_absorbed_transposes_lhs_only(compiled):
    return sum(1 for lhs, _ in _rt5_dots(compiled.as_text()) if lhs != "1")


@wrong(
    "absorbed_transposes",
    why="a dot reading both operands transposed is ONE dot; counting per side gives 2 for "
    "a.T @ b.T in transposed_products",
)
def _rt5_absorbed_transposes_per_side(compiled):
    return sum((lhs != "1") + (rhs != "0") for lhs, rhs in _rt5_dots(compiled.as_text()))


@wrong(
    "absorbed_transposes",
    why="dots in fused computations count; skipping fused computations misses the kCustom "
    "(ynn) dot fusions: momentum_step (wide) has its rhs_contracting_dims={1} dot in a fused "
    "computation -> 2 instead of 3",
)
def _rt5_absorbed_transposes_unfused_only(compiled):
    text = compiled.as_text()
    fused = {n for n in _rt5_fused_names(text) if n.startswith("fused")}
    return sum(1 for lhs, rhs in _rt5_dots(text, skip=fused) if lhs != "1" or rhs != "0")


# ---------------------------------------------------------------- predict_alias_bytes
def _rt5_param_bytes(f, h, o):
    return 4 * (f * h + h + h * o + o)


@wrong(
    "predict_alias_bytes",
    why="adam's count (int32 scalar, 4 bytes) is donated and comes back too; 3*params bytes "
    "misses it: wrong by 4 on ('adam', any size)",
)
def _rt5_predict_alias_bytes_no_count(features, hidden, out, optimizer):
    return _rt5_param_bytes(features, hidden, out) * {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="biases are donated leaves too; counting only the weight matrices is wrong for every "
    "size, e.g. (16,32,4,'sgd') says 2560 not 2704",
)
def _rt5_predict_alias_bytes_weights_only(features, hidden, out, optimizer):
    w = 4 * (features * hidden + hidden * out)
    return w * {"sgd": 1, "momentum": 2, "adam": 3}[optimizer] + (4 if optimizer == "adam" else 0)


@wrong(
    "predict_alias_bytes",
    why="adam's count is int32 (4 bytes), not 8 (no x64); wrong by 4 on ('adam', any size)",
)
def _rt5_predict_alias_bytes_count_int64(features, hidden, out, optimizer):
    p = _rt5_param_bytes(features, hidden, out)
    return {"sgd": p, "momentum": 2 * p, "adam": 3 * p + 8}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="sgd keeps no state but the params are still donated and aliased; returning 0 for sgd "
    "(thinking only optimizer state is aliased) is wrong on ('sgd', any size)",
)
def _rt5_predict_alias_bytes_state_only_for_sgd(features, hidden, out, optimizer):
    p = _rt5_param_bytes(features, hidden, out)
    return {"sgd": 0, "momentum": 2 * p, "adam": 3 * p + 4}[optimizer]


# ---------------------------------------------------------------- predict_step_flops
@wrong(
    "predict_step_flops",
    why="the gradient w.r.t. x (the batch) is never needed; the 'backward = 2x forward' rule "
    "adds 2*b*f*h: wrong by >10% when f*h dominates, e.g. (1024, 1024, 2, 64)",
)
def _rt5_predict_step_flops_three_times_forward(features, hidden, out, batch):
    return 3 * (2 * batch * features * hidden + 2 * batch * hidden * out)


@wrong(
    "predict_step_flops",
    why="the hidden activation's gradient g@w2.T (2*b*o*h) is needed to reach w1; counting "
    "only weight gradients is off by >10% when h*o dominates, e.g. (2, 512, 512, 64)",
)
def _rt5_predict_step_flops_weight_grads_only(features, hidden, out, batch):
    return 2 * (2 * batch * features * hidden + 2 * batch * hidden * out)


@wrong(
    "predict_step_flops",
    why="a product of (m,k) by (k,n) is 2*m*k*n flops; counting m*k*n (multiply-adds) halves "
    "every size, e.g. (16,32,4,8)",
)
def _rt5_predict_step_flops_macs(features, hidden, out, batch):
    b, f, h, o = batch, features, hidden, out
    return 2 * b * f * h + 3 * b * h * o
