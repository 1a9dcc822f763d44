"""The programs phase 15 exports from JAX and compiles with IREE, and the listings recorded from
them.

IREE reads StableHLO, the portable form `jax.export` writes; its llvm-cpu backend compiles it for
this machine's CPU (the `generic` x86-64 CPU, so a listing does not depend on which CPU recorded
it). ``FLOWS`` are the programs whose IREE flow listings (`--compile-to=flow`, one
`flow.executable` per dispatch) are kept in ``katas/phase15/recorded/<name>.mlir`` so the
reading tasks run without the ``iree`` group; with the group installed,
tests/harness/test_iree_recordings.py compiles them again and compares. ``BANK`` holds the
families of functions whose fate in IREE the predict task asks about; ``VERDICTS`` is what IREE
3.13.0 did with each (checked again live with the group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.experimental
import jax.numpy as jnp
import numpy as np

from kata_harness.programs import Recipe, given

f32 = jnp.float32
bf16 = jnp.bfloat16
IREE_FLAGS = ("--iree-llvmcpu-target-cpu=generic",)  # the same dispatches as `host` here


@dataclass(frozen=True)
class Flow:
    """A program and the (shape, dtype) of each argument; `what` says in one line what it is."""

    what: str
    fn: Callable[..., Any]
    shapes: tuple[tuple[tuple[int, ...], Any], ...]

    def args(self) -> list[jax.ShapeDtypeStruct]:
        return [jax.ShapeDtypeStruct(s, d) for s, d in self.shapes]


def mlp(x, w1, b1, w2, b2):
    return jax.nn.gelu(x @ w1 + b1) @ w2 + b2


def layernorm_softmax(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return jax.nn.softmax((x - mean) / jnp.sqrt(var + 1e-5) * g + b, axis=-1)


def _mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    return jnp.mean((mlp(x, w1, b1, w2, b2) - y) ** 2)


def train_step(w1, b1, w2, b2, x, y):
    """One SGD step of the MLP on a squared error (learning rate 0.1): the new parameters."""
    params = (w1, b1, w2, b2)
    grads = jax.grad(_mlp_loss)(params, x, y)
    return tuple(p - 0.1 * g for p, g in zip(params, grads, strict=True))


def attention(q, k, v):
    scores = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(scores, axis=-1), v)


def projections(m, v, x, w):
    """A matrix-vector product, a vector-matrix product and a bf16 matmul accumulated in f32."""
    mv = m @ v
    vm = v @ w.astype(f32)
    mm = jnp.dot(x, w, preferred_element_type=f32)
    return mv, vm, mm


def int_matmul(a, b):
    return a @ b + 1


_MLP = (((32, 64), f32), ((64, 128), f32), ((128,), f32), ((128, 16), f32), ((16,), f32))
FLOWS: dict[str, Flow] = {
    "mlp": Flow("gelu(x @ w1 + b1) @ w2 + b2, f32", mlp, _MLP),
    "layernorm_softmax": Flow(
        "softmax of a LayerNorm over the last axis, f32[8,256]",
        layernorm_softmax,
        (((8, 256), f32), ((256,), f32), ((256,), f32)),
    ),
    "train_step": Flow(
        "one SGD step of the mlp on a mean squared error",
        train_step,
        (*_MLP[1:], ((32, 64), f32), ((32, 16), f32)),
    ),
    "attention": Flow(
        "softmax(q k^T / sqrt(d)) v over a batch of 4 heads, f32",
        attention,
        (((4, 16, 32), f32), ((4, 24, 32), f32), ((4, 24, 32), f32)),
    ),
    "projections": Flow(
        "m @ v, v @ w and a bf16 x @ w accumulated in f32",
        projections,
        (((48, 40), f32), ((40,), f32), ((12, 40), bf16), ((40, 56), bf16)),
    ),
    "int_matmul": Flow(
        "an int32 matmul plus one", int_matmul, (((8, 24), jnp.int32), ((24, 40), jnp.int32))
    ),
}

# The programs agreement_rtol is about: their outputs through IREE against JAX's.
ROUND_TRIPS = {name: FLOWS[name] for name in ("mlp", "layernorm_softmax")}


# ---- the bank: which functions does IREE accept? ------------------------------------------
# Each family draws a function and its arguments from a generator; the verdict is the same for
# every draw of a family: IREE's outcome depends on the operations the export holds, and each
# family draws only sizes that trace to the same operations (jnp.linalg.det of a 2x2 or 3x3
# matrix is a closed form with no `lu`, so "small_determinant" and "determinant" are two).


def _square(rng: np.random.Generator, n: int | None = None) -> np.ndarray:
    n = int(rng.integers(3, 9)) if n is None else n
    a = rng.standard_normal((n, n)).astype(np.float32)
    return a @ a.T + n * np.eye(n, dtype=np.float32)


def _matrix(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((int(rng.integers(2, 9)), int(rng.integers(2, 9)))).astype(
        np.float32
    )


def _solve(rng):
    a = _square(rng)
    return (lambda a, b: jnp.linalg.solve(a, b) * 2.0), (a, a[:, :2])


def _cholesky(rng):
    return (lambda a: jnp.linalg.cholesky(a).sum(0)), (_square(rng),)


def _eigh(rng):
    return (lambda a: jnp.linalg.eigh(a)[0]), (_square(rng),)


def _triangular(rng):
    a = _square(rng)
    solve = partial(jax.scipy.linalg.solve_triangular, lower=True)
    return (lambda a, b: solve(a, b) + 1.0), (a, a[:, :1])


def _qr(rng):
    return (lambda a: jnp.linalg.qr(a)[0] * 2.0), (_matrix(rng),)


def _svd(rng):
    return (lambda a: jnp.linalg.svd(a, compute_uv=False).sum()), (_matrix(rng),)


def _matrix_square(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((int(rng.integers(2, 9)),) * 2).astype(np.float32)


def _eig(rng):
    return (lambda a: jnp.abs(jnp.linalg.eigvals(a))), (_matrix_square(rng),)


def _determinant(rng):
    """From 4x4 up jnp.linalg.det factors the matrix (`lu`, LAPACK's getrf on CPU)."""
    return (lambda a: jnp.linalg.det(a) + 1.0), (_square(rng, int(rng.integers(4, 9))),)


def _small_determinant(rng):
    """jnp.linalg.det of a 2x2 or 3x3 matrix is a closed form: no `lu`, no LAPACK."""
    return (lambda a: jnp.linalg.det(a) * 2.0), (_square(rng, int(rng.integers(2, 4))),)


def _schur(rng):
    return (lambda a: jax.scipy.linalg.schur(a)[0] + 1.0), (_matrix_square(rng),)


def _hessenberg(rng):
    return (lambda a: jax.scipy.linalg.hessenberg(a, calc_q=False) * 2.0), (_matrix_square(rng),)


def _tridiagonal(rng):
    return (lambda a: jax.lax.linalg.tridiagonal(a)[1].sum()), (_square(rng),)


def _tridiagonal_solve(rng):
    n, k = int(rng.integers(3, 9)), int(rng.integers(1, 4))
    d = (rng.standard_normal(n) + 4.0).astype(np.float32)
    off = (0.1 * rng.standard_normal(n)).astype(np.float32)
    lower, upper = off.copy(), off.copy()
    lower[0], upper[-1] = 0.0, 0.0  # LAPACK's convention: dl[0] and du[n-1] are not read
    b = rng.standard_normal((n, k)).astype(np.float32)
    solve = jax.lax.linalg.tridiagonal_solve
    return (lambda dl, d, du, b: solve(dl, d, du, b) - b), (lower, d, upper, b)


def _householder_product(rng):
    a = _matrix_square(rng)
    taus = rng.uniform(0.5, 1.5, size=a.shape[0] - 1).astype(np.float32)
    return (lambda a, t: jax.lax.linalg.householder_product(a, t) * 2.0), (a, taus)


def _pivoted_qr(rng):
    return (lambda a: jax.lax.linalg.qr(a, pivoting=True)[1].sum(0)), (_matrix_square(rng),)


def _ormqr(rng):
    a = _matrix_square(rng)
    taus = rng.uniform(0.5, 1.5, size=a.shape[0] - 1).astype(np.float32)
    return (lambda a, t: jax.lax.linalg.ormqr(a, t, a) + 1.0), (a, taus)


def _linalg_without_lapack(rng):
    """Two jax.lax.linalg operations that XLA:CPU writes as plain StableHLO, no LAPACK."""
    a, n = _matrix(rng), int(rng.integers(3, 9))
    pivots = np.array([rng.integers(i, n) for i in range(n)], np.int32)
    permutation = partial(jax.lax.linalg.lu_pivots_to_permutation, permutation_size=n)

    def f(a, pivots):
        return jax.lax.linalg.symmetric_product(a, a @ a.T), permutation(pivots) * 2

    return f, (a, pivots)


def _host_callback(rng):
    x = _matrix(rng)
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return (lambda x: jax.pure_callback(np.sin, shape, x) + x), (x,)


def _debug_print(rng):
    def f(x):
        jax.debug.print("x = {}", x)
        return x * 2

    return f, (_matrix(rng),)


def _io_callback(rng):
    x = _matrix(rng)
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return (lambda x: jax.experimental.io_callback(np.cos, shape, x) * x), (x,)


# The PRNG implementations a typed key may have: each is its own key dtype (key<fry>,
# key<rbg>, key<urbg>), and jax.export writes Shardy ops for a key of any of them.
KEY_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")


def typed_key(rng: np.random.Generator, impl: str, at: int):
    """A draw of the typed_key family: a key of ``impl`` is argument ``at`` (0 or 1) of two, the
    other a float vector the draw is added to."""
    n = int(rng.integers(2, 9))
    key = jax.random.key(int(rng.integers(100)), impl=impl)
    x = rng.standard_normal(n).astype(np.float32)
    if at == 0:
        return (lambda k, x: jax.random.normal(k, (n,)) + x), (key, x)
    return (lambda x, k: jax.random.normal(k, (n,)) * x), (x, key)


def key_result(rng: np.random.Generator, impl: str, at: int):
    """A draw of the key_result family: keys of ``impl`` split from an int32 seed are result
    ``at`` (0, 1 or 2) among a float array and a scalar computed from the second argument."""
    count = int(rng.integers(2, 6))
    seed = np.array(rng.integers(99), np.int32)
    x = _matrix(rng)

    def f(s, x):
        results = [x * 2.0, x.sum()]
        results.insert(at, jax.random.split(jax.random.key(s, impl=impl), count))
        return tuple(results)

    return f, (seed, x)


def _typed_key(rng):
    return typed_key(rng, KEY_IMPLS[int(rng.integers(len(KEY_IMPLS)))], int(rng.integers(2)))


def _key_result(rng):
    return key_result(rng, KEY_IMPLS[int(rng.integers(len(KEY_IMPLS)))], int(rng.integers(3)))


def _sharding_constraint(rng):
    mesh = jax.make_mesh((1,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
    return (lambda x: jax.lax.with_sharding_constraint(x * 3, spec)), (_matrix(rng),)


# How a key is made inside the function from an argument that is not a key: an int32 seed
# (random_seed), the same with the legacy uint32[2] key it unwraps to, or raw uint32[2] key data
# (random_wrap). No key is among the arguments or results, so jax.export writes no Shardy op.
SEED_FORMS = {
    "key": (jax.random.key, lambda rng: np.array(rng.integers(99), np.int32)),
    "PRNGKey": (jax.random.PRNGKey, lambda rng: np.array(rng.integers(99), np.int32)),
    "wrap_key_data": (
        jax.random.wrap_key_data,
        lambda rng: rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32),
    ),
}


def int_seed(rng: np.random.Generator, form: str):
    """A draw of the int_seed family with the key made by ``form`` (a SEED_FORMS name) from the
    function's first argument; the draw is added to an input (IREE runs it so, see README)."""
    make_key, draw_seed = SEED_FORMS[form]
    x = _matrix(rng)
    return (lambda s, x: jax.random.normal(make_key(s), x.shape) + x), (draw_seed(rng), x)


def _int_seed(rng):
    forms = sorted(SEED_FORMS)
    return int_seed(rng, forms[int(rng.integers(len(forms)))])


def _sort_topk(rng):
    return (lambda x: (jnp.sort(x, axis=-1), jax.lax.top_k(x, 2)[0])), (_matrix(rng),)


def _scan(rng):
    def f(x):
        return jax.lax.scan(lambda c, row: (c * 0.5 + row, c.sum()), x[0], x)

    return f, (_matrix(rng),)


def _cumsum_gather(rng):
    x = _matrix(rng)
    idx = rng.integers(0, x.shape[0], size=3).astype(np.int32)
    return (lambda x, i: jnp.cumsum(x, 0)[i]), (x, idx)


def _while(rng):
    def f(x):
        return jax.lax.while_loop(lambda c: c.sum() < 1e3, lambda c: c * 2.0 + 1.0, x)

    return f, (np.abs(_matrix(rng)) + 0.1,)


def _checkpointed(rng):
    x = _matrix(rng)
    f = jax.checkpoint(lambda x: jnp.sin(x) @ jnp.cos(x).T)
    return jax.grad(lambda x: f(x).sum()), (x,)


BANK: dict[str, Callable[[np.random.Generator], tuple[Callable[..., Any], tuple[Any, ...]]]] = {
    "solve": _solve,
    "cholesky": _cholesky,
    "eigh": _eigh,
    "triangular_solve": _triangular,
    "qr": _qr,
    "svd": _svd,
    "eig": _eig,
    "determinant": _determinant,
    "schur": _schur,
    "hessenberg": _hessenberg,
    "tridiagonal": _tridiagonal,
    "tridiagonal_solve": _tridiagonal_solve,
    "householder_product": _householder_product,
    "pivoted_qr": _pivoted_qr,
    "ormqr": _ormqr,
    "host_callback": _host_callback,
    "io_callback": _io_callback,
    "debug_print": _debug_print,
    "typed_key": _typed_key,
    "key_result": _key_result,
    "sharding_constraint": _sharding_constraint,
    "int_seed": _int_seed,
    "sort_topk": _sort_topk,
    "scan": _scan,
    "cumsum_gather": _cumsum_gather,
    "while_loop": _while,
    "checkpoint_grad": _checkpointed,
    "small_determinant": _small_determinant,
    "linalg_without_lapack": _linalg_without_lapack,
}

# What IREE 3.13.0 (llvm-cpu) did with each family, exported by jax 0.12: "runs" (compiled and
# ran), "lapack" (a LAPACK custom call IREE cannot legalize), "sdy" (Shardy ops such as
# `sdy.mesh` and `sdy.sharding_constraint`: IREE has no `sdy` dialect), "export" (jax.export
# itself refused: a host callback, or a custom call with no compatibility guarantee such as a
# pivoted QR's geqp3 or ormqr). Shardy attributes alone do not decide: JAX puts an
# `sdy.sharding_rule` attribute on every LAPACK custom call, and IREE refuses the call, not the
# attribute ("lapack"). tests/harness/test_iree_recordings.py checks every family again with
# the iree group; the phase's test checks each fresh draw against IREE, or without the group
# against what the export holds (kata_harness.iree.export_verdict).
VERDICTS = {
    "solve": "lapack",
    "cholesky": "lapack",
    "eigh": "lapack",
    "triangular_solve": "lapack",
    "qr": "lapack",
    "svd": "lapack",
    "eig": "lapack",
    "determinant": "lapack",
    "schur": "lapack",
    "hessenberg": "lapack",
    "tridiagonal": "lapack",
    "tridiagonal_solve": "lapack",
    "householder_product": "lapack",
    "pivoted_qr": "export",
    "ormqr": "export",
    "host_callback": "export",
    "io_callback": "export",
    "debug_print": "export",
    "typed_key": "sdy",
    "key_result": "sdy",
    "sharding_constraint": "sdy",
    "int_seed": "runs",
    "sort_topk": "runs",
    "scan": "runs",
    "cumsum_gather": "runs",
    "while_loop": "runs",
    "checkpoint_grad": "runs",
    "small_determinant": "runs",
    "linalg_without_lapack": "runs",
}


def solve_with_lapack(a, b):
    """x with a @ x = b: jnp.linalg.solve, which on CPU calls LAPACK (getrf) — IREE refuses it."""
    return jnp.linalg.solve(a, b)


def spd_system(rng: np.random.Generator, n: int, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric positive definite f32 a (condition number at most 100) and b of shape (n,) or
    (n, k)."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eigenvalues = rng.uniform(1.0, 100.0, size=n)
    eigenvalues[0], eigenvalues[-1] = 1.0, 100.0
    a = (q * eigenvalues) @ q.T
    b = rng.standard_normal((n,) if k is None else (n, k))
    return ((a + a.T) / 2).astype(np.float32), b.astype(np.float32)


# ---- what `katas show` compiles for a task ----------------------------------------------------


def _given_flow(name: str) -> Recipe:
    flow = FLOWS[name]
    return given(flow.fn, tuple(flow.args()), f"FLOWS[{name!r}] as XLA compiles it: {flow.what}")


SHOWN = {
    "matmul_flops": _given_flow("attention"),
    "merged_by_iree": _given_flow("train_step"),
    "portable_solve": Recipe(
        lambda module: (
            module.portable_solve,
            (jax.ShapeDtypeStruct((64, 64), f32), jax.ShapeDtypeStruct((64,), f32)),
        ),
        "your portable_solve on a 64x64 system, as XLA compiles it",
    ),
}
