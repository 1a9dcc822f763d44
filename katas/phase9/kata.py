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
    """Put the 2-D array `x` on `mesh`, its rows split across axis "x", its columns whole."""
    # TODO: a NamedSharding with a PartitionSpec, then device_put
    raise NotImplementedError("phase9 task 2: shard_rows")


def collective_census(f, *args) -> Counter:
    """Collective ops XLA inserted when it compiled `jax.jit(f)(*args)`, counted by opcode.

    Count only collectives (all-reduce, all-gather, reduce-scatter, collective-permute,
    all-to-all), in every computation of the optimized (partitioned) HLO.
    """
    # TODO: compile, parse (xla_inspect.parse.parse_hlo), count opcodes
    raise NotImplementedError("phase9 task 3: collective_census")


def device_param_shapes(f, *args) -> list[tuple[int, ...]]:
    """Shapes of the ENTRY parameters of the partitioned program: what one device receives."""
    # TODO: which HLO has run the SPMD partitioner: the lowered or the compiled one?
    raise NotImplementedError("phase9 task 4: device_param_shapes")


def param_shardings(f, *args) -> list[str]:
    """The `sharding={...}` annotation text of each ENTRY parameter, e.g. "{devices=[8,1]<=[8]}".

    Read it where it is still written on the parameters: before the partitioner runs.
    """
    # TODO: unoptimized HLO, ENTRY parameters, their sharding attribute
    raise NotImplementedError("phase9 task 5: param_shardings")


def psum_total(x, mesh: Mesh) -> jax.Array:
    """The sum of all elements of the row-sharded `x`: each device sums its rows, then psum."""
    # TODO: jax.shard_map with in_specs P("x") and a replicated output
    raise NotImplementedError("phase9 task 6: psum_total")


def ring_shift(x, mesh: Mesh) -> jax.Array:
    """Move each device's block of rows to the next device (the last one's to device 0)."""
    # TODO: jax.lax.ppermute with a list of (source, destination) pairs
    raise NotImplementedError("phase9 task 7: ring_shift")


def gather_rows(x, mesh: Mesh) -> jax.Array:
    """Every device ends up with all rows of the row-sharded `x` (a replicated result)."""
    # TODO: jax.lax.all_gather(tiled=True) inside shard_map
    raise NotImplementedError("phase9 task 8: gather_rows")


def scatter_sum(x, mesh: Mesh) -> jax.Array:
    """Sum the 8 row blocks of `x` element-wise; device i keeps the i-th slice of the sum."""
    # TODO: one collective both reduces and scatters
    raise NotImplementedError("phase9 task 9: scatter_sum")
