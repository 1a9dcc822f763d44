"""Plausible wrong answers to phase 4; each must be caught by the tests it names."""

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import accepted, decoy
from xla_inspect import passes
from xla_inspect.parse import parse_hlo

_PINNED = ["test_pinned_optimized_programs"]


def _counts(path: Path) -> Counter:
    return Counter(i.opcode for c in parse_hlo(path.read_text()) for i in c)


@decoy(
    "stages",
    caught_by=["test_stages_before_is_stablehlo_after_is_optimized", *_PINNED],
    why="'after' is the unoptimized HLO, before any pass ran",
)
def stages_unoptimized(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.as_text(dialect="hlo")


@decoy(
    "stages",
    caught_by=["test_stages_before_is_stablehlo_after_is_optimized"],
    why="'before' is unoptimized HLO, already simplified by the conversion",
)
def stages_hlo_before(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(dialect="hlo"), lowered.compile().as_text()


@decoy(
    "algebraic_identity",
    caught_by=["test_algebraic_identity_disappears"],
    why="x - x + x: x - x is not an identity XLA may remove (inf - inf is NaN)",
)
def identity_via_x_minus_x(x):
    return x - x + x


@decoy(
    "algebraic_identity",
    caught_by=["test_algebraic_identity_disappears"],
    why="no arithmetic at all: nothing for the simplifier to do",
)
def identity_without_ops(x):
    return jnp.asarray(x)


@decoy(
    "folded_scale",
    caught_by=["test_folded_scale_becomes_a_multiply"],
    why="NumPy computes the constant: no sqrt ever reaches XLA",
)
def scale_folded_by_python(x):
    return x * (1 / np.sqrt(2))


@decoy(
    "folded_scale",
    caught_by=["test_folded_scale_becomes_a_multiply"],
    why="the sqrt depends on x (x*0 is not folded for floats), so nothing is constant",
)
def scale_depends_on_x(x):
    return x / jnp.sqrt(x * 0.0 + 2.0)


@decoy(
    "shared_subexpression",
    caught_by=["test_cse_removes_the_repeated_add"],
    why="shares a+b by hand: 2 adds in the jaxpr, nothing left for CSE",
)
def cse_done_by_hand(a, b, c, d):
    s = a + b
    return s * c + s * d


@decoy(
    "shared_subexpression",
    caught_by=["test_cse_removes_the_repeated_add"],
    why="factored algebraically: a different program, not CSE",
)
def cse_factored(a, b, c, d):
    return (a + b) * (c + d)


@decoy(
    "dead_branch",
    caught_by=["test_dead_exp_survives_lowering_then_dies"],
    why="an unused exp is dropped by JAX before XLA sees it",
)
def dead_in_jaxpr(x):
    y = jnp.exp(x)  # noqa: F841
    return x + 1.0


@decoy(
    "dead_branch",
    caught_by=["test_dead_exp_survives_lowering_then_dies"],
    why="a data-dependent select: XLA cannot prove the exp unused",
)
def live_exp(x):
    return jnp.where(x > 100.0, jnp.exp(x), x + 1.0)


@decoy(
    "elementwise_chain", caught_by=["test_chain_is_one_loop_fusion"], why="a single op is no chain"
)
def chain_single_op(x):
    return jnp.sin(x)


@decoy(
    "elementwise_chain",
    caught_by=["test_chain_is_one_loop_fusion"],
    why="a sort in the middle needs the whole array and cuts the fusion in two",
)
def chain_cut_by_sort(x):
    return jnp.tanh(jnp.sort(jnp.sin(x)) * 2.0 + 1.0)


@decoy(
    "attention_scores",
    caught_by=["test_transpose_folds_into_the_dot"],
    why="einsum contracts in place: there is no transpose for XLA to fold",
)
def scores_einsum(q, k):
    return jnp.einsum("qd,kd->qk", q, k)


@decoy(
    "refused_rewrites",
    caught_by=["test_xla_keeps_float_rewrites_it_may_not_do"],
    why="2.0 * 3.0 * x: Python folds 6.0 before tracing, proving nothing about XLA",
)
def refused_python_folded(x):
    return 2.0 * 3.0 * x, x - x


@decoy(
    "refused_rewrites",
    caught_by=["test_xla_keeps_float_rewrites_it_may_not_do"],
    why="rewritten by hand: nothing left that XLA could refuse",
)
def refused_prefolded(x):
    return x * 6.0, jnp.zeros_like(x)


_FILE = re.compile(r"module_\d+\..+?\.(\d{4})\.[^.]+\.after_(.+?)(?:\.before_(.+))?\.txt")


def _pass_files(dump_dir):
    return [(m, p) for p in Path(dump_dir).iterdir() if (m := _FILE.fullmatch(p.name))]


@decoy(
    "pass_timeline",
    caught_by=["test_timeline_matches_the_dump"],
    why="sorted by pass name instead of sequence number",
)
def timeline_by_name(dump_dir):
    return sorted((m.group(2), _counts(p)) for m, p in _pass_files(dump_dir))


@decoy(
    "pass_timeline",
    caught_by=["test_timeline_matches_the_dump"],
    why="names each file by its before_ part: the pass that has not run yet",
)
def timeline_before_names(dump_dir):
    files = sorted(_pass_files(dump_dir), key=lambda mp: int(mp[0].group(1)))
    return [(m.group(3) or m.group(2), _counts(p)) for m, p in files]


@decoy(
    "pass_timeline",
    caught_by=["test_timeline_matches_the_dump"],
    why="also takes before_optimizations and after_optimizations for passes",
)
def timeline_with_snapshots(dump_dir):
    files = sorted(
        p
        for p in Path(dump_dir).iterdir()
        if _FILE.fullmatch(p.name) or p.name.endswith("_optimizations.txt")
    )
    timeline = []
    for p in files:
        m = _FILE.fullmatch(p.name)
        timeline.append((m.group(2) if m else p.name.split(".")[-2], _counts(p)))
    return timeline


@decoy(
    "pass_that_changed",
    caught_by=[
        "test_pass_that_changed_names_the_culprit",
        "test_pass_that_changed_on_constructed_timelines",
    ],
    why="names the entry before the change: the file of the pass that ran before it",
)
def changed_previous_name(timeline, opcode):
    for (name, before), (_, after) in zip(timeline, timeline[1:], strict=False):
        if before[opcode] != after[opcode]:
            return name
    return None


@decoy(
    "pass_that_changed",
    caught_by=[
        "test_pass_that_changed_is_none_for_untouched_ops",
        "test_pass_that_changed_on_constructed_timelines",
    ],
    why="the first pass that changed anything, whatever the opcode",
)
def changed_anything(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False):
        if before != after:
            return name
    return None


@decoy(
    "pass_that_changed",
    caught_by=["test_pass_that_changed_on_constructed_timelines"],
    why="the last change instead of the first",
)
def changed_last(timeline, opcode):
    found = None
    for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False):
        if before[opcode] != after[opcode]:
            found = name
    return found


@decoy(
    "named_passes",
    caught_by=["test_named_passes_match_the_dump"],
    why="guesses: the simplifier for the transpose, the wrapper for the fusion",
)
def names_guessed(*args):
    return {"transpose": "algsimp", "fusion": "fusion-wrapper", "add": "cse", "divide": "algsimp"}


@decoy(
    "named_passes",
    caught_by=["test_named_passes_match_the_dump"],
    why="pipeline names instead of pass names",
)
def names_pipelines(*args):
    return {
        "transpose": "HLO_passes_through_layout_assignment",
        "fusion": "HLO_passes_after_layout_assignment",
        "add": "HLO_passes_through_layout_assignment",
        "divide": "simplification",
    }


@decoy(
    "folded_scale",
    caught_by=["test_folded_scale_becomes_a_multiply"],
    why="multiplies by the reciprocal by hand: XLA had no divide to rewrite",
)
def scale_reciprocal_by_hand(x):
    return x * (1.0 / jnp.sqrt(2.0))


@decoy(
    "folded_scale",
    caught_by=["test_folded_scale_becomes_a_multiply"],
    why="multiplies by sqrt(0.5): the sqrt is folded, but there never was a divide",
)
def scale_sqrt_half(x):
    return x * jnp.sqrt(0.5)


# --- more wrong answers by category: dtype, shape, one example, related quantities -------------

_SEEN: dict = {}


@decoy(
    "stages",
    caught_by=["test_stages_of_several_programs"],
    why="remembers the texts per function: the same function at other shapes gets the first's",
)
def stages_per_function(f, *args):
    if f not in _SEEN:
        lowered = jax.jit(f).lower(*args)
        _SEEN[f] = (lowered.as_text(), lowered.compile().as_text())
    return _SEEN[f]


@decoy(
    "stages",
    caught_by=["test_stages_of_several_programs"],
    why="lowers at a ShapeDtypeStruct per argument (its shape and dtype, weak for a Python "
    "scalar): right for arrays and scalars, but an argument that is a pytree (a dict, a tuple) "
    "has no one shape and dtype",
)
def stages_abstract_args(f, *args):
    specs = [
        jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a), weak_type=isinstance(a, (int, float)))
        for a in args
    ]
    lowered = jax.jit(f).lower(*specs)
    return lowered.as_text(), lowered.compile().as_text()


