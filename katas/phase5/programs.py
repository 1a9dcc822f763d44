"""The programs phase 5's tests transform, and what `katas show` compiles for each task.

An MLP and its data, a function R^n -> R^m with a product rule inside (`sin_ax_norm`), two-layer
networks of several shapes for the Jacobians, a bank of dots for `dot_flops`, the `in_axes` cases
of the batched matvec. `katas show` compiles the learner's transform of the first case of each.
"""

from __future__ import annotations

from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from numpy.typing import DTypeLike

from kata_harness.programs import Recipe

IN, HIDDEN, OUT, BATCH = 16, 32, 4, 8


def mlp_data(batch: int = BATCH, seed: int = 0, sizes: tuple = (IN, HIDDEN, OUT)):
    n_in, hidden, n_out = sizes
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(n_in, hidden)).astype(np.float32) / 4,
        "b1": rng.normal(size=(hidden,)).astype(np.float32),
        "w2": rng.normal(size=(hidden, n_out)).astype(np.float32) / 6,
        "b2": rng.normal(size=(n_out,)).astype(np.float32),
    }
    x = rng.normal(size=(batch, n_in)).astype(np.float32)
    y = rng.normal(size=(batch, n_out)).astype(np.float32)
    return params, x, y


# (batch, (inputs, hidden, outputs)): a batch of one, odd sizes, more outputs than inputs.
GRAD_CASES = [(BATCH, (IN, HIDDEN, OUT)), (1, (5, 7, 3)), (3, (6, 9, 11))]


VALUE_CASES = [GRAD_CASES[0], GRAD_CASES[2]]


def mlp_ties(batch: int, seed: int, sizes: tuple, dtype: DTypeLike = np.float32):
    """mlp_data with relu's kink hit exactly: the first example is all zeros and every other
    hidden bias is 0, so those pre-activations are exactly 0 (relu's derivative there is JAX's
    0); in ``dtype`` (params, x and y)."""
    params, x, y = mlp_data(batch, seed, sizes)
    params = dict(params, b1=np.where(np.arange(sizes[1]) % 2 == 0, 0, params["b1"]))
    x = np.concatenate([np.zeros_like(x[:1]), x[1:]])
    cast = lambda a: np.asarray(a).astype(dtype)  # noqa: E731
    return {k: cast(v) for k, v in params.items()}, cast(x), cast(y)


# (outputs, inputs) of f: square first (a transposed answer has the right shape there), wide,
# tall. A square J is not symmetric, so J @ v and J.T @ v differ.
F_SHAPES = [(4, 4), (3, 5), (6, 2)]


def sin_ax_norm(A, x):
    """R^N -> R^M, not elementwise: sin(A x) * |x|^2 (a product rule inside)."""
    return jnp.sin(A @ x) * jnp.sum(x * x)


def flat_abs(A, out_shape: tuple | None, out_dtype: DTypeLike | None = None):
    """x of any shape and dtype -> |A @ x.ravel()| * sum(x) computed in x's dtype, cast to
    ``out_dtype`` (None: left in x's dtype) and shaped ``out_shape`` (A is (size of out_shape,
    size of x)): f changes the rank, the shape and maybe the dtype, and is not holomorphic.
    ``out_shape`` None: shaped like the x f is handed (as jnp.sin is; A square), so an answer
    that reshapes or promotes x before calling f changes the shape of f(x)."""

    def f(x):
        flat = x.reshape(-1)
        y = jnp.abs(A.astype(flat.dtype) @ flat) * jnp.sum(flat)
        y = y if out_dtype is None else y.astype(np.dtype(out_dtype))
        return y.reshape(x.shape if out_shape is None else out_shape)

    return f


def fvec_data(m: int, n: int):
    rng = np.random.default_rng(10 * m + n)
    A = rng.normal(size=(m, n)).astype(np.float32)
    x = rng.normal(size=(n,)).astype(np.float32) / 2
    v = rng.normal(size=(n,)).astype(np.float32)
    ct = rng.normal(size=(m,)).astype(np.float32)
    return A, x, v, ct


