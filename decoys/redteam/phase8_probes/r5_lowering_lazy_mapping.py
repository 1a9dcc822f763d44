# probe: predict_lowering: returns a dict subclass whose values are computed by jax.jit(f).lower on first read, i.e. after the refusal has ended, when the test compares
"""Phase 8: StableHLO and jax.export. Edit this file only; run `uv run pytest katas/phase8 -x`."""

from __future__ import annotations

import re
from collections import Counter

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp
import numpy as np


def op_census(lowered) -> Counter:
    """Count operations by name in the StableHLO module (every region, every function)."""
    counts: Counter = Counter()

    def visit(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    counts[child.operation.name] += 1
                    visit(child.operation)

    visit(lowered.compiler_ir("stablehlo").operation)
    return counts


_RENAMED = {
    "stablehlo.dot_general": "dot",
    "stablehlo.broadcast_in_dim": "broadcast",
    "stablehlo.case": "conditional",
    "stablehlo.optimization_barrier": "opt-barrier",
    "stablehlo.if": "conditional",
    "stablehlo.create_token": "after-all",
    "stablehlo.composite": "call",
}


def hlo_opcode(stablehlo_op: str) -> str:
    """The HLO opcode that the StableHLO op becomes."""
    if stablehlo_op in _RENAMED:
        return _RENAMED[stablehlo_op]
    return stablehlo_op.removeprefix("stablehlo.").replace("_", "-")


def export_bytes(f, *specs) -> bytes:
    """Export jax.jit(f) for the specs and serialize it."""
    return jax.export.export(jax.jit(f))(*specs).serialize()


def call_exported(blob: bytes, *args):
    """Rebuild the exported function from blob and call it on args."""
    return jax.export.deserialize(blob).call(*args)


def export_any_batch(f, features: int, *rest) -> bytes:
    """Export f(x, *rest) for x float32 (b, features), any batch b."""
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


_ACCEPTS = {
    "(b, 4) called with f32[3,4]": True,
    "(b, 4) called with f32[1,4]": True,
    "(b, 4) called with f32[0,4]": False,
    "(b, 4) called with f32[3,5]": False,
    "(b, 4) called with f32[3,4,1]": False,
    "(b, 4) called with i32[3,4]": False,
    "(2*b, 4) called with f32[6,4]": True,
    "(2*b, 4) called with f32[5,4]": False,
    "(b, b) called with f32[3,3]": True,
    "(b, b) called with f32[3,4]": False,
    "(b + 1, 4) called with f32[1,4]": False,
    "(b + 1, 4) called with f32[2,4]": True,
    "(a, b) called with f32[2,7]": True,
}


def predict_accepts(calls) -> dict[str, bool]:
    """Which EXPORTED_CALLS run."""
    return dict(_ACCEPTS)


_C, _B = "stablehlo.constant", "stablehlo.broadcast_in_dim"
_LOWERED = {
    "jnp.sin(x) * jnp.cos(x)": {"stablehlo.sine": 1, "stablehlo.cosine": 1, "stablehlo.multiply": 1},
    "jnp.exp(x) - 1": {"stablehlo.exponential": 1, _C: 1, _B: 1, "stablehlo.subtract": 1},
    "jnp.tanh(x)": {"stablehlo.tanh": 1},
    "x * 2.0": {_C: 1, _B: 1, "stablehlo.multiply": 1},
    "x ** 2": {"stablehlo.multiply": 1},
    "x / y": {"stablehlo.divide": 1},
    "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
    "jax.nn.relu(x)": {_C: 1, _B: 1, "stablehlo.maximum": 1},
    "jnp.where(x > 0, x, y)": {_C: 1, _B: 1, "stablehlo.compare": 1, "stablehlo.select": 1},
    "x.sum(axis=0)": {_C: 1, "stablehlo.reduce": 1, "stablehlo.add": 1, "stablehlo.return": 1},
    "x.max(axis=1)": {_C: 1, "stablehlo.reduce": 1, "stablehlo.maximum": 1, "stablehlo.return": 1},
    "x.mean()": {
        _C: 2,
        "stablehlo.reduce": 1,
        "stablehlo.add": 1,
        "stablehlo.return": 1,
        "stablehlo.divide": 1,
    },
    "x @ w": {"stablehlo.dot_general": 1},
    "x.T": {"stablehlo.transpose": 1},
    "x[0]": {"stablehlo.slice": 1, "stablehlo.reshape": 1},
    "x[::-1]": {"stablehlo.reverse": 1},
}


_S = jax.ShapeDtypeStruct((4, 3), jnp.float32)
_BANK = {
    "jnp.sin(x) * jnp.cos(x)": (lambda x: jnp.sin(x) * jnp.cos(x), (_S,)),
    "jnp.exp(x) - 1": (lambda x: jnp.exp(x) - 1, (_S,)),
    "jnp.tanh(x)": (jnp.tanh, (_S,)),
    "x * 2.0": (lambda x: x * 2.0, (_S,)),
    "x ** 2": (lambda x: x**2, (_S,)),
    "x / y": (lambda x, y: x / y, (_S, _S)),
    "x + i, i int32": (lambda x, i: x + i, (_S, jax.ShapeDtypeStruct((4, 3), jnp.int32))),
    "jax.nn.relu(x)": (jax.nn.relu, (_S,)),
    "jnp.where(x > 0, x, y)": (lambda x, y: jnp.where(x > 0, x, y), (_S, _S)),
    "x.sum(axis=0)": (lambda x: x.sum(axis=0), (_S,)),
    "x.max(axis=1)": (lambda x: x.max(axis=1), (_S,)),
    "x.mean()": (lambda x: x.mean(), (_S,)),
    "x @ w": (lambda x, w: x @ w, (_S, jax.ShapeDtypeStruct((3, 5), jnp.float32))),
    "x.T": (lambda x: x.T, (_S,)),
    "x[0]": (lambda x: x[0], (_S,)),
    "x[::-1]": (lambda x: x[::-1], (_S,)),
}


class _Lowered(dict):
    """Keys now, values when read: each lowered (and counted) the first time it is looked at."""

    def _value(self, name):
        f, specs = _BANK[name]
        census = op_census(jax.jit(f).lower(*specs))
        return {k: v for k, v in census.items() if k.startswith("stablehlo.")}

    def __getitem__(self, name):
        return self._value(name)

    def get(self, name, default=None):
        return self._value(name) if name in self else default

    def items(self):
        return [(name, self._value(name)) for name in self.keys()]

    def values(self):
        return [self._value(name) for name in self.keys()]

    def __eq__(self, other):
        return dict(self.items()) == other

    def __ne__(self, other):
        return not self == other

    __hash__ = None


def predict_lowering() -> dict[str, dict[str, int]]:
    """The stablehlo ops of each LOWERING_BANK program, looked up when read."""
    return _Lowered({name: {} for name in _BANK})