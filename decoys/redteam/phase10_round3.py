"""Red-team wrong answers for phase 10, written from the contract only.

Round 3: answers that fit the lesson's examples (the momentum step, ENTRY-only programs, kLoop
and kCustom fusions named fused_computation.N, fewer than ten donated leaves, batch sizes where
the forward products dominate) but break the contract on another valid input.
"""

from __future__ import annotations

import re as rt3_re

import jax
import jax.numpy as jnp
import optax

import xla_inspect as rt3_xla_inspect
from kata_harness.decoys import wrong


def _rt3_helper_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt3_helper_example_loss(params, x, y):
    return jnp.mean((_rt3_helper_forward(params, x) - y) ** 2)


def _rt3_helper_batched(params, x, y):
    return jax.vmap(_rt3_helper_example_loss, in_axes=(None, 0, 0))(params, x, y)


# ---------------------------------------------------------------- task 1: per_example_losses


@wrong(
    "per_example_losses",
    why="shape (batch,) for any batch size; keepdims=True returns (batch, 1): wrong on every "
    "batch, e.g. data('wide') gives (8, 1)",
)
def _rt3_losses_keepdims(params, x, y):
    return jnp.mean((_rt3_helper_forward(params, x) - y) ** 2, axis=-1, keepdims=True)


@wrong(
    "per_example_losses",
    why="shape (batch,) 'also 1'; squeezing the vmapped result returns a 0-d scalar for a batch "
    "of one: wrong on data('one') (x f32[1,5])",
)
def _rt3_losses_squeezed(params, x, y):
    return jnp.squeeze(_rt3_helper_batched(params, x, y))


@wrong(
    "per_example_losses",
    why="one batched program with no while loop; jax.lax.map over the rows compiles to a while "
    "loop with per-example matmuls: wrong on data('wide') (values right, HLO has a while)",
)
def _rt3_losses_lax_map(params, x, y):
    return jax.lax.map(lambda xy: _rt3_helper_example_loss(params, xy[0], xy[1]), (x, y))


@wrong(
    "per_example_losses",
    why="mean squared error of one example; the textbook sum of squares over the outputs is "
    "out times too large: wrong whenever out > 1, e.g. data('odd') (out 2)",
)
def _rt3_losses_sum_of_squares(params, x, y):
    return jnp.sum((_rt3_helper_forward(params, x) - y) ** 2, axis=-1)


# ---------------------------------------------------------------- task 2: make_train_step


@wrong(
    "make_train_step",
    why="update from the gradient of the MEAN loss; this differentiates the sum of per-example "
    "losses (and reports the mean), exact only for a batch of one: wrong on data('wide') (batch 8)",
)
def _rt3_step_grad_of_sum(optimizer):
    def step(params, opt_state, x, y):
        def total(p):
            losses = _rt3_helper_batched(p, x, y)
            return jnp.sum(losses), jnp.mean(losses)

        (_, loss), grads = jax.value_and_grad(total, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="params and opt_state (every leaf) donated; donate_argnums=(0,) leaves the optimizer "
    "state undonated (no alias for the momentum trace / adam moments): wrong for sgd momentum",
)
def _rt3_step_donates_params_only(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt3_helper_batched(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0,))


