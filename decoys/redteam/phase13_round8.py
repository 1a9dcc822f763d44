"""Round 8 red-team wrong answers for phase 13 (written from README, kata.py, tasks.toml, programs.py)."""

from __future__ import annotations

import math
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name as _rt8_checkpoint_name
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_RT8_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- remat_loss ---------------------------------------------------------------------------------


@jax.custom_vjp
def _rt8_block_vjp(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


def _rt8_block_fwd(p, x):
    # keep only the inputs: the hidden layer is recomputed in the backward pass
    return _rt8_block_vjp(p, x), (p, x)


def _rt8_block_bwd(res, g):
    (w1, w2), x = res
    t = jnp.tanh(x @ w1)
    dw2 = t.T @ g
    dpre = (g @ w2.T) * (1 - t**2)
    dw1 = x.T @ dpre
    dx = dpre @ w1.T  # forgets the residual path's identity: should be g + dpre @ w1.T
    return (dw1, dw2), dx


_rt8_block_vjp.defvjp(_rt8_block_fwd, _rt8_block_bwd)


@wrong(
    "remat_loss",
    why="'the same value and the same gradients': a hand-written custom_vjp remat that recomputes "
    "the hidden layer in its bwd, but its dx drops the residual identity (g + ...), so every "
    "block's w1/w2 gradient except the last block's is wrong: max grad error 0.017 on "
    "REMAT_CASES[0] (value unchanged)",
)
def _rt8_remat_custom_vjp_no_skip(params: list, x) -> jax.Array:
    for p in params:
        x = _rt8_block_vjp(tuple(p), x)
    return jnp.mean(x**2)


def _rt8_block_named(p, x):
    w1, w2 = p
    pre = x @ w1
    h = _rt8_checkpoint_name(jnp.tanh(pre), "hidden")
    return x + h @ w2


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': names only the tanh output and uses "
    "save_anything_except_these_names('hidden'), so the equally wide pre-activation x @ w1 is "
    "still saved for every block: temp bytes 189% of the original's on REMAT_CASES[0] (jax here)",
)
def _rt8_remat_except_named_hidden(params: list, x) -> jax.Array:
    blk = jax.checkpoint(
        _rt8_block_named,
        policy=jax.checkpoint_policies.save_anything_except_these_names("hidden"),
    )
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


# ---- sharded_mlp ---------------------------------------------------------------------------------


def _rt8_mesh_of(a):
    s = getattr(a, "sharding", None)
    if isinstance(s, NamedSharding):
        return s.mesh
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': 'split the hidden layer' read as its "
    "first (batch) axis, P('x', None): the column-split h must be all-to-all'd / regathered and "
    "the output regathered, so collectives stay near the original's on SHARDED_CASES[0]",
)
def _rt8_sharded_hidden_rows(x, w1, w2) -> jax.Array:
    m = _rt8_mesh_of(w1)
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(m, P("x", None)))
    return h @ w2


# ---- roofline ------------------------------------------------------------------------------------


def _rt8_item(dtype):
    return 2 if dtype == "bfloat16" else 4


def _rt8_roof(
    program, shapes, dtype, chip, *, mm_convert=False, add_one_input=False, ridge_f32=False
):
    it = _rt8_item(dtype)
    sizes = [math.prod(s) for s in shapes]
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops = 2 * m * k * n
        out = m * n
        if mm_convert and dtype == "bfloat16":
            flops += m * n  # "accumulates in f32, then converts back", as jnp.sum does
    elif program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        flops = 2 * b * m * k * n
        out = b * m * n
        if mm_convert and dtype == "bfloat16":
            flops += b * m * n
    elif program == "matvec":
        (m, k), _ = shapes
        flops = 2 * m * k
        out = m
        if mm_convert and dtype == "bfloat16":
            flops += m
    elif program == "add":
        flops = sizes[0]
        out = sizes[0]
    elif program == "scale_add":
        flops = 2 * sizes[0]
        out = sizes[0]
    elif program == "row_sums":
        r, c = shapes[0]
        flops = r * (c - 1)
        out = r
        if dtype == "bfloat16":
            flops += r * c + r
    else:  # total
        n = sizes[0]
        flops = n - 1
        out = 1
        if dtype == "bfloat16":
            flops += n + 1
    reads = sizes[0] if (add_one_input and program in ("add", "scale_add")) else sum(sizes)
    nbytes = float((reads + out) * it)
    ai = flops / nbytes
    peak, bw = _RT8_PEAKS[chip]
    if ridge_f32 and dtype == "float32":
        peak = peak / 4
    return float(flops), nbytes, float(ai), ("compute" if ai > peak / bw else "memory")


