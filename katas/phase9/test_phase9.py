"""Phase 9 tests: shardings read from arrays and from HLO, collectives counted in compiled HLO."""

from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pytest_check import check

from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo

DEVICES = 8
ROWS, COLS = 16, 8
COLLECTIVES = frozenset(
    {"all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"})

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})")


@cache
def _mesh():
    return jax.make_mesh((DEVICES,), ("x",), axis_types=(AxisType.Auto,))


def _put(value, *spec):
    return jax.device_put(value, NamedSharding(_mesh(), P(*spec)))


def _x() -> np.ndarray:
    return np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)


def _collectives(f, *args) -> Counter:
    """Collective opcodes across every computation of the compiled (partitioned) module."""
    module = parse_hlo(jax.jit(f).lower(*args).compile().as_text())
    return Counter(i.opcode for c in module for i in c if i.opcode in COLLECTIVES)


def _replicated(a):
    return jax.lax.with_sharding_constraint(a * 2, NamedSharding(_mesh(), P()))


# ---- task 1: auto_mesh ------------------------------------------------------------------------


@pytest.mark.task("auto_mesh")
def test_auto_mesh_axes(kata):
    mesh = kata.auto_mesh()
    with check:
        assert dict(mesh.shape) == {"x": DEVICES}, f"mesh shape {dict(mesh.shape)}"
    with check:
        assert tuple(mesh.axis_types) == (AxisType.Auto,), (
            f"axis types {mesh.axis_types}: jax.make_mesh defaults to Explicit")
    with check:
        assert sorted(d.id for d in mesh.devices.flat) == sorted(d.id for d in jax.devices())


# ---- task 2: shard_rows -----------------------------------------------------------------------


@pytest.mark.task("shard_rows")
def test_each_device_holds_its_rows(kata):
    x = _x()
    sharded = kata.shard_rows(x, _mesh())
    per_device = ROWS // DEVICES
    shards = sorted(sharded.addressable_shards, key=lambda s: s.index[0].start or 0)
    with check:
        assert len(shards) == DEVICES, f"{len(shards)} shards, expected {DEVICES}"
    for number, shard in enumerate(shards):
        with check:
            np.testing.assert_array_equal(
                np.asarray(shard.data), x[number * per_device:(number + 1) * per_device],
                err_msg=f"shard {number} should hold rows {number * per_device}..")


@pytest.mark.task("shard_rows")
def test_row_sharding_is_named(kata):
    sharded = kata.shard_rows(_x(), _mesh())
    want = NamedSharding(_mesh(), P("x", None))
    with check:
        assert sharded.sharding.is_equivalent_to(want, 2), f"sharding {sharded.sharding}"
    with check:
        np.testing.assert_array_equal(np.asarray(sharded), _x())


# ---- task 3: collective_census ----------------------------------------------------------------


@pytest.mark.task("collective_census")
def test_sharded_sums_need_all_reduce(kata):
    x = _put(_x(), "x", None)
    row_sum = kata.collective_census(lambda a: a.sum(0), x)
    with check:
        assert dict(row_sum) == {"all-reduce": 1}, f"sum over the sharded rows: {dict(row_sum)}"
    lhs, rhs = _put(np.ones((4, COLS * 2), np.float32), None, "x"), _put(
        np.ones((COLS * 2, 4), np.float32), "x", None)
    matmul = kata.collective_census(lambda a, b: a @ b, lhs, rhs)
    with check:
        assert dict(matmul) == {"all-reduce": 1}, f"contracted sharded dim: {dict(matmul)}"


@pytest.mark.task("collective_census")
def test_replicated_output_needs_all_gather(kata):
    x = _put(_x(), "x", None)
    gathered = kata.collective_census(_replicated, x)
    local = kata.collective_census(jnp.sin, x)
    with check:
        assert dict(gathered) == {"all-gather": 1}, f"replicated result: {dict(gathered)}"
    with check:
        assert dict(local) == {}, f"element-wise work stays local: {dict(local)}"


