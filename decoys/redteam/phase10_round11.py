"""Red-team round 11 wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong


def _rt11_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt11_losses(params, x, y):
    def one(p, xi, yi):
        return jnp.mean((_rt11_forward(p, xi) - yi) ** 2)

    return jax.vmap(one, in_axes=(None, 0, 0))(params, x, y)


_rt11_OPCODE = re.compile(r"=\s*(\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(")


def _rt11_opcodes(text: str):
    for line in text.splitlines():
        m = _rt11_OPCODE.search(line)
        if m and re.match(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=", line):
            yield m.group(2), line


@wrong(
    "per_example_losses",
    why="'Mean squared error of one example': uses optax.l2_loss, which is 0.5*(pred-y)**2, "
    "so every loss is half the MSE; wrong on any data() batch (e.g. wide: each loss / 2)",
)
def _rt11_per_example_losses_optax_l2(params, x, y):
    import optax

    return jax.vmap(
        lambda p, xi, yi: jnp.mean(optax.l2_loss(_rt11_forward(p, xi), yi)),
        in_axes=(None, 0, 0),
    )(params, x, y)


@wrong(
    "make_train_step",
    why="'adamw, whose weight decay reads the params': passes the gradients as the params "
    "argument of optimizer.update (update(grads, state, grads)); right for sgd/momentum/adam, "
    "wrong for adamw(weight_decay>0): decay is applied to g, not w, on the first step already",
)
def _rt11_make_train_step_decay_reads_grads(optimizer):
    import optax

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt11_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, grads)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'applied to the gradient of that mean loss': averages the gradient over the batch a "
    "second time (grads / batch) after the mean loss; adam/adamw are nearly scale invariant and "
    "batch-of-one is exact, but sgd with momentum on a batch of 8 moves 8x too little",
)
def _rt11_make_train_step_grad_averaged_twice(optimizer):
    import optax

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt11_losses(p, x, y)))(params)
        grads = jax.tree.map(lambda g: g / x.shape[0], grads)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "fusion_count",
    why="'counted by opcode': counts fusion instructions but deduplicates them by the fused "
    "computation's text (names and metadata stripped), i.e. distinct kernels, not instructions; "
    "wrong on lax.switch with two identical branches (sin(a)*2+1 twice, cos(a)*3): 3 not 4, "
    "and on jit(lambda a, b: (sin(a)*2+1, sin(b)*2+1)): 1 not 2",
)
def _rt11_fusion_count_distinct_kernels(compiled) -> int:
    called = set()
    n_nocall = 0
    for op, line in _rt11_opcodes(compiled.as_text()):
        if op == "fusion":
            m = re.search(r"calls=%?([\w.\-]+)", line)
            if m:
                called.add(m.group(1))
            else:
                n_nocall += 1
    # distinct fused bodies, compared by their text (CSE-equal kernels counted once)
    text = compiled.as_text()
    bodies = set()
    for name in called:
        m = re.search(
            r"^%?" + re.escape(name) + r"\s.*?\{\n(.*?)^\}",
            text,
            re.MULTILINE | re.DOTALL,
        )
        body = m.group(1) if m else name
        body = re.sub(r",\s*metadata=\{[^}]*\}", "", body)
        bodies.add(re.sub(r"%[\w.\-]+", "%", body))
    return len(bodies) + n_nocall


@wrong(
    "flops_per_step",
    why="'transcendentals are a separate count, not added' and 'no arithmetic costs 0.0': when "
    "'flops' is absent, falls back to 'transcendentals' as the work done; wrong on jnp.exp(a) "
    "of f32[4,3] (no 'flops' key): 12.0 instead of 0.0",
)
def _rt11_flops_per_step_transcendental_fallback(compiled) -> float:
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return float(ca.get("flops", ca.get("transcendentals", 0.0)))


def _rt11_count_closed_only(jaxpr) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        for v in eqn.params.values():
            for s in v if isinstance(v, (list, tuple)) else [v]:
                if type(s).__name__ == "ClosedJaxpr":
                    n += _rt11_count_closed_only(s.jaxpr)
    return n


def _rt11_hlo_transposes(text: str) -> int:
    return sum(op == "transpose" for op, _ in _rt11_opcodes(text))


@wrong(
    "transpose_counts",
    why="'a checkpoint's function ... nested at any depth': recurses only into ClosedJaxpr "
    "params (pjit, cond, while, scan, custom_jvp/vjp, linear_solve) but jax.checkpoint (remat2) "
    "holds an open core.Jaxpr; jaxpr count 0 instead of 1 for jax.checkpoint(lambda a: a.T*2)",
)
def _rt11_transpose_counts_closed_jaxprs_only(step, *args) -> tuple[int, int]:
    n_jaxpr = _rt11_count_closed_only(jax.make_jaxpr(step)(*args).jaxpr)
    n_hlo = _rt11_hlo_transposes(jax.jit(step).lower(*args).compile().as_text())
    return n_jaxpr, n_hlo


def _rt11_dims(line, key):
    m = re.search(key + r"=\{([\d,]*)\}", line)
    return m.group(1) if m else ""


@wrong(
    "absorbed_transposes",
    why="'on either side (a dot reading both operands transposed is one dot)': counts a dot "
    "when exactly one side is transposed (lhs!={1} XOR rhs!={0}), thinking A^T B^T cancel; "
    "wrong on a.T @ b.T (lhs {0}, rhs {1}): 0 instead of 1",
)
def _rt11_absorbed_transposes_xor(compiled) -> int:
    n = 0
    for op, line in _rt11_opcodes(compiled.as_text()):
        if op == "dot":
            lhs_t = _rt11_dims(line, "lhs_contracting_dims") != "1"
            rhs_t = _rt11_dims(line, "rhs_contracting_dims") != "0"
            n += lhs_t != rhs_t
    return n


@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': adam is given one moving average (mu) plus "
    "its int32 count, forgetting the second moment nu; right for sgd and momentum, short by "
    "4*(params) bytes for adam, e.g. (3, 6, 2) adam: 308 instead of 460",
)
def _rt11_predict_alias_bytes_adam_one_moment(features, hidden, out, optimizer) -> int:
    n = features * hidden + hidden + hidden * out + out
    copies = {"sgd": 1, "momentum": 2, "adam": 2}[optimizer]
    return 4 * n * copies + (4 if optimizer == "adam" else 0)


@wrong(
    "predict_step_flops",
    why="'count every matrix product': keeps only the dominant layer's products (its forward, "
    "weight gradient and, for layer 2, the hidden gradient), 'the matrix products dominate' "
    "misread; features=4*out case (64,128,16,64): 4bfh=4.2M vs true 4bfh+6bho=5.0M, 16% low",
)
def _rt11_predict_step_flops_dominant_layer_only(features, hidden, out, batch) -> int:
    first = 4 * batch * features * hidden
    second = 6 * batch * hidden * out
    return max(first, second)


@wrong(
    "aliased_parameters",
    why="'whose buffers an output may reuse ... each number once': reads the header's alias list "
    "but drops parameters of rank 0 (s32[] / f32[]), taking a scalar as never worth aliasing; "
    "wrong on a donated adam step, whose int32 count (parameter 4) is aliased: missing 4",
)
def _rt11_aliased_parameters_arrays_only(compiled) -> list[int]:
    text = compiled.as_text()
    header = text.splitlines()[0]
    m = re.search(r"input_output_alias=\{(.*?)\}\s*(,\s*\w+=|$)", header)
    if not m:
        return []
    params = sorted({int(p) for p in re.findall(r"\}:\s*\((\d+),", m.group(1) + "}")})
    shapes = {}
    entry = text[text.index("\nENTRY") :]
    entry = entry[: entry.index("\n}")]
    for line in entry.splitlines():
        pm = re.match(r"^\s*%?[\w.\-]+\s*=\s*(\w+\[[\d,]*\])\S*\s+parameter\((\d+)\)", line)
        if pm:
            shapes[int(pm.group(2))] = pm.group(1)
    return [p for p in params if not shapes.get(p, "x[1]").endswith("[]")]
