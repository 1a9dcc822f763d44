"""Red team, phase 4, round 13: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- shared truth tables (measured on CPU) used by the predict decoys, each with ONE mistake ---

_RT13_ARITH = {
    "x * 1.0": 0,
    "x + 0.0": 0,
    "x * 0.0": 1,
    "x / 2.0": 1,
    "x / 3.0": 1,
    "jnp.negative(-x)": 0,
    "x * 2.0 + x * 2.0": 2,
    "x + x": 1,
    "jnp.sqrt(4.0) * x": 1,
    "x * x / x": 2,
    "0.0 - x": 1,
    "jnp.exp(x) * 1.0": 0,
    "jnp.where(False, x * 5.0, x + 5.0)": 1,
    "(x * 1.0) / 1.0 - 0.0": 0,
    "v * 1.0 applied n times to x": 0,
}


def _rt13_true_arith(program, x, n):
    integer = jnp.issubdtype(x.dtype, jnp.integer)
    if program == "x - x":
        return 0 if integer else 1
    if program == "jnp.negative applied n times":
        return n % 2
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v - v applied n times to x":
        return 0 if integer else n
    if program == "sum of n copies of x * 2.0":
        return n
    return _RT13_ARITH[program]


_RT13_KERNEL_NO = {
    "x @ w + 1 (w ones, x.shape[1] by 4)",
    "sort(x) * 2",
    "softmax(x, axis=-1)",
    "x - mean(x, axis=-1, keepdims=True)",
    "x / norm(x)",
}


def _rt13_true_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program not in _RT13_KERNEL_NO


# --- surviving_ops ------------------------------------------------------------------------------


@wrong(
    "surviving_ops",
    why="'CSE': the learner believes CSE shares every add of the same value x * 2.0, so 'sum of "
    "n copies of x * 2.0' keeps one multiply and one add for any n >= 2; but the adds of "
    "((a + a) + a) + a have different operands (a running sum), XLA keeps n - 1 adds: truth is "
    "n, this answers 2 at n = 3 (f32[3,4]) and at n = 8",
)
def _rt13_surviving_cse_collapses_running_sum(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    if program == "sum of n copies of x * 2.0":
        return min(n, 2)
    return _rt13_true_arith(program, x, n)


@wrong(
    "surviving_ops",
    why="'from what algebraic simplification may do to floats': the learner reasons from IEEE "
    "(-0.0 + 0.0 is +0.0, so x + 0.0 is not an identity) and predicts the add survives for "
    "float x, while x - 0.0 (exact) goes; XLA deletes x + 0.0 anyway (README): truth 0, this "
    "answers 1 for 'x + 0.0' at f32[3,4], bf16[], f16[2,2,2] (int32: 0, the convert never "
    "gives -0.0)",
)
def _rt13_surviving_ieee_plus_zero_kept(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    if program == "x + 0.0" and not jnp.issubdtype(x.dtype, jnp.integer):
        return 1
    return _rt13_true_arith(program, x, n)


# --- one_kernel ---------------------------------------------------------------------------------


@wrong(
    "one_kernel",
    why="'constant folding': the learner reasons that x @ ones is a constant operand, so XLA "
    "rewrites the dot into a row sum (a reduce), which then fuses with the + 1 into one loop; "
    "on CPU the dot stays a dot (a library call / its own instruction) next to a fusion: "
    "truth False, this answers True for 'x @ w + 1 (w ones, ...)' at every f32/bf16/f16 matrix",
)
def _rt13_kernel_ones_dot_becomes_rowsum(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program.startswith("x @ w + 1"):
        return True
    return _rt13_true_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'ops that only move elements ride along': the learner thinks pad grows the array, so "
    "XLA must allocate and fill the bigger buffer first (a pad of its own) before * 2; XLA "
    "fuses pad and multiply into one kLoop fusion: truth True, this answers False for "
    "'pad(x, 1) * 2' at f32[3,4] (and every matrix)",
)
def _rt13_kernel_pad_materialised(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program == "pad(x, 1) * 2":
        return False
    return _rt13_true_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'concatenate rides along': the learner thinks concatenate needs both operands finished "
    "in memory (x * 2 computed by its own loop, then copied in), so only small matrices fuse; "
    "XLA fuses the concatenate with its multiply at every size: truth True, this answers False "
    "for 'concatenate([x, x * 2])' when x has more than 64 elements (f32[16,16], bf16[9,8])",
)
def _rt13_kernel_concat_large_splits(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program == "concatenate([x, x * 2])":
        return int(np.prod(x.shape)) <= 64
    return _rt13_true_kernel(program, x, n)


# --- refused_rewrites ---------------------------------------------------------------------------


@wrong(
    "refused_rewrites",
    why="'the optimized HLO keeps two multiplies': the learner doubles by adding, (x + x) * 3.0, "
    "thinking of that as 'times two, then times three'; the jaxpr and the optimized HLO hold one "
    "add and one multiply, not two multiplies: wrong on f32[3,5] and every input",
)
def _rt13_refused_double_by_add(x):
    return (x + x) * 3.0, x - x


# --- algebraic_identity -------------------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="'called eagerly alike ... returns x too, -0.0 included': the learner subtracts a "
    "negative zero, believing x - (-0.0) exact like x - 0.0; but -0.0 - (-0.0) is +0.0 in IEEE, "
    "so op by op (jit disabled) f32[] -0.0 returns +0.0 while the compiled program (XLA removed "
    "both ops) returns -0.0: wrong on 'f32[] -0' and every input holding -0.0",
)
def _rt13_identity_minus_negative_zero(x):
    return (x - -0.0) * 1.0


# --- pass_timeline ------------------------------------------------------------------------------

_RT13_FILE = re.compile(
    r"^module_\d+\.(?P<name>.+)\.(?P<seq>\d{4,})\.(?P<pipe>[^.]+)\.after_(?P<pass>.+?)"
    r"(?:\.before_.+)?\.txt$"
)


def _rt13_counts(text):
    counts = Counter()
    for comp in parse_hlo(text):
        for inst in comp:
            counts[inst.opcode] += 1
    return counts


@wrong(
    "pass_timeline",
    why="'Order by seq': the learner sorts by (pipeline, int(seq)), thinking seq restarts in "
    "each pipeline; seq is one counter over the whole compile and pipelines do not run in "
    "alphabetical order, so a real CPU dump comes out reordered (loop_stats: "
    "HLO_passes_after_layout_assignment 0020-0030 sort before async-collective 0000, "
    "simplification 0007 after them)",
)
def _rt13_timeline_grouped_by_pipeline(dump_dir: str) -> list[tuple[str, Counter]]:
    found = []
    for path in Path(dump_dir).iterdir():
        m = _RT13_FILE.match(path.name)
        if m:
            found.append((m["pipe"], int(m["seq"]), m["pass"], path))
    found.sort(key=lambda t: (t[0], t[1]))
    return [(p, _rt13_counts(path.read_text())) for _, _, p, path in found]


@wrong(
    "pass_timeline",
    why="'One entry per per-pass file': the learner drops the `after_pipeline-start` files "
    "(README: 'plus one file at each pipeline start', read as 'not a pass'); they are per-pass "
    "files with pass name pipeline-start, so the timeline is shorter and shifted: wrong on every "
    "real dump (loop_stats has ~10 of them, the first file is one)",
)
def _rt13_timeline_skips_pipeline_start(dump_dir: str) -> list[tuple[str, Counter]]:
    found = []
    for path in Path(dump_dir).iterdir():
        m = _RT13_FILE.match(path.name)
        if m and m["pass"] != "pipeline-start":
            found.append((int(m["seq"]), m["pass"], path))
    found.sort(key=lambda t: t[0])
    return [(p, _rt13_counts(path.read_text())) for _, p, path in found]


# --- named_passes -------------------------------------------------------------------------------


@wrong(
    "named_passes",
    why="'divide: removed the divide of x / 4.0': the learner answers from task 3's title "
    "('constant folding: x / sqrt(2) becomes one multiply') instead of the dump: the divide by a "
    "constant is rewritten by algsimp, not constant_folding (which only folds ops on constants); "
    "the other three keys are right",
)
def _rt13_named_divide_by_constant_folding() -> dict[str, str]:
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "cse",
        "divide": "constant_folding",
    }


# --- shared_subexpression -----------------------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="'a zero product keeps its sign' (and 'a + b ... inf itself'): the learner guards the "
    "zero-sum case against 0 * inf with jnp.where(c + d == 0, 0.0, (a + b) * (c + d)); the "
    "jaxpr has 3 adds and the optimized HLO 2 (CSE), but a negative a + b times c + d == 0 must "
    "give -0.0 and this gives +0.0 (planted (-1.0, -0.5, 0.5, -0.5) in f32[8]), and inf * 0 "
    "must be nan",
)
def _rt13_cse_guarded_zero_sum(a, b, c, d):
    return jnp.where(c + d == 0, 0.0, (a + b) * (c + d))
