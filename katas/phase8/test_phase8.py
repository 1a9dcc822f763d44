"""Phase 8 tests: StableHLO facts read through MLIR, HLO facts from parsed modules, exports run."""

from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from pytest_check import check

from xla_inspect.parse import parse_hlo
from xla_inspect.stablehlo import stablehlo_op_census

FEATURES, OUT = 16, 4


def _hlo_opcodes(lowered) -> Counter:
    """Opcode counts of the unoptimized HLO, across all computations."""
    module = parse_hlo(lowered.as_text(dialect="hlo"))
    return Counter(i.opcode for computation in module for i in computation)


X = jax.ShapeDtypeStruct((8, 4), jnp.float32)
INDEX = jax.ShapeDtypeStruct((), jnp.int32)

# Each program uses the op named by its key exactly as often in StableHLO as in HLO.
PROGRAMS = {
    "stablehlo.dot_general": (lambda x, w: x @ w, (X, jax.ShapeDtypeStruct((4, 3), jnp.float32))),
    "stablehlo.broadcast_in_dim": (lambda b: lax.broadcast_in_dim(b, (8, 4), (1,)),
                                   (jax.ShapeDtypeStruct((4,), jnp.float32),)),
    "stablehlo.case": (lambda x, i: lax.cond(i > 0, jnp.sin, jnp.cos, x), (X, INDEX)),
    "stablehlo.optimization_barrier": (  # what jax.checkpoint (remat) leaves in a gradient
        jax.grad(lambda x: jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)))(x).sum()), (X,)),
    "stablehlo.dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 4)), (X, INDEX)),
    "stablehlo.dynamic_update_slice": (
        lambda x, i: lax.dynamic_update_slice(x, jnp.zeros((2, 4)), (i, 0)), (X, INDEX)),
    "stablehlo.exponential_minus_one": (jnp.expm1, (X,)),
    "stablehlo.count_leading_zeros": (lax.clz, (INDEX,)),
    "stablehlo.exponential": (jnp.exp, (X,)),
    "stablehlo.transpose": (lambda x: x.T, (X,)),
    "stablehlo.while": (
        lambda x: lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c * 2, x), (X,)),
    "stablehlo.reduce": (lambda x: x.sum(0), (X,)),
}
RENAMED = ("stablehlo.dot_general", "stablehlo.broadcast_in_dim", "stablehlo.case",
           "stablehlo.optimization_barrier")
RESPELLED = ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
             "stablehlo.exponential_minus_one", "stablehlo.count_leading_zeros")
KEPT = ("stablehlo.exponential", "stablehlo.transpose", "stablehlo.while", "stablehlo.reduce")


@cache
def _lowered(op: str):
    fn, specs = PROGRAMS[op]
    return jax.jit(fn).lower(*specs)


def _check_mapping(kata, ops) -> None:
    for op in ops:
        lowered = _lowered(op)
        opcode = kata.hlo_opcode(op)
        want, got = stablehlo_op_census(lowered)[op], _hlo_opcodes(lowered)[opcode]
        with check:
            assert want > 0 and got == want, (
                f"{op} x{want} in StableHLO, but HLO has {opcode!r} x{got}: read the HLO opcodes")


def _mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def _mlp_specs(batch: int | str = 8):
    return (jax.ShapeDtypeStruct((batch, FEATURES), jnp.float32),
            jax.ShapeDtypeStruct((FEATURES, 8), jnp.float32),
            jax.ShapeDtypeStruct((8, OUT), jnp.float32))


def _mlp_values(batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(batch, FEATURES)).astype(np.float32),
            rng.normal(size=(FEATURES, 8)).astype(np.float32) / 4,
            rng.normal(size=(8, OUT)).astype(np.float32) / 3)


def _np_mlp(x, w1, w2):
    return np.tanh(x @ w1) @ w2


def _rest():
    return _mlp_specs()[1:]


@cache
def _test_blob() -> bytes:
    return jax.export.export(jax.jit(_mlp))(*_mlp_specs()).serialize()


# ---- task 1: op_census ------------------------------------------------------------------------


@pytest.mark.task("op_census")
def test_census_matches_library_on_nested_regions(kata):
    for op in ("stablehlo.case", "stablehlo.while", "stablehlo.reduce", "stablehlo.dot_general"):
        lowered = _lowered(op)
        got, want = kata.op_census(lowered), stablehlo_op_census(lowered)
        with check:
            assert dict(got) == dict(want), f"{op} program: got {dict(got)}, expected {dict(want)}"


@pytest.mark.task("op_census")
def test_census_sees_ops_inside_regions(kata):
    census = kata.op_census(_lowered("stablehlo.while"))
    with check:
        assert census["stablehlo.while"] == 1, f"one while loop, got {census['stablehlo.while']}"
    with check:
        assert census["stablehlo.multiply"] >= 1, "the body's multiply lives in a region"
    with check:
        assert census["builtin.module"] == 0, "the module is the container, not an op to count"
    with check:
        assert census["func.func"] >= 1 and census["func.return"] >= 1, dict(census)


# ---- task 2: hlo_opcode -----------------------------------------------------------------------


@pytest.mark.task("hlo_opcode")
def test_renamed_ops(kata):
    _check_mapping(kata, RENAMED)


