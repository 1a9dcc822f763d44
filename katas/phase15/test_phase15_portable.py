"""Phase 15 tests of exports that travel: batch_polymorphic (one export for every batch size)
and portable_solve (a solve that needs no LAPACK custom call), both decide tasks, checked by
running what they return: through JAX and jax.export, and through IREE with the ``iree`` group.
"""

from __future__ import annotations

import random
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kata_harness import iree
from katas.phase15.draws import (
    bf16,
    eps_of,
    largest_entry_systems,
    normal,
)
from katas.phase15.programs import (
    spd_system,
)
from xla_inspect import iree_compile

# ---- batch_polymorphic (decide) ------------------------------------------------------------


def _row_functions(rng: random.Random, for_iree: bool = False):
    """(what, f, example): row-wise functions and an example of one batch size (1 for one of
    them). With a symbolic batch, IREE 3.13.0 refuses a row statistic broadcast back over the
    row (softmax, x - mean: "failed to legalize operation 'stablehlo.dynamic_broadcast_in_dim'"),
    so the IREE test leaves those out (``for_iree=True``), and the bias and the square example
    too: what they vary (another dense layer, a dimension equal to the batch kept concrete) is
    read from the export's avals and run by the JAX test, and each IREE compile costs seconds."""
    batch = rng.randint(2, 9)
    features = rng.randint(2, 24)
    hidden = rng.randint(2, 24)
    w = normal(rng, (features, hidden))
    b = normal(rng, (hidden,))
    yield "dense+tanh", (lambda x: jnp.tanh(x @ w)), normal(rng, (batch, features))
    if not for_iree:
        yield "dense+bias+relu", (lambda x: jax.nn.relu(x @ w + b)), normal(rng, (batch, features))
    # an example of batch 1 on every run: its leading 1 must become symbolic like any other
    yield "dense+tanh on a batch of one", (lambda x: jnp.tanh(x @ w)), normal(rng, (1, features))
    square = normal(rng, (batch, hidden))  # rows as long as the example's batch
    if not for_iree:
        yield (
            "dense on a square example",
            (lambda x: jnp.tanh(x @ square)),
            normal(rng, (batch, batch)),
        )
    rest = (rng.randint(2, 6), rng.randint(2, 6))
    yield (
        "bf16 row sums 3-d",
        (lambda x: jnp.abs(x).sum((1, 2))),
        normal(rng, (batch, *rest), bf16),
    )
    if not for_iree:
        yield "softmax", (lambda x: jax.nn.softmax(x, axis=-1)), normal(rng, (batch, features))
        yield (
            "normalize 3-d",
            (lambda x: x / (1 + jnp.abs(x).sum((1, 2), keepdims=True))),
            normal(rng, (batch, *rest)),
        )


def _assert_close(got, want, what: str) -> None:
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: {got.dtype}, f gives {want.dtype}"
    tolerance = 4 * eps_of(want.dtype) if want.dtype == bf16 else 1e-5
    np.testing.assert_allclose(
        np.asarray(got, np.float64),
        np.asarray(want, np.float64),
        rtol=tolerance,
        atol=tolerance,
        err_msg=what,
    )


def _batches(rng: random.Random, runs: int = 3) -> list[int]:
    """Batch sizes to run: 1, and ``runs - 1`` more from 2 to 8 and from 20 to 70."""
    return [1, rng.randint(20, 70), rng.randint(2, 8)][:runs]


