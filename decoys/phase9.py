"""Plausible wrong answers to phase 9; each must be caught by the tests it names.

Accepted variants are correct answers spelled differently; every test of their task must pass.
"""

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import accepted, decoy
from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo

_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _compiled_text(f, *args) -> str:
    text = jax.jit(f).lower(*args).compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def _compiled_module(f, *args):
    return parse_hlo(_compiled_text(f, *args))


def _lowered_module(f, *args):
    return parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo"))


def _by_number(module):
    params = [i for i in module.entry if i.opcode == "parameter"]
    return sorted(params, key=lambda i: int(i.payload))


# ---- task 1: auto_mesh ------------------------------------------------------------------------


@decoy("auto_mesh", caught_by=["test_auto_mesh_axes"], why="keeps make_mesh's Explicit default")
def mesh_explicit():
    return jax.make_mesh((8,), ("x",))


@decoy(
    "auto_mesh",
    caught_by=["test_auto_mesh_axes"],
    why="Manual axes: the type shard_map uses inside, not one XLA propagates through",
)
def mesh_manual():
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Manual,))


@decoy(
    "auto_mesh",
    caught_by=["test_auto_mesh_axes"],
    why="a 2-D (8, 1) mesh: 'x' has 8 devices, but the mesh is not 1-D",
)
def mesh_two_axes():
    return jax.make_mesh((8, 1), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


@accepted("auto_mesh", why="the Mesh constructor over jax.devices(), Auto spelled out")
def mesh_constructor():
    return Mesh(np.array(jax.devices()), ("x",), axis_types=(AxisType.Auto,))


# ---- task 2: shard_rows -----------------------------------------------------------------------


@decoy(
    "shard_rows",
    caught_by=["test_each_device_holds_its_rows", "test_row_sharding_is_named"],
    why="splits the columns instead of the rows",
)
def shard_columns(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P(None, "x")))


@decoy(
    "shard_rows",
    caught_by=["test_each_device_holds_its_rows", "test_row_sharding_is_named"],
    why="replicates the array on every device",
)
def shard_replicated(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P()))


@decoy(
    "shard_rows",
    caught_by=["test_each_device_holds_its_rows", "test_row_sharding_is_named"],
    why="splits rows over the mesh's first axis, which is 'x' only on some meshes",
)
def shard_first_axis(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P(mesh.axis_names[0], None)))


@decoy(
    "shard_rows",
    caught_by=["test_each_device_holds_its_rows", "test_row_sharding_is_named"],
    why="splits rows over every axis of the mesh, not only 'x'",
)
def shard_all_axes(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P(tuple(mesh.axis_names), None)))


@decoy(
    "shard_rows",
    caught_by=["test_row_sharding_is_named"],
    why="casts to float32 on the way: right rows, wrong dtype",
)
def shard_as_float32(x, mesh):
    return jax.device_put(np.asarray(x, np.float32), NamedSharding(mesh, P("x", None)))


@accepted("shard_rows", why="P('x') leaves the trailing dimension whole")
def shard_short_spec(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P("x")))


@accepted("shard_rows", why="make_array_from_callback with the same sharding")
def shard_from_callback(x, mesh):
    sharding = NamedSharding(mesh, P("x", None))
    return jax.make_array_from_callback(np.shape(x), sharding, lambda index: np.asarray(x)[index])


# ---- task 3: collective_census ----------------------------------------------------------------


@decoy(
    "collective_census",
    caught_by=["test_census_looks_inside_loop_bodies"],
    why="reads the unoptimized HLO, before the partitioner inserted anything",
)
def census_unoptimized(f, *args):
    module = _lowered_module(f, *args)
    return Counter(i.opcode for c in module for i in c if i.opcode in _COLLECTIVES)


@decoy(
    "collective_census",
    caught_by=["test_census_looks_inside_loop_bodies"],
    why="counts substrings of the text: instruction names repeat the opcode",
)
def census_substrings(f, *args):
    text = _compiled_text(f, *args)
    return Counter({op: text.count(op) for op in _COLLECTIVES if op in text})


@decoy(
    "collective_census",
    caught_by=["test_census_looks_inside_loop_bodies"],
    why="counts only ENTRY: a collective in a loop body lives in another computation",
)
def census_entry_only(f, *args):
    module = _compiled_module(f, *args)
    return Counter(i.opcode for i in module.entry if i.opcode in _COLLECTIVES)


@decoy(
    "collective_census",
    caught_by=["test_census_counts_opcodes_not_names"],
    why="counts instruction names: shard_map's ppermute.N and psum_invariant.N are missed",
)
def census_by_name(f, *args):
    module = _compiled_module(f, *args)
    return Counter(n for c in module for i in c if (n := i.name.split(".")[0]) in _COLLECTIVES)


@decoy(
    "collective_census",
    caught_by=["test_census_counts_opcodes_not_names"],
    why="a table of three collectives: all-to-all and collective-permute are left out",
)
def census_short_table(f, *args):
    module = _compiled_module(f, *args)
    return Counter(
        i.opcode
        for c in module
        for i in c
        if i.opcode in ("all-reduce", "all-gather", "reduce-scatter")
    )


