"""Red-team (round 2) wrong answers for phase 4, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import passes
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts


def _r2_true_arith(x, n) -> dict:
    """What a careful learner gets right, for this case (adapted when the cases became drawn)."""
    integer = np.issubdtype(x.dtype, np.integer)
    return {
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
        "jnp.negative applied n times": n % 2,
        "v + 1.0 applied n times to x": n,
        "v * 1.0 applied n times to x": 0,
        "v - v applied n times to x": 0 if integer else n,
        "sum of n copies of x * 2.0": n,
    }


def _r2_true_kernel(x, n) -> dict:
    """What a careful learner gets right, for this case (adapted when the cases became drawn)."""
    return {
        "tanh(sin(x) * 2 + 1)": True,
        "sum(exp(x), axis=1)": True,
        "x @ w + 1 (w ones, x.shape[1] by 4)": False,
        "sort(x) * 2": False,
        "x.T * 2 + 1": True,
        "softmax(x, axis=-1)": False,
        "x - mean(x, axis=-1, keepdims=True)": False,
        "concatenate([x, x * 2])": True,
        "x[::-1] + x": True,
        "reshape(x * 2, x.shape[::-1]) + 1": True,
        "where(x > 0, x, exp(x) - 1)": True,
        "fori_loop(0, n, v * 2)": n == 1,
        "x / norm(x)": False,
        "pad(x, 1) * 2": True,
        "jnp.tanh applied n times": n >= 1,
    }


# --- what a learner who mostly reasons right would predict (all entries right but the named one)


@wrong(
    "surviving_ops",
    why="'compiled ... x f32[3,4], how many arithmetic instructions the optimized HLO still "
    "holds': believes jnp.where computes both branches and XLA keeps them; wrong on "
    "'jnp.where(False, x * 5.0, x + 5.0)' (2 predicted, the select on a constant predicate "
    "is simplified and 1 add survives)",
)
def r2_surviving_where_keeps_both(program, x, n):
    answer = _r2_true_arith(x, n)
    answer["jnp.where(False, x * 5.0, x + 5.0)"] = 2
    return answer[program]


@wrong(
    "surviving_ops",
    why="'Reason ... from what CSE ... do': forgets that CSE shares the repeated x * 2.0; wrong "
    "on 'x * 2.0 + x * 2.0' (3 predicted, 2 survive: one multiply, one add)",
)
def r2_surviving_no_cse(program, x, n):
    answer = _r2_true_arith(x, n)
    answer["x * 2.0 + x * 2.0"] = 3
    return answer[program]


@wrong(
    "surviving_ops",
    why="'what algebraic simplification may do to floats (inf, nan, rounding)': cancels x*x/x "
    "to x as real algebra would; wrong on 'x * x / x' (0 predicted; x=0 or inf gives nan, so "
    "the multiply and divide both survive: 2)",
)
def r2_surviving_cancels_division(program, x, n):
    answer = _r2_true_arith(x, n)
    answer["x * x / x"] = 0
    return answer[program]


@wrong(
    "surviving_ops",
    why="'what algebraic simplification may do to floats': treats the sign flip 0.0 - x as "
    "free (folds into nothing, like jnp.negative(-x)); wrong on '0.0 - x' (0 predicted, 1 "
    "survives: 0 - (-0) is +0, not -(-0))",
)
def r2_surviving_zero_minus_free(program, x, n):
    answer = _r2_true_arith(x, n)
    answer["0.0 - x"] = 0
    return answer[program]


@wrong(
    "one_kernel",
    why="'besides parameters and constants, ENTRY holds exactly one instruction, a fusion': "
    "believes a reduction always needs its own kernel; wrong on 'sum(exp(x), axis=1)' (False "
    "predicted; the exp fuses into the reduce: one kLoop fusion)",
)
def r2_kernel_reduction_alone(program, x, n):
    answer = _r2_true_kernel(x, n)
    answer["sum(exp(x), axis=1)"] = False
    return answer[program]


@wrong(
    "one_kernel",
    why="'whether XLA computes it in one kernel': believes XLA unrolls a 3-trip fori_loop into "
    "straight-line multiplies that then fuse; wrong on 'fori_loop(0, 3, v * 2)' (True "
    "predicted; ENTRY keeps a while)",
)
def r2_kernel_loop_unrolled(program, x, n):
    answer = _r2_true_kernel(x, n)
    answer["fori_loop(0, n, v * 2)"] = True
    return answer[program]


@wrong(
    "one_kernel",
    why="'ENTRY holds exactly one instruction, a fusion': thinks a reverse must be materialised "
    "before it is added (not an index remap in the loop); wrong on 'x[::-1] + x' (False "
    "predicted, it is one kLoop fusion)",
)
def r2_kernel_reverse_cuts(program, x, n):
    answer = _r2_true_kernel(x, n)
    answer["x[::-1] + x"] = False
    return answer[program]


@wrong(
    "one_kernel",
    why="'a consumer that needs the finished reduction ... runs in a loop of its own': takes "
    "the scalar norm as a reduction that closes the fusion with its consumer; wrong on "
    "'x / norm(x)' (True predicted, ENTRY has two fusions)",
)
def r2_kernel_norm_fuses(program, x, n):
    answer = _r2_true_kernel(x, n)
    answer["x / norm(x)"] = True
    return answer[program]


# --- reading a per-pass dump


@wrong(
    "pass_timeline",
    why="'One entry per per-pass file, even when its counts equal the previous entry's': "
    "delegates to xla_inspect.passes.pass_timeline, which keeps only passes that changed the "
    "module and starts from before_optimizations; wrong on any capture(..., dump_passes=True) "
    "dump, e.g. of x / 4.0 (fewer entries; pipeline-start files are missing)",
)
def r2_timeline_toolkit(dump_dir):
    steps = passes.pass_timeline(dump_dir)
    return [(s.pass_name, opcode_counts(parse_hlo(s.path.read_text()))) for s in steps]


_R2_NEEDS_BEFORE = re.compile(r"module_\d+\..+?\.(\d+)\.[^.]+\.after_(.+?)\.before_.+\.txt")


@wrong(
    "pass_timeline",
    why="'(some have no .before_<next> part)': the regex requires .before_, so the "
    "copy-insertion files (after_adding_copies_to_resolve_interference.txt ...) are dropped; "
    "wrong on any CPU dump (3 entries fewer)",
)
def r2_timeline_requires_before(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        match = _R2_NEEDS_BEFORE.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    found.sort()
    return [(name, opcode_counts(parse_hlo(path.read_text()))) for _, name, path in found]


_R2_PASS = re.compile(r"module_\d+\..+?\.(\d+)\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


@wrong(
    "pass_timeline",
    why="'Counter of opcodes over every instruction of every computation': counts ENTRY only; "
    "wrong on a dump of sqrt(sum(sin(x)*cos(x), -1)) after the fusion pass (sin, cos, multiply, "
    "reduce vanish from the counts)",
)
def r2_timeline_entry_only(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        match = _R2_PASS.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    found.sort()
    return [
        (name, Counter(i.opcode for i in parse_hlo(path.read_text()).entry))
        for _, name, path in found
    ]


@wrong(
    "pass_timeline",
    why="'(parameters too)': leaves parameter instructions out of the counts; wrong on any "
    "dump (Counter lacks 'parameter')",
)
def r2_timeline_no_parameters(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        match = _R2_PASS.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    found.sort()
    result = []
    for _, name, path in found:
        counts = Counter()
        for computation in parse_hlo(path.read_text()):
            for instruction in computation:
                if instruction.opcode != "parameter":
                    counts[instruction.opcode] += 1
        result.append((name, counts))
    return result


@wrong(
    "pass_that_changed",
    why="'The first entry has nothing before it': compares the first entry with an empty "
    "Counter; wrong on [('a', Counter(add=1)), ('b', Counter(add=1))] with 'add' (returns 'a', "
    "should be None)",
)
def r2_changed_first_vs_empty(timeline, opcode):
    previous = 0
    for name, counts in timeline:
        if counts.get(opcode, 0) != previous:
            return name
        previous = counts.get(opcode, 0)
    return None


@wrong(
    "pass_that_changed",
    why="'The name of the first entry whose count differs from the entry before it': returns "
    "the earlier neighbour (the file name's before_ part read as the culprit); wrong on "
    "[('a', Counter(add=2)), ('b', Counter(add=1))] (returns 'a', should be 'b')",
)
def r2_changed_names_previous(timeline, opcode):
    for (before, old), (_, new) in zip(timeline, timeline[1:]):
        if old.get(opcode, 0) != new.get(opcode, 0):
            return before
    return None


@wrong(
    "pass_that_changed",
    why="'(more or fewer ...)': only notices a drop, like first_pass_removing; wrong on "
    "[('a', Counter()), ('b', Counter(fusion=1))] with 'fusion' (None, should be 'b')",
)
def r2_changed_only_removal(timeline, opcode):
    for (_, old), (name, new) in zip(timeline, timeline[1:]):
        if new.get(opcode, 0) < old.get(opcode, 0):
            return name
    return None


@wrong(
    "named_passes",
    why="'Values: pass names exactly as they appear in the dump file names': writes the GPU "
    "pipeline's fusion pass from the README (priority-fusion); wrong on 'fusion' (the CPU "
    "dump of row_norms names 'fusion')",
)
def r2_named_gpu_fusion():
    return {
        "transpose": "transpose-folding",
        "fusion": "priority-fusion",
        "add": "cse",
        "divide": "algsimp",
    }


@wrong(
    "named_passes",
    why="'removed the repeated add of (x * y + 1) * sin(x * y + 1)': credits the algebraic "
    "simplifier rather than CSE; wrong on 'add' (the dump says cse)",
)
def r2_named_algsimp_for_add():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "algsimp",
        "divide": "algsimp",
    }
