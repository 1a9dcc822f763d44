"""The programs phase 9's tests shard and compile, and what `katas show` compiles per task.

Meshes over the 8 CPU devices (1-D, 2-D, and one whose axis "x" is the minor one), the arrays
put on them, the bank of programs whose collectives the census task counts, the bank of programs
whose parameters the HLO-reading tasks read, and the cases the shard_map tasks run on. The cases
of predict_collectives are in collective_programs.py.

Nothing here touches a device at import: meshes and arrays are made on first use, after the
harness (or `katas show`) has set the CPU device count.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.programs import Recipe

ROWS, COLS = 16, 8

# What jax raises when traced code asks for the values of an array (np.asarray, float(), int(),
# an `if` on it): under jax.jit they do not exist yet. The tests that compile a task turn these
# into a failure that names the case (the task read its input on the host).
NEEDS_VALUES = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
)


# Meshes the tasks run on: (shape, axis names). "x" is 8, 2, 4 and 4 (minor) devices long.
MESHES = {
    "8": ((8,), ("x",)),
    "2x4": ((2, 4), ("x", "y")),
    "4x2": ((4, 2), ("x", "y")),
    "y2x4": ((2, 4), ("y", "x")),
}


@cache
def mesh_named(name: str = "8"):
    shape, names = MESHES[name]
    return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape))


def put(value, *spec, mesh: str = "8"):
    return jax.device_put(value, NamedSharding(mesh_named(mesh), P(*spec)))


def arange_rows() -> np.ndarray:
    return np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)


def small_ints(shape, dtype, seed=0) -> np.ndarray:
    """Small integers (exact in every dtype, so sums do not depend on their order)."""
    return np.random.default_rng(seed).integers(-8, 9, size=shape).astype(dtype)


# (mesh, shape, dtype): "x" of 8, 2, 4 and 4 (the minor axis); odd and single columns.
ROW_CASES = [
    ("8", (16, 8), np.float32),
    ("y2x4", (8, 1), np.float16),
    ("2x4", (6, 5), np.int32),
    ("4x2", (4, 3), jnp.bfloat16),
]


def replicate(a):
    return jax.lax.with_sharding_constraint(a * 2, NamedSharding(mesh_named(), P()))


def sum_in_loop(a):  # each step sums over the sharded rows: one all-reduce in the while body
    return jax.lax.fori_loop(0, 3, lambda i, c: c + (a * c).sum(0), jnp.ones(COLS))


def to_columns(a):  # rows split -> columns split: the partitioner answers with all-to-all
    return jax.lax.with_sharding_constraint(a * 2, NamedSharding(mesh_named(), P(None, "x")))


def two_hops_and_sum(a):  # shard_map collectives are named after JAX's primitives
    mesh = mesh_named("4x2")
    ring = [(i, (i + 1) % mesh.shape["x"]) for i in range(mesh.shape["x"])]

    def local(block):
        moved = jax.lax.ppermute(jax.lax.ppermute(block, "x", ring) * 2, "x", ring)
        return moved + jax.lax.psum(block.sum(), "x")

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(a)


def contract_and_gather(a, b):
    """A contraction over a sharded dimension on a 2-D mesh, then a gather."""
    product = a @ b
    return jax.lax.with_sharding_constraint(product, NamedSharding(mesh_named("2x4"), P()))


def census_bank():
    """(name, function, args, collectives the compiled module has, as a fact)."""
    x = put(arange_rows(), "x", None)
    return [
        ("replicated output", replicate, (x,), {"all-gather": 1}),
        ("reshard rows to columns", to_columns, (x,), {"all-to-all": 1}),
        ("all-reduce in a while body", sum_in_loop, (x,), {"all-reduce": 1}),
        (
            "two ppermutes and a psum in shard_map",
            two_hops_and_sum,
            (put(small_ints((8, 3), np.float32), "x", None, mesh="4x2"),),
            {"collective-permute": 2, "all-reduce": 1},
        ),
        (
            "2-D mesh contraction and gather",
            contract_and_gather,
            (
                put(small_ints((4, 8), np.float32), None, "y", mesh="2x4"),
                put(small_ints((8, 6), np.float32), "y", None, mesh="2x4"),
            ),
            None,
        ),
    ]


def four_dtypes(a, b, c, d):  # uses d first, so the HLO prints parameter(3) first
    return d.astype(jnp.float32).sum() * c, a @ b.astype(jnp.float32)


def skips_one(a, unused, c, s):  # `unused` is dropped: parameter(1) is c
    return c.sum(0) * s, a.T


def three(a, w, z):
    return a @ w, z * 2


def three_unused(a, w, z):
    return a @ w


def param_bank():
    """(name, function, args, which args jit keeps): out-of-order, unused, 2-D meshes, dtypes."""
    return [
        (
            "1-D mesh, three arguments",
            three,
            (
                put(arange_rows(), "x", None),
                put(np.ones((COLS, 4), np.float32)),
                put(np.ones((4, ROWS), np.float32), None, "x"),
            ),
            (0, 1, 2),
        ),
        (
            "1-D mesh, z never read",
            three_unused,
            (
                put(arange_rows(), "x", None),
                put(np.ones((COLS, 4), np.float32)),
                put(np.ones((4, ROWS), np.float32), None, "x"),
            ),
            (0, 1),
        ),
        (
            "2x4 mesh, four dtypes, printed out of order",
            four_dtypes,
            (
                put(np.ones((16, 6), np.float32), "x", None, mesh="2x4"),
                put(np.ones((6, 8), np.int32), None, "y", mesh="2x4"),
                put(np.float32(2), mesh="2x4"),
                put(np.ones((4, 8), jnp.bfloat16), "y", "x", mesh="2x4"),
            ),
            (0, 1, 2, 3),
        ),
        (
            "4x2 mesh, an unused argument, printed out of order",
            skips_one,
            (
                put(np.ones((8, 5), np.float32), "x", None, mesh="4x2"),
                put(np.ones((3, 4), np.float16), None, "y", mesh="4x2"),
                put(np.ones((6, 16), np.int32), None, ("y", "x"), mesh="4x2"),
                put(np.float32(2), mesh="4x2"),
            ),
            (0, 2, 3),
        ),
    ]


def two_layer(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


# (mesh, batch, features, hidden, out): hidden and out differ; hidden and features divide by
# the length of "x" (8, 2 and 4). Not the "y2x4" mesh: with jax 0.10 its first placement
# compiles to an all-to-all whose `device_ids` attribute xla_inspect's parser does not read.
PLACEMENT_CASES = [
    ("8", 4, 16, 64, 24),
    ("2x4", 6, 8, 32, 8),
    ("4x2", 5, 8, 40, 12),
]


def placement_arrays(number: int):
    """x, w1, w2 as NumPy arrays for PLACEMENT_CASES[number]."""
    _, batch, features, hidden, out = PLACEMENT_CASES[number]
    rng = np.random.default_rng(number)
    return (
        rng.normal(size=(batch, features)).astype(np.float32),
        rng.normal(size=(features, hidden)).astype(np.float32) / 4,
        rng.normal(size=(hidden, out)).astype(np.float32) / 8,
    )


def first_placement(w1, w2, mesh):
    """The placement to improve: both weights split by rows over "x"."""
    row_split = NamedSharding(mesh, P("x", None))
    return jax.device_put(w1, row_split), jax.device_put(w2, row_split)


def run_placed(mesh, x, w1, w2):
    """jit(two_layer) on x replicated and the placed weights, its result replicated."""
    replicated = NamedSharding(mesh, P())
    return jax.jit(two_layer, out_shardings=replicated).lower(jax.device_put(x, replicated), w1, w2)


# (mesh, rows per position along "x", columns, dtype)
MAP_CASES = [("8", 2, 8, np.float32), ("2x4", 3, 5, np.int32), ("y2x4", 1, 1, np.float32)]


def map_cases(rows_per_block=None):
    """(mesh name, mesh, NumPy x, x put row-sharded on the mesh)."""
    for number, (mesh_name, per, cols, dtype) in enumerate(MAP_CASES):
        mesh = mesh_named(mesh_name)
        per = rows_per_block(mesh) if rows_per_block else per
        x = small_ints((per * mesh.shape["x"], cols), dtype, number)
        yield mesh_name, mesh, x, put(x, "x", None, mesh=mesh_name)


def scatter_cases():
    # every block of rows must split again into one piece per position along "x"
    return map_cases(lambda mesh: mesh.shape["x"] * (2 if mesh.shape["x"] < 8 else 1))


def _bank(bank, index: int, about: str) -> Recipe:
    return Recipe(lambda _module: tuple(bank()[index][1:3]), about, given=True)


def _collective(task: str, rows: int, cases=map_cases) -> Recipe:
    """The task on the first shard_map case: mesh "8", `rows` rows of MAP_CASES[0]'s columns."""

    def build(module):
        _, mesh, _, sharded = next(cases())
        return (lambda a: getattr(module, task)(a, mesh)), (sharded,)

    return Recipe(build, f"{task}(x, mesh): x f32[{rows},{MAP_CASES[0][2]}] rows over mesh x=8")