@decoy(
    "collective_census",
    caught_by=["test_census_counts_opcodes_not_names"],
    why="which collectives occur, each counted once",
)
def census_kinds_once(f, *args):
    module = _compiled_module(f, *args)
    return Counter({i.opcode for c in module for i in c if i.opcode in _COLLECTIVES})


@accepted("collective_census", why="a regex for the opcode after the shape, on the compiled text")
def census_regex(f, *args):
    text = _compiled_text(f, *args)
    pattern = r"\s(" + "|".join(_COLLECTIVES) + r")\("
    return Counter(re.findall(pattern, text))


# ---- task 4: device_param_shapes --------------------------------------------------------------


@decoy(
    "device_param_shapes",
    caught_by=["test_entry_shapes_are_per_device"],
    why="reads the unoptimized HLO: global shapes",
)
def shapes_global(f, *args):
    return [tuple(i.shape_info.dims) for i in _by_number(_lowered_module(f, *args))]


@decoy(
    "device_param_shapes",
    caught_by=["test_unused_argument_is_not_a_parameter"],
    why="derives the shapes from the arguments' shardings instead of reading the HLO",
)
def shapes_from_arguments(f, *args):
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


@decoy(
    "device_param_shapes",
    caught_by=["test_shapes_in_parameter_order"],
    why="ENTRY parameters in the order the text prints them, not by parameter number",
)
def shapes_text_order(f, *args):
    module = _compiled_module(f, *args)
    return [tuple(i.shape_info.dims) for i in module.entry if i.opcode == "parameter"]


