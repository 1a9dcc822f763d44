"""What a fact query returns: `Matches`, a list that compares with an int by its length, and
the IR excerpts that let a failing assertion show what matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from xla_inspect.hlo.lexical import split_attributes
from xla_inspect.model import HloComputation, HloInstruction, HloModule
from xla_inspect.query import Fusion

__all__ = ["Matches", "brief", "excerpt", "fusion_excerpt", "query", "unquote"]

# attributes left out of an excerpt: long, and about where the op came from, not what it is
_NOISY_ATTRIBUTES = frozenset({"metadata", "frontend_attributes", "statistics_viz"})
_LINE_WIDTH = 160
_BRIEF_WIDTH = 80
_LAYOUT = re.compile(r"\{[^{}]*\}")
_BODY_LINES = 6


class Matches[T](list[T]):
    """The records a query matched, in module text order, each with an IR excerpt.

    Compares with an int by length (`facts.fusions(kind="kLoop") <= 3`, `== 0`) and with
    anything else as a list; `not matches` is true when nothing matched. `query` says what was
    asked. For `self[i]`, `briefs[i]` is one short line (its computation, name, shape and
    opcode; for a fusion, its kind and the opcodes it fused) and `excerpts[i]` the IR: its
    computation and its instruction as printed (without `metadata`), and for a fusion the first
    lines of its fused computation.
    """

    query: str
    briefs: tuple[str, ...]
    excerpts: tuple[str, ...]

    def __init__(self, query: str, found: Iterable[tuple[T, str, str]]) -> None:
        rows = list(found)
        super().__init__(item for item, _, _ in rows)
        self.query = query
        self.briefs = tuple(brief for _, brief, _ in rows)
        self.excerpts = tuple(excerpt for _, _, excerpt in rows)

    __hash__ = None  # type: ignore[assignment]  # a list: unhashable

    def __eq__(self, other: object) -> bool:
        return len(self) == other if _is_count(other) else list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: Any) -> bool:
        return len(self) < other if _is_count(other) else list.__lt__(self, other)

    def __le__(self, other: Any) -> bool:
        return len(self) <= other if _is_count(other) else list.__le__(self, other)

    def __gt__(self, other: Any) -> bool:
        return len(self) > other if _is_count(other) else list.__gt__(self, other)

    def __ge__(self, other: Any) -> bool:
        return len(self) >= other if _is_count(other) else list.__ge__(self, other)

    def __repr__(self) -> str:
        """One line (pytest escapes newlines in a repr and cuts it at 240 characters)."""
        shown = "; ".join(self.briefs)
        return f"<{self.query}: {len(self)} found{': ' + shown if shown else ''}>"

    def explain(
        self, brief: bool = False, max_chars: int | None = None, max_lines: int | None = None
    ) -> str:
        """The query and count, then each match's excerpt (its brief line, if `brief`), as many
        as fit in `max_chars` characters and `max_lines` lines (no limit when None), the last
        line saying how many more there are."""
        lines = [f"{self.query}: {len(self)} found"]
        size = len(lines[0])
        for shown, block in enumerate(self.briefs if brief else self.excerpts):
            more = shown < len(self) - 1  # a line must be kept for "... and N more"
            over_chars = max_chars is not None and size + len(block) + 24 * more > max_chars
            over_lines = max_lines is not None and len(lines) + 1 + more > max_lines
            if over_chars or over_lines:
                lines.append(f"  ... and {len(self) - shown} more")
                break
            lines.append(f"  {block}" if brief else block)
            size += len(block) + 3
        return "\n".join(lines)


def _is_count(other: object) -> bool:
    return isinstance(other, int) and not isinstance(other, bool)


def _where(computation: HloComputation) -> str:
    return f"ENTRY {computation.name}" if computation.is_entry else computation.name


def _bare(shape: str) -> str:
    """A shape without its layouts: `f32[8,16]{1,0}` -> `f32[8,16]`."""
    return _LAYOUT.sub("", shape)


def brief(computation: HloComputation, instruction: HloInstruction) -> str:
    """`computation: %name = shape opcode(operands)`, without layouts, cut short."""
    operands = ", ".join(f"%{name}" for name in instruction.operands)
    line = f"%{instruction.name} = {_bare(instruction.shape)} {instruction.opcode}({operands})"
    if len(line) > _BRIEF_WIDTH:
        line = line[: _BRIEF_WIDTH - 4] + "...)"
    return f"{_where(computation)}: {line}"


def query(name: str, **filters: str | None) -> str:
    """How a query is named in a message: `fusions(kind='kLoop')`."""
    given = ", ".join(f"{k}={v!r}" for k, v in filters.items() if v is not None)
    return f"{name}({given})"


def unquote(text: str) -> str:
    """`text` without the double quotes around it, if it has them."""
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _instruction_line(instruction: HloInstruction) -> str:
    """The instruction as XLA prints it, without `metadata` and such, cut to one screen line."""
    inside = instruction.payload if instruction.payload is not None else ""
    if not inside:
        inside = ", ".join(f"%{name}" for name in instruction.operands)
    attributes = [
        f"{key}={value}"
        for key, value in split_attributes(instruction.attributes_text)
        if key not in _NOISY_ATTRIBUTES
    ]
    root = "ROOT " if instruction.is_root else ""
    line = f"{root}%{instruction.name} = {instruction.shape} {instruction.opcode}({inside})"
    line = ", ".join([line, *attributes])
    return line if len(line) <= _LINE_WIDTH else line[: _LINE_WIDTH - 3] + "..."


def excerpt(computation: HloComputation, instruction: HloInstruction) -> str:
    """The instruction as printed, after its computation's name."""
    return f"  {_where(computation)}: {_instruction_line(instruction)}"


def fusion_excerpt(module: HloModule, fusion: Fusion) -> tuple[str, str]:
    """(brief, excerpt): the fusion's line with what it fused, and for the excerpt the first
    lines of its fused computation."""
    holder = module[fusion.computation]
    instruction = holder[fusion.name]
    fused_ops = ", ".join(
        op if n == 1 else f"{op} x{n}" for op, n in sorted(fusion.absorbed.items())
    )
    short = (
        f"{_where(holder)}: %{fusion.name} = {_bare(fusion.shape)} fusion"
        f" {fusion.label} [fuses {fused_ops}]"
    )
    lines = [f"{excerpt(holder, instruction)}  [fuses {fused_ops}]"]
    fused = module.computation(fusion.fused_computation)
    if fused is not None:
        body = [i for i in fused if i.opcode != "parameter"]
        lines += [f"      {_instruction_line(i)}" for i in body[:_BODY_LINES]]
        if len(body) > _BODY_LINES:
            lines.append(f"      ... {len(body) - _BODY_LINES} more in {fused.name}")
    return short, "\n".join(lines)
