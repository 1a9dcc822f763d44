"""The programs phase 11's tests compile for TPU chips that are not here, the modules recorded
from them, and what `katas show` compiles per task.

Deviceless compiles (`xla_inspect.targets`): a `Target` places `jax.ShapeDtypeStruct`s on a
topology of compile-only TPU devices and `jax.jit(f).lower(...).compile()` runs libtpu's compiler
on this host. `RECORDINGS` are such compiles kept as text in `recorded/` (re-recorded with the
command in `kata_harness.targets`), so the tasks that only read text run without libtpu.

Nothing here imports libtpu or builds a mesh at import time.
"""

from __future__ import annotations

import random
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
# Shapes with dimensions of 1 that libtpu lays out under a tile of more than 1 along them.
UNIT_PADDING_CASES = [((1, 1000), jnp.bfloat16), ((1, 1, 1), jnp.int8), ((1,), jnp.float32)]


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

# The TPU spelling written by hand, with what the recordings never show: the wrapped collectives
# are an s8 all-reduce (channel 3) and a collective-permute (channel 5), not all-gathers; the
# second pair finishes first (start a, start b, done b, done a); a parameter and a constant are
# scheduled inside the windows; the overlap fusion holds a matmul next to a copy of the permute.
# No name says what an instruction is (%launch.a is a start, %finish.b a done).
HANDWRITTEN_TPU = """HloModule handwritten_tpu, is_scheduled=true, num_partitions=4

%add.s8 (a: s8[], b: s8[]) -> s8[] {
  %a = s8[] parameter(0)
  %b = s8[] parameter(1)
  ROOT %sum = s8[] add(%a, %b)
}

%reduce_begin (p.0: s8[64,256]) -> (s8[64,256], s8[64,256], u32[]) {
  %p.0 = s8[64,256]{1,0:T(8,128)(4,1)} parameter(0)
  %reduction.1 = s8[64,256]{1,0:T(8,128)(4,1)} all-reduce(%p.0), channel_id=3,
      replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add.s8
  ROOT %marker.1 = (s8[64,256]{1,0:T(8,128)(4,1)}, s8[64,256]{1,0:T(8,128)(4,1)},
      u32[]{:S(2)}) custom-call(%reduction.1), custom_call_target="AsyncCollectiveStart"
}

%reduce_end (q.0: s8[64,256], q.1: s8[64,256], q.2: u32[]) -> s8[64,256] {
  %q.0 = s8[64,256]{1,0:T(8,128)(4,1)} parameter(0)
  %q.1 = s8[64,256]{1,0:T(8,128)(4,1)} parameter(1)
  %q.2 = u32[]{:S(2)} parameter(2)
  %reduction.2 = s8[64,256]{1,0:T(8,128)(4,1)} all-reduce(%q.0), channel_id=3,
      replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add.s8
  ROOT %marker.2 = s8[64,256]{1,0:T(8,128)(4,1)} custom-call(%q.0, %q.1, %reduction.2, %q.2),
      custom_call_target="AsyncCollectiveDone"
}

%shift_begin (r.0: f32[32,128]) -> (f32[32,128], f32[32,128], u32[]) {
  %r.0 = f32[32,128]{1,0:T(8,128)} parameter(0)
  %rotation.1 = f32[32,128]{1,0:T(8,128)} collective-permute(%r.0), channel_id=5,
      source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %marker.3 = (f32[32,128]{1,0:T(8,128)}, f32[32,128]{1,0:T(8,128)},
      u32[]{:S(2)}) custom-call(%rotation.1), custom_call_target="AsyncCollectiveStart"
}

%matmul_tanh (m.0: f32[128,64], m.1: f32[64,32]) -> f32[128,32] {
  %m.0 = f32[128,64]{1,0:T(8,128)} parameter(0)
  %m.1 = f32[64,32]{1,0:T(8,128)} parameter(1)
  %product = f32[128,32]{1,0:T(8,128)} convolution(%m.0, %m.1), dim_labels=bf_io->bf
  ROOT %squash = f32[128,32]{1,0:T(8,128)} tanh(%product)
}

%hidden (in0: f32[32,128], in1: f32[32,128], in2: f32[128,64], in3: f32[64,32]) -> (f32[128,32],
      f32[32,128], f32[32,128]) {
  %in2 = f32[128,64]{1,0:T(8,128)} parameter(2)
  %in3 = f32[64,32]{1,0:T(8,128)} parameter(3)
  %layer = f32[128,32]{1,0:T(8,128)} fusion(%in2, %in3), kind=kOutput, calls=%matmul_tanh
  %in0 = f32[32,128]{1,0:T(8,128)} parameter(0)
  %in1 = f32[32,128]{1,0:T(8,128)} parameter(1)
  %rotation.2 = f32[32,128]{1,0:T(8,128)} collective-permute(%in0), channel_id=5,
      source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %threaded = (f32[128,32]{1,0:T(8,128)}, f32[32,128]{1,0:T(8,128)},
      f32[32,128]{1,0:T(8,128)}) tuple(%layer, %in0, %in1)
}

%shift_end (t.0: f32[32,128], t.1: f32[32,128], t.2: u32[]) -> f32[32,128] {
  %t.0 = f32[32,128]{1,0:T(8,128)} parameter(0)
  %t.1 = f32[32,128]{1,0:T(8,128)} parameter(1)
  %t.2 = u32[]{:S(2)} parameter(2)
  %rotation.3 = f32[32,128]{1,0:T(8,128)} collective-permute(%t.0), channel_id=5,
      source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %marker.4 = f32[32,128]{1,0:T(8,128)} custom-call(%t.0, %t.1, %rotation.3, %t.2),
      custom_call_target="AsyncCollectiveDone"
}

ENTRY %main (x: f32[128,64], w: f32[64,32], g: s8[64,256], v: f32[32,128]) -> (f32[128,32],
      f32[32,128], s8[64,256]) {
  %g = s8[64,256]{1,0:T(8,128)(4,1)} parameter(2)
  %launch.a = (s8[64,256]{1,0:T(8,128)(4,1)}, s8[64,256]{1,0:T(8,128)(4,1)},
      u32[]{:S(2)}) fusion(%g), kind=kCustom, calls=%reduce_begin
  %v = f32[32,128]{1,0:T(8,128)} parameter(3)
  %launch.b = (f32[32,128]{1,0:T(8,128)}, f32[32,128]{1,0:T(8,128)}, u32[]{:S(2)}) fusion(%v),
      kind=kCustom, calls=%shift_begin
  %two = f32[] constant(2)
  %x = f32[128,64]{1,0:T(8,128)} parameter(0)
  %w = f32[64,32]{1,0:T(8,128)} parameter(1)
  %b.0 = f32[32,128]{1,0:T(8,128)} get-tuple-element(%launch.b), index=0
  %b.1 = f32[32,128]{1,0:T(8,128)} get-tuple-element(%launch.b), index=1
  %b.2 = u32[]{:S(2)} get-tuple-element(%launch.b), index=2
  %overlap = (f32[128,32]{1,0:T(8,128)}, f32[32,128]{1,0:T(8,128)},
      f32[32,128]{1,0:T(8,128)}) fusion(%b.0, %b.1, %x, %w), kind=kCustom, calls=%hidden
  %o.1 = f32[32,128]{1,0:T(8,128)} get-tuple-element(%overlap), index=1
  %o.2 = f32[32,128]{1,0:T(8,128)} get-tuple-element(%overlap), index=2
  %finish.b = f32[32,128]{1,0:T(8,128)} fusion(%o.1, %o.2, %b.2), kind=kCustom, calls=%shift_end
  %twos = f32[32,128]{1,0:T(8,128)} broadcast(%two), dimensions={}
  %scaled = f32[32,128]{1,0:T(8,128)} multiply(%finish.b, %twos)
  %a.0 = s8[64,256]{1,0:T(8,128)(4,1)} get-tuple-element(%launch.a), index=0
  %a.1 = s8[64,256]{1,0:T(8,128)(4,1)} get-tuple-element(%launch.a), index=1
  %a.2 = u32[]{:S(2)} get-tuple-element(%launch.a), index=2
  %finish.a = s8[64,256]{1,0:T(8,128)(4,1)} fusion(%a.0, %a.1, %a.2), kind=kCustom,
      calls=%reduce_end
  %o.0 = f32[128,32]{1,0:T(8,128)} get-tuple-element(%overlap), index=0
  ROOT %out = (f32[128,32]{1,0:T(8,128)}, f32[32,128]{1,0:T(8,128)},
      s8[64,256]{1,0:T(8,128)(4,1)}) tuple(%o.0, %scaled, %finish.a)
}
"""

