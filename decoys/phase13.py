"""Plausible wrong answers to phase 13; each must be caught by the tests it names.

Most budget decoys meet the budget by cheating (they change the math, drop work, or lower
precision where the task forbids it) and fail the numeric checks; others keep the math and miss
the budget. Accepted variants are correct answers spelled differently; every test of their task
must pass.
"""

import functools
import math
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import accepted, decoy
from katas.phase13.programs import ROOFLINE_PROGRAMS, block, f32_step, mesh, mlp, sharding

BF16 = jnp.bfloat16
PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}

# ---- remat_loss ---------------------------------------------------------------------------------


def _checkpointed(params, x, policy=None, blocks=None):
    step = jax.checkpoint(block, policy=policy)
    for p in params if blocks is None else params[:blocks]:
        x = step(p, x)
    return jnp.mean(x**2)


@decoy(
    "remat_loss",
    caught_by=["test_remat_meets_the_memory_budget"],
    why="checkpoints the whole loss: the recomputed forward keeps every block's hidden layer",
)
def remat_whole_loss(params, x):
    def loss(params, x):
        for p in params:
            x = block(p, x)
        return jnp.mean(x**2)

    return jax.checkpoint(loss)(params, x)


@decoy(
    "remat_loss",
    caught_by=["test_remat_meets_the_memory_budget"],
    why="dots_saveable saves the matmul outputs, the wide hidden layers the budget is about",
)
def remat_saves_dots(params, x):
    return _checkpointed(params, x, jax.checkpoint_policies.dots_saveable)


@decoy(
    "remat_loss",
    caught_by=["test_remat_keeps_loss_and_grads"],
    why="meets the budget by dropping the last block",
)
def remat_drops_a_block(params, x):
    return _checkpointed(params, x, blocks=len(params) - 1)


@decoy(
    "remat_loss",
    caught_by=["test_remat_keeps_loss_and_grads"],
    why="checkpoints and computes the blocks in bf16: less memory, another loss",
)
def remat_in_bf16(params, x):
    step = jax.checkpoint(block)
    h = x.astype(BF16)
    for w1, w2 in params:
        h = step((w1.astype(BF16), w2.astype(BF16)), h)
    return jnp.mean(h.astype(jnp.float32) ** 2)


def _host_loss_and_grads(params, x):
    """deep_loss and its gradients in NumPy (float32), the backward pass by hand."""
    x, saved = np.asarray(x), []
    for w1, w2 in params:
        w1, w2 = np.asarray(w1), np.asarray(w2)
        t = np.tanh(x @ w1)
        saved.append((x, t, w1, w2))
        x = x + t @ w2
    g, grads = (2.0 * x / x.size).astype(np.float32), []
    for xin, t, w1, w2 in reversed(saved):
        gz = (g @ w2.T) * (1 - t**2)
        grads.append(((xin.T @ gz).astype(np.float32), (t.T @ g).astype(np.float32)))
        g = (g + gz @ w1.T).astype(np.float32)
    return np.float32(np.mean(x**2)), grads[::-1], g


@decoy(
    "remat_loss",
    caught_by=["test_remat_meets_the_memory_budget"],
    why="the loss and its gradients in NumPy through pure_callback: the right values, and a "
    "module whose temp bytes and flops cannot see the work",
)
def remat_on_the_host(params, x):
    def specs(tree):
        return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), tree)

    @jax.custom_vjp
    def loss(params, x):
        spec = jax.ShapeDtypeStruct((), jnp.float32)
        return jax.pure_callback(lambda p, x: _host_loss_and_grads(p, x)[0], spec, params, x)

    def backward(res, ct):
        grads, gx = jax.pure_callback(lambda p, x: _host_loss_and_grads(p, x)[1:], specs(res), *res)
        return jax.tree.map(lambda g: g * ct, grads), gx * ct

    loss.defvjp(lambda params, x: (loss(params, x), (params, x)), backward)
    return loss(params, x)


@accepted("remat_loss", why="jax.checkpoint's default policy saves nothing inside the block")
def remat_default_policy(params, x):
    return _checkpointed(params, x)


@accepted("remat_loss", why="save_only_these_names with no names saves nothing either")
def remat_no_names(params, x):
    return _checkpointed(params, x, jax.checkpoint_policies.save_only_these_names())


# ---- mixed_step ---------------------------------------------------------------------------------


def _update(params, grads):
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)