@accepted("stages", why="the traced stage lowered, StableHLO printed from compiler_ir")
def stages_traced(f, *args):
    lowered = jax.jit(f).trace(*args).lower()
    return str(lowered.compiler_ir("stablehlo")), lowered.compile().as_text()


@decoy(
    "algebraic_identity",
    caught_by=["test_algebraic_identity_disappears"],
    why="NumPy float32 constants are not weak: a bfloat16 input comes back float32",
)
def identity_promotes(x):
    return (x * np.float32(1.0) + np.float32(0.0)) / np.float32(1.0)


@decoy(
    "algebraic_identity",
    caught_by=["test_algebraic_identity_disappears"],
    why="x * 2 / 2: exact for most floats, but not an identity XLA removes (and 3e38*2 is inf)",
)
def identity_scaled_back(x):
    return x * 2.0 / 2.0


@accepted("algebraic_identity", why="subtract zero, then multiply by one")
def identity_minus_zero(x):
    return (x - 0.0) * 1.0


@decoy(
    "folded_scale",
    caught_by=["test_folded_scale_becomes_a_multiply"],
    why="sqrt of a NumPy float32: the float32 result promotes a bfloat16 input",
)
def scale_strong_constant(x):
    return x / jnp.sqrt(np.float32(2.0))


