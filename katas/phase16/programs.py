"""The programs phase 16 compiles twice: written in PyTorch for Inductor and in JAX for XLA.

`PAIRS` holds inference programs written both ways over the same arrays (PyTorch's convention:
a weight is [out_features, in_features] and a layer computes `x @ w.T + b`). `TRAIN` holds
training losses written in PyTorch, whose forward and backward Inductor compiles as two graphs,
beside the same loss written in JAX, whose `jax.grad` XLA compiles as one module. `MARKED`
names programs of PAIRS compiled again with an Inductor option that changes how `call` is
written (`Train.marked`: a training loss so compiled). `MLP_CASES` are the MLPs of the predict
task. The modules written by hand are in handwritten.py.

Inductor's generated code for each of them is kept in `recorded/<name>.txt` (a `#` header names
torch's version, the CPU and the program; each graph follows a `# ---- graph N of M` line), so
the reading tasks run without torch; `generate(name)` compiles one again when the group is
installed (`uv sync --group torch`). Nothing here imports torch at import time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness import curriculum, torch_setup
from kata_harness.programs import Recipe

PHASE = "phase16"
CACHE_DIR = torch_setup.cache_dir()
RECORD_COMMAND = (
    "uv run --group torch pytest tests/harness/test_inductor_recordings.py --impl=reference "
    "--snapshot-update"
)
GRAPH_LINE = "# ---- graph "
ACTIVATIONS = ("none", "relu", "gelu", "tanh", "sigmoid")


@dataclass(frozen=True, slots=True)
class Pair:
    """One program written for both compilers: `torch_fn` and `jax_fn` take the same arrays,
    whose shapes are `shapes` (float32)."""

    what: str
    shapes: tuple[tuple[int, ...], ...]
    torch_fn: Callable[..., Any]
    jax_fn: Callable[..., Any]


# ---- the programs, in PyTorch and in JAX ---------------------------------------------------


def _torch() -> Any:
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    return torch


def t_mlp_gelu(x, w1, b1, w2, b2):
    f = _torch().nn.functional
    return f.linear(f.gelu(f.linear(x, w1, b1)), w2, b2)


def j_mlp_gelu(x, w1, b1, w2, b2):
    return jax.nn.gelu(x @ w1.T + b1, approximate=False) @ w2.T + b2


def t_layernorm_softmax(x, g, b):
    torch = _torch()
    return torch.softmax(torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, 1e-5), -1)


def j_layernorm_softmax(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return jax.nn.softmax((x - mean) / jnp.sqrt(var + 1e-5) * g + b, axis=-1)


def t_dense_relu(x, w, b):
    torch = _torch()
    return torch.relu(torch.nn.functional.linear(x, w, b))


def j_dense_relu(x, w, b):
    return jax.nn.relu(x @ w.T + b)


def t_dense_relu_scaled(x, w, s):
    torch = _torch()
    return torch.relu(s * (x @ w.T))


def j_dense_relu_scaled(x, w, s):
    return jax.nn.relu(s * (x @ w.T))


def t_dense_scaled_residual(x, w, b, s, r):
    torch = _torch()
    return torch.relu(s * torch.nn.functional.linear(x, w, b)) + r


def j_dense_scaled_residual(x, w, b, s, r):
    return jax.nn.relu(s * (x @ w.T + b)) + r


def t_dense_tanh_nobias(x, w):
    torch = _torch()
    return torch.tanh(x @ w.T)


def j_dense_tanh_nobias(x, w):
    return jnp.tanh(x @ w.T)


def t_bias_after_relu(x, w, b):
    torch = _torch()
    return torch.relu(x @ w.T) + b


def j_bias_after_relu(x, w, b):
    return jax.nn.relu(x @ w.T) + b


def t_dense_sigmoid_3d(x, w, b):
    torch = _torch()
    return torch.sigmoid(torch.nn.functional.linear(x, w, b))


def j_dense_sigmoid_3d(x, w, b):
    return jax.nn.sigmoid(x @ w.T + b)


def t_dense_linear(x, w, b):
    return x @ w.T + b


def j_dense_linear(x, w, b):
    return x @ w.T + b


def t_attention(q, k, v):
    torch = _torch()
    return torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), -1) @ v


def j_attention(q, k, v):
    return jax.nn.softmax(q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1]), axis=-1) @ v


def t_addmm_gelu(x, w, b):
    return _torch()._addmm_activation(b, x, w.T, use_gelu=True)


def j_addmm_gelu(x, w, b):
    return jax.nn.gelu(x @ w.T + b, approximate=True)


def t_conv_relu(x, w, b):
    torch = _torch()
    return torch.relu(torch.nn.functional.conv2d(x, w, b))


def j_conv_relu(x, w, b):
    dims = ("NCHW", "OIHW", "NCHW")
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=dims)
    return jax.nn.relu(y + b[None, :, None, None])


def t_row_stats(x):
    var, mean = _torch().var_mean(x, -1)
    return var, mean, x.argmax(-1)


def j_row_stats(x):
    return jnp.var(x, -1, ddof=1), jnp.mean(x, -1), jnp.argmax(x, -1)


def t_cholesky(x):
    torch = _torch()
    return torch.linalg.cholesky(x @ x.T + 64 * torch.eye(x.shape[0]))


def j_cholesky(x):
    return jnp.linalg.cholesky(x @ x.T + 64 * jnp.eye(x.shape[0]))


PAIRS: dict[str, Pair] = {
    "mlp_gelu": Pair(
        "linear(64->128) + GELU + linear(128->32) on x[32,64]",
        ((32, 64), (128, 64), (128,), (32, 128), (32,)),
        t_mlp_gelu,
        j_mlp_gelu,
    ),
    "layernorm_softmax": Pair(
        "softmax(layer_norm(x)) over the last axis of x[32,64], with scale and shift",
        ((32, 64), (64,), (64,)),
        t_layernorm_softmax,
        j_layernorm_softmax,
    ),
    "dense_relu": Pair(
        "relu(x @ w.T + b) on x[16,48], w[24,48]",
        ((16, 48), (24, 48), (24,)),
        t_dense_relu,
        j_dense_relu,
    ),
    "dense_tanh_nobias": Pair(
        "tanh(x @ w.T) on x[16,48], w[24,48]: no bias",
        ((16, 48), (24, 48)),
        t_dense_tanh_nobias,
        j_dense_tanh_nobias,
    ),
    "bias_after_relu": Pair(
        "relu(x @ w.T) + b on x[16,48]: the bias added after the activation",
        ((16, 48), (24, 48), (24,)),
        t_bias_after_relu,
        j_bias_after_relu,
    ),
    "dense_relu_scaled": Pair(
        "relu(s * (x @ w.T)) on x[16,48], w[24,48] and a scalar s[]: no bias",
        ((16, 48), (24, 48), ()),
        t_dense_relu_scaled,
        j_dense_relu_scaled,
    ),
    "dense_scaled_residual": Pair(
        "relu(s * (x @ w.T + b)) + r on x[16,48], a scalar s[] and r[16,24]: one rank-1 argument",
        ((16, 48), (24, 48), (24,), (), (16, 24)),
        t_dense_scaled_residual,
        j_dense_scaled_residual,
    ),
    "dense_sigmoid_3d": Pair(
        "sigmoid(x @ w.T + b) on x[4,8,48]: a batch of sequences",
        ((4, 8, 48), (24, 48), (24,)),
        t_dense_sigmoid_3d,
        j_dense_sigmoid_3d,
    ),
    "dense_linear": Pair(
        "x @ w.T + b on x[16,48]: no activation",
        ((16, 48), (24, 48), (24,)),
        t_dense_linear,
        j_dense_linear,
    ),
    "addmm_gelu": Pair(
        "torch._addmm_activation(b, x, w.T, use_gelu=True) on x[16,48]: an ATen fallback",
        ((16, 48), (24, 48), (24,)),
        t_addmm_gelu,
        j_addmm_gelu,
    ),
    "attention": Pair(
        "softmax(q @ k^T / sqrt(32)) @ v on q, k, v [2,16,32]",
        ((2, 16, 32), (2, 16, 32), (2, 16, 32)),
        t_attention,
        j_attention,
    ),
    "dense_one_output": Pair(
        "relu(x @ w.T + b) on x[16,48], w[1,48]: one output, its bias b[1] one element",
        ((16, 48), (1, 48), (1,)),
        t_dense_relu,
        j_dense_relu,
    ),
    "dense_relu_row": Pair(
        "relu(x @ w.T + b) on one row, x[1,8], w[8,8]: a product small enough to decompose",
        ((1, 8), (8, 8), (8,)),
        t_dense_relu,
        j_dense_relu,
    ),
    "conv_relu": Pair(
        "relu(conv2d(x, w, b)) on x[2,3,16,16], w[8,3,3,3]: a convolution",
        ((2, 3, 16, 16), (8, 3, 3, 3), (8,)),
        t_conv_relu,
        j_conv_relu,
    ),
    "row_stats": Pair(
        "var_mean(x, -1) and argmax(x, -1) of x[32,64]: Welford and index accumulators",
        ((32, 64),),
        t_row_stats,
        j_row_stats,
    ),
    "cholesky": Pair(
        "cholesky(x @ x.T + 64 I) of x[8,8]: a LAPACK factorization",
        ((8, 8),),
        t_cholesky,
        j_cholesky,
    ),
}

# Programs of PAIRS compiled again with an Inductor option that changes how `call` is written:
# profiler_mark_wrapper_call puts `call`'s whole body in a `with record_function(...)` block.
MARKED: dict[str, str] = {"mlp_gelu_marked": "mlp_gelu"}

# ---- training losses ------------------------------------------------------------------------


def t_mlp_loss(w1, b1, w2, b2, x, y):
    return ((t_mlp_gelu(x, w1, b1, w2, b2) - y) ** 2).mean()


def j_mlp_loss(w1, b1, w2, b2, x, y):
    return jnp.mean((j_mlp_gelu(x, w1, b1, w2, b2) - y) ** 2)


def t_mlp_outputs_loss(w1, b1, w2, b2, w3, b3, x, y):
    f = _torch().nn.functional
    h = f.gelu(f.linear(f.gelu(f.linear(x, w1, b1)), w2, b2))
    out = f.linear(h, w3, b3)
    return ((out - y) ** 2).mean(), h, out.argmax(-1)


def j_mlp_outputs_loss(w1, b1, w2, b2, w3, b3, x, y):
    h = jax.nn.gelu(jax.nn.gelu(x @ w1.T + b1, approximate=False) @ w2.T + b2, approximate=False)
    return jnp.mean((h @ w3.T + b3 - y) ** 2)


def t_dense_loss(w, b, x, y):
    return ((t_dense_relu(x, w, b) - y) ** 2).mean()


def j_dense_loss(w, b, x, y):
    return jnp.mean((j_dense_relu(x, w, b) - y) ** 2)


def t_layernorm_loss(g, b, x, y):
    return (t_layernorm_softmax(x, g, b) * y).sum()


def j_layernorm_loss(g, b, x, y):
    return jnp.sum(j_layernorm_softmax(x, g, b) * y)


def t_conv_loss(w, b, x, y):
    return ((t_conv_relu(x, w, b) - y) ** 2).mean()


def j_conv_loss(w, b, x, y):
    return jnp.mean((j_conv_relu(x, w, b) - y) ** 2)


def t_square_relu_loss(w, x):
    return (_torch().relu(x @ w.T) ** 2).mean()


def j_square_relu_loss(w, x):
    return jnp.mean(jax.nn.relu(x @ w.T) ** 2)


def t_relu_outputs_loss(w):
    h = _torch().relu(w)
    return (h * 3).sum(), h


def j_relu_outputs_loss(w):
    return jnp.sum(jax.nn.relu(w) * 3)


@dataclass(frozen=True, slots=True)
class Train:
    """A loss over `params` parameters (the first arguments, which require grad) and data;
    `marked`: compiled with profiler_mark_wrapper_call, as the MARKED programs; `dynamic`:
    compiled with `torch.compile(..., dynamic=True)` (sizes become symbols, which the forward
    saves for the backward beside its tensors)."""

    what: str
    shapes: tuple[tuple[int, ...], ...]
    params: int
    torch_fn: Callable[..., Any]
    jax_fn: Callable[..., Any]
    marked: bool = False
    dynamic: bool = False


TRAIN: dict[str, Train] = {
    "train_mlp_gelu": Train(
        "mean squared error of mlp_gelu (x[32,64] -> y[32,32])",
        ((128, 64), (128,), (32, 128), (32,), (32, 64), (32, 32)),
        4,
        t_mlp_loss,
        j_mlp_loss,
    ),
    "train_mlp_gelu_marked": Train(
        "mean squared error of mlp_gelu (x[32,64] -> y[32,32]), with "
        "profiler_mark_wrapper_call=True: each graph's `call` runs inside a `with` block",
        ((128, 64), (128,), (32, 128), (32,), (32, 64), (32, 32)),
        4,
        t_mlp_loss,
        j_mlp_loss,
        marked=True,
    ),
    "train_mlp_gelu_dynamic": Train(
        "mean squared error of mlp_gelu (x[32,64] -> y[32,32]), compiled with dynamic=True: "
        "sizes are symbols, and the backward takes the ones the forward saved among its "
        "inputs, beside the saved tensors",
        ((128, 64), (128,), (32, 128), (32,), (32, 64), (32, 32)),
        4,
        t_mlp_loss,
        j_mlp_loss,
        dynamic=True,
    ),
    "train_dense_relu": Train(
        "mean squared error of relu(x @ w.T + b) (x[16,48] -> y[16,24])",
        ((24, 48), (24,), (16, 48), (16, 24)),
        2,
        t_dense_loss,
        j_dense_loss,
    ),
    "train_layernorm_softmax": Train(
        "sum(softmax(layer_norm(x)) * y) over x[32,64], gradients for scale and shift",
        ((64,), (64,), (32, 64), (32, 64)),
        2,
        t_layernorm_loss,
        j_layernorm_loss,
    ),
    "train_mlp_outputs": Train(
        "mean squared error of x[8,24] -> linear(32)+GELU -> linear(32)+GELU -> linear(16), the "
        "compiled function returning (loss, the last hidden layer, argmax of the output) (the "
        "JAX twin: the loss alone)",
        ((32, 24), (32,), (32, 32), (32,), (16, 32), (16,), (8, 24), (8, 16)),
        6,
        t_mlp_outputs_loss,
        j_mlp_outputs_loss,
    ),
    "train_conv_relu": Train(
        "mean squared error of relu(conv2d(x, w, b)) (x[2,3,16,16] -> y[2,8,14,14])",
        ((8, 3, 3, 3), (8,), (2, 3, 16, 16), (2, 8, 14, 14)),
        2,
        t_conv_loss,
        j_conv_loss,
    ),
    "train_every_input": Train(
        "mean(relu(x @ w.T) ** 2) on x[16,48], w[24,48], both requiring grad (no data input)",
        ((24, 48), (16, 48)),
        2,
        t_square_relu_loss,
        j_square_relu_loss,
    ),
    "train_relu_outputs": Train(
        "(relu(w) * 3).sum() of w[16,24], the compiled function returning (loss, relu(w)): no "
        "input saved for the backward (the JAX twin: the loss alone)",
        ((16, 24),),
        1,
        t_relu_outputs_loss,
        j_relu_outputs_loss,
    ),
}


def jax_train_step(name: str) -> Callable[..., Any]:
    """The JAX twin of a TRAIN loss as one train step: the loss and the gradients of its
    parameters, which `jax.jit` compiles as one module."""
    train = TRAIN[name]
    return jax.value_and_grad(train.jax_fn, argnums=tuple(range(train.params)))


# ---- the predict task's MLPs ----------------------------------------------------------------

# (input shape, layers): each layer (out_features, bias, activation), activation in ACTIVATIONS.
Layer = tuple[int, bool, str]
MLP_CASES: dict[str, tuple[tuple[int, ...], tuple[Layer, ...]]] = {
    "mlp_a": ((8, 24), ((32, True, "relu"), (16, True, "none"))),
    "mlp_b": ((8, 24), ((32, False, "gelu"), (16, False, "tanh"), (8, True, "sigmoid"))),
    "mlp_c": ((8, 24), ((16, True, "none"),)),
    "mlp_d": ((2, 4, 24), ((32, True, "gelu"), (32, True, "gelu"), (4, False, "none"))),
    "mlp_e": ((8, 24), ((40, False, "none"), (24, True, "relu"))),
    "mlp_f": ((1, 24), ((8, True, "tanh"),)),
    "mlp_g": ((8, 24), ((16, True, "sigmoid"), (16, False, "relu"), (16, True, "none"))),
    "mlp_h": ((3, 5, 24), ((12, False, "none"), (12, False, "none"))),
    "mlp_i": ((1, 12), ((8, True, "relu"), (20, False, "gelu"), (6, True, "none"))),
    "mlp_j": ((2, 3, 1), ((5, False, "tanh"), (4, True, "none"))),
    "mlp_k": ((1, 8), ((8, True, "relu"), (8, True, "gelu"))),
    "mlp_l": ((1, 5, 12), ((8, True, "relu"),)),
    # the limits themselves: a 16 x 16 weight on one row, one feature with rows + outputs = 32,
    # and a layer whose input (the previous layer's output) has one feature
    "mlp_m": ((1, 16), ((16, True, "none"),)),
    "mlp_n": ((12, 1), ((20, False, "none"),)),
    "mlp_o": ((8, 24), ((1, False, "none"), (4, False, "none"))),
    # the other side of each limit: one feature but a bias (not decomposed: addmm), one row and
    # a small weight but no bias (mm), one feature with 4 x 8 rows + 5 outputs > 32 (mm)
    "mlp_p": ((4, 1), ((5, True, "none"),)),
    "mlp_q": ((1, 8), ((8, False, "relu"),)),
    "mlp_r": ((4, 8, 1), ((5, False, "none"),)),
    # one row: a GEMM then its activation and a rewritten product with a bias and one output
    # (its weight wider than 16), then again with one without a bias
    "mlp_s": (
        (1, 20),
        ((20, False, "relu"), (1, True, "none"), (20, True, "gelu"), (1, False, "none")),
    ),
    # one feature but one row (mm), one feature but one output (mm)
    "mlp_t": ((1, 1), ((6, False, "relu"),)),
    "mlp_u": ((6, 1), ((1, False, "none"),)),
    # several rows: a layer to one output with a bias is a GEMM (addmm), not a rewritten product
    "mlp_v": ((8, 24), ((16, True, "relu"), (1, True, "none"))),
}


def mlp_shapes(case: str) -> tuple[tuple[int, ...], ...]:
    """The input's shape, then each layer's weight [out, in] and bias [out] (when it has one)."""
    shape, layers = MLP_CASES[case]
    shapes: list[tuple[int, ...]] = [shape]
    width = shape[-1]
    for out, bias, _ in layers:
        shapes.append((out, width))
        if bias:
            shapes.append((out,))
        width = out
    return tuple(shapes)


def torch_mlp(layers: tuple[Layer, ...]) -> Callable[..., Any]:
    """The MLP `layers` describe as a function of (x, then each layer's weight and bias)."""

    def mlp(x, *params):
        torch = _torch()
        activate = {"relu": torch.relu, "gelu": torch.nn.functional.gelu}
        activate |= {"tanh": torch.tanh, "sigmoid": torch.sigmoid}
        rest = list(params)
        for _, bias, activation in layers:
            w = rest.pop(0)
            x = torch.nn.functional.linear(x, w, rest.pop(0) if bias else None)
            if activation != "none":
                x = activate[activation](x)
        return x

    return mlp


# ---- arrays, recordings, compiling ----------------------------------------------------------


def arrays(shapes: tuple[tuple[int, ...], ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.asarray(rng.standard_normal(s), dtype=np.float32) for s in shapes]  # () too


def recorded_names() -> list[str]:
    """Every program whose generated code is recorded."""
    return [*PAIRS, *MARKED, *TRAIN, *MLP_CASES]


def recorded_path(name: str):
    return curriculum.KATAS_DIR / PHASE / curriculum.RECORDED_DIR / f"{name}.txt"


def recorded(name: str) -> list[str]:
    """The recorded texts of program `name`, one per graph, in the order Inductor compiled
    them (a training loss: forward, then backward)."""
    path = recorded_path(name)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: record it with {RECORD_COMMAND}")
    graphs: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith(GRAPH_LINE):
            graphs.append([])
        elif graphs:
            graphs[-1].append(line)
    return ["".join(g) for g in graphs]


def generate(name: str) -> list[str]:
    """Compile program `name` with Inductor now (needs the torch group); its generated code."""
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    from xla_inspect.inductor_capture import generated_code

    if name in PAIRS:
        pair = PAIRS[name]
        args = [torch.from_numpy(a) for a in arrays(pair.shapes)]
        return generated_code(pair.torch_fn, *args, cache_dir=CACHE_DIR)
    if name in MARKED:
        from torch._inductor import config  # pyright: ignore[reportMissingImports]  (the torch group)

        pair = PAIRS[MARKED[name]]
        args = [torch.from_numpy(a) for a in arrays(pair.shapes)]
        with config.patch(profiler_mark_wrapper_call=True):
            return generated_code(pair.torch_fn, *args, cache_dir=CACHE_DIR)
    if name in TRAIN:
        from torch._inductor import config  # pyright: ignore[reportMissingImports]  (the torch group)

        train = TRAIN[name]
        args = [torch.from_numpy(a) for a in arrays(train.shapes)]
        for param in args[: train.params]:
            param.requires_grad_(True)
        with config.patch(profiler_mark_wrapper_call=train.marked):
            return generated_code(
                train.torch_fn,
                *args,
                cache_dir=CACHE_DIR,
                inference=False,
                backward=True,
                dynamic=train.dynamic or None,
            )
    shape, layers = MLP_CASES[name]
    args = [torch.from_numpy(a) for a in arrays(mlp_shapes(name))]
    return generated_code(torch_mlp(layers), *args, cache_dir=CACHE_DIR)


def recording_text(name: str, codes: list[str]) -> str:
    """The file `recorded/<name>.txt` keeps: a header naming torch's version, the CPU Inductor
    compiled for and the program, then each graph after its own `# ---- graph` line."""
    import platform

    import torch  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor import cpu_vec_isa  # pyright: ignore[reportMissingImports]  (the torch group)

    header = [
        f"# recorded by: {RECORD_COMMAND}",
        f"# torch: {torch.__version__}",
        f"# cpu: {platform.machine()}, vector ISA {cpu_vec_isa.pick_vec_isa()}",
        f"# program: {what(name)}",
    ]
    body = [f"{GRAPH_LINE}{i} of {len(codes)}\n{code}" for i, code in enumerate(codes, 1)]
    return "\n".join(header) + "\n" + "".join(body)


def what(name: str) -> str:
    if name in PAIRS:
        return PAIRS[name].what
    if name in MARKED:
        return f"{PAIRS[MARKED[name]].what}, with profiler_mark_wrapper_call=True"
    if name in TRAIN:
        return TRAIN[name].what + ", forward and backward"
    shape, layers = MLP_CASES[name]
    return f"MLP on x{list(shape)}, layers (out_features, bias, activation) {list(layers)}"


@functools.cache  # one compile per twin and dtype: several tests read each
def jax_hlo(name: str, dtype: Any = jnp.float32) -> str:
    """The optimized HLO XLA makes for the JAX twin of PAIRS[name] on this host's CPU, its
    arrays float32 or `dtype`."""
    pair = PAIRS[name]
    shapes = [jax.ShapeDtypeStruct(s, dtype) for s in pair.shapes]
    text = jax.jit(pair.jax_fn).lower(*shapes).compile().as_text()
    assert text is not None
    return text


def _given_pair(name: str) -> Recipe:
    pair = PAIRS[name]
    shapes = tuple(jax.ShapeDtypeStruct(s, jnp.float32) for s in pair.shapes)
    return Recipe(lambda _m: (pair.jax_fn, shapes), f"the JAX twin: {pair.what}", given=True)


SHOWN = {
    "kernel_census": _given_pair("mlp_gelu"),
    "bias_homes": _given_pair("dense_relu"),
    "reductions_per_kernel": _given_pair("layernorm_softmax"),
}
