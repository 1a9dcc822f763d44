"""Phase 13, red team round 7: wrong answers of kinds not tried before."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt7_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
_rt7_STEPS = 32


# ---- remat ---------------------------------------------------------------------------------------


def _rt7_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="'the budget tests run ... a drawn depth 4': checkpoints only nets deeper than 4 blocks "
    "('README: shallower nets share the saving, remat does not pay there'), so at depth 4 "
    "(width 48, batch 448) the grad keeps every hidden layer: ~100% of the original's temp bytes",
)
def _rt7_remat_skip_shallow(params: list, x) -> jax.Array:
    body = jax.checkpoint(_rt7_block) if len(params) > 4 else _rt7_block
    for p in params:
        x = body(p, x)
    return jnp.mean(x**2)


# ---- mixed precision -----------------------------------------------------------------------------


def _rt7_mse(params, x, y):
    (w1, b1), (w2, b2) = params
    return jnp.mean((jax.nn.gelu(x @ w1 + b1) @ w2 + b2 - y) ** 2)


@wrong(
    "mixed_step",
    why="'every dot's operands are bfloat16 ... bytes accessed at most 3/4': asks for bf16 "
    "through jax.default_matmul_precision('bfloat16') on the f32 step: a precision flag on f32 "
    "operands, so the lowered module's dots still read f32 and its bytes stay 100% of the f32 "
    "step's (any MIXED_CASES case)",
)
def _rt7_mixed_matmul_precision(params: tuple, x, y) -> tuple:
    with jax.default_matmul_precision("bfloat16"):
        loss, grads = jax.value_and_grad(_rt7_mse)(params, x, y)
        new = jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
    return new, loss


# ---- rollout -------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'w, b and x may each be float32 or bfloat16 ... the result has the original's dtype': "
    "takes the carry's type from x and w only (jnp.promote_types(x.dtype, w.dtype)) and casts "
    "each step back to it; with w, x bfloat16 and b float32 the original is float32 from its "
    "first step on, this returns bfloat16",
)
def _rt7_rollout_ignores_b(w, b, x) -> jax.Array:
    dtype = jnp.promote_types(x.dtype, w.dtype)

    def step(c, _):
        return jnp.tanh(c @ w + b).astype(dtype), None

    out, _ = jax.lax.scan(step, x.astype(dtype), None, length=_rt7_STEPS, unroll=4)
    return out


# ---- sharded_mlp ---------------------------------------------------------------------------------


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': drops the replicated hidden layer but "
    "'avoids the all-reduce' by all-gathering every device's partial product (8, batch, width) "
    "and summing locally: 8 x batch x width per device: 160% of the original on (16, 128, 512), "
    "68% on (8, 96, 1024)",
)
def _rt7_sharded_gather_partials(x, w1, w2) -> jax.Array:
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(), P(None, "x"), P("x", None)),
        out_specs=P(),
        check_vma=False,
    )
    def local(xl, w1l, w2l):
        part = jax.nn.relu(xl @ w1l) @ w2l
        return jax.lax.all_gather(part, "x").sum(axis=0)

    return local(x, w1, w2)


# ---- roofline ------------------------------------------------------------------------------------


def _rt7_size(shape):
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def _rt7_roof(
    program,
    shapes,
    dtype,
    chip,
    *,
    mac=False,
    fma=False,
    matvec_v_rows=False,
    batched_out=False,
    accum_out=False,
):
    item = 2 if dtype == "bfloat16" else 4
    out_item = 4 if accum_out else item
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops = 2 * m * k * n
        byts = item * (m * k + k * n) + out_item * m * n
    elif program == "batched_matmul":
        (bb, m, k), (_, _, n) = shapes
        flops = 2 * bb * m * k * n
        out = m * n if batched_out else bb * m * n
        byts = item * (bb * m * k + bb * k * n) + out_item * out
    elif program == "matvec":
        (m, k), _ = shapes
        flops = 2 * m * k
        v = m if matvec_v_rows else k
        byts = item * (m * k + v) + out_item * m
    elif program == "add":
        n = _rt7_size(shapes[0])
        flops = n
        byts = 3 * item * n
    elif program == "scale_add":
        n = _rt7_size(shapes[0])
        flops = n if fma else 2 * n
        byts = 3 * item * n
    elif program == "row_sums":
        rows, cols = shapes[0]
        flops = rows * (cols - 1) + (rows * cols + rows if dtype == "bfloat16" else 0)
        byts = item * (rows * cols + rows)
    else:  # total
        n = _rt7_size(shapes[0])
        flops = (n - 1) + (n + 1 if dtype == "bfloat16" else 0)
        byts = item * (n + 1)
    if mac and program in ("matmul", "batched_matmul", "matvec"):
        flops //= 2
    peak, bw = _rt7_PEAKS[chip]
    intensity = flops / byts
    return (
        float(flops),
        float(byts),
        float(intensity),
        ("compute" if intensity > peak / bw else "memory"),
    )


@wrong(
    "roofline",
    why="'flops as the cost model counts the program as written': counts 2 * a + b as one fused "
    "multiply-add per element (an FMA 'is one op'); the cost model counts the multiply and the "
    "add: scale_add on (64, 128) float32 is 16384 flops, this says 8192",
)
def _rt7_roofline_fma(program, shapes, dtype, chip):
    return _rt7_roof(program, shapes, dtype, chip, fma=True)


@wrong(
    "roofline",
    why="'2 per multiply-add of a dot': counts a dot's multiply-adds as one flop each ('a MAC "
    "is one tensor-core op'); every matmul's flops are half the cost model's, and the bound "
    "flips: (1024, 1024) @ (1024, 1024) bfloat16 has intensity 341 > v5e's ridge 240 "
    "(compute), this says 171 (memory)",
)
def _rt7_roofline_mac_once(program, shapes, dtype, chip):
    return _rt7_roof(program, shapes, dtype, chip, mac=True)


@wrong(
    "roofline",
    why="'matvec: (m, k) @ (k,)': reads the vector's length from a's first axis (m) instead of "
    "k; right when a is square, wrong on a wide matrix: (4096, 8) @ (8,) float32 moves "
    "(32768 + 8 + 4096) * 4 bytes, this says (32768 + 4096 + 4096) * 4 (11% more)",
)
def _rt7_roofline_matvec_rows(program, shapes, dtype, chip):
    return _rt7_roof(program, shapes, dtype, chip, matvec_v_rows=True)


@wrong(
    "roofline",
    why="'each input read once, the output written once': batched_matmul writes its output as "
    "one (m, n) matrix, forgetting the batch; (16, 64, 64) @ (16, 64, 64) float32 moves "
    "3*16*64*64*4 bytes, this says 2*16*64*64*4 + 64*64*4 (~35% fewer)",
)
def _rt7_roofline_batched_out_once(program, shapes, dtype, chip):
    return _rt7_roof(program, shapes, dtype, chip, batched_out=True)


@wrong(
    "roofline",
    why="'bytes ... in the argument's dtype': writes a bfloat16 matmul's output as float32 "
    "('the dot accumulates in f32'); jnp's bf16 a @ b returns bf16, so (512, 512) @ (512, 512) "
    "bfloat16 moves 3*512*512*2 bytes, this says 4/3 of that (intensity 128 instead of ~171)",
)
def _rt7_roofline_f32_matmul_out(program, shapes, dtype, chip):
    return _rt7_roof(
        program, shapes, dtype, chip, accum_out=program in ("matmul", "batched_matmul", "matvec")
    )


# ---- serve ---------------------------------------------------------------------------------------


def _rt7_best_buckets(sizes, k):
    """Weighted optimal buckets (dynamic programme over the distinct sizes)."""
    values, counts = np.unique(np.asarray(sizes), return_counts=True)
    d = len(values)
    k = min(k, d)
    inf = float("inf")
    cost = [[inf] * (d + 1) for _ in range(k + 1)]
    back = [[0] * (d + 1) for _ in range(k + 1)]
    cost[0][0] = 0.0
    for j in range(1, k + 1):
        for i in range(1, d + 1):
            for s in range(j - 1, i):
                if cost[j - 1][s] == inf:
                    continue
                c = cost[j - 1][s] + float(values[i - 1]) * counts[s:i].sum()
                if c < cost[j][i]:
                    cost[j][i], back[j][i] = c, s
    best_j = min(range(1, k + 1), key=lambda j: cost[j][d])
    out, i, j = [], d, best_j
    while j > 0:
        out.append(int(values[i - 1]))
        i, j = back[j][i], j - 1
    return sorted(out)


@wrong(
    "serve",
    why="'padded flops within 5% of the best max_compiles buckets' (a drawn stream where one size "
    "is far more common): takes the best buckets and rounds each up to a multiple of 8 rows "
    "'for alignment' (TPU sublanes); on a stream where most requests have 3 rows the bucket 3 "
    "becomes 8, ~2.5x the best buckets' padded flops (4-6% over already on SERVE_CASES)",
)
def _rt7_serve_align8(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    sizes = [x.shape[0] for x, _ in requests]
    buckets = sorted({-(-b // 8) * 8 for b in _rt7_best_buckets(sizes, max_compiles)})
    zeros = np.zeros(requests[0][0].shape[1], np.float32)
    out = []
    for x, bias in requests:
        n, width = x.shape
        size = next(b for b in buckets if b >= n)
        padded = np.zeros((size, width), np.float32)
        padded[:n] = x
        y = run(padded, zeros if bias is None else bias)
        out.append(np.asarray(y)[:n])
    return out


# ---- donation ------------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="'at most 55% of its peak memory ... after a call the old state's buffers are deleted': "
    "jits the donating jit again ('jit the step once more so the caller gets a plain jit'): "
    "the outer jax.jit donates nothing, the inner one's donation is dropped inside a trace, so "
    "the lowered module aliases nothing (peak ~100%) and the state survives the call",
)
def _rt7_donate_nested_jit(step):
    return jax.jit(jax.jit(step, donate_argnums=0))


@wrong(
    "serve",
    why="'padded flops within the factor the test states': keeps None as its own structure and "
    "splits the compiles between the two (max_compiles // 2 best buckets each, so the compile "
    "count holds); padding the bias with zeros would merge them, so here each structure gets "
    "half the buckets: SERVE_CASES (40, 2, 3): one bucket per structure, the largest (200), "
    "far above the 1.8 factor",
)
def _rt7_serve_split_by_structure(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    per = max(1, max_compiles // 2)
    groups = {True: [], False: []}
    for x, bias in requests:
        groups[bias is None].append(x.shape[0])
    buckets = {k: _rt7_best_buckets(v, per) for k, v in groups.items() if v}
    out = []
    for x, bias in requests:
        n, width = x.shape
        size = next(b for b in buckets[bias is None] if b >= n)
        padded = np.zeros((size, width), np.float32)
        padded[:n] = x
        out.append(np.asarray(run(padded, bias))[:n])
    return out
