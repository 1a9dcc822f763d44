"""The programs phase 12's tests compile for GPU targets, and the modules recorded from them.

Every IR-reading task reads optimized GPU HLO. The texts are recorded (``RECORDINGS``, kept in
``katas/phase12/recorded/``) so those tests run without the ``gpu`` group; with the group
installed the recordings are checked against the compiler. The decide tasks compile live.

A recording's program, its target and its compiler options are all stated here; what XLA made
of them is only in the recorded text.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.programs import given
from kata_harness.targets import Recording
from katas.phase12 import handwritten

bf16 = jnp.bfloat16
f32 = jnp.float32
CUBLAS = {"xla_gpu_enable_triton_gemm": False}  # GEMMs become cuBLAS-Lt custom calls
# The gradient recordings use XLA's default options, where it makes an all-reduce async only
# when it has work to overlap. Where it does (grad_towers_mixed), XLA prints all-reduce-start
# with output_to_operand_aliasing, which XLA's own text parser (jaxlib 0.12) rejects, so that
# one module is recorded with its all-reduces kept synchronous, and its header says so.
SYNC_ALL_REDUCE = {"xla_gpu_disable_async_collectives": "ALLREDUCE"}
UNPARSABLE_WHEN_ASYNC = frozenset({"grad_towers_mixed"})


def sds(shape, dtype=bf16):
    return jax.ShapeDtypeStruct(shape, dtype)


def _single(*shapes):
    """A lowering of fn on the target's first device, for arguments of these (shape, dtype)."""

    def lower_with(fn):
        return lambda target: jax.jit(fn).lower(*(target.place(sds(s, d)) for s, d in shapes))

    return lower_with


# ---- the same program on every target --------------------------------------------------------


def block(x, w, b, g):
    """A dense layer, a layernorm and a softmax over the rows: a GEMM, reductions, elementwise."""
    h = jax.nn.gelu(x @ w + b)
    mean = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean((h - mean) ** 2, axis=-1, keepdims=True)
    normed = (h - mean) * jax.lax.rsqrt(var + 1e-5) * g
    return jax.nn.softmax(normed, axis=-1), jnp.max(h, axis=0)


BLOCK_SHAPES = (((128, 256), f32), ((256, 512), f32), ((512,), f32), ((512,), f32))
# Recorded side by side; the CPU's text depends on the host's CPU, so the tests compile it here.
SIDE_BY_SIDE = ("gpu-h100", "gpu-a100", "tpu-v5e:2x2")


# ---- reductions ------------------------------------------------------------------------------


def reductions(x, y):
    """Row and column reductions, a full mean, a softmax and a matmul that XLA may split over K."""
    return (
        jnp.sum(x, axis=0),
        jnp.max(x * x, axis=1),
        jnp.mean(jnp.abs(x)),
        jax.nn.softmax(y, axis=-1),
        x.astype(bf16) @ y.astype(bf16).T,
    )


REDUCTION_SHAPES = (((256, 1024), f32), ((64, 1024), f32))


def scanned_softmax(x, ws):
    """A scan over stacked weights: softmax(c @ w) per step, the step's sum collected."""

    def step(c, w):
        h = jax.nn.softmax(c @ w, axis=-1)
        return h, jnp.sum(h)

    return jax.lax.scan(step, x, ws)


SCAN_SHAPES = (((64, 128), f32), ((6, 128, 128), f32))


def branches(p, x, w):
    """A cond on a runtime scalar whose branches hold a GEMM and reductions each."""
    return jax.lax.cond(
        p > 0,
        lambda x: jax.nn.softmax(x @ w, axis=-1),
        lambda x: jnp.tanh(x @ w.T @ w) - jnp.max(x),
        x,
    )


BRANCH_SHAPES = (((), f32), ((64, 256), f32), ((256, 256), f32))


def reduce_places(x):
    """Variadic reduces (argmax, argmin: a value and an index per row or column) and a while
    loop whose condition reduces (its max) every trip."""
    grown = jax.lax.while_loop(lambda c: jnp.max(c) < 10.0, lambda c: c * 1.5 + 0.1, x)
    return jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), grown


REDUCE_PLACE_SHAPES = (((256, 512), f32),)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    out = jax.nn.relu(x @ w1 + b1) @ w2 + b2
    return jnp.mean((out - y) ** 2)


# ---- library calls: cuBLAS-Lt epilogues and cuDNN convolutions --------------------------------


def dense_stack(x, w1, b1, w2, b2, w3, w4, b4):
    """Four dense layers whose activations are, in order: relu, tanh-approximated gelu, none
    (and no bias), exact (erf) gelu."""
    h = jax.nn.relu(x @ w1 + b1)
    h = jax.nn.gelu(h @ w2 + b2, approximate=True)
    h = h @ w3
    return jax.nn.gelu(h @ w4 + b4, approximate=False)


DENSE_SHAPES = (
    ((64, 128), bf16),
    ((128, 256), bf16),
    ((256,), bf16),
    ((256, 256), bf16),
    ((256,), bf16),
    ((256, 128), bf16),
    ((128, 64), bf16),
    ((64,), bf16),
)


