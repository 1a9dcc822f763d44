"""Red-team (round 2) wrong answers for phase 13, written from the contract only."""

import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

# ---- remat_loss ---------------------------------------------------------------------------------


def _block(p, x):
    w1, w2 = p
    return x + jnp.tanh(x @ w1) @ w2


@wrong(
    "remat_loss",
    why="'at most half the original's temp bytes': checkpoints every other block only (half the "
    "recompute); on (8, 128, 256, 0) the grad keeps 56% of the original's temp bytes",
)
def r2_remat_every_other_block(params: list, x) -> jax.Array:
    remat = jax.checkpoint(lambda p, h: h + jnp.tanh(h @ p[0]) @ p[1])
    for i, p in enumerate(params):
        x = remat(p, x) if i % 2 == 0 else x + jnp.tanh(x @ p[0]) @ p[1]
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="'which policy keeps exactly the arrays the budget is about': checkpoints each block with "
    "dots_with_no_batch_dims_saveable, which still saves x @ w1, the wide hidden layer; temp "
    "bytes stay at ~100% of the original on (8, 128, 256, 0)",
)
def r2_remat_dots_saveable(params: list, x) -> jax.Array:
    policy = jax.checkpoint_policies.dots_with_no_batch_dims_saveable

    remat = jax.checkpoint(lambda p, h: h + jnp.tanh(h @ p[0]) @ p[1], policy=policy)
    for p in params:
        x = remat(p, x)
    return jnp.mean(x**2)


@wrong(
    "remat_loss",
    why="README 'wrapping the whole loss recomputes the whole forward pass ... and keeps all of "
    "it again': jax.checkpoint around the whole loss; temp bytes 100% of the original",
)
def r2_remat_whole_loss(params: list, x) -> jax.Array:
    def loss(params, x):
        for w1, w2 in params:
            x = x + jnp.tanh(x @ w1) @ w2
        return jnp.mean(x**2)

    return jax.checkpoint(loss)(params, x)


@wrong(
    "remat_loss",
    why="README 'Check flops next to memory: a remat that costs nothing was not done': the loss "
    "and its gradient run in NumPy through pure_callback under a custom_vjp; temp bytes tiny and "
    "cost analysis counts the callbacks as no flops, so the budget is met by hiding the work "
    "(no recomputation at all); on (8, 128, 256, 0) the flops are ~0% of the original",
)
def r2_remat_host_callback(params: list, x) -> jax.Array:
    def host_forward(params, x):
        x = np.asarray(x, np.float32)
        for w1, w2 in params:
            x = x + np.tanh(x @ np.asarray(w1)) @ np.asarray(w2)
        return np.float32(np.mean(x**2))

    def host_grad(params, x):
        x = np.asarray(x, np.float32)
        saved = []
        for w1, w2 in params:
            w1, w2 = np.asarray(w1), np.asarray(w2)
            t = np.tanh(x @ w1)
            saved.append((x, t, w1, w2))
            x = x + t @ w2
        g = (2.0 * x / x.size).astype(np.float32)
        grads = []
        for xin, t, w1, w2 in reversed(saved):
            gw2 = t.T @ g
            gt = g @ w2.T
            gz = gt * (1 - t**2)
            gw1 = xin.T @ gz
            grads.append((gw1.astype(np.float32), gw2.astype(np.float32)))
            g = (g + gz @ w1.T).astype(np.float32)
        return list(reversed(grads)), g

    @jax.custom_vjp
    def loss(params, x):
        return jax.pure_callback(host_forward, jax.ShapeDtypeStruct((), jnp.float32), params, x)

    def fwd(params, x):
        return loss(params, x), (params, x)

    def bwd(res, ct):
        params, x = res
        shapes = (
            [
                (jax.ShapeDtypeStruct(a.shape, a.dtype), jax.ShapeDtypeStruct(b.shape, b.dtype))
                for a, b in params
            ],
            jax.ShapeDtypeStruct(x.shape, x.dtype),
        )
        grads, gx = jax.pure_callback(host_grad, shapes, params, x)
        return jax.tree.map(lambda g: g * ct, grads), gx * ct

    loss.defvjp(fwd, bwd)
    return loss(params, x)


# ---- mixed_step ---------------------------------------------------------------------------------

_LR = 1e-3


