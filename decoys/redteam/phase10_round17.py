"""Red team, phase 10, round 17: wrong answers (the MSE expanded algebraically, losses cast
back to the input dtype, relu written as jnp.maximum whose gradient splits ties, nanmean as the
batch loss, donate_argnums counted on the unbound signature of a functools.partial, fusions
found by a 'fusion(%' operand regex, args_info donation as the fallback when the header has no
alias list, xla_inspect's shape-based flops summed in place of cost_analysis, only the last
cond branch walked, conditional branches skipped when hunting absorbed transposes, a
learning-rate scalar assumed in every optimizer's state)."""

from __future__ import annotations

import functools
import re

import jax
import jax.extend
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong


def _rt17_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt17_example_loss(params, x, y):
    return jnp.mean((_rt17_forward(params, x) - y) ** 2)


def _rt17_losses(params, x, y):
    return jax.vmap(_rt17_example_loss, in_axes=(None, 0, 0))(params, x, y)


# ---------------------------------------------------------------- per_example_losses
@wrong(
    "per_example_losses",
    why="'Mean squared error of one example': batched, with the square expanded as "
    "pred**2 - 2*pred*y + y**2 ('one fused pass, no temporary difference'); algebraically "
    "equal, but in float32 it cancels catastrophically when pred is large and close to y: on "
    "sized_data(3, 6, 2, 5) with x scaled by 1000 and y = forward(params, x) + 1e-3 the true "
    "losses are ~1e-6, this returns values off by units (or negative)",
)
def _rt17_per_example_losses_expanded_square(params: dict, x, y) -> jax.Array:
    pred = _rt17_forward(params, x)
    y = y.reshape(pred.shape)
    return jnp.mean(pred * pred - 2.0 * pred * y + y * y, axis=-1)


# ---------------------------------------------------------------- make_train_step
def _rt17_forward_maximum(params, x):
    return jnp.maximum(x @ params["w1"] + params["b1"], 0.0) @ params["w2"] + params["b2"]


@wrong(
    "make_train_step",
    why="'applied to the gradient of that mean loss' (of per_example_losses, whose relu is "
    "jax.nn.relu): the step's own forward writes relu as jnp.maximum(z, 0.0), equal in value, "
    "but its gradient at a tie z == 0 is 0.5, not relu's 0; wrong wherever a pre-activation is "
    "exactly 0, e.g. sized_data(3, 6, 2, 5) with b1 = 0 and x[0] = 0 (sgd(0.05)): the new b1 "
    "and w2 differ; loss and every tie-free batch are right",
)
def _rt17_make_train_step_maximum_relu(optimizer):
    def mean_loss(p, x, y):
        pred = _rt17_forward_maximum(p, x)
        return jnp.mean(jnp.mean((pred - y.reshape(pred.shape)) ** 2, axis=-1))

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(mean_loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def _rt17_step_with(optimizer, params, opt_state, x, y):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt17_losses(p, x, y)))(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


@wrong(
    "make_train_step",
    why="'params and opt_state (every leaf) are donated ... The batch is not donated': jits "
    "functools.partial(step_with, optimizer) with donate_argnums=(1, 2), counted on "
    "step_with(optimizer, params, opt_state, x, y); but jit numbers the partial's remaining "
    "arguments, so it donates opt_state and x, not params: on the 'wide' momentum args the "
    "params stay alive and x is deleted (aliased parameters 4..8 instead of 0..7); values right",
)
def _rt17_make_train_step_partial_argnums(optimizer):
    return jax.jit(functools.partial(_rt17_step_with, optimizer), donate_argnums=(1, 2))


# ---------------------------------------------------------------- fusion_count
@wrong(
    "fusion_count",
    why="'counted by opcode ... every computation': counts the opcode as 'fusion(%' (a fusion "
    "and its first operand); a fusion with no operands (a constant or iota pattern fused on "
    "its own, printed fusion()) is missed: jit(lambda: jnp.arange(12.0).reshape(3, 4) * 2.0 + "
    "jnp.ones((3, 4))) compiled has such a fusion, counted 0; right on the tests' steps",
)
def _rt17_fusion_count_operand_regex(compiled) -> int:
    return len(re.findall(r"\sfusion\(%", compiled.as_text()))


# ---------------------------------------------------------------- aliased_parameters
@wrong(
    "aliased_parameters",
    why="'A donated buffer no output can reuse is not aliased ... donate_argnums alone is not "
    "the answer': reads the header's alias list, but when the header has none (taken as 'this "
    "JAX prints no alias list') falls back to the donated leaves of compiled.args_info; a "
    "step that donates only unusable buffers has no list and must give []: "
    "jit(lambda a: a.sum(), donate_argnums=0) on f32[4, 4] says [0]; right on every "
    "alias_bank step and without donation",
)
def _rt17_aliased_parameters_args_info_fallback(compiled) -> list[int]:
    head = compiled.as_text().splitlines()[0]
    m = re.search(r"input_output_alias=\{ (.*?) \}, ", head)
    if m:
        return sorted({int(p) for p in re.findall(r"\}: \((\d+), ", m.group(1))})
    leaves = jax.tree.leaves(compiled.args_info)
    return [i for i, leaf in enumerate(leaves) if getattr(leaf, "donated", False)]


# ---------------------------------------------------------------- transpose_counts
def _rt17_inner(value):
    if isinstance(value, jax.extend.core.ClosedJaxpr):
        return [value.jaxpr]
    if isinstance(value, jax.extend.core.Jaxpr):
        return [value]
    if isinstance(value, (tuple, list)):
        return [j for v in value for j in _rt17_inner(v)]
    return []


def _rt17_census_last_branch(jaxpr) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        n += eqn.primitive.name == "transpose"
        for key, value in eqn.params.items():
            if key == "branches":
                value = value[-1:]  # the branch cond takes when its predicate is true
            for inner in _rt17_inner(value):
                n += _rt17_census_last_branch(inner)
    return n


@wrong(
    "transpose_counts",
    why="'every inner jaxpr ... cond branches': walks only the LAST branch of a cond (read as "
    "'the true branch, the one that runs'), so a transpose in the false branch or any earlier "
    "switch branch is missed; right on 'nested' (its transpose is in the true branch), wrong "
    "on lambda a, p: lax.cond(p, lambda m: m * 1.0, lambda m: m.T * 1.0, a) with a f32[3,3], "
    "p=True: (0, hlo) instead of (1, hlo)",
)
def _rt17_transpose_counts_last_branch(step, *args) -> tuple[int, int]:
    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = len(re.findall(r"^\s*(?:ROOT\s+)?%\S+ = \S+ transpose\(", text, re.M))
    return _rt17_census_last_branch(closed.jaxpr), hlo


# ---------------------------------------------------------------- predict_alias_bytes
@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': assumes every optax optimizer keeps its "
    "learning rate as a float32 scalar in its state (as inject_hyperparams does), so 4 bytes "
    "more for sgd, momentum and adam alike: (16, 32, 4, 'sgd') says 2708, not 2704",
)
def _rt17_predict_alias_bytes_lr_scalar(
    features: int, hidden: int, out: int, optimizer: str
) -> int:
    params = features * hidden + hidden + hidden * out + out
    trees = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    count = 1 if optimizer == "adam" else 0
    return 4 * (trees * params + count) + 4


