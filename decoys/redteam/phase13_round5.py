"""Red-team wrong answers for phase 13, written from the contract only."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt5_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt5_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="temp bytes at most half the original's: checkpoints every block but the last (the last "
    "block's output feeds the loss directly, so 'it needs no remat'); README: at the drawn depth 4 "
    "(width 32-64, batch 384-512) leaving one block out keeps 52% > 50%",
)
def _rt5_remat_all_but_last(params, x):
    ck = jax.checkpoint(_rt5_block)
    for i, p in enumerate(params):
        x = _rt5_block(p, x) if i == len(params) - 1 else ck(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="at most half the temp bytes: checkpoint with policy dots_saveable still saves x @ w1, the "
    "wide (batch, 4*width) hidden layer of every block, so the temp bytes barely move; wrong on "
    "REMAT_CASES (8, 128, 256, 0)",
)
def _rt5_remat_dots_saveable(params, x):
    ck = jax.checkpoint(_rt5_block, policy=jax.checkpoint_policies.dots_saveable)
    for p in params:
        x = ck(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="no loop in the compiled grad: stacks the (same-shaped) blocks and runs a checkpointed "
    "lax.scan, so the grad holds a while loop whose flops cost_analysis counts once; wrong on "
    "every case, e.g. REMAT_CASES (6, 64, 384, 1)",
)
def _rt5_remat_scan(params, x):
    w1s = jnp.stack([p[0] for p in params])
    w2s = jnp.stack([p[1] for p in params])

    @jax.checkpoint
    def body(h, p):
        return _rt5_block(p, h), None

    x, _rt5_ = jax.lax.scan(body, x, (w1s, w2s))
    return jnp.mean(x**2)


# ---- mixed_step ---------------------------------------------------------------------------------

_rt5_LEARNING_RATE = 1e-3


def _rt5_mixed_loss(params, x, y, act):
    (w1, b1), (w2, b2) = params
    xa = x.astype(act)
    h = jax.lax.dot(xa, w1.astype(act), preferred_element_type=jnp.float32) + b1
    a = jax.nn.gelu(h.astype(act))
    out = jax.lax.dot(a, w2.astype(act), preferred_element_type=jnp.float32) + b2
    return jnp.mean((out - y) ** 2)


@wrong(
    "mixed_step",
    why="every dot operand bfloat16 (not float16): carries the activations in float16 (5 exponent "
    "bits), which the contract names as another format; wrong on MIXED_CASES (1024, 256, 1024, 0)",
)
def _rt5_mixed_float16(params, x, y):
    loss, grads = jax.value_and_grad(_rt5_mixed_loss)(params, x, y, jnp.float16)
    new = jax.tree.map(lambda p, g: p - _rt5_LEARNING_RATE * g, params, grads)
    return new, loss.astype(jnp.float32)


@wrong(
    "mixed_step",
    why="bytes accessed at most 3/4 of the f32 step's: casts only the operands at each dot and "
    "keeps every activation f32, so each convert adds bytes (README: 109% for the first case); "
    "wrong on MIXED_CASES (1024, 256, 1024, 0)",
)
def _rt5_mixed_cast_at_dots(params, x, y):
    def loss_fn(params, x, y):
        (w1, b1), (w2, b2) = params
        bf = jnp.bfloat16
        h = jax.lax.dot(x.astype(bf), w1.astype(bf), preferred_element_type=jnp.float32) + b1
        a = jax.nn.gelu(h)
        out = jax.lax.dot(a.astype(bf), w2.astype(bf), preferred_element_type=jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    new = jax.tree.map(lambda p, g: p - _rt5_LEARNING_RATE * g, params, grads)
    return new, loss


@wrong(
    "mixed_step",
    why="each param's update within 5% of the f32 step's, params and update in f32: applies the "
    "update in bfloat16 (p.astype(bf16) - lr*g) and casts back, so a 1e-5 step on a weight near "
    "0.06 rounds away; wrong on MIXED_CASES (1024, 256, 1024, 0)",
)
def _rt5_mixed_bf16_update(params, x, y):
    loss, grads = jax.value_and_grad(_rt5_mixed_loss)(params, x, y, jnp.bfloat16)
    bf = jnp.bfloat16
    new = jax.tree.map(
        lambda p, g: (p.astype(bf) - (_rt5_LEARNING_RATE * g).astype(bf)).astype(jnp.float32),
        params,
        grads,
    )
    return new, loss


@wrong(
    "mixed_step",
    why="both forward matmuls fed bfloat16: feeds the first dot bf16 but keeps the output layer's "
    "dot f32 'for precision' (bf16 activations cast back to f32 before it), so the second forward "
    "matmul is fed float32; wrong on MIXED_CASES (512, 128, 768, 1)",
)
def _rt5_mixed_f32_output_layer(params, x, y):
    def loss_fn(params, x, y):
        (w1, b1), (w2, b2) = params
        bf = jnp.bfloat16
        h = jax.lax.dot(x.astype(bf), w1.astype(bf), preferred_element_type=jnp.float32) + b1
        a = jax.nn.gelu(h.astype(bf))
        out = a.astype(jnp.float32) @ w2 + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    new = jax.tree.map(lambda p, g: p - _rt5_LEARNING_RATE * g, params, grads)
    return new, loss


# ---- rollout ------------------------------------------------------------------------------------

_rt5_STEPS = 32


def _rt5_scan_rollout(w, b, x, dtype, unroll):
    x = x.astype(dtype)

    def body(h, _rt5_):
        return jnp.tanh(h @ w + b).astype(dtype), None

    x, _rt5_ = jax.lax.scan(body, x, None, length=_rt5_STEPS, unroll=unroll)
    return x


@wrong(
    "rollout",
    why="the original's dtype: fixes the carry to w's dtype, but with w and x bfloat16 and b "
    "float32 the original is float32 from the first step (x @ w + b promotes), so the result is "
    "bfloat16 and rounded every step; wrong on rollout_args(dtypes=('bfloat16','float32','bfloat16'))",
)
def _rt5_rollout_carry_w_dtype(w, b, x):
    return _rt5_scan_rollout(w, b, x, w.dtype, 4)


@wrong(
    "rollout",
    why="the original's dtype: always carries float32 'to keep one type', but with w, b and x all "
    "bfloat16 the original stays bfloat16; wrong on rollout_args(dtypes=('bfloat16',)*3)",
)
def _rt5_rollout_carry_f32(w, b, x):
    return _rt5_scan_rollout(w, b, x, jnp.float32, 4)


@wrong(
    "rollout",
    why="at most 40% of the original's instructions: unroll=16 runs only 2 trips but puts 16 "
    "copies of the step (half the original) in the body; wrong on ROLLOUT_CASES (16, 64, 0)",
)
def _rt5_rollout_unroll16(w, b, x):
    return _rt5_scan_rollout(w, b, x, jnp.result_type(w, b, x), 16)


# ---- sharded_mlp --------------------------------------------------------------------------------


def _rt5_mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


@wrong(
    "sharded_mlp",
    why="the same result: drops the all-gather (right) and then also sums the output's partial sums "
    "in bfloat16 'to halve the all-reduce', so the output is rounded to 8 mantissa bits (relative "
    "error ~4e-3); wrong on SHARDED_CASES (16, 128, 512, 0)",
)
def _rt5_sharded_bf16_psum(x, w1, w2):
    mesh = _rt5_mesh()

    def local(x, w1, w2):
        y = jax.nn.relu(x @ w1) @ w2
        return jax.lax.psum(y.astype(jnp.bfloat16), "x").astype(jnp.float32)

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P(None, "x"), P("x", None)),
        out_specs=P(),
    )(x, w1, w2)


@wrong(
    "sharded_mlp",
    why="at most half the collective bytes: keeps the replicated hidden layer but gathers it in "
    "bfloat16 to halve its bytes; the output all-reduce stays f32, so e.g. SHARDED_CASES "
    "(16, 128, 512, 0) needs (2*512+4*128)/(4*512+4*128)=60%, and the result is not the same",
)
def _rt5_sharded_bf16_gather(x, w1, w2):
    mesh = _rt5_mesh()
    h = jax.nn.relu(x @ w1).astype(jnp.bfloat16)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P()))
    return h.astype(jnp.float32) @ w2


@wrong(
    "sharded_mlp",
    why="at most half the collective bytes: replicates w2 instead ('then the second matmul needs "
    "nothing'), which all-gathers the (hidden, width) weight every call, far more bytes than the "
    "(batch, hidden) layer; wrong on SHARDED_CASES (16, 128, 512, 0)",
)
def _rt5_sharded_replicate_w2(x, w1, w2):
    mesh = _rt5_mesh()
    h = jax.nn.relu(x @ w1)
    w2 = jax.lax.with_sharding_constraint(w2, NamedSharding(mesh, P()))
    return h @ w2


# ---- roofline -----------------------------------------------------------------------------------


def _rt5_size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _rt5_roofline(
    program,
    shapes,
    dtype,
    chip,
    *,
    sum_converts=True,
    peak_flops=None,
    total_2d=False,
    write_temp=False,
):
    s = 2 if dtype == "bfloat16" else 4
    bf = dtype == "bfloat16"
    if program == "matmul":
        (m, k), (_rt5_, n) = shapes
        flops, elems = 2 * m * k * n, m * k + k * n + m * n
    elif program == "batched_matmul":
        (bb, m, k), (_rt5_, _rt5_, n) = shapes
        flops, elems = 2 * bb * m * k * n, bb * (m * k + k * n + m * n)
    elif program == "matvec":
        (m, k), _rt5_ = shapes
        flops, elems = 2 * m * k, m * k + k + m
    elif program == "add":
        n = _rt5_size(shapes[0])
        flops, elems = n, 3 * n
    elif program == "scale_add":
        n = _rt5_size(shapes[0])
        flops, elems = 2 * n, (4 if write_temp else 3) * n
    elif program == "row_sums":
        rows, cols = shapes[0]
        n = rows * cols
        flops = n + ((n + rows) if (bf and sum_converts) else 0)
        elems = n + rows
    else:  # total
        shp = shapes[0]
        n = _rt5_size(shp[:2]) if total_2d else _rt5_size(shp)
        flops = n + ((n + 1) if (bf and sum_converts) else 0)
        elems = n + 1
    nbytes = float(elems * s)
    intensity = flops / nbytes
    pf, pb = _rt5_PEAKS[chip]
    if peak_flops is not None:
        pf = peak_flops.get(chip, pf)
    return float(flops), nbytes, intensity, "compute" if intensity > pf / pb else "memory"


@wrong(
    "roofline",
    why="flops as the cost model counts the program as written: forgets the converts a bfloat16 "
    "jnp.sum adds (to f32 and back), so it halves the flops; wrong on ('row_sums', ((1024, 1024),), "
    "'bfloat16', 'v5e') and ('total', ((4096,),), 'bfloat16', 'h100')",
)
def _rt5_roofline_no_converts(program, shapes, dtype, chip):
    return _rt5_roofline(program, shapes, dtype, chip, sum_converts=False)


@wrong(
    "roofline",
    why="'total' takes any shape: counts the first two dims (rows*cols as in row_sums), right for "
    "rank 0 to 2 but a rank-3 argument is mis-sized; wrong on ('total', ((8, 16, 32),), "
    "'float32', 'v5e') (counts 128 elements, not 4096)",
)
def _rt5_roofline_total_2d(program, shapes, dtype, chip):
    return _rt5_roofline(program, shapes, dtype, chip, total_2d=True)


@wrong(
    "roofline",
    why="the bound uses the dense bf16 peak: takes H100's 1,979 TFLOP/s (with sparsity), so its "
    "ridge is 591 instead of 295 flop/byte; wrong on ('matmul', ((1024, 1024), (1024, 1024)), "
    "'bfloat16', 'h100'), intensity 341: compute-bound, answered memory",
)
def _rt5_roofline_sparse_peak(program, shapes, dtype, chip):
    return _rt5_roofline(program, shapes, dtype, chip, peak_flops={"h100": 1979e12})


@wrong(
    "roofline",
    why="bytes as a fused program moves them (each input read once, the output written once): "
    "counts 2 * a of scale_add as written and read back, 4n elements not 3n; wrong on "
    "('scale_add', ((1024, 1024), (1024, 1024)), 'float32', 'v5e')",
)
def _rt5_roofline_scale_add_temp(program, shapes, dtype, chip):
    return _rt5_roofline(program, shapes, dtype, chip, write_temp=True)


# ---- serve --------------------------------------------------------------------------------------


def _rt5_best_buckets(sizes, weights, k):
    """Boundaries (a subset of sizes, always the largest) minimising sum(weight * bucket)."""
    sizes = list(sizes)
    weights = list(weights)
    m = len(sizes)
    k = max(1, min(k, m))
    inf = float("inf")
    # cost[i][j]: sizes[i..j] padded to sizes[j]
    prefix = [0]
    for wgt in weights:
        prefix.append(prefix[-1] + wgt)
    dp = [[inf] * (m + 1) for _rt5_ in range(k + 1)]
    back = [[-1] * (m + 1) for _rt5_ in range(k + 1)]
    dp[0][0] = 0.0
    for c in range(1, k + 1):
        for j in range(1, m + 1):
            for i in range(j):
                if dp[c - 1][i] == inf:
                    continue
                v = dp[c - 1][i] + (prefix[j] - prefix[i]) * sizes[j - 1]
                if v < dp[c][j]:
                    dp[c][j], back[c][j] = v, i
    c = min(range(1, k + 1), key=lambda c: dp[c][m])
    out, j = [], m
    while j > 0:
        out.append(sizes[j - 1])
        j, c = back[c][j], c - 1
    return sorted(out)


def _rt5_serve_with(requests, run, buckets, zero_bias=True):
    out = []
    for x, bias in requests:
        n, width = x.shape
        size = next(b for b in buckets if b >= n)
        xp = np.zeros((size, width), dtype=x.dtype)
        xp[:n] = x
        if bias is None and zero_bias:
            bias = np.zeros((width,), dtype=x.dtype)
        out.append(
            np.asarray(run(jnp.asarray(xp), None if bias is None else jnp.asarray(bias)))[:n]
        )
    return out


def _rt5_counts(requests):
    sizes, counts = np.unique([x.shape[0] for x, _rt5_ in requests], return_counts=True)
    return [int(s) for s in sizes], [int(c) for c in counts]


@wrong(
    "serve",
    why="at most max_compiles compiles: best buckets for the stream, but passes bias=None through, "
    "so None and an array are two pytree structures and every bucket compiles twice; wrong on "
    "SERVE_CASES (60, 0, 4, 1.5)",
)
def _rt5_serve_none_passthrough(requests, run, max_compiles):
    sizes, counts = _rt5_counts(requests)
    return _rt5_serve_with(
        requests, run, _rt5_best_buckets(sizes, counts, max_compiles), zero_bias=False
    )


@wrong(
    "serve",
    why="padded flops within 5% of the best buckets on a drawn stream: picks the buckets that "
    "minimise padding over the distinct sizes, each counted once (not per request); on a "
    "request_stream-like stream of 100 where 37 requests have n=37, max_compiles 3, it picks "
    "(22, 61, 200) and pads 17% more than the best (37, 61, 200); count the requests",
)
def _rt5_serve_unweighted(requests, run, max_compiles):
    sizes, _rt5_ = _rt5_counts(requests)
    return _rt5_serve_with(requests, run, _rt5_best_buckets(sizes, [1] * len(sizes), max_compiles))


@wrong(
    "serve",
    why="padded flops within the stated factor: evenly spaced buckets (largest/k, 2*largest/k...) "
    "pad the many small requests of a geometric stream to largest/k; wrong on SERVE_CASES "
    "(60, 0, 4, 1.5) (most requests < 50 padded to 50)",
)
def _rt5_serve_even_buckets(requests, run, max_compiles):
    largest = max(x.shape[0] for x, _rt5_ in requests)
    k = max(1, max_compiles)
    buckets = sorted({-(-largest * (i + 1) // k) for i in range(k)})
    return _rt5_serve_with(requests, run, buckets)


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="what jax.jit returns, moving nothing between host and device: wraps the donating jit to "
    "hand back the loss as a host float for logging (device-to-host copy on every call; not the "
    "jit object, loss not a jax.Array); wrong on DONATION_CASES (512, 32, 0)",
)
def _rt5_donate_host_loss(step):
    jitted = jax.jit(step, donate_argnums=0)

    def call(state, batch):
        new_state, loss = jitted(state, batch)
        return new_state, float(loss)

    call.lower = jitted.lower
    call.trace = jitted.trace
    return call


@wrong(
    "donating_step",
    why="at most 55% of the peak memory: donate_argnums=1 donates the batch (off by one on the "
    "argument), which no output can reuse, so the old and new state are still live at once; "
    "wrong on DONATION_CASES (512, 32, 0)",
)
def _rt5_donate_batch_index(step):
    return jax.jit(step, donate_argnums=1)


@wrong(
    "donating_step",
    why="each call runs the program its .lower() gives and deletes the old state's buffers: "
    "returns a wrapper that copies the state 'so the caller may keep it' before calling a donating "
    "jit, and borrows that jit's .lower(); after a call the caller's state is not deleted, on "
    "DONATION_CASES (512, 32, 0)",
)
def _rt5_donate_copy_wrapper(step):
    jitted = jax.jit(step, donate_argnums=0)

    def call(state, batch):
        return jitted(jax.tree.map(jnp.copy, state), batch)

    call.lower = jitted.lower
    call.trace = jitted.trace
    return call


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="the second process finds every compile: sets only the directory, so the small program "
    "(compiled in milliseconds) stays under jax_persistent_cache_min_compile_time_secs (1.0 s) "
    "and nothing is written; wrong on CACHE_CHILD with any directory",
)
def _rt5_cache_dir_only(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir}


@wrong(
    "cache_settings",
    why="the second process finds every compile: lowers the entry-size threshold (already 0) and "
    "leaves the 1.0 s compile-time threshold, which the small program never reaches; wrong on "
    "CACHE_CHILD with any directory",
)
def _rt5_cache_entry_size_only(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        "jax_enable_compilation_cache": True,
    }


@wrong(
    "cache_settings",
    why="entries written under `cache_dir`: writes to a fixed jax_cache folder in the system temp "
    "directory instead of the given one (hard-coded from an example); the second process hits, "
    "but nothing lands under cache_dir, and a stale entry there can make the first process hit",
)
def _rt5_cache_fixed_dir(cache_dir):
    return {
        "jax_compilation_cache_dir": os.path.join(tempfile.gettempdir(), "jax_cache_rt13"),
        "jax_persistent_cache_min_compile_time_secs": 0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }


_rt5_ = Callable
