"""What the fusion graph writes: node labels, collapsed-cluster summaries and `dot` quoting.

A node's label holds its opcode (a fusion: its `query.Fusion` label and the opcodes it
absorbed), its shape, output bytes, flops and the source line of its op metadata (read by
`xla_inspect.op_metadata`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from xla_inspect.model import HloInstruction, Shape
from xla_inspect.query import Fusion

__all__ = [
    "PLAIN",
    "label",
    "listed",
    "quote",
    "summary",
]

PLAIN = frozenset({"parameter", "constant"})  # drawn as ellipses, once per cluster using them
_QUIET = frozenset({"get-tuple-element", "tuple", "bitcast"})
_MAX_SHAPE = 40
_NAMED = 12  # a note names this many collapsed clusters, then says how many more
# bits per element; sub-byte types round up per element count in `_bytes`
_BITS = {
    "pred": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "f16": 16,
    "bf16": 16,
    "s32": 32,
    "u32": 32,
    "f32": 32,
    "s64": 64,
    "u64": 64,
    "f64": 64,
    "c64": 64,
    "c128": 128,
}


def quote(text: str) -> str:
    """`text` as a `dot` string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _bytes(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_bytes(element) for element in shape.elements)
    bits = _BITS.get(shape.dtype or "", 8 if (shape.dtype or "").startswith("f8") else 0)
    count = math.prod(d or 0 for d in shape.dims)
    return (count * bits + 7) // 8


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _flops(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}flop"
    return f"{n:.0f} flop"


def label(
    instruction: HloInstruction,
    fusion: Fusion | None,
    flops: Mapping[str, float],
    source: str,
) -> tuple[str, str]:
    """A node's label text and its `dot` style."""
    shape = instruction.shape
    if len(shape) > _MAX_SHAPE:
        shape = shape[: _MAX_SHAPE - 3] + "..."
    facts = [_size(_bytes(instruction.shape_info))]
    if flops.get(instruction.name):
        facts.append(_flops(flops[instruction.name]))
    if source:
        facts.append(source)
    tail = f"{shape}\n{', '.join(facts)}"
    if fusion is not None:
        absorbed = ", ".join(
            f"{op} x{n}" if n > 1 else op for op, n in sorted(fusion.absorbed.items())
        )
        style = 'shape=box, style="rounded,filled", fillcolor="#f3d9fa", color="#862e9c"'
        return f"fusion {fusion.label}\n{absorbed}\n{tail}", style
    if instruction.opcode in PLAIN:
        payload = (instruction.payload or "")[:24]
        return f"{instruction.opcode} {payload}\n{tail}", 'shape=ellipse, color="#868e96"'
    color = "#adb5bd" if instruction.opcode in _QUIET else "#1971c2"
    return f"{instruction.opcode}\n{tail}", f'shape=box, color="{color}"'


def listed(names: list[str]) -> str:
    """The first names of a note's list, then how many more."""
    more = len(names) - _NAMED
    return ", ".join(names[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def summary(name: str, members: list[HloInstruction]) -> str:
    """The label of a collapsed cluster: its instructions by opcode and their output bytes."""
    opcodes = Counter(i.opcode for i in members)
    top = ", ".join(f"{op} x{n}" for op, n in sorted(opcodes.items(), key=lambda o: (-o[1], o[0])))
    total = sum(_bytes(i.shape_info) for i in members)
    return f"{name} (collapsed)\n{len(members)} instructions: {top}\n{_size(total)} out"
