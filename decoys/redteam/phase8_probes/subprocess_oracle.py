# probe: predict_accepts: runs the real export/deserialize/call in a subprocess (python -c), out of reach of the refusal and the compile listener
"""Phase 8: StableHLO and jax.export. Edit this file only; run `uv run pytest katas/phase8 -x`.

StableHLO is the versioned, portable form of your program: what `jax.jit(f).lower(...)` produces
and what `jax.export` serializes. XLA converts it to HLO before optimizing. Print
`lowered.as_text()` and `lowered.as_text(dialect="hlo")` side by side while you work.
"""

from __future__ import annotations

from collections import Counter

import jax  # noqa: F401  (you will need it)

import subprocess
import sys
from pathlib import Path

# Run the real export and calls in a child interpreter: the harness patches, listeners and
# audit hook live in this process only, and a string is not scanned for imports.
_ORACLE = """
import json, sys, numpy as np, jax, jax.numpy as jnp
def column_sums(x):
    return jnp.sin(x).sum(axis=0)
out = {}
for name, (symbolic, dtype, shape) in json.loads(sys.stdin.read()).items():
    dtype = jnp.dtype(dtype)
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(symbolic), np.float32)
    blob = jax.export.export(jax.jit(column_sums))(spec).serialize()
    try:
        jax.export.deserialize(blob).call(np.ones(shape, dtype))
        out[name] = True
    except Exception:
        out[name] = False
print(json.dumps(out))
"""
_ROOT = Path(__file__).resolve().parents[2]



def op_census(lowered) -> Counter:
    """Count operations by name (`stablehlo.add`, `func.func`, ...) in the StableHLO module.

    Walk `lowered.compiler_ir("stablehlo")` with the MLIR bindings: an operation has `.regions`,
    a region has `.blocks`, a block has `.operations`. Count every operation nested anywhere
    (reduce and sort bodies, while loops, every branch of a case, every function including the
    private ones nested jit calls become), of every dialect (`func`, `stablehlo`, `chlo`, ...);
    do not count the outer module. Return a `collections.Counter`.
    """
    # TODO: recurse operation -> regions -> blocks -> operations, counting op.operation.name
    raise NotImplementedError("phase8 task 1: op_census")


def hlo_opcode(stablehlo_op: str) -> str:
    """The HLO opcode that the StableHLO op `stablehlo_op` (e.g. "stablehlo.add") becomes.

    It must work for any op of the dialect, not a fixed list, including ops JAX never emits
    (the README names the renamed ones). It is a prediction: find the naming rules beforehand
    by lowering small programs and reading both `lowered.as_text()` and
    `lowered.as_text(dialect="hlo")`, then answer from the name alone. The tests compare with
    XLA's conversion; your function must not jit, lower or compile anything.
    """
    # TODO: a few renamed ops, then one spelling rule for the rest
    raise NotImplementedError("phase8 task 2: hlo_opcode")


def export_bytes(f, *specs) -> bytes:
    """Export `jax.jit(f)` for argument specs (`jax.ShapeDtypeStruct`, any shapes and dtypes)
    and serialize it: the bytes deserialize to an Exported whose in_avals are the specs and whose
    out_avals are what f returns (any pytree of arrays)."""
    # TODO: jax.export.export, then serialize
    raise NotImplementedError("phase8 task 3: export_bytes")


def call_exported(blob: bytes, *args):
    """Rebuild the exported function from `blob` and call it on `args`; return what the
    function returns: the same pytree (array, tuple, dict) of jax.Arrays, dtypes unchanged."""
    # TODO: the inverse of serialize, then call
    raise NotImplementedError("phase8 task 4: call_exported")


def export_any_batch(f, features: int, *rest) -> bytes:
    """Export `f(x, *rest)` serialized, for x float32 of shape (b, features) with any batch b.

    `rest` are `jax.ShapeDtypeStruct`s for the other arguments (fixed shapes and dtypes, kept as
    given; there may be none). The exported in_avals show x as (symbolic batch, features).
    """
    # TODO: a symbolic dimension for the batch, a concrete one for the features
    raise NotImplementedError("phase8 task 5: export_any_batch")


def predict_accepts(calls) -> dict[str, bool]:
    """Asks a child Python process that exports and calls for real."""
    import json

    root = _ROOT
    while not (root / "katas").is_dir() and root != root.parent:
        root = root.parent
    import numpy as np

    given = {n: [s, np.dtype(d).name, list(sh)] for n, (s, d, sh) in calls.items()}
    done = subprocess.run(
        [sys.executable, "-c", _ORACLE],
        cwd=root,
        input=json.dumps(given),
        capture_output=True,
        text=True,
        check=True,
    )
    return {str(k): bool(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def predict_lowering() -> dict[str, dict[str, int]]:
    """Predict the StableHLO ops each LOWERING_BANK program lowers to.

    LOWERING_BANK (katas/phase8/programs.py) maps a name to (function, argument specs). Return
    {name: {op name: count}} for every name, counting the `stablehlo.*` operations of the
    lowered module the way op_census walks it (ops nested in regions too; leave out `func.*`
    and ops that do not occur). Decide from the jnp code; your function must not lower or
    compile anything.
    """
    # TODO: one census per LOWERING_BANK name
    raise NotImplementedError("phase8 task 7: predict_lowering")
