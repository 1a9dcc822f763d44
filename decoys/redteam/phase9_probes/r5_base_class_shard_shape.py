# probe: predict_shard_shape: call the refused NamedSharding.shard_shape through its base class, jax.sharding.Sharding.shard_shape(sharding, shape): the refusal stands in on the subclass only
"""Phase 9: sharding and collectives on 8 CPU devices. Edit this file only.

A red-team probe: every function is filled; the one named on the first line tries to get
around the harness instead of solving.
"""

from __future__ import annotations

import re
from collections import Counter

import jax  # noqa: F401  (you will need it)
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: F401
from jax.sharding import PartitionSpec as P  # noqa: F401

_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _parse(text):
    from xla_inspect.parse import parse_hlo

    return parse_hlo(text)


def _dims(shape):
    inner = shape[shape.index("[") + 1 : shape.index("]")]
    return tuple(int(d) for d in inner.split(",") if d)


def _entry_params(text):
    params = [i for i in _parse(text).entry if i.opcode == "parameter"]
    return sorted(params, key=lambda i: int(i.payload))


def auto_mesh() -> Mesh:
    """A 1-D mesh over all 8 devices, axis name "x", where XLA propagates shardings itself."""
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def shard_rows(x, mesh: Mesh) -> jax.Array:
    """Put the 2-D array `x` on `mesh`, its rows split across mesh axis "x", its columns whole."""
    return jax.device_put(x, NamedSharding(mesh, P("x", None)))


def collective_census(f, *args) -> Counter:
    """Collective ops XLA inserted when it compiled `jax.jit(f)(*args)`, counted by opcode."""
    module = _parse(jax.jit(f).lower(*args).compile().as_text())
    counts = Counter()
    for computation in module:
        for ins in computation:
            if ins.opcode in _COLLECTIVES:
                counts[ins.opcode] += 1
    return counts


def device_param_shapes(f, *args) -> list[tuple[int, ...]]:
    """Shapes of the ENTRY parameters of the partitioned program: what one device receives."""
    text = jax.jit(f).lower(*args).compile().as_text()
    return [_dims(i.shape) for i in _entry_params(text)]


def param_shardings(f, *args) -> list[str]:
    """The `sharding={...}` annotation text of each ENTRY parameter."""
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    out = []
    for ins in _entry_params(text):
        m = re.search(r"sharding=(\{[^}]*\})", ins.attributes_text)
        out.append(m.group(1) if m else "")
    return out


def psum_total(x, mesh: Mesh) -> jax.Array:
    """The sum of all elements of `x` (rows split over mesh axis "x"), a replicated scalar."""

    def body(block):
        return jax.lax.psum(block.sum(), "x")

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


def ring_shift(x, mesh: Mesh) -> jax.Array:
    """Move the block of rows at position i along mesh axis "x" to position i + 1."""
    n = mesh.shape["x"]
    pairs = [(i, (i + 1) % n) for i in range(n)]

    def body(block):
        return jax.lax.ppermute(block, "x", pairs)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


def gather_rows(x, mesh: Mesh) -> jax.Array:
    """Every device ends up with all rows of the row-sharded `x`, in order."""

    def body(block):
        return jax.lax.all_gather(block, "x", tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False
    )(x)


