"""Red team, phase 9, round 12: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_RT12_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


# ------------------------------------------------------------------ collective_census


@wrong(
    "collective_census",
    why="'in every computation ... lax.cond branches too': merges the per-computation counts "
    "with Counter union (max), reasoning 'a cond runs only one branch, so its collectives "
    "happen once'. A shard_map whose lax.cond has a psum in each branch compiles to two "
    "all-reduces (one per branch computation); answers {'all-reduce': 1}",
)
def _rt12_collective_census_union_of_branches(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    total: Counter = Counter()
    for computation in parse_hlo(text):
        total |= Counter(i.opcode for i in computation if i.opcode in _RT12_OPS)
    return total


# ------------------------------------------------------------------ collective_groups


def _rt12_num_partitions(text: str) -> int:
    found = re.search(r"num_partitions=(\d+)", text)
    return int(found.group(1)) if found else 1


def _rt12_iota(dims, reshape, perm, inverse_perm):
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    if perm is not None:
        ids = ids.transpose(np.argsort(perm) if inverse_perm else perm)
    return ids.reshape(dims)


def _rt12_ints(text):
    return [int(v) for v in re.findall(r"\d+", text)]


def _rt12_decode(groups_text: str, total: int, inverse_perm: bool):
    groups_text = groups_text.strip()
    if groups_text in ("", "{}"):
        return (tuple(range(total)),)
    if groups_text.startswith("mesh["):
        head = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", groups_text)
        axes = re.findall(r"'([^']*)'=(\d+)", head.group(1))
        names = [n for n, _ in axes]
        sizes = [int(s) for _, s in axes]
        chosen = re.findall(r"'([^']*)'", head.group(2))
        ids = np.arange(math.prod(sizes)).reshape(sizes)
        dev = re.search(r"device_ids=\(?(.*?)\)?\s*$", groups_text[head.end() :])
        if dev and dev.group(1).strip():
            spec = dev.group(1).strip()
            m = re.match(r"\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?", spec)
            if m:
                dims = _rt12_ints(m.group(1))
                reshape = _rt12_ints(m.group(2)) if m.group(2) else dims
                perm = _rt12_ints(m.group(3)) if m.group(3) else None
                ids = _rt12_iota([-1], reshape, perm, inverse_perm).reshape(sizes)
            else:
                ids = np.array(_rt12_ints(spec)).reshape(sizes)
        where = [names.index(c) for c in chosen]
        size = math.prod(sizes[w] for w in where)
        ids = np.moveaxis(ids, where, list(range(len(sizes) - len(where), len(sizes))))
        groups = ids.reshape(-1, size)
    elif groups_text.startswith("["):
        m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", groups_text)
        dims = _rt12_ints(m.group(1))
        reshape = _rt12_ints(m.group(2))
        perm = _rt12_ints(m.group(3)) if m.group(3) else None
        groups = _rt12_iota(dims, reshape, perm, inverse_perm)
    else:
        groups = [_rt12_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", groups_text)]
    return tuple(sorted(tuple(sorted(int(d) for d in g)) for g in groups))


def _rt12_groups_attr(line: str) -> str:
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
        # up to the next attribute that is not part of the mesh spelling
        stop = re.search(r",\s*(?!device_ids)[a-z_]+=", rest[rest.index("}") :])
        end = rest.index("}") + (stop.start() if stop else len(rest))
        return rest[:end]
    return re.match(r"\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?", rest).group(0)


def _rt12_collective_groups(hlo_text: str, opcodes, inverse_perm=False) -> Counter:
    total = _rt12_num_partitions(hlo_text)
    out: Counter = Counter()
    for line in hlo_text.splitlines():
        m = re.search(r"\s(" + "|".join(map(re.escape, opcodes)) + r")\(", line)
        if not m or "=" not in line.split(m.group(0))[0]:
            continue
        out[(m.group(1), _rt12_decode(_rt12_groups_attr(line), total, inverse_perm))] += 1
    return out


@wrong(
    "collective_groups",
    why="'an iota list ... transposed by (1,0)': applies T(...) through its inverse "
    "permutation (np.argsort(perm)), which agrees with the permutation for every 2-D T(1,0) "
    "and every swap of two axes; wrong on a cyclic 3-D transpose: "
    "replica_groups=[2,4]<=[2,2,2]T(1,2,0) on 8 partitions is "
    "arange(8).reshape(2,2,2).transpose(1,2,0).reshape(2,4) = ((0,1,4,5),(2,3,6,7)); answers "
    "((0,2,4,6),(1,3,5,7))",
)
def _rt12_collective_groups_inverse_transpose(hlo_text: str) -> Counter:
    return _rt12_collective_groups(
        hlo_text, ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"), inverse_perm=True
    )


@wrong(
    "collective_groups",
    why="'For every all-reduce, all-gather, reduce-scatter and all-to-all': leaves out "
    "all-to-all (thinking it exchanges pairs like collective-permute); a sharded jit that "
    "reshards rows to columns on the 8 mesh (with_sharding_constraint(a*2, P(None,'x'))) "
    "has one all-to-all with replica_groups=mesh['x'=8] {'x'}: answers an empty Counter",
)
def _rt12_collective_groups_no_all_to_all(hlo_text: str) -> Counter:
    return _rt12_collective_groups(hlo_text, ("all-reduce", "all-gather", "reduce-scatter"))


# ------------------------------------------------------------------ predict_shard_shape


def _rt12_entry_axes(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


@wrong(
    "predict_shard_shape",
    why="'shape ... a tuple of sizes, 0 included' and None only when the pieces do not divide: "
    "refuses a dimension smaller than its number of pieces ('every device needs at least one "
    "row'), so an empty dimension is refused. ((0, 8), P('x'), {'x': 8}): jax places it and "
    "each device gets f32[0,8] -> (0, 8); answers None. Same for ((0,), P(('x','y')), ...)",
)
def _rt12_predict_shard_shape_refuses_empty(shape, spec, mesh_shape):
    spec = tuple(spec)
    if len(spec) > len(shape):
        return None
    seen = []
    out = list(shape)
    for d, entry in enumerate(spec):
        axes = _rt12_entry_axes(entry)
        for a in axes:
            if a not in mesh_shape or a in seen:
                return None
            seen.append(a)
        pieces = math.prod(mesh_shape[a] for a in axes)
        if shape[d] % pieces or shape[d] < pieces:
            return None
        out[d] = shape[d] // pieces
    return tuple(out)


# ------------------------------------------------------------------ predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'one tuple per argument ... (a scalar is ())': right sizes, but builds each shape by "
    "list(shape); shape[axis] = 1 and returns the LISTS. [[1, 3]] != [(1, 3)] in Python, so "
    "([(4, 3)], [0]) gives [[1, 3]] not [(1, 3)]; ([()], [None]) gives [[]] not [()]",
)
def _rt12_predict_pmap_shapes_lists(shapes, in_axes):
    out = []
    for shape, axis in zip(shapes, in_axes):
        dims = list(shape)
        if axis is not None:
            dims[axis] = 1
        out.append(dims)
    return out


# ------------------------------------------------------------------ auto_mesh


@wrong(
    "auto_mesh",
    why="'A 1-D mesh over all 8 devices': returns jax.sharding.AbstractMesh((8,), ('x',), Auto) "
    "-- right shape, names and axis type, but no devices: it is not a Mesh, mesh.devices does "
    "not exist and NamedSharding on it cannot device_put. Wrong on every call",
)
def _rt12_auto_mesh_abstract():
    return jax.sharding.AbstractMesh((8,), ("x",), axis_types=(AxisType.Auto,))


# ------------------------------------------------------------------ shard_rows


@wrong(
    "shard_rows",
    why="'rows split across mesh axis \"x\", columns whole': builds the PartitionSpec with one "
    "entry per MESH axis (P(*('x' if a == 'x' else None for a in mesh.axis_names))) instead "
    "of per array dimension. Right on the 8, ('x','y') 2x4 and 4x2 meshes; on the ('y','x') "
    "2x4 mesh it is P(None, 'x'): (16, 8) gets its COLUMNS split 4 ways, rows whole (a one-column "
    "x there is refused by jax outright)",
)
def _rt12_shard_rows_spec_per_mesh_axis(x, mesh):
    spec = P(*("x" if name == "x" else None for name in mesh.axis_names))
    return jax.device_put(x, NamedSharding(mesh, spec))


# ------------------------------------------------------------------ place_weights


@wrong(
    "place_weights",
    why="'each device may hold at most 1/n' read as 'use every device': w1 columns over 'x' "
    "(right), w2 rows over ALL mesh axes in mesh order, P(tuple(mesh.axis_names), None). On "
    "'x'-major meshes (8, ('x','y')) the row blocks line up with the hidden split and it passes; "
    "on the ('y','x') (2, 4) mesh w2's rows are split y-major, they no longer match the "
    "hidden layer's split over 'x', and the compiled program all-gathers w2 and the hidden "
    "layer: 1792 collective bytes against first_placement's 448 (budget 224)",
)
def _rt12_place_weights_w2_over_all_axes(w1, w2, mesh):
    w1_placed = jax.device_put(w1, NamedSharding(mesh, P(None, "x")))
    w2_placed = jax.device_put(w2, NamedSharding(mesh, P(tuple(mesh.axis_names), None)))
    return w1_placed, w2_placed


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="'the loss (the mean squared error of x @ w against y)': writes the textbook "
    "half-MSE, 0.5 * mean((x @ w - y) ** 2), so its gradient is half as well. Right specs, "
    "right pmean over 'x', right collectives; loss and step are half of run_inherited's on "
    "every input (e.g. w zeros (4, 2), x, y ones on the 8 mesh: loss 0.5 instead of 1.0)",
)
def _rt12_migrated_step_half_mse(w, x, y, mesh):
    def local(w, xb, yb):
        loss, grad = jax.value_and_grad(lambda v: 0.5 * jax.numpy.mean((xb @ v - yb) ** 2))(w)
        grad = jax.lax.pmean(grad, "x")
        loss = jax.lax.pmean(loss, "x")
        return w - 0.05 * grad, loss

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P("x"), P("x")),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


# ------------------------------------------------------------------ psum_total


@wrong(
    "psum_total",
    why="'x (rows split over mesh axis \"x\")': shard_map with in_specs=P() ('x is already "
    "placed, shard_map only needs to know the output is one number'), so every device gets "
    "ALL rows, sums them, and the psum over 'x' adds n copies: n times the total. "
    "x = arange(128).reshape(16, 8) on the 8 mesh: 65024 instead of 8128",
)
def _rt12_psum_total_whole_input_spec(x, mesh):
    return jax.shard_map(
        lambda block: jax.lax.psum(block.sum(), "x"),
        mesh=mesh,
        in_specs=P(),
        out_specs=P(),
    )(x)


# ------------------------------------------------------------------ device_param_shapes


@wrong(
    "device_param_shapes",
    why="'An argument the function never reads is not a parameter (jit drops it), so read the "
    "module': reads the compiled ENTRY correctly, in parameter-number order, but of "
    "jax.jit(f, keep_unused=True) ('so every argument gets its shape'), a program other than "
    "the one jit(f) runs. three_unused(a, w, z) on the 8 mesh: [(2, 8), (8, 4), (4, 2)] "
    "instead of [(2, 8), (8, 4)]",
)
def _rt12_device_param_shapes_keep_unused(f, *args):
    text = jax.jit(f, keep_unused=True).lower(*args).compile().as_text()
    params = [i for i in parse_hlo(text).entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(i.payload))
    return [tuple(i.shape_info.dims) for i in params]
