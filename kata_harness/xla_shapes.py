"""The shape XLA's own parser gives an instruction, on every supported jaxlib.

Kata tests use jaxlib's private ``jaxlib._hlo`` module as an oracle. Its ``HloInstruction.shape``
exists from jaxlib 0.12 on; older jaxlibs expose only ``to_string()``, the line XLA prints for the
instruction, whose shape is XLA's own rendering of the same ``Shape``. ``xla_shape`` returns the
real object when there is one and otherwise reads that printed shape into an object with the
same methods the tests use (``str``, ``is_tuple``, ``tuple_shapes``, ``layout().minor_to_major``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ARRAY = re.compile(r"(?P<type>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\](?:\{(?P<layout>[^}]*)\})?")


@dataclass(frozen=True, slots=True)
class _Layout:
    order: tuple[int, ...]

    def minor_to_major(self) -> tuple[int, ...]:
        return self.order


@dataclass(frozen=True, slots=True)
class PrintedShape:
    """A shape read from XLA's printed text: an array (``text``) or a tuple (``elements``)."""

    text: str
    elements: tuple[PrintedShape, ...] | None = None

    def __str__(self) -> str:
        return self.text

    def is_tuple(self) -> bool:
        return self.elements is not None

    def tuple_shapes(self) -> list[PrintedShape]:
        assert self.elements is not None, f"{self.text} is not a tuple"
        return list(self.elements)

    def layout(self) -> _Layout:
        match = _ARRAY.fullmatch(self.text)
        assert match is not None, f"{self.text} is not an array shape"
        order = (match["layout"] or "").split(":")[0]
        return _Layout(tuple(int(d) for d in order.split(",") if d))


def _read(text: str, at: int) -> tuple[PrintedShape, int]:
    """The shape starting at ``text[at]`` and the index just past it."""
    if text[at] != "(":
        match = _ARRAY.match(text, at)
        if match is None:
            raise ValueError(f"no shape at {text[at : at + 40]!r}")
        return PrintedShape(match[0]), match.end()
    elements = []
    position = at + 1
    while text[position] != ")":
        if text.startswith("/*", position):  # XLA numbers long tuples: /*index=5*/
            position = text.index("*/", position) + 2
        element, position = _read(text, position)
        elements.append(element)
        if text.startswith(", ", position):
            position += 2
    return PrintedShape(text[at : position + 1], tuple(elements)), position + 1


def printed_shape(line: str) -> PrintedShape:
    """The shape of a printed instruction, ``%name = <shape> opcode(...)``."""
    start = line.index(" = ") + 3
    return _read(line, start)[0]


def xla_shape(instruction):
    """``instruction.shape`` where jaxlib has it, else the shape XLA printed for it."""
    shape = getattr(instruction, "shape", None)
    return shape if shape is not None else printed_shape(instruction.to_string())
