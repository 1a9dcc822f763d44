"""Phase 9 tests: shardings read from arrays and from HLO, collectives counted in compiled HLO.

Every task runs on several meshes (1-D (8,), 2-D (2, 4) and (4, 2), and a (2, 4) mesh whose axis
"x" is the minor one), several array shapes (odd column counts, a single column) and dtypes.
Oracles: NumPy for values, ``compiled.input_shardings`` for what each parameter holds, the
Mesh's own device grid for which devices a collective groups or pairs (kata_harness.collectives),
XLA's own module for the collectives a compiled case holds (kata_harness.xla_counts).
"""

import contextlib
from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness import collectives, xla_counts
from kata_harness.predict import compiler_refused
from katas.phase9 import collective_programs
from katas.phase9.collective_programs import PREDICT_BANK, ShardedOp
from katas.phase9.programs import (
    PLACEMENT_CASES,
    REFUSED_SHARD_CASES,
    ROW_CASES,
    SHARD_SHAPE_CASES,
    arange_rows,
    census_bank,
    first_placement,
    map_cases,
    mesh_named,
    mesh_of,
    param_bank,
    placement_arrays,
    put,
    run_placed,
    scatter_cases,
    small_ints,
    sum_in_loop,
    two_hops_and_sum,
)
from xla_inspect.jaxpr import primitive_census
from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo

DEVICES = 8
COLLECTIVES = frozenset(
    {"all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"}
)

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


def _optimized_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def _static_dims(shape: Shape) -> tuple[int, ...]:
    dims = tuple(d for d in shape.dims if d is not None)
    assert len(dims) == len(shape.dims), f"a dynamic dimension in {shape.text}"
    return dims


def _collective_ops(f, *args):
    """Collective instructions in every computation of the compiled (partitioned) module."""
    module = parse_hlo(_optimized_text(jax.jit(f).lower(*args).compile()))
    return [i for c in module for i in c if i.opcode in COLLECTIVES]


def _collectives(f, *args) -> Counter:
    return Counter(i.opcode for i in _collective_ops(f, *args))


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


@pytest.mark.task("shard_rows")
def test_each_device_holds_its_rows(kata):
    for number, (mesh_name, shape, dtype) in enumerate(ROW_CASES):
        mesh, x = mesh_named(mesh_name), small_ints(shape, dtype, number)
        sharded = kata.shard_rows(x, mesh)
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
        sharded = kata.shard_rows(x, mesh)
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


# ---- task 3: collective_census ----------------------------------------------------------------