SHOWN = {
    "collective_census": _bank(
        census_bank, 2, "a fori_loop summing over rows split 8 ways: an all-reduce in the body"
    ),
    "device_param_shapes": _bank(
        param_bank, 0, "(a @ w, z * 2): a rows over 8 devices, w replicated, z columns over 8"
    ),
    "param_shardings": _bank(
        param_bank,
        2,
        "a 2x4 mesh, four dtypes, parameters printed out of order (look at --stage hlo)",
    ),
    "psum_total": _collective("psum_total", 16),
    "ring_shift": _collective("ring_shift", 16),
    "gather_rows": _collective("gather_rows", 16),
    "scatter_sum": _collective("scatter_sum", 64, scatter_cases),
}


# (global shape, PartitionSpec, mesh shape as {axis name: size}): what one device holds of an
# f32 array placed with that spec on that mesh. Meshes of 1-D, 2-D, swapped axes and an axis of
# size 1; specs with trailing dimensions left out, tuples of axes, a scalar; and splits where a
# dimension does not divide by the axes it is split over.
SHARD_SHAPE_CASES = [
    ((16, 8), P("x"), {"x": 8}),
    ((16, 8), P(None, "x"), {"x": 8}),
    ((16, 8), P("x", "y"), {"x": 2, "y": 4}),
    ((16, 8), P("y", "x"), {"x": 2, "y": 4}),
    ((8, 3), P(("x", "y")), {"x": 2, "y": 4}),
    ((4, 8), P(None, ("y", "x")), {"x": 2, "y": 4}),
    ((3, 8, 4), P(None, "y", "x"), {"x": 4, "y": 2}),
    ((6, 5), P("x"), {"y": 4, "x": 2}),
    ((12,), P("y"), {"x": 2, "y": 4}),
    ((8, 1), P("x", "y"), {"x": 8, "y": 1}),
    ((), P(), {"x": 8}),
    ((10, 8), P("x"), {"x": 8}),
    ((6, 5), P(None, "x"), {"x": 2, "y": 4}),
    ((12, 4), P(("x", "y")), {"x": 2, "y": 4}),
]

# Placements jax refuses for a reason other than an uneven split: a spec longer than the shape,
# a mesh axis named twice, an axis the mesh does not have. Every dimension divides evenly.
REFUSED_SHARD_CASES = [
    ((16,), P("x", "y"), {"x": 2, "y": 4}),
    ((), P("x"), {"x": 8}),
    ((16, 8), P("x", None, None), {"x": 8}),
    ((16, 8), P("x", "x"), {"x": 2, "y": 4}),
    ((16, 8), P(("y", "x"), "x"), {"x": 2, "y": 4}),
    ((16, 8), P("z"), {"x": 2, "y": 4}),
]


@cache
def mesh_of(axes: tuple[tuple[str, int], ...], axis_types: tuple[AxisType, ...] | None = None):
    """A mesh over the 8 devices with these (name, size) axes, in this order; Auto axes unless
    axis_types are given."""
    names = tuple(name for name, _ in axes)
    return jax.make_mesh(
        tuple(size for _, size in axes),
        names,
        axis_types=axis_types or (AxisType.Auto,) * len(axes),
    )
