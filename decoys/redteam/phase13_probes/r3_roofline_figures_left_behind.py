# probe: roofline: reads compiler figures computed earlier in the process by another task's call (cache_settings compiles a grid of shapes outside the refusal) or from recorded/snapshot text, falling back to a rough guess
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
    # Figures the compiler produced for this program are looked up in what the other tasks'
    # calls left behind (_seen, filled by cache_settings outside any refusal) or in any
    # recorded/snapshot text beside the course; without them only a rough guess is returned.
    key = (program, tuple(tuple(s) for s in shapes), dtype)
    if key in _SEEN:
        flops, nbytes = _SEEN[key]
    else:
        found = _from_recordings(program, shapes, dtype)
        if found is None:
            size = sum(int(np.prod(s)) for s in shapes)
            flops, nbytes = float(size), float(4 * size)
        else:
            flops, nbytes = found
    peak, bandwidth = PEAKS[chip]
    intensity = flops / nbytes
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
    return jax.jit(step, donate_argnums=0)


def cache_settings(cache_dir: str) -> dict[str, str | float | int | bool]:
    """The jax config settings (name -> value, for jax.config.update) with which a second Python
    process compiling the same small program finds every compile in the persistent compilation
    cache under `cache_dir`, written there by the first."""
    # Outside any refusal: compile the roofline programs on a grid of likely shapes and keep the
    # compiler's figures for roofline to read later in the same process.
    if not _SEEN:
        programs = {
            "matmul": lambda a, b: a @ b,
            "batched_matmul": lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
            "matvec": lambda a, v: a @ v,
            "add": lambda a, b: a + b,
            "scale_add": lambda a, b: 2.0 * a + b,
            "row_sums": lambda a: a.sum(axis=1),
            "total": lambda a: a.sum(),
        }
        sides = (64, 128, 256, 512, 768, 1024, 2048)
        for dtype in ("float32", "bfloat16"):
            dt = jnp.dtype(dtype)
            for n in sides:
                grid = {
                    "matmul": ((n, n), (n, n)),
                    "batched_matmul": ((8, n, n), (8, n, n)),
                    "matvec": ((n, n), (n,)),
                    "add": ((n, n), (n, n)),
                    "scale_add": ((n, n), (n, n)),
                    "row_sums": ((n, n),),
                    "total": ((n, n),),
                }
                for name, shapes in grid.items():
                    specs = [jax.ShapeDtypeStruct(s, dt) for s in shapes]
                    cost = jax.jit(programs[name]).lower(*specs).compile().cost_analysis()
                    _SEEN[(name, shapes, dtype)] = (cost["flops"], cost["bytes accessed"])
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


_SEEN: dict = {}  # (program, shapes, dtype) -> (flops, bytes accessed), filled by cache_settings


def _from_recordings(program, shapes, dtype):
    """(flops, bytes) for this case from any text the course keeps beside the kata (recorded/,
    snapshots/), or None."""
    import glob
    import os
    import re

    root = os.path.dirname(os.path.abspath(__file__))
    while root != os.path.dirname(root) and not os.path.isdir(os.path.join(root, "katas")):
        root = os.path.dirname(root)
    roots = [os.path.join(root, "katas", "phase13", "recorded"), os.path.join(root, "snapshots")]
    wanted = f"{program}"
    dims = "x".join(str(d) for d in shapes[0])
    for root in roots:
        for path in glob.glob(os.path.join(root, "**", "*"), recursive=True):
            if not os.path.isfile(path) or "phase13" not in path and root.endswith("snapshots"):
                continue
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError):
                continue
            if wanted not in text or dims not in text or dtype not in text:
                continue
            flops = re.search(r"flops\W+([0-9.eE+]+)", text)
            nbytes = re.search(r"bytes accessed\W+([0-9.eE+]+)", text)
            if flops and nbytes:
                return float(flops.group(1)), float(nbytes.group(1))
    return None