@decoy(
    "mixed_step",
    caught_by=["test_mixed_step_keeps_f32_params_and_the_update"],
    why="keeps bf16 params: an update smaller than a bf16 step of the weight rounds away",
)
def mixed_bf16_params(params, x, y):
    params16 = jax.tree.map(lambda p: p.astype(BF16), params)

    def loss(p):
        out = mlp(p, x.astype(BF16)).astype(jnp.float32)
        return jnp.mean((out - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params16)
    return jax.tree.map(lambda p: p.astype(jnp.float32), _update(params16, grads)), value


@decoy(
    "mixed_step",
    caught_by=["test_mixed_step_meets_the_bytes_budget"],
    why="accumulates the matmuls in bf16 (a bf16 dot result), though params and update are f32",
)
def mixed_bf16_accumulation(params, x, y):
    def loss(params):
        (w1, b1), (w2, b2) = params
        h = jax.nn.gelu(x.astype(BF16) @ w1.astype(BF16) + b1.astype(BF16))
        out = (h @ w2.astype(BF16)).astype(jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return _update(params, grads), value


@decoy(
    "mixed_step",
    caught_by=["test_mixed_step_meets_the_bytes_budget"],
    why="casts only x to bf16: the dot with an f32 weight promotes it back, nothing shrinks",
)
def mixed_casts_x_only(params, x, y):
    return f32_step(params, x.astype(BF16), y)


def _mixed_matmul_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.matmul(x.astype(BF16), w1.astype(BF16), preferred_element_type=jnp.float32)
    h = jax.nn.gelu((h + b1).astype(BF16))
    out = jnp.matmul(h, w2.astype(BF16), preferred_element_type=jnp.float32)
    return jnp.mean((out + b2 - y) ** 2)


@decoy(
    "mixed_step",
    caught_by=["test_mixed_step_meets_the_bytes_budget"],
    why="float16 operands where bf16 is asked: the same bytes, another format (5 exponent bits)",
)
def mixed_float16_operands(params, x, y):
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        f16 = jnp.float16
        h = jnp.dot(x.astype(f16), w1.astype(f16), preferred_element_type=jnp.float32) + b1
        h = jax.nn.gelu(h.astype(f16))
        out = jnp.dot(h, w2.astype(f16), preferred_element_type=jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    loss_value, grads = jax.value_and_grad(loss)(params, x, y)
    return _update(params, grads), loss_value


@accepted("mixed_step", why="jnp.matmul with preferred_element_type, the update spelled apart")
def mixed_with_matmul(params, x, y):
    value, grads = jax.value_and_grad(_mixed_matmul_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - g * 1e-3, params, grads), value


# ---- rollout ------------------------------------------------------------------------------------


def _promoted(w, b, x):
    """x in the dtype the original's first step gives it (a loop's carry keeps one type)."""
    return x.astype(jnp.result_type(x, w, b))


def _scan(w, b, x, unroll=1, length=32):
    body = lambda c, _: (jnp.tanh(c @ w + b), None)  # noqa: E731
    return jax.lax.scan(body, _promoted(w, b, x), None, length, unroll=unroll)[0]


@decoy(
    "rollout",
    caught_by=["test_rollout_meets_the_size_and_trip_budgets"],
    why="a plain scan: smallest module, but 32 trips of one step each",
)
def rollout_scan(w, b, x):
    return _scan(w, b, x)


@decoy(
    "rollout",
    caught_by=["test_rollout_meets_the_size_and_trip_budgets"],
    why="unroll=True: no loop left, as many instructions as the Python loop",
)
def rollout_fully_unrolled(w, b, x):
    return _scan(w, b, x, unroll=True)


@decoy(
    "rollout",
    caught_by=["test_rollout_computes_the_original"],
    why="an off-by-one loop: 31 steps meet both budgets and compute another thing",
)
def rollout_31_steps(w, b, x):
    return _scan(w, b, x, unroll=4, length=31)


@decoy(
    "rollout",
    caught_by=["test_rollout_computes_the_original"],
    why="rewrites the step as tanh(x) @ w + b: same size, other numbers",
)
def rollout_reordered_step(w, b, x):
    body = lambda c, _: (jnp.tanh(c) @ w + b, None)  # noqa: E731
    return jax.lax.scan(body, _promoted(w, b, x), None, 32, unroll=4)[0]


@decoy(
    "rollout",
    caught_by=["test_rollout_meets_the_size_and_trip_budgets"],
    why="a body that holds four steps in a branch never taken and runs one: 32 trips, while "
    "the dots reached from the body look like four steps a trip",
)
def rollout_idle_branch(w, b, x):
    def step(h):
        return jnp.tanh(h @ w + b)

    def body(i, h):
        return jax.lax.cond(i < 0, lambda h: step(step(step(step(h)))), step, h)

    return jax.lax.fori_loop(0, 32, body, _promoted(w, b, x))


@accepted("rollout", why="fori_loop with unroll=8: 4 trips of 8 steps")
def rollout_fori(w, b, x):
    x = x.astype(jnp.promote_types(jnp.promote_types(x.dtype, w.dtype), b.dtype))
    return jax.lax.fori_loop(0, 32, lambda _, c: jnp.tanh(c @ w + b), x, unroll=8)


@accepted("rollout", why="unroll=5 leaves a remainder of 2 steps, still within both budgets")
def rollout_unroll_5(w, b, x):
    return _scan(w, b, x, unroll=5)


# ---- sharded_mlp --------------------------------------------------------------------------------


@decoy(
    "sharded_mlp",
    caught_by=["test_sharded_mlp_meets_the_collective_budget"],
    why="replicates w2 instead: an all-gather of the whole weight replaces the hidden layer's",
)
def sharded_replicates_w2(x, w1, w2):
    w2 = jax.lax.with_sharding_constraint(w2, sharding())
    return jax.nn.relu(x @ w1) @ w2


@decoy(
    "sharded_mlp",
    caught_by=["test_sharded_mlp_meets_the_collective_budget"],
    why="splits the hidden layer by rows: the partitioner gathers both weights instead",
)
def sharded_hidden_by_rows(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, sharding("x", None))
    return h @ w2


@decoy(
    "sharded_mlp",
    caught_by=["test_sharded_mlp_computes_the_original"],
    why="no collective at all: each device's partial sum is returned as if it were the total",
)
def sharded_partial_sums(x, w1, w2):
    local = lambda x, a, b: jax.nn.relu(x @ a) @ b  # noqa: E731
    specs = (P(), P(None, "x"), P("x", None))
    return jax.shard_map(local, mesh=mesh(), in_specs=specs, out_specs=P(), check_vma=False)(
        x, w1, w2
    )


@decoy(
    "sharded_mlp",
    caught_by=["test_sharded_mlp_computes_the_original"],
    why="halves the all-reduce by computing in bf16, which the task does not allow",
)
def sharded_in_bf16(x, w1, w2):
    h = jax.nn.relu(x.astype(BF16) @ w1.astype(BF16))
    return (h @ w2.astype(BF16)).astype(jnp.float32)


@decoy(
    "sharded_mlp",
    caught_by=["test_sharded_mlp_computes_the_original"],
    why="reduce-scatters the output (an eighth of the all-reduce's bytes) and device_puts it "
    "replicated: under jit the device_put is dropped, the result stays split by columns and the "
    "gather runs outside the measured program",
)
def sharded_reduce_scatter_then_device_put(x, w1, w2):
    def local(x, a, b):
        return jax.lax.psum_scatter(jax.nn.relu(x @ a) @ b, "x", scatter_dimension=1, tiled=True)

    specs = (P(), P(None, "x"), P("x", None))
    out = jax.shard_map(local, mesh=mesh(), in_specs=specs, out_specs=P(None, "x"))(x, w1, w2)
    return jax.device_put(out, sharding())


@accepted(
    "sharded_mlp",
    why="pins the hidden layer split by columns, as w1 leaves it, on a mesh made in the kata",
)
def sharded_constraint_by_columns(x, w1, w2):
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(None, "x")))
    return h @ w2


@accepted("sharded_mlp", why="shard_map with one psum of the partial outputs")
def sharded_shard_map_psum(x, w1, w2):
    def local(x, a, b):
        return jax.lax.psum(jax.nn.relu(x @ a) @ b, "x")

    specs = (P(), P(None, "x"), P("x", None))
    return jax.shard_map(local, mesh=mesh(), in_specs=specs, out_specs=P())(x, w1, w2)


# ---- roofline -----------------------------------------------------------------------------------


def _roofline(program, shapes, dtype, chip, *, fma=2, output=True, ridge=None, size=None):
    size = size or np.dtype(jnp.dtype(dtype)).itemsize
    n = math.prod(shapes[0])
    if program in ("matmul", "batched_matmul"):
        *batch, m, k = shapes[0]
        count = math.prod(batch)
        out = count * m * shapes[1][-1]
        flops, elements = fma * n * shapes[1][-1], n + math.prod(shapes[1]) + out * output
    elif program == "matvec":
        flops, elements = fma * n, n + shapes[0][1] + shapes[0][0] * output
    elif program in ("add", "scale_add"):
        flops, elements = n * (1 if program == "add" else 2), 2 * n + n * output
    elif program == "row_sums":
        flops, elements = n - shapes[0][0], n + shapes[0][0] * output
    else:
        flops, elements = n - 1, n + output
    intensity = flops / (elements * size)
    peak_flops, peak_bandwidth = PEAKS[chip]
    limit = peak_flops / peak_bandwidth if ridge is None else ridge
    return (
        float(flops),
        float(elements * size),
        intensity,
        "compute" if intensity > limit else "memory",
    )


@decoy(
    "roofline",
    caught_by=["test_roofline_matches_compiled_f32_cost", "test_roofline_matches_bf16_cost"],
    why="counts a multiply-add as one flop",
)
def roofline_one_flop_per_fma(program, shapes, dtype, chip):
    return _roofline(program, shapes, dtype, chip, fma=1)


@decoy(
    "roofline",
    caught_by=["test_roofline_matches_compiled_f32_cost"],
    why="counts the bytes read and forgets the output written",
)
def roofline_inputs_only(program, shapes, dtype, chip):
    return _roofline(program, shapes, dtype, chip, output=False)


@decoy(
    "roofline",
    caught_by=["test_roofline_matches_bf16_cost"],
    why="4 bytes per element whatever the dtype",
)
def roofline_always_f32(program, shapes, dtype, chip):
    return _roofline(program, shapes, dtype, chip, size=4)


@decoy(
    "roofline",
    caught_by=["test_roofline_classifies_by_the_ridge_point"],
    why="calls a program compute-bound when it does more flops than it moves bytes",
)
def roofline_ridge_at_one(program, shapes, dtype, chip):
    return _roofline(program, shapes, dtype, chip, ridge=1.0)


@decoy(
    "roofline",
    caught_by=["test_roofline_predicts_without_compiling"],
    why="reads the figures from the compiler instead of predicting them",
)
def roofline_compiles(program, shapes, dtype, chip):
    args = [jax.ShapeDtypeStruct(s, dtype) for s in shapes]
    cost = dict(jax.jit(ROOFLINE_PROGRAMS[program]).lower(*args).compile().cost_analysis() or {})
    flops, moved = cost["flops"], cost["bytes accessed"]
    peak_flops, peak_bandwidth = PEAKS[chip]
    bound = "compute" if flops / moved > peak_flops / peak_bandwidth else "memory"
    return float(flops), float(moved), flops / moved, bound


# ---- serve --------------------------------------------------------------------------------------


def _serve(requests, run, buckets, keep_none=False, drop_bias=False):
    answers = []
    for x, bias in requests:
        size = min(b for b in buckets if b >= len(x))
        padded = np.zeros((size, x.shape[1]), x.dtype)
        padded[: len(x)] = x
        if drop_bias or (bias is None and not keep_none):
            bias = np.zeros(x.shape[1], x.dtype)
        answers.append(np.asarray(run(padded, bias))[: len(x)])
    return answers


def _quantile_buckets(requests, count):
    """`count` buckets at evenly spaced quantiles of the sizes, the last one the largest."""
    sizes = sorted(len(x) for x, _ in requests)
    return sorted({sizes[(len(sizes) - 1) * (k + 1) // count] for k in range(count)})


@decoy(
    "serve",
    caught_by=["test_serve_answers_within_compile_and_flops_budgets"],
    why="one bucket, the largest request: one compile, several times the flops",
)
def serve_one_bucket(requests, run, max_compiles):
    return _serve(requests, run, [max(len(x) for x, _ in requests)])


@decoy(
    "serve",
    caught_by=["test_serve_answers_within_compile_and_flops_budgets"],
    why="powers of two, the usual recipe: more buckets than the compile budget",
)
def serve_powers_of_two(requests, run, max_compiles):
    largest = max(len(x) for x, _ in requests)
    return _serve(requests, run, [2**k for k in range(largest.bit_length() + 1)])


@decoy(
    "serve",
    caught_by=["test_serve_answers_within_compile_and_flops_budgets"],
    why="log-spaced buckets up to the largest size: within the compile budget, too much padding",
)
def serve_log_spaced(requests, run, max_compiles):
    largest = max(len(x) for x, _ in requests)
    count = max_compiles
    return _serve(requests, run, [round(largest ** ((k + 1) / count)) for k in range(count)])


@decoy(
    "serve",
    caught_by=["test_serve_answers_within_compile_and_flops_budgets"],
    why="good buckets, but a missing bias is passed as None: a second pytree, twice the compiles",
)
def serve_passes_none(requests, run, max_compiles):
    return _serve(requests, run, _quantile_buckets(requests, max_compiles), keep_none=True)


@decoy(
    "serve",
    caught_by=["test_serve_answers_within_compile_and_flops_budgets"],
    why="one pytree by dropping the bias of every request",
)
def serve_drops_bias(requests, run, max_compiles):
    return _serve(requests, run, _quantile_buckets(requests, max_compiles), drop_bias=True)


# ---- donating_step ------------------------------------------------------------------------------


@decoy(
    "donating_step",
    caught_by=["test_donating_step_halves_peak_memory"],
    why="jit without donation: old and new state are held at once",
)
def donating_nothing(step):
    return jax.jit(step)


@decoy(
    "donating_step",
    caught_by=["test_donating_step_halves_peak_memory"],
    why="donates the batch, which no output can reuse",
)
def donating_the_batch(step):
    return jax.jit(step, donate_argnums=1)


@decoy(
    "donating_step",
    caught_by=["test_donating_step_trains_like_the_original"],
    why="donates the state and skips the momentum update: less to hold, another training run",
)
def donating_without_momentum(step):
    def plain(state, batch):
        (params, momentum), loss = step(state, batch)
        return (params, state[1]), loss

    return jax.jit(plain, donate_argnums=0)


@decoy(
    "donating_step",
    caught_by=["test_donating_step_trains_like_the_original"],
    why="keeps the state in bf16 between steps, halving it instead of donating it",
)
def donating_bf16_state(step):
    def half(state, batch):
        new_state, loss = step(state, batch)
        return jax.tree.map(lambda a: a.astype(BF16).astype(jnp.float32), new_state), loss

    return jax.jit(half, donate_argnums=0)


class _LowersDonated:
    """Donates when lowered (the figure the budget reads); calls run the undonated jit."""

    def __init__(self, step):
        self._plain, self._donated = jax.jit(step), jax.jit(step, donate_argnums=0)

    def __call__(self, state, batch):
        return self._plain(state, batch)

    def lower(self, *args):
        return self._donated.lower(*args)


@decoy(
    "donating_step",
    caught_by=["test_donating_step_halves_peak_memory"],
    why=".lower() donates, so the compiled figure meets the budget, but every call runs the jit "
    "without donation: the old state is never reused",
)
def donating_only_when_lowered(step):
    return _LowersDonated(step)


@accepted("donating_step", why="donate_argnames names the state argument")
def donating_by_name(step):
    return jax.jit(step, donate_argnames="state")


# ---- cache_settings -----------------------------------------------------------------------------


@decoy(
    "cache_settings",
    caught_by=["test_second_process_hits_the_cache"],
    why="only the directory: programs that compile in under a second are not written",
)
def cache_directory_only(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir}


@decoy(
    "cache_settings",
    caught_by=["test_second_process_hits_the_cache"],
    why="caches every compile but turns the cache off",
)
def cache_disabled(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_enable_compilation_cache": False,
    }


@decoy(
    "cache_settings",
    caught_by=["test_second_process_hits_the_cache"],
    why="a minimum entry size larger than any small program: nothing is written",
)
def cache_entries_too_small(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 1 << 30,
    }


_ELSEWHERE = tempfile.mkdtemp(prefix="phase13-cache-")


@decoy(
    "cache_settings",
    caught_by=["test_second_process_hits_the_cache"],
    why="a cache that works, in a directory of its own: nothing is written under cache_dir",
)
def cache_elsewhere(cache_dir):
    return {
        "jax_compilation_cache_dir": _ELSEWHERE,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
    }


@accepted("cache_settings", why="an int threshold and the cache switched on explicitly")
def cache_explicit(cache_dir):
    return {
        "jax_enable_compilation_cache": True,
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0,
    }


# the output's shape of each program, from its argument shapes
_OUTPUT_SHAPE = {
    "matmul": lambda a, b: (a[0], b[1]),
    "batched_matmul": lambda a, b: (a[0], a[1], b[2]),
    "matvec": lambda a, v: (a[0],),
    "add": lambda a, b: a,
    "scale_add": lambda a, b: a,
    "row_sums": lambda a: (a[0],),
    "total": lambda a: (),
}


@accepted("roofline", why="counts from the output's shape: flops per output element")
def roofline_from_output_shape(program, shapes, dtype, chip):
    out = math.prod(_OUTPUT_SHAPE[program](*shapes))
    size = np.dtype(jnp.dtype(dtype)).itemsize
    reads = sum(math.prod(s) for s in shapes)
    if program in ("matmul", "batched_matmul", "matvec"):
        flops = 2 * out * shapes[0][-1]
    elif program in ("add", "scale_add"):
        flops = out * (1 if program == "add" else 2)
    else:
        flops = math.prod(shapes[0]) - out
        if dtype == "bfloat16":  # summed in f32: each element converted up, each result down
            flops += math.prod(shapes[0]) + out
    moved = (reads + out) * size
    peak_flops, peak_bandwidth = PEAKS[chip]
    bound = "memory" if flops / moved <= peak_flops / peak_bandwidth else "compute"
    return float(flops), float(moved), flops / moved, bound


@decoy(
    "roofline",
    caught_by=["test_roofline_elementwise_of_any_rank"],
    why="reads the element-wise programs' arguments as matrices (rows times columns), as every "
    "listed add and scale_add is",
)
def roofline_elementwise_as_matrices(program, shapes, dtype, chip):
    if program in ("add", "scale_add"):
        rows, cols = (*shapes[0], 1, 1)[:2]  # a vector as one row, a scalar as 1 x 1
        flops, moved = rows * cols * (1 if program == "add" else 2), 3 * rows * cols
        moved *= np.dtype(jnp.dtype(dtype)).itemsize
        peak_flops, peak_bandwidth = PEAKS[chip]
        bound = "compute" if flops / moved > peak_flops / peak_bandwidth else "memory"
        return float(flops), float(moved), flops / moved, bound
    return roofline_from_output_shape(program, shapes, dtype, chip)


@decoy(
    "roofline",
    caught_by=["test_roofline_elementwise_of_any_rank"],
    why="takes scale_add's 2.0 for a float32 constant in bfloat16, as jnp.sum widens: a convert "
    "of a up and of the result down counted (a weak-typed 2.0 * a stays bfloat16)",
)
def roofline_bf16_scale_add_converts(program, shapes, dtype, chip):
    flops, moved, _, _ = roofline_from_output_shape(program, shapes, dtype, chip)
    if program == "scale_add" and dtype == "bfloat16":
        flops += 2 * math.prod(shapes[0])
    peak_flops, peak_bandwidth = PEAKS[chip]
    bound = "compute" if flops / moved > peak_flops / peak_bandwidth else "memory"
    return float(flops), moved, flops / moved, bound


@accepted("serve", why="np.pad, and the buckets chosen by a memoised search over split points")
def serve_memoised_buckets(requests, run, max_compiles):
    sizes = sorted(len(x) for x, _ in requests)
    distinct = sorted(set(sizes))

    @functools.cache
    def best(end, left):
        """(padded rows, buckets) for the sizes up to distinct[end], with `left` buckets."""
        covered = [s for s in sizes if s <= distinct[end]]
        options: list[tuple[int, tuple[int, ...]]] = [
            (distinct[end] * len(covered), (distinct[end],))
        ]
        if left > 1:
            for start in range(end):
                rows, chosen = best(start, left - 1)
                above = sum(distinct[start] < s <= distinct[end] for s in sizes)
                options.append((rows + distinct[end] * above, (*chosen, distinct[end])))
        return min(options)

    buckets = best(len(distinct) - 1, max_compiles)[1]
    answers = []
    for x, bias in requests:
        size = min(b for b in buckets if b >= len(x))
        padded = np.pad(x, ((0, size - len(x)), (0, 0)))
        answers.append(
            np.asarray(run(padded, np.zeros(x.shape[1], x.dtype) if bias is None else bias))[
                : len(x)
            ]
        )
    return answers


@decoy(
    "cache_settings",
    caught_by=["test_cache_settings_hold_for_every_compile"],
    why="a 50 ms minimum compile time: the test's small program is cached only on a machine slow "
    "enough (or loaded enough) to take longer than that",
)
def cache_fifty_milliseconds(cache_dir):
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.05,
    }