@wrong(
    "per_example_losses",
    why="'example_loss for every row' (its dtype is whatever example_loss computes): vmaps "
    "example_loss correctly but casts the losses back to x.dtype ('return the caller's "
    "dtype'); with float32 x nothing changes, but a bfloat16 batch against the float32 params "
    "promotes to float32 losses, which this rounds to 8 bits: on data('wide') with x cast to "
    "bfloat16 the dtype is bfloat16 (not float32) and the values are off by ~0.1%",
)
def _rt17_per_example_losses_input_dtype(params: dict, x, y) -> jax.Array:
    y = jnp.reshape(y, (x.shape[0], -1))
    return _rt17_losses(params, x, y).astype(jnp.asarray(x).dtype)


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses ... applied to the gradient of that mean "
    "loss': uses jnp.nanmean ('one bad row should not wreck the step'), equal on clean data; "
    "with a NaN in one row (x[0, 0] = nan on data('wide'), sgd momentum) the true loss and "
    "update are NaN, this reports a finite loss over the other rows and a finite update",
)
def _rt17_make_train_step_nanmean(optimizer):
    def step(params, opt_state, x, y):
        def mean_loss(p):
            return jnp.nanmean(_rt17_losses(p, x, jnp.reshape(y, (x.shape[0], -1))))

        loss, grads = jax.value_and_grad(mean_loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


# ---------------------------------------------------------------- flops_per_step
@wrong(
    "flops_per_step",
    why="'as XLA's cost model counts them: the \"flops\" its cost analysis reports': sums "
    "xla_inspect's instruction_flops (documented as 'counted as XLA's cost analysis counts "
    "them', from shapes) over the parsed optimized module; it walks every branch of a "
    "conditional and each reducer, so it is near but not what cost_analysis says: 27185 vs "
    "27148 on the momentum step, 781 vs 421 on switch_program(2); 0 on exp and a.T",
)
def _rt17_flops_per_step_toolkit_shapes(compiled) -> float:
    from xla_inspect import parse_hlo
    from xla_inspect._flops import instruction_flops

    return float(sum(instruction_flops(parse_hlo(compiled.as_text())).values()))


# ---------------------------------------------------------------- absorbed_transposes
def _rt17_computations(text):
    """name -> (is_entry, lines) of every computation of an HLO module text."""
    found, name, entry = {}, None, False
    for line in text.splitlines():
        head = re.match(r"^(ENTRY\s+)?%(\S+)\s.*\{\s*$", line)
        if head:
            name, entry = head.group(2), bool(head.group(1))
            found[name] = (entry, [])
        elif line.startswith("}"):
            name = None
        elif name is not None:
            found[name][1].append(line)
    return found


@wrong(
    "absorbed_transposes",
    why="'in every computation: fused computations and loop bodies too': walks from ENTRY "
    "through exactly those (calls=, body=, condition=, to_apply=), so conditional branches "
    "(branch_computations=) are never visited and their dots are missed; right on the "
    "momentum step and both BOTH_TRANSPOSED_PROGRAMS, wrong on jit(lambda a, b, p: "
    "lax.cond(p, lambda a, b: a.T @ b, lambda a, b: a @ b, a, b)) with a, b f32[4, 4]: 0, not 1",
)
def _rt17_absorbed_transposes_no_branches(compiled) -> int:
    comps = _rt17_computations(compiled.as_text())
    todo = [n for n, (entry, _) in comps.items() if entry]
    seen, count = set(), 0
    while todo:
        name = todo.pop()
        if name in seen or name not in comps:
            continue
        seen.add(name)
        for line in comps[name][1]:
            todo += re.findall(r"\b(?:calls|body|condition|to_apply)=%([\w.\-]+)", line)
            if not re.search(r"\sdot\(", line):
                continue
            lhs = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
            rhs = re.search(r"rhs_contracting_dims=\{([\d,]*)\}", line)
            if (lhs and lhs.group(1) != "1") or (rhs and rhs.group(1) != "0"):
                count += 1
    return count