@pytest.mark.task("collective_census")
def test_census_looks_inside_loop_bodies(kata):
    x = _put(_x(), "x", None)

    def loop(a):  # each step sums over the sharded rows: one all-reduce per iteration
        return jax.lax.fori_loop(0, 3, lambda i, c: c + (a * c).sum(0), jnp.ones(COLS))

    got = kata.collective_census(loop, x)
    want = _collectives(loop, x)
    entry = parse_hlo(jax.jit(loop).lower(x).compile().as_text()).entry
    with check:
        assert dict(got) == dict(want) == {"all-reduce": 1}, (
            f"got {dict(got)}, the compiled module has {dict(want)}")
    with check:
        assert not any(i.opcode in COLLECTIVES for i in entry), (
            "the all-reduce runs in the while body, a computation of its own, not in ENTRY")


@pytest.mark.task("collective_census")
def test_census_matches_parsed_module(kata):
    x = _put(_x(), "x", None)

    def mixed(a):
        return _replicated(a).sum() + a.sum(0).max()

    got = kata.collective_census(mixed, x)
    want = _collectives(mixed, x)
    assert dict(got) == dict(want), f"got {dict(got)}, the compiled module has {dict(want)}"


# ---- task 4: device_param_shapes --------------------------------------------------------------


def _three_args():
    return (_put(_x(), "x", None), _put(np.ones((COLS, 4), np.float32)),
            _put(np.ones((4, ROWS), np.float32), None, "x"))