def _polymorphic_export(kata, what: str, fn, example: jax.Array) -> jax.export.Exported:
    """The answer's export of `fn`, checked: one input, only its leading dimension symbolic, the
    others and the dtype the example's. What a wrong export raises becomes a failure saying so."""
    shown = f"{example.dtype}{list(example.shape)}"
    try:
        exported = kata.batch_polymorphic(fn, example)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001  (jax.export raises several types on a wrong spec)
        pytest.fail(
            f"batch_polymorphic: {what} on an example {shown}: exporting raised "
            f"{type(exc).__name__}: {str(exc)[:300]}",
            pytrace=False,
        )
    assert isinstance(exported, jax.export.Exported), f"{what}: not a jax.export.Exported"
    assert len(exported.in_avals) == 1, f"{what}: {len(exported.in_avals)} inputs, f takes 1"
    (aval,) = exported.in_avals
    shape = tuple(aval.shape)
    assert len(shape) == example.ndim, f"{what}: exported for rank {len(shape)}, example {shown}"
    assert not isinstance(shape[0], int), f"{what}: the batch dimension is {shape[0]}"
    symbolic = [i for i, d in enumerate(shape[1:], 1) if not isinstance(d, int)]
    assert not symbolic, (
        f"{what}: dimension(s) {symbolic} are symbolic too ({shape}); only the batch may be"
    )
    assert shape[1:] == example.shape[1:] and aval.dtype == example.dtype, (
        f"{what}: exported for {aval.dtype}{list(shape)}, example is {shown}"
    )
    shardy = _SHARDY.search(exported.mlir_module())
    assert shardy is None, (
        f"{what} on an example {shown}: the export holds a Shardy operation "
        f"({shardy.group(0)!r}: an input or output given a sharding), which IREE cannot parse; "
        "IREE must compile the export"
    )
    return exported


# What JAX writes when an export's input or output carries a sharding (IREE 3.13.0: "Dialect
# `sdy' not found"): a mesh, a per-argument sharding, a constraint.
_SHARDY = re.compile(
    r"\bsdy\.(?:mesh|sharding|sharding_constraint|manual_computation)\b[^\n]{0,60}"
)


def _large_batches(rng: random.Random) -> list[int]:
    """Batch sizes too large to run here, drawn log-uniformly from 10^2 to 10^5 and from 10^5
    to 10^9, and 2^31 - 1: "every size from 1 up" has no upper bound to meet."""
    return [round(10 ** rng.uniform(2, 5)), round(10 ** rng.uniform(5, 9)), 2**31 - 1]


def _assert_accepts_large_batches(exported, what: str, fn, example: jax.Array, rng) -> None:
    """The export called on abstract arguments of large batches (jax.eval_shape: nothing is
    computed or compiled; jax.export checks the batch against the export's constraints while
    tracing the call) gives f's output shape and dtype for that batch."""
    for batch in _large_batches(rng):
        x = jax.ShapeDtypeStruct((batch, *example.shape[1:]), example.dtype)
        try:
            got = jax.eval_shape(exported.call, x)
        except Exception as exc:  # noqa: BLE001  (shape constraints raise several types)
            raise AssertionError(f"{what}: the export refuses batch {batch}: {exc}") from exc
        want = jax.eval_shape(fn, x)
        assert (got.shape, got.dtype) == (want.shape, want.dtype), (
            f"{what} at batch {batch}: {got.dtype}{list(got.shape)}, f gives "
            f"{want.dtype}{list(want.shape)}"
        )


@pytest.mark.timeout(120)  # XLA compiles the export's call for 2 batches of 7 functions
@pytest.mark.task("batch_polymorphic")
def test_batch_polymorphic_export(kata, fresh):
    """Run at batch 1 and one from 20 to 70 (each a compile of the export's call): batches up
    to 2^31 - 1 are checked abstractly, and the IREE test runs a third size."""
    for what, fn, example in _row_functions(fresh):
        exported = _polymorphic_export(kata, what, fn, example)
        _assert_accepts_large_batches(exported, what, fn, example, fresh)
        expected = jax.jit(fn)  # one compile per batch, not one per operation
        for batch in _batches(fresh, runs=2):
            x = normal(fresh, (batch, *example.shape[1:]), example.dtype)
            try:
                got = np.asarray(exported.call(x))
            except Exception as exc:  # noqa: BLE001  (shape assertions raise several types)
                raise AssertionError(f"{what}: the export refuses batch {batch}: {exc}") from exc
            _assert_close(got, expected(x), f"{what} at batch {batch}")


