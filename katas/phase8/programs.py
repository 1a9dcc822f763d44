"""The programs phase 8's tests lower and export, and what `katas show` compiles per task.

Argument specs (`jax.ShapeDtypeStruct`: nothing runs), the op bank (each program uses the op of
its key exactly as often in StableHLO as XLA's conversion puts its opcode in HLO), StableHLO that
JAX does not emit written by hand, the census programs (ops nested in regions, several
functions), and the functions the export tasks export.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.programs import given

FEATURES, OUT = 16, 4


def spec(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


F = spec((8, 4))


INTS = spec((8, 4), jnp.int32)


INDEX = spec((), jnp.int32)


C = spec((8, 4), jnp.complex64)


# ---- the op bank: each program uses the op named by its key exactly as often in StableHLO as
# ---- XLA's conversion puts its opcode in HLO

RENAMED = {  # op: (program, specs)
    "stablehlo.dot_general": (lambda x, w: x @ w, (F, spec((4, 3)))),
    "stablehlo.broadcast_in_dim": (lambda b: lax.broadcast_in_dim(b, (8, 4), (1,)), (spec((4,)),)),
    "stablehlo.case": (lambda x, i: lax.cond(i > 0, jnp.sin, jnp.cos, x), (F, INDEX)),
    "stablehlo.optimization_barrier": (  # what jax.checkpoint (remat) leaves in a gradient
        jax.grad(lambda x: jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)))(x).sum()),
        (F,),
    ),
}


def unary(x):  # one use of each op; XLA's conversion keeps each as one instruction
    return (
        jnp.exp(x),
        lax.tanh(x),
        lax.sin(x),
        lax.cos(x),
        lax.tan(x),
        lax.log(x),
        lax.sqrt(x),
        lax.rsqrt(x),
        lax.cbrt(x),
        lax.abs(x),
        lax.sign(x),
        lax.floor(x),
        lax.neg(x),
        jnp.expm1(x),
        jnp.log1p(x),
        jnp.isfinite(x),
        x.T,
        x.reshape(4, 8),
        lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
        lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
        lax.bitcast_convert_type(x, jnp.int32),
        lax.reduce_precision(x, 5, 10),
        lax.rev(x, (0,)),
        x[1:5, ::2],
    )


def binary(x, y):
    return (
        x + y,
        x - y,
        x * y,
        x / y,
        lax.rem(x, y),
        lax.pow(x, y),
        lax.max(x, y),
        lax.min(x, y),
        lax.atan2(x, y),
        x < y,
        jnp.concatenate([x, y]),
        lax.complex(x, y),
    )


def integer(a, b):
    return (
        lax.bitwise_and(a, b),
        lax.bitwise_or(a, b),
        lax.bitwise_xor(a, b),
        lax.bitwise_not(a),
        lax.population_count(a),
        lax.clz(b),
        lax.shift_left(a, b),
        lax.shift_right_logical(a, b),
        lax.shift_right_arithmetic(a, b),
    )


UNARY, BINARY, INTEGER = (unary, (F,)), (binary, (F, F)), (integer, (INTS, INTS))


RESPELLED = {
    "stablehlo.dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 4)), (F, INDEX)),
    "stablehlo.dynamic_update_slice": (
        lambda x, i: lax.dynamic_update_slice(x, jnp.zeros((2, 4)), (i, 0)),
        (F, INDEX),
    ),
    "stablehlo.exponential_minus_one": UNARY,
    "stablehlo.count_leading_zeros": INTEGER,
    "stablehlo.round_nearest_afz": UNARY,
    "stablehlo.round_nearest_even": UNARY,
    "stablehlo.log_plus_one": UNARY,
    "stablehlo.is_finite": UNARY,
    "stablehlo.shift_left": INTEGER,
    "stablehlo.shift_right_logical": INTEGER,
    "stablehlo.shift_right_arithmetic": INTEGER,
    "stablehlo.bitcast_convert": UNARY,
    "stablehlo.reduce_window": (
        lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID"),
        (F,),
    ),
    "stablehlo.reduce_precision": UNARY,
    "stablehlo.rng_bit_generator": (
        lambda k: lax.rng_bit_generator(k, (4,))[1],
        (spec((4,), jnp.uint32),),
    ),
    "stablehlo.custom_call": (lambda x: jnp.linalg.cholesky(x @ x.T + 8 * jnp.eye(8)), (F,)),
    "stablehlo.select_and_scatter": (
        jax.grad(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID").sum()),
        (F,),
    ),
}


KEPT = {
    **{
        f"stablehlo.{op}": UNARY
        for op in (
            "exponential",
            "tanh",
            "sine",
            "cosine",
            "tan",
            "log",
            "sqrt",
            "rsqrt",
            "cbrt",
            "abs",
            "sign",
            "floor",
            "negate",
            "transpose",
            "reshape",
            "reverse",
            "slice",
        )
    },
    **{
        f"stablehlo.{op}": BINARY
        for op in (
            "add",
            "subtract",
            "multiply",
            "divide",
            "remainder",
            "power",
            "maximum",
            "minimum",
            "atan2",
            "compare",
            "concatenate",
            "complex",
        )
    },
    **{f"stablehlo.{op}": INTEGER for op in ("and", "or", "xor", "not", "popcnt")},
    "stablehlo.while": (
        lambda x: lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c * 2, x),
        (F,),
    ),
    "stablehlo.reduce": (lambda x: x.sum(0), (F,)),
    "stablehlo.select": (lax.select, (spec((8, 4), jnp.bool_), F, F)),
    "stablehlo.clamp": (lambda x: lax.clamp(0.0, x, 1.0), (F,)),
    "stablehlo.convert": (lambda x: x.astype(jnp.int32), (F,)),
    "stablehlo.pad": (lambda x: lax.pad(x, 0.0, [(1, 2, 0), (0, 0, 1)]), (F,)),
    "stablehlo.gather": (lambda x, i: x[jnp.array([0, 2]) + i], (F, INDEX)),
    "stablehlo.scatter": (lambda x, i: x.at[jnp.array([0, 2]) + i].add(1.0), (F, INDEX)),
    "stablehlo.iota": (lambda x: x + lax.iota(jnp.float32, 4), (F,)),
    "stablehlo.sort": (lambda x: jnp.sort(x, axis=0), (F,)),
    "stablehlo.convolution": (
        lambda x, k: lax.conv(x, k, (1, 1), "SAME"),
        (spec((1, 2, 8, 8)), spec((3, 2, 3, 3))),
    ),
    "stablehlo.real": (lambda z: (jnp.real(z), jnp.imag(z), jnp.fft.fft(z)), (C,)),
    "stablehlo.constant": (lambda x: x + jnp.array([1.0, 2.0, 3.0, 4.0]), (F,)),
}


KEPT["stablehlo.imag"] = KEPT["stablehlo.fft"] = KEPT["stablehlo.real"]


# StableHLO that JAX's lowering does not emit, written by hand and converted by XLA itself.
T = "tensor<4xf32>"


HAND_WRITTEN = {
    "stablehlo.if": f"""
