"""The programs phase 4's tests compile, and what `katas show` compiles for each task.

The canonical form of each optimization (`canon_*`), the inputs the demonstrations run on, and
the programs whose per-pass dumps the pass-reading tasks read. `katas show` compiles the
learner's demonstration on the first of `ELEMENTWISE_INPUTS`, or the tests' program.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np

from kata_harness.programs import Recipe, given
from xla_inspect import passes

BF16 = ml_dtypes.bfloat16


def uniform(
    n: int | tuple[int, ...] = 8, seed: int = 0, dtype: type | np.dtype = np.float32
) -> np.ndarray:
    shape = n if isinstance(n, tuple) else (n,)
    return np.random.default_rng(seed).uniform(0.1, 1.0, size=shape).astype(dtype)


# An odd-shaped float32 matrix and a bfloat16 vector (the canonical f32[8] is in the pins): an
# elementwise demonstration keeps the shape and dtype of its input, and the optimization must show
# at each of them.
ELEMENTWISE_INPUTS = {"f32[3,5]": uniform((3, 5), seed=3), "bf16[6]": uniform(6, 4, BF16)}


def qk(q_shape=(8, 16), k_shape=(8, 16), seed=1):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=q_shape).astype(np.float32),
        rng.normal(size=k_shape).astype(np.float32),
    )


# --- test-owned programs: the canonical form of each optimization -------------------------


def canon_identity(x):
    return (x * 1.0 + 0.0) / 1.0


def canon_folded(x):
    return x / jnp.sqrt(2.0)


def canon_cse(a, b, c, d):
    return (a + b) * c + (a + b) * d


def canon_dead(x):
    return jnp.where(True, x + 1.0, jnp.exp(x))


def canon_chain(x):
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0)


def canon_attention(q, k):
    return q @ k.T


def canon_refused(x):
    return x * 2.0 * 3.0, x - x


def cse_args(shape: int | tuple[int, ...] = 8):
    return tuple(uniform(shape, seed=s) for s in range(4))


DUMPED = {  # program, args, the opcode the optimization removes or adds
    "transpose": (canon_attention, qk(), "transpose", passes.first_pass_removing),
    "fusion": (canon_chain, (uniform(),), "fusion", passes.first_pass_adding),
    "add": (canon_cse, cse_args(), "add", passes.first_pass_removing),
    "divide": (canon_folded, (uniform(),), "divide", passes.first_pass_removing),
    "refused": (canon_refused, (uniform(),), "fusion", passes.first_pass_adding),
}


STAGE_PROGRAMS = {  # several arities, a tuple result, bf16, and one function at two shapes
    "cse f32[3,4]": (canon_cse, cse_args((3, 4))),
    "refused bf16[6]": (canon_refused, (uniform(6, 4, BF16),)),
    "attention 5x3 @ (7x3).T": (canon_attention, qk((5, 3), (7, 3))),
    "attention 8x16 @ (8x16).T": (canon_attention, qk()),
}


PINNED = (  # one pinned optimized module per optimization, in this order
    (canon_identity, (uniform(),)),
    (canon_folded, (uniform(),)),
    (canon_cse, cse_args()),
    (canon_dead, (uniform(),)),
    (canon_chain, (uniform(),)),
    (canon_attention, qk()),
    (canon_refused, (uniform(),)),
)


_F32 = ELEMENTWISE_INPUTS["f32[3,5]"]


def _demo(name: str, args: tuple, about: str) -> Recipe:
    return Recipe(lambda m: (getattr(m, name), args), about)


SHOWN = {
    "stages": given(canon_cse, cse_args(), "(a + b) * c + (a + b) * d, each f32[8]"),
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
