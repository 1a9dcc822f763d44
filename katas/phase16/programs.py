"""The programs phase 16 compiles twice: written in PyTorch for Inductor and in JAX for XLA.

`PAIRS` holds inference programs written both ways over the same arrays (PyTorch's convention:
a weight is [out_features, in_features] and a layer computes `x @ w.T + b`). `TRAIN` holds
training losses written in PyTorch, whose forward and backward Inductor compiles as two graphs,
beside the same loss written in JAX, whose `jax.grad` XLA compiles as one module. `MLP_CASES`
are the MLPs of the predict task.

Inductor's generated code for each of them is kept in `recorded/<name>.txt` (a `#` header names
torch's version, the CPU and the program; each graph follows a `# ---- graph N of M` line), so
the reading tasks run without torch; `generate(name)` compiles one again when the group is
installed (`uv sync --group torch`). Nothing here imports torch at import time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness import curriculum, inductor
from kata_harness.programs import Recipe

PHASE = "phase16"
CACHE_DIR = inductor.cache_dir()
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
}

# ---- training losses ------------------------------------------------------------------------


def t_mlp_loss(w1, b1, w2, b2, x, y):
    return ((t_mlp_gelu(x, w1, b1, w2, b2) - y) ** 2).mean()


def j_mlp_loss(w1, b1, w2, b2, x, y):
    return jnp.mean((j_mlp_gelu(x, w1, b1, w2, b2) - y) ** 2)


def t_dense_loss(w, b, x, y):
    return ((t_dense_relu(x, w, b) - y) ** 2).mean()


def j_dense_loss(w, b, x, y):
    return jnp.mean((j_dense_relu(x, w, b) - y) ** 2)


def t_layernorm_loss(g, b, x, y):
    return (t_layernorm_softmax(x, g, b) * y).sum()


def j_layernorm_loss(g, b, x, y):
    return jnp.sum(j_layernorm_softmax(x, g, b) * y)


@dataclass(frozen=True, slots=True)
class Train:
    """A loss over `params` parameters (the first arguments, which require grad) and data."""

    what: str
    shapes: tuple[tuple[int, ...], ...]
    params: int
    torch_fn: Callable[..., Any]
    jax_fn: Callable[..., Any]


TRAIN: dict[str, Train] = {
    "train_mlp_gelu": Train(
        "mean squared error of mlp_gelu (x[32,64] -> y[32,32])",
        ((128, 64), (128,), (32, 128), (32,), (32, 64), (32, 32)),
        4,
        t_mlp_loss,
        j_mlp_loss,
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
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def recorded_names() -> list[str]:
    """Every program whose generated code is recorded."""
    return [*PAIRS, *TRAIN, *MLP_CASES]


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
    if name in TRAIN:
        train = TRAIN[name]
        args = [torch.from_numpy(a) for a in arrays(train.shapes)]
        for param in args[: train.params]:
            param.requires_grad_(True)
        return generated_code(
            train.torch_fn, *args, cache_dir=CACHE_DIR, inference=False, backward=True
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
    if name in TRAIN:
        return TRAIN[name].what + ", forward and backward"
    shape, layers = MLP_CASES[name]
    return f"MLP on x{list(shape)}, layers (out_features, bias, activation) {list(layers)}"


def jax_hlo(name: str) -> str:
    """The optimized HLO XLA makes for the JAX twin of PAIRS[name] on this host's CPU."""
    pair = PAIRS[name]
    shapes = [jax.ShapeDtypeStruct(s, jnp.float32) for s in pair.shapes]
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