def solvers(x, a, w, b):
    """Custom calls that are not cuBLAS or cuDNN (top_k, a Cholesky factorization) beside a
    GEMM with a bias and relu."""
    values, indices = jax.lax.top_k(x, 8)
    spd = a @ a.T + a.shape[0] * jnp.eye(a.shape[0], dtype=a.dtype)
    return values, indices, jnp.linalg.cholesky(spd), jax.nn.relu(values @ w + b)


SOLVER_SHAPES = (((64, 4096), f32), ((64, 64), f32), ((8, 512), f32), ((512,), f32))


def scaled_dense(x, w, b, r):
    """A bias and sigmoid after one GEMM, a residual add after another, and a plain product."""
    h = jax.nn.sigmoid(x @ w + b)
    return h @ w.T + r, jax.nn.relu(x @ w)


SCALED_SHAPES = (((96, 160), f32), ((160, 224), f32), ((224,), f32), ((96, 160), f32))


def fp8_dense(x, w, b):
    """relu(x @ w + b) of FP8 (float8_e4m3fn) x and w, the product in bf16."""
    return jax.nn.relu(jnp.dot(x, w, preferred_element_type=bf16) + b)


FP8_SHAPES = (((64, 128), jnp.float8_e4m3fn), ((128, 256), jnp.float8_e4m3fn), ((256,), bf16))

CONV = ("NHWC", "HWIO", "NHWC")


def conv_net(x, k1, c1, k2, k3, c3):
    """Three convolutions: bias and relu after the first, nothing after the second (strided),
    bias and tanh after the third."""
    h = jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=CONV)
    h = jax.nn.relu(h + c1)
    h = jax.lax.conv_general_dilated(h, k2, (2, 2), "VALID", dimension_numbers=CONV)
    h = jax.lax.conv_general_dilated(h, k3, (1, 1), "SAME", dimension_numbers=CONV)
    return jnp.tanh(h + c3)


CONV_SHAPES = (
    ((4, 16, 16, 8), bf16),
    ((3, 3, 8, 16), bf16),
    ((16,), bf16),
    ((3, 3, 16, 16), bf16),
    ((1, 1, 16, 32), bf16),
    ((32,), bf16),
)


# ---- GEMM flops: einsum programs whose every contraction is stated here ------------------------


def einsum_program(specs: tuple[str, ...]):
    """Apply the einsums in order: the first takes the first two arguments, each later one the
    previous result and the next argument."""

    def program(*args):
        value = jnp.einsum(specs[0], args[0], args[1])
        for spec, arg in zip(specs[1:], args[2:], strict=True):
            value = jnp.tanh(jnp.einsum(spec, value, arg))
        return value

    return program


# name -> (einsum specs, argument shapes, dtype, triton gemm on)
EINSUMS = {
    "mlp_triton": (("mk,kn->mn", "mn,np->mp"), ((192, 320), (320, 96), (96, 40)), bf16, True),
    "mlp_cublas": (("mk,kn->mn", "mn,np->mp"), ((192, 320), (320, 96), (96, 40)), bf16, False),
    "batched_triton": (
        ("bmk,bkn->bmn", "bmn,nq->bmq"),
        ((6, 40, 72), (6, 72, 56), (56, 24)),
        f32,
        True,
    ),
    "batched_cublas": (
        ("bmk,bkn->bmn", "bmn,nq->bmq"),
        ((6, 40, 72), (6, 72, 56), (56, 24)),
        f32,
        False,
    ),
    "attention_cublas": (
        ("bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd"),
        ((2, 4, 48, 32), (2, 4, 64, 32), (2, 4, 64, 32)),
        bf16,
        False,
    ),
    "attention_triton": (
        ("bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd"),
        ((2, 4, 48, 32), (2, 4, 64, 32), (2, 4, 64, 32)),
        bf16,
        True,
    ),
}


# ---- collectives -------------------------------------------------------------------------------


def matmul(x, w):
    return x @ w


def fsdp(x, ws):
    """Layers relu(x @ w) with every weight's rows split over all devices (FSDP-style): each
    layer's weight is gathered before its GEMM."""
    for w in ws:
        x = jax.nn.relu(x @ w)
    return x


def sharded_matmul(x_shape, w_shape, x_spec, w_spec):
    """A lowering of x @ w (bf16) on a (2, 2) mesh ("data", "model") with x and w sharded by
    these PartitionSpecs and the output by P("data", "model")."""

    def lower(target):
        from jax.sharding import NamedSharding, PartitionSpec

        mesh = target.mesh((2, 2), ("data", "model"))
        x = target.place(sds(x_shape), mesh, *x_spec)
        w = target.place(sds(w_shape), mesh, *w_spec)
        out = NamedSharding(mesh, PartitionSpec("data", "model"))
        return jax.jit(matmul, out_shardings=out).lower(x, w)

    return lower


BOTH_SPLIT = (("data", "model"), ("data", "model"))
_matmul_2x2 = sharded_matmul((1024, 2048), (2048, 4096), *BOTH_SPLIT)

