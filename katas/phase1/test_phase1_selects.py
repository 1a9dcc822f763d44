"""Phase 1 tests, abs_where and abs_cond: values on fresh arrays of every dtype the contracts
name, edges included (katas/phase1/strata.py), against NumPy's |x| in float64; IR facts on real
jaxprs for several dtypes, traced from an argument and from a concrete array the answer gets
as is (a select, or a negation inside the branch, whatever the answer is given).
"""

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.extend.core import Literal
from pytest_check import check

from katas.phase1.strata import COND_DTYPES, VALUES, abs_inputs, cond_inputs
from xla_inspect.jaxpr import primitive_census


def _label(x) -> str:
    return f"{np.asarray(x).dtype}{list(np.shape(x))}"


def _traced_both_ways(function, x):
    """The jaxpr of function traced on x as an argument, and on x as a concrete array it is
    called with inside a trace (an answer that looks at its argument's type sees an array)."""
    concrete = jax.device_put(x)
    return {
        "traced": jax.make_jaxpr(function)(x),
        "concrete": jax.make_jaxpr(lambda: function(concrete))(),
    }


def _run_swapping(jaxpr, args, chooser: str, swap: int | None, seen: list[int]):
    """Evaluate jaxpr on args eagerly, with the two sides of its swap-th `chooser` (select_n's
    cases or cond's branches; counted in order, into nested jits) swapped; seen[0] counts the
    choosers met."""
    env: dict = {}

    def read(var):
        return var.val if isinstance(var, Literal) else env[var]

    inner = jaxpr.jaxpr
    env.update(zip(inner.constvars, jaxpr.consts, strict=True))
    env.update(zip(inner.invars, args, strict=True))
    for eqn in inner.eqns:
        values, params = [read(v) for v in eqn.invars], eqn.params
        if eqn.primitive.name in ("jit", "pjit"):
            outs = _run_swapping(params["jaxpr"], values, chooser, swap, seen)
        else:
            if eqn.primitive.name == chooser:
                if seen[0] == swap and chooser == "select_n":
                    values = [values[0], *reversed(values[1:])]
                elif seen[0] == swap:
                    params = {**params, "branches": tuple(reversed(params["branches"]))}
                seen[0] += 1
            outs = eqn.primitive.bind(*values, **params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs, strict=True))
    return [read(v) for v in inner.outvars]


def _decides(jaxpr, args, x, chooser: str) -> bool:
    """Whether one `chooser` of jaxpr decides the result: with its two sides swapped, every
    nonzero element of |x| comes out otherwise (x and -x swap places)."""
    seen = [0]
    (base,) = _run_swapping(jaxpr, args, chooser, None, seen)
    base, nonzero = np.asarray(base), np.asarray(x) != 0
    for index in range(seen[0]):
        (swapped,) = _run_swapping(jaxpr, args, chooser, index, [0])
        if np.all(np.asarray(swapped)[nonzero] != base[nonzero]):
            return True
    return False


# ------------------------------------------------------------------------------------ abs_where


@pytest.mark.task("abs_where")
def test_abs_where_values_under_jit(kata, fresh):
    """Fresh arrays of every signed and unsigned int and float dtype JAX keeps in its 32-bit
    mode, holding each dtype's edges (see strata.abs_inputs)."""
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
                np.abs(np.asarray(x, np.float64)),
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
    for dtype in COND_DTYPES:
        x = np.arange(-3, 3).reshape(2, 3).astype(dtype)
        for how, jaxpr in _traced_both_ways(kata.abs_where, x).items():
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
            with check:
                assert _decides(jaxpr, [x] if how == "traced" else [], x, "select_n"), (
                    f"{where}: no select_n decides |x|: swapping the two cases of a select "
                    f"leaves abs_where({x.tolist()}) unchanged at some nonzero x (x and -x "
                    "should swap places); the select must pick x or -x per element"
                )


# ------------------------------------------------------------------------------------- abs_cond


@pytest.mark.task("abs_cond")
def test_abs_cond_values(kata, fresh):
    """Fresh scalars of f32, int32 and bf16, edges included (see strata.cond_inputs)."""
    run = jax.jit(kata.abs_cond)
    for x in cond_inputs(fresh):
        got = run(x)
        assert hasattr(got, "dtype"), f"abs_cond returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == ((), str(np.asarray(x).dtype)), (
                f"abs_cond on {_label(x)} came back as {_label(got)}"
            )
        with check:
            assert float(got) == abs(float(x)), (
                f"abs_cond({x!r}) gave {float(got)!r} ({fresh.where()})"
            )


def _outside_the_cond(jaxpr) -> list[str]:
    """Top-level primitives that compute more than the cond's predicate: those after the cond,
    those before it that the predicate does not read, and those the predicate reads whose
    results also go into the cond's operands or the outputs."""
    eqns = jaxpr.jaxpr.eqns
    at = [i for i, eqn in enumerate(eqns) if eqn.primitive.name == "cond"]
    if len(at) != 1:
        return []  # the census check names a missing or extra cond
    cond = eqns[at[0]]
    read = {id(cond.invars[0])}
    predicate = []
    for eqn in reversed(eqns[: at[0]]):  # what the predicate is computed from
        if any(id(v) in read for v in eqn.outvars):
            predicate.append(eqn)
            read |= {id(v) for v in eqn.invars}
    shared = {id(v) for v in [*cond.invars[1:], *jaxpr.jaxpr.outvars]}
    outside = [
        eqn.primitive.name
        for eqn in eqns
        if eqn is not cond
        and (all(eqn is not p for p in predicate) or any(id(v) in shared for v in eqn.outvars))
    ]
    # the predicate reads x as it is: x (an input, or the concrete array closed over) and what is
    # computed from it go into comparisons only (a comparison's bool may then be converted, as
    # cond and switch do); x < 0.0 on an int32 x converts x to float32 first
    values = {id(v) for v in [*jaxpr.jaxpr.invars, *jaxpr.jaxpr.constvars]}
    for eqn in eqns[: at[0]]:
        if any(id(v) in values for v in eqn.invars) and eqn.primitive.name not in _COMPARISONS:
            outside.append(f"{eqn.primitive.name} of x for the predicate")
            values |= {id(v) for v in eqn.outvars}
    return outside


_COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})


@pytest.mark.task("abs_cond")
def test_abs_cond_runs_one_branch(kata):
    for dtype in COND_DTYPES:
        x = dtype.type(1)
        for how, jaxpr in _traced_both_ways(kata.abs_cond, x).items():
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
                    assert _decides(jaxpr, args, value, "cond"), (
                        f"{where}: the cond does not decide |x|: with its branches swapped, "
                        f"abs_cond({value!r}) comes out the same; one branch must give x, the "
                        "other -x"
                    )
            outside = _outside_the_cond(jaxpr)
            with check:
                assert not outside, (
                    f"{where}: {outside} computed outside the cond: the negation (and any "
                    "conversion) must happen inside a branch, so that only the branch taken "
                    "runs, and the predicate compares x in its own dtype"
                )
