"""Phase 8 reference: StableHLO and jax.export."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

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
    "cross-replica-sum": "all-reduce",  # a legacy op (hyphens already): an all-reduce of add
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


_TERM = re.compile(r"\s*([+-]?)\s*(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*|\d+)(?:\s*\*\s*(\d+))?\s*")


def _linear(dim: str) -> tuple[dict[str, int], int]:
    """A dimension of a symbolic shape as ({symbol: coefficient}, constant): `3*b - 2`,
    `b*2`, `4` (a term is a number, a symbol or a number times a symbol, either way round)."""
    coefficients: dict[str, int] = {}
    constant, at = 0, 0
    while at < len(dim):
        term = _TERM.match(dim, at)
        if term is None or term.end() == at:
            raise ValueError(f"cannot read the dimension {dim!r}")
        sign, before, name, after = term.groups()
        factor = (-1 if sign == "-" else 1) * int(before or 1) * int(after or 1)
        if name.isdigit():
            constant += factor * int(name)
        else:
            coefficients[name] = coefficients.get(name, 0) + factor
        at = term.end()
    return coefficients, constant


def _accepts(symbolic: str, dtype, shape: tuple[int, ...]) -> bool:
    if jax.dtypes.canonicalize_dtype(dtype) != jnp.float32:  # float64 arrives as float32
        return False
    dims = [_linear(dim) for dim in symbolic.split(",")]
    if len(dims) != len(shape):
        return False
    values: dict[str, int] = {}
    pending = list(zip(dims, shape, strict=True))
    while pending:  # solve a dimension with at most one unknown symbol, then the others
        solvable = [
            n for n, ((coefficients, _), _) in enumerate(pending)
            if sum(name not in values for name in coefficients) <= 1
        ]  # fmt: skip
        if not solvable:
            raise ValueError(f"cannot solve {symbolic!r}")
        (coefficients, constant), size = pending.pop(solvable[0])
        unknown = [name for name in coefficients if name not in values]
        known = constant + sum(c * values[s] for s, c in coefficients.items() if s in values)
        if not unknown:
            if known != size:
                return False
            continue
        value, remainder = divmod(size - known, coefficients[unknown[0]])
        if remainder or value < 1:  # every symbol stands for an integer >= 1
            return False
        values[unknown[0]] = value
    return True


def predict_accepts(calls: dict[str, tuple[str, Any, tuple[int, ...]]]) -> dict[str, bool]:
    # Every symbol stands for an integer >= 1, so b + 1 cannot be 1 and a bare b cannot be 0
    # (b - 1 can: b = 1); 2*b and b*2 need an even size; a symbol used twice needs one value
    # that fits every dimension it appears in, bare or inside an expression, whatever its sign
    # or the side its coefficient is written on (b, 2*b: the second is twice the first), while
    # two symbols may take one value (a, b on 3x3); constants, the rank and the dtype must match
    # exactly, the dtype after JAX canonicalizes the NumPy array (x64 off: float64 arrives as
    # float32 and runs, int64 as int32 and is refused; float16 is not converted).
    return {
        name: _accepts(symbolic, dtype, shape) for name, (symbolic, dtype, shape) in calls.items()
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
