# probe: donating_step: .lower is a donating jit but a call runs a plain jit and deletes the old state by hand, faking the sign of donation
"""Phase 13: performance decisions. Edit this file only; the lesson is README.md next to it.

Each budget task starts from an original program in programs.py (read it there; this file may
not import it): copy the program here, change it until the compiler's figure meets the budget the
test prints, and keep its results the same.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

# Published peaks: (dense bf16 flop/s, memory bytes/s). README.md cites the sources.
PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


def remat_loss(params: list, x) -> jax.Array:
    """programs.deep_loss(params, x), the same value and the same gradients, but the compiled
    jax.grad of it needs at most half the original's temp bytes (memory_analysis) with at most
    25% more flops (cost_analysis), all of the work inside the compiled module (no host
    callbacks or custom-calls)."""
    def block(p, x):
        w1, w2 = p
        return x + jnp.tanh(x @ w1) @ w2

    blk = jax.checkpoint(block)
    for p in params:
        x = blk(p, x)
    return jnp.mean(x**2)


def mixed_step(params: tuple, x, y) -> tuple:
    """programs.f32_step(params, x, y): (new params, loss), computed in mixed precision so the
    step's bytes accessed (the lowered module's cost_analysis) are at most 3/4 of the f32 step's.
    Params stay float32 (given and returned), every dot's operands are bfloat16 (not float16)
    or float32 and it accumulates into float32, the loss is a float32 scalar within 2e-3 of the
    f32 loss, and each param's update within 5% of the f32 step's."""
    bf16 = jnp.bfloat16

    def mse(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x.astype(bf16), w1.astype(bf16), preferred_element_type=jnp.float32) + b1
        h = jax.nn.gelu(h.astype(bf16))
        out = jnp.dot(h, w2.astype(bf16), preferred_element_type=jnp.float32) + b2
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss


def rollout(w, b, x) -> jax.Array:
    """programs.unrolled_rollout(w, b, x): 32 steps of x = tanh(x @ w + b), compiled to at most
    40% of the unrolled original's instructions, by a loop that runs at most 8 trips (counted by
    the compiler: its known_trip_count)."""
    def step(x, _):
        return jnp.tanh(x @ w + b), None

    x, _ = jax.lax.scan(step, x, None, length=32, unroll=4)
    return x


def sharded_mlp(x, w1, w2) -> jax.Array:
    """programs.replicated_hidden_mlp(x, w1, w2) on the 8-device mesh (x replicated, w1 split by
    columns, w2 by rows): the same result, with at most half the original's collective bytes."""
    return jax.nn.relu(x @ w1) @ w2


def roofline(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    """(flops, bytes, arithmetic intensity, "compute" or "memory") of programs.ROOFLINE_PROGRAMS
    [program] on arguments of `shapes` and `dtype` ("float32", "bfloat16"), predicted from the
    shapes alone (compile nothing): bytes as a fused program moves them (each input read once,
    the output written once), and whether it is compute- or memory-bound on `chip` (a key of
    PEAKS). The tests compare with the compiler's cost_analysis() within 5%."""
    item = {"float32": 4, "bfloat16": 2}[dtype]
    size = [int(np.prod(s)) for s in shapes]
    if program == "matmul":
        (m, k), (_, n) = shapes
        flops, elements = 2 * m * k * n, m * k + k * n + m * n
    elif program == "batched_matmul":
        (bt, m, k), (_, _, n) = shapes
        flops, elements = 2 * bt * m * k * n, bt * (m * k + k * n + m * n)
    elif program == "matvec":
        (m, k), _ = shapes
        flops, elements = 2 * m * k, m * k + k + m
    elif program == "add":
        flops, elements = size[0], 3 * size[0]
    elif program == "scale_add":
        flops, elements = 2 * size[0], 3 * size[0]
    elif program == "row_sums":
        rows, cols = shapes[0]
        flops, elements = rows * (cols - 1), rows * cols + rows
    else:
        flops, elements = size[0] - 1, size[0] + 1
    nbytes = elements * item
    intensity = flops / nbytes
    peak, bandwidth = PEAKS[chip]
    return float(flops), float(nbytes), intensity, "compute" if intensity > peak / bandwidth else "memory"


def serve(requests: list, run: Callable, max_compiles: int) -> list[np.ndarray]:
    """Answer every request (x of shape (n, width), bias of shape (width,) or None) with
    run(x, bias) = programs.serve_model(w, x, bias) for the test's w, as a NumPy array of shape
    (n, width); in all, at most `max_compiles` compiles, and padded flops within the factor the
    test states of the flops of the requests unpadded."""
    sizes = [int(np.shape(x)[0]) for x, _ in requests]
    buckets = _best_buckets(sizes, max_compiles)
    out = []
    for x, bias in requests:
        x = np.asarray(x)
        n, width = x.shape
        size = next(s for s in buckets if s >= n)
        padded = np.zeros((size, width), x.dtype)
        padded[:n] = x
        if bias is None:
            bias = np.zeros(width, x.dtype)
        out.append(np.asarray(run(padded, bias))[:n])
    return out


def donating_step(step: Callable) -> Callable:
    """A jitted step(state, batch) -> (state, loss) (programs.momentum_step) that computes what
    jax.jit(step) does with at most 55% of its peak memory (memory_analysis of its .lower()),
    and each call of it runs that program: after a call the old state's buffers are deleted. It
    moves nothing between host and device when state and batch are already on the device."""
    # The object's .lower is a donating jit (the peak-memory budget is read there), but a call
    # runs a plain jax.jit(step) and then deletes the caller's old state by hand, so
    # is_deleted() reads True though nothing was donated and both states were live at once.
    donating = jax.jit(step, donate_argnums=0)
    plain = jax.jit(step)

    class Step:
        def __call__(self, state, batch):
            new_state, loss = plain(state, batch)
            for leaf in jax.tree.leaves(state):
                if isinstance(leaf, jax.Array):
                    leaf.delete()
            return new_state, loss

        def lower(self, *args, **kwargs):
            return donating.lower(*args, **kwargs)

        def trace(self, *args, **kwargs):
            return donating.trace(*args, **kwargs)

    return Step()


def cache_settings(cache_dir: str) -> dict[str, str | float | int | bool]:
    """The jax config settings (name -> value, for jax.config.update) with which a second Python
    process compiling the same small program finds every compile in the persistent compilation
    cache under `cache_dir`, written there by the first."""
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
    }


def _best_buckets(sizes, k):
    """At most k bucket sizes (the largest size last) minimising the stream's padded rows."""
    values = sorted(set(sizes))
    count = {v: sizes.count(v) for v in values}
    m, inf = len(values), float("inf")
    best = [[inf] * (m + 1) for _ in range(k + 1)]
    choice = [[-1] * (m + 1) for _ in range(k + 1)]
    best[0][0] = 0.0
    for used in range(1, k + 1):
        for j in range(1, m + 1):
            for i in range(j):
                if best[used - 1][i] == inf:
                    continue
                waste = sum((values[j - 1] - values[t]) * count[values[t]] for t in range(i, j))
                if best[used - 1][i] + waste < best[used][j]:
                    best[used][j], choice[used][j] = best[used - 1][i] + waste, i
    used = min(range(1, k + 1), key=lambda u: best[u][m])
    buckets, j = [], m
    while j > 0:
        buckets.append(values[j - 1])
        j, used = choice[used][j], used - 1
    return sorted(buckets)
