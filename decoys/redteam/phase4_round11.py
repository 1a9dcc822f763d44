"""Red team, phase 4, round 11: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- pass_timeline ---------------------------------------------------------------------------

_RT11_SEQ = re.compile(r"^module_\d+\..+\.(\d{4,})\.(.+)\.txt$")


def _rt11_all_counts(path: Path) -> Counter:
    module = parse_hlo(path.read_text())
    return Counter(i.opcode for comp in module for i in comp)


@wrong(
    "pass_timeline",
    why="'the pass name is the text after `after_`': the learner takes the text after the FIRST "
    "'after_' in the file name, but pipeline names hold that word too "
    "(...0020.simplification_after_layout_assignment.after_pipeline-start.before_algsimp.txt, "
    "...0017.HLO_passes_after_layout_assignment.after_pipeline-start...): those entries are "
    "named 'layout_assignment' instead of 'pipeline-start'; wrong on the dump of a.T @ b "
    "(f32[16,8], f32[16,5])",
)
def _rt11_timeline_first_after_word(dump_dir):
    rows = []
    for path in Path(dump_dir).iterdir():
        m = _RT11_SEQ.match(path.name)
        if not m or ".after_" not in path.name:
            continue
        rest = m.group(2)
        name = re.search(r"after_([^.]+)", rest).group(1)
        rows.append((int(m.group(1)), name, path))
    rows.sort(key=lambda r: r[0])
    return [(name, _rt11_all_counts(path)) for _, name, path in rows]


@wrong(
    "pass_timeline",
    why="'Counter of opcodes over every instruction of every computation (parameters too)': the "
    "learner counts a parameter only in ENTRY, treating the parameters of fused, reducer, while "
    "body/condition and branch computations as plumbing; wrong on any dump after fusion, e.g. "
    "row_norms f32[4,8] (the fusion computations' parameters are missing from 'parameter')",
)
def _rt11_timeline_entry_parameters_only(dump_dir):
    rows = []
    for path in Path(dump_dir).iterdir():
        m = re.match(
            r"^module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt$", path.name
        )
        if m:
            rows.append((int(m.group(1)), m.group(2), path))
    rows.sort(key=lambda r: r[0])
    out = []
    for _, name, path in rows:
        module = parse_hlo(path.read_text())
        counts = Counter()
        for comp in module:
            for inst in comp:
                if inst.opcode == "parameter" and not comp.is_entry:
                    continue
                counts[inst.opcode] += 1
        out.append((name, counts))
    return out


# --- pass_that_changed -----------------------------------------------------------------------


@wrong(
    "pass_that_changed",
    why="assumes pass names are unique and builds dict(timeline): passes run several times "
    "(algsimp, pipeline-start...), so later entries overwrite earlier ones and neighbours are "
    "lost; on [('algsimp', {add: 1}), ('cse', {add: 1}), ('algsimp', {add: 0})] the answer is "
    "'algsimp' (the third entry) but the dict {algsimp: 0, cse: 1} gives 'cse'",
)
def _rt11_changed_dict_of_names(timeline, opcode):
    counts = dict(timeline)
    names = list(counts)
    for prev, cur in zip(names, names[1:]):
        if counts[prev].get(opcode, 0) != counts[cur].get(opcode, 0):
            return cur
    return None


# --- folded_scale ----------------------------------------------------------------------------


@wrong(
    "folded_scale",
    why="'StableHLO holds a sqrt and a divide (no multiply)': x * jnp.sqrt(0.5) is the same number "
    "but StableHLO holds a multiply and no divide, so nothing shows XLA turning a divide into a "
    "multiply; wrong on f32[3,5]",
)
def _rt11_folded_times_root_half(x):
    return x * jnp.sqrt(0.5)


@wrong(
    "folded_scale",
    why="'dividing x by a square root ... StableHLO holds a sqrt and a divide (no multiply)': "
    "sqrt(2) as the norm of a vector of two ones lowers to a reduce of a multiply before the "
    "sqrt, so StableHLO holds a multiply (and on CPU the sqrt survives optimization); wrong on "
    "f32[3,5]",
)
def _rt11_folded_norm_of_ones(x):
    return x / jnp.linalg.norm(jnp.ones(2, x.dtype))


# --- refused_rewrites ------------------------------------------------------------------------


@wrong(
    "refused_rewrites",
    why="'six times x' for every x up to a sixth of the max: halving first and then multiplying "
    "by 12 loses the lowest bit of subnormals; x = float16 6e-8 (the smallest subnormal) gives 0 "
    "instead of 3.6e-7, x = float32 1e-45 gives 0 instead of 8.4e-45 (XLA keeps both multiplies, "
    "so the counts are right and only the values are wrong)",
)
def _rt11_refused_halve_then_twelve(x):
    return x * 0.5 * 12.0, x - x


# --- elementwise_chain -----------------------------------------------------------------------


@wrong(
    "elementwise_chain",
    why="the result has the input's dtype: computing the chain in float32 'for accuracy' and not "
    "casting back returns float32 for a bfloat16 or float16 x (one fusion all the same); wrong "
    "on bf16[6] and f16[1,5]",
)
def _rt11_chain_left_in_f32(x):
    v = x.astype(jnp.float32)
    return jnp.tanh(jnp.sin(v) * 2.0 + 1.0)


@wrong(
    "elementwise_chain",
    why="ONE loop fusion: jnp.sinc is elementwise, but it lowers to a select around sin(pi x) / "
    "(pi x) and XLA:CPU does not duplicate that expensive producer into its consumer, so "
    "tanh(sinc(x) * 2 + 1) leaves ENTRY with two kLoop fusions (select_divide_fusion and "
    "add_tanh_fusion); wrong on f32[3,5] (and every other input)",
)
def _rt11_chain_through_sinc(x):
    return jnp.tanh(jnp.sinc(x) * 2.0 + 1.0)


# --- shared_subexpression --------------------------------------------------------------------


@wrong(
    "shared_subexpression",
    why="'(a + b) times (c + d) for every value ... a zero product keeps its sign': the third add "
    "of the jaxpr is a '+ 0.0' on a + b, which XLA deletes (so jit gives -0.0 and the HLO has 2 "
    "adds), but the function called op by op rounds a + b = -0.0 to +0.0: a = b = -0.0, c = 1, "
    "d = 0 gives +0.0 instead of -0.0",
)
def _rt11_cse_plus_zero_third_add(a, b, c, d):
    return ((a + b) + 0.0) * (c + d)


# --- one_kernel ------------------------------------------------------------------------------

_RT11_ONE = {
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
}


@wrong(
    "one_kernel",
    why="'jnp.tanh applied n times': the learner counts the chain and thinks a long chain of "
    "transcendental ops is split by XLA:CPU's fusion size heuristics (n >= 4 => two kernels), "
    "and for n = 0 treats 'x returned unchanged' as trivially one kernel; x f32[3,4], n = 4 is "
    "one loop fusion (predicted False) and n = 0 has no fusion at all (predicted True)",
)
def _rt11_kernel_long_tanh_chain_splits(program, x, n):
    if program == "jnp.tanh applied n times":
        return n < 4
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    return _RT11_ONE[program]


# --- surviving_ops ---------------------------------------------------------------------------

_RT11_ARITH = {
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
}
_RT11_LOW_PRECISION_KEPT = {
    "x * 1.0": 1,
    "x + 0.0": 1,
    "jnp.exp(x) * 1.0": 1,
    "(x * 1.0) / 1.0 - 0.0": 3,
}


@wrong(
    "surviving_ops",
    why="'at any dtype': the learner believes XLA:CPU upcasts bfloat16/float16 to float32 before "
    "simplifying, so a * 1.0 or + 0.0 on a low-precision x meets a converted constant it cannot "
    "recognise and survives; but algsimp removes them at every dtype: x bf16[2,3], 'x * 1.0' "
    "holds 0 arithmetic (predicted 1), 'v * 1.0 applied n times to x' at n = 3 holds 0 "
    "(predicted 3)",
)
def _rt11_surviving_low_precision_keeps_identities(program, x, n):
    is_int = jnp.issubdtype(x.dtype, jnp.integer)
    low = str(x.dtype) in ("bfloat16", "float16")
    if low and program in _RT11_LOW_PRECISION_KEPT:
        return _RT11_LOW_PRECISION_KEPT[program]
    if program in _RT11_ARITH:
        return _RT11_ARITH[program]
    if program == "x - x":
        return 0 if is_int else 1
    if program == "jnp.negative applied n times":
        return n % 2
    if program == "v * 1.0 applied n times to x":
        return n if low else 0
    if program == "v - v applied n times to x":
        return 0 if is_int else n
    return n  # v + 1.0 applied n times, sum of n copies of x * 2.0
