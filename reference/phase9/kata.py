"""Phase 9 reference: sharding and collectives on 8 CPU devices."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from xla_inspect.parse import parse_hlo

COLLECTIVES = frozenset(
    {"all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"}
)


def _parameters(module):
    # ENTRY parameters by their number `parameter(N)`: the text prints them in schedule order.
    params = [i for i in module.entry if i.opcode == "parameter"]
    return sorted(params, key=lambda i: int(i.payload))


def _compiled_module(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return parse_hlo(text)


def auto_mesh() -> Mesh:
    # Auto axes let XLA's sharding propagation decide intermediate shardings (Explicit is default).
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def shard_rows(x, mesh: Mesh) -> jax.Array:
    # P("x", None): dimension 0 split over mesh axis "x", dimension 1 whole on every device.
    return jax.device_put(x, NamedSharding(mesh, P("x", None)))


def collective_census(f, *args) -> Counter:
    # Collectives exist only after SPMD partitioning, i.e. in the compiled module.
    module = _compiled_module(f, *args)
    return Counter(i.opcode for c in module for i in c if i.opcode in COLLECTIVES)


def device_param_shapes(f, *args) -> list[tuple[int, ...]]:
    # The partitioned ENTRY takes one device's shard: global shape divided by the mesh axis.
    module = _compiled_module(f, *args)
    return [tuple(i.shape_info.dims) for i in _parameters(module)]


def param_shardings(f, *args) -> list[str]:
    # Before partitioning, each parameter carries its sharding; afterwards shapes say it.
    module = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo"))
    return [i.attribute("sharding") for i in _parameters(module)]


def psum_total(x, mesh: Mesh) -> jax.Array:
    # Local sum per device, then one all-reduce; the jaxpr shows psum as psum_invariant.
    def local(block):
        return jax.lax.psum(block.sum(), "x")

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P())(x)


def ring_shift(x, mesh: Mesh) -> jax.Array:
    # ppermute sends whole blocks point to point: a collective-permute.
    n = mesh.shape["x"]
    pairs = [(i, (i + 1) % n) for i in range(n)]

    def local(block):
        return jax.lax.ppermute(block, "x", pairs)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


def gather_rows(x, mesh: Mesh) -> jax.Array:
    # all_gather's result is the same everywhere, but check_vma cannot prove it: turn it off.
    def local(block):
        return jax.lax.all_gather(block, "x", tiled=True)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


def scatter_sum(x, mesh: Mesh) -> jax.Array:
    # psum_scatter = reduce-scatter: the sum is computed once, in pieces, one per device.
    def local(block):
        return jax.lax.psum_scatter(block, "x", tiled=True)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


def _split(spec, mesh) -> list[bool]:
    """Whether each of the two dimensions is split: its entry names mesh axes whose sizes
    multiply to more than 1 (an axis of size 1 cuts nothing)."""
    sizes = dict(mesh)
    entries = [spec[d] if len(spec) > d else None for d in (0, 1)]
    axes = [() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in entries]
    return [math.prod(sizes[a] for a in names) > 1 for names in axes]


def predict_collectives(case) -> dict[str, int]:
    # A reduction over a split dimension is one all-reduce per split dimension it reduces
    # (softmax reduces twice: max and sum; a matmul reduces its contracted dimension); a
    # reversal along a split dimension is a collective-permute (blocks change places); moving
    # a split to the other dimension is an all-to-all; a replicated result is one all-gather
    # per dimension of the result that is still split. Everything else stays on its device.
    split = _split(case.specs[0], case.mesh)
    counts = Counter()
    result = list(split)  # which dimensions of the result are split
    if case.op == "sum":
        counts["all-reduce"] += sum(split)
        result = []
    elif case.op in ("sum0", "sum1"):
        reduced = int(case.op[-1])
        counts["all-reduce"] += split[reduced]
        result = [split[1 - reduced]]
    elif case.op in ("softmax0", "softmax1"):
        counts["all-reduce"] += 2 * split[int(case.op[-1])]
    elif case.op in ("reverse0", "reverse1"):
        counts["collective-permute"] += split[int(case.op[-1])]
    elif case.op == "transpose":
        result = split[::-1]
    elif case.op == "matmul":
        counts["all-reduce"] += split[1]
        result = [split[0], False]
    elif case.op == "add" and _split(case.specs[1], case.mesh) != split:
        counts["all-to-all"] += 1
    replicated = case.out is not None and not any(_split(case.out, case.mesh))
    if case.out is not None and not replicated and _split(case.out, case.mesh) != result:
        counts["all-to-all"] += 1
        result = _split(case.out, case.mesh)
    if replicated:
        counts["all-gather"] += sum(result)
    return {opcode: n for opcode, n in counts.items() if n}


def place_weights(w1, w2, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # Column-split w1: each device computes its own slice of the hidden layer from the whole x,
    # and relu is elementwise. Row-split w2 to match: each device multiplies its hidden slice
    # by its rows of w2, and one all-reduce of the (batch, out) result remains.
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", None))),
    )


def predict_shard_shape(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    # Each dimension is divided by the product of the sizes of the mesh axes its spec entry
    # names (None or a missing entry: whole); jax refuses a split that does not divide evenly,
    # a spec longer than the shape, a mesh axis named twice and an axis the mesh does not have.
    if len(spec) > len(shape):
        return None
    named = [
        axis
        for entry in spec
        for axis in (() if entry is None else (entry,) if isinstance(entry, str) else entry)
    ]
    if len(set(named)) < len(named) or not set(named) <= set(mesh_shape):
        return None
    per_device = []
    for number, size in enumerate(shape):
        entry = spec[number] if number < len(spec) else None
        axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        pieces = math.prod(mesh_shape[axis] for axis in axes)
        if size % pieces:
            return None
        per_device.append(size // pieces)
    return tuple(per_device)


def predict_pmap_shapes(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    # pmap compiles through shard_map: a mapped dimension is split into one slice per device
    # and stays in the per-device program with size 1; an unmapped argument is whole.
    return [
        tuple(shape) if axis is None else (*shape[:axis], 1, *shape[axis + 1 :])
        for shape, axis in zip(shapes, in_axes, strict=True)
    ]


_GROUPED = frozenset({"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})


def _iota(text: str) -> np.ndarray:
    # `[d0,d1,..]<=[r0,r1,..]T(p..)`: arange reshaped to r, transposed by p, reshaped to d;
    # the short `[r0,r1,..]T(p..)` (device_ids on older XLA) keeps the transposed shape.
    found = re.fullmatch(r"\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?", text.strip())
    assert found, f"not an iota list: {text}"
    dims, reshape, perm = (
        [int(v) for v in group.split(",")] if group else None for group in found.groups()
    )
    assert dims is not None
    grid = np.arange(math.prod(reshape or dims)).reshape(reshape or dims)
    grid = grid.transpose(perm) if perm else grid
    return grid.reshape(dims) if reshape else grid


def _groups(value: str | None, devices: int) -> list[list[int]]:
    value = (value or "{}").strip()
    mesh = re.fullmatch(r"mesh\[(.*?)\](?:,\s*device_ids=\((.*)\))?\s*\{(.*)\}", value)
    if mesh:
        axes = re.findall(r"'([^']+)'=(\d+)", mesh[1])
        names, sizes = [a for a, _ in axes], [int(n) for _, n in axes]
        ids = _iota(mesh[2]).ravel() if mesh[2] else np.arange(math.prod(sizes))
        grid = ids.reshape(sizes)
        kept = [names.index(a) for a in re.findall(r"'([^']+)'", mesh[3])]
        grid = np.moveaxis(grid, kept, range(len(names) - len(kept), len(names)))
        return grid.reshape(-1, math.prod(sizes[k] for k in kept)).tolist()
    if value.startswith("["):
        return _iota(value).tolist()
    listed = [[int(v) for v in g.split(",")] for g in re.findall(r"\{([\d,\s]+)\}", value)]
    return listed or [list(range(devices))]


def collective_groups(hlo_text: str) -> Counter:
    # replica_groups in any of its three spellings is a list of device groups; none (or {})
    # is every device of the module in one group.
    module = parse_hlo(hlo_text)
    found = re.search(r"\bnum_partitions=(\d+)", hlo_text.partition("\n")[0])
    devices = int(found[1]) if found else 1
    counts: Counter = Counter()
    for instruction in (i for c in module for i in c if i.opcode in _GROUPED):
        groups = _groups(instruction.attribute("replica_groups"), devices)
        key = tuple(sorted(tuple(sorted(int(d) for d in g)) for g in groups))
        counts[(instruction.opcode, key)] += 1
    return counts


_LEARNING_RATE = 0.05  # the inherited step's (katas/phase9/pmap_programs.py)


def _squared_error(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def migrated_step(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    # shard_map with P() for w and P("x") for the batch; with check_vma the gradient of the
    # invariant w comes back summed over "x" already: divide it by n instead of a pmean.
    n = mesh.shape["x"]

    def step(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - _LEARNING_RATE * grad / n, jax.lax.pmean(loss, "x")

    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))(
        w, x, y
    )
