"""Round 13 red-team wrong answers for phase 10."""

from __future__ import annotations

import re

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt13_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@wrong(
    "per_example_losses",
    why="'shape (batch,), for any batch size (also 1)': squeezes the "
    "vmapped result to drop stray unit axes, so a batch of one returns shape () instead of (1,)",
)
def _rt13_per_example_losses_squeezed(params, x, y):
    def one(xi, yi):
        return jnp.mean((_rt13_forward(params, xi) - yi) ** 2)

    return jnp.squeeze(jax.vmap(one)(x, y))


@wrong(
    "make_train_step",
    why="'the update comes from optimizer': optax updates are already "
    "descent directions (-lr*g) and must be ADDED (optax.apply_updates); this subtracts them, "
    "so every step climbs the loss (e.g. sgd on the wide MLP: params move the wrong way)",
)
def _rt13_make_train_step_subtracts_updates(optimizer):
    def loss_fn(p, x, y):
        def one(xi, yi):
            return jnp.mean((_rt13_forward(p, xi) - yi) ** 2)

        return jnp.mean(jax.vmap(one)(x, y))

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - u, params, updates)
        return params, opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


_RT13_FUSION_LINE = re.compile(r"=\s*[a-z0-9]+\[[^\]]*\](\{[^}]*\})?\s+fusion\(")


@wrong(
    "fusion_count",
    why="'any kind ... counted by opcode': the regex expects an array shape "
    "before the opcode, so a multi-output fusion with a tuple shape "
    "`(f32[4]{0}, s32[4]{0}) fusion(...)` is never counted (a jnp.argmax+max fused pair)",
)
def _rt13_fusion_count_array_shape_only(compiled):
    return sum(1 for line in compiled.as_text().splitlines() if _RT13_FUSION_LINE.search(line))


@wrong(
    "aliased_parameters",
    why="'{output index}: (parameter, ...)': the regex requires a "
    "number in the output index `{\\d+}`, so a single donated array returned alone (alias "
    "entry `{}: (0, {}, may-alias)`) gives [] instead of [0]",
)
def _rt13_aliased_parameters_numbered_output_only(compiled):
    header = compiled.as_text().splitlines()[0]
    found = re.findall(r"\{\d+(?:,\d+)*\}:\s*\((\d+),", header)
    return sorted(set(int(n) for n in found))


@wrong(
    "aliased_parameters",
    why="'Each number once, ascending': lists parameters in the order "
    "the header lists outputs; for a step returning (loss, state, params) the state's "
    "parameters (4, 5, ...) come before the params' (0..3), not ascending",
)
def _rt13_aliased_parameters_output_order(compiled):
    header = compiled.as_text().splitlines()[0]
    m = re.search(r"input_output_alias=\{(.*?)\}\s*(,\s*\w+=|$)", header)
    if not m:
        return []
    seen = []
    for n in re.findall(r"\}:\s*\((\d+),", header):
        if int(n) not in seen:
            seen.append(int(n))
    return seen


@wrong(
    "transpose_counts",
    why="'transpose instructions in the OPTIMIZED HLO': counts "
    "stablehlo.transpose in the lowered (unoptimized) module, which still has the transposes "
    "autodiff wrote before XLA folds them into the dots' dimension numbers (grad of x@w: "
    "lowered has one, optimized HLO has 0)",
)
def _rt13_transpose_counts_lowered_module(step, *args):
    def census(jaxpr):
        n = 0
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "transpose":
                n += 1
            for v in eqn.params.values():
                for sub in v if isinstance(v, (tuple, list)) else (v,):
                    if isinstance(sub, jax.extend.core.ClosedJaxpr):
                        n += census(sub.jaxpr)
                    elif isinstance(sub, jax.extend.core.Jaxpr):
                        n += census(sub)
        return n

    j = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).as_text()
    return census(j.jaxpr), text.count("stablehlo.transpose")


@wrong(
    "transpose_counts",
    why="'every inner jaxpr, at any depth': recurses one level only "
    "(the step's own equations and the jaxprs they hold directly), so a transpose in a "
    "lax.cond branch inside a jit, or in a fori_loop body inside jit, is missed",
)
def _rt13_transpose_counts_one_level(step, *args):
    def subjaxprs(eqn):
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    yield sub.jaxpr
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    yield sub

    j = jax.make_jaxpr(step)(*args).jaxpr
    n = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        for sub in subjaxprs(eqn):
            n += sum(1 for e in sub.eqns if e.primitive.name == "transpose")
    hlo = jax.jit(step).lower(*args).compile().as_text()
    h = len(re.findall(r"\stranspose\(", hlo))
    return n, h


