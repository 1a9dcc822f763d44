"""Facts about StableHLO, read by walking the MLIR module with jaxlib's own MLIR bindings.

No regular expressions over MLIR text: text is parsed by MLIR itself, in a context that has every
dialect JAX emits registered (`jax._src.interpreters.mlir.make_ir_context`).

Not guaranteed: op names follow the StableHLO/MLIR dialects bundled with this jaxlib; JAX is
free to emit different ops for the same program in another version (and `jax.export` output
differs from `Lowered.as_text()`). The MLIR bindings are a private part of jaxlib.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from xla_inspect.errors import InspectError

__all__ = ["StableHloError", "iter_operations", "stablehlo_op_census"]


class StableHloError(InspectError):
    """Input that is not a StableHLO module (or cannot be parsed as one)."""


def _module(source: Any) -> Any:
    """An MLIR `ir.Module` from a Lowered, a Capture, an ir.Module/Operation, or module text."""
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir

    if isinstance(source, ir.Module | ir.Operation):
        return source
    if hasattr(source, "stablehlo_module"):
        return source.stablehlo_module
    if callable(getattr(source, "compiler_ir", None)):
        return source.compiler_ir("stablehlo")
    if isinstance(source, bytes | str):
        with mlir.make_ir_context():
            try:
                return ir.Module.parse(source)
            except Exception as exc:  # MLIRError, whose type lives in a private module
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else "no detail"
                raise StableHloError(f"not parseable as StableHLO/MLIR: {first}") from exc
    raise StableHloError(
        f"expected a Lowered, a Capture, an MLIR module or StableHLO text, got {type(source)!r}"
    )


def iter_operations(source: Any) -> Iterator[Any]:
    """Every operation nested in the module, in pre-order (the module op itself excluded)."""
    module = _module(source)
    root = getattr(module, "operation", module)
    stack = [root]
    while stack:
        op = stack.pop()
        children = [
            inner.operation
            for region in op.regions
            for block in region.blocks
            for inner in block.operations
        ]
        if op is not root:
            yield op
        stack.extend(reversed(children))


def stablehlo_op_census(source: Any) -> Counter[str]:
    """How many times each op name (`stablehlo.dot_general`, `func.func`, ...) occurs.

    `source` is a `jax.stages.Lowered`, a `Capture`, an MLIR `ir.Module`, or StableHLO text
    (`lowered.as_text()`). Ops inside regions (reduce bodies, while loops, nested functions)
    are counted; the enclosing `builtin.module` is not.
    """
    return Counter(op.name for op in iter_operations(source))