@wrong(
    "roofline",
    why="'flops as the cost model counts the program as written': carries jnp.sum's bf16 "
    "convert rule over to dots and adds one convert per output element of a bfloat16 "
    "matmul, but a bf16 dot lowers as bf16 -> bf16 with no convert: matmul (64,8)@(8,64) "
    "bfloat16 predicts 69632 flops against 65536 (+6%)",
)
def _rt8_roofline_dot_converts(program, shapes, dtype, chip):
    return _rt8_roof(program, shapes, dtype, chip, mm_convert=True)


@wrong(
    "roofline",
    why="'each input read once, the output written once': for the same-shape elementwise "
    "programs (add, scale_add) reads 'the input shape' once instead of each of the two "
    "inputs: add of two (1024, 1024) float32 arrays predicts 8 MiB against 12 MiB",
)
def _rt8_roofline_same_shape_once(program, shapes, dtype, chip):
    return _rt8_roof(program, shapes, dtype, chip, add_one_input=True)


@wrong(
    "roofline",
    why="'compute- or memory-bound on chip (a key of PEAKS)': the PEAKS are dense bf16 peaks, "
    "but this answer quarters the flop peak for float32 programs (an f32 matmul runs slower "
    "on MXU/tensor cores), moving the ridge: float32 matmul (512,512)@(512,512) has "
    "intensity 85; on h100 the ridge becomes 295/4 = 74 and it answers 'compute' where "
    "PEAKS (ridge 295) make it 'memory' (same on v5e: 60 vs 240)",
)
def _rt8_roofline_f32_quarter_peak(program, shapes, dtype, chip):
    return _rt8_roof(program, shapes, dtype, chip, ridge_f32=True)


# ---- serve ---------------------------------------------------------------------------------------


def _rt8_pad_run(requests, run, buckets):
    buckets = sorted(buckets)
    out = []
    for x, bias in requests:
        x = np.asarray(x, np.float32)
        n = x.shape[0]
        size = next(b for b in buckets if b >= n)
        xp = np.zeros((size, x.shape[1]), np.float32)
        xp[:n] = x
        bb = np.zeros(x.shape[1], np.float32) if bias is None else np.asarray(bias, np.float32)
        out.append(np.asarray(run(xp, bb))[:n])
    return out


@wrong(
    "serve",
    why="'within 5% of the padded flops of the best max_compiles buckets': picks boundaries at "
    "the largest gaps between sorted distinct sizes ('natural breaks'), which ignores how many "
    "requests sit in each group: on a geometric stream the breaks land in the sparse tail "
    "(e.g. 200, 150, 110 ...) and every small request pads to one bucket near 60-100",
)
def _rt8_serve_gap_breaks(requests: list, run, max_compiles: int) -> list:
    sizes = sorted({int(np.shape(x)[0]) for x, _ in requests})
    gaps = sorted(range(len(sizes) - 1), key=lambda i: sizes[i + 1] - sizes[i], reverse=True)
    cuts = sorted(gaps[: max_compiles - 1])
    buckets = [sizes[i] for i in cuts] + [sizes[-1]]
    return _rt8_pad_run(requests, run, buckets)


