"""Opcode counts of a compiled program, from XLA's own module rather than from its text.

``jax.stages.Compiled.runtime_executable().hlo_modules()`` hands back the C++ ``HloModule``s XLA
optimized; counting their instructions by ``opcode`` is independent of the printed text and of
``xla_inspect``'s reader, which the learners use. Opcodes are named as HLO text names them
(XLA's ``kAllReduce`` is ``"all-reduce"``), in every computation: loop bodies and conditions,
branches, called and fused computations.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

_WORD = re.compile(r"(?<!^)(?=[A-Z])")


def opcode_name(opcode: Any) -> str:
    """XLA's enum name of an opcode (``kCollectivePermute``) as HLO text spells it."""
    return _WORD.sub("-", opcode.name.removeprefix("k")).lower()


def xla_modules(compiled: Any) -> list[Any]:
    """The C++ modules behind a ``jax.stages.Compiled`` (one on CPU)."""
    executable = compiled.runtime_executable()
    assert executable is not None, "this backend hides its executable"
    return list(executable.hlo_modules())


def opcode_counts(compiled: Any) -> Counter[str]:
    """How many instructions of each opcode the compiled program holds, in every computation."""
    return Counter(
        opcode_name(instruction.opcode)
        for module in xla_modules(compiled)
        for computation in module.computations()
        for instruction in computation.instructions()
    )


def module_of_compiled(compiled: Any) -> Any:
    """The one C++ module of a compiled CPU program."""
    (module,) = xla_modules(compiled)
    return module


def module_of_stablehlo(text: str) -> tuple[str, Any]:
    """XLA's own conversion of a StableHLO/MLIR module into HLO (no optimization): its text and
    its HloModule."""
    from jax._src.lib import _jax  # pyright: ignore[reportPrivateImportUsage]

    computation = _jax.mlir.mlir_module_to_xla_computation(
        text, use_tuple_args=False, return_tuple=False
    )
    return computation.as_hlo_text(), computation.get_hlo_module()


def module_opcode_count(module: Any, opcode: str) -> int:
    """Instructions of ``opcode`` (as HLO text spells it) in every computation of ``module``."""
    return sum(
        opcode_name(i.opcode) == opcode for c in module.computations() for i in c.instructions()
    )


def conditionals(module: Any, text: str) -> list[tuple[str, int]]:
    """(index element type, branch count) of every conditional of ``module``, in the order
    ``text`` (the module's text, as the learner gets it) lists computations and instructions.
    A conditional's operands are its index and one operand per branch; the index's type is
    XLA's own shape of that operand."""
    from xla_inspect.parse import parse_hlo

    from .xla_shapes import xla_shape

    printed = parse_hlo(text)
    computations = [c.name for c in printed]
    positions = {(c.name, i.name): n for c in printed for n, i in enumerate(c)}
    found = []
    for computation in module.computations():
        for instruction in computation.instructions():
            if opcode_name(instruction.opcode) != "conditional":
                continue
            operands = instruction.operands()
            index_type = str(xla_shape(operands[0])).split("[")[0]
            where = (
                computations.index(computation.name),
                positions[(computation.name, instruction.name)],
            )
            found.append((where, (index_type, len(operands) - 1)))
    return [signature for _, signature in sorted(found)]