# A module written by hand in the form Inductor generates, for what the recordings never show:
# `call` at module level (as releases before the Runner class print it), one fused kernel
# called twice, two kernels defined but never called, an ATen fallback assigned to a buffer, and
# library calls other than addmm/mm. Its kernels: bmm, fused add_relu (2 reductions), baddbmm,
# fused add_relu again, fallback _addmm_activation.
HANDWRITTEN = """# AOT ID: ['0_inference']
import torch
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
async_compile = AsyncCompile()


cpp_fused_add_relu_3 = async_compile.cpp_pybinding(['float*', 'const float*'], r'''
extern "C" void kernel(float* in_out_ptr0, const float* in_ptr0)
{
    for(int64_t x0=0; x0<8; x0+=1)
    {
        float tmp_acc0 = 0;
        float tmp_acc1 = -std::numeric_limits<float>::infinity();
        for(int64_t x1=0; x1<16; x1+=1)
        {
            auto tmp0 = in_out_ptr0[x1 + 16*x0] + in_ptr0[x1];
            tmp_acc0 = tmp_acc0 + tmp0;
            tmp_acc1 = max_propagate_nan(tmp_acc1, tmp0);
        }
        in_out_ptr0[x0] = std::max(tmp_acc0 - tmp_acc1, 0.0f);
    }
}
''')


cpp_fused_exp_1 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* in_out_ptr0)
{
    for(int64_t x0=0; x0<8; x0+=1) { in_out_ptr0[x0] = std::exp(in_out_ptr0[x0]); }
}
''')


cpp_fused_mul_2 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* in_out_ptr0)
{
    for(int64_t x0=0; x0<8; x0+=1) { in_out_ptr0[x0] = 2.0f * in_out_ptr0[x0]; }
}
''')


async_compile.wait(globals())
del async_compile


def call(args):
    q, k, bias, w = args
    args.clear()
    assert_size_stride(q, (2, 8, 16), (128, 16, 1), 'input')
    assert_size_stride(k, (2, 8, 16), (128, 16, 1), 'input')
    assert_size_stride(bias, (16, ), (1, ), 'input')
    assert_size_stride(w, (16, 16), (16, 1), 'input')
    scores = empty_strided_cpu((2, 8, 8), (64, 8, 1), torch.float32)
    # Topologically Sorted Source Nodes: [matmul], Original ATen: [aten.bmm]
    extern_kernels.bmm(q, reinterpret_tensor(k, (2, 16, 8), (128, 1, 16), 0), out=scores)
    cpp_fused_add_relu_3(scores, bias)
    more = empty_strided_cpu((2, 8, 8), (64, 8, 1), torch.float32)
    # Topologically Sorted Source Nodes: [baddbmm], Original ATen: [aten.baddbmm]
    kt = reinterpret_tensor(k, (2, 16, 8), (128, 1, 16), 0)
    extern_kernels.baddbmm(scores, q, kt, alpha=1, beta=1, out=more)
    cpp_fused_add_relu_3(more, bias)
    del q
    flat = reinterpret_tensor(more, (16, 8), (8, 1), 0)
    out = torch.ops.aten._addmm_activation.default(bias, flat, w, use_gelu=True)
    del more
    return (out, )
"""

# Dense layers relu(x @ w + b) as other XLA backends print them, for what XLA:CPU here never
# shows: the bias inside the GEMM's kernel (a kOutput fusion holding the dot and its epilogue; a
# library custom call taking the bias as an operand).
HANDWRITTEN_HLO = {
    "dense_output_fusion": """HloModule dense_output_fusion

%fused_dot (p0: f32[16,48], p1: f32[48,24], p2: f32[24]) -> f32[16,24] {
  %p0 = f32[16,48]{1,0} parameter(0)
  %p1 = f32[48,24]{1,0} parameter(1)
  %dot = f32[16,24]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[24]{0} parameter(2)
  %broadcast = f32[16,24]{1,0} broadcast(%p2), dimensions={1}
  %add = f32[16,24]{1,0} add(%dot, %broadcast)
  %zero = f32[] constant(0)
  %zeros = f32[16,24]{1,0} broadcast(%zero), dimensions={}
  ROOT %max = f32[16,24]{1,0} maximum(%add, %zeros)
}

ENTRY %main (x: f32[16,48], w: f32[48,24], b: f32[24]) -> f32[16,24] {
  %x = f32[16,48]{1,0} parameter(0)
  %w = f32[48,24]{1,0} parameter(1)
  %b = f32[24]{0} parameter(2)
  ROOT %fusion = f32[16,24]{1,0} fusion(%x, %w, %b), kind=kOutput, calls=%fused_dot
}
""",
    "dense_library_call": """HloModule dense_library_call

%fused_relu (p0: f32[16,24]) -> f32[16,24] {
  %p0 = f32[16,24]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %zeros = f32[16,24]{1,0} broadcast(%zero), dimensions={}
  ROOT %max = f32[16,24]{1,0} maximum(%p0, %zeros)
}

ENTRY %main (b: f32[24], x: f32[16,48], w: f32[48,24]) -> f32[16,24] {
  %b = f32[24]{0} parameter(0)
  %x = f32[16,48]{1,0} parameter(1)
  %w = f32[48,24]{1,0} parameter(2)
  %matmul = f32[16,24]{1,0} custom-call(%x, %w, %b), custom_call_target="__onednn$matmul"
  ROOT %relu = f32[16,24]{1,0} fusion(%matmul), kind=kLoop, calls=%fused_relu
}
""",
}
