"""Red-team wrong answers for phase 9, written from the contract only."""

import math
from collections import Counter

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _compiled_text(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


# ---- collective_census -------------------------------------------------------------------------


@wrong(
    "collective_census",
    why="'in every computation of the optimized (partitioned) HLO (loop bodies too)': counts "
    "ENTRY only; census_bank's 'all-reduce in a while body' (sum_in_loop) has its all-reduce in "
    "the while body: gives {} instead of {'all-reduce': 1}",
)
def collective_census_entry_only(f, *args):
    entry = parse_hlo(_compiled_text(f, *args)).entry
    return Counter(i.opcode for i in entry if i.opcode in _COLLECTIVES)


@wrong(
    "collective_census",
    why="'by opcode: instructions from shard_map are named after JAX's primitives': counts by "
    "instruction name; two_hops_and_sum (ppermute.6, psum_invariant.7) gives {} instead of "
    "{'collective-permute': 2, 'all-reduce': 1}",
)
def collective_census_by_name(f, *args):
    counts = Counter()
    for computation in parse_hlo(_compiled_text(f, *args)):
        for instruction in computation:
            stem = instruction.name.split(".")[0]
            if stem in _COLLECTIVES:
                counts[stem] += 1
    return counts


@wrong(
    "collective_census",
    why="'Collective ops XLA inserted when it compiled': reads the unoptimized HLO "
    "(as_text(dialect='hlo')), before the partitioner; replicate() on a row-split x gives {} "
    "instead of {'all-gather': 1} (only shard_map's own collectives are there)",
)
def collective_census_unpartitioned(f, *args):
    module = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo"))
    return Counter(i.opcode for c in module for i in c if i.opcode in _COLLECTIVES)


# ---- device_param_shapes -----------------------------------------------------------------------


@wrong(
    "device_param_shapes",
    why="'in parameter-number order ... not always the order the text prints them in': "
    "returns printed order; param_bank 'four dtypes, printed out of order' gives "
    "[(1, 4), (), (8, 6), (6, 2)] instead of [(8, 6), (6, 2), (), (1, 4)]",
)
def device_param_shapes_printed_order(f, *args):
    entry = parse_hlo(_compiled_text(f, *args)).entry
    return [tuple(i.shape_info.dims) for i in entry if i.opcode == "parameter"]


@wrong(
    "device_param_shapes",
    why="'An argument the function never reads is not a parameter ... read the module, not "
    "the inputs': derives shapes from each input's sharding; param_bank 'z never read' gives "
    "3 shapes instead of 2",
)
def device_param_shapes_from_inputs(f, *args):
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


@wrong(
    "device_param_shapes",
    why="'the partitioned program: what one device receives': reads the unoptimized HLO, "
    "which has global shapes; row-split f32[16,8] on mesh 8 gives (16, 8) instead of (2, 8)",
)
def device_param_shapes_global(f, *args):
    entry = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo")).entry
    params = sorted((i for i in entry if i.opcode == "parameter"), key=lambda i: int(i.payload))
    return [tuple(i.shape_info.dims) for i in params]


# ---- param_shardings ---------------------------------------------------------------------------


@wrong(
    "param_shardings",
    why="'in parameter-number order ... not always the printed order': returns printed order; "
    "param_bank 'four dtypes, printed out of order' starts with parameter(3)'s "
    "'{devices=[4,2]<=[2,4]T(1,0)}' instead of parameter(0)'s annotation",
)
def param_shardings_printed_order(f, *args):
    entry = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo")).entry
    return [i.attribute("sharding", "") for i in entry if i.opcode == "parameter"]


@wrong(
    "param_shardings",
    why="'an argument jit dropped (never read) has none': one annotation per input argument, "
    "read from the parameters in order and padded with '{replicated}'; param_bank 'z never read' "
    "gives 3 strings instead of 2",
)
def param_shardings_per_argument(f, *args):
    entry = parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo")).entry
    params = sorted((i for i in entry if i.opcode == "parameter"), key=lambda i: int(i.payload))
    found = [i.attribute("sharding", "{replicated}") for i in params]
    return found + ["{replicated}"] * (len(args) - len(found))


# ---- predict_collectives (predict) -------------------------------------------------------------

# The base rule each wrong answer below bends in one place. The red team wrote these answers as
# tables for the task's first contract (a fixed bank); when the task came to take one case at a
# time, each table was carried over as the same rule with the same one misconception.


def _rt_splits(spec):
    return [len(spec) > d and spec[d] is not None for d in (0, 1)]


def _rt_collectives(case, *, softmax=2, reverse_moves=True, move="all-to-all", contract=True):
    split = _rt_splits(case.specs[0])
    counts = Counter()
    result = list(split)
    if case.op == "sum":
        counts["all-reduce"] += sum(split)
        result = []
    elif case.op in ("sum0", "sum1"):
        counts["all-reduce"] += split[int(case.op[-1])]
        result = [split[1 - int(case.op[-1])]]
    elif case.op in ("softmax0", "softmax1"):
        counts["all-reduce"] += softmax * split[int(case.op[-1])]
    elif case.op in ("reverse0", "reverse1"):
        counts["collective-permute"] += int(reverse_moves and split[int(case.op[-1])])
    elif case.op == "transpose":
        result = split[::-1]
    elif case.op == "matmul":
        counts["all-reduce"] += int(contract and split[1])
        result = [split[0], False]
    elif case.op == "add" and _rt_splits(case.specs[1]) != split:
        counts[move] += 1
    replicated = case.out is not None and not any(_rt_splits(case.out))
    if case.out is not None and not replicated and _rt_splits(case.out) != result:
        counts[move] += 1
        result = _rt_splits(case.out)
    if replicated:
        counts["all-gather"] += sum(result)
    return {opcode: int(n) for opcode, n in counts.items() if n}


@wrong(
    "predict_collectives",
    why="'How many separate reductions over the split dimension does softmax need': one; "
    "'softmax over axis 0, x row-split' needs a max and a sum: {'all-reduce': 2}, this says 1",
)
def predict_collectives_one_softmax_reduction(case):
    return _rt_collectives(case, softmax=1)


@wrong(
    "predict_collectives",
    why="'blocks handed to a neighbour': thinks a reversal is local; 'x[::-1], x row-split' "
    "moves row blocks between devices ({'collective-permute': 1}), this says {}",
)
def predict_collectives_reverse_is_local(case):
    return _rt_collectives(case, reverse_moves=False)


@wrong(
    "predict_collectives",
    why="'a change of which dimension is split': predicts gather-everything then slice; "
    "'x * 2 constrained to column-split' and 'x + y, row/column-split' are one all-to-all "
    "each, this says all-gather",
)
def predict_collectives_reshard_by_gather(case):
    return _rt_collectives(case, move="all-gather")


# ---- place_weights (decide) --------------------------------------------------------------------


@wrong(
    "place_weights",
    why="'each device may hold at most 1/n of each weight': w1 split by columns (no "
    "communication in the first matmul) but w2 replicated; on PLACEMENT_CASES[0] (mesh 8) each "
    "device holds all of w2 f32[64,24]",
)
def place_weights_w2_replicated(w1, w2, mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P())),
    )