def _mixed(params, x, y, low, accumulate):
    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x, w1.astype(low), preferred_element_type=accumulate)
        h = jax.nn.gelu((h + b1).astype(low))
        return jnp.dot(h, w2.astype(low), preferred_element_type=accumulate) + b2

    def mse(params, x, y):
        return jnp.mean((mlp(params, x).astype(jnp.float32) - y) ** 2)

    loss, grads = jax.value_and_grad(mse)(params, x.astype(low), y)
    new = jax.tree.map(lambda p, g: p - _LR * g.astype(jnp.float32), params, grads)
    return new, loss


@wrong(
    "mixed_step",
    why="'matmuls fed bf16 operands': feeds float16 (f16 is not bf16: 5 exponent bits, overflows "
    "at 65504); dots still accumulate into f32, bytes 70% of the f32 step, loss and updates within "
    "tolerance, so only a check of the operand dtype sees it (MIXED_CASES[0])",
)
def r2_mixed_float16_operands(params: tuple, x, y) -> tuple:
    (w1, b1), (w2, b2) = params

    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x, w1.astype(jnp.float16), preferred_element_type=jnp.float32)
        h = jax.nn.gelu((h + b1).astype(jnp.float16))
        return jnp.dot(h, w2.astype(jnp.float16), preferred_element_type=jnp.float32) + b2

    def mse(params, x, y):
        return jnp.mean((mlp(params, x).astype(jnp.float32) - y) ** 2)

    loss, grads = jax.value_and_grad(mse)(params, x.astype(jnp.float16), y)
    return jax.tree.map(lambda p, g: p - 1e-3 * g.astype(jnp.float32), params, grads), loss


@wrong(
    "mixed_step",
    why="'every dot accumulates into float32': bf16 x bf16 dots without preferred_element_type "
    "return bf16; bytes (66%), loss and updates still pass on MIXED_CASES[0]",
)
def r2_mixed_bf16_dot_results(params: tuple, x, y) -> tuple:
    bf = jnp.bfloat16

    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x, w1.astype(bf))
        h = jax.nn.gelu((h + b1).astype(bf))
        return jnp.dot(h, w2.astype(bf)) + b2

    def mse(params, x, y):
        return jnp.mean((mlp(params, x).astype(jnp.float32) - y) ** 2)

    loss, grads = jax.value_and_grad(mse)(params, x.astype(bf), y)
    return jax.tree.map(lambda p, g: p - 1e-3 * g.astype(jnp.float32), params, grads), loss


@wrong(
    "mixed_step",
    why="'Params stay float32 ... each param's update within 5%': the params are cast to bf16 and "
    "updated there, then cast back; the 1e-3 * grad update rounds away (update error ~100x on "
    "MIXED_CASES[0])",
)
def r2_mixed_update_in_bf16(params: tuple, x, y) -> tuple:
    bf = jnp.bfloat16
    low = jax.tree.map(lambda p: p.astype(bf), params)

    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        h = jnp.dot(x, w1, preferred_element_type=jnp.float32) + b1
        h = jax.nn.gelu(h).astype(bf)
        return jnp.dot(h, w2, preferred_element_type=jnp.float32) + b2

    def mse(params, x, y):
        return jnp.mean((mlp(params, x) - y) ** 2)

    loss, grads = jax.value_and_grad(mse)(low, x.astype(bf), y)
    new = jax.tree.map(lambda p, g: (p - 1e-3 * g).astype(jnp.float32), low, grads)
    return new, loss.astype(jnp.float32)


@wrong(
    "mixed_step",
    why="'with matmuls fed bf16 operands ... every dot accumulates into float32': the whole f32 "
    "step runs on the host through pure_callback; the lowered module has no dot at all and its "
    "bytes accessed are ~0, results exact; no matmul is fed bf16 anywhere",
)
def r2_mixed_host_callback(params: tuple, x, y) -> tuple:
    def host(params, x, y):
        (w1, b1), (w2, b2) = [
            (np.asarray(a, np.float64), np.asarray(b, np.float64)) for a, b in params
        ]
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        z = x @ w1 + b1
        c = np.sqrt(2 / np.pi)
        u = c * (z + 0.044715 * z**3)
        t = np.tanh(u)
        h = 0.5 * z * (1 + t)
        out = h @ w2 + b2
        loss = np.mean((out - y) ** 2)
        g = 2 * (out - y) / out.size
        gw2, gb2 = h.T @ g, g.sum(0)
        gh = g @ w2.T
        dh = 0.5 * (1 + t) + 0.5 * z * (1 - t**2) * c * (1 + 3 * 0.044715 * z**2)
        gz = gh * dh
        gw1, gb1 = x.T @ gz, gz.sum(0)
        new = ((w1 - 1e-3 * gw1, b1 - 1e-3 * gb1), (w2 - 1e-3 * gw2, b2 - 1e-3 * gb2))
        return jax.tree.map(lambda a: np.asarray(a, np.float32), new), np.float32(loss)

    shapes = (
        jax.tree.map(lambda p: jax.ShapeDtypeStruct(p.shape, jnp.float32), params),
        jax.ShapeDtypeStruct((), jnp.float32),
    )
    return jax.pure_callback(host, shapes, params, x, y)


