"""Round 13 red-team wrong answers for phase 13 (written from README, kata.py, tasks.toml and
programs.py only)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

_RT13_LR = 1e-3
_RT13_SCALE = 1024.0


# ---- shared helpers ---------------------------------------------------------------------------


def _rt13_block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


def _rt13_mlp16(params, x, *, approximate=True):
    (w1, b1), (w2, b2) = params
    bf = jnp.bfloat16
    h = jnp.dot(x.astype(bf), w1.astype(bf), preferred_element_type=jnp.float32) + b1
    h = jax.nn.gelu(h.astype(bf), approximate=approximate)
    return jnp.dot(h, w2.astype(bf), preferred_element_type=jnp.float32) + b2


def _rt13_mse16(params, x, y, approximate=True):
    return jnp.mean((_rt13_mlp16(params, x, approximate=approximate) - y) ** 2)


def _rt13_mse32(params, x, y):
    (w1, b1), (w2, b2) = params
    return jnp.mean((jax.nn.gelu(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def _rt13_best_buckets(sizes, k):
    """Buckets (sorted) minimising the padded rows of `sizes` with at most k buckets (DP)."""
    values, counts = np.unique(np.asarray(sizes), return_counts=True)
    m = len(values)
    if m <= k:
        return [int(v) for v in values]
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(k + 1)]
    back = [[0] * (m + 1) for _ in range(k + 1)]
    cost[0][0] = 0.0
    prefix = np.concatenate([[0], np.cumsum(counts)])
    for j in range(1, k + 1):
        for i in range(1, m + 1):
            for s in range(i):
                c = cost[j - 1][s] + values[i - 1] * (prefix[i] - prefix[s])
                if c < cost[j][i]:
                    cost[j][i], back[j][i] = c, s
    best_j = min(range(1, k + 1), key=lambda j: cost[j][m])
    out, i, j = [], m, best_j
    while i > 0:
        out.append(int(values[i - 1]))
        i, j = back[j][i], j - 1
    return sorted(out)


def _rt13_pad_run(x, bias, bucket, run):
    n, width = x.shape
    padded = np.zeros((bucket, width), x.dtype)
    padded[:n] = x
    b = np.zeros(width, x.dtype) if bias is None else bias
    return np.asarray(run(jax.device_put(padded), jax.device_put(b)))[:n]


# ---- mixed_step -------------------------------------------------------------------------------


@wrong(
    "mixed_step",
    why="'(new params, loss) ... the loss is a float32 scalar within 2e-3 of the f32 loss': uses "
    "the classic mixed-precision loss scaling (loss * 1024 before the grad, grads divided by "
    "1024 after, so the updates are right) but returns the loss value_and_grad gave, the SCALED "
    "one: on programs.mlp_args() the returned loss is ~1024x the f32 loss.",
)
def _rt13_mixed_scaled_loss_returned(params: tuple, x, y) -> tuple:
    scaled = lambda p, x, y: _rt13_mse16(p, x, y) * _RT13_SCALE  # noqa: E731
    loss, grads = jax.value_and_grad(scaled)(params, x, y)
    grads = jax.tree.map(lambda g: g / _RT13_SCALE, grads)
    new = jax.tree.map(lambda p, g: p - _RT13_LR * g, params, grads)
    return new, loss


@wrong(
    "mixed_step",
    why="'each param's update within 5% of the f32 step's': loss scaling done the other way "
    "round, grads unscaled twice (divided by the scale in the loss AND after the grad, a "
    "double-unscale bug): every update is 1/1024 of the f32 step's on programs.mlp_args(), "
    "though the loss returned is right.",
)
def _rt13_mixed_double_unscale(params: tuple, x, y) -> tuple:
    scaled = lambda p, x, y: _rt13_mse16(p, x, y) * _RT13_SCALE  # noqa: E731
    loss, grads = jax.value_and_grad(scaled)(params, x, y)
    grads = jax.tree.map(lambda g: g / (_RT13_SCALE * _RT13_SCALE), grads)
    new = jax.tree.map(lambda p, g: p - _RT13_LR * g, params, grads)
    return new, loss / _RT13_SCALE


# ---- remat_loss -------------------------------------------------------------------------------


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes ... and a drawn depth 4': checkpoints every "
    "block but the first ('its input is the argument x, already live, nothing to save'); the "
    "first block's wide tanh(x @ w1) is still kept, and at depth 4 (width 48, batch 448) "
    "leaving one block out keeps ~52% of the original's temp bytes (README).",
)
def _rt13_remat_all_but_first(params: list, x) -> jax.Array:
    for i, p in enumerate(params):
        x = _rt13_block(p, x) if i == 0 else jax.checkpoint(_rt13_block)(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': every block checkpointed with "
    "prevent_cse=False (the docs say it is only needed under scan, and it is 'faster'); "
    "without the optimization barriers XLA's CSE merges the recomputed forward back into the "
    "saved one, so the grad keeps every block's hidden layer: ~original temp bytes on "
    "REMAT_CASES[0].",
)
def _rt13_remat_prevent_cse_false(params: list, x) -> jax.Array:
    blk = jax.checkpoint(_rt13_block, prevent_cse=False)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'with at most 25% more flops': recursive (two-level) checkpointing, pairs of blocks "
    "wrapped in a checkpoint around blocks that are each checkpointed too ('the docs' nested "
    "remat saves more'); the backward pass replays each pair's forward and, inside it, each "
    "block's forward again: ~134% of the original's flops on every REMAT_CASES entry and at "
    "depth 4 (jax 0.12), though temp bytes and values are fine.",
)
def _rt13_remat_nested_pairs(params: list, x) -> jax.Array:
    inner = jax.checkpoint(_rt13_block)

    def pair(ps, x):
        for p in ps:
            x = inner(p, x)
        return x

    outer = jax.checkpoint(pair)
    for i in range(0, len(params), 2):
        x = outer(params[i : i + 2], x)
    return jnp.mean(x**2)


# ---- serve ------------------------------------------------------------------------------------


@wrong(
    "serve",
    why="'In all, at most max_compiles compiles': learns the buckets online from the first half "
    "of the stream (as a server would from a warm-up window) and runs any later request larger "
    "than the largest learned bucket at its own size; the stream's one largest request "
    "(request_stream puts it at a random index) lands in the second half for e.g. "
    "SERVE_CASES seeds where rng.integers(count) >= count/2, adding a compile beyond max_compiles.",
)
def _rt13_serve_warmup_window_buckets(requests: list, run: Callable, max_compiles: int) -> list:
    head = [x.shape[0] for x, _ in requests[: max(1, len(requests) // 2)]]
    buckets = _rt13_best_buckets(head, max_compiles)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        fit = [b for b in buckets if b >= n]
        out.append(_rt13_pad_run(x, bias, fit[0] if fit else n, run))
    return out


@wrong(
    "mixed_step",
    why="'Params stay float32 ... each param's update within 5% of the f32 step's': casts the whole "
    "params tree to bf16 once ('bf16 params for the forward'), takes the grad w.r.t. that tree and "
    "returns its f32 upcast minus lr * grad: the new params carry the bf16 rounding of the old "
    "(~2^-9 relative, far larger than lr * grad), so new - old is mostly rounding, not the update, "
    "on programs.mlp_args().",
)
def _rt13_mixed_params_roundtrip(params: tuple, x, y) -> tuple:
    p16 = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)

    def loss_fn(p):
        (w1, b1), (w2, b2) = p
        bf = jnp.bfloat16
        h = jnp.dot(x.astype(bf), w1, preferred_element_type=jnp.float32) + b1
        h = jax.nn.gelu(h.astype(bf))
        out = jnp.dot(h, w2, preferred_element_type=jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(p16)
    new = jax.tree.map(
        lambda p, g: p.astype(jnp.float32) - _RT13_LR * g.astype(jnp.float32), p16, grads
    )
    return new, loss.astype(jnp.float32)


@wrong(
    "mixed_step",
    why="'bytes accessed at most 3/4 of the f32 step's': writes gelu as its textbook definition "
    "x * Phi(x) (approximate=False, erf) in the bf16 path, while programs.mlp's jax.nn.gelu is "
    "the tanh approximation; loss and updates stay within tolerance, but erf lowers to a long "
    "elementwise polynomial (and its grad to another), each op a separate instruction of the "
    "lowered module: ~2.8x the f32 step's bytes accessed on all three MIXED_CASES (jax 0.12).",
)
def _rt13_mixed_exact_gelu(params: tuple, x, y) -> tuple:
    loss, grads = jax.value_and_grad(lambda p: _rt13_mse16(p, x, y, approximate=False))(params)
    return jax.tree.map(lambda p, g: p - _RT13_LR * g, params, grads), loss


# ---- rollout ----------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'the result has the original's dtype and values (x bfloat16 with w float32 is float32 "
    "from the first step on)': makes the loop type-stable by casting w and b to the STATE's "
    "dtype (x.dtype) before a scan(length=32, unroll=4): with x bfloat16 and w, b float32 every "
    "step runs in bfloat16 and the result is bfloat16, not the original's float32.",
)
def _rt13_rollout_params_to_state_dtype(w, b, x) -> jax.Array:
    w, b = w.astype(x.dtype), b.astype(x.dtype)

    def step(carry, _):
        return jnp.tanh(carry @ w + b), None

    out, _ = jax.lax.scan(step, x, None, length=32, unroll=4)
    return out


# ---- roofline ---------------------------------------------------------------------------------

_RT13_PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


@wrong(
    "roofline",
    why="'(flops, bytes, ...) of programs.ROOFLINE_PROGRAMS[program] on arguments of shapes': "
    "one generic dot rule for matmul and matvec, n = shapes[1][-1] ('the rhs's last dim'); for "
    "matvec ((m, k), (k,)) that last dim is k, so flops 2*m*k*k and the output counted as m*k "
    "elements: matvec ((512, 256), (256,)) float32 gives 67M flops instead of 262k, and 'compute' "
    "where it is memory-bound.",
)
def _rt13_roofline_generic_dot_n(program, shapes, dtype, chip):
    item = 2 if dtype == "bfloat16" else 4
    bf = dtype == "bfloat16"
    size = lambda s: int(np.prod(s)) if len(s) else 1  # noqa: E731
    if program in ("matmul", "matvec"):
        m, k = shapes[0]
        n = shapes[1][-1]
        flops, elems = 2 * m * k * n, m * k + size(shapes[1]) + m * n
    elif program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        flops, elems = 2 * b * m * k * n, b * (m * k + k * n + m * n)
    elif program in ("add", "scale_add"):
        n = size(shapes[0])
        flops, elems = (1 if program == "add" else 2) * n, 3 * n
    elif program == "row_sums":
        r, c = shapes[0]
        flops, elems = r * max(c - 1, 0) + ((r * c + r) if bf else 0), r * c + r
    else:
        n = size(shapes[0])
        flops, elems = max(n - 1, 0) + ((n + 1) if bf else 0), n + 1
    nbytes = elems * item
    peak, bw = _RT13_PEAKS[chip]
    intensity = flops / nbytes if nbytes else 0.0
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        ("compute" if intensity > peak / bw else "memory"),
    )


# ---- sharded_mlp ------------------------------------------------------------------------------


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': pins the hidden layer to the split it "
    "reads from w1's type under jit (jax.typeof(w1).sharding, as the tracer's error message "
    "suggests, since .sharding is unavailable on tracers); on the Auto-axis mesh of "
    "programs.mesh() the type carries no split (spec P(None, None)), so the 'w1's column split' "
    "it asks for is replicated: the original's all-gather stays, 100% of its collective bytes "
    "on every SHARDED_CASES entry (jax 0.12).",
)
def _rt13_sharded_split_from_typeof(x, w1, w2) -> jax.Array:
    from jax.sharding import NamedSharding, PartitionSpec

    typed = jax.typeof(w1).sharding
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(
        h, NamedSharding(typed.mesh, PartitionSpec(None, *typed.spec[1:]))
    )
    return h @ w2
