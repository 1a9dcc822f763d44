"""Red-team wrong answers for phase 4, written from the contract only.

Round 3: surviving_ops(program, x, n) and one_kernel(program, x, n), one case per call. Every
answer below is right on the bank's old case (x f32[3,4], n = 3) for most programs and wrong on a
case the contract allows; each `why` names such a case, checked by compiling it outside the answer.
"""

from __future__ import annotations

import jax

from kata_harness.decoys import wrong


def _rt3b_is_int(x) -> bool:
    return str(jax.numpy.dtype(x.dtype)) == "int32"


def _rt3b_surviving(program: str, x, n: int, **bug) -> int:
    """The count a learner derives from the README's rules, with one rule changed by `bug`."""
    is_int = _rt3b_is_int(x)
    table = {
        "x * 1.0": 0,
        "x + 0.0": 1 if bug.get("signed_zero_keeps_add") else 0,
        "x * 0.0": 1,
        "x - x": 0 if is_int else (0 if bug.get("x_minus_x_folds") else 1),
        "x / 2.0": 1,
        "x / 3.0": 1,
        "jnp.negative(-x)": 0,
        "x * 2.0 + x * 2.0": 1 if bug.get("merge_scaled_sum") else 2,
        "x + x": 1,
        "jnp.sqrt(4.0) * x": 1,
        "x * x / x": 2,
        "0.0 - x": 1,
        "jnp.exp(x) * 1.0": 0,
        "jnp.where(False, x * 5.0, x + 5.0)": 1,
        "(x * 1.0) / 1.0 - 0.0": 0,
        "jnp.negative applied n times": n % 2,
        "v + 1.0 applied n times to x": 1 if bug.get("fold_added_constants") else n,
        "v * 1.0 applied n times to x": 0,
        "v - v applied n times to x": 0 if is_int else n,
        "sum of n copies of x * 2.0": n,
    }
    if bug.get("float_literal_keeps_int") and is_int:
        # the learner's "integers fold exactly" applied after a float literal made x float32
        table["x * 0.0"] = 0
        table["x * x / x"] = 0
    if bug.get("negations_collapse_to_one"):
        table["jnp.negative applied n times"] = 1
    if bug.get("v_minus_v_once") and not is_int:
        table["v - v applied n times to x"] = 1
    if bug.get("half_blocks_simplifier") and str(jax.numpy.dtype(x.dtype)) in (
        "bfloat16",
        "float16",
    ):
        # the converts XLA:CPU puts around half-precision arithmetic taken to hide the identities
        table.update(
            {
                "x * 1.0": 1,
                "x + 0.0": 1,
                "jnp.negative(-x)": 2,
                "jnp.exp(x) * 1.0": 1,
                "(x * 1.0) / 1.0 - 0.0": 3,
                "jnp.negative applied n times": n,
                "v * 1.0 applied n times to x": n,
            }
        )
    if bug.get("sum_off_by_one"):
        table["sum of n copies of x * 2.0"] = n + 1
    return table[program]


def _rt3b_one_kernel(program: str, x, n: int, **bug) -> bool:
    table = {
        "tanh(sin(x) * 2 + 1)": True,
        "sum(exp(x), axis=1)": not bug.get("reduction_never_fuses"),
        "x @ w + 1 (w ones, x.shape[1] by 4)": bool(bug.get("dot_epilogue")),
        "sort(x) * 2": False,
        "x.T * 2 + 1": True,
        "softmax(x, axis=-1)": False,
        "x - mean(x, axis=-1, keepdims=True)": bool(bug.get("broadcast_reduction_fuses")),
        "concatenate([x, x * 2])": True,
        "x[::-1] + x": True,
        "reshape(x * 2, x.shape[::-1]) + 1": True,
        "where(x > 0, x, exp(x) - 1)": True,
        "fori_loop(0, n, v * 2)": n == 1,
        "x / norm(x)": bool(bug.get("scalar_reduction_fuses")),
        "pad(x, 1) * 2": True,
        "jnp.tanh applied n times": n >= 1,
    }
    if bug.get("loop_always_cuts"):
        table["fori_loop(0, n, v * 2)"] = False
    if bug.get("loop_unrolled"):
        table["fori_loop(0, n, v * 2)"] = n >= 1
    if bug.get("short_loops_unrolled"):
        table["fori_loop(0, n, v * 2)"] = 1 <= n <= 2
    if bug.get("half_splits") and str(jax.numpy.dtype(x.dtype)) in ("bfloat16", "float16"):
        # converts to f32 and back taken to cut a fusion at every transcendental or reduction
        for name in ("tanh(sin(x) * 2 + 1)", "sum(exp(x), axis=1)", "where(x > 0, x, exp(x) - 1)"):
            table[name] = False
        table["jnp.tanh applied n times"] = n == 1
    if bug.get("empty_is_fused"):
        table["jnp.tanh applied n times"] = True
        table["fori_loop(0, n, v * 2)"] = n <= 1
    return table[program]


