"""Errors raised by xla_inspect: one base class, and a parse error that says where and what."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

_MAX_SHOWN = 120


class InspectError(Exception):
    """Base class of every error xla_inspect raises on purpose."""


class HloParseError(InspectError):
    """HLO text that does not follow the grammar.

    `line_no` is 1-based, `line` is the offending source line (or the joined logical line of a
    wrapped instruction), `col` the 1-based column where known (None otherwise) and `expected`
    says what the grammar allowed at that point.
    """

    def __init__(self, line_no: int, line: str, expected: str, col: int | None = None) -> None:
        self.line_no = line_no
        self.line = line
        self.expected = expected
        self.col = col
        shown = line.strip()
        if len(shown) > _MAX_SHOWN:
            shown = shown[: _MAX_SHOWN - 3] + "..."
        where = f" (at {line_no}:{col})" if col is not None else ""
        super().__init__(f"line {line_no}: expected {expected}{where}, got: {shown}")

    def __reduce__(self) -> tuple[type[HloParseError], tuple[int, str, str, int | None]]:
        return (type(self), (self.line_no, self.line, self.expected, self.col))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` with the closest of `choices` to a misspelt `word`, or ''."""
    close = get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
