"""Phase 9's inherited pmap code: the training step to migrate and the programs whose compiled
collectives and parameters the pmap tasks read (the rest of the phase is in programs.py).

On jax 0.10.2, 0.11.2 and 0.12.0.1 `jax.pmap` compiles through `jit(shard_map)`: one SPMD
program with num_partitions = the mapped size, the pmap axis a mesh axis (README, phase 9).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from katas.phase9.programs import mesh_named, mesh_of, put, small_ints

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


def pmap_collectives(a):  # psum, all_gather, psum_scatter and a ppermute over pmap's axis "i"
    ring = [(i, (i + 1) % jax.lax.axis_size("i")) for i in range(jax.lax.axis_size("i"))]
    gathered = jax.lax.all_gather(a, "i").sum(0)
    scattered = jax.lax.psum_scatter(a, "i", tiled=True)
    return jax.lax.psum(a, "i") + jax.lax.ppermute(gathered, "i", ring), scattered


def _on(mesh, axes, loop: bool = False):
    """A shard_map program on `mesh` whose collectives all work over `axes` (in a fori_loop's
    body when `loop`); its argument is split over every axis of the mesh."""
    names = mesh.axis_names

    def local(block):
        if loop:
            return jax.lax.fori_loop(0, 2, lambda _, c: c + jax.lax.psum(c, axes) / 4, block)
        return jax.lax.psum(block, axes) + jax.lax.all_gather(block.sum(1), axes, tiled=True)[0]

    spec = P(*names)
    return jax.shard_map(local, mesh=mesh, in_specs=spec, out_specs=spec)


def _jit_step(mesh: str):
    """The whole-batch step under jax.jit, the batch split over "x": the partitioner inserts
    its all-reduce."""

    def step(w, x, y):
        loss, grad = jax.value_and_grad(squared_error)(w, x, y)
        return w - LEARNING_RATE * grad, loss

    return jax.jit(step, out_shardings=jax.sharding.NamedSharding(mesh_named(mesh), P()))


def groups_bank():
    """(name, function, args): programs whose collectives' device groups the tasks read (each
    program's collectives all work over the same devices)."""
    w, x, y = migrate_arrays(2)
    block = small_ints((8, 16), np.float32, 3)
    cube = mesh_of((("x", 2), ("y", 2), ("z", 2)))
    return [
        ("pmap over 8 devices", jax.pmap(pmap_collectives, axis_name="i"), (block,)),
        ("pmap over 4 devices", jax.pmap(pmap_collectives, axis_name="i"), (block[:4],)),
        ("pmap without collectives", jax.pmap(lambda a: a * 2), (block,)),
        ("shard_map over y, 2x4", _on(mesh_named("2x4"), "y"), (put(block, "x", "y", mesh="2x4"),)),
        ("shard_map over x, 4x2", _on(mesh_named("4x2"), "x"), (put(block, "x", "y", mesh="4x2"),)),
        (
            "shard_map over both, 2x4",
            _on(mesh_named("2x4"), ("x", "y")),
            (put(block, "x", "y", mesh="2x4"),),
        ),
        (
            "shard_map over the middle axis, 2x2x2",
            _on(cube, "y"),
            (jax.device_put(block.reshape(2, 4, 16), NamedSharding(cube, P("x", "y", "z"))),),
        ),
        (
            "shard_map over x in a loop, (y, x) 2x4",
            _on(mesh_named("y2x4"), "x", loop=True),
            (put(block, "y", "x", mesh="y2x4"),),
        ),
        (
            "jit step, batch over x, (y, x) 2x4",
            _jit_step("y2x4"),
            (put(w, mesh="y2x4"), put(x, "x", None, mesh="y2x4"), put(y, "x", None, mesh="y2x4")),
        ),
        (
            "inherited pmap step over 8 devices",
            inherited_step,
            (w, x.reshape(8, 1, -1), y.reshape(8, 1, -1)),
        ),
    ]
