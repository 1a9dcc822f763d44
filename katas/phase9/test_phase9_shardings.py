"""Phase 9 tests, tasks 1-3 (auto_mesh, shard_rows, collective_census): shardings read from
arrays, collectives counted in compiled HLO (tasks 4 and 5 are in test_phase9_params.py).

Every task runs on several meshes (1-D (8,), 2-D (2, 4) and (4, 2), and a (2, 4) mesh whose axis
"x" is the minor one), several array shapes (odd column counts, a single column) and dtypes.
Oracles (kata_harness.oracles.sharding): ``compiled.input_shardings`` for what each parameter
holds, the collectives of the compiled module in every computation.
"""

from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness import collectives
from kata_harness.oracles import sharding as oracle
from katas.phase9 import drawn_programs
from katas.phase9.programs import (
    ROW_CASES,
    arange_rows,
    census_bank,
    mesh_named,
    mesh_of,
    put,
    small_ints,
    sum_in_loop,
    two_hops_and_sum,
)
from xla_inspect.parse import parse_hlo

DEVICES = 8

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


# ---- task 1: auto_mesh ------------------------------------------------------------------------


@pytest.mark.task("auto_mesh")
def test_auto_mesh_axes(kata):
    mesh = kata.auto_mesh()
    assert isinstance(mesh, jax.sharding.Mesh), f"got a {type(mesh).__name__}, expected a Mesh"
    with check:
        assert dict(mesh.shape) == {"x": DEVICES}, f"mesh shape {dict(mesh.shape)}"
    with check:
        assert tuple(mesh.axis_names) == ("x",) and mesh.devices.shape == (DEVICES,), (
            f"axes {mesh.axis_names}, device grid {mesh.devices.shape}: one axis of 8"
        )
    with check:
        assert tuple(mesh.axis_types) == (AxisType.Auto,), (
            f"axis types {mesh.axis_types}: jax.make_mesh defaults to Explicit"
        )
    with check:
        assert sorted(d.id for d in mesh.devices.flat) == sorted(d.id for d in jax.devices())


# ---- task 2: shard_rows -----------------------------------------------------------------------


def _rows_placed(kata, x, mesh, case: str):
    """The answer's placement of x; a raise on an x the contract covers (rows in as many blocks
    as 'x' has devices, any columns, any other axes) is a wrong answer, said with its case: a
    spec that splits the columns too is refused by JAX where they do not divide."""
    try:
        return kata.shard_rows(x, mesh)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (whatever the answer raises, the case is valid)
        pytest.fail(f"{case}: shard_rows raised {type(error).__name__}: {error}", pytrace=False)


@pytest.mark.task("shard_rows")
def test_each_device_holds_its_rows(kata):
    for number, (mesh_name, shape, dtype) in enumerate(ROW_CASES):
        mesh, x = mesh_named(mesh_name), small_ints(shape, dtype, number)
        sharded = _rows_placed(kata, x, mesh, f"mesh {mesh_name}, x {np.dtype(dtype).name}{shape}")
        assert isinstance(sharded, jax.Array), f"got a {type(sharded).__name__}"
        per_block = shape[0] // mesh.shape["x"]
        shards = sharded.addressable_shards
        with check:
            assert len(shards) == DEVICES, f"mesh {mesh_name}: {len(shards)} shards"
        for shard in shards:
            block = collectives.axis_position(mesh, shard.device, "x")
            want = x[block * per_block : (block + 1) * per_block]
            with check:
                assert np.asarray(shard.data).shape == want.shape, (
                    f"mesh {mesh_name}, device {shard.device.id} (block {block} along 'x'): "
                    f"holds {np.asarray(shard.data).shape}, expected rows {want.shape}"
                )
            with check:
                np.testing.assert_array_equal(
                    np.asarray(shard.data, np.float32),
                    want.astype(np.float32),
                    err_msg=f"mesh {mesh_name}: device {shard.device.id} sits at position "
                    f"{block} of 'x' and holds rows {block * per_block}..",
                )


@pytest.mark.task("shard_rows")
def test_row_sharding_is_named(kata):
    for number, (mesh_name, shape, dtype) in enumerate(ROW_CASES):
        mesh, x = mesh_named(mesh_name), small_ints(shape, dtype, number)
        sharded = _rows_placed(kata, x, mesh, f"mesh {mesh_name}, x {np.dtype(dtype).name}{shape}")
        assert isinstance(sharded, jax.Array), f"got a {type(sharded).__name__}"
        want = NamedSharding(mesh, P("x", None))
        with check:
            assert sharded.sharding.is_equivalent_to(want, 2), (
                f"mesh {mesh_name}: sharding {sharded.sharding}, expected rows over 'x' of "
                "the mesh you were given, columns whole"
            )
        with check:
            assert sharded.dtype == x.dtype and sharded.shape == x.shape, (
                f"{sharded.dtype}{sharded.shape}, expected {x.dtype}{x.shape}"
            )
        with check:
            np.testing.assert_array_equal(np.asarray(sharded, np.float32), x.astype(np.float32))


# Meshes with axes besides "x" (which the contract copies along): the 2-D ones the task names and
# a 3-D one whose other axes sit on both sides of "x".
SPARE_AXIS_MESHES = (
    (("x", 2), ("y", 4)),
    (("x", 4), ("y", 2)),
    (("y", 2), ("x", 4)),
    (("z", 2), ("x", 2), ("y", 2)),
)