@pytest.mark.timeout(120)
@pytest.mark.task("batch_polymorphic")
def test_batch_polymorphic_one_iree_module(kata, fresh):
    iree.require()
    for what, fn, example in _row_functions(fresh, for_iree=True):
        exported = _polymorphic_export(kata, what, fn, example)
        try:
            vmfb = iree.compiled(exported.mlir_module())
        except iree_compile.IreeCompileError as exc:
            raise AssertionError(
                f"{what} on an example {example.dtype}{list(example.shape)}: IREE refuses the "
                f"export: {str(exc)[:300]}"
            ) from exc
        expected = jax.jit(fn)
        for batch in _batches(fresh):
            x = normal(fresh, (batch, *example.shape[1:]), example.dtype)
            try:
                (got,) = iree.run(vmfb, x)
            except Exception as exc:  # noqa: BLE001  (IREE's runtime raises its own types)
                raise AssertionError(f"{what}: IREE could not run batch {batch}: {exc}") from exc
            _assert_close(got, expected(x), f"{what} at batch {batch}")


# ---- portable_solve (decide) ---------------------------------------------------------------


def _chebyshev_system(rng: np.random.Generator, n: int, k: int | None):
    """An SPD f32 a of condition number 100 whose eigenvalues crowd both ends of [1, 100] (one
    near each Chebyshev point): the spectrum on which conjugate gradients converge slowest (a
    fixed 20 steps left relative errors of 4.5e-3 to 2.5e-2 on draws with n from 24 to 64,
    uniformly spread eigenvalues 3e-7 to 2.6e-3), and a standard-normal b."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    points = (np.arange(n) + rng.uniform(0.2, 0.8, n)) / n
    eigenvalues = 1.0 + 99.0 * (1.0 - np.cos(np.pi * points)) / 2.0
    eigenvalues[0], eigenvalues[-1] = 1.0, 100.0
    a = (q * eigenvalues) @ q.T
    b = rng.standard_normal((n,) if k is None else (n, k))
    return ((a + a.T) / 2).astype(np.float32), b.astype(np.float32)


def _scales(rng: random.Random) -> list[tuple[float, float]]:
    """(a's scale, b's scale) for four systems, in a drawn order: the contract bounds a's
    condition number, not the size of a's or b's entries, and a relative error does not depend
    on them. One b is huge (1e22 to 1e25: its squared norm overflows float32) with a scaled by
    1e34 to 1e36 (entries up to 1e38: p . a p overflows unless a is scaled too), one tiny
    (1e-25 to 1e-22: its squared norm underflows) with a scaled by 1e-34 to 1e-30 (p . a p of
    a b scaled to 1 underflows past any guard), so that x's norm stays within the contract's
    1e-30 to 1e30; one b is from 1e-9 to 1e8 with a scaled by 1e-4 to 1e4. And one b is huge
    (1e24 to 1e25) or tiny (1e-25 to 1e-22), drawn, beside an a of entries near 1 (scaled by 0.1
    to 10, entries at most 1e3): b's scale is not a's, so x's norm lies near an end of the
    contract's range (about 1e22 to 1e27, or 1e-28 to 1e-22); a solve that divides b by a's
    size alone is left with squares of b that overflow or underflow float32."""
    edge = rng.choice((10 ** rng.uniform(24, 25), 10 ** rng.uniform(-25, -22)))
    scales = [
        (10 ** rng.uniform(34, 36), 10 ** rng.uniform(22, 25)),
        (10 ** rng.uniform(-34, -30), 10 ** rng.uniform(-25, -22)),
        (10 ** rng.uniform(-4, 4), 10 ** rng.uniform(-9, 8)),
        (10 ** rng.uniform(-1, 1), edge),
    ]
    rng.shuffle(scales)
    return scales


def _systems(rng: random.Random):
    """(what, a, b): SPD systems of condition number at most 100, four of them scaled; every
    run has a b of a few columns beside a large n (a solve that sizes its work by b's last
    dimension does too little there)."""
    generator = np.random.default_rng(rng.getrandbits(32))
    sizes = [1, rng.randint(2, 8), rng.randint(9, 40), 64]
    scales = _scales(rng)
    columns_beside_large_n = False
    for n, (a_scale, b_scale) in zip(sizes, scales, strict=True):
        k = rng.choice([None, rng.randint(1, 5)])
        columns_beside_large_n = columns_beside_large_n or (n >= 9 and k is not None)
        a, b = spd_system(generator, n, k)
        a, b = (a * np.float32(a_scale)), (b * np.float32(b_scale))
        scaled = "" if a_scale == b_scale == 1.0 else f", a x {a_scale:.3g}, b x {b_scale:.3g}"
        yield f"n={n}, b {list(b.shape)}{scaled}", a, b
    k = rng.randint(1, 5) if not columns_beside_large_n else rng.choice([None, rng.randint(1, 5)])
    n = rng.randint(24, 64)
    a, b = _chebyshev_system(generator, n, k)
    yield f"n={n}, b {list(b.shape)}, eigenvalues near Chebyshev points", a, b


def _spread_systems(rng: random.Random):
    """(what, a, b): three SPD f32 systems, n from 9 to 15, whose eigenvalues spread evenly in
    log scale over the whole allowed [1, 100] (one in each of n equal steps of log10, 1 and 100
    themselves at the ends), a b of shape (n,) or (n, k) standard normal. The drawn systems
    above put theirs uniformly (most in [10, 100]) or near both ends; this spectrum is the one
    on which float32 conjugate gradients lose the orthogonality that "exact in n steps" needs:
    n steps left relative errors of 2e-4 to 4e-2 (above 1e-3 on about nine draws in ten)."""
    generator = np.random.default_rng(rng.getrandbits(32))
    for _ in range(3):
        n, k = rng.randint(9, 15), rng.choice([None, rng.randint(1, 4)])
        q, _ = np.linalg.qr(generator.standard_normal((n, n)))
        eigenvalues = 100.0 ** ((np.arange(n) + generator.uniform(0.2, 0.8, n)) / n)
        eigenvalues[0], eigenvalues[-1] = 1.0, 100.0
        a = (q * eigenvalues) @ q.T
        b = generator.standard_normal((n,) if k is None else (n, k)).astype(np.float32)
        what = f"n={n}, b {list(b.shape)}, eigenvalues spread geometrically over [1, 100]"
        yield what, ((a + a.T) / 2).astype(np.float32), b


def _signed_systems(rng: random.Random):
    """(what, a, b): SPD systems whose b has one sign: every entry at most 0 with some rows 0
    (b's largest entry is 0), every entry below 0 but one row a tiny positive (1e-30 to 1e-20
    of b's size: the largest entry is that), every entry at least 0 with some rows 0 (the
    smallest is 0). The size of b is its largest absolute entry; its largest or smallest
    entry may be 0, tiny or of either sign."""
    generator = np.random.default_rng(rng.getrandbits(32))
    for pattern in ("at most 0", "below 0 but a tiny positive row", "at least 0"):
        n, k = rng.randint(2, 40), rng.choice([None, rng.randint(1, 4)])
        a, b = spd_system(generator, n, k)
        b = np.abs(b) if pattern == "at least 0" else -np.abs(b)
        rows = rng.sample(range(n), rng.randint(1, n - 1))
        if pattern == "below 0 but a tiny positive row":
            b[rows[0]] = np.abs(b).max() * 10 ** rng.uniform(-30, -20)
        else:
            b[rows] = 0.0
        what = f"n={n}, b {list(b.shape)}: every entry {pattern}"
        yield what if pattern.endswith("row") else f"{what}, {len(rows)} of {n} rows 0", a, b


def _relative_error(got, a, b) -> float:
    exact = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    return float(np.linalg.norm(np.asarray(got, np.float64) - exact) / np.linalg.norm(exact))


def _solutions(kata, a, b):
    """(how, x): the answer called on arrays, and its export run (what IREE would be given;
    jax.export's call runs the exported module): a solve that is another one when traced is
    measured on both."""
    yield "called", kata.portable_solve(jnp.asarray(a), jnp.asarray(b))
    try:
        exported = jax.export.export(jax.jit(kata.portable_solve))(a, b)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001  (tracing a NumPy-only solve raises several types)
        raise AssertionError(f"n={a.shape[0]}: jax.export cannot trace it: {exc}") from exc
    yield "exported and run", exported.call(a, b)


@pytest.mark.task("portable_solve")
def test_portable_solve_values(kata, fresh):
    systems = list(_systems(fresh))
    spread, signed = list(_spread_systems(fresh)), list(_signed_systems(fresh))
    largest = list(largest_entry_systems(fresh))
    # Drawn in that order, checked in another: the two smallest systems (n = 1, n up to 8)
    # first, then those whose a's entries lie near float32's largest: a solve that scales
    # wrongly fails there before it pays its compiles of the other systems, n up to 64 each.
    for what, a, b in [*systems[:2], *largest, *systems[2:], *spread, *signed]:
        for how, got in _solutions(kata, a, b):
            where = f"{what}, {how} ({fresh.where()})"
            assert (got.shape, got.dtype) == (b.shape, b.dtype), f"{where}: {got.dtype}{got.shape}"
            error = _relative_error(got, a, b)
            assert error <= 1e-3, f"{where}: relative error {error:.3g}"


def _misleading_system(rng: np.random.Generator, n: int, k: int | None):
    """An SPD f32 a of condition number 100 and a b almost all along eigenvectors of a's largest
    eigenvalue (100), the rest (1e-4 to 9e-4 of b's norm, per column) along eigenvectors of
    eigenvalues in [1, 2]. That small rest is most of x's error budget: leaving it unsolved
    leaves a relative residual under 1e-3 but a relative error of at least 5e-3."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    top, low = int(rng.integers(1, n // 4 + 2)), int(rng.integers(1, n // 4 + 2))
    top, low = min(top, n - 2), min(low, n - 1 - min(top, n - 2))
    eigenvalues = rng.uniform(1.0, 100.0, n)
    eigenvalues[:top] = 100.0
    eigenvalues[top : top + low] = rng.uniform(1.0, 2.0, low)
    eigenvalues[top] = 1.0
    a = (q * eigenvalues) @ q.T
    columns = 1 if k is None else k
    large = q[:, :top] @ rng.standard_normal((top, columns))
    small = q[:, top : top + low] @ rng.standard_normal((low, columns))
    small *= (
        rng.uniform(1e-4, 9e-4, columns)
        * np.linalg.norm(large, axis=0)
        / np.linalg.norm(small, axis=0)
    )
    b = large + small
    return ((a + a.T) / 2).astype(np.float32), (b[:, 0] if k is None else b).astype(np.float32)


@pytest.mark.task("portable_solve")
def test_portable_solve_where_a_small_residual_misleads(kata, fresh):
    generator = np.random.default_rng(fresh.getrandbits(32))
    for n in [fresh.randint(4, 12), fresh.randint(13, 40), 64]:
        k = fresh.choice([None, fresh.randint(1, 5)])
        a, b = _misleading_system(generator, n, k)
        for how, got in _solutions(kata, a, b):
            where = f"n={n}, b {list(b.shape)}, cond(a) = 100, {how} ({fresh.where()})"
            assert (got.shape, got.dtype) == (b.shape, b.dtype), f"{where}: {got.dtype}{got.shape}"
            error = _relative_error(got, a, b)
            assert error <= 1e-3, (
                f"{where}: relative error {error:.3g}; a residual below 1e-3 of b can hide an "
                "error up to cond(a) = 100 times larger"
            )


@pytest.mark.task("portable_solve")
def test_portable_solve_exports_without_custom_calls(kata, fresh):
    for what, a, b in _systems(fresh):
        where = f"{what} ({fresh.where()})"
        try:
            exported = jax.export.export(jax.jit(kata.portable_solve))(a, b)
        except NotImplementedError as exc:
            raise AssertionError(f"{where}: jax.export refuses it: {exc}") from exc
        targets = re.findall(r"custom_call @(\w+)", exported.mlir_module())
        assert not targets, f"{where}: the export calls {sorted(set(targets))}"


@pytest.mark.timeout(120)
@pytest.mark.task("portable_solve")
def test_portable_solve_runs_in_iree(kata, fresh):
    iree.require()
    for what, a, b in _systems(fresh):
        where = f"{what} ({fresh.where()})"
        exported = jax.export.export(jax.jit(kata.portable_solve))(a, b)
        try:
            vmfb = iree.compiled(exported.mlir_module())
        except iree_compile.IreeCompileError as exc:
            raise AssertionError(f"{where}: {exc}") from exc
        # the module takes only the arguments the solve reads (jax.export drops the others)
        (got,) = iree.run(vmfb, *[(a, b)[i] for i in exported.module_kept_var_idx])
        error = _relative_error(got, a, b)
        assert error <= 1e-3, f"{where}: IREE's result is off by {error:.3g}"
