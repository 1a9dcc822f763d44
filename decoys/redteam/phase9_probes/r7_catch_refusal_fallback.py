# probe: predict_collectives: tries to compile the case and swallows whatever the harness raises (BaseException), then falls back to a hand rule
"""Phase 9: sharding and collectives on 8 CPU devices. Edit this file only."""

from __future__ import annotations

import re
from collections import Counter

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding  # noqa: F401
from jax.sharding import PartitionSpec as P  # noqa: F401

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
_OP_RE = re.compile(r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def _entry(text):
    start = text.index("\nENTRY")
    end = text.find("\n}", start)
    return text[start:end]


def _params(text):
    out = []
    for line in _entry(text).splitlines():
        m = re.search(r"=\s*\w+\[([\d,]*)\]\S*\s+parameter\((\d+)\)", line)
        if m:
            out.append((int(m.group(2)), tuple(int(v) for v in m.group(1).split(",") if v), line))
    return sorted(out)


def auto_mesh() -> Mesh:
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))


def shard_rows(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(x, NamedSharding(mesh, P("x", None)))


def collective_census(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    return Counter(m.group(1) for line in text.splitlines() if "=" in line for m in [_OP_RE.search(line)] if m)


def device_param_shapes(f, *args) -> list[tuple[int, ...]]:
    return [dims for _, dims, _ in _params(jax.jit(f).lower(*args).compile().as_text())]


def param_shardings(f, *args) -> list[str]:
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    return [re.search(r"sharding=(\{[^}]*\})", line).group(1) for _, _, line in _params(text)]


def psum_total(x, mesh: Mesh) -> jax.Array:
    return jax.shard_map(lambda b: jax.lax.psum(b.sum(), "x"), mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


def ring_shift(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    pairs = [(i, (i + 1) % n) for i in range(n)]
    return jax.shard_map(lambda b: jax.lax.ppermute(b, "x", pairs), mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


def gather_rows(x, mesh: Mesh) -> jax.Array:
    return jax.shard_map(lambda b: jax.lax.all_gather(b, "x", tiled=True), mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


def scatter_sum(x, mesh: Mesh) -> jax.Array:
    return jax.shard_map(lambda b: jax.lax.psum_scatter(b, "x", tiled=True), mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


_OPS = {
    "scale": lambda a: a * 2,
    "sum": lambda a: a.sum(),
    "sum0": lambda a: a.sum(axis=0),
    "sum1": lambda a: a.sum(axis=1),
    "transpose": lambda a: a.T,
    "reverse0": lambda a: a[::-1],
    "reverse1": lambda a: a[:, ::-1],
    "softmax0": lambda a: jax.nn.softmax(a, axis=0),
    "softmax1": lambda a: jax.nn.softmax(a, axis=1),
    "matmul": lambda a, w: a @ w,
    "add": lambda a, b: a + b,
}

def _rule(case):
    sizes = dict(case.mesh)
    spec = tuple(case.specs[0]) + (None, None)
    split = lambda e: [n for n in (() if e is None else (e if isinstance(e, tuple) else (e,))) if sizes[n] > 1]
    d0, d1 = split(spec[0]), split(spec[1])
    if case.op == "sum":
        return {"all-reduce": int(bool(d0)) + int(bool(d1))} if (d0 or d1) else {}
    return {}


def predict_collectives(case) -> dict[str, int]:
    try:
        mesh = jax.make_mesh(tuple(s for _, s in case.mesh), tuple(n for n, _ in case.mesh), axis_types=(AxisType.Auto,) * len(case.mesh))
        shapes = [case.shape] + ([(case.shape[1], 8)] if case.op == "matmul" else [case.shape] if case.op == "add" else [])
        args = [jax.ShapeDtypeStruct(s, jnp.dtype(case.dtype), sharding=NamedSharding(mesh, spec)) for s, spec in zip(shapes, case.specs)]
        out = None if case.out is None else NamedSharding(mesh, case.out)
        text = jax.jit(_OPS[case.op], out_shardings=out).lower(*args).compile().as_text()
        return dict(Counter(m.group(1) for line in text.splitlines() if "=" in line for m in [_OP_RE.search(line)] if m))
    except BaseException:  # noqa: BLE001  the refusal, whatever its type
        return _rule(case)


def place_weights(w1, w2, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", None))),
    )


def predict_shard_shape(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    if len(spec) > len(shape):
        return None
    seen = []
    out = list(shape)
    for i, e in enumerate(spec):
        names = () if e is None else (e if isinstance(e, tuple) else (e,))
        pieces = 1
        for n in names:
            if n not in mesh_shape:
                return None
            seen.append(n)
            pieces *= mesh_shape[n]
        if out[i] % pieces:
            return None
        out[i] //= pieces
    return None if len(seen) != len(set(seen)) else tuple(out)


def predict_pmap_shapes(shapes, in_axes) -> list[tuple[int, ...]]:
    return [tuple(1 if (a is not None and i == a) else d for i, d in enumerate(s)) for s, a in zip(shapes, in_axes)]


def collective_groups(hlo_text: str) -> Counter:
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    n = int(m.group(1)) if m else 1
    out = Counter()
    for line in hlo_text.splitlines():
        o = re.search(r"\s(all-reduce|all-gather|reduce-scatter|all-to-all)(?:-start)?\(", line)
        if not o or "=" not in line:
            continue
        g = re.search(r"replica_groups=\{(\{.*?\})\}", line)
        groups = [[int(v) for v in x.split(",") if v] for x in re.findall(r"\{([\d,]*)\}", g.group(1))] if g else [list(range(n))]
        out[(o.group(1), tuple(sorted(tuple(sorted(x)) for x in groups)))] += 1
    return out


LEARNING_RATE = 0.05


def migrated_step(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    def local(w, xb, yb):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((xb @ w - yb) ** 2))(w)
        return w - LEARNING_RATE * jax.lax.pmean(g, "x"), jax.lax.pmean(loss, "x")

    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("x", None), P("x", None)), out_specs=(P(), P()), check_vma=False)(w, x, y)
