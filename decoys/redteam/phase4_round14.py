"""Red team, phase 4, round 14: wrong answers of kinds earlier rounds did not write (a debug
print and a cumulative sum left in a chain, a power instead of an exponential, a rank-1
predicate, a defensive copy before the transpose, a zero computed against a third multiply,
a timeline keyed by pass name, an off-by-one that never looks at the last entry, transcendental
ops believed to be library calls, integer algebra applied to a float constant, C++ class names)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- truth tables (measured on CPU) the predict decoys start from, each then given ONE mistake --

_RT14_ARITH = {
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


def _rt14_true_arith(program, x, n):
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
    return _RT14_ARITH[program]


_RT14_KERNEL_NO = {
    "x @ w + 1 (w ones, x.shape[1] by 4)",
    "sort(x) * 2",
    "softmax(x, axis=-1)",
    "x - mean(x, axis=-1, keepdims=True)",
    "x / norm(x)",
}


def _rt14_true_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program not in _RT14_KERNEL_NO


# --- elementwise_chain --------------------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="'that XLA turns into ONE loop fusion': the learner left a jax.debug.print in the middle "
    "of the chain while checking values (it prints, the result is right); the print is a "
    "side-effecting host callback (custom-call) that needs its operand materialised, so the "
    "optimized ENTRY holds two kLoop fusions and a custom-call: wrong on f32[3,5] and every input",
)
def _rt14_chain_debug_print_left_in(x):
    y = jnp.sin(x) * 2.0
    jax.debug.print("chain midpoint {}", y)
    return jnp.tanh(y + 1.0) - 0.5


@wrong(
    "elementwise_chain",
    why="'At least four elementwise ops': the learner counts jnp.cumsum as elementwise (same "
    "shape out, one output per input); it is a scan lowered to a reduce-window that cuts the "
    "loop: the optimized ENTRY holds 3 fusions (the reduce-window in one of its own) for "
    "f32[3,5], bf16[6] and f16[1,5] (every input with a last axis)",
)
def _rt14_chain_through_cumsum(x):
    y = jnp.sin(x) * 2.0 + 1.0
    y = jnp.cumsum(y, axis=-1 if y.ndim else None).reshape(y.shape)
    return y * 0.5


# --- algebraic_identity -------------------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="'same dtype': the learner subtracts a zero ARRAY, jnp.zeros(jnp.shape(x)), forgetting "
    "dtype= (jnp.zeros defaults to float32, strongly typed), then * 1.0; XLA removes the "
    "subtract and the multiply and the values are x, but a bfloat16 or float16 x is promoted: "
    "'bf16[2,5] with inf, nan, -0, 3e38' and 'f16[8] ...' come back float32 (float32 inputs "
    "are right)",
)
def _rt14_identity_zeros_without_dtype(x):
    return (x - jnp.zeros(jnp.shape(x))) * 1.0


# --- shared_subexpression ----------------------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="'whether jit compiles the function or its ops run one by one (...nothing simplified)': "
    "the learner gets the third add from Python's sum([c, d]), which is (0 + c) + d; the jaxpr "
    "has 3 adds and XLA deletes 0 + c (2 left), but op by op 0 + (-0.0) is +0.0, so for "
    "c = d = -0.0 (a zero sum, in the domain) and a + b = 1.5 the eager result is +0.0 while "
    "(a + b) * (c + d) is -0.0 (f32[], and any element holding c = d = -0.0)",
)
def _rt14_cse_builtin_sum(a, b, c, d):
    return (a + b) * sum([c, d])


# --- dead_branch ---------------------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="'StableHLO holds an `exponential`': the learner writes exp(x) as jnp.e ** x (the same "
    "function on paper) on the dead side of jnp.where(True, ...); that lowers to "
    "stablehlo.power of a broadcast e, so the before text holds no exponential at all: wrong "
    "on f32[3,5] and every input (the value x + 1 is right)",
)
def _rt14_dead_power_of_e(x):
    return jnp.where(True, x + 1.0, jnp.e**x)


@wrong(
    "dead_branch",
    why="'Return x + 1' (same shape): the learner builds the constant predicate as an array, "
    "jnp.array([True]), so it 'looks like data'; it has shape (1,) and broadcasts: a rank-0 x "
    "(f32[] 3e38) comes back with shape (1,), not (); matrices and vectors keep their shape",
)
def _rt14_dead_rank_one_predicate(x):
    return jnp.where(jnp.array([True]), x + 1.0, jnp.exp(x))


# --- attention_scores ----------------------------------------------------------------------------


@wrong(
    "attention_scores",
    why="'the jaxpr transposes the input k': the learner first takes a defensive copy, "
    "jnp.array(k), then transposes that; the jaxpr is `c = copy b; d = transpose c`, a "
    "transpose of the copy, not of the input k (values and dtype are right): wrong on every "
    "case, e.g. q f32[5,3], k f32[7,3]",
)
def _rt14_scores_transpose_of_copy(q, k):
    return q @ jnp.array(k).T


# --- refused_rewrites ----------------------------------------------------------------------------


@wrong(
    "refused_rewrites",
    why="'the optimized HLO keeps two multiplies ... and one subtract': the learner makes the "
    "zero as (2x)*3 - x*6, 'equal in real algebra', expecting the subtract to stay; it does and "
    "the value is 0, but x * 6.0 is a third multiply XLA does not merge with (x*2)*3: the "
    "optimized HLO holds more than two multiplies on f32[3,5] and every input",
)
def _rt14_refused_zero_against_single_multiply(x):
    six = x * 2.0 * 3.0
    return six, six - x * 6.0


# --- pass_timeline -------------------------------------------------------------------------------

_RT14_FILE = re.compile(
    r"^module_\d+\.(?P<name>.+)\.(?P<seq>\d{4,})\.(?P<pipe>[^.]+)\.after_(?P<pass>.+?)"
    r"(?:\.before_.+)?\.txt$"
)


def _rt14_counts(text):
    counts = Counter()
    for comp in parse_hlo(text):
        for inst in comp:
            counts[inst.opcode] += 1
    return counts


@wrong(
    "pass_timeline",
    why="'One entry per per-pass file': the learner collects into a dict keyed by pass name "
    "(then list(d.items())), so every repeated name (pipeline-start appears ~10 times, algsimp "
    "several) keeps one slot at its first position with the LAST file's counts: wrong on every "
    "real dump (repeated_affine, loop_stats)",
)
def _rt14_timeline_keyed_by_pass(dump_dir: str) -> list[tuple[str, Counter]]:
    found = []
    for path in Path(dump_dir).iterdir():
        m = _RT14_FILE.match(path.name)
        if m:
            found.append((int(m["seq"]), m["pass"], path))
    found.sort(key=lambda t: t[0])
    by_pass: dict[str, Counter] = {}
    for _, name, path in found:
        by_pass[name] = _rt14_counts(path.read_text())
    return list(by_pass.items())


# --- pass_that_changed ---------------------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="'The first entry whose count differs from the entry before it': off-by-one, the loop "
    "runs over range(1, len(timeline) - 1) and never looks at the last entry: "
    "[('a', {add: 2}), ('b', {add: 2}), ('c', {add: 1})] with 'add' gives None, truth 'c'",
)
def _rt14_changed_skips_last(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    for i in range(1, len(timeline) - 1):
        if timeline[i][1].get(opcode, 0) != timeline[i - 1][1].get(opcode, 0):
            return timeline[i][0]
    return None


# --- one_kernel ----------------------------------------------------------------------------------

_RT14_TRANSCENDENTAL = ("tanh", "sin", "exp")


@wrong(
    "one_kernel",
    why="'which ops can share a loop': the learner believes transcendental functions (tanh, "
    "sin, exp) are libm calls on CPU that cannot be inlined into a loop fusion, so every "
    "program holding one is more than one kernel; XLA CPU fuses them (polynomial expansions): "
    "truth True, this answers False for 'tanh(sin(x) * 2 + 1)', 'sum(exp(x), axis=1)', "
    "'where(x > 0, x, exp(x) - 1)' and 'jnp.tanh applied n times' (n >= 1) at f32[3,4]",
)
def _rt14_kernel_transcendentals_are_calls(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if any(name in program for name in _RT14_TRANSCENDENTAL):
        return False
    return _rt14_true_kernel(program, x, n)


# --- surviving_ops -------------------------------------------------------------------------------


@wrong(
    "surviving_ops",
    why="'and to integers': the learner applies integer algebra (exact, so x*2 + x*2 -> x*4, "
    "and n copies -> x*(2n)) to an int32 x, forgetting that x * 2.0 converts x to float32 "
    "first, where the constants are floats and XLA does not distribute; truth 2 for "
    "'x * 2.0 + x * 2.0' and n for 'sum of n copies of x * 2.0' (int32[3,4], n = 3: 3), this "
    "answers 1",
)
def _rt14_surviving_int_distributes_float_constant(
    program: str, x: jax.ShapeDtypeStruct, n: int
) -> int:
    if jnp.issubdtype(x.dtype, jnp.integer) and program in (
        "x * 2.0 + x * 2.0",
        "sum of n copies of x * 2.0",
    ):
        return 1
    return _rt14_true_arith(program, x, n)


# --- named_passes --------------------------------------------------------------------------------


@wrong(
    "named_passes",
    why="'pass names exactly as they appear in the dump file names': the learner answers with "
    "the XLA C++ class names of the passes (TransposeFolding, CpuInstructionFusion, HloCSE, "
    "AlgebraicSimplifier) read in the XLA source, not the names in the files "
    "(transpose-folding, fusion, cse, algsimp): all four keys wrong",
)
def _rt14_named_cpp_class_names() -> dict[str, str]:
    return {
        "transpose": "TransposeFolding",
        "fusion": "CpuInstructionFusion",
        "add": "HloCSE",
        "divide": "AlgebraicSimplifier",
    }
