"""Phase 5 tests on freshly drawn cases over the whole domain each contract states (tasks 2-3, 5,
7): x and f(x) of rank 0 to 3 in float32 or bfloat16, f changing the dtype, the zero direction;
flop counts past 2**53 and 2**64 and a jaxpr two equations share; every in_axes with mixed dtypes
and batches of one. One case per situation (katas/phase5/strata*.py), values from
kata_harness.oracles.autodiff, dtypes and shapes from jax.eval_shape. The draws are seeded by the
test id, so these tests stay in this file. The drawn params of tasks 1 and 8 are in
test_phase5_grads.py and test_phase5_batching.py, beside their task's other tests: a red-team
answer one test catches skips the task's later tests only in the process that caught it, and
pytest-xdist runs each file in one process.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import autodiff as oracle
from kata_harness.traced import called_traced
from katas.phase5.programs import flat_abs
from katas.phase5.strata import matvec_strata
from katas.phase5.strata_grads import (
    dot_flops_strata,
    infinite_slope_case,
    tangent_data,
    tangent_strata,
)
from katas.phase5.tree_checks import close

# ---- tasks 2-3: x and f(x) of any rank and dtype, the zero direction -------------------------


def _run(call, *args, case: str):
    """``call(*args)``; a failed assertion naming ``case`` when JAX refuses what the answer hands
    it (a tangent or cotangent of another shape or dtype than the function's input or output:
    jax.jvp and a vjp's pullback raise TypeError or ValueError), as a wrong answer fails."""
    __tracebackhide__ = True
    try:
        return call(*args)
    except (TypeError, ValueError) as error:
        pytest.fail(f"{case}: JAX refused what the answer handed it: {error}"[:600])


def _tangent_cases(fresh):
    for situation, (x_shape, out_shape, x_dtype, out_dtype, zero) in tangent_strata(fresh).items():
        A, x, v, ct = tangent_data(fresh, x_shape, out_shape, x_dtype, out_dtype, zero)
        f = flat_abs(A, out_shape, out_dtype)
        case = f"{situation}: x {x_dtype}{list(x_shape)} -> f(x) {ct.dtype}{list(ct.shape)}"
        yield f"{case} ({fresh.where()})", f, (A, x, v, ct)


@pytest.mark.task("jvp_tangent")
def test_jvp_on_fresh_shapes_and_dtypes(kata, fresh):
    """f = |A @ x.ravel()| * sum(x) in x's dtype, cast (or not) and reshaped (not holomorphic):
    (f(x), J @ v) shaped and typed like f(x), J @ v contracting every axis of x."""
    for case, f, (A, x, v, ct) in _tangent_cases(fresh):
        result = _run(jax.jit(lambda p, t, f=f: kata.jvp_tangent(f, p, t)), x, v, case=case)
        assert isinstance(result, tuple) and len(result) == 2, f"{case}: expected (f(x), J @ v)"
        A64, x64 = np.asarray(A, np.float64), np.asarray(x, np.float64)
        primal = np.abs(A64 @ x64.reshape(-1)) * x64.sum()
        for what, got, value in (
            ("f(x)", result[0], primal),
            ("J @ v", result[1], oracle.np_flat_abs_jv(A, x, v)),
        ):
            with check:
                assert (tuple(np.shape(got)), str(got.dtype)) == (ct.shape, str(ct.dtype)), (
                    f"{case}: {what} is {got.dtype}{list(np.shape(got))}, expected f(x)'s"
                )
            with check:
                close(got, value, (x.dtype, ct.dtype), f"{what}, {case}")


@pytest.mark.task("jvp_tangent")
def test_jvp_carries_the_tangent_through_an_infinite_derivative(kata, fresh):
    """f = sqrt or log at an x with entries exactly 0, where f' is infinite: J @ v in IEEE
    arithmetic, as f's derivative rules give it, for the zero direction (concrete arrays called
    eagerly, and traced) and a direction zero at some of those entries: NaN where x and v are
    both 0, +-inf where only x is (strata_grads.infinite_slope_case)."""
    name, f, x, v, primal, slope = infinite_slope_case(fresh)
    eager = lambda p, t: kata.jvp_tangent(f, p, t)  # noqa: E731
    for how, call, direction in (
        ("the zero direction, concrete arrays, called eagerly", eager, np.zeros_like(v)),
        ("the zero direction, traced under jax.jit", jax.jit(eager), np.zeros_like(v)),
        ("a direction 0 at some of those entries, concrete, called eagerly", eager, v),
    ):
        case = f"{name}, {how} ({fresh.where()})"
        result = _run(call, jnp.asarray(x), jnp.asarray(direction), case=case)
        assert isinstance(result, tuple) and len(result) == 2, f"{case}: expected (f(x), J @ v)"
        with np.errstate(invalid="ignore"):
            tangent = slope * direction  # inf * 0 is NaN
        for what, got, value in (("f(x)", result[0], primal), ("J @ v", result[1], tangent)):
            with check:
                assert (tuple(np.shape(got)), str(got.dtype)) == (x.shape, str(x.dtype)), (
                    f"{case}: {what} is {got.dtype}{list(np.shape(got))}, expected f(x)'s"
                )
            with check:
                close(got, value, (x.dtype,), f"{what} (NaN where x and v are both 0), {case}")


@pytest.mark.task("vjp_cotangent")
def test_vjp_on_fresh_shapes_and_dtypes(kata, fresh):
    """The same functions: ct (shaped and typed like f(x)) pulled back to an array shaped and
    typed like x; for a square matrix f(x), ct itself, not its transpose."""
    for case, f, (A, x, _, ct) in _tangent_cases(fresh):
        got = _run(jax.jit(lambda p, c, f=f: kata.vjp_cotangent(f, p, c)), x, ct, case=case)
        assert isinstance(got, jax.Array), f"{case}: expected one array, got {type(got).__name__}"
        with check:
            assert (tuple(got.shape), str(got.dtype)) == (x.shape, str(x.dtype)), (
                f"{case}: got {got.dtype}{list(got.shape)}, expected x's shape and dtype"
            )
        with check:
            close(got, oracle.np_flat_abs_vjp(A, x, ct), (x.dtype, ct.dtype), f"ct @ J, {case}")


@pytest.mark.task("vjp_cotangent")
def test_vjp_carries_the_cotangent_through_an_infinite_derivative(kata, fresh):
    """The same sqrt or log at an x with entries exactly 0 (f elementwise: ct @ J is f'(x) *
    ct): ct pulled back in IEEE arithmetic, as f's derivative rules give it, for the zero
    cotangent (concrete arrays called eagerly, and traced) and a cotangent zero at some of
    those entries: NaN where x and ct are both 0, +-inf where only x is."""
    name, f, x, ct, _, slope = infinite_slope_case(fresh)
    eager = lambda p, c: kata.vjp_cotangent(f, p, c)  # noqa: E731
    for how, call, cotangent in (
        ("the zero cotangent, concrete arrays, called eagerly", eager, np.zeros_like(ct)),
        ("the zero cotangent, traced under jax.jit", jax.jit(eager), np.zeros_like(ct)),
        ("a cotangent 0 at some of those entries, concrete, called eagerly", eager, ct),
    ):
        case = f"{name}, {how} ({fresh.where()})"
        got = _run(call, jnp.asarray(x), jnp.asarray(cotangent), case=case)
        assert isinstance(got, jax.Array), f"{case}: expected one array, got {type(got).__name__}"
        with check:
            assert (tuple(got.shape), str(got.dtype)) == (x.shape, str(x.dtype)), (
                f"{case}: got {got.dtype}{list(got.shape)}, expected x's shape and dtype"
            )
        with np.errstate(invalid="ignore"):
            want = slope * cotangent  # inf * 0 is NaN
        with check:
            close(got, want, (x.dtype,), f"ct @ J (NaN where x and ct are both 0), {case}")


# ---- task 5: exact counts past 2**53 and 2**64, shared jaxprs --------------------------------


@pytest.mark.task("dot_flops")
def test_dot_flops_on_fresh_programs(kata, fresh):
    """Odd sizes whose count passes 2**53 (not a float) and 2**64 (not an int64), one jitted
    function called twice (two equations, one jaxpr), a dot contracting every axis (its output
    a scalar), each at a drawn nesting place; expected counts from the drawn sizes by the
    formula."""
    for name, (program, args, expected) in dot_flops_strata(fresh).items():
        got = kata.dot_flops(jax.make_jaxpr(program)(*args))
        with check:
            assert type(got) is int and got == expected, (
                f"{name}: {got!r}, expected the exact int {expected} ({fresh.where()})"
            )


# ---- task 7: every in_axes, mixed dtypes, batches of one ---------------------------------------


@pytest.mark.task("batched_matvec")
def test_batched_matvec_on_fresh_cases(kata, fresh, monkeypatch):
    """Every in_axes (counted from either end), W and vs of one dtype or two, a batch of one and
    m of one: matvec called once with one example's shapes, a (batch, m) result in the dtype one
    matvec gives (jax.eval_shape of one example), the values of W @ v per example (small
    integers: exact in every dtype here)."""
    seen = []
    given = kata.matvec

    def spy(W, v):
        seen.append((tuple(W.shape), tuple(v.shape)))
        return given(W, v)

    monkeypatch.setattr(kata, "matvec", spy)
    rng = np.random.default_rng(fresh.randint(0, 2**31))
    for name, (w_shape, v_shape, in_axes, w_dtype, v_dtype) in matvec_strata(fresh).items():
        case = f"{name} ({fresh.where()})"
        W = rng.integers(-3, 4, w_shape).astype(jnp.dtype(w_dtype))
        vs = rng.integers(-3, 4, v_shape).astype(jnp.dtype(v_dtype))
        per_w = np.moveaxis(W, in_axes[0], 0) if in_axes[0] is not None else W[None]
        per_v = np.moveaxis(vs, in_axes[1], 0) if in_axes[1] is not None else vs[None]
        one = jax.eval_shape(given, per_w[0], per_v[0])
        expected = np.einsum("bmn,bn->bm", *_paired(per_w, per_v))
        seen.clear()
        got = jax.jit(
            lambda w, v, a=in_axes, c=case: called_traced(
                kata.batched_matvec, w, v, a, task="batched_matvec", case=c
            )
        )(W, vs)
        with check:
            assert seen == [(per_w.shape[1:], per_v.shape[1:])], (
                f"{case}: matvec saw {seen}; expected one call with one example's shapes "
                f"{per_w.shape[1:]} and {per_v.shape[1:]}: map `matvec` with jax.vmap"
            )
        with check:
            assert (tuple(got.shape), str(got.dtype)) == (expected.shape, str(one.dtype)), (
                f"{case}: got {got.dtype}{list(got.shape)}, expected (batch, m) "
                f"{expected.shape} in {one.dtype}, the dtype of one matvec"
            )
        with check:
            np.testing.assert_array_equal(
                np.asarray(got, np.float64).reshape(-1)[: expected.size],
                expected.reshape(-1),
                err_msg=case,
            )


def _paired(per_w, per_v):
    """Per-example W and v in float64, a shared one repeated over the batch."""
    batch = max(len(per_w), len(per_v))
    return (
        np.broadcast_to(per_w.astype(np.float64), (batch, *per_w.shape[1:])),
        np.broadcast_to(per_v.astype(np.float64), (batch, *per_v.shape[1:])),
    )
