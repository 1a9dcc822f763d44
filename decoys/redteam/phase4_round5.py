"""Red-team wrong answers for phase 4, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------- task 1: stages

_rt5_STAGE_CACHE: dict = {}


@wrong(
    "stages",
    why="'after' must be the optimized HLO; this returns the unoptimized HLO of the "
    "lowering; wrong on repeated_affine (the repeated add is still there)",
)
def _rt5_stages_unoptimized_after(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.as_text(dialect="hlo")


@wrong(
    "stages",
    why="memoizes by function name and argument shapes, so two different functions "
    "of one name at one argument share a result; wrong on `<lambda> sin(x)` after "
    "`<lambda> x * 2.0` at f32[8]",
)
def _rt5_stages_cached_by_name(f, *args):
    key = (getattr(f, "__name__", ""), tuple(np.shape(a) for a in args))
    if key not in _rt5_STAGE_CACHE:
        lowered = jax.jit(f).lower(*args)
        _rt5_STAGE_CACHE[key] = (lowered.as_text(), lowered.compile().as_text())
    return _rt5_STAGE_CACHE[key]


@wrong(
    "stages",
    why="casts every argument to float32 before lowering, so the stages are of "
    "another program than jit(f) at these args; wrong on moments bf16[6] (f32 in the text)",
)
def _rt5_stages_as_float32(f, *args):
    args = tuple(jnp.asarray(a, jnp.float32) for a in args)
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


# ---------------------------------------------------------------- task 2: algebraic_identity


@wrong(
    "algebraic_identity",
    why="x * 1.0 + 0.0 turns -0.0 into +0.0 when called eagerly (XLA "
    "drops the + 0.0 when compiled, so the two disagree); wrong on f32[] -0, eager",
)
def _rt5_identity_plus_zero(x):
    x = jnp.asarray(x)
    return x * 1.0 + 0.0


@wrong(
    "algebraic_identity",
    why="x * 2.0 / 2.0 overflows 3e38 to inf and is not removed; wrong on f32[3,5] with 3e38",
)
def _rt5_identity_double_halve(x):
    x = jnp.asarray(x)
    return x * 2.0 / 2.0


@wrong(
    "algebraic_identity",
    why="NumPy float32 constants are not weak: bfloat16/float16 x comes "
    "back float32; wrong on bf16[2,5]",
)
def _rt5_identity_numpy_constants(x):
    x = jnp.asarray(x)
    return x * np.float32(1.0) / np.float32(1.0)


# ---------------------------------------------------------------- task 3: folded_scale


@wrong(
    "folded_scale",
    why="StableHLO must hold a sqrt and a divide and no multiply; NumPy computes "
    "the root and the source multiplies; wrong on every input (e.g. f32[3,5])",
)
def _rt5_folded_numpy_reciprocal(x):
    x = jnp.asarray(x)
    return x * (1.0 / np.sqrt(2.0))


@wrong(
    "folded_scale",
    why="jnp.sqrt(np.float32(2)) is a strong float32, so x / it promotes "
    "bfloat16 and float16 to float32; wrong on bf16[6]",
)
def _rt5_folded_strong_sqrt(x):
    x = jnp.asarray(x)
    return x / jnp.sqrt(np.float32(2.0))


@wrong(
    "folded_scale",
    why="the sqrt depends on x (x * 0 + 2), XLA cannot fold it, so sqrt and "
    "divide survive; also nan for inf x; wrong on f32[3,5]",
)
def _rt5_folded_sqrt_of_x(x):
    x = jnp.asarray(x)
    return x / jnp.sqrt(x * 0.0 + 2.0)


# ---------------------------------------------------------------- task 4: shared_subexpression


@wrong(
    "shared_subexpression",
    why="(a+b)*(c+d)*(a+b)/(a+b) has 3 adds in the jaxpr and 2 after CSE "
    "but gives nan where a + b == 0 and inf where (a+b)^2 overflows; wrong on f32[8] planted",
)
def _rt5_cse_times_over(a, b, c, d):
    a, b, c, d = (jnp.asarray(v) for v in (a, b, c, d))
    return (a + b) * (c + d) * (a + b) / (a + b)


@wrong(
    "shared_subexpression",
    why="sqrt((a+b)*(a+b)) is |a+b|: wrong sign for a negative sum "
    "and overflow for a large one; wrong on f32[] a negative sum",
)
def _rt5_cse_sqrt_square(a, b, c, d):
    a, b, c, d = (jnp.asarray(v) for v in (a, b, c, d))
    return jnp.sqrt((a + b) * (a + b)) * (c + d)


@wrong(
    "shared_subexpression",
    why="naming the shared value leaves 2 adds in the jaxpr (the task wants 3); wrong on f32[8]",
)
def _rt5_cse_named(a, b, c, d):
    a, b, c, d = (jnp.asarray(v) for v in (a, b, c, d))
    s = a + b
    return s * (c + d)


# ---------------------------------------------------------------- task 5: dead_branch


@wrong(
    "dead_branch",
    why="predicate x > -inf depends on x, XLA cannot prove it, exp survives; and "
    "x = -inf gives exp(-inf) = 0 instead of -inf; wrong on f32[3,5]",
)
def _rt5_dead_where_data(x):
    x = jnp.asarray(x)
    return jnp.where(x > -jnp.inf, x + 1.0, jnp.exp(x))


@wrong(
    "dead_branch",
    why="0 * exp(x) is not removable (0 * inf = nan), exp survives and 3e38 "
    "gives nan; wrong on f32[] 3e38",
)
def _rt5_dead_times_zero(x):
    x = jnp.asarray(x)
    return x + 1.0 + 0.0 * jnp.exp(x)


@wrong(
    "dead_branch",
    why="NumPy float32 one is a strong constant: bfloat16/float16 x gives "
    "float32; wrong on bf16[6]",
)
def _rt5_dead_numpy_one(x):
    x = jnp.asarray(x)
    return jnp.where(False, jnp.exp(x), x + np.float32(1.0))


# ---------------------------------------------------------------- task 6: elementwise_chain


@wrong(
    "elementwise_chain",
    why="only three elementwise ops (sin, multiply, tanh), the contract "
    "wants at least four; wrong on f32[3,5]",
)
def _rt5_chain_three(x):
    x = jnp.asarray(x)
    return jnp.tanh(jnp.sin(x) * 2.0)


@wrong(
    "elementwise_chain",
    why="the four ops are identities XLA removes (*1, /1, +0, -0) "
    "around one sine: ENTRY still shows one fusion (fusion-wrapper) but it holds ONE op, not "
    "a chain of four turned into a loop; wrong on f32[3,5]",
)
def _rt5_chain_identities(x):
    x = jnp.asarray(x)
    return jnp.sin(x * 1.0 / 1.0) + 0.0 - 0.0


@wrong(
    "elementwise_chain",
    why="dividing by a sum (a reduction) cuts the loop into more than one "
    "fusion; wrong on f32[3,5]",
)
def _rt5_chain_with_reduction(x):
    x = jnp.asarray(x)
    return jnp.tanh(jnp.exp(jnp.sin(x)) * 2.0) / jnp.sum(jnp.abs(x) + 1.0)


# ---------------------------------------------------------------- task 7: attention_scores


@wrong(
    "attention_scores",
    why="einsum never puts a transpose of k in the jaxpr; wrong on q (5,3), k (7,3)",
)
def _rt5_scores_einsum(q, k):
    return jnp.einsum("qd,kd->qk", q, k)


@wrong(
    "attention_scores",
    why="(k @ q.T).T transposes q and the result, never k itself; wrong on q (5,3), k (7,3)",
)
def _rt5_scores_transpose_q(q, k):
    return (k @ q.T).T


@wrong(
    "attention_scores",
    why="preferred_element_type float32 returns float32 for bfloat16 and "
    "float16 q; wrong on q (4,8) bf16",
)
def _rt5_scores_f32_accumulate(q, k):
    return jnp.matmul(q, k.T, preferred_element_type=jnp.float32)


# ---------------------------------------------------------------- task 8: refused_rewrites


@wrong(
    "refused_rewrites",
    why="2 * 3 * x is folded by Python to 6 * x: one multiply, not two; wrong on f32[3,5]",
)
def _rt5_refused_python_folds(x):
    x = jnp.asarray(x)
    return 2.0 * 3.0 * x, x - x


@wrong(
    "refused_rewrites",
    why="zeros as x * 0.0 hold no subtract (and are nan for inf); wrong on f32[3,5]",
)
def _rt5_refused_times_zero(x):
    x = jnp.asarray(x)
    return x * 2.0 * 3.0, x * 0.0


@wrong("refused_rewrites", why="jnp.zeros_like holds no subtract at all; wrong on f32[3,5]")
def _rt5_refused_zeros_like(x):
    x = jnp.asarray(x)
    return x * 2.0 * 3.0, jnp.zeros_like(x)


# ---------------------------------------------------------------- task 9: pass_timeline

_rt5_PASS = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def _rt5_count(path: Path) -> Counter:
    module = parse_hlo(path.read_text())
    return Counter(i.opcode for comp in module for i in comp)


@wrong(
    "pass_timeline",
    why="sorts the seq as text, so 10000 comes before 9999; wrong on a dump "
    "with seq 9999 and 10000",
)
def _rt5_timeline_text_sort(dump_dir):
    found = []
    for p in Path(dump_dir).iterdir():
        m = _rt5_PASS.fullmatch(p.name)
        if m:
            found.append((m.group(1), m.group(2), p))
    found.sort(key=lambda t: t[0])
    return [(name, _rt5_count(p)) for _, name, p in found]


@wrong(
    "pass_timeline",
    why="counts ENTRY only, missing while bodies, conditions and branches; "
    "wrong on the loop.stats dump",
)
def _rt5_timeline_entry_only(dump_dir):
    found = []
    for p in Path(dump_dir).iterdir():
        m = _rt5_PASS.fullmatch(p.name)
        if m:
            found.append((int(m.group(1)), m.group(2), p))
    found.sort(key=lambda t: t[0])
    out = []
    for _, name, p in found:
        module = parse_hlo(p.read_text())
        out.append((name, Counter(i.opcode for i in module.entry)))
    return out


@wrong(
    "pass_timeline",
    why="requires a `.before_<next>` part, dropping per-pass files without it "
    "(copy-insertion's after_adding_copies...); wrong on any CPU dump",
)
def _rt5_timeline_needs_before(dump_dir):
    pat = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)\.before_.+\.txt")
    found = []
    for p in Path(dump_dir).iterdir():
        m = pat.fullmatch(p.name)
        if m:
            found.append((int(m.group(1)), m.group(2), p))
    found.sort(key=lambda t: t[0])
    return [(name, _rt5_count(p)) for _, name, p in found]


@wrong(
    "pass_timeline",
    why="drops an entry whose counts equal the previous one's, the contract "
    "wants one entry per file; wrong on any CPU dump (pipeline-start files)",
)
def _rt5_timeline_dedup(dump_dir):
    found = []
    for p in Path(dump_dir).iterdir():
        m = _rt5_PASS.fullmatch(p.name)
        if m:
            found.append((int(m.group(1)), m.group(2), p))
    found.sort(key=lambda t: t[0])
    out: list = []
    for _, name, p in found:
        c = _rt5_count(p)
        if out and out[-1][1] == c:
            continue
        out.append((name, c))
    return out


# ---------------------------------------------------------------- task 10: pass_that_changed


@wrong(
    "pass_that_changed",
    why="sums every opcode whose name contains the asked one; wrong for "
    "'reduce' when only reduce-window changes",
)
def _rt5_changed_substring(timeline, opcode):
    prev = None
    for name, counts in timeline:
        n = sum(v for k, v in counts.items() if opcode in k)
        if prev is not None and n != prev:
            return name
        prev = n
    return None


@wrong(
    "pass_that_changed",
    why="returns the entry before the change (off by one); wrong on "
    "[('a', {add: 2}), ('b', {add: 1})] (answer b)",
)
def _rt5_changed_previous(timeline, opcode):
    for (before, c0), (_, c1) in zip(timeline, timeline[1:]):
        if c0.get(opcode, 0) != c1.get(opcode, 0):
            return before
    return None


@wrong(
    "pass_that_changed",
    why="only notices a decrease; wrong when the first change adds the "
    "opcode, e.g. fusion created by 'fusion'",
)
def _rt5_changed_only_removal(timeline, opcode):
    for (_, c0), (name, c1) in zip(timeline, timeline[1:]):
        if c1.get(opcode, 0) < c0.get(opcode, 0):
            return name
    return None


@wrong(
    "pass_that_changed",
    why="compares presence (`opcode in counter`), so an explicit 0 and a "
    "missing key differ; wrong on [('a', Counter()), ('b', Counter({'add': 0}))]",
)
def _rt5_changed_presence(timeline, opcode):
    for (_, c0), (name, c1) in zip(timeline, timeline[1:]):
        if (opcode in c0) != (opcode in c1) or c0.get(opcode, 0) != c1.get(opcode, 0):
            return name
    return None


# ---------------------------------------------------------------- task 11: named_passes


@wrong(
    "named_passes", why="'add' credited to algsimp; CSE removes the repeated add of repeated_affine"
)
def _rt5_named_add_algsimp():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "algsimp",
        "divide": "algsimp",
    }


@wrong(
    "named_passes",
    why="'divide' given as the pipeline name 'simplification', not the pass name (algsimp)",
)
def _rt5_named_pipeline():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "cse",
        "divide": "simplification",
    }


@wrong(
    "named_passes",
    why="'fusion' read from the .before_ part (fusion-wrapper), the next pass, "
    "not the one that made the fusion",
)
def _rt5_named_before_part():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion-wrapper",
        "add": "cse",
        "divide": "algsimp",
    }


# ---------------------------------------------------------------- task 12: surviving_ops

_rt5_SURVIVE = {
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
}


def _rt5_survive(program, x, n):
    if program == "jnp.negative applied n times":
        return n % 2
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v * 1.0 applied n times to x":
        return 0
    if program == "v - v applied n times to x":
        return 0 if str(x.dtype) == "int32" else n
    if program == "x - x" and str(x.dtype) == "int32":
        return 0
    if program == "sum of n copies of x * 2.0":
        return n
    return _rt5_SURVIVE.get(program, 1)


@wrong(
    "surviving_ops",
    why="counts every negate, forgetting neg(neg(x)) = x is exact; wrong on "
    "'jnp.negative applied n times' at n = 2 (0 survive)",
)
def _rt5_survive_all_negates(program, x, n):
    if program == "jnp.negative applied n times":
        return n
    return _rt5_survive(program, x, n)


@wrong(
    "surviving_ops",
    why="forgets CSE of the n identical x * 2.0: counts n multiplies + n-1 "
    "adds; wrong on 'sum of n copies of x * 2.0' at n = 3 (3 survive)",
)
def _rt5_survive_no_cse(program, x, n):
    if program == "sum of n copies of x * 2.0":
        return 2 * n - 1
    return _rt5_survive(program, x, n)


@wrong(
    "surviving_ops",
    why="thinks int32 x * 0.0 folds to 0, but the weak float promotes x to "
    "float32 and the multiply stays; wrong on 'x * 0.0' at int32 (1 survives)",
)
def _rt5_survive_int_times_zero(program, x, n):
    if program == "x * 0.0" and str(x.dtype) == "int32":
        return 0
    return _rt5_survive(program, x, n)


# ---------------------------------------------------------------- task 13: one_kernel

_rt5_BROKEN = ("sum(exp", "@", "sort", "softmax", "mean", "norm")


def _rt5_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n >= 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    if program == "sum(exp(x), axis=1)":
        return True
    return not any(b in program for b in _rt5_BROKEN)


@wrong(
    "one_kernel",
    why="ignores n: 'jnp.tanh applied n times' at n = 0 returns x unchanged, no fusion in ENTRY",
)
def _rt5_kernel_ignore_n_tanh(program, x, n):
    if program == "jnp.tanh applied n times":
        return True
    return _rt5_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="treats every loop as a kernel breaker; 'fori_loop(0, n, v * 2)' at n = 1 "
    "is unrolled to one fused multiply",
)
def _rt5_kernel_loops_never(program, x, n):
    if program.startswith("fori_loop"):
        return False
    return _rt5_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="thinks a reduction never fuses with its producer; 'sum(exp(x), axis=1)' "
    "is one fusion on CPU (checked at f32[3,4])",
)
def _rt5_kernel_reduce_splits(program, x, n):
    if program == "sum(exp(x), axis=1)":
        return False
    return _rt5_kernel(program, x, n)
