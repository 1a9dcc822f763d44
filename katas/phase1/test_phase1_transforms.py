"""Phase 1 tests, from make_power_jit to count_traces: trace counts against jit itself, lowered
programs read with xla_inspect, the exception jit raises.

make_power_jit runs on several spellings of f, names and kinds drawn
(strata_traces.power_spellings); count_traces on fresh streams of calls
(katas/phase1/strata_traces.py). Expected values come from
kata_harness.oracles.jax_basics.
"""

import inspect
import re

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import jax_basics as oracle
from kata_harness.predict import compiler_refused
from katas.phase1.programs import counting_power, if_positive, spelled_power
from katas.phase1.strata_traces import (
    count_traces_strata,
    describe,
    power_names,
    power_spellings,
)
from xla_inspect.stablehlo import stablehlo_op_census

# ------------------------------------------------------------------------------- make_power_jit


def _spelled(f) -> str:
    return f"f{inspect.signature(f)}"


def _jitted(kata, f):
    try:
        return kata.make_power_jit(f)
    except (TypeError, ValueError) as error:
        pytest.fail(
            f"make_power_jit(f) for {_spelled(f)} raised {type(error).__name__}: {error} (n is "
            "f's second positional parameter, whatever its name or kind; f may take more, "
            "defaulted parameters)"
        )


def _run(f, call, x, n):
    """call(x, n), call being the jitted f or its .lower or .trace; a failed assertion if it
    raises the way a wrong jit does."""
    try:
        return call(x, n)
    except (jax.errors.TracerIntegerConversionError, jax.errors.ConcretizationTypeError) as error:
        pytest.fail(
            f"for {_spelled(f)}, the second parameter reached range() as a tracer "
            f"({type(error).__name__}): jit must treat f's second positional parameter as "
            "static, whatever its name or kind"
        )
    except TypeError as error:
        pytest.fail(f"calling the jitted {_spelled(f)} as (x, n) raised TypeError: {error}")


def _powers(fresh, traces: list[int]) -> list:
    """f in each spelling: f(x, n), n positional-only, n called otherwise before a defaulted
    parameter called n (names drawn, strata.power_spellings), and f(x, n) again: another
    function of the same name; f's own names drawn too (strata.power_names)."""
    first, *names = power_names(fresh)
    spellings = power_spellings(fresh)
    spelled = [spelled_power(traces, s, name) for s, name in zip(spellings, names, strict=True)]
    return [counting_power(traces, first), *spelled, counting_power(traces, first)]


def _looks(f) -> tuple:
    """What the caller sees of f: its names, signature, code, defaults and attributes."""
    return (
        f.__name__,
        f.__qualname__,
        f.__module__,
        f.__code__,
        f.__defaults__,
        f.__kwdefaults__,
        dict(vars(f)),
    )


def _unchanged(f, before: tuple, when: str) -> None:
    with check:
        assert _looks(f) == before, (
            f"{_spelled(f)} (was called {before[0]!r}) came back changed {when}: "
            f"{_looks(f)} instead of {before}; make_power_jit jits the caller's f as it is"
        )


@pytest.mark.task("make_power_jit")
def test_power_jit_traces_once_per_static_value(kata, fresh):
    """Each spelling of f in turn, each jitted by its own make_power_jit call."""
    rng = np.random.default_rng(0)
    traces: list[int] = []
    powers = _powers(fresh, traces)
    for round_, f in enumerate(powers):
        traces.clear()
        before = _looks(f)
        power = _jitted(kata, f)
        ns = tuple(int(n) for n in rng.permutation((3, 2, 3, 2, 4)))
        xs = [rng.integers(-3, 4, size=(2, 5)).astype(np.float32) for _ in ns]  # new values
        results = [np.asarray(_run(f, power, x, n)) for x, n in zip(xs, ns, strict=True)]
        where = f"f number {round_ + 1} of {len(powers)}, {_spelled(f)} ({fresh.where()})"
        with check:
            assert sorted(traces) == [2, 3, 4], (
                f"{where}: f traced for n = {traces} over calls with n = {list(ns)}; expected "
                "one trace of this f per distinct n (and none for new values of x)"
            )
        for x, n, got in zip(xs, ns, results, strict=True):
            with check:
                np.testing.assert_allclose(got, x**n, err_msg=f"{where}, n = {n}")
        # the caller's x, a JAX array, is only read: it serves every n in turn
        x = jax.device_put(xs[0])
        for n in sorted(set(ns)):
            try:
                got = np.asarray(_run(f, power, x, n))
            except RuntimeError as error:
                pytest.fail(
                    f"{where}: called again on the same JAX array x (n = {n}) it raised "
                    f"{error}; x is only read (nothing donated), the caller may reuse it"
                )
            with check:
                np.testing.assert_allclose(got, xs[0] ** n, err_msg=f"{where}, same x, n = {n}")
        assert not x.is_deleted(), f"{where}: the caller's x was deleted (donated) by the call"
        _unchanged(f, before, f"after make_power_jit and the calls ({fresh.where()})")


@pytest.mark.task("make_power_jit")
def test_power_jit_is_compiled_with_n_baked_in(kata, fresh):
    """The program of each n unrolls the loop and takes x alone; it is f's own program: the jit
    wraps f itself (not a function that calls it), so its module is named after f: the name f
    had when it was handed over (drawn, strata.power_names), which stays f's own."""
    for f in _powers(fresh, [])[:3]:
        before = _looks(f)
        name = f.__name__
        power = _jitted(kata, f)
        _unchanged(f, before, f"from make_power_jit ({fresh.where()})")
        assert hasattr(power, "lower") and hasattr(power, "trace"), (
            "expected what jax.jit returns (it has .lower and .trace)"
        )
        with check:
            wrapped = getattr(power, "__wrapped__", None)
            assert wrapped is f, (
                f"for {_spelled(f)}, the jit wraps {getattr(wrapped, '__qualname__', wrapped)!r}, "
                "not f: jit f itself, not a function that calls it"
            )
        for x in (np.ones(3, np.float32), np.ones((2, 5), np.int32)):
            for n in (1, 3, 4):
                text = _run(f, power.lower, x, n).as_text()
                module = re.search(r"^module @(\S+)", text, re.MULTILINE)
                with check:
                    assert module is not None and module[1] == f"jit_{name}", (
                        f"{_spelled(f)}, n={n}: the lowered module is "
                        f"{module[1] if module else 'unnamed'!s}, expected jit_{name}: jit f "
                        f"itself, and its programs are named after f, called {name!r} "
                        f"({fresh.where()})"
                    )
                inputs = len(_run(f, power.trace, x, n).jaxpr.in_avals)
                multiplies = stablehlo_op_census(text)["stablehlo.multiply"]
                with check:
                    assert multiplies == n - 1, (
                        f"{_spelled(f)}, n={n}: stablehlo.multiply x{multiplies}, expected "
                        f"{n - 1} (the Python loop unrolls)"
                    )
                with check:
                    assert inputs == 1, (
                        f"{_spelled(f)}, n={n}: the program takes {inputs} inputs; n is no input"
                    )


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
