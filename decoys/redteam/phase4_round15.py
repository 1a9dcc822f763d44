"""Red team, phase 4, round 15: wrong answers of kinds earlier rounds did not write (a StableHLO
text printed with debug locations, subtracting a negative zero, a reshape taken for a transpose,
a module-name regex without dots, fused computations skipped as double counting, opcode sets
instead of counts, Counter.get's None against an explicit 0, presence instead of count, the
pipeline field or the next pass read as the pass name, integer shifts, NaN-payload caution,
tiny dots and short softmax rows believed to fuse)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- stages --------------------------------------------------------------------------------------


@wrong(
    "stages",
    why="'(before, after) ... StableHLO text': the learner prints the StableHLO with "
    "as_text(debug_info=True) 'to see which source line each op came from'; the before text then "
    "carries loc(...) attributes and #loc definitions, so it is not the StableHLO text jax.jit "
    "gives (lowered.as_text()): differs on repeated_affine f32[3,4] and every program",
)
def _rt15_stages_debug_locations(f, *args) -> tuple[str, str]:
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(debug_info=True), lowered.compile().as_text()


# --- algebraic_identity ----------------------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="'Return x itself (for every float: -0.0 ...) compiled and called eagerly alike': the "
    "learner knows x + 0.0 fails on -0.0 and 'fixes' it by subtracting a negative zero, "
    "(x * 1.0) - (-0.0); XLA deletes both ops (compiled -0.0 stays -0.0), but eagerly "
    "-0.0 - (-0.0) is +0.0: wrong on 'f32[] -0' and every input holding -0.0, op by op",
)
def _rt15_identity_minus_negative_zero(x) -> jax.Array:
    return (x * 1.0) - (-0.0)


# --- attention_scores ------------------------------------------------------------------------------


@wrong(
    "attention_scores",
    why="'q @ k^T ... an explicit transpose of k': the learner flips k's shape with "
    "k.reshape(k.shape[::-1]) (same shape as k.T, so the matmul type-checks) instead of "
    "transposing; that reorders elements row-major, not a transpose: wrong values on "
    "q f32[5,3], k f32[7,3] and every case with seq_k and dim both > 1",
)
def _rt15_scores_reshape_for_transpose(q, k) -> jax.Array:
    return q @ k.reshape(k.shape[::-1])


# --- pass_timeline ---------------------------------------------------------------------------------

_rt15_JIT_WORD = re.compile(
    r"module_\d+\.jit_\w+\.(\d{4,})\.[^.]+\.after_([^.]+)(?:\.before_[^.]+)?\.txt"
)
_rt15_ANY = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_([^.]+)(?:\.before_[^.]+)?\.txt")


def _rt15_files(dump_dir, pattern):
    found = []
    for path in Path(dump_dir).iterdir():
        match = pattern.fullmatch(path.name)
        if match:
            found.append((int(match[1]), match[2], path))
    found.sort(key=lambda item: item[0])
    return found


@wrong(
    "pass_timeline",
    why="'<name> may hold dots': the learner matches the module name as jit_\\w+ (a function "
    "name is an identifier), so no file of the dotted module jit_loop.stats matches and the "
    "timeline of the loop program (module_0000.jit_loop.stats.0006...) is empty",
)
def _rt15_timeline_module_word(dump_dir: str) -> list[tuple[str, Counter]]:
    timeline = []
    for _, name, path in _rt15_files(dump_dir, _rt15_JIT_WORD):
        counts = Counter()
        for computation in parse_hlo(path.read_text()):
            counts.update(instruction.opcode for instruction in computation)
        timeline.append((name, counts))
    return timeline


@wrong(
    "pass_timeline",
    why="'every instruction of every computation': the learner skips computations named "
    "fused_computation* 'so fused ops are not counted twice, once as the fusion and once inside "
    "it'; after the fusion pass the sine/cosine/multiply of row_norms vanish from the counts: "
    "wrong on the dump of sqrt(sum(sin(x) * cos(x))) from the fusion pass on",
)
def _rt15_timeline_skip_fused(dump_dir: str) -> list[tuple[str, Counter]]:
    timeline = []
    for _, name, path in _rt15_files(dump_dir, _rt15_ANY):
        counts = Counter()
        for computation in parse_hlo(path.read_text()):
            if str(computation.name).startswith("fused_"):
                continue
            counts.update(instruction.opcode for instruction in computation)
        timeline.append((name, counts))
    return timeline


@wrong(
    "pass_timeline",
    why="'Counter of opcodes over every instruction': the learner updates the Counter with the "
    "SET of opcodes of each computation (which opcodes a computation uses), so two parameters "
    "of one computation count 1: wrong on every dump (a.T @ b has 2 parameters in ENTRY)",
)
def _rt15_timeline_opcode_sets(dump_dir: str) -> list[tuple[str, Counter]]:
    timeline = []
    for _, name, path in _rt15_files(dump_dir, _rt15_ANY):
        counts = Counter()
        for computation in parse_hlo(path.read_text()):
            counts.update({instruction.opcode for instruction in computation})
        timeline.append((name, counts))
    return timeline


# --- pass_that_changed -----------------------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="'an opcode missing from a Counter counts 0, like an explicit 0': the learner compares "
    "counts with Counter.get, which gives None for a missing key; None != 0, so "
    "[('a', Counter()), ('b', Counter({'add': 0}))] answers 'b' instead of None",
)
def _rt15_changed_get_none(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if after.get(opcode) != before.get(opcode):
            return name
    return None


@wrong(
    "pass_that_changed",
    why="'differs from the entry before it (more or fewer)': the learner checks whether the "
    "opcode is present (`opcode in counter`) rather than how many there are, so cse taking the "
    "adds of (x*y+1)*sin(x*y+1) from 2 to 1 goes unnoticed: [('a', {add: 2}), ('b', {add: 1})] "
    "answers None instead of 'b'",
)
def _rt15_changed_presence(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if (after[opcode] > 0) != (before[opcode] > 0):
            return name
    return None


# --- named_passes ----------------------------------------------------------------------------------


@wrong(
    "named_passes",
    why="'pass names exactly as they appear in the dump file names': the learner splits the file "
    "name on dots and takes the field before after_ (the pipeline, "
    "e.g. ...0006.simplification.after_algsimp...) as the pass: 'simplification' and "
    "'HLO_passes_...' instead of algsimp, transpose-folding, fusion, cse",
)
def _rt15_named_pipeline_field() -> dict[str, str]:
    return {
        "transpose": "HLO_passes_through_layout_assignment",
        "fusion": "HLO_passes_after_layout_assignment",
        "add": "HLO_passes_through_layout_assignment",
        "divide": "simplification",
    }


@wrong(
    "named_passes",
    why="'created the first fusion': the learner reads the file where the fusion first appears, "
    "...after_fusion.before_fusion-wrapper.txt, and credits fusion-wrapper ('it wraps the ops "
    "in a fusion'); the file is the module after `fusion`, fusion-wrapper has not run: the "
    "'fusion' key is wrong (the other three are right)",
)
def _rt15_named_fusion_wrapper() -> dict[str, str]:
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion-wrapper",
        "add": "cse",
        "divide": "algsimp",
    }


# --- surviving_ops ---------------------------------------------------------------------------------

_rt15_ARITH = {
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


def _rt15_true_arith(program, x, n):
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
    return _rt15_ARITH[program]


@wrong(
    "surviving_ops",
    why="'and to integers': the learner reasons that an int32 x divided by 2 is an exact shift "
    "(x >> 1, no divide left) and answers 0 for 'x / 2.0' at int32; but / is true division, x is "
    "converted to float32 and a multiply by 0.5 stays: 1 at int32 (any shape, any n)",
)
def _rt15_surviving_int_divide_shift(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    if program == "x / 2.0" and jnp.issubdtype(x.dtype, jnp.integer):
        return 0
    return _rt15_true_arith(program, x, n)


@wrong(
    "surviving_ops",
    why="'and to integers': the learner believes XLA strength-reduces an integer x + x to a "
    "shift left (x << 1), which is not one of the counted ops, and answers 0 for 'x + x' at "
    "int32; the optimized HLO keeps the add: 1 at int32",
)
def _rt15_surviving_int_double_shift(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    if program == "x + x" and jnp.issubdtype(x.dtype, jnp.integer):
        return 0
    return _rt15_true_arith(program, x, n)


@wrong(
    "surviving_ops",
    why="'what simplification may do to floats (inf, nan)': the learner fears a NaN's sign bit "
    "or payload is not restored by two negations and keeps both for floats, answering 2 for "
    "'jnp.negative(-x)' at float32/bfloat16/float16; negation only flips the sign bit, XLA "
    "deletes the pair: 0 at every dtype",
)
def _rt15_surviving_nan_payload_negations(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    if program == "jnp.negative(-x)" and not jnp.issubdtype(x.dtype, jnp.integer):
        return 2
    return _rt15_true_arith(program, x, n)


# --- one_kernel ------------------------------------------------------------------------------------

_rt15_KERNEL_NO = {
    "x @ w + 1 (w ones, x.shape[1] by 4)",
    "sort(x) * 2",
    "softmax(x, axis=-1)",
    "x - mean(x, axis=-1, keepdims=True)",
    "x / norm(x)",
}


def _rt15_true_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program not in _rt15_KERNEL_NO


@wrong(
    "one_kernel",
    why="'a dot cuts the chain': the learner believes XLA rewrites a dot with a tiny contraction "
    "(x.shape[1] <= 4) into elementwise multiplies and a reduce that fuse with the + 1, so one "
    "kernel; on CPU the dot stays its own kernel (ENTRY holds 3 ops): wrong on x f32[3,2], "
    "f32[16,2], any matrix with 2 to 4 columns",
)
def _rt15_kernel_tiny_dot_fuses(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program.startswith("x @ w + 1") and x.shape[1] <= 4:
        return True
    return _rt15_true_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'a reduction can close a fusion': the learner believes a softmax over a short row "
    "(x.shape[-1] <= 8, fits in registers) is done as one row-wise kernel (max, exp, sum and the "
    "divide in one loop); on CPU the reductions split it into 4 fusions: wrong on x f32[3,5], "
    "f32[2,2] and any matrix with at most 8 columns",
)
def _rt15_kernel_short_softmax(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program == "softmax(x, axis=-1)" and x.shape[-1] <= 8:
        return True
    return _rt15_true_kernel(program, x, n)


# --- folded_scale ----------------------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="'StableHLO holds a sqrt and a divide (no multiply)': the learner gets sqrt(2) as "
    "jnp.hypot(1.0, 1.0) (the diagonal of the unit square, a square root computed by jnp); the "
    "value and the folded after text are right, but hypot lowers with multiplies (and a "
    "scaling divide) around its sqrt, so the before text holds stablehlo.multiply: wrong on "
    "f32[3,5] and every input",
)
def _rt15_folded_hypot(x) -> jax.Array:
    return x / jnp.hypot(1.0, 1.0)


# --- dead_branch -----------------------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="'something XLA can decide ... the optimized HLO holds none': the learner selects on "
    "x == x ('always true, the compiler will see that'); for floats x == x is False at NaN, so "
    "XLA may not fold the compare and keeps the select and the exponential (values are x + 1 "
    "everywhere, NaN included): the optimized HLO of f32[3,5] (every input) still holds an "
    "exponential",
)
def _rt15_dead_self_equal_predicate(x) -> jax.Array:
    return jnp.where(x == x, x + 1.0, jnp.exp(x))


# --- elementwise_chain -----------------------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="'four elementwise ops that XLA turns into ONE loop fusion': the learner takes "
    "log-gamma for one more elementwise function (one output per input, same shape); "
    "jax.scipy.special.gammaln lowers to a multi-branch computation that XLA:CPU splits, so "
    "ENTRY holds 4 fusions for f32[3,5], bf16[6] and f16[1,5] (3 for the scalar)",
)
def _rt15_chain_through_gammaln(x) -> jax.Array:
    return jax.scipy.special.gammaln(jnp.exp(x)) * 2.0 + 1.0