# ---- rollout ------------------------------------------------------------------------------------


@wrong(
    "rollout",
    why="'by a loop that runs at most 8 trips': a while_loop doing one step per trip runs 32 "
    "trips; its bound is read from the data (32 + 0 * sum), so the optimized HLO has no "
    "known_trip_count to show it; instructions are far under 40%",
)
def r2_rollout_opaque_trip_count(w, b, x) -> jax.Array:
    steps = jnp.int32(32) + (jnp.sum(x) * 0).astype(jnp.int32)

    def body(carry):
        i, h = carry
        return i + 1, jnp.tanh(h @ w + b)

    return jax.lax.while_loop(lambda c: c[0] < steps, body, (jnp.int32(0), x))[1]


@wrong(
    "rollout",
    why="'at most 8 trips': scan with unroll=3 (which does not divide 32) runs 10 trips plus a "
    "remainder; wrong on every case",
)
def r2_rollout_unroll_3(w, b, x) -> jax.Array:
    def step(h, _):
        return jnp.tanh(h @ w + b), None

    return jax.lax.scan(step, x, None, length=32, unroll=3)[0]


@wrong(
    "rollout",
    why="'at most 40% of the unrolled original's instructions': unroll=16 gives 2 trips but 16 "
    "copies of the step (about half the original's instructions)",
)
def r2_rollout_unroll_16(w, b, x) -> jax.Array:
    def step(h, _):
        return jnp.tanh(h @ w + b), None

    return jax.lax.scan(step, x, None, length=32, unroll=16)[0]


# ---- sharded_mlp --------------------------------------------------------------------------------


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': pins the hidden layer split by rows "
    "(the batch) instead of replicated: the partitioner must reshuffle the column-split h and "
    "then reduce; checked on SHARDED_CASES[0]",
)
def r2_sharded_rows_hidden(x, w1, w2) -> jax.Array:
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("x", None)))
    return h @ w2


@wrong(
    "sharded_mlp",
    why="'at most half the original's collective bytes': 'to be safe' gathers w2 (hidden x width) "
    "instead of h (batch x hidden); on SHARDED_CASES[0] that moves 4x the original's bytes",
)
def r2_sharded_gather_w2(x, w1, w2) -> jax.Array:
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    w2 = jax.lax.with_sharding_constraint(w2, NamedSharding(mesh, P()))
    h = jax.nn.relu(x @ w1)
    return h @ w2


# ---- roofline -----------------------------------------------------------------------------------


def _mm(program, shapes):
    if program == "matmul":
        (m, k), (_, n) = shapes
        return 2 * m * k * n, m * k + k * n + m * n
    if program == "batched_matmul":
        (b, m, k), (_, _, n) = shapes
        return 2 * b * m * k * n, b * (m * k + k * n + m * n)
    if program == "matvec":
        (m, k), _ = shapes
        return 2 * m * k, m * k + k + m
    size = int(np.prod(shapes[0]))
    if program == "add":
        return size, 3 * size
    if program == "scale_add":
        return 2 * size, 3 * size
    if program == "row_sums":
        rows = shapes[0][0]
        return size, size + rows
    return size, size + 1


@wrong(
    "roofline",
    why="'bytes ... for each dtype': counts 4 bytes per element whatever the dtype; wrong on "
    "every bfloat16 case (bytes twice too many, intensity half), e.g. matmul 1024^3 bf16",
)
def r2_roofline_four_bytes_always(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    peaks = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
    flops, elements = _mm(program, shapes)
    nbytes = 4 * elements
    intensity = flops / nbytes
    ridge = peaks[chip][0] / peaks[chip][1]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        "compute" if intensity > ridge else "memory",
    )


