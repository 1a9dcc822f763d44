"""The programs phase 4's tests compile, and what `katas show` compiles for each task.

The inputs the demonstrations run on, the programs whose stages and per-pass dumps the tests
read (other programs than the tasks ask for: none is an answer), and the banks the predict tasks
are judged on. `katas show` compiles the
learner's demonstration on the first of `ELEMENTWISE_INPUTS`, or the tests' program.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from kata_harness.programs import Recipe, given
from xla_inspect import passes

BF16 = ml_dtypes.bfloat16


def uniform(
    n: int | tuple[int, ...] = 8, seed: int = 0, dtype: type | np.dtype = np.float32
) -> np.ndarray:
    shape = n if isinstance(n, tuple) else (n,)
    return np.random.default_rng(seed).uniform(0.1, 1.0, size=shape).astype(dtype)


# An odd-shaped float32 matrix, a bfloat16 vector, a float16 matrix of one row holding a value
# whose double overflows, and a float32 scalar near the largest float32: an elementwise
# demonstration keeps the shape and dtype of its input (rank 0 and a leading dimension of 1
# included) and its values where a rewrite that is exact for real numbers is not for floats,
# and the optimization must show at each of them.
ELEMENTWISE_INPUTS = {
    "f32[3,5]": uniform((3, 5), seed=3),
    "bf16[6]": uniform(6, 4, BF16),
    "f16[1,5] with 40000": np.array([[0.25, 40000.0, 0.5, 0.75, 0.125]], dtype=np.float16),
    "f32[] 3e38": np.array(3e38, dtype=np.float32),
}

# algebraic_identity's inputs: the values where rewrites that are exact for real numbers are not
# for floats (a signed zero, inf, nan, the largest finite values, subnormals), in each float
# dtype and at rank 0.
_SPECIAL = [0.5, -0.0, np.inf, -np.inf, np.nan]
IDENTITY_INPUTS = {
    "f32[3,5] with inf, nan, -0, 3e38": np.array(
        [_SPECIAL, [3e38, -3e38, 1e-30, -7.25, 1.0], [2.0, 0.1, -0.1, 65504.0, 1e-45]],
        dtype=np.float32,
    ),
    "bf16[2,5] with inf, nan, -0, 3e38": np.array(
        [_SPECIAL, [3e38, -3e38, 1e-30, -0.0, 2.0]], dtype=BF16
    ),
    "f16[8] with inf, nan, -0, 65504": np.array(
        [*_SPECIAL, 65504.0, -65504.0, 6e-8], dtype=np.float16
    ),
    "f32[] -0": np.array(-0.0, dtype=np.float32),
}


def _cse_args(shape: tuple[int, ...], dtype: type | np.dtype, seed: int, big: float, huge: float):
    """a, b, c, d signed (so a + b and c + d are negative as often as not), with six planted
    elements: a + b == 0, a negative sum, a + b so large that its square overflows the dtype
    while (a + b) * (c + d) does not, c, d of opposite signs so large against their sum that
    (a + b) * c and (a + b) * d overflow while (a + b) * (c + d) == -huge does not, a + b that
    overflows to inf itself (the product is inf: 0 * inf would be nan), a negative a + b
    times c + d == 0 (the product is -0.0), and where there is room a seventh: a = b = -0.0
    (a + b is -0.0, and the product of it and a positive c + d is -0.0). The elements after
    those are left for the tests' signed zeros (CSE_ZERO_ROOM of them at least)."""
    rng = np.random.default_rng(seed)
    a, b, c, d = rng.uniform(-1.0, 1.0, size=(4, *shape))
    top = float(ml_dtypes.finfo(dtype).max)
    planted = (
        (1.0, -1.0, 0.5, 0.25),
        (-1.0, -0.5, 0.5, 0.5),
        (big, big, 1 / big, 1 / big),
        (huge, huge, -4.0, 3.5),
        (top, top, 1.0, 0.5),
        (-1.0, -0.5, 0.5, -0.5),
        (-0.0, -0.0, 0.5, 0.25),
    )
    for index, values in enumerate(planted[: a.size]):
        for array, value in zip((a, b, c, d), values, strict=True):
            array.flat[index] = value
    return tuple(array.astype(dtype) for array in (a, b, c, d))


