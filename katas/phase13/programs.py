"""The original programs of phase 13, the cases its tests run them on, and what `katas show`
compiles per task.

Each budget task starts from one program here (the "original"): the tests compile it, read the
compiler's figure (temp bytes, bytes accessed, instructions, collective bytes, peak memory) and
derive the task's budget from that figure at test time, so the budget follows the JAX in use.
Read these programs; copy them into kata.py and change them there (kata.py may not import this
file).

Nothing here touches a device at import: meshes and arrays are made on first use, after the
harness (or `katas show`) has set the CPU device count.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.programs import Recipe

# ---- remat_loss: a deep residual MLP ------------------------------------------------------------


def block(p, x):
    """One residual block: x + tanh(x @ w1) @ w2, with a hidden layer 4x as wide as x."""
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


def deep_loss(params, x):
    """The original: mean((blocks(x))**2) over a list of (w1, w2) blocks."""
    for p in params:
        x = block(p, x)
    return jnp.mean(x**2)


def deep_args(depth: int = 8, width: int = 128, batch: int = 256, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = [
        (
            (rng.normal(size=(width, 4 * width)) / np.sqrt(width)).astype(np.float32),
            (rng.normal(size=(4 * width, width)) / np.sqrt(8 * width)).astype(np.float32),
        )
        for _ in range(depth)
    ]
    return params, rng.normal(size=(batch, width)).astype(np.float32)


# (depth, width, batch, seed): the budget is computed for each.
REMAT_CASES = [(8, 128, 256, 0), (6, 64, 384, 1), (12, 96, 128, 2)]


# ---- mixed_step: one SGD step of a two-layer MLP ------------------------------------------------

LEARNING_RATE = 1e-3


def mlp(params, x):
    (w1, b1), (w2, b2) = params
    return jax.nn.gelu(x @ w1 + b1) @ w2 + b2


def mse(params, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


def f32_step(params, x, y):
    """The original: (params - LEARNING_RATE * grad, loss), all in float32."""
    loss, grads = jax.value_and_grad(mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss


def mlp_args(batch: int = 1024, width: int = 256, hidden: int = 1024, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = (
        (
            (rng.normal(size=(width, hidden)) / np.sqrt(width)).astype(np.float32),
            (rng.normal(size=hidden) * 0.1).astype(np.float32),
        ),
        (
            (rng.normal(size=(hidden, width)) / np.sqrt(hidden)).astype(np.float32),
            (rng.normal(size=width) * 0.1).astype(np.float32),
        ),
    )
    x = rng.normal(size=(batch, width)).astype(np.float32)
    y = rng.normal(size=(batch, width)).astype(np.float32)
    return params, x, y


MIXED_CASES = [(1024, 256, 1024, 0), (512, 128, 768, 1), (768, 192, 512, 2)]


# ---- rollout: a 32-step recurrence --------------------------------------------------------------

STEPS = 32


def unrolled_rollout(w, b, x):
    """The original: STEPS steps of x = tanh(x @ w + b), unrolled by the Python loop."""
    for _ in range(STEPS):
        x = jnp.tanh(x @ w + b)
    return x


def rollout_args(
    batch: int = 16, width: int = 64, seed: int = 0, dtypes: tuple[str, str, str] | None = None
):
    """(w, b, x), float32 unless `dtypes` gives w's, b's and x's (float32 or bfloat16 each): the
    original promotes as jnp does, so x bfloat16 with w float32 gives float32 from the first
    step on."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(width, width)) / np.sqrt(width)
    b = rng.normal(size=width) * 0.1
    x = rng.normal(size=(batch, width))
    kinds = dtypes or ("float32", "float32", "float32")
    return tuple(a.astype(jnp.dtype(kind)) for a, kind in zip((w, b, x), kinds, strict=True))


ROLLOUT_CASES = [(16, 64, 0), (5, 48, 1), (32, 80, 2)]
MAX_TRIPS = 8  # the loop may run at most this many times: each trip does >= STEPS / MAX_TRIPS steps
INSTRUCTION_SHARE = 0.4  # instructions at most this share of the unrolled original's


# ---- sharded_mlp: a Megatron-style MLP on 8 devices ---------------------------------------------


@cache
def mesh():
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def sharding(*spec) -> NamedSharding:
    return NamedSharding(mesh(), P(*spec))


def replicated_hidden_mlp(x, w1, w2):
    """The original: w1 column-split, w2 row-split, and the hidden layer pinned replicated."""
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, sharding())
    return h @ w2


