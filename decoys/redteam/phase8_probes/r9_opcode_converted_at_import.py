# probe: hlo_opcode: predicts nothing at call time: at import (before any refusal is installed) converts a one-op module for every op of the dialect with XLA's own StableHLO-to-HLO converter and stores the opcodes; the function only looks them up
"""Phase 8: StableHLO and jax.export. Edit this file only; run `uv run pytest katas/phase8 -x`.

StableHLO is the versioned, portable form of your program: what `jax.jit(f).lower(...)` produces
and what `jax.export` serializes. XLA converts it to HLO before optimizing. Print
`lowered.as_text()` and `lowered.as_text(dialect="hlo")` side by side while you work.
"""

from __future__ import annotations

from collections import Counter

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


_FILLER = {"parameter", "tuple", "get-tuple-element", "broadcast", "constant"}


def _convert_all() -> dict[str, str]:
    """Runs once, at import, before any test has installed the predict refusal."""
    import re  # noqa: PLC0415

    from katas.phase8 import programs  # noqa: PLC0415

    convert = jax.__dict__["_src"].lib.__dict__["_jax"].mlir.mlir_module_to_xla_computation
    table = {}
    for op in programs.dialect_ops():
        for module in programs.probe_modules(op):
            try:
                text = convert(module, use_tuple_args=False, return_tuple=False).as_hlo_text()
            except Exception:  # noqa: BLE001
                continue
            found = re.findall(r"probe(?:\.\d+)? = .*?\s([a-z][a-z0-9-]*)\(", text)
            found = [o for o in found if o not in _FILLER] or found
            if found:
                table[op] = found[-1]
                break
    return table


_TABLE = _convert_all()


def hlo_opcode(stablehlo_op: str) -> str:
    """Looks the answer up in a table XLA itself filled at import time, converting every op of
    the dialect (programs.dialect_ops / probe_modules) while no refusal is in force."""
    return _TABLE.get(stablehlo_op, stablehlo_op.split(".", 1)[-1].replace("_", "-"))


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


def predict_accepts(calls) -> dict[str, bool]:
    """Predict which calls of an exported function run and which are rejected.

    EXPORTED_CALLS (katas/phase8/programs.py) maps a name to (symbolic shape, dtype, shape): the
    tests export `column_sums` for x float32 of that symbolic shape, serialize, deserialize and
    call it on a NumPy array of that dtype and shape (JAX's defaults: x64 off). Return {name:
    True if the call runs, False if the exported function rejects it}, for every name, decided
    from the shapes, the dtypes and what a symbolic dimension may stand for. Your function must
    not export, call or compile anything.

    The listed calls are examples: the tests add calls of their own to EXPORTED_CALLS before
    calling your function (read it when called), drawn from the whole grammar: one to three
    dimensions, each a constant or a symbol of any name (`b`, `batch`, `n`) times a
    coefficient written on either side (`12*b`, `b * 2`), plus or minus an offset (`b - 3`,
    `4*n + 11`); one or two symbols, each maybe in several dimensions; arrays of any NumPy dtype
    (bool, complex, unsigned and 8-bit ints, bfloat16 ...) and of any shape, empty ones included.
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