@accepted("folded_scale", why="jnp.divide by lax.sqrt of a jnp constant")
def scale_lax_sqrt(x):
    return jnp.divide(x, lax.sqrt(jnp.asarray(2.0, dtype=x.dtype)))


@accepted("shared_subexpression", why="the second a+b written b+a: CSE still finds it")
def cse_commuted(a, b, c, d):
    return jnp.maximum(jnp.add(a, b), b + a) * (c + d)


@decoy(
    "dead_branch",
    caught_by=["test_dead_exp_survives_lowering_then_dies"],
    why="multiplies the exp by zero: x*0 is not 0 for floats, the exp stays",
)
def dead_times_zero(x):
    return x + 1.0 + jnp.exp(x) * 0.0


@accepted("dead_branch", why="lax.cond on a constant predicate: XLA drops the conditional")
def dead_cond(x):
    return lax.cond(True, lambda v: v + 1.0, jnp.exp, x)


@decoy(
    "elementwise_chain",
    caught_by=["test_chain_is_one_loop_fusion"],
    why="subtracts the mean: a reduction in the chain, two fusions",
)
def chain_through_mean(x):
    return jnp.tanh(x - x.mean()) * 2.0 + 1.0


@decoy(
    "elementwise_chain",
    caught_by=["test_chain_is_one_loop_fusion"],
    why="casts to float32 on the way: a bfloat16 input comes back float32",
)
def chain_in_float32(x):
    return jnp.tanh(jnp.sin(x.astype(jnp.float32)) * 2.0 + 1.0)


@accepted("elementwise_chain", why="another chain: exp, abs, negate, multiply, subtract")
def chain_exp_abs(x):
    return jnp.exp(-jnp.abs(x)) * 3.0 - 1.0


@decoy(
    "attention_scores",
    caught_by=["test_transpose_folds_into_the_dot"],
    why="reshapes k to (dim, seq) instead of transposing it",
)
def scores_reshaped(q, k):
    return q @ k.reshape(k.shape[1], k.shape[0])


@accepted("attention_scores", why="jnp.matmul with swapaxes")
def scores_swapaxes(q, k):
    return jnp.matmul(q, jnp.swapaxes(k, 0, 1))


