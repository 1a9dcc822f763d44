"""Round 9 red-team wrong answers for phase 13 (written from README, kata.py, tasks.toml, programs.py)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT9_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt9_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


def _rt9_blocks(ps, x):
    for p in ps:
        x = _rt9_block(p, x)
    return x


@wrong(
    "remat_loss",
    why="'at most 25% more flops': textbook sqrt(n) checkpointing, segments of ceil(sqrt(depth)) "
    "blocks each checkpointed as a whole: the backward pass recomputes each segment's whole "
    "forward (both matmuls of every block but the segment's last), not only x @ w1; and at depth 4 "
    "(segments of 2) the recomputed segment keeps two blocks' hidden layers at once, so the temp "
    "bytes miss half the original's (measured: depth 8 width 128 batch 256 costs 128% of the flops; depth 4 width 48 batch 400 keeps 60% of the temp bytes)",
)
def _rt9_remat_sqrt_segments(params: list, x) -> jax.Array:
    seg = max(1, math.ceil(math.sqrt(len(params))))
    for i in range(0, len(params), seg):
        x = jax.checkpoint(_rt9_blocks)(list(params[i : i + seg]), x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'the same value and the same gradients': checkpoints every block (budget met) but "
    "takes the mean over the batch only (sum of squares / batch, 'mean loss per example'): the "
    "value and every gradient are width times the original's (width 128: 128x)",
)
def _rt9_remat_mean_per_example(params: list, x) -> jax.Array:
    for p in params:
        x = jax.checkpoint(_rt9_block)(p, x)
    return jnp.sum(x**2) / x.shape[0]


# ---- mixed_step ---------------------------------------------------------------------------------


def _rt9_rp(a):
    return jax.lax.reduce_precision(a, exponent_bits=8, mantissa_bits=7)


def _rt9_mse_rp(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jax.nn.gelu(_rt9_rp(x) @ _rt9_rp(w1) + b1)
    out = _rt9_rp(h) @ _rt9_rp(w2) + b2
    return jnp.mean((out - y) ** 2)


@wrong(
    "mixed_step",
    why="'every dot's operands are bfloat16 ... bytes accessed at most 3/4': rounds the dot "
    "operands to bf16 precision with lax.reduce_precision (exponent 8, mantissa 7), which keeps "
    "them float32 arrays: the numerics of bf16 but no byte saved (bytes accessed grow with the "
    "extra reduce-precision ops) and both forward dots fed f32 (first MIXED_CASE)",
)
def _rt9_mixed_reduce_precision(params: tuple, x, y) -> tuple:
    loss, grads = jax.value_and_grad(_rt9_mse_rp)(params, x, y)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'32 steps': peels the first step outside the loop to fix the carry's dtype (x = "
    "tanh(x @ w + b) once), then runs a scan of 8 trips of 4 steps (unroll=4): 33 steps in all; "
    "rollout_args() float32 differs from the original by 0.28 at most",
)
def _rt9_rollout_peel_off_by_one(w, b, x) -> jax.Array:
    x = jnp.tanh(x @ w + b)

    def body(c, _):
        return jnp.tanh(c @ w + b).astype(c.dtype), None

    x, _ = jax.lax.scan(body, x, None, length=32, unroll=4)
    return x


# ---- roofline -----------------------------------------------------------------------------------


def _rt9_roof(program, shapes, dtype, chip, *, sum_out_convert=True, dot_converts=False):
    isz = 2 if dtype == "bfloat16" else 4
    bf = dtype == "bfloat16"
    sizes = [math.prod(s) for s in shapes]
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
        flops, out = sizes[0], sizes[0]
    elif program == "scale_add":
        flops, out = 2 * sizes[0], sizes[0]
    elif program == "row_sums":
        rows, cols = shapes[0]
        out = rows
        flops = rows * (cols - 1)
        if bf:
            flops += rows * cols + (rows if sum_out_convert else 0)
    elif program == "total":
        n = sizes[0]
        out = 1
        flops = max(n - 1, 0)
        if bf:
            flops += n + (1 if sum_out_convert else 0)
    else:
        raise KeyError(program)
    if dot_converts and bf and program in ("matmul", "batched_matmul", "matvec"):
        flops += sum(sizes) + out  # widen both operands, narrow the result
    nbytes = (sum(sizes) + out) * isz
    intensity = flops / nbytes
    peak, bw = _RT9_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        "compute" if intensity > peak / bw else "memory",
    )


@wrong(
    "roofline",
    why="'a bfloat16 jnp.sum accumulates in float32: read which converts that adds': counts the "
    "convert of the input to f32 but not the convert of the f32 result back to bf16 (one per "
    "output row); right within 5% for wide rows, wrong for narrow ones: row_sums bf16 (64, 2) "
    "gives 192 flops, the lowered module counts 256",
)
def _rt9_roofline_no_output_convert(program, shapes, dtype, chip):
    return _rt9_roof(program, shapes, dtype, chip, sum_out_convert=False)


@wrong(
    "roofline",
    why="'a dot converts only what its own lowered module converts': assumes a bf16 dot widens "
    "like a bf16 sum (converts of both operands and the result added to the flops); the lowered "
    "bf16 dot has no convert: matvec bf16 (8, 16) @ (16,) gives 408 flops against 256",
)
def _rt9_roofline_dot_converts(program, shapes, dtype, chip):
    return _rt9_roof(program, shapes, dtype, chip, dot_converts=True)


# ---- serve --------------------------------------------------------------------------------------


@wrong(
    "serve",
    why="'each answer is the rows run returned ... in a call given that request's bias (bias of "
    "shape (width,) or None)': packs the rows of all requests into fixed chunks of the largest "
    "request's size and passes a per-row bias matrix (chunk, width), zeros for rows without "
    "bias: one compile, almost no padding, but run is called with a bias that is no request's",
)
def _rt9_serve_rowwise_bias(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    width = requests[0][0].shape[1]
    chunk = max(x.shape[0] for x, _ in requests)
    xs = np.concatenate([x for x, _ in requests]).astype(np.float32)
    bs = np.concatenate(
        [
            np.broadcast_to(bias if bias is not None else np.zeros(width, np.float32), x.shape)
            for x, bias in requests
        ]
    ).astype(np.float32)
    total = xs.shape[0]
    padded = -(-total // chunk) * chunk
    xs = np.concatenate([xs, np.zeros((padded - total, width), np.float32)])
    bs = np.concatenate([bs, np.zeros((padded - total, width), np.float32)])
    out = np.concatenate(
        [np.asarray(run(xs[i : i + chunk], bs[i : i + chunk])) for i in range(0, padded, chunk)]
    )
    answers, at = [], 0
    for x, _ in requests:
        answers.append(np.asarray(out[at : at + x.shape[0]]))
        at += x.shape[0]
    return answers


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="'with at most 55% of its peak memory ... after a call the old state's buffers are "
    "deleted': declares the donation on an inner jit called inside the returned outer jit; "
    "the inner jit is inlined into the outer trace, whose arguments donate nothing: same peak "
    "as jax.jit(step), nothing deleted (momentum_args())",
)
def _rt9_donate_inner_jit(step):
    inner = jax.jit(step, donate_argnums=0)
    return jax.jit(lambda state, batch: inner(state, batch))


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="'finds every compile ... written there by the first': sets the directory and zero "
    "thresholds but jax_compilation_cache_max_size = 0 read as 'no limit' (-1 is no limit; 0 "
    "disables the cache): nothing is written, the second process misses",
)
def _rt9_cache_max_size_zero(cache_dir: str) -> dict:
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        "jax_compilation_cache_max_size": 0,
    }


@wrong(
    "rollout",
    why="'32 steps of x = tanh(x @ w + b)': reads scan's length as the number of trips "
    "('length=8 trips, unroll=4 steps each'): lax.scan(length=8, unroll=4) runs 8 steps in 2 "
    "trips, not 32; the result is 8 steps' (rollout_args() float32 differs from the original)",
)
def _rt9_rollout_length_as_trips(w, b, x) -> jax.Array:
    dtype = jnp.result_type(x, w, b)

    def body(c, _):
        return jnp.tanh(c @ w + b).astype(dtype), None

    out, _ = jax.lax.scan(body, x.astype(dtype), None, length=8, unroll=4)
    return out


# ---- sharded_mlp --------------------------------------------------------------------------------


def _rt9_shard_map():
    return (
        getattr(jax, "shard_map", None)
        or __import__("jax.experimental.shard_map", fromlist=["shard_map"]).shard_map
    )


@wrong(
    "sharded_mlp",
    why="'the same result': a shard_map where each device multiplies its column block of h by "
    "its row block of w2 (no all-gather, right) and then combines the partial products with "
    "lax.pmean ('average the devices' results') instead of lax.psum: every output is 1/8 of "
    "the original's (sharded_args())",
)
def _rt9_sharded_pmean(x, w1, w2) -> jax.Array:
    from jax.sharding import AxisType
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))

    def local(x, w1, w2):
        return jax.lax.pmean(jax.nn.relu(x @ w1) @ w2, "x")

    return _rt9_shard_map()(
        local, mesh=mesh, in_specs=(P(), P(None, "x"), P("x", None)), out_specs=P()
    )(x, w1, w2)