@cache
def _census_oracle(index: int) -> Counter:
    _, f, args, _ = census_bank()[index]
    return _collectives(f, *args)


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
    entry = parse_hlo(_optimized_text(jax.jit(sum_in_loop).lower(x).compile())).entry
    with check:
        assert got == Counter({"all-reduce": 1}), (
            f"got {dict(got)}, the while body has one all-reduce"
        )
    with check:
        assert not any(i.opcode in COLLECTIVES for i in entry), (
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


# ---- task 4: device_param_shapes and task 5: param_shardings ----------------------------------


@cache
def _compiled_bank(index: int):
    _, f, args, _ = param_bank()[index]
    return jax.jit(f).lower(*args).compile()


def _kept_shardings(index: int):
    """compiled.input_shardings: None for an argument jit dropped; the rest, in argument order."""
    _, _, args, kept = param_bank()[index]
    shardings = _compiled_bank(index).input_shardings[0]
    assert [k for k, s in enumerate(shardings) if s is not None] == list(kept)
    return [(args[k], shardings[k]) for k in kept]


@pytest.mark.task("device_param_shapes")
def test_entry_shapes_are_per_device(kata):
    for index, (name, f, args, _) in enumerate(param_bank()):
        got = kata.device_param_shapes(f, *args)
        assert isinstance(got, list), f"{name}: got a {type(got).__name__}"
        want = [tuple(s.shard_shape(a.shape)) for a, s in _kept_shardings(index)]
        with check:
            assert [tuple(s) for s in got] == want, (
                f"{name}: got {got}, parameter 0, 1, .. of the partitioned module hold {want}"
            )


@pytest.mark.task("device_param_shapes")
def test_shapes_in_parameter_order(kata):
    name, f, args, _ = param_bank()[3]
    got = kata.device_param_shapes(f, *args)
    printed = [
        int(i.payload)
        for i in parse_hlo(_optimized_text(_compiled_bank(3))).entry
        if i.opcode == "parameter" and i.payload is not None
    ]
    with check:
        assert printed != sorted(printed), f"{name}: the module prints {printed} in order now"
    with check:
        assert got == [(2, 5), (6, 2), ()], (
            f"{name}: got {got}: list parameter(0), parameter(1), parameter(2) by number (the "
            "text prints them in schedule order); z is dropped, the scalar is ()"
        )


@pytest.mark.task("device_param_shapes")
def test_unused_argument_is_not_a_parameter(kata):
    name, f, args, kept = param_bank()[1]
    got = kata.device_param_shapes(f, *args)
    want = [tuple(a.sharding.shard_shape(a.shape)) for a in (args[k] for k in kept)]
    assert got == want, (
        f"got {got}, expected {want}: jit drops an unused argument from the compiled module "
        "(keep_unused=False); read the ENTRY parameters, do not derive them from the inputs"
    )


@pytest.mark.task("param_shardings")
def test_sharding_annotations(kata):
    for index, (name, f, args, _) in enumerate(param_bank()):
        got = kata.param_shardings(f, *args)
        assert isinstance(got, list), f"{name}: got a {type(got).__name__}"
        # XLA's own printer of each kept argument's input sharding.
        want = [str(s._to_xla_hlo_sharding(a.ndim)) for a, s in _kept_shardings(index)]
        with check:
            assert got == want, f"{name}: got {got}, expected {want}"


@pytest.mark.task("param_shardings")
def test_annotations_in_parameter_order(kata):
    _, f, args, _ = param_bank()[0]
    got_1d = kata.param_shardings(f, *args)
    with check:
        assert got_1d == ["{devices=[8,1]<=[8]}", "{replicated}", "{devices=[1,8]<=[8]}"], (
            f"1-D mesh: got {got_1d}"
        )
    name, f, args, _ = param_bank()[3]
    got = kata.param_shardings(f, *args)
    printed = [
        int(i.payload)
        for i in parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo")).entry
        if i.opcode == "parameter" and i.payload is not None
    ]
    with check:
        assert printed != sorted(printed), f"{name}: the module prints {printed} in order now"
    with check:
        assert got == [
            "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
            "{devices=[1,8]<=[4,2]T(1,0)}",
            "{replicated}",
        ], (
            f"{name}: got {got}: by parameter number, not in the order the text prints them; "
            "the unused argument is not a parameter"
        )


# ---- tasks 6-9: shard_map collectives ---------------------------------------------------------


def _only(ops, opcode, label):
    """The single collective of the program, which must be `opcode`."""
    assert [i.opcode for i in ops] == [opcode], (
        f"{label}: collectives {[i.opcode for i in ops]}, expected exactly one {opcode}"
    )
    return ops[0]


def _run(task, mesh, sharded):
    """One compile of `jax.jit(task(., mesh))`: (result, compiled module, jaxpr census)."""
    jitted = jax.jit(lambda a: task(a, mesh))
    compiled = jitted.lower(sharded).compile()
    census = primitive_census(jax.make_jaxpr(lambda a: task(a, mesh))(sharded))
    return compiled(sharded), parse_hlo(_optimized_text(compiled)), census


def _collectives_of(module):
    return [i for c in module for i in c if i.opcode in COLLECTIVES]


# ---- task 6: psum_total -----------------------------------------------------------------------


@pytest.mark.task("psum_total")
def test_psum_total(kata):
    for mesh_name, mesh, x, sharded in map_cases():
        total, module, jaxpr = _run(kata.psum_total, mesh, sharded)
        with check:
            assert np.shape(total) == (), f"mesh {mesh_name}: shape {np.shape(total)}, a scalar"
        with check:
            np.testing.assert_allclose(
                np.asarray(total, np.float64),
                x.sum(dtype=np.float64),
                err_msg=f"mesh {mesh_name}: the sum of every element",
            )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["psum_invariant"] + jaxpr["psum"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one psum (printed psum_invariant "
                f"with check_vma), got {dict(jaxpr)}"
            )
        op = _only(_collectives_of(module), "all-reduce", f"mesh {mesh_name}")
        with check:
            assert op.shape_info.dims == (), (
                f"mesh {mesh_name}: the all-reduce moves {op.shape}: sum your own rows first, "
                "then psum one number per device"
            )
        with check:
            assert collectives.replica_groups(
                op.attribute("replica_groups")
            ) == collectives.axis_groups(mesh, "x"), (
                f"mesh {mesh_name}: replica_groups {op.attribute('replica_groups')}: reduce "
                "over mesh axis 'x' only"
            )


# ---- task 7: ring_shift -----------------------------------------------------------------------


@pytest.mark.task("ring_shift")
def test_ring_shift(kata):
    for mesh_name, mesh, x, sharded in map_cases():
        shifted, module, jaxpr = _run(kata.ring_shift, mesh, sharded)
        per_block = x.shape[0] // mesh.shape["x"]
        with check:
            np.testing.assert_array_equal(
                np.asarray(shifted),
                np.roll(x, per_block, axis=0),
                err_msg=f"mesh {mesh_name}: block i along 'x' must arrive at position i+1, "
                "the last one at position 0",
            )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["ppermute"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one ppermute, got {dict(jaxpr)}"
            )
        op = _only(_collectives_of(module), "collective-permute", f"mesh {mesh_name}")
        block = (per_block, x.shape[1])
        with check:
            assert op.shape_info.dims == block, (
                f"mesh {mesh_name}: moves {op.shape}, expected one block {block} per device"
            )
        with check:
            assert collectives.source_target_pairs(
                op.attribute("source_target_pairs")
            ) == collectives.axis_ring(mesh, "x"), (
                f"mesh {mesh_name}: source_target_pairs {op.attribute('source_target_pairs')}, "
                f"expected {sorted(collectives.axis_ring(mesh, 'x'))}"
            )


# ---- task 8: gather_rows ----------------------------------------------------------------------


@pytest.mark.task("gather_rows")
def test_gather_rows(kata):
    for mesh_name, mesh, x, sharded in map_cases():
        gathered, module, jaxpr = _run(kata.gather_rows, mesh, sharded)
        with check:
            np.testing.assert_array_equal(
                np.asarray(gathered), x, err_msg=f"mesh {mesh_name}: every row, in order"
            )
        with check:
            assert gathered.sharding.is_fully_replicated, (
                f"mesh {mesh_name}: sharding {gathered.sharding}"
            )
        with check:
            for shard in gathered.addressable_shards:
                np.testing.assert_array_equal(
                    np.asarray(shard.data),
                    x,
                    err_msg=(
                        f"mesh {mesh_name}: device {shard.device.id} must hold the whole array"
                    ),
                )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["all_gather"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one all_gather, got {dict(jaxpr)}: "
                "write the collective yourself instead of asking the partitioner"
            )
        op = _only(_collectives_of(module), "all-gather", f"mesh {mesh_name}")
        with check:  # tiled: (rows, cols); untiled: (blocks, rows per block, cols)
            assert (
                np.prod(_static_dims(op.shape_info)) == x.size
                and op.shape_info.dims[-1] == x.shape[1]
                and op.attribute("dimensions") == "{0}"
            ), (
                f"mesh {mesh_name}: all-gather {op.shape} along {op.attribute('dimensions')}, "
                f"expected all {x.shape} gathered once, along the leading dimension"
            )
        with check:
            assert collectives.replica_groups(
                op.attribute("replica_groups")
            ) == collectives.axis_groups(mesh, "x"), (
                f"mesh {mesh_name}: replica_groups {op.attribute('replica_groups')}: gather "
                "over mesh axis 'x' only"
            )


# ---- task 9: scatter_sum ----------------------------------------------------------------------


@pytest.mark.task("scatter_sum")
def test_scatter_sum(kata):
    for mesh_name, mesh, x, sharded in scatter_cases():
        n = mesh.shape["x"]
        got, module, jaxpr = _run(kata.scatter_sum, mesh, sharded)
        want = x.reshape(n, x.shape[0] // n, x.shape[1]).sum(0).astype(x.dtype)
        with check:
            np.testing.assert_allclose(
                np.asarray(got),
                want,
                err_msg=(f"mesh {mesh_name}: the element-wise sum of the {n} row blocks"),
            )
        piece = want.shape[0] // n
        for shard in got.addressable_shards:
            i = collectives.axis_position(mesh, shard.device, "x")
            with check:
                np.testing.assert_allclose(
                    np.asarray(shard.data),
                    want[i * piece : (i + 1) * piece],
                    err_msg=f"mesh {mesh_name}: position {i} along 'x' keeps slice {i}",
                )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["reduce_scatter"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one psum_scatter (printed "
                f"reduce_scatter), got {dict(jaxpr)}"
            )
        op = _only(
            _collectives_of(module),
            "reduce-scatter",
            f"mesh {mesh_name}: an all-reduce moves every sum to every device",
        )
        with check:
            assert op.shape_info.dims == (piece, x.shape[1]) and (
                op.attribute("dimensions") == "{0}"
            ), (
                f"mesh {mesh_name}: reduce-scatter {op.shape} along "
                f"{op.attribute('dimensions')}, expected {(piece, x.shape[1])} along rows"
            )
        with check:
            assert collectives.replica_groups(
                op.attribute("replica_groups")
            ) == collectives.axis_groups(mesh, "x"), (
                f"mesh {mesh_name}: replica_groups {op.attribute('replica_groups')}"
            )
        reducer = module[op.attribute("to_apply", "").removeprefix("%")]
        with check:
            assert reducer.root.opcode == "add", (
                f"mesh {mesh_name}: the reduce-scatter combines with {reducer.root.opcode}"
            )


# ---- predict_collectives -----------------------------------------------------------------------
# One case at a time (the harness refuses the compiler around every call), compiled here: the
# fixed cases the task started with, and cases drawn fresh every run: one of each structural
# situation the contract allows (op family x where x is split x how the result is placed), so no
# trap depends on the seed, and one from the whole domain. The expected counts come from XLA's
# own module.


def _predicted_collectives(kata, case) -> dict[str, int]:
    predicted = kata.predict_collectives(case)
    assert isinstance(predicted, dict), f"expected a dict, got {predicted!r}"
    assert all(type(v) is int and v > 0 for v in predicted.values()), (
        f"expected positive int counts (leave out opcodes that do not occur), got {predicted!r}"
    )
    return dict(predicted)


@cache
def _compiled_collectives(case: ShardedOp) -> dict[str, int]:
    counts = xla_counts.opcode_counts(collective_programs.compiled(case))
    return {opcode: counts[opcode] for opcode in sorted(COLLECTIVES) if counts[opcode]}


@pytest.mark.task("predict_collectives")
def test_predict_collectives_on_the_bank(kata):
    for name, case in PREDICT_BANK.items():
        predicted = _predicted_collectives(kata, case)
        if predicted != _compiled_collectives(case):
            pytest.fail(
                f"{name} ({case.describe()}): you predicted {predicted}; the partitioned module "
                "holds other collectives (what does one device hold, and what must move?)"
            )


@pytest.mark.task("predict_collectives")
def test_predict_collectives_on_fresh_cases(kata, fresh):
    """One case drawn for every situation of collective_programs.SITUATIONS (elementwise with a
    moved split, reductions and reversals along x's split dimension, across it and with x split
    on both, matmul with its contracted dimension split, each with the result left free and
    replicated; a result moved), over 1-D and 2-D meshes under any axis names, then one case
    from the whole domain."""
    cases = [collective_programs.draw_situation(fresh, s) for s in collective_programs.SITUATIONS]
    for case in [*cases, collective_programs.draw_case(fresh)]:
        predicted = _predicted_collectives(kata, case)
        compiled = _compiled_collectives(case)
        if predicted != compiled:
            pytest.fail(
                f"{case.describe()}: you predicted {predicted}, the partitioned module holds "
                f"{compiled}; {fresh.where()}"
            )


@pytest.mark.task("predict_collectives")
def test_predict_collectives_does_not_compile(kata):
    for name in ("softmax over axis 0, x row-split", "x + y, x row-split, y column-split"):
        with compiler_refused("predict_collectives"):
            kata.predict_collectives(PREDICT_BANK[name])


# ---- place_weights: a decision under a memory budget and a communication budget ----------------


def _collective_bytes(lowered) -> int:
    """Bytes of the results of every collective of the compiled module (per device)."""
    return collectives.collective_bytes(_optimized_text(lowered.compile()))


@cache
def _first_placement_bytes(number: int) -> int:
    mesh = mesh_named(PLACEMENT_CASES[number][0])
    x, w1, w2 = placement_arrays(number)
    return _collective_bytes(run_placed(mesh, x, *first_placement(w1, w2, mesh)))


def _placed(kata, number: int):
    mesh = mesh_named(PLACEMENT_CASES[number][0])
    x, w1, w2 = placement_arrays(number)
    placed = kata.place_weights(w1, w2, mesh)
    assert isinstance(placed, tuple) and len(placed) == 2, f"expected (w1, w2), got {placed!r:.80}"
    for name, got, given in zip(("w1", "w2"), placed, (w1, w2), strict=True):
        assert isinstance(got, jax.Array), f"{name}: expected a jax.Array, got {type(got).__name__}"
        assert (got.shape, got.dtype) == (given.shape, given.dtype), (
            f"{name}: {got.dtype}{list(got.shape)}, given {given.dtype}{list(given.shape)}"
        )
    return mesh, x, (w1, w2), placed


@pytest.mark.task("place_weights")
def test_place_weights_keeps_values_and_splits_them(kata):
    for number, case in enumerate(PLACEMENT_CASES):
        mesh, _, given, placed = _placed(kata, number)
        n = mesh.shape["x"]
        for name, want, got in zip(("w1", "w2"), given, placed, strict=True):
            with check:
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{case} {name}")
            largest = max(shard.data.size for shard in got.addressable_shards)
            with check:
                assert largest * n <= want.size, (
                    f"{case} {name}: a device holds {largest} of {want.size} elements, budget "
                    f"{want.size // n} (1/{n}: mesh axis x has {n} positions)"
                )


@pytest.mark.task("place_weights")
def test_place_weights_halves_collective_bytes(kata):
    for number, case in enumerate(PLACEMENT_CASES):
        mesh, x, _, placed = _placed(kata, number)
        moved = _collective_bytes(run_placed(mesh, x, *placed))
        first = _first_placement_bytes(number)
        with check:
            assert moved * 2 <= first, (
                f"{case}: collectives move {moved} bytes, budget {first // 2} (half of "
                f"{first}, the first placement's)"
            )


# Meshes over the 8 devices with an axis "x" of 2, 4 or 8 positions, first, minor or in the
# middle, beside axes of other names. The first one drawn has "x" after a shorter axis.
FRESH_PLACEMENT_MESHES = (
    (("y", 2), ("x", 4)),
    (("model", 1), ("x", 8)),
    (("y", 4), ("x", 2)),
    (("z", 2), ("x", 2), ("y", 2)),
    (("x", 8),),
    (("x", 2), ("y", 4)),
    (("x", 4), ("data", 2)),
)


def _fresh_placement(fresh, axes):
    """x, w1, w2 for a two-layer case on `axes`, shaped like the listed cases: features a
    multiple of x's n positions and at least 2n and 8, hidden a multiple of the 8 devices, out
    at most hidden / 4 (where the first placement moves at least twice what is needed; with
    fewer features or a wide out, XLA finds a cheap plan for it too)."""
    n = dict(axes)["x"]
    least = max(2, 8 // n)
    batch, features = fresh.randint(1, 8), n * fresh.randint(least, least + 2)
    hidden = 8 * fresh.randint(2, 6)
    out = fresh.randint(1, hidden // 4)
    rng = np.random.default_rng(fresh.randrange(2**32))
    return (
        rng.normal(size=(batch, features)).astype(np.float32),
        rng.normal(size=(features, hidden)).astype(np.float32) / 4,
        rng.normal(size=(hidden, out)).astype(np.float32) / 8,
    )


@pytest.mark.task("place_weights")
def test_place_weights_on_fresh_meshes_and_shapes(kata, fresh):
    """Meshes whose axis "x" comes after a shorter one (one drawn every time), 3-D meshes,
    other shapes: values kept, at most 1/n of each weight per device, at most half the first
    placement's collective bytes (both measured on the compiled program), the right result."""
    drawn = [FRESH_PLACEMENT_MESHES[fresh.randrange(2)]]
    drawn += fresh.sample(FRESH_PLACEMENT_MESHES, 2)
    for axes in drawn:
        mesh = mesh_of(axes)
        n = mesh.shape["x"]
        x, w1, w2 = _fresh_placement(fresh, axes)
        case = (
            f"mesh {dict(axes)}, x f32{list(x.shape)}, w1 f32{list(w1.shape)}, "
            f"w2 f32{list(w2.shape)}; {fresh.where()}"
        )
        try:
            placed = kata.place_weights(w1, w2, mesh)
        except ValueError as refused:  # jax refuses a split that does not divide evenly
            pytest.fail(f"{case}: place_weights raised {type(refused).__name__}: {refused}")
        assert isinstance(placed, tuple) and len(placed) == 2, (
            f"{case}: expected (w1, w2), got {placed!r:.80}"
        )
        for name, got, want in zip(("w1", "w2"), placed, (w1, w2), strict=True):
            assert isinstance(got, jax.Array), f"{case}: {name} is a {type(got).__name__}"
            if (got.shape, got.dtype) != (want.shape, want.dtype) or not np.array_equal(
                np.asarray(got), want
            ):
                pytest.fail(f"{case}: {name} placed with other values, shape or dtype")
            largest = max(shard.data.size for shard in got.addressable_shards)
            if largest * n > want.size:
                pytest.fail(
                    f"{case}: a device holds {largest} of the {want.size} elements of {name}, "
                    f"budget 1/{n} (mesh axis x has {n} positions)"
                )
        lowered = run_placed(mesh, x, *placed)
        moved = _collective_bytes(lowered)
        first = _collective_bytes(run_placed(mesh, x, *first_placement(w1, w2, mesh)))
        if moved * 2 > first:
            pytest.fail(
                f"{case}: collectives move {moved} bytes, budget half of the first "
                f"placement's {first}"
            )
        result = np.asarray(lowered.compile()(jax.device_put(x, NamedSharding(mesh, P())), *placed))
        if not np.allclose(result, np.maximum(x @ w1, 0) @ w2, rtol=1e-4, atol=1e-4):
            pytest.fail(f"{case}: two_layer on the placed weights gives other numbers")


@pytest.mark.task("place_weights")
def test_place_weights_computes_two_layer(kata):
    for number, case in enumerate(PLACEMENT_CASES):
        mesh, x, (w1, w2), placed = _placed(kata, number)
        program = run_placed(mesh, x, *placed).compile()
        rng = np.random.default_rng(number + 10)
        replicated = NamedSharding(mesh, P())
        for trial in range(3):
            inputs = rng.normal(size=x.shape).astype(np.float32) * (trial + 1)
            got = np.asarray(program(jax.device_put(inputs, replicated), *placed))
            want = np.maximum(inputs @ w1, 0) @ w2
            with check:
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{case}")


# ---- predict_shard_shape -----------------------------------------------------------------------


@cache
def _compiled_shard_shape(number: int) -> tuple[int, ...] | None:
    """The ENTRY parameter's shape when jit receives the case's array, None if jax refuses it."""
    shape, spec, mesh_shape = SHARD_SHAPE_CASES[number]
    mesh = mesh_of(tuple(mesh_shape.items()))
    try:
        sharding = NamedSharding(mesh, spec)
        given = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)
        lowered = jax.jit(lambda a: a * 2).lower(given)
    except ValueError as refused:
        assert "implies that array axis" in str(refused), f"case {number}: {refused}"
        return None
    module = parse_hlo(_optimized_text(lowered.compile()))
    (parameter,) = [i for i in module.entry if i.opcode == "parameter"]
    return _static_dims(parameter.shape_info)


def _shard_case(number: int) -> str:
    shape, spec, mesh_shape = SHARD_SHAPE_CASES[number]
    return f"f32{list(shape)} with {spec} on mesh {mesh_shape}"


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_matches_the_compiled_parameter(kata):
    for number, (shape, spec, mesh_shape) in enumerate(SHARD_SHAPE_CASES):
        predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        compiled = _compiled_shard_shape(number)
        with check:
            assert predicted == compiled, f"{_shard_case(number)}: you predicted {predicted}, " + (
                "jax refuses this placement (a dimension does not divide evenly)"
                if compiled is None
                else f"the compiled ENTRY parameter is {compiled}"
            )


def _device_put_shard_shape(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    """What one device holds after jax.device_put with NamedSharding(mesh, spec), None if jax
    refuses the placement (it raises)."""
    mesh = mesh_of(tuple(mesh_shape.items()))
    try:
        placed = jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, spec))
    except Exception:  # noqa: BLE001  (ValueError, IndivisibleError, DuplicateSpecError, ...)
        return None
    return tuple(placed.addressable_shards[0].data.shape)


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_none_where_device_put_refuses(kata):
    """Every dimension divides evenly, yet jax refuses: a spec longer than the shape, a mesh
    axis named twice, an axis the mesh does not have."""
    for shape, spec, mesh_shape in REFUSED_SHARD_CASES:
        case = f"f32{list(shape)} with {spec} on mesh {mesh_shape}"
        expected = _device_put_shard_shape(shape, spec, mesh_shape)
        assert expected is None, f"{case}: jax.device_put should refuse it, it placed {expected}"
        try:
            predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        except (KeyError, IndexError, ValueError) as error:
            predicted = f"{type(error).__name__}: {error}"
        with check:
            assert predicted == expected, (
                f"{case}: you predicted {predicted}; jax.device_put refuses this placement, "
                "the answer is None"
            )


FRESH_MESH_SIZES = ((8,), (2, 4), (4, 2), (2, 2, 2), (1, 8), (2, 1, 4))
FRESH_AXIS_NAMES = ("x", "y", "z", "data", "model")


def _fresh_entry(fresh, names: list[str]):
    """None, one axis or a tuple of two, taken from `names` (whatever is left)."""
    kind = fresh.choice(("none", "one", "two") if len(names) >= 2 else ("none", "one"))
    if kind == "none" or not names:
        return None
    if kind == "one":
        return names.pop(fresh.randrange(len(names)))
    return tuple(names.pop(fresh.randrange(len(names))) for _ in range(2))


def _fresh_shard_cases(fresh) -> list[tuple[tuple[int, ...], P, dict[str, int]]]:
    # First: a tuple entry over two axes of 2 and 4 positions, its dimension a multiple of each
    # (4 times an odd number) but not of their product, 8: jax refuses it.
    a, b = fresh.sample(FRESH_AXIS_NAMES, 2)
    mesh_shape = dict(fresh.sample([(a, 2), (b, 4)], 2))
    tricky = 4 * fresh.choice((1, 3, 5))
    entries = [None, (a, b) if fresh.random() < 0.5 else (b, a)]
    shape = [fresh.randint(1, 12), tricky]
    if fresh.random() < 0.5:
        entries.reverse()
        shape.reverse()
    cases = [(tuple(shape), P(*entries), mesh_shape)]
    for _ in range(5):
        sizes = fresh.choice(FRESH_MESH_SIZES)
        mesh_shape = dict(zip(fresh.sample(FRESH_AXIS_NAMES, len(sizes)), sizes, strict=True))
        rank = fresh.randint(0, 3)
        names = list(mesh_shape)
        spec = [_fresh_entry(fresh, names) for _ in range(fresh.randint(0, rank))]
        shape = []
        for number in range(rank):
            entry = spec[number] if number < len(spec) else None
            axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
            pieces = int(np.prod([mesh_shape[axis] for axis in axes]))
            # mostly a multiple of its pieces, sometimes anything (jax then refuses)
            shape.append(
                pieces * fresh.randint(1, 4) if fresh.random() < 0.75 else fresh.randint(1, 13)
            )
        cases.append((tuple(shape), P(*spec), mesh_shape))
    return cases


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_on_fresh_cases(kata, fresh):
    """Shapes of rank 0 to 3, specs of None, one axis and two-axis tuples, meshes of 1 to 3
    axes under any names (one case every time: a dimension that each of its two axes divides
    but their product does not); the expected shape is what one device holds after
    jax.device_put, None where jax refuses the placement."""
    for shape, spec, mesh_shape in _fresh_shard_cases(fresh):
        try:
            predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        except (KeyError, IndexError, ValueError) as error:
            predicted = f"{type(error).__name__}: {error}"
        placed = _device_put_shard_shape(shape, spec, mesh_shape)
        if predicted != placed:
            pytest.fail(
                f"f32{list(shape)} with {spec} on mesh {mesh_shape}: you predicted {predicted}, "
                + (
                    "jax.device_put refuses this placement (the answer is None)"
                    if placed is None
                    else f"one device holds {placed} after jax.device_put"
                )
                + f"; {fresh.where()}"
            )


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_does_not_compile(kata):
    for shape, spec, mesh_shape in [*SHARD_SHAPE_CASES, *REFUSED_SHARD_CASES]:
        with compiler_refused("predict_shard_shape", also=[(jax, "device_put")]):
            with contextlib.suppress(KeyError, IndexError, ValueError):  # wrong, not compiling
                kata.predict_shard_shape(shape, spec, dict(mesh_shape))
