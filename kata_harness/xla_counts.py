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


def _text_positions(instructions: list[Any], printed: list[tuple[str, str]]) -> list[int]:
    """Where each of XLA's instructions of a computation stands in the text's computation.

    By name when XLA kept the text's names (a compiled module, whose instructions XLA holds in
    another order than it prints them); by position otherwise: XLA's parser keeps the text's
    order but renames an instruction whose name another computation uses (``%k`` becomes
    ``k.1``); the opcodes must then agree one by one."""
    names = [n for n, _ in printed]
    if sorted(i.name for i in instructions) == sorted(names):
        return [names.index(i.name) for i in instructions]
    opcodes = [opcode_name(i.opcode) for i in instructions]
    assert opcodes == [o for _, o in printed], (
        f"XLA's instructions {opcodes} differ from the text's"
    )
    return list(range(len(instructions)))


def conditionals(module: Any, text: str) -> list[tuple[str, int]]:
    """(index element type, branch count) of every conditional of ``module``, in the order
    ``text`` (the module's text, as the learner gets it) lists computations and instructions.
    A conditional's operands are its index and one operand per branch; the index's type is
    XLA's own shape of that operand."""
    from xla_inspect.parse import parse_hlo

    from .xla_shapes import xla_shape

    printed = {c.name: [(i.name, i.opcode) for i in c] for c in parse_hlo(text)}
    order = list(printed)
    found = []
    for computation in module.computations():
        instructions = list(computation.instructions())
        positions = _text_positions(instructions, printed[computation.name])
        for position, instruction in zip(positions, instructions, strict=True):
            if opcode_name(instruction.opcode) != "conditional":
                continue
            operands = instruction.operands()
            index_type = str(xla_shape(operands[0])).split("[")[0]
            where = (order.index(computation.name), position)
            found.append((where, (index_type, len(operands) - 1)))
    return [signature for _, signature in sorted(found)]