@decoy(
    "device_param_shapes",
    caught_by=["test_shapes_in_parameter_order"],
    why="a shape rule: dimension 0 divided by the 8 devices, the rest whole",
)
def shapes_rows_over_eight(f, *args):
    return [tuple([a.shape[0] // 8, *a.shape[1:]]) if a.ndim else () for a in args]


@accepted("device_param_shapes", why="reads entry_computation_layout from the module header")
def shapes_from_layout(f, *args):
    layout = _compiled_module(f, *args).attributes["entry_computation_layout"]
    params = layout.strip()[1:-1].rsplit(")->", 1)[0] + ")"
    return [tuple(s.dims) for s in Shape(params).elements]


# ---- task 5: param_shardings ------------------------------------------------------------------


@decoy(
    "param_shardings",
    caught_by=["test_sharding_annotations"],
    why="reads the compiled HLO, where partitioning has consumed the annotations",
    gate="compiled-hlo-rewrites-parameter-shardings",
)
def shardings_after_partitioning(f, *args):
    return [str(i.attribute("sharding")) for i in _by_number(_compiled_module(f, *args))]


@decoy(
    "param_shardings",
    caught_by=["test_sharding_annotations"],
    why="prints JAX's PartitionSpec instead of reading the HLO annotation",
)
def shardings_from_specs(f, *args):
    return [str(a.sharding.spec) for a in args]


@decoy(
    "param_shardings",
    caught_by=["test_annotations_in_parameter_order"],
    why="prints each argument's sharding as XLA would, without reading the HLO",
)
def shardings_from_arguments(f, *args):
    return [str(a.sharding._to_xla_hlo_sharding(a.ndim)) for a in args]


@decoy(
    "param_shardings",
    caught_by=["test_annotations_in_parameter_order"],
    why="ENTRY parameters in the order the text prints them, not by parameter number",
)
def shardings_text_order(f, *args):
    module = _lowered_module(f, *args)
    return [i.attribute("sharding") for i in module.entry if i.opcode == "parameter"]


@decoy(
    "param_shardings",
    caught_by=["test_annotations_in_parameter_order"],
    why="reads Shardy's frontend attribute (#sdy.sharding<...>) instead of sharding=",
)
def shardings_sdy_attribute(f, *args):
    found = []
    for i in _by_number(_lowered_module(f, *args)):
        text = i.attribute("frontend_attributes") or ""
        match = re.search(r'xla\.sdy\.sharding="(.*)"', text)
        found.append(match.group(1) if match else text)
    return found


@accepted("param_shardings", why="a dict from parameter number to annotation, read in key order")
def shardings_by_dict(f, *args):
    found = {
        int(i.payload): i.attribute("sharding")
        for c in [_lowered_module(f, *args).entry]
        for i in c
        if i.opcode == "parameter" and i.payload is not None
    }
    return [found[n] for n in range(len(found))]


# ---- task 6: psum_total -----------------------------------------------------------------------


@decoy("psum_total", caught_by=["test_psum_total"], why="sums each block but never combines them")
def psum_missing(x, mesh):
    return jax.shard_map(
        lambda b: b.sum(keepdims=True)[0], mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)


@decoy(
    "psum_total",
    caught_by=["test_psum_total"],
    why="lets the partitioner sum instead of writing the psum in shard_map",
)
def psum_by_partitioner(x, mesh):
    return jax.jit(lambda a: a.sum())(x)


@decoy(
    "psum_total",
    caught_by=["test_psum_total"],
    why="psums the whole block, then sums: right value, a block per device on the wire",
)
def psum_whole_block(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum(b, "x").sum(), mesh=mesh, in_specs=P("x"), out_specs=P()
    )(x)


@decoy(
    "psum_total",
    caught_by=["test_psum_total"],
    why="psums the column sums: right value, a row of numbers per device on the wire",
)
def psum_column_sums(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum(b.sum(0), "x").sum(), mesh=mesh, in_specs=P("x"), out_specs=P()
    )(x)


@decoy(
    "psum_total",
    caught_by=["test_psum_total"],
    why="psums over every mesh axis: on a 2-D mesh the copies along 'y' are added too",
)
def psum_all_axes(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum(b.sum(), tuple(mesh.axis_names)),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P(),
        check_vma=False,
    )(x)


@accepted("psum_total", why="check_vma=False, jnp.sum and a named axis_name")
def psum_unchecked(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum(jnp.sum(b), axis_name="x"),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P(),
        check_vma=False,
    )(x)


# ---- task 7: ring_shift -----------------------------------------------------------------------


@decoy("ring_shift", caught_by=["test_ring_shift"], why="sends blocks backwards (i -> i-1)")
def ring_backwards(x, mesh):
    n = mesh.shape["x"]
    pairs = [(i, (i - 1) % n) for i in range(n)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", pairs), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)


@decoy(
    "ring_shift",
    caught_by=["test_ring_shift"],
    why="jnp.roll on the sharded array: right values, the partitioner's permute, no ppermute",
)
def ring_by_roll(x, mesh):
    n = mesh.shape["x"]
    return jax.jit(lambda a: jnp.roll(a, a.shape[0] // n, axis=0))(x)


@decoy(
    "ring_shift",
    caught_by=["test_ring_shift"],
    why="forgets the wrap-around pair: the first block receives nothing (zeros)",
)
def ring_no_wrap(x, mesh):
    n = mesh.shape["x"]
    pairs = [(i, i + 1) for i in range(n - 1)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", pairs), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)


@decoy(
    "ring_shift",
    caught_by=["test_ring_shift"],
    why="gathers everything and keeps the previous block: right values, an all-gather",
)
def ring_by_gather(x, mesh):
    n = mesh.shape["x"]

    def local(block):
        everything = jax.lax.all_gather(block, "x", tiled=True)
        previous = (jax.lax.axis_index("x") - 1) % n
        return jax.lax.dynamic_slice_in_dim(everything, previous * block.shape[0], block.shape[0])

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)


@accepted("ring_shift", why="the same pairs written from the receiver's side")
def ring_from_receivers(x, mesh):
    n = mesh.shape["x"]
    pairs = [((j - 1) % n, j) for j in range(n)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, axis_name="x", perm=pairs),
        mesh=mesh,
        in_specs=P("x", None),
        out_specs=P("x", None),
    )(x)


# ---- task 8: gather_rows ----------------------------------------------------------------------


@decoy(
    "gather_rows",
    caught_by=["test_gather_rows"],
    why="keeps out_specs P('x'): the gathered copies are stacked, n times the rows",
)
def gather_stacked(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.all_gather(b, "x", tiled=True),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P("x"),
    )(x)


@decoy(
    "gather_rows",
    caught_by=["test_gather_rows"],
    why="asks jit for a replicated output: the partitioner gathers, no shard_map",
)
def gather_by_partitioner(x, mesh):
    return jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))(x)


@decoy(
    "gather_rows",
    caught_by=["test_gather_rows"],
    why="gathers along the columns and reshapes: every row is there, in the wrong order",
)
def gather_wrong_order(x, mesh):
    def local(block):
        side = jax.lax.all_gather(block, "x", axis=1, tiled=True)
        return side.reshape(-1, block.shape[1])

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


@decoy(
    "gather_rows",
    caught_by=["test_gather_rows"],
    why="gathers over every mesh axis: on a 2-D mesh each block arrives once per 'y'",
)
def gather_all_axes(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.all_gather(b, tuple(mesh.axis_names), tiled=True),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P(),
        check_vma=False,
    )(x)


@accepted("gather_rows", why="untiled all_gather, then merge the stacking axis with reshape")
def gather_untiled(x, mesh):
    def local(block):
        return jax.lax.all_gather(block, "x").reshape(-1, *block.shape[1:])

    return jax.shard_map(
        local, mesh=mesh, in_specs=P("x", None), out_specs=P(None, None), check_vma=False
    )(x)


# ---- task 9: scatter_sum ----------------------------------------------------------------------


@decoy(
    "scatter_sum",
    caught_by=["test_scatter_sum"],
    why="psum everything, then keep one slice: right values, an all-reduce",
)
def scatter_by_psum(x, mesh):
    n = mesh.shape["x"]

    def local(block):
        total = jax.lax.psum(block, "x")
        rows = block.shape[0] // n
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("x") * rows, rows)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@decoy(
    "scatter_sum",
    caught_by=["test_scatter_sum"],
    why="out_specs P(): claims every device holds the same slice, so one slice is the answer",
)
def scatter_replicated_out(x, mesh):
    return jax.shard_map(
        lambda b: jax.lax.psum_scatter(b, "x", tiled=True),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P(),
        check_vma=False,
    )(x)


@decoy(
    "scatter_sum", caught_by=["test_scatter_sum"], why="pmax instead of a sum, then keep one slice"
)
def scatter_max(x, mesh):
    n = mesh.shape["x"]

    def local(block):
        top = jax.lax.pmax(block, "x")
        rows = block.shape[0] // n
        return jax.lax.dynamic_slice_in_dim(top, jax.lax.axis_index("x") * rows, rows)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@accepted("scatter_sum", why="psum_scatter with scatter_dimension spelled out, full specs")
def scatter_spelled_out(x, mesh):
    def local(block):
        return jax.lax.psum_scatter(block, axis_name="x", scatter_dimension=0, tiled=True)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


# ---- predict_collectives -------------------------------------------------------------------------
# Each decoy is a whole rule with one misconception (or a table), asked one case at a time.

_OLD_COLLECTIVES = {  # the task's first fixed table, by the cases' descriptions
    "matmul P('x', None) P()": {},
    "sum P('x', None)": {"all-reduce": 1},
    "sum1 P('x', None)": {},
    "sum0 P('x', None)": {"all-reduce": 1},
    "matmul P(None, 'x') P('x', None)": {"all-reduce": 1},
    "scale P('x', None) out P()": {"all-gather": 1},
    "scale P('x', None) out P(None, 'x')": {"all-to-all": 1},
    "transpose P('x', None)": {},
    "reverse0 P('x', None)": {"collective-permute": 1},
    "softmax0 P('x', None)": {"all-reduce": 2},
    "softmax1 P('x', None)": {},
    "add P('x', None) P(None, 'x')": {"all-to-all": 1},
}


def _old_key(case) -> str:
    out = "" if case.out is None else f" out {case.out}"
    return f"{case.op} {' '.join(str(s) for s in case.specs)}{out}"


def _splits(spec) -> list[bool]:
    return [len(spec) > d and spec[d] is not None for d in (0, 1)]


def _collectives(case, *, per_dim=True, softmax=2, gathers_per_dim=True, reverse_moves=True):
    split = _splits(case.specs[0])
    counts = Counter()
    result = list(split)
    if case.op == "sum":
        counts["all-reduce"] += sum(split) if per_dim else any(split)
        result = []
    elif case.op in ("sum0", "sum1"):
        reduced = int(case.op[-1])
        counts["all-reduce"] += split[reduced]
        result = [split[1 - reduced]]
    elif case.op in ("softmax0", "softmax1"):
        counts["all-reduce"] += softmax * split[int(case.op[-1])]
    elif case.op in ("reverse0", "reverse1"):
        counts["collective-permute"] += reverse_moves and split[int(case.op[-1])]
    elif case.op == "transpose":
        result = split[::-1]
    elif case.op == "matmul":
        counts["all-reduce"] += split[1]
        result = [split[0], False]
    elif case.op == "add" and _splits(case.specs[1]) != split:
        counts["all-to-all"] += 1
    replicated = case.out is not None and not any(_splits(case.out))
    if case.out is not None and not replicated and _splits(case.out) != result:
        counts["all-to-all"] += 1
        result = _splits(case.out)
    if replicated:
        counts["all-gather"] += sum(result) if gathers_per_dim else any(result)
    return {opcode: int(n) for opcode, n in counts.items() if n}


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_on_fresh_cases"],
    why="memorised the old table: right on the fixed cases, no collectives anywhere else",
)
def collectives_memorised_table(case):
    return dict(_OLD_COLLECTIVES.get(_old_key(case), {}))


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_on_fresh_cases"],
    why="right on the old cases only: a replicated result is one all-gather, however many of "
    "its dimensions are split",
)
def collectives_one_gather_per_result(case):
    return _collectives(case, gathers_per_dim=False)


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_on_fresh_cases"],
    why="right on the old cases only: a sum of everything is one all-reduce, even when both "
    "dimensions are split (XLA reduces each split dimension in its own all-reduce)",
)
def collectives_one_all_reduce_per_sum(case):
    return _collectives(case, per_dim=False)


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_on_the_bank"],
    why="one all-reduce per reduction over the split, whatever else it needs (softmax: max, sum)",
)
def collectives_one_per_softmax(case):
    return _collectives(case, softmax=1)


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_on_the_bank"],
    why="a reversal stays on its device: each device reverses the rows it holds",
)
def collectives_reverse_is_local(case):
    return _collectives(case, reverse_moves=False)


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_on_the_bank"],
    why="a replicated result is summed together (all-reduce), not gathered",
)
def collectives_replicate_by_reduce(case):
    counts = _collectives(case)
    gathers = counts.pop("all-gather", 0)
    if gathers:
        counts["all-reduce"] = counts.get("all-reduce", 0) + gathers
    return counts


