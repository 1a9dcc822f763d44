"""Red-team wrong answers for phase 4, round 8, written from the contract only.

Round 8: a reciprocal written by hand, a reshape mistaken for a transpose, an exp widened to
float32, an 'average of two copies' that overflows, an identity hidden in refused_rewrites,
tuple bookkeeping dropped and the final module appended in pass_timeline, a first-vs-last
shortcut in pass_that_changed, integer cancellation and 'where evaluates both sides' in
surviving_ops, shape-changing movers taken as kernel breakers in one_kernel.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- demonstrations -------------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="StableHLO must hold a sqrt and a divide and NO multiply; x * (1.0 / jnp.sqrt(2.0)) "
    "divides inside the constant and multiplies x in the source (stablehlo.multiply present), "
    "so the multiply is the learner's, not XLA's rewrite; wrong on f32[3,5]",
)
def _rt8_folded_reciprocal_multiply(x):
    return x * (1.0 / jnp.sqrt(2.0))


@wrong(
    "attention_scores",
    why="scores are q @ k^T; k.reshape(dim, seq_k) reinterprets k's row-major data instead of "
    "transposing it (and the jaxpr holds a reshape, no transpose): wrong values at q (5,3), k (7,3)",
)
def _rt8_scores_reshape_as_transpose(q, k):
    return q @ k.reshape(k.shape[1], k.shape[0])


@wrong(
    "dead_branch",
    why="must return x + 1 in x's dtype; the exp is taken in float32 'for accuracy', and "
    "jnp.where promotes its result to float32, so x bf16[6] or f16[1,5] returns float32",
)
def _rt8_dead_exp_in_f32(x):
    return jnp.where(True, x + 1.0, jnp.exp(x.astype(jnp.float32)))


@wrong(
    "shared_subexpression",
    why="(a + b) times (c + d) for every value; averaging two copies ((a+b) + (a+b)) / 2 doubles "
    "first, so a + b = 2e38 (f32[8], planted huge) overflows to inf: the product is -inf instead "
    "of -1e38",
)
def _rt8_cse_average_copies(a, b, c, d):
    return ((a + b) + (a + b)) / 2.0 * (c + d)


@wrong(
    "refused_rewrites",
    why="the optimized HLO must keep TWO multiplies; x * 6.0 * 1.0 has two in the jaxpr but "
    "the * 1.0 is an identity XLA removes, leaving one; wrong on f32[3,5]",
)
def _rt8_refused_times_one(x):
    return x * 6.0 * 1.0, x - x


# --- pass_timeline ---------------------------------------------------------------------------

_RT8_PASS = re.compile(r"^module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt$")


def _rt8_counts(text: str, skip=()) -> Counter:
    return Counter(
        i.opcode for comp in parse_hlo(text) for i in comp.instructions if i.opcode not in skip
    )


@wrong(
    "pass_timeline",
    why="counts every instruction, 'tuple-shaped instructions too'; dropping tuple and "
    "get-tuple-element as bookkeeping undercounts any module with a tuple result or a while "
    "loop (loop.stats dump)",
)
def _rt8_timeline_skips_tuple_bookkeeping(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _RT8_PASS.match(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort()
    return [
        (name, _rt8_counts(p.read_text(), skip=("tuple", "get-tuple-element")))
        for _, name, p in found
    ]


@wrong(
    "pass_timeline",
    why="'other files (cpu_after_optimizations...) are not passes'; selecting files by 'after_' "
    "in the name appends the final module as a last entry named 'optimizations': one entry too "
    "many on every dump",
)
def _rt8_timeline_includes_final_module(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        if "after_" not in path.name or not path.name.endswith(".txt"):
            continue
        m = _RT8_PASS.match(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
        elif path.name.endswith("after_optimizations.txt"):
            found.append((10**12, "optimizations", path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt8_counts(p.read_text())) for _, name, p in found]


# --- pass_that_changed -------------------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="'None when the count NEVER changes'; the shortcut 'first count == last count -> None' "
    "misses a count that rises and falls back (copy 0 -> 1 -> 0, [('a', {}), ('b', {copy: 1}), "
    "('c', {})] must give 'b')",
)
def _rt8_changed_first_last_shortcut(timeline, opcode):
    if len(timeline) < 2 or timeline[0][1][opcode] == timeline[-1][1][opcode]:
        return None
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before[opcode] != after[opcode]:
            return name
    return None


# --- predict tasks ----------------------------------------------------------------------------


def _rt8_truth_surviving(program, x, n):
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
    return 0


@wrong(
    "surviving_ops",
    why="'integers are exact, so (x * x) / x cancels to x for int32' (0 left); XLA keeps both "
    "(int32 x * x wraps and x may be 0): wrong on 'x * x / x' with x int32[3,4] (2 survive)",
)
def _rt8_surviving_int_cancels_quotient(program, x, n):
    if program == "x * x / x" and jnp.issubdtype(x.dtype, jnp.integer):
        return 0
    return _rt8_truth_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="'jnp.where evaluates both sides element-wise, so both x * 5.0 and x + 5.0 survive' (2); "
    "a constant predicate lets XLA drop the unused side: wrong on "
    "'jnp.where(False, x * 5.0, x + 5.0)' at any x (1 survives)",
)
def _rt8_surviving_where_both_sides(program, x, n):
    if program == "jnp.where(False, x * 5.0, x + 5.0)":
        return 2
    return _rt8_truth_surviving(program, x, n)


_RT8_KERNEL_TRUE = {
    "tanh(sin(x) * 2 + 1)",
    "sum(exp(x), axis=1)",
    "x.T * 2 + 1",
    "concatenate([x, x * 2])",
    "x[::-1] + x",
    "reshape(x * 2, x.shape[::-1]) + 1",
    "where(x > 0, x, exp(x) - 1)",
    "pad(x, 1) * 2",
}


def _rt8_truth_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program in _RT8_KERNEL_TRUE


@wrong(
    "one_kernel",
    why="'an output larger than the input (concatenate, pad) needs a fresh buffer written by its "
    "own kernel'; they ride along in the loop fusion: wrong on 'concatenate([x, x * 2])' and "
    "'pad(x, 1) * 2' at f32[3,5] (one fusion)",
)
def _rt8_kernel_growing_output_splits(program, x, n):
    if program in ("concatenate([x, x * 2])", "pad(x, 1) * 2"):
        return False
    return _rt8_truth_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'x[::-1] + x reads x in two orders: the reverse must be materialised before the add'; "
    "a reverse only picks elements and rides in the loop: wrong on 'x[::-1] + x' at f32[3,5]",
)
def _rt8_kernel_reverse_materialised(program, x, n):
    if program == "x[::-1] + x":
        return False
    return _rt8_truth_kernel(program, x, n)


# --- stages and named_passes --------------------------------------------------------------------


@wrong(
    "stages",
    why="(before, after) of jax.jit(f) itself at these args AS GIVEN; treating Python scalars as "
    "static (static_argnums) bakes 1.5 into the program as a constant and drops a parameter: "
    "scaled_sine(1.5, x bf16[4]) gives other StableHLO and HLO than jax.jit(scaled_sine)",
)
def _rt8_stages_python_scalars_static(f, *args):
    static = tuple(i for i, a in enumerate(args) if isinstance(a, (bool, int, float, complex)))
    lowered = jax.jit(f, static_argnums=static).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "named_passes",
    why="'transpose': credited to algsimp (the simplifier's dot-of-transpose rewrite, from "
    "reading its source); on this backend the transpose of a.T @ b is removed by "
    "transpose-folding, the first per-pass file where the transpose count drops",
)
def _rt8_named_transpose_by_algsimp():
    return {"transpose": "algsimp", "fusion": "fusion", "add": "cse", "divide": "algsimp"}
