"""Phase 1 tests, abs_where and abs_cond: values on fresh arrays of every dtype the contracts
name, edges included (katas/phase1/strata.py), against NumPy's |x| in float64; IR facts on real
jaxprs for every dtype the contracts name, traced from an argument and from a concrete array
(JAX or NumPy) the answer gets as is (a select, or a negation inside the branch, whatever the
answer is given).
"""

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pytest_check import check

from kata_harness.oracles import jaxpr_walks as walks
from katas.phase1.strata import ABS_DTYPES, COND_DTYPES, VALUES, abs_inputs, cond_inputs
from xla_inspect.jaxpr import primitive_census


def _label(x) -> str:
    return f"{np.asarray(x).dtype}{list(np.shape(x))}"


def _magnitude(x) -> np.ndarray:
    """NumPy's |x| as float64: taken in float64 for the floats, in x's own dtype for the ints
    (an int's most negative value wraps around to itself there, as -x does)."""
    x = np.asarray(x)
    wide = np.asarray(x, np.float64)
    return np.abs(x).astype(np.float64) if x.dtype.kind in "iu" else np.abs(wide)


def _traced_every_way(function, x):
    """The jaxpr of function traced on x as an argument, and on x as a concrete array it is
    called with inside a trace, a JAX array and the NumPy array itself (an answer that looks at
    its argument's type sees a concrete array, of either kind: the select is in the jaxpr for
    each)."""
    on_device = jax.device_put(x)
    return {
        "traced": jax.make_jaxpr(function)(x),
        "concrete JAX array": jax.make_jaxpr(lambda: function(on_device))(),
        "concrete NumPy array": jax.make_jaxpr(lambda: function(x))(),
    }


# ------------------------------------------------------------------------------------ abs_where


@pytest.mark.task("abs_where")
def test_abs_where_values_under_jit(kata, fresh):
    """Fresh arrays of every signed and unsigned int and float dtype JAX keeps in its 32-bit
    mode, holding each dtype's edges (NaN for the floats, a signed int's most negative value;
    see strata.abs_inputs), a 0-d and an empty one."""
    run = jax.jit(kata.abs_where)
    for x in abs_inputs(fresh):
        got = run(x)
        assert hasattr(got, "dtype"), f"abs_where returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == (x.shape, str(x.dtype)), (
                f"|x| of {_label(x)} came back as {_label(got)}"
            )
        with check:
            np.testing.assert_array_equal(
                np.asarray(got, np.float64),
                _magnitude(x),
                err_msg=f"abs_where on {_label(x)} ({fresh.where()})",
            )


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
    """On every dtype of the contract (unsigned ones too: |x| is x there, and the select still
    picks x or -x: its two cases hold x and -x themselves, read off the evaluated jaxpr, and its
    predicate compares x itself with zero, read off the jaxpr's data flow and values, a JAX
    array's too),
    traced from an argument and from a concrete JAX or NumPy array; x is not empty (JAX
    leaves out the select of an empty x, which has nothing to pick: the contract asks only its
    shape and dtype, which test_abs_where_values_under_jit checks)."""
    for dtype in ABS_DTYPES:
        x = np.arange(-3, 3).reshape(2, 3).astype(dtype)  # not empty: see the docstring
        for how, jaxpr in _traced_every_way(kata.abs_where, x).items():
            census = primitive_census(jaxpr)
            where = f"{_label(x)}, {how}"
            with check:
                assert census["select_n"] >= 1, f"{where}: no select_n in the jaxpr"
            with check:
                assert census["cond"] == 0, f"{where}: jnp.where selects per element; no cond"
            with check:
                assert census["abs"] == 0 and census["sign"] == 0 and census["max"] == 0, (
                    f"{where}: the jaxpr computes |x| without a select "
                    f"(abs x{census['abs']}, sign x{census['sign']}, max x{census['max']})"
                )
            args = [x] if how == "traced" else []
            deciding = walks.deciding(jaxpr, args, x, "select_n")
            with check:
                assert deciding, (
                    f"{where}: no select_n decides |x|: swapping the two cases of a select "
                    f"leaves abs_where({x.tolist()}) unchanged at some nonzero x (x and -x "
                    "should swap places); the select must pick x or -x per element"
                )
            # a NumPy x may be compared on the host (x > 0 of a NumPy array is NumPy's): its
            # predicate is then a constant in the jaxpr, as a constant one would be
            compared = walks.compares_x(jaxpr, args, x)
            with check:
                assert how == "concrete NumPy array" or any(compared[i] for i in deciding), (
                    f"{where}: the select_n that decides |x| has a predicate that compares "
                    f"nothing of x with zero (a constant, one computed without a comparison, or "
                    f"a comparison of something else computed from x: its sign bit shifted or "
                    f"masked, a bitcast, a conversion): on {x.dtype} too its predicate must "
                    f"compare x itself, as x < 0 or x >= 0 does"
                )
            with check:
                assert walks.picks_x_or_minus_x(jaxpr, [x] if how == "traced" else [], x), (
                    f"{where}: no select_n picks between x and -x: evaluated on "
                    f"abs_where({x.tolist()}), no select's two cases hold x and -x element by "
                    "element (a select between other values, such as a sign that a multiply "
                    "applies afterwards, is not the select deciding |x|)"
                )


# ------------------------------------------------------------------------------------- abs_cond


@pytest.mark.task("abs_cond")
def test_abs_cond_values(kata, fresh):
    """Fresh scalars of f32, int32 and bf16, edges included (NaN for the floats, int32 -2**31;
    see strata.cond_inputs)."""
    run = jax.jit(kata.abs_cond)
    for x in cond_inputs(fresh):
        got = run(x)
        assert hasattr(got, "dtype"), f"abs_cond returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == ((), str(np.asarray(x).dtype)), (
                f"abs_cond on {_label(x)} came back as {_label(got)}"
            )
        expected = float(_magnitude(x))
        with check:
            assert float(got) == expected or (np.isnan(expected) and np.isnan(float(got))), (
                f"abs_cond({x!r}) gave {float(got)!r} ({fresh.where()})"
            )


@pytest.mark.task("abs_cond")
def test_abs_cond_runs_one_branch(kata):
    for dtype in COND_DTYPES:
        x = dtype.type(1)
        for how, jaxpr in _traced_every_way(kata.abs_cond, x).items():
            everywhere = primitive_census(jaxpr)
            where = f"{_label(x)}, {how}"
            with check:
                assert everywhere["cond"] == 1, (
                    f"{where}: cond x{everywhere['cond']} in the jaxpr, expected 1"
                )
            with check:
                assert everywhere["select_n"] == 0, f"{where}: a select computes both sides"
            # the cond decides: its branches swapped, x and -x swap places (x of either sign
            # where the jaxpr takes it as an argument)
            runs = [[dtype.type(-2)], [dtype.type(3)]] if how == "traced" else [[]]
            for args in runs:
                value = args[0] if args else x
                with check:
                    assert walks.decides(jaxpr, args, value, "cond"), (
                        f"{where}: the cond does not decide |x|: with its branches swapped, "
                        f"abs_cond({value!r}) comes out the same; one branch must give x, the "
                        "other -x"
                    )
            outside = walks.outside_the_cond(jaxpr)
            with check:
                assert not outside, (
                    f"{where}: {outside} computed outside the cond: the negation (and any "
                    "conversion) must happen inside a branch, so that only the branch taken "
                    "runs, and the predicate compares x in its own dtype"
                )