func.func @main(%p: tensor<i1>, %x: {T}) -> {T} {{
  %r = "stablehlo.if"(%p) ({{ stablehlo.return %x : {T} }}, {{
    %b = stablehlo.negate %x : {T}
    stablehlo.return %b : {T} }}) : (tensor<i1>) -> {T}
  return %r : {T} }}""",
    "stablehlo.create_token": f"""
func.func @main(%x: {T}) -> ({T}, !stablehlo.token) {{
  %t = stablehlo.create_token : !stablehlo.token
  return %x, %t : {T}, !stablehlo.token }}""",
    "stablehlo.composite": f"""
func.func @main(%x: {T}) -> {T} {{
  %r = stablehlo.composite "my.op" %x {{decomposition = @my_op}} : ({T}) -> {T}
  return %r : {T} }}
func.func private @my_op(%x: {T}) -> {T} {{
  %n = stablehlo.negate %x : {T}
  return %n : {T} }}""",
    "stablehlo.after_all": f"""
func.func @main(%x: {T}, %a: !stablehlo.token, %b: !stablehlo.token)
    -> ({T}, !stablehlo.token) {{
  %t = stablehlo.after_all %a, %b : !stablehlo.token
  return %x, %t : {T}, !stablehlo.token }}""",
    "stablehlo.map": f"""
func.func @main(%x: {T}, %y: {T}) -> {T} {{
  %m = "stablehlo.map"(%x, %y) ({{ ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32> }}) {{dimensions = array<i64: 0>}}
      : ({T}, {T}) -> {T}
  return %m : {T} }}""",
    "stablehlo.partition_id": """
func.func @main() -> tensor<ui32> {
  %p = stablehlo.partition_id : tensor<ui32>
  return %p : tensor<ui32> }""",
    "stablehlo.replica_id": """
func.func @main() -> tensor<ui32> {
  %r = stablehlo.replica_id : tensor<ui32>
  return %r : tensor<ui32> }""",
    "stablehlo.batch_norm_inference": """
func.func @main(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s)
      {epsilon = 1.0e-5 : f32, feature_index = 1 : i64}
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> tensor<2x4xf32>
  return %y : tensor<2x4xf32> }""",
    "stablehlo.all_reduce": f"""
func.func @main(%x: {T}) -> {T} {{
  %r = "stablehlo.all_reduce"(%x) ({{ ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32> }}) {{replica_groups = dense<[[0]]> : tensor<1x1xi64>}}
      : ({T}) -> {T}
  return %r : {T} }}""",
    "stablehlo.dot": f"""
func.func @main(%x: {T}) -> tensor<f32> {{
  %d = stablehlo.dot %x, %x : ({T}, {T}) -> tensor<f32>
  return %d : tensor<f32> }}""",
    # the dialect's one name written with hyphens (a legacy op): XLA makes it an all-reduce
    "stablehlo.cross-replica-sum": f"""