@pytest.mark.task("hlo_opcode")
def test_respelled_ops(kata):
    _check_mapping(kata, RESPELLED)


@pytest.mark.task("hlo_opcode")
def test_ops_that_keep_their_name(kata):
    _check_mapping(kata, KEPT)


# ---- task 3: export_bytes ---------------------------------------------------------------------


@pytest.mark.task("export_bytes")
def test_exported_bytes_deserialize(kata):
    blob = kata.export_bytes(_mlp, *_mlp_specs())
    assert isinstance(blob, bytes | bytearray), f"expected bytes, got {type(blob).__name__}"
    exported = jax.export.deserialize(blob)
    with check:
        assert [a.shape for a in exported.in_avals] == [s.shape for s in _mlp_specs()]
    with check:
        assert [a.shape for a in exported.out_avals] == [(8, OUT)]
    with check:
        assert stablehlo_op_census(exported.mlir_module())["stablehlo.dot_general"] == 2


@pytest.mark.task("export_bytes")
def test_exported_bytes_run_without_python(kata):
    traces = []

    def counted(x, w1, w2):
        traces.append(1)
        return _mlp(x, w1, w2)

    blob = kata.export_bytes(counted, *_mlp_specs())
    traced = len(traces)
    exported = jax.export.deserialize(blob)
    for seed in (0, 1):
        values = _mlp_values(8, seed)
        got = np.asarray(exported.call(*values))
        with check:
            np.testing.assert_allclose(got, _np_mlp(*values), rtol=1e-4, atol=1e-5)
    with check:
        assert traced == 1, f"export traces f once, it traced {traced} times"
    with check:
        assert len(traces) == traced, "calling the deserialized function must not run f again"


# ---- task 4: call_exported --------------------------------------------------------------------


@pytest.mark.task("call_exported")
def test_call_exported_values(kata):
    for seed in (0, 1):
        values = _mlp_values(8, seed)
        got = kata.call_exported(_test_blob(), *values)
        with check:
            np.testing.assert_allclose(np.asarray(got), _np_mlp(*values), rtol=1e-4, atol=1e-5)


@pytest.mark.task("call_exported")
def test_call_exported_returns_an_array(kata):
    got = kata.call_exported(_test_blob(), *_mlp_values(8, 2))
    with check:
        assert isinstance(got, jax.Array), f"expected a jax.Array, got {type(got).__name__}"
    with check:
        assert np.shape(got) == (8, OUT), f"shape {np.shape(got)}, expected {(8, OUT)}"


# ---- task 5: export_any_batch -----------------------------------------------------------------


@pytest.mark.task("export_any_batch")
def test_any_batch_runs_for_several_batches(kata):
    exported = jax.export.deserialize(kata.export_any_batch(_mlp, FEATURES, *_rest()))
    for batch in (1, 3, 8):
        values = _mlp_values(batch, batch)
        got = np.asarray(exported.call(*values))
        with check:
            np.testing.assert_allclose(got, _np_mlp(*values), rtol=1e-4, atol=1e-5,
                                       err_msg=f"batch {batch}")


@pytest.mark.task("export_any_batch")
def test_any_batch_is_symbolic_only_in_the_batch(kata):
    exported = jax.export.deserialize(kata.export_any_batch(_mlp, FEATURES, *_rest()))
    batch, features = exported.in_avals[0].shape
    with check:
        assert not isinstance(batch, int), f"the batch dimension is {batch!r}, not symbolic"
    with check:
        assert features == FEATURES, f"the feature dimension is {features!r}, expected {FEATURES}"
    with check:
        assert [a.shape for a in exported.in_avals[1:]] == [s.shape for s in _rest()]


def _linear(x, w):
    return x @ w


@pytest.mark.task("export_any_batch")
def test_any_batch_for_another_feature_size(kata):
    features = 6
    w = jax.ShapeDtypeStruct((features, 3), jnp.float32)
    exported = jax.export.deserialize(kata.export_any_batch(_linear, features, w))
    with check:
        assert exported.in_avals[0].shape[1] == features, (
            f"x spec {exported.in_avals[0].shape}: the feature size is the `features` argument")
    rng = np.random.default_rng(5)
    x, weights = (rng.normal(size=(5, features)).astype(np.float32),
                  rng.normal(size=(features, 3)).astype(np.float32))
    with check:
        np.testing.assert_allclose(np.asarray(exported.call(x, weights)), x @ weights,
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.task("export_any_batch")
def test_symbolic_module_checks_its_shapes(kata):
    exported = jax.export.deserialize(kata.export_any_batch(_mlp, FEATURES, *_rest()))
    symbolic = stablehlo_op_census(exported.mlir_module())
    fixed = stablehlo_op_census(jax.export.deserialize(_test_blob()).mlir_module())
    with check:
        assert symbolic["stablehlo.get_dimension_size"] >= 1, "the module reads b at run time"
    with check:
        assert fixed["stablehlo.get_dimension_size"] == 0, "a fixed-shape module never does"
    empty = (np.ones((0, FEATURES), np.float32), *_mlp_values(1)[1:])
    with pytest.raises(ValueError, match="dimension variable"):
        exported.call(*empty)  # the module's shape assertion: b >= 1
