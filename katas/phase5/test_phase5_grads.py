"""Phase 5 tests, tasks 1-3 (grad, jvp, vjp): values against NumPy backprop and Jacobians computed
by hand, IR facts read from real jaxprs (equation params) and from optimized HLO through
xla_inspect; mlp_grad on drawn params of any float dtype and structure (strata_grads.mlp_strata).
Expected values come from kata_harness.oracles.autodiff.
"""

from functools import partial

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import autodiff as oracle
from katas.phase5.programs import (
    F_SHAPES,
    GRAD_CASES,
    VALUE_CASES,
    fvec_data,
    mlp_data,
    mlp_ties,
    sin_ax_norm,
)
from katas.phase5.strata_grads import mlp_strata
from katas.phase5.tree_checks import check_tree, wide
from xla_inspect.jaxpr import primitive_census
from xla_inspect.query import dots, opcode_counts

RTOL, ATOL = 1e-5, 1e-5


# ---- task 1: grad -------------------------------------------------------------------------------


@pytest.mark.task("mlp_grad")
def test_mlp_grad_matches_numpy_backprop(kata):
    """Random data, and data on relu's kink (pre-activations exactly 0, where jax.nn.relu's
    derivative is 0: the gradient of mse_loss as written, not of another relu)."""
    shapes = [*VALUE_CASES, (3, (6, 9, 11))]
    cases = [mlp_data(batch, seed, sizes) for seed, (batch, sizes) in enumerate(VALUE_CASES)]
    cases.append(mlp_ties(3, 5, (6, 9, 11)))
    # one compile for every case: the harness runs this test once per variant
    results = jax.jit(lambda all_cases: [kata.mlp_grad(*case) for case in all_cases])(cases)
    for (batch, sizes), case, grads in zip(shapes, cases, results, strict=True):
        expected = oracle.np_mlp_grad(*case)
        assert isinstance(grads, dict) and set(grads) == set(expected), (
            f"expected a dict with keys {sorted(expected)}, got {type(grads).__name__}"
        )
        for name, value in expected.items():
            with check:
                np.testing.assert_allclose(
                    np.asarray(grads[name]),
                    value,
                    rtol=1e-4,
                    atol=1e-5,
                    err_msg=f"d loss / d {name}, batch {batch}, {sizes}",
                )


@pytest.mark.task("mlp_grad")
def test_grad_jaxpr_has_two_transposes(kata):
    for seed, (batch, sizes) in enumerate(GRAD_CASES[:2]):
        census = primitive_census(jax.make_jaxpr(kata.mlp_grad)(*mlp_data(batch, seed, sizes)))
        with check:
            assert census["transpose"] == 2, (
                f"{sizes}: transpose x{census['transpose']}, expected 2 (one per weight gradient)"
            )
        with check:
            assert census["dot_general"] == 5, (
                f"{sizes}: dot_general x{census['dot_general']}, expected 5: 2 forward, 3 backward"
            )


@pytest.mark.task("mlp_grad")
def test_optimized_grad_folds_transposes_into_dots(kata):
    module = oracle.optimized(kata.mlp_grad, *mlp_data())
    counts = opcode_counts(module)
    found = dots(module)
    with check:
        assert counts["transpose"] == 0, (
            f"transpose x{counts['transpose']} in optimized HLO, expected 0"
        )
    with check:
        assert len(found) == 5, f"{len(found)} dots, expected 5 (as many as the jaxpr's)"
    with check:
        assert any(
            d.lhs_contracting_dims == (0,) and d.rhs_contracting_dims == (0,) for d in found
        ), "expected a dot contracting dim 0 of both operands (x.T @ g)"


@pytest.mark.task("mlp_grad")
def test_mlp_grad_on_fresh_params(kata, fresh):
    """Params in bfloat16 with float32 data off bfloat16's grid (mse_loss promotes: the data are
    not rounded), float32 with bfloat16 data, float16, several dtypes, scalar biases, a leaf the
    loss does not read, a batch of one, held in a dict, an OrderedDict or a defaultdict: the
    gradient has params' structure (its mapping type and key order), each leaf its dtype; and
    float32 gradients of large norm or with infinite or NaN entries, as they are."""
    cases = mlp_strata(fresh)
    results = jax.jit(lambda all_cases: [kata.mlp_grad(*c) for c in all_cases])(
        list(cases.values())
    )
    for (situation, case), got in zip(cases.items(), results, strict=True):
        expected = oracle.np_mlp_grad(*wide(case))
        check_tree(got, case[0], expected, f"{situation} ({fresh.where()})")


# ---- tasks 2-3: jvp and vjp ---------------------------------------------------------------------


@pytest.mark.task("jvp_tangent")
def test_jvp_gives_value_and_jacobian_times_tangent(kata):
    shapes = F_SHAPES[:2]  # square and wide here; the jaxpr test adds tall
    cases = [fvec_data(m, n)[:3] for m, n in shapes]
    results = jax.jit(
        lambda all_cases: [kata.jvp_tangent(partial(sin_ax_norm, a), p, t) for a, p, t in all_cases]
    )(cases)
    for (m, n), (A, x, v), result in zip(shapes, cases, results, strict=True):
        assert isinstance(result, tuple) and len(result) == 2, "expected (f(x), J @ v)"
        assert all(isinstance(r, jax.Array) for r in result), "expected two arrays"
        with check:
            np.testing.assert_allclose(
                np.asarray(result[0]),
                np.sin(A @ x) * (x @ x),
                rtol=RTOL,
                atol=ATOL,
                err_msg=f"primal f(x), A {m}x{n}",
            )
        with check:
            np.testing.assert_allclose(
                np.asarray(result[1]),
                oracle.np_jacobian(A, x) @ v,
                rtol=RTOL,
                atol=ATOL,
                err_msg=f"tangent J @ v, A {m}x{n}",
            )


