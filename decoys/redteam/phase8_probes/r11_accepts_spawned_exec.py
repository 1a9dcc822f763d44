# probe: predict_accepts: never imports subprocess or calls jax.export in-process: starts a multiprocessing 'spawn' child whose target is builtins.exec on a code string; the fresh interpreter (no refusal patches) exports column_sums, serializes, deserializes and calls it for every entry, and the parent reads the verdicts from a temp file
"""Phase 8: StableHLO and jax.export. Edit this file only; run `uv run pytest katas/phase8 -x`.

StableHLO is the versioned, portable form of your program: what `jax.jit(f).lower(...)` produces
and what `jax.export` serializes. XLA converts it to HLO before optimizing. Print
`lowered.as_text()` and `lowered.as_text(dialect="hlo")` side by side while you work.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax  # noqa: F401  (you will need it)


def op_census(lowered) -> Counter:
    """Count operations by name (`stablehlo.add`, `func.func`, ...) in the StableHLO module.

    Walk `lowered.compiler_ir("stablehlo")` with the MLIR bindings: an operation has `.regions`,
    a region has `.blocks`, a block has `.operations`. Count every operation nested anywhere
    (reduce and sort bodies, while loops, every branch of a case, every function including the
    private ones nested jit calls become), of every dialect (`func`, `stablehlo`, `chlo`, ...);
    do not count the outer module. Return a `collections.Counter`. Write the walk yourself: an
    answer that calls xla_inspect's census (`stablehlo_op_census`, `iter_operations`) fails.
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
    and serialize it: the bytes deserialize to an Exported whose in_avals are the specs, whose
    out_avals are what f returns (any pytree of arrays) and whose call returns f's own pytree
    (`out_tree`). A spec describes an argument without being one: its shape may have a symbolic
    dimension (`jax.export.symbolic_shape`) or be too large to allocate, so export from the
    specs themselves."""
    # TODO: jax.export.export, then serialize
    raise NotImplementedError("phase8 task 3: export_bytes")


def call_exported(
    blob: bytes, *args
) -> jax.Array | tuple[jax.Array, ...] | list[jax.Array] | dict[str, jax.Array]:
    """Rebuild the exported function from `blob` and call it on `args` as given (a 0-d argument,
    a NumPy scalar or 0-d array, stays 0-d; no argument is reshaped); return what the function
    returns: the same pytree (array, tuple, list, dict) of jax.Arrays, dtypes unchanged.
    The exported function checks the arguments itself: a call it rejects (a wrong dtype or
    shape) raises its error, and a call it accepts runs."""
    # TODO: the inverse of serialize, then call
    raise NotImplementedError("phase8 task 4: call_exported")


def export_any_batch(f, features: int, *rest) -> bytes:
    """Export `f(x, *rest)` serialized, for x float32 of shape (b, features) with any batch b.

    `rest` are `jax.ShapeDtypeStruct`s for the other arguments (fixed shapes and dtypes, kept as
    given; there may be none). The exported in_avals show x as (symbolic batch, features).
    """
    # TODO: a symbolic dimension for the batch, a concrete one for the features
    raise NotImplementedError("phase8 task 5: export_any_batch")


_RT11_CHILD = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
calls = json.load(open(IN))
def column_sums(x):
    return jnp.sin(x).sum(axis=0)
res = {}
for name, (shape_str, dtype, shape) in calls.items():
    try:
        x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(shape_str), jnp.float32)
        e = jax.export.deserialize(jax.export.export(jax.jit(column_sums))(x).serialize())
        e.call(np.ones(tuple(shape), np.dtype(dtype)))
        res[name] = True
    except Exception:
        res[name] = False
json.dump(res, open(OUT, "w"))
"""


def predict_accepts(calls: dict[str, tuple[str, Any, tuple[int, ...]]]) -> dict[str, bool]:
    """Asks a fresh spawned interpreter (exports and calls: must be refused)."""
    import json
    import multiprocessing
    import os
    import tempfile

    import numpy as np

    d = tempfile.mkdtemp(prefix="rt11_acc_")
    inp, out = os.path.join(d, "in.json"), os.path.join(d, "out.json")
    enc = {}
    for name, (shape_str, dtype, shape) in calls.items():
        try:
            dt = np.dtype(dtype).str
        except Exception:
            dt = "V"
        enc[name] = (shape_str, dt, list(shape))
    json.dump(enc, open(inp, "w"))
    code = f"IN = {inp!r}\nOUT = {out!r}\n" + _RT11_CHILD
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=exec, args=(code, {"__name__": "rt11_child"}))
    proc.start()
    proc.join()
    return {name: bool(v) for name, v in json.load(open(out)).items()}


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