@wrong(
    "make_train_step",
    why="the returned opt_state is the optimizer's NEW state; a shadowing slip returns the "
    "incoming state, so momentum/adam restart every call: right for plain sgd and for one step "
    "only, wrong on the second step of sgd momentum or adamw",
)
def _rt3_step_returns_old_state(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt3_helper_batched(p, x, y)))(params)
        updates, new_state = optimizer.update(grads, opt_state, params)
        del new_state
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="loss is the mean BEFORE the update; this reports the loss of the new params: wrong on "
    "any step that changes the params, e.g. sgd momentum on data('wide')",
)
def _rt3_step_loss_after_update(optimizer):
    def step(params, opt_state, x, y):
        grads = jax.grad(lambda p: jnp.mean(_rt3_helper_batched(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, jnp.mean(_rt3_helper_batched(params, x, y))

    return jax.jit(step, donate_argnums=(0, 1))


# ---------------------------------------------------------------- task 3: fusion_count


@wrong(
    "fusion_count",
    why="fusions in every computation; walking ENTRY plus while bodies/conditions only misses "
    "fusions in conditional branches and called computations: wrong on a step under lax.cond "
    "(15 fusions, this says 1)",
)
def _rt3_fusions_entry_and_loops(compiled) -> int:
    module = rt3_xla_inspect.parse_hlo(compiled.as_text())
    pending, seen, count = [module.entry.name], set(), 0
    while pending:
        name = pending.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen.add(name)
        for instruction in module[name]:
            if instruction.opcode == "fusion":
                count += 1
            if instruction.opcode == "while":
                for key in ("body", "condition"):
                    called = instruction.attribute(key)
                    if called:
                        pending.append(called.removeprefix("%"))
    return count


@wrong(
    "fusion_count",
    why="counted by opcode; counting computations named fused_computation* (all 15 kernels of "
    "the momentum step) misses fusions whose computation XLA names otherwise (wrapped_*, "
    "nested): adam step 21 vs 20, two_steps 16 vs 14, lambda x: (x.sum(0), (x*x).sum(0)) 5 vs 0",
)
def _rt3_fusions_fused_computation_names(compiled) -> int:
    names = rt3_re.findall(r"^%?(fused_computation[\w.]*) ", compiled.as_text(), flags=rt3_re.M)
    return len(set(names))


@wrong(
    "fusion_count",
    why="how many fusion INSTRUCTIONS the HLO has; counting kernel launches (loop-body fusions "
    "times the while's known_trip_count) doubles the body of two_steps: wrong on two_steps "
    "(16 instructions, this says 31)",
)
def _rt3_fusions_launches(compiled) -> int:
    text = compiled.as_text()
    module = rt3_xla_inspect.parse_hlo(text)
    count = rt3_xla_inspect.opcode_counts(module)["fusion"]
    for computation in module:
        for instruction in computation:
            if instruction.opcode != "while":
                continue
            trips = rt3_re.search(r'known_trip_count":\{"n":"(\d+)"', str(instruction.attributes))
            body = module.computation((instruction.attribute("body") or "").removeprefix("%"))
            if trips and body is not None:
                inner = sum(i.opcode == "fusion" for i in body)
                count += (int(trips.group(1)) - 1) * inner
    return count


# ---------------------------------------------------------------- task 4: aliased_parameters


def _rt3_helper_alias_text(compiled) -> str:
    header = compiled.as_text().partition("\n")[0]
    found = rt3_re.search(r"input_output_alias=\{(.*?)\}, entry_computation_layout", header)
    return found.group(1) if found else ""


@wrong(
    "aliased_parameters",
    why="sorted ascending numbers; sorting the matched strings before int() puts 10, 11, 12 "
    "before 2: wrong on the adam step (13 donated leaves) and on batch_first (2..14)",
)
def _rt3_alias_string_sort(compiled) -> list[int]:
    found = sorted(set(rt3_re.findall(r"\}: \((\d+),", _rt3_helper_alias_text(compiled))))
    return [int(n) for n in found]


@wrong(
    "aliased_parameters",
    why="parameters whose buffers an output may reuse (the header's list); taking every ENTRY "
    "parameter whose shape matches a donated output also lists the undonated params when only "
    "the state is donated: wrong on 'only the state donated' ([4..7], this says [0..7])",
)
def _rt3_alias_by_matching_shape(compiled) -> list[int]:
    aliases = _rt3_helper_alias_text(compiled)
    if not aliases:
        return []
    header = compiled.as_text().partition("\n")[0]
    layout = rt3_re.search(r"entry_computation_layout=\{\((.*)\)->(.*)\}", header)
    shape = r"\w+\[[\d,]*\]"
    inputs = rt3_re.findall(shape, rt3_re.sub(r"/\*index=\d+\*/", "", layout.group(1)))
    outputs = rt3_re.findall(shape, rt3_re.sub(r"/\*index=\d+\*/", "", layout.group(2)))
    taken = {
        outputs[int(k)] for k in rt3_re.findall(r"\{(\d+)\}: \(", aliases) if int(k) < len(outputs)
    }
    return [number for number, s in enumerate(inputs) if s in taken]


@wrong(
    "aliased_parameters",
    why="the PARAMETER number of each entry; a single-digit pattern \\((\\d), drops 10, 11, 12: "
    "right for the momentum step (8 leaves), wrong for adam (13 leaves) and batch_first",
)
def _rt3_alias_single_digit(compiled) -> list[int]:
    return sorted(
        {int(n) for n in rt3_re.findall(r"\}: \((\d), ", _rt3_helper_alias_text(compiled))}
    )


# ---------------------------------------------------------------- task 5: flops_per_step


def _rt3_helper_costs(compiled) -> dict:
    costs = compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    return dict(costs or {})


@wrong(
    "flops_per_step",
    why="per call, as XLA's cost model counts them; multiplying by the while loop's "
    "known_trip_count 'because the cost model counts a body once' doubles two_steps: wrong on "
    "two_steps (fori_loop of 2)",
)
def _rt3_flops_times_trip_count(compiled) -> float:
    flops = float(_rt3_helper_costs(compiled).get("flops", 0.0))
    trips = rt3_re.findall(r'known_trip_count":\{"n":"(\d+)"', compiled.as_text())
    return flops * (int(trips[0]) if trips else 1)


@wrong(
    "flops_per_step",
    why="only 'flops', transcendentals not added; summing both is wrong on the adam step "
    "(sqrt: 40 transcendentals) and tanh_forward (256)",
)
def _rt3_flops_plus_transcendentals(compiled) -> float:
    costs = _rt3_helper_costs(compiled)
    return float(costs.get("flops", 0.0) + costs.get("transcendentals", 0.0))


@wrong(
    "flops_per_step",
    why="as XLA's cost model counts them (element-wise work included); 2*m*k*n over the HLO's "
    "dots is the products only: momentum step 22528 vs 27148, a.T*2 gives 0 vs 128",
)
def _rt3_flops_from_dots(compiled) -> float:
    total = 0.0
    for d in rt3_xla_inspect.dots(rt3_xla_inspect.parse_hlo(compiled.as_text())):
        lhs = [
            int(v)
            for v in rt3_re.search(r"\[([\d,]*)\]", str(d.lhs_shape)).group(1).split(",")
            if v
        ]
        rhs = [
            int(v)
            for v in rt3_re.search(r"\[([\d,]*)\]", str(d.rhs_shape)).group(1).split(",")
            if v
        ]
        if len(lhs) != 2 or len(rhs) != 2:
            continue
        lc = d.lhs_contracting_dims[0] if d.lhs_contracting_dims else 1
        rc = d.rhs_contracting_dims[0] if d.rhs_contracting_dims else 0
        total += 2.0 * lhs[1 - lc] * lhs[lc] * rhs[1 - rc]
    return total


# ---------------------------------------------------------------- task 6: transpose_counts


def _rt3_helper_jaxpr_transposes(step, *args) -> int:
    return rt3_xla_inspect.primitive_census(jax.make_jaxpr(step)(*args))["transpose"]


@wrong(
    "transpose_counts",
    why="HLO count by opcode; counting the text 'transpose(' also counts autodiff's "
    'op_name=".../transpose(jvp())/dot_general" metadata: wrong on the momentum step '
    "(0 transpose instructions, this says 18)",
)
def _rt3_transposes_text_count(step, *args) -> tuple[int, int]:
    text = jax.jit(step).lower(*args).compile().as_text()
    return _rt3_helper_jaxpr_transposes(step, *args), text.count("transpose(")


@wrong(
    "transpose_counts",
    why="nested jaxprs included, cond branches too; a hand recursion into params that are "
    "(Closed)Jaxprs misses cond's tuple of branches: wrong on nested_transposes ((2, 2) vs (3, 2))",
)
def _rt3_transposes_no_branches(step, *args) -> tuple[int, int]:
    def walk(jaxpr) -> int:
        jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
        count = 0
        for eqn in jaxpr.eqns:
            count += eqn.primitive.name == "transpose"
            for value in eqn.params.values():
                if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
                    count += walk(value)
        return count

    module = rt3_xla_inspect.parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    return walk(jax.make_jaxpr(step)(*args)), rt3_xla_inspect.opcode_counts(module)["transpose"]


@wrong(
    "transpose_counts",
    why="HLO count in every computation, fused included; counting only the non-fused "
    "computations (where 'surviving' ops live) misses the transpose fused into a.T*2's kLoop "
    "fusion: wrong on transposed_output ((1, 1), this says (1, 0))",
)
def _rt3_transposes_skip_fused(step, *args) -> tuple[int, int]:
    text = jax.jit(step).lower(*args).compile().as_text()
    module = rt3_xla_inspect.parse_hlo(text)
    fused = set(rt3_re.findall(r"calls=%?([\w.\-]+)", text))
    count = sum(
        1
        for computation in module
        if computation.name not in fused
        for instruction in computation
        if instruction.opcode == "transpose"
    )
    return _rt3_helper_jaxpr_transposes(step, *args), count


# ---------------------------------------------------------------- task 7: absorbed_transposes


@wrong(
    "absorbed_transposes",
    why="either side; only lhs_contracting_dims != {1} counts the weight gradients (x^T g) but "
    "not g @ w2^T (rhs_contracting_dims={1}): momentum step 2 vs 3",
)
def _rt3_absorbed_lhs_only(compiled) -> int:
    return sum(
        tuple(d.lhs_contracting_dims) != (1,)
        for d in rt3_xla_inspect.dots(rt3_xla_inspect.parse_hlo(compiled.as_text()))
    )


@wrong(
    "absorbed_transposes",
    why="read the dimension numbers, not names; counting dots whose op_name metadata says "
    "transpose(jvp...) matches the training step (3) but not hand-written a.T @ b.T: "
    "transposed_products 0 vs 2",
)
def _rt3_absorbed_by_metadata(compiled) -> int:
    return sum(
        1
        for line in compiled.as_text().splitlines()
        if rt3_re.search(r"\bdot\(", line) and "transpose(" in line
    )


@wrong(
    "absorbed_transposes",
    why="dots in every computation, loop bodies too; looking only in the fused computations "
    "of ENTRY's fusions misses the dot in a fori_loop body: transposed_in_a_loop 0 vs 1, "
    "two_steps 0 vs 3",
)
def _rt3_absorbed_entry_fusions_only(compiled) -> int:
    module = rt3_xla_inspect.parse_hlo(compiled.as_text())
    names = {module.entry.name}
    for instruction in module.entry:
        if instruction.opcode == "fusion":
            called = instruction.attribute("calls")
            if called:
                names.add(called.removeprefix("%"))
    return sum(
        1
        for d in rt3_xla_inspect.dots(module)
        if d.computation in names
        and (tuple(d.lhs_contracting_dims) != (1,) or tuple(d.rhs_contracting_dims) != (0,))
    )


# ---------------------------------------------------------------- task 8: predict_alias_bytes


def _rt3_helper_param_count(features: int, hidden: int, out: int) -> int:
    return features * hidden + hidden + hidden * out + out


@wrong(
    "predict_alias_bytes",
    why="every leaf optimizer state carries, the small ones too; adam's two moments without its "
    "int32 step count: 4 bytes short for adam, e.g. (3, 6, 2) gives 456 vs 460",
)
def _rt3_alias_adam_no_count(features: int, hidden: int, out: int, optimizer: str) -> int:
    n = _rt3_helper_param_count(features, hidden, out)
    return 4 * n * {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="what each optimizer keeps; plain optax.sgd keeps nothing (EmptyState), not a trace "
    "like momentum: wrong for 'sgd' (params only, e.g. (16, 32, 4) 2704, this says 5408)",
)
def _rt3_alias_sgd_has_trace(features: int, hidden: int, out: int, optimizer: str) -> int:
    n = _rt3_helper_param_count(features, hidden, out)
    return {"sgd": 8 * n, "momentum": 8 * n, "adam": 12 * n + 4}[optimizer]


@wrong(
    "predict_alias_bytes",
    why="adam keeps ONE scalar count; counting a step count per parameter leaf (4 leaves) "
    "overshoots by 12 bytes: wrong for adam, e.g. (16, 32, 4) 8128 vs 8116",
)
def _rt3_alias_count_per_leaf(features: int, hidden: int, out: int, optimizer: str) -> int:
    n = _rt3_helper_param_count(features, hidden, out)
    return {"sgd": 4 * n, "momentum": 8 * n, "adam": 12 * n + 4 * 4}[optimizer]


# ---------------------------------------------------------------- task 9: predict_step_flops


@wrong(
    "predict_step_flops",
    why="every product the step NEEDS; the textbook 'backward = 2x forward' also counts the "
    "gradient into the data x (nobody asks for it): (16, 32, 4, 8) 30720 vs 22528 (+36%)",
)
def _rt3_flops_three_times_forward(features: int, hidden: int, out: int, batch: int) -> int:
    forward = 2 * batch * features * hidden + 2 * batch * hidden * out
    return 3 * forward


@wrong(
    "predict_step_flops",
    why="the gradient into the hidden layer is a product too; 'backward = forward' (weight "
    "gradients only, no g @ w2^T) is short by 2*batch*hidden*out: within 10% only when out is "
    "tiny next to features, wrong on (3, 6, 2, 5) and (16, 32, 4, 8) (18432 vs 22528)",
)
def _rt3_flops_no_hidden_gradient(features: int, hidden: int, out: int, batch: int) -> int:
    forward = 2 * batch * features * hidden + 2 * batch * hidden * out
    return 2 * forward


@wrong(
    "predict_step_flops",
    why="the weight gradients x^T @ g contract the batch: (k, batch) by (batch, n) is "
    "2*k*batch*n; writing them as per-weight outer products (2*k*n) is right only for a batch "
    "of one: wrong on (16, 32, 4, 8)",
)
def _rt3_flops_weight_grad_without_batch(features: int, hidden: int, out: int, batch: int) -> int:
    forward = 2 * batch * features * hidden + 2 * batch * hidden * out
    hidden_grad = 2 * batch * out * hidden
    weight_grads = 2 * features * hidden + 2 * hidden * out
    return forward + hidden_grad + weight_grads
