"""Phase 2 tests: facts about jaxprs, checked against xla_inspect's census and real lowering."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from pytest_check import check

from xla_inspect.jaxpr import primitive_census as library_census
from xla_inspect.stablehlo import stablehlo_op_census


def _mlp_args():
    def ones(*shape):
        return np.ones(shape, np.float32)

    params = {"w1": ones(16, 32), "b1": ones(32), "w2": ones(32, 4), "b2": ones(4)}
    return params, ones(8, 16)


def _nested_programs():
    xs = np.arange(4.0, dtype=np.float32)
    return {
        "cond": jax.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0),
        "scan": jax.make_jaxpr(
            lambda v: lax.scan(lambda c, x: (c + jnp.sin(x), None), 0.0, v))(xs),
        "while": jax.make_jaxpr(lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2, x))(
            1.0),
        "relu": jax.make_jaxpr(jax.nn.relu)(xs),
    }


@pytest.mark.task("mlp_jaxpr")
def test_mlp_jaxpr_primitives(kata):
    census = library_census(kata.mlp_jaxpr(*_mlp_args()))
    for primitive, count in (("dot_general", 2), ("add", 2), ("max", 1)):
        with check:
            assert census[primitive] == count, f"{primitive} x{census[primitive]}, expected {count}"


@pytest.mark.task("mlp_jaxpr")
def test_mlp_jaxpr_is_closed_over_all_inputs(kata):
    jaxpr = kata.mlp_jaxpr(*_mlp_args())
    n_in = len(jaxpr.in_avals)
    out_shapes = [tuple(a.shape) for a in jaxpr.out_avals]
    with check:
        assert n_in == 5, f"{n_in} inputs, expected 5 (four params leaves and x)"
    with check:
        assert out_shapes == [(8, 4)], f"outputs {out_shapes}, expected [(8, 4)]"


@pytest.mark.task("primitive_census")
def test_census_walks_nested_jaxprs(kata):
    facts = {"cond": ("cond", "sin", "cos"), "scan": ("scan", "sin"),
             "while": ("while", "lt", "mul"), "relu": ("custom_jvp_call", "max")}
    for name, jaxpr in _nested_programs().items():
        census = kata.primitive_census(jaxpr)
        for primitive in facts[name]:
            with check:
                assert census[primitive] >= 1, f"{name}: {primitive} missing from {dict(census)}"


@pytest.mark.task("primitive_census")
def test_census_counts_match_library(kata):
    programs = {**_nested_programs(), "mlp": jax.make_jaxpr(kata.mlp)(*_mlp_args())}
    for name, jaxpr in programs.items():
        got = dict(kata.primitive_census(jaxpr))
        with check:
            assert got == dict(library_census(jaxpr)), name


@pytest.mark.task("io_avals")
def test_io_avals_of_mlp(kata):
    params, x = _mlp_args()
    inputs, outputs = kata.io_avals(jax.make_jaxpr(kata.mlp)(params, x))
    expected = [(tuple(leaf.shape), str(leaf.dtype)) for leaf in jax.tree.leaves((params, x))]
    with check:
        assert inputs == expected, f"inputs: got {inputs}, expected {expected}"
    with check:
        assert outputs == [((8, 4), "float32")], f"outputs: got {outputs}, expected f32[8,4]"


def _lookup(table, index):
    return table[index] > 0, index + 1


@pytest.mark.task("io_avals")
def test_io_avals_read_dtypes(kata):
    table, index = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.int32(1)
    inputs, outputs = kata.io_avals(jax.make_jaxpr(_lookup)(table, index))
    expected_out = [(tuple(np.shape(v)), str(np.asarray(v).dtype)) for v in _lookup(table, index)]
    with check:
        assert inputs == [((2, 3), "float32"), ((), "int32")], f"inputs: got {inputs}"
    with check:
        assert outputs == expected_out, f"outputs: got {outputs}, expected {expected_out}"


@pytest.mark.task("literal_operands")
def test_python_folds_leading_constants(kata):
    folded = kata.literal_operands(jax.make_jaxpr(lambda x: 2 * 3 * x)(1.0), "mul")
    kept = kata.literal_operands(jax.make_jaxpr(lambda x: x * 2 * 3)(1.0), "mul")
    with check:
        assert folded == [6.0], f"2*3*x: mul literals {folded}; Python computes 2*3 first"
    with check:
        assert kept == [2.0, 3.0], f"x*2*3: mul literals {kept}; each * sees a tracer"


@pytest.mark.task("literal_operands")
def test_literals_are_per_primitive(kata):
    jaxpr = jax.make_jaxpr(lambda x: x * 2.0 + 1.0)(1.0)
    mul, add = kata.literal_operands(jaxpr, "mul"), kata.literal_operands(jaxpr, "add")
    with check:
        assert mul == [2.0], f"mul literals: got {mul}, expected [2.0]"
    with check:
        assert add == [1.0], f"add literals: got {add}, expected [1.0]"


def _dead(x):
    y = x * 2  # noqa: F841  (dead on purpose)
    return x + 1


def _dead_chain(x):
    y = jnp.sin(x)
    z = y * 2  # noqa: F841  (dead on purpose)
    return x + 1


@pytest.mark.task("unused_equations")
def test_dead_code_stays_in_jaxpr(kata):
    dead = kata.unused_equations(jax.make_jaxpr(_dead)(1.0))
    live = kata.unused_equations(jax.make_jaxpr(lambda x: x * 2 + 1)(1.0))
    with check:
        assert dead == ["mul"], f"got {dead}: the unused x * 2 is still in the jaxpr"
    with check:
        assert live == [], f"got {live}: every result is used here"


@pytest.mark.task("unused_equations")
def test_dead_code_propagates_backwards(kata):
    dead = kata.unused_equations(jax.make_jaxpr(_dead_chain)(1.0))
    assert dead == ["sin", "mul"], f"got {dead}: sin only feeds a dead mul, so it is dead too"


@pytest.mark.task("stablehlo_of")
def test_lowering_drops_dead_code(kata):
    census = stablehlo_op_census(kata.stablehlo_of(_dead, 1.0))
    with check:
        assert census["stablehlo.add"] == 1, dict(census)
    with check:
        assert census["stablehlo.multiply"] == 0, "the dead multiply is gone after lowering"


@pytest.mark.task("closure_consts")
def test_closed_over_array_is_a_const(kata):
    table = np.arange(3.0, dtype=np.float32)
    consts = kata.closure_consts(jax.make_jaxpr(lambda x: x + table)(np.ones(3, np.float32)))
    assert len(consts) == 1, f"{len(consts)} consts, expected the one closed-over array"
    np.testing.assert_array_equal(np.asarray(consts[0]), table)


@pytest.mark.task("closure_consts")
def test_closed_over_scalar_is_a_literal(kata):
    scale = 2.5
    scalar_consts = kata.closure_consts(jax.make_jaxpr(lambda x: x * scale)(np.ones(3, np.float32)))
    table = np.ones((2, 2), dtype=np.float32)
    consts = kata.closure_consts(jax.make_jaxpr(lambda x: x @ table)(np.ones((2, 2), np.float32)))
    with check:
        assert scalar_consts == [], "a Python scalar is inlined as a literal"
    with check:
        assert [np.shape(c) for c in consts] == [(2, 2)]