# Parameters moved by hand: numbers that are not the names' (%param.3 is parameter(1)), a plain
# copy that only changes the layout in the default memory, a copy-start that stays there too,
# a copy-start of a constant into S(1), and the cross-program prefetch on the third parameter.
HANDWRITTEN_PREFETCH = """HloModule handwritten_prefetch, is_scheduled=true

ENTRY %main (p: f32[8,128], q: f32[8,128], r: bf16[16,128], s: f32[8,128], t: f32[8,128]) -> (
      f32[8,128], f32[8,128], bf16[16,128], f32[8,128], f32[8,128], f32[2]) {
  %param.3 = f32[8,128]{1,0:T(8,128)} parameter(1)
  %transposed = f32[8,128]{0,1:T(8,128)} copy(%param.3)
  %param.1 = bf16[16,128]{1,0:T(8,128)(2,1)} parameter(2)
  %early = (bf16[16,128]{1,0:T(8,128)(2,1)S(1)}, bf16[16,128]{1,0:T(8,128)(2,1)},
      u32[]{:S(2)}) copy-start(%param.1), cross_program_prefetch_index=0
  %param.2 = f32[8,128]{1,0:T(8,128)} parameter(0)
  %pinned = f32[8,128]{1,0:T(8,128)S(1)} copy(%param.2)
  %param.0 = f32[8,128]{1,0:T(8,128)} parameter(3)
  %ahead = (f32[8,128]{1,0:T(8,128)S(1)}, f32[8,128]{1,0:T(8,128)},
      u32[]{:S(2)}) copy-start(%param.0)
  %param.4 = f32[8,128]{1,0:T(8,128)} parameter(4)
  %staying = (f32[8,128]{0,1:T(8,128)}, f32[8,128]{1,0:T(8,128)},
      u32[]{:S(2)}) copy-start(%param.4)
  %pair = f32[2]{0:T(256)} constant({1, 2})
  %lifted = (f32[2]{0:T(256)S(1)}, f32[2]{0:T(256)}, u32[]{:S(2)}) copy-start(%pair)
  %early.done = bf16[16,128]{1,0:T(8,128)(2,1)S(1)} copy-done(%early)
  %ahead.done = f32[8,128]{1,0:T(8,128)S(1)} copy-done(%ahead)
  %staying.done = f32[8,128]{0,1:T(8,128)} copy-done(%staying)
  %lifted.done = f32[2]{0:T(256)S(1)} copy-done(%lifted)
  ROOT %out = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)S(1)},
      bf16[16,128]{1,0:T(8,128)(2,1)S(1)}, f32[8,128]{1,0:T(8,128)S(1)}, f32[8,128]{0,1:T(8,128)},
      f32[2]{0:T(256)S(1)}) tuple(%transposed, %pinned, %early.done, %ahead.done, %staying.done,
      %lifted.done)
}
"""

