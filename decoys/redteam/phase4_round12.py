"""Red team, phase 4, round 12: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- stages -----------------------------------------------------------------------------------


@wrong(
    "stages",
    why="'the module keeps the name jax.jit gives it': the learner wraps f in a lambda to pass "
    "the args through, so the module is jit__lambda (func.func public @main in a module "
    "@jit__lambda, HloModule jit__lambda) instead of jit_repeated_affine; wrong on "
    "repeated_affine f32[3,4] and every named program",
)
def _rt12_stages_lambda_wrapper(f, *args):
    lowered = jax.jit(lambda *a: f(*a)).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "stages",
    why="'a Python scalar stays weakly typed': the learner normalises every leaf with "
    "np.asarray first, so 1.5 becomes a strong float64 -> float32 array and scaled_sine(1.5, "
    "bf16[4]) multiplies in float32 (converts appear, result f32[4]) where jax.jit(f) "
    "keeps bfloat16; wrong on 'scaled_sine 1.5 (a Python float), bf16[4]' and the pytree "
    "{w, b: 0.5}",
)
def _rt12_stages_tree_asarray(f, *args):
    args = jax.tree_util.tree_map(np.asarray, args)
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


# --- algebraic_identity --------------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="'through at least two arithmetic ops that XLA removes entirely': flipping the sign "
    "twice (x * -1.0 * -1.0) is exact for every float, nan and -0.0 included, but XLA does not "
    "remove a multiply by -1: the optimized HLO keeps both multiplies; wrong on f32[3,5] (and "
    "every input)",
)
def _rt12_identity_double_sign_flip(x):
    return x * -1.0 * -1.0


# --- folded_scale ----------------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="'dividing x by a square root computed by jnp ... StableHLO holds a sqrt': "
    "jnp.power(2.0, 0.5) is the square root of 2 as a number, but StableHLO holds "
    "stablehlo.power (and a convert), no stablehlo.sqrt; wrong on f32[3,5] and every input",
)
def _rt12_folded_power_half(x):
    return x / jnp.power(2.0, 0.5)


# --- shared_subexpression --------------------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="'(a + b) times (c + d) for every value ... so large that its square overflows': the "
    "learner repeats a + b and averages the two copies (mean of a stack), but the mean sums "
    "first: a = b = 1e38 gives a + b = 2e38, 2e38 + 2e38 = inf, so the product with c + d = -0.5 "
    "is -inf instead of -1e38; and the reduce's add region adds adds to the optimized HLO; "
    "wrong on CSE f32[8] (planted element 3), bf16[1,6]",
)
def _rt12_cse_mean_of_copies(a, b, c, d):
    return jnp.mean(jnp.stack([a + b, a + b]), axis=0) * (c + d)


# --- dead_branch -----------------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="'Return x + 1' with x's dtype (bfloat16 and float16 inputs): the learner computes the "
    "dead exp in float32 'for range', and jnp.where promotes the live x + 1 to float32 as "
    "well; wrong on bf16[6] and f16[1,5] (result float32)",
)
def _rt12_dead_exp_in_f32(x):
    return jnp.where(True, x + 1, jnp.exp(x.astype(jnp.float32)))


# --- attention_scores ------------------------------------------------------------------------


@wrong(
    "attention_scores",
    why="task 'a transpose absorbed into the dot' (README: transpose folding needs a dot): the "
    "learner transposes k explicitly but writes the scores as a broadcast multiply and a sum "
    "over dim; no dot exists for the transpose to fold into, the optimized HLO keeps the "
    "transpose (and bf16/f16 sums round differently); wrong on q (5,3), k (7,3)",
)
def _rt12_scores_broadcast_sum(q, k):
    kt = k.T
    return jnp.sum(q[:, :, None] * kt[None, :, :], axis=1)


# --- pass_timeline ---------------------------------------------------------------------------

_RT12_FOUR = re.compile(r"^module_\d+\..+\.(\d{4})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt$")


def _rt12_counts(path: Path) -> Counter:
    module = parse_hlo(path.read_text())
    return Counter(i.opcode for comp in module for i in comp)


@wrong(
    "pass_timeline",
    why="'seq, a number of four digits or more (10000 follows 9999)': the regex takes exactly "
    "four digits (\\d{4}), so files with seq 10000 and above do not match and are dropped; "
    "wrong on a dump whose seqs run past 9999",
)
def _rt12_timeline_four_digits(dump_dir):
    rows = []
    for path in Path(dump_dir).iterdir():
        m = _RT12_FOUR.match(path.name)
        if m:
            rows.append((int(m.group(1)), m.group(2), path))
    rows.sort(key=lambda r: r[0])
    return [(name, _rt12_counts(path)) for _, name, path in rows]


_RT12_ANY = re.compile(r"^module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt$")


@wrong(
    "pass_timeline",
    why="'Order by seq': the learner orders the files by modification time ('XLA writes them "
    "as the passes run'), which is the order the files were written or copied, not the seq; "
    "wrong on a dump copied or written out of order (or files touched afterwards)",
)
def _rt12_timeline_by_mtime(dump_dir):
    rows = []
    for path in Path(dump_dir).iterdir():
        m = _RT12_ANY.match(path.name)
        if m:
            rows.append((path.stat().st_mtime_ns, m.group(2), path))
    rows.sort(key=lambda r: r[0])
    return [(name, _rt12_counts(path)) for _, name, path in rows]


# --- pass_that_changed -----------------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="'the first entry whose count differs from the entry before it': the learner keeps "
    "the LAST such entry ('the pass that left it as it is'), wrong whenever the count changes "
    "twice, e.g. [('a', {add: 1}), ('b', {add: 2}), ('c', {add: 1})] -> 'c', not 'b'",
)
def _rt12_changed_last(timeline, opcode):
    found = None
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before.get(opcode, 0) != after.get(opcode, 0):
            found = name
    return found


# --- named_passes ----------------------------------------------------------------------------


@wrong(
    "named_passes",
    why="'removed the divide of x / 4.0': the learner looks for the first file whose module "
    "SIZE (total instruction count) changed; algsimp swaps divide for multiply at the same size, "
    "so the rule names 'fusion' for the divide (the first size change) instead of 'algsimp'",
)
def _rt12_named_by_module_size():
    return {"transpose": "transpose-folding", "fusion": "fusion", "add": "cse", "divide": "fusion"}


# --- one_kernel ------------------------------------------------------------------------------


@wrong(
    "one_kernel",
    why="'ENTRY holds exactly one instruction, a fusion': the learner's rule is 'one loop writes "
    "an output shaped like its input' (plus: sort, dot, loop and broadcast-back reductions cut "
    "it), so the answer depends on whether x is square: 'x.T * 2 + 1' and 'reshape(x * 2, "
    "x.shape[::-1]) + 1' come out False for a non-square x (f32[3,4]: truth True, one fusion), "
    "and a row reduction, concatenate and pad (other shapes out) False too",
)
def _rt12_kernel_same_shape_out(program, x, n):
    rows, cols = x.shape
    square = rows == cols
    rule = {
        "tanh(sin(x) * 2 + 1)": True,
        "sum(exp(x), axis=1)": False,
        "x @ w + 1 (w ones, x.shape[1] by 4)": False,
        "sort(x) * 2": False,
        "x.T * 2 + 1": square,
        "softmax(x, axis=-1)": False,
        "x - mean(x, axis=-1, keepdims=True)": False,
        "concatenate([x, x * 2])": False,
        "x[::-1] + x": True,
        "reshape(x * 2, x.shape[::-1]) + 1": square,
        "where(x > 0, x, exp(x) - 1)": True,
        "fori_loop(0, n, v * 2)": n == 1,
        "x / norm(x)": False,
        "pad(x, 1) * 2": False,
        "jnp.tanh applied n times": n >= 1,
    }
    return rule.get(program, True)
