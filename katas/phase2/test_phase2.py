"""Phase 2 tests, mlp_jaxpr to literal_operands and mlp_avals: facts about jaxprs, each task
tried on a small bank of varied programs (the tests that draw fresh cases stay in this file:
their draws are seeded by their test id).

Oracles are independent of the reference (kata_harness.oracles.jaxprs and the bank's own
facts): xla_inspect's census, `jax.eval_shape`, evaluating a jaxpr with
`jax.extend.core.jaxpr_as_fun` / `eval_jaxpr`, NumPy, the jaxprs jax traces here, and facts
written out by hand for programs small enough to read.
"""

import itertools

import jax
import jax.core
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from pytest_check import check

from kata_harness.oracles import jaxprs as oracle
from katas.phase2.equations import first_params_difference, params_of
from katas.phase2.nestings import fresh_nestings
from katas.phase2.programs import (
    AVAL_CASES,
    DTYPES,
    F32,
    IO_PROGRAMS,
    MLP_CASES,
    TABLE,
    aval_case_args,
    census_programs,
    fresh_mlp_shape,
    mlp_args,
    mlp_calls,
    shape_edges,
)
from katas.phase2.strata import (
    EXTENSION_NAMES,
    LITERAL_DTYPES,
    io_program,
    literal_program,
)
from xla_inspect.jaxpr import in_avals, out_avals
from xla_inspect.jaxpr import primitive_census as library_census


def _is_jaxpr(jaxpr, what: str) -> None:
    assert hasattr(jaxpr, "in_avals") and hasattr(jaxpr, "eqns") and hasattr(jaxpr, "consts"), (
        f"{what}: expected a closed jaxpr (what jax.make_jaxpr(f)(*args) returns), "
        f"got {type(jaxpr).__name__}"
    )


def _avals(jaxpr) -> tuple[list, list]:
    """(shape, dtype, weak_type) of each input and output: `~f32` is not `f32`."""
    return (
        [(a.shape, a.dtype, a.weak_type) for a in in_avals(jaxpr)],
        [(a.shape, a.dtype, a.weak_type) for a in out_avals(jaxpr)],
    )


def _top_level(jaxpr) -> list[str]:
    return [eqn.primitive.name for eqn in jaxpr.eqns]


def _mlp_body(jaxpr):
    """The jaxpr whose equations hold mlp's work: the top level, or, when the only equation is
    a jit (the jaxpr of jax.jit(mlp)), that jit's jaxpr."""
    eqns = jaxpr.eqns
    if len(eqns) == 1 and eqns[0].primitive.name == "jit":
        return eqns[0].params["jaxpr"]
    return jaxpr


def _mlp_equations(jaxpr) -> list[str]:
    """The primitives of the equations that hold mlp's work."""
    return _top_level(_mlp_body(jaxpr))


# ------------------------------------------------------------------------------------ mlp_jaxpr


@pytest.mark.task("mlp_jaxpr")
def test_mlp_jaxpr_avals_follow_the_arguments(kata):
    for name, (shape, dtype) in MLP_CASES.items():
        params, x = mlp_args(shape, dtype)
        jaxpr = kata.mlp_jaxpr(params, x)
        _is_jaxpr(jaxpr, name)
        got_in = [(tuple(a.shape), str(a.dtype)) for a in jaxpr.in_avals]
        got_out = [(tuple(a.shape), str(a.dtype)) for a in jaxpr.out_avals]
        leaves = jax.tree.leaves((params, x))
        with check:
            assert got_in == [(v.shape, str(v.dtype)) for v in leaves], (
                f"{name}: inputs {got_in}; expected the four params leaves, then x"
            )
        with check:
            assert got_out == [((shape[0], shape[3]), str(np.dtype(dtype)))], (
                f"{name}: outputs {got_out}"
            )
        with check:
            assert not jaxpr.consts, f"{name}: params were closed over; trace them as inputs"


