"""The programs phase 6's tests compile and measure, and what `katas show` compiles per task.

Banks of programs for the cost and memory questions (several dtypes, Python scalars, tuple
outputs, donation), the step lists of the fusion question, the programs whose headers and ENTRY
the alias and temp-bytes tasks read, and hand-written modules for them too.
"""

from __future__ import annotations

import jax
import jax.core
import jax.numpy as jnp
import numpy as np

from kata_harness.programs import Recipe, given

IN, HIDDEN, OUT, BATCH = 16, 32, 4, 8


def ones(*shape):
    # NumPy inputs: creating jnp arrays would compile eager ops in every test.
    return np.ones(shape, np.float32)


def mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mlp_args():
    params = {
        "w1": ones(IN, HIDDEN),
        "b1": ones(HIDDEN),
        "w2": ones(HIDDEN, OUT),
        "b2": ones(OUT),
    }
    return params, ones(BATCH, IN)


def chain(v):
    return jnp.tanh(jnp.exp(v * 2.0 + 1.0) - 3.0)


UNARY_STEPS = [lambda v: v * 2.0, jnp.exp, jnp.tanh]


def rng_array(shape, dtype, seed=0):
    values = np.random.default_rng(seed).normal(size=shape)
    if np.issubdtype(np.dtype(dtype), np.integer):
        values = values * 20
    return values.astype(dtype)


def bf16(*shape):
    return rng_array(shape, jnp.bfloat16)


# A bank of programs for cost_of and memory_report: dtypes of 1, 2 and 4 bytes, a Python scalar,
# tuple outputs, and duplicated work that only the compiled (CSE'd) program does once.
COST_BANK = {
    "bf16 exp chain": (chain, lambda: (bf16(48, 40),)),
    "f16 matmul and exp, each twice (CSE), tuple out": (
        lambda a, b: ((a @ b) + (a @ b), jnp.exp(a) + jnp.exp(a)),
        lambda: (rng_array((24, 40), np.float16), rng_array((40, 8), np.float16)),
    ),
    "int8 widened products, python scalar": (
        lambda s, a, b: (a.astype(jnp.int32) * b).sum(axis=0) * s,
        lambda: (3.0, rng_array((36, 20), np.int8), rng_array((36, 20), np.int8, seed=1)),
    ),
}


# Step lists whose steps hold several ops, change the dtype, or reduce: op by op each step is
# its own program fed the previous step's output (shape AND dtype).
STEP_BANK = {
    "dtype changes": ([lambda v: v.astype(jnp.bfloat16), jnp.exp], lambda: ones(33, 20)),
    "bf16, several ops and a row sum in one step": (
        [lambda v: jnp.sum(v * 2.0 + 1.0, axis=1), jnp.exp],
        lambda: bf16(40, 24),
    ),
}


def update(state, grad):
    return state - 0.1 * grad


def matmul_chain(depth):
    def chain(x, w):
        for _ in range(depth):
            x = x @ w
        return x

    return chain


# (function, argument maker, donate_argnums): dtypes, a Python scalar (4 bytes, weakly typed),
# a tuple output (its buffer table counts), donation of a non-first argument and a donated
# buffer no output can use (not aliased).
MEMORY_BANK = {
    "bf16, second argument donated, tuple out": (
        lambda g, s: (s - 0.1 * g, jnp.tanh(g @ s.T)),
        lambda: (bf16(24, 8), bf16(24, 8)),
        (1,),
    ),
    "int8 and a python scalar": (
        lambda s, a: (a.astype(jnp.int32) * s).sum(axis=1),
        lambda: (3, rng_array((10, 7), np.int8)),
        (),
    ),
    "tuple output, donated buffer fits no output": (
        lambda v: (v.sum(axis=0), v[:3] * 2.0, jnp.exp(v).max()),
        lambda: (ones(20, 12),),
        (0,),
    ),
    "f16 pytree, first leaf donated": (
        lambda p, x: {"w": p["w"] - x, "b": p["b"] * 2.0},
        lambda: (
            {"b": rng_array((5,), np.float16), "w": rng_array((6, 5), np.float16)},
            rng_array((6, 5), np.float16),
        ),
        (0,),
    ),
}


def train_step(grads, state):
    return {k: state[k] - 0.1 * grads[k] for k in state}, jnp.sum(grads["w"])


