"""Red-team wrong answers for phase 4, round 7, written from the contract only.

Round 7: weak types lost by abstract lowering, a wrapper's module name, a double sign flip
through subtraction, a constant that overflows before it halves, constant folding passed off as
dead-code elimination, shape-dependent fusion rules (square only, short reductions, tiny dots),
int32 over-caution, a 4-digit seq regex, ENTRY counted twice, pipeline-start files dropped, the
last change instead of the first, and an off-by-one start.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- task 1: stages -------------------------------------------------------------------------


@wrong(
    "stages",
    why="(before, after) of jax.jit(f) at THESE args; lowering at ShapeDtypeStruct(shape, "
    "jnp.result_type(a)) drops the weak type of a Python scalar argument: stages(lambda s, x: s * x, "
    "1.5, x bf16[4]) gives an f32 program (x promoted) where jax.jit(f) multiplies in bf16",
)
def _rt7_stages_abstract_args(f, *args):
    specs = [jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a)) for a in args]
    lowered = jax.jit(f).lower(*specs)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "stages",
    why="(before, after) of jax.jit(f); jitting a forwarding lambda renames the module "
    "(module @jit__lambda / HloModule jit__lambda instead of jit_repeated_affine), so both texts "
    "are of another module; wrong on repeated_affine(f32[3,4], f32[3,4])",
)
def _rt7_stages_forwarding_lambda(f, *args):
    lowered = jax.jit(lambda *a: f(*a)).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


# --- task 2: algebraic_identity ---------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="x itself for every float, called eagerly too; 0.0 - (0.0 - x) flips the sign twice but "
    "for x = -0.0 gives 0.0 - 0.0 = +0.0 eagerly; wrong on 'f32[] -0' (and the -0.0 entries) "
    "called op by op",
)
def _rt7_identity_double_flip(x):
    x = jnp.asarray(x)
    return 0.0 - (0.0 - x)


# --- task 3: folded_scale -------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="StableHLO must hold a sqrt; jnp.power(2.0, 0.5) is a square root by value but lowers to "
    "stablehlo.power (XLA folds it all the same, so the after text looks right); wrong on every "
    "input (f32[3,5]: no stablehlo.sqrt in the before text)",
)
def _rt7_folded_scale_power_half(x):
    x = jnp.asarray(x)
    return x / jnp.power(2.0, 0.5)


# --- task 4: shared_subexpression ---------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="(a + b) times (c + d) for every value; the second copy of a + b is 'cancelled' by "
    "subtracting it times 0.0 (3 adds in the jaxpr, 2 after CSE), but 0 * inf is nan: f16 "
    "a = b = 65504 (a + b = inf), c = 1, d = 0.5 gives nan instead of inf; the sign of a zero "
    "product flips too (-0.0 - (-0.0) = +0.0)",
)
def _rt7_cse_minus_times_zero(a, b, c, d):
    a, b, c, d = (jnp.asarray(v) for v in (a, b, c, d))
    return (a + b) * (c + d) - (a + b) * 0.0


# --- task 5: dead_branch ------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="must compute jnp.exp(x) and have XLA prove it useless; exp(0.0) is a constant that "
    "constant folding evaluates (the 'exponential' vanishes for another reason: no dead code, no "
    "exp of x at all); wrong on every input: the StableHLO exponential's operand is a constant, not x",
)
def _rt7_dead_exp_of_constant(x):
    x = jnp.asarray(x)
    return x + jnp.exp(0.0)


# --- task 6: elementwise_chain --------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="'same shape out'; the transpose rides along in the fused loop, but x.T of a non-square "
    "matrix has the reversed shape: f32[3,5] gives (5,3)",
)
def _rt7_chain_through_transpose(x):
    x = jnp.asarray(x)
    return jnp.exp(jnp.sin(x.T) * 2.0 + 1.0)


# --- task 7: attention_scores -------------------------------------------------------------


@wrong(
    "attention_scores",
    why="the transpose of k must be absorbed by a dot; a broadcast multiply and sum over dim "
    "has no dot, so the explicit transpose of k stays (inside a loop fusion) in the optimized "
    "HLO; wrong on q (5,3), k (7,3) f32 (transpose survives, no rhs_contracting_dims)",
)
def _rt7_scores_broadcast_sum(q, k):
    q, k = jnp.asarray(q), jnp.asarray(k)
    return jnp.sum(q[:, :, None] * k.T[None, :, :], axis=1)


# --- task 8: refused_rewrites ---------------------------------------------------------------


@wrong(
    "refused_rewrites",
    why="six times x for every x; x * 12.0 / 2.0 (two multiplies after the divide becomes * 0.5) "
    "overflows before it halves: x = 3e37 f32 gives inf instead of 1.8e38, and f16 x = 6000 gives "
    "inf instead of 36000",
)
def _rt7_refused_twelve_halved(x):
    x = jnp.asarray(x)
    return x * 12.0 / 2.0, x - x


# --- task 9: pass_timeline ------------------------------------------------------------------

_rt7_FILE4 = re.compile(r"module_\d+\..+\.(\d{4})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")
_rt7_FILE = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def _rt7_counts(path: Path) -> Counter:
    return Counter(i.opcode for comp in parse_hlo(path.read_text()) for i in comp.instructions)


@wrong(
    "pass_timeline",
    why="'a number of four digits or more': the regex takes exactly four digits, so files with "
    "seq 10000 and above do not match and are dropped; wrong on any dump past seq 9999",
)
def _rt7_timeline_four_digits(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt7_FILE4.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt7_counts(path)) for _, name, path in found]


@wrong(
    "pass_timeline",
    why="counts every instruction of every computation once; [module.entry, *computations] "
    "counts ENTRY twice (2 parameters for quarter's one); wrong on every dump",
)
def _rt7_timeline_entry_twice(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt7_FILE.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    out = []
    for _, name, path in found:
        module = parse_hlo(path.read_text())
        counts = Counter()
        for comp in [module.entry, *module.computations]:
            counts.update(i.opcode for i in comp.instructions)
        out.append((name, counts))
    return out


@wrong(
    "pass_timeline",
    why="'one entry per per-pass file': drops the after_pipeline-start files as 'not a pass'; "
    "wrong on every CPU dump (x / 4.0 has a dozen of them)",
)
def _rt7_timeline_no_pipeline_start(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt7_FILE.fullmatch(path.name)
        if m and m.group(2) != "pipeline-start":
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt7_counts(path)) for _, name, path in found]


# --- task 10: pass_that_changed -------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="'the FIRST entry whose count differs': the loop keeps overwriting and returns the last "
    "change; wrong on [('a', {add: 2}), ('cse', {add: 1}), ('fusion', {add: 0})] ('fusion', not "
    "'cse')",
)
def _rt7_changed_last(timeline, opcode):
    found = None
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before[opcode] != after[opcode]:
            found = name
    return found


@wrong(
    "pass_that_changed",
    why="compares each entry with the one before it from the second entry on; range(2, ...) "
    "skips the change at index 1: wrong on [('a', {add: 1}), ('b', {add: 2})] (None, not 'b')",
)
def _rt7_changed_skips_second(timeline, opcode):
    for i in range(2, len(timeline)):
        if timeline[i - 1][1][opcode] != timeline[i][1][opcode]:
            return timeline[i][0]
    return None


# --- task 12: surviving_ops -----------------------------------------------------------------


def _rt7_truth_surviving(program, x, n):
    integer = jnp.issubdtype(x.dtype, jnp.integer)
    fixed = {
        "x * 1.0": 0,
        "x + 0.0": 0,
        "x * 0.0": 1,
        "x - x": 0 if integer else 1,
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
    }
    if program in fixed:
        return fixed[program]
    if program == "jnp.negative applied n times":
        return n % 2
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v * 1.0 applied n times to x":
        return 0
    if program == "v - v applied n times to x":
        return 0 if integer else n
    if program == "sum of n copies of x * 2.0":
        return n
    raise KeyError(program)


@wrong(
    "surviving_ops",
    why="int32 over-caution: 'negating INT_MIN wraps, so XLA cannot cancel integer negations'; "
    "two's-complement negation is its own inverse and XLA folds neg(neg(x)) for int32 too: wrong "
    "on 'jnp.negative(-x)' at int32[2,3] (2, not 0) and 'jnp.negative applied n times' int32 n=4 "
    "(4, not 0)",
)
def _rt7_surviving_int_negation_kept(program, x, n):
    if jnp.issubdtype(x.dtype, jnp.integer):
        if program == "jnp.negative(-x)":
            return 2
        if program == "jnp.negative applied n times":
            return n
    return _rt7_truth_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="int32: 'the first * 1.0 / + 0.0 on an integer x does the conversion to float, so it "
    "stays'; the conversion is a convert and the identity is still removed: wrong on 'x * 1.0', "
    "'x + 0.0', '(x * 1.0) / 1.0 - 0.0' and 'v * 1.0 applied n times to x' at int32 (1, not 0)",
)
def _rt7_surviving_int_identity_converts(program, x, n):
    if jnp.issubdtype(x.dtype, jnp.integer) and program in (
        "x * 1.0",
        "x + 0.0",
        "(x * 1.0) / 1.0 - 0.0",
        "v * 1.0 applied n times to x",
    ):
        return 1
    return _rt7_truth_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="integer strength reduction taken from C compilers: 'for int32, x + x becomes a shift "
    "left, no arithmetic left'; XLA keeps the add: wrong on 'x + x' at int32[2,3] (0, not 1)",
)
def _rt7_surviving_int_shift(program, x, n):
    if jnp.issubdtype(x.dtype, jnp.integer) and program == "x + x":
        return 0
    return _rt7_truth_surviving(program, x, n)


# --- task 13: one_kernel --------------------------------------------------------------------

_rt7_KERNEL_TRUE = {
    "tanh(sin(x) * 2 + 1)",
    "sum(exp(x), axis=1)",
    "x.T * 2 + 1",
    "concatenate([x, x * 2])",
    "x[::-1] + x",
    "reshape(x * 2, x.shape[::-1]) + 1",
    "where(x > 0, x, exp(x) - 1)",
    "pad(x, 1) * 2",
}


def _rt7_truth_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program in _rt7_KERNEL_TRUE


@wrong(
    "one_kernel",
    why="'a short reduction is recomputed inside each element's loop' (right at the banked "
    "f32[3,4], rows of 4: False); XLA:CPU never fuses a consumer of a finished reduction: wrong on "
    "'x - mean(x, axis=-1, keepdims=True)' and 'softmax(x, axis=-1)' at f32[16,2] (True, not False)",
)
def _rt7_kernel_short_rows_inlined(program, x, n):
    if program in ("x - mean(x, axis=-1, keepdims=True)", "softmax(x, axis=-1)"):
        return x.shape[-1] <= 3
    if program == "x / norm(x)":
        return int(np.prod(x.shape)) <= 4
    return _rt7_truth_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'a transpose or a shape-changing reshape of a non-square matrix needs its own relayout "
    "copy; for a square one it is free': both ride in the loop at every shape: wrong on "
    "'x.T * 2 + 1' and 'reshape(x * 2, x.shape[::-1]) + 1' at f32[3,5] (False, not True)",
)
def _rt7_kernel_square_only_relayout(program, x, n):
    if program in ("x.T * 2 + 1", "reshape(x * 2, x.shape[::-1]) + 1"):
        return x.shape[0] == x.shape[1]
    return _rt7_truth_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'a dot that contracts two elements is rewritten to elementwise multiply-adds and fuses "
    "with the + 1'; XLA:CPU keeps the dot apart (a library fusion) at every size: wrong on "
    "'x @ w + 1' at f32[16,2] (True, not False: ENTRY holds three fusions)",
)
def _rt7_kernel_tiny_dot_fused(program, x, n):
    if program == "x @ w + 1 (w ones, x.shape[1] by 4)":
        return x.shape[1] <= 2
    return _rt7_truth_kernel(program, x, n)
