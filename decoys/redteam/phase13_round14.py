"""Red team, phase 13, round 14: bucket choosers that are not the padded-rows optimum (greedy
splitting, a relative-waste objective, 1-D k-means, log-spaced buckets), a scan that dots in the
state's dtype, remat only of "wide" blocks, relu after the output's sum, a reduction counted
from its input size alone and scale_add's broadcast counted as a flop."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_rt14_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- serve helpers ----------------------------------------------------------------------------


def _rt14_padded_rows(sizes, buckets):
    b = sorted(buckets)
    return sum(b[bisect.bisect_left(b, n)] for n in sizes)


def _rt14_answer(requests, run, buckets):
    """Pad every request to the smallest bucket that holds it; zeros for a missing bias (one
    pytree structure, so compiles = buckets)."""
    b = sorted(buckets)
    out = []
    for x, bias in requests:
        x = np.asarray(x, np.float32)
        n, width = x.shape
        size = b[bisect.bisect_left(b, n)]
        xp = np.zeros((size, width), np.float32)
        xp[:n] = x
        bb = np.zeros(width, np.float32) if bias is None else np.asarray(bias, np.float32)
        out.append(np.asarray(run(xp, bb))[:n])
    return out


@wrong(
    "serve",
    why="Clause 'within 5% of the padded flops of the best max_compiles buckets': buckets are "
    "added greedily (start from the largest size, then repeatedly add the single size that cuts "
    "the padded rows most), which is not the optimum; it meets the listed cases' factors but on a "
    "drawn stream with one common size (60 requests: geometric(1/24) sizes capped at 200, half of "
    "them set to 5, one 200; k=3) it picks 18, 35, 200 and pads 36% more rows than the best 3.",
)
def _rt14_serve_greedy_split(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    sizes = [int(np.shape(x)[0]) for x, _ in requests]
    buckets = [max(sizes)]
    while len(buckets) < max_compiles:
        cands = sorted(set(sizes) - set(buckets))
        if not cands:
            break
        buckets.append(min(cands, key=lambda v: _rt14_padded_rows(sizes, buckets + [v])))
    return _rt14_answer(requests, run, buckets)


@wrong(
    "serve",
    why="Clause 'padded flops within 5% of the best max_compiles buckets': the DP minimises the "
    "mean padding *factor* per request (sum of bucket/n) instead of the padded rows (sum of "
    "bucket), so it spends buckets on the many tiny requests and pads the common mid-size and "
    "the tail; SERVE_CASES[0] (60, 0, k=4) pads to 1.73x the unpadded rows (budget 1.5), and on "
    "a drawn stream with half the requests at size 92 (k=3) it picks 7, 26, 200: 1.77x the "
    "optimum's rows.",
)
def _rt14_serve_relative_waste_dp(
    requests: list, run: Callable, max_compiles: int
) -> list[np.ndarray]:
    sizes = [int(np.shape(x)[0]) for x, _ in requests]
    s = sorted(set(sizes))
    inv = {v: 0.0 for v in s}
    for v in sizes:
        inv[v] += 1.0 / v
    pre = np.concatenate([[0.0], np.cumsum([inv[v] for v in s])])

    def cost(i, j):
        return s[j] * (pre[j + 1] - pre[i])

    n = len(s)
    dp = {(1, j): (cost(0, j), [s[j]]) for j in range(n)}
    for m in range(2, max_compiles + 1):
        for j in range(n):
            best = dp[(m - 1, j)]
            for i in range(j):
                v = dp[(m - 1, i)][0] + cost(i + 1, j)
                if v < best[0]:
                    best = (v, dp[(m - 1, i)][1] + [s[j]])
            dp[(m, j)] = best
    return _rt14_answer(requests, run, dp[(max_compiles, n - 1)][1])


@wrong(
    "serve",
    why="Clause 'within 5% of the padded flops of the best max_compiles buckets': clusters the "
    "sizes with 1-D k-means (count-weighted, squared distance) and uses each cluster's largest "
    "size as a bucket; k-means balances distances, not padded rows, so the tail's cluster drags "
    "mid sizes up; it meets the listed factors, but on a drawn stream with half the requests at "
    "size 27 (k=4) it picks 11, 23, 103, 200 and pads 2.36x the optimum's rows.",
)
def _rt14_serve_kmeans_buckets(
    requests: list, run: Callable, max_compiles: int
) -> list[np.ndarray]:
    a = np.array(sorted(int(np.shape(x)[0]) for x, _ in requests), float)
    cent = np.quantile(a, np.linspace(0, 1, max_compiles))
    for _ in range(50):
        lab = np.argmin(np.abs(a[:, None] - cent[None]), 1)
        for j in range(max_compiles):
            if (lab == j).any():
                cent[j] = a[lab == j].mean()
    lab = np.argmin(np.abs(a[:, None] - cent[None]), 1)
    buckets = sorted({int(a[lab == j].max()) for j in range(max_compiles) if (lab == j).any()})
    return _rt14_answer(requests, run, buckets)


@wrong(
    "serve",
    why="Clause 'count the requests, not only the sizes' / 'within 5% of the best buckets': "
    "log-spaced buckets between the smallest and the largest size (np.geomspace, rounded up), a "
    "fixed recipe that ignores where the requests are; on a stream where one size is common "
    "(SERVE_CASES[0]: 2.64x the unpadded rows, budget 1.5; half the requests at 17, k=3: "
    "buckets 1, 15, 200, so they pad to 200).",
)
def _rt14_serve_geomspace(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    sizes = [int(np.shape(x)[0]) for x, _ in requests]
    lo, hi = min(sizes), max(sizes)
    buckets = sorted({int(math.ceil(v)) for v in np.geomspace(lo, hi, max_compiles)} | {hi})
    return _rt14_answer(requests, run, buckets)


# ---- rollout ----------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="Clause 'the result has the original's dtype and values (x bfloat16 with w float32 is "
    "float32 from the first step on)': the carry's dtype is taken from x and b only and each dot "
    "asks preferred_element_type=carry dtype to keep the scan's carry stable; with w float32, "
    "b and x bfloat16 the original is float32 but this returns bfloat16 (max diff ~5e-3 on "
    "rollout_args(dtypes=('float32','bfloat16','bfloat16'))).",
)
def _rt14_rollout_dot_in_state_dtype(w, b, x) -> jax.Array:
    carry = jnp.result_type(x, b)
    x = x.astype(carry)

    def trip(x, _):
        for _ in range(4):
            x = jnp.tanh(jnp.dot(x, w, preferred_element_type=x.dtype) + b).astype(carry)
        return x, None

    return jax.lax.scan(trip, x, length=8)[0]


# ---- remat ------------------------------------------------------------------------------------


def _rt14_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="Clause 'the budget tests run ... a drawn depth 4 (width 32 to 64)': only blocks whose "
    "hidden layer is at least 256 wide are checkpointed ('narrow blocks save nothing worth the "
    "flops'); every listed case (width >= 64) is checkpointed, but on the drawn depth 4 width 48 "
    "batch 400 nothing is, and the grad keeps 100% of the original's temp bytes.",
)
def _rt14_remat_wide_blocks_only(params: list, x) -> jax.Array:
    for p in params:
        if p[0].shape[1] >= 256:
            x = jax.checkpoint(_rt14_block)(p, x)
        else:
            x = _rt14_block(p, x)
    return jnp.mean(x**2)


# ---- sharded_mlp ------------------------------------------------------------------------------


@wrong(
    "sharded_mlp",
    why="Clause 'the same result': each device computes x @ w1_local @ w2_local and the relu is "
    "applied once after the psum ('elementwise commutes with the reduction'); relu(sum) != "
    "sum(relu(...) @ w2), so the values differ on sharded_args() (any case).",
)
def _rt14_sharded_relu_after_psum(x, w1, w2) -> jax.Array:
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def local(x, w1, w2):
        return jax.lax.psum(x @ w1 @ w2, "x")

    f = jax.shard_map(local, mesh=mesh, in_specs=(P(), P(None, "x"), P("x", None)), out_specs=P())
    return jax.nn.relu(f(x, w1, w2))


# ---- roofline ---------------------------------------------------------------------------------


def _rt14_roof(program, shapes, dtype, chip, *, reduce_from_input=False, scale_ops=2):
    item = 2 if dtype == "bfloat16" else 4
    size = [math.prod(s) for s in shapes]
    bf = dtype == "bfloat16"
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops, out = 2 * m * k * n, m * n
    elif program == "batched_matmul":
        (bb, m, k), (_, _, n) = shapes
        flops, out = 2 * bb * m * k * n, bb * m * n
    elif program == "matvec":
        (m, k), _ = shapes
        flops, out = 2 * m * k, m
    elif program == "add":
        flops, out = size[0], size[0]
    elif program == "scale_add":
        flops, out = scale_ops * size[0], size[0]
    elif program == "row_sums":
        r, c = shapes[0]
        out = r
        flops = (r * c - 1) if reduce_from_input else r * max(c - 1, 0)
        if bf:
            flops += r * c + r
    else:  # total
        n = size[0]
        out = 1
        flops = max(n - 1, 0) + ((n + 1) if bf else 0)
    nbytes = (sum(size) + out) * item
    intensity = flops / nbytes if nbytes else 0.0
    peak, bw = _rt14_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bw else "memory"),
    )


@wrong(
    "roofline",
    why="Clause 'flops as the cost model counts the program': row_sums is costed as one sum over "
    "all its elements (rows*cols - 1 adds, 'a sum of n numbers needs n - 1') instead of cols - 1 "
    "per row; on row_sums of (100, 2) float32 the cost model says 100 flops, this says 199.",
)
def _rt14_roofline_reduce_from_input(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    return _rt14_roof(program, shapes, dtype, chip, reduce_from_input=True)


@wrong(
    "roofline",
    why="Clause 'flops as the cost model counts the program as written': scale_add is costed 3 "
    "flops per element (the broadcast of 2.0 counted as an op beside the multiply and the add); "
    "the cost model counts only the multiply and the add: scale_add of (3, 5) float32 is 30 "
    "flops, this says 45 (and the intensity 1.5x too high).",
)
def _rt14_roofline_scale_broadcast_op(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    return _rt14_roof(program, shapes, dtype, chip, scale_ops=3)


@wrong(
    "serve",
    why="Clause 'within 5% of the padded flops of the best max_compiles buckets': recursive "
    "median bisection (split the group with the most padded rows at its request-count median "
    "until there are max_compiles groups, each padded to its largest size); a median split is "
    "not the best split point: SERVE_CASES[0] (k=4) pads to 1.70x the unpadded rows (budget "
    "1.5), and on a drawn stream with half the requests at size 4 (k=3) it picks 4, 15, 200: "
    "2.28x the optimum's rows.",
)
def _rt14_serve_median_bisection(
    requests: list, run: Callable, max_compiles: int
) -> list[np.ndarray]:
    sizes = sorted(int(np.shape(x)[0]) for x, _ in requests)
    groups = [sizes]
    while len(groups) < max_compiles:
        waste = [sum(g[-1] - v for v in g) if len(set(g)) > 1 else -1 for g in groups]
        i = int(np.argmax(waste))
        if waste[i] <= 0:
            break
        g = groups.pop(i)
        cut = len(g) // 2
        while 0 < cut < len(g) and g[cut - 1] == g[cut]:
            cut += 1
        if cut >= len(g):
            cut = len(g) // 2
            while cut > 0 and g[cut - 1] == g[cut]:
                cut -= 1
        if cut <= 0:
            groups.insert(i, g)
            break
        groups[i:i] = [g[:cut], g[cut:]]
    return _rt14_answer(requests, run, [g[-1] for g in groups])
