"""Red-team wrong answers for phase 4, written from the contract only.

Round 6: answers that agree with a correct one on the examples but not on another valid input
(another dtype, a size-1 dimension, an int32 x, n outside the banked 3, a dump with seq >= 10000,
hyphenated pass names, a while body, an explicit 0 in a Counter, ...).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt6_ARITH = ("add", "subtract", "multiply", "divide", "negate")

# --- task 1: stages -----------------------------------------------------------------------

_rt6_STAGE_CACHE: dict = {}


@wrong(
    "stages",
    why="memoises by (function, shapes) and forgets the dtype: (before, after) must be for jax.jit(f) "
    "at THESE args; wrong on quarter at f32[8] and then quarter at bf16[8] (returns the f32 texts)",
)
def _rt6_stages_cache_ignores_dtype(f, *args):
    key = (f, tuple(np.shape(a) for a in args))
    if key not in _rt6_STAGE_CACHE:
        lowered = jax.jit(f).lower(*args)
        _rt6_STAGE_CACHE[key] = (lowered.as_text(), lowered.compile().as_text())
    return _rt6_STAGE_CACHE[key]


@wrong(
    "stages",
    why="compiles jax.jit(f, keep_unused=True), not jax.jit(f): the before and after keep a "
    "parameter jit prunes; wrong on ignores_second(f32[4], f32[2,3]) (an extra f32[2,3] parameter)",
)
def _rt6_stages_keep_unused(f, *args):
    lowered = jax.jit(f, keep_unused=True).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "stages",
    why="lowers jax.jit(f, donate_argnums=all) to 'save memory': the texts carry buffer-donation "
    "aliasing that jax.jit(f) does not have; wrong on repeated_affine(f32[3,4], f32[3,4]) "
    "(tf.aliasing_output / input_output_alias)",
)
def _rt6_stages_donated(f, *args):
    lowered = jax.jit(f, donate_argnums=tuple(range(len(args)))).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


# --- task 2: algebraic_identity -----------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="x * 1.0 + 0.0 is removed by XLA, but called eagerly -0.0 + 0.0 is +0.0: not x itself "
    "'compiled and called eagerly alike'; wrong on f32[] -0.0 called eagerly",
)
def _rt6_identity_plus_zero(x):
    return x * 1.0 + 0.0


@wrong(
    "algebraic_identity",
    why="a NumPy float32 one is strongly typed and promotes: result float32, not x's dtype; wrong "
    "on bf16[2,5] and f16[8]",
)
def _rt6_identity_numpy_one(x):
    return x * np.float32(1.0) / np.float32(1.0)


@wrong(
    "algebraic_identity",
    why="two negations are exact and removed, but negate is not one of the arithmetic ops "
    "(+ - * /) the contract asks for; wrong on every input (StableHLO holds no add/sub/mul/div)",
)
def _rt6_identity_double_negate(x):
    negated = -x
    return -negated


@wrong(
    "algebraic_identity",
    why="x * 2.0 / 2.0 is not exact for floats (3e38 * 2 is inf) and XLA keeps both ops; wrong "
    "on f32 3e38 and f16 65504 (returns inf)",
)
def _rt6_identity_times_two_over_two(x):
    return x * 2.0 / 2.0


# --- task 3: folded_scale -----------------------------------------------------------------


@wrong(
    "folded_scale",
    why="jnp.sqrt of a NumPy float32 is strongly typed: x / it is float32 for a bf16 or f16 x; "
    "wrong on bf16[6] and f16[1,5] (dtype changes)",
)
def _rt6_folded_numpy_sqrt(x):
    return x / jnp.sqrt(np.float32(2.0))


@wrong(
    "folded_scale",
    why="multiplies by 1/sqrt(2) itself: StableHLO holds a multiply, so the multiply is not XLA's "
    "rewrite; wrong on every input (f32[3,5])",
)
def _rt6_folded_own_reciprocal(x):
    return x * (1.0 / jnp.sqrt(2.0))


@wrong(
    "folded_scale",
    why="uses lax.rsqrt and a multiply: StableHLO holds no sqrt and no divide; wrong on every "
    "input (f32[3,5])",
)
def _rt6_folded_rsqrt(x):
    return x * lax.rsqrt(2.0)


# --- task 4: shared_subexpression ---------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="distributes: (a+b)*c + (a+b)*d is not (a+b)*(c+d) for floats; with c and d of opposite "
    "signs a*c overflows: wrong on f32[] a=1e38, b=0, c=10, d=-9.9 (nan instead of 1e37)",
)
def _rt6_cse_distributed(a, b, c, d):
    return (a + b) * c + (a + b) * d


@wrong(
    "shared_subexpression",
    why="((a+b) + (a+b)) / 2 has 4 adds in the jaxpr and 3 after CSE, and 2(a+b) overflows; "
    "wrong on f32[8] (add counts) and on f16 a=b=200... (inf)",
)
def _rt6_cse_average_of_two(a, b, c, d):
    return ((a + b) + (a + b)) / 2.0 * (c + d)


@wrong(
    "shared_subexpression",
    why="(a+b) * (c+d) * ((a+b)/(a+b)): 3 adds, 2 after CSE, but 0/0 is nan: wrong where a + b "
    "== 0 (f32[8] planted a=1, b=-1) and where a + b overflows (inf/inf)",
)
def _rt6_cse_ratio_of_sums(a, b, c, d):
    return (a + b) * (c + d) * ((a + b) / (a + b))


@wrong(
    "shared_subexpression",
    why="sqrt((a+b)*(a+b)) loses the sign and overflows: wrong on 'f32[] a negative sum' "
    "(a=-1, b=-0.5 gives +1.125 not -1.125)",
)
def _rt6_cse_sqrt_square(a, b, c, d):
    return jnp.sqrt((a + b) * (a + b)) * (c + d)


# --- task 5: dead_branch ------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="the predicate x == x is computed from x, so XLA cannot prove the exp unused (nan != nan): "
    "the optimized HLO keeps an exponential; wrong on every input (f32[3,5])",
)
def _rt6_dead_x_equals_x(x):
    return jnp.where(x == x, x + 1.0, jnp.exp(x))


@wrong(
    "dead_branch",
    why="np.float32(1.0) promotes a bf16/f16 x: x + 1 must keep x's dtype; wrong on bf16[6] and "
    "f16[1,5]",
)
def _rt6_dead_numpy_one(x):
    return jnp.where(True, x + np.float32(1.0), jnp.exp(x))


@wrong(
    "dead_branch",
    why="the constant predicate picks the exp side: returns exp(x), not x + 1; wrong on every input",
)
def _rt6_dead_wrong_side(x):
    return jnp.where(False, x + 1.0, jnp.exp(x))


# --- task 6: elementwise_chain ------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="only three elementwise ops (sin, multiply, exp): the contract asks for at least four; "
    "wrong on every input",
)
def _rt6_chain_three_ops(x):
    return jnp.exp(jnp.sin(x) * 2.0)


@wrong(
    "elementwise_chain",
    why="a fori_loop of four sines is a while loop, which cuts the chain: ENTRY holds a while, not "
    "one fusion; wrong on f32[3,5]",
)
def _rt6_chain_in_a_loop(x):
    return lax.fori_loop(0, 4, lambda i, v: jnp.sin(v), x)


@wrong(
    "elementwise_chain",
    why="subtracting the mean needs the finished reduction for every element: two loops, not one "
    "fusion; wrong on f32[3,5]",
)
def _rt6_chain_minus_mean(x):
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0) - jnp.mean(x)


@wrong(
    "elementwise_chain",
    why="four identities (* 1, / 1, - 0, * 1) that XLA deletes: nothing is left to fuse, ENTRY "
    "holds no fusion; wrong on every input",
)
def _rt6_chain_of_identities(x):
    return ((x * 1.0) / 1.0 - 0.0) * 1.0


# --- task 7: attention_scores -------------------------------------------------------------


@wrong(
    "attention_scores",
    why="preferred_element_type=float32 returns float32 scores for bf16/f16 q and k, not q's "
    "dtype; wrong on ((4,8),(3,8),bf16) and ((3,6),(5,6),f16)",
)
def _rt6_scores_f32_accumulate(q, k):
    return jnp.matmul(q, k.T, preferred_element_type=jnp.float32)


@wrong(
    "attention_scores",
    why="transposes convert(k), not the input k itself (the jaxpr must transpose k); wrong on "
    "((4,8),(3,8),bf16) (the transpose's operand is a convert)",
)
def _rt6_scores_upcast_then_transpose(q, k):
    return (q.astype(jnp.float32) @ k.astype(jnp.float32).T).astype(q.dtype)


@wrong(
    "attention_scores",
    why="squeeze drops a dimension of 1: shape must be (seq_q, seq_k); wrong on q (1,6), k (9,6) "
    "(shape (9,)) and q (2,6), k (1,6) (shape (2,))",
)
def _rt6_scores_squeezed(q, k):
    return jnp.squeeze(q @ k.T)


@wrong(
    "attention_scores",
    why="einsum never produces an explicit transpose of k in the jaxpr; wrong on every case",
)
def _rt6_scores_einsum(q, k):
    return jnp.einsum("qd,kd->qk", q, k)


# --- task 8: refused_rewrites -------------------------------------------------------------


@wrong(
    "refused_rewrites",
    why="np.float32(2) promotes bf16/f16 x to float32: both results must have x's dtype; wrong on "
    "bf16[6] and f16[1,5]",
)
def _rt6_refused_numpy_factor(x):
    return x * np.float32(2.0) * 3.0, x - x


@wrong(
    "refused_rewrites",
    why="x*3 + x*3 is CSE'd to one multiply and an add: the optimized HLO must keep two "
    "multiplies; wrong on every input (f32[3,5])",
)
def _rt6_refused_sum_of_triples(x):
    return x * 3.0 + x * 3.0, x - x


@wrong(
    "refused_rewrites",
    why="x*2 - x*2 shares x*2 with the six-times result in the source, "
    "but is not zeros where x*2 overflows: wrong on 'f32[] 3e38' and f16 40000 (nan, not 0)",
)
def _rt6_refused_zero_from_shared(x):
    twice = x * 2.0
    return twice * 3.0, x * 2.0 - twice


@wrong(
    "refused_rewrites",
    why="x * 0.0 is no subtract: the optimized HLO must keep one subtract; wrong on every input",
)
def _rt6_refused_zero_by_multiply(x):
    return x * 2.0 * 3.0, x * 0.0


# --- task 9: pass_timeline ----------------------------------------------------------------

_rt6_FILE = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_([^.]+)(?:\.before_[^.]+)?\.txt")


def _rt6_all_counts(text: str) -> Counter:
    return Counter(i.opcode for comp in parse_hlo(text) for i in comp.instructions)


@wrong(
    "pass_timeline",
    why="sorts by the seq as text: 10000 sorts before 9999; wrong on a dump whose seqs cross "
    "9999 -> 10000 (order by the number)",
)
def _rt6_timeline_sorted_as_text(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt6_FILE.fullmatch(path.name)
        if m:
            found.append((m.group(1), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt6_all_counts(path.read_text())) for _, name, path in found]


_rt6_WORD = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(\w+)")


@wrong(
    "pass_timeline",
    why="captures the pass name with \\w+, which stops at a hyphen: 'transpose-folding' becomes "
    "'transpose'; wrong on the dump of a.T @ b (and any hyphenated pass)",
)
def _rt6_timeline_word_names(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        if "after_optimizations" in path.name or "before_optimizations" in path.name:
            continue
        m = _rt6_WORD.match(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt6_all_counts(path.read_text())) for _, name, path in found]


def _rt6_reachable_by_calls(module) -> Counter:
    # ENTRY plus what fusions call (calls=), not while bodies/conditions or branches
    counts: Counter = Counter()
    todo = [module.entry]
    seen = set()
    while todo:
        comp = todo.pop()
        if comp.name in seen:
            continue
        seen.add(comp.name)
        for ins in comp.instructions:
            counts[ins.opcode] += 1
            m = re.search(r"calls=%?([\w.\-]+)", ins.attributes_text)
            if m and module.computation(m.group(1)) is not None:
                todo.append(module.computation(m.group(1)))
    return counts


@wrong(
    "pass_timeline",
    why="counts ENTRY and fused computations (calls=) only, not while bodies, conditions or "
    "conditional branches; wrong on the dump of loop_stats (fori_loop of a cond)",
)
def _rt6_timeline_follows_calls_only(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt6_FILE.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt6_reachable_by_calls(parse_hlo(path.read_text()))) for _, name, path in found]


@wrong(
    "pass_timeline",
    why="drops an entry whose counts equal the previous one: the contract wants one entry per "
    "per-pass file; wrong on any dump with a pass that changed attributes only (pipeline-start)",
)
def _rt6_timeline_dedup_equal_counts(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt6_FILE.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    out = []
    for _, name, path in found:
        counts = _rt6_all_counts(path.read_text())
        if out and out[-1][1] == counts:
            continue
        out.append((name, counts))
    return out


_rt6_NEEDS_NEXT = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)\.before_.+\.txt")


@wrong(
    "pass_timeline",
    why="requires a .before_<next> part: the files without it (a pipeline's last pass) are "
    "lost; wrong on any dump holding such a file",
)
def _rt6_timeline_needs_before(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt6_NEEDS_NEXT.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt6_all_counts(path.read_text())) for _, name, path in found]


# --- task 10: pass_that_changed -----------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="compares the first entry with an empty Counter: the first entry has nothing before it; "
    "wrong on [('a', {'add': 1}), ('b', {'add': 1})] (returns 'a', not None)",
)
def _rt6_changed_first_vs_empty(timeline, opcode):
    previous = 0
    for name, counts in timeline:
        if counts.get(opcode, 0) != previous:
            return name
        previous = counts.get(opcode, 0)
    return None


@wrong(
    "pass_that_changed",
    why="returns the entry BEFORE the change (the file that still had the old count); wrong on "
    "[('a', {'add': 2}), ('b', {'add': 1})] (returns 'a', not 'b')",
)
def _rt6_changed_returns_previous(timeline, opcode):
    for (prev_name, prev), (_, counts) in zip(timeline, timeline[1:]):
        if prev.get(opcode, 0) != counts.get(opcode, 0):
            return prev_name
    return None


@wrong(
    "pass_that_changed",
    why="sums every opcode whose name contains `opcode`: only that opcode counts; wrong on "
    "[('a', {'copy': 1, 'copy-start': 1}), ('b', {'copy': 1})] for 'copy' (returns 'b', not None)",
)
def _rt6_changed_substring(timeline, opcode):
    def total(counts):
        return sum(v for k, v in counts.items() if opcode in k)

    for (_, prev), (name, counts) in zip(timeline, timeline[1:]):
        if total(prev) != total(counts):
            return name
    return None


@wrong(
    "pass_that_changed",
    why="only looks for a decrease: 'more or fewer' both count; wrong on "
    "[('a', {}), ('fusion', {'fusion': 1})] for 'fusion' (returns None)",
)
def _rt6_changed_only_removals(timeline, opcode):
    for (_, prev), (name, counts) in zip(timeline, timeline[1:]):
        if counts.get(opcode, 0) < prev.get(opcode, 0):
            return name
    return None


@wrong(
    "pass_that_changed",
    why="compares with .get(opcode) (None when missing), so a missing opcode differs from an "
    "explicit 0; wrong on [('a', Counter()), ('b', Counter({'add': 0}))] (returns 'b', not None)",
)
def _rt6_changed_missing_is_not_zero(timeline, opcode):
    for (_, prev), (name, counts) in zip(timeline, timeline[1:]):
        if prev.get(opcode) != counts.get(opcode):
            return name
    return None


# --- task 11: named_passes ----------------------------------------------------------------


@wrong(
    "named_passes",
    why="names the `before_<next>` part of the file (the pass that had not run yet): wrong for "
    "every key (e.g. 'divide' is algsimp, not the pass after it)",
)
def _rt6_named_next_pass():
    return {
        "transpose": "cse",
        "fusion": "fusion-wrapper",
        "add": "while-loop-trip-count-annotator",
        "divide": "simplify-sorts",
    }


@wrong(
    "named_passes",
    why="GPU pass names from the README, not the CPU dump's: 'fusion' is 'fusion' on CPU, not "
    "'priority-fusion'; wrong on the fusion key",
)
def _rt6_named_gpu_names():
    return {
        "transpose": "transpose-folding",
        "fusion": "priority-fusion",
        "add": "cse",
        "divide": "algsimp",
    }


@wrong(
    "named_passes",
    why="guesses constant folding for the divide (x / 4.0 is rewritten by the simplifier, "
    "algsimp, not by constant-folding) and spells names with underscores: 'transpose_folding' "
    "is not the file name's 'transpose-folding'",
)
def _rt6_named_misspelled():
    return {
        "transpose": "transpose_folding",
        "fusion": "fusion",
        "add": "cse",
        "divide": "constant_folding",
    }


# --- task 12: surviving_ops ---------------------------------------------------------------


def _rt6_float_rule(program, n):
    table = {
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
    if program in table:
        return table[program]
    return {
        "jnp.negative applied n times": n % 2,
        "v + 1.0 applied n times to x": n,
        "v * 1.0 applied n times to x": 0,
        "v - v applied n times to x": n,
        "sum of n copies of x * 2.0": n,
    }[program]


@wrong(
    "surviving_ops",
    why="applies the float rules to int32 too: for int32 x - x is exactly 0 and folds; wrong on "
    "'x - x' at int32[2,3] (0, not 1) and 'v - v applied n times to x' at int32 (0, not n)",
)
def _rt6_surviving_int_as_float(program, x, n):
    return _rt6_float_rule(program, n)


@wrong(
    "surviving_ops",
    why="the banked case (f32[3,4], n=3) hard-coded: ignores n and dtype; wrong on 'v + 1.0 "
    "applied n times to x' at n=5 (3, not 5) and 'x - x' at int32",
)
def _rt6_surviving_banked_n(program, x, n):
    return _rt6_float_rule(program, 3)


@wrong(
    "surviving_ops",
    why="treats int32 programs with float literals as integer arithmetic: x * 0.0 makes float32, "
    "so the multiply stays; wrong on 'x * 0.0' at int32 (1, not 0) and 'v + 1.0 applied n times "
    "to x' at int32, n=4 (4, not 1)",
)
def _rt6_surviving_int_literals_fold(program, x, n):
    if str(x.dtype) == "int32":
        if program in ("x * 0.0", "x - x", "v - v applied n times to x"):
            return 0
        if program == "v + 1.0 applied n times to x":
            return 1
    return _rt6_float_rule(program, n)


# --- task 13: one_kernel ------------------------------------------------------------------

_rt6_KERNEL_AT_3 = {
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
    "fori_loop(0, n, v * 2)": False,
    "x / norm(x)": False,
    "pad(x, 1) * 2": True,
    "jnp.tanh applied n times": True,
}


@wrong(
    "one_kernel",
    why="the banked answers (n = 3) whatever n: a loop of one trip is unrolled into one fusion and "
    "zero steps is a copy; wrong on 'fori_loop(0, n, v * 2)' at n=1 (True) and 'jnp.tanh applied "
    "n times' at n=0 (False)",
)
def _rt6_kernel_ignores_n(program, x, n):
    return _rt6_KERNEL_AT_3[program]


@wrong(
    "one_kernel",
    why="believes a reduction always cuts the chain (a GPU kInput habit): on CPU sum(exp(x)) is "
    "one kLoop fusion; wrong on 'sum(exp(x), axis=1)' at f32[3,4] (True, not False)",
)
def _rt6_kernel_reduction_cuts(program, x, n):
    if program == "sum(exp(x), axis=1)":
        return False
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return _rt6_KERNEL_AT_3[program]


@wrong(
    "one_kernel",
    why="thinks the bias add rides in the dot as a GEMM epilogue (GPU) and a loop of any count "
    "becomes one kernel: wrong on 'x @ w + 1' at f32[3,4] (dot and fusion apart: False) and on "
    "'fori_loop(0, n, v * 2)' at n=2 (a while: False)",
)
def _rt6_kernel_epilogue_and_loops(program, x, n):
    if program == "x @ w + 1 (w ones, x.shape[1] by 4)":
        return True
    if program == "fori_loop(0, n, v * 2)":
        return n >= 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return _rt6_KERNEL_AT_3[program]