@decoy(
    "predict_collectives",
    caught_by=["test_predict_collectives_does_not_compile"],
    why="measures instead of predicting: compiles the case it is given",
)
def collectives_measured(case):
    from katas.phase9.collective_programs import compiled

    module = parse_hlo(str(compiled(case).as_text()))
    return dict(Counter(i.opcode for c in module for i in c if i.opcode in _COLLECTIVES))


@accepted("predict_collectives", why="the same rule, walking what each dimension of x becomes")
def collectives_by_dimension(case):
    sizes = dict(case.mesh)

    def cut(spec) -> list[bool]:  # a dimension is split when its axes make more than 1 piece
        entries = [spec[d] if len(spec) > d else None for d in (0, 1)]
        named = [(e,) if isinstance(e, str) else tuple(e or ()) for e in entries]
        return [int(np.prod([sizes[a] for a in axes])) > 1 for axes in named]

    x = cut(case.specs[0])
    reduced = {"sum": (0, 1), "sum0": (0,), "sum1": (1,), "matmul": (1,)}.get(case.op, ())
    found: dict[str, int] = {}

    def add(opcode: str, n: int) -> None:
        if n:
            found[opcode] = found.get(opcode, 0) + n

    add("all-reduce", sum(1 for d in reduced if x[d]))
    if case.op.startswith("softmax"):
        add("all-reduce", 2 if x[int(case.op[-1])] else 0)
    if case.op.startswith("reverse"):
        add("collective-permute", 1 if x[int(case.op[-1])] else 0)
    kept = [x[d] for d in (0, 1) if d not in reduced] + ([False] if case.op == "matmul" else [])
    if case.op == "transpose":
        kept = kept[::-1]
    if case.op == "add":
        add("all-to-all", 1 if cut(case.specs[1]) != x else 0)
    if case.out is not None:
        out = cut(case.out)
        if any(out):
            add("all-to-all", 1 if out != kept else 0)
        else:
            add("all-gather", sum(kept))
    return found


