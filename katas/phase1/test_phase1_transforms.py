"""Phase 1 tests, from mse_loss to abs_cond: values checked against NumPy computed in float64,
IR facts against real jaxprs, trace counts against jit itself.

Every task is tried on several shapes and, where the task allows it, several dtypes; IR facts
are the ones every correct spelling shares (a relu written with jnp.maximum, jnp.where or
jax.nn.relu passes alike). Expected values come from kata_harness.oracles.jax_basics.
"""

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pytest_check import check

from kata_harness.oracles import jax_basics as oracle
from kata_harness.predict import compiler_refused
from katas.phase1.programs import (
    ABS_INPUTS,
    KEYS,
    SHAPES,
    counting_power,
    data,
    if_positive,
)
from katas.phase1.strata import count_traces_strata, describe
from xla_inspect.jaxpr import primitive_census
from xla_inspect.stablehlo import stablehlo_op_census

VALUES = settings(
    derandomize=True,
    max_examples=6,
    deadline=None,
    phases=[Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


# ------------------------------------------------------------------------------------- mse_loss


@pytest.mark.task("mse_loss")
@settings(VALUES, max_examples=4)
@given(batch=st.integers(1, 9), out=st.integers(2, 5), seed=st.integers(0, 2**16))
def test_mse_loss_matches_numpy(kata, batch, out, seed):
    params, x, y = data(seed, (batch, 3, 5, out))
    loss = jax.jit(kata.mse_loss)(params, x, y)
    assert np.shape(loss) == (), f"loss has shape {np.shape(loss)}, expected a scalar"
    np.testing.assert_allclose(
        float(loss),
        oracle.np_loss(params, x, y),
        rtol=1e-4,
        err_msg=f"batch {batch}, {out} outputs",
    )


@pytest.mark.task("mse_loss")
def test_mse_loss_does_not_grow_with_the_batch(kata):
    params, x, y = data(4, SHAPES[2])
    loss = jax.jit(kata.mse_loss)
    once = loss(params, x, y)
    twice = loss(params, np.concatenate([x, x]), np.concatenate([y, y]))
    assert np.shape(once) == () and np.shape(twice) == (), "the loss is a scalar"
    np.testing.assert_allclose(
        float(twice),
        float(once),
        rtol=1e-5,
        err_msg="the same rows twice must give the same loss (a mean)",
    )


# -------------------------------------------------------------------------------- loss_and_grad


def _loss_and_grad(kata, params, x, y):
    result = jax.jit(kata.loss_and_grad)(params, x, y)
    assert isinstance(result, tuple) and len(result) == 2, "expected a pair (loss, grads)"
    loss, grads = result
    assert np.shape(loss) == (), f"the first item has shape {np.shape(loss)}: the loss is a scalar"
    assert isinstance(grads, dict), (
        f"grads is a {type(grads).__name__}, expected a dict like params"
    )
    return float(loss), grads


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_matches_numpy(kata):
    for seed, shape in enumerate(SHAPES[1:]):  # size 1 and odd; finite differences use SHAPES[0]
        params, x, y = data(seed, shape)
        loss, grads = _loss_and_grad(kata, params, x, y)
        expected = oracle.np_grads(params, x, y)
        with check:
            np.testing.assert_allclose(loss, oracle.np_loss(params, x, y), rtol=1e-4)
        with check:
            assert jax.tree.structure(grads) == jax.tree.structure(params), (
                f"grads structure {jax.tree.structure(grads)}, expected that of params"
            )
        for name in KEYS:
            if name in grads:
                with check:
                    np.testing.assert_allclose(
                        np.asarray(grads[name]),
                        expected[name],
                        rtol=1e-3,
                        atol=1e-5,
                        err_msg=f"{shape}: d loss / d {name}",
                    )


@pytest.mark.task("loss_and_grad")
def test_grad_matches_finite_differences(kata):
    params, x, y = data(1)
    _, grads = _loss_and_grad(kata, params, x, y)
    p64 = oracle.f64(params)
    eps = 1e-6
    for name, index in (("w1", (3, 5)), ("b1", (7,)), ("w2", (11, 2)), ("b2", (1,))):
        up = {k: v.copy() for k, v in p64.items()}
        down = {k: v.copy() for k, v in p64.items()}
        up[name][index] += eps
        down[name][index] -= eps
        numeric = (oracle.np_loss(up, x, y) - oracle.np_loss(down, x, y)) / (2 * eps)
        assert name in grads, f"no gradient for {name}"
        got = float(np.asarray(grads[name])[index])
        with check:
            assert abs(got - numeric) <= 1e-3 + 1e-2 * abs(numeric), (
                f"d loss / d {name}{list(index)}: got {got:.5f}, finite differences {numeric:.5f}"
            )


# ------------------------------------------------------------------------------- make_power_jit


def _call(power, x, n):
    try:
        return np.asarray(power(x, n))
    except (jax.errors.TracerIntegerConversionError, jax.errors.ConcretizationTypeError) as error:
        pytest.fail(
            f"n reached range() as a tracer ({type(error).__name__}): jit must treat n as static"
        )


@pytest.mark.task("make_power_jit")
def test_power_jit_traces_once_per_static_value(kata):
    traces: list[int] = []
    power = kata.make_power_jit(counting_power(traces))
    rng = np.random.default_rng(0)
    ns = (3, 2, 3, 2, 4)
    xs = [rng.integers(-3, 4, size=(2, 5)).astype(np.float32) for _ in ns]  # new values each call
    results = [_call(power, x, n) for x, n in zip(xs, ns, strict=True)]
    with check:
        assert sorted(traces) == [2, 3, 4], (
            f"traced for n = {traces} over calls with n = {list(ns)}; expected one trace per "
            "distinct n (and none for new values of x)"
        )
    for x, n, got in zip(xs, ns, results, strict=True):
        with check:
            np.testing.assert_allclose(got, x**n, err_msg=f"n = {n}")


@pytest.mark.task("make_power_jit")
def test_power_jit_is_compiled_with_n_baked_in(kata):
    power = kata.make_power_jit(counting_power([]))
    assert hasattr(power, "lower") and hasattr(power, "trace"), (
        "expected what jax.jit returns (it has .lower and .trace)"
    )
    for x in (np.ones(3, np.float32), np.ones((2, 5), np.int32)):
        for n in (1, 3, 4):
            census = stablehlo_op_census(power.lower(x, n).as_text())
            inputs = len(power.trace(x, n).jaxpr.in_avals)
            with check:
                assert census["stablehlo.multiply"] == n - 1, (
                    f"n={n}: stablehlo.multiply x{census['stablehlo.multiply']}, expected {n - 1}"
                    " (the Python loop unrolls)"
                )
            with check:
                assert inputs == 1, f"n={n}: the program takes {inputs} inputs; n is no input"


# ------------------------------------------------------------------------------- predict_traces


SCENARIOS = (
    "same_shape_twice",
    "new_shape",
    "new_dtype",
    "static_values_1_1_2",
    "python_floats_1_and_2",
)


@pytest.mark.task("predict_traces")
def test_predict_traces_covers_every_scenario(kata):
    predicted = kata.predict_traces()
    assert sorted(predicted) == sorted(SCENARIOS)


@pytest.mark.task("predict_traces")
def test_predict_traces_matches_measurement(kata):
    predicted = kata.predict_traces()
    assert isinstance(predicted, dict), f"expected a dict, got {type(predicted).__name__}"
    for scenario in SCENARIOS:
        measured = oracle.scenario_traces(scenario)
        with check:
            assert predicted.get(scenario) == measured, (
                f"{scenario}: you predicted {predicted.get(scenario)}, jit traced {measured} times"
            )


@pytest.mark.task("predict_traces")
def test_predict_traces_does_not_run_jit(kata):
    with compiler_refused("predict_traces"):
        predicted = kata.predict_traces()
    assert isinstance(predicted, dict), f"expected a dict, got {type(predicted).__name__}"


# -------------------------------------------------------------------------------- count_traces


@pytest.mark.task("count_traces")
def test_count_traces_matches_jit(kata, fresh):
    """Fresh streams of calls, one per situation the cache key distinguishes (shapes, narrow and
    64-bit dtypes, weak Python scalars, bools, static values, every kind mixed; see
    strata.count_traces_strata), each measured by a fresh jitted function's trace counter."""
    for situation, stream in count_traces_strata(fresh).items():
        measured = oracle.measure_traces(stream)  # before the answer sees the arguments
        with compiler_refused("count_traces"):
            predicted = kata.count_traces(list(stream))
        calls = ", ".join(f"g({describe(x)}, {n})" for x, n in stream) or "no calls"
        assert type(predicted) is int, f"{situation}: expected an int, got {predicted!r}"
        assert predicted == measured, (
            f"{situation}: {calls}: you predicted {predicted} traces, jit traced {measured} "
            f"({fresh.where()})"
        )


# ------------------------------------------------------------------------------ python_if_error


@pytest.mark.task("python_if_error")
def test_python_if_error_is_exact(kata):
    expected = kata.python_if_error()
    assert isinstance(expected, type), f"expected an exception class, got {expected!r}"
    for arg in (1.0, np.float32(-2.0), np.int32(3)):
        with pytest.raises(Exception) as raised:
            jax.jit(if_positive)(arg)
        with check:
            assert type(raised.value) is expected, (
                f"you said {expected.__name__}, jit raised {type(raised.value).__name__}"
            )


# ------------------------------------------------------------------------------------ abs_where


def _abs_values(kata, fn):
    run = jax.jit(getattr(kata, fn))
    for x in ABS_INPUTS:
        got = run(x)
        assert hasattr(got, "dtype"), f"{fn} returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == (x.shape, str(x.dtype)), (
                f"|x| of {x.dtype}{list(x.shape)} came back as {got.dtype}{list(got.shape)}"
            )
        with check:
            np.testing.assert_array_equal(
                np.asarray(got, np.float64),
                np.abs(np.asarray(x, np.float64)),
                err_msg=f"{x.dtype}{list(x.shape)}",
            )


@pytest.mark.task("abs_where")
def test_abs_where_values_under_jit(kata):
    _abs_values(kata, "abs_where")


@pytest.mark.task("abs_where")
@VALUES
@given(
    values=st.lists(st.floats(-1e6, 1e6, width=32, allow_subnormal=False), min_size=6, max_size=6)
)  # one shape: one compile
def test_abs_where_any_floats(kata, values):
    x = np.array(values, np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(kata.abs_where)(x)), np.abs(x))


