"""Red team, phase 13, round 17: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt17_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- remat_loss ---------------------------------------------------------------------------------


def _rt17_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


def _rt17_plain_loss(params, x):
    for p in params:
        x = _rt17_block(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="Clause 'at most half the original's temp bytes': wraps the whole loss "
    "in jax.checkpoint (README: that recomputes the whole forward pass and keeps all of it "
    "again); the grad's temp bytes stay near the original's at REMAT_CASES (8, 128, 256).",
)
def _rt17_remat_loss_whole(params, x):
    return jax.checkpoint(_rt17_plain_loss)(params, x)


@wrong(
    "remat_loss",
    why="Clause 'half the original's temp bytes': checkpoints every block with "
    "policy=checkpoint_dots, which still saves each block's wide x @ w1 (the very array the "
    "budget is about); temp bytes stay far above half at (8, 128, 256).",
)
def _rt17_remat_loss_save_dots(params, x):
    blk = jax.checkpoint(_rt17_block, policy=jax.checkpoint_policies.checkpoint_dots)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="Clause 'a checkpoint on every block meets it' (README: leaving even one "
    "block out keeps 52% at depth 4): checkpoints all blocks but the last (its activations "
    "are used right away anyway); at depth 4, width 32, batch 512 temp bytes exceed half.",
)
def _rt17_remat_loss_skip_last(params, x):
    blk = jax.checkpoint(_rt17_block)
    for i, p in enumerate(params):
        x = _rt17_block(p, x) if i == len(params) - 1 else blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="Clause 'no loop (cost_analysis counts a loop's body once)': stacks the "
    "blocks and runs a lax.scan of a checkpointed block; the compiled grad holds a while "
    "loop at every case (8, 128, 256).",
)
def _rt17_remat_loss_scan(params, x):
    w1 = jnp.stack([p[0] for p in params])
    w2 = jnp.stack([p[1] for p in params])

    @jax.checkpoint
    def body(h, p):
        return _rt17_block(p, h), None

    x, _ = jax.lax.scan(body, x, (w1, w2))
    return jnp.mean(x**2)


# ---- mixed_step ---------------------------------------------------------------------------------

_rt17_LR = 1e-3


def _rt17_f32_mse(params, x, y):
    (w1, b1), (w2, b2) = params
    return jnp.mean((jax.nn.gelu(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def _rt17_dot(a, b):
    return jnp.dot(
        a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), preferred_element_type=jnp.float32
    )


def _rt17_cast_at_dots_mse(params, x, y):
    (w1, b1), (w2, b2) = params
    return jnp.mean((_rt17_dot(jax.nn.gelu(_rt17_dot(x, w1) + b1), w2) + b2 - y) ** 2)


@wrong(
    "mixed_step",
    why="Clause 'bytes accessed at most 3/4 of the f32 step's' (README: casting "
    "only the operands at each dot does not pay): bf16 operands at every dot with f32 "
    "accumulation, activations otherwise f32; bytes accessed grow (about 109%) at "
    "MIXED_CASES (1024, 256, 1024).",
)
def _rt17_mixed_step_cast_at_dots(params, x, y):
    loss, grads = jax.value_and_grad(_rt17_cast_at_dots_mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - _rt17_LR * g, params, grads), loss


def _rt17_bf16_mse(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jax.nn.gelu(x @ w1 + b1)
    return jnp.mean(((h @ w2 + b2).astype(jnp.float32) - y) ** 2)


@wrong(
    "mixed_step",
    why="Clause 'Params stay float32 ... each param's update within 5%': casts the "
    "params themselves to bf16, takes the step in bf16 and casts back; small updates "
    "(1e-3 * grad against weights near 0.06) round away in bf16, and the bf16 x bf16 dots "
    "accumulate into bf16 (MIXED_CASES (1024, 256, 1024)).",
)
def _rt17_mixed_step_bf16_params(params, x, y):
    p16 = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
    loss, grads = jax.value_and_grad(_rt17_bf16_mse)(p16, x.astype(jnp.bfloat16), y)
    new = jax.tree.map(lambda p, g: (p - _rt17_LR * g).astype(jnp.float32), p16, grads)
    return new, loss.astype(jnp.float32)


def _rt17_f16_mse(params, x, y):
    (w1, b1), (w2, b2) = params
    half = jnp.float16
    h = jnp.dot(x.astype(half), w1.astype(half), preferred_element_type=jnp.float32) + b1
    h = jax.nn.gelu(h).astype(half)
    out = jnp.dot(h, w2.astype(half), preferred_element_type=jnp.float32) + b2
    return jnp.mean((out - y) ** 2)


@wrong(
    "mixed_step",
    why="Clause 'every dot's operands are bfloat16 (not float16)': carries the "
    "activations in float16 (the 'half precision' most people know); dot operands are f16 "
    "at every case (1024, 256, 1024).",
)
def _rt17_mixed_step_float16(params, x, y):
    loss, grads = jax.value_and_grad(_rt17_f16_mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - _rt17_LR * g, params, grads), loss


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="Clause 'a loop that runs at most 8 trips': a lax.scan with unroll=2 "
    "(16 trips, known_trip_count=16 > 8) for f32 (16, 64).",
)
def _rt17_rollout_unroll2(w, b, x):
    dtype = jnp.result_type(w, b, x)

    def step(h, _):
        return jnp.tanh(h @ w + b), None

    h, _ = jax.lax.scan(step, x.astype(dtype), None, length=32, unroll=2)
    return h


@wrong(
    "rollout",
    why="Clause 'the result has the original's dtype': keeps the scan carry in x's "
    "dtype, casting each step back; with x bfloat16 and w float32 the original is float32 "
    "from the first step on, this returns bfloat16 (values rounded each step).",
)
def _rt17_rollout_carry_x_dtype(w, b, x):
    def step(h, _):
        return jnp.tanh(h @ w + b).astype(x.dtype), None

    h, _ = jax.lax.scan(step, x, None, length=32, unroll=4)
    return h


@wrong(
    "rollout",
    why="Clause 'rounding where it rounds: with all three bfloat16, x @ w, + b and "
    "tanh each round ... bit for bit': computes each step in float32 and rounds once to the "
    "carry's bfloat16; for w, b, x all bfloat16 (16, 64) bits differ from the original.",
)
def _rt17_rollout_f32_step(w, b, x):
    dtype = jnp.result_type(w, b, x)

    def step(h, _):
        y = jnp.tanh(h.astype(jnp.float32) @ w.astype(jnp.float32) + b.astype(jnp.float32))
        return y.astype(dtype), None

    h, _ = jax.lax.scan(step, x.astype(dtype), None, length=32, unroll=4)
    return h


@wrong(
    "rollout",
    why="Clause 'the result has the original's dtype': types the carry by "
    "jnp.result_type(w, x), forgetting b; with w and x bfloat16 and b float32 the original "
    "is float32 after the first step, this casts back to bfloat16 every trip.",
)
def _rt17_rollout_ignore_b(w, b, x):
    dtype = jnp.result_type(w, x)

    def step(h, _):
        return jnp.tanh(h @ w + b).astype(dtype), None

    h, _ = jax.lax.scan(step, x.astype(dtype), None, length=32, unroll=4)
    return h


@wrong(
    "rollout",
    why="Clause 'loop that runs at most 8 trips ... counted by the compiler': "
    "unroll=3 (does not divide 32): the while runs 10 full trips plus a remainder, "
    "known_trip_count 10 > 8 for f32 (16, 64).",
)
def _rt17_rollout_unroll3(w, b, x):
    dtype = jnp.result_type(w, b, x)

    def step(h, _):
        return jnp.tanh(h @ w + b), None

    h, _ = jax.lax.scan(step, x.astype(dtype), None, length=32, unroll=3)
    return h


# ---- sharded_mlp --------------------------------------------------------------------------------


def _rt17_mesh_of(a):
    from jax.sharding import AxisType

    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


@wrong(
    "sharded_mlp",
    why="Clause 'replicated as the original's (every device holds all of it)': "
    "constrains the output to the hidden layer's split instead (P(None, 'x') on h is right, "
    "but it also pins the result split by rows P('x', None)), so devices hold slices "
    "(SHARDED_CASES (16, 128, 512)).",
)
def _rt17_sharded_mlp_split_out(x, w1, w2):
    mesh = _rt17_mesh_of(w1)
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(None, "x")))
    out = h @ w2
    return jax.lax.with_sharding_constraint(out, NamedSharding(mesh, P("x", None)))


@wrong(
    "sharded_mlp",
    why="Clause 'at most half the original's collective bytes': pins the hidden "
    "layer split by batch rows P('x', None) ('sharded is cheaper than replicated'); the "
    "partitioner reshuffles h and w2 (all-to-all/all-gather) and collective bytes stay above "
    "half at (16, 128, 512).",
)
def _rt17_sharded_mlp_batch_split(x, w1, w2):
    mesh = _rt17_mesh_of(w1)
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("x", None)))
    return h @ w2


# ---- roofline -----------------------------------------------------------------------------------


def _rt17_size(shape):
    return math.prod(shape)


def _rt17_bound(flops, nbytes, chip):
    peak, bw = _rt17_PEAKS[chip]
    intensity = flops / nbytes
    return flops, float(nbytes), intensity, ("compute" if intensity > peak / bw else "memory")


def _rt17_roof_core(
    program,
    shapes,
    dtype,
    *,
    sum_flops,
    mac=2,
    item=None,
    scale_add_bytes=3,
    reduce_out=True,
    red_item=None,
):
    item = item or (2 if dtype == "bfloat16" else 4)
    red_item = red_item or item
    if program == "matmul":
        (m, k), (_, n) = shapes
        return mac * m * k * n, item * (m * k + k * n + m * n)
    if program == "batched_matmul":
        (bb, m, k), (_, _, n) = shapes
        return mac * bb * m * k * n, item * bb * (m * k + k * n + m * n)
    if program == "matvec":
        (m, k), _ = shapes
        return mac * m * k, item * (m * k + k + m)
    if program == "add":
        return _rt17_size(shapes[0]), item * 3 * _rt17_size(shapes[0])
    if program == "scale_add":
        return 2 * _rt17_size(shapes[0]), item * scale_add_bytes * _rt17_size(shapes[0])
    if program == "row_sums":
        rows, cols = shapes[0]
        return sum_flops(rows, cols, dtype), red_item * rows * cols + (
            item * rows if reduce_out else 0
        )
    if program == "total":
        n = _rt17_size(shapes[0])
        return sum_flops(1, n, dtype), red_item * n + (item if reduce_out else 0)
    raise KeyError(program)


def _rt17_sum_true(rows, cols, dtype):
    if dtype == "bfloat16":
        return rows * cols + rows * (cols - 1) + rows
    return rows * (cols - 1)


@wrong(
    "roofline",
    why="Clause 'Flops as the cost model counts the program as written': counts "
    "one flop per element summed (n, not n - 1 adds per row); for total of f32[2] it says 2 "
    "flops where cost_analysis says 1 (and 1 for a rank-0 total, which has none).",
)
def _rt17_roofline_sum_n(program, shapes, dtype, chip):
    def flops(rows, cols, dt):
        return rows * cols * (2 if dt == "bfloat16" else 1)

    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=flops)
    return _rt17_bound(f, nb, chip)


@wrong(
    "roofline",
    why="Clause 'a bfloat16 jnp.sum accumulates in float32: read which converts "
    "that adds': counts a bf16 sum like an f32 one (n - 1 adds, no converts); total of "
    "bf16[6,10] is 120 flops in cost_analysis, this says 59.",
)
def _rt17_roofline_no_converts(program, shapes, dtype, chip):
    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=lambda r, c, d: r * (c - 1))
    return _rt17_bound(f, nb, chip)


@wrong(
    "roofline",
    why="Clause 'bytes as a fused program moves them ... Does 2 * a + b write the "
    "2 * a': counts scale_add's intermediate 2 * a as written and read again (5 arrays, not "
    "3); scale_add f32[4,5] gives 400 bytes instead of 240.",
)
def _rt17_roofline_scale_add_temp(program, shapes, dtype, chip):
    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=_rt17_sum_true, scale_add_bytes=5)
    return _rt17_bound(f, nb, chip)


@wrong(
    "roofline",
    why="Clause 'flops ... 2 per multiply-add of a dot': counts one flop per "
    "multiply-add; matmul f32 (64,32)@(32,16) gives 32768 flops instead of 65536.",
)
def _rt17_roofline_one_per_mac(program, shapes, dtype, chip):
    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=_rt17_sum_true, mac=1)
    return _rt17_bound(f, nb, chip)


@wrong(
    "roofline",
    why="Clause 'the output written once: a reduction's scalar too': leaves the "
    "reduction's output out of the bytes; total of f32[2] gives 8 bytes instead of 12.",
)
def _rt17_roofline_no_reduce_out(program, shapes, dtype, chip):
    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=_rt17_sum_true, reduce_out=False)
    return _rt17_bound(f, nb, chip)


@wrong(
    "roofline",
    why="Clause 'the model uses the dense bf16 peak for float32 programs too': "
    "halves the peak for float32 (real chips' f32 rate), so the ridge point halves; f32 "
    "matmul (1200,1200)@(1200,1200) on v5e has intensity 200 < 240.5: memory, this says "
    "compute.",
)
def _rt17_roofline_f32_half_peak(program, shapes, dtype, chip):
    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=_rt17_sum_true)
    peak, bw = _rt17_PEAKS[chip]
    if dtype == "float32":
        peak = peak / 2
    intensity = f / nb
    return f, float(nb), intensity, ("compute" if intensity > peak / bw else "memory")


@wrong(
    "roofline",
    why="Clause 'Bytes stay what a fused program moves in the argument's dtype': "
    "a bf16 sum accumulates in float32, so it counts the reduction's input at 4 bytes; total "
    "of bf16[6,10] gives 242 bytes instead of 122.",
)
def _rt17_roofline_f32_accum_bytes(program, shapes, dtype, chip):
    f, nb = _rt17_roof_core(program, shapes, dtype, sum_flops=_rt17_sum_true, red_item=4)
    return _rt17_bound(f, nb, chip)


# ---- serve --------------------------------------------------------------------------------------


def _rt17_best_buckets(sizes, k):
    """Bucket tops minimising padded rows for these request sizes (dynamic programming)."""
    values = sorted(set(sizes))
    counts = {v: sizes.count(v) for v in values}
    m = len(values)
    k = max(1, min(k, m))
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(k + 1)]
    back = [[0] * (m + 1) for _ in range(k + 1)]
    cost[0][0] = 0

    def pad(i, j):  # values[i:j] all padded to values[j - 1]
        top = values[j - 1]
        return sum(counts[v] * top for v in values[i:j])

    for b in range(1, k + 1):
        for j in range(1, m + 1):
            for i in range(j):
                c = cost[b - 1][i] + pad(i, j)
                if c < cost[b][j]:
                    cost[b][j], back[b][j] = c, i
    best_b = min(range(1, k + 1), key=lambda b: cost[b][m])
    tops, j, b = [], m, best_b
    while j > 0:
        tops.append(values[j - 1])
        j, b = back[b][j], b - 1
    return sorted(tops)


def _rt17_run_buckets(requests, run, tops, *, none_bias):
    out = []
    for x, bias in requests:
        n, width = x.shape
        top = next(t for t in tops if t >= n)
        padded = np.zeros((top, width), x.dtype)
        padded[:n] = x
        if bias is None and not none_bias:
            bias = np.zeros((width,), x.dtype)
        out.append(np.asarray(run(padded, bias))[:n])
    return out


@wrong(
    "serve",
    why="Clause 'every distinct pytree structure (None is a structure) is a compile': "
    "optimal buckets for max_compiles, but passes bias=None through for requests without "
    "one, so each bucket compiles twice; SERVE_CASES (60, 0, 4) makes up to 8 compiles.",
)
def _rt17_serve_none_passthrough(requests, run, max_compiles):
    sizes = [x.shape[0] for x, _ in requests]
    tops = _rt17_best_buckets(sizes, max_compiles)
    return _rt17_run_buckets(requests, run, tops, none_bias=True)


@wrong(
    "serve",
    why="Clause 'padded flops ... count the requests, not only the sizes': chooses the "
    "buckets on the distinct sizes (each size once), not weighted by how often each comes; "
    "on a stream where one small size is far more common the padded flops exceed the best "
    "buckets' by more than 5% (e.g. 50 requests of 3 rows, sizes 4..40 once each, 200 once, "
    "max_compiles 3).",
)
def _rt17_serve_unweighted(requests, run, max_compiles):
    sizes = sorted({x.shape[0] for x, _ in requests})
    tops = _rt17_best_buckets(sizes, max_compiles)
    return _rt17_run_buckets(requests, run, tops, none_bias=False)


@wrong(
    "serve",
    why="Clause 'a fixed recipe (powers of two) ... at most max_compiles': buckets at "
    "powers of two up to the largest request; sizes up to 200 need 1..256 (up to 9 buckets) "
    "against max_compiles 4 at SERVE_CASES (60, 0, 4).",
)
def _rt17_serve_pow2(requests, run, max_compiles):
    largest = max(x.shape[0] for x, _ in requests)
    tops = [1 << i for i in range(max(1, largest - 1).bit_length() + 1)]
    return _rt17_run_buckets(requests, run, tops, none_bias=False)


@wrong(
    "serve",
    why="Clause 'at most max_compiles compiles': spaces max_compiles buckets evenly up "
    "to the largest request (50, 100, 150, 200 for 60, 0, 4): most requests are small, so "
    "padded flops run far above 1.5x the unpadded ones.",
)
def _rt17_serve_even(requests, run, max_compiles):
    largest = max(x.shape[0] for x, _ in requests)
    tops = [math.ceil(largest * (i + 1) / max_compiles) for i in range(max_compiles)]
    return _rt17_run_buckets(requests, run, tops, none_bias=False)


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="Clause 'at most 55% of its peak memory ... the old state's buffers "
    "are deleted': donates the params only (the momentum 'is still needed for the update'), "
    "so only half the state is aliased: peak memory stays above 55% of the original's and "
    "the old momentum is not deleted (DONATION_CASES (512, 32, 0)).",
)
def _rt17_donating_step_params_only(step):
    def split(params, momentum, batch):
        return step((params, momentum), batch)

    jitted = jax.jit(split, donate_argnums=0)

    def call(state, batch):
        return jitted(state[0], state[1], batch)

    call.lower = lambda state, batch: jitted.lower(state[0], state[1], batch)
    return call


@wrong(
    "donating_step",
    why="Clause 'at most 55% of its peak memory': donates the batch only "
    "(it is 'the data'); no output has its shape, nothing is aliased, peak memory is the "
    "original's and the old state is not deleted (512, 32, 0).",
)
def _rt17_donating_step_batch(step):
    return jax.jit(step, donate_argnums=1)


@wrong(
    "donating_step",
    why="Clause 'after a call the old state's buffers are deleted': returns a "
    "Python wrapper that copies the state before the donating jit (to keep the caller's "
    "copy valid); the caller's state is never deleted, and the wrapper has no .lower().",
)
def _rt17_donating_step_copy(step):
    jitted = jax.jit(step, donate_argnums=0)

    def call(state, batch):
        return jitted(jax.tree.map(jnp.copy, state), batch)

    call.lower = jitted.lower
    return call


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="Clause 'finds every compile in the persistent compilation cache': "
    "sets only the directory; the default jax_persistent_cache_min_compile_time_secs (1 s) "
    "keeps a program compiling in milliseconds out, so nothing is written: 0 hits.",
)
def _rt17_cache_settings_dir_only(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir}


@wrong(
    "cache_settings",
    why="Clause 'a small program': lowers the compile-time threshold to "
    "0.1 s, still above the few milliseconds CACHE_CHILD's program compiles in; nothing is "
    "written, 0 hits in the second process.",
)
def _rt17_cache_settings_threshold(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.1,
    }


@wrong(
    "cache_settings",
    why="Clause 'under cache_dir, written there by the first': writes to a "
    "fixed per-user cache directory (~/.cache/jax_compilation_cache) instead of the one given; the test finds "
    "no entries under cache_dir.",
)
def _rt17_cache_settings_fixed_dir(cache_dir):
    return {
        "jax_compilation_cache_dir": os.path.expanduser("~/.cache/jax_compilation_cache"),
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }
