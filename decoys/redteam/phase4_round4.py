"""Red-team wrong answers for phase 4, written from the contract only.

Round 4: each answer agrees with a correct one on the example inputs of programs.py (f32[3,5],
bf16[6], f32[8] uniform in [0.1, 1), qk() 8x16 by 8x16, the bank case f32[3,4] n=3, real dumps
of jit_<name> modules) and is wrong on another valid input named in its `why`.
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

# --- task 1: stages ---------------------------------------------------------------------------

_rt4_STAGES_CACHE: dict = {}


@wrong(
    "stages",
    why="(before, after) must be those of jax.jit(f) at THESE args; the cache is keyed by the "
    "function's __name__ and the arg shapes/dtypes, so two different lambdas (both named "
    "'<lambda>') at the same shapes get the first one's texts; wrong on stages(lambda x: x * 2.0, "
    "x) followed by stages(lambda x: jnp.sin(x), x) with the same f32[8] x",
)
def _rt4_stages_cached_by_name(f, *args):
    key = (getattr(f, "__name__", repr(f)),) + tuple(
        (np.shape(a), str(jnp.result_type(a))) for a in args
    )
    if key not in _rt4_STAGES_CACHE:
        lowered = jax.jit(f).lower(*args)
        _rt4_STAGES_CACHE[key] = (lowered.as_text(), lowered.compile().as_text())
    return _rt4_STAGES_CACHE[key]


@wrong(
    "stages",
    why="stages are those of jax.jit(f) AT THESE ARGS; promoting every arg with np.atleast_1d "
    "changes a rank-0 arg to shape (1,), so the texts are of another program (tensor<1xf32>, "
    "f32[1]); wrong on stages(jnp.sin, np.float32(2.0)) or any scalar argument",
)
def _rt4_stages_atleast_1d(f, *args):
    arrays = [np.atleast_1d(np.asarray(a)) if np.ndim(a) == 0 else a for a in args]
    lowered = jax.jit(f).lower(*arrays)
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "stages",
    why="stages are those of jax.jit(f), which prunes unused arguments; keep_unused=True keeps "
    "them as parameters in both StableHLO and the optimized module, so the texts are of another "
    "jit; wrong on stages(lambda x, y: x * 2.0, x, y) (an argument the function ignores)",
)
def _rt4_stages_keep_unused(f, *args):
    lowered = jax.jit(f, keep_unused=True).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


# --- task 2: algebraic_identity ---------------------------------------------------------------


@wrong(
    "algebraic_identity",
    why="must return x itself for EVERY float through exact identities; x + 0.0 is not an "
    "identity for -0.0 (-0.0 + 0.0 = +0.0): XLA happens to delete it, but the function called "
    "as written (eagerly, or jax.disable_jit) returns +0.0; wrong on x = -0.0 (f32 or bf16)",
)
def _rt4_identity_plus_zero(x):
    return (x + 0.0) * 1.0


@wrong(
    "algebraic_identity",
    why="at least two arithmetic ops (+ - * /) that XLA removes; Python folds 1.0 / 1.0 before "
    "tracing, so StableHLO holds ONE multiply (x * 1.0) and only one op was removed by XLA; "
    "wrong on every input (f32[3,5]: one stablehlo.multiply)",
)
def _rt4_identity_python_folded(x):
    return x * (1.0 / 1.0)


@wrong(
    "algebraic_identity",
    why="x itself, same dtype: the constant 1 is typed for the two dtypes of the examples "
    "(bfloat16, else float32), so a float16 x is promoted to float32; wrong on x f16[4] "
    "(returns float32)",
)
def _rt4_identity_strong_one(x):
    one = jnp.ones((), jnp.bfloat16 if x.dtype == jnp.bfloat16 else jnp.float32)
    return x * one / one


# --- task 3: folded_scale ---------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="result has x's shape; dividing by jnp.sqrt of a shape-(1,) constant broadcasts a rank-0 "
    "x to shape (1,); wrong on a scalar x f32[] (returns f32[1])",
)
def _rt4_folded_scale_array_const(x):
    return x / jnp.sqrt(jnp.array([2.0], x.dtype))


@wrong(
    "folded_scale",
    why="StableHLO must hold a sqrt and a divide and NO multiply; jnp.ones_like(x) * 2.0 puts a "
    "multiply into StableHLO (the sqrt operand is built by a multiply); wrong on every input, "
    "e.g. f32[3,5]",
)
def _rt4_folded_scale_ones_times_two(x):
    return x / jnp.sqrt(jnp.ones_like(x) * 2.0)


@wrong(
    "folded_scale",
    why="result has x's dtype; the 2.0 is typed for the two dtypes of the examples (bfloat16, "
    "else float32, a strong type), so a float16 x is promoted and the result is float32; wrong "
    "on x f16[4]",
)
def _rt4_folded_scale_typed_two(x):
    two = jnp.asarray(2.0, jnp.bfloat16 if x.dtype == jnp.bfloat16 else jnp.float32)
    return x / jnp.sqrt(two)


# --- task 4: shared_subexpression -------------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="(a + b) times (c + d) element-wise; sqrt((a+b)*(a+b)) is |a+b|, so a negative sum "
    "flips the sign (3 adds in the jaxpr, 2 after CSE as asked); wrong on a = -1, b = -1, c = d "
    "= 1 (gives 4, not -4): the example inputs are all positive",
)
def _rt4_cse_sqrt_square(a, b, c, d):
    return jnp.sqrt((a + b) * (a + b)) * (c + d)


@wrong(
    "shared_subexpression",
    why="(a + b) times (c + d); (a+b)**2/(a+b) (3 adds in the jaxpr, 2 after CSE) is nan where "
    "a + b == 0 and inf where (a+b)^2 overflows; wrong on a = 1, b = -1 (nan instead of 0) and "
    "on a = b = 2e19 f32: the example inputs are all in [0.1, 1)",
)
def _rt4_cse_square_over(a, b, c, d):
    return (a + b) ** 2 / (a + b) * (c + d)


@wrong(
    "shared_subexpression",
    why="result must have the inputs' dtype; the product is computed in float32 for accuracy "
    "and cast back only for bfloat16 (the half dtype of the examples), so float16 inputs give a "
    "float32 result; wrong on a, b, c, d f16[8]",
)
def _rt4_cse_float32(a, b, c, d):
    s = jnp.maximum(a + b, a + b)
    out = s.astype(jnp.float32) * (c + d).astype(jnp.float32)
    return out.astype(jnp.bfloat16) if a.dtype == jnp.bfloat16 else out


# --- task 5: dead_branch ----------------------------------------------------------------------


@wrong(
    "dead_branch",
    why="must return x + 1 for every x; the predicate x.ndim >= 1 is known at compile time but "
    "False for a scalar, so a rank-0 x gets exp(x) and the exponential survives; wrong on x = "
    "f32[] 2.0 (returns 7.389)",
)
def _rt4_dead_branch_rank_predicate(x):
    return jnp.where(x.ndim >= 1, x + 1.0, jnp.exp(x))


@wrong(
    "dead_branch",
    why="must return x + 1; the predicate 'more than one row' is static but False for a leading "
    "dimension of 1, so x f32[1,5] gets exp(x) (and a scalar crashes); wrong on x f32[1,5]",
)
def _rt4_dead_branch_rows_predicate(x):
    return jnp.where(x.shape[0] > 1, x + 1.0, jnp.exp(x))


@wrong(
    "dead_branch",
    why="result must have x's shape; the squeeze drops size-1 dimensions, so x f32[1,5] returns "
    "f32[5] and x f32[4,1] returns f32[4]; wrong on x f32[1,5]",
)
def _rt4_dead_branch_squeezed(x):
    return jnp.squeeze(jnp.where(True, x + 1.0, jnp.exp(x)))


# --- task 6: elementwise_chain ----------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="at least four elementwise ops that XLA turns into one fusion; two of the four are a "
    "double negation that the simplifier deletes, so the fusion holds two ops (sine, cosine); "
    "wrong on every input (f32[3,5]: fused computation has 2 elementwise ops)",
)
def _rt4_chain_double_negation(x):
    return jnp.sin(jnp.cos(jnp.negative(-x)))


@wrong(
    "elementwise_chain",
    why="at least four elementwise ops fused; * 1.0 and + 0.0 are identities the simplifier "
    "deletes before fusion, leaving sin and tanh (two ops) in the fusion; wrong on every input",
)
def _rt4_chain_identities(x):
    return jnp.tanh(jnp.sin(x) * 1.0 + 0.0)


@wrong(
    "elementwise_chain",
    why="same shape out for any x; x[..., ::-1] indexes the last axis, so a scalar x raises "
    "(too many indices); wrong on a rank-0 x f32[]",
)
def _rt4_chain_reversed_last_axis(x):
    return jnp.tanh(jnp.sin(x[..., ::-1]) * 2.0 + 1.0)


# --- task 7: attention_scores -----------------------------------------------------------------


@wrong(
    "attention_scores",
    why="written with an explicit transpose OF K; this transposes q and the product instead "
    "((k @ q.T).T), same values and no transpose left after XLA, but k is never transposed; "
    "wrong on every input (jaxpr transposes q, not k)",
)
def _rt4_scores_transpose_q(q, k):
    return (k @ q.T).T


@wrong(
    "attention_scores",
    why="scores are q @ k^T exactly; the attention habit of scaling by 1/sqrt(dim) changes every "
    "value except at dim = 1; wrong on qk() 8x16 (values / 4)",
)
def _rt4_scores_scaled(q, k):
    return (q @ k.T) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))


@wrong(
    "attention_scores",
    why="scores have shape (seq_q, seq_k) for any sizes; squeeze drops a size-1 side, so seq_q = "
    "1 gives shape (seq_k,); wrong on q f32[1,16], k f32[8,16]",
)
def _rt4_scores_squeezed(q, k):
    return jnp.squeeze(q @ k.T)


@wrong(
    "attention_scores",
    why="scores are q @ k^T, in q's dtype; accumulating with preferred_element_type=float32 "
    "returns float32 scores for bfloat16 or float16 q and k (same values and dtype for the "
    "float32 examples); wrong on q bf16[8,16], k bf16[4,16]",
)
def _rt4_scores_f32_accumulate(q, k):
    return jnp.matmul(q, k.T, preferred_element_type=jnp.float32)


# --- task 8: refused_rewrites -----------------------------------------------------------------


@wrong(
    "refused_rewrites",
    why="zeros must be x - x (0 for every finite x); 2x - 2x shares the multiply with six (CSE "
    "keeps 2 multiplies, 1 subtract) but is nan where 2x overflows; wrong on x = 3e38 f32 "
    "(or 40000 f16): nan instead of 0",
)
def _rt4_refused_shared_double(x):
    doubled = x * 2.0
    return doubled * 3.0, x * 2.0 - x * 2.0


@wrong(
    "refused_rewrites",
    why="both results have x's dtype; the constants are typed for the two dtypes of the examples "
    "(bfloat16, else a strong float32), so a float16 x gives float32 results; wrong on x f16[4]",
)
def _rt4_refused_typed_constants(x):
    dtype = jnp.bfloat16 if x.dtype == jnp.bfloat16 else jnp.float32
    two, three = jnp.asarray(2.0, dtype), jnp.asarray(3.0, dtype)
    return (x * two) * three, x - x


@wrong(
    "refused_rewrites",
    why="the optimized HLO must keep TWO multiplies; (x + x) * 3.0 is six times x with one add "
    "and one multiply; wrong on every input (f32[3,5]: 1 multiply)",
)
def _rt4_refused_add_then_triple(x):
    return (x + x) * 3.0, x - x


# --- task 9: pass_timeline --------------------------------------------------------------------

_rt4_PASS_SPLIT = re.compile(r"module_\d+\.[^.]+\.(\d+)\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def _rt4_counts(path: Path) -> Counter:
    module = parse_hlo(path.read_text())
    return Counter(i.opcode for c in module.computations for i in c.instructions)


@wrong(
    "pass_timeline",
    why="one entry per per-pass file; the module-name part is matched as [^.]+, so a module whose "
    "name holds a dot (jit of a function named 'g.h': module_0001.jit_g.h.0005...) matches no "
    "file and the timeline is empty; wrong on a dump of such a function",
)
def _rt4_timeline_dotless_name(dump_dir):
    found = []
    for path in Path(dump_dir).iterdir():
        m = _rt4_PASS_SPLIT.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(name, _rt4_counts(path)) for _, name, path in found]


_rt4_LINE = re.compile(
    r"^\s*(?:ROOT\s+)?%?\S+\s*=\s*[a-z0-9]+\[[^\]]*\](?:\{[^}]*\})?\s+([a-z][\w-]*)\(", re.M
)


@wrong(
    "pass_timeline",
    why="counts over EVERY instruction; reading opcodes with a line regex that expects an array "
    "shape before the opcode misses tuple-shaped instructions ((f32[], f32[]) tuple(...), "
    "tuple parameters, while/call results); wrong on a dump of a program with a tuple result "
    "such as moments(x) = (mean(x), mean(x * x)) (no 'tuple' in any Counter)",
)
def _rt4_timeline_regex_counts(dump_dir):
    found = []
    pattern = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")
    for path in Path(dump_dir).iterdir():
        m = pattern.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(n, Counter(_rt4_LINE.findall(p.read_text()))) for _, n, p in found]


@wrong(
    "pass_timeline",
    why="order by seq (a number); sorting the seq digits as text puts 10000 before 9999 (and "
    "a 5-digit seq before 4-digit ones), so a dump of 10000+ files, or files written with "
    "different zero padding, come out of order",
)
def _rt4_timeline_text_seq(dump_dir):
    found = []
    pattern = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")
    for path in Path(dump_dir).iterdir():
        m = pattern.fullmatch(path.name)
        if m:
            found.append((m.group(1), m.group(2), path))
    found.sort(key=lambda t: t[0])
    return [(n, _rt4_counts(p)) for _, n, p in found]


@wrong(
    "pass_timeline",
    why="counts over every instruction of EVERY computation; this counts ENTRY and the "
    "computations reached through fusions (calls=) and reducers (to_apply=) only, so a while "
    "loop's body and condition and a conditional's branches are left out; wrong on a dump of "
    "lax.fori_loop(0, 3, lambda i, v: v * 2.0, x) (the body's multiply is never counted)",
)
def _rt4_timeline_fusions_and_reducers(dump_dir):
    found = []
    pattern = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")
    for path in Path(dump_dir).iterdir():
        m = pattern.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    out = []
    for _, name, path in found:
        module = parse_hlo(path.read_text())
        wanted, todo = set(), [module.entry]
        while todo:
            computation = todo.pop()
            if computation.name in wanted:
                continue
            wanted.add(computation.name)
            for instruction in computation.instructions:
                for key in ("calls", "to_apply"):
                    callee = instruction.attribute(key)
                    if callee and module.computation(callee.lstrip("%")) is not None:
                        todo.append(module.computation(callee.lstrip("%")))
        out.append(
            (
                name,
                Counter(
                    i.opcode
                    for c in module.computations
                    if c.name in wanted
                    for i in c.instructions
                ),
            )
        )
    return out


# --- task 10: pass_that_changed ---------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="an opcode missing from a Counter counts 0; .get() gives None for a missing key and 0 for "
    "an explicit zero, so [('a', Counter(add=0)), ('b', Counter())] reports 'b' as a change "
    "(truth: None)",
)
def _rt4_changed_get_none(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if dict(before).get(opcode) != dict(after).get(opcode):
            return name
    return None


@wrong(
    "pass_that_changed",
    why="compares neighbours in timeline order; building dict(timeline) collapses passes that "
    "run more than once (algsimp, cse) onto their last counts, so [('algsimp', {add:2}), ('cse', "
    "{add:1}), ('algsimp', {add:1})] compares 1 with 1 and returns None (truth: 'cse')",
)
def _rt4_changed_by_name(timeline, opcode):
    by_name = dict(timeline)
    names = list(by_name)
    for before, after in zip(names, names[1:]):
        if by_name[before][opcode] != by_name[after][opcode]:
            return after
    return None


@wrong(
    "pass_that_changed",
    why="the count of THAT opcode; summing every opcode that contains the name ('reduce' also "
    "counts all-reduce and reduce-window, 'add' counts add-dependency, 'copy' counts copy-start) "
    "reports a pass that changed another opcode; wrong on [('a', {reduce:1, all-reduce:1}), "
    "('b', {reduce:1})] for 'reduce' (truth None)",
)
def _rt4_changed_substring(timeline, opcode):
    def count(c):
        return sum(v for k, v in c.items() if opcode in k)

    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if count(before) != count(after):
            return name
    return None


# --- task 11: named_passes --------------------------------------------------------------------


@wrong(
    "named_passes",
    why="names exactly as in the dump file names; 'transpose_folding' spells the pass with an "
    "underscore (the file says after_transpose-folding)",
)
def _rt4_names_underscored():
    return {"transpose": "transpose_folding", "fusion": "fusion", "add": "cse", "divide": "algsimp"}


@wrong(
    "named_passes",
    why="the PASS name; 'simplification' is the pipeline part of the file name in which algsimp "
    "removed the divide (module_..simplification.after_algsimp...), not the pass",
)
def _rt4_names_pipeline_for_divide():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "cse",
        "divide": "simplification",
    }


@wrong(
    "named_passes",
    why="the pass that removed the repeated add; written with the file's 'after_' prefix "
    "('after_cse') instead of the pass name 'cse'",
)
def _rt4_names_after_prefix():
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "after_cse",
        "divide": "algsimp",
    }


# --- task 12: surviving_ops -------------------------------------------------------------------

_rt4_FIXED = {
    "x * 1.0": 0,
    "x + 0.0": 0,
    "x * 0.0": 1,
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
    "v * 1.0 applied n times to x": 0,
}


def _rt4_surviving(program, x, n):
    integer = jnp.issubdtype(x.dtype, jnp.integer)
    if program in _rt4_FIXED:
        return _rt4_FIXED[program]
    if program == "x - x":
        return 0 if integer else 1
    if program == "jnp.negative applied n times":
        return n % 2
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v - v applied n times to x":
        return 0 if integer else n
    if program == "sum of n copies of x * 2.0":
        return n
    raise KeyError(program)


@wrong(
    "surviving_ops",
    why="n negations cancel in pairs (n % 2 survive); 'they collapse to one negate' (min(n, 1)) "
    "agrees at odd n (the bank's n = 3) but says 1 for even n; wrong on 'jnp.negative applied n "
    "times', x f32[2], n = 2 (truth 0)",
)
def _rt4_surviving_one_negate(program, x, n):
    if program == "jnp.negative applied n times":
        return min(n, 1)
    return _rt4_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="integers fold v - v to 0 every time; the int32 rule is applied to 'x - x' only, and the "
    "repeated program keeps the float answer n; wrong on 'v - v applied n times to x', x "
    "int32[3,2], n = 4 (truth 0)",
)
def _rt4_surviving_int_rule_once(program, x, n):
    if program == "v - v applied n times to x":
        return n
    return _rt4_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="v + 1.0 makes an int32 x float32 (a float literal), so the n adds stay (no "
    "reassociation of floats); assuming integer adds of constants combine into one gives 1 for "
    "int32; wrong on 'v + 1.0 applied n times to x', x int32[4], n = 5 (truth 5)",
)
def _rt4_surviving_int_adds_combine(program, x, n):
    if program == "v + 1.0 applied n times to x" and jnp.issubdtype(x.dtype, jnp.integer):
        return 1
    return _rt4_surviving(program, x, n)


# --- task 13: one_kernel ----------------------------------------------------------------------

_rt4_KERNEL_FIXED = {
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
    "x / norm(x)": False,
    "pad(x, 1) * 2": True,
}


def _rt4_one_kernel(program, x, n):
    if program in _rt4_KERNEL_FIXED:
        return _rt4_KERNEL_FIXED[program]
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    raise KeyError(program)


@wrong(
    "one_kernel",
    why="a loop of one trip is unrolled into its body (one fusion); 'a loop always cuts the "
    "chain' says False at every n; wrong on 'fori_loop(0, n, v * 2)', x f32[3,4], n = 1",
)
def _rt4_kernel_loop_never(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return False
    return _rt4_one_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="a program that returns x unchanged is a copy, not a fusion; 'all elementwise, so one "
    "kernel' says True at n = 0; wrong on 'jnp.tanh applied n times', x f32[3,4], n = 0",
)
def _rt4_kernel_tanh_always(program, x, n):
    if program == "jnp.tanh applied n times":
        return True
    return _rt4_one_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="zero trips return x unchanged (a copy); 'trips <= 1 need no while loop, so one "
    "kernel' says True at n = 0; wrong on 'fori_loop(0, n, v * 2)', x bf16[2,16], n = 0",
)
def _rt4_kernel_loop_short(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n <= 1
    return _rt4_one_kernel(program, x, n)
