"""Red-team wrong answers for phase 9, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt7_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


# ---------------------------------------------------------------- helpers (not answers)
def _rt7_compiled_text(f, *args) -> str:
    return jax.jit(f).lower(*args).compile().as_text()


def _rt7_lowered_hlo(f, *args) -> str:
    return jax.jit(f).lower(*args).as_text(dialect="hlo")


def _rt7_entry_block(text: str) -> str:
    start = text.index("\nENTRY")
    end = text.find("\n}", start)
    return text[start : end if end >= 0 else len(text)]


def _rt7_entry_params(text: str):
    """(number, dims, line) of each ENTRY parameter, in printed order."""
    out = []
    for line in _rt7_entry_block(text).splitlines():
        m = re.search(r"=\s*\w+\[([\d,]*)\][^ ]*\s+parameter\((\d+)\)", line)
        if m:
            dims = tuple(int(d) for d in m.group(1).split(",") if d)
            out.append((m.group(2), dims, line))
    return out


def _rt7_sharding_of(line: str) -> str:
    m = re.search(r"sharding=(\{[^}]*\})", line)
    return m.group(1) if m else ""


# ---------------------------------------------------------------- 1 auto_mesh
@wrong(
    "auto_mesh",
    why="axis must be named \"x\"; names it \"X\" -- wrong on every use (mesh.shape['x'] KeyError for callers, P('x') refused)",
)
def _rt7_auto_mesh_capital_name() -> Mesh:
    return jax.make_mesh((8,), ("X",), axis_types=(AxisType.Auto,))


@wrong(
    "auto_mesh",
    why="must be a 1-D mesh; returns a 2-D (8, 1) Auto mesh with a spare axis 'y' -- wrong on len(mesh.shape) / mesh.axis_names == ('x',)",
)
def _rt7_auto_mesh_two_axes() -> Mesh:
    return jax.make_mesh((8, 1), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))


@wrong(
    "auto_mesh",
    why="must be over all 8 devices; builds it over the first 4 devices only -- wrong on mesh.size == 8 (and every task that puts 16 rows on it)",
)
def _rt7_auto_mesh_four_devices() -> Mesh:
    devs = np.array(jax.devices()[:4])
    return Mesh(devs, ("x",), axis_types=(AxisType.Auto,))


# ---------------------------------------------------------------- 2 shard_rows
@wrong(
    "shard_rows",
    why="rows must split over axis 'x'; splits over the mesh's FIRST axis -- wrong on the ('y','x') (2, 4) mesh (rows split 2 ways over 'y')",
)
def _rt7_shard_rows_first_axis(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(x, NamedSharding(mesh, P(mesh.axis_names[0], None)))


@wrong(
    "shard_rows",
    why="dtype must be unchanged; converts through jnp.asarray(x, float32) first -- wrong on an int32, float16 or bfloat16 x",
)
def _rt7_shard_rows_as_float32(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(np.asarray(x, dtype=np.float32), NamedSharding(mesh, P("x", None)))


# ---------------------------------------------------------------- 3 collective_census
@wrong(
    "collective_census",
    why="must count collectives in every computation; counts ENTRY only -- wrong on the fori_loop sum (all-reduce in the while body) and any lax.cond branch",
)
def _rt7_census_entry_only(f, *args) -> Counter:
    entry = _rt7_entry_block(_rt7_compiled_text(f, *args))
    ops = re.findall(r"=\s*(?:\([^=]*?\)|\S+)\s+(" + "|".join(_rt7_COLLECTIVES) + r")\(", entry)
    return Counter(ops)


@wrong(
    "collective_census",
    why="counts opcodes only where the result shape is one array (regex `= \\S+ op(`); a variadic psum((a, b), 'x') in shard_map compiles to ONE all-reduce with a tuple shape `(f32[], f32[2,8]) all-reduce(...)` which is missed -- wrong on such a program (and on combined all-reduces)",
)
def _rt7_census_single_shape_regex(f, *args) -> Counter:
    text = _rt7_compiled_text(f, *args)
    return Counter(re.findall(r"= \S+ (" + "|".join(_rt7_COLLECTIVES) + r")\(", text))


_rt7_NAME_TO_OP = {
    "psum": "all-reduce",
    "all-reduce": "all-reduce",
    "all_gather": "all-gather",
    "all-gather": "all-gather",
    "psum_scatter": "reduce-scatter",
    "reduce_scatter": "reduce-scatter",
    "reduce-scatter": "reduce-scatter",
    "ppermute": "collective-permute",
    "collective-permute": "collective-permute",
    "all_to_all": "all-to-all",
    "all-to-all": "all-to-all",
}


@wrong(
    "collective_census",
    why="counts by instruction NAME (psum/ppermute/all_gather/... table), not opcode -- wrong whenever XLA names a collective otherwise, e.g. two_hops_and_sum (its psum's all-reduce is missed) or a pmax (`%pmax.2 = ... all-reduce`)",
)
def _rt7_census_by_name(f, *args) -> Counter:
    text = _rt7_compiled_text(f, *args)
    out = Counter()
    for name in re.findall(r"^\s*(?:ROOT\s+)?%?([\w\-]+?)(?:\.\d+)?\s*=", text, re.M):
        if name in _rt7_NAME_TO_OP:
            out[_rt7_NAME_TO_OP[name]] += 1
    return out


# ---------------------------------------------------------------- 4 device_param_shapes
@wrong(
    "device_param_shapes",
    why="must be in parameter-number order; returns printed order -- wrong on four_dtypes (uses d first, parameter(3) printed first)",
)
def _rt7_param_shapes_printed_order(f, *args):
    return [dims for _, dims, _ in _rt7_entry_params(_rt7_compiled_text(f, *args))]


@wrong(
    "device_param_shapes",
    why="sorts parameters by the number's TEXT ('10' < '2') -- wrong on any function of 11 or more read arguments (parameter(10) lands after parameter(1))",
)
def _rt7_param_shapes_text_sort(f, *args):
    params = _rt7_entry_params(_rt7_compiled_text(f, *args))
    return [dims for _, dims, _ in sorted(params, key=lambda p: p[0])]


@wrong(
    "device_param_shapes",
    why="must read the module (jit drops unused args); takes shard_shape of every input -- wrong on three_unused / skips_one (returns a shape for the dropped argument)",
)
def _rt7_param_shapes_from_inputs(f, *args):
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


# ---------------------------------------------------------------- 5 param_shardings
@wrong(
    "param_shardings",
    why="must be in parameter-number order; returns printed order -- wrong on four_dtypes (parameter(3) printed first)",
)
def _rt7_shardings_printed_order(f, *args):
    return [_rt7_sharding_of(line) for _, _, line in _rt7_entry_params(_rt7_lowered_hlo(f, *args))]


@wrong(
    "param_shardings",
    why="sorts by the parameter number's text ('10' < '2') -- wrong on a function of 11+ read, differently placed arguments",
)
def _rt7_shardings_text_sort(f, *args):
    params = _rt7_entry_params(_rt7_lowered_hlo(f, *args))
    return [_rt7_sharding_of(line) for _, _, line in sorted(params, key=lambda p: p[0])]


@wrong(
    "param_shardings",
    why="the annotation text must be as written; 'cleans' it by dropping ` last_tile_dim_replicate` -- wrong on any partially replicated parameter, e.g. P('x', None) on the 2x4 mesh: {devices=[2,1,4]<=[8] last_tile_dim_replicate}",
)
def _rt7_shardings_drop_replicate_suffix(f, *args):
    params = _rt7_entry_params(_rt7_lowered_hlo(f, *args))
    return [
        _rt7_sharding_of(line).replace(" last_tile_dim_replicate", "")
        for _, _, line in sorted(params, key=lambda p: int(p[0]))
    ]


# ---------------------------------------------------------------- 6 psum_total
@wrong(
    "psum_total",
    why="psum must be over 'x' only; sums over every mesh axis -- wrong on the (2, 4) mesh: 4x the total",
)
def _rt7_psum_total_all_axes(x, mesh: Mesh):
    names = tuple(mesh.axis_names)
    return jax.shard_map(
        lambda b: jax.lax.psum(b.sum(), names),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P(),
        check_vma=False,
    )(x)


@wrong(
    "psum_total",
    why="must psum ONE number per device; psums the whole block then sums -- moves r*cols elements per device instead of one (all-reduce of f32[2,8], not f32[]) on any input",
)
def _rt7_psum_total_block_first(x, mesh: Mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum(b, "x").sum(), mesh=mesh, in_specs=P("x", None), out_specs=P()
    )(x)


@wrong(
    "psum_total",
    why="result must be a scalar; keeps a (1,) shaped sum (keepdims) -- wrong shape () vs (1,) on every input",
)
def _rt7_psum_total_keepdims(x, mesh: Mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum(b.sum(keepdims=True).reshape(1), "x"),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P(),
    )(x)


# ---------------------------------------------------------------- 7 ring_shift
@wrong(
    "ring_shift",
    why="ring length is mesh.shape['x']; uses the FIRST axis' size -- wrong on the ('y','x') 2x4 mesh: pairs only 0<->1, positions 2 and 3 get zeros",
)
def _rt7_ring_shift_first_axis_size(x, mesh: Mesh):
    n = mesh.shape[mesh.axis_names[0]]
    pairs = [(i, (i + 1) % n) for i in range(n)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", pairs),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P("x", None),
    )(x)


@wrong(
    "ring_shift",
    why="block i must go to i+1; pairs written (i+1, i) (receiving from the right) -- moves every block to i-1, wrong on any mesh with n > 2 (e.g. the 8 mesh)",
)
def _rt7_ring_shift_backwards(x, mesh: Mesh):
    n = mesh.shape["x"]
    pairs = [((i + 1) % n, i) for i in range(n)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", pairs),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P("x", None),
    )(x)


@wrong(
    "ring_shift",
    why="must be ONE ppermute; all_gathers every block then takes block i-1 -- right values but an all-gather of the whole array, no collective-permute, on any input",
)
def _rt7_ring_shift_via_gather(x, mesh: Mesh):
    n = mesh.shape["x"]

    def local(b):
        everything = jax.lax.all_gather(b, "x")
        i = jax.lax.axis_index("x")
        return everything[(i - 1) % n]

    return jax.shard_map(
        local, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None), check_vma=False
    )(x)


# ---------------------------------------------------------------- 8 gather_rows
@wrong(
    "gather_rows",
    why="gather over 'x' only; gathers over every mesh axis -- wrong on the (2, 4) mesh: 4 copies of every row (4x the rows)",
)
def _rt7_gather_rows_all_axes(x, mesh: Mesh):
    names = tuple(mesh.axis_names)
    return jax.shard_map(
        lambda b: jax.lax.all_gather(b, names, tiled=True),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P(),
        check_vma=False,
    )(x)


@wrong(
    "gather_rows",
    why="rows must stay in order; stacks (untiled) and reshapes after swapping the first two axes -- interleaves rows; wrong whenever a block has 2+ rows (the 8 mesh, 2 rows per block)",
)
def _rt7_gather_rows_interleaved(x, mesh: Mesh):
    def local(b):
        g = jax.lax.all_gather(b, "x")  # (n, r, c)
        return jnp.swapaxes(g, 0, 1).reshape(-1, b.shape[1])

    return jax.shard_map(local, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


@wrong(
    "gather_rows",
    why="contract forbids a replicated out_sharding (the partitioner gathers; no all_gather inside shard_map) -- wrong on any input",
)
def _rt7_gather_rows_reshard(x, mesh: Mesh):
    return jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))(x)


# ---------------------------------------------------------------- 9 scatter_sum
@wrong(
    "scatter_sum",
    why="ONE collective must reduce and scatter; psums everything then keeps slice i -- an all-reduce of n times the data, no reduce-scatter, on any input",
)
def _rt7_scatter_sum_psum_then_slice(x, mesh: Mesh):
    n = mesh.shape["x"]

    def local(b):
        total = jax.lax.psum(b, "x")
        r = total.shape[0] // n
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("x") * r, r, 0)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


@wrong(
    "scatter_sum",
    why="dtype must be kept; reduces in float32 (astype before psum_scatter) -- wrong dtype on the int32 2x4 case",
)
def _rt7_scatter_sum_float32(x, mesh: Mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum_scatter(b.astype(jnp.float32), "x", tiled=True),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P("x", None),
    )(x)


@wrong(
    "scatter_sum",
    why="position i keeps slice i; uses scatter over the block's reversed rows ('last block first') -- position i gets slice n-1-i reversed: wrong on any n >= 2 with distinct rows",
)
def _rt7_scatter_sum_reversed(x, mesh: Mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum_scatter(b[::-1], "x", tiled=True),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P("x", None),
    )(x)


# ---------------------------------------------------------------- 10 predict_collectives
def _rt7_split_axes(case, entry, count_unit: bool):
    sizes = dict(case.mesh)
    if entry is None:
        return []
    names = entry if isinstance(entry, tuple) else (entry,)
    return [n for n in names if count_unit or sizes[n] > 1]


def _rt7_rules(case, count_unit=False, per_dim=True) -> dict[str, int]:
    spec = tuple(case.specs[0]) + (None, None)
    d0 = _rt7_split_axes(case, spec[0], count_unit)
    d1 = _rt7_split_axes(case, spec[1], count_unit)
    out: Counter = Counter()
    split_dims = [d for d in (d0, d1) if d]
    k = len(split_dims) if per_dim else min(1, len(split_dims))
    replicated = (
        case.out is not None
        and len(tuple(case.out)) == 0
        or (case.out is not None and all(e is None for e in tuple(case.out)))
    )
    op = case.op
    if op == "sum":
        if k:
            out["all-reduce"] += k
    elif op in ("sum0", "sum1", "softmax0", "softmax1", "reverse0", "reverse1"):
        own, other = (d0, d1) if op.endswith("0") else (d1, d0)
        if own:
            if op.startswith("sum"):
                out["all-reduce"] += 1
            elif op.startswith("softmax"):
                out["all-reduce"] += 2
            else:
                out["collective-permute"] += 1
        if replicated and other:
            out["all-gather"] += 1
        if replicated and own and not op.startswith("sum"):
            out["all-gather"] += 1
    elif op == "matmul":
        if d1:
            out["all-reduce"] += 1
        if replicated and d0:
            out["all-gather"] += 1
    elif op == "scale":
        if case.out is not None and not replicated:
            out["all-to-all"] += 1
        elif replicated:
            out["all-gather"] += k
    elif op == "transpose":
        if replicated:
            out["all-gather"] += k
    elif op == "add":
        if len(case.specs) > 1 and tuple(case.specs[1]) != tuple(case.specs[0]):
            out["all-to-all"] += 1
        if replicated:
            out["all-gather"] += k
    return {k_: v for k_, v in out.items() if v}


_rt7_BANK_BY_OP = {
    "matmul": {},
    "sum": {"all-reduce": 1},
    "sum1": {},
    "sum0": {"all-reduce": 1},
    "scale": {"all-gather": 1},
    "transpose": {},
    "reverse0": {"collective-permute": 1},
    "reverse1": {},
    "softmax0": {"all-reduce": 2},
    "softmax1": {},
    "add": {"all-to-all": 1},
}


@wrong(
    "predict_collectives",
    why="decides from the op name alone (the bank's row-split answers) -- wrong on x.sum() with x replicated, P(None, None) on any mesh: compiles to no collective, predicts one all-reduce",
)
def _rt7_predict_by_op_name(case) -> dict[str, int]:
    return dict(_rt7_BANK_BY_OP[case.op])


@wrong(
    "predict_collectives",
    why="treats an axis of size 1 as a split -- wrong on sum0 of x P('x', None) on mesh (('x', 1), ('y', 8)): no collective compiles, predicts an all-reduce",
)
def _rt7_predict_size_one_splits(case) -> dict[str, int]:
    return _rt7_rules(case, count_unit=True)


@wrong(
    "predict_collectives",
    why="one collective per op however many dimensions are split -- wrong on x.sum() with x P('x', 'y') on the 2x4 mesh (compiles to 2 all-reduces) and on x*2 replicated from P('x','y') (2 all-gathers)",
)
def _rt7_predict_one_per_op(case) -> dict[str, int]:
    return _rt7_rules(case, per_dim=False)


# ---------------------------------------------------------------- 11 place_weights
@wrong(
    "place_weights",
    why="memory budget: each device at most 1/n of each weight; splits w1 by columns but leaves w2 replicated (whole w2 on every device) -- wrong on every mesh with n > 1",
)
def _rt7_place_w2_replicated(w1, w2, mesh: Mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P())),
    )


@wrong(
    "place_weights",
    why="splits over the mesh's FIRST axis instead of 'x' -- right on the 8, 2x4 and 4x2 meshes, wrong on the ('y','x') 2x4 mesh: each device holds 1/2 of each weight, budget is 1/4",
)
def _rt7_place_first_axis(w1, w2, mesh: Mesh):
    a = mesh.axis_names[0]
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, a))),
        jax.device_put(w2, NamedSharding(mesh, P(a, None))),
    )


@wrong(
    "place_weights",
    why="dtypes must be unchanged; puts float32 copies (np.asarray(w, float32)) -- wrong on bfloat16 or float16 weights",
)
def _rt7_place_as_float32(w1, w2, mesh: Mesh):
    return (
        jax.device_put(np.asarray(w1, np.float32), NamedSharding(mesh, P(None, "x"))),
        jax.device_put(np.asarray(w2, np.float32), NamedSharding(mesh, P("x", None))),
    )


# ---------------------------------------------------------------- 12 predict_shard_shape
def _rt7_shard_shape(
    shape,
    spec,
    mesh_shape,
    *,
    check_tuple_members=True,
    flatten_dupes=True,
    strip_trailing_none=False,
):
    entries = list(spec)
    if strip_trailing_none:
        while entries and entries[-1] is None:
            entries.pop()
    if len(entries) > len(shape):
        return None
    seen: list[str] = []
    out = list(shape)
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        if flatten_dupes:
            seen.extend(names)
        else:
            seen.extend(set(names))
        pieces = 1
        for n in names:
            if n not in mesh_shape:
                if check_tuple_members or not isinstance(entry, tuple):
                    return None
                continue
            pieces *= mesh_shape[n]
        if out[i] % pieces:
            return None
        out[i] //= pieces
    if len(seen) != len(set(seen)):
        return None
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="checks axis membership only for single-name entries; a tuple member not in the mesh is skipped -- wrong on ((16, 8), P(('x', 'z')), {'x': 2, 'y': 4}): jax refuses (None), answer (8, 8)",
)
def _rt7_shard_shape_tuple_unknown_axis(shape, spec, mesh_shape):
    return _rt7_shard_shape(shape, spec, mesh_shape, check_tuple_members=False)


@wrong(
    "predict_shard_shape",
    why="detects a mesh axis named twice across entries but de-duplicates inside one tuple -- wrong on ((16, 8), P(('x', 'x')), {'x': 2, 'y': 4}) (refused, answers (4, 8))",
)
def _rt7_shard_shape_tuple_dupes(shape, spec, mesh_shape):
    return _rt7_shard_shape(shape, spec, mesh_shape, flatten_dupes=False)


@wrong(
    "predict_shard_shape",
    why="drops trailing None entries before the length check -- wrong on ((16, 8), P('x', None, None), {'x': 8}) and on ((), P(None), {'x': 8}): jax refuses, answers (2, 8) / ()",
)
def _rt7_shard_shape_strip_none(shape, spec, mesh_shape):
    return _rt7_shard_shape(shape, spec, mesh_shape, strip_trailing_none=True)


# ---------------------------------------------------------------- 13 predict_pmap_shapes
@wrong(
    "predict_pmap_shapes",
    why="the mapped dimension stays in the compiled program with size 1; drops it -- wrong on ([(4, 3)], [0]): ENTRY parameter f32[1,3], answers (3,)",
)
def _rt7_pmap_drop_axis(shapes, in_axes):
    return [
        tuple(s) if a is None else tuple(d for i, d in enumerate(s) if i != a)
        for s, a in zip(shapes, in_axes)
    ]


@wrong(
    "predict_pmap_shapes",
    why="moves the mapped dimension to the front as 1 (pmap's stacking); the compiled program keeps it in place -- wrong on ([(2, 4, 5)], [1]): ENTRY f32[2,1,5], answers (1, 2, 5)",
)
def _rt7_pmap_axis_to_front(shapes, in_axes):
    out = []
    for s, a in zip(shapes, in_axes):
        if a is None:
            out.append(tuple(s))
        else:
            rest = tuple(d for i, d in enumerate(s) if i != a)
            out.append((1, *rest))
    return out


@wrong(
    "predict_pmap_shapes",
    why="divides the mapped dimension by 8 (all devices) instead of the mapped size -- wrong whenever pmap runs on fewer than 8 devices, e.g. ([(4, 3)], [0]) gives (0, 3) not (1, 3)",
)
def _rt7_pmap_divide_by_eight(shapes, in_axes):
    out = []
    for s, a in zip(shapes, in_axes):
        s = list(s)
        if a is not None:
            s[a] = s[a] // 8
        out.append(tuple(s))
    return out


# ---------------------------------------------------------------- 14 collective_groups
def _rt7_iota(text: str):
    """`[G,S]<=[dims]T(perm)` or the short `[dims]T(perm)` -> np array."""
    m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if m:
        shape = [int(v) for v in m.group(1).split(",")]
        dims = [int(v) for v in m.group(2).split(",")]
        a = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(3):
            a = a.transpose([int(v) for v in m.group(3).split(",")])
        return a.reshape(shape)
    m = re.match(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if m:
        dims = [int(v) for v in m.group(1).split(",")]
        a = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(2):
            a = a.transpose([int(v) for v in m.group(2).split(",")])
        return a
    return None


def _rt7_groups_of(line: str, n: int, name_re: str):
    m = re.search(r"replica_groups=(\{\{.*?\}\}|\{\})", line)
    if m:
        if m.group(1) == "{}":
            return [list(range(n))]
        return [
            [int(v) for v in g.split(",") if v]
            for g in re.findall(r"\{([\d,]*)\}", m.group(1)[1:-1])
        ]
    m = re.search(r"replica_groups=(\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?)", line)
    if m:
        return _rt7_iota(m.group(1)).tolist()
    m = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", line)
    if m:
        axes = re.findall(r"'(" + name_re + r")'=(\d+)", m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        chosen = re.findall(r"'(" + name_re + r")'", m.group(2))
        if (
            not axes
            or int(np.prod(sizes)) != n
            and sum(1 for _ in re.finditer("=", m.group(1))) != len(axes)
        ):
            return [list(range(n))]
        ids = np.arange(int(np.prod(sizes)))
        d = re.search(r"device_ids=\(?([\[\]\d,<=T()]+)", line[m.end() :])
        if d:
            arr = _rt7_iota(d.group(1))
            if arr is not None:
                ids = arr.reshape(-1)
        grid = ids.reshape(sizes)
        idx = [names.index(c) for c in chosen if c in names]
        moved = np.moveaxis(grid, idx, list(range(len(sizes) - len(idx), len(sizes))))
        size = int(np.prod([sizes[i] for i in idx])) if idx else 1
        return moved.reshape(-1, size).tolist()
    return [list(range(n))]


def _rt7_collective_groups(hlo_text, *, name_re=r"[^']+", fixed_n=None, entry_only=False):
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    n = fixed_n or (int(m.group(1)) if m else 1)
    text = _rt7_entry_block(hlo_text) if entry_only else hlo_text
    out = Counter()
    ops = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
    for line in text.splitlines():
        o = re.search(r"\s(" + "|".join(ops) + r")(?:-start)?\(", line)
        if not o or "=" not in line:
            continue
        groups = _rt7_groups_of(line, n, name_re)
        key = tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
        out[(o.group(1), key)] += 1
    return out


@wrong(
    "collective_groups",
    why="mesh axis names read with \\w+ only -- wrong on mesh['data-parallel'=2,'model.0'=4] {'data-parallel'}: falls back to one group of all devices",
)
def _rt7_groups_word_names(hlo_text: str) -> Counter:
    return _rt7_collective_groups(hlo_text, name_re=r"\w+")


@wrong(
    "collective_groups",
    why="an empty {} / missing replica_groups taken as all 8 devices, not num_partitions -- wrong on a module with num_partitions=4 whose all-reduce has replica_groups={} (one group (0,1,2,3); answers 0..7); the listed spellings hide it",
)
def _rt7_groups_fixed_eight(hlo_text: str) -> Counter:
    return _rt7_collective_groups(hlo_text, fixed_n=8)


@wrong(
    "collective_groups",
    why="reads ENTRY only -- wrong on the shard_map psum inside a fori_loop (all-reduce in the while body) on the (y, x) 2x4 mesh",
)
def _rt7_groups_entry_only(hlo_text: str) -> Counter:
    return _rt7_collective_groups(hlo_text, entry_only=True)


# ---------------------------------------------------------------- 15 migrated_step
_rt7_LEARNING_RATE = 0.05


def _rt7_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="loss must be one replicated scalar; out_specs P('x') for the loss gives one per position -- shape (n,) not () on every mesh",
)
def _rt7_migrated_loss_per_device(w, x, y, mesh: Mesh):
    def local(w, xb, yb):
        loss, g = jax.value_and_grad(_rt7_loss)(w, xb, yb)
        return w - _rt7_LEARNING_RATE * jax.lax.pmean(g, "x"), jax.lax.pmean(loss, "x").reshape(1)

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P("x", None), P("x", None)),
        out_specs=(P(), P("x")),
        check_vma=False,
    )(w, x, y)


@wrong(
    "migrated_step",
    why="averages with psum / jax.device_count() (all 8 devices) instead of over 'x' -- right on the 8 mesh, wrong on the 2x4 mesh: gradient and loss 4x too small",
)
def _rt7_migrated_divide_by_device_count(w, x, y, mesh: Mesh):
    def local(w, xb, yb):
        loss, g = jax.value_and_grad(_rt7_loss)(w, xb, yb)
        k = jax.device_count()
        return w - _rt7_LEARNING_RATE * jax.lax.psum(g, "x") / k, jax.lax.psum(loss, "x") / k

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P("x", None), P("x", None)),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


@wrong(
    "migrated_step",
    why="with check_vma on, the gradient of the replicated w is already summed over 'x'; pmean of it leaves n times the mean -- new w off on every mesh with n > 1",
)
def _rt7_migrated_check_vma_default(w, x, y, mesh: Mesh):
    def local(w, xb, yb):
        loss, g = jax.value_and_grad(_rt7_loss)(w, xb, yb)
        return w - _rt7_LEARNING_RATE * jax.lax.pmean(g, "x"), jax.lax.pmean(loss, "x")

    return jax.shard_map(
        local, mesh=mesh, in_specs=(P(), P("x", None), P("x", None)), out_specs=(P(), P())
    )(w, x, y)


@wrong(
    "migrated_step",
    why="each device must receive only its own rows and collectives may move no more than pmap's; constrains x and y replicated then runs the whole step -- all-gathers the batch on any mesh",
)
def _rt7_migrated_gather_batch(w, x, y, mesh: Mesh):
    rep = NamedSharding(mesh, P())
    x = jax.lax.with_sharding_constraint(x, rep)
    y = jax.lax.with_sharding_constraint(y, rep)
    loss, g = jax.value_and_grad(_rt7_loss)(w, x, y)
    return jax.lax.with_sharding_constraint(
        w - _rt7_LEARNING_RATE * g, rep
    ), jax.lax.with_sharding_constraint(loss, rep)


@wrong(
    "shard_rows",
    why="must be placed on the given `mesh`; rebuilds a 1-D mesh of mesh.shape['x'] devices named 'x' and splits over it -- wrong on the (2, 4) mesh: the array lives on 2 devices only, not on the 8 of `mesh`, not copied along 'y'",
)
def _rt7_shard_rows_own_mesh(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    own = jax.make_mesh((n,), ("x",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])
    return jax.device_put(x, NamedSharding(own, P("x", None)))