# ---------------------------------------------------------------- surviving_ops


@wrong(
    "surviving_ops",
    why="IEEE reasoning: -0.0 + 0.0 is +0.0, so x + 0.0 is not an identity and must stay; but "
    "XLA's simplifier removes it: on 'x + 0.0' with x f32[3,4] the optimized module holds 0 "
    "arithmetic instructions, not 1",
)
def rt3b_signed_zero_keeps_add(program, x, n):
    return _rt3b_surviving(program, x, n, signed_zero_keeps_add=True)


@wrong(
    "surviving_ops",
    why="'integers are exact, so x * 0.0 and x * x / x fold for int32'; but a float literal "
    "makes the rest float32: on 'x * 0.0' with x s32[2,5] a multiply survives (1, not 0), and "
    "'x * x / x' with x s32[3] keeps 2",
)
def rt3b_int_folds_after_float_literal(program, x, n):
    return _rt3b_surviving(program, x, n, float_literal_keeps_int=True)


@wrong(
    "surviving_ops",
    why="x - x read as 0 for every dtype; only for int32 is it exact: on 'x - x' with x "
    "bf16[2,5] (or 'v - v applied n times to x', f32, n = 4: 4 subtracts) the subtract stays",
)
def rt3b_x_minus_x_folds(program, x, n):
    return _rt3b_surviving(program, x, n, x_minus_x_folds=True)


@wrong(
    "surviving_ops",
    why="constant folding taken to combine (v + 1.0) + 1.0 into v + 2.0; float addition is not "
    "reassociated: 'v + 1.0 applied n times to x' with x f32[2,3,4], n = 5 keeps 5 adds, not 1",
)
def rt3b_fold_added_constants(program, x, n):
    return _rt3b_surviving(program, x, n, fold_added_constants=True)


@wrong(
    "surviving_ops",
    why="CSE then x*2 + x*2 -> x*4 (exact for powers of two); XLA shares the multiply but keeps "
    "the add: 'x * 2.0 + x * 2.0' with x f16[2,2] holds 2 arithmetic instructions, not 1",
)
def rt3b_merge_scaled_sum(program, x, n):
    return _rt3b_surviving(program, x, n, merge_scaled_sum=True)


@wrong(
    "surviving_ops",
    why="'negations cancel, at most one is left' without the parity: 'jnp.negative applied n "
    "times' with x f32[3], n = 2 (or any even n) holds 0, not 1",
)
def rt3b_negations_collapse_to_one(program, x, n):
    return _rt3b_surviving(program, x, n, negations_collapse_to_one=True)


@wrong(
    "surviving_ops",
    why="'v - v applied n times': after the first step every operand pair is the same value, so "
    "CSE leaves one subtract; each step subtracts a new value from itself: with x f32[2,5], "
    "n = 3 three subtracts survive, not 1",
)
def rt3b_v_minus_v_once(program, x, n):
    return _rt3b_surviving(program, x, n, v_minus_v_once=True)


@wrong(
    "surviving_ops",
    why="n copies summed counted as n adds plus the shared multiply (the start value x * 2.0 is "
    "not added to anything): 'sum of n copies of x * 2.0' with x f32[], n = 1 holds 1 "
    "instruction, not 2 (n in general, not n + 1)",
)
def rt3b_sum_off_by_one(program, x, n):
    return _rt3b_surviving(program, x, n, sum_off_by_one=True)