def two_layer(n: int, h: int, m: int):
    rng = np.random.default_rng(n * 1000 + m)
    w1 = (rng.normal(size=(h, n)) / np.sqrt(n)).astype(np.float32)
    w2 = (rng.normal(size=(m, h)) / np.sqrt(h)).astype(np.float32)
    x = rng.normal(size=(n,)).astype(np.float32)
    return (lambda v: w2 @ jnp.tanh(w1 @ v)), x, w1, w2


SHAPES = {"tall": (4, 32, 64), "wide": (64, 32, 4)}  # (inputs, hidden, outputs)


# More Jacobians for the cost question: one input, one output, odd sizes, nearly square.
COST_SHAPES = SHAPES | {"one input": (1, 8, 24), "one output": (24, 8, 1), "wide, odd": (13, 9, 5)}


def matmul(a, b):
    return jnp.matmul(a, b)


def general(a, b):
    """lhs (K=3, B=2, M=5), rhs (N=7, B=2, K=3): contract lhs axis 0 with rhs axis 2, batch on
    lhs axis 1 / rhs axis 1. Output (B, M, N) = (2, 5, 7)."""
    return lax.dot_general(a, b, (((0,), (2,)), ((1,), (1,))))


def in_cond(p, a, b):
    return lax.cond(p > 0, lambda: a @ b, lambda: (a * 2.0) @ b)


def in_scan(a, b):
    def body(carry, _):
        return carry @ b, None

    return lax.scan(body, a, None, length=3)[0]


def in_while(a, b):
    """A dot in a while loop's condition and one in its body (each counted once)."""
    return lax.while_loop(lambda c: jnp.sum(c @ b) < 10.0, lambda c: (c @ b) / 2.0, a)


def in_custom_jvp_and_remat(a, b):
    @jax.custom_jvp
    def inner(u):
        return u @ b

    inner.defjvp(lambda primals, tangents: (inner(*primals), tangents[0] @ b))
    return jax.checkpoint(lambda u: inner(u) @ b.T)(a)


def in_custom_vjp(a, b):
    """A dot in a custom_vjp function (its primal jaxpr sits in the equation; the backward rule
    is Python, not part of this program)."""

    @jax.custom_vjp
    def inner(u):
        return u @ b

    inner.defvjp(lambda u: (inner(u), None), lambda _, g: (g @ b.T,))
    return inner(a)


def device_mesh(most: int, name: str = "i") -> jax.sharding.Mesh:
    """A 1-d mesh of the largest power of two of this host's devices up to ``most`` (the tests
    run with 8 CPU devices): a shard_map over it runs its body once per device."""
    size = 1 << (min(most, jax.device_count()).bit_length() - 1)
    return jax.sharding.Mesh(np.array(jax.devices()[:size]), (name,))


def in_shard_map(a, b):
    """A dot in a shard_map body over a mesh of several devices, a's rows split across it: the
    body's dot sees one shard's rows (a.shape[0] // mesh size), and is one equation."""
    mesh = device_mesh(4)
    rows = jax.sharding.PartitionSpec("i")
    return jax.shard_map(lambda u: u @ b, mesh=mesh, in_specs=rows, out_specs=rows)(a)


def in_linear_solve(a, b):
    """custom_linear_solve holds its jaxprs in a named tuple: a dot in its matvec, one in its
    solve (b is square)."""
    return lax.custom_linear_solve(lambda z: z @ b, a, lambda _, r: r @ b.T)


def in_switch(i, a, b):
    """A switch over three branches (a cond with a tuple of three jaxprs), a dot in each."""
    return lax.switch(i, [lambda: a @ b, lambda: (a + 1.0) @ b, lambda: (a @ b) * 2.0])


