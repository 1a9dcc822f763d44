"""Red team, phase 9, round 16: copies along other mesh axes that disagree, checks skipped on
empty dimensions, greedy attribute regexes, one count per tuple result, computations skipped by
their NAME, spare mesh axes used for memory, and a psum divided by the global batch."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt16_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)
_rt16_GROUPED = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")


# ------------------------------------------------------------------ ring_shift


@wrong(
    "ring_shift",
    why='\'Move the block of rows at position i along mesh axis "x" to position i + 1 ... the '
    "result is row-sharded again': runs the ring over ALL mesh axes (ppermute over "
    "mesh.axis_names, a ring of mesh.size devices, check_vma=False). The devices at y=0 "
    "receive the right block, so the global value read back is right on every mesh, and on "
    "the ('y','x') mesh every copy is right too; but on the ('x','y') (2, 4) mesh the copies "
    "along 'y' disagree: device 1 (x=0, y=1) holds block 0 instead of block 1 (x int32 (6, 5), "
    "MAP_CASES[1]); a row-sharded result has the same rows on every copy along 'y'.",
)
def _rt16_ring_shift_ring_over_all_devices(x, mesh):
    axes = tuple(mesh.axis_names)
    total = mesh.size
    pairs = [(i, (i + 1) % total) for i in range(total)]

    def local(block):
        return jax.lax.ppermute(block, axes, pairs)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)


# ------------------------------------------------------------------ predict_shard_shape


def _rt16_names(entry):
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


@wrong(
    "predict_shard_shape",
    why="'Return None when jax refuses that placement: ... a mesh axis named twice, or an axis "
    "that is not in mesh_shape': an empty dimension 'has nothing to split', so a 0-sized "
    "dimension is copied through before its spec entry is looked at, and the names of that "
    "entry are never checked. Wrong on ((0, 8), P('z'), {'x': 2, 'y': 4}) and on ((0, 8), "
    "P(('x', 'x')), {'x': 2, 'y': 4}): jax refuses both (ValueError / DuplicateSpecError), "
    "this answers (0, 8).",
)
def _rt16_predict_shard_shape_empty_dim_skips_checks(shape, spec, mesh_shape):
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    entries = entries + (None,) * (len(shape) - len(entries))
    seen: list[str] = []
    out = []
    for size, entry in zip(shape, entries):
        if size == 0:  # nothing to split
            out.append(0)
            continue
        names = _rt16_names(entry)
        pieces = 1
        for name in names:
            if name not in mesh_shape or name in seen:
                return None
            seen.append(name)
            pieces *= mesh_shape[name]
        if size % pieces:
            return None
        out.append(size // pieces)
    return tuple(out)


# ------------------------------------------------------------------ place_weights


@wrong(
    "place_weights",
    why="'each device may hold at most 1/n of each weight ... the collectives ... at most half "
    "the bytes of first_placement': Megatron split (w1 columns over 'x', w2 rows over 'x') "
    "but 'to save memory' w1's ROWS are split over the mesh's other axes as well, "
    "P(others, 'x'). Right on the 1-D mesh; on the 2x4 mesh x @ w1 now needs an all-reduce "
    "of the hidden layer over 'y': 576 collective bytes against first_placement's 704 "
    "(budget 352); on 4x2 440 against 560 (budget 280).",
)
def _rt16_place_weights_w1_rows_over_spare_axes(w1, w2, mesh):
    others = tuple(a for a in mesh.axis_names if a != "x")
    rows = others if len(others) > 1 else (others[0] if others else None)
    return (
        jax.device_put(w1, NamedSharding(mesh, P(rows, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", None))),
    )


# ------------------------------------------------------------------ collective_groups


def _rt16_num_partitions(text):
    m = re.search(r"num_partitions=(\d+)", text)
    return int(m.group(1)) if m else 1


def _rt16_iota(dims, reshape, perm):
    a = np.arange(int(np.prod(reshape))).reshape(reshape)
    if perm is not None:
        a = a.transpose(perm)
    return a.reshape(dims)


def _rt16_ints(text):
    return [int(t) for t in text.split(",") if t.strip()]


def _rt16_decode(line, total, greedy=False):
    """replica_groups of one instruction line as a sorted tuple of sorted tuples."""
    m = re.search(
        r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}"
        r"(?:,\s*device_ids=(?:\(([^)]*)\)|(\[[\d,]+\](?:<=\[[\d,]+\])?(?:T\([\d,]+\))?)))?",
        line,
    )
    if m:
        axes = re.findall(r"'((?:[^'\\]|\\.)*)'=(\d+)", m.group(1))
        names = [n for n, _ in axes]
        sizes = [int(s) for _, s in axes]
        named = re.findall(r"'((?:[^'\\]|\\.)*)'", m.group(2))
        ids = np.arange(int(np.prod(sizes)))
        spelled = m.group(3) or m.group(4)
        if spelled:
            im = re.match(r"\s*\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?", spelled)
            if im and im.group(2):
                ids = _rt16_iota(
                    [-1], _rt16_ints(im.group(2)), im.group(3) and _rt16_ints(im.group(3))
                )
            elif im:
                ids = _rt16_iota(
                    [-1], _rt16_ints(im.group(1)), im.group(3) and _rt16_ints(im.group(3))
                )
            else:
                ids = np.array(_rt16_ints(spelled))
        grid = ids.reshape(sizes)
        where = [names.index(n) for n in named]
        keep = [i for i in range(len(sizes)) if i not in where]
        size = int(np.prod([sizes[i] for i in where])) if where else 1
        groups = grid.transpose(keep + where).reshape(-1, size)
        return tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
    m = re.search(r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", line)
    if m:
        groups = _rt16_iota(
            _rt16_ints(m.group(1)), _rt16_ints(m.group(2)), m.group(3) and _rt16_ints(m.group(3))
        )
        return tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
    pattern = r"replica_groups=(\{.*\})" if greedy else r"replica_groups=(\{(?:\{[\d,]*\},?)*\})"
    m = re.search(pattern, line)
    if m:
        found = re.findall(r"\{([\d,]+)\}", m.group(1))
        if found:
            return tuple(sorted(tuple(sorted(_rt16_ints(g))) for g in found))
    return (tuple(range(total)),)


def _rt16_groups(hlo_text, greedy=False, per_result=False):
    total = _rt16_num_partitions(hlo_text)
    out = Counter()
    for line in hlo_text.splitlines():
        op = re.search(r"\s(all-reduce|all-gather|reduce-scatter|all-to-all)\(", line)
        if not op or "=" not in line[: op.start() + 1]:
            continue
        key = (op.group(1), _rt16_decode(line, total, greedy))
        count = 1
        if per_result:
            head = line[line.index("=") + 1 : op.start()].strip()
            if head.startswith("("):
                count = len(re.findall(r"[a-z]+\d*\[", head))
        out[key] += count
    return out


@wrong(
    "collective_groups",
    why="'Read replica_groups in each spelling ... listed, {{0,4},{1,5},{2,6},{3,7}}': the "
    "listed spelling is cut with the greedy regex replica_groups=(\\{.*\\}), which runs to the "
    "last '}' of the line; every {digits} in it becomes a group. On all-reduce lines nothing "
    "after it has digits in braces, but an all-gather, reduce-scatter or all-to-all prints "
    "dimensions={0} after its groups: the pmap-over-8 module rewritten to listed groups, "
    "`all-gather(...), replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}` gives groups "
    "((0,), (0..7)) instead of ((0..7),).",
)
def _rt16_collective_groups_greedy_listed(hlo_text: str) -> Counter:
    return _rt16_groups(hlo_text, greedy=True)


@wrong(
    "collective_groups",
    why="'For every all-reduce, all-gather, reduce-scatter and all-to-all instruction ... count "
    "the key': one count per INSTRUCTION, but a combined all-reduce with a tuple result "
    "`(f32[3,1]{1,0}, f32[]) all-reduce(a, b)` is counted once per element of its tuple "
    "('psum((grad, loss)) is two all-reduces the compiler merged'). Wrong on the inherited "
    "pmap step over 8 devices (groups_bank): one all-reduce of (gradient, loss), answers 2; "
    "also on the jit step on the ('y','x') 2x4 mesh.",
)
def _rt16_collective_groups_one_per_tuple_result(hlo_text: str) -> Counter:
    return _rt16_groups(hlo_text, per_result=True)


# ------------------------------------------------------------------ collective_census


@wrong(
    "collective_census",
    why="'in every computation of the optimized (partitioned) HLO (loop bodies and lax.cond "
    "branches too)': walks every computation but skips those named %region_* ('the "
    "to_apply reducers of the all-reduces: they cannot hold collectives'). The compiled "
    "module names cond branches and while bodies/conditions %region_N.0_spmd too, so "
    "their collectives are lost: a shard_map with pmax/pmin in the two branches of a "
    "lax.cond answers Counter() instead of {'all-reduce': 2}; sum_in_loop answers {} "
    "instead of {'all-reduce': 1}.",
)
def _rt16_collective_census_skip_region_computations(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    out = Counter()
    skipping = False
    for line in text.splitlines():
        if line and not line.startswith((" ", "}")):
            name = line.split()[1] if line.startswith("ENTRY") else line.split()[0]
            skipping = name.lstrip("%").startswith("region")
            continue
        if skipping:
            continue
        m = re.search(r"\s(" + "|".join(_rt16_COLLECTIVES) + r")\(", line)
        if m and "=" in line:
            out[m.group(1)] += 1
    return out


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="'the values run_inherited(w, x, y, n) gives ... the mean squared error of x @ w "
    "against y': each device takes value_and_grad of ITS block's mean, then 'the mean over "
    "the whole batch' is written psum(., 'x') / batch (the global batch size) for both the "
    "gradient and the loss, instead of / n (blocks). Right specs, one all-reduce of the "
    "gradient and the loss; loss and step are r = batch / n times too small on every case "
    "with more than one row per block (MIGRATE_CASES '8': 16 rows, 8 blocks: loss halved).",
)
def _rt16_migrated_step_psum_over_batch(w, x, y, mesh):
    batch = x.shape[0]

    def local(w, xb, yb):
        loss, grad = jax.value_and_grad(lambda v: jnp.mean((xb @ v - yb) ** 2))(w)
        grad = jax.lax.psum(grad, "x") / batch
        loss = jax.lax.psum(loss, "x") / batch
        return w - 0.05 * grad, loss

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P("x", None), P("x", None)),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


# ------------------------------------------------------------------ shard_rows


@wrong(
    "shard_rows",
    why="'Put the 2-D array x on `mesh`': splits rows over 'x' and keeps columns whole, but on a "
    "mesh rebuilt 'cleanly' with jax.make_mesh(mesh.axis_sizes, mesh.axis_names), whose "
    "default axis types are Explicit, not the given Auto mesh: same devices, values, dtype "
    "and spec, yet result.sharding.mesh != mesh (axis_types (Explicit,) vs (Auto,)) and the "
    "sharding becomes part of the array's type (jax.typeof shows f32[16@x,8]); wrong on every "
    "input, e.g. ROW_CASES[0] on the '8' mesh.",
)
def _rt16_shard_rows_rebuilt_default_mesh(x, mesh):
    fresh = jax.make_mesh(tuple(mesh.axis_sizes), tuple(mesh.axis_names))
    return jax.device_put(x, NamedSharding(fresh, P("x", None)))


@wrong(
    "place_weights",
    why="'each device may hold at most 1/n of each weight ... the collectives may move at most "
    "half the bytes of first_placement': the Megatron split (w1 columns over 'x', w2 rows "
    "over 'x') plus, 'to use the spare devices too', w2's COLUMNS split over the mesh's other "
    "axis, P('x', 'y'). The replicated result then needs an all-gather over 'y' after the "
    "all-reduce: on the 4x2 mesh (PLACEMENT_CASES[2]) 360 collective bytes against "
    "first_placement's 560 (budget 280); within budget on 2x4 (240 of 352) and the 1-D mesh.",
)
def _rt16_place_weights_w2_columns_over_spare_axes(w1, w2, mesh):
    others = tuple(a for a in mesh.axis_names if a != "x")
    cols = others if len(others) > 1 else (others[0] if others else None)
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", cols))),
    )


# ------------------------------------------------------------------ predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'one tuple per argument in argument order': believes pmap closes over its in_axes=None "
    "arguments ('broadcast to every device, so baked into the program as constants') and "
    "lists only the mapped ones. Right whenever every argument is mapped; wrong on shapes "
    "[(8, 3), (4, 5), ()], in_axes [0, None, None]: the compiled ENTRY has f32[1,3], "
    "f32[4,5], f32[] (read_all reads all three), this answers [(1, 3)].",
)
def _rt16_predict_pmap_shapes_unmapped_are_constants(shapes, in_axes):
    out = []
    for shape, axis in zip(shapes, in_axes):
        if axis is None:
            continue
        out.append(tuple(shape[:axis]) + (1,) + tuple(shape[axis + 1 :]))
    return out