def sharded_args(batch: int = 16, width: int = 128, hidden: int = 512, seed: int = 0):
    """x replicated, w1 split by columns and w2 by rows over the 8 devices of mesh()."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, width)).astype(np.float32)
    w1 = (rng.normal(size=(width, hidden)) / np.sqrt(width)).astype(np.float32)
    w2 = (rng.normal(size=(hidden, width)) / np.sqrt(hidden)).astype(np.float32)
    return (
        jax.device_put(x, sharding()),
        jax.device_put(w1, sharding(None, "x")),
        jax.device_put(w2, sharding("x", None)),
    )


SHARDED_CASES = [(16, 128, 512, 0), (24, 64, 256, 1), (8, 96, 1024, 2)]
COLLECTIVE_SHARE = 0.5  # collective bytes at most this share of the original's


# ---- roofline: programs whose cost is predicted from shapes ------------------------------------

ROOFLINE_PROGRAMS = {
    "matmul": lambda a, b: a @ b,  # (m, k) @ (k, n)
    "batched_matmul": lambda a, b: jnp.einsum("bij,bjk->bik", a, b),  # (b, m, k) @ (b, k, n)
    "matvec": lambda a, v: a @ v,  # (m, k) @ (k,)
    "add": lambda a, b: a + b,  # same shapes
    "scale_add": lambda a, b: 2.0 * a + b,  # same shapes, one fused loop
    "row_sums": lambda a: a.sum(axis=1),  # (rows, cols) -> (rows,)
    "total": lambda a: a.sum(),  # any shape -> scalar
}

# Published peaks (README cites the sources): dense bf16 flop/s, memory bytes/s.
PEAKS = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}


# ---- serve: a stream of requests ---------------------------------------------------------------

SERVE_WIDTH = 32


def serve_model(w, x, bias):
    """What one call computes: tanh(x @ w + bias), bias of shape (width,) or None (no bias)."""
    y = x @ w
    if bias is not None:
        y = y + bias
    return jnp.tanh(y)


def request_stream(count: int, seed: int, largest: int = 200):
    """`count` requests (x, bias or None): sizes mostly small with a long tail, half with bias."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.geometric(1 / 24, size=count), largest)
    sizes[rng.integers(count)] = largest  # one request always needs the largest size
    stream = []
    for n in sizes:
        x = rng.normal(size=(int(n), SERVE_WIDTH)).astype(np.float32)
        bias = rng.normal(size=SERVE_WIDTH).astype(np.float32) if rng.random() < 0.5 else None
        stream.append((x, bias))
    return stream


def serve_weights(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(SERVE_WIDTH, SERVE_WIDTH)) / np.sqrt(SERVE_WIDTH)).astype(np.float32)


# (requests, seed, max_compiles, padded flops at most this factor of the unpadded flops)
SERVE_CASES = [(60, 0, 4, 1.5), (80, 1, 5, 1.45), (40, 2, 3, 1.8)]


# ---- donating_step: a training step with momentum ----------------------------------------------


def momentum_loss(params, batch):
    x, y = batch
    return jnp.mean((jnp.tanh(x @ params["w1"]) @ params["w2"] - y) ** 2)


def momentum_step(state, batch):
    """The original: ((params, momentum), batch) -> ((params, momentum), loss)."""
    params, momentum = state
    loss, grads = jax.value_and_grad(momentum_loss)(params, batch)
    momentum = jax.tree.map(lambda m, g: 0.9 * m + g, momentum, grads)
    params = jax.tree.map(lambda p, m: p - 0.01 * m, params, momentum)
    return (params, momentum), loss


def momentum_args(width: int = 512, batch: int = 32, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {
        "w1": (rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float32),
        "w2": (rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float32),
    }
    momentum = {k: (rng.normal(size=v.shape) * 0.01).astype(np.float32) for k, v in params.items()}
    x = rng.normal(size=(batch, width)).astype(np.float32)
    y = rng.normal(size=(batch, width)).astype(np.float32)
    return (params, momentum), (x, y)


DONATION_CASES = [(512, 32, 0), (384, 64, 1)]
PEAK_SHARE = 0.55  # peak memory at most this share of the original's


# ---- cache_settings: the program the two processes compile -------------------------------------

# Run as `python -c CACHE_CHILD SETTINGS_JSON`: apply the settings, compile and run one small
# program, print its result and the cache events as one JSON line.
CACHE_CHILD = """
import json, sys
import jax
for name, value in json.loads(sys.argv[1]).items():
    jax.config.update(name, value)
events = []
jax.monitoring.register_event_listener(lambda event, **kwargs: events.append(event))
import jax.numpy as jnp
f = jax.jit(lambda x: jnp.sin(x) @ jnp.cos(x).T + 3.0)
result = float(f(jnp.arange(64.0).reshape(8, 8)).sum())
print(json.dumps({
    "result": result,
    "hits": events.count("/jax/compilation_cache/cache_hits"),
    "misses": events.count("/jax/compilation_cache/cache_misses"),
}))
"""
# Seconds per process: a start of Python and JAX and one compile take 3-4 s on an idle 2-core
# machine and over 11 s beside a heavy load; the test that starts two has its own time limit.
CACHE_CHILD_TIMEOUT = 60


def _spec(*shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


SHOWN = {
    "remat_loss": Recipe(
        lambda m: (
            jax.grad(m.remat_loss),
            ([(_spec(128, 512), _spec(512, 128))] * 8, _spec(256, 128)),
        ),
        "grad of remat_loss: 8 blocks, width 128, batch 256 (compare: deep_loss)",
    ),
    "mixed_step": Recipe(
        lambda m: (
            m.mixed_step,
            (
                ((_spec(256, 1024), _spec(1024)), (_spec(1024, 256), _spec(256))),
                _spec(1024, 256),
                _spec(1024, 256),
            ),
        ),
        "mixed_step(params, x, y): x, y f32[1024,256], hidden 1024",
    ),
    "rollout": Recipe(
        lambda m: (m.rollout, (_spec(64, 64), _spec(64), _spec(16, 64))),
        "rollout(w, b, x): w f32[64,64], x f32[16,64], 32 steps",
    ),
    "sharded_mlp": Recipe(
        lambda m: (m.sharded_mlp, sharded_args()),
        "sharded_mlp(x, w1, w2) on 8 CPU devices: w1 split by columns, w2 by rows",
    ),
    "donating_step": Recipe(
        lambda m: (m.donating_step(momentum_step), momentum_args()),
        "donating_step(momentum_step) on width 512, batch 32",
    ),
}