# ---- place_weights -------------------------------------------------------------------------------


@decoy(
    "place_weights",
    caught_by=["test_place_weights_keeps_values_and_splits_them"],
    why="replicates both weights: no communication at all, but every device holds all of them",
)
def weights_replicated(w1, w2, mesh):
    everywhere = NamedSharding(mesh, P())
    return jax.device_put(w1, everywhere), jax.device_put(w2, everywhere)


@decoy(
    "place_weights",
    caught_by=["test_place_weights_halves_collective_bytes"],
    why="keeps the first placement: both weights split by rows",
)
def weights_rows(w1, w2, mesh):
    rows = NamedSharding(mesh, P("x", None))
    return jax.device_put(w1, rows), jax.device_put(w2, rows)


@decoy(
    "place_weights",
    caught_by=["test_place_weights_halves_collective_bytes"],
    why="splits both weights by columns: the hidden layer must be gathered for the second matmul",
)
def weights_columns(w1, w2, mesh):
    columns = NamedSharding(mesh, P(None, "x"))
    return jax.device_put(w1, columns), jax.device_put(w2, columns)


@decoy(
    "place_weights",
    caught_by=["test_place_weights_keeps_values_and_splits_them"],
    why="meets the budgets by storing the weights in bf16 (half the bytes, other numbers)",
)
def weights_in_bf16(w1, w2, mesh):
    return (
        jax.device_put(w1.astype(jnp.bfloat16), NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2.astype(jnp.bfloat16), NamedSharding(mesh, P("x", None))),
    )


@decoy(
    "place_weights",
    caught_by=["test_place_weights_on_fresh_meshes_and_shapes"],
    why="splits over the mesh's first axis, assumed to be x: on a mesh whose x is minor, a "
    "device holds more than 1/n",
)
def weights_first_mesh_axis(w1, w2, mesh):
    axis = mesh.axis_names[0]
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, axis))),
        jax.device_put(w2, NamedSharding(mesh, P(axis, None))),
    )


@accepted("place_weights", why="the same split over every mesh axis: smaller shards, same traffic")
def weights_over_all_axes(w1, w2, mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, mesh.axis_names))),
        jax.device_put(w2, NamedSharding(mesh, P(mesh.axis_names, None))),
    )


# ---- predict_shard_shape -------------------------------------------------------------------------


def _axes(entry) -> tuple[str, ...]:
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


def _entries(shape, spec):
    return [(size, spec[n] if n < len(spec) else None) for n, size in enumerate(shape)]