@pytest.mark.task("mlp_jaxpr")
def test_mlp_jaxpr_computes_the_mlp(kata):
    for seed, (name, (shape, dtype)) in enumerate(MLP_CASES.items()):
        if dtype is not F32:
            continue
        params, x = mlp_args(shape, dtype, seed)
        jaxpr = kata.mlp_jaxpr(params, x)
        _is_jaxpr(jaxpr, name)
        census = library_census(jaxpr)
        for primitive, count in (("dot_general", 2), ("max", 1)):
            with check:
                assert census[primitive] == count, (
                    f"{name}: {primitive} x{census[primitive]}, expected {count}"
                )
        if len(jaxpr.in_avals) == 5:
            outs = jax.jit(jax.extend.core.jaxpr_as_fun(jaxpr))(*jax.tree.leaves((params, x)))
            with check:
                np.testing.assert_allclose(
                    np.asarray(outs[0]),
                    oracle.np_mlp(params, x),
                    rtol=1e-4,
                    atol=1e-4,
                    err_msg=f"{name}: running the jaxpr",
                )


@pytest.mark.task("mlp_jaxpr")
def test_mlp_jaxpr_mixed_dtypes(kata, fresh):
    """Every pair of the ten dtypes (params, x): each input keeps its own dtype. The pairs come
    in ten groups of one x dtype, each group one fresh shape (so one shape meets ten params
    dtypes in a row) and one rank of x (x of shape (in,), (batch, in) or (2, batch, in)); each
    shape situation (a size of 1 in each place, or all distinct) on a fifth of the pairs. Each
    group ends with three calls that change one thing at a time from the call before: x's
    dtype alone, then x's leading shape alone, then the params' widths alone (what a trace
    cache keyed on less than every argument's shape and dtype gets wrong), and a fourth with x
    weakly typed (a float32 or int32 x made from a Python scalar by jnp; in even groups one
    params leaf too): its aval stays weakly typed, ~f32 not f32. The expected avals
    are those of jax.make_jaxpr(mlp) traced here, and so are the expected equations: mlp's at
    the top level or inside the one jit of jax.jit(mlp), no other wrapper (a checkpoint's
    remat equation holding them is another jaxpr), and so are the equations' params (a
    dot_general's precision and preferred_element_type, at any depth)."""
    x_dtypes, edges = fresh.sample(DTYPES, len(DTYPES)), shape_edges(fresh, len(DTYPES))
    for group, (x_dtype, edge) in enumerate(zip(x_dtypes, edges, strict=True)):
        shape = fresh_mlp_shape(fresh, edge)
        calls = mlp_calls(fresh, shape, group, x_dtype, x_dtypes[(group + 1) % len(x_dtypes)])
        for params, x, changed in calls:
            what = (
                f"{params['w1'].dtype} params w1{list(params['w1'].shape)}, "
                f"{x.dtype} x{list(x.shape)}{', ' + changed if changed else ''}"
            )
            jaxpr = kata.mlp_jaxpr(params, x)
            _is_jaxpr(jaxpr, what)
            traced = jax.make_jaxpr(kata.mlp)(params, x)
            got, expected = _avals(jaxpr), _avals(traced)
            assert got == expected, (
                f"{what} ({fresh.where()}): inputs {got[0]}, outputs {got[1]}; expected "
                f"{expected[0]}, {expected[1]}"
            )
            got_eqns, mlp_eqns = _mlp_equations(jaxpr), _top_level(traced)
            assert got_eqns == mlp_eqns, (
                f"{what} ({fresh.where()}): the jaxpr's equations are {got_eqns}; mlp's are "
                f"{mlp_eqns} (at the top level, or inside one jit equation that is the only one)"
            )
            got_params, mlp_params = params_of(_mlp_body(jaxpr)), params_of(traced)
            assert got_params == mlp_params, (
                f"{what} ({fresh.where()}): {first_params_difference(got_params, mlp_params)} "
                "(mlp traced as the caller configured jax: no setting of your own)"
            )


# ------------------------------------------------------------------------------ primitive_census


