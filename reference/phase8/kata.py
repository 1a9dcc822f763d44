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


def call_exported(
    blob: bytes, *args
) -> jax.Array | tuple[jax.Array, ...] | list[jax.Array] | dict[str, jax.Array]:
    # deserialize() needs no Python source of f: the StableHLO inside is compiled and run.
    return jax.export.deserialize(bytearray(blob)).call(*args)


def export_any_batch(f, features: int, *rest) -> bytes:
    # A symbolic "b" makes one module valid for every batch size (checked at call time).
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    return bytes(jax.export.export(jax.jit(f))(x, *rest).serialize())


def predict_accepts() -> dict[str, bool]:
    # Every symbol stands for an integer >= 1, so b + 1 cannot be 1 and a bare b cannot be 0
    # (b - 1 can: b = 1); 2*b and b*2 need an even size; a symbol used twice needs one value
    # that fits every dimension it appears in, bare or inside an expression, whatever its sign
    # or the side its coefficient is written on (b, 2*b: the second is twice the first), while
    # two symbols may take one value (a, b on 3x3); constants, the rank and the dtype must match
    # exactly, the dtype after JAX canonicalizes the NumPy array (x64 off: float64 arrives as
    # float32 and runs, int64 as int32 and is refused; float16 is not converted).
    return {
        "(b, 4) called with f32[3,4]": True,
        "(b, 4) called with f32[1,4]": True,
        "(b, 4) called with f32[0,4]": False,
        "(b, 4) called with f32[3,5]": False,
        "(b, 4) called with f32[3,4,1]": False,
        "(b, 4) called with i32[3,4]": False,
        "(b, 4) called with f64[3,4]": True,
        "(b, 4) called with f16[3,4]": False,
        "(b, 4) called with i64[3,4]": False,
        "(2*b, 4) called with f32[6,4]": True,
        "(2*b, 4) called with f32[5,4]": False,
        "(b, b) called with f32[3,3]": True,
        "(b, b) called with f32[3,4]": False,
        "(b + 1, 4) called with f32[1,4]": False,
        "(b + 1, 4) called with f32[2,4]": True,
        "(a, b) called with f32[2,7]": True,
        "(a, b) called with f32[3,3]": True,
        "(b, 2*b) called with f32[3,6]": True,
        "(b + 1, b) called with f32[3,3]": False,
        "(2*b, b + 1) called with f32[4,4]": False,
        "(b - 1, 4) called with f32[1,4]": True,
        "(b - 1, 4) called with f32[0,4]": True,
        "(b - 2, b) called with f32[1,3]": True,
        "(b - 1, b) called with f32[3,3]": False,
        "(b*2, 4) called with f32[5,4]": False,
        "(b, b*2) called with f32[3,6]": True,
        "(b, b*2) called with f32[3,3]": False,
        "(3*b - 2, 4) called with f32[4,4]": True,
        "(b*3 + 1, b) called with f32[7,2]": True,
    }


def predict_lowering() -> dict[str, dict[str, int]]:
    # jnp functions lower to StableHLO ops named after the math (sine, exponential); a Python
    # scalar is a scalar constant broadcast to the array's shape; x ** 2 is a multiply; mixing
    # dtypes adds a convert; a reduction is a reduce with an init constant and a body region
    # (the combining op and a stablehlo.return); mean divides by a second constant, the count;
    # x[0] is a slice then a reshape that drops the unit dimension.
    reduce = {"stablehlo.reduce": 1, "stablehlo.constant": 1, "stablehlo.return": 1}
    scalar = {"stablehlo.constant": 1, "stablehlo.broadcast_in_dim": 1}
    return {
        "jnp.sin(x) * jnp.cos(x)": {
            "stablehlo.sine": 1,
            "stablehlo.cosine": 1,
            "stablehlo.multiply": 1,
        },
        "jnp.exp(x) - 1": {"stablehlo.exponential": 1, "stablehlo.subtract": 1} | scalar,
        "jnp.tanh(x)": {"stablehlo.tanh": 1},
        "x * 2.0": {"stablehlo.multiply": 1} | scalar,
        "x ** 2": {"stablehlo.multiply": 1},
        "x / y": {"stablehlo.divide": 1},
        "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
        "jax.nn.relu(x)": {"stablehlo.maximum": 1} | scalar,
        "jnp.where(x > 0, x, y)": {"stablehlo.compare": 1, "stablehlo.select": 1} | scalar,
        "x.sum(axis=0)": reduce | {"stablehlo.add": 1},
        "x.max(axis=1)": reduce | {"stablehlo.maximum": 1},
        "x.mean()": reduce | {"stablehlo.add": 1, "stablehlo.divide": 1, "stablehlo.constant": 2},
        "x @ w": {"stablehlo.dot_general": 1},
        "x.T": {"stablehlo.transpose": 1},
        "x[0]": {"stablehlo.slice": 1, "stablehlo.reshape": 1},
        "x[::-1]": {"stablehlo.reverse": 1},
    }
