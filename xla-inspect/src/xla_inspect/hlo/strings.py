"""Quoted strings as XLA's lexer reads them (escapes), and the scanners that find where a
JSON or frontend-attributes value ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xla_inspect.hlo.values import QUOTED, STRING

_ESCAPE = re.compile(r"\\([0-7]{1,3}|x[0-9a-fA-F]*|u[0-9a-fA-F]{0,4}|U[0-9a-fA-F]{0,8}|.)")


def escapes_ok(text: str) -> bool:
    for escape in _ESCAPE.findall(text, 1, len(text) - 1):
        kind, digits = escape[0], escape[1:]
        if kind in "01234567":
            ok = int(escape, 8) <= 0o377
        elif kind == "x":
            ok = digits != "" and int(digits, 16) <= 0xFF
        elif kind in "uU":  # a code point, no surrogate
            ok = len(digits) == (4 if kind == "u" else 8) and (
                (point := int(digits, 16)) <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF
            )
        else:
            ok = kind in "abfnrtv\\'\"?"
        if not ok:
            return False
    return True


_QUOTED_STRING = re.compile(QUOTED)


def strings_ok(text: str) -> bool:
    """Each quoted string in `text` has only escapes XLA's lexer undoes (it undoes those of
    every string token: a JSON dict is one token, so its strings are not read)."""
    return "\\" not in text or all(escapes_ok(q) for q in _QUOTED_STRING.findall(text))


_FRONTEND_STRING = re.compile(rf"(?:^|[{{,])\s*[A-Za-z_][\w.\-]*+=\s*({QUOTED})")


def frontend_strings_ok(text: str) -> bool:
    """The quoted values of frontend attributes (not the JSON dicts) `strings_ok`."""
    return "\\" not in text or all(escapes_ok(q) for q in _FRONTEND_STRING.findall(text))


# name ::= [A-Za-z_][A-Za-z0-9_.-]* directly followed by '=' (XLA's attribute-name token)
NAME_EQ = r"[A-Za-z_][\w.\-]*+="


_BRACE_OR_QUOTE = re.compile(r'[{}"]')


_DOUBLE_QUOTED = re.compile(STRING)


def _json_end(text: str, pos: int) -> int:
    """The offset after a JSON dict at `pos` as XLA's lexer takes one: braces that balance (as
    deep as they go), double-quoted strings (the rest is not read); -1 when there is none."""
    if not text.startswith("{", pos):
        return -1
    depth = 0
    while (found := _BRACE_OR_QUOTE.search(text, pos)) is not None:
        pos = found.start()
        char = text[pos]
        if char == '"':
            string = _DOUBLE_QUOTED.match(text, pos)
            if string is None:
                return -1
            pos = string.end()
            continue
        depth += 1 if char == "{" else -1
        pos += 1
        if not depth:
            return pos
    return -1


_FRONTEND_NAME = re.compile(rf"\s*{NAME_EQ}\s*")


_SPACE = re.compile(r"\s*")


def frontend_end(text: str, pos: int) -> int:
    """The offset after frontend attributes at `pos`, -1 when there are none:
    frontend_attributes ::= '{' (name '=' (string | json_dict) (',' name '=' ...)*)? '}'."""
    if not text.startswith("{", pos):
        return -1
    pos = _SPACE.match(text, pos + 1).end()  # pyright: ignore[reportOptionalMemberAccess]
    if text.startswith("}", pos):
        return pos + 1
    while True:
        name = _FRONTEND_NAME.match(text, pos)
        if name is None:
            return -1
        pos = name.end()
        if text.startswith("{", pos):
            pos = _json_end(text, pos)
            if pos < 0:
                return -1
        else:
            string = _QUOTED_STRING.match(text, pos)
            if string is None:
                return -1
            pos = string.end()
        pos = _SPACE.match(text, pos).end()  # pyright: ignore[reportOptionalMemberAccess]
        if text.startswith("}", pos):
            return pos + 1
        if not text.startswith(",", pos):
            return -1
        pos += 1


def config_end(text: str, pos: int) -> int:
    """The offset after a backend_config at `pos` (a quoted string or a JSON dict), or -1."""
    if text.startswith("{", pos):
        return _json_end(text, pos)
    string = _QUOTED_STRING.match(text, pos)
    return -1 if string is None else string.end()


_ANYTHING = re.compile(r"(?s).*")


class Scanned:
    """A value read by a function (`scan(text, pos)`: the offset after it, or -1) where a
    pattern cannot say it (braces nested as deep as they go), then checked by `valid`; the
    part of re.Pattern the attribute checks use, as _Checked."""

    __slots__ = ("_scan", "_valid")

    def __init__(self, scan: Callable[[str, int], int], valid: Callable[[str], bool]) -> None:
        self._scan = scan
        self._valid = valid

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        end = self._scan(text, pos)
        if end < 0 or not self._valid(text[pos:end]):
            return None
        return _ANYTHING.match(text, pos, end)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        found = self.match(text)
        return found if found is not None and found.end() == len(text) else None
