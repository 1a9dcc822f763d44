"""The programs phase 3's tests compile, and what `katas show` compiles for each task.

The IR-reading tasks run on the texts of a bank of programs (`bank_program`) and on one
hand-written module; `katas show` compiles the bank's program each task is mostly checked on.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental.layout import Format, Layout

from kata_harness.programs import Recipe

TABLE = np.array([3.0, 1.0, 2.0], dtype=np.float32)
# more than ten elements: the compiled stage's default print elides it as {...}, the lowered
# stage's prints it in full
LONG_TABLE = np.array([5, -3, 8, 0, 2, -7, 4, 9, -1, 6, 3, -4], dtype=np.float32)


def mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def attention(q, k, v):
    return jax.nn.softmax(q @ k.T / math.sqrt(q.shape[-1]), axis=-1) @ v


def scale_and_shift(x):
    return x * 0.5 + TABLE


def value_and_total(x):
    return x + 1, x.sum()


# three_texts and flops are handed these in a drawn order, at drawn shapes and dtypes: lambdas that
# share one __qualname__ and differ in their work, a Python scalar (weakly typed) scaling a
# half-precision array, an input the program never uses, and (closed_over) a large constant.
ELEMENTWISE = (
    lambda x: x + 1,
    lambda x: x * x + x,
    lambda x: (x - 1) * (x + 1),
)


def scaled(x, s):
    return x * s + s


def doubled_ignoring(x, unused):
    return x * 2


def closed_over(table: np.ndarray):
    """x * table + x for a table the program closes over: a constant of the program, large
    enough (more than ten elements) that the stages' default prints differ in how they show it."""
    return lambda x: x * table + x


def rotate(x):
    return x * (1 + 2j)


def matmul(a, b):
    return a @ b


# major-to-minor order asked for each input of `matmul`: a column-major, b row-major
MATMUL_ORDERS = ((1, 0), (0, 1))


def looped(x):
    return lax.fori_loop(0, 3, lambda i, c: jnp.tanh(jnp.sin(c) * 2.0 + 1.0), x)


def shared_sum(a, b, c, d):
    return (a + b) * c + (a + b) * d


def mixed(s, v, m, unused, t):
    """A scalar, a vector, a matrix asked column-major, an unused input, a 3-D input asked in
    layout {2,0,1}; `t` is used first, so the unoptimized text lists parameter(4) early."""
    return t.sum(axis=0) * s + v[0], m @ m.T


def branches(p, x, n):
    """A conditional with a fusion in each branch; f32, s32 and bf16 values."""
    y = lax.cond(p > 0, lambda x: jnp.sin(x) * 3.0 + 1.0, lambda x: jnp.cos(x) * 2.0 - 1.0, x)
    return y, n * 7 + 2, x.astype(jnp.bfloat16) * jnp.bfloat16(1.5)


