"""The programs phase 11's tests compile for TPU chips that are not here, the modules recorded
from them, and what `katas show` compiles per task.

Deviceless compiles (`xla_inspect.targets`): a `Target` places `jax.ShapeDtypeStruct`s on a
topology of compile-only TPU devices and `jax.jit(f).lower(...).compile()` runs libtpu's compiler
on this host. `RECORDINGS` are such compiles kept as text in `recorded/` (re-recorded with the
command in `kata_harness.targets`), so the tasks that only read text run without libtpu.

Nothing here imports libtpu or builds a mesh at import time.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.programs import Recipe
from kata_harness.targets import Recording
from xla_inspect.targets import Target

AXES = ("data", "model")
BOTH = ("data", "model")  # one array dimension split over both mesh axes (4 ways)


def fsdp(x, ws):
    """A stack of dense layers relu(x @ w), as an FSDP model runs it."""
    for w in ws:
        x = jax.nn.relu(x @ w)
    return x


def two_layer_mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def dense_layer(x, w, b):
    return jax.nn.relu(x @ w + b)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    out = jax.nn.relu(x @ w1 + b1) @ w2 + b2
    return jnp.mean((out - y) ** 2)


def _fsdp_lowering(
    layers: int, batch: int, width: int, dtype, x_spec: tuple
) -> Callable[[Target], jax.stages.Lowered]:
    """x [batch, width] split by `x_spec`, every weight [width, width] split 4 ways by rows."""

    def lower(target: Target) -> jax.stages.Lowered:
        mesh = target.mesh((2, 2), AXES)
        x = target.place(jax.ShapeDtypeStruct((batch, width), dtype), mesh, *x_spec)
        ws = [
            target.place(jax.ShapeDtypeStruct((width, width), dtype), mesh, BOTH, None)
            for _ in range(layers)
        ]
        return jax.jit(fsdp).lower(x, ws)

    return lower


def _mlp_lowering(w1_spec: tuple, w2_spec: tuple) -> Callable[[Target], jax.stages.Lowered]:
    """two_layer_mlp with x bf16[512,256] split by rows over 'data', out split the same way."""

    def lower(target: Target) -> jax.stages.Lowered:
        mesh = target.mesh((2, 2), AXES)
        bf = jnp.bfloat16
        x = target.place(jax.ShapeDtypeStruct((512, 256), bf), mesh, "data", None)
        w1 = target.place(jax.ShapeDtypeStruct((256, 1024), bf), mesh, *w1_spec)
        w2 = target.place(jax.ShapeDtypeStruct((1024, 256), bf), mesh, *w2_spec)
        out = NamedSharding(mesh, P("data", None))
        return jax.jit(two_layer_mlp, out_shardings=out).lower(x, w1, w2)

    return lower


def _matmul_lowering(target: Target) -> jax.stages.Lowered:
    mesh = target.mesh((2, 2), AXES)
    bf = jnp.bfloat16
    x = target.place(jax.ShapeDtypeStruct((1024, 2048), bf), mesh, *AXES)
    w = target.place(jax.ShapeDtypeStruct((2048, 4096), bf), mesh, *AXES)
    out = NamedSharding(mesh, P(*AXES))
    return jax.jit(lambda a, b: a @ b, out_shardings=out).lower(x, w)


def _mlp_grad_lowering(target: Target) -> jax.stages.Lowered:
    mesh = target.mesh((2, 2), AXES)
    bf = jnp.bfloat16
    params = tuple(
        target.place(jax.ShapeDtypeStruct(shape, bf), mesh)
        for shape in ((512, 1024), (1024,), (1024, 256), (256,))
    )
    x = target.place(jax.ShapeDtypeStruct((256, 512), bf), mesh, "data", None)
    y = target.place(jax.ShapeDtypeStruct((256, 256), bf), mesh, "data", None)
    return jax.jit(jax.grad(mlp_loss)).lower(params, x, y)


# Shapes and dtypes whose tiled TPU layouts pad differently: odd sizes, 1-D, 3-D, 1 and 2 byte
# types (packed two or four to a 32-bit word), and a shape XLA lays out column-major.
PADDING_CASES = [
    ((1000, 300), jnp.float32),
    ((1000, 300), jnp.bfloat16),
    ((3, 5, 129), jnp.bfloat16),
    ((9, 130), jnp.int8),
    ((33, 260), jnp.float16),
    ((7,), jnp.float32),
    ((2049,), jnp.bfloat16),
    ((5, 3), jnp.float32),
    ((2, 3, 17, 200), jnp.float32),
]


def doubled(v):
    return v * 2


# name -> (layers, batch, width, dtype, x spec, target): FSDP stacks whose weights XLA gathers.
FSDP_CASES = {
    "fsdp4_v5e": (4, 2048, 1024, jnp.bfloat16, (BOTH, None), "tpu-v5e:2x2"),
    "fsdp6_v5e": (6, 1024, 1024, jnp.bfloat16, (BOTH, None), "tpu-v5e:2x2"),
    "fsdp3_f32_v5e": (3, 1024, 512, jnp.float32, (BOTH, None), "tpu-v5e:2x2"),
    "fsdp2_v5e": (2, 2048, 1024, jnp.bfloat16, (BOTH, None), "tpu-v5e:2x2"),
    "fsdp4_v6e": (4, 512, 512, jnp.bfloat16, ("data", None), "tpu-v6e:2x2"),
}

RECORDINGS = {
    name: Recording(
        target,
        f"{layers} layers relu(x@w), x {jnp.dtype(dtype).name}[{batch},{width}] split "
        f"P{x_spec}, each w [{width},{width}] split P(('data','model'), None)",
        _fsdp_lowering(layers, batch, width, dtype, x_spec),
    )
    for name, (layers, batch, width, dtype, x_spec, target) in FSDP_CASES.items()
} | {
    "mlp_rows_v5e": Recording(
        "tpu-v5e:2x2",
        "relu(x@w1)@w2, x bf16[512,256] P('data', None), w1 [256,1024] and w2 [1024,256] "
        "both P('data', None): weights moved with collective-permute",
        _mlp_lowering(("data", None), ("data", None)),
    ),
    "matmul_v5e": Recording(
        "tpu-v5e:2x2",
        "x@w, x bf16[1024,2048] and w bf16[2048,4096] both P('data','model'), out the same",
        _matmul_lowering,
    ),
    "odd_shapes_v5e": Recording(
        "tpu-v5e:2x2",
        "every array of PADDING_CASES doubled, on one device: tiled layouts that pad",
        lambda target: jax.jit(lambda *arrays: [doubled(a) for a in arrays]).lower(
            *(target.place(jax.ShapeDtypeStruct(s, d)) for s, d in PADDING_CASES)
        ),
    ),
    "mlp_grad_v5e": Recording(
        "tpu-v5e:2x2",
        "jax.grad of MSE(relu(x@w1+b1)@w2+b2), bf16, params replicated, x and y P('data', None)",
        _mlp_grad_lowering,
    ),
}

# FSDP recordings and how many weights each gathers (one all-gather per weight, every device
# ends up with each whole [width, width] weight).
GATHERED_WEIGHTS = {name: case[0] for name, case in FSDP_CASES.items()}


def fsdp_weight_bytes(name: str) -> int:
    """Bytes of one whole weight of the FSDP recording `name`."""
    _, _, width, dtype, _, _ = FSDP_CASES[name]
    return width * width * jnp.dtype(dtype).itemsize


# A module written by hand in the spelling XLA:GPU and the generic async passes use: collectives
# split into `-start` / `-done` ops (one all-gather, one collective-permute), plus an async copy
# that is not a collective. Replica groups in the three spellings XLA prints.
HANDWRITTEN_ASYNC = """HloModule handwritten_async, is_scheduled=true, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%scaled (p0: f32[64,32], p1: f32[32,16]) -> f32[64,16] {
  %p0 = f32[64,32]{1,0} parameter(0)
  %p1 = f32[32,16]{1,0} parameter(1)
  ROOT %dot.1 = f32[64,16]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (x: f32[64,32], w: f32[8,16], v: f32[64,16]) -> (f32[64,16], f32[64,16]) {
  %w = f32[8,16]{1,0} parameter(1)
  %x = f32[64,32]{1,0} parameter(0)
  %v = f32[64,16]{1,0} parameter(2)
  %ag-start = (f32[8,16]{1,0}, f32[32,16]{1,0}) all-gather-start(%w), channel_id=7,
      replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %cp-start = (f32[64,16]{1,0}, f32[64,16]{1,0}, u32[], u32[]) collective-permute-start(%v),
      channel_id=9,
      source_target_pairs={{0,1},{1,0},{2,3},{3,2}}
  %copy-start = (f32[64,32]{1,0}, f32[64,32]{1,0}, u32[]) copy-start(%x)
  %copy-done = f32[64,32]{1,0} copy-done(%copy-start)
  %x2 = f32[64,32]{1,0} multiply(%copy-done, %copy-done)
  %ag-done = f32[32,16]{1,0} all-gather-done(%ag-start)
  %fusion = f32[64,16]{1,0} fusion(%x2, %ag-done), kind=kOutput, calls=%scaled
  %bitcast = f32[64,16]{1,0} bitcast(%fusion)
  %cp-done = f32[64,16]{1,0} collective-permute-done(%cp-start)
  %ar = f32[64,16]{1,0} all-reduce(%bitcast), channel_id=11, replica_groups={{0,2},{1,3}},
      use_global_device_ids=true, to_apply=%add
  ROOT %out = (f32[64,16]{1,0}, f32[64,16]{1,0}) tuple(%ar, %cp-done)
}
"""

# replica_groups in the three spellings XLA prints: explicit lists, iota lists (reshaped,
# optionally transposed device numbers) and mesh axes (the devices along the named axes).
GROUP_SPELLINGS = {
    "explicit": "{{0,3},{1,2}}",
    "iota": "[2,2]<=[4]",
    "iota transposed": "[2,2]<=[2,2]T(1,0)",
    "iota 3-d transposed": "[4,2]<=[2,2,2]T(2,0,1)",
    "mesh minor axis": "mesh['a'=2,'b'=4] {'b'}",
    "mesh major axis": "mesh['a'=2,'b'=4] {'a'}",
    "mesh both axes": "mesh['a'=2,'b'=2,'c'=2] {'a','c'}",
}


def group_module(spelling: str, devices: int = 8) -> str:
    """A one-collective module whose all-reduce has `replica_groups=<spelling>`."""
    return (
        f"HloModule groups, num_partitions={devices}\n\n"
        "%add (a: f32[], b: f32[]) -> f32[] {\n"
        "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
        "  ROOT %s = f32[] add(%a, %b)\n}\n\n"
        "ENTRY %e (p: f32[16]) -> f32[16] {\n"
        "  %p = f32[16]{0} parameter(0)\n"
        f"  ROOT %ar = f32[16]{{0}} all-reduce(%p), channel_id=3, replica_groups={spelling}, "
        "use_global_device_ids=true, to_apply=%add\n}\n"
    )


# Cross-replica collectives, as pmap-style programs print them: no channel_id, so each one is a
# collective of its own; the last all-reduce is one collective copied into two computations.
CROSS_REPLICA = """HloModule cross_replica, replica_count=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%add_bf16 (c: bf16[], d: bf16[]) -> bf16[] {
  %c = bf16[] parameter(0)
  %d = bf16[] parameter(1)
  ROOT %t = bf16[] add(%c, %d)
}

%inner (q: f32[24]) -> f32[24] {
  %q = f32[24]{0} parameter(0)
  ROOT %ar.inner = f32[24]{0} all-reduce(%q), channel_id=5, replica_groups={{0,1,2,3}},
      to_apply=%add
}

ENTRY %e (p: f32[16], g: bf16[8,4], h: s32[2,3], u: f32[24])
    -> (f32[16], bf16[8,4], s32[8,3], f32[24], f32[24]) {
  %p = f32[16]{0} parameter(0)
  %g = bf16[8,4]{1,0} parameter(1)
  %h = s32[2,3]{1,0} parameter(2)
  %u = f32[24]{0} parameter(3)
  %ar.0 = f32[16]{0} all-reduce(%p), replica_groups={}, to_apply=%add
  %ar.1 = bf16[8,4]{1,0} all-reduce(%g), replica_groups={{0,1,2,3}}, to_apply=%add_bf16
  %ag.0 = s32[8,3]{1,0} all-gather(%h), replica_groups={}, dimensions={0}
  %ar.2 = f32[24]{0} all-reduce(%u), channel_id=5, replica_groups={{0,1,2,3}}, to_apply=%add
  %call = f32[24]{0} call(%u), to_apply=%inner
  ROOT %out = (f32[16]{0}, bf16[8,4]{1,0}, s32[8,3]{1,0}, f32[24]{0}, f32[24]{0})
      tuple(%ar.0, %ar.1, %ag.0, %ar.2, %call)
}
"""


# (m, k, n, mesh shape (data, model)): dense_layer f32 with x P('data', None), w P(None,
# 'model'), b P('model'), out P('data', 'model').
LAYER_CASES = [
    (512, 256, 384, (2, 2)),
    (96, 200, 72, (2, 2)),
    (64, 128, 512, (4, 1)),
    (40, 24, 1024, (1, 4)),
    (8, 8, 8, (1, 1)),
]


def lower_dense_layer(target: Target, m: int, k: int, n: int, mesh_shape: tuple[int, int]):
    mesh = target.mesh(mesh_shape, AXES)
    f32 = jnp.float32
    x = target.place(jax.ShapeDtypeStruct((m, k), f32), mesh, "data", None)
    w = target.place(jax.ShapeDtypeStruct((k, n), f32), mesh, None, "model")
    b = target.place(jax.ShapeDtypeStruct((n,), f32), mesh, "model")
    out = NamedSharding(mesh, P("data", "model"))
    return jax.jit(dense_layer, out_shardings=out).lower(x, w, b)


# Megatron decide task: two_layer_mlp with x bf16[BATCH, WIDTH] P('data', None) on (2, 2).
MLP_BATCH, MLP_WIDTH, MLP_HIDDEN = 512, 256, 1024


def lower_mlp(
    target: Target,
    w1_spec,
    w2_spec,
    batch: int = MLP_BATCH,
    width: int = MLP_WIDTH,
    hidden: int = MLP_HIDDEN,
    dtype=jnp.bfloat16,
    mesh_shape: tuple[int, int] = (2, 2),
):
    """two_layer_mlp for the target, x [batch, width] split P('data', None), w1 [width, hidden]
    and w2 [hidden, width] split by the given PartitionSpecs, the output like x."""
    mesh = target.mesh(mesh_shape, AXES)
    x = target.place(jax.ShapeDtypeStruct((batch, width), dtype), mesh, "data", None)
    w1 = target.place(jax.ShapeDtypeStruct((width, hidden), dtype), mesh, *w1_spec)
    w2 = target.place(jax.ShapeDtypeStruct((hidden, width), dtype), mesh, *w2_spec)
    out = NamedSharding(mesh, P("data", None))
    return jax.jit(two_layer_mlp, out_shardings=out).lower(x, w1, w2)


# predict_allreduce_bytes: (batch, width, hidden, dtype, mesh shape) of two_layer_mlp with w1
# split by columns and w2 by rows over 'model'.
ALLREDUCE_CASES = [
    (512, 256, 1024, jnp.bfloat16, (2, 2)),
    (128, 384, 512, jnp.bfloat16, (2, 2)),
    (96, 200, 400, jnp.float32, (2, 2)),
    (64, 128, 256, jnp.float32, (1, 4)),
    (1024, 512, 2048, jnp.bfloat16, (1, 4)),
    (512, 256, 1024, jnp.bfloat16, (4, 1)),
]


# step_donation: one SGD-with-momentum step of a two-matrix model, f32.
SGD_SHAPES = {"w": (512, 1024), "v": (1024, 256)}
SGD_BATCH = 128


def sgd_step(params, momentum, batch):
    x, y = batch

    def loss(p):
        return jnp.mean((jnp.tanh(x @ p["w"]) @ p["v"] - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    momentum = jax.tree.map(lambda m, g: 0.9 * m + g, momentum, grads)
    params = jax.tree.map(lambda p, m: p - 0.01 * m, params, momentum)
    return params, momentum, value


def lower_sgd(target: Target, donate: tuple[int, ...]):
    """sgd_step for one device of the target, donating the arguments numbered in `donate`."""
    f32 = jnp.float32
    state = {k: target.place(jax.ShapeDtypeStruct(s, f32)) for k, s in SGD_SHAPES.items()}
    batch = (
        target.place(jax.ShapeDtypeStruct((SGD_BATCH, SGD_SHAPES["w"][0]), f32)),
        target.place(jax.ShapeDtypeStruct((SGD_BATCH, SGD_SHAPES["v"][1]), f32)),
    )
    return jax.jit(sgd_step, donate_argnums=donate).lower(state, state, batch)


SHOWN = {
    "padded_bytes": Recipe(
        lambda _m: (doubled, (jax.ShapeDtypeStruct((1000, 300), jnp.bfloat16),)),
        "v * 2 on bf16[1000,300]: show it with --target tpu-v5e:2x2 to see the tiled layout",
        given=True,
    ),
    "predict_layer_flops": Recipe(
        lambda _m: (
            dense_layer,
            tuple(jax.ShapeDtypeStruct(s, jnp.float32) for s in ((96, 200), (200, 72), (72,))),
        ),
        "relu(x @ w + b) on one device; the tests shard it over a 2x2 TPU mesh",
        given=True,
    ),
}