@pytest.mark.task("primitive_census")
def test_census_walks_nested_jaxprs(kata):
    for name, (jaxpr, facts) in census_programs().items():
        census = kata.primitive_census(jaxpr)
        assert isinstance(census, dict), f"{name}: expected a Counter, got {type(census).__name__}"
        wrong = {p: census.get(p, 0) for p, n in facts.items() if census.get(p, 0) != n}
        with check:
            assert not wrong, f"{name}: got {wrong}, expected {facts}"


@pytest.mark.task("primitive_census")
def test_census_counts_match_library(kata):
    programs = {name: jaxpr for name, (jaxpr, _) in census_programs().items()}
    params, x = mlp_args()
    programs["mlp"] = jax.make_jaxpr(kata.mlp)(params, x)
    for name, jaxpr in programs.items():
        got = kata.primitive_census(jaxpr)
        assert isinstance(got, dict), f"{name}: expected a Counter, got {type(got).__name__}"
        expected = dict(library_census(jaxpr))
        with check:
            assert dict(got) == expected, f"{name}: got {dict(got)}, expected {expected}"


@pytest.mark.task("primitive_census")
def test_census_on_fresh_nestings(kata, fresh):
    """Each higher-order construct, outermost in one program and nested in another, with fresh
    neighbours: its jaxpr may sit under any param name (callee, call, body_jaxpr, jaxprs, ...),
    and one jaxpr object may sit there twice (a switch listing one function twice)."""
    xs = np.arange(1.0, 4.0, dtype=F32)
    for name, fn in fresh_nestings(fresh).items():
        jaxpr = jax.make_jaxpr(fn)(xs)
        got = kata.primitive_census(jaxpr)
        assert isinstance(got, dict), f"{name}: expected a Counter, got {type(got).__name__}"
        expected = dict(library_census(jaxpr))
        assert dict(got) == expected, (
            f"{name} ({fresh.where()}): got {dict(got)}, expected {expected}"
        )


# ------------------------------------------------------------------------------------- io_avals


@pytest.mark.task("io_avals")
def test_io_avals_on_varied_programs(kata):
    for name, (fn, args) in IO_PROGRAMS.items():
        got = kata.io_avals(jax.make_jaxpr(fn)(*args))
        assert isinstance(got, tuple) and len(got) == 2, f"{name}: expected (inputs, outputs)"
        inputs, outputs = got
        expected_in, expected_out = oracle.expected_avals(fn, args)
        with check:
            assert inputs == expected_in, f"{name}: inputs {inputs}, expected {expected_in}"
        with check:
            assert outputs == expected_out, f"{name}: outputs {outputs}, expected {expected_out}"


@pytest.mark.task("io_avals")
def test_io_avals_read_dtypes(kata):
    table, index = np.arange(6.0, dtype=F32).reshape(2, 3), np.int32(1)
    inputs, outputs = kata.io_avals(jax.make_jaxpr(lambda t, i: (t[i] > 0, i + 1))(table, index))
    with check:
        assert inputs == [((2, 3), "float32"), ((), "int32")], f"inputs: got {inputs}"
    with check:
        assert outputs == [((3,), "bool"), ((), "int32")], f"outputs: got {outputs}"


@pytest.mark.task("io_avals")
def test_io_avals_on_fresh_programs(kata, fresh):
    """Six drawn programs (strata.io_program): arguments of every dtype (each of ml_dtypes'
    float8 and int4 types in every run), rank 0 to 3, zero-size, Python scalars; outputs that
    are inputs, closed-over arrays, literals of any dtype or computed, one of them twice, in a
    drawn order; in every other program the computed values come out of one jit equation (the
    jaxpr's only one) that takes only the arguments they read: its avals are not the jaxpr's;
    in the others a dead jit equation comes last, with as many results as the outputs, none of
    them an output."""
    featured = fresh.sample(EXTENSION_NAMES, len(EXTENSION_NAMES))
    for index in range(6):
        fn, args = io_program(fresh, featured[index % len(featured)], jitted=index % 2 == 1)
        got = kata.io_avals(jax.make_jaxpr(fn)(*args))
        assert isinstance(got, tuple) and len(got) == 2, "expected (inputs, outputs)"
        expected_in, expected_out = oracle.expected_avals(fn, args)
        jit_note = (
            ", its computed outputs by one jit"
            if index % 2 == 1
            else ", a dead jit equation with as many results as outputs traced last"
        )
        what = f"drawn program {index + 1}{jit_note} ({fresh.where()})"
        with check:
            assert got[0] == expected_in, f"{what}: inputs {got[0]}, expected {expected_in}"
        with check:
            assert got[1] == expected_out, f"{what}: outputs {got[1]}, expected {expected_out}"


