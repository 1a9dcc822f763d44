"""Red-team round 7 wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kata_harness.decoys import wrong


def _rt7_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt7_example_loss(params, x, y):
    return jnp.mean((_rt7_forward(params, x) - y) ** 2)


_rt7_CHUNK = 8


@wrong(
    "per_example_losses",
    why="'one batched program ... two matmuls over the whole batch, not one pair per example': "
    "vmaps in memory-friendly chunks of 8 rows joined by concatenate; values are right and a "
    "batch <= 8 gives one pair, but a batch of 20 runs 3 pairs of matmuls (eager and jitted)",
)
def _rt7_per_example_losses_chunked(params, x, y):
    f = jax.vmap(_rt7_example_loss, in_axes=(None, 0, 0))
    n = x.shape[0]
    if n <= _rt7_CHUNK:
        return f(params, x, y)
    parts = [
        f(params, x[i : i + _rt7_CHUNK], y[i : i + _rt7_CHUNK]) for i in range(0, n, _rt7_CHUNK)
    ]
    return jnp.concatenate(parts)


@wrong(
    "make_train_step",
    why="'the update comes from `optimizer` applied to the gradient of that mean loss': chains "
    "optax.clip_by_global_norm(1.0) before it ('good practice'); wrong whenever the gradient "
    "norm exceeds 1, e.g. the 'wide' MLP with sgd(0.05) whose first gradient norm is > 1",
)
def _rt7_make_train_step_clipped(optimizer):
    opt = optax.chain(optax.clip_by_global_norm(1.0), optimizer)

    def step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean(jax.vmap(_rt7_example_loss, in_axes=(None, 0, 0))(p, x, y))

        loss, grads = jax.value_and_grad(loss_fn)(params)
        # the chain's state is (clip state = EmptyState, inner state): keep the caller's shape
        updates, (_, new_state) = opt.update(grads, (optax.EmptyState(), opt_state), params)
        return optax.apply_updates(params, updates), new_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="optax updates are already the negated step; this subtracts them as if they were "
    "gradients (params - updates), so every step climbs the loss: wrong after one step of "
    "sgd(0.05) on any batch",
)
def _rt7_make_train_step_minus_updates(optimizer):
    def step(params, opt_state, x, y):
        def loss_fn(p):
            return jnp.mean(jax.vmap(_rt7_example_loss, in_axes=(None, 0, 0))(p, x, y))

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, new_state = optimizer.update(grads, opt_state, params)
        new_params = jax.tree_util.tree_map(lambda p, u: p - u, params, updates)
        return new_params, new_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def _rt7_shape_tokens(shape_text):
    return re.findall(r"[a-z0-9]+\[[0-9,]*\]", shape_text)


@wrong(
    "aliased_parameters",
    why="'whose buffers an output may REUSE (the header says it)': infers aliasing from ENTRY "
    "parameters whose shape/dtype matches some output leaf instead of reading "
    "input_output_alias; right on the fully donated momentum step, wrong with 'only the state "
    "donated' (params match outputs too) and [] expected without donation",
)
def _rt7_aliased_parameters_shape_match(compiled):
    text = compiled.as_text()
    header = next(l for l in text.splitlines() if l.startswith("ENTRY"))
    params_txt, _, out_txt = header.partition(") -> ")
    params = _rt7_shape_tokens(params_txt)
    outs = _rt7_shape_tokens(out_txt)
    found = []
    for num, shape in enumerate(params):
        if shape in outs:
            outs.remove(shape)
            found.append(num)
    return found


@wrong(
    "flops_per_step",
    why="'a program with no arithmetic (a bare transpose) costs 0.0 flops': handles the old "
    "list form of cost_analysis but returns .get('flops') unchanged, i.e. None for a bare "
    "a.T (the key is absent)",
)
def _rt7_flops_per_step_none_when_absent(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return ca.get("flops")


def _rt7_count_transposes_once(jaxpr, seen):
    """Recursive census that visits every sub-jaxpr once (by identity)."""
    if id(jaxpr) in seen:
        return 0
    seen.add(id(jaxpr))
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        for v in eqn.params.values():
            for sub in v if isinstance(v, (list, tuple)) else [v]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    n += _rt7_count_transposes_once(inner, seen)
    return n


@wrong(
    "transpose_counts",
    why="'transpose equations ... nested jaxprs included': the recursion keeps a visited set "
    "by id, but jit caches one jaxpr for every call of the same jitted function, so "
    "f = jax.jit(lambda m: m.T @ m); step = lambda a: f(a) + f(2 * a) counts 1 instead of 2",
)
def _rt7_transpose_counts_visited_set(step, *args):
    closed = jax.make_jaxpr(step)(*args)
    jc = _rt7_count_transposes_once(closed.jaxpr, set())
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = len(re.findall(r"\btranspose\(", text))
    return jc, hlo


@wrong(
    "absorbed_transposes",
    why="'how many 2-D DOTS': deduplicates dots by their (shapes, dimension numbers) "
    "signature ('the same kernel counted once'); a program with a.T @ b and a.T @ c of one "
    "shape (two distinct dots, both lhs-transposed) gives 1 instead of 2",
)
def _rt7_absorbed_transposes_unique_signature(compiled):
    sigs = set()
    for line in compiled.as_text().splitlines():
        if not re.search(r"\sdot\(", line):
            continue
        lhs = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", line)
        rhs = re.search(r"rhs_contracting_dims=\{([0-9,]*)\}", line)
        l = lhs.group(1) if lhs else "1"
        r = rhs.group(1) if rhs else "0"
        if l != "1" or r != "0":
            shapes = tuple(re.findall(r"[a-z0-9]+\[[0-9,]*\]", line.split("metadata")[0]))
            sigs.add((shapes, l, r))
    return len(sigs)


@wrong(
    "predict_alias_bytes",
    why="'what memory_analysis().alias_size_in_bytes will say': rounds every donated buffer "
    "up to a 64-byte allocation alignment; the alias size is the plain byte sum, so b2 of "
    "f32[3] (12 bytes) or adam's s32[] count (4 bytes) is overcounted: wrong on (5, 7, 3, 'sgd')",
)
def _rt7_predict_alias_bytes_aligned(features, hidden, out, optimizer):
    def aligned(n):
        return -(-n // 64) * 64

    leaves = [features * hidden * 4, hidden * 4, hidden * out * 4, out * 4]
    total = sum(aligned(b) for b in leaves)
    if optimizer == "momentum":
        total *= 2
    elif optimizer == "adam":
        total = 3 * total + aligned(4)
    return int(total)


@wrong(
    "predict_step_flops",
    why="'return a Python int': builds the count with np.prod over shape tuples, which "
    "returns numpy.int64 (not int); the value is the products' count, but the type is not a "
    "Python int on every input, e.g. (16, 32, 4, 8)",
)
def _rt7_predict_step_flops_numpy_int(features, hidden, out, batch):
    products = [
        (batch, features, hidden),  # x @ w1
        (batch, hidden, out),  # h @ w2
        (hidden, batch, out),  # h^T @ g2
        (batch, out, hidden),  # g2 @ w2^T
        (features, batch, hidden),  # x^T @ g1
    ]
    return np.int64(2) * sum(np.prod(np.array(p, dtype=np.int64)) for p in products)


@wrong(
    "predict_step_flops",
    why="'the gradient into the hidden layer' is g2 @ w2.T, a (batch, out) by (out, hidden) "
    "product; this takes it as (batch, hidden) by (hidden, hidden) (the square 'hidden to "
    "hidden' Jacobian): 4bfh + 4bho + 2bh^2, far off when hidden >> out, e.g. (64, 256, 4, 128)",
)
def _rt7_predict_step_flops_square_hidden_grad(features, hidden, out, batch):
    fwd = 2 * batch * features * hidden + 2 * batch * hidden * out
    wgrads = 2 * features * batch * hidden + 2 * hidden * batch * out
    hidden_grad = 2 * batch * hidden * hidden
    return int(fwd + wgrads + hidden_grad)


_rt7_KERNEL_OPS = ("fusion", "dot", "copy", "convolution", "reduce", "sort", "scatter", "gather")


@wrong(
    "fusion_count",
    why="'how many FUSION instructions' (the task is titled 'count the kernels'): counts every "
    "kernel-launching instruction outside fused computations, fusions plus the unfused dot and "
    "copy ops; the momentum step's ENTRY also holds %dot, %dot.1 and copies, so it overcounts",
)
def _rt7_fusion_count_all_kernels(compiled):
    n = 0
    in_fused = False
    for line in compiled.as_text().splitlines():
        if line and not line.startswith(" "):
            in_fused = line.lstrip("%").startswith("fused")
            continue
        if in_fused:
            continue
        m = re.match(r"\s*(?:ROOT\s+)?%\S+\s*=\s*(?:\([^=]*\)|\S+)\s+([a-z-]+)\(", line)
        if m and m.group(1) in _rt7_KERNEL_OPS:
            n += 1
    return n