@pytest.mark.task("abs_where")
def test_abs_where_selects(kata):
    census = primitive_census(jax.make_jaxpr(kata.abs_where)(np.ones((2, 3), np.float32)))
    with check:
        assert census["select_n"] >= 1, f"no select_n in the jaxpr: {dict(census)}"
    with check:
        assert census["cond"] == 0, "jnp.where selects per element; it needs no cond"
    with check:
        assert census["abs"] == 0 and census["sign"] == 0, (
            f"the jaxpr computes |x| without a select: {dict(census)}"
        )


# ------------------------------------------------------------------------------------- abs_cond


@pytest.mark.task("abs_cond")
def test_abs_cond_values(kata):
    run = jax.jit(kata.abs_cond)
    cases = [np.float32(v) for v in (-2.5, 0.0, 3.0, -1e-3)]
    cases += [np.int32(-4), np.int32(7), ml_dtypes.bfloat16(-1.5)]
    for x in cases:
        got = run(x)
        assert hasattr(got, "dtype"), f"abs_cond returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == ((), str(np.asarray(x).dtype)), (
                f"abs_cond({x!r}) came back as {got.dtype}{list(got.shape)}"
            )
        with check:
            assert float(got) == abs(float(x)), f"abs_cond({x!r}) gave {float(got)}"


@pytest.mark.task("abs_cond")
def test_abs_cond_runs_one_branch(kata):
    jaxpr = jax.make_jaxpr(kata.abs_cond)(np.float32(1.0))
    everywhere = primitive_census(jaxpr)
    top = primitive_census(jaxpr, recursive=False)
    computing = {p: top[p] for p in ("neg", "sub", "mul", "abs", "select_n") if top[p]}
    with check:
        assert everywhere["cond"] == 1, f"cond x{everywhere['cond']} in the jaxpr, expected 1"
    with check:
        assert everywhere["select_n"] == 0, "a select computes both sides; use lax.cond"
    with check:
        assert not computing, (
            f"{computing} outside the cond: the negation must happen inside a branch, so that "
            "only the branch taken runs"
        )
