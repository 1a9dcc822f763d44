"""Round 12 red-team wrong answers for phase 13 (written from README, kata.py, tasks.toml and
programs.py only)."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT12_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
_RT12_LR = 1e-3


# ---- roofline -----------------------------------------------------------------------------------


def _rt12_roof(program, shapes, dtype, chip, *, ridge=None, per_flop=False, square=False):
    """The README's model: 2 per multiply-add, 1 per add/multiply, bf16 sums convert in and out."""
    item = 2 if dtype == "bfloat16" else 4
    bf = dtype == "bfloat16"
    if program == "matmul":
        (m, k), (_, n) = shapes
        if square:
            n = m
        flops, elems = 2 * m * k * n, m * k + k * n + m * n
    elif program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        flops, elems = 2 * b * m * k * n, b * (m * k + k * n + m * n)
    elif program == "matvec":
        (m, k), _ = shapes
        flops, elems = 2 * m * k, m * k + k + m
    elif program in ("add", "scale_add"):
        n = math.prod(shapes[0])
        flops, elems = (1 if program == "add" else 2) * n, 3 * n
    elif program == "row_sums":
        r, c = shapes[0]
        flops, elems = r * max(c - 1, 0) + ((r * c + r) if bf else 0), r * c + r
    else:  # total
        n = math.prod(shapes[0])
        flops, elems = max(n - 1, 0) + ((n + 1) if bf else 0), n + 1
    nbytes = elems * item
    peak, bw = _RT12_PEAKS[chip]
    ridge_point = peak / bw if ridge is None else ridge[chip]
    intensity = flops / nbytes if nbytes else 0.0
    bound = "compute" if intensity > ridge_point else "memory"
    if per_flop:
        intensity = nbytes / flops if flops else 0.0
    return float(flops), float(nbytes), float(intensity), bound


@wrong(
    "roofline",
    why="'intensity above the ridge point PEAKS[chip] gives (peak flop/s over bytes/s)': the ridge "
    "taken from the datasheet numbers as printed, 197 TFLOP/s over 819 GB/s = 0.24 (and "
    "989/3350 = 0.30 for h100), units dropped: float32 add / scale_add and big matmuls still come "
    "out right, but matvec float32 (1024, 1024) @ (1024,) (intensity ~0.5) is 'compute' instead "
    "of 'memory', and so is total bfloat16 (4096,) (intensity ~1)",
)
def _rt12_roofline_tera_giga_ridge(program, shapes, dtype, chip):
    return _rt12_roof(program, shapes, dtype, chip, ridge={"v5e": 197 / 819, "h100": 989 / 3350})


@wrong(
    "roofline",
    why="'(flops, bytes, arithmetic intensity, ...)': arithmetic intensity is flops per byte; this "
    "returns bytes per flop (the 'cost of one flop in memory traffic'), bound still decided "
    "right: add float32 (64, 64) gives intensity 12.0 instead of 0.0833, matmul float32 "
    "(256,256)@(256,256) 0.0234 instead of 42.7",
)
def _rt12_roofline_bytes_per_flop(program, shapes, dtype, chip):
    return _rt12_roof(program, shapes, dtype, chip, per_flop=True)


@wrong(
    "roofline",
    why="'(m, k) @ (k, n)': reads n off the first operand, as if the output were square "
    "(m, m): right for every square test shape, but matmul float32 (64, 128) @ (128, 256) gives "
    "2*64*128*64 = 1048576 flops instead of 4194304, and bytes count a (64, 64) output",
)
def _rt12_roofline_matmul_square_assumed(program, shapes, dtype, chip):
    return _rt12_roof(program, shapes, dtype, chip, square=True)


@wrong(
    "roofline",
    why="'(flops, bytes, arithmetic intensity, ...)' compared within 5%: intensity rounded to one "
    "decimal as a roofline plot labels it: fine for matmuls, but add float32 (64, 64) gives 0.1 "
    "instead of 0.0833 (20% off), add bfloat16 0.2 instead of 0.1667, total float32 (3,) 0.1 instead of "
    "0.125",
)
def _rt12_roofline_rounded_intensity(program, shapes, dtype, chip):
    f, b, i, bound = _rt12_roof(program, shapes, dtype, chip)
    return f, b, round(i, 1), bound


# ---- mixed_step ---------------------------------------------------------------------------------


def _rt12_mlp_data16(params, x):
    (w1, b1), (w2, b2) = params
    h = jax.nn.gelu(x.astype(jnp.bfloat16) @ w1 + b1)
    return h @ w2 + b2


