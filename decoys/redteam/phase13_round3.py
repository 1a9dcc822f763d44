"""Red-team wrong answers for phase 13, written from the contract only.

Round 3: aimed at answers that fit the listed examples (sizes, dtypes, program shapes, streams)
but break a contract clause elsewhere, or meet a budget by the letter on a figure the compiler
does not see.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
BF16 = jnp.bfloat16


def _block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


# ---- remat_loss ---------------------------------------------------------------------------------


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': checkpoint_dots saves every dot's output, "
    "and x @ w1 IS the wide hidden layer, so the backward pass keeps it again; wrong on "
    "REMAT_CASES[0] (8, 128, 256)",
)
def _rt3_remat_save_dots(params, x):
    blk = jax.checkpoint(_block, policy=jax.checkpoint_policies.checkpoint_dots)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes' on every depth: only the first 8 blocks (the "
    "first case's depth) are checkpointed, later blocks keep their hidden layers; wrong on a "
    "deep net (depth 24, width 64, batch 256) where 16 unrematerialised blocks remain",
)
def _rt3_remat_first_eight(params, x):
    blk = jax.checkpoint(_block)
    for i, p in enumerate(params):
        x = blk(p, x) if i < 8 else _block(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'the same value and the same gradients': the saved residual stream is rounded to "
    "bf16 between blocks to halve what the backward pass keeps; loss and grads drift by ~1e-3 "
    "relative on REMAT_CASES[0]",
)
def _rt3_remat_bf16_stream(params, x):
    blk = jax.checkpoint(_block)
    for p in params:
        x = blk(p, x).astype(BF16).astype(jnp.float32)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': a checkpointed lax.scan over stacked params "
    "looks cheap on flops only because cost_analysis counts the while body once (15% of the "
    "original's), while the stacked weight gradients are temps: 2.2x the original's temp "
    "bytes on REMAT_CASES[0] (8, 128, 256)",
)
def _rt3_remat_scan_stack(params, x):
    w1s = jnp.stack([p[0] for p in params])
    w2s = jnp.stack([p[1] for p in params])

    @jax.checkpoint
    def body(x, p):
        return _block(p, x), None

    x, _ = jax.lax.scan(body, x, (w1s, w2s))
    return jnp.mean(x**2)


# ---- mixed_step ---------------------------------------------------------------------------------

LEARNING_RATE = 1e-3


def _mse_mixed(params, x, y, dt=BF16):
    (w1, b1), (w2, b2) = params
    h = jnp.dot(x.astype(dt), w1.astype(dt), preferred_element_type=jnp.float32) + b1
    h = jax.nn.gelu(h.astype(dt))
    out = jnp.dot(h, w2.astype(dt), preferred_element_type=jnp.float32) + b2
    return jnp.mean((out - y) ** 2)


@wrong(
    "mixed_step",
    why="'every dot's operands are bfloat16 (not float16)': the activations are carried in "
    "float16 (same 16 bits, same bytes saved), 5 exponent bits; wrong on every MIXED_CASES "
    "input (the module's dots read f16)",
)
def _rt3_mixed_float16(params, x, y):
    loss, grads = jax.value_and_grad(functools.partial(_mse_mixed, dt=jnp.float16))(params, x, y)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss


@wrong(
    "mixed_step",
    why="'params stay float32 ... each param's update within 5%': the update is applied in "
    "bf16 (p.astype(bf16) - lr * g) and cast back, so a 1e-5 step on a 0.06 weight rounds "
    "away; wrong on MIXED_CASES[0]",
)
def _rt3_mixed_bf16_update(params, x, y):
    loss, grads = jax.value_and_grad(_mse_mixed)(params, x, y)
    new = jax.tree.map(
        lambda p, g: (p.astype(BF16) - LEARNING_RATE * g.astype(BF16)).astype(jnp.float32),
        params,
        grads,
    )
    return new, loss


@wrong(
    "mixed_step",
    why="'it accumulates into float32': bf16 x bf16 dots without preferred_element_type return "
    "bf16 (the accumulation is rounded to bf16), cast to f32 afterwards; the module's dot "
    "results are bf16 on every MIXED_CASES input",
)
def _rt3_mixed_bf16_accumulate(params, x, y):
    def mse(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jax.nn.gelu((x.astype(BF16) @ w1.astype(BF16)).astype(jnp.float32) + b1).astype(BF16)
        out = (h @ w2.astype(BF16)).astype(jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss


@wrong(
    "mixed_step",
    why="'the loss is a float32 scalar within 2e-3 of the f32 loss': the residual and its "
    "square are taken in bf16 (y cast once, the mean of a bf16 array), the loss returned "
    "as f32 but rounded to 8 bits of mantissa; off by > 2e-3 on MIXED_CASES[0] (loss ~1.4)",
)
def _rt3_mixed_bf16_loss(params, x, y):
    def mse(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x.astype(BF16), w1.astype(BF16), preferred_element_type=jnp.float32) + b1
        h = jax.nn.gelu(h.astype(BF16))
        out = jnp.dot(h, w2.astype(BF16), preferred_element_type=jnp.float32) + b2
        return jnp.mean((out.astype(BF16) - y.astype(BF16)) ** 2).astype(jnp.float32)

    loss, grads = jax.value_and_grad(mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss


# ---- rollout ------------------------------------------------------------------------------------

STEPS = 32


def _step(w, b, x):
    return jnp.tanh(x @ w + b)


@wrong(
    "rollout",
    why="'a loop that runs at most 8 trips (counted by the compiler: its known_trip_count)': "
    "the trip count is a traced value (the step count derived from an array), so the while "
    "carries no known_trip_count; wrong on ROLLOUT_CASES[0]",
)
def _rt3_rollout_traced_bound(w, b, x):
    trips = jnp.asarray(STEPS // 4, jnp.int32) + jnp.zeros((), jnp.int32) * jnp.int32(x.shape[0])
    trips = trips + (jnp.sum(b) * 0).astype(jnp.int32)

    def four(_, x):
        for _ in range(4):
            x = _step(w, b, x)
        return x

    return jax.lax.fori_loop(0, trips, four, x)


@wrong(
    "rollout",
    why="'at most 40% of the unrolled original's instructions': unroll=16 makes 2 trips but puts "
    "16 copies of the step in the body, half the original's size; wrong on ROLLOUT_CASES[0]",
)
def _rt3_rollout_unroll16(w, b, x):
    x, _ = jax.lax.scan(lambda x, _: (_step(w, b, x), None), x, None, length=STEPS, unroll=16)
    return x


@wrong(
    "rollout",
    why="'32 steps of x = tanh(x @ w + b)' compiled into the module: the 8-trip loop's body "
    "calls a host pure_callback doing 4 NumPy steps, so the module holds a custom-call and its "
    "instruction count says nothing of the work; wrong on ROLLOUT_CASES[0]",
)
def _rt3_rollout_host_steps(w, b, x):
    def four_np(w, b, x):
        w, b, x = np.asarray(w), np.asarray(b), np.asarray(x)
        for _ in range(4):
            x = np.tanh(x @ w + b).astype(np.float32)
        return x

    def four(_, x):
        return jax.pure_callback(four_np, jax.ShapeDtypeStruct(x.shape, x.dtype), w, b, x)

    return jax.lax.fori_loop(0, STEPS // 4, four, x)


@wrong(
    "rollout",
    why="'each while carries known_trip_count <= 8, its body a quarter of the steps': two "
    "nested scans (8 outer trips of an inner 4-trip scan) give an inner while whose body does "
    "one step, run 32 times; wrong on ROLLOUT_CASES[0]",
)
def _rt3_rollout_nested(w, b, x):
    def inner(x, _):
        x, _ = jax.lax.scan(lambda x, _: (_step(w, b, x), None), x, None, length=4)
        return x, None

    x, _ = jax.lax.scan(inner, x, None, length=STEPS // 4)
    return x


# ---- sharded_mlp --------------------------------------------------------------------------------


def _mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': the gather is moved from the hidden "
    "layer to the weight (w2 constrained replicated, h left split): an all-gather of "
    "(hidden, width) instead of (batch, hidden), more bytes whenever width > batch; wrong on "
    "SHARDED_CASES[0] (16, 128, 512)",
)
def _rt3_sharded_gather_weight(x, w1, w2):
    w2 = jax.lax.with_sharding_constraint(w2, NamedSharding(_mesh(), P()))
    h = jax.nn.relu(x @ w1)
    return h @ w2


@wrong(
    "sharded_mlp",
    why="'the same result': a shard_map that multiplies each device's column block of h by its "
    "row block of w2 and returns the partial product as replicated without the psum "
    "(check_vma off to silence the error): zero collective bytes, one device's partial sum; "
    "wrong on SHARDED_CASES[0]",
)
def _rt3_sharded_no_psum(x, w1, w2):
    def local(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    f = jax.shard_map(
        local,
        mesh=_mesh(),
        in_specs=(P(), P(None, "x"), P("x", None)),
        out_specs=P(),
        check_vma=False,
    )
    return f(x, w1, w2)


@wrong(
    "sharded_mlp",
    why="'the same result' and 'at most half the original's collective bytes': the hidden "
    "layer is cast to bf16 to halve what the all-gather moves, but the CPU compiler moves the "
    "converts across the collectives (the all-gather and all-reduce stay f32: 100% of the "
    "original's bytes) and the result is off by ~4e-3 relative; wrong on SHARDED_CASES[0]",
)
def _rt3_sharded_bf16_gather(x, w1, w2):
    h = jax.nn.relu(x @ w1).astype(BF16)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(_mesh(), P()))
    return (h @ w2.astype(BF16)).astype(jnp.float32)


@wrong(
    "sharded_mlp",
    why="'with at most half the original's collective bytes': the hidden layer is pinned split "
    "by the batch (the split a data-parallel layer has) instead of by columns, so the "
    "partitioner reshards h (all-to-all) and then gathers again for the row-split w2; wrong on "
    "SHARDED_CASES[0]",
)
def _rt3_sharded_batch_split(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(_mesh(), P("x", None)))
    return h @ w2


# ---- roofline -----------------------------------------------------------------------------------

_ITEMSIZE = {"float32": 4, "bfloat16": 2}


def _count(program, shapes, itemsize):
    """(flops, elements read and written) as the contract counts them."""
    size = [int(np.prod(s)) for s in shapes]
    if program == "matmul":
        (m, k), (_, n) = shapes
        return 2 * m * k * n, m * k + k * n + m * n
    if program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        return 2 * b * m * k * n, b * (m * k + k * n + m * n)
    if program == "matvec":
        (m, k), _ = shapes
        return 2 * m * k, m * k + k + m
    if program == "add":
        return size[0], 3 * size[0]
    if program == "scale_add":
        return 2 * size[0], 3 * size[0]
    if program == "row_sums":
        rows, cols = shapes[0]
        return rows * (cols - 1), rows * cols + rows
    if program == "total":
        return size[0] - 1, size[0] + 1
    raise KeyError(program)


def _bound(intensity, chip):
    flops, bandwidth = PEAKS[chip]
    return "compute" if intensity > flops / bandwidth else "memory"


@wrong(
    "roofline",
    why="'whether it is compute- or memory-bound on chip': flops, bytes and intensity are right, "
    "but the ridge point is the scaling book's ~240 flop/byte (TPU v5e's) for every chip; wrong "
    "on ('matmul', ((768, 768), (768, 768)), 'bfloat16', 'h100'): intensity 256 < H100's "
    "ridge 295, memory-bound, answered compute",
)
def _rt3_roof_v5e_ridge(program, shapes, dtype, chip):
    flops, elements = _count(program, shapes, _ITEMSIZE[dtype])
    nbytes = elements * _ITEMSIZE[dtype]
    intensity = flops / nbytes
    return float(flops), float(nbytes), intensity, "compute" if intensity > 240.0 else "memory"


@wrong(
    "roofline",
    why="'arithmetic intensity (flops per byte)' used for the bound: the figures returned are "
    "right, but the bound compares flops per ELEMENT with the ridge (flop/s over bytes/s), a "
    "factor itemsize too high; wrong on ('matmul', ((1024, 1024), (1024, 1024)), 'float32', "
    "'v5e'): 171 flop/byte is memory-bound, answered compute",
)
def _rt3_roof_bound_per_element(program, shapes, dtype, chip):
    flops, elements = _count(program, shapes, _ITEMSIZE[dtype])
    nbytes = elements * _ITEMSIZE[dtype]
    return float(flops), float(nbytes), flops / nbytes, _bound(flops / elements, chip)


@wrong(
    "roofline",
    why="'bytes as a fused program moves them (... the output written once)': the intensity's "
    "denominator is the bytes read only (the output left out), while the bytes figure returned "
    "includes it; intensity 14% high on ('matmul', ((256, 512), (512, 128)), 'float32', 'v5e') "
    "and 50% high on a square matmul",
)
def _rt3_roof_intensity_inputs_only(program, shapes, dtype, chip):
    flops, elements = _count(program, shapes, _ITEMSIZE[dtype])
    item = _ITEMSIZE[dtype]
    nbytes = elements * item
    read = sum(int(np.prod(s)) for s in shapes) * item
    return float(flops), float(nbytes), flops / read, _bound(flops / read, chip)


@wrong(
    "roofline",
    why="'total: any shape -> scalar': the element count is taken as rows * cols "
    "(shape[0] * shape[-1]), right on the 2-D examples, wrong on a 3-D input: "
    "('total', ((7, 9, 11),), 'float32', 'v5e') counts 77 elements of 693",
)
def _rt3_roof_total_2d(program, shapes, dtype, chip):
    item = _ITEMSIZE[dtype]
    if program == "total":
        n = shapes[0][0] * shapes[0][-1]
        flops, elements = n - 1, n + 1
    else:
        flops, elements = _count(program, shapes, item)
    nbytes = elements * item
    return float(flops), float(nbytes), flops / nbytes, _bound(flops / nbytes, chip)


@wrong(
    "roofline",
    why="'bytes as a fused program moves them ... Does 2 * a + b write the 2 * a': scale_add "
    "counts the 2 * a temporary written and read again (5 arrays of traffic, not 3): 67% too "
    "many bytes on ('scale_add', ((1000,), (1000,)), 'float32', 'v5e')",
)
def _rt3_roof_scale_add_temp(program, shapes, dtype, chip):
    item = _ITEMSIZE[dtype]
    flops, elements = _count(program, shapes, item)
    if program == "scale_add":
        elements = 5 * int(np.prod(shapes[0]))
    nbytes = elements * item
    return float(flops), float(nbytes), flops / nbytes, _bound(flops / nbytes, chip)


# ---- serve --------------------------------------------------------------------------------------


def _best_buckets(sizes, k, weighted=True):
    """At most k bucket sizes (the largest size last) minimising the padded rows of `sizes`
    (each distinct size counted once when not weighted)."""
    values = sorted(set(int(n) for n in sizes))
    count = {v: 0 for v in values}
    for n in sizes:
        count[int(n)] += 1 if weighted else 0
    if not weighted:
        count = {v: 1 for v in values}
    m = len(values)
    inf = float("inf")
    # cost[i][j]: pad values[i..j] up to values[j]
    best = [[inf] * (m + 1) for _ in range(k + 1)]
    choice = [[-1] * (m + 1) for _ in range(k + 1)]
    best[0][0] = 0.0
    for used in range(1, k + 1):
        for j in range(1, m + 1):
            for i in range(j):
                if best[used - 1][i] == inf:
                    continue
                top = values[j - 1]
                waste = sum((top - values[t]) * count[values[t]] for t in range(i, j))
                if best[used - 1][i] + waste < best[used][j]:
                    best[used][j] = best[used - 1][i] + waste
                    choice[used][j] = i
    used = min(range(1, k + 1), key=lambda u: best[u][m])
    buckets, j = [], m
    while j > 0:
        buckets.append(values[j - 1])
        j, used = choice[used][j], used - 1
    return sorted(buckets)


def _answer(requests, run, buckets, none_to_zeros=True):
    out = []
    for x, bias in requests:
        x = np.asarray(x)
        n, width = x.shape
        size = next(b for b in buckets if b >= n)
        padded = np.zeros((size, width), x.dtype)
        padded[:n] = x
        if bias is None and none_to_zeros:
            bias = np.zeros(width, x.dtype)
        out.append(np.asarray(run(padded, bias))[:n])
    return out


@wrong(
    "serve",
    why="'every distinct pytree structure (None is a structure) is a compile': optimal buckets "
    "for max_compiles sizes, but bias=None is passed on as None, so each bucket compiles twice "
    "(with and without bias); over max_compiles on SERVE_CASES[0] (60 requests, seed 0, 4)",
)
def _rt3_serve_none_passthrough(requests, run, max_compiles):
    sizes = [np.shape(x)[0] for x, _ in requests]
    return _answer(requests, run, _best_buckets(sizes, max_compiles), none_to_zeros=False)


@wrong(
    "serve",
    why="'at most max_compiles compiles': a fixed recipe, powers of two up to the largest "
    "request (zeros for a missing bias), needs one compile per power of two the stream "
    "touches; 9 compiles for max 4 on SERVE_CASES[0]",
)
def _rt3_serve_pow2(requests, run, max_compiles):
    top = max(np.shape(x)[0] for x, _ in requests)
    buckets = [1 << i for i in range(int(top).bit_length() + 1)]
    return _answer(requests, run, buckets)


@wrong(
    "serve",
    why="'padded flops within the factor the test states': max_compiles buckets at evenly "
    "spaced quantiles of the request sizes (the last the largest) keep compiles in budget but "
    "leave the long tail's wide gap: 2.2x the unpadded flops on SERVE_CASES[0] (factor 1.5)",
)
def _rt3_serve_quantiles(requests, run, max_compiles):
    sizes = sorted(np.shape(x)[0] for x, _ in requests)
    k = max_compiles
    buckets = sorted(
        {sizes[min(len(sizes) - 1, (len(sizes) * (i + 1)) // k - 1)] for i in range(k)}
    )
    buckets[-1] = sizes[-1]
    return _answer(requests, run, buckets)


@wrong(
    "serve",
    why="'padded flops within the factor ... of the flops of the requests unpadded': the "
    "boundaries minimise the padding of the DISTINCT sizes (each counted once), not of the "
    "stream, so the many small requests pad to a far bucket; it passes the three SERVE_CASES "
    "(1.43, 1.34, 1.69) but request_stream(60, seed=9) with 4 compiles pads to 1.60x the "
    "unpadded flops where the best 4 buckets give 1.46x (factor 1.5)",
)
def _rt3_serve_distinct_sizes(requests, run, max_compiles):
    sizes = [np.shape(x)[0] for x, _ in requests]
    return _answer(requests, run, _best_buckets(sizes, max_compiles, weighted=False))


@wrong(
    "serve",
    why="'at most max_compiles compiles, padded flops within the factor': one bucket, the "
    "largest request, for everything (zeros for a missing bias): one compile, but every request "
    "pays 200 rows; ~5x the unpadded flops on SERVE_CASES[0]",
)
def _rt3_serve_one_bucket(requests, run, max_compiles):
    top = max(np.shape(x)[0] for x, _ in requests)
    return _answer(requests, run, [top])


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="'with at most 55% of its peak memory (memory_analysis of its .lower())': the call "
    "donates, but the wrapper's .lower is borrowed from a plain jax.jit(step) so that it "
    "'has one', and that program keeps old and new state live at once: 100% of the original's "
    "peak on DONATION_CASES[0]",
)
def _rt3_donate_plain_lower(step):
    donating = jax.jit(step, donate_argnums=0)

    def call(state, batch):
        return donating(state, batch)

    call.lower = jax.jit(step).lower
    return call


@wrong(
    "donating_step",
    why="'moves nothing between host and device when state and batch are already on the "
    "device': the new state is handed back as NumPy arrays (np.asarray, 'to free the device'), "
    "so the next call of the training loop passes host arrays, an implicit host-to-device "
    "transfer that jax.transfer_guard('disallow') refuses; wrong on DONATION_CASES[0] run for "
    "two steps",
)
def _rt3_donate_host_state(step):
    donating = jax.jit(step, donate_argnums=0)

    def call(state, batch):
        new_state, loss = donating(state, batch)
        return jax.tree.map(np.asarray, new_state), loss

    call.lower = donating.lower
    return call


@wrong(
    "donating_step",
    why="'each call of it runs that program: after a call the old state's buffers are "
    "deleted': the object's .lower is the donating jit (the budget holds), but calling it "
    "runs a plain jax.jit(step) to keep the caller's state usable; the old state survives "
    "a call on DONATION_CASES[0]",
)
def _rt3_donate_lower_only(step):
    donating = jax.jit(step, donate_argnums=0)
    plain = jax.jit(step)

    def call(state, batch):
        return plain(state, batch)

    call.lower = donating.lower
    return call


@wrong(
    "donating_step",
    why="'after a call the old state's buffers are deleted': the wrapper copies the state "
    "before the donating call (to keep the caller's arrays valid), so the copies are donated "
    "and the caller's old state is never deleted; wrong on DONATION_CASES[0]",
)
def _rt3_donate_copy_first(step):
    donating = jax.jit(step, donate_argnums=0)

    def call(state, batch):
        return donating(jax.tree.map(jnp.copy, state), batch)

    call.lower = donating.lower
    return call


@wrong(
    "donating_step",
    why="'moves nothing between host and device when state and batch are already on the "
    "device': the learning rate and momentum are passed as Python floats to the donating "
    "jit (so they are not baked in), an implicit host-to-device transfer on every call that "
    "jax.transfer_guard('disallow') refuses; wrong on DONATION_CASES[0]",
)
def _rt3_donate_scalar_args(step):
    def inner(state, batch, scale):
        new_state, loss = step(state, batch)
        return new_state, loss * scale

    donating = jax.jit(inner, donate_argnums=0)

    def call(state, batch):
        return donating(state, batch, 1.0)

    call.lower = lambda state, batch: donating.lower(state, batch, 1.0)
    return call


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="'finds EVERY compile in the persistent compilation cache': the threshold is lowered "
    "from 1 s to 0.1 s ('the program is small'), which lets the one slow compile in but not the "
    "three fast ones (jnp.arange and the eager ops compile too): the second process hits 1 and "
    "compiles 3 again, on the CACHE_CHILD program",
)
def _rt3_cache_tenth_second(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.1,
    }


@wrong(
    "cache_settings",
    why="'written there by the first': jax_compilation_cache_max_size is read as megabytes "
    "(1024 = 1 GB), but it is bytes, so every entry is evicted as soon as it is written: the "
    "second process hits nothing on the CACHE_CHILD program",
)
def _rt3_cache_max_size_mb(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_compilation_cache_max_size": 1024,
    }


@wrong(
    "cache_settings",
    why="'under cache_dir': the cache directory is the docs' example path "
    "(<tmp>/jax_cache) instead of the one given, so the first process writes nothing under "
    "cache_dir (and a second run of the test finds stale entries there); wrong for any "
    "cache_dir",
)
def _rt3_cache_docs_path(cache_dir):
    import tempfile

    return {
        "jax_compilation_cache_dir": os.path.join(tempfile.gettempdir(), "jax_cache"),
        "jax_persistent_cache_min_compile_time_secs": 0.0,
    }


@wrong(
    "cache_settings",
    why="'a small program': the entry-size threshold is set to 1 MiB along with a zero "
    "compile-time threshold, read as a size cap; the small program's entries are far below "
    "1 MiB, so nothing is written and the second process hits nothing",
)
def _rt3_cache_min_entry_mib(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 1 << 20,
    }