@pytest.mark.task("shard_rows")
def test_shard_rows_keeps_columns_the_other_axes_divide(kata, fresh):
    """Every mesh with axes besides "x", each axis Auto or Explicit (drawn; the first mesh has
    both), with a column count drawn every run that those axes divide (each of them and their
    product: a split of the columns over them would be possible) and a drawn dtype: each device
    holds its block of rows with every column, placed on the given mesh itself (its devices,
    axes and axis types)."""
    for number, axes in enumerate(fresh.sample(SPARE_AXIS_MESHES, len(SPARE_AXIS_MESHES))):
        types = [fresh.choice((AxisType.Auto, AxisType.Explicit)) for _ in axes]
        if number == 0 and len(set(types)) == 1:
            flipped = fresh.randrange(len(types))
            types[flipped] = AxisType.Explicit if types[0] == AxisType.Auto else AxisType.Auto
        mesh = mesh_of(axes, tuple(types))
        n = mesh.shape["x"]
        spare = int(np.prod([size for name, size in axes if name != "x"]))
        shape = (n * fresh.randint(1, 3), spare * fresh.randint(1, 3))
        dtype = fresh.choice([dtype for _, _, dtype in ROW_CASES])
        x = small_ints(shape, dtype, fresh.randrange(2**32))
        case = (
            f"mesh {dict(axes)} of axis types {[t.name for t in types]}, "
            f"x {np.dtype(dtype).name}{list(shape)}; {fresh.where()}"
        )
        sharded = _rows_placed(kata, x, mesh, case)
        assert isinstance(sharded, jax.Array), f"{case}: got a {type(sharded).__name__}"
        if not (sharded.shape == x.shape and sharded.dtype == x.dtype):
            pytest.fail(f"{case}: got {sharded.dtype}{list(sharded.shape)}")
        placed_on = getattr(sharded.sharding, "mesh", None)
        if placed_on != mesh:
            pytest.fail(
                f"{case}: placed on {placed_on!r} (axis types "
                f"{[t.name for t in getattr(placed_on, 'axis_types', ())]}), not on the mesh "
                "given"
            )
        per_block = shape[0] // n
        for shard in sharded.addressable_shards:
            block = collectives.axis_position(mesh, shard.device, "x")
            want = x[block * per_block : (block + 1) * per_block]
            held = np.asarray(shard.data)
            if held.shape != want.shape:
                pytest.fail(
                    f"{case}: device {shard.device.id} (block {block} along 'x') holds "
                    f"{held.shape}, expected its rows with every column {want.shape}: along "
                    "the other axes the row block is copied, not split"
                )
            if not np.array_equal(held.astype(np.float32), want.astype(np.float32)):
                pytest.fail(f"{case}: device {shard.device.id} holds other values than its rows")


# ---- task 3: collective_census ----------------------------------------------------------------


@cache
def _census_oracle(index: int) -> Counter:
    _, f, args, _ = census_bank()[index]
    return oracle.collective_counts(f, *args)


@pytest.mark.task("collective_census")
def test_census_counts_collectives_by_opcode(kata):
    for index, (name, f, args, fact) in enumerate(census_bank()):
        got = kata.collective_census(f, *args)
        assert isinstance(got, Counter), f"{name}: got a {type(got).__name__}, not a Counter"
        want = _census_oracle(index)
        with check:
            assert got == want, f"{name}: got {dict(got)}, the compiled module has {dict(want)}"
        if fact is not None:
            with check:
                assert dict(want) == fact, f"{name}: the module changed: {dict(want)}"


@pytest.mark.task("collective_census")
def test_census_looks_inside_loop_bodies(kata):
    x = put(arange_rows(), "x", None)
    local = kata.collective_census(jnp.sin, x)
    with check:
        assert local == Counter(), f"element-wise work stays local: got {dict(local)}"
    got = kata.collective_census(sum_in_loop, x)
    entry = parse_hlo(oracle.optimized_text(jax.jit(sum_in_loop).lower(x).compile())).entry
    with check:
        assert got == Counter({"all-reduce": 1}), (
            f"got {dict(got)}, the while body has one all-reduce"
        )
    with check:
        assert not any(i.opcode in oracle.COLLECTIVES for i in entry), (
            "the all-reduce runs in the while body, a computation of its own, not in ENTRY"
        )


@pytest.mark.task("collective_census")
def test_census_counts_opcodes_not_names(kata):
    from xla_inspect import hlo_facts  # the API users assert with in their own CI

    x = put(small_ints((8, 3), np.float32), "x", None, mesh="4x2")
    got = kata.collective_census(two_hops_and_sum, x)
    ops = hlo_facts(two_hops_and_sum, x).collectives()
    with check:
        assert any(c.name.split(".")[0] != c.opcode for c in ops), (
            "this program was chosen for names (ppermute.N, psum_invariant.N) that differ from "
            "opcodes"
        )
    with check:
        assert got == Counter({"collective-permute": 2, "all-reduce": 1}), (
            f"got {dict(got)}: two ppermutes and one psum; count opcodes, every instruction"
        )


@pytest.mark.task("collective_census")
def test_census_on_fresh_programs(kata, fresh):
    """shard_map programs drawn every run: pmax and pmin in the two branches of a lax.cond (at
    top level or in a loop body), two primitives in a while loop's condition and its body, then
    one from every primitive (psum, pmax, pmin, pmean, all_gather, ppermute, psum_scatter,
    all_to_all) and place (the body, a cond branch, a loop body, a branch in a loop body, a loop
    condition); the counts are XLA's own module's."""
    for label, f, args in drawn_programs.draw_census_programs(fresh):
        got = kata.collective_census(f, *args)
        assert isinstance(got, Counter), f"{label}: got a {type(got).__name__}, not a Counter"
        want = oracle.xla_census(f, *args)
        if got != want:
            wrong = sorted(k for k in set(got) | set(want) if got[k] != want[k])
            pytest.fail(
                f"{label}: your count of {wrong[0]!r} differs from the compiled module's (every "
                "computation: branches, loop bodies and conditions; opcodes, not names); "
                f"{fresh.where()}"
            )