@wrong(
    "roofline",
    why="README 'Does 2 * a + b write the 2 * a it computes?' (no: one fused loop): counts the "
    "intermediate 2*a written and read back; scale_add bytes 5n instead of 3n",
)
def r2_roofline_scale_add_intermediate(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    peaks = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
    item = 2 if dtype == "bfloat16" else 4
    flops, elements = _mm(program, shapes)
    if program == "scale_add":
        elements += 2 * int(np.prod(shapes[0]))
    nbytes = item * elements
    intensity = flops / nbytes
    ridge = peaks[chip][0] / peaks[chip][1]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        "compute" if intensity > ridge else "memory",
    )


@wrong(
    "roofline",
    why="'dense bf16' peaks: uses H100's sparse 1,979 TFLOP/s, ridge ~591 instead of ~295; "
    "wrong on a bf16 matmul of n = 1024 on h100 (intensity ~341: compute, not memory)",
)
def r2_roofline_sparse_h100(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    peaks = {"v5e": (197e12, 819e9), "h100": (1979e12, 3.35e12)}
    item = 2 if dtype == "bfloat16" else 4
    flops, elements = _mm(program, shapes)
    nbytes = item * elements
    intensity = flops / nbytes
    ridge = peaks[chip][0] / peaks[chip][1]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        "compute" if intensity > ridge else "memory",
    )


@wrong(
    "roofline",
    why="'flops ... 1 per reduction step': a reduction counted as one flop per output (row_sums: "
    "rows flops instead of rows*cols; total: 1); wrong on row_sums (1024, 1024)",
)
def r2_roofline_reduce_per_output(
    program: str, shapes: tuple[tuple[int, ...], ...], dtype: str, chip: str
) -> tuple[float, float, float, str]:
    peaks = {"v5e": (197e12, 819e9), "h100": (989e12, 3.35e12)}
    item = 2 if dtype == "bfloat16" else 4
    flops, elements = _mm(program, shapes)
    if program == "row_sums":
        flops = shapes[0][0]
    elif program == "total":
        flops = 1
    nbytes = item * elements
    intensity = flops / nbytes
    ridge = peaks[chip][0] / peaks[chip][1]
    return (
        float(flops),
        float(nbytes),
        float(intensity),
        "compute" if intensity > ridge else "memory",
    )


# ---- serve --------------------------------------------------------------------------------------


def _best_buckets(sizes, count):
    """At most `count` bucket sizes minimising padded rows (the largest size always one)."""
    values = sorted(set(sizes))
    weight = {v: sizes.count(v) for v in values}
    n = len(values)
    inf = float("inf")
    # cost[i][j]: rows when values[i..j] all pad to values[j]
    best = [[inf] * (n + 1) for _ in range(count + 1)]
    choice = [[-1] * (n + 1) for _ in range(count + 1)]
    best[0][0] = 0
    for k in range(1, count + 1):
        for j in range(1, n + 1):
            for i in range(j):
                if best[k - 1][i] == inf:
                    continue
                rows = sum(weight[values[t]] * values[j - 1] for t in range(i, j))
                if best[k - 1][i] + rows < best[k][j]:
                    best[k][j], choice[k][j] = best[k - 1][i] + rows, i
    k = min(range(1, count + 1), key=lambda c: best[c][n])
    buckets, j = [], n
    while j > 0:
        buckets.append(values[j - 1])
        j, k = choice[k][j], k - 1
    return sorted(buckets)


