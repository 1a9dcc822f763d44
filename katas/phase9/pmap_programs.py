"""Phase 9's inherited pmap code: the training step to migrate and the programs whose compiled
collectives and parameters the pmap tasks read (the rest of the phase is in programs.py).

On jax 0.10.2, 0.11.2 and 0.12.0.1 `jax.pmap` compiles through `jit(shard_map)`: one SPMD
program with num_partitions = the mapped size, the pmap axis a mesh axis (README, phase 9).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from katas.phase9.programs import mesh_named, put, small_ints

LEARNING_RATE = 0.05


def squared_error(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def pmap_step_body(w, x, y):
    """One least-squares step on one device's block, as the inherited code writes it."""
    loss, grad = jax.value_and_grad(squared_error)(w, x, y)
    return w - LEARNING_RATE * jax.lax.pmean(grad, "batch"), jax.lax.pmean(loss, "batch")


# The inherited training step: w the same on every device, x and y split along their first axis.
inherited_step = jax.pmap(pmap_step_body, axis_name="batch", in_axes=(None, 0, 0))


def run_inherited(w, x, y, blocks: int):
    """The inherited step on the whole batch (x, y) cut into `blocks` blocks of rows, one per
    device. pmap returns one copy per device: shapes (blocks, *w.shape) and (blocks,)."""
    return inherited_step(w, x.reshape(blocks, -1, x.shape[1]), y.reshape(blocks, -1, y.shape[1]))


# (mesh of programs.MESHES, batch, features, outputs): batch divides by the length of "x".
MIGRATE_CASES = [("8", 16, 4, 3), ("2x4", 6, 5, 2), ("y2x4", 8, 3, 1), ("4x2", 12, 6, 4)]


def migrate_arrays(number: int, seed: int = 0):
    """w, x, y as float32 NumPy arrays for MIGRATE_CASES[number]."""
    _, batch, features, outputs = MIGRATE_CASES[number]
    rng = np.random.default_rng([number, seed])
    return (
        rng.normal(size=(features, outputs)).astype(np.float32),
        rng.normal(size=(batch, features)).astype(np.float32),
        rng.normal(size=(batch, outputs)).astype(np.float32),
    )


def read_all(*args):
    """Reads every argument, so each one is an ENTRY parameter."""
    return sum(jnp.sum(a) for a in args)


def pmap_of_read_all(shapes, in_axes):
    """jax.pmap(read_all, in_axes=...) lowered for float32 arguments of these global shapes."""
    args = [np.zeros(shape, np.float32) for shape in shapes]
    return jax.pmap(read_all, in_axes=tuple(in_axes)).lower(*args)


def pmap_collectives(a):  # psum, all_gather and psum_scatter over pmap's axis "i"
    gathered = jax.lax.all_gather(a, "i")
    return jax.lax.psum(a, "i"), gathered.sum(0), jax.lax.psum_scatter(a, "i", tiled=True)


def shard_map_collectives(a):  # shard_map on mesh "2x4": a psum over "y", one over both axes
    def local(block):
        return jax.lax.psum(block, "y"), jax.lax.psum(block.sum(), ("x", "y"))

    mesh = mesh_named("2x4")
    return jax.shard_map(local, mesh=mesh, in_specs=P("x", "y"), out_specs=(P("x", "y"), P()))(a)


def groups_bank():
    """(name, function, args): programs whose collectives' device groups the tasks read."""
    return [
        (
            "pmap over 8 devices",
            jax.pmap(pmap_collectives, axis_name="i"),
            (np.ones((8, 16), np.float32),),
        ),
        (
            "pmap over 4 devices",
            jax.pmap(pmap_collectives, axis_name="i"),
            (np.ones((4, 8), np.float32),),
        ),
        (
            "shard_map on a 2x4 mesh",
            shard_map_collectives,
            (put(small_ints((8, 16), np.float32, 3), "x", "y", mesh="2x4"),),
        ),
    ]