# A hand-written module (checked against XLA's parser below): ENTRY is not the last computation,
# its parameters are declared out of number order, parameter 1 is a tuple, parameter 0 a scalar,
# parameter 2 is used only by dead code, the ROOT is not ENTRY's last line, a kLoop fusion's
# computation holds a kInput fusion whose reduce calls a reducer, the constant 4 appears twice,
# an uncalled computation holds pred, f16 and 2-D constants, and a constant's line ends in
# metadata with parentheses of its own (the literal ends at the constant's closing parenthesis).
HAND_WRITTEN = (
    "HloModule hand_written, entry_computation_layout={(f32[], (f32[2,3]{0,1}, s32[]), "
    "f16[4,2]{0,1}, f32[2]{0})->(f32[2,3]{1,0}, s32[])}\n"
    + """
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %ab = f32[] add(%a, %b)
}

%inner_body (q0: f32[2,3], q1: f32[]) -> f32[2] {
  %q0 = f32[2,3]{0,1} parameter(0)
  %e = f32[2,3]{0,1} exponential(%q0)
  %zero = f32[] constant(0)
  %r = f32[2]{0} reduce(%e, %zero), dimensions={1}, to_apply=%sum
  %q1 = f32[] parameter(1)
  %q1b = f32[2]{0} broadcast(%q1), dimensions={}
  ROOT %prod = f32[2]{0} multiply(%r, %q1b)
}

%outer_body (p0: f32[2,3], p1: f32[], p2: f32[2]) -> f32[2,3] {
  %p0 = f32[2,3]{0,1} parameter(0)
  %p1 = f32[] parameter(1)
  %row_sums = f32[2]{0} fusion(%p0, %p1), kind=kInput, calls=%inner_body
  %p2 = f32[2]{0} parameter(2)
  %scaled = f32[2]{0} multiply(%row_sums, %p2)
  %wide = f32[2,3]{1,0} broadcast(%scaled), dimensions={0}
  %half = f32[] constant(0.5)
  %halves = f32[2,3]{1,0} broadcast(%half), dimensions={}
  ROOT %out = f32[2,3]{1,0} multiply(%wide, %halves)
}

ENTRY %compute (s: f32[], pair: (f32[2,3], s32[]), w: f16[4,2], bias: f32[2]) -> (f32[2,3], s32[]) {
  %pair = (f32[2,3]{0,1}, s32[]) parameter(1)
  %values = f32[2,3]{0,1} get-tuple-element(%pair), index=0
  %s = f32[] parameter(0)
  %bias = f32[2]{0} parameter(3)
  %table = f32[2]{0} constant({1, -2}), metadata={op_name="jit(compute)/add(bias)"}
  %shifted = f32[2]{0} add(%bias, %table)
  %outer = f32[2,3]{1,0} fusion(%values, %s, %shifted), kind=kLoop, calls=%outer_body
  %count = s32[] get-tuple-element(%pair), index=1
  %four = s32[] constant(4)
  %total = s32[] add(%count, %four)
  ROOT %result = (f32[2,3]{1,0}, s32[]) tuple(%outer, %total)
  %w = f16[4,2]{0,1} parameter(2)
  %unused = f16[4,2]{0,1} negate(%w)
}

%spare (z: s32[]) -> s32[] {
  %z = s32[] parameter(0)
  %cut = s32[] constant(4)
  %flag = pred[] constant(true)
  %grid = s32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  %quarter = f16[] constant(0.25)
  ROOT %fewer = s32[] subtract(%z, %cut)
}
"""
)


# A second hand-written module (checked against XLA's parser): a multi-output kInput fusion whose
# fused computation holds two reduces calling one reducer and returns a tuple; a conditional that
# names its branches true_computation=/false_computation=, each branch holding a kLoop fusion; a
# computation nothing calls holding a kOutput fusion; two equal constants in ENTRY; a complex one.
HAND_BRANCHES = """HloModule hand_branches

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %ab = f32[] add(%a, %b)
}

%no_fused (u: f32[4]) -> f32[4] {
  %u = f32[4]{0} parameter(0)
  %cos = f32[4]{0} cosine(%u)
  ROOT %neg = f32[4]{0} negate(%cos)
}

%two_sums (p: f32[4,3]) -> (f32[4], f32[4]) {
  %p = f32[4,3]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %r1 = f32[4]{0} reduce(%p, %zero), dimensions={1}, to_apply=%sum
  %sq = f32[4,3]{1,0} multiply(%p, %p)
  %r2 = f32[4]{0} reduce(%sq, %zero), dimensions={1}, to_apply=%sum
  ROOT %both = (f32[4]{0}, f32[4]{0}) tuple(%r1, %r2)
}

%yes_fused (v: f32[4]) -> f32[4] {
  %v = f32[4]{0} parameter(0)
  %sin = f32[4]{0} sine(%v)
  %three = f32[] constant(3)
  %threes = f32[4]{0} broadcast(%three), dimensions={}
  ROOT %scaled = f32[4]{0} multiply(%sin, %threes)
}

%yes (t: f32[4]) -> f32[4] {
  %t = f32[4]{0} parameter(0)
  ROOT %tf = f32[4]{0} fusion(%t), kind=kLoop, calls=%yes_fused
}

%no (f: f32[4]) -> f32[4] {
  %f = f32[4]{0} parameter(0)
  ROOT %ff = f32[4]{0} fusion(%f), kind=kLoop, calls=%no_fused
}

ENTRY %main (x: f32[4,3], flag: pred[]) -> (f32[4], c64[], f32[]) {
  %flag = pred[] parameter(1)
  %x = f32[4,3]{1,0} parameter(0)
  %sums = (f32[4]{0}, f32[4]{0}) fusion(%x), kind=kInput, calls=%two_sums
  %first = f32[4]{0} get-tuple-element(%sums), index=0
  %pick = f32[4]{0} conditional(%flag, %first, %first), true_computation=%yes, false_computation=%no
  %two_a = f32[] constant(2)
  %two_b = f32[] constant(2)
  %twice = f32[] add(%two_a, %two_b)
  %w = c64[] constant((1, 2))
  ROOT %out = (f32[4]{0}, c64[], f32[]) tuple(%pick, %w, %twice)
}

%orphan_fused (o: s32[2]) -> s32[2] {
  %o = s32[2]{0} parameter(0)
  %one = s32[] constant(1)
  %ones = s32[2]{0} broadcast(%one), dimensions={}
  ROOT %less = s32[2]{0} subtract(%o, %ones)
}

%orphan (q: s32[2]) -> s32[2] {
  %q = s32[2]{0} parameter(0)
  ROOT %of = s32[2]{0} fusion(%q), kind=kOutput, calls=%orphan_fused
}
"""