@cache
def flops_cases():
    f32, i8 = np.float32, np.int8
    ones = np.ones
    return {
        # name: (function, arguments, flops worked out by hand: 2 * output elements * K)
        "matmul": (jnp.matmul, (ones((8, 16), f32), ones((16, 32), f32)), 2 * (8 * 32) * 16),
        "batched": (
            jax.vmap(jnp.matmul),
            (ones((8, 4, 3), f32), ones((8, 3), f32)),
            2 * (8 * 4) * 3,
        ),
        "two contracted": (
            partial(jnp.einsum, "ijk,jkl->il"),
            (ones((2, 3, 4), f32), ones((3, 4, 5), f32)),
            2 * (2 * 5) * 12,
        ),
        "contract axis 0, batch in the middle": (
            general,
            (ones((3, 2, 5), f32), ones((7, 2, 3), f32)),
            2 * (2 * 5 * 7) * 3,
        ),
        "int8 matrix-vector, odd sizes": (
            jnp.matmul,
            (ones((7, 9), i8), ones((9,), i8)),
            2 * 7 * 9,
        ),
        "no dots": (jnp.add, (ones(3, f32), ones(3, f32)), 0),
        "past 2**31 (shapes only, nothing allocated)": (
            jnp.matmul,
            (jax.ShapeDtypeStruct((4096, 4096), f32), jax.ShapeDtypeStruct((4096, 4096), f32)),
            2 * (4096 * 4096) * 4096,
        ),
    }


def matrix_input():
    """f: R^(6x5) -> R^8: 30 inputs, 8 outputs, but x.shape[0] = 6 < 8."""
    rng = np.random.default_rng(7)
    w1 = (rng.normal(size=(16, 30)) / 6).astype(np.float32)
    w2 = (rng.normal(size=(8, 16)) / 4).astype(np.float32)
    return (lambda X: w2 @ jnp.tanh(w1 @ X.reshape(-1))), rng.normal(size=(6, 5)).astype(np.float32)


MV_M, MV_N = 4, 3


# in_axes -> (W's shape, vs's shape, W @ v for every example b as an einsum). The batch (BATCH)
# sits wherever in_axes says; None: the argument is shared by every example.
IN_AXES_CASES = {
    (None, 0): ((MV_M, MV_N), (BATCH, MV_N), "mn,bn->bm"),
    (0, 0): ((BATCH, MV_M, MV_N), (BATCH, MV_N), "bmn,bn->bm"),
    (1, 0): ((MV_M, BATCH, MV_N), (BATCH, MV_N), "mbn,bn->bm"),
    (None, 1): ((MV_M, MV_N), (MV_N, BATCH), "mn,nb->bm"),
    (2, None): ((MV_M, MV_N, BATCH), (MV_N,), "mnb,n->bm"),
    (-2, -1): ((MV_M, BATCH, MV_N), (MV_N, BATCH), "mbn,nb->bm"),  # counted from the end
}


def matvec_case(in_axes, dtype: DTypeLike = np.float32):
    """W, vs and the expected (batch, m) result; in an integer dtype, small integers whose
    products and sums fit that dtype."""
    w_shape, v_shape, spec = IN_AXES_CASES[in_axes]
    rng = np.random.default_rng(len(w_shape) * 10 + len(v_shape))
    W, vs = rng.normal(size=w_shape), rng.normal(size=v_shape)
    if np.issubdtype(dtype, np.integer):
        W, vs = np.clip(np.round(2 * W), -3, 3), np.clip(np.round(2 * vs), -3, 3)
    W, vs = W.astype(dtype), vs.astype(dtype)
    return W, vs, np.einsum(spec, W.astype(np.float64), vs.astype(np.float64))


def matvec_data():
    W, vs, _ = matvec_case((None, 0))
    Ws, _, _ = matvec_case((0, 0))
    return W, Ws, vs


# --- the decide tasks: a tanh layer pair at several sizes (inputs, hidden, outputs) -----------
# Square, tall, wide, odd; the budgets are a quarter of the flops of the program that builds
# the whole Jacobian or Hessian first.
DECIDE_SHAPES = {"16-24-8": (16, 24, 8), "32-16-32": (32, 16, 32), "9-13-5": (9, 13, 5)}


def tanh_pair(n: int, h: int, m: int):
    """(w1, w2): f(x) = w2 @ tanh(w1 @ x) maps R^n to R^m."""
    rng = np.random.default_rng(7 * n + h + m)
    w1 = (rng.normal(size=(h, n)) / np.sqrt(n)).astype(np.float32)
    w2 = (rng.normal(size=(m, h)) / np.sqrt(h)).astype(np.float32)
    return w1, w2


def layer_map(w1, w2):
    """The vector-valued f of directional_derivative."""
    return lambda x: w2 @ jnp.tanh(w1 @ x)