@wrong(
    "place_weights",
    why="'at most half the bytes of first_placement': both weights split by columns; on "
    "PLACEMENT_CASES[0] its collectives move 1408 bytes per device vs 896 for first_placement",
)
def place_weights_both_columns(w1, w2, mesh):
    columns = NamedSharding(mesh, P(None, "x"))
    return jax.device_put(w1, columns), jax.device_put(w2, columns)


# ---- predict_shard_shape (predict) -------------------------------------------------------------


def _names(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


@wrong(
    "predict_shard_shape",
    why="'jax does not pad an uneven split ... Return None when jax refuses': pads (ceil); "
    "((10, 8), P('x'), {'x': 8}) gives (2, 8) instead of None",
)
def predict_shard_shape_ceil(shape, spec, mesh_shape):
    out = list(shape)
    for dim, entry in enumerate(tuple(spec)):
        pieces = math.prod(mesh_shape[n] for n in _names(entry))
        out[dim] = -(-shape[dim] // pieces)
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a tuple of names cuts it into the product of their lengths': uses only the first "
    "name of a tuple; ((8, 3), P(('x', 'y')), {'x': 2, 'y': 4}) gives (4, 3) instead of (1, 3)",
)
def predict_shard_shape_first_of_tuple(shape, spec, mesh_shape):
    out = list(shape)
    for dim, entry in enumerate(tuple(spec)):
        names = _names(entry)
        if not names:
            continue
        pieces = mesh_shape[names[0]]
        if shape[dim] % pieces:
            return None
        out[dim] = shape[dim] // pieces
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'Mesh axes the spec does not name copy the pieces': splits a named dimension over "
    "every device of the mesh; ((6, 5), P('x'), {'y': 4, 'x': 2}) gives None (6 % 8) instead "
    "of (3, 5)",
)
def predict_shard_shape_all_devices(shape, spec, mesh_shape):
    out = list(shape)
    total = math.prod(mesh_shape.values())
    for dim, entry in enumerate(tuple(spec)):
        if entry is None:
            continue
        if shape[dim] % total:
            return None
        out[dim] = shape[dim] // total
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a mesh axis name cuts it into as many pieces as that axis is long': reads axis "
    "sizes by position in mesh_shape, not by name; ((16, 8), P('y', 'x'), {'x': 2, 'y': 4}) "
    "gives (8, 2) instead of (4, 4)",
)
def predict_shard_shape_positional(shape, spec, mesh_shape):
    sizes = list(mesh_shape.values())
    out = list(shape)
    for dim, entry in enumerate(tuple(spec)):
        names = _names(entry)
        if not names:
            continue
        pieces = math.prod(sizes[min(dim + k, len(sizes) - 1)] for k in range(len(names)))
        if shape[dim] % pieces:
            return None
        out[dim] = shape[dim] // pieces
    return tuple(out)
