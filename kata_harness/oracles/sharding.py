"""Phase 9's oracles: the collectives of a compiled (partitioned) module, read with the toolkit's
reader and with XLA's own module (kata_harness.xla_counts); the shardings jit kept for a
program's arguments (``compiled.input_shardings``); the bytes the collectives of a compiled
program move; and what one device holds of an array, from jit's compiled parameter or from
``jax.device_put`` (None where jax refuses the placement).

Each function takes a program, its lowering or compiled form, or a placement, never the kata's
answer.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo

from .. import collectives, xla_counts

COLLECTIVES = frozenset(
    {"all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"}
)


def optimized_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def static_dims(shape: Shape) -> tuple[int, ...]:
    dims = tuple(d for d in shape.dims if d is not None)
    assert len(dims) == len(shape.dims), f"a dynamic dimension in {shape.text}"
    return dims


def collectives_in(module):
    """Collective instructions in every computation of a parsed module."""
    return [i for c in module for i in c if i.opcode in COLLECTIVES]


def collective_ops(f, *args):
    """Collective instructions in every computation of the compiled (partitioned) module."""
    return collectives_in(parse_hlo(optimized_text(jax.jit(f).lower(*args).compile())))


def collective_counts(f, *args) -> Counter:
    return Counter(i.opcode for i in collective_ops(f, *args))


def xla_census(f, *args) -> Counter:
    """The collectives of jax.jit(f)(*args) by opcode, counted in XLA's own compiled module
    (every computation: branches, loop bodies), not in its text."""
    return Counter(xla_collective_counts(jax.jit(f).lower(*args).compile()))


def kept_shardings(compiled: jax.stages.Compiled, args, kept):
    """compiled.input_shardings: None for an argument jit dropped; the rest, in argument order."""
    shardings = compiled.input_shardings[0]
    assert [k for k, s in enumerate(shardings) if s is not None] == list(kept)
    return [(args[k], shardings[k]) for k in kept]


def xla_collective_counts(compiled: jax.stages.Compiled) -> dict[str, int]:
    """{opcode: count} of the collectives in XLA's own module of the compiled program."""
    counts = xla_counts.opcode_counts(compiled)
    return {opcode: counts[opcode] for opcode in sorted(COLLECTIVES) if counts[opcode]}


def collective_bytes(lowered) -> int:
    """Bytes of the results of every collective of the compiled module (per device)."""
    return collectives.collective_bytes(optimized_text(lowered.compile()))


def compiled_shard_shape(shape, spec, mesh, label: str) -> tuple[int, ...] | None:
    """The ENTRY parameter's shape when jit receives the case's array, None if jax refuses it."""
    try:
        sharding = NamedSharding(mesh, spec)
        given = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)
        lowered = jax.jit(lambda a: a * 2).lower(given)
    except ValueError as refused:
        assert "implies that array axis" in str(refused), f"{label}: {refused}"
        return None
    module = parse_hlo(optimized_text(lowered.compile()))
    (parameter,) = [i for i in module.entry if i.opcode == "parameter"]
    return static_dims(parameter.shape_info)


def device_put_shard_shape(shape, spec, mesh) -> tuple[int, ...] | None:
    """What one device holds after jax.device_put with NamedSharding(mesh, spec), None if jax
    refuses the placement (it raises)."""
    try:
        placed = jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, spec))
    except Exception:  # noqa: BLE001  (ValueError, IndivisibleError, DuplicateSpecError, ...)
        return None
    return tuple(placed.addressable_shards[0].data.shape)