CSE_PLANTED = 7  # the elements _cse_args plants; the ones after them are drawn
CSE_ZERO_ROOM = 5  # the tests plant signed zeros after them in every input with this many more
CSE_INPUTS = {
    "f32[12]": _cse_args((12,), np.float32, 0, 2e19, 1e38),
    "f16[3,4]": _cse_args((3, 4), np.float16, 1, 200.0, 16000.0),
    "bf16[1,12]": _cse_args((1, 12), BF16, 2, 2e19, 1e38),
    "f32[] a negative sum": tuple(np.array(v, np.float32) for v in (-1.0, -0.5, 0.5, 0.25)),
}


def qk(q_shape=(8, 16), k_shape=(8, 16), seed=1, dtype: type | np.dtype = np.float32):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=q_shape).astype(dtype),
        rng.normal(size=k_shape).astype(dtype),
    )


# attention_scores' cases: q shape, k shape, dtype. seq_q and seq_k differ; a side of size 1
# (seq_q = 1, seq_k = 1) makes the dot a matrix-vector product, which XLA lays out otherwise
# (it may keep a transpose there), so the tests check the folding where every size is 2 or more
# and the result everywhere.
SCORE_CASES = (
    ((5, 3), (7, 3), np.float32),
    ((4, 8), (3, 8), BF16),
    ((3, 6), (5, 6), np.float16),
    ((1, 6), (9, 6), np.float32),
    ((2, 6), (1, 6), BF16),
)


# --- test-owned programs ------------------------------------------------------------------
# Other programs that the same passes rewrite (transpose folding, fusion, CSE, algebraic
# simplification); none of them is an answer to a task.


def lhs_transposed(a, b):
    return a.T @ b


def row_norms(x):
    return jnp.sqrt(jnp.sum(jnp.sin(x) * jnp.cos(x), axis=-1))


def repeated_affine(x, y):
    return (x * y + 1.0) * jnp.sin(x * y + 1.0)


def quarter(x):
    return x / 4.0


def exp_gap(x):
    return jnp.exp(x) - x * 2.0


def moments(x):
    return jnp.mean(x), jnp.mean(x * x)


def scaled_sine(s, x):
    return s * jnp.sin(x)


def ignores_second(x, unused):
    return jnp.exp(x) - 1.0


def pytree_affine(params, xs):
    """Arguments that are pytrees: a dict and a tuple (one argument each, as jax.jit takes them)."""
    return params["w"] * xs[0] + params["b"] * xs[1]


def loop_stats(x):
    def step(_, v):
        return lax.cond(jnp.sum(v) > 0, lambda u: u * 2.0, lambda u: u - 1.0, v)

    y = lax.fori_loop(0, 3, step, x)
    return y, jnp.max(y)


# A name with a dot, as wrappers that copy a qualified name give: the module is jit_loop.stats
# and so are the dump's file names (module_0000.jit_loop.stats.0006.<pipeline>...).
loop_stats.__name__ = loop_stats.__qualname__ = "loop.stats"


def cse_args(shape: int | tuple[int, ...] = 8):
    return tuple(uniform(shape, seed=s) for s in range(4))


def pair(shape: int | tuple[int, ...] = 8):
    return uniform(shape, seed=0), uniform(shape, seed=1)


def matrix_arg():
    return uniform((4, 8))


def transposed_args(rows=16, left=8, right=5):
    return uniform((rows, left), seed=0), uniform((rows, right), seed=1)


DUMPED = {  # program, args, the opcode the optimization removes or adds
    "transpose": (lhs_transposed, transposed_args(), "transpose", passes.first_pass_removing),
    "fusion": (row_norms, (matrix_arg(),), "fusion", passes.first_pass_adding),
    "add": (repeated_affine, pair(), "add", passes.first_pass_removing),
    "divide": (quarter, (uniform(),), "divide", passes.first_pass_removing),
    "refused": (exp_gap, (uniform(),), "fusion", passes.first_pass_adding),
    # a dotted module name, tuple-shaped instructions, a while loop's body and condition and a
    # conditional's branches
    "loop": (loop_stats, (uniform(4),), "subtract", passes.first_pass_removing),
}