# The generic async wrapper: `async-start` / `async-done` holding a reduce-scatter and an
# all-to-all (there is no reduce-scatter-start opcode), next to an all-reduce-start. The
# collective is the root of the computation the async-start calls.
HANDWRITTEN_ASYNC_WRAPPED = """\
HloModule handwritten_async_wrapped, is_scheduled=true, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%scatter_body (p: f32[64,16]) -> f32[16,16] {
  %p = f32[64,16]{1,0} parameter(0)
  ROOT %rs = f32[16,16]{1,0} reduce-scatter(%p), channel_id=13, replica_groups={{0,1,2,3}},
      use_global_device_ids=true, dimensions={0}, to_apply=%add
}

%exchange_body (q: f32[64,16]) -> f32[64,16] {
  %q = f32[64,16]{1,0} parameter(0)
  ROOT %a2a = f32[64,16]{1,0} all-to-all(%q), channel_id=15, replica_groups={{0,1,2,3}},
      dimensions={0}
}

ENTRY %main (x: f32[64,16], y: f32[64,16], z: f32[64,16]) -> (f32[16,16], f32[64,16],
      f32[64,16], f32[64,16]) {
  %x = f32[64,16]{1,0} parameter(0)
  %y = f32[64,16]{1,0} parameter(1)
  %z = f32[64,16]{1,0} parameter(2)
  %go.1 = ((f32[64,16]{1,0}), f32[16,16]{1,0}) async-start(%x), calls=%scatter_body
  %go.2 = ((f32[64,16]{1,0}), f32[64,16]{1,0}) async-start(%y), calls=%exchange_body
  %go.3 = f32[64,16]{1,0} all-reduce-start(%z), channel_id=17, replica_groups={{0,1,2,3}},
      use_global_device_ids=true, to_apply=%add
  %sq = f32[64,16]{1,0} multiply(%z, %z)
  %end.2 = f32[64,16]{1,0} async-done(%go.2)
  %neg = f32[64,16]{1,0} negate(%sq)
  %end.1 = f32[16,16]{1,0} async-done(%go.1)
  %end.3 = f32[64,16]{1,0} all-reduce-done(%go.3)
  ROOT %out = (f32[16,16]{1,0}, f32[64,16]{1,0}, f32[64,16]{1,0}, f32[64,16]{1,0}) tuple(%end.1,
      %end.2, %end.3, %neg)
}
"""

