"""Red team, phase 4, round 9: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT9_FILE = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt$")


def _rt9_instructions(module):
    comps = list(getattr(module, "computations", None) or [])
    if not comps:
        comps = list(module)
    for comp in comps:
        yield comp, list(comp)


@wrong(
    "stages",
    why="(before, after) of jax.jit(f) at these args AS GIVEN (a Python scalar stays weakly "
    "typed); 'normalising' every arg with np.asarray turns 1.5 into a strong float32[] so "
    "scaled_sine(1.5, bf16[4]) lowers to a float32 multiply and result; wrong there",
)
def _rt9_stages_np_asarray(f, *args):
    lowered = jax.jit(f).lower(*(np.asarray(a) for a in args))
    return lowered.as_text(), lowered.compile().as_text()


@wrong(
    "elementwise_chain",
    why="'at least four elementwise ops': the chain counts the two casts "
    "(astype float32 ... astype back) as ops, but for a float32 x both casts are no-ops JAX "
    "never emits, leaving only sin and tanh (2 ops); right for bf16/f16, wrong on f32[3,5]",
)
def _rt9_chain_casts_count(x):
    return jnp.tanh(jnp.sin(x.astype(jnp.float32))).astype(x.dtype)


@wrong(
    "pass_timeline",
    why="counts EVERY instruction of every computation; matching instruction lines with a "
    "pattern anchored on a leading '%name =' skips each computation's ROOT line, so every "
    "Counter is short by the roots (e.g. the ENTRY's tuple/fusion); wrong on any dump",
)
def _rt9_timeline_skips_root(dump_dir):
    pattern = re.compile(r"^\s*%[\w.\-]+ = .*?\s([a-z][\w\-]*)\(")
    found = []
    for path in Path(dump_dir).iterdir():
        m = _RT9_FILE.search(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    out = []
    for _seq, name, path in found:
        counts = Counter()
        for line in path.read_text().splitlines():
            hit = pattern.match(line)
            if hit:
                counts[hit.group(1)] += 1
        out.append((name, counts))
    return out


@wrong(
    "pass_that_changed",
    why="'an opcode missing from a Counter counts 0': this guard returns None when the opcode "
    "is absent from the first entry ('the program never had it'), so an opcode a pass ADDS "
    "(fusion, created by the fusion pass from 0) is never found; wrong on [('a', {}), "
    "('fusion', {'fusion': 1})] (answer 'fusion')",
)
def _rt9_changed_absent_at_start(timeline, opcode):
    if len(timeline) < 2 or opcode not in timeline[0][1]:
        return None
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before.get(opcode, 0) != after.get(opcode, 0):
            return name
    return None


@wrong(
    "pass_that_changed",
    why="'only that opcode counts': comparing whole Counters returns the first pass that "
    "changed ANY opcode; wrong on [('a', {'add': 1}), ('b', {'add': 1, 'copy': 1}), "
    "('c', {'copy': 1})] for 'add' (answer 'c', this gives 'b')",
)
def _rt9_changed_any_opcode(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if +before != +after:
            return name
    return None


_RT9_ARITH_NO_NEG = {
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


@wrong(
    "surviving_ops",
    why="negate IS one of the counted ops (add, subtract, multiply, divide, negate); treating a "
    "negation as a sign-bit flip that is 'not arithmetic' answers 0 for 'jnp.negative applied "
    "n times' at odd n (truth 1: f32[2,3], n=3)",
)
def _rt9_surviving_negate_not_arith(program, x, n):
    is_int = jnp.issubdtype(x.dtype, jnp.integer)
    if program in _RT9_ARITH_NO_NEG:
        return _RT9_ARITH_NO_NEG[program]
    if program == "x - x":
        return 0 if is_int else 1
    if program == "jnp.negative applied n times":
        return 0  # the bug: negate not counted
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v - v applied n times to x":
        return 0 if is_int else n
    if program == "sum of n copies of x * 2.0":
        return n
    return 0


_RT9_KERNEL_TRUE = {
    "tanh(sin(x) * 2 + 1)",
    "sum(exp(x), axis=1)",
    "x.T * 2 + 1",
    "concatenate([x, x * 2])",
    "x[::-1] + x",
    "reshape(x * 2, x.shape[::-1]) + 1",
    "where(x > 0, x, exp(x) - 1)",
    "pad(x, 1) * 2",
}


def _rt9_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program in _RT9_KERNEL_TRUE


@wrong(
    "one_kernel",
    why="jnp.where is a select computed element by element, not a branch; 'where with an exp "
    "on one side is an ELU-style branch, both sides are evaluated in separate kernels' answers "
    "False for 'where(x > 0, x, exp(x) - 1)' (truth True: one kLoop fusion, any shape/dtype)",
)
def _rt9_kernel_where_is_branch(program, x, n):
    if program == "where(x > 0, x, exp(x) - 1)":
        return False
    return _rt9_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="a sort is never fused on CPU whatever its length; 'sorting rows of 2 is one "
    "compare-and-swap, so it rides along in the loop' answers True for 'sort(x) * 2' at "
    "x f32[5,2] (truth False: ENTRY holds a sort and a fusion)",
)
def _rt9_kernel_tiny_sort_fuses(program, x, n):
    if program == "sort(x) * 2" and x.shape[-1] == 2:
        return True
    return _rt9_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="a program that returns x unchanged is a copy, not a fusion, and one trip unrolls: the "
    "trip count of 'fori_loop(0, n, v * 2)' is n; reading it as fori_loop(0, n) running n + 1 "
    "times (inclusive upper bound) answers True at n = 0 and False at n = 1 (truth: False, True)",
)
def _rt9_kernel_inclusive_trips(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n + 1 == 1
    return _rt9_kernel(program, x, n)


@wrong(
    "attention_scores",
    why="scores are q @ k^T with shape (seq_q, seq_k); transposing with jnp.swapaxes(k, 0, -1) "
    "is right for a matrix, but k.T computed via jnp.transpose(k[None], (0, 2, 1))[0] adds a "
    "batch dimension whose transpose permutation is not k's own: the jaxpr transposes the "
    "expanded k (f32[1,7,3]), not the input k itself; wrong on q (5,3), k (7,3)",
)
def _rt9_scores_batched_transpose(q, k):
    kt = jnp.transpose(k[None], (0, 2, 1))
    return jnp.matmul(q[None], kt)[0]


@wrong(
    "refused_rewrites",
    why="the optimized HLO must keep TWO multiplies and ONE subtract; zeros written as "
    "(x - x) * 2.0 'to be sure it is not folded' adds a third multiply (XLA keeps it: "
    "nan * 2 and inf * 2 are not foldable); wrong on f32[3,5]",
)
def _rt9_refused_scaled_zero(x):
    return x * 2.0 * 3.0, (x - x) * 2.0


@wrong(
    "folded_scale",
    why="StableHLO must hold a sqrt and a divide and NO multiply; jnp.hypot(1.0, 1.0) is "
    "sqrt(2) by value, but jnp lowers hypot with scaling multiplies and a divide around its "
    "sqrt, so the before text already holds a multiply (the rewrite is not XLA's alone); "
    "wrong on f32[3,5]",
)
def _rt9_folded_scale_hypot(x):
    return x / jnp.hypot(1.0, 1.0)
