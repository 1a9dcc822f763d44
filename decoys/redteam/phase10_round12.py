"""Red-team round 12 wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.extend
import jax.numpy as jnp

from kata_harness.decoys import wrong


def _rt12_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt12_losses(params, x, y):
    def one(p, xi, yi):
        return jnp.mean((_rt12_forward(p, xi) - yi) ** 2)

    return jax.vmap(one, in_axes=(None, 0, 0))(params, x, y)


_rt12_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(")


def _rt12_opcodes(text: str):
    for line in text.splitlines():
        m = _rt12_LINE.match(line)
        if m:
            yield m.group(2), line


def _rt12_hlo_opcode_count(text: str, opcodes) -> int:
    return sum(1 for op, _ in _rt12_opcodes(text) if op in opcodes)


def _rt12_subjaxprs(value):
    """Every jaxpr a param value holds (ClosedJaxpr, Jaxpr, tuples, named tuples, lists)."""
    if isinstance(value, jax.extend.core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax.extend.core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt12_subjaxprs(v)


def _rt12_census(jaxpr, cond_max=False, scan_trips=False) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        name = eqn.primitive.name
        if cond_max and name == "cond":
            n += max(
                (
                    _rt12_census(j, cond_max, scan_trips)
                    for j in _rt12_subjaxprs(eqn.params["branches"])
                ),
                default=0,
            )
            continue
        inner = 0
        for v in eqn.params.values():
            for j in _rt12_subjaxprs(v):
                inner += _rt12_census(j, cond_max, scan_trips)
        if scan_trips and name == "scan":
            inner *= int(eqn.params.get("length", 1))
        n += inner
    return n


# ---------------------------------------------------------------- make_train_step


@wrong(
    "make_train_step",
    why="'the update comes from optimizer applied to the gradient of that mean loss': mixed "
    "precision habit, the loss and gradient are computed with params and batch cast to bfloat16 "
    "(params kept float32), so loss and update carry ~1e-2 relative error; wrong on "
    "sgd(0.05, momentum=0.9) at data('wide'): loss and new w1 differ from NumPy's step well past "
    "float32 tolerance",
)
def _rt12_make_train_step_bf16_compute(optimizer):
    import optax

    def loss_fn(params, x, y):
        lp = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
        losses = _rt12_losses(lp, x.astype(jnp.bfloat16), y.astype(jnp.bfloat16))
        return jnp.mean(losses).astype(jnp.float32)

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        grads = jax.tree.map(lambda g: g.astype(jnp.float32), grads)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses' for any batch: microbatching (two halves, "
    "gradient and loss averaged over the halves) is a mean of means, equal to the mean only when "
    "the halves are equal; wrong on an odd batch, data('odd') (batch 5 split 3+2): the loss and "
    "the gradient weight the last two examples 1.5x",
)
def _rt12_make_train_step_microbatch_mean_of_means(optimizer):
    import optax

    def mean_loss(params, x, y):
        return jnp.mean(_rt12_losses(params, x, y))

    def step(params, opt_state, x, y):
        n = x.shape[0]
        if n < 2:
            loss, grads = jax.value_and_grad(mean_loss)(params, x, y)
        else:
            h = (n + 1) // 2
            l1, g1 = jax.value_and_grad(mean_loss)(params, x[:h], y[:h])
            l2, g2 = jax.value_and_grad(mean_loss)(params, x[h:], y[h:])
            loss = (l1 + l2) / 2
            grads = jax.tree.map(lambda a, b: (a + b) / 2, g1, g2)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


# ---------------------------------------------------------------- flops_per_step


@wrong(
    "flops_per_step",
    why="'Only flops: transcendentals are a separate count, not added' misread as 'flops include "
    "them, take them out': returns flops - transcendentals; wrong on tanh_forward (the tanh "
    "elements subtracted) and on jnp.exp of f32[7,5] (-35.0 instead of 0.0)",
)
def _rt12_flops_minus_transcendentals(compiled) -> float:
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0]
    return float(cost.get("flops", 0.0)) - float(cost.get("transcendentals", 0.0))


# ---------------------------------------------------------------- transpose_counts


@wrong(
    "transpose_counts",
    why="'transpose instructions in the optimized HLO', counted by opcode: also counts the "
    "layout-changing `copy` instructions as physical transposes (the README: 'a transpose that "
    "survived is a copy of a whole matrix'); wrong on a.T * 2 of f32[16,8]: its fusion holds "
    "transpose.5 and copy.1, HLO count 2 instead of 1",
)
def _rt12_transpose_counts_copy_is_transpose(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    return _rt12_census(closed.jaxpr), _rt12_hlo_opcode_count(text, {"transpose", "copy"})


@wrong(
    "transpose_counts",
    why="'every inner jaxpr ... cond branches': counts only the branch with the most transposes "
    "(one branch runs per call) instead of every branch's jaxpr; wrong on "
    "lax.cond(p, lambda m: m.T * 2, lambda m: m.T + 1, a): jaxpr count 1 instead of 2",
)
def _rt12_transpose_counts_cond_max_branch(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    return _rt12_census(closed.jaxpr, cond_max=True), _rt12_hlo_opcode_count(text, {"transpose"})


@wrong(
    "transpose_counts",
    why="'an inner jaxpr counts once per EQUATION that holds it' (not per trip): multiplies a "
    "scan body's transposes by the scan's length; wrong on nested_transposes (scan of length 2): "
    "jaxpr count 4 instead of 3",
)
def _rt12_transpose_counts_scan_times_length(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    return _rt12_census(closed.jaxpr, scan_trips=True), _rt12_hlo_opcode_count(text, {"transpose"})


# ---------------------------------------------------------------- absorbed_transposes


@wrong(
    "absorbed_transposes",
    why="'A plain a @ b contracts a's last dimension with b's first (rhs {0})': PyTorch habit, "
    "nn.Linear's x @ W.T (rhs_contracting_dims={1}) taken as the plain form, so dots with "
    "lhs {1}, rhs {0} count and g2 @ w2.T does not; wrong on the momentum step (its two plain "
    "forward dots counted, the rhs-transposed one missed: 4 instead of 3)",
)
def _rt12_absorbed_torch_linear_is_plain(compiled) -> int:
    n = 0
    for op, line in _rt12_opcodes(compiled.as_text()):
        if op != "dot":
            continue
        lhs = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
        rhs = re.search(r"rhs_contracting_dims=\{([\d,]*)\}", line)
        if (lhs and lhs.group(1) != "1") or (rhs and rhs.group(1) != "1"):
            n += 1
    return n


# ---------------------------------------------------------------- predict_alias_bytes


@wrong(
    "predict_alias_bytes",
    why="'b2 f32[out]': the second bias is sized by the hidden width (the width of the layer "
    "it follows), a rule right only when hidden == out; wrong on (16, 32, 4, 'momentum'): "
    "2*4*(16*32+32+32*4+32) = 5632 instead of 5408",
)
def _rt12_alias_b2_sized_hidden(features: int, hidden: int, out: int, optimizer: str) -> int:
    params = features * hidden + hidden + hidden * out + hidden
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return 4 * params * copies + (4 if optimizer == "adam" else 0)


# ---------------------------------------------------------------- predict_step_flops


@wrong(
    "predict_step_flops",
    why="'the matrix products the forward and the backward pass need': counts the forward twice "
    "(once for the loss, once again inside the gradient, as if value_and_grad did not share "
    "it): 6bfh + 8bho instead of 4bfh + 6bho; wrong on (1024, 64, 8, 64) (first layer "
    "dominates): about 1.5x",
)
def _rt12_step_flops_forward_twice(features: int, hidden: int, out: int, batch: int) -> int:
    fwd = 2 * batch * features * hidden + 2 * batch * hidden * out
    bwd = 2 * features * batch * hidden + 2 * hidden * batch * out + 2 * batch * out * hidden
    return int(2 * fwd + bwd)


@wrong(
    "predict_step_flops",
    why="'no gradient flows into the data' / 'the gradient into the hidden layer': the input "
    "gradient of layer 1 (g1 @ w1.T, 2bhf) counted in place of the hidden one (g2 @ w2.T, "
    "2boh): 6bfh + 4bho; wrong on (1024, 64, 8, 64) (1.5x) and on (8, 64, 1024, 64) (2/3x)",
)
def _rt12_step_flops_input_grad_not_hidden(features: int, hidden: int, out: int, batch: int) -> int:
    fwd = 2 * batch * features * hidden + 2 * batch * hidden * out
    weights = 2 * features * batch * hidden + 2 * hidden * batch * out
    dx = 2 * batch * hidden * features
    return int(fwd + weights + dx)


# ---------------------------------------------------------------- aliased_parameters


def _rt12_layout_params(header: str) -> list[str]:
    """The parameter shapes of entry_computation_layout={(...)->...}, split at top level."""
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->", header)
    if not m:
        return []
    body = re.sub(r"/\*index=\d+\*/", "", m.group(1))
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


@wrong(
    "aliased_parameters",
    why="'Sorted numbers of the ENTRY parameters whose buffers an output may reuse': keeps only "
    "the floating-point parameters of the alias list (the weights and moments, 'what the step "
    "updates'), dropping the integer ones; wrong on every adam step, e.g. the alias_bank's "
    "batch_first(x, y, params, state) donating (2, 3): adam's s32[] count (aliased) is left out",
)
def _rt12_aliased_float_only(compiled) -> list[int]:
    header = compiled.as_text().split("\n", 1)[0]
    shapes = _rt12_layout_params(header)
    m = re.search(r"input_output_alias=\{(.*?)\s\}", header)
    if not m:
        return []
    nums = sorted({int(n) for n in re.findall(r"\}:\s*\((\d+),", m.group(1))})
    return [n for n in nums if n < len(shapes) and shapes[n][:1] in ("f", "b")]


# ---------------------------------------------------------------- fusion_count


_rt12_F32_FUSION = re.compile(r"=\s*f32\[[\d,]*\](?:\{[\d,]*\})?\s+fusion\(")


@wrong(
    "fusion_count",
    why="'how many fusion instructions ... any kind, counted by opcode': the line regex was "
    "written against the momentum step's f32 kernels (`= f32[8,32]{1,0} fusion(`), so fusions "
    "producing s32/pred/bf16 arrays (a loop's i % 2 == 0, an int32 or bf16 branch) or a "
    "tuple are never matched; right on the momentum step (15), wrong on loop_with_a_branch(3) of "
    "w f32[4,4], h f32[3,4] (2 instead of 5) and on a lax.switch over int32 dots (0 instead of 2)",
)
def _rt12_fusion_count_f32_only(compiled) -> int:
    return sum(1 for line in compiled.as_text().splitlines() if _rt12_F32_FUSION.search(line))
