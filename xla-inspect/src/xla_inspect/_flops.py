"""Flops of each instruction, from shapes alone, counted as XLA's cost analysis counts them.

Used by the fusion graph to show each node's flops; works on a parsed module, no JAX.
"""

from __future__ import annotations

import math
import re

from xla_inspect.model import HloComputation, HloInstruction, HloModule, Shape
from xla_inspect.query import fused_computation_names

__all__ = ["instruction_flops"]

# elementwise opcodes XLA's cost analysis counts as one flop per output element (transcendental
# ones, exponential, tanh..., it counts apart, as transcendentals)
_ELEMENTWISE_FLOP = frozenset(
    "add subtract multiply divide maximum minimum negate abs compare select and or xor not"
    " remainder sign floor ceil round-nearest-afz round-nearest-even clamp atan2 power".split()
)
_DIGITS = re.compile(r"[0-9]+")


def _elements(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_elements(element) for element in shape.elements)
    return math.prod(d or 0 for d in shape.dims)


def instruction_flops(module: HloModule) -> dict[str, float]:
    """Flops of each instruction outside fused computations, from shapes, counted as XLA's
    cost analysis counts them: a dot 2 x output elements x the contracted size; a
    convolution 2 x output elements x the kernel's size per output feature (padding not
    taken off, so an upper bound); an elementwise arithmetic op or compare one per output
    element; a reduce one per input element; a fusion what its fused computation holds.
    Transcendental ops (exponential, tanh...) count 0, as in XLA's `flops`. Keyed by
    instruction name (names are unique per computation; a later computation's wins)."""
    totals: dict[str, float] = {}

    def computation_flops(name: str) -> float:
        if name not in totals:
            totals[name] = 0.0  # a cycle (never in valid HLO) counts nothing
            computation = module.computation(name)
            if computation is not None:
                totals[name] = sum(one(i, computation) for i in computation)
        return totals[name]

    def operand_shape(
        instruction: HloInstruction, computation: HloComputation, k: int
    ) -> Shape | None:
        if len(instruction.operands) <= k:
            return None
        defining = computation.instruction(instruction.operands[k])
        return defining.shape_info if defining is not None else None

    def one(instruction: HloInstruction, computation: HloComputation) -> float:
        opcode = instruction.opcode
        if opcode == "fusion":
            return computation_flops((instruction.attribute("calls") or "").removeprefix("%"))
        if opcode in _ELEMENTWISE_FLOP:
            return _elements(instruction.shape_info)
        if opcode == "reduce":
            source = operand_shape(instruction, computation, 0)
            return _elements(source) if source is not None else 0
        if opcode == "dot":
            lhs = operand_shape(instruction, computation, 0)
            if lhs is None:
                return 0
            contracted = _DIGITS.findall(instruction.attribute("lhs_contracting_dims") or "")
            size = math.prod(lhs.dims[int(d)] or 0 for d in contracted if int(d) < len(lhs.dims))
            return 2 * _elements(instruction.shape_info) * size
        if opcode == "convolution":
            kernel = operand_shape(instruction, computation, 1)
            labels = (instruction.attribute("dim_labels") or "").partition("_")[2]
            if kernel is None or "o" not in labels or len(kernel.dims) <= labels.index("o"):
                return 0
            per_output = math.prod(d or 0 for d in kernel.dims) // max(
                kernel.dims[labels.index("o")] or 1, 1
            )
            return 2 * _elements(instruction.shape_info) * per_output
        return 0

    fused = fused_computation_names(module)
    return {
        instruction.name: one(instruction, computation)
        for computation in module.computations
        if computation.name not in fused
        for instruction in computation
    }
