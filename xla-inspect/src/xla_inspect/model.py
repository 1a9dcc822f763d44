"""The HLO data model (defined in xla_inspect.hlo.model, where the reader builds it)."""

from xla_inspect.hlo.model import (
    CALL_ATTRIBUTE_KEYS,
    CALL_ATTRIBUTES,
    HloComputation,
    HloInstruction,
    HloModule,
    Shape,
    new_computation,
    new_instruction,
)

__all__ = [
    "CALL_ATTRIBUTE_KEYS",
    "CALL_ATTRIBUTES",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "Shape",
    "new_computation",
    "new_instruction",
]
