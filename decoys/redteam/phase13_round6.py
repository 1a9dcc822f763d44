"""Phase 13, red team round 6: plausible wrong answers (different kinds from rounds 1-5)."""

from __future__ import annotations

import bisect

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT6_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt6_block_partial(p, x):
    w1, w2 = p
    # "checkpoint the wide part": only the hidden layer's producer is rematerialised
    h = jax.checkpoint(lambda x, w1: jnp.tanh(x @ w1))(x, w1)
    return x + h @ w2


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': checkpoints only the wide sub-expression "
    "tanh(x @ w1) of each block, whose OUTPUT h is still saved for w2's gradient (h^T g), so the "
    "grad keeps every wide hidden layer: REMAT_CASES[0] (8, 128, 256) keeps 4.72 MB temp bytes "
    "(100% of the original) while paying 17% more flops",
)
def _rt6_remat_loss_checkpoint_hidden_only(params: list, x) -> jax.Array:
    for p in params:
        x = _rt6_block_partial(p, x)
    return jnp.mean(x**2)


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'at most 40% of the unrolled original's instructions': peels the first step (to fix the "
    "carry's dtype) and scans the remaining 31 with unroll=8: 3 trips (ok) but the remainder "
    "of 7 steps is emitted outside the loop next to the 8-step body: 186 instructions against "
    "the original's 323 (58%) for w f32[64,64], x f32[16,64]",
)
def _rt6_rollout_peel_then_unroll8(w, b, x) -> jax.Array:
    x = jnp.tanh(x @ w + b)
    x, _ = jax.lax.scan(lambda c, _: (jnp.tanh(c @ w + b), None), x, None, length=31, unroll=8)
    return x


# ---- roofline -----------------------------------------------------------------------------------