@wrong(
    "surviving_ops",
    why="XLA:CPU computes bf16/f16 in f32 with converts around each op, taken to hide the "
    "identities from the simplifier; they are removed all the same: 'x * 1.0' with x bf16[2,5] "
    "holds 0 arithmetic instructions, not 1 ('jnp.negative(-x)' f16[3]: 0, not 2)",
)
def rt3b_half_blocks_simplifier(program, x, n):
    return _rt3b_surviving(program, x, n, half_blocks_simplifier=True)


# ---------------------------------------------------------------- one_kernel


@wrong(
    "one_kernel",
    why="'a loop cuts the chain' applied to every n; a loop of one trip is unrolled into its "
    "body: 'fori_loop(0, n, v * 2)' with x f32[3,4], n = 1 is one fusion (True)",
)
def rt3b_loop_always_cuts(program, x, n):
    return _rt3b_one_kernel(program, x, n, loop_always_cuts=True)


@wrong(
    "one_kernel",
    why="'XLA unrolls a loop with a known trip count' for every n; only a one-trip loop is: "
    "'fori_loop(0, n, v * 2)' with x bf16[4,3], n = 2 keeps a while (in a call), not one fusion",
)
def rt3b_loop_unrolled(program, x, n):
    return _rt3b_one_kernel(program, x, n, loop_unrolled=True)


@wrong(
    "one_kernel",
    why="zero steps / zero trips treated as 'nothing left to split', so one kernel; a program "
    "that returns x unchanged is a copy: 'jnp.tanh applied n times' with x f32[2,2], n = 0 "
    "is False",
)
def rt3b_empty_is_fused(program, x, n):
    return _rt3b_one_kernel(program, x, n, empty_is_fused=True)


@wrong(
    "one_kernel",
    why="'a reduction needs the whole array first, so it is its own kernel'; a reduction can "
    "close a fusion: 'sum(exp(x), axis=1)' with x f16[5,7] is one fusion (True)",
)
def rt3b_reduction_never_fuses(program, x, n):
    return _rt3b_one_kernel(program, x, n, reduction_never_fuses=True)


@wrong(
    "one_kernel",
    why="'the mean reduces along the same row the subtract walks, keepdims keeps it aligned, "
    "so it fuses'; the consumer needs the finished reduction: 'x - mean(x, axis=-1, "
    "keepdims=True)' with x f32[16,16] is two kernels (False)",
)
def rt3b_broadcast_reduction_fuses(program, x, n):
    return _rt3b_one_kernel(program, x, n, broadcast_reduction_fuses=True)


@wrong(
    "one_kernel",
    why="the +1 taken to ride along the dot as an epilogue (true of cuBLAS on GPU); on CPU the "
    "YNNPACK dot is a kCustom fusion and the add another: 'x @ w + 1 (w ones, x.shape[1] by 4)' "
    "with x f32[3,4] is False",
)
def rt3b_dot_epilogue(program, x, n):
    return _rt3b_one_kernel(program, x, n, dot_epilogue=True)


@wrong(
    "one_kernel",
    why="'a full reduction to one scalar is cheap to broadcast, so x / norm(x) is one loop'; "
    "the divide needs the finished norm: 'x / norm(x)' with x bf16[2,16] is False",
)
def rt3b_scalar_reduction_fuses(program, x, n):
    return _rt3b_one_kernel(program, x, n, scalar_reduction_fuses=True)


@wrong(
    "one_kernel",
    why="'XLA's loop unroller unrolls very short loops (one or two trips)'; only the one-trip "
    "loop becomes its body: 'fori_loop(0, n, v * 2)' with x f32[3,4], n = 2 keeps a while "
    "(False), while n = 3 is right",
)
def rt3b_short_loops_unrolled(program, x, n):
    return _rt3b_one_kernel(program, x, n, short_loops_unrolled=True)


@wrong(
    "one_kernel",
    why="bf16/f16 transcendentals and reductions taken to be split by the converts to f32 "
    "XLA:CPU adds; the converts fuse: 'tanh(sin(x) * 2 + 1)' and 'sum(exp(x), axis=1)' with "
    "x bf16[4,3] are one fusion (True), and so is 'jnp.tanh applied n times' f16[2,2], n = 3",
)
def rt3b_half_splits(program, x, n):
    return _rt3b_one_kernel(program, x, n, half_splits=True)