@pytest.mark.task("device_param_shapes")
def test_entry_shapes_are_per_device(kata):
    args = _three_args()
    got = kata.device_param_shapes(lambda a, w, z: (a @ w, z * 2), *args)
    want = [tuple(a.sharding.shard_shape(a.shape)) for a in args]
    with check:
        assert [tuple(s) for s in got] == want, f"got {got}, one device holds {want}"
    with check:
        assert want[0] == (ROWS // DEVICES, COLS), "rows split 8 ways"


@pytest.mark.task("device_param_shapes")
def test_unused_argument_is_not_a_parameter(kata):
    args = _three_args()
    got = kata.device_param_shapes(lambda a, w, z: a @ w, *args)  # z is never used
    want = [tuple(a.sharding.shard_shape(a.shape)) for a in args[:2]]
    assert [tuple(s) for s in got] == want, (
        f"got {got}, expected {want}: jit drops an unused argument from the compiled module "
        "(keep_unused=False); read the ENTRY parameters, do not derive them from the inputs")


# ---- task 5: param_shardings ------------------------------------------------------------------


@pytest.mark.task("param_shardings")
def test_sharding_annotations(kata):
    args = (_put(_x(), "x", None), _put(np.ones((COLS, 4), np.float32)),
            _put(np.ones((4, ROWS), np.float32), None, "x"))
    got = kata.param_shardings(lambda a, w, z: (a @ w, z * 2), *args)
    want = [str(a.sharding._to_xla_hlo_sharding(a.ndim)) for a in args]  # XLA's own printer
    with check:
        assert got == want, f"got {got}, expected {want}"
    with check:
        assert want[:2] == ["{devices=[8,1]<=[8]}", "{replicated}"], want
    unused = kata.param_shardings(lambda a, w, z: a @ w, *args)  # z is never used
    with check:
        assert unused == want[:2], (
            f"got {unused} for a function that never reads z: jit drops the unused parameter, "
            f"expected {want[:2]}")


# ---- task 6: psum_total -----------------------------------------------------------------------


def _sharded_x():
    return _put(_x(), "x", None)


@pytest.mark.task("psum_total")
def test_psum_total_value(kata):
    total = kata.psum_total(_sharded_x(), _mesh())
    with check:
        assert np.shape(total) == (), f"shape {np.shape(total)}, expected a scalar"
    with check:
        np.testing.assert_allclose(np.asarray(total), _x().sum())


@pytest.mark.task("psum_total")
def test_psum_is_an_all_reduce(kata):
    mesh = _mesh()
    jaxpr = primitive_census(jax.make_jaxpr(lambda a: kata.psum_total(a, mesh))(_sharded_x()))
    with check:
        assert jaxpr["shard_map"] == 1 and jaxpr["psum_invariant"] == 1, (
            f"expected shard_map with one psum (printed psum_invariant), got {dict(jaxpr)}")
    module = parse_hlo(jax.jit(lambda a: kata.psum_total(a, mesh)).lower(_sharded_x())
                       .compile().as_text())
    ops = [i for c in module for i in c if i.opcode in COLLECTIVES]
    with check:
        assert [i.opcode for i in ops] == ["all-reduce"], [i.opcode for i in ops]
    with check:
        assert all(i.shape_info.dims == () for i in ops), (
            f"the all-reduce moves {[i.shape_info.dims for i in ops]}: sum your own rows "
            "first, then psum one number per device")


# ---- task 7: ring_shift -----------------------------------------------------------------------


@pytest.mark.task("ring_shift")
def test_ring_shift_moves_blocks_forward(kata):
    shifted = np.asarray(kata.ring_shift(_sharded_x(), _mesh()))
    np.testing.assert_array_equal(shifted, np.roll(_x(), ROWS // DEVICES, axis=0),
                                  err_msg="device i's rows must arrive on device i+1")


@pytest.mark.task("ring_shift")
def test_ring_shift_is_a_collective_permute(kata):
    mesh = _mesh()
    jaxpr = primitive_census(jax.make_jaxpr(lambda a: kata.ring_shift(a, mesh))(_sharded_x()))
    with check:
        assert jaxpr["ppermute"] == 1, f"expected one ppermute, got {dict(jaxpr)}"
    ops = _collectives(lambda a: kata.ring_shift(a, mesh), _sharded_x())
    with check:
        assert dict(ops) == {"collective-permute": 1}, dict(ops)


# ---- task 8: gather_rows ----------------------------------------------------------------------


@pytest.mark.task("gather_rows")
def test_gather_rows_replicates(kata):
    gathered = kata.gather_rows(_sharded_x(), _mesh())
    with check:
        np.testing.assert_array_equal(np.asarray(gathered), _x())
    with check:
        assert gathered.sharding.is_fully_replicated, f"sharding {gathered.sharding}"
    ops = _collectives(lambda a: kata.gather_rows(a, _mesh()), _sharded_x())
    with check:
        assert dict(ops) == {"all-gather": 1}, dict(ops)
    jaxpr = primitive_census(jax.make_jaxpr(lambda a: kata.gather_rows(a, _mesh()))(_sharded_x()))
    with check:
        assert jaxpr["shard_map"] == 1 and jaxpr["all_gather"] == 1, (
            f"expected shard_map with one all_gather, got {dict(jaxpr)}: write the collective "
            "yourself instead of asking the partitioner for a replicated output")


# ---- task 9: scatter_sum ----------------------------------------------------------------------


def _blocks() -> np.ndarray:
    return np.arange(DEVICES * DEVICES * 4, dtype=np.float32).reshape(DEVICES * DEVICES, 4)


@pytest.mark.task("scatter_sum")
def test_scatter_sum_values(kata):
    got = np.asarray(kata.scatter_sum(_put(_blocks(), "x", None), _mesh()))
    want = _blocks().reshape(DEVICES, DEVICES, 4).sum(0)
    np.testing.assert_allclose(got, want, err_msg="the element-wise sum of the 8 row blocks")


@pytest.mark.task("scatter_sum")
def test_scatter_sum_is_one_reduce_scatter(kata):
    ops = _collectives(lambda a: kata.scatter_sum(a, _mesh()), _put(_blocks(), "x", None))
    with check:
        assert dict(ops) == {"reduce-scatter": 1}, (
            f"got {dict(ops)}: an all-reduce moves every sum to every device")
    jaxpr = primitive_census(
        jax.make_jaxpr(lambda a: kata.scatter_sum(a, _mesh()))(_put(_blocks(), "x", None)))
    with check:
        assert jaxpr["shard_map"] == 1 and jaxpr["reduce_scatter"] == 1, (
            f"expected shard_map with one psum_scatter (printed reduce_scatter), got "
            f"{dict(jaxpr)}")
