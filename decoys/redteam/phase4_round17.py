"""Red team, phase 4, round 17: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


@wrong(
    "stages",
    why="Clause 'StableHLO text and optimized HLO text': 'before' is taken as "
    "lowered.as_text(dialect='hlo') (unoptimized HLO) instead of StableHLO; differs on "
    "every program, e.g. repeated_affine f32[3,4] (HloModule text, no stablehlo.* ops).",
)
def _rt17_stages_hlo_before(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(dialect="hlo"), lowered.compile().as_text()


@wrong(
    "stages",
    why="Clause 'at these args as given (a Python scalar stays weakly typed)': "
    "converts every leaf to a NumPy array before lowering, so a Python float 1.5 becomes a "
    "strongly typed f32[] and scaled_sine(1.5, bf16[4]) promotes to float32 (module differs).",
)
def _rt17_stages_asarray_args(f, *args):
    args = jax.tree_util.tree_map(np.asarray, args)
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "stages",
    why="Clause 'the module keeps the name jax.jit gives it': wraps f in a lambda "
    "to splat the args, so the module is jit__lambda and not jit_repeated_affine; differs "
    "on every named program (repeated_affine f32[3,4]).",
)
def _rt17_stages_lambda_wrapper(f, *args):
    lowered = jax.jit(lambda *a: f(*a)).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "stages",
    why="Clause 'source locations (debug_info) are not part of the program': "
    "prints the StableHLO with debug_info=True, so loc(...) annotations appear; differs on "
    "every program (repeated_affine f32[3,4]).",
)
def _rt17_stages_debug_info(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(debug_info=True), lowered.compile().as_text()


@wrong(
    "algebraic_identity",
    why="Clause 'for every float: -0.0 ... compiled and called eagerly "
    "alike': x * 1.0 + 0.0; XLA deletes both, but run op by op -0.0 + 0.0 is +0.0, so the "
    "eager call on f32[] -0.0 returns +0.0, not x.",
)
def _rt17_algebraic_identity_plus_zero(x):
    return x * 1.0 + 0.0


@wrong(
    "algebraic_identity",
    why="Clause 'same dtype' / 'Python float constants keep bfloat16': "
    "multiplies and divides by np.float32(1.0), which promotes a bfloat16 or float16 x to "
    "float32; differs (dtype) on bf16[2,5] and f16[8].",
)
def _rt17_algebraic_identity_np_one(x):
    one = np.float32(1.0)
    return x * one / one


@wrong(
    "folded_scale",
    why="Clause 'StableHLO holds a sqrt and a divide (no multiply)': writes "
    "x * (1 / jnp.sqrt(2.0)), the reciprocal by hand: the StableHLO holds a multiply, and the "
    "multiply is the learner's rewrite, not XLA's; differs on f32[3,5] (stablehlo.multiply).",
)
def _rt17_folded_scale_reciprocal(x):
    return x * (1.0 / jnp.sqrt(2.0))


@wrong(
    "folded_scale",
    why="Clause 'the result has the shape and dtype of the input': divides by "
    "jnp.sqrt(jnp.float32(2.0)), a strongly typed f32 constant, so bf16[6] and f16[1,5] "
    "come back as float32.",
)
def _rt17_folded_scale_f32_const(x):
    return x / jnp.sqrt(jnp.float32(2.0))


@wrong(
    "shared_subexpression",
    why="Clause 'so large that its square overflows ... c and d may "
    "have opposite signs': distributes, (a + b) * c + (a + b) * d: 3 adds traced, CSE leaves "
    "2, but a + b = 2e38, c = -4, d = 3.5 (f32) gives -inf + inf = nan instead of -1e38.",
)
def _rt17_shared_subexpression_distribute(a, b, c, d):
    return (a + b) * c + (a + b) * d


@wrong(
    "shared_subexpression",
    why="Clause 'a + b ... so large': averages the two copies, "
    "((a + b) + (a + b)) * 0.5 * (c + d): fine for small values but (a + b) + (a + b) "
    "overflows to inf for a + b = 2e38 (f32), giving -inf instead of -1e38 at c + d = -0.5.",
)
def _rt17_shared_subexpression_average(a, b, c, d):
    s = ((a + b) + (a + b)) * 0.5
    return s * (c + d)


@wrong(
    "shared_subexpression",
    why="Clause 'the jaxpr has 3 adds': names the shared sum once, "
    "s = a + b; s * (c + d): values right, but the jaxpr has 2 adds, so CSE has nothing "
    "to do (f32[12]).",
)
def _rt17_shared_subexpression_named(a, b, c, d):
    s = a + b
    return s * (c + d)


@wrong(
    "dead_branch",
    why="Clause 'that XLA then proves useless': hides the exp behind "
    "exp(x) * 0.0 added to x + 1; XLA cannot prove it zero, so exponential stays in the "
    "optimized HLO, and for x = inf it returns nan instead of inf (f32[3,5]: exp survives).",
)
def _rt17_dead_branch_times_zero(x):
    return x + 1.0 + jnp.exp(x) * 0.0


@wrong(
    "dead_branch",
    why="Clause 'something XLA can decide': the select's predicate is "
    "computed from x (x == x), which XLA does not fold (nan), so the exponential survives "
    "the optimizer, and for x = nan it picks exp(nan) (same nan) but the exp is never "
    "deleted (f32[3,5]: optimized HLO holds exponential).",
)
def _rt17_dead_branch_data_predicate(x):
    return jnp.where(x == x, x + 1.0, jnp.exp(x))


@wrong(
    "elementwise_chain",
    why="Clause 'At least four elementwise ops ... ONE loop fusion': four "
    "negations in a row; XLA's simplifier deletes them all, so no fusion is left (ENTRY is a "
    "copy/parameter only) for f32[3,5].",
)
def _rt17_elementwise_chain_negations(x):
    return -(-(-(-x)))  # noqa: B002


@wrong(
    "elementwise_chain",
    why="Clause 'same shape out': ends the chain with a transpose "
    "(transposes ride along in the loop), so an f32[3,5] input gives f32[5,3].",
)
def _rt17_elementwise_chain_transposed(x):
    return (jnp.tanh(jnp.sin(x) * 2.0 + 1.0) - 0.5).T


@wrong(
    "elementwise_chain",
    why="Clause 'ONE loop fusion': normalizes the chain by its sum, "
    "a consumer that needs the finished reduction, so it splits into a reduce fusion and a "
    "second loop; f32[3,5] gives two fusions in ENTRY.",
)
def _rt17_elementwise_chain_normalized(x):
    y = jnp.exp(jnp.sin(x) * 2.0 + 1.0)
    return y / jnp.sum(y)


@wrong(
    "attention_scores",
    why="Clause 'Scores q @ k^T': scales by 1/sqrt(dim) as in attention; "
    "values differ by that factor for every q, k (q f32[5,3], k f32[7,3]).",
)
def _rt17_attention_scores_scaled(q, k):
    return (q @ k.T) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))


@wrong(
    "attention_scores",
    why="Clause 'of q's dtype': accumulates with "
    "preferred_element_type=float32 for precision and returns float32 for bf16/f16 q, k "
    "(q bf16[4,8], k bf16[3,8]).",
)
def _rt17_attention_scores_f32_acc(q, k):
    return jnp.matmul(q, k.T, preferred_element_type=jnp.float32)


@wrong(
    "attention_scores",
    why="Clause 'an explicit transpose of k itself (the jaxpr transposes "
    "the input k)': computes (k @ q.T).T, which transposes q and the product, not k; the "
    "jaxpr has no transpose of k (q f32[5,3], k f32[7,3]).",
)
def _rt17_attention_scores_transpose_q(q, k):
    return (k @ q.T).T


@wrong(
    "refused_rewrites",
    why="Clause 'no step may pass through a subnormal': 6x as x * 0.5 * "
    "12.0; at x = the smallest normal float32 (1.1754944e-38), x * 0.5 is subnormal and XLA:CPU "
    "flushes it to 0, so six times x comes out 0 instead of 7.05e-38.",
)
def _rt17_refused_rewrites_half_first(x):
    return x * 0.5 * 12.0, x - x


@wrong(
    "refused_rewrites",
    why="Clause 'finite wherever it is in x's dtype (x up to a sixth of "
    "the largest value)': 6x as x * 12.0 * 0.5; at x = 5e37 (f32) x * 12 overflows to inf.",
)
def _rt17_refused_rewrites_double_first(x):
    return x * 12.0 * 0.5, x - x


@wrong(
    "refused_rewrites",
    why="Clause 'two multiplies (no reassociation)': 2.0 * 3.0 * x: Python "
    "folds 6.0 before tracing, only one multiply reaches XLA (f32[3,5]).",
)
def _rt17_refused_rewrites_python_folds(x):
    return 2.0 * 3.0 * x, x - x


@wrong(
    "refused_rewrites",
    why="Clause 'x's shape and dtype': the constants are np.float32, which "
    "promote a bfloat16 x to float32 (bf16[6]: both results float32).",
)
def _rt17_refused_rewrites_np_consts(x):
    return x * np.float32(2.0) * np.float32(3.0), x - x


_rt17_PASS_FILE = re.compile(
    r"module_\d+\.(.+)\.(\d{4,})\.([^.]+)\.after_(.+?)(?:\.before_.+)?\.txt"
)


def _rt17_counts(path):
    module = parse_hlo(Path(path).read_text())
    return Counter(ins.opcode for comp in module for ins in comp)


@wrong(
    "pass_timeline",
    why="Clause 'Order by seq ... (10000 follows 9999)': sorts the file "
    "names as text, so module_0.jit_f.10000.x.after_p... sorts before ...9999...; differs on a "
    "dump with seq 9999 and 10000.",
)
def _rt17_pass_timeline_text_sort(dump_dir):
    out = []
    for path in sorted(Path(dump_dir).iterdir(), key=lambda p: p.name):
        m = _rt17_PASS_FILE.fullmatch(path.name)
        if m:
            out.append((m.group(4), _rt17_counts(path)))
    return out


@wrong(
    "pass_timeline",
    why="Clause 'every instruction of every computation (... while bodies "
    "...)': counts ENTRY only; for loop.stats the while body's subtract/multiply and the "
    "conditional branches are missing from every Counter.",
)
def _rt17_pass_timeline_entry_only(dump_dir):
    files = []
    for path in Path(dump_dir).iterdir():
        m = _rt17_PASS_FILE.fullmatch(path.name)
        if m:
            files.append((int(m.group(2)), m.group(4), path))
    out = []
    for _, name, path in sorted(files):
        module = parse_hlo(path.read_text())
        entry = module.entry if hasattr(module, "entry") else list(module)[-1]
        out.append((name, Counter(ins.opcode for ins in entry)))
    return out


@wrong(
    "pass_timeline",
    why="Clause 'One entry per per-pass file, even when its counts equal the "
    "previous entry's': drops files whose counts did not change; every real dump has such "
    "files (pipeline-start files), so the list is shorter.",
)
def _rt17_pass_timeline_dedup(dump_dir):
    files = []
    for path in Path(dump_dir).iterdir():
        m = _rt17_PASS_FILE.fullmatch(path.name)
        if m:
            files.append((int(m.group(2)), m.group(4), path))
    out = []
    for _, name, path in sorted(files):
        c = _rt17_counts(path)
        if not out or out[-1][1] != c:
            out.append((name, c))
    return out


@wrong(
    "pass_timeline",
    why="Clause '<name> may hold dots': splits the file name on '.', "
    "taking field 2 as seq and field 4 as 'after_<pass>'; for the module jit_loop.stats "
    "(a dotted name) those fields are 'stats' and the pipeline, so every file is skipped and "
    "the timeline is empty.",
)
def _rt17_pass_timeline_split_dots(dump_dir):
    files = []
    for path in Path(dump_dir).iterdir():
        parts = path.name.split(".")
        if len(parts) < 6 or parts[-1] != "txt" or not parts[2].isdigit():
            continue
        if not parts[4].startswith("after_"):
            continue
        files.append((int(parts[2]), parts[4].removeprefix("after_"), path))
    return [(name, _rt17_counts(path)) for _, name, path in sorted(files, key=lambda t: t[0])]


@wrong(
    "pass_that_changed",
    why="Clause 'only that opcode counts, not others whose names contain "
    "it': sums every opcode whose name contains `opcode`; for 'add' an added 'add-dependency' "
    "or for 'copy' a 'copy-start' changes the answer (timeline [('a', {add:1}), ('b', {add:1, "
    "add-dependency:1})] gives 'b', not None).",
)
def _rt17_pass_that_changed_substring(timeline, opcode):
    prev = None
    for name, counts in timeline:
        n = sum(v for k, v in counts.items() if opcode in k)
        if prev is not None and n != prev:
            return name
        prev = n
    return None


@wrong(
    "pass_that_changed",
    why="Clause 'The first entry has nothing before it': compares the "
    "first entry with an empty Counter, so a timeline whose first entry already holds the "
    "opcode returns the first name instead of None ([('p', {add: 2})] gives 'p').",
)
def _rt17_pass_that_changed_empty_start(timeline, opcode):
    prev = Counter()
    for name, counts in timeline:
        if counts.get(opcode, 0) != prev.get(opcode, 0):
            return name
        prev = counts
    return None


@wrong(
    "pass_that_changed",
    why="Clause 'each entry is the module after its pass': returns the "
    "name of the entry *before* the change ([('a', {add:2}), ('b', {add:1})] gives 'a', not "
    "'b').",
)
def _rt17_pass_that_changed_previous_name(timeline, opcode):
    for (n0, c0), (n1, c1) in zip(timeline, timeline[1:]):  # noqa: B007
        if c0.get(opcode, 0) != c1.get(opcode, 0):
            return n0
    return None


@wrong(
    "pass_that_changed",
    why="Clause 'more or fewer': only looks for a decrease (the README "
    "talks of passes removing ops); for 'fusion' in row_norms' timeline, where fusion adds "
    "fusions, it returns None instead of 'fusion'.",
)
def _rt17_pass_that_changed_only_fewer(timeline, opcode):
    for (_, c0), (n1, c1) in zip(timeline, timeline[1:]):
        if c1.get(opcode, 0) < c0.get(opcode, 0):
            return n1
    return None


@wrong(
    "named_passes",
    why="Clause 'names exactly as they appear in the dump file names': names "
    "the passes by what they do (constant-folding for the divide, transpose-folding...) "
    "rather than reading the dump: x / 4.0 loses its divide in algsimp, not constant_folding.",
)
def _rt17_named_passes_guessed():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "cse",
        "divide": "constant_folding",
    }


@wrong(
    "named_passes",
    why="Clause 'the pass name is the text after after_': reads the name "
    "from the .before_<next> part of the file where the count changed (the next pass), e.g. "
    "'add' answered with the pass that follows cse in the dump.",
)
def _rt17_named_passes_next_pass():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "algsimp",
        "divide": "algsimp",
    }


# surviving_ops: a table read off float32 compiles at n = 3 (the README's BANK_N).
_rt17_SURVIVE_F32_N3 = {
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


@wrong(
    "surviving_ops",
    why="Clause 'for an x of this ... dtype (... int32) and the count n': a "
    "table read off float32 compiles at n = 3; int32 'x - x' folds to 0 (table says 1), and "
    "'jnp.negative applied n times' at n = 2 leaves 0 (table says 1).",
)
def _rt17_surviving_ops_f32_table(program, x, n):
    return _rt17_SURVIVE_F32_N3[program]


@wrong(
    "surviving_ops",
    why="Clause 'algebraic simplification ... integers': handles n but "
    "treats int32 like float32 ('x - x' survives, 'v - v applied n times' keeps n subtracts); "
    "for int32 x - x XLA folds to 0, so it answers 1 instead of 0.",
)
def _rt17_surviving_ops_no_int(program, x, n):
    table = dict(_rt17_SURVIVE_F32_N3)
    table["jnp.negative applied n times"] = n % 2
    table["v + 1.0 applied n times to x"] = n
    table["v - v applied n times to x"] = n
    table["sum of n copies of x * 2.0"] = n
    return table[program]


_rt17_ONE_KERNEL = {
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
    why="Clause 'the count n (0 to 5)': a table that ignores n; at n = 0 "
    "'jnp.tanh applied n times' returns x unchanged (a copy, not a fusion: False), and at "
    "n = 1 'fori_loop(0, n, v * 2)' is unrolled into one multiply fusion (True).",
)
def _rt17_one_kernel_ignores_n(program, x, n):
    return _rt17_ONE_KERNEL[program]


@wrong(
    "one_kernel",
    why="Clause 'a loop of one trip is unrolled; zero trips is a copy': treats "
    "every fori_loop as a loop (False) and every repeated tanh as one fusion for n >= 0; "
    "at n = 1 fori_loop is one fusion (True expected).",
)
def _rt17_one_kernel_loops_never(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return False
    if program == "jnp.tanh applied n times":
        return True
    return _rt17_ONE_KERNEL[program]
