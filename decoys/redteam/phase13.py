"""Red-team wrong answers for phase 13, written from the contract only."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


def _rt_counts(program, shapes):
    """(flops, elements read and written) of a fused program, per the contract."""
    n = math.prod
    if program == "matmul":
        (m, k), (_, q) = shapes
        return 2 * m * k * q, m * k + k * q + m * q
    if program == "batched_matmul":
        (b, m, k), (_, _, q) = shapes
        return 2 * b * m * k * q, b * m * k + b * k * q + b * m * q
    if program == "matvec":
        (m, k), _ = shapes
        return 2 * m * k, m * k + k + m
    if program == "add":
        return n(shapes[0]), 3 * n(shapes[0])
    if program == "scale_add":
        return 2 * n(shapes[0]), 3 * n(shapes[0])
    if program == "row_sums":
        ((r, c),) = shapes
        return r * c, r * c + r
    return n(shapes[0]), n(shapes[0]) + 1  # total


# ---- roofline (predict) ---------------------------------------------------------------------


@wrong(
    "roofline",
    why="'whether it is compute- or memory-bound on `chip`': compares with one hard-coded ridge "
    "point, H100's 989e12/3.35e12 = 295 flop/byte; on v5e (ridge 240) a bf16 matmul "
    "768x768 @ 768x768 (intensity 256) is compute-bound but this answers 'memory'",
)
def roofline_one_ridge(program, shapes, dtype, chip):
    flops, elements = _rt_counts(program, shapes)
    nbytes = elements * (4 if dtype == "float32" else 2)
    intensity = flops / nbytes
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > 989e12 / 3.35e12 else "memory"),
    )


@wrong(
    "roofline",
    why="'bytes as a fused program moves them' / README 'Does 2 * a + b write the 2 * a it "
    "computes?': counts the 2 * a intermediate as written and read again (5 arrays, not 3); "
    "scale_add on float32 (4096,) answers 81920 bytes instead of 49152",
)
def roofline_unfused_scale_add(program, shapes, dtype, chip):
    flops, elements = _rt_counts(program, shapes)
    if program == "scale_add":
        elements += 2 * math.prod(shapes[0])
    nbytes = elements * (4 if dtype == "float32" else 2)
    intensity = flops / nbytes
    peak, bandwidth = _RT_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bandwidth else "memory"),
    )


@wrong(
    "roofline",
    why="'on arguments of shapes and dtype (float32, bfloat16)': bytes at 4 per element "
    "whatever the dtype; a bfloat16 matmul (512,512)@(512,512) answers 3 MiB, not 1.5 MiB "
    "(and intensity n/6 instead of n/3)",
)
def roofline_always_four_bytes(program, shapes, dtype, chip):
    flops, elements = _rt_counts(program, shapes)
    nbytes = elements * 4
    intensity = flops / nbytes
    peak, bandwidth = _RT_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bandwidth else "memory"),
    )


@wrong(
    "roofline",
    why="'total: any shape -> scalar': takes the input as a matrix (shape[0] * shape[1]); "
    "right for 2-D arguments, wrong for total on a 3-D (4, 5, 6) array (flops 20, not 120)",
)
def roofline_total_2d(program, shapes, dtype, chip):
    if program == "total":
        dims = tuple(shapes[0]) + (1, 1)
        count = dims[0] * dims[1]
        flops, elements = count, count + 1
    else:
        flops, elements = _rt_counts(program, shapes)
    nbytes = elements * (4 if dtype == "float32" else 2)
    intensity = flops / nbytes
    peak, bandwidth = _RT_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bandwidth else "memory"),
    )


@wrong(
    "roofline",
    why="'batched_matmul (b, m, k) @ (b, k, n)': counts the batch once in the flops but reads "
    "the rhs as one (k, n) matrix shared by the batch (as a broadcast weight would be); "
    "float32 (8,64,32)@(8,32,48) answers 4*(16384+1536+24576) bytes, not 4*(16384+12288+24576)",
)
def roofline_shared_rhs(program, shapes, dtype, chip):
    flops, elements = _rt_counts(program, shapes)
    if program == "batched_matmul":
        (b, m, k), (_, _, q) = shapes
        elements = b * m * k + k * q + b * m * q
    nbytes = elements * (4 if dtype == "float32" else 2)
    intensity = flops / nbytes
    peak, bandwidth = _RT_PEAKS[chip]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bandwidth else "memory"),
    )


# ---- cache_settings -------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="'finds every compile in the persistent compilation cache': sets only the directory; "
    "jax_persistent_cache_min_compile_time_secs stays 1.0 s, so the CACHE_CHILD program (ms to "
    "compile) is never written: second process 0 hits",
)
def cache_settings_dir_only(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir}


@wrong(
    "cache_settings",
    why="same clause: lowers the compile-time threshold to 0.5 s, still above the milliseconds "
    "the small program takes; both processes report 0 hits, 0 misses",
)
def cache_settings_half_second(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.5,
    }


# ---- rollout ----------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'by a loop that runs at most 8 trips': scan with unroll=3 (3 does not divide 32): the "
    "while runs 10 trips plus a remainder, above 8",
)
def rollout_unroll_three(w, b, x):
    def step(h, _):
        return jnp.tanh(h @ w + b), None

    return jax.lax.scan(step, x, None, length=32, unroll=3)[0]


@wrong(
    "rollout",
    why="'at most 40% of the unrolled original's instructions': scan with unroll=True keeps "
    "one trip but all 32 copies of the step (as many instructions as the original)",
)
def rollout_full_unroll(w, b, x):
    def step(h, _):
        return jnp.tanh(h @ w + b), None

    return jax.lax.scan(step, x, None, length=32, unroll=True)[0]


# ---- mixed_step -------------------------------------------------------------------------------


def _rt_mse(params, x, y, dtype):
    (w1, b1), (w2, b2) = params
    h = jnp.dot(x.astype(dtype), w1.astype(dtype), preferred_element_type=jnp.float32) + b1
    h = jax.nn.gelu(h)
    out = jnp.dot(h.astype(dtype), w2.astype(dtype), preferred_element_type=jnp.float32) + b2
    return jnp.mean((out - y) ** 2)


@wrong(
    "mixed_step",
    why="'matmuls fed bf16 operands': feeds float16 operands (same bytes, f32 accumulation, "
    "close values) where bf16 is asked; the dots' operands are f16 on every case",
)
def mixed_step_float16(params, x, y):
    loss, grads = jax.value_and_grad(_rt_mse)(params, x, y, jnp.float16)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


@wrong(
    "mixed_step",
    why="'params stay float32 ... each param's update within 5%': casts the params to bf16, "
    "updates them in bf16 and casts back; an update of 1e-3 * grad on a weight near 0.06 "
    "rounds to 0 or to a bf16 step (~2.4e-4), far outside 5% of the f32 update",
)
def mixed_step_bf16_params(params, x, y):
    low = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
    loss, grads = jax.value_and_grad(_rt_mse)(low, x, y, jnp.bfloat16)
    new = jax.tree.map(lambda p, g: (p - 1e-3 * g).astype(jnp.float32), low, grads)
    return new, loss.astype(jnp.float32)


# ---- donating_step ----------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="'at most 55% of its peak memory': donates the batch (argument 1) instead of the "
    "state; the new state cannot reuse the batch's smaller buffers, so the peak stays near "
    "the original's on width 512, batch 32",
)
def donating_step_donates_batch(step):
    return jax.jit(step, donate_argnums=1)


# ---- remat_loss -------------------------------------------------------------------------------


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': checkpoints each block with "
    "dots_with_no_batch_dims_saveable, which still saves x @ w1, the wide hidden layer the "
    "budget is about; temp bytes stay near the original's",
)
def remat_loss_saves_dots(params, x):
    def block(p, h):
        w1, w2 = p
        return h + jnp.tanh(h @ w1) @ w2

    rematted = jax.checkpoint(
        block, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    )
    for p in params:
        x = rematted(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="README: 'wrapping the whole loss recomputes the whole forward pass during the backward "
    "pass and keeps all of it again': jax.checkpoint around the whole loss, temp bytes not "
    "halved",
)
def remat_loss_whole(params, x):
    def loss(params, x):
        for w1, w2 in params:
            x = x + jnp.tanh(x @ w1) @ w2
        return jnp.mean(x**2)

    return jax.checkpoint(loss)(params, x)


# ---- serve ------------------------------------------------------------------------------------


@wrong(
    "serve",
    why="'in all, at most max_compiles compiles': buckets the sizes to the next power of two "
    "and keeps bias=None as its own structure; on the stream (60, seed 0) that is 2 "
    "structures x several buckets, above 4 compiles",
)
def serve_pow2(requests, run, max_compiles):
    out = []
    for x, bias in requests:
        n = x.shape[0]
        size = 1 << max(0, (n - 1).bit_length())
        padded = np.zeros((size, x.shape[1]), x.dtype)
        padded[:n] = x
        out.append(np.asarray(run(padded, bias))[:n])
    return out


# ---- sharded_mlp ------------------------------------------------------------------------------


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': pins the hidden layer split by rows "
    "(batch) instead of replicated; h @ w2 with w2 split by rows then needs h's columns split, "
    "so the partitioner moves h anyway (all-to-all/all-gather) and the output needs an "
    "all-gather of its rows",
)
def sharded_mlp_row_split(x, w1, w2):
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, PartitionSpec("x", None)))
    return h @ w2