# Decide: matmuls whose operand PartitionSpecs the learner picks (the output stays split
# P("data", "model")); the original splits both operands like the output.
SPEC_CASES = {
    "1024x2048 @ 2048x4096 on gpu-h100": ("gpu-h100", (1024, 2048), (2048, 4096)),
    "512x768 @ 768x1024 on gpu-a100": ("gpu-a100", (512, 768), (768, 1024)),
    "256x512 @ 512x256 on gpu-h100": ("gpu-h100", (256, 512), (512, 256)),
}


def fsdp_lowering(layers: int, rows: int, width: int):
    """fsdp over `layers` weights bf16[width, width] and x bf16[rows, width], rows of both split
    over the target's 4 devices (axis "d")."""

    def lower(target):
        mesh = target.mesh((4,), ("d",))
        x = target.place(sds((rows, width)), mesh, "d", None)
        ws = [target.place(sds((width, width)), mesh, "d", None) for _ in range(layers)]
        return jax.jit(fsdp).lower(x, ws)

    return lower


# Decide: the FSDP programs whose all-gathers the learner's compiler options should overlap (on
# H100: XLA's A100 cost model keeps these gathers synchronous whatever the combining).
FSDP_CASES = {
    "4 layers of 128 on gpu-h100": ("gpu-h100", 4, 256, 128),
    "6 layers of 128 on gpu-h100": ("gpu-h100", 6, 256, 128),
    "6 layers of 64 on gpu-h100": ("gpu-h100", 6, 128, 64),
}

# The stacks overlap_options must serve (the tests draw from it): layers, weight widths, x's rows.
FSDP_DOMAIN = {"layers": range(2, 17), "widths": range(32, 257, 32), "rows": (64, 128, 256)}


# ---- data-parallel gradients -------------------------------------------------------------------


def grad_lowering(loss, params: dict, batch):
    """jax.grad(loss) with every parameter replicated and the batch's rows split over 4 devices."""

    def lower(target):
        mesh = target.mesh((4,), ("d",))
        placed = {k: target.place(sds(s, d), mesh) for k, (s, d) in params.items()}
        data = tuple(target.place(sds(s, d), mesh, "d", None) for s, d in batch)
        return jax.jit(jax.grad(loss)).lower(placed, *data)

    return lower


