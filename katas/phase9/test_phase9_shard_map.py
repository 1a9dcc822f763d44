"""Phase 9 tests, tasks 6-9 (psum_total, ring_shift, gather_rows, scatter_sum): shard_map
collectives, each checked for its values (NumPy), its jaxpr and the one collective of its
compiled module, on several meshes. Which devices a collective groups or pairs comes from the
Mesh's own device grid (kata_harness.collectives), never from the text.
"""

import re

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import collectives
from kata_harness.oracles import host_callbacks
from kata_harness.oracles import sharding as oracle
from katas.phase9 import drawn_programs
from katas.phase9.programs import NEEDS_VALUES, map_cases, scatter_cases
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo

DEVICES = 8

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


# ---- tasks 6-9: shard_map collectives ---------------------------------------------------------


def _only(ops, opcode, label):
    """The single collective of the program, which must be `opcode`."""
    assert [i.opcode for i in ops] == [opcode], (
        f"{label}: collectives {[i.opcode for i in ops]}, expected exactly one {opcode}"
    )
    return ops[0]


def _run(task, mesh, sharded, label):
    """One compile of `jax.jit(task(., mesh))`: (result, compiled module, jaxpr census, the
    compiled program)."""
    jitted = jax.jit(lambda a: task(a, mesh))
    try:
        compiled = jitted.lower(sharded).compile()
    except NEEDS_VALUES as error:
        name = getattr(task, "__name__", "the task")
        pytest.fail(
            f"{label}: {name} under jax.jit on {sharded.dtype}{list(sharded.shape)} "
            f"asked for the values of x ({type(error).__name__}): it read the array on the "
            "host; the work and its collective must run on the devices, inside shard_map"
        )
    census = primitive_census(jax.make_jaxpr(lambda a: task(a, mesh))(sharded))
    return compiled(sharded), parse_hlo(oracle.optimized_text(compiled)), census, compiled


def _placement(result, mesh, label: str, part) -> None:
    """What every device of the mesh holds of `result`: `part(position along "x")`, the NumPy
    array a device at that position must hold. One check, naming the first device that differs."""
    held = {shard.device.id: shard.data for shard in result.addressable_shards}
    fault = None
    for device in mesh.devices.flat:
        position = collectives.axis_position(mesh, device, "x")
        want = part(position)
        if device.id not in held:
            fault = "holds nothing of the result"
        elif np.shape(held[device.id]) != np.shape(want):
            fault = f"holds a piece of shape {np.shape(held[device.id])}"
        elif not np.array_equal(np.asarray(held[device.id]), want, equal_nan=True):
            fault = "holds other values"
        if fault:
            fault = (
                f"device {device.id} (position {position} along 'x') {fault}; it must hold "
                f"{np.shape(want)}"
            )
            break
    with check:
        assert fault is None, f"{label}: {fault} (result sharding {result.sharding})"


def _both_placements(task, mesh, sharded, jitted, label: str, part, collective: str) -> None:
    """`_placement` of the result under jax.jit and of the result the task returns called as a
    user calls it, outside jit: a placement written after shard_map (a device_put) counts only
    there. The outside call is also checked for its collective (`_eager_collective`), from the
    programs JAX compiled for that same call: an answer may look at its input (a Tracer or an
    array) and only do the work on the devices when traced."""
    _placement(jitted, mesh, f"{label}, under jax.jit", part)
    with host_callbacks.modules_compiled() as modules:
        eager = task(sharded, mesh)
    if not _STABLEHLO_COLLECTIVE.search("".join(modules.values())):
        jax.clear_caches()  # an earlier case may have compiled the same programs: again, cold
        with host_callbacks.modules_compiled() as modules:
            eager = task(sharded, mesh)
    _placement(eager, mesh, f"{label}, called outside jit", part)
    with check:
        _eager_collective(modules, mesh, f"{label}, called outside jit", collective)


def _other_values(task, mesh, x, sharded, compiled, label: str, rng, part_of) -> None:
    """The task again on a second x of the same shape, dtype and placement with other values
    (x's rows rotated by a drawn count, each element plus a drawn 1 to 3): through the program
    already compiled for the first x, and called outside jit (JAX reuses the first call's
    programs). `part_of(NumPy x)` is the `part` of `_placement` for that x. An answer that
    remembers a result by shape, dtype or mesh, or bakes the first x's values into its program,
    gives the first x's answer here."""
    turn = rng.randrange(x.shape[0])
    plus = rng.randint(1, 3)
    second = (np.roll(x, turn, axis=0).astype(np.float64) + plus).astype(x.dtype)
    again = jax.device_put(second, sharded.sharding)
    case = (
        f"{label}, a second x {x.dtype}{list(x.shape)} with the same placement: the first x's "
        f"rows rolled down by {turn}, each element + {plus} ({rng.where()})"
    )
    _placement(compiled(again), mesh, f"{case}, under the same jax.jit program", part_of(second))
    _placement(task(again, mesh), mesh, f"{case}, called outside jit", part_of(second))


