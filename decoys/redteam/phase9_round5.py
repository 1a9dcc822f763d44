"""Red-team wrong answers for phase 9, written from the contract only.

Round 5: every answer below is meant to agree with a correct one on the programs, banks and
cases programs.py / collective_programs.py / pmap_programs.py show, and to be wrong on a valid
input those lack (another nesting place, dtype, rank, name spelling, ordering, mesh layout,
size), named in each `why`.
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt5_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


# --------------------------------------------------------------------------- helpers


def _rt5_compiled_text(f, *args) -> str:
    return jax.jit(f).lower(*args).compile().as_text()


def _rt5_lowered_text(f, *args) -> str:
    return jax.jit(f).lower(*args).as_text(dialect="hlo")


def _rt5_parse(text):
    from xla_inspect.parse import parse_hlo

    return parse_hlo(text)


def _rt5_dims(shape: str) -> tuple[int, ...]:
    inner = shape[shape.index("[") + 1 : shape.index("]")]
    return tuple(int(d) for d in inner.split(",") if d)


# --------------------------------------------------------------------------- task 1: auto_mesh


@wrong(
    "auto_mesh",
    why="'a 1-D mesh over all 8 devices': builds (n, 1) with axes ('x', 'y') to be ready for 2-D "
    "work; mesh.shape['x'] == 8 and Auto, but it is 2-D (axis_names has 2 entries, ndim 2)",
)
def _rt5_auto_mesh_two_axes() -> Mesh:
    return jax.make_mesh((8, 1), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))


@wrong(
    "auto_mesh",
    why="'where XLA propagates shardings itself' is AxisType.Auto; Manual (what shard_map "
    "bodies use) is not: wrong on every call (axis_types == (Manual,))",
)
def _rt5_auto_mesh_manual() -> Mesh:
    return Mesh(np.array(jax.devices()), ("x",), axis_types=(AxisType.Manual,))


@wrong(
    "auto_mesh",
    why="'over all 8 devices': takes half of jax.devices() (4 devices, mesh.size 4) as a 1-D "
    "Auto mesh 'x'; wrong on every call (the mesh lacks devices 4..7)",
)
def _rt5_auto_mesh_half() -> Mesh:
    devices = jax.devices()
    return Mesh(np.array(devices[: len(devices) // 2]), ("x",), axis_types=(AxisType.Auto,))


# --------------------------------------------------------------------------- task 2: shard_rows


@wrong(
    "shard_rows",
    why="'rows split across mesh axis \"x\"': splits over the mesh's FIRST axis; wrong on the "
    "('y','x') 2x4 mesh (rows in 2 pieces over 'y', copied along 'x')",
)
def _rt5_shard_rows_first_axis(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P(mesh.axis_names[0], None)))


@wrong(
    "shard_rows",
    why="'Put x on mesh': places on a new 1-D mesh made of mesh.shape['x'] devices; equal on the "
    "8-device mesh, but on a 2x4 mesh the array lives on 2 devices only, not on `mesh`",
)
def _rt5_shard_rows_own_mesh(x, mesh):
    n = mesh.shape["x"]
    own = jax.make_mesh((n,), ("x",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])
    return jax.device_put(x, NamedSharding(own, P("x", None)))


@wrong(
    "shard_rows",
    why="'Values and dtype unchanged': goes through jnp.asarray(x, dtype=jnp.result_type(x, 0.0)) "
    "to 'normalize' the input; float32/float16/bf16 stay, int32 becomes float32 (the (6, 5) "
    "int32 array on 2x4, or any int/bool input)",
)
def _rt5_shard_rows_float_promote(x, mesh):
    x = jnp.asarray(x, dtype=jnp.result_type(x, 0.0))
    return jax.device_put(x, NamedSharding(mesh, P("x", None)))


# --------------------------------------------------------------------------- task 3: census


@wrong(
    "collective_census",
    why="'in every computation': walks from ENTRY through body=/condition=/calls=/to_apply= "
    "but not branch_computations: misses a psum inside a lax.cond branch of a shard_map "
    "(compiled: conditional(...), branch_computations={%region_0.0_spmd, ...})",
)
def _rt5_collective_census_no_branches(f, *args) -> Counter:
    module = _rt5_parse(_rt5_compiled_text(f, *args))
    seen, todo, counts = set(), [module.entry.name], Counter()
    while todo:
        name = todo.pop()
        if name in seen or name not in module:
            continue
        seen.add(name)
        for ins in module[name]:
            if ins.opcode in _rt5_COLLECTIVES:
                counts[ins.opcode] += 1
            for key in ("body", "condition", "calls", "to_apply"):
                value = ins.attribute(key)
                if value:
                    todo.extend(re.findall(r"%?([\w.\-]+)", value))
    return counts


@wrong(
    "collective_census",
    why="'counted by opcode': regex `= (\\S+) (opcode)\\(` assumes a shape without spaces; a "
    "tuple-shaped all-reduce `(f32[3,1]{1,0}, f32[]) all-reduce(` (the inherited pmap step, "
    "two pmeans, or jit of a whole-batch step) is not counted, nor a tuple all-to-all",
)
def _rt5_collective_census_no_tuple_shapes(f, *args) -> Counter:
    text = _rt5_compiled_text(f, *args)
    pattern = re.compile(r"=\s+(\S+)\s+(" + "|".join(_rt5_COLLECTIVES) + r")\(")
    return Counter(m.group(2) for m in pattern.finditer(text))


_rt5_PRIMITIVE_NAMES = {
    "psum": "all-reduce",
    "psum_invariant": "all-reduce",
    "all_gather": "all-gather",
    "ppermute": "collective-permute",
    "reduce_scatter": "reduce-scatter",
    "psum_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
    "all-reduce": "all-reduce",
    "all-gather": "all-gather",
    "reduce-scatter": "reduce-scatter",
    "collective-permute": "collective-permute",
    "all-to-all": "all-to-all",
}


@wrong(
    "collective_census",
    why="'by opcode, never names': maps instruction NAMES through a table of jax primitives; "
    "a shard_map with lax.pmax / lax.pmin (`%pmax.3 = f32[] all-reduce(`) or "
    "jax.lax.all_to_all named otherwise is missed",
)
def _rt5_collective_census_by_name_table(f, *args) -> Counter:
    module = _rt5_parse(_rt5_compiled_text(f, *args))
    counts = Counter()
    for computation in module:
        for ins in computation:
            stem = re.sub(r"(\.\d+)+$", "", ins.name)
            if stem in _rt5_PRIMITIVE_NAMES and ins.opcode in _rt5_COLLECTIVES:
                counts[_rt5_PRIMITIVE_NAMES[stem]] += 1
    return counts


# --------------------------------------------------------------------------- task 4: param shapes


def _rt5_entry_params(text):
    module = _rt5_parse(text)
    return [i for i in module.entry if i.opcode == "parameter"]


@wrong(
    "device_param_shapes",
    why="'in parameter-number order': sorts by the payload TEXT ('10' < '2'); right for up to "
    "10 parameters, wrong for a function of 11+ read arguments",
)
def _rt5_device_param_shapes_text_sort(f, *args):
    params = sorted(_rt5_entry_params(_rt5_compiled_text(f, *args)), key=lambda i: str(i.payload))
    return [_rt5_dims(i.shape) for i in params]


@wrong(
    "device_param_shapes",
    why="'One tuple per parameter': regex `\\w+\\[(\\d+)(?:,(\\d+))?\\]` reads at most two "
    "dimensions; a rank-3 parameter (x f32[16,4,2] row-split gives f32[2,4,2]) comes back (2, 4)",
)
def _rt5_device_param_shapes_rank2(f, *args):
    params = sorted(_rt5_entry_params(_rt5_compiled_text(f, *args)), key=lambda i: int(i.payload))
    out = []
    for ins in params:
        m = re.match(r"\w+\[(\d+)?(?:,(\d+))?", ins.shape)
        out.append(tuple(int(d) for d in m.groups() if d is not None))
    return out


@wrong(
    "device_param_shapes",
    why="'One tuple per parameter': reads the ENTRY line with regex `(f32|f16|bf16|s32)\\[...\\]`, "
    "the dtypes the phase names; a bool (pred[...]), uint8, int8 or f64 parameter is skipped",
)
def _rt5_device_param_shapes_known_dtypes(f, *args):
    out = {}
    for ins in _rt5_entry_params(_rt5_compiled_text(f, *args)):
        m = re.match(r"(f32|f16|bf16|s32)\[([\d,]*)\]", ins.shape)
        if m:
            out[int(ins.payload)] = tuple(int(d) for d in m.group(2).split(",") if d)
    return [out[k] for k in sorted(out)]


# --------------------------------------------------------------------------- task 5: shardings


def _rt5_lowered_params(f, *args):
    return _rt5_entry_params(_rt5_lowered_text(f, *args))


def _rt5_sharding(ins) -> str:
    m = re.search(r"sharding=(\{[^}]*\})", ins.attributes_text)
    return m.group(1) if m else ""


@wrong(
    "param_shardings",
    why="'in parameter-number order': sorts the ENTRY parameters by NAME (a.1, c.1, s.1); the "
    "banks' arguments happen to be named alphabetically, wrong for def f(x, w) with x "
    "row-split and w replicated ('w.1' sorts before 'x.1')",
)
def _rt5_param_shardings_by_name(f, *args):
    return [_rt5_sharding(i) for i in sorted(_rt5_lowered_params(f, *args), key=lambda i: i.name)]


@wrong(
    "param_shardings",
    why="'in parameter-number order': sorts by payload text; wrong with 11+ read arguments "
    "(parameter(10) sorts before parameter(2))",
)
def _rt5_param_shardings_text_sort(f, *args):
    return [
        _rt5_sharding(i)
        for i in sorted(_rt5_lowered_params(f, *args), key=lambda i: str(i.payload))
    ]


@wrong(
    "param_shardings",
    why="'One string per parameter': regex `parameter\\((\\d)\\), sharding=(...)` with one digit; "
    "right up to 10 parameters, parameters 10 and up are dropped (a function of 11+ read "
    "arguments)",
)
def _rt5_param_shardings_one_digit(f, *args):
    found = re.findall(r"parameter\((\d)\),\s*sharding=(\{[^}]*\})", _rt5_lowered_text(f, *args))
    return [s for _, s in sorted(found, key=lambda t: int(t[0]))]


# --------------------------------------------------------------------------- task 6: psum_total


@wrong(
    "psum_total",
    why="'one psum of that single number over \"x\"': pmean over 'x' times mesh.size (the "
    "device count) instead of mesh.shape['x']; equal on the 8 mesh, 4x too big on 2x4, 2x on 4x2",
)
def _rt5_psum_total_mesh_size(x, mesh):
    def body(block):
        return jax.lax.pmean(block.sum(), "x") * mesh.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


@wrong(
    "psum_total",
    why="'one psum of that single number': psums the column sums (a vector of cols numbers) "
    "and sums after; same value, but the all-reduce moves f32[cols], not f32[] (wrong on any "
    "x with more than one column, e.g. f32[16,8] on the 8 mesh)",
)
def _rt5_psum_total_psum_columns(x, mesh):
    def body(block):
        return jax.lax.psum(block.sum(0), "x").sum()

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


@wrong(
    "psum_total",
    why="'psum over \"x\" only': psums over mesh.axis_names[0] with check_vma=False to quiet "
    "the error; on the ('y','x') mesh that adds the 2 identical copies along 'y' and never "
    "sums the 4 row blocks along 'x'",
)
def _rt5_psum_total_first_axis(x, mesh):
    axis = mesh.axis_names[0]

    def body(block):
        return jax.lax.psum(block.sum(), axis)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


# --------------------------------------------------------------------------- task 7: ring_shift


@wrong(
    "ring_shift",
    why="'one ppermute inside shard_map' and position count n = mesh.shape['x']: a jnp.roll of "
    "x.shape[0] // 8 rows (8 hard-coded); right on the 8 mesh, on 2x4 it moves 1/8 of the rows "
    "instead of a whole block of 1/2",
)
def _rt5_ring_shift_roll_eight(x, mesh):
    rows = x.shape[0] // 8
    return jax.jit(
        lambda a: jnp.roll(a, rows, axis=0), out_shardings=NamedSharding(mesh, P("x", None))
    )(x)


@wrong(
    "ring_shift",
    why="'the last block to position 0': pairs (i, i+1) for i < n-1 only, no wrap; position 0 "
    "gets zeros (any mesh, e.g. 8 mesh f32[16,8])",
)
def _rt5_ring_shift_no_wrap(x, mesh):
    n = mesh.shape["x"]
    pairs = [(i, i + 1) for i in range(n - 1)]

    def body(block):
        return jax.lax.ppermute(block, "x", pairs)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


@wrong(
    "ring_shift",
    why="'move the BLOCK of rows': shifts the rows by one (each block sends its last row to the "
    "next position); right when a block is one row (y2x4 with 4 rows), wrong for blocks of 2+ "
    "rows (8 mesh, f32[16,8])",
)
def _rt5_ring_shift_one_row(x, mesh):
    n = mesh.shape["x"]
    pairs = [(i, (i + 1) % n) for i in range(n)]

    def body(block):
        last = jax.lax.ppermute(block[-1:], "x", pairs)
        return jnp.concatenate([last, block[:-1]], axis=0)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


# --------------------------------------------------------------------------- task 8: gather_rows


@wrong(
    "gather_rows",
    why="'one all_gather over mesh axis \"x\"': gathers over all mesh axes; on a 2x4 mesh the "
    "4 copies along 'y' are gathered too (result has 4x the rows)",
)
def _rt5_gather_rows_all_axes(x, mesh):
    axes = tuple(mesh.axis_names)

    def body(block):
        return jax.lax.all_gather(block, axes, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


@wrong(
    "gather_rows",
    why="'a replicated result': gathers correctly but declares out_specs=P('x') (row-sharded): "
    "the global result has n times the rows (8 mesh: 128 rows for 16)",
)
def _rt5_gather_rows_row_out(x, mesh):
    def body(block):
        return jax.lax.all_gather(block, "x", tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


@wrong(
    "gather_rows",
    why="'One all_gather': writes its block into zeros at axis_index*r and psums over 'x'; "
    "same values, but an all-reduce of the whole array, no all-gather (any mesh)",
)
def _rt5_gather_rows_psum_zeros(x, mesh):
    n = mesh.shape["x"]

    def body(block):
        r = block.shape[0]
        full = jnp.zeros((n * r,) + block.shape[1:], block.dtype)
        full = jax.lax.dynamic_update_slice_in_dim(full, block, jax.lax.axis_index("x") * r, 0)
        return jax.lax.psum(full, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


# --------------------------------------------------------------------------- task 9: scatter_sum


@wrong(
    "scatter_sum",
    why="'position i keeps slice i of rows': reshapes the block to (r//n, n, c) and scatters "
    "dimension 1, so position i keeps rows i, i+n, ... (strided); right when a slice is one row "
    "(the 8 mesh with 8-row blocks), wrong for 2+-row slices",
)
def _rt5_scatter_sum_strided(x, mesh):
    n = mesh.shape["x"]

    def body(block):
        r, c = block.shape
        parts = block.reshape(r // n, n, c)
        out = jax.lax.psum_scatter(parts, "x", scatter_dimension=1, tiled=False)
        return out.reshape(r // n, c)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


@wrong(
    "scatter_sum",
    why="'Sum the n row blocks over \"x\"': psum_scatter over all mesh axes (check_vma=False) "
    "when the block's rows divide by mesh.size; on a 2x4 mesh with 8-row blocks (x f32[16,5]) "
    "it also adds the 4 identical copies along 'y' and cuts into 8 slices",
)
def _rt5_scatter_sum_all_axes(x, mesh):
    axes = tuple(mesh.axis_names)

    def body(block):
        if block.shape[0] % mesh.size:  # cannot cut into mesh.size slices: stay on "x"
            return jax.lax.psum_scatter(block, "x", scatter_dimension=0, tiled=True)
        return jax.lax.psum_scatter(block, axes, scatter_dimension=0, tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None), check_vma=False
    )(x)


@wrong(
    "scatter_sum",
    why="'cut it into n slices of rows': scatters the columns (scatter_dimension=1); shape "
    "(r, c/n) per position instead of (r/n, c) whenever the columns divide by n "
    "(f32[64,8] on the 8 mesh); falls back to rows otherwise",
)
def _rt5_scatter_sum_columns(x, mesh):
    n = mesh.shape["x"]

    def body(block):
        if block.shape[1] % n:  # columns do not split: fall back to rows
            return jax.lax.psum_scatter(block, "x", scatter_dimension=0, tiled=True)
        return jax.lax.psum_scatter(block, "x", scatter_dimension=1, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


# --------------------------------------------------------------------------- task 10: predict


def _rt5_pieces(entry, sizes, count_size_one=False, tuple_per_axis=False):
    """How many collectives a dimension split by `entry` costs (0 when not split)."""
    if entry is None:
        return 0
    names = entry if isinstance(entry, tuple) else (entry,)
    real = [n for n in names if count_size_one or sizes.get(n, 1) > 1]
    if not real:
        return 0
    return len(real) if tuple_per_axis else 1


def _rt5_predict(case, *, count_size_one=False, tuple_gathers=False, transpose_one=False):
    sizes = dict(case.mesh)
    spec = tuple(case.specs[0]) + (None,) * (2 - len(tuple(case.specs[0])))
    split = [_rt5_pieces(e, sizes, count_size_one) for e in spec]
    gath = [_rt5_pieces(e, sizes, count_size_one, tuple_per_axis=tuple_gathers) for e in spec]
    out: Counter = Counter()
    op, replicated = case.op, case.out is not None and tuple(case.out) == ()
    moved = case.out is not None and not replicated
    if op == "sum":
        out["all-reduce"] += sum(split)
    elif op in ("sum0", "sum1"):
        k = int(op[-1])
        out["all-reduce"] += split[k]
        if replicated:
            out["all-gather"] += gath[1 - k]
    elif op in ("softmax0", "softmax1"):
        k = int(op[-1])
        out["all-reduce"] += 2 * split[k]
        if replicated:
            out["all-gather"] += sum(gath)
    elif op in ("reverse0", "reverse1"):
        out["collective-permute"] += split[int(op[-1])]
        if replicated:
            out["all-gather"] += sum(gath)
    elif op == "transpose":
        if replicated:
            out["all-gather"] += min(1, sum(gath)) if transpose_one else sum(gath)
    elif op == "matmul":
        out["all-reduce"] += split[1]
        if replicated:
            out["all-gather"] += gath[0]
    elif op == "scale":
        if moved and any(split):
            out["all-to-all"] += 1
        elif replicated:
            out["all-gather"] += sum(gath)
    elif op == "add":
        y = tuple(case.specs[1]) + (None,) * (2 - len(tuple(case.specs[1])))
        if y != spec and any(split):
            out["all-to-all"] += 1
            if replicated:
                out["all-gather"] += 1
        elif replicated:
            out["all-gather"] += sum(gath)
    return {k: v for k, v in out.items() if v}


@wrong(
    "predict_collectives",
    why="counts a dimension as split when its spec names an axis, whatever the axis's size; "
    "ShardedOp allows any mesh of 8 devices, and an axis of size 1 splits nothing: sum of "
    "x P('x','y') on mesh (('x',8),('y',1)) compiles to 1 all-reduce, this says 2",
)
def _rt5_predict_collectives_size_one(case):
    return _rt5_predict(case, count_size_one=True)


@wrong(
    "predict_collectives",
    why="'a dimension split over a tuple still moves in one collective' applied to reductions "
    "only: a replicated result gathers once per axis of the tuple; scale/transpose/sum0 etc. "
    "with x P(('a','b'), None) and out P() compile to 1 all-gather, this says 2",
)
def _rt5_predict_collectives_tuple_gathers(case):
    return _rt5_predict(case, tuple_gathers=True)


@wrong(
    "predict_collectives",
    why="'count per dimension': a transpose returned replicated is written as one all-gather "
    "whatever x's split; transpose of x P('a','b') on a 2x4 mesh, out P(), compiles to 2 "
    "all-gathers (only draw_case reaches transpose with both dimensions split)",
)
def _rt5_predict_collectives_transpose_one(case):
    return _rt5_predict(case, transpose_one=True)


# --------------------------------------------------------------------------- task 11: weights


@wrong(
    "place_weights",
    why="'1/n of each weight, n = mesh.shape[\"x\"]': splits over mesh.axis_names[0]; the "
    "placement cases (8, 2x4, 4x2) have 'x' first, but on the ('y','x') 2x4 mesh each device "
    "holds 1/2 of each weight where 1/4 is allowed",
)
def _rt5_place_weights_first_axis(w1, w2, mesh):
    axis = mesh.axis_names[0]
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, axis))),
        jax.device_put(w2, NamedSharding(mesh, P(axis, None))),
    )


@wrong(
    "place_weights",
    why="'values and dtypes unchanged': casts both weights to float32 'for the matmul'; the "
    "cases are float32, wrong for bfloat16 or float16 weights",
)
def _rt5_place_weights_float32(w1, w2, mesh):
    return (
        jax.device_put(jnp.asarray(w1, jnp.float32), NamedSharding(mesh, P(None, "x"))),
        jax.device_put(jnp.asarray(w2, jnp.float32), NamedSharding(mesh, P("x", None))),
    )


@wrong(
    "place_weights",
    why="'collectives may move at most half the bytes of first_placement': w1 column-split "
    "but w2 column-split too; the hidden layer must be gathered (batch x hidden) and the "
    "output too: as many bytes as first_placement (any placement case)",
)
def _rt5_place_weights_both_columns(w1, w2, mesh):
    cols = NamedSharding(mesh, P(None, "x"))
    if w2.shape[1] % mesh.shape["x"]:
        return jax.device_put(w1, cols), jax.device_put(w2, NamedSharding(mesh, P("x", None)))
    return jax.device_put(w1, cols), jax.device_put(w2, cols)


# --------------------------------------------------------------------------- task 12: shard shape


def _rt5_shard_shape(
    shape, spec, mesh_shape, *, per_axis=False, tuple_get=False, dup_flat=True, dup_split=False
):
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    used: list[str] = []
    out = list(shape)
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        if dup_split:  # only axes that really cut something can clash
            used.extend(n for n in names if mesh_shape.get(n, 1) > 1)
        elif dup_flat:
            used.extend(names)
        else:
            used.extend(set(names))
        pieces = 1
        for name in names:
            if name not in mesh_shape:
                if tuple_get and isinstance(entry, tuple):
                    continue
                return None
            pieces *= mesh_shape[name]
            if per_axis and shape[i] % mesh_shape[name]:
                return None
        if not per_axis and shape[i] % pieces:
            return None
        out[i] = shape[i] // pieces
    if len(used) != len(set(used)):
        return None
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a dimension that its axes' pieces do not divide': checks the dimension against each "
    "axis of a tuple separately, not their product: (4,) with P(('x','y')) on {x:2, y:4} "
    "passes 4%2 and 4%4 and returns (0,); jax refuses (4 does not divide by 8); the same "
    "with (12, 4) gives (1, 4)",
)
def _rt5_predict_shard_shape_per_axis(shape, spec, mesh_shape):
    return _rt5_shard_shape(shape, spec, mesh_shape, per_axis=True)


@wrong(
    "predict_shard_shape",
    why="'an axis that is not in mesh_shape': checked for single names, but a name inside a "
    "tuple is looked up with a default size of 1: P(('x','z')) on {x:2, y:4} gives a shape "
    "instead of None",
)
def _rt5_predict_shard_shape_tuple_unknown(shape, spec, mesh_shape):
    return _rt5_shard_shape(shape, spec, mesh_shape, tuple_get=True)


@wrong(
    "predict_shard_shape",
    why="'a mesh axis named twice': collects each entry's names as a set, so a name repeated "
    "inside one tuple, P(('x','x')) on {x:2, y:4} with (16, 8), is not seen (and the "
    "product 2*2=4 divides 16): returns (4, 8), jax refuses",
)
def _rt5_predict_shard_shape_dup_in_tuple(shape, spec, mesh_shape):
    return _rt5_shard_shape(shape, spec, mesh_shape, dup_flat=False)


@wrong(
    "predict_shard_shape",
    why="'a mesh axis named twice' is refused: checks repeats only among axes longer than 1 "
    "(a size-1 axis 'splits nothing'); (16, 8) with P('y', 'y') on {x: 8, y: 1} returns "
    "(16, 8), jax raises DuplicateSpecError (checked outside the kata)",
)
def _rt5_predict_shard_shape_dup_size_one(shape, spec, mesh_shape):
    return _rt5_shard_shape(shape, spec, mesh_shape, dup_split=True)


# --------------------------------------------------------------------------- task 13: pmap shapes


@wrong(
    "predict_pmap_shapes",
    why="'pmap over 1 to 8 devices': divides the mapped dimension by jax.device_count() (8); "
    "right for 8-device pmaps, 0 instead of 1 for a pmap over 4 devices (shape (4, 3) in_axes 0)",
)
def _rt5_predict_pmap_shapes_eight(shapes, in_axes):
    n = jax.device_count()
    out = []
    for shape, ax in zip(shapes, in_axes):
        shape = list(shape)
        if ax is not None:
            shape[ax] = shape[ax] // n
        out.append(tuple(shape))
    return out


@wrong(
    "predict_pmap_shapes",
    why="device count read from the FIRST argument (shapes[0][in_axes[0] or 0]) and each "
    "mapped dimension divided by it: wrong when argument 0 is unmapped, e.g. shapes "
    "[(2, 5), (8, 2)] with in_axes [None, 0] gives [(2, 5), (4, 2)] for [(2, 5), (1, 2)]",
)
def _rt5_predict_pmap_shapes_first_arg(shapes, in_axes):
    first = shapes[0]
    n = first[in_axes[0] or 0] if first else 1
    out = []
    for shape, ax in zip(shapes, in_axes):
        shape = list(shape)
        if ax is not None:
            shape[ax] = max(shape[ax] // n, 1) if n else shape[ax]
        out.append(tuple(shape))
    return out


@wrong(
    "predict_pmap_shapes",
    why="'a mapped argument keeps its mapped dimension, size 1': keeps it for rank >= 2 but "
    "drops it for a rank-1 argument (pmap's body sees a scalar), so f32[8] in_axes 0 gives () "
    "instead of (1,)",
)
def _rt5_predict_pmap_shapes_rank1_scalar(shapes, in_axes):
    out = []
    for shape, ax in zip(shapes, in_axes):
        if ax is None:
            out.append(tuple(shape))
        elif len(shape) == 1:
            out.append(())
        else:
            out.append(tuple(1 if i == ax else d for i, d in enumerate(shape)))
    return out


@wrong(
    "predict_pmap_shapes",
    why="'in_axes[i] is the dimension pmap maps over': finds the mapped dimension as the first "
    "one whose size is the device count n; wrong when an earlier dimension also has size n, "
    "e.g. [(4, 4)] with in_axes [1] gives (1, 4) for (4, 1)",
)
def _rt5_predict_pmap_shapes_find_by_size(shapes, in_axes):
    mapped = [shape[ax] for shape, ax in zip(shapes, in_axes) if ax is not None]
    n = mapped[0] if mapped else None
    out = []
    for shape, ax in zip(shapes, in_axes):
        shape = list(shape)
        if ax is not None:
            at = shape.index(n) if n in shape else ax
            shape[at] = 1
        out.append(tuple(shape))
    return out


# --------------------------------------------------------------------------- task 14: groups


def _rt5_iota(dims_groups, reshape, perm, *, reverse_t=False):
    arr = np.arange(int(np.prod(reshape))).reshape(reshape)
    if perm is not None:
        arr = arr.T if reverse_t else arr.transpose(perm)
    return arr.reshape(dims_groups)


def _rt5_ints(text):
    return [int(v) for v in re.findall(r"\d+", text)]


def _rt5_parse_iota(text, reverse_t=False):
    m = re.match(r"\s*\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    perm = _rt5_ints(m.group(3)) if m.group(3) else None
    return _rt5_iota(_rt5_ints(m.group(1)), _rt5_ints(m.group(2)), perm, reverse_t=reverse_t)


def _rt5_device_ids(text, n, reverse_t=False, inverse=False):
    m = re.search(r"device_ids=\(?\s*(\[[^\]]*\](?:<=\[[^\]]*\])?(?:T\([\d,]+\))?|[\d,\s]+)", text)
    if not m:
        return np.arange(n)
    value = m.group(1)
    if "<=" in value:
        ids = _rt5_parse_iota(value, reverse_t).reshape(-1)
    elif value.startswith("["):
        mm = re.match(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", value)
        dims = _rt5_ints(mm.group(1))
        arr = np.arange(int(np.prod(dims))).reshape(dims)
        if mm.group(2):
            arr = arr.T if reverse_t else arr.transpose(_rt5_ints(mm.group(2)))
        ids = arr.reshape(-1)
    else:
        ids = np.array(_rt5_ints(value))
    return np.argsort(ids) if inverse else ids


def _rt5_groups(
    line,
    num_partitions,
    *,
    reverse_t=False,
    inverse=False,
    name_re=r"'([^']*)'=(\d+)",
    skip_absent=False,
):
    at = line.find("replica_groups=")
    if at < 0:
        return None if skip_absent else [list(range(num_partitions))]
    value = line[at + len("replica_groups=") :]
    if value.startswith("mesh["):
        head = value[5 : value.index("]")]
        axes = re.findall(name_re, head)
        if not axes:
            return [list(range(num_partitions))]
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        rest = value[value.index("]") + 1 :]
        chosen = re.findall(r"'([^']*)'", rest[: rest.index("}") + 1])
        total = int(np.prod(sizes))
        ids = _rt5_device_ids(rest, total, reverse_t, inverse)
        arr = np.asarray(ids).reshape(sizes)
        where = [names.index(c) for c in chosen if c in names]
        arr = np.moveaxis(arr, where, list(range(len(sizes) - len(where), len(sizes))))
        size = int(np.prod([sizes[i] for i in where])) if where else 1
        return arr.reshape(-1, size).tolist()
    if value.startswith("{"):
        if value.startswith("{}"):
            return [list(range(num_partitions))]
        depth, end = 0, 0
        for i, ch in enumerate(value):
            depth += ch == "{"
            depth -= ch == "}"
            if depth == 0:
                end = i
                break
        return [_rt5_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", value[1:end])]
    return _rt5_parse_iota(value, reverse_t).tolist()


def _rt5_collective_groups(hlo_text, **kw):
    first = hlo_text.splitlines()[0] if hlo_text else ""
    m = re.search(r"num_partitions=(\d+)", first)
    n = int(m.group(1)) if m else 1
    counts = Counter()
    pattern = re.compile(r"\s(all-reduce|all-gather|reduce-scatter|all-to-all)\(")
    for line in hlo_text.splitlines():
        mm = pattern.search(line)
        if not mm or "=" not in line[: mm.start()]:
            continue
        groups = _rt5_groups(line, n, **kw)
        if groups is None:
            continue
        key = tuple(sorted(tuple(sorted(int(d) for d in g)) for g in groups))
        counts[(mm.group(1), key)] += 1
    return counts


@wrong(
    "collective_groups",
    why="iota list: 'transposed by' the T(...) permutation is done with numpy .T (reverse all "
    "axes); same for 2-D reshapes, wrong for a 3-D one, e.g. [4,2]<=[2,2,2]T(0,2,1) "
    "(groups {0,2},{1,3},{4,6},{5,7}; .T gives {0,4},{2,6},{1,5},{3,7})",
)
def _rt5_collective_groups_reverse_t(hlo_text):
    return _rt5_collective_groups(hlo_text, reverse_t=True)


@wrong(
    "collective_groups",
    why="'device_ids gives the device number at each mesh position': uses it as the position "
    "of each device (argsort); mesh['y'=2,'x'=4] {'x'}, device_ids=([2,4]T(1,0)) gives "
    "{0,2,4,6},{1,3,5,7} instead of {0,1,4,5},{2,3,6,7} (0.12 prints no device_ids: only "
    "0.10's spelling or a rewrite shows it)",
)
def _rt5_collective_groups_inverse_ids(hlo_text):
    return _rt5_collective_groups(hlo_text, inverse=True)


@wrong(
    "collective_groups",
    why="'no replica_groups at all: one group of all num_partitions devices': an all-reduce "
    "without replica_groups is skipped (the regex needs the attribute); the module's banks "
    "always print one, a rewritten module without it gives a missing key",
)
def _rt5_collective_groups_skip_absent(hlo_text):
    return _rt5_collective_groups(hlo_text, skip_absent=True)


@wrong(
    "collective_groups",
    why="mesh spelling parsed with `'(\\w+)'=(\\d+)`: axis names that are not word characters "
    "(mesh['data-parallel'=2,'model.0'=4] {'model.0'}, a renamed mesh) fall back to one group "
    "of all devices",
)
def _rt5_collective_groups_word_names(hlo_text):
    return _rt5_collective_groups(hlo_text, name_re=r"'(\w+)'=(\d+)")


# --------------------------------------------------------------------------- task 15: migrate

_rt5_LR = 0.05


def _rt5_mse(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="'the step is n = mesh.shape[\"x\"] times too large: divide by n': divides the "
    "already-summed gradient by mesh.size; right on the 8 mesh, 4x too small a step on 2x4 "
    "and 2x on 4x2",
)
def _rt5_migrated_step_mesh_size(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_rt5_mse)(w, x, y)
        grad = jax.lax.pmean(grad, "x") / mesh.size
        return w - _rt5_LR * grad, jax.lax.pmean(loss, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))(
        w, x, y
    )


@wrong(
    "migrated_step",
    why="'the mean squared error of x @ w against y': sums over outputs, means over the batch "
    "(jnp.mean(((x@w-y)**2).sum(1))); equal when outputs == 1 (y2x4 case), outputs times too "
    "large otherwise (8 mesh, 3 outputs)",
)
def _rt5_migrated_step_sum_outputs(w, x, y, mesh):
    def loss_fn(w, x, y):
        return jnp.mean(((x @ w - y) ** 2).sum(1))

    def step(w, x, y):
        loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
        return w - _rt5_LR * grad, loss

    rep = NamedSharding(mesh, P())
    return jax.jit(step, out_shardings=(rep, rep))(w, x, y)


@wrong(
    "migrated_step",
    why="'collectives may move no more bytes than the pmap program': all_gathers x and y inside "
    "shard_map (check_vma=False) and steps on the whole batch locally; right numbers, but "
    "batch*(features+outputs) floats per device against features*outputs+1 (any case)",
)
def _rt5_migrated_step_gather_batch(w, x, y, mesh):
    def body(w, x, y):
        xs = jax.lax.all_gather(x, "x", tiled=True)
        ys = jax.lax.all_gather(y, "x", tiled=True)
        loss, grad = jax.value_and_grad(_rt5_mse)(w, xs, ys)
        return w - _rt5_LR * grad, loss

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()), check_vma=False
    )(w, x, y)