STAGE_PROGRAMS = {  # several arities, a tuple result, one function at two dtypes of one shape
    # (f32 then bf16) and at two shapes (size 1), a NumPy scalar argument and a Python float (weakly
    # typed: jax.jit multiplies in bfloat16 where an f32[] would promote to float32), an argument
    # the function ignores (jit prunes it), two different functions of one name (both `<lambda>`)
    # at the same argument, arguments that are pytrees (a dict holding a Python float, a tuple);
    # twice (scaled_sine, pytree_affine) two calls whose arguments differ only in weak typing (a
    # Python float or an f32[] at the same shapes and dtypes: two programs, one in bfloat16, one
    # promoting to float32), in either order; jax.jit names each module after its function
    "repeated_affine f32[3,4]": (repeated_affine, pair((3, 4))),
    "moments f32[6]": (moments, (uniform(6, 4),)),
    "moments bf16[6]": (moments, (uniform(6, 4, BF16),)),
    "lhs_transposed 5x1, 5x7": (lhs_transposed, transposed_args(5, 1, 7)),
    "lhs_transposed 16x8, 16x5": (lhs_transposed, transposed_args()),
    "scaled_sine f32[] (a NumPy scalar), f32[4]": (scaled_sine, (np.float32(1.5), uniform(4))),
    "scaled_sine f32[] (a NumPy scalar), bf16[4]": (
        scaled_sine,
        (np.float32(1.5), uniform(4, dtype=BF16)),
    ),
    "scaled_sine 1.5 (a Python float), bf16[4]": (scaled_sine, (1.5, uniform(4, dtype=BF16))),
    "ignores_second f32[4], f32[2,3]": (ignores_second, (uniform(4), uniform((2, 3), 2))),
    "pytree_affine {w: f32[3], b: 0.5}, (f32[3], f32[3])": (
        pytree_affine,
        ({"w": uniform(3), "b": 0.5}, (uniform(3, 1), uniform(3, 2))),
    ),
    "pytree_affine {w: bf16[3], b: 0.5}, (bf16[3], bf16[3])": (
        pytree_affine,
        ({"w": uniform(3, dtype=BF16), "b": 0.5}, (uniform(3, 1, BF16), uniform(3, 2, BF16))),
    ),
    "pytree_affine {w: bf16[3], b: f32[]}, (bf16[3], bf16[3])": (
        pytree_affine,
        (
            {"w": uniform(3, dtype=BF16), "b": np.float32(0.5)},
            (uniform(3, 1, BF16), uniform(3, 2, BF16)),
        ),
    ),
    "<lambda> x * 2.0 at f32[8]": (lambda x: x * 2.0, (uniform(),)),
    "<lambda> sin(x) at f32[8]": (lambda x: jnp.sin(x), (uniform(),)),
}


PINNED = (  # one pinned optimized module per program, in this order
    (repeated_affine, pair()),
    (quarter, (uniform(),)),
    (row_norms, (matrix_arg(),)),
    (lhs_transposed, transposed_args()),
    (exp_gap, (uniform(),)),
    (moments, (uniform(),)),
)


# --- the banks the predict tasks are judged on -------------------------------------------------
# Each program takes x and a count n (programs that do not name n ignore it). The tests draw the
# case: REWRITES for x of rank 0 to 3 (every dimension 2 or more) and REWRITE_DTYPES, n from 1 to
# 8; KERNELS for a matrix x (each dimension 2 to 16) of KERNEL_DTYPES, n from 0 to 5.


def _repeated(step, x, n: int):
    for _ in range(n):
        x = step(x)
    return x