def loss_first(state, batch):
    new = {k: state[k] - 0.01 * batch[: state[k].shape[0]].sum() for k in state}
    return jnp.sum(batch), new


def rotate(a, b, c):
    return c + 1.0, a * 2.0, b - 1.0  # a -> output 1, b -> output 2, c -> output 0


def shared_first(scale, state):
    return state * scale


def factor(a, b):
    # LAPACK's custom calls on XLA:CPU state their own output_to_operand_aliasing
    return b * 2.0, jnp.linalg.cholesky(a), jnp.linalg.qr(b)[1]


def factor_args():
    return np.eye(4, dtype=np.float32) * 2.0, ones(6, 3)


# name: (function, argument maker, donate_argnums, {parameter number: output index}). Expected
# aliases follow from how each program is built: parameters are the flattened argument leaves
# (dict keys sorted), outputs the flattened result leaves; each donated leaf is taken by the
# output of its shape and dtype.
ALIAS_BANK = {
    "state after the loss": (
        loss_first,
        lambda: ({"a": ones(3), "b": ones(4, 2), "c": ones(5, 3)}, ones(9)),
        (0,),
        {0: (1,), 1: (2,), 2: (3,)},
    ),
    "outputs rotated": (
        rotate,
        lambda: (ones(2), ones(3, 2), ones(4, 3)),
        (0, 1, 2),
        {0: (1,), 1: (2,), 2: (0,)},
    ),
    "second argument, array output": (
        shared_first,
        lambda: (ones(6, 4), ones(6, 4)),
        (1,),
        {1: ()},
    ),
    "LAPACK custom calls, second argument donated": (factor, factor_args, (1,), {1: (0,)}),
    "LAPACK custom calls, nothing donated": (factor, factor_args, (), {}),
}


# Hand-written, checked against XLA's own parser below: a must-alias entry, a parameter index
# inside a tuple parameter, output indices out of order.
HANDWRITTEN_ALIAS = (
    (
        "HloModule handwritten, "
        "input_output_alias={ {0}: (1, {}, may-alias), {2}: (0, {1}, must-alias) }, "
        "entry_computation_layout={((f32[2]{0}, f32[3]{0}), f32[4]{0})"
        "->(f32[4]{0}, s32[], f32[3]{0})}"
    )
    + """

ENTRY %main (pair: (f32[2], f32[3]), v: f32[4]) -> (f32[4], s32[], f32[3]) {
  %pair = (f32[2]{0}, f32[3]{0}) parameter(0)
  %v = f32[4]{0} parameter(1)
  %second = f32[3]{0} get-tuple-element(%pair), index=1
  %twice = f32[3]{0} add(%second, %second)
  %neg = f32[4]{0} negate(%v)
  %n = s32[] constant(7)
  ROOT %out = (f32[4]{0}, s32[], f32[3]{0}) tuple(%neg, %n, %twice)
}
"""
)


def activation_chain(x, w, v):
    h = jnp.tanh(x @ w) * 2.0
    return (h @ w).reshape(64, 256) @ v


# Hand-written modules, checked against XLA's own parser, with the expected total worked out
# by hand in the comments.
NAIVE_TUPLE_ROOT = (
    (
        "HloModule tuple_root, "
        "entry_computation_layout={(bf16[8,6]{1,0}, s8[6]{0})->(bf16[8,6]{1,0}, f32[8]{0})}"
    )
    + """

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%widen (p: bf16[8,6]) -> f32[8,6] {
  %p = bf16[8,6]{1,0} parameter(0)
  ROOT %c = f32[8,6]{1,0} convert(%p)
}

%row_sum (q: bf16[8,6]) -> f32[8] {
  %q = bf16[8,6]{1,0} parameter(0)
  %wide = f32[8,6]{1,0} fusion(%q), kind=kLoop, calls=%widen
  %zero = f32[] constant(0)
  ROOT %r = f32[8]{0} reduce(%wide, %zero), dimensions={1}, to_apply=%add_f32
}

ENTRY %main (x: bf16[8,6], y: s8[6]) -> (bf16[8,6], f32[8]) {
  %x = bf16[8,6]{1,0} parameter(0)
  %y = s8[6]{0} parameter(1)
  %yb = bf16[6]{0} convert(%y)
  %bc = bf16[8,6]{1,0} broadcast(%yb), dimensions={1}
  %m = bf16[8,6]{1,0} multiply(%x, %bc)
  %flat = bf16[48]{0} bitcast(%m)
  %n = bf16[48]{0} negate(%flat)
  %back = bf16[8,6]{1,0} bitcast(%n)
  %s = f32[8]{0} fusion(%back), kind=kLoop, calls=%row_sum
  ROOT %t = (bf16[8,6]{1,0}, f32[8]{0}) tuple(%m, %s)
}
"""
)