# The TPU spelling with two collectives of ONE kind in flight (two collective-permutes, channels
# 21 and 22) that finish in the other order: start p, start q, done q, done p. Only the
# channel_id tells which done ends which start.
HANDWRITTEN_TPU_SAME_KIND = """\
HloModule handwritten_tpu_same_kind, is_scheduled=true, num_partitions=4

%left_begin (a.0: f32[8,128]) -> (f32[8,128], f32[8,128], u32[]) {
  %a.0 = f32[8,128]{1,0:T(8,128)} parameter(0)
  %perm.1 = f32[8,128]{1,0:T(8,128)} collective-permute(%a.0), channel_id=21,
      source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %mark.1 = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}, u32[]{:S(2)})
      custom-call(%perm.1), custom_call_target="AsyncCollectiveStart"
}

%left_end (b.0: f32[8,128], b.1: f32[8,128], b.2: u32[]) -> f32[8,128] {
  %b.0 = f32[8,128]{1,0:T(8,128)} parameter(0)
  %b.1 = f32[8,128]{1,0:T(8,128)} parameter(1)
  %b.2 = u32[]{:S(2)} parameter(2)
  %perm.2 = f32[8,128]{1,0:T(8,128)} collective-permute(%b.0), channel_id=21,
      source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %mark.2 = f32[8,128]{1,0:T(8,128)} custom-call(%b.0, %b.1, %perm.2, %b.2),
      custom_call_target="AsyncCollectiveDone"
}

%right_begin (c.0: f32[8,128]) -> (f32[8,128], f32[8,128], u32[]) {
  %c.0 = f32[8,128]{1,0:T(8,128)} parameter(0)
  %perm.3 = f32[8,128]{1,0:T(8,128)} collective-permute(%c.0), channel_id=22,
      source_target_pairs={{0,3},{1,0},{2,1},{3,2}}
  ROOT %mark.3 = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}, u32[]{:S(2)})
      custom-call(%perm.3), custom_call_target="AsyncCollectiveStart"
}

%right_end (d.0: f32[8,128], d.1: f32[8,128], d.2: u32[]) -> f32[8,128] {
  %d.0 = f32[8,128]{1,0:T(8,128)} parameter(0)
  %d.1 = f32[8,128]{1,0:T(8,128)} parameter(1)
  %d.2 = u32[]{:S(2)} parameter(2)
  %perm.4 = f32[8,128]{1,0:T(8,128)} collective-permute(%d.0), channel_id=22,
      source_target_pairs={{0,3},{1,0},{2,1},{3,2}}
  ROOT %mark.4 = f32[8,128]{1,0:T(8,128)} custom-call(%d.0, %d.1, %perm.4, %d.2),
      custom_call_target="AsyncCollectiveDone"
}

ENTRY %main (u: f32[8,128], v: f32[8,128], s: f32[8,128]) -> (f32[8,128], f32[8,128],
      f32[8,128]) {
  %u = f32[8,128]{1,0:T(8,128)} parameter(0)
  %v = f32[8,128]{1,0:T(8,128)} parameter(1)
  %s = f32[8,128]{1,0:T(8,128)} parameter(2)
  %send.p = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}, u32[]{:S(2)}) fusion(%u),
      kind=kCustom, calls=%left_begin
  %early = f32[8,128]{1,0:T(8,128)} exponential(%s)
  %send.q = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}, u32[]{:S(2)}) fusion(%v),
      kind=kCustom, calls=%right_begin
  %middle = f32[8,128]{1,0:T(8,128)} tanh(%early)
  %q.0 = f32[8,128]{1,0:T(8,128)} get-tuple-element(%send.q), index=0
  %q.1 = f32[8,128]{1,0:T(8,128)} get-tuple-element(%send.q), index=1
  %q.2 = u32[]{:S(2)} get-tuple-element(%send.q), index=2
  %recv.q = f32[8,128]{1,0:T(8,128)} fusion(%q.0, %q.1, %q.2), kind=kCustom, calls=%right_end
  %late = f32[8,128]{1,0:T(8,128)} negate(%middle)
  %p.0 = f32[8,128]{1,0:T(8,128)} get-tuple-element(%send.p), index=0
  %p.1 = f32[8,128]{1,0:T(8,128)} get-tuple-element(%send.p), index=1
  %p.2 = u32[]{:S(2)} get-tuple-element(%send.p), index=2
  %recv.p = f32[8,128]{1,0:T(8,128)} fusion(%p.0, %p.1, %p.2), kind=kCustom, calls=%left_end
  ROOT %out = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)})
      tuple(%recv.p, %recv.q, %late)
}
"""