# ------------------------------------------------------------------------------ literal_operands


def _literals(kata, fn, primitive, *args):
    got = kata.literal_operands(jax.make_jaxpr(fn)(*(args or (F32(1.0),))), primitive)
    assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
    return [float(v) for v in got]


@pytest.mark.task("literal_operands")
def test_python_folds_leading_constants(kata):
    folded = _literals(kata, lambda x: 2 * 3 * x, "mul")
    kept = _literals(kata, lambda x: x * 3 * 2, "mul")
    twice = _literals(kata, lambda x: x * 2 * 2, "mul")
    with check:
        assert folded == [6.0], f"2*3*x: mul literals {folded}; Python computes 2*3 first"
    with check:
        assert kept == [3.0, 2.0], f"x*3*2: mul literals {kept}; each * sees a tracer, in order"
    with check:
        assert twice == [2.0, 2.0], f"x*2*2: mul literals {twice}; one per operand, repeats kept"


@pytest.mark.task("literal_operands")
def test_literals_are_per_primitive(kata):
    fn = lambda x: (2.0 - x) * -2.5 + 1.0 - x**2  # noqa: E731
    got = {p: _literals(kata, fn, p) for p in ("mul", "add", "sub", "integer_pow")}
    expected = {"mul": [-2.5], "add": [1.0], "sub": [2.0], "integer_pow": []}
    with check:
        assert got == expected, (
            f"got {got}, expected {expected} (2.0 - x puts the literal first; x ** 2 keeps 2 in "
            "a param, not an operand)"
        )


@pytest.mark.task("literal_operands")
def test_literals_of_other_dtypes(kata):
    ints = _literals(kata, lambda i: (i + 3) * np.int8(-2), "mul", np.int8(1))
    int_add = _literals(kata, lambda i: (i + 3) * np.int8(-2), "add", np.int8(1))
    halves = _literals(kata, lambda h: h * 0.5 - 1.0, "mul", np.float16(1))
    flags = np.array([True, False])
    bools = _literals(kata, lambda b: jnp.logical_and(b, True), "and", flags)
    falses = _literals(kata, lambda b: jnp.logical_or(b, False) ^ True, "or", flags)
    with check:
        assert (ints, int_add) == ([-2.0], [3.0]), f"int8: mul {ints}, add {int_add}"
    with check:
        assert halves == [0.5], f"f16: mul literals {halves}, expected [0.5]"
    with check:
        assert bools == [1.0], f"bool: and literals {bools}, expected [1.0] (True)"
    with check:
        assert falses == [0.0], f"bool: or literals {falses}, expected [0.0] (False)"


@pytest.mark.task("literal_operands")
def test_literals_only_at_top_level(kata):
    def fn(x):
        inner = jax.jit(lambda v: v * 5.0)(x)
        looped = lax.while_loop(lambda c: c < 9.0, lambda c: c * 4.0, inner)
        return looped * 7.0 + x * TABLE[1]

    got = _literals(kata, fn, "mul", F32(1.0))
    assert got == [7.0], (
        f"mul literals {got}: only top-level equations count (not the jit's 5.0 or the loop's "
        "4.0), and a closed-over array is a constvar, not a literal"
    )


