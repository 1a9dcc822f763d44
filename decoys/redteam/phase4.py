"""Red-team wrong answers for phase 4, written from the contract only."""

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt_true_arith(x, n) -> dict:
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


def _rt_true_kernel(x, n) -> dict:
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


# --- predict: surviving_ops -------------------------------------------------------------------


@wrong(
    "surviving_ops",
    why="contract: reason from what simplification may do to floats; this uses real-number "
    "algebra for x * 0.0 and x - x (predicts 0) although 0*inf and inf-inf are NaN: XLA keeps "
    "1 each at f32[3,4]",
)
def real_number_algebra(program, x, n):
    """x * 0 = 0 and x - x = 0 'because math'."""
    answer = _rt_true_arith(x, n)
    answer["x * 0.0"] = 0
    answer["x - x"] = 0
    return answer[program]


@wrong(
    "surviving_ops",
    why="contract: reason from what CSE and constant folding do; this counts the source's ops "
    "without CSE or dead-branch folding: 'x * 2.0 + x * 2.0' -> 3 (XLA: 2), "
    "'jnp.where(False, x * 5.0, x + 5.0)' -> 2 (XLA: 1)",
)
def no_cse_no_dead_branch(program, x, n):
    answer = _rt_true_arith(x, n)
    answer["x * 2.0 + x * 2.0"] = 3
    answer["jnp.where(False, x * 5.0, x + 5.0)"] = 2
    return answer[program]


@wrong(
    "surviving_ops",
    why="contract: what simplification may do to floats; over-careful signed-zero reasoning "
    "(-0.0 + 0.0 is +0.0, so 'x + 0.0' is not exact and must stay) predicts 1 for 'x + 0.0'; "
    "XLA removes it: 0 at f32[3,4]",
)
def signed_zero_keeps_add(program, x, n):
    answer = _rt_true_arith(x, n)
    answer["x + 0.0"] = 1
    return answer[program]


# --- predict: one_kernel ----------------------------------------------------------------------


@wrong(
    "one_kernel",
    why="contract/README: a consumer that needs the finished reduction for every element runs "
    "in a loop of its own; this says every reduction fuses with its consumers: softmax, "
    "x - mean(x) and x / norm(x) -> True (XLA: 2+ fusions in ENTRY)",
)
def reductions_fuse_with_consumers(program, x, n):
    answer = _rt_true_kernel(x, n)
    for key in ("softmax(x, axis=-1)", "x - mean(x, axis=-1, keepdims=True)", "x / norm(x)"):
        answer[key] = True
    return answer[program]


@wrong(
    "one_kernel",
    why="README: ops that only move elements (transpose, concatenate, pad, reverse, reshape) "
    "ride along in the loop; this says any data movement or reduction cuts the kernel, and a "
    "3-trip fori_loop is unrolled: 'x.T * 2 + 1', 'pad(x, 1) * 2', 'sum(exp(x), axis=1)' -> "
    "False (XLA: one fusion)",
)
def data_movement_cuts(program, x, n):
    answer = _rt_true_kernel(x, n)
    for key in (
        "x.T * 2 + 1",
        "concatenate([x, x * 2])",
        "x[::-1] + x",
        "pad(x, 1) * 2",
        "sum(exp(x), axis=1)",
    ):
        answer[key] = False
    answer["fori_loop(0, n, v * 2)"] = True
    return answer[program]


# --- reading a per-pass dump ------------------------------------------------------------------

_NEEDS_BEFORE = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)\.before_(.+)\.txt")


def _counts(path, entry_only=False, with_parameters=True):
    module = parse_hlo(Path(path).read_text())
    comps = [module.entry] if entry_only else list(module)
    return Counter(i.opcode for c in comps for i in c if with_parameters or i.opcode != "parameter")


@wrong(
    "pass_timeline",
    why="contract: 'some have no .before_<next> part' and one entry per per-pass file; this "
    "regex requires .before_, so on any CPU dump it drops the copy-insertion files "
    "(after_adding_copies_to_resolve_interference.txt ...)",
)
def timeline_requires_before(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _NEEDS_BEFORE.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _counts(path)) for _, name, path in found]