NAIVE_ODD_TYPES = """\
HloModule odd_types, entry_computation_layout={(f64[5]{0}, u16[3,7]{1,0})->f64[5]{0}}

%split (p0: f64[5], p1: u16[3,7]) -> (f64[5], c64[5], u16[3,7]) {
  %p0 = f64[5]{0} parameter(0)
  %p1 = u16[3,7]{1,0} parameter(1)
  %neg = f64[5]{0} negate(%p0)
  %cx = c64[5]{0} convert(%p0)
  %twice = u16[3,7]{1,0} add(%p1, %p1)
  ROOT %out = (f64[5]{0}, c64[5]{0}, u16[3,7]{1,0}) tuple(%neg, %cx, %twice)
}

ENTRY %main (a: f64[5], b: u16[3,7]) -> f64[5] {
  %a = f64[5]{0} parameter(0)
  %b = u16[3,7]{1,0} parameter(1)
  %k = f64[5]{0} constant({1, 2, 3, 4, 5})
  %parts = (f64[5]{0}, c64[5]{0}, u16[3,7]{1,0}) fusion(%a, %b), kind=kLoop, calls=%split
  %g0 = f64[5]{0} get-tuple-element(%parts), index=0
  %g1 = c64[5]{0} get-tuple-element(%parts), index=1
  %lt = pred[5]{0} compare(%g0, %k), direction=LT
  %wide = s64[5]{0} convert(%lt)
  %small = f8e4m3fn[5]{0} convert(%g0)
  %back = f64[5]{0} convert(%small)
  %re = f32[5]{0} real(%g1)
  %re64 = f64[5]{0} convert(%re)
  %w64 = f64[5]{0} convert(%wide)
  %sum = f64[5]{0} add(%back, %re64)
  ROOT %total = f64[5]{0} add(%sum, %w64)
}
"""


# An ENTRY whose intermediates include a transpose, layout-changing copies and reshapes that
# are not bitcasts: each writes a new buffer (only bitcast, tuple and get-tuple-element re-view
# one). Compiled programs rarely keep these in ENTRY (a while loop's copies are the usual case).
NAIVE_COPIES = """\
HloModule copies, entry_computation_layout={(f32[4,6]{1,0}, s16[6,4]{1,0})->f32[24]{0}}

ENTRY %main (x: f32[4,6], y: s16[6,4]) -> f32[24] {
  %x = f32[4,6]{1,0} parameter(0)
  %y = s16[6,4]{1,0} parameter(1)
  %t = f32[6,4]{1,0} transpose(%x), dimensions={1,0}
  %c = f32[6,4]{0,1} copy(%t)
  %r = f32[24]{0} reshape(%c)
  %yc = s16[6,4]{0,1} copy(%y)
  %yr = s16[24]{0} reshape(%yc)
  %yf = f32[24]{0} convert(%yr)
  ROOT %sum = f32[24]{0} add(%r, %yf)
}
"""


def tuple_chain(x, w):
    a = x @ w
    b = a @ w
    return a, b @ w  # outputs a and the third product; only b is an intermediate


def device_ones(n):
    return jax.device_put(ones(n))  # a jax.Array without compiling anything


def tracked(calls):
    def f(x):
        calls.append(isinstance(x, jax.core.Tracer))
        return jnp.sin(x) * 2.0

    return f


def fused_steps(v):
    """The steps of UNARY_STEPS as one program: what fusion_traffic's "fused" measures."""
    for step in UNARY_STEPS:
        v = step(v)
    return v


def _train_state():
    return {"b": ones(4), "w": ones(4, 4)}