@pytest.mark.task("literal_operands")
def test_literals_on_fresh_programs(kata, fresh):
    """A drawn program per dtype (strata.literal_program), in a drawn order: literals at the
    dtype's edges (unsigned, int32 beyond 2**24, ...) and a zero, beside primitives whose names
    contain or begin with the one asked (xor, scatter-add; add_any, atan2), equations with two
    literal operands (a clamp's bounds, one value twice), and a closed-over 0-d jax Array (a
    constvar) as an operand of the primitive asked. Some programs (drawn, one at least) are
    given already jitted: the jaxpr of jax.jit(f) is one jit equation, whose literals are not
    top-level ones (none for any primitive asked), and its jaxpr, a closed jaxpr of its own,
    has f's."""
    names = fresh.sample(LITERAL_DTYPES, len(LITERAL_DTYPES))
    jitted = {names[0], *(n for n in names[1:] if fresh.random() < 0.3)}
    for name in fresh.sample(names, len(names)):
        program = literal_program(fresh, name)
        cases = [(jax.make_jaxpr(program.f)(program.arg), program.expected, "")]
        if name in jitted:
            outer = jax.make_jaxpr(jax.jit(program.f))(program.arg)
            cases = [
                (outer, dict.fromkeys(program.expected, []), " given as jax.jit(f)"),
                (outer.eqns[0].params["jaxpr"], program.expected, ", the jit equation's own jaxpr"),
            ]
        for jaxpr, expected_of, how in cases:
            for primitive, expected in expected_of.items():
                got = kata.literal_operands(jaxpr, primitive)
                assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
                with check:
                    assert [float(v) for v in got] == expected, (
                        f"{program.dtype} program{how}, {primitive!r}: literals {got}, expected "
                        f"{expected} ({fresh.where()})"
                    )


# ------------------------------------------------------------------------------------ mlp_avals


def _as_pairs(avals) -> list:
    return [(a.shape, a.dtype) for a in avals]


@pytest.mark.task("mlp_avals")
def test_mlp_avals_match_the_jaxpr(kata):
    mlp = kata.mlp  # the phase's given MLP, traced here with params inserted as w1, b1, w2, b2
    for what, (shape, param_dtype, x_dtype) in AVAL_CASES.items():
        jaxpr = jax.make_jaxpr(mlp)(*aval_case_args(shape, param_dtype, x_dtype))
        got = kata.mlp_avals(*shape, param_dtype, x_dtype)
        assert isinstance(got, tuple) and len(got) == 2, (
            f"expected (inputs, outputs), got {got!r:.80}"
        )
        inputs, outputs = got
        with check:
            assert inputs == _as_pairs(in_avals(jaxpr)), (
                f"{what}: inputs {inputs}, the jaxpr's are {_as_pairs(in_avals(jaxpr))}"
            )
        with check:
            assert outputs == _as_pairs(out_avals(jaxpr)), (
                f"{what}: outputs {outputs}, the jaxpr's are {_as_pairs(out_avals(jaxpr))}"
            )


@pytest.mark.task("mlp_avals")
def test_mlp_avals_every_dtype_pair(kata, fresh):
    """Every pair of the ten dtypes (ints, unsigned, bool, floats), fresh shapes: each shape
    situation (a size of 1 in each place, or all distinct) on a fifth of the pairs."""
    mlp = kata.mlp
    pairs = list(itertools.product(DTYPES, DTYPES))
    for (param_dtype, x_dtype), edge in zip(pairs, shape_edges(fresh, len(pairs)), strict=True):
        shape = fresh_mlp_shape(fresh, edge)
        jaxpr = jax.make_jaxpr(mlp)(*aval_case_args(shape, param_dtype, x_dtype))
        expected = (_as_pairs(in_avals(jaxpr)), _as_pairs(out_avals(jaxpr)))
        got = kata.mlp_avals(*shape, param_dtype, x_dtype)
        what = f"{param_dtype} params, {x_dtype} x, shape {shape} ({fresh.where()})"
        assert isinstance(got, tuple) and len(got) == 2, (
            f"{what}: expected (inputs, outputs), got {got!r:.80}"
        )
        assert (list(got[0]), list(got[1])) == expected, (
            f"{what}: got inputs {got[0]}, outputs {got[1]}; the jaxpr's are {expected[0]}, "
            f"{expected[1]}"
        )
