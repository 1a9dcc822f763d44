"""Red-team round 10 wrong answers for phase 10, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong


def _rt10_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt10_example_loss(params, x, y):
    return jnp.mean((_rt10_forward(params, x) - y) ** 2)


def _rt10_losses(params, x, y):
    return jax.vmap(_rt10_example_loss, in_axes=(None, 0, 0))(params, x, y)


def _rt10_computations(text: str) -> dict[str, list[str]]:
    comps: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if m and not line.startswith(" "):
            name = m.group(2)
            comps[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None:
            comps[name].append(line)
    return comps


def _rt10_opcode(line: str) -> str | None:
    m = re.match(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$", line)
    if not m:
        return None
    rest = m.group(1)
    # skip the shape: a tuple shape in parentheses, or one token
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rest = rest[i + 1 :]
                break
    else:
        rest = rest.split(" ", 1)[1] if " " in rest else ""
    m2 = re.match(r"\s*([\w\-]+)\(", rest)
    return m2.group(1) if m2 else None


@wrong(
    "per_example_losses",
    why="'Mean squared error of one example': the batched sum of squares is divided by the "
    "number of FEATURES (x.shape[-1]) instead of the number of outputs; right only when "
    "features == out, wrong on data() (16 features, 4 outputs: every loss 4x too small)",
)
def _rt10_per_example_losses_divide_by_features(params, x, y):
    err = _rt10_forward(params, x) - y
    return jnp.sum(err**2, axis=-1) / x.shape[-1]


@wrong(
    "make_train_step",
    why="'the update comes from optimizer ... applied to the gradient': the optimizer state is "
    "advanced, but the params are moved by the raw gradient (apply_updates(params, -grads)), "
    "the optimizer's updates dropped; wrong for adamw/momentum/sgd(lr!=1) on the first step",
)
def _rt10_make_train_step_raw_gradient(optimizer):
    def loss_fn(p, x, y):
        return jnp.mean(_rt10_losses(p, x, y))

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        _, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, jax.tree.map(jnp.negative, grads))
        return params, opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'loss is the mean ..., a scalar': mean(keepdims=True) returns shape (1,), not (); "
    "update and state right, the loss has the wrong shape on every batch",
)
def _rt10_make_train_step_loss_keepdims(optimizer):
    def loss_fn(p, x, y):
        return jnp.mean(_rt10_losses(p, x, y), keepdims=True)

    def step(params, opt_state, x, y):
        loss, vjp = jax.vjp(lambda p: loss_fn(p, x, y), params)
        (grads,) = vjp(jnp.ones_like(loss))
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "fusion_count",
    why="'counted by opcode ... in every computation': the line regex requires lines to start "
    "with `%name =`, so `ROOT %fusion = ... fusion(...)` lines are skipped; wrong on "
    "jax.jit(lambda a: a.T) on f32[3,4] (its only fusion is ENTRY's ROOT: 0 instead of 1) and "
    "on any branch or single-output program whose result comes out of a fusion",
)
def _rt10_fusion_count_skips_root(compiled) -> int:
    n = 0
    for line in compiled.as_text().splitlines():
        if re.match(r"^\s*%[\w.\-]+\s*=", line) and _rt10_opcode(line) == "fusion":
            n += 1
    return n


@wrong(
    "aliased_parameters",
    why="'Sorted numbers of the ENTRY parameters whose buffers an output may reuse': keeps only "
    "aliased parameters the ENTRY declares as f32 (taken as 'params and moments'); adam's s32[] "
    "count is donated and aliased too, so adam_step donated (0, 1) loses parameter 4",
)
def _rt10_aliased_float_only(compiled) -> list[int]:
    text = compiled.as_text()
    header = text.splitlines()[0]
    nums: list[int] = []
    if "input_output_alias=" in header:
        tail = header.split("input_output_alias=", 1)[1]
        nums = sorted({int(p) for p in re.findall(r"\}:\s*\((\d+),", tail)})
    shapes: dict[int, str] = {}
    for line in text.splitlines():
        if line.startswith("ENTRY"):
            for i, sh in enumerate(re.findall(r"[\w.\-]+:\s*([a-z0-9]+)\[", line)):
                shapes[i] = sh
    return [n for n in nums if shapes.get(n, "f32") == "f32"]


@wrong(
    "transpose_counts",
    why="'transpose equations in the jaxpr, nested jaxprs included': counts 'transpose[' in the "
    "printed jaxpr; the printer shows a jaxpr used twice ONCE (`let g = {...} in`), so a jitted "
    "g(a)=a.T*2 called twice inside step has 2 transpose equations but prints 1",
)
def _rt10_transpose_counts_printed_text(step, *args) -> tuple[int, int]:
    jtext = str(jax.make_jaxpr(step)(*args))
    n_jaxpr = jtext.count("transpose[")
    text = jax.jit(step).lower(*args).compile().as_text()
    n_hlo = sum(
        1
        for lines in _rt10_computations(text).values()
        for line in lines
        if _rt10_opcode(line) == "transpose"
    )
    return n_jaxpr, n_hlo


@wrong(
    "transpose_counts",
    why="'the opcode in every computation': the HLO walk follows ENTRY, fused computations "
    "(calls=) and while body=/condition=, but not a conditional's branch_computations; wrong on "
    "a lax.cond whose branch keeps a transpose (a.T * 2 in one branch: HLO count 0 instead of 1)",
)
def _rt10_transpose_counts_hlo_no_branches(step, *args) -> tuple[int, int]:
    def walk(jaxpr):
        n = 0
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "transpose":
                n += 1
            for sub in (
                jax.core.jaxprs_in_params(eqn.params)
                if hasattr(jax.core, "jaxprs_in_params")
                else _rt10_subjaxprs(eqn.params)
            ):
                n += walk(sub)
        return n

    n_jaxpr = walk(jax.make_jaxpr(step)(*args).jaxpr)
    text = jax.jit(step).lower(*args).compile().as_text()
    comps = _rt10_computations(text)
    entry = next(
        line.split()[1].lstrip("%") for line in text.splitlines() if line.startswith("ENTRY")
    )
    seen, todo, n_hlo = set(), [entry], 0
    while todo:
        c = todo.pop()
        if c in seen or c not in comps:
            continue
        seen.add(c)
        for line in comps[c]:
            if _rt10_opcode(line) == "transpose":
                n_hlo += 1
            for key in ("calls", "body", "condition", "to_apply"):
                for tgt in re.findall(key + r"=%?([\w.\-]+)", line):
                    todo.append(tgt)
    return n_jaxpr, n_hlo


def _rt10_subjaxprs(params):
    out = []
    for v in params.values():
        vals = v if isinstance(v, (list, tuple)) else [v]
        for x in vals:
            if hasattr(x, "jaxpr") and hasattr(x, "consts"):
                out.append(x.jaxpr)
            elif hasattr(x, "eqns"):
                out.append(x)
    return out


@wrong(
    "absorbed_transposes",
    why="'in every computation': looks only inside the kCustom matmul fusions (the README's "
    "'kCustom matmul kernels on CPU'); an int32 dot is not put in a gemm fusion, so "
    "a s32[8,16] @ s32[4,16].T (rhs_contracting_dims={1}, unfused in ENTRY or a switch branch) "
    "gives 0 instead of 1",
)
def _rt10_absorbed_gemm_fusions_only(compiled) -> int:
    text = compiled.as_text()
    comps = _rt10_computations(text)
    custom = set()
    for lines in comps.values():
        for line in lines:
            if "kind=kCustom" in line:
                custom.update(re.findall(r"calls=%?([\w.\-]+)", line))
    n = 0
    for name in custom:
        for line in comps.get(name, []):
            if _rt10_opcode(line) != "dot":
                continue
            lhs = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
            rhs = re.search(r"rhs_contracting_dims=\{([\d,]*)\}", line)
            if (lhs and lhs.group(1) != "1") or (rhs and rhs.group(1) != "0"):
                n += 1
    return n


@wrong(
    "predict_alias_bytes",
    why="'b1 f32[hidden]': the first bias is sized by the layer's input (features) instead of its "
    "output; right only when features == hidden, wrong on (16, 32, 4, 'sgd'): 4 * (16*32 + 16 + "
    "32*4 + 4) = 2640 instead of 2704 (and scaled by the state's copies for momentum/adam)",
)
def _rt10_predict_alias_bytes_bias_by_input(
    features: int, hidden: int, out: int, optimizer: str
) -> int:
    n = features * hidden + features + hidden * out + out
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return 4 * n * copies + (4 if optimizer == "adam" else 0)


@wrong(
    "predict_step_flops",
    why="'No gradient flows into the data' and 'the gradient into the hidden layer': counts the "
    "input gradient of the FIRST layer (g1 @ w1.T, 2*b*h*f, into x) instead of the second's "
    "(g2 @ w2.T, 2*b*o*h): 6bfh + 4bho instead of 4bfh + 6bho; 27% high at features = 4*out, "
    "e.g. (512, 64, 8, 64)",
)
def _rt10_predict_step_flops_wrong_layer_input_grad(
    features: int, hidden: int, out: int, batch: int
) -> int:
    b, f, h, o = batch, features, hidden, out
    return 2 * b * f * h + 2 * b * h * o + 2 * f * b * h + 2 * h * b * o + 2 * b * h * f