# Copies of parameters in both directions: parameter(1) lives in S(1) and its copy-start EVICTS
# it to the default memory (S(1) only in the source, the tuple's second element); parameter(0)
# is prefetched into S(1). Only the destination (the first element) says where data goes.
HANDWRITTEN_EVICTION = """HloModule handwritten_eviction, is_scheduled=true

ENTRY %main (a: f32[8,128], b: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %a = f32[8,128]{1,0:T(8,128)} parameter(0)
  %b = f32[8,128]{1,0:T(8,128)S(1)} parameter(1)
  %out.b = (f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)S(1)}, u32[]{:S(2)}) copy-start(%b)
  %in.a = (f32[8,128]{1,0:T(8,128)S(1)}, f32[8,128]{1,0:T(8,128)}, u32[]{:S(2)}) copy-start(%a)
  %out.b.done = f32[8,128]{1,0:T(8,128)} copy-done(%out.b)
  %in.a.done = f32[8,128]{1,0:T(8,128)S(1)} copy-done(%in.a)
  ROOT %out = (f32[8,128]{1,0:T(8,128)S(1)}, f32[8,128]{1,0:T(8,128)}) tuple(%in.a.done,
      %out.b.done)
}
"""


# Hand-written modules the reading tasks are checked on, next to the recordings.
HANDWRITTEN = {
    "handwritten": HANDWRITTEN_ASYNC,
    "handwritten_tpu": HANDWRITTEN_TPU,
    "handwritten_prefetch": HANDWRITTEN_PREFETCH,
    "handwritten_async_wrapped": HANDWRITTEN_ASYNC_WRAPPED,
    "handwritten_tpu_same_kind": HANDWRITTEN_TPU_SAME_KIND,
    "handwritten_eviction": HANDWRITTEN_EVICTION,
}


# ---- drawn cases: modules and shapes made from a seed, facts the recordings never vary --------

COLLECTIVE_KINDS = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)
# Every element type a collective can move: sub-byte, byte-wide and 8-byte ones, not only floats.
COLLECTIVE_DTYPES = (
    "pred", "s4", "u4", "s8", "u8", "s16", "u16", "f16", "bf16", "s32", "u32", "f32", "s64",
    "f64", "c64",
)  # fmt: skip
FIRST_TILES = ("T(8,128)", "T(4,128)", "T(2,128)", "T(16,128)", "T(128)", "T(256)", "T(1024)")
LATER_TILES = ("", "(2,1)", "(4,1)", "(8,1)", "(128)")
THREE_SIZE_TILES = ("T(2,8,128)", "T(4,8,128)", "T(3,2,128)")  # over the three most minor
_GROUP = 4  # devices in the one replica group


def _layout(rng: random.Random, rank: int, tiled: bool) -> str:
    order = list(range(rank))
    rng.shuffle(order)
    minor_to_major = ",".join(str(d) for d in order)
    if not rank:
        return ""  # a scalar: XLA prints f32[], no layout and so no tile
    if not tiled:
        return f"{{{minor_to_major}}}"
    tiles = [t for t in FIRST_TILES if t.count(",") < rank]
    return f"{{{minor_to_major}:{rng.choice(tiles)}{rng.choice(LATER_TILES)}}}"


