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
}


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


def column_sums(x):
    return jnp.sin(x).sum(axis=0)


# Calls of `column_sums` exported for x float32 of the symbolic shape on the left (read with
# jax.export.symbolic_shape), serialized, deserialized, then called on a NumPy array of the
# dtype and shape on the right. The learner predicts which calls run.
EXPORTED_CALLS = {
    "(b, 4) called with f32[3,4]": ("b, 4", np.float32, (3, 4)),
    "(b, 4) called with f32[1,4]": ("b, 4", np.float32, (1, 4)),
    "(b, 4) called with f32[0,4]": ("b, 4", np.float32, (0, 4)),
    "(b, 4) called with f32[3,5]": ("b, 4", np.float32, (3, 5)),
    "(b, 4) called with f32[3,4,1]": ("b, 4", np.float32, (3, 4, 1)),
    "(b, 4) called with i32[3,4]": ("b, 4", np.int32, (3, 4)),
    "(2*b, 4) called with f32[6,4]": ("2*b, 4", np.float32, (6, 4)),
    "(2*b, 4) called with f32[5,4]": ("2*b, 4", np.float32, (5, 4)),
    "(b, b) called with f32[3,3]": ("b, b", np.float32, (3, 3)),
    "(b, b) called with f32[3,4]": ("b, b", np.float32, (3, 4)),
    "(b + 1, 4) called with f32[1,4]": ("b + 1, 4", np.float32, (1, 4)),
    "(b + 1, 4) called with f32[2,4]": ("b + 1, 4", np.float32, (2, 4)),
    "(a, b) called with f32[2,7]": ("a, b", np.float32, (2, 7)),
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