@decoy(
    "predict_shard_shape",
    caught_by=["test_predict_shard_shape_matches_the_compiled_parameter"],
    why="divides every split dimension by the number of devices, whatever axes it names",
)
def shard_shape_by_device_count(shape, spec, mesh_shape):
    devices = int(np.prod(list(mesh_shape.values())))
    per_device = []
    for size, entry in _entries(shape, spec):
        pieces = devices if _axes(entry) else 1
        if size % pieces:
            return None
        per_device.append(size // pieces)
    return tuple(per_device)


@decoy(
    "predict_shard_shape",
    caught_by=["test_predict_shard_shape_matches_the_compiled_parameter"],
    why="assumes XLA pads an uneven split (rounds up) instead of jax refusing it",
)
def shard_shape_padded(shape, spec, mesh_shape):
    return tuple(
        -(-size // int(np.prod([mesh_shape[a] for a in _axes(entry)])))
        for size, entry in _entries(shape, spec)
    )


@decoy(
    "predict_shard_shape",
    caught_by=["test_predict_shard_shape_matches_the_compiled_parameter"],
    why="splits a dimension over the first axis of a tuple entry only",
)
def shard_shape_first_axis(shape, spec, mesh_shape):
    per_device = []
    for size, entry in _entries(shape, spec):
        pieces = mesh_shape[_axes(entry)[0]] if _axes(entry) else 1
        if size % pieces:
            return None
        per_device.append(size // pieces)
    return tuple(per_device)


@decoy(
    "predict_shard_shape",
    caught_by=["test_predict_shard_shape_does_not_compile"],
    why="measures instead of predicting: places the array and reads its shard shape",
)
def shard_shape_measured(shape, spec, mesh_shape):
    mesh = jax.make_mesh(
        tuple(mesh_shape.values()),
        tuple(mesh_shape),
        axis_types=(AxisType.Auto,) * len(mesh_shape),
    )
    try:
        placed = jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, P(*spec)))
    except ValueError:
        return None
    return tuple(placed.addressable_shards[0].data.shape)


@decoy(
    "predict_shard_shape",
    caught_by=["test_predict_shard_shape_none_where_device_put_refuses"],
    why="refuses only an uneven split: ignores spec entries past the shape's rank and a mesh "
    "axis named twice, and fails on an axis the mesh does not have",
)
def shard_shape_divisibility_only(shape, spec, mesh_shape):
    per_device = []
    for size, entry in _entries(shape, spec):
        pieces = int(np.prod([mesh_shape[a] for a in _axes(entry)]))
        if size % pieces:
            return None
        per_device.append(size // pieces)
    return tuple(per_device)


@decoy(
    "predict_shard_shape",
    caught_by=["test_predict_shard_shape_on_fresh_cases"],
    why="a tuple entry checks that each of its axes divides the dimension, not their product",
)
def shard_shape_each_axis_divides(shape, spec, mesh_shape):
    named = [a for entry in spec for a in _axes(entry)]
    if len(spec) > len(shape) or len(set(named)) < len(named) or not set(named) <= set(mesh_shape):
        return None
    per_device = []
    for size, entry in _entries(shape, spec):
        if any(size % mesh_shape[a] for a in _axes(entry)):
            return None
        per_device.append(size // int(np.prod([mesh_shape[a] for a in _axes(entry)])))
    return tuple(per_device)


@accepted("predict_shard_shape", why="the same sizes from divmod, the answer as a tuple")
def shard_shape_divmod(shape, spec, mesh_shape):
    named = [a for entry in spec for a in _axes(entry)]
    if len(spec) > len(shape) or len(set(named)) < len(named):
        return None
    if any(a not in mesh_shape for a in named):
        return None
    result = []
    for size, entry in _entries(shape, spec):
        pieces = 1
        for axis in _axes(entry):
            pieces *= mesh_shape[axis]
        quotient, remainder = divmod(size, pieces)
        if remainder:
            return None
        result.append(quotient)
    return tuple(result)


# ---- predict_pmap_shapes -------------------------------------------------------------------------


@decoy(
    "predict_pmap_shapes",
    caught_by=[
        "test_predict_pmap_shapes_matches_the_compiled_parameters",
        "test_predict_pmap_shapes_on_fresh_cases",
    ],
    why="reads pmap like vmap: the mapped dimension is gone from what one device gets",
)
def pmap_shapes_axis_dropped(shapes, in_axes):
    return [
        tuple(s) if a is None else (*s[:a], *s[a + 1 :])
        for s, a in zip(shapes, in_axes, strict=True)
    ]


@decoy(
    "predict_pmap_shapes",
    caught_by=[
        "test_predict_pmap_shapes_matches_the_compiled_parameters",
        "test_predict_pmap_shapes_on_fresh_cases",
    ],
    why="every device gets the whole argument, as if pmap copied it",
)
def pmap_shapes_whole(shapes, in_axes):
    return [tuple(s) for s in shapes]


@decoy(
    "predict_pmap_shapes",
    caught_by=["test_predict_pmap_shapes_matches_the_compiled_parameters"],
    why="divides the mapped dimension by the 8 devices, not by the mapped size (wrong when "
    "pmap runs on fewer devices)",
)
def pmap_shapes_by_device_count(shapes, in_axes):
    return [
        tuple(s) if a is None else (*s[:a], s[a] // 8, *s[a + 1 :])
        for s, a in zip(shapes, in_axes, strict=True)
    ]


@decoy(
    "predict_pmap_shapes",
    caught_by=["test_predict_pmap_shapes_matches_the_compiled_parameters"],
    why="moves the mapped dimension to the front (pmap's outputs stack there), size 1",
)
def pmap_shapes_axis_first(shapes, in_axes):
    return [
        tuple(s) if a is None else (1, *s[:a], *s[a + 1 :])
        for s, a in zip(shapes, in_axes, strict=True)
    ]


@decoy(
    "predict_pmap_shapes",
    caught_by=["test_predict_pmap_shapes_does_not_compile"],
    why="compiles the pmap and reads the answer instead of predicting it",
)
def pmap_shapes_compiled(shapes, in_axes):
    args = [np.zeros(s, np.float32) for s in shapes]
    lowered = jax.pmap(lambda *a: sum(jnp.sum(v) for v in a), in_axes=tuple(in_axes)).lower(*args)
    module = parse_hlo(lowered.compile().as_text())
    return [tuple(p.shape_info.dims) for p in _by_number(module)]


@accepted("predict_pmap_shapes", why="the same shapes built by editing a list")
def pmap_shapes_edited(shapes, in_axes):
    found = []
    for shape, axis in zip(shapes, in_axes, strict=True):
        dims = list(shape)
        if axis is not None:
            dims[axis] = 1
        found.append(tuple(dims))
    return found


# ---- collective_groups ---------------------------------------------------------------------------


def _iota_grid(value: str, transpose: bool = True) -> np.ndarray:
    dims, reshape, perm = re.fullmatch(
        r"\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?", value.strip()
    ).groups()  # pyright: ignore[reportOptionalMemberAccess]
    source = [int(d) for d in (reshape or dims).split(",")]
    grid = np.arange(int(np.prod(source))).reshape(source)
    if perm and transpose:
        grid = grid.transpose([int(p) for p in perm.split(",")])
    return grid.reshape([int(d) for d in dims.split(",")]) if reshape else grid


def _decoded(value, devices, mesh="vary", transpose=True, empty=None):
    """Groups of a replica_groups value; the keywords pick a way to misread it."""
    value = (value or "{}").strip()
    found = re.fullmatch(r"mesh\[(.*?)\](?:,\s*device_ids=\((.*)\))?\s*\{(.*)\}", value)
    if found:
        axes = re.findall(r"'([^']+)'=(\d+)", found[1])
        names, sizes = [a for a, _ in axes], [int(n) for _, n in axes]
        if mesh == "all":
            return [list(range(int(np.prod(sizes))))]
        ids = _iota_grid(found[2], transpose).ravel() if found[2] else np.arange(np.prod(sizes))
        kept = [names.index(a) for a in re.findall(r"'([^']+)'", found[3])]
        if mesh == "complement":
            kept = [d for d in range(len(names)) if d not in kept] or kept
        grid = np.moveaxis(ids.reshape(sizes), kept, range(len(names) - len(kept), len(names)))
        return grid.reshape(-1, int(np.prod([sizes[k] for k in kept]))).tolist()
    if value.startswith("["):
        return _iota_grid(value, transpose).tolist()
    listed = [[int(v) for v in g.split(",")] for g in re.findall(r"\{([\d,\s]+)\}", value)]
    return listed or (empty if empty is not None else [list(range(devices))])


def _groups_census(text, opcodes=_COLLECTIVES[:3] + ("all-to-all",), entry_only=False, **how):
    module = parse_hlo(text)
    header = re.search(r"\bnum_partitions=(\d+)", text.partition("\n")[0])
    devices = int(header[1]) if header else 1
    computations = [module.entry] if entry_only else list(module)
    counts = Counter()
    for instruction in (i for c in computations for i in c if i.opcode in opcodes):
        value = instruction.attribute("replica_groups")
        if instruction.opcode == "collective-permute":
            value = instruction.attribute("source_target_pairs")
        groups = _decoded(value, devices, **how)
        key = tuple(sorted(tuple(sorted(int(d) for d in g)) for g in groups))
        counts[(instruction.opcode, key)] += 1
    return counts


@decoy(
    "collective_groups",
    caught_by=["test_collective_groups_in_every_spelling"],
    why="reads mesh['x'=2,'y'=4] {'x'} as one group of every device of the mesh",
)
def groups_mesh_as_everyone(hlo_text):
    return _groups_census(hlo_text, mesh="all")


@decoy(
    "collective_groups",
    caught_by=["test_collective_groups_in_every_spelling"],
    why="a mesh group as the devices that share the named axes (vary along the others)",
)
def groups_mesh_complement(hlo_text):
    return _groups_census(hlo_text, mesh="complement")


@decoy(
    "collective_groups",
    caught_by=["test_collective_groups_in_every_spelling"],
    why="reads an iota list without its transpose T(...)",
)
def groups_iota_untransposed(hlo_text):
    return _groups_census(hlo_text, transpose=False)


@decoy(
    "collective_groups",
    caught_by=["test_collective_groups_in_every_spelling"],
    why="replica_groups={} (or none) as no groups at all instead of one group of every device",
)
def groups_empty_as_none(hlo_text):
    return _groups_census(hlo_text, empty=[])


@decoy(
    "collective_groups",
    caught_by=[
        "test_collective_groups_of_compiled_programs",
        "test_collective_groups_of_renamed_and_reordered_modules",
    ],
    why="looks only at ENTRY: misses the all-reduce in a while body",
)
def groups_entry_only(hlo_text):
    return _groups_census(hlo_text, entry_only=True)


@decoy(
    "collective_groups",
    caught_by=[
        "test_collective_groups_of_compiled_programs",
        "test_collective_groups_of_renamed_and_reordered_modules",
    ],
    why="counts collective-permute too, its source_target_pairs read as groups",
)
def groups_with_permutes(hlo_text):
    return _groups_census(hlo_text, opcodes=_COLLECTIVES)


# ---- migrated_step -------------------------------------------------------------------------------


def _squared_error(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def _shard_mapped(mesh, body, check_vma=True, out_specs=None):
    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("x"), P("x")),
        out_specs=(P(), P()) if out_specs is None else out_specs,
        check_vma=check_vma,
    )


@decoy(
    "migrated_step",
    caught_by=[
        "test_migrated_step_gives_the_inherited_values",
        "test_migrated_step_on_fresh_meshes_and_batches",
    ],
    why="pmap's body copied into shard_map with check_vma on: the gradient of the invariant w "
    "is already summed over x, the pmean leaves it n times too large",
)
def step_pmean_under_check_vma(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - 0.05 * jax.lax.pmean(grad, "x"), jax.lax.pmean(loss, "x")

    return _shard_mapped(mesh, body)(w, x, y)


@decoy(
    "migrated_step",
    caught_by=[
        "test_migrated_step_gives_the_inherited_values",
        "test_migrated_step_on_fresh_meshes_and_batches",
    ],
    why="psum where pmap had pmean: the sum of the blocks' mean gradients and losses",
)
def step_psum(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - 0.05 * jax.lax.psum(grad, "x"), jax.lax.psum(loss, "x")

    return _shard_mapped(mesh, body, check_vma=False)(w, x, y)


@decoy(
    "migrated_step",
    caught_by=[
        "test_migrated_step_gives_the_inherited_values",
        "test_migrated_step_on_fresh_meshes_and_batches",
    ],
    why="averages the gradient but returns one block's loss as if it were replicated",
)
def step_local_loss(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - 0.05 * jax.lax.pmean(grad, "x"), loss

    return _shard_mapped(mesh, body, check_vma=False)(w, x, y)


@decoy(
    "migrated_step",
    caught_by=[
        "test_migrated_step_gives_the_inherited_values",
        "test_migrated_step_on_fresh_meshes_and_batches",
    ],
    why="keeps pmap's output: one copy of w and of the loss per position along x",
)
def step_stacked_like_pmap(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        new = w - 0.05 * jax.lax.pmean(grad, "x")
        return new[None], jax.lax.pmean(loss, "x")[None]

    return _shard_mapped(mesh, body, check_vma=False, out_specs=(P("x"), P("x")))(w, x, y)


@decoy(
    "migrated_step",
    caught_by=[
        "test_migrated_step_moves_no_more_bytes",
        "test_migrated_step_on_fresh_meshes_and_batches",
    ],
    why="gathers the whole batch onto every device first: right numbers, the batch moved",
)
def step_gathers_the_batch(w, x, y, mesh):
    everywhere = NamedSharding(mesh, P())
    x, y = (jax.lax.with_sharding_constraint(a, everywhere) for a in (x, y))
    loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
    return w - 0.05 * grad, loss


@accepted(
    "migrated_step", why="jit of the whole-batch step: the partitioner inserts the all-reduce"
)
def step_jit(w, x, y, mesh):
    def step(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - 0.05 * grad, loss

    return jax.jit(step, out_shardings=NamedSharding(mesh, P()))(w, x, y)


@accepted("migrated_step", why="pmap's body as it was, with check_vma off (a local gradient)")
def step_unchecked_pmean(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - 0.05 * jax.lax.pmean(grad, "x"), jax.lax.pmean(loss, "x")

    return _shard_mapped(mesh, body, check_vma=False)(w, x, y)


@decoy(
    "migrated_step",
    caught_by=["test_migrated_step_gives_the_inherited_values"],
    why="splits the new w over a mesh axis with a device_put after shard_map to save memory: "
    "under jax.jit the device_put is dropped (w comes back replicated), called outside jit w "
    "is split",
)
def step_w_split_after_shard_map(w, x, y, mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_squared_error)(w, x, y)
        return w - 0.05 * grad / mesh.shape["x"], jax.lax.pmean(loss, "x")

    new_w, loss = _shard_mapped(mesh, body)(w, x, y)
    for name, size in mesh.shape.items():
        for dim, length in enumerate(new_w.shape):
            if size > 1 and length % size == 0:
                spec = P(*(name if d == dim else None for d in range(new_w.ndim)))
                return jax.device_put(new_w, NamedSharding(mesh, spec)), loss
    return new_w, loss