func.func @main(%x: {T}) -> {T} {{
  %r = "stablehlo.cross-replica-sum"(%x) {{replica_groups = dense<[[0]]> : tensor<1x1xi64>}}
      : ({T}) -> {T}
  return %r : {T} }}""",
}


# ---- fresh draws for hlo_opcode: any op of the dialect, converted by XLA itself ----------------
#
# Every op the StableHLO dialect registers (MLIR's own op classes, not a list kept here), put in a
# tiny module with the op under test at loc("probe"). XLA names the instructions it converts that
# op into after the location, so the test reads the expected opcode from XLA's conversion. Ops
# with attributes, regions, tokens or tuples have a module below; the rest are tried element-wise
# on float and integer tensors. An op no module instantiates (or whose conversion XLA folds away)
# is not drawn.


def dialect_ops() -> list[str]:
    """Every op name the StableHLO dialect registers, from MLIR's Python op classes."""
    from jax.extend.mlir.dialects import stablehlo

    return sorted(
        {
            cls.OPERATION_NAME
            for cls in vars(stablehlo).values()
            if isinstance(cls, type) and isinstance(getattr(cls, "OPERATION_NAME", None), str)
        }
    )


_T = "tensor<4xf32>"
_M = "tensor<2x4xf32>"
_ADD_BODY = """{ ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32> }"""
_ADD = f"({_ADD_BODY})"

PROBE_MODULES = {
    "stablehlo.after_all": f"""
func.func @main(%x: {_T}, %a: !stablehlo.token, %b: !stablehlo.token) -> ({_T}, !stablehlo.token) {{
  %t = stablehlo.after_all %a, %b : !stablehlo.token loc("probe")
  return %x, %t : {_T}, !stablehlo.token }}""",
    "stablehlo.create_token": f"""
func.func @main(%x: {_T}) -> ({_T}, !stablehlo.token) {{
  %t = stablehlo.create_token : !stablehlo.token loc("probe")
  return %x, %t : {_T}, !stablehlo.token }}""",
    "stablehlo.all_gather": f"""
func.func @main(%x: {_M}) -> tensor<2x4xf32> {{
  %r = "stablehlo.all_gather"(%x) {{all_gather_dim = 0 : i64, replica_groups = dense<[[0]]>
      : tensor<1x1xi64>}} : ({_M}) -> {_M} loc("probe")
  return %r : {_M} }}""",
    "stablehlo.all_reduce": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = "stablehlo.all_reduce"(%x) {_ADD} {{replica_groups = dense<[[0]]> : tensor<1x1xi64>}}
      : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.cross-replica-sum": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = "stablehlo.cross-replica-sum"(%x) {{replica_groups = dense<[[0]]> : tensor<1x1xi64>}}
      : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.reduce_scatter": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = "stablehlo.reduce_scatter"(%x) {_ADD} {{scatter_dimension = 0 : i64,
      replica_groups = dense<[[0]]> : tensor<1x1xi64>}} : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.all_to_all": f"""
func.func @main(%x: {_M}) -> {_M} {{
  %r = "stablehlo.all_to_all"(%x) {{split_dimension = 1 : i64, concat_dimension = 1 : i64,
      split_count = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>}} : ({_M}) -> {_M}
      loc("probe")
  return %r : {_M} }}""",
    "stablehlo.collective_permute": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = "stablehlo.collective_permute"(%x) {{source_target_pairs = dense<[[0, 0]]>
      : tensor<1x2xi64>}} : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.collective_broadcast": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = "stablehlo.collective_broadcast"(%x) {{replica_groups = dense<[[0]]> : tensor<1x1xi64>}}
      : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.batch_norm_inference": f"""
func.func @main(%x: {_M}, %s: {_T}) -> {_M} {{
  %y = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) {{epsilon = 1.0e-5 : f32,
      feature_index = 1 : i64}} : ({_M}, {_T}, {_T}, {_T}, {_T}) -> {_M} loc("probe")
  return %y : {_M} }}""",
    "stablehlo.batch_norm_training": f"""