def ones(shape: int | tuple[int, ...], dtype: type | np.dtype = np.float32) -> np.ndarray:
    # NumPy, not jnp: after the per-test cache clear every jnp.ones would compile an eager op.
    return np.ones(shape, dtype=dtype)


def mlp_args():
    params = {"w1": ones((16, 32)), "b1": ones(32), "w2": ones((32, 4)), "b2": ones(4)}
    return params, ones((8, 16))


def attention_args():
    return ones((8, 16)), ones((8, 16)), ones((8, 16))


def mixed_args():
    return (np.float32(2.0), ones(3), ones((2, 5)), ones(4, np.int32), ones((3, 4, 2)))


def branches_args():
    return np.float32(1.0), ones((2, 3)), ones(5, np.int32)


def bank_program(name: str):
    """A test-owned program of the bank, jitted (some with layouts asked), and its arguments."""
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    formats = tuple(Format(Layout(order), device) for order in MATMUL_ORDERS)
    mixed_formats = (
        None,
        None,
        Format(Layout((1, 0)), device),
        None,
        Format(Layout((1, 0, 2)), device),
    )
    programs = {
        "mlp": (jax.jit(mlp), mlp_args()),
        "attention": (jax.jit(attention), attention_args()),
        "scale_and_shift": (jax.jit(scale_and_shift), (ones(3),)),
        "value_and_total": (jax.jit(value_and_total), (ones((2, 3)),)),
        "matmul": (jax.jit(matmul, in_shardings=formats), (ones((8, 16)), ones((16, 4)))),
        "looped": (jax.jit(looped), (ones(8),)),
        "shared_sum": (jax.jit(shared_sum), tuple(ones(8) for _ in range(4))),
        "mixed": (jax.jit(mixed, in_shardings=mixed_formats), mixed_args()),
        "branches": (jax.jit(branches), branches_args()),
        "rotate": (jax.jit(rotate), (ones((4, 5)),)),
        "long_table": (jax.jit(closed_over(LONG_TABLE)), (ones(LONG_TABLE.size),)),
    }
    return programs[name]


THREE_TEXT_PROGRAMS = {  # a conditional with three results, one function at two shapes
    "branches": (branches, branches_args()),
    "value_and_total": (value_and_total, (ones((3, 1)),)),
    "value_and_total again": (value_and_total, (ones((1, 4)),)),
}