_ANY_PASS = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


@wrong(
    "pass_timeline",
    why="contract: counts over every instruction of every computation; this counts ENTRY only, "
    "so after the fusion pass of sqrt(sum(sin(x)*cos(x))) sin/cos/multiply vanish from its "
    "counts (they moved into the fused computation)",
)
def timeline_entry_only(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _ANY_PASS.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _counts(path, entry_only=True)) for _, name, path in found]


@wrong(
    "pass_timeline",
    why="contract: 'parameters too'; this leaves parameters out of the Counter (they are not "
    "'real' ops): every entry lacks its 'parameter' count",
)
def timeline_without_parameters(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _ANY_PASS.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _counts(path, with_parameters=False)) for _, name, path in found]


@wrong(
    "pass_that_changed",
    why="contract: each entry is the module *after* its pass, so the changing pass is the later "
    "neighbour; this returns the earlier one: [('a', {t:1}), ('b', {t:0})] -> 'a' (want 'b')",
)
def earlier_neighbour(timeline, opcode):
    for i in range(1, len(timeline)):
        if timeline[i][1].get(opcode, 0) != timeline[i - 1][1].get(opcode, 0):
            return timeline[i - 1][0]
    return None


@wrong(
    "pass_that_changed",
    why="contract: 'more or fewer'; this only looks for a removal (count drops), so for an "
    "opcode a pass adds, [('a', {}), ('b', {'fusion': 1})] -> None (want 'b')",
)
def only_removals(timeline, opcode):
    for i in range(1, len(timeline)):
        if timeline[i][1].get(opcode, 0) < timeline[i - 1][1].get(opcode, 0):
            return timeline[i][0]
    return None


@wrong(
    "pass_that_changed",
    why="contract: 'the first entry has nothing before it'; this compares the first entry with "
    "an empty module, so [('pipeline-start', {'add': 2}), ('cse', {'add': 1})] -> "
    "'pipeline-start' (want 'cse')",
)
def first_entry_against_zero(timeline, opcode):
    previous = 0
    for name, counts in timeline:
        if counts.get(opcode, 0) != previous:
            return name
        previous = counts.get(opcode, 0)
    return None


@wrong(
    "named_passes",
    why="contract: names from the dump; this guesses that the algebraic simplifier also did the "
    "transpose and the CSE (algsimp removes transposes of transposes): 'transpose' -> 'algsimp' "
    "(the dump says transpose-folding), 'add' -> 'algsimp' (dump: cse)",
)
def algsimp_did_everything():
    return {"transpose": "algsimp", "fusion": "fusion", "add": "algsimp", "divide": "algsimp"}


# --- demonstrations: dtype traps --------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="contract: same dtype as x; NumPy float32 constants are not weakly typed, so a bf16[6] "
    "input comes back as float32",
)
def numpy_constants_promote(x):
    one, zero = np.float32(1.0), np.float32(0.0)
    return x * one + zero


@wrong(
    "folded_scale",
    why="contract: result with the input's dtype; jnp.sqrt(jnp.float32(2)) is a strongly typed "
    "f32, so x bf16[6] / it is float32",
)
def strongly_typed_sqrt(x):
    return x / jnp.sqrt(jnp.float32(2.0))


@wrong(
    "refused_rewrites",
    why="contract: both results have x's dtype; np.float32 factors promote bf16[6] to float32 "
    "(the two multiplies and the subtract do survive)",
)
def numpy_factors(x):
    return x * np.float32(2.0) * np.float32(3.0), x - x


@wrong(
    "stages",
    why="contract: before is StableHLO text; this gives unoptimized HLO "
    "(lowered.as_text(dialect='hlo')), which already lost e.g. a double transpose and has no "
    "stablehlo.* op names",
)
def hlo_as_before(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(dialect="hlo"), lowered.compile().as_text()
