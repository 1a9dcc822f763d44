"""Red team, phase 9, round 10: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_RT10_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _rt10_compiled(f, *args) -> str:
    return jax.jit(f).lower(*args).compile().as_text()


def _rt10_dims(shape: str) -> tuple[int, ...]:
    inside = shape[shape.index("[") + 1 : shape.rindex("]")]
    return tuple(int(d) for d in inside.split(",") if d.strip())


# --------------------------------------------------------------------------- collective_census


@wrong(
    "collective_census",
    why="'counted by opcode': counts one per result element: a combined all-reduce whose shape "
    "is a tuple (f32[], f32[]) is counted as 2. XLA's all-reduce combiner merges independent "
    "psums: shard_map(b -> (psum(b.sum(),'x'), psum(b.max(),'x'))) on (16,8) rows over 8 "
    "compiles to ONE all-reduce; this answers {'all-reduce': 2}",
)
def _rt10_collective_census_tuple_elements(f, *args) -> Counter:
    out = Counter()
    for line in _rt10_compiled(f, *args).splitlines():
        m = re.search(r"=\s*(\([^)]*\)|\S+)\s+([a-z-]+)\(", line)
        if m and m.group(2) in _RT10_OPS:
            shape = m.group(1)
            out[m.group(2)] += shape.count("[") if shape.startswith("(") else 1
    return out


@wrong(
    "collective_census",
    why="'by opcode ... count only collectives': counts every LINE that mentions a collective's "
    "opcode text, so an instruction that only uses %all-reduce.3 / %all-gather as an operand "
    "(a copy, a fusion, a ROOT tuple, a get-tuple-element) counts again; wrong on any program "
    "whose collective result is consumed by another instruction, e.g. jit(lambda a: a.sum()*2) "
    "on rows over 8 (the multiply reads %all-reduce)",
)
def _rt10_collective_census_line_mentions(f, *args) -> Counter:
    out = Counter()
    for line in _rt10_compiled(f, *args).splitlines():
        if "=" not in line or line.startswith(("HloModule", "ENTRY", "%")) and "{" in line[-2:]:
            continue
        for op in _RT10_OPS:
            if op in line.split("metadata=")[0]:
                out[op] += 1
                break
    return out


# --------------------------------------------------------------------------- device_param_shapes


@wrong(
    "device_param_shapes",
    why="'Shapes of the ENTRY parameters': collects {number: shape} from every parameter(N) "
    "line of the whole compiled module (ENTRY printed last, so its numbers win), which keeps "
    "the extra numbers of fused/reduce computations: jit(lambda a: a.sum()) on (16,8) rows "
    "over 8 gives [(2, 8), ()] instead of [(2, 8)]",
)
def _rt10_device_param_shapes_whole_module(f, *args):
    found = {}
    for shape, num in re.findall(
        r"=\s*(\w+\[[^\]]*\])\S*\s+parameter\((\d+)\)", _rt10_compiled(f, *args)
    ):
        found[int(num)] = _rt10_dims(shape)
    return [found[k] for k in sorted(found)]


# --------------------------------------------------------------------------- gather_rows


@wrong(
    "gather_rows",
    why="'all rows of the row-sharded x, in order': the tiled all_gather is told axis=1, so "
    "the blocks are laid side by side: on (16, 8) rows over 8 the result is (2, 64), not "
    "(16, 8)",
)
def _rt10_gather_rows_axis_one(x, mesh):
    def body(b):
        return jax.lax.all_gather(b, "x", axis=1, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


# --------------------------------------------------------------------------- psum_total


@wrong(
    "psum_total",
    why="'one psum ... over \"x\" only': psums over EVERY mesh axis and then takes out the "
    "copies with floor division (// copies, 'to keep integer dtypes'); right on integer-valued "
    "data, wrong on floats with fractions on a 2-D mesh: x = full((16, 8), 0.3) rows over x of "
    "a (2, 4) mesh gives floor(4 * 38.4) // 4 ... = 38.0, not 38.4",
)
def _rt10_psum_total_floor_copies(x, mesh):
    n = mesh.shape["x"]
    copies = mesh.size // n
    names = tuple(mesh.axis_names)

    def body(b):
        s = jax.lax.psum(jnp.sum(b), names)
        return s // copies if copies > 1 else s

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


# --------------------------------------------------------------------------- predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'the shapes of the ENTRY parameters of the compiled program': believes pmap squeezes "
    "(like np.squeeze) and drops the mapped dimension together with every other size-1 "
    "dimension; the compiled ENTRY keeps the mapped dimension as size 1 and every other "
    "dimension: [(3, 2, 1), (1, 4)], in_axes [1, None] gives [(3,), (1, 4)] instead of "
    "[(3, 1, 1), (1, 4)]",
)
def _rt10_predict_pmap_shapes_squeeze(shapes, in_axes):
    out = []
    for s, ax in zip(shapes, in_axes):
        if ax is None:
            out.append(tuple(s))
        else:
            out.append(tuple(d for i, d in enumerate(s) if i != ax and d != 1))
    return out


# --------------------------------------------------------------------------- collective_groups


def _rt10_iota(dims, reshape, perm):
    a = np.arange(int(np.prod(reshape))).reshape(reshape)
    if perm is not None:
        a = a.transpose(perm)
    return a.reshape(dims)


def _rt10_ints(s):
    return [int(t) for t in re.findall(r"\d+", s)]


def _rt10_mesh_groups(spec: str):
    m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", spec)
    pairs = re.findall(r"'([^']*)'=(\d+)", m.group(1))
    names, sizes = [p[0] for p in pairs], [int(p[1]) for p in pairs]
    named = re.findall(r"'([^']*)'", m.group(2))
    ids = np.arange(int(np.prod(sizes))).reshape(sizes)
    d = re.search(
        r"device_ids=\(?\s*(?:\[([\d,]+)\]<=\[([\d,]+)\]|\[([\d,]+)\])(?:T\(([\d,]+)\))?",
        spec[m.end() :],
    )
    if d:
        perm = _rt10_ints(d.group(4)) if d.group(4) else None
        if d.group(1):
            ids = _rt10_iota(_rt10_ints(d.group(1)), _rt10_ints(d.group(2)), perm).reshape(sizes)
        else:
            ids = _rt10_iota(sizes, _rt10_ints(d.group(3)), perm).reshape(sizes)
    idx = [names.index(a) for a in named if a in names]
    other = [i for i in range(len(names)) if i not in idx]
    size = int(np.prod([sizes[i] for i in idx])) if idx else 1
    return ids.transpose(other + idx).reshape(-1, size).tolist()


@wrong(
    "collective_groups",
    why="'for every all-reduce ... instruction in any computation': finds collectives with "
    "r'= (\\S+) (all-reduce|...)\\(' so the result shape must be one token; XLA's combiner "
    "prints merged collectives with a tuple shape '(f32[], f32[])' (a space inside), which are "
    "skipped: shard_map(b -> (psum(b.sum(),'x'), psum(b.max(),'x'))) on 8 devices compiles "
    "to ONE all-reduce with replica_groups=mesh['x'=8] {'x'}: this answers an empty Counter",
)
def _rt10_collective_groups_one_token_shape(hlo_text: str) -> Counter:
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    nparts = int(m.group(1)) if m else 1
    out = Counter()
    for line in hlo_text.splitlines():
        op = re.search(r"=\s*\S+\s+(all-reduce|all-gather|reduce-scatter|all-to-all)\(", line)
        if not op:
            continue
        rg = re.search(
            r"replica_groups=(.*?)(?:, use_global|, to_apply|, dimensions|, channel|"
            r", metadata|, backend|, constrain|$)",
            line,
        )
        text = rg.group(1).strip() if rg else "{}"
        if text.startswith("mesh["):
            groups = _rt10_mesh_groups(text)
        elif text.startswith("["):
            it = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
            groups = _rt10_iota(
                _rt10_ints(it.group(1)),
                _rt10_ints(it.group(2)),
                _rt10_ints(it.group(3)) if it.group(3) else None,
            ).tolist()
        elif text in ("{}", ""):
            groups = [list(range(nparts))]
        else:
            groups = [_rt10_ints(g) for g in re.findall(r"\{([\d,]*)\}", text[1:-1])]
        key = tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
        out[(op.group(1), key)] += 1
    return out


# --------------------------------------------------------------------------- predict_shard_shape


@wrong(
    "predict_shard_shape",
    why="'Return the per-device shape' (a tuple, as the ENTRY parameter's shape is): decides "
    "every case right but builds the answer as a list and returns it as one, so "
    "((16, 8), P('x'), {'x': 8}) answers [2, 8], which != (2, 8); a () scalar answers []",
)
def _rt10_predict_shard_shape_list(shape, spec, mesh_shape):
    if len(spec) > len(shape):
        return None
    out = list(shape)
    seen = []
    for d, entry in enumerate(spec):
        if entry is None:
            continue
        axes = entry if isinstance(entry, tuple) else (entry,)
        pieces = 1
        for a in axes:
            if a not in mesh_shape or a in seen:
                return None
            seen.append(a)
            pieces *= mesh_shape[a]
        if out[d] % pieces:
            return None
        out[d] //= pieces
    return out


# --------------------------------------------------------------------------- migrated_step


def _rt10_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="'the values run_inherited gives each device (one copy, not one per device), shapes "
    "(features, outputs) and ()': keeps pmap's habit for the loss: out_specs P('x') on "
    "loss[None], so the loss comes back as one copy per position along 'x', shape (n,) "
    "(e.g. (8,) on the 1-D mesh) instead of a replicated scalar; w is right",
)
def _rt10_migrated_step_loss_per_device(w, x, y, mesh):
    def body(w, xb, yb):
        loss, g = jax.value_and_grad(_rt10_loss)(w, xb, yb)
        g = jax.lax.pmean(g, "x")
        loss = jax.lax.pmean(loss, "x")
        return w - 0.05 * g, loss[None]

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P("x")), check_vma=False
    )(w, x, y)


# --------------------------------------------------------------------------- ring_shift


@wrong(
    "ring_shift",
    why="'the result is row-sharded again': the ppermute is right, but the answer is then "
    "replicated (device_put on P(), 'so every device can read the shifted array'): values "
    "right, sharding {replicated} instead of rows over 'x' - on (16, 8) rows over 8 each "
    "device holds (16, 8), not (2, 8)",
)
def _rt10_ring_shift_replicated_result(x, mesh):
    n = mesh.shape["x"]
    perm = [(i, (i + 1) % n) for i in range(n)]
    out = jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", perm), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)
    return jax.device_put(out, NamedSharding(mesh, P()))
