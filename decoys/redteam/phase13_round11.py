"""Round 11 red-team wrong answers for phase 13 (written from README, kata.py, tasks.toml and
programs.py only)."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT11_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- roofline -----------------------------------------------------------------------------------


def _rt11_roof(program, shapes, dtype, chip, *, exact_dots=False, widened_elementwise=False):
    item = 2 if dtype == "bfloat16" else 4
    bf = dtype == "bfloat16"
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops = m * n * (2 * k - 1) if exact_dots else 2 * m * k * n
        elems = m * k + k * n + m * n
    elif program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        flops = b * m * n * (2 * k - 1) if exact_dots else 2 * b * m * k * n
        elems = b * (m * k + k * n + m * n)
    elif program == "matvec":
        (m, k), _ = shapes
        flops = m * (2 * k - 1) if exact_dots else 2 * m * k
        elems = m * k + k + m
    elif program in ("add", "scale_add"):
        n = math.prod(shapes[0])
        ops = 1 if program == "add" else 2
        if bf and widened_elementwise:
            # what the optimized CPU module shows: convert each input up, the ops, convert down
            flops = n * (ops + 3) if program == "add" else n * (ops + 5)
        else:
            flops = ops * n
        elems = 3 * n
    elif program == "row_sums":
        r, c = shapes[0]
        flops = r * (c - 1) + ((r * c + r) if bf else 0)
        elems = r * c + r
    else:  # total
        n = math.prod(shapes[0])
        flops = max(n - 1, 0) + ((n + 1) if bf else 0)
        elems = n + 1
    nbytes = elems * item
    intensity = flops / nbytes if nbytes else 0.0
    peak, bw = _RT11_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bw else "memory"),
    )


@wrong(
    "roofline",
    why="'Flops as the cost model counts the program as written' (README: 2 per multiply-add of a "
    "dot): counts a dot's exact arithmetic, k multiplies and k - 1 adds per output (the textbook "
    "m*n*(2k-1)); under 1% off for k >= 128 but matmul float32 (64, 4) @ (4, 64) gives 28672 "
    "flops instead of the cost model's 32768 (12.5% low), matvec (64, 3) @ (3,) 320 not 384",
)
def _rt11_roofline_exact_dot_count(program, shapes, dtype, chip):
    return _rt11_roof(program, shapes, dtype, chip, exact_dots=True)


@wrong(
    "roofline",
    why="'Flops as the cost model counts the program as written': takes a bfloat16 add / "
    "scale_add's flops from the optimized CPU module, where the backend widened bf16 to f32 "
    "(converts of both inputs and of the output counted): add bfloat16 (64, 64) gives 16384 "
    "flops instead of 4096, scale_add 28672 instead of 8192 (the lowered module, as written, "
    "converts nothing); float32 and the other programs are right",
)
def _rt11_roofline_widened_elementwise_flops(program, shapes, dtype, chip):
    return _rt11_roof(program, shapes, dtype, chip, widened_elementwise=True)


# ---- serve --------------------------------------------------------------------------------------


def _rt11_best_buckets(sizes: list[int], k: int) -> list[int]:
    """Buckets (a subset of the distinct sizes, the largest included) minimising the padded rows
    of every request: DP over the sorted distinct sizes weighted by their counts."""
    distinct = sorted(set(sizes))
    counts = [sizes.count(s) for s in distinct]
    n = len(distinct)
    k = max(1, min(k, n))
    inf = float("inf")
    # cost[i][j]: requests distinct[i..j] padded to distinct[j]
    prefix = [0]
    for c in counts:
        prefix.append(prefix[-1] + c)

    def cost(i, j):
        return (prefix[j + 1] - prefix[i]) * distinct[j]

    best = [[inf] * n for _ in range(k + 1)]
    back = [[-1] * n for _ in range(k + 1)]
    for j in range(n):
        best[1][j] = cost(0, j)
    for b in range(2, k + 1):
        for j in range(n):
            for i in range(j):
                c = best[b - 1][i] + cost(i + 1, j)
                if c < best[b][j]:
                    best[b][j], back[b][j] = c, i
    b = min(range(1, k + 1), key=lambda b: best[b][n - 1])
    out, j = [], n - 1
    while j >= 0 and b >= 1:
        out.append(distinct[j])
        j = back[b][j]
        b -= 1
    return sorted(out)


@wrong(
    "serve",
    why="'at most max_compiles compiles' (None is a structure, so a missing bias is filled with "
    "zeros): the best buckets for the stream, but the filler is np.zeros((1, width)) ('it "
    "broadcasts the same'); a (1, 32) bias is another shape than a request's (32,) bias, so "
    "every bucket that sees both kinds compiles twice: SERVE_CASES[0] (60 requests, 4 "
    "compiles allowed) compiles up to 8 programs",
)
def _rt11_serve_row_shaped_zero_bias(requests: list, run: Callable, max_compiles: int) -> list:
    sizes = [int(x.shape[0]) for x, _ in requests]
    buckets = _rt11_best_buckets(sizes, max_compiles)
    out = []
    for x, bias in requests:
        n, width = x.shape
        bucket = next(b for b in buckets if b >= n)
        padded = np.zeros((bucket, width), dtype=x.dtype)
        padded[:n] = x
        if bias is None:
            bias = np.zeros((1, width), dtype=x.dtype)
        out.append(np.asarray(run(padded, bias))[:n])
    return out


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'the result has the original's dtype AND VALUES' (all-bfloat16 mix): keeps the carry in "
    "the original's dtype, but computes each step as one f32 dot (preferred_element_type=f32), "
    "f32 bias add and f32 tanh, rounding to bf16 once per step ('accumulate in f32'); the "
    "original rounds after the dot, after + b and after tanh: with w, b, x all bfloat16, "
    "rollout_args(16, 48, 0) ends 0.016 (two bf16 ulps near 1) from the original's result, "
    "rollout_args(32, 80, 2)-like shapes 0.008; the float32 mixes are exact",
)
def _rt11_rollout_f32_inner_step(w, b, x) -> jax.Array:
    dtype = jnp.result_type(w, b, x)

    def one(c):
        y = jnp.dot(c, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)
        return jnp.tanh(y).astype(dtype)

    def body(c, _):
        for _ in range(4):
            c = one(c)
        return c, None

    out, _ = jax.lax.scan(body, x.astype(dtype), None, length=8)
    return out


def _rt11_roof_variant(
    program, shapes, dtype, chip, *, scalar_empty=False, const_bytes=False, shared_rhs=False
):
    flops, nbytes, _, _ = _rt11_roof(program, shapes, dtype, chip)
    item = 2 if dtype == "bfloat16" else 4
    if scalar_empty and program in ("add", "scale_add", "total") and len(shapes[0]) == 0:
        # "a shape with no dims has no elements"
        flops, nbytes = 0.0, 0.0 if program != "total" else float(item)
    if const_bytes and program == "scale_add":
        nbytes += 4.0  # the Python 2.0 read as a weak-typed f32 operand
    if shared_rhs and program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        nbytes = float((b * (m * k + m * n) + k * n) * item)
    intensity = flops / nbytes if nbytes else 0.0
    peak, bw = _RT11_PEAKS[chip]
    return flops, nbytes, float(intensity), "compute" if intensity > peak / bw else "memory"


@wrong(
    "roofline",
    why="'add and scale_add: any rank, 0 included': treats a rank-0 shape () as having no "
    "elements (the product over an empty tuple taken as 0, 'no dims, nothing to add'): add on "
    "((), ()) float32 gives 0 flops and 0 bytes instead of 1 flop and 12 bytes; every other "
    "rank is right",
)
def _rt11_roofline_rank0_empty(program, shapes, dtype, chip):
    return _rt11_roof_variant(program, shapes, dtype, chip, scalar_empty=True)


@wrong(
    "roofline",
    why="'each input read once, the output written once': counts the Python 2.0 of scale_add as "
    "a fourth operand read from memory (4 bytes, a weak-typed f32 scalar); a fused program "
    "folds the constant in: scale_add on ((), ()) float32 gives 16 bytes instead of 12, on "
    "((3,), (3,)) bfloat16 22 instead of 18 (the compiled figure); large shapes are right",
)
def _rt11_roofline_scale_constant_read(program, shapes, dtype, chip):
    return _rt11_roof_variant(program, shapes, dtype, chip, const_bytes=True)


@wrong(
    "roofline",
    why="'batched_matmul: (b, m, k) @ (b, k, n)', each input read once: reads the right operand "
    "as one (k, n) matrix shared by the batch (the 'bij,jk' weight habit), so its bytes are "
    "counted once, not b times: batched_matmul float32 (8, 16, 64) @ (8, 64, 16) gives 45056 "
    "bytes instead of 73728 (intensity 64% high); b = 1 is right",
)
def _rt11_roofline_batched_shared_rhs(program, shapes, dtype, chip):
    return _rt11_roof_variant(program, shapes, dtype, chip, shared_rhs=True)


@wrong(
    "serve",
    why="'in all, at most max_compiles compiles': fencepost, reads max_compiles as the number of "
    "boundaries BETWEEN buckets and so picks max_compiles + 1 best buckets for the stream; every "
    "one is used, so SERVE_CASES[0] (4 allowed) compiles 5 programs",
)
def _rt11_serve_fencepost_buckets(requests: list, run: Callable, max_compiles: int) -> list:
    sizes = [int(x.shape[0]) for x, _ in requests]
    buckets = _rt11_best_buckets(sizes, max_compiles + 1)
    out = []
    for x, bias in requests:
        n, width = x.shape
        bucket = next(b for b in buckets if b >= n)
        padded = np.zeros((bucket, width), dtype=x.dtype)
        padded[:n] = x
        if bias is None:
            bias = np.zeros((width,), dtype=x.dtype)
        out.append(np.asarray(run(padded, bias))[:n])
    return out


@wrong(
    "roofline",
    why="'row_sums: (rows, cols) -> (rows,)': sums the wrong axis (NumPy's axis=1 read as "
    "'down the columns'), so the output has cols elements and each sum adds rows - 1 numbers: "
    "row_sums float32 (8, 256) gives 1792 flops and 9216 bytes instead of 2040 flops and 8224 "
    "bytes; square shapes are right",
)
def _rt11_roofline_row_sums_columns(program, shapes, dtype, chip):
    if program != "row_sums":
        return _rt11_roof(program, shapes, dtype, chip)
    r, c = shapes[0]
    return _rt11_roof(program, ((c, r),), dtype, chip)


@wrong(
    "roofline",
    why="'the output written once': treats a reduction's scalar result as free ('it stays in a "
    "register'), so total's bytes are the input's only: total float32 (5,) gives 20 bytes "
    "instead of 24 (17% low), on a rank-0 input 4 instead of 8; large inputs are within 5%",
)
def _rt11_roofline_scalar_output_free(program, shapes, dtype, chip):
    flops, nbytes, _, _ = _rt11_roof(program, shapes, dtype, chip)
    if program == "total":
        nbytes -= 2 if dtype == "bfloat16" else 4
    intensity = flops / nbytes if nbytes else 0.0
    peak, bw = _RT11_PEAKS[chip]
    return flops, float(nbytes), float(intensity), "compute" if intensity > peak / bw else "memory"


# ---- sharded_mlp --------------------------------------------------------------------------------


def _rt11_sharding(*spec):
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    return NamedSharding(mesh, P(*spec))


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes' on the drawn case (hidden 2 to 2.5 x "
    "width): leaves the hidden layer split by columns (right) but also pins x split by columns "
    "'to line it up with w1's column split', so the program all-gathers x back (batch x width) "
    "before the first matmul: with the output's all-reduce that moves the output's size twice, "
    "0.4 of the original's bytes at hidden = 4 x width (listed cases) but 0.667 at "
    "sharded_args(16, 64, 128) and 0.615 at hidden = 2.25 x width",
)
def _rt11_sharded_x_column_pin(x, w1, w2) -> jax.Array:
    x = jax.lax.with_sharding_constraint(x, _rt11_sharding(None, "x"))
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, _rt11_sharding(None, "x"))
    return h @ w2


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt11_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="'the same value and the same gradients': builds one checkpointed step per block with a "
    "list of lambdas that close over the loop variable (`lambda x: remat(block)(p, x)` in a "
    "comprehension): Python binds p late, so every step runs the LAST block's weights: on "
    "deep_args(8, 128, 256) the loss is 16.04 instead of 2.89 and the first 7 blocks get zero "
    "gradient; depth 1 is right",
)
def _rt11_remat_late_binding(params: list, x) -> jax.Array:
    remat_block = jax.checkpoint(_rt11_block)
    steps = [lambda h: remat_block(p, h) for p in params]  # noqa: B023
    for f in steps:
        x = f(x)
    return jnp.mean(x**2)


# ---- rollout (2) --------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'32 steps of x = tanh(x @ w + b)': writes the step as torch.nn.Linear does, "
    "tanh(x @ w.T + b) (w stored as (out, in)); w is square so it runs, 8 trips of 4 steps "
    "meet both budgets, but the values are wrong for any non-symmetric w: "
    "rollout_args(16, 64, 0) float32 differs from the original by O(1)",
)
def _rt11_rollout_linear_transpose(w, b, x) -> jax.Array:
    dtype = jnp.result_type(w, b, x)
    wt = w.T

    def body(c, _):
        for _ in range(4):
            c = jnp.tanh(c @ wt + b).astype(dtype)
        return c, None

    out, _ = jax.lax.scan(body, x.astype(dtype), None, length=8)
    return out