@decoy(
    "refused_rewrites",
    caught_by=["test_xla_keeps_float_rewrites_it_may_not_do"],
    why="x * 0 for the zero: one more multiply, no subtract",
)
def refused_times_zero(x):
    return x * 2.0 * 3.0, x * 0.0


@accepted("refused_rewrites", why="parenthesized and spelled with jnp functions")
def refused_spelled_out(x):
    return jnp.multiply(jnp.multiply(x, 2.0), 3.0), jnp.subtract(x, x)


@decoy(
    "pass_timeline",
    caught_by=[
        "test_timeline_matches_the_dump",
        "test_timeline_runs_from_unoptimized_to_optimized",
    ],
    why="counts opcodes in ENTRY only",
)
def timeline_entry_only(dump_dir):
    files = sorted(_pass_files(dump_dir), key=lambda mp: int(mp[0].group(1)))
    return [
        (m.group(2), Counter(i.opcode for i in parse_hlo(p.read_text()).entry)) for m, p in files
    ]


@decoy(
    "pass_timeline",
    caught_by=["test_timeline_matches_the_dump"],
    why="only files with a before_ part: copy-insertion's files have none",
)
def timeline_needs_before(dump_dir):
    files = sorted(
        ((m, p) for m, p in _pass_files(dump_dir) if m.group(3)), key=lambda mp: int(mp[0].group(1))
    )
    return [(m.group(2), _counts(p)) for m, p in files]


@decoy(
    "pass_timeline",
    caught_by=["test_timeline_matches_the_dump"],
    why="drops a file whose counts equal the previous one's: one entry per file is asked",
)
def timeline_changes_only(dump_dir):
    files = sorted(_pass_files(dump_dir), key=lambda mp: int(mp[0].group(1)))
    timeline = []
    for m, p in files:
        counts = _counts(p)
        if not timeline or timeline[-1][1] != counts:
            timeline.append((m.group(2), counts))
    return timeline


@accepted("pass_timeline", why="xla_inspect.passes lists the files in order; Counter per file")
def timeline_from_library(dump_dir):
    return [
        (f.pass_name, Counter(i.opcode for c in parse_hlo(f.path.read_text()) for i in c))
        for f in passes.pass_files(dump_dir)
    ]


@decoy(
    "pass_that_changed",
    caught_by=["test_pass_that_changed_on_constructed_timelines"],
    why="starts comparing at the second pair and misses a change made by the first pass",
)
def changed_skips_first(timeline, opcode):
    for (_, before), (name, after) in zip(timeline[1:], timeline[2:], strict=False):
        if before[opcode] != after[opcode]:
            return name
    return None


@decoy(
    "pass_that_changed",
    caught_by=["test_pass_that_changed_on_constructed_timelines"],
    why="only removals count: an opcode that appears (a fusion) is missed",
)
def changed_only_removals(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False):
        if after[opcode] < before[opcode]:
            return name
    return None


@decoy(
    "pass_that_changed",
    caught_by=[
        "test_pass_that_changed_on_constructed_timelines",
        "test_pass_that_changed_is_none_for_untouched_ops",
    ],
    why="an empty string instead of None when nothing changed",
)
def changed_blank(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False):
        if before[opcode] != after[opcode]:
            return name
    return ""


@decoy(
    "pass_that_changed",
    caught_by=["test_pass_that_changed_on_constructed_timelines"],
    why="compares presence (opcode in counts), not the count",
)
def changed_presence(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False):
        if (before[opcode] > 0) != (after[opcode] > 0):
            return name
    return None


@accepted("pass_that_changed", why="index loop with .get(opcode, 0)")
def changed_by_index(timeline, opcode):
    for index in range(1, len(timeline)):
        if timeline[index][1].get(opcode, 0) != timeline[index - 1][1].get(opcode, 0):
            return timeline[index][0]
    return None


@decoy(
    "shared_subexpression",
    caught_by=["test_cse_removes_the_repeated_add"],
    why="distributes the second product: 3 adds, but none repeated for CSE to merge",
)
def cse_distributed(a, b, c, d):
    return (a + b) * c + (a * d + b * d)


@decoy(
    "attention_scores",
    caught_by=["test_transpose_folds_into_the_dot"],
    why="dot_general contracting k's dim 1 by hand: no transpose for XLA to fold",
)
def scores_dot_general(q, k):
    return lax.dot_general(q, k, (((1,), (1,)), ((), ())))