@wrong(
    "serve",
    why="'padded flops within the factor the test states': buckets are the max_compiles - 1 most "
    "frequent sizes plus the largest: frequent small sizes (1..5 on a geometric stream) get "
    "their own buckets while everything from ~6 to 199 pads up to the largest (200): "
    "SERVE_CASES[0] pads far beyond 1.5x",
)
def _rt8_serve_most_frequent(requests: list, run, max_compiles: int) -> list:
    counts = Counter(int(np.shape(x)[0]) for x, _ in requests)
    largest = max(counts)
    common = [s for s, _ in counts.most_common() if s != largest][: max_compiles - 1]
    return _rt8_pad_run(requests, run, common + [largest])


def _rt8_best_buckets(sizes, k):
    """Buckets (at most k) minimising the padded rows of `sizes`, by dynamic programming."""
    counts = Counter(sizes)
    distinct = sorted(counts)
    m = len(distinct)
    k = min(k, m)
    inf = float("inf")
    # cost[i][j]: requests with sizes distinct[i..j] padded to distinct[j]
    best = [[inf] * (m + 1) for _ in range(k + 1)]
    arg = [[None] * (m + 1) for _ in range(k + 1)]
    best[0][0] = 0
    for b in range(1, k + 1):
        for j in range(1, m + 1):
            for i in range(j):
                if best[b - 1][i] == inf:
                    continue
                top = distinct[j - 1]
                c = best[b - 1][i] + sum(counts[s] * top for s in distinct[i:j])
                if c < best[b][j]:
                    best[b][j], arg[b][j] = c, i
    b = min(range(1, k + 1), key=lambda q: best[q][m])
    out, j = [], m
    while j > 0:
        out.append(distinct[j - 1])
        j, b = arg[b][j], b - 1
    return sorted(out)


@wrong(
    "serve",
    why="'in all, at most max_compiles compiles': spends max_compiles on the best buckets and then "
    "also warms the server up with one dummy call run(zeros((1, width)), zeros(width)) before "
    "the stream, a shape no bucket has (unless 1 is a bucket): max_compiles + 1 compiles on "
    "SERVE_CASES[0]",
)
def _rt8_serve_warmup_call(requests: list, run, max_compiles: int) -> list:
    width = int(np.shape(requests[0][0])[1])
    np.asarray(run(np.zeros((1, width), np.float32), np.zeros(width, np.float32)))
    sizes = [int(np.shape(x)[0]) for x, _ in requests]
    return _rt8_pad_run(requests, run, _rt8_best_buckets(sizes, max_compiles))


# ---- rollout -------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'at most 40% of the unrolled original's instructions': uses both knobs at once, a body "
    "of 4 Python-unrolled steps AND scan(length=8, unroll=4): the compiled while runs 2 trips "
    "of 16 steps, so the module holds half the original's steps (> 40%) for w, b, x float32 "
    "(16, 64) as ROLLOUT_CASES[0]",
)
def _rt8_rollout_double_unroll(w, b, x) -> jax.Array:
    dt = jnp.result_type(w, b, x)

    def four(c, _):
        for _ in range(4):
            c = jnp.tanh(c @ w + b).astype(dt)
        return c, None

    out, _ = jax.lax.scan(four, x.astype(dt), None, length=8, unroll=4)
    return out


@wrong(
    "sharded_mlp",
    why="'the same result' and 'at most half the original's collective bytes': tries to compress "
    "the hidden layer's all-gather by quantising h to int8 (per-row f32 scale) before replicating "
    "it: the output is off by 0.016 (max |out| 2.5) on SHARDED_CASES[0], and the partitioner "
    "still all-gathers h in f32 (collective bytes 100% of the original's)",
)
def _rt8_sharded_int8_gather(x, w1, w2) -> jax.Array:
    m = _rt8_mesh_of(w1)
    h = jax.nn.relu(x @ w1)
    scale = jnp.max(h, axis=1, keepdims=True) / 127.0 + 1e-12
    q = jnp.round(h / scale).astype(jnp.int8)
    q = jax.lax.with_sharding_constraint(q, NamedSharding(m, P()))
    scale = jax.lax.with_sharding_constraint(scale, NamedSharding(m, P()))
    q, scale = jax.lax.optimization_barrier((q, scale))  # keep the gather on the int8 array
    h = q.astype(jnp.float32) * scale
    return h @ w2
