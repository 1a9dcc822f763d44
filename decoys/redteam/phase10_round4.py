"""Red-team wrong answers for phase 10, written from the contract only.

Round 4: each answer agrees with a correct one on the phase's example programs (or on most of
them) and goes wrong on a valid input those examples lack: a single-output donated program, a
tuple-shaped (multi-output) fusion, an integer dot, a while computation reached through `call`
(to_apply), a while condition, a lax.while_loop body, metadata that spells an opcode, a batch of
one, a hidden width equal to the output width, sizes whose byte or flop count passes 2**31.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo, primitive_census

# --------------------------------------------------------------------------------------------
# shared pieces (correct ones, so each answer below is wrong in one place only)


def _rt4_forward(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt4_example_loss(params: dict, x, y):
    return jnp.mean((_rt4_forward(params, x) - y) ** 2)


def _rt4_vmapped(params, x, y):
    return jax.vmap(_rt4_example_loss, in_axes=(None, 0, 0))(params, x, y)


_rt4_NAME = re.compile(r"%?([\w.\-]+)")


def _rt4_names(value):
    return [m.group(1) for m in _rt4_NAME.finditer(value or "")]


# --------------------------------------------------------------------------------------------
# task 1: per_example_losses


@wrong(
    "per_example_losses",
    why="shape (batch,) for any batch size, also 1: keepdims then squeeze turns a batch of "
    "one into a 0-d array; wrong on per_example_losses(params, x f32[1,5], y f32[1,3]) "
    "(SIZES['one']): shape () instead of (1,)",
)
def _rt4_squeezed_keepdims(params: dict, x, y) -> jax.Array:
    # batched directly, one mean per row; keepdims for broadcasting, then squeeze to (batch,)
    per_row = jnp.mean((_rt4_forward(params, x) - y) ** 2, axis=-1, keepdims=True)
    return jnp.squeeze(per_row)


@wrong(
    "per_example_losses",
    why="'the same holds when it is called eagerly: two matmuls over the whole batch run, not "
    "one pair per example': this vmaps only under a trace and loops over rows eagerly; wrong "
    "on an eager call per_example_losses(params, x f32[8,16], y f32[8,4]) with device arrays "
    "(16 matmuls run); values are right",
)
def _rt4_eager_rows_loop(params: dict, x, y) -> jax.Array:
    if isinstance(x, jax.core.Tracer) or isinstance(y, jax.core.Tracer):
        return _rt4_vmapped(params, x, y)
    # eagerly there is no program to batch: one example at a time avoids a new compile per size
    return jnp.stack([_rt4_example_loss(params, x[i], y[i]) for i in range(x.shape[0])])


@wrong(
    "per_example_losses",
    why="'one batched program: no lax.map/scan over the examples, no while loop': lax.map with "
    "batch_size=4 vmaps chunks of 4 and loops over them; wrong on a batch of 8 (x f32[8,16]): "
    "a while loop (or scan) of two chunks, each matmul over 4 rows, not the whole batch",
)
def _rt4_chunked_map(params: dict, x, y) -> jax.Array:
    return jax.lax.map(lambda xy: _rt4_example_loss(params, xy[0], xy[1]), (x, y), batch_size=4)


# --------------------------------------------------------------------------------------------
# task 2: make_train_step


@wrong(
    "make_train_step",
    why="'the update comes from the gradient of that mean loss': loss is reported as the mean "
    "but the gradient is of the sum, so every gradient is batch times too large; wrong for "
    "sgd(0.05, momentum=0.9) on any batch > 1 (x f32[8,16]); right only for a batch of one "
    "and nearly right for adam (scale-invariant)",
)
def _rt4_gradient_of_sum(optimizer):
    def step(params, opt_state, x, y):
        def total(p):
            losses = _rt4_vmapped(p, x, y)
            return jnp.sum(losses), jnp.mean(losses)

        (_, loss), grads = jax.value_and_grad(total, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses', 'for any batch size': divides the sum by "
    "the example's batch of 8; wrong on a batch of 5 (SIZES['odd']) or 1: loss and gradient "
    "scaled by 5/8 or 1/8",
)
def _rt4_example_batch_mean(optimizer):
    def loss_fn(p, x, y):
        return jnp.sum(_rt4_vmapped(p, x, y)) / 8.0

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'The batch is not donated (no output could reuse it)': donates every argument, x and y "
    "too; wrong on any call: the lowered step marks x and y donated (JAX warns 'Some donated "
    "buffers were not usable') and the caller's batch buffers are given away",
)
def _rt4_donates_everything(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt4_vmapped(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1, 2, 3))


@wrong(
    "make_train_step",
    why="'the returned opt_state is the optimizer's new state, which the next call continues "
    "from': each call starts from optimizer.init(params), ignoring the state passed in; the "
    "first step is right, wrong on the second step of sgd momentum or adamw (trace / count "
    "restart)",
)
def _rt4_restarts_state(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt4_vmapped(p, x, y)))(params)
        fresh = optimizer.init(params)
        updates, new_state = optimizer.update(grads, fresh, params)
        return optax.apply_updates(params, updates), new_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


# --------------------------------------------------------------------------------------------
# task 3: fusion_count


@wrong(
    "fusion_count",
    why="'in every computation': walks from ENTRY through calls=, body=, condition= and "
    "branch_computations= but not to_apply= (taken for reducers); wrong on the compiled "
    "TRANSPOSE_PROGRAMS['nested'] (its scan's while sits in a computation reached by "
    "`call(...), to_apply=`): misses copy_add_fusion, wrapped_add, wrapped_compare",
)
def _rt4_walk_without_to_apply(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    seen, pending, count = set(), [module.entry.name], 0
    while pending:
        name = pending.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen.add(name)
        for instruction in module.computation(name).instructions:
            if instruction.opcode == "fusion":
                count += 1
            for key in ("calls", "body", "condition", "branch_computations"):
                pending.extend(_rt4_names(instruction.attribute(key)))
    return count


@wrong(
    "fusion_count",
    why="'while bodies and conditions': skips while conditions (taken for the loop's i < n "
    "bookkeeping); wrong on two_steps (a fori_loop): 15 instead of 16, the condition's "
    "wrapped_compare fusion dropped; wrong on every loop program",
)
def _rt4_skips_while_conditions(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    conditions = {
        name
        for computation in module.computations
        for instruction in computation.instructions
        if instruction.opcode == "while"
        for name in _rt4_names(instruction.attribute("condition"))
    }
    return sum(
        instruction.opcode == "fusion"
        for computation in module.computations
        if computation.name not in conditions
        for instruction in computation.instructions
    )


_rt4_ARRAY_FUSION = re.compile(r"^\s*(?:ROOT )?%\S+ = \S+ fusion\(", re.M)


@wrong(
    "fusion_count",
    why="'counted by opcode', any fusion: the line regex takes the shape as one token, so a "
    "multi-output fusion, `(f32[4]{0}, s32[4]{0}) fusion(`, is missed; wrong on the compiled "
    "jit(lambda a: (jnp.argmax(a, 1), jnp.max(a, 1))) of f32[4,6]: 0 instead of 1",
)
def _rt4_array_shaped_only(compiled) -> int:
    return len(_rt4_ARRAY_FUSION.findall(compiled.as_text()))


# --------------------------------------------------------------------------------------------
# task 4: aliased_parameters

_rt4_INDEXED_ALIAS = re.compile(r"\{(\d+(?:,\s*\d+)*)\}:\s*\((\d+),")


@wrong(
    "aliased_parameters",
    why="the header's output index is `{}` when the program returns a single array: "
    "`input_output_alias={ {}: (0, {}, may-alias) }`; the regex wants digits in the output "
    "index and returns [] on jit(lambda a: a * 2, donate_argnums=0)(f32[3,4]) instead of [0]",
)
def _rt4_numbered_outputs_only(compiled) -> list[int]:
    header = compiled.as_text().split("\n", 1)[0]
    return sorted({int(m.group(2)) for m in _rt4_INDEXED_ALIAS.finditer(header)})


_rt4_ALIAS = re.compile(r"\}:\s*\((\d+),")


@wrong(
    "aliased_parameters",
    why="'Parameter numbers count the flattened leaves of every argument': rebuilt as a "
    "contiguous run from the smallest aliased parameter; wrong when the donated leaves are not "
    "adjacent: jit(lambda p, x, s, y: ..., donate_argnums=(0, 2)) of a momentum step gives "
    "[0..7] instead of [0, 1, 2, 3, 5, 6, 7, 8] (x is parameter 4)",
)
def _rt4_contiguous_run(compiled) -> list[int]:
    header = compiled.as_text().split("\n", 1)[0]
    found = [int(n) for n in _rt4_ALIAS.findall(header)]
    if not found:
        return []
    return list(range(min(found), min(found) + len(set(found))))


@wrong(
    "aliased_parameters",
    why="'Each number once, ascending': sorted as text before converting, so 10 comes before "
    "2; wrong on any step with 11 or more aliased leaves: the adam step (13 leaves: 0..12) gives "
    "[0, 1, 10, 11, 12, 2, ...]",
)
def _rt4_sorted_as_text(compiled) -> list[int]:
    header = compiled.as_text().split("\n", 1)[0]
    return [int(n) for n in sorted(set(_rt4_ALIAS.findall(header)))]


# --------------------------------------------------------------------------------------------
# task 5: flops_per_step


def _rt4_costs(compiled) -> dict:
    costs = compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    return dict(costs or {})


@wrong(
    "flops_per_step",
    why="'Only flops: transcendentals are a separate count, not added': sums every "
    "arithmetic count of the analysis (everything but bytes and utilization), so "
    "transcendentals join; wrong on tanh_forward or switch_program(3) (337 + 24 tanh/exp)",
)
def _rt4_every_arithmetic_count(compiled) -> float:
    return float(
        sum(
            value
            for key, value in _rt4_costs(compiled).items()
            if not key.startswith(("bytes accessed", "utilization", "optimal"))
        )
    )


_rt4_TRIPS = re.compile(r'known_trip_count"?\s*[:=]\s*\{\s*"n"\s*:\s*"(\d+)"')


@wrong(
    "flops_per_step",
    why="'Floating-point operations per call ... do not scale a loop': divides by the "
    "fori_loop's trip count to report one training step's flops; wrong on two_steps: 13,511 "
    "instead of 27,022",
)
def _rt4_per_inner_step(compiled) -> float:
    flops = float(_rt4_costs(compiled).get("flops", 0.0))
    trips = [int(n) for n in _rt4_TRIPS.findall(compiled.as_text())]
    return flops / max(trips) if trips else flops


@wrong(
    "flops_per_step",
    why="'report that, do not scale a loop by its trip count yourself': multiplies by the "
    "product of every known trip count; wrong on two_steps (54,044 instead of 27,022) and "
    "nested_loops (outer x inner)",
)
def _rt4_scaled_by_trips(compiled) -> float:
    flops = float(_rt4_costs(compiled).get("flops", 0.0))
    for n in _rt4_TRIPS.findall(compiled.as_text()):
        flops *= int(n)
    return flops


# --------------------------------------------------------------------------------------------
# task 6: transpose_counts


def _rt4_jaxpr_transposes(step, *args) -> int:
    return int(primitive_census(jax.make_jaxpr(step)(*args))["transpose"])


@wrong(
    "transpose_counts",
    why="'transpose instructions in the optimized HLO', counted by opcode: a text regex "
    r"\btranspose\( also hits metadata op_name=\"jit(step)/transpose(jvp())/...\"; right on "
    "a.T * 2 and the nested program (no autodiff), wrong on momentum_step: 18 instead of 0",
)
def _rt4_regex_in_text(step, *args) -> tuple[int, int]:
    text = jax.jit(step).lower(*args).compile().as_text()
    return _rt4_jaxpr_transposes(step, *args), len(re.findall(r"\btranspose\(", text))


def _rt4_walk(jaxpr, count):
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            count += 1
        for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
            inner = eqn.params.get(key)
            if inner is not None:
                count = _rt4_walk(getattr(inner, "jaxpr", inner), count)
        for branch in eqn.params.get("branches", ()):
            count = _rt4_walk(getattr(branch, "jaxpr", branch), count)
    return count


@wrong(
    "transpose_counts",
    why="'every inner jaxpr: a jit inside, scan and while bodies, cond branches': the hand "
    "recursion follows jaxpr= (pjit, scan), call_jaxpr= and branches= but not while's "
    "body_jaxpr/cond_jaxpr; wrong on lax.while_loop(c < 3, c.T * 2) of f32[3,3]: 0 instead of 1",
)
def _rt4_misses_while_bodies(step, *args) -> tuple[int, int]:
    closed = jax.make_jaxpr(step)(*args)
    module = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    hlo = sum(i.opcode == "transpose" for c in module.computations for i in c.instructions)
    return _rt4_walk(closed.jaxpr, 0), hlo


@wrong(
    "transpose_counts",
    why="'transpose instructions in the OPTIMIZED HLO': counts stablehlo.transpose in the "
    "lowered (unoptimized) module; wrong on momentum_step (autodiff's transposes of the dots "
    "are there before XLA folds them into dot dimension numbers, 0 after)",
)
def _rt4_counts_lowered(step, *args) -> tuple[int, int]:
    lowered = jax.jit(step).lower(*args).as_text()
    return _rt4_jaxpr_transposes(step, *args), lowered.count("stablehlo.transpose")


# --------------------------------------------------------------------------------------------
# task 7: absorbed_transposes


def _rt4_transposed(instruction) -> bool:
    lhs = _rt4_names(instruction.attribute("lhs_contracting_dims"))
    rhs = _rt4_names(instruction.attribute("rhs_contracting_dims"))
    return lhs != ["1"] or rhs != ["0"]


@wrong(
    "absorbed_transposes",
    why="'in every computation': walks ENTRY, fused computations (calls=) and while "
    "body/condition, not conditional branches; wrong on switch_program(3) (the third branch's "
    "h @ w.T dot, rhs_contracting_dims={1}): 0 instead of 1, and on branch_with_a_loop",
)
def _rt4_no_branches(compiled) -> int:
    module = parse_hlo(compiled.as_text())
    seen, pending, count = set(), [module.entry.name], 0
    while pending:
        name = pending.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen.add(name)
        for instruction in module.computation(name).instructions:
            if instruction.opcode == "dot" and _rt4_transposed(instruction):
                count += 1
            for key in ("calls", "body", "condition", "to_apply"):
                pending.extend(_rt4_names(instruction.attribute(key)))
    return count


_rt4_F32_DOT = re.compile(
    r"= f32\[[\d,]*\](?:\{[\d,]*\})? dot\([^)]*\), lhs_contracting_dims=\{(\d+)\}, "
    r"rhs_contracting_dims=\{(\d+)\}"
)


@wrong(
    "absorbed_transposes",
    why="any 2-D dot counts: the line regex is written for f32 results, so integer (or f64) "
    "dots are skipped; wrong on jit(lambda a, b: a.T @ b) of int32 f[6,5], [6,4] (an s32 dot "
    "with lhs_contracting_dims={0}): 0 instead of 1",
)
def _rt4_float32_lines_only(compiled) -> int:
    return sum((lhs, rhs) != ("1", "0") for lhs, rhs in _rt4_F32_DOT.findall(compiled.as_text()))


_rt4_DIMS = re.compile(r"\[([\d,]*)\]")


@wrong(
    "absorbed_transposes",
    why="'Which attributes of a dot say what it contracts': decides from operand shapes "
    "(plain when lhs's last dim equals rhs's first) instead of the dimension numbers; wrong on "
    "square operands: transposed_in_a_loop's 5x5 acc.T @ w.T reads as plain, 0 instead of 1",
)
def _rt4_judged_by_shapes(compiled) -> int:
    from xla_inspect import dots

    count = 0
    for dot in dots(parse_hlo(compiled.as_text())):
        lhs = _rt4_DIMS.search(dot.lhs_shape)
        rhs = _rt4_DIMS.search(dot.rhs_shape)
        if not lhs or not rhs:
            continue
        lhs_dims = [int(d) for d in lhs.group(1).split(",") if d]
        rhs_dims = [int(d) for d in rhs.group(1).split(",") if d]
        if len(lhs_dims) == 2 and len(rhs_dims) == 2 and lhs_dims[1] != rhs_dims[0]:
            count += 1
    return count


# --------------------------------------------------------------------------------------------
# task 8: predict_alias_bytes

_rt4_COPIES = {"sgd": 1, "momentum": 2, "adam": 3}


@wrong(
    "predict_alias_bytes",
    why="params counted from a set of shapes, so two leaves of one shape count once; wrong "
    "when hidden == out: (8, 4, 4) sgd has b1 and b2 both f32[4]: 208 instead of 224",
)
def _rt4_shapes_as_a_set(features: int, hidden: int, out: int, optimizer: str) -> int:
    shapes = {(features, hidden), (hidden,), (hidden, out), (out,)}
    elements = sum(int(np.prod(shape)) for shape in shapes)
    extra = 4 if optimizer == "adam" else 0
    return 4 * elements * _rt4_COPIES[optimizer] + extra


@wrong(
    "predict_alias_bytes",
    why="adam's step count is an s32[] (4 bytes; JAX runs without x64), not 8; wrong on every "
    "adam case, e.g. (5, 7, 3, 'adam'): 800 instead of 796",
)
def _rt4_count_as_int64(features: int, hidden: int, out: int, optimizer: str) -> int:
    elements = features * hidden + hidden + hidden * out + out
    extra = 8 if optimizer == "adam" else 0
    return 4 * elements * _rt4_COPIES[optimizer] + extra


@wrong(
    "predict_alias_bytes",
    why="bytes computed in NumPy int32 wrap past 2**31; wrong on (16384, 16384, 8, 'adam'): "
    "3 * 4 * 268.6M bytes + 4 = 3.2 GB, returned as a negative number",
)
def _rt4_int32_bytes(features: int, hidden: int, out: int, optimizer: str) -> int:
    sizes = np.array([features * hidden, hidden, hidden * out, out], dtype=np.int32)
    with np.errstate(over="ignore"):
        total = sizes.sum(dtype=np.int32) * np.int32(4 * _rt4_COPIES[optimizer])
        if optimizer == "adam":
            total = total + np.int32(4)
    return int(total)


@wrong(
    "predict_alias_bytes",
    why="sgd with momentum keeps only its trace (optax's TraceState), no step count; adding "
    "adam's 4-byte count to momentum too is wrong on every momentum case, e.g. (5, 7, 3, "
    "'momentum'): 532 instead of 528",
)
def _rt4_momentum_counts_steps(features: int, hidden: int, out: int, optimizer: str) -> int:
    elements = features * hidden + hidden + hidden * out + out
    extra = 0 if optimizer == "sgd" else 4
    return 4 * elements * _rt4_COPIES[optimizer] + extra


# --------------------------------------------------------------------------------------------
# task 9: predict_step_flops


@wrong(
    "predict_step_flops",
    why="flops in NumPy int32 wrap past 2**31; wrong on (32768, 256, 4, 128) (first layer "
    "dominates): 4*128*32768*256 = 2**32 wraps to a small or negative number",
)
def _rt4_int32_flops(features: int, hidden: int, out: int, batch: int) -> int:
    f, h, o, b = np.array([features, hidden, out, batch], dtype=np.int32)
    with np.errstate(over="ignore"):
        total = np.int32(2) * b * h * (np.int32(2) * f + np.int32(3) * o)
    return int(total)


@wrong(
    "predict_step_flops",
    why="'No gradient flows into the data': counts x's gradient g1 @ w1.T too, 6bh(f + o); "
    "wrong where the first layer dominates, e.g. (256, 64, 8, 64): +45%",
)
def _rt4_gradient_into_data(features: int, hidden: int, out: int, batch: int) -> int:
    per_layer = 3 * 2 * batch * hidden  # forward, weight gradient, input gradient
    return per_layer * (features + out)


@wrong(
    "predict_step_flops",
    why="forgets the gradient into the hidden layer (g2 @ w2.T), 4bh(f + o); wrong where the "
    "second layer dominates, e.g. (8, 64, 256, 64): -29%",
)
def _rt4_no_hidden_gradient(features: int, hidden: int, out: int, batch: int) -> int:
    return 2 * 2 * batch * hidden * (features + out)


@wrong(
    "predict_step_flops",
    why="'a product of (m, k) by (k, n) is 2*m*k*n flops': counts multiply-adds (m*k*n), "
    "half the flops; wrong on every size, e.g. (256, 64, 8, 64): -50%",
)
def _rt4_multiply_adds(features: int, hidden: int, out: int, batch: int) -> int:
    return batch * hidden * (2 * features + 3 * out)
