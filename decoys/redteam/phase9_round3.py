"""Red-team (round 3) wrong answers for phase 9's pmap tasks, written from the contract only.

Tasks: predict_pmap_shapes, collective_groups, migrated_step (README "Inherited pmap code",
kata.py docstrings, tasks.toml, pmap_programs.py). Each function has the stub's signature and is
wrong per the contract on the input its `why` names; all were run on 8 CPU devices.
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

# ---- task 13: predict_pmap_shapes (predict) ------------------------------------------------------


@wrong(
    "predict_pmap_shapes",
    why="'a mapped argument keeps its mapped dimension, with size 1, in place': drops the mapped "
    "dimension as vmap's body sees it; wrong on shapes [(8, 2, 4)], in_axes [0] "
    "((1, 2, 4) expected, answers (2, 4))",
)
def pps_drops_mapped_dim(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    return [
        tuple(shape) if axis is None else tuple(d for i, d in enumerate(shape) if i != axis)
        for shape, axis in zip(shapes, in_axes)
    ]


@wrong(
    "predict_pmap_shapes",
    why="'keeps its mapped dimension, with size 1, IN PLACE': moves the size-1 dimension to the "
    "front (pmap's outputs stack on axis 0); wrong on shapes [(3, 8, 5)], in_axes [1] "
    "((3, 1, 5) expected, answers (1, 3, 5))",
)
def pps_mapped_dim_to_front(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    out = []
    for shape, axis in zip(shapes, in_axes):
        if axis is None:
            out.append(tuple(shape))
        else:
            rest = tuple(d for i, d in enumerate(shape) if i != axis)
            out.append((1, *rest))
    return out


@wrong(
    "predict_pmap_shapes",
    why="'every mapped dimension has the same size: the number of devices pmap runs on (1 to "
    "8)': splits the mapped dimension over jax.device_count() (8) devices like a sharded jit; "
    "wrong on a pmap over 4 devices, shapes [(4, 6)], in_axes [0] ((1, 6) expected, answers (0, 6))",
)
def pps_split_over_all_devices(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    devices = jax.device_count()
    out = []
    for shape, axis in zip(shapes, in_axes):
        dims = list(shape)
        if axis is not None:
            dims[axis] = dims[axis] // devices
        out.append(tuple(dims))
    return out


@wrong(
    "predict_pmap_shapes",
    why="'an argument with in_axes=None is whole on every device': splits an unmapped argument's "
    "first dimension too when it has the mapped size (taking every argument whose leading "
    "dimension equals the device count for batched); wrong on shapes [(8, 3), (8, 2)], in_axes "
    "[0, None] ((8, 2) expected for the second)",
)
def pps_guesses_batched_by_size(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    sizes = {shape[axis] for shape, axis in zip(shapes, in_axes) if axis is not None}
    n = sizes.pop() if len(sizes) == 1 else None
    out = []
    for shape, axis in zip(shapes, in_axes):
        dims = list(shape)
        if axis is not None:
            dims[axis] = 1
        elif n is not None and dims and dims[0] == n:
            dims[0] = 1
        out.append(tuple(dims))
    return out


# ---- task 14: collective_groups ------------------------------------------------------------------

rt9_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
rt9_IOTA = re.compile(r"^\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?$")
rt9_MESH = re.compile(r"^mesh\[(.*?)\]\s*\{(.*?)\}(?:\s*,?\s*device_ids=\((.*)\))?$")


def rt9_ints(text: str) -> list[int]:
    return [int(v) for v in re.findall(r"-?\d+", text)]


def rt9_iota(text: str, transpose=True) -> np.ndarray:
    found = rt9_IOTA.match(text.strip())
    shape = rt9_ints(found.group(1))
    dims = rt9_ints(found.group(2)) if found.group(2) else shape
    values = np.arange(int(np.prod(dims))).reshape(dims)
    if found.group(3) and transpose:
        values = values.transpose(rt9_ints(found.group(3)))
    return values.reshape(-1) if not found.group(2) else values.reshape(shape)


def rt9_groups(
    text: str | None,
    partitions: int,
    *,
    mesh_mode: str = "right",
    transpose: bool = True,
    device_ids: bool = True,
    empty_all: bool = True,
) -> tuple[tuple[int, ...], ...]:
    """Decode replica_groups; the keyword flags switch in one mistake each."""
    text = (text or "").strip()
    if text in ("", "{}"):
        return (tuple(range(partitions)),) if empty_all else ()
    if text.startswith("mesh["):
        found = rt9_MESH.match(text)
        axes = re.findall(r"'([^']*)'\s*=\s*(\d+)", found.group(1))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        named = re.findall(r"'([^']*)'", found.group(2))
        ids = np.arange(int(np.prod(sizes))).reshape(sizes)
        if found.group(3) and device_ids:
            ids = rt9_iota(found.group(3)).reshape(sizes)
        picked = [names.index(n) for n in named]
        if mesh_mode == "all":
            return (tuple(sorted(int(v) for v in ids.reshape(-1))),)
        if mesh_mode == "complement":
            picked = [i for i in range(len(names)) if i not in picked]
        rest = [i for i in range(len(names)) if i not in picked]
        moved = ids.transpose(rest + picked)
        size = int(np.prod([sizes[i] for i in picked])) if picked else 1
        groups = moved.reshape(-1, size)
    elif text.startswith("["):
        groups = rt9_iota(text, transpose=transpose)
    else:
        groups = [rt9_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])]
    return tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))


def rt9_collective_groups(
    hlo_text: str, *, entry_only=False, partitions=None, **mistake
) -> Counter:
    module = parse_hlo(hlo_text)
    n = partitions or int(module.attributes.get("num_partitions", 1))
    found: Counter = Counter()
    computations = [module.entry] if entry_only else module.computations
    for computation in computations:
        for ins in computation.instructions:
            if ins.opcode in rt9_COLLECTIVES:
                found[(ins.opcode, rt9_groups(ins.attribute("replica_groups"), n, **mistake))] += 1
    return found


@wrong(
    "collective_groups",
    why="'a group is the devices that differ only along the named axes': reads a mesh spelling "
    "as one group of every device whatever axes it names; wrong on the bank's shard_map on a "
    "2x4 mesh (psum over 'y': mesh['x'=2,'y'=4] {'y'} is two groups of 4, not one of 8)",
)
def cg_mesh_all_devices(hlo_text: str) -> Counter:
    return rt9_collective_groups(hlo_text, mesh_mode="all")


@wrong(
    "collective_groups",
    why="'the devices that differ only along the named axes': groups the devices that share "
    "the named axes' position (the other axes vary); wrong on the 2x4 shard_map bank program: "
    "{'y'} answered as {0,4},{1,5},{2,6},{3,7} instead of {0,1,2,3},{4,5,6,7}",
)
def cg_mesh_complement(hlo_text: str) -> Counter:
    return rt9_collective_groups(hlo_text, mesh_mode="complement")


@wrong(
    "collective_groups",
    why="'[4,2]<=[2,4]T(1,0) (arange(8) reshaped to [2,4], transposed by (1,0)...)': ignores the "
    "T(...) permutation and reshapes arange directly; wrong on a module printing "
    "replica_groups=[4,2]<=[2,4]T(1,0) ({0,1},{2,3}... instead of {0,4},{1,5}...)",
)
def cg_iota_no_transpose(hlo_text: str) -> Counter:
    return rt9_collective_groups(hlo_text, transpose=False)


@wrong(
    "collective_groups",
    why="'optionally with device_ids=(...) (an iota list giving the device number at each mesh "
    "position)': ignores device_ids and numbers the mesh row-major; wrong on a 2x4 shard_map "
    "module whose groups are rewritten mesh['axis_0'=2,'axis_1'=4] {'axis_0'}, "
    "device_ids=([2,4]T(1,0)) (0.10.2's spelling on the ('y', 'x') mesh): (0,2),(1,3),(4,6),(5,7) "
    "expected, (0,4),(1,5),(2,6),(3,7) answered",
)
def cg_ignores_device_ids(hlo_text: str) -> Counter:
    return rt9_collective_groups(hlo_text, device_ids=False)


@wrong(
    "collective_groups",
    why="'an empty {} or no replica_groups at all: one group of all num_partitions devices': "
    "uses jax.device_count() (8) instead of num_partitions; wrong on the bank's pmap over 4 "
    "devices with its groups rewritten to {} (num_partitions=4: one group (0,1,2,3))",
)
def cg_empty_is_all_eight(hlo_text: str) -> Counter:
    return rt9_collective_groups(hlo_text, partitions=jax.device_count())


@wrong(
    "collective_groups",
    why="'in any computation': scans ENTRY only; wrong on a shard_map whose psum runs inside a "
    "lax.fori_loop (the all-reduce sits in the while body) or a collective in a called "
    "computation",
)
def cg_entry_only(hlo_text: str) -> Counter:
    return rt9_collective_groups(hlo_text, entry_only=True)


# ---- task 15: migrated_step ----------------------------------------------------------------------

rt9_RATE = 0.05


def rt9_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="'the values run_inherited gives': the migration trap, pmap's body moved into "
    "shard_map as is (check_vma=True, w in P()): grad comes back summed over 'x' and pmean "
    "changes nothing, so the step is n times too large; wrong on every mesh with n > 1 "
    "(2x4: ratio 2)",
)
def ms_trap_pmean(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    def body(w, x, y):
        loss, grad = jax.value_and_grad(rt9_loss)(w, x, y)
        return w - rt9_RATE * jax.lax.pmean(grad, "x"), jax.lax.pmean(loss, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))(
        w, x, y
    )


@wrong(
    "migrated_step",
    why="'n = mesh.shape[\"x\"]': fixes the trap by dividing the summed gradient by the number "
    "of devices (mesh.size) instead of the length of 'x'; right on the (8,) mesh, wrong on "
    "2x4, 4x2 and the ('y', 'x') mesh (the step is 4x or 2x too small)",
)
def ms_divides_by_mesh_size(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    def body(w, x, y):
        loss, grad = jax.value_and_grad(rt9_loss)(w, x, y)
        return w - rt9_RATE * grad / mesh.size, jax.lax.pmean(loss, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))(
        w, x, y
    )


@wrong(
    "migrated_step",
    why="'each device must receive only its own rows of x and y, and the collectives may move "
    "no more bytes than the inherited pmap program': gathers the whole batch onto every device "
    "(with_sharding_constraint to replicated) and takes the whole-batch step there; values "
    "right, but an all-gather of x and y per device on every mesh",
)
def ms_gathers_batch(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    everywhere = NamedSharding(mesh, P())
    x = jax.lax.with_sharding_constraint(x, everywhere)
    y = jax.lax.with_sharding_constraint(y, everywhere)
    loss, grad = jax.value_and_grad(rt9_loss)(w, x, y)
    new_w = jax.lax.with_sharding_constraint(w - rt9_RATE * grad, everywhere)
    return new_w, jax.lax.with_sharding_constraint(loss, everywhere)


@wrong(
    "migrated_step",
    why="'(new w, loss) ... the values run_inherited gives each device': with check_vma=False "
    "and no pmean (assuming shard_map averages for you) each device steps with its own block's "
    "gradient and loss, and out_specs=P() hands back device 0's; wrong on every mesh with n > 1",
)
def ms_no_pmean(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    def body(w, x, y):
        loss, grad = jax.value_and_grad(rt9_loss)(w, x, y)
        return w - rt9_RATE * grad, loss

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()), check_vma=False
    )(w, x, y)


@wrong(
    "migrated_step",
    why="'(new w, loss): ... one copy, not one per device, shapes (features, outputs) and ()': "
    "keeps pmap's output convention, one copy per device stacked along 'x' "
    "(out_specs=P('x')), shapes (n, features, outputs) and (n,); wrong on every mesh",
)
def ms_one_copy_per_device(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    def body(w, x, y):
        loss, grad = jax.value_and_grad(rt9_loss)(w, x, y)
        new_w = w - rt9_RATE * jax.lax.pmean(grad, "x")
        return new_w[None], jax.lax.pmean(loss, "x")[None]

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P("x"), P("x")), check_vma=False
    )(w, x, y)