_STABLEHLO_COLLECTIVE = re.compile(
    r'"?stablehlo\.(all_reduce|all_gather|reduce_scatter|collective_permute|all_to_all)"?\(.*'
)


def _dense_pairs(text: str) -> set[tuple[int, ...]]:
    """`dense<[[0, 1], [2, 3]]>`: the rows, as tuples."""
    rows = re.findall(r"\[([\d,\s]+)\]", text)
    return {tuple(int(d) for d in row.split(",")) for row in rows}


def _eager_collective(modules: dict[str, str], mesh, label: str, expected: str) -> None:
    """The StableHLO programs JAX compiled while the task ran outside jit hold exactly one
    collective, `expected`, and it groups (or pairs) the devices along mesh axis "x" only."""
    found = [
        (m.group(1), m.group(0))
        for text in modules.values()
        for m in _STABLEHLO_COLLECTIVE.finditer(text)
    ]
    assert [op for op, _ in found] == [expected], (
        f"{label}: the programs JAX compiled for this call ran collectives "
        f"{[op for op, _ in found]}, expected exactly one {expected}: outside jit as under it, "
        "the work and its collective run on the devices, inside shard_map"
    )
    line = found[0][1]
    axes = re.search(r"replica_group_mesh_axes<[^>]*axes = \[(.*?)\]>", line)
    groups = re.search(r"replica_groups = dense<(.*?)>", line)
    pairs = re.search(r"source_target_pairs = dense<(.*?)>", line)
    if axes:
        names = re.findall(r'axis_ref<name = "([^"]+)"', axes.group(1))
        assert names == ["x"], f"{label}: the {expected} runs over mesh axes {names}, not 'x' only"
    elif groups:
        assert _dense_pairs(groups.group(1)) == collectives.axis_groups(mesh, "x"), (
            f"{label}: the {expected} groups {groups.group(1)}: over mesh axis 'x' only"
        )
    elif pairs:
        assert _dense_pairs(pairs.group(1)) == collectives.axis_ring(mesh, "x"), (
            f"{label}: the {expected} pairs {pairs.group(1)}, expected "
            f"{sorted(collectives.axis_ring(mesh, 'x'))}"
        )


# ---- task 6: psum_total -----------------------------------------------------------------------


def _everywhere(value):
    """The `part` of `_placement` for a replicated result: every position holds `value`."""
    return lambda _position: value


def _exact_total(x: np.ndarray):
    """The sum of every element of x, wide enough to be exact (int64 or float64; NaN or inf
    as IEEE sums make them)."""
    with np.errstate(invalid="ignore"):  # inf + -inf: NaN, as it should be
        return x.sum(dtype=np.int64 if x.dtype.kind in "biu" else np.float64)


