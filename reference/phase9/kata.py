"""Phase 9 reference: sharding and collectives on 8 CPU devices."""

from __future__ import annotations

import math
from collections import Counter

import jax
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


def predict_collectives() -> dict[str, dict[str, int]]:
    # No communication while every device has what its slice of the result needs (a row-wise
    # op on rows, a transpose that moves the split to the other dimension); a sum across the
    # split is an all-reduce (softmax along it needs two: max and sum); a replicated result is
    # an all-gather; changing which dimension is split is an all-to-all; rows moving between
    # devices (a reversal) are a collective-permute.
    return {
        "x @ w, x row-split, w replicated": {},
        "x.sum(), x row-split": {"all-reduce": 1},
        "x.sum(axis=1), x row-split": {},
        "x.sum(axis=0), x row-split": {"all-reduce": 1},
        "x @ w, x column-split, w row-split": {"all-reduce": 1},
        "x * 2 returned replicated, x row-split": {"all-gather": 1},
        "x * 2 constrained to column-split, x row-split": {"all-to-all": 1},
        "x.T, x row-split": {},
        "x[::-1], x row-split": {"collective-permute": 1},
        "softmax over axis 0, x row-split": {"all-reduce": 2},
        "softmax over axis 1, x row-split": {},
        "x + y, x row-split, y column-split": {"all-to-all": 1},
    }


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