# Programs whose compiled `bytes accessed` the learner predicts from x's shape and dtype: name ->
# (function, what it takes besides x, the dtypes x may have). x is a matrix whose every dimension
# is one of BYTES_DIMS; y is an array like x (same shape and dtype), b a vector of x's dtype with
# one element per column of x.
BYTES_FLOATS = ("float32", "bfloat16", "float16")
BYTES_DIMS = (64, 96, 100, 128, 200, 256, 300)
BYTES_BANK = {
    "tanh(exp(2x + 1) - 3)": (
        lambda x: jnp.tanh(jnp.exp(2.0 * x + 1.0) - 3.0),
        "",
        BYTES_FLOATS,
    ),
    "x + y": (lambda x, y: x + y, "y", BYTES_FLOATS),
    "x + b": (lambda x, b: x + b, "b", BYTES_FLOATS),
    "x.sum(axis=0)": (lambda x: x.sum(axis=0), "", ("float32",)),
    "x.sum()": (lambda x: x.sum(), "", ("float32",)),
    "x.astype(bf16) * 2": (
        lambda x: x.astype(jnp.bfloat16) * 2,
        "",
        (*BYTES_FLOATS, "int8", "int32"),
    ),
    "exp(x)": (jnp.exp, "", BYTES_FLOATS),
    "x.astype(f32) * 0.5": (
        lambda x: x.astype(jnp.float32) * 0.5,
        "",
        (*BYTES_FLOATS, "int8", "int32"),
    ),
    "x.T + 1": (lambda x: x.T + 1.0, "", BYTES_FLOATS),
    "x[:, : x.shape[1] // 2] * 2": (lambda x: x[:, : x.shape[1] // 2] * 2.0, "", BYTES_FLOATS),
    "x * 2 with an unused y": (lambda x, y: x * 2.0, "y", BYTES_FLOATS),
    "x - x.mean()": (lambda x: x - x.mean(), "", ("float32",)),
}

# The cases the task listed before its cases were drawn: (program, x's shape, x's dtype).
BYTES_CASES = (
    ("tanh(exp(2x + 1) - 3)", (256, 256), "float32"),
    ("x + y", (64, 96), "float32"),
    ("x + b", (256, 256), "float32"),
    ("x.sum(axis=0)", (64, 96), "float32"),
    ("x.sum()", (256, 256), "float32"),
    ("x.astype(bf16) * 2", (256, 256), "float32"),
    ("exp(x)", (64, 96), "bfloat16"),
    ("x.astype(f32) * 0.5", (256, 256), "int8"),
    ("x.T + 1", (64, 96), "float32"),
    ("x[:, : x.shape[1] // 2] * 2", (256, 256), "float32"),
    ("x * 2 with an unused y", (256, 256), "float32"),
    ("x - x.mean()", (256, 256), "float32"),
)


def bytes_arguments(program: str, shape: tuple[int, int], dtype: str) -> tuple:
    """The arguments BYTES_BANK[program] is compiled for, x of this shape and dtype (NumPy)."""
    _, extra, _ = BYTES_BANK[program]
    x = rng_array(shape, jnp.dtype(dtype))
    others = {"": (), "y": (rng_array(shape, jnp.dtype(dtype), seed=1),)}
    return (x, *others.get(extra, (rng_array(shape[1:], jnp.dtype(dtype), seed=2),)))


SHOWN = {
    "cost_of": given(chain, (ones(256, 256),), "tanh(exp(2v + 1) - 3) with v f32[256,256]"),
    "fusion_traffic": given(
        fused_steps, (ones(256, 256),), "the steps v * 2, exp, tanh as one program, v f32[256,256]"
    ),
    "memory_report": Recipe(
        lambda _m: (jax.jit(update, donate_argnums=(0,)), (ones(64, 64), ones(64, 64))),
        "state - 0.1 * grad, both f32[64,64], state donated",
        given=True,
    ),
    "aliased_parameters": Recipe(
        lambda _m: (jax.jit(train_step, donate_argnums=(1,)), (_train_state(), _train_state())),
        "a train step with its state donated: see input_output_alias in the header",
        given=True,
    ),
    "naive_temp_bytes": given(
        matmul_chain(4),
        (ones(128, 128), ones(128, 128)),
        "a chain of 4 matmuls x @ w, f32[128,128]",
    ),
}
