# probe: migrated_step: does the inherited step's arithmetic in NumPy on the host through jax.pure_callback, so the compiled program holds no collective of its own (does the harness see the gathered batch?)
"""Phase 9: sharding and collectives on 8 CPU devices. Edit this file only.
(red-team probe, round 3: a whole kata file; the older tasks are filled quickly, the pmap task
named on the first line tries to get around the harness.)
"""

from __future__ import annotations

import re
from collections import Counter

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: F401
from jax.sharding import PartitionSpec as P  # noqa: F401

from xla_inspect import parse_hlo



def host_inherited(w, x, y, n):
    """pmap_programs.inherited_step's arithmetic, block by block, in NumPy on the host."""
    w, x, y = (np.asarray(a, np.float32) for a in (w, x, y))
    grads, losses = [], []
    for xb, yb in zip(np.split(x, n), np.split(y, n)):
        err = xb @ w - yb
        losses.append(np.mean(err**2))
        grads.append(2.0 * xb.T @ err / err.size)
    return (w - np.float32(0.05) * np.mean(grads, axis=0)).astype(np.float32), np.float32(np.mean(losses))



def auto_mesh() -> Mesh:
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def shard_rows(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(x, NamedSharding(mesh, P("x", None)))


COLLECTIVE_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def collective_census(f, *args) -> Counter:
    module = parse_hlo(jax.jit(f).lower(*args).compile().as_text())
    return Counter(
        i.opcode for c in module.computations for i in c.instructions if i.opcode in COLLECTIVE_OPS
    )


def entry_parameters(text):
    module = parse_hlo(text)
    found = [i for i in module.entry.instructions if i.opcode == "parameter"]
    return sorted(found, key=lambda i: int(i.payload or 0))


def device_param_shapes(f, *args) -> list[tuple[int, ...]]:
    text = jax.jit(f).lower(*args).compile().as_text()
    return [tuple(int(d) for d in i.shape_info.dims) for i in entry_parameters(text)]


def param_shardings(f, *args) -> list[str]:
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    return [i.attribute("sharding") or "" for i in entry_parameters(text)]


def psum_total(x, mesh: Mesh) -> jax.Array:
    def local(block):
        return jax.lax.psum(block.sum(), "x")

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P())(x)


def ring_shift(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]

    def local(block):
        return jax.lax.ppermute(block, "x", [(i, (i + 1) % n) for i in range(n)])

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


def gather_rows(x, mesh: Mesh) -> jax.Array:
    def local(block):
        return jax.lax.all_gather(block, "x", tiled=True)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


def scatter_sum(x, mesh: Mesh) -> jax.Array:
    def local(block):
        return jax.lax.psum_scatter(block, "x", tiled=True)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


def predict_collectives() -> dict[str, dict[str, int]]:
    return {}  # (not this probe's task)


def place_weights(w1, w2, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", None))),
    )


def predict_shard_shape(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    entries = list(spec)
    if len(entries) > len(shape):
        return None
    seen, out = set(), []
    for i, size in enumerate(shape):
        entry = entries[i] if i < len(entries) else None
        names = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
        pieces = 1
        for name in names:
            if name in seen or name not in mesh_shape:
                return None
            seen.add(name)
            pieces *= mesh_shape[name]
        if size % pieces:
            return None
        out.append(size // pieces)
    return tuple(out)



def predict_pmap_shapes(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    return [
        tuple(shape) if axis is None else tuple(1 if i == axis else d for i, d in enumerate(shape))
        for shape, axis in zip(shapes, in_axes)
    ]



GROUPED = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
IOTA = re.compile(r"^\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?$")
MESH = re.compile(r"^mesh\[(.*?)\]\s*\{(.*?)\}(?:\s*,?\s*device_ids=\((.*)\))?$")


def ints(text):
    return [int(v) for v in re.findall(r"-?\d+", text)]


def iota(text):
    found = IOTA.match(text.strip())
    shape = ints(found.group(1))
    dims = ints(found.group(2)) if found.group(2) else shape
    values = np.arange(int(np.prod(dims))).reshape(dims)
    if found.group(3):
        values = values.transpose(ints(found.group(3)))
    return values.reshape(-1) if not found.group(2) else values.reshape(shape)


def decode(text, partitions):
    text = (text or "").strip()
    if text in ("", "{}"):
        return (tuple(range(partitions)),)
    if text.startswith("mesh["):
        found = MESH.match(text)
        axes = re.findall(r"'([^']*)'\s*=\s*(\d+)", found.group(1))
        names, sizes = [a for a, _ in axes], [int(s) for _, s in axes]
        picked = [names.index(n) for n in re.findall(r"'([^']*)'", found.group(2))]
        ids = np.arange(int(np.prod(sizes))).reshape(sizes)
        if found.group(3):
            ids = iota(found.group(3)).reshape(sizes)
        rest = [i for i in range(len(names)) if i not in picked]
        size = int(np.prod([sizes[i] for i in picked])) if picked else 1
        groups = ids.transpose(rest + picked).reshape(-1, size)
    elif text.startswith("["):
        groups = iota(text)
    else:
        groups = [ints(g) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])]
    return tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))


def collective_groups(hlo_text: str) -> Counter:
    module = parse_hlo(hlo_text)
    n = int(module.attributes.get("num_partitions", 1))
    return Counter(
        (i.opcode, decode(i.attribute("replica_groups"), n))
        for c in module.computations
        for i in c.instructions
        if i.opcode in GROUPED
    )



def migrated_step(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    n = mesh.shape["x"]
    shapes = (jax.ShapeDtypeStruct(w.shape, jnp.float32), jax.ShapeDtypeStruct((), jnp.float32))
    return jax.pure_callback(lambda w, x, y: host_inherited(w, x, y, n), shapes, w, x, y)