REWRITES = {
    "x * 1.0": lambda x, n: x * 1.0,
    "x + 0.0": lambda x, n: x + 0.0,
    "x * 0.0": lambda x, n: x * 0.0,
    "x - x": lambda x, n: x - x,
    "x / 2.0": lambda x, n: x / 2.0,
    "x / 3.0": lambda x, n: x / 3.0,
    "jnp.negative(-x)": lambda x, n: jnp.negative(-x),
    "x * 2.0 + x * 2.0": lambda x, n: x * 2.0 + x * 2.0,
    "x + x": lambda x, n: x + x,
    "jnp.sqrt(4.0) * x": lambda x, n: jnp.sqrt(4.0) * x,
    "x * x / x": lambda x, n: x * x / x,
    "0.0 - x": lambda x, n: 0.0 - x,
    "jnp.exp(x) * 1.0": lambda x, n: jnp.exp(x) * 1.0,
    "jnp.where(False, x * 5.0, x + 5.0)": lambda x, n: jnp.where(False, x * 5.0, x + 5.0),
    "(x * 1.0) / 1.0 - 0.0": lambda x, n: (x * 1.0) / 1.0 - 0.0,
    "jnp.negative applied n times": lambda x, n: _repeated(jnp.negative, x, n),
    "v + 1.0 applied n times to x": lambda x, n: _repeated(lambda v: v + 1.0, x, n),
    "v * 1.0 applied n times to x": lambda x, n: _repeated(lambda v: v * 1.0, x, n),
    "v - v applied n times to x": lambda x, n: _repeated(lambda v: v - v, x, n),
    "sum of n copies of x * 2.0": lambda x, n: sum([x * 2.0 for _ in range(n - 1)], x * 2.0),
}
REWRITE_DTYPES = ("float32", "bfloat16", "float16", "int32")

KERNELS = {
    "tanh(sin(x) * 2 + 1)": lambda x, n: jnp.tanh(jnp.sin(x) * 2.0 + 1.0),
    "sum(exp(x), axis=1)": lambda x, n: jnp.sum(jnp.exp(x), axis=1),
    "x @ w + 1 (w ones, x.shape[1] by 4)": lambda x, n: x @ np.ones((x.shape[1], 4), x.dtype) + 1.0,
    "sort(x) * 2": lambda x, n: jnp.sort(x) * 2.0,
    "x.T * 2 + 1": lambda x, n: x.T * 2.0 + 1.0,
    "softmax(x, axis=-1)": lambda x, n: jax.nn.softmax(x, axis=-1),
    "x - mean(x, axis=-1, keepdims=True)": lambda x, n: x - jnp.mean(x, axis=-1, keepdims=True),
    "concatenate([x, x * 2])": lambda x, n: jnp.concatenate([x, x * 2.0]),
    "x[::-1] + x": lambda x, n: x[::-1] + x,
    "reshape(x * 2, x.shape[::-1]) + 1": lambda x, n: jnp.reshape(x * 2.0, x.shape[::-1]) + 1.0,
    "where(x > 0, x, exp(x) - 1)": lambda x, n: jnp.where(x > 0, x, jnp.exp(x) - 1.0),
    "fori_loop(0, n, v * 2)": lambda x, n: lax.fori_loop(0, n, lambda _, v: v * 2.0, x),
    "x / norm(x)": lambda x, n: x / jnp.linalg.norm(x),
    "pad(x, 1) * 2": lambda x, n: jnp.pad(x, 1) * 2.0,
    "jnp.tanh applied n times": lambda x, n: _repeated(jnp.tanh, x, n),
}
KERNEL_DTYPES = ("float32", "bfloat16", "float16")

# The case every program was judged on before cases were drawn: x f32[3,4], n = 3.
BANK_INPUT = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
BANK_N = 3


_F32 = ELEMENTWISE_INPUTS["f32[3,5]"]


def _demo(name: str, args: tuple, about: str) -> Recipe:
    return Recipe(lambda m: (getattr(m, name), args), about)


SHOWN = {
    "stages": given(repeated_affine, pair(), "(x * y + 1) * sin(x * y + 1), each f32[8]"),
    "algebraic_identity": _demo("algebraic_identity", (_F32,), "algebraic_identity(x f32[3,5])"),
    "folded_scale": _demo("folded_scale", (_F32,), "folded_scale(x f32[3,5])"),
    "shared_subexpression": _demo(
        "shared_subexpression", cse_args(), "shared_subexpression(a, b, c, d), each f32[8]"
    ),
    "dead_branch": _demo("dead_branch", (_F32,), "dead_branch(x f32[3,5])"),
    "elementwise_chain": _demo("elementwise_chain", (_F32,), "elementwise_chain(x f32[3,5])"),
    "attention_scores": _demo(
        "attention_scores", qk(), "attention_scores(q f32[8,16], k f32[8,16])"
    ),
    "refused_rewrites": _demo("refused_rewrites", (_F32,), "refused_rewrites(x f32[3,5])"),
}