def layer_energy(w1):
    """The scalar g of hessian_vector_product: sum(tanh(w1 x)^2) + sum(sin(x) * x)."""
    return lambda x: jnp.sum(jnp.tanh(w1 @ x) ** 2) + jnp.sum(jnp.sin(x) * x)


def abs_map(w1, w2):
    """A vector-valued f that is not holomorphic: w2 @ |w1 @ x|."""
    return lambda x: w2 @ jnp.abs(w1 @ x)


def abs_energy(w1):
    """A scalar g that is not holomorphic: sum(|w1 x|^3) / 3 + sum(sin(x) * x)."""
    return lambda x: jnp.sum(jnp.abs(w1 @ x) ** 3) / 3 + jnp.sum(jnp.sin(x) * x)


def points(n: int, count: int = 3):
    """`count` pairs (x, v) in R^n: the inputs the answers are checked on."""
    rng = np.random.default_rng(n)
    return [
        (rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32))
        for _ in range(count)
    ]


# --- the predict tasks ---------------------------------------------------------------------

# (W shape, v shape, in_axes, out_axes) for jax.vmap(matvec, in_axes, out_axes)(W, v)
VMAP_SHAPE_CASES = (
    ((4, 3), (5, 3), (None, 0), 0),
    ((4, 3), (5, 3), (None, 0), 1),
    ((4, 6, 3), (6, 3), (1, 0), 0),
    ((4, 3, 7), (3,), (2, None), -1),
    ((2, 4, 3), (3, 2), (0, 1), 1),
    ((1, 3), (9, 3), (None, 0), 1),
)


def outer_tanh(A):
    """R^n -> R^(m x n): outer(tanh(A @ x), x), a vector input with a matrix output."""
    return lambda x: jnp.outer(jnp.tanh(A @ x), x)


# (output shape of f, shapes of the params dict) for jax.jacrev(f)(params)
JACOBIAN_SHAPE_CASES = (
    ((), {"w": (3, 2), "b": (2,)}),
    ((3,), {"w": (3, 2), "b": (2,)}),
    ((2, 4), {"k": (1, 5), "a": ()}),
    ((5,), {"z": (5,)}),
)


def params_output(out_shape: tuple[int, ...]):
    """A function of a params dict whose value has `out_shape` and depends on every leaf."""

    def f(params):
        total = sum(jnp.sum(jnp.sin(leaf)) for leaf in params.values())
        return jnp.ones(out_shape, jnp.float32) * total

    return f


def _fvec(task: str, pick) -> Recipe:
    m, n = F_SHAPES[0]

    def build(module):
        A, x, v, ct = fvec_data(m, n)
        f = partial(sin_ax_norm, A)
        return (lambda x, arg: getattr(module, task)(f, x, arg)), pick(x, v, ct)

    return Recipe(build, f"{task}(f, x f32[{n}], ...), f = sin(A x) * |x|^2 with A f32[{m},{n}]")


def _jacobian(module):
    f, x, _, _ = two_layer(*SHAPES["tall"])
    return (lambda v: module.jacobian(f, v, "rev")), (x,)


def _matvec(module):
    W, vs, _ = matvec_case((None, 0))
    return (lambda w, v: module.batched_matvec(w, v, (None, 0))), (W, vs)


SHOWN = {
    "mlp_grad": Recipe(
        lambda m: (m.mlp_grad, mlp_data()), "mlp_grad(params, x f32[8,16], y f32[8,4])"
    ),
    "jvp_tangent": _fvec("jvp_tangent", lambda x, v, ct: (x, v)),
    "vjp_cotangent": _fvec("vjp_cotangent", lambda x, v, ct: (x, ct)),
    "jacobian": Recipe(
        _jacobian, "jacobian(f, x f32[4], 'rev'), f = w2 @ tanh(w1 @ x) with 32 hidden, 64 out"
    ),
    "batched_matvec": Recipe(_matvec, "batched_matvec(W f32[4,3], vs f32[8,3], in_axes=(None, 0))"),
    "per_example_grads": Recipe(
        lambda m: (m.per_example_grads, mlp_data()),
        "per_example_grads(params, xs f32[8,16], ys f32[8,4])",
    ),
}