@pytest.mark.task("psum_total")
def test_psum_total(kata, fresh):
    """The map cases, then drawn every run: int32 rows whose total float32 cannot hold exactly,
    8- or 16-bit integers (or bools) whose total their own dtype cannot hold, and float rows
    holding a NaN, and infs."""
    drawn = [drawn_programs.int_total_case(fresh), drawn_programs.narrow_total_case(fresh)]
    drawn += drawn_programs.nonfinite_cases(fresh)
    for mesh_name, mesh, x, sharded in [*map_cases(), *drawn]:
        total, module, jaxpr, compiled = _run(kata.psum_total, mesh, sharded, f"mesh {mesh_name}")
        with check:
            assert np.shape(total) == (), f"mesh {mesh_name}: shape {np.shape(total)}, a scalar"
        # jnp.sum's dtype, independently: NumPy's sum's, at JAX's default widths
        want = jax.dtypes.canonicalize_dtype(np.sum(x[:0]).dtype)
        with check:
            assert np.asarray(total).dtype == want, (
                f"mesh {mesh_name}: a total of dtype {np.asarray(total).dtype}, expected {want} "
                "(jnp.sum's: 8- and 16-bit integers and bools widen to 32 bits)"
            )
        exact = _exact_total(x)
        if x.dtype.kind in "biu":
            with check:
                assert np.array_equal(np.asarray(total), exact), (
                    f"mesh {mesh_name}: not the exact integer sum of every element (an int32 "
                    f"sum stays in int32, a narrower one overflows; {fresh.where()})"
                )
        else:
            with check:
                np.testing.assert_allclose(
                    np.asarray(total, np.float64),
                    exact,
                    err_msg=f"mesh {mesh_name}: the sum of every element (a NaN in x makes "
                    f"it NaN, an inf inf, both infs NaN; {fresh.where()})",
                )
        # a replicated scalar: every device holds the total (small or exact integers: exact)
        _both_placements(
            kata.psum_total,
            mesh,
            sharded,
            total,
            f"mesh {mesh_name}",
            lambda _, exact=exact: exact,
            "all_reduce",
        )
        _other_values(
            kata.psum_total,
            mesh,
            x,
            sharded,
            compiled,
            f"mesh {mesh_name}",
            fresh,
            lambda a: _everywhere(_exact_total(a)),
        )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["psum_invariant"] + jaxpr["psum"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one psum (printed psum_invariant "
                f"with check_vma), got {dict(jaxpr)}"
            )
        op = _only(oracle.collectives_in(module), "all-reduce", f"mesh {mesh_name}")
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
def test_ring_shift(kata, fresh):
    for mesh_name, mesh, x, sharded in map_cases():
        shifted, module, jaxpr, compiled = _run(kata.ring_shift, mesh, sharded, f"mesh {mesh_name}")
        per_block = x.shape[0] // mesh.shape["x"]

        def blocks(a, r=per_block):
            """Position i along "x" holds block i of a's rows shifted one block down."""
            rolled = np.roll(a, r, axis=0)
            return lambda i: rolled[i * r : (i + 1) * r]

        rolled = np.roll(x, per_block, axis=0)
        with check:
            np.testing.assert_array_equal(
                np.asarray(shifted),
                rolled,
                err_msg=f"mesh {mesh_name}: block i along 'x' must arrive at position i+1, "
                "the last one at position 0",
            )
        # row-sharded again: position i along "x" holds block i of the shifted rows
        _both_placements(
            kata.ring_shift,
            mesh,
            sharded,
            shifted,
            f"mesh {mesh_name}",
            blocks(x),
            "collective_permute",
        )
        _other_values(
            kata.ring_shift, mesh, x, sharded, compiled, f"mesh {mesh_name}", fresh, blocks
        )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["ppermute"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one ppermute, got {dict(jaxpr)}"
            )
        op = _only(oracle.collectives_in(module), "collective-permute", f"mesh {mesh_name}")
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
def test_gather_rows(kata, fresh):
    for mesh_name, mesh, x, sharded in map_cases():
        gathered, module, jaxpr, compiled = _run(
            kata.gather_rows, mesh, sharded, f"mesh {mesh_name}"
        )
        with check:
            np.testing.assert_array_equal(
                np.asarray(gathered), x, err_msg=f"mesh {mesh_name}: every row, in order"
            )
        with check:
            assert gathered.sharding.is_fully_replicated, (
                f"mesh {mesh_name}: sharding {gathered.sharding}"
            )
        _both_placements(
            kata.gather_rows,
            mesh,
            sharded,
            gathered,
            f"mesh {mesh_name}",
            lambda _, x=x: x,
            "all_gather",
        )
        _other_values(
            kata.gather_rows,
            mesh,
            x,
            sharded,
            compiled,
            f"mesh {mesh_name}",
            fresh,
            _everywhere,
        )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["all_gather"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one all_gather, got {dict(jaxpr)}: "
                "write the collective yourself instead of asking the partitioner"
            )
        op = _only(oracle.collectives_in(module), "all-gather", f"mesh {mesh_name}")
        with check:  # tiled: (rows, cols); untiled: (blocks, rows per block, cols)
            assert (
                np.prod(oracle.static_dims(op.shape_info)) == x.size
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
def test_scatter_sum(kata, fresh):
    """The scatter cases, then int32 rows drawn every run whose sums float32 cannot hold."""
    for mesh_name, mesh, x, sharded in [*scatter_cases(), drawn_programs.int_scatter_case(fresh)]:
        n = mesh.shape["x"]
        got, module, jaxpr, compiled = _run(kata.scatter_sum, mesh, sharded, f"mesh {mesh_name}")

        def summed(a, n=n):
            """The exact element-wise sum of a's n row blocks, in a's dtype."""
            wide = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
            return a.reshape(n, a.shape[0] // n, a.shape[1]).sum(0, dtype=wide).astype(a.dtype)

        def slices(a, n=n):
            """Position i along "x" keeps slice i of the sum."""
            want = summed(a)
            r = want.shape[0] // n
            return lambda i: want[i * r : (i + 1) * r]

        want = summed(x)
        with check:
            assert got.dtype == x.dtype, (
                f"mesh {mesh_name}: result dtype {got.dtype}, the sum keeps x's dtype {x.dtype}"
            )
        with check:
            assert np.array_equal(np.asarray(got), want), (
                f"mesh {mesh_name}: not the exact element-wise sum of the {n} row blocks "
                f"({fresh.where()})"
            )
        piece = want.shape[0] // n
        # position i along "x" keeps slice i
        _both_placements(
            kata.scatter_sum,
            mesh,
            sharded,
            got,
            f"mesh {mesh_name}",
            slices(x),
            "reduce_scatter",
        )
        _other_values(
            kata.scatter_sum, mesh, x, sharded, compiled, f"mesh {mesh_name}", fresh, slices
        )
        with check:
            assert jaxpr["shard_map"] == 1 and jaxpr["reduce_scatter"] == 1, (
                f"mesh {mesh_name}: expected shard_map with one psum_scatter (printed "
                f"reduce_scatter), got {dict(jaxpr)}"
            )
        op = _only(
            oracle.collectives_in(module),
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