def _dims(rng: random.Random, rank: int, dtype: str) -> list[int]:
    if not rank:
        return []
    dims = [rng.randint(1, 40) * _GROUP] + [rng.randint(1, 300) for _ in range(rank - 1)]
    if dtype in ("s4", "u4"):
        dims[-1] += dims[-1] % 2  # whole bytes
    return dims


def _op(name: str, operand: str, collective: str) -> str:
    """The instruction `name` of a collective text whose operand is `%OPERAND`."""
    return f"%{name} = " + collective.replace("%OPERAND", f"%{operand}")


def collectives_module(rng: random.Random) -> str:
    """A module of collectives drawn from `rng`, stratified: every kind three times, each of
    the 15 element types once (in a drawn order), odd shapes, each kind's first and last
    collective under a tiled layout (the tiles pad; the data does not) and its second under a
    plain one, each kind's first collective in ENTRY without a channel_id (one of them twice,
    the same shape on the same operand: two collectives), one collective in a
    called computation, one in a while loop's body, and one channel copied into two
    computations (one collective); one all-reduce, all-to-all or collective-permute outside
    the loop, of a whole-byte type, is a scalar (a loss: one element, no dimension, no tile)."""
    reducers: set[str] = set()
    computations: list[str] = []
    params: list[str] = []
    entry: list[str] = []
    outputs: list[tuple[str, str]] = []  # (name, shape text)
    channel = 0
    kinds = list(COLLECTIVE_KINDS) * 3
    rng.shuffle(kinds)
    dtypes = list(COLLECTIVE_DTYPES)
    rng.shuffle(dtypes)
    seen: dict[str, int] = {}  # collectives of each kind so far
    twinned = rng.choice(COLLECTIVE_KINDS)
    in_entry: set[str] = set()  # kinds with a collective in ENTRY so far
    places = ["entry"] * len(kinds)
    same_shape = [
        k
        for k, kind in enumerate(kinds)
        if kind in ("all-reduce", "collective-permute", "all-to-all")
    ]
    places[same_shape[0]] = "while"
    # the first collective of each kind left in ENTRY stays there (it goes without a channel_id)
    firsts = {
        next(k for k, c in enumerate(kinds) if c == kind and places[k] == "entry")
        for kind in COLLECTIVE_KINDS
    }
    for moved in ("call", "copied"):
        free = [k for k in range(len(kinds)) if places[k] == "entry" and k not in firsts]
        places[rng.choice(free)] = moved
    scalar = rng.choice([k for k in same_shape[1:] if dtypes[k] not in ("s4", "u4")])
    for k, (kind, place, dtype) in enumerate(zip(kinds, places, dtypes, strict=True)):
        rank = 0 if k == scalar else rng.randint(1, 3)
        dims = _dims(rng, rank, dtype)
        layout = _layout(rng, rank, tiled=seen.get(kind, 0) != 1)
        seen[kind] = seen.get(kind, 0) + 1
        result = list(dims)
        if kind == "all-gather":
            result[0] *= _GROUP
        elif kind == "reduce-scatter":
            result[0] //= _GROUP
        operand_shape = f"{dtype}[{','.join(map(str, dims))}]{layout}"
        result_shape = f"{dtype}[{','.join(map(str, result))}]{layout}"
        bare = f"{dtype}[{','.join(map(str, dims))}]"
        first_in_entry = place == "entry" and kind not in in_entry
        if place == "entry":
            in_entry.add(kind)
        if not first_in_entry:
            channel += 1
            groups = (
                f"channel_id={channel}, replica_groups={{{{0,1,2,3}}}}, use_global_device_ids=true"
            )
        else:
            groups = "replica_groups={}"
        extra = {
            "all-gather": ", dimensions={0}",
            "all-to-all": ", dimensions={0}",
            "reduce-scatter": f", dimensions={{0}}, to_apply=%sum.{dtype}",
            "all-reduce": f", to_apply=%sum.{dtype}",
            "collective-permute": "",
        }[kind]
        if kind == "collective-permute":
            groups = groups.replace(
                "replica_groups={{0,1,2,3}}, use_global_device_ids=true",
                "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}",
            ).replace("replica_groups={}", "source_target_pairs={{0,1},{1,0}}")
        if kind == "all-to-all":
            groups = groups.replace(", use_global_device_ids=true", "")
        if kind in ("all-reduce", "reduce-scatter"):
            reducers.add(dtype)

        collective = f"{result_shape} {kind}(%OPERAND), {groups}{extra}"

        params.append(f"arg{k}: {bare}")
        entry.append(f"  %arg{k} = {operand_shape} parameter({k})")
        if place == "call":
            computations.append(
                f"%moved{k} (inner{k}: {bare}) -> {result_shape.split('{')[0]} {{\n"
                f"  %inner{k} = {operand_shape} parameter(0)\n"
                f"  ROOT {_op(f'coll{k}', f'inner{k}', collective)}\n}}\n"
            )
            entry.append(f"  %call{k} = {result_shape} call(%arg{k}), to_apply=%moved{k}")
            outputs.append((f"call{k}", result_shape))
        elif place == "while":
            state = f"(s32[], {bare})"
            computations.append(
                f"%loop{k} (state{k}: {state}) -> {state} {{\n"
                f"  %state{k} = (s32[], {operand_shape}) parameter(0)\n"
                f"  %iter{k} = s32[] get-tuple-element(%state{k}), index=0\n"
                f"  %val{k} = {operand_shape} get-tuple-element(%state{k}), index=1\n"
                f"  {_op(f'coll{k}', f'val{k}', collective)}\n"
                f"  %one{k} = s32[] constant(1)\n"
                f"  %next{k} = s32[] add(%iter{k}, %one{k})\n"
                f"  ROOT %carry{k} = (s32[], {result_shape}) tuple(%next{k}, %coll{k})\n}}\n"
            )
            computations.append(
                f"%until{k} (ask{k}: {state}) -> pred[] {{\n"
                f"  %ask{k} = (s32[], {operand_shape}) parameter(0)\n"
                f"  %count{k} = s32[] get-tuple-element(%ask{k}), index=0\n"
                f"  %three{k} = s32[] constant(3)\n"
                f"  ROOT %more{k} = pred[] compare(%count{k}, %three{k}), direction=LT\n}}\n"
            )
            entry.append(f"  %zero{k} = s32[] constant(0)")
            entry.append(f"  %init{k} = (s32[], {operand_shape}) tuple(%zero{k}, %arg{k})")
            entry.append(
                f"  %loop_out{k} = (s32[], {operand_shape}) while(%init{k}), "
                f"condition=%until{k}, body=%loop{k}"
            )
            entry.append(f"  %out{k} = {result_shape} get-tuple-element(%loop_out{k}), index=1")
            outputs.append((f"out{k}", result_shape))
        else:
            entry.append(f"  {_op(f'coll{k}', f'arg{k}', collective)}")
            outputs.append((f"coll{k}", result_shape))
            if first_in_entry and kind == twinned:  # the same collective again, no channel_id
                entry.append(f"  {_op(f'twin{k}', f'arg{k}', collective)}")
                outputs.append((f"twin{k}", result_shape))
            if place == "copied":
                computations.append(
                    f"%copied{k} (copy_in{k}: {bare}) -> {result_shape.split('{')[0]} {{\n"
                    f"  %copy_in{k} = {operand_shape} parameter(0)\n"
                    f"  ROOT {_op(f'copy_coll{k}', f'copy_in{k}', collective)}\n}}\n"
                )
                entry.append(f"  %again{k} = {result_shape} call(%arg{k}), to_apply=%copied{k}")
                outputs.append((f"again{k}", result_shape))
    for dtype in sorted(reducers):
        combine = "or" if dtype == "pred" else "add"
        computations.insert(
            0,
            f"%sum.{dtype} (a.{dtype}: {dtype}[], b.{dtype}: {dtype}[]) -> {dtype}[] {{\n"
            f"  %a.{dtype} = {dtype}[] parameter(0)\n  %b.{dtype} = {dtype}[] parameter(1)\n"
            f"  ROOT %r.{dtype} = {dtype}[] {combine}(%a.{dtype}, %b.{dtype})\n}}\n",
        )
    root_shape = ", ".join(s for _, s in outputs)
    entry.append(f"  ROOT %all = ({root_shape}) tuple({', '.join('%' + n for n, _ in outputs)})")
    result_type = ", ".join(s.split("{")[0] for _, s in outputs)
    return (
        "HloModule collectives, num_partitions=4\n\n"
        + "\n".join(computations)
        + f"\nENTRY %main ({', '.join(params)}) -> ({result_type}) {{\n"
        + "\n".join(entry)
        + "\n}\n"
    )


