"""Red team, phase 9, round 11: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_RT11_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _rt11_dims(shape: str) -> tuple[int, ...]:
    inside = shape[shape.index("[") + 1 : shape.index("]")]
    return tuple(int(d) for d in inside.split(",") if d.strip())


def _rt11_axes(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


# ------------------------------------------------------------------ predict_shard_shape


@wrong(
    "predict_shard_shape",
    why="'Return None when ... a dimension that its axes' pieces do not divide': checks "
    "divisibility only by the FIRST axis of a tuple entry, then floors by the product. "
    "shape (6,), P(('x','y')), {'x':2,'y':4}: 6 % 2 == 0 so it answers (0,) instead of None",
)
def _rt11_predict_shard_shape_tuple_first_divides(shape, spec, mesh_shape):
    spec = tuple(spec)
    if len(spec) > len(shape):
        return None
    seen = []
    out = list(shape)
    for i, entry in enumerate(spec):
        axes = _rt11_axes(entry)
        for a in axes:
            if a not in mesh_shape or a in seen:
                return None
            seen.append(a)
        if not axes:
            continue
        if shape[i] % mesh_shape[axes[0]]:
            return None
        out[i] = shape[i] // math.prod(mesh_shape[a] for a in axes)
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a spec with MORE entries than the shape has dimensions' is refused: this refuses a spec "
    "with as many entries as dimensions too (>= instead of >), so shape (16, 8), "
    "P('x', None), {'x': 8} gives None instead of (2, 8)",
)
def _rt11_predict_shard_shape_full_spec_refused(shape, spec, mesh_shape):
    spec = tuple(spec)
    if len(shape) and len(spec) >= len(shape):
        return None
    seen = set()
    out = list(shape)
    for i, entry in enumerate(spec):
        axes = _rt11_axes(entry)
        for a in axes:
            if a not in mesh_shape or a in seen:
                return None
            seen.add(a)
        pieces = math.prod(mesh_shape[a] for a in axes)
        if shape[i] % pieces:
            return None
        out[i] = shape[i] // pieces
    return tuple(out)


# ------------------------------------------------------------------ predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'in_axes None: every device gets it whole': writes `axis = in_axes[i] or 0`, so an "
    "unmapped argument is treated as mapped on dimension 0: shapes [(8, 3), (4, 5)], in_axes "
    "[0, None] gives [(1, 3), (1, 5)] instead of [(1, 3), (4, 5)]",
)
def _rt11_predict_pmap_shapes_none_as_zero(shapes, in_axes):
    out = []
    for shape, ax in zip(shapes, in_axes):
        axis = ax or 0
        if len(shape) == 0:
            out.append(())
            continue
        s = list(shape)
        s[axis] = 1
        out.append(tuple(s))
    return out


# ------------------------------------------------------------------ collective_groups


def _rt11_num_partitions(text):
    m = re.search(r"num_partitions=(\d+)", text)
    return int(m.group(1)) if m else 1


def _rt11_iota(spec, reverse_only=False):
    m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
    out_shape = [int(v) for v in m.group(1).split(",")]
    dims = [int(v) for v in m.group(2).split(",")]
    a = np.arange(math.prod(dims)).reshape(dims)
    if m.group(3):
        perm = [int(v) for v in m.group(3).split(",")]
        a = a.T if reverse_only else a.transpose(perm)
    return a.reshape(out_shape)


def _rt11_groups(line, n, order="C", reverse_only=False):
    m = re.search(
        r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}(?:,\s*device_ids=\(?([^\s,)]*(?:,[\d]+)*)\)?)?",
        line,
    )
    if m:
        axes = re.findall(r"'((?:[^'])*)'=(\d+)", m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        chosen = re.findall(r"'([^']*)'", m.group(2))
        ids = np.arange(math.prod(sizes)).reshape(sizes, order=order)
        dm = re.search(r"device_ids=\(?(\[[\d,]+\](?:<=\[[\d,]+\])?(?:T\([\d,]+\))?)", line)
        if dm:
            s = dm.group(1)
            if "<=" not in s:
                s = s[: s.index("]") + 1] + "<=" + s
            flat = _rt11_iota(s, reverse_only).reshape(-1)
            ids = flat.reshape(sizes)
        idx = [names.index(c) for c in chosen]
        rest = [i for i in range(len(names)) if i not in idx]
        size = math.prod(sizes[i] for i in idx) if idx else 1
        g = ids.transpose(rest + idx).reshape(-1, size)
        return tuple(sorted(tuple(sorted(int(v) for v in r)) for r in g))
    m = re.search(r"replica_groups=(\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?)", line)
    if m:
        g = _rt11_iota(m.group(1), reverse_only)
        return tuple(sorted(tuple(sorted(int(v) for v in r)) for r in g))
    m = re.search(r"replica_groups=\{(\{[\d,{}]*\})?\}", line)
    if m and m.group(1):
        g = [
            tuple(int(v) for v in grp.split(",") if v)
            for grp in re.findall(r"\{([\d,]*)\}", m.group(1))
        ]
        return tuple(sorted(tuple(sorted(r)) for r in g))
    return (tuple(range(n)),)


def _rt11_collective_groups(hlo_text, order="C", reverse_only=False):
    n = _rt11_num_partitions(hlo_text)
    out = Counter()
    for line in hlo_text.splitlines():
        m = re.search(r"\s(all-reduce|all-gather|reduce-scatter|all-to-all)\(", line)
        if m and "=" in line.split(m.group(0))[0]:
            out[(m.group(1), _rt11_groups(line, n, order, reverse_only))] += 1
    return out


@wrong(
    "collective_groups",
    why="'devices numbered in row-major order over the mesh': numbers the mesh positions in "
    "column-major (Fortran) order. mesh['x'=2,'y'=4] {'x'} gives ((0,1),(2,3),(4,5),(6,7)) "
    "instead of ((0,4),(1,5),(2,6),(3,7))",
)
def _rt11_collective_groups_column_major(hlo_text: str) -> Counter:
    return _rt11_collective_groups(hlo_text, order="F")


@wrong(
    "collective_groups",
    why="'an iota list ... transposed by (1,0)': applies every T(...) as a full reversal of the "
    "axes (numpy .T) instead of the given permutation; right for 2-D T(1,0), wrong on the "
    "2x2x2 mesh: [4,2]<=[2,2,2]T(0,2,1) (groups over the middle axis) gives "
    "((0,4),(1,5),(2,6),(3,7)) instead of ((0,2),(1,3),(4,6),(5,7))",
)
def _rt11_collective_groups_transpose_reversal(hlo_text: str) -> Counter:
    return _rt11_collective_groups(hlo_text, reverse_only=True)


# ------------------------------------------------------------------ collective_census

_RT11_PRIMS = {
    "psum": "all-reduce",
    "psum_invariant": "all-reduce",
    "pmax": "all-reduce",
    "pmin": "all-reduce",
    "pmean": "all-reduce",
    "all_gather": "all-gather",
    "all_gather_invariant": "all-gather",
    "ppermute": "collective-permute",
    "reduce_scatter": "reduce-scatter",
    "psum_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
}


def _rt11_walk(jaxpr, out):
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in _RT11_PRIMS:
            out[_RT11_PRIMS[name]] += 1
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    _rt11_walk(getattr(inner, "jaxpr", inner), out)


@wrong(
    "collective_census",
    why="'Collective ops XLA inserted when it compiled': counts JAX's collective primitives in "
    "the jaxpr (every sub-jaxpr too) instead of the compiled HLO; the partitioner's own "
    "collectives are not in the jaxpr: jit(lambda a: with_sharding_constraint(a*2, P())) on "
    "rows over 8 answers {} instead of {'all-gather': 1}",
)
def _rt11_collective_census_from_jaxpr(f, *args) -> Counter:
    out = Counter()
    _rt11_walk(jax.make_jaxpr(f)(*args).jaxpr, out)
    return out


# ------------------------------------------------------------------ device_param_shapes


@wrong(
    "device_param_shapes",
    why="'Shapes of the ENTRY parameters': scans the whole compiled text for `parameter(k)` "
    "and keeps the FIRST line for each k, which is a fused/reduce computation printed before "
    "ENTRY: jit(lambda x, w: x.sum()*w) on rows of (16,8) over 8 and a scalar gives "
    "[(), ()] instead of [(2, 8), ()]",
)
def _rt11_device_param_shapes_first_seen(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    found = {}
    for line in text.splitlines():
        m = re.search(r"=\s*(\w+\[[\d,]*\])\S*\s+parameter\((\d+)\)", line)
        if m and int(m.group(2)) not in found:
            found[int(m.group(2))] = _rt11_dims(m.group(1))
    return [found[k] for k in sorted(found)]


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="'the mean squared error of x @ w against y': averages over rows only (sums the squared "
    "errors of each row's outputs, then means over the batch), so loss and gradient are "
    "`outputs` times too big whenever outputs > 1: w (4, 3) gives a loss 3x run_inherited's",
)
def _rt11_migrated_step_row_sum_loss(w, x, y, mesh):
    def loss_fn(w, x, y):
        return jnp.mean(jnp.sum((x @ w - y) ** 2, axis=1))

    rep = NamedSharding(mesh, P())

    @jax.jit
    def step(w, x, y):
        loss, g = jax.value_and_grad(loss_fn)(w, x, y)
        new = w - 0.05 * g
        return (
            jax.lax.with_sharding_constraint(new, rep),
            jax.lax.with_sharding_constraint(loss, rep),
        )

    return step(w, x, y)


# ------------------------------------------------------------------ predict_collectives


def _rt11_split(spec, mesh):
    sizes = dict(mesh)
    out = []
    for entry in tuple(spec):
        axes = _rt11_axes(entry)
        out.append(math.prod(sizes.get(a, 1) for a in axes) > 1)
    return out


@wrong(
    "predict_collectives",
    why="'Decide from the shardings and the math': treats every elementwise op as free, so "
    "'add' is always {} even when x and y are split differently (x P('x', None), y P(None, "
    "'x') on {'x': 8}, shape (16, 8)) and the partitioner must reshard one of them "
    "(an all-to-all or all-gather)",
)
def _rt11_predict_collectives_add_free(case) -> dict[str, int]:
    ndim = len(case.shape)
    xs = (_rt11_split(case.specs[0], case.mesh) + [False] * ndim)[:ndim]
    outs = None if case.out is None else (_rt11_split(case.out, case.mesh) + [False] * ndim)[:ndim]
    op = case.op
    res = Counter()
    if op in ("scale", "add"):
        if op == "scale" and outs is not None:
            res["all-gather"] += sum(1 for a, b in zip(xs, outs) if a and not b)
    elif op == "sum":
        res["all-reduce"] += sum(xs)
    elif op in ("sum0", "sum1"):
        d = 0 if op == "sum0" else 1
        if xs[d]:
            res["all-reduce"] += 1
        if outs is not None:
            rest = [s for i, s in enumerate(xs) if i != d]
            res["all-gather"] += sum(1 for a, b in zip(rest, outs) if a and not b)
    elif op in ("softmax0", "softmax1"):
        d = 0 if op == "softmax0" else 1
        if xs[d]:
            res["all-reduce"] += 2
    elif op in ("reverse0", "reverse1"):
        d = 0 if op == "reverse0" else 1
        if xs[d]:
            res["collective-permute"] += 1
    elif op == "transpose":
        if outs is not None and any(xs) and outs != xs[::-1]:
            res["all-to-all"] += 1
    elif op == "matmul":
        if xs[-1]:
            res["all-reduce"] += 1
    return {k: v for k, v in res.items() if v}


@wrong(
    "migrated_step",
    why="'the values run_inherited gives': applies the shard_map trap's fix (divide the gradient "
    "by n) to a jax.jit of the whole-batch loss, whose gradient was never summed over 'x': the "
    "update is n times too SMALL; on the (2, 4) mesh new w - w is half of run_inherited's",
)
def _rt11_migrated_step_jit_divided(w, x, y, mesh):
    n = mesh.shape["x"]
    rep = NamedSharding(mesh, P())

    @jax.jit
    def step(w, x, y):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        new = w - 0.05 * g / n
        return (
            jax.lax.with_sharding_constraint(new, rep),
            jax.lax.with_sharding_constraint(loss, rep),
        )

    return step(w, x, y)