def _rt6_size(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else 4


def _rt6_figures(program, shapes, dtype, *, out_bytes=None, scale_converts=False):
    s = _rt6_size(dtype)
    ob = out_bytes if out_bytes is not None else s
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops, inb, outn = 2 * m * k * n, (m * k + k * n), m * n
    elif program == "batched_matmul":
        (bb, m, k), (_, _, n) = shapes
        flops, inb, outn = 2 * bb * m * k * n, bb * (m * k + k * n), bb * m * n
    elif program == "matvec":
        (m, k), _ = shapes
        flops, inb, outn = 2 * m * k, m * k + k, m
    elif program == "add":
        n = int(np.prod(shapes[0]))
        flops, inb, outn = n, 2 * n, n
    elif program == "scale_add":
        n = int(np.prod(shapes[0]))
        flops, inb, outn = 2 * n, 2 * n, n
        if scale_converts and dtype == "bfloat16":
            flops += 2 * n  # "2.0 is a float32: a is widened and the result narrowed back"
    elif program == "row_sums":
        r, c = shapes[0]
        n = r * c
        flops, inb, outn = n + (n if dtype == "bfloat16" else 0), n, r
    else:  # total
        n = int(np.prod(shapes[0]))
        flops, inb, outn = n + (n if dtype == "bfloat16" else 0), n, 1
    byts = inb * s + outn * (ob if program in ("row_sums", "total") else s)
    return float(flops), float(byts)


@wrong(
    "roofline",
    why="'whether it is compute- or memory-bound on chip' with the published DENSE BF16 peak: "
    "for float32 it halves the flop peak ('f32 runs at half the bf16 rate'), moving the ridge "
    "from 240.5 to 120 on v5e: matmul (1024,1024)@(1024,1024) float32 (intensity 170.7) is "
    "answered 'compute' where the contract's ridge says 'memory'",
)
def _rt6_roofline_f32_half_peak(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    flops, byts = _rt6_figures(program, shapes, dtype)
    peak, bw = _RT6_PEAKS[chip]
    if dtype == "float32":
        peak = peak / 2
    ai = flops / byts
    return flops, byts, ai, "compute" if ai > peak / bw else "memory"


@wrong(
    "roofline",
    why="'bytes ... in the argument's dtype': a bfloat16 sum accumulates in float32, so this "
    "writes the output as float32 (4 bytes): row_sums of bfloat16 (1024, 4) gives 12288 bytes "
    "instead of 8192 + 2048 = 10240 (20% over), intensity 20% under",
)
def _rt6_roofline_sum_output_f32(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    flops, byts = _rt6_figures(program, shapes, dtype, out_bytes=4)
    peak, bw = _RT6_PEAKS[chip]
    ai = flops / byts
    return flops, byts, ai, "compute" if ai > peak / bw else "memory"


@wrong(
    "roofline",
    why="'flops as the cost model counts the program as written': treats the Python 2.0 in "
    "scale_add as float32, so a bfloat16 `a` would be widened and the result narrowed (2n extra "
    "converts); 2.0 is weakly typed and the multiply stays bf16: scale_add bfloat16 (64, 128) "
    "gives 32768 flops where the lowered module counts 16384",
)
def _rt6_roofline_weak_type_converts(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    flops, byts = _rt6_figures(program, shapes, dtype, scale_converts=True)
    peak, bw = _RT6_PEAKS[chip]
    ai = flops / byts
    return flops, byts, ai, "compute" if ai > peak / bw else "memory"


# ---- serve --------------------------------------------------------------------------------------


def _rt6_best_buckets(sizes: list[int], k: int) -> list[int]:
    """Bucket boundaries (sorted, the largest size last) minimising padded rows, weighted by count."""
    values, counts = np.unique(np.asarray(sizes), return_counts=True)
    values, counts = values.tolist(), counts.tolist()
    m = len(values)
    k = max(1, min(k, m))
    # cost(i, j): requests values[i..j] padded to values[j]
    pref_c = np.concatenate([[0], np.cumsum(counts)])
    pref_s = np.concatenate([[0], np.cumsum(np.asarray(values) * np.asarray(counts))])

    def cost(i, j):
        return values[j] * (pref_c[j + 1] - pref_c[i]) - (pref_s[j + 1] - pref_s[i])

    inf = float("inf")
    dp = [[inf] * m for _ in range(k + 1)]
    back = [[-1] * m for _ in range(k + 1)]
    for j in range(m):
        dp[1][j] = cost(0, j)
    for b in range(2, k + 1):
        for j in range(m):
            for i in range(j):
                c = dp[b - 1][i] + cost(i + 1, j)
                if c < dp[b][j]:
                    dp[b][j], back[b][j] = c, i
    best_b = min(range(1, k + 1), key=lambda b: dp[b][m - 1])
    out, j, b = [], m - 1, best_b
    while j >= 0 and b >= 1:
        out.append(values[j])
        j, b = back[b][j], b - 1
    return sorted(out)


def _rt6_run_padded(run, x, bias, bucket):
    n, width = x.shape
    xp = np.zeros((bucket, width), dtype=x.dtype)
    xp[:n] = x
    bp = np.zeros(width, dtype=x.dtype) if bias is None else bias
    return run(xp, bp)


@wrong(
    "serve",
    why="'Answer every request': groups the requests by bucket (sorted by size, to run each "
    "bucket's requests together) and returns the answers in that sorted order, not in the "
    "order of `requests`: any stream whose sizes are not already ascending (request_stream(60, "
    "0)) gets answer i for another request",
)
def _rt6_serve_sorted_order(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    buckets = _rt6_best_buckets([x.shape[0] for x, _ in requests], max_compiles)
    out = []
    for x, bias in sorted(requests, key=lambda r: r[0].shape[0]):
        n = x.shape[0]
        bucket = buckets[bisect.bisect_left(buckets, n)]
        out.append(np.asarray(_rt6_run_padded(run, x, bias, bucket))[:n])
    return out


@wrong(
    "serve",
    why="'padded flops within 5% of the best max_compiles buckets': the best buckets, but looked "
    "up with bisect_right, so a request exactly at a boundary (and the boundaries ARE the most "
    "common sizes) is padded to the NEXT bucket (the largest falls back to the largest): on a "
    "stream where one size dominates, that whole mass is padded a bucket up",
)
def _rt6_serve_bisect_right(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    buckets = _rt6_best_buckets([x.shape[0] for x, _ in requests], max_compiles)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        bucket = buckets[min(bisect.bisect_right(buckets, n), len(buckets) - 1)]
        out.append(np.asarray(_rt6_run_padded(run, x, bias, bucket))[:n])
    return out


@wrong(
    "serve",
    why="'as a NumPy array of shape (n, width)': slices run's jax.Array and returns it as is "
    "(a jax.Array, not a numpy.ndarray) for every request",
)
def _rt6_serve_returns_jax_arrays(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    buckets = _rt6_best_buckets([x.shape[0] for x, _ in requests], max_compiles)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        bucket = buckets[bisect.bisect_left(buckets, n)]
        out.append(_rt6_run_padded(run, x, bias, bucket)[:n])
    return out


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="'a second process ... finds every compile in the persistent compilation cache under "
    "cache_dir': the directory and both thresholds (0 s, 0 bytes) are right, but it also sets "
    "jax_enable_compilation_cache=False ('turn off the in-memory cache so the disk is read'): "
    "that flag switches the PERSISTENT cache off, so CACHE_CHILD run twice writes nothing and "
    "counts 0 hits and 0 misses",
)
def _rt6_cache_settings_disable_flag(cache_dir: str) -> dict[str, str | float | int | bool]:
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        "jax_enable_compilation_cache": False,
    }


@wrong(
    "roofline",
    why="'(b, m, k) @ (b, k, n)': batched_matmul reads n from the second operand's middle axis "
    "(shapes[1][1], which is k) instead of its last: right whenever k == n, wrong otherwise: "
    "batched_matmul ((4, 64, 32), (4, 32, 128)) float32 gives 2*4*64*32*32 = 524288 flops "
    "instead of 2097152 (and the output bytes for n=32)",
)
def _rt6_roofline_batched_wrong_axis(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    if program == "batched_matmul":
        (bb, m, k), (_, n, _) = shapes
        s = _rt6_size(dtype)
        flops = float(2 * bb * m * k * n)
        byts = float((bb * m * k + bb * k * shapes[1][2] + bb * m * n) * s)
    else:
        flops, byts = _rt6_figures(program, shapes, dtype)
    peak, bw = _RT6_PEAKS[chip]
    ai = flops / byts
    return flops, byts, ai, "compute" if ai > peak / bw else "memory"