def mlp2(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    return jnp.sum((h @ p["w2"] + p["b2"]).astype(f32) ** 2)


def two_towers(p, x):
    """A float32 tower and a bfloat16 tower on the same batch."""
    a = jnp.sum(jnp.tanh(x @ p["w"] + p["b"]))
    z = jnp.tanh(x.astype(bf16) @ p["v"]) @ p["u"]
    return a + jnp.sum(z.astype(f32))


def linear(p, x):
    return jnp.sum((x @ p["w"]) ** 2)


# name -> (loss, params {name: (shape, dtype)}, batch ((shape, dtype), ...), target). On H100 a
# lone all-reduce becomes an async Triton collective fusion, which XLA's parser rejects too.
GRADS = {
    "grad_mlp_bf16": (
        mlp2,
        {
            "w1": ((64, 128), bf16),
            "b1": ((128,), bf16),
            "w2": ((128, 32), bf16),
            "b2": ((32,), bf16),
        },
        (((256, 64), bf16),),
        "gpu-h100",
    ),
    "grad_towers_mixed": (
        two_towers,
        {
            "w": ((48, 80), f32),
            "b": ((80,), f32),
            "v": ((48, 40), bf16),
            "u": ((40, 24), bf16),
        },
        (((128, 48), f32),),
        "gpu-h100",
    ),
    "grad_linear_f32": (linear, {"w": ((320, 200), f32)}, (((64, 320), f32),), "gpu-a100"),
}


def small_grad(p, x):
    """mean((relu(x @ w) + b)^2) with w bf16 and b f32: two small gradients of two dtypes."""
    return jnp.mean((jax.nn.relu(x @ p["w"]) + p["b"]).astype(f32) ** 2)


# XLA:GPU's default for small all-reduces (H100): each one a Triton collective fusion run
# asynchronously, printed `fusion-start(...), kind=kCustom, calls=%fused_all-reduce...`: an
# async op wrapping a fusion whose fused computation holds the all-reduce.
FUSED_ALL_REDUCE = (
    small_grad,
    {"w": ((64, 32), bf16), "b": ((32,), f32)},
    (((8, 64), bf16),),
    "gpu-h100",
)


def _grad_recording(name: str) -> Recording:
    loss, params, batch, target = GRADS[name]
    return Recording(
        target,
        f"jax.grad({loss.__name__}) with parameters {params} replicated over 4 devices and the "
        f"batch {batch} split by rows",
        grad_lowering(loss, params, batch),
        SYNC_ALL_REDUCE if name in UNPARSABLE_WHEN_ASYNC else {},
    )


def _einsum_recording(name: str) -> Recording:
    specs, shapes, dtype, triton = EINSUMS[name]
    lower = _single(*((s, dtype) for s in shapes))(einsum_program(specs))
    return Recording(
        "gpu-h100",
        f"einsums {specs} (tanh after each but the first) on {[list(s) for s in shapes]} "
        f"{jnp.dtype(dtype).name}",
        lower,
        {} if triton else CUBLAS,
    )


RECORDINGS = {
    **{
        f"block_{target.split(':')[0].replace('-', '_')}": Recording(
            target,
            "block(x, w, b, g): gelu(x @ w + b), layernorm, softmax and a column max, f32 "
            "x[128,256] w[256,512]",
            _single(*BLOCK_SHAPES)(block),
        )
        for target in SIDE_BY_SIDE
    },
    "reductions_h100": Recording(
        "gpu-h100",
        "reductions(x f32[256,1024], y f32[64,1024]): column sum, row max, full mean, softmax, "
        "bf16 x @ y.T",
        _single(*REDUCTION_SHAPES)(reductions),
    ),
    "scan_h100": Recording(
        "gpu-h100",
        "scanned_softmax: jax.lax.scan of softmax(c @ w) over 6 stacked f32[128,128] weights, "
        "x f32[64,128]",
        _single(*SCAN_SHAPES)(scanned_softmax),
    ),
    "branches_h100": Recording(
        "gpu-h100",
        "branches: jax.lax.cond(p > 0) of softmax(x @ w) or tanh(x @ w.T @ w) - max(x), f32 "
        "x[64,256] w[256,256]",
        _single(*BRANCH_SHAPES)(branches),
    ),
    "scan_cublas_h100": Recording(
        "gpu-h100",
        "scanned_softmax as scan_h100, triton gemm off",
        _single(*SCAN_SHAPES)(scanned_softmax),
        CUBLAS,
    ),
    "branches_cublas_h100": Recording(
        "gpu-h100",
        "branches as branches_h100, triton gemm off",
        _single(*BRANCH_SHAPES)(branches),
        CUBLAS,
    ),
    "reduce_places_h100": Recording(
        "gpu-h100",
        "reduce_places(x f32[256,512]): argmax over rows, argmin over columns, "
        "while_loop(max(c) < 10, c * 1.5 + 0.1)",
        _single(*REDUCE_PLACE_SHAPES)(reduce_places),
    ),
    "fp8_h100": Recording(
        "gpu-h100",
        "fp8_dense: relu(x @ w + b), x f8e4m3fn[64,128], w f8e4m3fn[128,256], b bf16[256], "
        "triton gemm off",
        _single(*FP8_SHAPES)(fp8_dense),
        CUBLAS,
    ),
    "solvers_h100": Recording(
        "gpu-h100",
        "solvers: top_k(x f32[64,4096], 8), cholesky of a f32[64,64] SPD matrix, relu(values @ "
        "w + b), triton gemm off",
        _single(*SOLVER_SHAPES)(solvers),
        CUBLAS,
    ),
    "mlp_grad_h100": Recording(
        "gpu-h100",
        "jax.grad of MSE of relu(x @ w1 + b1) @ w2 + b2, bf16, x[64,128] w1[128,256] w2[256,32]",
        _single(
            ((128, 256), bf16),
            ((256,), bf16),
            ((256, 32), bf16),
            ((32,), bf16),
            ((64, 128), bf16),
            ((64, 32), bf16),
        )(lambda w1, b1, w2, b2, x, y: jax.grad(mlp_loss)((w1, b1, w2, b2), x, y)),
    ),
    "dense_cublas_h100": Recording(
        "gpu-h100",
        "dense_stack: relu, tanh gelu, no activation, erf gelu, bf16, triton gemm off",
        _single(*DENSE_SHAPES)(dense_stack),
        CUBLAS,
    ),
    "dense_cublas_a100": Recording(
        "gpu-a100",
        "scaled_dense: sigmoid(x @ w + b) @ w.T + r and relu(x @ w), f32, triton gemm off",
        _single(*SCALED_SHAPES)(scaled_dense),
        CUBLAS,
    ),
    "dense_triton_h100": Recording(
        "gpu-h100",
        "dense_stack: relu, tanh gelu, no activation, erf gelu, bf16, triton gemm on (default)",
        _single(*DENSE_SHAPES)(dense_stack),
    ),
    "conv_h100": Recording(
        "gpu-h100",
        "conv_net: conv+bias+relu, strided conv, 1x1 conv+bias+tanh, NHWC bf16",
        _single(*CONV_SHAPES)(conv_net),
    ),
    **{name: _einsum_recording(name) for name in EINSUMS},
    "matmul_2x2_a100": Recording(
        "gpu-a100",
        "x @ w, x bf16[1024,2048] and w bf16[2048,4096] both P('data','model') on a 2x2 mesh, "
        "out P('data','model')",
        _matmul_2x2,
    ),
    "matmul_2x2_h100": Recording(
        "gpu-h100",
        "x @ w, x bf16[1024,2048] and w bf16[2048,4096] both P('data','model') on a 2x2 mesh, "
        "out P('data','model')",
        _matmul_2x2,
    ),
    "fsdp4_h100": Recording(
        "gpu-h100",
        "fsdp: 4 layers relu(x @ w), x bf16[256,128], w bf16[128,128], rows split over 4",
        fsdp_lowering(4, 256, 128),
    ),
    **{name: _grad_recording(name) for name in GRADS},
    "grad_fused_all_reduce_h100": Recording(
        FUSED_ALL_REDUCE[3],
        f"jax.grad(small_grad) with parameters {FUSED_ALL_REDUCE[1]} replicated over 4 "
        f"devices and the batch {FUSED_ALL_REDUCE[2]} split by rows; XLA's default options",
        grad_lowering(*FUSED_ALL_REDUCE[:3]),
    ),
}


def example_block_args():
    rng = np.random.default_rng(0)
    return tuple(rng.normal(size=s).astype(d) for s, d in BLOCK_SHAPES)


SHOWN = {
    "fusion_kinds": given(
        block, example_block_args(), "block(x, w, b, g) on this host's CPU (the tests read GPU)"
    ),
}


def handwritten_gelu_dense(x, w, b):
    """A dense layer with the tanh approximation of gelu written out by hand."""
    h = x @ w + b
    return 0.5 * h * (1.0 + jnp.tanh(0.7978845608 * (h + 0.044715 * h**3)))


# Decide: the shapes and dtypes fused_dense is compiled and checked on (x, w, b); x of rank 2,
# 3 (a batch of sequences) and 4: the layer must fuse whatever x's leading dimensions.
DENSE_CASES = {
    "bf16 64x128 @ 128x256": (((64, 128), bf16), ((128, 256), bf16), ((256,), bf16)),
    "f32 96x160 @ 160x224": (((96, 160), f32), ((160, 224), f32), ((224,), f32)),
    "bf16 40x72 @ 72x48": (((40, 72), bf16), ((72, 48), bf16), ((48,), bf16)),
    "bf16 3x40x72 @ 72x48": (((3, 40, 72), bf16), ((72, 48), bf16), ((48,), bf16)),
    "f32 2x3x24x64 @ 64x96": (((2, 3, 24, 64), f32), ((64, 96), f32), ((96,), f32)),
}


# ---- hand-written modules: cases the recordings never show ---------------------------------------
# Each is read by XLA's parser in the test that uses it. Names are XLA-like; the tests also run
# every module renamed (kata_harness.metamorphic), so no name carries an answer.

# reduction_kinds: a reduce in a kLoop fusion nested in a kInput fusion, and one nested in a
# Triton (kCustom) fusion (the outermost kind counts); opcodes that merely contain "reduce"
# (all-reduce, reduce-scatter, reduce-window, reduce-precision); a reduce in a called
# computation and one in ENTRY (both unfused).
NESTED_REDUCTIONS = """\
HloModule nested_reductions, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %biggest = f32[] maximum(%c, %d)
}

%row_sums (p0: f32[64,32]) -> f32[64] {
  %p0 = f32[64,32]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %reduce.1 = f32[64]{0} reduce(%p0, %zero), dimensions={1}, to_apply=%add
}

%input_reduce_fusion (q0: f32[64,32]) -> f32[] {
  %q0 = f32[64,32]{1,0} parameter(0)
  %loop_fusion = f32[64]{0} fusion(%q0), kind=kLoop, calls=%row_sums
  %zero.1 = f32[] constant(0)
  ROOT %reduce.2 = f32[] reduce(%loop_fusion, %zero.1), dimensions={0}, to_apply=%add
}

%row_maxes (r0: f32[64,32]) -> f32[64] {
  %r0 = f32[64,32]{1,0} parameter(0)
  %lowest = f32[] constant(-inf)
  ROOT %reduce.3 = f32[64]{0} reduce(%r0, %lowest), dimensions={1}, to_apply=%max
}

%triton_softmax_computation (s0: f32[64,32]) -> f32[64,32] {
  %s0 = f32[64,32]{1,0} parameter(0)
  %maxes = f32[64]{0} fusion(%s0), kind=kLoop, calls=%row_maxes
  %spread = f32[64,32]{1,0} broadcast(%maxes), dimensions={0}
  ROOT %shifted = f32[64,32]{1,0} subtract(%s0, %spread)
}

%windowed (w0: f32[64,32]) -> f32[64,16] {
  %w0 = f32[64,32]{1,0} parameter(0)
  %zero.2 = f32[] constant(0)
  ROOT %reduce-window = f32[64,16]{1,0} reduce-window(%w0, %zero.2),\
      window={size=1x2 stride=1x2}, to_apply=%add
}

%loop_precision (v0: f32[64,32]) -> f32[64,32] {
  %v0 = f32[64,32]{1,0} parameter(0)
  ROOT %reduce-precision = f32[64,32]{1,0} reduce-precision(%v0), exponent_bits=8,\
      mantissa_bits=7
}

%helper (h0: f32[64,32]) -> f32[32] {
  %h0 = f32[64,32]{1,0} parameter(0)
  %zero.3 = f32[] constant(0)
  ROOT %reduce.4 = f32[32]{0} reduce(%h0, %zero.3), dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[64,32]) -> (f32[], f32[64,32], f32[64,16], f32[64,32], f32[64,32],\
      f32[16,32], f32[32], f32[64]) {
  %x = f32[64,32]{1,0} parameter(0)
  %input_fusion = f32[] fusion(%x), kind=kInput, calls=%input_reduce_fusion
  %triton_fusion = f32[64,32]{1,0} fusion(%x), kind=kCustom,\
      calls=%triton_softmax_computation,\
      backend_config={"fusion_backend_config":{"kind":"__triton"}}
  %window_fusion = f32[64,16]{1,0} fusion(%x), kind=kLoop, calls=%windowed
  %precision_fusion = f32[64,32]{1,0} fusion(%x), kind=kLoop, calls=%loop_precision
  %all-reduce = f32[64,32]{1,0} all-reduce(%x), channel_id=1, replica_groups={{0,1,2,3}},\
      to_apply=%add
  %reduce-scatter = f32[16,32]{1,0} reduce-scatter(%x), channel_id=2,\
      replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add
  %call = f32[32]{0} call(%x), to_apply=%helper
  %zero.4 = f32[] constant(0)
  %reduce.5 = f32[64]{0} reduce(%x, %zero.4), dimensions={1}, to_apply=%add
  ROOT %tuple = (f32[], f32[64,32]{1,0}, f32[64,16]{1,0}, f32[64,32]{1,0}, f32[64,32]{1,0},\
      f32[16,32]{1,0}, f32[32]{0}, f32[64]{0}) tuple(%input_fusion, %triton_fusion,\
      %window_fusion, %precision_fusion, %all-reduce, %reduce-scatter, %call, %reduce.5)
}
"""

# collective_overlap: two async all-gathers in flight at once that finish in the other order
# (second-start's done comes first); an async collective-permute and a synchronous all-reduce in
# a while body; an async and a synchronous all-gather in a called computation.
NESTED_COLLECTIVES = """\
HloModule nested_collectives, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%cond (c0: (s32[], f32[8,16])) -> pred[] {
  %c0 = (s32[], f32[8,16]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%c0), index=0
  %limit = s32[] constant(4)
  ROOT %more = pred[] compare(%i, %limit), direction=LT
}

%body (b0: (s32[], f32[8,16])) -> (s32[], f32[8,16]) {
  %b0 = (s32[], f32[8,16]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%b0), index=0
  %v = f32[8,16]{1,0} get-tuple-element(%b0), index=1
  %permute-start = (f32[8,16]{1,0}, f32[8,16]{1,0}) collective-permute-start(%v),\
      channel_id=3, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  %permute-done = f32[8,16]{1,0} collective-permute-done(%permute-start)
  %summed = f32[8,16]{1,0} all-reduce(%permute-done), channel_id=4,\
      replica_groups={{0,1,2,3}}, to_apply=%add
  ROOT %carry = (s32[], f32[8,16]{1,0}) tuple(%next, %summed)
}

%gathered (g0: f32[8,16]) -> f32[32,16] {
  %g0 = f32[8,16]{1,0} parameter(0)
  %gather-start = (f32[8,16]{1,0}, f32[32,16]{1,0}) all-gather-start(%g0), channel_id=5,\
      replica_groups={{0,1,2,3}}, dimensions={0}
  %twice = f32[8,16]{1,0} add(%g0, %g0)
  %gather-done = f32[32,16]{1,0} all-gather-done(%gather-start)
  ROOT %plain = f32[32,16]{1,0} all-gather(%twice), channel_id=6, replica_groups={{0,1,2,3}},\
      dimensions={0}
}

ENTRY %main (x: f32[8,16], y: f32[8,16]) -> (f32[32,16], f32[32,16], (s32[], f32[8,16]),\
      f32[32,16]) {
  %x = f32[8,16]{1,0} parameter(0)
  %first-start = (f32[8,16]{1,0}, f32[32,16]{1,0}) all-gather-start(%x), channel_id=1,\
      replica_groups={{0,1,2,3}}, dimensions={0}
  %y = f32[8,16]{1,0} parameter(1)
  %second-start = (f32[8,16]{1,0}, f32[32,16]{1,0}) all-gather-start(%y), channel_id=2,\
      replica_groups={{0,1,2,3}}, dimensions={0}
  %negated = f32[8,16]{1,0} negate(%x)
  %second-done = f32[32,16]{1,0} all-gather-done(%second-start)
  %exp = f32[32,16]{1,0} exponential(%second-done)
  %first-done = f32[32,16]{1,0} all-gather-done(%first-start)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,16]{1,0}) tuple(%zero, %negated)
  %loop = (s32[], f32[8,16]{1,0}) while(%init), condition=%cond, body=%body
  %called = f32[32,16]{1,0} call(%y), to_apply=%gathered
  ROOT %out = (f32[32,16]{1,0}, f32[32,16]{1,0}, (s32[], f32[8,16]{1,0}),\
      f32[32,16]{1,0}) tuple(%first-done, %exp, %loop, %called)
}
"""

# Hand-written: collectives started by a generic async-start whose wrapped computation holds the
# collective (XLA prints these as reduce-scatter-start / all-reduce-start), beside a native
# all-gather-start with nothing in flight. No recording shows the generic spelling.
ASYNC_COLLECTIVES = """\
HloModule async_collectives, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%wrapped_reduce_scatter (p0: f32[32,16]) -> f32[8,16] {
  %p0 = f32[32,16]{1,0} parameter(0)
  ROOT %scattered = f32[8,16]{1,0} reduce-scatter(%p0), channel_id=1,\
      replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add
}

%wrapped_all_reduce (q0: f32[8,16]) -> f32[8,16] {
  %q0 = f32[8,16]{1,0} parameter(0)
  ROOT %reduced = f32[8,16]{1,0} all-reduce(%q0), channel_id=2, replica_groups={{0,1,2,3}},\
      to_apply=%add
}

ENTRY %main (x: f32[32,16], y: f32[8,16]) -> (f32[8,16], f32[8,16], f32[32,16]) {
  %x = f32[32,16]{1,0} parameter(0)
  %y = f32[8,16]{1,0} parameter(1)
  %scatter-start = ((f32[32,16]{1,0}), f32[8,16]{1,0}) async-start(%x),\
      calls=%wrapped_reduce_scatter
  %negated = f32[8,16]{1,0} negate(%y)
  %scatter-done = f32[8,16]{1,0} async-done(%scatter-start)
  %sum-start = ((f32[8,16]{1,0}), f32[8,16]{1,0}) async-start(%negated),\
      calls=%wrapped_all_reduce
  %exp = f32[8,16]{1,0} exponential(%scatter-done)
  %scaled = f32[8,16]{1,0} multiply(%exp, %y)
  %sum-done = f32[8,16]{1,0} async-done(%sum-start)
  %gather-start = (f32[8,16]{1,0}, f32[32,16]{1,0}) all-gather-start(%sum-done), channel_id=3,\
      replica_groups={{0,1,2,3}}, dimensions={0}
  %gather-done = f32[32,16]{1,0} all-gather-done(%gather-start)
  ROOT %out = (f32[8,16]{1,0}, f32[8,16]{1,0}, f32[32,16]{1,0}) tuple(%scaled, %sum-done,\
      %gather-done)
}
"""

# Hand-written: GEMMs where the recordings never put them: a legacy cuBLAS call
# (__cublas$gemm) contracting the lhs's dimension 0, a cuBLAS-Lt call with a bias epilogue, a
# dot in ENTRY contracting the lhs's dimension 0 and a dot in a while body.
_GEMM_CONFIG = (
    '{"operation_queue_id":"0","gemm_backend_config":{"alpha_real":1,"beta":0,'
    '"dot_dimension_numbers":{"lhs_contracting_dimensions":["LHS"],'
    '"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},'
    '"alpha_imag":0,"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],'
    '"algorithm":"ALG_UNSET"},"epilogue":"EPILOGUE","grad_x":false,"grad_y":false,'
    '"damax_output":false}}'
)

GEMMS_EVERYWHERE = f"""\
HloModule gemms_everywhere, is_scheduled=true

%cond (c0: (s32[], f32[8,40], f32[40,40])) -> pred[] {{
  %c0 = (s32[], f32[8,40]{{1,0}}, f32[40,40]{{1,0}}) parameter(0)
  %i = s32[] get-tuple-element(%c0), index=0
  %limit = s32[] constant(3)
  ROOT %more = pred[] compare(%i, %limit), direction=LT
}}

%body (b0: (s32[], f32[8,40], f32[40,40])) -> (s32[], f32[8,40], f32[40,40]) {{
  %b0 = (s32[], f32[8,40]{{1,0}}, f32[40,40]{{1,0}}) parameter(0)
  %j = s32[] get-tuple-element(%b0), index=0
  %h = f32[8,40]{{1,0}} get-tuple-element(%b0), index=1
  %m = f32[40,40]{{1,0}} get-tuple-element(%b0), index=2
  %step = f32[8,40]{{1,0}} dot(%h, %m), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  ROOT %carry = (s32[], f32[8,40]{{1,0}}, f32[40,40]{{1,0}}) tuple(%next, %step, %m)
}}

ENTRY %main (x: f32[64,32], w: f32[64,16], a: f32[32,24], v: f32[24,8], bias: f32[32,8],\
    p: f32[48,16], q: f32[48,24], h0: f32[8,40], m0: f32[40,40]) -> (f32[32,16], f32[32,8],\
    f32[16,24], (s32[], f32[8,40], f32[40,40])) {{
  %x = f32[64,32]{{1,0}} parameter(0)
  %w = f32[64,16]{{1,0}} parameter(1)
  %a = f32[32,24]{{1,0}} parameter(2)
  %v = f32[24,8]{{1,0}} parameter(3)
  %bias = f32[32,8]{{1,0}} parameter(4)
  %p = f32[48,16]{{1,0}} parameter(5)
  %q = f32[48,24]{{1,0}} parameter(6)
  %h0 = f32[8,40]{{1,0}} parameter(7)
  %m0 = f32[40,40]{{1,0}} parameter(8)
  %legacy-gemm = (f32[32,16]{{1,0}}, s8[4194304]{{0}}) custom-call(%x, %w),\
      custom_call_target="__cublas$gemm",\
      backend_config={_GEMM_CONFIG.replace("LHS", "0").replace("EPILOGUE", "DEFAULT")}
  %xtw = f32[32,16]{{1,0}} get-tuple-element(%legacy-gemm), index=0
  %lt-gemm = (f32[32,8]{{1,0}}, s8[4194304]{{0}}) custom-call(%a, %v, %bias),\
      custom_call_target="__cublas$lt$matmul",\
      backend_config={_GEMM_CONFIG.replace("LHS", "1").replace("EPILOGUE", "BIAS")}
  %av = f32[32,8]{{1,0}} get-tuple-element(%lt-gemm), index=0
  %ptq = f32[16,24]{{1,0}} dot(%p, %q), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,40]{{1,0}}, f32[40,40]{{1,0}}) tuple(%zero, %h0, %m0)
  %loop = (s32[], f32[8,40]{{1,0}}, f32[40,40]{{1,0}}) while(%init), condition=%cond, body=%body
  ROOT %out = (f32[32,16]{{1,0}}, f32[32,8]{{1,0}}, f32[16,24]{{1,0}},\
      (s32[], f32[8,40]{{1,0}}, f32[40,40]{{1,0}})) tuple(%xtw, %av, %ptq, %loop)
}}
"""


# fusion_kinds / reduction_kinds / gemm_flops: fusions reached other than from ENTRY or a
# fusion: a kInput fusion (holding a nested kLoop fusion) in a called computation, a kLoop
# fusion holding a reduce and a Triton GEMM fusion, each started asynchronously by a generic
# async-start (XLA reads it as fusion-start), and a computation nothing calls whose kInput
# fusion shares its fused computation with the kLoop one (two kernels of two kinds).
FUSIONS_ELSEWHERE = """\
HloModule fusions_elsewhere, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%fused_square (s0: f32[64,32]) -> f32[64,32] {
  %s0 = f32[64,32]{1,0} parameter(0)
  ROOT %square = f32[64,32]{1,0} multiply(%s0, %s0)
}

%fused_row_sums (r0: f32[64,32]) -> f32[64] {
  %r0 = f32[64,32]{1,0} parameter(0)
  %squared = f32[64,32]{1,0} fusion(%r0), kind=kLoop, calls=%fused_square
  %zero = f32[] constant(0)
  ROOT %reduce.1 = f32[64]{0} reduce(%squared, %zero), dimensions={1}, to_apply=%add
}

%helper (h0: f32[64,32]) -> f32[64] {
  %h0 = f32[64,32]{1,0} parameter(0)
  ROOT %input_fusion = f32[64]{0} fusion(%h0), kind=kInput, calls=%fused_row_sums
}

%fused_column_sums (c0: f32[64,32]) -> f32[32] {
  %c0 = f32[64,32]{1,0} parameter(0)
  %zero.1 = f32[] constant(0)
  ROOT %reduce.2 = f32[32]{0} reduce(%c0, %zero.1), dimensions={0}, to_apply=%add
}

%wrapped_columns (w0: f32[64,32]) -> f32[32] {
  %w0 = f32[64,32]{1,0} parameter(0)
  ROOT %column_fusion = f32[32]{0} fusion(%w0), kind=kLoop, calls=%fused_column_sums
}

%spare (u0: f32[64,32]) -> f32[32] {
  %u0 = f32[64,32]{1,0} parameter(0)
  ROOT %spare_fusion = f32[32]{0} fusion(%u0), kind=kInput, calls=%fused_column_sums
}

%fused_gemm (g0: f32[64,32], g1: f32[32,48]) -> f32[64,48] {
  %g0 = f32[64,32]{1,0} parameter(0)
  %g1 = f32[32,48]{1,0} parameter(1)
  ROOT %gemm = f32[64,48]{1,0} dot(%g0, %g1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%wrapped_gemm (v0: f32[64,32], v1: f32[32,48]) -> f32[64,48] {
  %v0 = f32[64,32]{1,0} parameter(0)
  %v1 = f32[32,48]{1,0} parameter(1)
  ROOT %gemm_fusion = f32[64,48]{1,0} fusion(%v0, %v1), kind=kCustom, calls=%fused_gemm,\
      backend_config={"fusion_backend_config":{"kind":"__triton_gemm"}}
}

ENTRY %main (x: f32[64,32], w: f32[32,48]) -> (f32[64], f32[32], f32[64,48]) {
  %x = f32[64,32]{1,0} parameter(0)
  %w = f32[32,48]{1,0} parameter(1)
  %columns-start = ((f32[64,32]{1,0}), f32[32]{0}, s32[]) async-start(%x), calls=%wrapped_columns
  %gemm-start = ((f32[64,32]{1,0}, f32[32,48]{1,0}), f32[64,48]{1,0}, s32[]) async-start(%x, %w),\
      calls=%wrapped_gemm
  %call = f32[64]{0} call(%x), to_apply=%helper
  %columns-done = f32[32]{0} async-done(%columns-start)
  %gemm-done = f32[64,48]{1,0} async-done(%gemm-start)
  ROOT %out = (f32[64]{0}, f32[32]{0}, f32[64,48]{1,0}) tuple(%call, %columns-done, %gemm-done)
}
"""

HANDWRITTEN = {
    "nested_reductions": NESTED_REDUCTIONS,
    "nested_collectives": NESTED_COLLECTIVES,
    "async_collectives": ASYNC_COLLECTIVES,
    "gemms_everywhere": GEMMS_EVERYWHERE,
    "fusions_elsewhere": FUSIONS_ELSEWHERE,
    **handwritten.MODULES,  # katas/phase12/handwritten.py: spellings, sharing, odd places
}