func.func @main(%x: {_M}, %s: {_T}) -> ({_M}, {_T}, {_T}) {{
  %y:3 = "stablehlo.batch_norm_training"(%x, %s, %s) {{epsilon = 1.0e-5 : f32,
      feature_index = 1 : i64}} : ({_M}, {_T}, {_T}) -> ({_M}, {_T}, {_T}) loc("probe")
  return %y#0, %y#1, %y#2 : {_M}, {_T}, {_T} }}""",
    "stablehlo.batch_norm_grad": f"""
func.func @main(%x: {_M}, %s: {_T}) -> ({_M}, {_T}, {_T}) {{
  %y:3 = "stablehlo.batch_norm_grad"(%x, %s, %s, %s, %x) {{epsilon = 1.0e-5 : f32,
      feature_index = 1 : i64}} : ({_M}, {_T}, {_T}, {_T}, {_M}) -> ({_M}, {_T}, {_T}) loc("probe")
  return %y#0, %y#1, %y#2 : {_M}, {_T}, {_T} }}""",
    "stablehlo.broadcast": f"""
func.func @main(%x: {_T}) -> tensor<3x4xf32> {{
  %r = "stablehlo.broadcast"(%x) {{broadcast_sizes = array<i64: 3>}} : ({_T}) ->
      tensor<3x4xf32> loc("probe")
  return %r : tensor<3x4xf32> }}""",
    "stablehlo.broadcast_in_dim": f"""
func.func @main(%x: {_T}) -> tensor<4x3xf32> {{
  %r = stablehlo.broadcast_in_dim %x, dims = [0] : ({_T}) -> tensor<4x3xf32> loc("probe")
  return %r : tensor<4x3xf32> }}""",
    "stablehlo.case": f"""
func.func @main(%i: tensor<i32>, %x: {_T}) -> {_T} {{
  %r = "stablehlo.case"(%i) ({{ stablehlo.return %x : {_T} }}, {{
    %b = stablehlo.negate %x : {_T}
    stablehlo.return %b : {_T} }}) : (tensor<i32>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.if": f"""
func.func @main(%p: tensor<i1>, %x: {_T}) -> {_T} {{
  %r = "stablehlo.if"(%p) ({{ stablehlo.return %x : {_T} }}, {{
    %b = stablehlo.negate %x : {_T}
    stablehlo.return %b : {_T} }}) : (tensor<i1>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.cholesky": """
func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %r = stablehlo.cholesky %x, lower = true : tensor<3x3xf32> loc("probe")
  return %r : tensor<3x3xf32> }""",
    "stablehlo.triangular_solve": """
func.func @main(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true,
      unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>}
      : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32> loc("probe")
  return %r : tensor<3x2xf32> }""",
    "stablehlo.compare": f"""
func.func @main(%x: {_T}, %y: {_T}) -> tensor<4xi1> {{
  %r = stablehlo.compare LT, %x, %y : ({_T}, {_T}) -> tensor<4xi1> loc("probe")
  return %r : tensor<4xi1> }}""",
    "stablehlo.complex": f"""
func.func @main(%x: {_T}, %y: {_T}) -> tensor<4xcomplex<f32>> {{
  %r = stablehlo.complex %x, %y : tensor<4xcomplex<f32>> loc("probe")
  return %r : tensor<4xcomplex<f32>> }}""",
    "stablehlo.real": f"""
func.func @main(%z: tensor<4xcomplex<f32>>) -> {_T} {{
  %r = stablehlo.real %z : (tensor<4xcomplex<f32>>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.imag": f"""
func.func @main(%z: tensor<4xcomplex<f32>>) -> {_T} {{
  %r = stablehlo.imag %z : (tensor<4xcomplex<f32>>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.fft": """
func.func @main(%z: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %r = stablehlo.fft %z, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) ->
      tensor<4xcomplex<f32>> loc("probe")
  return %r : tensor<4xcomplex<f32>> }""",
    "stablehlo.composite": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = stablehlo.composite "my.op" %x {{decomposition = @my_op}} : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}
func.func private @my_op(%x: {_T}) -> {_T} {{
  %n = stablehlo.negate %x : {_T}
  return %n : {_T} }}""",
    "stablehlo.concatenate": f"""
func.func @main(%x: {_T}, %y: {_T}) -> tensor<8xf32> {{
  %r = stablehlo.concatenate %x, %y, dim = 0 : ({_T}, {_T}) -> tensor<8xf32> loc("probe")
  return %r : tensor<8xf32> }}""",
    "stablehlo.constant": f"""
func.func @main() -> {_T} {{
  %r = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.convert": f"""
func.func @main(%x: {_T}) -> tensor<4xi32> {{
  %r = stablehlo.convert %x : ({_T}) -> tensor<4xi32> loc("probe")
  return %r : tensor<4xi32> }}""",
    "stablehlo.bitcast_convert": f"""
func.func @main(%x: {_T}) -> tensor<4xi32> {{
  %r = stablehlo.bitcast_convert %x : ({_T}) -> tensor<4xi32> loc("probe")
  return %r : tensor<4xi32> }}""",
    "stablehlo.reduce_precision": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = stablehlo.reduce_precision %x, format = e5m2 : {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.custom_call": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = stablehlo.custom_call @my_target(%x) : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.dot": f"""
func.func @main(%x: {_T}) -> tensor<f32> {{
  %d = stablehlo.dot %x, %x : ({_T}, {_T}) -> tensor<f32> loc("probe")
  return %d : tensor<f32> }}""",
    "stablehlo.dot_general": f"""
func.func @main(%x: {_M}, %y: tensor<4x3xf32>) -> tensor<2x3xf32> {{
  %d = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : ({_M}, tensor<4x3xf32>) ->
      tensor<2x3xf32> loc("probe")
  return %d : tensor<2x3xf32> }}""",
    "stablehlo.dynamic_slice": f"""
func.func @main(%x: {_M}, %i: tensor<i32>) -> tensor<1x4xf32> {{
  %r = stablehlo.dynamic_slice %x, %i, %i, sizes = [1, 4] : ({_M}, tensor<i32>, tensor<i32>) ->
      tensor<1x4xf32> loc("probe")
  return %r : tensor<1x4xf32> }}""",
    "stablehlo.dynamic_update_slice": f"""
func.func @main(%x: {_M}, %u: tensor<1x4xf32>, %i: tensor<i32>) -> {_M} {{
  %r = stablehlo.dynamic_update_slice %x, %u, %i, %i : ({_M}, tensor<1x4xf32>, tensor<i32>,
      tensor<i32>) -> {_M} loc("probe")
  return %r : {_M} }}""",
    "stablehlo.get_dimension_size": f"""
func.func @main(%x: {_M}) -> tensor<i32> {{
  %r = stablehlo.get_dimension_size %x, dim = 1 : ({_M}) -> tensor<i32> loc("probe")
  return %r : tensor<i32> }}""",
    "stablehlo.tuple": f"""
func.func @main(%x: {_T}, %y: {_M}) -> tuple<{_T}, {_M}> {{
  %r = stablehlo.tuple %x, %y : tuple<{_T}, {_M}> loc("probe")
  return %r : tuple<{_T}, {_M}> }}""",
    "stablehlo.get_tuple_element": f"""
func.func @main(%t: tuple<{_T}, {_M}>) -> {_M} {{
  %r = stablehlo.get_tuple_element %t[1] : (tuple<{_T}, {_M}>) -> {_M} loc("probe")
  return %r : {_M} }}""",
    "stablehlo.infeed": f"""
func.func @main(%t: !stablehlo.token) -> ({_T}, !stablehlo.token) {{
  %r:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> ({_T}, !stablehlo.token) loc("probe")
  return %r#0, %r#1 : {_T}, !stablehlo.token }}""",
    "stablehlo.outfeed": f"""
func.func @main(%x: {_T}, %t: !stablehlo.token) -> !stablehlo.token {{
  %r = "stablehlo.outfeed"(%x, %t) : ({_T}, !stablehlo.token) -> !stablehlo.token loc("probe")
  return %r : !stablehlo.token }}""",
    "stablehlo.send": f"""
func.func @main(%x: {_T}, %t: !stablehlo.token) -> !stablehlo.token {{
  %r = "stablehlo.send"(%x, %t) {{channel_handle = #stablehlo.channel_handle<handle = 1,
      type = 2>, is_host_transfer = true}} : ({_T}, !stablehlo.token) ->
      !stablehlo.token loc("probe")
  return %r : !stablehlo.token }}""",
    "stablehlo.recv": f"""
func.func @main(%t: !stablehlo.token) -> ({_T}, !stablehlo.token) {{
  %r:2 = "stablehlo.recv"(%t) {{channel_handle = #stablehlo.channel_handle<handle = 1,
      type = 3>, is_host_transfer = true}} : (!stablehlo.token) -> ({_T},
      !stablehlo.token) loc("probe")
  return %r#0, %r#1 : {_T}, !stablehlo.token }}""",
    "stablehlo.iota": f"""
func.func @main() -> {_M} {{
  %r = stablehlo.iota dim = 1 : {_M} loc("probe")
  return %r : {_M} }}""",
    "stablehlo.map": f"""
func.func @main(%x: {_T}, %y: {_T}) -> {_T} {{
  %m = "stablehlo.map"(%x, %y) ({{ ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32> }}) {{dimensions = array<i64: 0>}} : ({_T}, {_T}) ->
      {_T} loc("probe")
  return %m : {_T} }}""",
    "stablehlo.optimization_barrier": f"""
func.func @main(%x: {_T}, %y: {_M}) -> ({_T}, {_M}) {{
  %r:2 = stablehlo.optimization_barrier %x, %y : {_T}, {_M} loc("probe")
  return %r#0, %r#1 : {_T}, {_M} }}""",
    "stablehlo.pad": f"""
func.func @main(%x: {_M}, %z: tensor<f32>) -> tensor<5x4xf32> {{
  %r = stablehlo.pad %x, %z, low = [1, 0], high = [2, 0], interior = [0, 0] : ({_M},
      tensor<f32>) -> tensor<5x4xf32> loc("probe")
  return %r : tensor<5x4xf32> }}""",
    "stablehlo.partition_id": """
func.func @main() -> tensor<ui32> {
  %p = stablehlo.partition_id : tensor<ui32> loc("probe")
  return %p : tensor<ui32> }""",
    "stablehlo.replica_id": """
func.func @main() -> tensor<ui32> {
  %p = stablehlo.replica_id : tensor<ui32> loc("probe")
  return %p : tensor<ui32> }""",
    "stablehlo.reduce": f"""
func.func @main(%x: {_M}, %z: tensor<f32>) -> {_T} {{
  %r = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : ({_M},
      tensor<f32>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.reduce_window": f"""
func.func @main(%x: {_M}, %z: tensor<f32>) -> tensor<1x3xf32> {{
  %r = "stablehlo.reduce_window"(%x, %z) {_ADD} {{window_dimensions = array<i64: 2, 2>}}
      : ({_M}, tensor<f32>) -> tensor<1x3xf32> loc("probe")
  return %r : tensor<1x3xf32> }}""",
    "stablehlo.reverse": f"""
func.func @main(%x: {_M}) -> {_M} {{
  %r = stablehlo.reverse %x, dims = [1] : {_M} loc("probe")
  return %r : {_M} }}""",
    "stablehlo.reshape": f"""
func.func @main(%x: {_M}) -> tensor<8xf32> {{
  %r = stablehlo.reshape %x : ({_M}) -> tensor<8xf32> loc("probe")
  return %r : tensor<8xf32> }}""",
    "stablehlo.transpose": f"""
func.func @main(%x: {_M}) -> tensor<4x2xf32> {{
  %r = stablehlo.transpose %x, dims = [1, 0] : ({_M}) -> tensor<4x2xf32> loc("probe")
  return %r : tensor<4x2xf32> }}""",
    "stablehlo.slice": f"""
func.func @main(%x: {_M}) -> tensor<1x2xf32> {{
  %r = stablehlo.slice %x [1:2, 0:2] : ({_M}) -> tensor<1x2xf32> loc("probe")
  return %r : tensor<1x2xf32> }}""",
    "stablehlo.rng": f"""
func.func @main(%a: tensor<f32>, %b: tensor<f32>) -> {_T} {{
  %s = stablehlo.constant dense<4> : tensor<1xi64>
  %r = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>,
      tensor<1xi64>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.rng_bit_generator": """
func.func @main(%k: tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>) {
  %s, %r = stablehlo.rng_bit_generator %k, algorithm = DEFAULT : (tensor<2xui64>) ->
      (tensor<2xui64>, tensor<4xui32>) loc("probe")
  return %s, %r : tensor<2xui64>, tensor<4xui32> }""",
    "stablehlo.select": f"""
func.func @main(%p: tensor<4xi1>, %x: {_T}, %y: {_T}) -> {_T} {{
  %r = stablehlo.select %p, %x, %y : tensor<4xi1>, {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.sort": f"""
func.func @main(%x: {_T}) -> {_T} {{
  %r = "stablehlo.sort"(%x) ({{ ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1> }}) {{dimension = 0 : i64, is_stable = true}}
      : ({_T}) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.while": """
func.func @main(%x: tensor<i32>) -> tensor<i32> {
  %r = stablehlo.while(%i = %x) : tensor<i32>
    cond {
      %c = stablehlo.constant dense<10> : tensor<i32>
      %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n : tensor<i32>
    } loc("probe")
  return %r : tensor<i32> }""",
    "stablehlo.clamp": f"""
func.func @main(%lo: tensor<f32>, %x: {_T}, %hi: tensor<f32>) -> {_T} {{
  %r = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, {_T}, tensor<f32>) -> {_T} loc("probe")
  return %r : {_T} }}""",
    "stablehlo.convolution": """
func.func @main(%x: tensor<1x4x4x1xf32>, %k: tensor<2x2x1x1xf32>) -> tensor<1x3x3x1xf32> {
  %r = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x4x4x1xf32>, tensor<2x2x1x1xf32>) -> tensor<1x3x3x1xf32> loc("probe")
  return %r : tensor<1x3x3x1xf32> }""",
    "stablehlo.gather": f"""
func.func @main(%x: {_M}, %i: tensor<1xi32>) -> tensor<1x4xf32> {{
  %r = "stablehlo.gather"(%x, %i) {{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
      slice_sizes = array<i64: 1, 4>}} : ({_M}, tensor<1xi32>) -> tensor<1x4xf32> loc("probe")
  return %r : tensor<1x4xf32> }}""",
    "stablehlo.scatter": f"""
func.func @main(%x: {_M}, %i: tensor<1xi32>, %u: tensor<1x4xf32>) -> {_M} {{
  %r = "stablehlo.scatter"(%x, %i, %u) {_ADD}
      {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
      inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}
      : ({_M}, tensor<1xi32>, tensor<1x4xf32>) -> {_M} loc("probe")
  return %r : {_M} }}""",
    "stablehlo.select_and_scatter": f"""
func.func @main(%x: {_M}, %src: tensor<1x2xf32>, %z: tensor<f32>) -> {_M} {{
  %r = "stablehlo.select_and_scatter"(%x, %src, %z) ({{ ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1> }}, {_ADD_BODY}) {{window_dimensions = array<i64: 2, 2>,
      window_strides = array<i64: 2, 2>}} : ({_M}, tensor<1x2xf32>, tensor<f32>) -> {_M}
      loc("probe")
  return %r : {_M} }}""",
}


# (operand type, operand count, result type) for ops with no module above, tried in order
_ELEMENTWISE = [
    (_T, 1, _T),
    ("tensor<4xi32>", 1, "tensor<4xi32>"),
    (_T, 2, _T),
    ("tensor<4xi32>", 2, "tensor<4xi32>"),
    (_T, 1, "tensor<4xi1>"),
    (_T, 3, _T),
]


def probe_modules(op: str) -> list[str]:
    """Candidate modules holding `op` once, at loc("probe"): its own module if it has one, else
    element-wise forms in MLIR's generic syntax (MLIR verifies which ones are valid)."""
    if op in PROBE_MODULES:
        return [f"module {{{PROBE_MODULES[op]}\n}}"]
    modules = []
    for operand, count, result in _ELEMENTWISE:
        params = ", ".join(f"%a{i}: {operand}" for i in range(count))
        names = ", ".join(f"%a{i}" for i in range(count))
        types = ", ".join([operand] * count)
        modules.append(
            f"module {{\nfunc.func @main({params}) -> {result} {{\n"
            f'  %r = "{op}"({names}) : ({types}) -> {result} loc("probe")\n'
            f"  return %r : {result} }}\n}}"
        )
    return modules


# ---- programs for the census ------------------------------------------------------------------


@jax.jit
def inner(x):
    return jnp.sin(x) * 2.0


def nested_calls(x):
    return inner(x) + jax.jit(lambda v: inner(v).sum())(x)


def sort_scatter(x, i):
    return jnp.sort(x, axis=0).at[i].set(0.0)


CENSUS_PROGRAMS = {
    "case": (
        lambda x, i: lax.switch(
            i, [jnp.sin, jnp.cos, lambda v: lax.cond(v.sum() > 0, jnp.exp, jnp.tanh, v)], x
        ),
        (F, INDEX),
    ),
    "while": (lambda x: lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c * 2, x), (F,)),
    "reduce": (lambda x: x.sum(0) + x.max(1).sum(), (F,)),
    "dot_general": (lambda x, w: jnp.tanh(x @ w), (F, spec((4, 3)))),
    "nested_calls": (nested_calls, (F,)),
    "sort_scatter": (sort_scatter, (F, INDEX)),
    "select_and_scatter": RESPELLED["stablehlo.select_and_scatter"],
    "chlo_and_tuple_out": (lambda x: (lax.erf(x), lax.top_k(x, 2)[1]), (F,)),
}


# Small jnp programs whose StableHLO the learner predicts (a census of stablehlo.* ops):
# name -> (function, argument specs). Element-wise ops under other names, Python scalars,
# reductions with their bodies, a mixed-dtype add, indexing, a matmul.
_X, _Y = spec((4, 3)), spec((4, 3))
LOWERING_BANK = {
    "jnp.sin(x) * jnp.cos(x)": (lambda x: jnp.sin(x) * jnp.cos(x), (_X,)),
    "jnp.exp(x) - 1": (lambda x: jnp.exp(x) - 1, (_X,)),
    "jnp.tanh(x)": (jnp.tanh, (_X,)),
    "x * 2.0": (lambda x: x * 2.0, (_X,)),
    "x ** 2": (lambda x: x**2, (_X,)),
    "x / y": (lambda x, y: x / y, (_X, _Y)),
    "x + i, i int32": (lambda x, i: x + i, (_X, spec((4, 3), jnp.int32))),
    "jax.nn.relu(x)": (jax.nn.relu, (_X,)),
    "jnp.where(x > 0, x, y)": (lambda x, y: jnp.where(x > 0, x, y), (_X, _Y)),
    "x.sum(axis=0)": (lambda x: x.sum(axis=0), (_X,)),
    "x.max(axis=1)": (lambda x: x.max(axis=1), (_X,)),
    "x.mean()": (lambda x: x.mean(), (_X,)),
    "x @ w": (lambda x, w: x @ w, (_X, spec((3, 5)))),
    "x.T": (lambda x: x.T, (_X,)),
    "x[0]": (lambda x: x[0], (_X,)),
    "x[::-1]": (lambda x: x[::-1], (_X,)),
}


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def mlp_specs(batch: int | str = 8):
    return (spec((batch, FEATURES)), spec((FEATURES, 8)), spec((8, OUT)))


def mlp_values(batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(batch, FEATURES)).astype(np.float32),
        rng.normal(size=(FEATURES, 8)).astype(np.float32) / 4,
        rng.normal(size=(8, OUT)).astype(np.float32) / 3,
    )


def mlp_rest_specs():
    return mlp_specs()[1:]


BF16 = jnp.bfloat16  # the ml_dtypes scalar type: NumPy arrays can hold it


def scale_shift(x, y):
    return x * y.astype(x.dtype), (y + 1).sum()


def pair(x, y):
    return {"sum": x + y, "max": jnp.maximum(x, y)}


def scalar_mean(x):
    return jnp.mean(x)


def sum_and_difference(x, y):
    return [x + y, x - y]


def sines(x):
    return (jnp.sin(x),)


def column_sums(x):
    return jnp.sin(x).sum(axis=0)


# Calls of `column_sums` exported for x float32 of the symbolic shape on the left (read with
# jax.export.symbolic_shape), serialized, deserialized, then called on a NumPy array of the
# dtype and shape on the right (JAX's defaults: x64 off). The learner predicts which calls run.
EXPORTED_CALLS = {
    "(b, 4) called with f32[3,4]": ("b, 4", np.float32, (3, 4)),
    "(b, 4) called with f32[1,4]": ("b, 4", np.float32, (1, 4)),
    "(b, 4) called with f32[0,4]": ("b, 4", np.float32, (0, 4)),
    "(b, 4) called with f32[3,5]": ("b, 4", np.float32, (3, 5)),
    "(b, 4) called with f32[3,4,1]": ("b, 4", np.float32, (3, 4, 1)),
    "(b, 4) called with i32[3,4]": ("b, 4", np.int32, (3, 4)),
    "(b, 4) called with f64[3,4]": ("b, 4", np.float64, (3, 4)),
    "(b, 4) called with f16[3,4]": ("b, 4", np.float16, (3, 4)),
    "(b, 4) called with i64[3,4]": ("b, 4", np.int64, (3, 4)),
    "(2*b, 4) called with f32[6,4]": ("2*b, 4", np.float32, (6, 4)),
    "(2*b, 4) called with f32[5,4]": ("2*b, 4", np.float32, (5, 4)),
    "(b, b) called with f32[3,3]": ("b, b", np.float32, (3, 3)),
    "(b, b) called with f32[3,4]": ("b, b", np.float32, (3, 4)),
    "(b + 1, 4) called with f32[1,4]": ("b + 1, 4", np.float32, (1, 4)),
    "(b + 1, 4) called with f32[2,4]": ("b + 1, 4", np.float32, (2, 4)),
    "(a, b) called with f32[2,7]": ("a, b", np.float32, (2, 7)),
    "(a, b) called with f32[3,3]": ("a, b", np.float32, (3, 3)),
    "(b, 2*b) called with f32[3,6]": ("b, 2*b", np.float32, (3, 6)),
    "(b + 1, b) called with f32[3,3]": ("b + 1, b", np.float32, (3, 3)),
    "(2*b, b + 1) called with f32[4,4]": ("2*b, b + 1", np.float32, (4, 4)),
    "(b - 1, 4) called with f32[1,4]": ("b - 1, 4", np.float32, (1, 4)),
    "(b - 1, 4) called with f32[0,4]": ("b - 1, 4", np.float32, (0, 4)),
    "(b - 2, b) called with f32[1,3]": ("b - 2, b", np.float32, (1, 3)),
    "(b - 1, b) called with f32[3,3]": ("b - 1, b", np.float32, (3, 3)),
    "(b*2, 4) called with f32[5,4]": ("b*2, 4", np.float32, (5, 4)),
    "(b, b*2) called with f32[3,6]": ("b, b*2", np.float32, (3, 6)),
    "(b, b*2) called with f32[3,3]": ("b, b*2", np.float32, (3, 3)),
    "(3*b - 2, 4) called with f32[4,4]": ("3*b - 2, 4", np.float32, (4, 4)),
    "(b*3 + 1, b) called with f32[7,2]": ("b*3 + 1, b", np.float32, (7, 2)),
    # a dtype is anything NumPy takes for one: a name, a type code, a Python type
    "(b, 4) called with f32[2,4] (dtype written 'float32')": ("b, 4", "float32", (2, 4)),
    "(b, 4) called with f64[2,4] (dtype written 'f8')": ("b, 4", "f8", (2, 4)),
    "(b, 4) called with f64[5,4] (dtype written float)": ("b, 4", float, (5, 4)),
    "(b, 4) called with i64[3,4] (dtype written int)": ("b, 4", int, (3, 4)),
    "(b, 4) called with f16[3,4] (dtype written 'e')": ("b, 4", "e", (3, 4)),
}


_SWITCH, _SWITCH_SPECS = CENSUS_PROGRAMS["case"]
_COND, _COND_SPECS = RENAMED["stablehlo.case"]

SHOWN = {
    "op_census": given(
        _SWITCH,
        _SWITCH_SPECS,
        "a switch whose third branch holds a cond, x f32[8,4]: ops nest in regions "
        "(look at --stage stablehlo)",
    ),
    "hlo_opcode": given(
        _COND,
        _COND_SPECS,
        "lax.cond on x f32[8,4]: stablehlo.case is HLO's conditional "
        "(compare --stage stablehlo and --stage hlo)",
    ),
    "export_bytes": given(
        mlp, mlp_specs(), "tanh(x @ w1) @ w2 with x f32[8,16], the program export_bytes serializes"
    ),
    "export_any_batch": given(
        mlp,
        mlp_specs(),
        "tanh(x @ w1) @ w2 at batch 8; the export itself has a symbolic batch, which XLA "
        "cannot compile",
    ),
}
