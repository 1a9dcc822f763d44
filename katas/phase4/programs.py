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


# An odd-shaped float32 matrix and a bfloat16 vector: an
# elementwise demonstration keeps the shape and dtype of its input, and the optimization must show
# at each of them.
ELEMENTWISE_INPUTS = {"f32[3,5]": uniform((3, 5), seed=3), "bf16[6]": uniform(6, 4, BF16)}


def qk(q_shape=(8, 16), k_shape=(8, 16), seed=1):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=q_shape).astype(np.float32),
        rng.normal(size=k_shape).astype(np.float32),
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
}


STAGE_PROGRAMS = {  # several arities, a tuple result, bf16, one function at two shapes (size 1)
    "repeated_affine f32[3,4]": (repeated_affine, pair((3, 4))),
    "moments bf16[6]": (moments, (uniform(6, 4, BF16),)),
    "lhs_transposed 5x1, 5x7": (lhs_transposed, transposed_args(5, 1, 7)),
    "lhs_transposed 16x8, 16x5": (lhs_transposed, transposed_args()),
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
