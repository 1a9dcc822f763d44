"""Round 10 red-team wrong answers for phase 13 (written from README, kata.py, tasks.toml, programs.py)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_RT10_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


def _rt10_item(dtype):
    return 2 if dtype == "bfloat16" else 4


def _rt10_figures(program, shapes, dtype, chip, count=math.prod, intdiv=False, widen=False):
    it = 4 if widen else _rt10_item(dtype)
    bf = dtype == "bfloat16"
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops, elems = 2 * m * k * n, m * k + k * n + m * n
    elif program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        flops, elems = 2 * b * m * k * n, b * (m * k + k * n + m * n)
    elif program == "matvec":
        (m, k), _ = shapes
        flops, elems = 2 * m * k, m * k + k + m
    elif program == "add":
        n = count(shapes[0])
        flops, elems = n, 3 * n
    elif program == "scale_add":
        n = count(shapes[0])
        flops, elems = 2 * n, 3 * n
    elif program == "row_sums":
        r, c = shapes[0]
        flops, elems = r * c + (r * c + r if bf else 0), r * c + r
    else:  # total
        n = count(shapes[0])
        flops, elems = n + (n + 1 if bf else 0), n + 1
    nbytes = elems * it
    inten = (flops // nbytes if nbytes else 0.0) if intdiv else (flops / nbytes if nbytes else 0.0)
    peak, bw = _RT10_PEAKS[chip]
    return float(flops), float(nbytes), float(inten), "compute" if inten > peak / bw else "memory"


@wrong(
    "roofline",
    why="'add and scale_add: any rank': counts the elements as rows * cols (the product of the "
    "first two dims, as for a matrix): right for ranks 0, 1 and 2, but add on (4, 8, 16) float32 "
    "gives 32 flops and 384 bytes instead of 512 flops and 6144 bytes",
)
def _rt10_roofline_matrix_elements(program, shapes, dtype, chip):
    return _rt10_figures(program, shapes, dtype, chip, count=lambda s: math.prod(s[:2]))


@wrong(
    "roofline",
    why="'arithmetic intensity (flops per byte)': computed with integer division flops // bytes "
    "(Python habit from counting elements): matmul intensities are off by under 5%, but add "
    "float32 (1024,) gives intensity 0 instead of 1/12, scale_add 0 instead of 1/6",
)
def _rt10_roofline_floor_intensity(program, shapes, dtype, chip):
    return _rt10_figures(program, shapes, dtype, chip, intdiv=True)


@wrong(
    "roofline",
    why="'bytes as a fused program moves them ... in the argument's dtype': takes README's 'the CPU "
    "backend widens bf16 arithmetic to f32' to mean bf16 data moves as 4-byte floats, so every "
    "bfloat16 program's bytes are doubled and its intensity halved: matmul bfloat16 (128,128) @ "
    "(128,128) gives 196608 bytes instead of 98304; float32 programs are right",
)
def _rt10_roofline_widened_bytes(program, shapes, dtype, chip):
    return _rt10_figures(program, shapes, dtype, chip, widen=True)


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt10_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': checkpoints every block but with policy "
    "everything_saveable (read as 'everything may be recomputed'): it saves every intermediate, "
    "so nothing is recomputed and the temp bytes stay the original's (REMAT_CASES[0])",
)
def _rt10_remat_everything_saveable(params: list, x) -> jax.Array:
    blk = jax.checkpoint(_rt10_block, policy=jax.checkpoint_policies.everything_saveable)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': instead of recomputing, checkpoints every block "
    "with policy offload_dot_with_no_batch_dims('device', 'pinned_host') (host offload, the "
    "'modern remat'): the dots are kept, only moved to another memory space, and on the CPU "
    "backend that space is the same memory: temp bytes stay the original's (measured: 4718592 of "
    "4718592 for REMAT_CASES[0], jax 0.12), the grads are right",
)
def _rt10_remat_offload_dots(params: list, x) -> jax.Array:
    pol = jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")
    blk = jax.checkpoint(_rt10_block, policy=pol)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'the result has the original's dtype': the carry's dtype is jnp.result_type(w, x), the "
    "matmul's promotion, forgetting b: with w and x bfloat16 and b float32 the original is "
    "float32 from its first step (x @ w + b promotes), this returns bfloat16 (the other seven "
    "mixes are right)",
)
def _rt10_rollout_matmul_promotion(w, b, x) -> jax.Array:
    dt = jnp.result_type(w, x)

    def body(c, _):
        for _ in range(4):
            c = jnp.tanh(c @ w + b).astype(dt)
        return c, None

    out, _ = jax.lax.scan(body, x.astype(dt), None, length=8)
    return out


# ---- sharded_mlp --------------------------------------------------------------------------------


def _rt10_mesh_of(a):
    return jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


@wrong(
    "sharded_mlp",
    why="'replicated as the original's (every device holds all of it)': drops the replicated "
    "hidden constraint and also pins the output split by columns (P(None, 'x')) to turn the "
    "output's all-reduce into a cheaper reduce-scatter: the values are right as a global array "
    "but each device holds only width/8 columns (SHARDED_CASES[0])",
)
def _rt10_sharded_output_columns(x, w1, w2) -> jax.Array:
    mesh = _rt10_mesh_of(w1)
    h = jax.nn.relu(x @ w1)
    out = h @ w2
    return jax.lax.with_sharding_constraint(out, NamedSharding(mesh, P(None, "x")))


@wrong(
    "sharded_mlp",
    why="'replicated as the original's ... with at most half the collective bytes': keeps the "
    "hidden layer split and asks the output split by batch rows (P('x', None)), the data-parallel "
    "habit: a reduce-scatter instead of an all-reduce, but no device holds the whole result "
    "(SHARDED_CASES[0], batch 16 -> 2 rows per device)",
)
def _rt10_sharded_output_rows(x, w1, w2) -> jax.Array:
    mesh = _rt10_mesh_of(w1)
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(None, "x")))
    return jax.lax.with_sharding_constraint(h @ w2, NamedSharding(mesh, P("x", None)))


# ---- serve --------------------------------------------------------------------------------------


def _rt10_best(sizes, counts, k):
    # optimal k buckets over distinct sizes, weighted by counts (DP)
    n = len(sizes)
    INF = float("inf")
    cost = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            cost[i][j] = sum(sizes[j] * counts[t] for t in range(i, j + 1))
    dp = [[INF] * (n + 1) for _ in range(k + 1)]
    arg = [[-1] * (n + 1) for _ in range(k + 1)]
    dp[0][0] = 0.0
    for b in range(1, k + 1):
        for j in range(1, n + 1):
            for i in range(j):
                v = dp[b - 1][i] + cost[i][j - 1]
                if v < dp[b][j]:
                    dp[b][j], arg[b][j] = v, i
    best = min(range(1, k + 1), key=lambda b: dp[b][n])
    out, j, b = [], n, best
    while j > 0:
        out.append(sizes[j - 1])
        j, b = arg[b][j], b - 1
    return sorted(out)


@wrong(
    "serve",
    why="'at most max_compiles compiles ... padded flops within 5% of the best buckets': the "
    "optimal buckets are chosen from the biased requests' sizes only (the 'real' workload; "
    "no-bias requests are padded into the nearest of those buckets or the largest request's "
    "size), so no-bias requests that sit where biased ones are rare are padded far: "
    "SERVE_CASES[0] (60 requests, seed 0, 4 compiles) pads to 2828 rows, 1.64x the 1728 "
    "unpadded (factor 1.5 allowed; the best 4 buckets give 2449)",
)
def _rt10_serve_biased_only_buckets(requests, run, max_compiles):
    width = requests[0][0].shape[1]
    ns = [r[0].shape[0] for r in requests if r[1] is not None] or [r[0].shape[0] for r in requests]
    top = max(r[0].shape[0] for r in requests)
    ns.append(top)
    u, c = np.unique(ns, return_counts=True)
    buckets = _rt10_best([int(s) for s in u], [int(t) for t in c], max_compiles)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        bk = next(bb for bb in buckets if bb >= n)
        xp = np.zeros((bk, width), np.float32)
        xp[:n] = x
        bb = bias if bias is not None else np.zeros(width, np.float32)
        out.append(np.asarray(run(xp, bb))[:n])
    return out


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="'at most 55% of its peak memory ... after a call the old state's buffers are deleted': "
    "reaches for jax.checkpoint (the memory tool of task 1) around the step instead of donation: "
    "remat trims what a backward pass keeps, but the old and new state are still both live "
    "(peak memory about the original's, width 512 batch 32) and nothing is donated",
)
def _rt10_donate_remat_instead(step):
    return jax.jit(jax.checkpoint(step))
