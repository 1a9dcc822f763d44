"""Red team, phase 4, round 10: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong


@wrong(
    "folded_scale",
    why="StableHLO must hold a sqrt (computed by jnp inside the function); evaluating "
    "jnp.sqrt(2.0) under jax.ensure_compile_time_eval() 'so that it is surely a constant' "
    "hands jit a concrete number: the before text holds a constant and a divide, no sqrt, so "
    "the folding is JAX's, not XLA's; wrong on f32[3,5]",
)
def _rt10_folded_compile_time_eval(x):
    with jax.ensure_compile_time_eval():
        root = jnp.sqrt(2.0)
    return x / root


@wrong(
    "elementwise_chain",
    why="ONE loop fusion: a running sum (jnp.cumsum, 'elementwise with a carry', same shape out) "
    "lowers to a reduce-window that XLA:CPU wraps in a fusion of its own, so ENTRY holds two "
    "fusions (the tanh chain and the wrapped reduce-window); wrong on f32[3,5]",
)
def _rt10_chain_running_sum(x):
    return jnp.cumsum(jnp.tanh(jnp.sin(x) * 2.0 + 1.0), axis=-1)


@wrong(
    "algebraic_identity",
    why="'through at least two arithmetic ops (+ - * /)': jnp.power(x, 1.0) is exact for every "
    "float (and XLA drops it), but pow is not one of + - * /, so only the one multiply counts; "
    "wrong on f32[3,5] (StableHLO holds 1 arithmetic op, not 2)",
)
def _rt10_identity_power_one(x):
    return jnp.power(x, 1.0) * 1.0


_RT10_ARITH = {
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


def _rt10_surviving(program, x, n):
    is_int = jnp.issubdtype(x.dtype, jnp.integer)
    if program in _RT10_ARITH:
        return _RT10_ARITH[program]
    if program == "x - x":
        return 0 if is_int else 1
    if program == "jnp.negative applied n times":
        return n % 2
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v - v applied n times to x":
        return 0 if is_int else n
    if program == "sum of n copies of x * 2.0":
        return n
    return 0


@wrong(
    "surviving_ops",
    why="for floats every v - v survives: after the first step v is 0 or nan, and 'v - v of a "
    "value that is already 0 or nan gives it back, so XLA keeps only the first subtract' is a "
    "fact about values XLA does not reason with; answers 1 for 'v - v applied n times to x' at "
    "f32[2,3], n=3 (truth 3)",
)
def _rt10_surviving_zero_is_fixed_point(program, x, n):
    if program == "v - v applied n times to x" and not jnp.issubdtype(x.dtype, jnp.integer):
        return 1
    return _rt10_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="XLA does not reassociate float multiplies, not even by powers of two: after CSE, "
    "'x * 2.0 + x * 2.0' is t + t with t = x * 2.0 (a multiply and an add: 2); reasoning "
    "'t + t becomes t * 2.0 and (x * 2) * 2 is exactly x * 4' answers 1 (f32[3], any n)",
)
def _rt10_surviving_power_of_two_combines(program, x, n):
    if program == "x * 2.0 + x * 2.0":
        return 1
    return _rt10_surviving(program, x, n)


@wrong(
    "surviving_ops",
    why="'sum of n copies of x * 2.0' is sum(list of n - 1 copies, start=x * 2.0): n terms, "
    "n - 1 adds plus the one shared multiply = n; counting the start as an extra term answers "
    "n + 1 (f32[4], n=3: truth 3, this says 4)",
)
def _rt10_surviving_sum_start_extra(program, x, n):
    if program == "sum of n copies of x * 2.0":
        return n + 1
    return _rt10_surviving(program, x, n)


_RT10_KERNEL_TRUE = {
    "tanh(sin(x) * 2 + 1)",
    "sum(exp(x), axis=1)",
    "x.T * 2 + 1",
    "concatenate([x, x * 2])",
    "x[::-1] + x",
    "reshape(x * 2, x.shape[::-1]) + 1",
    "where(x > 0, x, exp(x) - 1)",
    "pad(x, 1) * 2",
}


def _rt10_kernel(program, x, n):
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return program in _RT10_KERNEL_TRUE


@wrong(
    "one_kernel",
    why="a bfloat16/float16 row sum accumulates in float32 on CPU, but the converts in and out "
    "ride in the same loop fusion as the exp and the reduce; 'the convert back after the "
    "reduction needs the finished sum, so it is a second kernel' answers False for "
    "'sum(exp(x), axis=1)' at bf16[3,5] (truth True)",
)
def _rt10_kernel_half_reduce_splits(program, x, n):
    if program == "sum(exp(x), axis=1)" and jnp.dtype(x.dtype).itemsize == 2:
        return False
    return _rt10_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="on CPU the half-precision elementwise chain (converts to f32 and back included) is still "
    "one kLoop fusion; 'bf16/f16 math is upcast op by op, each convert its own kernel' answers "
    "False for 'tanh(sin(x) * 2 + 1)' and 'x.T * 2 + 1' at f16[4,4] (truth True)",
)
def _rt10_kernel_half_elementwise_converts(program, x, n):
    if jnp.dtype(x.dtype).itemsize == 2 and program in (
        "tanh(sin(x) * 2 + 1)",
        "x.T * 2 + 1",
        "where(x > 0, x, exp(x) - 1)",
    ):
        return False
    return _rt10_kernel(program, x, n)


@wrong(
    "one_kernel",
    why="'jnp.tanh applied n times' at n=0 returns x: a copy, not a fusion (False); at n>=1 one "
    "fusion (True). Reading 'x unchanged' as 'nothing to launch, so trivially one kernel' "
    "answers True at n=0 for both n-programs (fori_loop(0, 0, ...) too)",
)
def _rt10_kernel_identity_counts_as_one(program, x, n):
    if n == 0 and program in ("jnp.tanh applied n times", "fori_loop(0, n, v * 2)"):
        return True
    return _rt10_kernel(program, x, n)


@wrong(
    "pass_that_changed",
    why="'differs from the entry before it' is a comparison of values; comparing the counts with "
    "`is not` works for the small ints CPython caches (-5..256) and breaks above: two equal "
    "counts of 300 parsed separately are different objects, so [('a', {'add': 300}), "
    "('b', {'add': 300}), ('c', {'add': 1})] gives 'b' (truth 'c')",
)
def _rt10_changed_identity_compare(timeline, opcode):
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before.get(opcode, 0) is not after.get(opcode, 0):
            return name
    return None


@wrong(
    "elementwise_chain",
    why="'same shape out': flattening the result 'so that XLA sees one flat loop' (ravel after "
    "the chain) is still one kLoop fusion, but a matrix comes back as a vector; right on bf16[6], "
    "wrong on f32[3,5] (result f32[15]) and on the scalar (f32[1])",
)
def _rt10_chain_flattened(x):
    return jnp.ravel(jnp.tanh(jnp.sin(x) * 2.0 + 1.0) * 0.5)
