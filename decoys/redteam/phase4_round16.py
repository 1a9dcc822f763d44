"""Red team, phase 4, round 16: wrong answers of kinds earlier rounds did not write (a stages
memo keyed without weak types, an add-then-subtract identity, a rationalised denominator, a
polynomial through jnp.polyval, jnp.inner for q @ k^T, the last `after_` of a file name, a
neighbour loop that wraps around to the last entry, a pass named for what layouts do, an exp of
x times zero, a pass name read from a fixed field position)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- stages --------------------------------------------------------------------------------------

_rt16_STAGES_MEMO: dict = {}


@wrong(
    "stages",
    why="'a Python scalar stays weakly typed': the learner memoises stages on (f, each leaf's "
    "shape and jnp.result_type) to avoid recompiling; result_type drops weak typing, so "
    "stages(scaled_sine, np.float32(1.5), bf16[4]) followed by stages(scaled_sine, 1.5, "
    "bf16[4]) returns the first (float32-promoting) texts for the second, whose multiply is in "
    "bfloat16",
)
def _rt16_stages_memo_without_weak_type(f, *args) -> tuple[str, str]:
    leaves, tree = jax.tree_util.tree_flatten(args)
    key = (f, tree, tuple((jnp.shape(leaf), jnp.result_type(leaf)) for leaf in leaves))
    if key not in _rt16_STAGES_MEMO:
        lowered = jax.jit(f).lower(*args)
        _rt16_STAGES_MEMO[key] = (lowered.as_text(), lowered.compile().as_text())
    return _rt16_STAGES_MEMO[key]


# --- algebraic_identity ----------------------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="'Return x itself ... through at least two arithmetic ops that XLA removes entirely': the "
    "learner adds a constant and takes it back, jnp.subtract(jnp.add(x, 1.0), 1.0), believing XLA cancels it; it "
    "is not exact (1e-30 + 1 - 1 is 0) and XLA keeps both ops: wrong on the 1e-30 and 1e-45 "
    "elements of 'f32[3,5] with inf, nan, -0, 3e38' and on -0.0 (gives +0.0)",
)
def _rt16_identity_add_then_subtract_one(x) -> jax.Array:
    return jnp.subtract(jnp.add(x, 1.0), 1.0)


# --- folded_scale ------------------------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="'StableHLO holds a sqrt and a divide (no multiply)': the learner rationalises the "
    "denominator, x * sqrt(2) / 2; StableHLO holds a multiply of x, and x * sqrt(2) overflows "
    "first: 'f32[] 3e38' gives inf instead of 2.1213e38",
)
def _rt16_folded_rationalised(x) -> jax.Array:
    return x * jnp.sqrt(2.0) / 2.0


# --- dead_branch -------------------------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="'x + 1 ... exp(x) that XLA then proves useless and deletes': the learner writes "
    "x + jnp.exp(x * 0.0), since exp(0) is 1; XLA may not fold x * 0.0 (inf, nan), so the "
    "exponential survives, and for x = inf it gives nan instead of inf: differs on any input "
    "holding inf (f32[2] [inf, 1.0]); the optimized HLO of f32[3,5] keeps the exponential",
)
def _rt16_dead_exp_of_zero_times_x(x) -> jax.Array:
    return x + jnp.exp(jnp.multiply(x, 0.0))


# --- elementwise_chain -------------------------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="'the result has the shape and dtype of the input': the learner evaluates a cubic with "
    "jnp.polyval(jnp.array([...]), x) (three multiplies, three adds, one loop fusion at "
    "float32); the coefficient array is float32, so a bfloat16 or float16 x comes back as "
    "float32: wrong on 'bf16[6]' and 'f16[1,5] with 40000'",
)
def _rt16_chain_polyval(x) -> jax.Array:
    return jnp.polyval(jnp.array([0.5, -1.0, 2.0, 1.0]), x)


# --- attention_scores --------------------------------------------------------------------------------


@wrong(
    "attention_scores",
    why="'written with an explicit transpose of k itself (the jaxpr transposes the input k)': the "
    "learner uses jnp.inner(q, k), which is q @ k^T by definition; the values are right but the "
    "jaxpr is one dot_general contracting dim 1 of both, with no transpose: wrong on q f32[5,3], "
    "k f32[7,3] and every case",
)
def _rt16_scores_inner(q, k) -> jax.Array:
    return jnp.inner(q, k)


# --- pass_timeline -----------------------------------------------------------------------------------

_rt16_SEQ = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_.+\.txt")


def _rt16_counts(path: Path) -> Counter:
    counts: Counter = Counter()
    for computation in parse_hlo(path.read_text()):
        counts.update(instruction.opcode for instruction in computation)
    return counts


def _rt16_pass_files(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        match = _rt16_SEQ.fullmatch(path.name)
        if match:
            found.append((int(match[1]), path))
    found.sort(key=lambda item: item[0])
    return [path for _, path in found]


@wrong(
    "pass_timeline",
    why="'the pass name is the text after `after_`': the learner takes the text after the LAST "
    "'after_' (rsplit, 'in case the module name holds after_'); in "
    "'...0012.HLO_passes_after_layout_assignment.after_pipeline-start.before_after_layout_"
    "assignment.txt' that is inside the before_ part, giving 'layout_assignment' instead of "
    "'pipeline-start': wrong on the dump of a.T @ b (and every program)",
)
def _rt16_timeline_last_after(dump_dir: str) -> list[tuple[str, Counter]]:
    timeline = []
    for path in _rt16_pass_files(dump_dir):
        name = path.name.rsplit("after_", 1)[1].split(".")[0]
        timeline.append((name, _rt16_counts(path)))
    return timeline


@wrong(
    "pass_timeline",
    why="'(some have no `.before_<next>` part)': the learner splits the name on dots and reads "
    "the pass from the third field from the end (…after_<pass>.before_<next>.txt); for the "
    "copy-insertion files with no before_ part that field is the pipeline, so "
    "'copy-insertion' replaces 'adding_copies_to_resolve_interference' and its two "
    "neighbours: wrong on the dump of a.T @ b",
)
def _rt16_timeline_fixed_field(dump_dir: str) -> list[tuple[str, Counter]]:
    timeline = []
    for path in _rt16_pass_files(dump_dir):
        field = path.name.split(".")[-3]
        name = field.removeprefix("after_")
        timeline.append((name, _rt16_counts(path)))
    return timeline


# --- pass_that_changed -------------------------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="'The first entry has nothing before it': the learner loops i over range(len(timeline)) "
    "comparing entry i with entry i - 1; at i = 0 Python's timeline[-1] is the LAST entry, so "
    "when the first and last counts differ the first entry is returned: "
    "[('a', {add: 2}), ('b', {add: 2}), ('c', {add: 1})] gives 'a' instead of 'c' (and the "
    "add dump gives 'pipeline-start' instead of 'cse')",
)
def _rt16_changed_wraps_to_last(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    for i in range(len(timeline)):
        if timeline[i][1][opcode] != timeline[i - 1][1][opcode]:
            return timeline[i][0]
    return None


# --- named_passes ------------------------------------------------------------------------------------


@wrong(
    "named_passes",
    why="'transpose': removed the transpose of a.T @ b': the learner reasons that a transpose "
    "is a layout change and names 'layout-assignment' (the pass right after the change) "
    "instead of reading the dump, where the transpose count drops at 'transpose-folding'",
)
def _rt16_named_transpose_by_layout() -> dict[str, str]:
    return {
        "transpose": "layout-assignment",
        "fusion": "fusion",
        "add": "cse",
        "divide": "algsimp",
    }
