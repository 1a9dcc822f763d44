"""Red team, phase 13, round 16: a checkpoint around tanh alone, a policy that saves the named wide
layer, only the weights cast to bf16, a carry typed from x and b only, int32 shape arithmetic,
a top bucket fixed at the programs' largest, a scalar zero bias, a bucket plan cached by stream
length, a psum in place of the all-gather, and more."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name as _rt16_checkpoint_name

from kata_harness.decoys import wrong

_rt16_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
_rt16_STEPS = 32
_rt16_LR = 1e-3
_rt16_LARGEST = 200  # request_stream's `largest`
_rt16_PLANS: dict = {}


def _rt16_best_buckets(sizes, k, top=None):
    """Buckets (at most k) minimising the padded rows of `sizes`, weighted by count; with `top`
    the largest bucket is forced to be `top`."""
    vals, counts = np.unique(np.asarray(sizes), return_counts=True)
    vals, counts = [int(v) for v in vals], [int(c) for c in counts]
    if top is not None and top not in vals:
        vals.append(int(top))
        counts.append(0)
    m = len(vals)
    k = min(k, m)
    cum = np.concatenate([[0], np.cumsum(counts)])
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(k + 1)]
    back = [[0] * (m + 1) for _ in range(k + 1)]
    cost[0][0] = 0
    for j in range(1, k + 1):
        for i in range(1, m + 1):
            for s in range(i):
                c = cost[j - 1][s] + vals[i - 1] * (cum[i] - cum[s])
                if c < cost[j][i]:
                    cost[j][i], back[j][i] = c, s
    j = min(range(1, k + 1), key=lambda jj: cost[jj][m])
    i, out = m, []
    while i > 0:
        out.append(vals[i - 1])
        i = back[j][i]
        j -= 1
    return sorted(out)


def _rt16_answer(requests, run, buckets, zero):
    answers = []
    for x, bias in requests:
        n, width = x.shape
        size = next(b for b in buckets if b >= n)
        padded = np.zeros((size, width), np.float32)
        padded[:n] = x
        y = run(padded, bias if bias is not None else zero(width))
        answers.append(np.asarray(y)[:n])
    return answers


@wrong(
    "remat_loss",
    why="Clause 'at most half the original's temp bytes': recomputes 'the wide hidden layer' by "
    "wrapping only jnp.tanh in jax.checkpoint; the checkpoint's output (the tanh, as wide) is "
    "still kept for the @ w2 backward and its input x @ w1 (as wide) is kept to recompute it, so "
    "the grad keeps more, not less: 189% of the original's temp bytes at REMAT_CASES[0], 164% at "
    "depth 4, width 48, batch 448.",
)
def _rt16_remat_loss_tanh_only(params: list, x) -> jax.Array:
    for w1, w2 in params:
        x = x + jax.checkpoint(jnp.tanh)(x @ w1) @ w2
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="Clause 'at most half the original's temp bytes': reads hint 3's 'a policy that keeps "
    "exactly the arrays the budget is about' as saving the named wide layer: checkpoint_name(tanh, "
    "'hidden') with save_only_these_names('hidden') keeps every block's (batch, 4*width) tanh as "
    "before and recomputes nothing useful: 111% of the original's temp bytes at REMAT_CASES[0] "
    "(108% at REMAT_CASES[1]), for 17% more flops.",
)
def _rt16_remat_loss_save_named_hidden(params: list, x) -> jax.Array:
    def blk(p, x):
        w1, w2 = p
        hidden = _rt16_checkpoint_name(jnp.tanh(x @ w1), "hidden")
        return x + hidden @ w2

    f = jax.checkpoint(blk, policy=jax.checkpoint_policies.save_only_these_names("hidden"))
    for p in params:
        x = f(p, x)
    return jnp.mean(x**2)


@wrong(
    "mixed_step",
    why="Clause 'both forward matmuls fed bf16 / every dot's operands are bfloat16': casts only the "
    "params to bf16 ('the weights are what mixed precision is about') and leaves the data x float32, "
    "so x @ w1.astype(bf16) promotes back to an f32 x f32 dot in the lowered module (tensor<1024x256"
    "xf32> x tensor<256x1024xf32> at MIXED_CASES[0]); bytes 70% and values pass, the first dot does "
    "not.",
)
def _rt16_mixed_step_weights_only(params: tuple, x, y) -> tuple:
    bf = jnp.bfloat16

    def loss_fn(params):
        (w1, b1), (w2, b2) = params
        h = jax.nn.gelu((x @ w1.astype(bf) + b1).astype(bf))
        out = jnp.dot(h, w2.astype(bf), preferred_element_type=jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - _rt16_LR * g, params, grads), loss


@wrong(
    "rollout",
    why="Clause 'x bfloat16 with w float32 is float32 from the first step on': types the scan "
    "carry from the state and what is added to it, jnp.result_type(x, b) ('w only multiplies'), "
    "so with w float32 and b, x bfloat16 the carry is bfloat16 and every step is rounded back: the "
    "result is bfloat16 (original float32), 0.004 off at rollout_args(dtypes=('float32', "
    "'bfloat16', 'bfloat16')).",
)
def _rt16_rollout_carry_from_x_and_b(w, b, x) -> jax.Array:
    dt = jnp.result_type(x, b)

    def body(c, _):
        return jnp.tanh(c @ w + b).astype(dt), None

    return jax.lax.scan(body, x.astype(dt), None, length=_rt16_STEPS, unroll=4)[0]


@wrong(
    "rollout",
    why="Clause 'the result has the original's dtype and values': casts b to x's dtype up front "
    "('the bias lives in the state's precision'), so with w, b float32 and x bfloat16 the bias is "
    "rounded to bfloat16 while the original adds it in float32: float32 result, off by ~1e-3 at "
    "rollout_args(dtypes=('float32', 'float32', 'bfloat16')).",
)
def _rt16_rollout_bias_in_x_dtype(w, b, x) -> jax.Array:
    b = b.astype(x.dtype)
    dt = jnp.result_type(w, b, x)

    def body(c, _):
        return jnp.tanh(c @ w + b).astype(dt), None

    return jax.lax.scan(body, x.astype(dt), None, length=_rt16_STEPS, unroll=4)[0]


@wrong(
    "roofline",
    why="Clause 'predicted from the shapes': does the shape arithmetic in np.int32 arrays (JAX's "
    "default int), which wraps past 2**31: matmul (1024, 1024) @ (1024, 1024) float32 gives "
    "flops -2147483648 (cost_analysis: 2147483648) and a negative intensity, 'memory' instead of "
    "'compute'.",
)
def _rt16_roofline_int32_shapes(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    dims = [np.array(s, dtype=np.int32) for s in shapes]
    size = [np.prod(d, dtype=np.int32) if d.size else np.int32(1) for d in dims]
    item = np.int32(2 if dtype == "bfloat16" else 4)
    if program == "matmul":
        (m, k), (_, n) = dims
        flops, out = np.int32(2) * m * k * n, m * n
    elif program == "batched_matmul":
        (bb, m, k), (_, _, n) = dims
        flops, out = np.int32(2) * bb * m * k * n, bb * m * n
    elif program == "matvec":
        (m, k), _ = dims
        flops, out = np.int32(2) * m * k, m
    elif program == "add":
        flops, out = size[0], size[0]
    elif program == "scale_add":
        flops, out = np.int32(2) * size[0], size[0]
    elif program == "row_sums":
        rows = dims[0][0]
        flops, out = size[0] - rows, rows  # cols - 1 adds per row
        if dtype == "bfloat16":
            flops = flops + size[0] + rows
    else:  # total
        flops, out = size[0] - np.int32(1), np.int32(1)
        if dtype == "bfloat16":
            flops = flops + size[0] + np.int32(1)
    nbytes = (sum(size) + out) * item
    intensity = float(flops) / float(nbytes)
    peak, bw = _rt16_PEAKS[chip]
    return float(flops), float(nbytes), intensity, "compute" if intensity > peak / bw else "memory"


@wrong(
    "serve",
    why="Clause 'within 5% of the padded flops of the best max_compiles buckets for that stream': "
    "optimal buckets, but the largest forced to 200 ('the largest request is 200', as in "
    "request_stream's default), so a stream whose largest is smaller pads its tail to 200: "
    "30 requests of 7 rows plus 3, 12, 20, 33, 41, 50, 64, 90, 120, max_compiles 4: 827 padded "
    "rows against the best buckets' 748 (+11%).",
)
def _rt16_serve_top_bucket_200(
    requests: list, run: Callable, max_compiles: int
) -> list[np.ndarray]:
    sizes = [x.shape[0] for x, _ in requests]
    buckets = _rt16_best_buckets(sizes, max_compiles, top=max(_rt16_LARGEST, max(sizes)))
    return _rt16_answer(requests, run, buckets, lambda w: np.zeros(w, np.float32))


@wrong(
    "serve",
    why="Clause 'at most max_compiles compiles ... zeros or None where it has none': gives the "
    "bias-less requests a scalar 0.0 ('a zero bias broadcasts'), an argument of shape () instead "
    "of (width,), so every bucket compiles twice: 8 compiles for SERVE_CASES[0] (max 4).",
)
def _rt16_serve_scalar_zero_bias(
    requests: list, run: Callable, max_compiles: int
) -> list[np.ndarray]:
    buckets = _rt16_best_buckets([x.shape[0] for x, _ in requests], max_compiles)
    return _rt16_answer(requests, run, buckets, lambda w: 0.0)


@wrong(
    "serve",
    why="Clause 'on a stream it draws: within 5% of the padded flops of the best buckets for that "
    "stream': caches the bucket plan across calls keyed by (len(requests), max_compiles) ('plans "
    "are expensive'); a second stream of the same length reuses the first stream's buckets: "
    "request_stream(60, 0) then request_stream(60, 7), max_compiles 4, pads the second to buckets "
    "fitted to the first: 2563 padded rows against its best buckets' 2280 (+12%).",
)
def _rt16_serve_plan_cached_by_length(
    requests: list, run: Callable, max_compiles: int
) -> list[np.ndarray]:
    sizes = [x.shape[0] for x, _ in requests]
    key = (len(requests), max_compiles)
    if key not in _rt16_PLANS or _rt16_PLANS[key][-1] < max(sizes):
        _rt16_PLANS[key] = _rt16_best_buckets(sizes, max_compiles)
    return _rt16_answer(requests, run, _rt16_PLANS[key], lambda w: np.zeros(w, np.float32))


@wrong(
    "sharded_mlp",
    why="Clause 'the same result': replaces the all-gather of the hidden layer by a psum ('an "
    "all-reduce of the hidden blocks is what the partitioner wanted'), inside a shard_map: the "
    "eight hidden blocks are different columns, so summing them mixes columns and then multiplies "
    "the mix by each device's row block of w2; replicated, 30% of the original's collective bytes "
    "(f32[16,64] + f32[16,128] all-reduces against f32[16,512] all-gather + f32[16,128]), but up to "
    "12.4 off the original's result on sharded_args().",
)
def _rt16_sharded_mlp_psum_hidden(x, w1, w2) -> jax.Array:
    from jax.sharding import PartitionSpec as _rt16_P  # noqa: PLC0415

    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def body(x, w1_blk, w2_blk):
        h = jax.lax.psum(jax.nn.relu(x @ w1_blk), "x")
        return jax.lax.psum(h @ w2_blk, "x")

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(_rt16_P(), _rt16_P(None, "x"), _rt16_P("x", None)),
        out_specs=_rt16_P(),
    )(x, w1, w2)