# -------------------------------------------------------------------------------- surviving_ops

_S_LISTED = "test_surviving_ops_of_the_listed_programs"
_S_FRESH = "test_surviving_ops_on_fresh_cases"


def _surviving(program, x, n, *, integers_fold=True, cse=True) -> int:
    """The counts by the rule, a clause switched off by a wrong answer below."""
    folds = integers_fold and jnp.issubdtype(x.dtype, jnp.integer)
    counts = {
        "x * 1.0": 0,
        "x + 0.0": 0,
        "x * 0.0": 1,
        "x - x": 0 if folds else 1,
        "x / 2.0": 1,
        "x / 3.0": 1,
        "jnp.negative(-x)": 0,
        "x * 2.0 + x * 2.0": 2 if cse else 3,
        "x + x": 1,
        "jnp.sqrt(4.0) * x": 1,
        "x * x / x": 2,
        "0.0 - x": 1,
        "jnp.exp(x) * 1.0": 0,
        "jnp.where(False, x * 5.0, x + 5.0)": 1,
        "(x * 1.0) / 1.0 - 0.0": 0,
        "jnp.negative applied n times": n % 2,
        "v + 1.0 applied n times to x": n,
        "v * 1.0 applied n times to x": 0,
        "v - v applied n times to x": 0 if folds else n,
        "sum of n copies of x * 2.0": n if cse else 2 * n - 1,
    }
    return counts[program]


@accepted("surviving_ops", why="the float counts, then what integers fold on top")
def surviving_from_exceptions(program, x, n):
    return _surviving(program, x, n)


@decoy(
    "surviving_ops",
    caught_by=[_S_LISTED, _S_FRESH],
    why="simplifies like real numbers: x - x, x * 0 and x * x / x vanish",
)
def surviving_real_algebra(program, x, n):
    vanish = {"x * 0.0", "x - x", "x * x / x", "v - v applied n times to x"}
    return 0 if program in vanish else _surviving(program, x, n)


@decoy(
    "surviving_ops",
    caught_by=[_S_LISTED, _S_FRESH],
    why="believes XLA rewrites nothing: counts the ops as written",
)
def surviving_as_written(program, x, n):
    written = {
        "jnp.negative(-x)": 2,
        "x * 2.0 + x * 2.0": 3,
        "jnp.where(False, x * 5.0, x + 5.0)": 2,
        "(x * 1.0) / 1.0 - 0.0": 3,
        "jnp.negative applied n times": n,
        "v * 1.0 applied n times to x": n,
        "v - v applied n times to x": n,
        "sum of n copies of x * 2.0": 2 * n - 1,
    }
    return written.get(program, 1)


@decoy(
    "surviving_ops",
    caught_by=[_S_LISTED, _S_FRESH],
    why="forgets CSE: x * 2.0 written twice (or n times) stays twice (n times)",
)
def surviving_without_cse(program, x, n):
    return _surviving(program, x, n, cse=False)


@decoy(
    "surviving_ops",
    caught_by=[_S_LISTED, _S_FRESH, "test_surviving_ops_does_not_compile"],
    why="compiles the program and counts instead of predicting",
)
def surviving_measured(program, x, n):
    from katas.phase4.programs import REWRITES

    zeros = np.zeros(x.shape, x.dtype)
    text = jax.jit(REWRITES[program], static_argnums=1).lower(zeros, n).compile().as_text() or ""
    counts = Counter(i.opcode for c in parse_hlo(text) for i in c)
    return sum(counts[op] for op in ("add", "subtract", "multiply", "divide", "negate"))


_S_TABLE = {  # the listed programs at x f32[3,4], n = 3
    "x * 1.0": 0,
    "x + 0.0": 0,
    "x * 0.0": 1,
    "x - x": 1,
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
    "jnp.negative applied n times": 1,
    "v + 1.0 applied n times to x": 3,
    "v * 1.0 applied n times to x": 0,
    "v - v applied n times to x": 3,
    "sum of n copies of x * 2.0": 3,
}


@decoy(
    "surviving_ops",
    caught_by=[_S_FRESH],
    why="memorised the table of the listed cases (x f32[3,4], n = 3), whatever x and n are",
)
def surviving_memorised_table(program, x, n):
    return _S_TABLE[program]