@pytest.mark.task("jvp_tangent")
def test_jvp_jaxpr_adds_tangents_and_never_builds_j(kata):
    for m, n in F_SHAPES[1:]:
        A, x, v, _ = fvec_data(m, n)
        jaxpr = jax.make_jaxpr(lambda a, p, t: kata.jvp_tangent(partial(sin_ax_norm, a), p, t))(
            A, x, v
        )
        census = primitive_census(jaxpr)
        axes = oracle.a_axes_contracted(jaxpr, (m, n))
        with check:
            assert census["add_any"] >= 1, "expected add_any: the product rule sums two tangents"
        with check:
            assert census["iota"] == 0 and census["transpose"] == 0, (
                f"iota x{census['iota']}, transpose x{census['transpose']}: a jvp builds no basis"
            )
        with check:
            assert axes == [(1,), (1,)], (
                f"A {m}x{n}: contracted axes {axes}; A @ x and A @ v, both axis 1"
            )


@pytest.mark.task("vjp_cotangent")
def test_vjp_gives_cotangent_times_jacobian(kata):
    shapes = F_SHAPES[:2]  # square and wide here; the jaxpr test adds tall
    cases = [(a, x, ct) for a, x, _, ct in (fvec_data(m, n) for m, n in shapes)]
    results = jax.jit(
        lambda all_cases: [
            kata.vjp_cotangent(partial(sin_ax_norm, a), p, c) for a, p, c in all_cases
        ]
    )(cases)
    for (m, n), (A, x, ct), x_bar in zip(shapes, cases, results, strict=True):
        assert isinstance(x_bar, jax.Array), (
            f"expected one array shaped like x, got {type(x_bar).__name__}"
        )
        with check:
            assert tuple(x_bar.shape) == (n,), f"A {m}x{n}: shape {x_bar.shape}, expected x's"
        with check:
            np.testing.assert_allclose(
                np.asarray(x_bar).reshape(-1)[:n],
                oracle.np_jacobian(A, x).T @ ct,
                rtol=RTOL,
                atol=ATOL,
                err_msg=f"J.T @ ct, A {m}x{n}",
            )


@pytest.mark.task("vjp_cotangent")
def test_vjp_on_concrete_arrays_leaves_them_alone(kata):
    """Called eagerly on the caller's own NumPy arrays (writeable, as a user's are): the same
    ct @ J, the expected value computed before the call from copies, and x and ct unchanged
    after it (an answer that writes into its inputs would fool a check read from them). Then
    the same f (one object) at other points of the same shape and dtype, with other
    cotangents: each call pulls back through the Jacobian at its own x (an answer that keeps a
    pullback per function and shape reads the first point's)."""
    (m, n) = F_SHAPES[0]
    A, x, _, ct = fvec_data(m, n)
    f = partial(sin_ax_norm, A)
    other = np.random.default_rng(m * n).normal(size=(2, n + m)).astype(np.float32)
    points = [(x, ct), *((row[:n] / 2, row[n:]) for row in other)]
    for index, (x, ct) in enumerate(points):
        want = oracle.np_jacobian(A, x).T @ ct
        x_before, ct_before = x.copy(), ct.copy()
        got = kata.vjp_cotangent(f, x, ct)
        case = (
            f"A {m}x{n}, x and ct concrete NumPy arrays, called eagerly, point {index + 1} of "
            f"{len(points)} of one f"
        )
        with check:
            for name, arg, before in (("x", x, x_before), ("ct", ct, ct_before)):
                assert np.array_equal(arg, before), (
                    f"{case}: the call changed the caller's {name} (now {arg}, was {before}): "
                    "an answer reads its inputs, it never writes into them"
                )
        assert isinstance(got, jax.Array), f"{case}: expected one array, got {type(got).__name__}"
        assert tuple(got.shape) == (n,), f"{case}: shape {got.shape}, expected x's ({n},)"
        np.testing.assert_allclose(
            np.asarray(got), want, rtol=RTOL, atol=ATOL, err_msg=f"J.T @ ct, {case}"
        )


@pytest.mark.task("vjp_cotangent")
def test_vjp_jaxpr_transposes_the_dot_not_the_matrix(kata):
    for m, n in F_SHAPES[1:]:
        A, x, _, ct = fvec_data(m, n)
        jaxpr = jax.make_jaxpr(lambda a, p, c: kata.vjp_cotangent(partial(sin_ax_norm, a), p, c))(
            A, x, ct
        )
        census = primitive_census(jaxpr)
        axes = sorted(oracle.a_axes_contracted(jaxpr, (m, n)))
        with check:
            assert axes == [(0,), (1,)], (
                f"A {m}x{n}: contracted axes {axes}, expected axis 1 (forward A @ x) and axis 0 "
                "(ct @ A)"
            )
        with check:
            assert census["transpose"] == 0 and census["iota"] == 0, (
                f"transpose x{census['transpose']}, iota x{census['iota']}: expected neither"
            )
        with check:
            assert census["add_any"] >= 1, "expected add_any: x reaches the output along two paths"
