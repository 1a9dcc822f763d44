"""Red team, phase 9, round 13: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_RT13_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


# ------------------------------------------------------------------ collective_groups


def _rt13_num_partitions(text: str) -> int:
    found = re.search(r"num_partitions=(\d+)", text)
    return int(found.group(1)) if found else 1


def _rt13_ints(text):
    return [int(v) for v in re.findall(r"\d+", text)]


def _rt13_iota(reshape, perm):
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    return ids.transpose(perm) if perm is not None else ids


def _rt13_decode(groups_text, total, comma_names, short_ids_only, transpose_groups=False):
    groups_text = groups_text.strip()
    if groups_text in ("", "{}"):
        return (tuple(range(total)),)
    if groups_text.startswith("mesh["):
        head = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", groups_text)
        if comma_names:
            # "split the axis list on commas, then name=size"
            axes = [part.strip().split("=") for part in head.group(1).split(",")]
            axes = [(n.strip().strip("'"), s) for n, s in axes]
            chosen = [c.strip().strip("'") for c in head.group(2).split(",")]
        else:
            axes = re.findall(r"'([^']*)'=(\d+)", head.group(1))
            chosen = re.findall(r"'([^']*)'", head.group(2))
        names = [n for n, _ in axes]
        sizes = [int(s) for _, s in axes]
        ids = np.arange(math.prod(sizes)).reshape(sizes)
        dev = re.search(r"device_ids=\(?(.*?)\)?\s*$", groups_text[head.end() :])
        if dev and dev.group(1).strip():
            spec = dev.group(1).strip()
            if short_ids_only:
                # only the short spelling [2,4]T(1,0): the long one's <=[...] part is skipped
                m = re.match(r"\[([\d,]+)\](T\(([\d,]+)\))?", spec)
                dims = _rt13_ints(m.group(1))
                perm = _rt13_ints(m.group(3)) if m.group(3) else None
                ids = _rt13_iota(dims, perm).reshape(sizes)
            else:
                m = re.match(r"\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?", spec)
                if m:
                    dims = _rt13_ints(m.group(1))
                    reshape = _rt13_ints(m.group(2)) if m.group(2) else dims
                    perm = _rt13_ints(m.group(3)) if m.group(3) else None
                    ids = _rt13_iota(reshape, perm).reshape(sizes)
                else:
                    ids = np.array(_rt13_ints(spec)).reshape(sizes)
        where = [names.index(c) for c in chosen]
        size = math.prod(sizes[w] for w in where)
        ids = np.moveaxis(ids, where, list(range(len(sizes) - len(where), len(sizes))))
        groups = ids.reshape(-1, size)
    elif groups_text.startswith("["):
        m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", groups_text)
        dims = _rt13_ints(m.group(1))
        reshape = _rt13_ints(m.group(2))
        perm = _rt13_ints(m.group(3)) if m.group(3) else None
        if transpose_groups:
            # "arange reshaped to the groups, then T(...)", skipping the <=[...] reshape
            groups = _rt13_iota(dims, perm)
        else:
            groups = _rt13_iota(reshape, perm).reshape(dims)
    else:
        groups = [_rt13_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", groups_text)]
    return tuple(sorted(tuple(sorted(int(d) for d in g)) for g in groups))


def _rt13_groups_attr(line: str) -> str:
    at = line.find("replica_groups=")
    if at < 0:
        return ""
    rest = line[at + len("replica_groups=") :]
    if rest.startswith("{"):
        depth = 0
        for k, ch in enumerate(rest):
            depth += ch == "{"
            depth -= ch == "}"
            if depth == 0:
                return rest[: k + 1]
    if rest.startswith("mesh["):
        close = rest.index("}")
        stop = re.search(r",\s*(?!device_ids)[a-z_]+=", rest[close:])
        end = close + (stop.start() if stop else len(rest) - close)
        return rest[:end]
    return re.match(r"\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?", rest).group(0)


def _rt13_collective_groups(
    hlo_text, comma_names=False, short_ids_only=False, transpose_groups=False
) -> Counter:
    total = _rt13_num_partitions(hlo_text)
    out: Counter = Counter()
    ops = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
    for line in hlo_text.splitlines():
        m = re.search(r"\s(" + "|".join(map(re.escape, ops)) + r")\(", line)
        if not m or "=" not in line.split(m.group(0))[0]:
            continue
        attr = _rt13_groups_attr(line)
        key = _rt13_decode(attr, total, comma_names, short_ids_only, transpose_groups)
        out[(m.group(1), key)] += 1
    return out


@wrong(
    "collective_groups",
    why="'a name is any quoted text, not only word characters': splits the mesh's axis list "
    "and the named-axes set on commas before stripping quotes, so a quoted name holding a "
    "comma breaks it: mesh['a,b'=2,'y'=4] {'a,b'} on 8 partitions should give "
    "((0,4),(1,5),(2,6),(3,7)); this reads axes ['a', \"b'=2\", ...] and raises/garbles "
    "(right on every name without a comma)",
)
def _rt13_collective_groups_comma_split_names(hlo_text: str) -> Counter:
    try:
        return _rt13_collective_groups(hlo_text, comma_names=True)
    except Exception:  # a learner's fallback: unreadable groups = everyone
        total = _rt13_num_partitions(hlo_text)
        out: Counter = Counter()
        for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
            n = len(re.findall(r"\s" + op + r"\(", hlo_text))
            if n:
                out[(op, (tuple(range(total)),))] += n
        return out


@wrong(
    "collective_groups",
    why="'device_ids=(...) (an iota list ...; older XLA writes it short, [2,4]T(1,0))': "
    "only reads the short spelling: on the long one device_ids=([2,4]<=[4,2]T(1,0)) it "
    "matches [2,4], sees no T right after it and uses the identity. "
    "mesh['x'=2,'y'=4] {'x'} device_ids=([2,4]<=[4,2]T(1,0)) on 8 should give device ids "
    "[[0,2,4,6],[1,3,5,7]] -> groups ((0,1),(2,3),(4,5),(6,7)); answers ((0,4),(1,5),(2,6),(3,7))",
)
def _rt13_collective_groups_short_device_ids_only(hlo_text: str) -> Counter:
    return _rt13_collective_groups(hlo_text, short_ids_only=True)


@wrong(
    "collective_groups",
    why="'an iota list, [4,2]<=[2,4]T(1,0) (arange(8) reshaped to [2,4], transposed by "
    "(1,0), read as 4 groups of 2)': reshapes arange straight to the group shape [4,2] and "
    "transposes that, ignoring <=[2,4]; gives 2 groups of 4 ((0,2,4,6),(1,3,5,7)) instead of "
    "((0,4),(1,5),(2,6),(3,7)); right whenever there is no T (e.g. [1,8]<=[8], [2,4]<=[8])",
)
def _rt13_collective_groups_transpose_group_shape(hlo_text: str) -> Counter:
    return _rt13_collective_groups(hlo_text, transpose_groups=True)


# ------------------------------------------------------------------ collective_census


@wrong(
    "collective_census",
    why="'counted by opcode ... in every computation': counts each opcode once per "
    "computation (a set of opcodes per computation body, summed over computations), "
    "thinking a body repeats its instructions; two ppermutes in one shard_map body "
    "(two_hops_and_sum) give collective-permute 1 instead of 2",
)
def _rt13_collective_census_once_per_computation(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    out: Counter = Counter()
    for body in re.split(r"\n\s*\n", text):
        seen = set()
        for line in body.splitlines():
            m = re.search(r"\s(" + "|".join(_RT13_COLLECTIVES) + r")\(", line)
            if m:
                seen.add(m.group(1))
        out.update(seen)
    return out


# ------------------------------------------------------------------ device_param_shapes


@wrong(
    "device_param_shapes",
    why="'a scalar is ()': reads dims with the regex \\[([\\d,]+)\\] which needs a digit, so "
    "a scalar parameter f32[] matches nothing and is left out; four_dtypes's c "
    "(a replicated f32 scalar) disappears: 3 tuples instead of 4",
)
def _rt13_device_param_shapes_no_scalars(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    entry = text[text.index("ENTRY") :]
    entry = entry[: entry.index("\n}")]
    found = []
    for line in entry.splitlines():
        m = re.search(r"=\s*\w+\[([\d,]+)\][^ ]*\s+parameter\((\d+)\)", line)
        if m:
            found.append((int(m.group(2)), tuple(int(d) for d in m.group(1).split(","))))
    return [shape for _, shape in sorted(found)]


# ------------------------------------------------------------------ param_shardings


@wrong(
    "param_shardings",
    why="'every parameter has an annotation': only matches the tiled spelling "
    "sharding={devices=...}, so a replicated parameter's {replicated} is skipped; "
    "three's w (put replicated on the 8 mesh) is missing: 2 strings instead of 3",
)
def _rt13_param_shardings_devices_only(f, *args):
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    entry = text[text.index("ENTRY") :]
    entry = entry[: entry.index("\n}")]
    found = []
    for line in entry.splitlines():
        m = re.search(r"parameter\((\d+)\).*?sharding=(\{devices=[^}]*\})", line)
        if m:
            found.append((int(m.group(1)), m.group(2)))
    return [s for _, s in sorted(found)]


# ------------------------------------------------------------------ scatter_sum


@wrong(
    "scatter_sum",
    why="'the result (r rows) is row-sharded over \"x\"': psum_scatter is right, but "
    "out_specs=P() (check_vma off), 'the sum is one result'; each position's r/n-row slice "
    "is taken as the whole replicated value: on the 8 mesh with 64 rows (r=8) the answer "
    "has 1 row (slice 0) instead of 8",
)
def _rt13_scatter_sum_replicated_out(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum_scatter(b, "x", scatter_dimension=0, tiled=True),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P(),
        check_vma=False,
    )(x)


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="'copied along any other axis': sums the gradient and loss over every mesh axis "
    "(psum over mesh.axis_names) and divides by n = mesh.shape['x'], so the copies along "
    "'y' are added too: right on the 8 mesh, 4x too large a step and loss on the 2x4 mesh "
    "(e.g. w zeros (4,2), x, y ones: loss 4.0 instead of 1.0)",
)
def _rt13_migrated_step_psum_all_axes(w, x, y, mesh):
    n = mesh.shape["x"]
    axes = tuple(mesh.axis_names)

    def local(w, xb, yb):
        loss, grad = jax.value_and_grad(lambda v: jax.numpy.mean((xb @ v - yb) ** 2))(w)
        grad = jax.lax.psum(grad, axes) / n
        loss = jax.lax.psum(loss, axes) / n
        return w - 0.05 * grad, loss

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P("x"), P("x")),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


# ------------------------------------------------------------------ predict_collectives


def _rt13_split(spec, dim, mesh):
    sizes = dict(mesh)
    if spec is None or dim >= len(spec):
        return ()
    entry = spec[dim]
    if entry is None:
        return ()
    names = entry if isinstance(entry, tuple) else (entry,)
    return tuple(n for n in names if sizes.get(n, 1) > 1)


@wrong(
    "predict_collectives",
    why="'decide from the shardings and the math': treats reverse as a pure re-indexing "
    "each device does on its own block ('like transpose of a block, nothing moves'), so "
    "reverse0 on x (16, 8) with P('x') on the 8 mesh predicts {} while the partitioner "
    "moves blocks between mirrored positions with a collective-permute",
)
def _rt13_predict_collectives_reverse_local(case):
    op = case.op
    mesh = case.mesh
    xspec = case.specs[0]
    d0, d1 = _rt13_split(xspec, 0, mesh), _rt13_split(xspec, 1, mesh)
    out: Counter = Counter()
    if op in ("scale", "add", "reverse0", "reverse1"):
        pass
    elif op == "sum":
        if d0 or d1:
            out["all-reduce"] += 1
    elif op == "sum0":
        if d0:
            out["all-reduce"] += 1
    elif op == "sum1":
        if d1:
            out["all-reduce"] += 1
    elif op == "softmax0":
        if d0:
            out["all-reduce"] += 2
    elif op == "softmax1":
        if d1:
            out["all-reduce"] += 2
    elif op == "transpose":
        if d0 or d1:
            out["all-to-all"] += 1
    elif op == "matmul":
        wspec = case.specs[1] if len(case.specs) > 1 else None
        if d1 or _rt13_split(wspec, 0, mesh):
            out["all-reduce"] += 1
    if case.out is not None and all(e is None for e in case.out) and (d0 or d1):
        if op in ("scale", "add", "reverse0", "reverse1", "transpose"):
            out.pop("all-to-all", None)
            out["all-gather"] += 1
    return dict(out)


# ------------------------------------------------------------------ predict_shard_shape


@wrong(
    "predict_shard_shape",
    why="'a spec with more entries than the shape has dimensions' is refused: checks the "
    "spec's length against the MESH's rank instead of the shape's ('one entry per mesh "
    "axis'), then zips spec with shape; (3, 8, 4) with P(None, 'y', 'x') on {'x': 4, 'y': 2} "
    "should be (3, 4, 1), answers None; (16,) with P('x', 'y') on {'x': 2, 'y': 4} should be "
    "None, answers (8,)",
)
def _rt13_predict_shard_shape_rank_of_mesh(shape, spec, mesh_shape):
    if len(spec) > len(mesh_shape):
        return None
    seen = []
    out = []
    for dim, entry in zip(shape, tuple(spec) + (None,) * len(shape)):
        names = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
        pieces = 1
        for n in names:
            if n not in mesh_shape or n in seen:
                return None
            seen.append(n)
            pieces *= mesh_shape[n]
        if dim % pieces:
            return None
        out.append(dim // pieces)
    return tuple(out)