@decoy(
    "surviving_ops",
    caught_by=[_S_FRESH],
    why="right on the listed cases, which are all float32: takes int32 for a float too, so x - x "
    "stays (an integer x - x is exactly 0 and folds)",
)
def surviving_floats_only(program, x, n):
    return _surviving(program, x, n, integers_fold=False)


@decoy(
    "surviving_ops",
    caught_by=[_S_FRESH],
    why="right on the listed cases (n = 3 is odd): believes negations never cancel in a chain, "
    "one negate per application",
)
def surviving_negations_stay(program, x, n):
    return n if program == "jnp.negative applied n times" else _surviving(program, x, n)


# ----------------------------------------------------------------------------------- one_kernel

_K_LISTED = "test_one_kernel_of_the_listed_programs"
_K_FRESH = "test_one_kernel_on_fresh_cases"
_SEPARATE = {  # a library call, a sort, or a reduction whose result every element needs
    "x @ w + 1 (w ones, x.shape[1] by 4)",
    "sort(x) * 2",
    "softmax(x, axis=-1)",
    "x - mean(x, axis=-1, keepdims=True)",
    "x / norm(x)",
}


def _one_kernel(program, n) -> bool:
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n > 0
    return program not in _SEPARATE


@accepted("one_kernel", why="the loop and the chain by their trip counts, the rest by a set")
def kernel_by_rule(program, x, n):
    return _one_kernel(program, n)


@decoy(
    "one_kernel",
    caught_by=[_K_LISTED, _K_FRESH],
    why="believes only purely elementwise math fuses (no reduce, transpose, pad, concatenate)",
)
def kernel_elementwise_only(program, x, n):
    elementwise = {"tanh(sin(x) * 2 + 1)", "where(x > 0, x, exp(x) - 1)"}
    return program in elementwise or (program == "jnp.tanh applied n times" and n > 0)


@decoy(
    "one_kernel",
    caught_by=[_K_LISTED, _K_FRESH],
    why="believes XLA fuses any program without a loop into one kernel",
)
def kernel_everything(program, x, n):
    return not program.startswith("fori_loop")


@decoy(
    "one_kernel",
    caught_by=[_K_LISTED, _K_FRESH],
    why="believes a reduction always ends up with its consumers (softmax, normalizing)",
)
def kernel_reductions_fuse_onward(program, x, n):
    loners = {"x @ w + 1 (w ones, x.shape[1] by 4)", "sort(x) * 2"}
    return (
        _one_kernel(program, n)
        if program.startswith(("fori", "jnp.tanh"))
        else (program not in loners)
    )


@decoy(
    "one_kernel",
    caught_by=[_K_FRESH],
    why="memorised the table of the listed cases (x f32[3,4], n = 3): a loop is never one "
    "kernel, a tanh chain always is",
)
def kernel_memorised_table(program, x, n):
    return program not in _SEPARATE and not program.startswith("fori_loop")


@decoy(
    "one_kernel",
    caught_by=[_K_FRESH],
    why="right on the listed cases (n = 3): takes zero tanh (x itself) and a loop of zero trips "
    "for one kernel too (XLA copies x: no fusion)",
)
def kernel_nothing_is_a_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n <= 1
    return program not in _SEPARATE


@decoy(
    "one_kernel",
    caught_by=[_K_FRESH],
    why="right on the listed cases (n = 3): a fori_loop is a while loop whatever its trip count, "
    "so never one kernel (XLA unrolls a loop of one trip into its body)",
)
def kernel_loops_never_unrolled(program, x, n):
    return False if program.startswith("fori_loop") else _one_kernel(program, n)


@decoy(
    "one_kernel",
    caught_by=["test_one_kernel_does_not_compile"],
    why="compiles the program and reads ENTRY instead of predicting",
)
def kernel_measured(program, x, n):
    from katas.phase4.programs import KERNELS

    zeros = np.zeros(x.shape, x.dtype)
    text = jax.jit(KERNELS[program], static_argnums=1).lower(zeros, n).compile().as_text() or ""
    entry = Counter(i.opcode for i in parse_hlo(text).entry)
    return {k: v for k, v in entry.items() if k not in ("parameter", "constant")} == {"fusion": 1}