@wrong(
    "mixed_step",
    why="'bytes accessed at most 3/4 of the f32 step's': casts the data (x, y) to bfloat16 and "
    "keeps the weights float32 ('the params stay f32'), so every dot is bf16 @ f32, promoted: "
    "a convert per dot and every activation still f32; MIXED_CASES[0] (1024, 256, 1024) has "
    "402 MB accessed against the f32 step's 394 MB (102%, not <= 75%)",
)
def _rt12_mixed_bf16_data_f32_weights(params: tuple, x, y) -> tuple:
    def loss_fn(p):
        return jnp.mean((_rt12_mlp_data16(p, x) - y.astype(jnp.bfloat16)) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    new = jax.tree.map(lambda p, g: p - _RT12_LR * g, params, grads)
    return new, loss.astype(jnp.float32)


def _rt12_mlp_gelu_f32_inside(params, x):
    (w1, b1), (w2, b2) = params
    bf, f32 = jnp.bfloat16, jnp.float32
    pre = (jnp.dot(x.astype(bf), w1.astype(bf), preferred_element_type=f32) + b1).astype(bf)
    h = jax.nn.gelu(pre.astype(f32)).astype(bf)  # "upcast for the nonlinearity, store bf16"
    return jnp.dot(h, w2.astype(bf), preferred_element_type=f32) + b2


@wrong(
    "mixed_step",
    why="'bytes accessed at most 3/4 of the f32 step's': activations stored bfloat16 between ops "
    "and dots bf16 x bf16 -> f32, but gelu evaluated in float32 and rounded back (as AMP "
    "autocast lists do for nonlinearities): each convert up and down is a read and a write in "
    "the lowered module, forward and backward: MIXED_CASES[0] accesses 115% of the f32 step's "
    "bytes (all three cases 115%), not <= 75%",
)
def _rt12_mixed_gelu_upcast(params: tuple, x, y) -> tuple:
    def loss_fn(p):
        return jnp.mean((_rt12_mlp_gelu_f32_inside(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    new = jax.tree.map(lambda p, g: p - _RT12_LR * g, params, grads)
    return new, loss


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'at most 40% of the unrolled original's instructions, by a loop that runs at most 8 "
    "trips': unroll=12 ('3 trips of 12 cover 32'), but 12 does not divide 32: the scan runs 2 "
    "trips of 12 steps and 8 more steps unrolled outside the loop, 20 copies of the step: 227 of the "
    "original's 323 optimized instructions (70%): rollout_args() float32 (16, 64)",
)
def _rt12_rollout_unroll12(w, b, x) -> jax.Array:
    dtype = jnp.result_type(w, b, x)
    x = x.astype(dtype)

    def step(c, _):
        return jnp.tanh(c @ w + b), None

    out, _ = jax.lax.scan(step, x, None, length=32, unroll=12)
    return out


# ---- serve --------------------------------------------------------------------------------------


def _rt12_best_buckets(sizes: list[int], k: int) -> list[int]:
    distinct = sorted(set(sizes))
    counts = [sizes.count(s) for s in distinct]
    n = len(distinct)
    k = max(1, min(k, n))
    prefix = [0]
    for c in counts:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    best = [[inf] * n for _ in range(k + 1)]
    back = [[-1] * n for _ in range(k + 1)]
    for j in range(n):
        best[1][j] = prefix[j + 1] * distinct[j]
    for b in range(2, k + 1):
        for j in range(n):
            for i in range(j):
                c = best[b - 1][i] + (prefix[j + 1] - prefix[i + 1]) * distinct[j]
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
    why="'In all, at most max_compiles compiles' ('the host may pad'): the best buckets, but the "
    "padding is jnp.pad on the device, an eager op that compiles one small program per distinct "
    "(request size, bucket) pair: SERVE_CASES[0] (60 requests, 4 allowed) compiles run 4 times "
    "and pad dozens of times",
)
def _rt12_serve_device_pad(requests: list, run: Callable, max_compiles: int) -> list:
    sizes = [int(x.shape[0]) for x, _ in requests]
    buckets = _rt12_best_buckets(sizes, max_compiles)
    out = []
    for x, bias in requests:
        n, width = x.shape
        bucket = next(b for b in buckets if b >= n)
        xp = jnp.pad(jnp.asarray(x), ((0, bucket - n), (0, 0)))
        bb = np.zeros(width, np.float32) if bias is None else bias
        out.append(np.asarray(run(xp, bb))[:n])
    return out


@wrong(
    "serve",
    why="'In all, at most max_compiles compiles' ('the host may ... slice'): pads on the host, "
    "but slices the padded answer on the device (run(...)[:n] then np.asarray): a jax.Array "
    "slice compiles a program per distinct (bucket, n): SERVE_CASES[0] compiles far more than 4",
)
def _rt12_serve_device_slice(requests: list, run: Callable, max_compiles: int) -> list:
    sizes = [int(x.shape[0]) for x, _ in requests]
    buckets = _rt12_best_buckets(sizes, max_compiles)
    out = []
    for x, bias in requests:
        n, width = x.shape
        bucket = next(b for b in buckets if b >= n)
        xp = np.zeros((bucket, width), np.float32)
        xp[:n] = x
        bb = np.zeros(width, np.float32) if bias is None else bias
        out.append(np.asarray(run(xp, bb)[:n]))
    return out


@wrong(
    "serve",
    why="'In all, at most max_compiles compiles' (zeros where a request has no bias): the best "
    "max_compiles buckets, and one zero bias made up front on the device with jnp.zeros "
    "('keep it on device, no transfer per call'): that eager op is one more compile, and a "
    "committed device array and a host NumPy bias are different jit cache keys, so every bucket "
    "that sees both kinds compiles run twice: on SERVE_CASES[0] run's cache holds 8 programs "
    "for 4 allowed (SERVE_CASES[1]: 10 for 5, [2]: 5 for 3)",
)
def _rt12_serve_device_zero_bias(requests: list, run: Callable, max_compiles: int) -> list:
    sizes = [int(x.shape[0]) for x, _ in requests]
    buckets = _rt12_best_buckets(sizes, max_compiles)
    width = int(requests[0][0].shape[1])
    zero = jnp.zeros((width,), jnp.float32)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        bucket = next(b for b in buckets if b >= n)
        xp = np.zeros((bucket, width), np.float32)
        xp[:n] = x
        out.append(np.asarray(run(xp, zero if bias is None else bias))[:n])
    return out
