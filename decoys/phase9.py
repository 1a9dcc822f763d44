"""Plausible wrong answers to phase 9; each must be caught by the tests it names."""

from collections import Counter

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import decoy
from xla_inspect.parse import parse_hlo

_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


@decoy("auto_mesh", caught_by=["test_auto_mesh_axes"], why="keeps make_mesh's Explicit default")
def mesh_explicit():
    return jax.make_mesh((8,), ("x",))


@decoy("shard_rows", caught_by=["test_each_device_holds_its_rows", "test_row_sharding_is_named"],
       why="splits the columns instead of the rows")
def shard_columns(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P(None, "x")))


@decoy("shard_rows", caught_by=["test_each_device_holds_its_rows", "test_row_sharding_is_named"],
       why="replicates the array on every device")
def shard_replicated(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P()))


@decoy("collective_census", caught_by=["test_sharded_sums_need_all_reduce",
                                       "test_replicated_output_needs_all_gather",
                                       "test_census_matches_parsed_module"],
       why="reads the unoptimized HLO, before the partitioner inserted anything")
def census_unoptimized(f, *args):
    module = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo"))
    return Counter(i.opcode for c in module for i in c if i.opcode in _COLLECTIVES)


@decoy("collective_census", caught_by=["test_sharded_sums_need_all_reduce",
                                       "test_replicated_output_needs_all_gather",
                                       "test_census_matches_parsed_module"],
       why="counts substrings of the text: instruction names repeat the opcode")
def census_substrings(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    return Counter({op: text.count(op) for op in _COLLECTIVES if op in text})


@decoy("device_param_shapes", caught_by=["test_entry_shapes_are_per_device"],
       why="reads the unoptimized HLO: global shapes")
def shapes_global(f, *args):
    module = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo"))
    return [tuple(i.shape_info.dims) for i in module.entry if i.opcode == "parameter"]


@decoy("param_shardings", caught_by=["test_sharding_annotations"],
       why="reads the compiled HLO, where partitioning has consumed the annotations")
def shardings_after_partitioning(f, *args):
    module = parse_hlo(jax.jit(f).lower(*args).compile().as_text())
    return [i.attribute("sharding") for i in module.entry if i.opcode == "parameter"]


@decoy("param_shardings", caught_by=["test_sharding_annotations"],
       why="prints JAX's PartitionSpec instead of reading the HLO annotation")
def shardings_from_specs(f, *args):
    return [str(a.sharding.spec) for a in args]


@decoy("psum_total", caught_by=["test_psum_total_value"],
       why="sums each block but never combines them")
def psum_missing(x, mesh):
    return jax.shard_map(lambda b: b.sum(keepdims=True)[0], mesh=mesh, in_specs=P("x"),
                         out_specs=P("x"))(x)


@decoy("psum_total", caught_by=["test_psum_is_an_all_reduce"],
       why="lets the partitioner sum instead of writing the psum in shard_map")
def psum_by_partitioner(x, mesh):
    return jax.jit(lambda a: a.sum())(x)


@decoy("ring_shift", caught_by=["test_ring_shift_moves_blocks_forward"],
       why="sends blocks backwards (i -> i-1)")
def ring_backwards(x, mesh):
    n = mesh.shape["x"]
    pairs = [(i, (i - 1) % n) for i in range(n)]
    return jax.shard_map(lambda b: jax.lax.ppermute(b, "x", pairs), mesh=mesh,
                         in_specs=P("x"), out_specs=P("x"))(x)


@decoy("gather_rows", caught_by=["test_gather_rows_replicates"],
       why="keeps out_specs P('x'): the gathered copies are stacked, 8x the rows")
def gather_stacked(x, mesh):
    return jax.shard_map(lambda b: jax.lax.all_gather(b, "x", tiled=True), mesh=mesh,
                         in_specs=P("x"), out_specs=P("x"))(x)


@decoy("scatter_sum", caught_by=["test_scatter_sum_is_one_reduce_scatter"],
       why="psum everything, then keep one slice: right values, an all-reduce")
def scatter_by_psum(x, mesh):
    n = mesh.shape["x"]

    def local(block):
        total = jax.lax.psum(block, "x")
        rows = block.shape[0] // n
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("x") * rows, rows)

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@decoy("collective_census", caught_by=["test_census_looks_inside_loop_bodies"],
       why="counts only ENTRY: a collective in a loop body lives in another computation")
def census_entry_only(f, *args):
    module = parse_hlo(jax.jit(f).lower(*args).compile().as_text())
    return Counter(i.opcode for i in module.entry if i.opcode in _COLLECTIVES)


@decoy("device_param_shapes", caught_by=["test_unused_argument_is_not_a_parameter"],
       why="derives the shapes from the arguments' shardings instead of reading the HLO")
def shapes_from_arguments(f, *args):
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


@decoy("param_shardings", caught_by=["test_sharding_annotations"],
       why="prints each argument's sharding as XLA would, without reading the HLO")
def shardings_from_arguments(f, *args):
    return [str(a.sharding._to_xla_hlo_sharding(a.ndim)) for a in args]


@decoy("psum_total", caught_by=["test_psum_is_an_all_reduce"],
       why="psums the whole block, then sums: right value, 16 floats per device on the wire")
def psum_whole_block(x, mesh):
    return jax.shard_map(lambda b: jax.lax.psum(b, "x").sum(), mesh=mesh, in_specs=P("x"),
                         out_specs=P())(x)


@decoy("gather_rows", caught_by=["test_gather_rows_replicates"],
       why="asks jit for a replicated output: the partitioner gathers, no shard_map")
def gather_by_partitioner(x, mesh):
    return jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))(x)
