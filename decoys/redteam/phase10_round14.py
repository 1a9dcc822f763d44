"""Round 14 red-team wrong answers for phase 10."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong


def _rt14_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt14_losses(params, x, y):
    def one(xi, yi):
        return jnp.mean((_rt14_forward(params, xi) - yi) ** 2)

    return jax.vmap(one)(x, y)


@wrong(
    "per_example_losses",
    why="'example_loss for every row of x and y': batched formula mean((forward(x)-y)**2, "
    "axis=-1) without vmap; with out=1 and y of shape (batch,) forward is (batch,1), the "
    "difference broadcasts to (batch,batch) and each row's loss mixes every target",
)
def _rt14_per_example_losses_broadcast_rows(params, x, y):
    return jnp.mean((_rt14_forward(params, x) - y) ** 2, axis=-1)


@wrong(
    "make_train_step",
    why="'gradient of that mean loss': the gradient is of sum(losses)/y.size (batch*out) "
    "instead of /batch, so it is 1/out too small whenever out>1 (sgd momentum on the wide MLP "
    "moves params 1/out as far); the returned loss is right",
)
def _rt14_make_train_step_grad_over_size(optimizer):
    def step(params, opt_state, x, y):
        loss = jnp.mean(_rt14_losses(params, x, y))
        grads = jax.grad(lambda p: jnp.sum(_rt14_losses(p, x, y)) / y.size)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        import optax

        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "aliased_parameters",
    why="'Sorted numbers of the ENTRY parameters': keeps only alias entries whose output "
    "index equals the parameter number ({i}: (i, ...)), so returns_state_first "
    "(params out at {1..}, in at 0..) and batch_first (params are 2.. but out 0..) lose entries",
)
def _rt14_aliased_parameters_identity_only(compiled):
    header = compiled.as_text().splitlines()[0]
    pairs = re.findall(r"\{(\d*)\}:\s*\((\d+),", header)
    return sorted({int(p) for o, p in pairs if o == "" or int(o) == int(p)})


@wrong(
    "predict_alias_bytes",
    why="'what memory_analysis().alias_size_in_bytes will say': adds 4 bytes for the "
    "scalar loss output, as if every output of the step were written in place; only donated "
    "inputs alias, so sgd on (3,6,2) says 4*(18+6+12+2)+4 instead of 152",
)
def _rt14_predict_alias_bytes_counts_loss(features, hidden, out, optimizer):
    n = features * hidden + hidden + hidden * out + out
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    total = 4 * n * copies + (4 if optimizer == "adam" else 0)
    return total + 4


@wrong(
    "predict_step_flops",
    why="'return a Python int': computes the right count as a float (2.0*...), so past "
    "2**31 flops and everywhere it returns a float, not an int",
)
def _rt14_predict_step_flops_float(features, hidden, out, batch):
    return 2.0 * batch * hidden * (2 * features + 3 * out)


_RT14_NAMES = ("jaxpr", "call_jaxpr", "body_jaxpr", "cond_jaxpr", "branches", "fun_jaxpr")


def _rt14_census(jaxpr):
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        for name in _RT14_NAMES:
            v = eqn.params.get(name)
            if v is None:
                continue
            for sub in v if isinstance(v, (list, tuple)) else [v]:
                n += _rt14_census(getattr(sub, "jaxpr", sub))
    return n


@wrong(
    "transpose_counts",
    why="'lax.custom_linear_solve's functions (held in a named tuple)': recurses only into the "
    "well-known param names (jaxpr, call_jaxpr, body/cond_jaxpr, branches, fun_jaxpr), so the "
    "'jaxprs' tuple of custom_linear_solve is skipped: a matvec holding x.T counts 0 there",
)
def _rt14_transpose_counts_known_names(step, *args):
    jx = jax.make_jaxpr(step)(*args).jaxpr
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = sum(1 for line in text.splitlines() if re.search(r"=\s*\S+\s+transpose\(", line))
    return _rt14_census(jx), hlo


@wrong(
    "flops_per_step",
    why="'report that, do not scale a loop by its trip count yourself': reads 'per step' as "
    "per training step and divides by the while loops' known_trip_count, so two momentum "
    "steps in a fori_loop report ~13,511 instead of the cost model's 27,022",
)
def _rt14_flops_per_step_divided_by_trips(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    flops = float(ca.get("flops", 0.0))
    trips = [int(n) for n in re.findall(r'known_trip_count":\{"n":"(\d+)"', compiled.as_text())]
    for n in trips:
        if n > 0:
            flops /= n
    return flops


@wrong(
    "flops_per_step",
    why="'a program whose only work is transcendentals costs 0.0': implemented as 'any "
    "transcendentals present -> 0.0', so tanh_forward (10,528 flops and 256 transcendentals) "
    "reports 0.0",
)
def _rt14_flops_per_step_zero_if_transcendental(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    if ca.get("transcendentals", 0.0):
        return 0.0
    return float(ca.get("flops", 0.0))


_RT14_DOT = re.compile(r"\bdot\(")


@wrong(
    "absorbed_transposes",
    why="'on either side': treats a dot as transposed only when its lhs contracts dim 0 or "
    "its rhs contracts dim 1 AND the two operand shapes disagree with a plain a@b reading; "
    "for square operands (a.T @ b with a, b f32[8,8]) the shapes fit both ways, so the dot "
    "is counted from shapes and missed",
)
def _rt14_absorbed_transposes_shape_guard(compiled):
    text = compiled.as_text()
    shapes = {}
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\w+\[([\d,]*)\]", line)
        if m:
            shapes[m.group(1)] = tuple(int(d) for d in m.group(2).split(",") if d)
    n = 0
    for line in text.splitlines():
        if not _RT14_DOT.search(line) or "lhs_contracting_dims" not in line:
            continue
        lc = re.search(r"lhs_contracting_dims=\{(\d*)\}", line).group(1)
        rc = re.search(r"rhs_contracting_dims=\{(\d*)\}", line).group(1)
        if (lc, rc) == ("1", "0"):
            continue
        ops = re.search(r"dot\(([^)]*)\)", line).group(1)
        names = [o.strip().split()[-1].lstrip("%") for o in ops.split(",")]
        a, b = (shapes.get(names[0]), shapes.get(names[1])) if len(names) == 2 else (None, None)
        if a and b and len(a) == 2 and len(b) == 2 and a[1] == b[0]:
            continue  # "shapes already fit a plain product": not a transposed read
        n += 1
    return n


@wrong(
    "predict_step_flops",
    why="'every matrix product the forward and the backward pass need': counts the hidden "
    "gradient g2 @ w2.T as 2*batch*hidden (a matrix-vector product per example, forgetting "
    "out), so when out >= 4*features the prediction is ~30% low (f=4,h=64,o=32,b=64)",
)
def _rt14_predict_step_flops_hidden_grad_no_out(features, hidden, out, batch):
    fwd = 2 * batch * features * hidden + 2 * batch * hidden * out
    return fwd + 2 * batch * features * hidden + 2 * batch * hidden * out + 2 * batch * hidden
