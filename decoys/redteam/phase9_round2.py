"""Red-team (round 2) wrong answers for phase 9, written from the contract only."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_R2_COLLECTIVE_OPS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)

# The base rule each wrong answer below bends in one place. The red team wrote these answers as
# tables for the task's first contract (a fixed bank); when the task came to take one case at a
# time, each table was carried over as the same rule with the same one misconception.


def _r2_splits(spec):
    return [len(spec) > d and spec[d] is not None for d in (0, 1)]


def _r2_collectives(case, *, softmax=2, reverse_moves=True, move="all-to-all", contract=True):
    split = _r2_splits(case.specs[0])
    counts = Counter()
    result = list(split)
    if case.op == "sum":
        counts["all-reduce"] += sum(split)
        result = []
    elif case.op in ("sum0", "sum1"):
        counts["all-reduce"] += split[int(case.op[-1])]
        result = [split[1 - int(case.op[-1])]]
    elif case.op in ("softmax0", "softmax1"):
        counts["all-reduce"] += softmax * split[int(case.op[-1])]
    elif case.op in ("reverse0", "reverse1"):
        counts["collective-permute"] += int(reverse_moves and split[int(case.op[-1])])
    elif case.op == "transpose":
        result = split[::-1]
    elif case.op == "matmul":
        counts["all-reduce"] += int(contract and split[1])
        result = [split[0], False]
    elif case.op == "add" and _r2_splits(case.specs[1]) != split:
        counts[move] += 1
    replicated = case.out is not None and not any(_r2_splits(case.out))
    if case.out is not None and not replicated and _r2_splits(case.out) != result:
        counts[move] += 1
        result = _r2_splits(case.out)
    if replicated:
        counts["all-gather"] += sum(result)
    return {opcode: int(n) for opcode, n in counts.items() if n}


# ---------------------------------------------------------------- predict_collectives


@wrong(
    "predict_collectives",
    why="'How many separate reductions over the split dimension does softmax need?': one (the "
    "sum); wrong on 'softmax over axis 0, x row-split' ({'all-reduce': 1}, XLA inserts 2: the "
    "max and the sum)",
)
def r2_softmax_one_reduction(case) -> dict[str, int]:
    return _r2_collectives(case, softmax=1)


@wrong(
    "predict_collectives",
    why="'can it compute that slice from its own data alone?': thinks reversing rows is local "
    "(each device reverses its block); wrong on 'x[::-1], x row-split' ({}, XLA inserts a "
    "collective-permute: block i must move to position n-1-i)",
)
def r2_reverse_is_local(case) -> dict[str, int]:
    return _r2_collectives(case, reverse_moves=False)


@wrong(
    "predict_collectives",
    why="'a change of which dimension is split' is all-to-all: predicts the partitioner "
    "gathers y whole; wrong on 'x + y, x row-split, y column-split' ({'all-gather': 1}, XLA "
    "inserts {'all-to-all': 1})",
)
def r2_mismatch_gathers(case) -> dict[str, int]:
    return _r2_collectives(case, move="all-gather")


@wrong(
    "predict_collectives",
    why="'a sum over a sharded dimension (also a matmul contracting a sharded dimension) -> "
    "all-reduce': thinks a contraction with both operands split along it is local; wrong on "
    "'x @ w, x column-split, w row-split' ({}, XLA inserts {'all-reduce': 1})",
)
def r2_matched_contraction_local(case) -> dict[str, int]:
    return _r2_collectives(case, contract=False)


# ---------------------------------------------------------------- predict_shard_shape


def _r2_pieces(entry, mesh_shape):
    names = entry if isinstance(entry, tuple) else (entry,)
    return names, math.prod(mesh_shape[n] for n in names)


@wrong(
    "predict_shard_shape",
    why="'jax does not pad an uneven split ... refused': rounds up like a padded split; wrong "
    "on ((10, 8), P('x'), {'x': 8}) ((2, 8) instead of None)",
)
def r2_shard_shape_pads(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    used: list[str] = []
    out = list(shape)
    for dim, entry in enumerate(entries):
        if entry is None:
            continue
        names, pieces = (
            _r2_pieces(entry, mesh_shape)
            if all(n in mesh_shape for n in (entry if isinstance(entry, tuple) else (entry,)))
            else ((), 0)
        )
        if not pieces or any(n in used for n in names):
            return None
        used += names
        out[dim] = -(-shape[dim] // pieces)
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a spec with more entries than the shape has dimensions' is refused: thinks trailing "
    "None entries are harmless; wrong on ((16, 8), P('x', None, None), {'x': 8}) ((2, 8) "
    "instead of None)",
)
def r2_shard_shape_trailing_none(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    entries = list(spec)
    while len(entries) > len(shape) and entries[-1] is None:
        entries.pop()
    if len(entries) > len(shape):
        return None
    used: list[str] = []
    out = list(shape)
    for dim, entry in enumerate(entries):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        if any(n not in mesh_shape or n in used for n in names):
            return None
        used += names
        pieces = math.prod(mesh_shape[n] for n in names)
        if shape[dim] % pieces:
            return None
        out[dim] = shape[dim] // pieces
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a mesh axis named twice (in one entry or two)' is refused: checks repeats inside one "
    "entry only; wrong on ((16, 8), P(('y', 'x'), 'x'), {'x': 2, 'y': 4}) ((2, 4) instead of "
    "None) and P('x', 'x')",
)
def r2_shard_shape_repeat_per_entry(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    out = list(shape)
    for dim, entry in enumerate(entries):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        if len(set(names)) != len(names) or any(n not in mesh_shape for n in names):
            return None
        pieces = math.prod(mesh_shape[n] for n in names)
        if shape[dim] % pieces:
            return None
        out[dim] = shape[dim] // pieces
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'an axis that is not in mesh_shape' is refused: treats an unknown axis as size 1 "
    "(mesh_shape.get(name, 1)); wrong on ((16, 8), P('z'), {'x': 2, 'y': 4}) ((16, 8) instead "
    "of None)",
)
def r2_shard_shape_unknown_axis_one(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    used: list[str] = []
    out = list(shape)
    for dim, entry in enumerate(entries):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        if any(n in used for n in names):
            return None
        used += names
        pieces = math.prod(mesh_shape.get(n, 1) for n in names)
        if shape[dim] % pieces:
            return None
        out[dim] = shape[dim] // pieces
    return tuple(out)


# ---------------------------------------------------------------- place_weights


@wrong(
    "place_weights",
    why="'each device may hold at most 1/n of each weight': splits w1 by columns (no "
    "communication for the first matmul) but leaves w2 replicated; wrong on every "
    "PLACEMENT_CASE (each device holds all of w2)",
)
def r2_w2_replicated(w1, w2, mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P())),
    )


@wrong(
    "place_weights",
    why="'Return w1 and w2 with their values and dtypes unchanged': halves the collective bytes "
    "of the row-split placement by storing the weights in bfloat16; wrong on every "
    "PLACEMENT_CASE (dtype bfloat16, values rounded)",
)
def r2_weights_in_bf16(w1, w2, mesh):
    row_split = NamedSharding(mesh, P("x", None))
    return (
        jax.device_put(jnp.asarray(w1, jnp.bfloat16), NamedSharding(mesh, P(None, "x"))),
        jax.device_put(jnp.asarray(w2, jnp.bfloat16), row_split),
    )


# ---------------------------------------------------------------- device_param_shapes


@wrong(
    "device_param_shapes",
    why="'in parameter-number order ... which is not always the order the text prints them "
    "in': lists ENTRY parameters as printed; wrong on four_dtypes on the 2x4 mesh "
    "(parameter(3) is printed first)",
)
def r2_param_shapes_printed_order(f, *args) -> list[tuple[int, ...]]:
    text = jax.jit(f).lower(*args).compile().as_text()
    entry = parse_hlo(text).entry
    return [
        tuple(int(d) for d in i.shape_info.dims)
        for i in entry.instructions
        if i.opcode == "parameter"
    ]


@wrong(
    "device_param_shapes",
    why="'An argument the function never reads is not a parameter ... read the module, not "
    "the inputs': derives each argument's per-device shape from its sharding; wrong on "
    "three_unused (3 shapes where the module has 2 parameters)",
)
def r2_param_shapes_from_inputs(f, *args) -> list[tuple[int, ...]]:
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


# ---------------------------------------------------------------- param_shardings


@wrong(
    "param_shardings",
    why="'in parameter-number order ... not always the printed order': reads the unoptimized "
    "ENTRY's parameters as printed; wrong on skips_one / four_dtypes (parameter(3) printed "
    "first)",
)
def r2_shardings_printed_order(f, *args) -> list[str]:
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    return [
        i.attribute("sharding") or ""
        for i in parse_hlo(text).entry.instructions
        if i.opcode == "parameter"
    ]


@wrong(
    "param_shardings",
    why="'the sharding={...} annotation text of each ENTRY parameter': builds the text from the "
    "PartitionSpec with the 1-D-mesh formula ({devices=[n,1]<=[n]} / {replicated}); wrong on "
    "the 2x4 mesh where copies along 'y' print last_tile_dim_replicate",
)
def r2_shardings_from_specs(f, *args) -> list[str]:
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    entry = parse_hlo(text).entry
    kept = sorted(int(i.payload) for i in entry.instructions if i.opcode == "parameter")
    # the kept arguments, assuming jit drops trailing unused ones first
    out = []
    for a in args[: len(kept)]:
        spec = tuple(a.sharding.spec)
        total = a.sharding.mesh.size
        tiles = [
            1
            if entry_ is None
            else math.prod(
                a.sharding.mesh.shape[n]
                for n in (entry_ if isinstance(entry_, tuple) else (entry_,))
            )
            for entry_ in spec
        ] + [1] * (a.ndim - len(spec))
        if math.prod(tiles) == 1:
            out.append("{replicated}")
        else:
            out.append("{devices=[" + ",".join(map(str, tiles)) + f"]<=[{total}]}}")
    return out


# ---------------------------------------------------------------- collective_census


@wrong(
    "collective_census",
    why="'in every computation of the optimized HLO (loop bodies too)': counts ENTRY only; "
    "wrong on sum_in_loop (the all-reduce sits in the while body: Counter() instead of "
    "{'all-reduce': 1})",
)
def r2_census_entry_only(f, *args) -> Counter:
    entry = parse_hlo(jax.jit(f).lower(*args).compile().as_text()).entry
    return Counter(i.opcode for i in entry.instructions if i.opcode in _R2_COLLECTIVE_OPS)


@wrong(
    "collective_census",
    why="'by opcode: instructions from shard_map are named after JAX's primitives': counts "
    "instruction names; wrong on two_hops_and_sum (%ppermute.N / %psum.N are not counted as "
    "collective-permute / all-reduce)",
)
def r2_census_by_name(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    found = Counter()
    for name in re.findall(r"%([a-z\-]+)[.\d]* = ", text):
        if name in _R2_COLLECTIVE_OPS:
            found[name] += 1
    return found


# ---------------------------------------------------------------- shard_map tasks


@wrong(
    "shard_rows",
    why="'rows split across mesh axis \"x\"': splits over the mesh's first axis; wrong on the "
    "('y', 'x') mesh (rows split 2 ways along 'y' instead of 4 along 'x')",
)
def r2_rows_over_first_axis(x, mesh) -> jax.Array:
    return jax.device_put(x, NamedSharding(mesh, P(mesh.axis_names[0], None)))


@wrong(
    "psum_total",
    why='\'one psum of that single number over "x" only (the copies along the other axis ... '
    "must not be added again)': psums over every mesh axis (check_vma off to silence the refusal); wrong on the 2x4 mesh "
    "(4x the sum)",
)
def r2_psum_all_axes(x, mesh) -> jax.Array:
    def local(block):
        return jax.lax.psum(block.sum(), mesh.axis_names)

    # the vma check refuses a psum over "y" of a value that does not vary along "y": switched off
    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


@wrong(
    "ring_shift",
    why="'position i along mesh axis \"x\" to position i + 1': takes the ring length from the "
    "mesh's first axis; wrong on the ('y', 'x') mesh (x has 4 positions, pairs for 2: positions "
    "2 and 3 receive zeros)",
)
def r2_ring_first_axis_length(x, mesh) -> jax.Array:
    n = mesh.devices.shape[0]
    pairs = [(i, (i + 1) % n) for i in range(n)]

    def local(block):
        return jax.lax.ppermute(block, "x", pairs)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "scatter_sum",
    why="'One collective does the reducing and the scattering': psum then keeps its own slice "
    "(all-reduce + dynamic-slice, n times the bytes); right values, wrong collective "
    "(no reduce-scatter in the HLO) on every MAP_CASE",
)
def r2_psum_then_slice(x, mesh) -> jax.Array:
    n = mesh.shape["x"]

    def local(block):
        total = jax.lax.psum(block, "x")
        size = total.shape[0] // n
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("x") * size, size)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "gather_rows",
    why="'One all_gather over mesh axis \"x\" inside shard_map (not a replicated out_sharding)': "
    "lets the partitioner gather; right values, no shard_map all_gather in the jaxpr",
)
def r2_gather_by_out_sharding(x, mesh) -> jax.Array:
    return jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))(x)