# Small programs whose optimized ENTRY ROOT the learner predicts for arguments of any shape and
# dtype of their domain: name -> (function, the ranks each argument may have). Every dimension is
# 2 or more, every argument float32, bfloat16, float16 or int32 (ROOT_DTYPES), and the first
# dimension of the reshaped x is even. Fused element-wise work and reductions, results that are an
# input (or a reshape of one), several results, a transpose (x.T of a vector is the vector).
ROOT_PROGRAMS = {
    "x * 2 + 1": (lambda x: x * 2 + 1, ((0, 1, 2, 3),)),
    "jnp.sin(x)": (jnp.sin, ((0, 1, 2, 3),)),
    "jnp.tanh(x)": (jnp.tanh, ((0, 1, 2, 3),)),
    "x + 1": (lambda x: x + 1, ((0, 1, 2, 3),)),
    "x.astype(jnp.bfloat16)": (lambda x: x.astype(jnp.bfloat16), ((0, 1, 2, 3),)),
    "x.sum(axis=1)": (lambda x: x.sum(axis=1), ((2, 3),)),
    "x.max()": (lambda x: x.max(), ((1, 2, 3),)),
    "x.T": (lambda x: x.T, ((1, 2, 3),)),
    "x itself": (lambda x: x, ((0, 1, 2, 3),)),
    "x.reshape(2, -1, x.shape[-1])": (lambda x: x.reshape(2, -1, x.shape[-1]), ((2, 3),)),
    "(x * 2, x + 1)": (lambda x: (x * 2, x + 1), ((0, 1, 2, 3),)),
    "(x, x.sum())": (lambda x: (x, x.sum()), ((0, 1, 2, 3),)),
    "(v, x)": (lambda x, v: (v, x), ((0, 1, 2, 3), (0, 1, 2, 3))),
}
ROOT_DTYPES = ("float32", "bfloat16", "float16", "int32")

# The cases the task listed before its cases were drawn: (program, ((shape, dtype), ...)).
ROOT_CASES = (
    ("x * 2 + 1", (((8, 4), "float32"),)),
    ("jnp.sin(x)", (((3,), "float32"),)),
    ("jnp.tanh(x)", (((2, 3, 4), "float32"),)),
    ("x + 1", (((6,), "int32"),)),
    ("x.astype(jnp.bfloat16)", (((8, 4), "float32"),)),
    ("x.sum(axis=1)", (((8, 4), "float32"),)),
    ("x.max()", (((8, 4), "float32"),)),
    ("x.T", (((8, 4), "float32"),)),
    ("x itself", (((8, 4), "float32"),)),
    ("x.reshape(2, -1, x.shape[-1])", (((8, 4), "float32"),)),
    ("(x * 2, x + 1)", (((2, 5), "float32"),)),
    ("(x, x.sum())", (((8, 4), "float32"),)),
    ("(v, x)", (((8, 4), "float32"), ((3,), "float32"))),
)


def _bank(name: str, about: str) -> Recipe:
    return Recipe(lambda _module: bank_program(name), about, given=True)


SHOWN = {
    "three_texts": _bank("mlp", "mlp(params, x f32[8,16]), handed to three_texts"),
    "dump_files": _bank(
        "scale_and_shift", "x * 0.5 + [3, 1, 2] with x f32[3], what dump_files compiles"
    ),
    "entry_parameter_layouts": _bank(
        "mixed",
        "mixed(s, v, m, unused, t): m asked column-major, t in layout {2,0,1}; "
        "see ENTRY's parameters",
    ),
    "entry_root": _bank(
        "value_and_total", "(x + 1, x.sum()) with x f32[2,3], whose ROOT is a tuple"
    ),
    "fusion_contents": _bank(
        "attention",
        "attention(q, k, v), each f32[8,16]: a kLoop fusion holds a reduce and its reducer",
    ),
    "constants": _bank(
        "scale_and_shift",
        "x * 0.5 + [3, 1, 2] with x f32[3]: one constant stays in ENTRY, one moves into the fusion",
    ),
    "flops": _bank("mlp", "mlp(params, x f32[8,16]), whose cost analysis flops reads"),
}