@wrong(
    "absorbed_transposes",
    why="'count dots (in every computation)... dots of int32, float32 "
    "and bfloat16': matches only f32 dot instructions, so a transposed int32 dot in a lax.switch branch "
    "(a.T @ b of s32[3,4] and s32[3,5]: `s32[4,5] dot(...), lhs_contracting_dims={0}`) is not "
    "counted: 0 instead of 1 (bf16 dots are upcast to f32 dots on CPU, so only s32 shows it)",
)
def _rt13_absorbed_transposes_f32_only(compiled):
    n = 0
    for line in compiled.as_text().splitlines():
        if re.search(r"=\s*f32\[[^\]]*\]\S*\s+dot\(", line):
            lhs = re.search(r"lhs_contracting_dims=\{(\d+)\}", line)
            rhs = re.search(r"rhs_contracting_dims=\{(\d+)\}", line)
            if (lhs and lhs.group(1) != "1") or (rhs and rhs.group(1) != "0"):
                n += 1
    return n


@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': gives sgd with "
    "momentum a step counter like adam's (int32 count), so momentum answers 4 bytes too many "
    "(optax's momentum state is (TraceState(trace), EmptyState()), no count)",
)
def _rt13_predict_alias_bytes_momentum_count(features, hidden, out, optimizer):
    p = 4 * (features * hidden + hidden + hidden * out + out)
    if optimizer == "sgd":
        return p
    if optimizer == "momentum":
        return 2 * p + 4
    return 3 * p + 4


@wrong(
    "predict_alias_bytes",
    why="'sizes past 2**31 bytes': accumulates the byte count in "
    "float32 (np.float32 per leaf), which loses the low bits past 2**24: features=10007, "
    "hidden=30011, out=3 with adam answers a multiple of a large power of two, not the exact count",
)
def _rt13_predict_alias_bytes_float32_sum(features, hidden, out, optimizer):
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    total = np.float32(0)
    for n in (features * hidden, hidden, hidden * out, out):
        total = total + np.float32(4) * np.float32(n) * np.float32(copies)
    if optimizer == "adam":
        total = total + np.float32(4)
    return int(total)


@wrong(
    "predict_step_flops",
    why="'count every matrix product the forward and backward pass "
    "need': uses the 6*N*D rule (backward = 2x forward), which also counts the gradient into "
    "the data x; when features >= 4*out (features=512, hidden=64, out=8, batch=64) that "
    "product is ~44% of the total, far outside 10%",
)
def _rt13_predict_step_flops_six_n_d(features, hidden, out, batch):
    return 6 * batch * (features * hidden + hidden * out)


_RT13_DEF = re.compile(r"%([\w.\-]+)\s*=\s*[a-z0-9]+\[([0-9,]*)\]")


@wrong(
    "flops_per_step",
    why="'as XLA's cost model counts them ... taken as it is': rebuilds "
    "the count from the optimized HLO's dots (2*m*k*n each) instead of reading cost_analysis, "
    "so element-wise work (relu, the loss, the momentum update) is missing: the 16-32-4 "
    "momentum step answers ~20% low, and a bf16/f16 program with only adds answers 0.0",
)
def _rt13_flops_per_step_dots_from_hlo(compiled):
    text = compiled.as_text()
    shapes = {}
    for m in _RT13_DEF.finditer(text):
        shapes[m.group(1)] = [int(d) for d in m.group(2).split(",") if d]
    total = 0
    for line in text.splitlines():
        m = re.search(r"=\s*[a-z0-9]+\[([0-9,]*)\]\S*\s+dot\(%([\w.\-]+),", line)
        if not m:
            continue
        out = [int(d) for d in m.group(1).split(",") if d]
        lhs = shapes.get(m.group(2), [])
        c = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", line)
        k = 1
        for d in c.group(1).split(",") if c and c.group(1) else []:
            k *= lhs[int(d)] if int(d) < len(lhs) else 1
        n = 1
        for d in out:
            n *= d
        total += 2 * n * k
    return float(total)


def _rt13_computations(text):
    comps, name, body = {}, None, []
    for line in text.splitlines():
        m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if m and not line.startswith(" "):
            name, body = ("ENTRY" if m.group(1) else m.group(2)), []
            comps[name] = body
        elif line.startswith("}"):
            name = None
        elif name is not None:
            body.append(line)
    return comps


@wrong(
    "fusion_count",
    why="'in every computation: ... conditional branches': walks the call "
    "graph from ENTRY through calls=, body=, condition= and a cond's true_computation=/"
    "false_computation= (the older printed form of a cond), but not branch_computations={...}, "
    "which is how this XLA prints both lax.cond and lax.switch: a switch whose three branches "
    "hold one fusion each answers 1 instead of 4",
)
def _rt13_fusion_count_walk_without_switch(compiled):
    comps = _rt13_computations(compiled.as_text())
    seen, todo, n = set(), ["ENTRY"], 0
    while todo:
        c = todo.pop()
        if c in seen or c not in comps:
            continue
        seen.add(c)
        for line in comps[c]:
            if re.search(r"\sfusion\(", line):
                n += 1
            for key in (
                "calls",
                "body",
                "condition",
                "true_computation",
                "false_computation",
                "to_apply",
            ):
                for m in re.finditer(key + r"=%?([\w.\-]+)", line):
                    todo.append(m.group(1))
    return n