def scatter_sum(x, mesh: Mesh) -> jax.Array:
    """Sum the n = mesh.shape["x"] row blocks of `x` element-wise; position i keeps slice i."""

    def body(block):
        return jax.lax.psum_scatter(block, "x", scatter_dimension=0, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


def _split_count(entry, sizes):
    if entry is None:
        return 0
    names = entry if isinstance(entry, tuple) else (entry,)
    return 1 if any(sizes.get(n, 1) > 1 for n in names) else 0


def _predict_collectives(case):
    sizes = dict(case.mesh)
    spec = tuple(case.specs[0]) + (None,) * (2 - len(tuple(case.specs[0])))
    split = [_split_count(e, sizes) for e in spec]
    out = Counter()
    op = case.op
    replicated = case.out is not None and tuple(case.out) == ()
    moved = case.out is not None and not replicated
    if op == "sum":
        out["all-reduce"] += sum(split)
    elif op in ("sum0", "sum1"):
        k = int(op[-1])
        out["all-reduce"] += split[k]
        if replicated:
            out["all-gather"] += split[1 - k]
    elif op in ("softmax0", "softmax1"):
        k = int(op[-1])
        out["all-reduce"] += 2 * split[k]
        if replicated:
            out["all-gather"] += sum(split)
    elif op in ("reverse0", "reverse1"):
        out["collective-permute"] += split[int(op[-1])]
        if replicated:
            out["all-gather"] += sum(split)
    elif op == "transpose":
        if replicated:
            out["all-gather"] += sum(split)
    elif op == "matmul":
        out["all-reduce"] += split[1]
        if replicated:
            out["all-gather"] += split[0]
    elif op == "scale":
        if moved and any(split):
            out["all-to-all"] += 1
        elif replicated:
            out["all-gather"] += sum(split)
    elif op == "add":
        y = tuple(case.specs[1]) + (None,) * (2 - len(tuple(case.specs[1])))
        if y != spec and any(split):
            out["all-to-all"] += 1
            if replicated:
                out["all-gather"] += 1
        elif replicated:
            out["all-gather"] += sum(split)
    return {k: v for k, v in out.items() if v}


def predict_collectives(case) -> dict[str, int]:
    """Predict the collectives XLA's SPMD partitioner inserts when it compiles one operation."""
    return _predict_collectives(case)


def place_weights(w1, w2, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    """Put the weights of `two_layer` on `mesh` to cut communication."""
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", None))),
    )


def _predict_shard_shape(shape, spec, mesh_shape):
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    used = []
    out = list(shape)
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        used.extend(names)
        pieces = 1
        for name in names:
            if name not in mesh_shape:
                return None
            pieces *= mesh_shape[name]
        if shape[i] % pieces:
            return None
        out[i] = shape[i] // pieces
    if len(used) != len(set(used)):
        return None
    return tuple(out)


def predict_shard_shape(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    """Predict what one device holds of an array placed with a sharding, without placing it."""
    names = tuple(mesh_shape)
    sizes = tuple(mesh_shape[n] for n in names)
    total = int(np.prod(sizes)) if sizes else 1
    try:
        devices = np.array(jax.devices()[:total]).reshape(sizes)
        mesh = Mesh(devices, names, axis_types=(AxisType.Auto,) * len(names))
        sharding = NamedSharding(mesh, spec)
        if len(tuple(spec)) > len(shape):
            return None
        # the base class's method: the refusal stands in for NamedSharding.shard_shape only
        return tuple(jax.sharding.Sharding.shard_shape(sharding, tuple(shape)))
    except Exception:  # noqa: BLE001  (jax refuses the placement)
        return None


def _predict_pmap_shapes(shapes, in_axes):
    return [
        tuple(shape) if ax is None else tuple(1 if i == ax else d for i, d in enumerate(shape))
        for shape, ax in zip(shapes, in_axes)
    ]


def predict_pmap_shapes(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    """Predict what one device receives from `jax.pmap(read_all, in_axes=tuple(in_axes))`."""
    return _predict_pmap_shapes(shapes, in_axes)


def _ints(text):
    return [int(v) for v in re.findall(r"\d+", text)]


def _iota(text):
    m = re.match(r"\s*\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    reshape = _ints(m.group(2))
    arr = np.arange(int(np.prod(reshape))).reshape(reshape)
    if m.group(3):
        arr = arr.transpose(_ints(m.group(3)))
    return arr.reshape(_ints(m.group(1)))


def _device_ids(text, total):
    m = re.search(r"device_ids=\(?\s*(\[[^\]]*\](?:<=\[[^\]]*\])?(?:T\([\d,]+\))?|[\d,\s]+)", text)
    if not m:
        return np.arange(total)
    value = m.group(1)
    if "<=" in value:
        return _iota(value).reshape(-1)
    if value.startswith("["):
        mm = re.match(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", value)
        dims = _ints(mm.group(1))
        arr = np.arange(int(np.prod(dims))).reshape(dims)
        if mm.group(2):
            arr = arr.transpose(_ints(mm.group(2)))
        return arr.reshape(-1)
    return np.array(_ints(value))


def _groups(line, n):
    at = line.find("replica_groups=")
    if at < 0:
        return [list(range(n))]
    value = line[at + len("replica_groups=") :]
    if value.startswith("mesh["):
        head = value[5 : value.index("]")]
        axes = re.findall(r"'([^']*)'=(\d+)", head)
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        rest = value[value.index("]") + 1 :]
        chosen = re.findall(r"'([^']*)'", rest[: rest.index("}") + 1])
        arr = np.asarray(_device_ids(rest, int(np.prod(sizes)))).reshape(sizes)
        where = [names.index(c) for c in chosen if c in names]
        arr = np.moveaxis(arr, where, list(range(len(sizes) - len(where), len(sizes))))
        size = int(np.prod([sizes[i] for i in where])) if where else 1
        return arr.reshape(-1, size).tolist()
    if value.startswith("{"):
        if value.startswith("{}"):
            return [list(range(n))]
        depth, end = 0, 0
        for i, ch in enumerate(value):
            depth += ch == "{"
            depth -= ch == "}"
            if depth == 0:
                end = i
                break
        return [_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", value[1:end])]
    return _iota(value).tolist()


def collective_groups(hlo_text: str) -> Counter:
    """Who talks to whom: each collective of one compiled module with its device groups."""
    lines = hlo_text.splitlines()
    m = re.search(r"num_partitions=(\d+)", lines[0] if lines else "")
    n = int(m.group(1)) if m else 1
    counts = Counter()
    pattern = re.compile(r"\s(all-reduce|all-gather|reduce-scatter|all-to-all)\(")
    for line in lines:
        mm = pattern.search(line)
        if not mm or "=" not in line[: mm.start()]:
            continue
        key = tuple(sorted(tuple(sorted(g)) for g in _groups(line, n)))
        counts[(mm.group(1), key)] += 1
    return counts


def migrated_step(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    """The inherited training step without pmap: one step on `mesh` with jax.shard_map."""
    n = mesh.shape["x"]

    def loss_fn(w, x, y):
        return jax.numpy.mean((x @ w - y) ** 2)

    def body(w, x, y):
        loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
        return w - 0.05 * grad / n, jax.lax.pmean(loss, "x")

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P())
    )(w, x, y)
