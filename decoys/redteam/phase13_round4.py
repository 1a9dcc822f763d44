"""Red-team wrong answers for phase 13, written from the contract only.

Each function has the stub's signature and is wrong per the contract (kata.py docstrings,
README.md) on the valid input its ``why`` names.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt4_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
_rt4_LEARNING_RATE = 1e-3
_rt4_STEPS = 32
_rt4_BF16 = jnp.bfloat16
_rt4_F32 = jnp.float32


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt4_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="checkpoints blocks two at a time (zip(params[::2], params[1::2])): recomputing a pair "
    "costs 25.5% more flops than the grad (1.984e9 vs 1.582e9 for depth 8, width 128, batch 256), "
    "over the 25% budget; and on an odd depth (7 blocks) the last block is silently dropped, "
    "so the value and gradients differ",
)
def _rt4_remat_pairs(params: list, x) -> jax.Array:
    def two(p, q, x):
        return _rt4_block(q, _rt4_block(p, x))

    pair = jax.checkpoint(two)
    for p, q in zip(params[::2], params[1::2]):
        x = pair(p, q, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="per-block checkpoint with policy dots_with_no_batch_dims_saveable saves x @ w1, the "
    "very 4x-wide hidden layer the budget is about: temp bytes stay at the original's "
    "(4718592 = 100%, budget 50%) for depth 8, width 128, batch 256",
)
def _rt4_remat_saves_dots(params: list, x) -> jax.Array:
    blk = jax.checkpoint(
        _rt4_block, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    )
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="jax.checkpoint(block, prevent_cse=False) outside any loop: XLA CSEs the recomputation "
    "with the forward pass, so the backward keeps every hidden layer again; temp bytes 4718592 "
    "= 100% of the original's (budget 50%) for depth 8, width 128, batch 256",
)
def _rt4_remat_no_cse(params: list, x) -> jax.Array:
    blk = jax.checkpoint(_rt4_block, prevent_cse=False)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="checkpoints every block but the last ('its backward starts at once, recomputing it "
    "buys nothing'): passes the listed depths (6, 8, 12), but the last block keeps its 4x-wide "
    "hidden layer, and at depth 4, width 64, batch 384 (deep_args(4, 64, 384, 1)) temp bytes "
    "are 52% of the original's, over the 50% budget a checkpoint on every block meets (48%)",
)
def _rt4_remat_last_plain(params: list, x) -> jax.Array:
    blk = jax.checkpoint(_rt4_block)
    for i, p in enumerate(params):
        x = _rt4_block(p, x) if i == len(params) - 1 else blk(p, x)
    return jnp.mean(x**2)


# ---- mixed_step ---------------------------------------------------------------------------------


def _rt4_gelu(h):
    return jax.nn.gelu(h)


def _rt4_mixed_loss(params, xb, y, *, loss_dtype=_rt4_F32, carry_out_bf16=True):
    (w1, b1), (w2, b2) = params
    h = jax.lax.dot_general(
        xb,
        w1.astype(_rt4_BF16),
        (((xb.ndim - 1,), (0,)), ((), ())),
        preferred_element_type=_rt4_F32,
    )
    a = _rt4_gelu((h + b1).astype(_rt4_BF16))
    out = jax.lax.dot_general(
        a, w2.astype(_rt4_BF16), (((a.ndim - 1,), (0,)), ((), ())), preferred_element_type=_rt4_F32
    )
    out = out + b2
    if carry_out_bf16:
        out = out.astype(_rt4_BF16)
    d = out.astype(loss_dtype) - y.astype(loss_dtype)
    return jnp.mean(d * d).astype(loss_dtype)


@wrong(
    "mixed_step",
    why="the loss is carried in bf16 to the end (mean of a bf16 array, cast back to f32): a "
    "bf16 loss in [1, 2) has a spacing of 0.0078, so it misses the f32 loss by up to 0.004; "
    "measured 1.453125 vs 1.450488 (off by 2.6e-3, over the 2e-3 allowed) on MIXED_CASES[0]",
)
def _rt4_mixed_bf16_loss(params: tuple, x, y) -> tuple:
    xb = x.astype(_rt4_BF16)
    yb = y.astype(_rt4_BF16)

    def loss_fn(p):
        return _rt4_mixed_loss(p, xb, yb, loss_dtype=_rt4_BF16)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    new = jax.tree.map(lambda p, g: p - _rt4_LEARNING_RATE * g.astype(_rt4_F32), params, grads)
    return new, loss.astype(_rt4_F32)


@wrong(
    "mixed_step",
    why="the update is applied to a bf16 copy of the params and cast back: a weight near 0.06 "
    "moved by 1e-5 rounds back to itself in bf16 (spacing 2.4e-4), so most of each param's "
    "update is lost or rounded to a multiple of the spacing, far from within 5% (any case)",
)
def _rt4_mixed_bf16_update(params: tuple, x, y) -> tuple:
    xb = x.astype(_rt4_BF16)

    def loss_fn(p):
        return _rt4_mixed_loss(p, xb, y, carry_out_bf16=False)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    new = jax.tree.map(
        lambda p, g: (p.astype(_rt4_BF16) - (_rt4_LEARNING_RATE * g).astype(_rt4_BF16)).astype(
            _rt4_F32
        ),
        params,
        grads,
    )
    return new, loss


@wrong(
    "mixed_step",
    why="the second matmul accumulates in bf16 (preferred_element_type=bfloat16, then cast "
    "up): the contract wants every dot to accumulate into float32; its result type in the "
    "lowered module is bf16 on every case (MIXED_CASES[0])",
)
def _rt4_mixed_bf16_accumulate(params: tuple, x, y) -> tuple:
    xb = x.astype(_rt4_BF16)

    def loss_fn(params):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(xb, w1.astype(_rt4_BF16), preferred_element_type=_rt4_F32)
        a = _rt4_gelu((h + b1).astype(_rt4_BF16))
        out = (
            jnp.dot(a, w2.astype(_rt4_BF16), preferred_element_type=_rt4_BF16).astype(_rt4_F32) + b2
        )
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - _rt4_LEARNING_RATE * g, params, grads), loss


# ---- rollout ------------------------------------------------------------------------------------


def _rt4_step(w, b, x):
    return jnp.tanh(x @ w + b)


@wrong(
    "rollout",
    why="scan with unroll=3 (3 does not divide 32): the while runs 10 trips plus a remainder, "
    "over the 8 trips the contract allows, on every case (ROLLOUT_CASES[0])",
)
def _rt4_rollout_unroll3(w, b, x) -> jax.Array:
    def body(x, _):
        return _rt4_step(w, b, x), None

    x, _ = jax.lax.scan(body, x, None, length=_rt4_STEPS, unroll=3)
    return x


@wrong(
    "rollout",
    why="two nested scans (8 outer trips of a 4-trip inner scan): each while's known_trip_count "
    "is at most 8, but the inner while runs 32 trips in all and its body does one step, not a "
    "quarter of them (ROLLOUT_CASES[0]): the loop that runs is not few trips",
)
def _rt4_rollout_nested(w, b, x) -> jax.Array:
    def inner(x, _):
        return _rt4_step(w, b, x), None

    def outer(x, _):
        x, _ = jax.lax.scan(inner, x, None, length=4)
        return x, None

    x, _ = jax.lax.scan(outer, x, None, length=_rt4_STEPS // 4)
    return x


@wrong(
    "rollout",
    why="fori_loop over STEPS // 5 = 6 trips of 5 steps ('at least 4 per trip, 5 to be safe'): "
    "30 steps, not 32; the recurrence has not converged after 30 steps with w scaled by 3 "
    "(rollout_args(16, 64, 0) with 3 * w), so the result differs",
)
def _rt4_rollout_floor(w, b, x) -> jax.Array:
    per_trip = 5

    def body(_, x):
        for _ in range(per_trip):
            x = _rt4_step(w, b, x)
        return x

    return jax.lax.fori_loop(0, _rt4_STEPS // per_trip, body, x)


@wrong(
    "rollout",
    why="casts each step back to x's dtype so the scan carry keeps its type: the same on "
    "float32, but for x bfloat16 with w, b float32 (valid: the original promotes to float32 "
    "after the first step) every state is rounded to bf16 and the result is bf16, not the "
    "original's float32 values",
)
def _rt4_rollout_carry_cast(w, b, x) -> jax.Array:
    def body(x, _):
        return _rt4_step(w, b, x).astype(x.dtype), None

    x, _ = jax.lax.scan(body, x, None, length=_rt4_STEPS, unroll=4)
    return x


# ---- sharded_mlp --------------------------------------------------------------------------------


@cache
def _rt4_mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def _rt4_mesh_of(_):
    return _rt4_mesh()


@wrong(
    "sharded_mlp",
    why="pins the hidden layer split by rows (batch, P('x', None)) instead of leaving it split "
    "by columns: the partitioner all-gathers both w1 and w2 instead, 12.8x the original's "
    "collective bytes (budget 0.5x) on SHARDED_CASES[0]",
)
def _rt4_sharded_batch_split(x, w1, w2) -> jax.Array:
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(_rt4_mesh_of(w1), P("x", None)))
    return h @ w2


@wrong(
    "sharded_mlp",
    why="keeps the replicated pin and rounds the hidden layer through bf16 'to halve the "
    "gather': XLA moves the converts past the all-gather, so it still gathers f32 (collective "
    "bytes 100% of the original's, budget 50%), and the result carries bf16 rounding (max abs "
    "error 5e-3) instead of being the same (SHARDED_CASES[0])",
)
def _rt4_sharded_bf16_gather(x, w1, w2) -> jax.Array:
    h = jax.nn.relu(x @ w1).astype(_rt4_BF16)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(_rt4_mesh_of(w1), P()))
    return h.astype(_rt4_F32) @ w2


@wrong(
    "sharded_mlp",
    why="replicates w2 instead of h ('the all-gather disappears from h'): the partitioner "
    "all-gathers w2 (hidden x width) instead of h (batch x hidden); with batch < width that is "
    "more bytes than the original's (SHARDED_CASES[0]: 512x128 vs 16x512)",
)
def _rt4_sharded_gather_w2(x, w1, w2) -> jax.Array:
    w2 = jax.lax.with_sharding_constraint(w2, NamedSharding(_rt4_mesh_of(w1), P()))
    h = jax.nn.relu(x @ w1)
    return h @ w2


@wrong(
    "sharded_mlp",
    why="drops the replicated pin but routes the output through a batch split and back "
    "('reduce-scatter then all-gather, as a ring all-reduce does'): XLA all-reduces and then "
    "all-gathers the (batch, width) output, 2 * batch * width bytes; under half the original's "
    "on the listed cases (hidden >= 4 * width: 40%), but with hidden = 2 * width "
    "(sharded_args(16, 128, 256, 0)) it is 67% where dropping the pin alone gives 33%",
)
def _rt4_sharded_scatter_gather(x, w1, w2) -> jax.Array:
    out = jax.nn.relu(x @ w1) @ w2
    out = jax.lax.with_sharding_constraint(out, NamedSharding(_rt4_mesh(), P("x", None)))
    return jax.lax.with_sharding_constraint(out, NamedSharding(_rt4_mesh(), P()))


# ---- roofline -----------------------------------------------------------------------------------


def _rt4_itemsize(dtype: str) -> int:
    return {"float32": 4, "bfloat16": 2}[dtype]


def _rt4_roofline(program, shapes, dtype, chip, *, ridge=None, reduce_flops=None, total_size=None):
    s = _rt4_itemsize(dtype)
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops, elems = 2 * m * k * n, m * k + k * n + m * n
    elif program == "batched_matmul":
        (bb, m, k), (_, _, n) = shapes
        flops, elems = 2 * bb * m * k * n, bb * (m * k + k * n + m * n)
    elif program == "matvec":
        (m, k), _ = shapes
        flops, elems = 2 * m * k, m * k + k + m
    elif program == "add":
        n = math.prod(shapes[0])
        flops, elems = n, 3 * n
    elif program == "scale_add":
        n = math.prod(shapes[0])
        flops, elems = 2 * n, 3 * n
    elif program == "row_sums":
        rows, cols = shapes[0]
        flops, elems = reduce_flops(rows * cols, rows, dtype), rows * cols + rows
    else:  # total
        n = total_size(shapes[0]) if total_size else math.prod(shapes[0])
        flops, elems = reduce_flops(n, 1, dtype), n + 1
    nbytes = elems * s
    intensity = flops / nbytes
    peak, bandwidth = _rt4_PEAKS[chip]
    r = ridge(chip) if ridge else peak / bandwidth
    return float(flops), float(nbytes), float(intensity), "compute" if intensity > r else "memory"


def _rt4_exact_reduce(n, out, dtype):
    # cost_analysis: n - out adds; a bf16 sum is widened to f32 first (one convert per element)
    return (n - out) + (n + out if dtype == "bfloat16" else 0)


@wrong(
    "roofline",
    why="takes the H100 ridge point from the sparsity peak (1,979 TFLOP/s over 3.35 TB/s = 591 "
    "flop/byte) instead of the dense 989 (295): a bf16 matmul (1024,1024)@(1024,1024) has "
    "intensity 341, compute-bound on h100, but this says memory",
)
def _rt4_roofline_sparse_peak(program, shapes, dtype, chip):
    def ridge(c):
        return (1979e12 if c == "h100" else _rt4_PEAKS[c][0]) / _rt4_PEAKS[c][1]

    return _rt4_roofline(program, shapes, dtype, chip, ridge=ridge, reduce_flops=_rt4_exact_reduce)


@wrong(
    "roofline",
    why="counts one flop per element summed (n instead of n - 1 per row): row_sums on float32 "
    "(1000, 2) is 1000 flops by cost_analysis, this says 2000 (100% over, not within 5%); "
    "'total' of a float32 (3,) says 3 for 2",
)
def _rt4_roofline_n_adds(program, shapes, dtype, chip):
    def reduce_flops(n, out, dtype):
        return n + (n + out if dtype == "bfloat16" else 0)

    return _rt4_roofline(program, shapes, dtype, chip, reduce_flops=reduce_flops)


@wrong(
    "roofline",
    why="counts a sum's n - 1 adds but not the widening of a bf16 sum to f32 that jnp.sum "
    "does (a convert per element): row_sums on bfloat16 (64, 128) is 16384 flops by "
    "cost_analysis, this says 8128 (half)",
)
def _rt4_roofline_bf16_sum(program, shapes, dtype, chip):
    def reduce_flops(n, out, dtype):
        return n - out

    return _rt4_roofline(program, shapes, dtype, chip, reduce_flops=reduce_flops)


@wrong(
    "roofline",
    why="'total' reads the shape as 2-D (rows * cols = shape[0] * shape[-1]); the program takes "
    "any shape: float32 (4, 8, 16) sums 512 elements (511 flops, 2052 bytes), this counts 64",
)
def _rt4_roofline_total_2d(program, shapes, dtype, chip):
    def total_size(shape):
        if len(shape) == 0:
            return 1
        return shape[0] * shape[-1]

    return _rt4_roofline(
        program, shapes, dtype, chip, reduce_flops=_rt4_exact_reduce, total_size=total_size
    )


# ---- serve --------------------------------------------------------------------------------------


def _rt4_best_buckets(sizes: list[int], weights: list[int], k: int) -> list[int]:
    """Boundaries (a subset of the sizes, always the largest) minimising sum(weight * bucket)."""
    d = len(sizes)
    k = max(1, min(k, d))
    inf = float("inf")
    # cost[j][i]: best cost covering sizes[0..i] with j buckets, the last one at sizes[i]
    prefix = [0]
    for w in weights:
        prefix.append(prefix[-1] + w)
    cost = [[inf] * d for _ in range(k + 1)]
    back = [[-1] * d for _ in range(k + 1)]
    for i in range(d):
        cost[1][i] = sizes[i] * prefix[i + 1]
    for j in range(2, k + 1):
        for i in range(d):
            for p in range(i):
                c = cost[j - 1][p] + sizes[i] * (prefix[i + 1] - prefix[p + 1])
                if c < cost[j][i]:
                    cost[j][i], back[j][i] = c, p
    j = min(range(1, k + 1), key=lambda j: cost[j][d - 1])
    out, i = [], d - 1
    while i >= 0 and j >= 1:
        out.append(sizes[i])
        i, j = back[j][i], j - 1
    return sorted(out)


def _rt4_serve_with(requests, run, buckets):
    width = requests[0][0].shape[1]
    zeros = np.zeros(width, np.float32)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        size = next(b for b in buckets if b >= n)
        padded = np.zeros((size, width), np.float32)
        padded[:n] = x
        y = run(padded, zeros if bias is None else bias)
        out.append(np.asarray(y)[:n])
    return out


@wrong(
    "serve",
    why="chooses the buckets over the distinct sizes, one vote each, not weighted by how many "
    "requests have each size: on a stream where one size is far more common than the rest "
    "(say 50 requests of 7 rows among single ones of 3..200), its padded flops are well over "
    "5% above the best max_compiles buckets'",
)
def _rt4_serve_unweighted(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    sizes = sorted({x.shape[0] for x, _ in requests})
    buckets = _rt4_best_buckets(sizes, [1] * len(sizes), max_compiles)
    return _rt4_serve_with(requests, run, buckets)


@wrong(
    "serve",
    why="keeps one compile in reserve 'for the None structure' (max_compiles - 1 buckets) though "
    "it passes zeros for a missing bias: with one size far more common than the rest, the best "
    "max_compiles - 1 buckets pad well over 5% more than the best max_compiles ones (the "
    "fresh-stream check)",
)
def _rt4_serve_reserve_one(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    counts: dict[int, int] = {}
    for x, _ in requests:
        counts[x.shape[0]] = counts.get(x.shape[0], 0) + 1
    sizes = sorted(counts)
    buckets = _rt4_best_buckets(sizes, [counts[s] for s in sizes], max(1, max_compiles - 1))
    return _rt4_serve_with(requests, run, buckets)


@wrong(
    "serve",
    why="pads with weighted-optimal buckets but passes a missing bias through as None: None is "
    "another pytree structure, so a stream with and without bias compiles twice per bucket, "
    "2 * max_compiles in all (SERVE_CASES[0]: 8 > 4)",
)
def _rt4_serve_none_structure(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    counts: dict[int, int] = {}
    for x, _ in requests:
        counts[x.shape[0]] = counts.get(x.shape[0], 0) + 1
    sizes = sorted(counts)
    buckets = _rt4_best_buckets(sizes, [counts[s] for s in sizes], max_compiles)
    width = requests[0][0].shape[1]
    out = []
    for x, bias in requests:
        n = x.shape[0]
        size = next(b for b in buckets if b >= n)
        padded = np.zeros((size, width), np.float32)
        padded[:n] = x
        out.append(np.asarray(run(padded, bias))[:n])
    return out


@wrong(
    "serve",
    why="weights by requests but puts the boundaries at request-count quantiles (each bucket "
    "an equal share of the requests) instead of minimising padding: on a stream where one size "
    "is far more common (50 requests of 7 rows among single ones up to 200) the quantiles "
    "collapse onto 7 and the rest share one bucket, far over 5% above the best buckets' flops",
)
def _rt4_serve_quantiles(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    sizes = sorted(x.shape[0] for x, _ in requests)
    k = max(1, max_compiles)
    picks = {sizes[max(0, math.ceil(q * len(sizes) / k) - 1)] for q in range(1, k + 1)}
    return _rt4_serve_with(requests, run, sorted(picks))


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="donates the state and logs the loss with jax.debug.print each step: a host callback "
    "that moves the loss to the host on every call, where the contract says the step moves "
    "nothing between host and device (DONATION_CASES[0] under transfer_guard('disallow'))",
)
def _rt4_donate_and_log(step: Callable) -> Callable:
    def logged(state, batch):
        new, loss = step(state, batch)
        jax.debug.print("loss {}", loss)
        return new, loss

    return jax.jit(logged, donate_argnums=0)


@wrong(
    "donating_step",
    why="donates the state and stores the momentum in bf16 'to halve the state': the new "
    "momentum is bfloat16, not the float32 jax.jit(step) returns, and its values are rounded "
    "(DONATION_CASES[0])",
)
def _rt4_donate_bf16_momentum(step: Callable) -> Callable:
    def half(state, batch):
        params, momentum = state
        (params, momentum), loss = step(
            (params, jax.tree.map(lambda m: m.astype(_rt4_F32), momentum)), batch
        )
        return (params, jax.tree.map(lambda m: m.astype(_rt4_BF16), momentum)), loss

    return jax.jit(half, donate_argnums=0)


@wrong(
    "donating_step",
    why="donates the batch instead of the state (donate_argnums=1): no output has the batch's "
    "shape, nothing is aliased, peak memory stays at 100% of the original's (budget 55%) and the "
    "old state is not deleted (DONATION_CASES[0])",
)
def _rt4_donate_batch(step: Callable) -> Callable:
    return jax.jit(step, donate_argnums=1)


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="a 10 ms compile-time threshold ('small enough'): CACHE_CHILD's jit and most eager ops "
    "take longer and are written, but one eager op (arange/reshape) compiles in under 10 ms on "
    "an idle machine and is never written, so the second process compiles it again: measured "
    "3 hits, 0 misses, 3 entries where the full cache has 4 (only a loaded machine hides it)",
)
def _rt4_cache_10ms(cache_dir: str) -> dict:
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.01,
    }


@wrong(
    "cache_settings",
    why="lowers the wrong threshold: min_entry_size_bytes = -1 caches entries of any size, but "
    "min_compile_time_secs stays at its 1 s default, so a program that compiles in "
    "milliseconds is never written and the second process misses every compile",
)
def _rt4_cache_entry_size_only(cache_dir: str) -> dict:
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_entry_size_bytes": -1,
    }


@wrong(
    "cache_settings",
    why="skips 'trivial' entries under 2 KiB (min_entry_size_bytes=2048): the eager reshape's "
    "entry is about 2015 bytes, so it is never written and the second process compiles it again "
    "(measured: 3 entries, second process 3 hits and 0 misses for its 4 compiles)",
)
def _rt4_cache_skip_small(cache_dir: str) -> dict:
    return {
        "jax_compilation_cache_dir": os.path.join(cache_dir, ""),
        "jax_persistent_cache_min_compile_time_secs": 0,
        "jax_persistent_cache_min_entry_size_bytes": 2048,
    }
