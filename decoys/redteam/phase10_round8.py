"""Red-team round 8 wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong


def _rt8_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt8_example_loss(params, x, y):
    return jnp.mean((_rt8_forward(params, x) - y) ** 2)


def _rt8_losses(params, x, y):
    return jax.vmap(_rt8_example_loss, in_axes=(None, 0, 0))(params, x, y)


def _rt8_computations(text: str) -> dict[str, str]:
    """name -> body of every computation of an HLO module text ('ENTRY' for the entry)."""
    comps: dict[str, str] = {}
    name, lines = None, []
    for line in text.splitlines():
        head = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$", line)
        if head and not line.startswith(" "):
            name, lines = ("ENTRY" if head.group(1) else head.group(2)), []
            continue
        if line.startswith("}") and name is not None:
            comps[name] = "\n".join(lines)
            name = None
            continue
        if name is not None:
            lines.append(line)
    return comps


# ---------------------------------------------------------------- per_example_losses
@wrong(
    "per_example_losses",
    why="'the optimized HLO has just the two matmuls, each over the whole batch': without "
    "in_axes=None the params are broadcast to one copy per example and vmapped on axis 0, so "
    "the values are right but every layer becomes a batched dot (lhs_batch_dims={0}) of batch "
    "matrix-vector products over per-example weight copies; wrong on data('wide') "
    "(f32[8,1,32] dot with batch dims, not an f32[8,16] x f32[16,32] matmul)",
)
def _rt8_per_example_losses_broadcast_params(params, x, y):
    b = x.shape[0]
    copies = jax.tree.map(lambda a: jnp.broadcast_to(a, (b,) + a.shape), params)
    return jax.vmap(_rt8_example_loss)(copies, x, y)


# ---------------------------------------------------------------- make_train_step
@wrong(
    "make_train_step",
    why="'the update comes from optimizer': the PyTorch habit p - u after optimizer.update, "
    "but optax's updates already carry the -learning_rate, so this steps uphill; the loss of "
    "the first call is right, the returned params are wrong on any call, e.g. "
    "sgd(0.05, momentum=0.9) on step_args() (loss rises on the second step)",
)
def _rt8_make_train_step_subtracts_updates(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt8_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - u, params, updates)
        return params, opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses ... applied to the gradient of that mean "
    "loss': a mixed-precision habit runs the forward and backward in bfloat16 (params and batch "
    "cast down, grads cast back up), so loss and update are off by ~1e-2 relative; wrong on "
    "sgd(0.05, momentum=0.9) with step_args() against NumPy's float32 update",
)
def _rt8_make_train_step_bf16_compute(optimizer):
    def loss_fn(p, x, y):
        p16 = jax.tree.map(lambda a: a.astype(jnp.bfloat16), p)
        losses = _rt8_losses(p16, x.astype(jnp.bfloat16), y.astype(jnp.bfloat16))
        return jnp.mean(losses).astype(jnp.float32)

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        grads = jax.tree.map(lambda g: g.astype(jnp.float32), grads)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


# ---------------------------------------------------------------- fusion_count
@wrong(
    "fusion_count",
    why="'in every computation: ... conditional branches': walks from ENTRY through calls=, "
    "body=, condition=, to_apply= and branch_computations=, but the branch regex captures only "
    "the first name of branch_computations={%a, %b, %c}; wrong on switch_program(3) (the "
    "second and third branches' fusions missed) and on loop_with_a_branch",
)
def _rt8_fusion_count_first_branch_only(compiled) -> int:
    comps = _rt8_computations(compiled.as_text())
    seen, todo, total = set(), ["ENTRY"], 0
    while todo:
        name = todo.pop()
        if name in seen or name not in comps:
            continue
        seen.add(name)
        body = comps[name]
        total += len(re.findall(r"\sfusion\(", body))
        todo += re.findall(r"(?:calls|body|condition|to_apply)=%?([\w.\-]+)", body)
        todo += re.findall(r"branch_computations=\{%?([\w.\-]+)", body)
    return total


# ---------------------------------------------------------------- aliased_parameters
@wrong(
    "aliased_parameters",
    why="'ENTRY parameters whose buffers an output MAY REUSE' (the header's alias list): reads "
    "the donated flags of compiled.args_info and numbers the flattened leaves of every argument "
    "instead; wrong when a donation is not usable or jit dropped an unused argument: "
    "jit(lambda a, b: a * 2, donate_argnums=(0, 1)) of f32[3], f32[4] gives [0, 1] instead of "
    "[0]; jit(lambda x, p: p * 2, donate_argnums=1) gives [1] instead of [0]",
)
def _rt8_aliased_from_args_info(compiled) -> list[int]:
    leaves = jax.tree.leaves(compiled.args_info)
    return [i for i, leaf in enumerate(leaves) if getattr(leaf, "donated", False)]


# ---------------------------------------------------------------- flops_per_step
@wrong(
    "flops_per_step",
    why="'Only flops: transcendentals are a separate count, not added' misread as 'take them "
    "out': returns flops - transcendentals; right on the momentum step (no transcendentals), "
    "wrong on tanh_forward and on switch_program with the exp branch (tanh/exp counted in "
    "flops are subtracted)",
)
def _rt8_flops_minus_transcendentals(compiled) -> float:
    costs = compiled.cost_analysis()
    if isinstance(costs, list | tuple):
        costs = costs[0] if costs else {}
    return float(costs.get("flops", 0.0)) - float(costs.get("transcendentals", 0.0))


# ---------------------------------------------------------------- transpose_counts
def _rt8_hlo_transposes(step, *args) -> int:
    text = jax.jit(step).lower(*args).compile().as_text()
    return len(re.findall(r"=\s*(?:\([^)]*\)|\S+)\s+transpose\(", text))


@wrong(
    "transpose_counts",
    why="'every inner jaxpr': the hand recursion knows pjit/scan (jaxpr=), while "
    "(body_jaxpr=, cond_jaxpr=) and cond (branches=) but not custom_jvp_call / custom_vjp_call "
    "(call_jaxpr=); wrong on a step whose transpose sits in a jax.custom_jvp function, e.g. "
    "f(a) = a.T * 2 with a custom jvp, called on f32[3,3]: (0, 1) instead of (1, 1)",
)
def _rt8_transposes_skip_custom_calls(step, *args) -> tuple[int, int]:
    keys = ("jaxpr", "body_jaxpr", "cond_jaxpr", "branches")

    def count(jaxpr) -> int:
        jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
        n = 0
        for eqn in jaxpr.eqns:
            n += eqn.primitive.name == "transpose"
            for key in keys:
                value = eqn.params.get(key)
                if value is None:
                    continue
                for inner in value if isinstance(value, tuple | list) else (value,):
                    n += count(inner)
        return n

    return count(jax.make_jaxpr(step)(*args)), _rt8_hlo_transposes(step, *args)


@wrong(
    "transpose_counts",
    why="'nested jaxprs included' at any depth: recurses one level only (into the top-level "
    "equations' inner jaxprs, not theirs); right on nested_transposes called unjitted (each "
    "transpose one level down), wrong on jax.jit(nested_transposes) or a cond inside a "
    "fori_loop: (0, ...) instead of (3, ...)",
)
def _rt8_transposes_one_level(step, *args) -> tuple[int, int]:
    closed = jax.make_jaxpr(step)(*args)
    n = 0
    for eqn in closed.jaxpr.eqns:
        n += eqn.primitive.name == "transpose"
        for value in eqn.params.values():
            for inner in value if isinstance(value, tuple | list) else (value,):
                inner = getattr(inner, "jaxpr", inner)
                for e in getattr(inner, "eqns", ()):
                    n += e.primitive.name == "transpose"
    return n, _rt8_hlo_transposes(step, *args)


# ---------------------------------------------------------------- absorbed_transposes
@wrong(
    "absorbed_transposes",
    why="'How many 2-D dots': asks per computation whether it holds a transposed dot "
    "(re.search) and counts computations, not dots; right when every transposed dot has a "
    "computation of its own (transposed_in_a_loop), wrong when two share one: the momentum "
    "step (wide) gives 2 instead of 3, a fori_loop of acc.T @ b + acc @ c.T over f32[5,5] "
    "gives 1 instead of 2",
)
def _rt8_absorbed_per_computation(compiled) -> int:
    pattern = re.compile(r"\sdot\([^\n]*?(lhs_contracting_dims=\{0\}|rhs_contracting_dims=\{1\})")
    return sum(1 for body in _rt8_computations(compiled.as_text()).values() if pattern.search(body))


# ---------------------------------------------------------------- predict_alias_bytes
@wrong(
    "predict_alias_bytes",
    why="'what memory_analysis().alias_size_in_bytes will say': counts both sides of each "
    "alias ('updated in place instead of doubling memory' read as input plus output bytes), "
    "twice the donated bytes; wrong on every case, e.g. (16, 32, 4, 'sgd'): 5408 instead of "
    "2704",
)
def _rt8_alias_bytes_both_sides(features: int, hidden: int, out: int, optimizer: str) -> int:
    params = features * hidden + hidden + hidden * out + out
    state = {"sgd": 0, "momentum": params, "adam": 2 * params}[optimizer]
    extra = 1 if optimizer == "adam" else 0
    return 2 * 4 * (params + state + extra)


# ---------------------------------------------------------------- predict_step_flops
@wrong(
    "predict_step_flops",
    why="'leave the elementwise work out': products are right (4bfh + 6bho) but scaled by the "
    "README's 20% element-wise overhead of the 16-32-4 example, which holds only there; at the "
    "tests' sizes the overhead is 1.4-5.6%, so this is ~17% high, e.g. (512, 64, 8, 64): "
    "10.30M vs 8.75M compiled",
)
def _rt8_flops_readme_overhead(features: int, hidden: int, out: int, batch: int) -> int:
    products = 4 * batch * features * hidden + 6 * batch * hidden * out
    return int(products * 1.2)
