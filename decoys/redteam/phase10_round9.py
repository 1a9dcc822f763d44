"""Red-team round 9 wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong


def _rt9_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt9_example_loss(params, x, y):
    return jnp.mean((_rt9_forward(params, x) - y) ** 2)


def _rt9_computations(text: str) -> dict[str, list[str]]:
    comps: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if m and not line.startswith(" "):
            name = "ENTRY" if m.group(1) else m.group(2)
            comps[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None:
            comps[name].append(line)
    return comps


@wrong(
    "per_example_losses",
    why="'for every row of x and y': vmap maps x but not y (in_axes=(None, 0, None)), so each "
    "example's prediction is compared with EVERY target row; right for a batch of one only, wrong "
    "on the (8,16)/(8,4) batch of data()",
)
def _rt9_per_example_losses_y_unmapped(params: dict, x, y) -> jax.Array:
    return jax.vmap(_rt9_example_loss, in_axes=(None, 0, None))(params, x, y)


@wrong(
    "per_example_losses",
    why="'shape (batch,)': batched by hand, the mean is taken over axis 0 (the batch) instead of "
    "the outputs, giving shape (out,) of per-output losses; wrong on data() (8 rows, 4 outputs)",
)
def _rt9_per_example_losses_mean_over_batch(params: dict, x, y) -> jax.Array:
    return jnp.mean((_rt9_forward(params, x) - y) ** 2, axis=0)


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses ..., a scalar': value_and_grad with has_aux "
    "returns the per-example losses (shape (batch,)) as the step's loss instead of their mean; "
    "the update is right, the loss is a (8,) array on the wide data",
)
def _rt9_make_train_step_aux_losses(optimizer):
    def loss_fn(params, x, y):
        losses = jax.vmap(_rt9_example_loss, in_axes=(None, 0, 0))(params, x, y)
        return jnp.mean(losses), losses

    def step(params, opt_state, x, y):
        (_, losses), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, losses

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'the returned opt_state is the optimizer's new state, which the next call continues "
    "from': update is called a second time to get the state, advancing it twice (adam's count "
    "goes 0->2, momentum's trace doubles); the first step's params are right, the second's not",
)
def _rt9_make_train_step_state_updated_twice(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(
            lambda p: jnp.mean(jax.vmap(_rt9_example_loss, in_axes=(None, 0, 0))(p, x, y))
        )(params)
        updates, mid_state = optimizer.update(grads, opt_state, params)
        _, new_state = optimizer.update(grads, mid_state, params)
        return optax.apply_updates(params, updates), new_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "fusion_count",
    why="'any kind ... counted by opcode': leaves out the fusions that call a "
    "wrapped_copy/wrapped_transpose computation, taking them for layout bookkeeping rather than "
    "kernels; they are kLoop fusion instructions like any other: two_steps has 16 fusions, 2 of "
    "them wrapped copies (answers 14), nested_loops(2, 3) has 6 (answers 1)",
)
def _rt9_fusion_count_skips_wrapped(compiled) -> int:
    n = 0
    for line in compiled.as_text().splitlines():
        m = re.search(r"\sfusion\(.*calls=%?([\w.\-]+)", line)
        if m and not m.group(1).startswith("wrapped_"):
            n += 1
    return n


@wrong(
    "transpose_counts",
    why="'nested jaxprs ... scan and while bodies and conditions': recurses through a list of "
    "known param names (jaxpr, call_jaxpr, fun_jaxpr, body_jaxpr, branches) that lacks "
    "cond_jaxpr, so a transpose in a lax.while_loop's condition is not counted",
)
def _rt9_transpose_counts_no_while_cond(step, *args) -> tuple[int, int]:
    def walk(jaxpr) -> int:
        n = 0
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "transpose":
                n += 1
            for key in ("jaxpr", "call_jaxpr", "fun_jaxpr", "body_jaxpr", "branches"):
                sub = eqn.params.get(key)
                subs = sub if isinstance(sub, (list, tuple)) else [sub]
                for s in subs:
                    if s is None:
                        continue
                    n += walk(getattr(s, "jaxpr", s))
        return n

    closed = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = len(re.findall(r"=\s*\S+\s+transpose\(", text))
    return walk(closed.jaxpr), hlo


@wrong(
    "transpose_counts",
    why="'transpose instructions in the optimized HLO ... in every computation': walks ENTRY and "
    "what it reaches through calls=/body=/branch_computations= but not condition=, so a "
    "transpose left in a while loop's condition computation is missed (cond jnp.cumsum(c.T, axis=0)[0, 1] < 1e6 keeps one transpose in a fusion the condition calls: answers 0, not 1)",
)
def _rt9_transpose_counts_hlo_no_conditions(step, *args) -> tuple[int, int]:
    def walk(jaxpr) -> int:
        n = 0
        for eqn in jaxpr.eqns:
            n += eqn.primitive.name == "transpose"
            for v in eqn.params.values():
                for s in v if isinstance(v, (list, tuple)) else [v]:
                    if hasattr(s, "eqns"):
                        n += walk(s)
                    elif hasattr(s, "jaxpr") and hasattr(s.jaxpr, "eqns"):
                        n += walk(s.jaxpr)
        return n

    text = jax.jit(step).lower(*args).compile().as_text()
    comps = _rt9_computations(text)
    seen, todo, hlo = set(), ["ENTRY"], 0
    while todo:
        c = todo.pop()
        if c in seen or c not in comps:
            continue
        seen.add(c)
        for line in comps[c]:
            if re.search(r"=\s*\S+\s+transpose\(", line):
                hlo += 1
            for m in re.finditer(r"(?:calls|body|to_apply)=%?([\w.\-]+)", line):
                todo.append(m.group(1))
            m = re.search(r"branch_computations=\{([^}]*)\}", line)
            if m:
                todo += [b.strip().lstrip("%") for b in m.group(1).split(",")]
            for key in ("true_computation", "false_computation"):
                m = re.search(key + r"=%?([\w.\-]+)", line)
                if m:
                    todo.append(m.group(1))
    return walk(jax.make_jaxpr(step)(*args).jaxpr), hlo


@wrong(
    "absorbed_transposes",
    why="'contract anything else, on either side': decides by the operand's layout instead of "
    "dims: counts dots whose operand shape carries a {0,1} (column-major) layout, what a "
    "transpose 'looks like' in the text; the backward x^T @ g dot reads a row-major x with "
    "lhs_contracting_dims={0} and is missed",
)
def _rt9_absorbed_by_layout(compiled) -> int:
    n = 0
    for line in compiled.as_text().splitlines():
        if re.search(r"\sdot\(", line) and "{0,1}" in line.split("dot(", 1)[1]:
            n += 1
    return n


@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': treats optax's sgd with momentum like plain "
    "sgd (the velocity assumed to live inside the update, not in opt_state), so momentum "
    "predicts the params' bytes only; for (16, 32, 4) it says 2704 instead of 5408",
)
def _rt9_predict_alias_bytes_momentum_stateless(
    features: int, hidden: int, out: int, optimizer: str
) -> int:
    params = 4 * (features * hidden + hidden + hidden * out + out)
    if optimizer == "adam":
        return 3 * params + 4
    return params


@wrong(
    "predict_step_flops",
    why="'the products the forward and the backward pass need': takes the MSE's gradient into "
    "the output as a product too (d(mean (f - y)^2)/df through the (out, out) Jacobian, "
    "2*batch*out*out), a term that stays small until out is at least 4 x features; then it "
    "overshoots by more than 10% (f=8, h=64, o=64, b=64: 2,228,224 against a compiled 1,776,000)",
)
def _rt9_predict_step_flops_loss_jacobian(features: int, hidden: int, out: int, batch: int) -> int:
    fwd = 2 * batch * features * hidden + 2 * batch * hidden * out
    back = 2 * batch * features * hidden + 4 * batch * hidden * out
    return int(fwd + back + 2 * batch * out * out)
