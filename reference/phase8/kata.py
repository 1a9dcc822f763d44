"""Phase 8 reference: StableHLO and jax.export."""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp

# StableHLO ops whose HLO opcode is another word, not just another spelling.
_RENAMED = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "if": "conditional",  # JAX never emits it; XLA converts it like case, with a pred index
    "optimization_barrier": "opt-barrier",
    "create_token": "after-all",  # HLO makes a token with an after-all of no operands
    "composite": "call",  # a call of the decomposition, marked as a composite
}


def _count(operation, census: Counter) -> None:
    for region in operation.regions:
        for block in region.blocks:
            for inner in block.operations:
                census[inner.operation.name] += 1
                _count(inner.operation, census)


def op_census(lowered) -> Counter:
    # Ops nest: module -> func.func -> body; reduce/while/case keep their bodies in regions.
    census: Counter = Counter()
    module = lowered.compiler_ir("stablehlo")
    _count(module.operation, census)
    return census


def hlo_opcode(stablehlo_op: str) -> str:
    # A few ops change name; the rest keep it, with HLO's hyphens for StableHLO's underscores.
    name = stablehlo_op.removeprefix("stablehlo.")
    return _RENAMED.get(name, name).replace("_", "-")


def export_bytes(f, *specs) -> bytes:
    # Exported holds StableHLO plus calling conventions; serialize() makes portable bytes.
    return bytes(jax.export.export(jax.jit(f))(*specs).serialize())


def call_exported(blob: bytes, *args):
    # deserialize() needs no Python source of f: the StableHLO inside is compiled and run.
    return jax.export.deserialize(bytearray(blob)).call(*args)


def export_any_batch(f, features: int, *rest) -> bytes:
    # A symbolic "b" makes one module valid for every batch size (checked at call time).
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    return bytes(jax.export.export(jax.jit(f))(x, *rest).serialize())