# The elementwise op each matmul fusion holds; the two collectives that reduce call an add, so
# their fusions hold an add of their own (reducer or not, the answer is the same).
_EPILOGUES = {
    "all-gather": "tanh(%product{k})",
    "all-reduce": "add(%product{k}, %product{k})",
    "reduce-scatter": "add(%product{k}, %product{k})",
    "all-to-all": "sqrt(%product{k})",
    "collective-permute": "abs(%product{k})",
}


def fused_collectives_module() -> str:
    """One matmul fusion per collective kind, each holding the convolution, a collective of
    its result (as TPU overlap fusions hold a copy of the collective they hide) and one
    elementwise op; a last fusion holds a collective and an add but no matmul."""
    computations, entry, outputs = [], [], []
    for k, kind in enumerate(COLLECTIVE_KINDS):
        rows = {"all-gather": 64, "reduce-scatter": 4}.get(kind, 16)
        extra = {
            "all-gather": "channel_id={c}, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}",
            "all-reduce": "channel_id={c}, replica_groups={{{{0,1,2,3}}}}, to_apply=%plus",
            "reduce-scatter": (
                "channel_id={c}, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}, to_apply=%plus"
            ),
            "all-to-all": "channel_id={c}, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}",
            "collective-permute": "channel_id={c}, source_target_pairs={{{{0,1}},{{1,0}}}}",
        }[kind].format(c=k + 1)
        result = f"(f32[16,16]{{1,0}}, f32[{rows},16]{{1,0}})"
        computations.append(
            f"%matmul{k} (lhs{k}: f32[16,32], rhs{k}: f32[32,16]) -> "
            f"(f32[16,16], f32[{rows},16]) {{\n"
            f"  %lhs{k} = f32[16,32]{{1,0}} parameter(0)\n"
            f"  %rhs{k} = f32[32,16]{{1,0}} parameter(1)\n"
            f"  %product{k} = f32[16,16]{{1,0}} convolution(%lhs{k}, %rhs{k}), "
            "dim_labels=bf_io->bf\n"
            f"  %moved{k} = f32[{rows},16]{{1,0}} {kind}(%product{k}), {extra}\n"
            f"  %epilogue{k} = f32[16,16]{{1,0}} {_EPILOGUES[kind].format(k=k)}\n"
            f"  ROOT %both{k} = {result} tuple(%epilogue{k}, %moved{k})\n}}\n"
        )
        entry.append(f"  %layer{k} = {result} fusion(%x, %w), kind=kOutput, calls=%matmul{k}")
        outputs.append((f"layer{k}", result))
    computations.append(
        "%summed (v0: f32[16,32]) -> f32[16,32] {\n"
        "  %v0 = f32[16,32]{1,0} parameter(0)\n"
        "  %total = f32[16,32]{1,0} all-reduce(%v0), channel_id=9, replica_groups={{0,1,2,3}}, "
        "to_apply=%plus\n"
        "  ROOT %twice = f32[16,32]{1,0} add(%total, %total)\n}\n"
    )
    entry.append("  %no_matmul = f32[16,32]{1,0} fusion(%x), kind=kLoop, calls=%summed")
    outputs.append(("no_matmul", "f32[16,32]{1,0}"))
    shapes = ", ".join(s for _, s in outputs)
    return (
        "HloModule fused_collectives, num_partitions=4\n\n"
        "%plus (a: f32[], b: f32[]) -> f32[] {\n"
        "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
        "  ROOT %ab = f32[] add(%a, %b)\n}\n\n"
        + "\n".join(computations)
        + "\nENTRY %main (x: f32[16,32], w: f32[32,16]) -> ("
        + ", ".join(s.replace("{1,0}", "") for _, s in outputs)
        + ") {\n  %x = f32[16,32]{1,0} parameter(0)\n  %w = f32[32,16]{1,0} parameter(1)\n"
        + "\n".join(entry)
        + f"\n  ROOT %out = ({shapes}) tuple({', '.join('%' + n for n, _ in outputs)})\n}}\n"
    )


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
    # XLA's parser takes a mesh that names no axis (newer XLA refuses to build one, since each
    # group would hold one device): along no axis every device is alone, unlike `{}`
    "mesh no axis": "mesh['a'=2,'b'=4] {}",
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
    (2, 8, 8, (2, 2)),
    (64, 1, 128, (2, 2)),
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