@wrong(
    "serve",
    why="'every distinct pytree structure (None is a structure) is a compile': buckets chosen for "
    "max_compiles shapes, but bias=None is passed as None; with and without bias the compiles "
    "double (up to 8 for SERVE_CASES[0], max 4)",
)
def r2_serve_none_is_a_value(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    sizes = [int(x.shape[0]) for x, _ in requests]
    buckets = _best_buckets(sizes, max_compiles)
    out = []
    for x, bias in requests:
        n = x.shape[0]
        size = next(b for b in buckets if b >= n)
        padded = np.zeros((size, x.shape[1]), x.dtype)
        padded[:n] = x
        out.append(np.asarray(run(padded, bias))[:n])
    return out


@wrong(
    "serve",
    why="'padded flops within the factor the test states': one bucket, the largest request "
    "(200 rows) for everything: 1 compile but padded flops many times the unpadded ones",
)
def r2_serve_one_bucket(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    largest = max(int(x.shape[0]) for x, _ in requests)
    out = []
    for x, bias in requests:
        n, width = x.shape
        padded = np.zeros((largest, width), x.dtype)
        padded[:n] = x
        b = np.zeros(width, x.dtype) if bias is None else bias
        out.append(np.asarray(run(padded, b))[:n])
    return out


@wrong(
    "serve",
    why="'powers of two' is a fixed recipe: buckets 1, 2, 4, ..., 256 give 8 shapes for a stream "
    "whose budget is 4 (SERVE_CASES[0]); bias=None replaced by zeros",
)
def r2_serve_powers_of_two(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    out = []
    for x, bias in requests:
        n, width = x.shape
        size = 1 << max(0, (n - 1).bit_length())
        padded = np.zeros((size, width), x.dtype)
        padded[:n] = x
        b = np.zeros(width, x.dtype) if bias is None else bias
        out.append(np.asarray(run(padded, b))[:n])
    return out


@wrong(
    "serve",
    why="'Answer every request ... with run(x, bias)': calls run once, on the identity, reads "
    "w = arctanh(run(I, None)) and answers every request with NumPy on the host; 1 compile, no "
    "padding, results within ~1e-6",
)
def r2_serve_recover_weights(requests: list, run, max_compiles: int) -> list[np.ndarray]:
    width = requests[0][0].shape[1]
    w = np.arctanh(np.asarray(run(np.eye(width, dtype=np.float32), None), np.float64))
    out = []
    for x, bias in requests:
        y = np.asarray(x, np.float64) @ w
        if bias is not None:
            y = y + bias
        out.append(np.tanh(y).astype(np.float32))
    return out


# ---- donating_step ------------------------------------------------------------------------------


@wrong(
    "donating_step",
    why="'at most 55% of its peak memory': donate_argnums=1 donates the batch (off by one): no "
    "output has the batch's shapes, so nothing is aliased and the peak stays at 100%",
)
def r2_donate_the_batch(step):
    return jax.jit(step, donate_argnums=1)


class _Stepper:
    """What the test lowers is donated; what it calls is not."""

    def __init__(self, step):
        self._plain = jax.jit(step)
        self._donated = jax.jit(step, donate_argnums=0)

    def __call__(self, state, batch):
        return self._plain(state, batch)

    def lower(self, *args, **kwargs):
        return self._donated.lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        return self._donated.trace(*args, **kwargs)


@wrong(
    "donating_step",
    why="'computes what jax.jit(step) does with at most 55% of its peak memory': .lower() (what a "
    "budget check compiles) donates, but each call runs the undonated jit, so every real step "
    "holds the old and new state at once (the caller's old state is never invalidated)",
)
def r2_donate_only_when_lowered(step):
    return _Stepper(step)


# ---- cache_settings -----------------------------------------------------------------------------


@wrong(
    "cache_settings",
    why="'finds every compile in the persistent compilation cache': sets only the directory; the "
    "default 1 s minimum compile time keeps a millisecond compile out (second process: 0 hits)",
)
def r2_cache_dir_only(cache_dir: str) -> dict[str, str | float | int | bool]:
    return {"jax_compilation_cache_dir": cache_dir}


@wrong(
    "cache_settings",
    why="'finds every compile': lowers the minimum compile time to 50 ms only; the small programs "
    "(jnp.arange, the sum) compile faster and are never written, so the second process hits at "
    "most 1 of its 4 compiles (measured: 1 or 0 hits, 0 misses, depending on machine speed)",
)
def r2_cache_threshold_50ms(cache_dir: str) -> dict[str, str | float | int | bool]:
    return {
        "jax_compilation_cache_dir": cache_dir,
        "jax_persistent_cache_min_compile_time_secs": 0.05,
    }


_PRIVATE_DIR = tempfile.mkdtemp(prefix="jaxcache-")


@wrong(
    "cache_settings",
    why="'in the persistent compilation cache under cache_dir': writes to a private temp "
    "directory made when the kata file loads, not to cache_dir; nothing appears under cache_dir",
)
def r2_cache_private_dir(cache_dir: str) -> dict[str, str | float | int | bool]:
    return {
        "jax_compilation_cache_dir": _PRIVATE_DIR,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
    }
