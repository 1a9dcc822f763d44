"""Red team, phase 13, round 15: bias folded into the matmul, a result convert forgotten,
remat skipping the first block, pmean for psum, answers in sorted order, a bias of shape
(1, width), reduce_precision taken for bf16, and more."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as _rt15_P

from kata_harness.decoys import wrong

_rt15_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
_rt15_STEPS = 32
_rt15_LR = 1e-3


def _rt15_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="Clause 'at most half the original's temp bytes ... a drawn depth 4': checkpoints every "
    "block but the first ('its input is the argument x, which is kept anyway'), but the first "
    "block's wide tanh layer is still saved: at depth 4, width 48, batch 448 the grad keeps 64% "
    "of the original's temp bytes (every block checkpointed: 48%).",
)
def _rt15_remat_loss_skip_first(params: list, x) -> jax.Array:
    for i, p in enumerate(params):
        x = _rt15_block(p, x) if i == 0 else jax.checkpoint(_rt15_block)(p, x)
    return jnp.mean(x**2)


@wrong(
    "mixed_step",
    why="Clause 'every dot's operands are bfloat16 ... bytes accessed at most 3/4': rounds x and "
    "the weights with lax.reduce_precision(exponent_bits=8, mantissa_bits=7) ('bf16 precision') "
    "and keeps activations rounded the same way: the values are bf16's but the arrays stay "
    "float32, so the dots are fed f32 and the bytes accessed do not drop (MIXED_CASES[0]).",
)
def _rt15_mixed_step_reduce_precision(params: tuple, x, y) -> tuple:
    def bf(a):
        return jax.lax.reduce_precision(a, exponent_bits=8, mantissa_bits=7)

    def loss_fn(params):
        (w1, b1), (w2, b2) = params
        h = jax.nn.gelu(bf(bf(x) @ bf(w1) + b1))
        out = bf(h) @ bf(w2) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - _rt15_LR * g, params, grads), loss


@wrong(
    "rollout",
    why="Clause 'each step is the original's step, rounding where it rounds ... bit for bit': "
    "folds the bias into the matmul (x augmented with a column of ones, w with b as an extra "
    "row, the classic affine trick) inside a 4-per-trip scan: with w, b and x all bfloat16 the "
    "bias is added inside the f32 accumulation and rounded once, so rollout_args(16, 64, 0, all "
    "bfloat16) differs from the original by up to ~0.01 (float32: identical); with w bfloat16 and "
    "b float32 the bias is also rounded to w's dtype to stack it (~3e-3 off).",
)
def _rt15_rollout_bias_folded(w, b, x) -> jax.Array:
    dtype = jnp.result_type(w, b, x)
    wa = jnp.concatenate([w, b[None, :].astype(w.dtype)], axis=0)

    def step(x, _):
        xa = jnp.concatenate([x, jnp.ones((x.shape[0], 1), x.dtype)], axis=1)
        return jnp.tanh(xa @ wa).astype(dtype), None

    return jax.lax.scan(step, x.astype(dtype), None, length=_rt15_STEPS, unroll=4)[0]


@wrong(
    "sharded_mlp",
    why="Clause 'the same result': a shard_map that keeps h split by columns (no all-gather) and "
    "combines the devices' partial products with lax.pmean ('average the shards into a "
    "replicated output') instead of lax.psum: replicated and cheap, but 1/8 of the original's "
    "result on every sharded_args case.",
)
def _rt15_sharded_mlp_pmean(x, w1, w2) -> jax.Array:
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))

    def local(x, w1, w2):
        return jax.lax.pmean(jax.nn.relu(x @ w1) @ w2, "x")

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(_rt15_P(), _rt15_P(None, "x"), _rt15_P("x", None)),
        out_specs=_rt15_P(),
    )(x, w1, w2)


def _rt15_count_flops(program, shapes):
    def size(s):
        return int(np.prod(s)) if len(s) else 1

    if program == "matmul":
        (m, k), (_, n) = shapes
        return 2.0 * m * k * n, [m * k, k * n, m * n]
    if program == "batched_matmul":
        (bb, m, k), (_, _, n) = shapes
        return 2.0 * bb * m * k * n, [bb * m * k, bb * k * n, bb * m * n]
    if program == "matvec":
        (m, k), _ = shapes
        return 2.0 * m * k, [m * k, k, m]
    if program == "add":
        n = size(shapes[0])
        return float(n), [n, n, n]
    if program == "scale_add":
        n = size(shapes[0])
        return 2.0 * n, [n, n, n]
    if program == "row_sums":
        r, c = shapes[0]
        return float(r * (c - 1)), [r * c, r]
    n = size(shapes[0])
    return float(n - 1), [n, 1]


@wrong(
    "roofline",
    why="Clause 'a bfloat16 jnp.sum accumulates in float32: read which converts that adds': counts "
    "the convert that widens the input (n) and the n - 1 adds, but not the convert that narrows "
    "the float32 result back to bfloat16: total on shape () bfloat16 is 1 flop where the cost "
    "model counts 2 (shape (1,): 1 vs 2; row_sums (r, 1) bf16: r vs 2r).",
)
def _rt15_roofline_no_result_convert(program, shapes, dtype, chip):
    flops, elems = _rt15_count_flops(program, shapes)
    if dtype == "bfloat16" and program in ("total", "row_sums"):
        flops += elems[0]  # the widening convert of the input, only
    nbytes = float(sum(elems) * (2 if dtype == "bfloat16" else 4))
    intensity = flops / nbytes
    peak, bw = _rt15_PEAKS[chip]
    return flops, nbytes, intensity, "compute" if intensity > peak / bw else "memory"


def _rt15_best_buckets(sizes, k):
    """Buckets (sorted) minimising the padded rows of `sizes`, at most k of them (DP)."""
    sizes = sorted(sizes)
    uniq = sorted(set(sizes))
    counts = [sizes.count(u) for u in uniq]
    m = len(uniq)
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(k + 1)]
    back = [[0] * (m + 1) for _ in range(k + 1)]
    cost[0][0] = 0.0
    for j in range(1, k + 1):
        for i in range(1, m + 1):
            for s in range(i):
                if cost[j - 1][s] == inf:
                    continue
                c = cost[j - 1][s] + uniq[i - 1] * sum(counts[s:i])
                if c < cost[j][i]:
                    cost[j][i], back[j][i] = c, s
    j = min(range(1, k + 1), key=lambda jj: cost[jj][m])
    out, i = [], m
    while i > 0:
        out.append(uniq[i - 1])
        i = back[j][i]
        j -= 1
    return sorted(out)


def _rt15_pad_run(x, bias, run, buckets, width, bias_of_none):
    n = x.shape[0]
    size = next(s for s in buckets if s >= n)
    xp = np.zeros((size, width), np.float32)
    xp[:n] = x
    b = bias_of_none if bias is None else bias
    return np.asarray(run(xp, b))[:n]


@wrong(
    "serve",
    why="Clause 'answer every request': picks the best buckets and runs them, but processes the "
    "requests sorted by size (largest first, 'to warm the big buckets') and returns the answers "
    "in that order: every answer has the right rows for some request, but answers[i] is not "
    "request i's on any stream not already sorted (request_stream(60, 0)).",
)
def _rt15_serve_sorted_answers(requests, run, max_compiles):
    width = requests[0][0].shape[1]
    buckets = _rt15_best_buckets([x.shape[0] for x, _ in requests], max_compiles)
    zeros = np.zeros(width, np.float32)
    order = sorted(range(len(requests)), key=lambda i: -requests[i][0].shape[0])
    return [_rt15_pad_run(*requests[i], run, buckets, width, zeros) for i in order]


@wrong(
    "serve",
    why="Clause 'at most max_compiles compiles' ('a bias of shape (width,) or None'): the best "
    "buckets, and a missing bias filled with zeros, but zeros of shape (1, width) ('a broadcast "
    "row'): same values, yet a (1, width) bias is another shape than a (width,) one, so every "
    "bucket that sees both kinds compiles twice (request_stream(60, 0), max 4: about 8).",
)
def _rt15_serve_row_bias(requests, run, max_compiles):
    width = requests[0][0].shape[1]
    buckets = _rt15_best_buckets([x.shape[0] for x, _ in requests], max_compiles)
    zeros = np.zeros((1, width), np.float32)
    return [_rt15_pad_run(x, b, run, buckets, width, zeros) for x, b in requests]


@wrong(
    "serve",
    why="Clause 'padded flops within the factor the test states / within 5% of the best "
    "buckets': chooses the max_compiles buckets that minimise the LARGEST padding any one "
    "request gets (minimax, 'no request waits much'), not the total padded rows: on "
    "request_stream(60, 0) with 4 compiles the padded flops are far above the best buckets'.",
)
def _rt15_serve_minimax_buckets(requests, run, max_compiles):
    width = requests[0][0].shape[1]
    uniq = sorted({x.shape[0] for x, _ in requests})
    lo, hi = 0, uniq[-1]
    best = [uniq[-1]]
    while lo <= hi:  # smallest max padding p for which greedy covering needs <= max_compiles
        mid = (lo + hi) // 2
        buckets, i = [], 0
        while i < len(uniq):
            j = i
            while j + 1 < len(uniq) and uniq[j + 1] - uniq[i] <= mid:
                j += 1
            buckets.append(uniq[j])
            i = j + 1
        if len(buckets) <= max_compiles:
            best, hi = buckets, mid - 1
        else:
            lo = mid + 1
    zeros = np.zeros(width, np.float32)
    return [_rt15_pad_run(x, b, run, best, width, zeros) for x, b in requests]


@wrong(
    "donating_step",
    why="Clause 'at most 55% of its peak memory ... after a call the old state's buffers are "
    "deleted': donates only the momentum ('the params are still read by the step, the momentum "
    "is scratch'), through a jit of (params, momentum, batch) with donate_argnums=1: the params "
    "are never aliased (peak well above 55% on momentum_args()), and the old params survive "
    "the call.",
)
def _rt15_donating_step_momentum_only(step):
    jitted = jax.jit(
        lambda params, momentum, batch: step((params, momentum), batch), donate_argnums=1
    )

    class _Step:
        def __call__(self, state, batch):
            return jitted(*state, batch)

        def lower(self, state, batch):
            return jitted.lower(*state, batch)

    return _Step()


@wrong(
    "cache_settings",
    why="Clause 'finds every compile ... written there by the first': directory set, both "
    "thresholds zero, and jax_compilation_cache_max_size=0 read as 'no size limit' (as 0 means "
    "unlimited in many tools; JAX's 'no limit' is -1): the cache may hold 0 bytes, so the first "
    "process keeps nothing and the second misses all 4 compiles of CACHE_CHILD.",
)
def _rt15_cache_settings_max_size_zero(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        "jax_compilation_cache_max_size": 0,
    }


@wrong(
    "mixed_step",
    why="Clause 'bytes accessed at most 3/4 of the f32 step's': casts x and the weights to bf16 "
    "with f32 accumulation and rounds each dot's result to bf16 ('activations in bf16'), but "
    "then adds the float32 bias: bf16 + f32 promotes back to f32, so gelu, the residual and "
    "their gradients all run in f32 and every dot needs a fresh convert: 117% of the f32 step's "
    "bytes on MIXED_CASES[0] (a bias cast to bf16 too gives 68%).",
)
def _rt15_mixed_step_bias_promotes(params: tuple, x, y) -> tuple:
    bf = jnp.bfloat16

    def loss_fn(params):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x.astype(bf), w1.astype(bf), preferred_element_type=jnp.float32).astype(bf)
        h = jax.nn.gelu(h + b1)
        out = jnp.dot(h.astype(bf), w2.astype(bf), preferred_element_type=jnp.float32)
        out = out.astype(bf) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - _rt15_LR * g, params, grads), loss
