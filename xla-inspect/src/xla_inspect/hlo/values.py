"""Small checkers for attribute values: integers that fit, windows, dim_labels, iota
replica groups, tolerances' pieces, and the regex building blocks (ints, lists, pairs) the
value grammar in value_forms and attributes is made of.
"""

from __future__ import annotations

import re
from collections.abc import Callable


class Checked:
    """A pattern whose match counts only when `valid` holds for the text it matched (the part
    of re.Pattern the attribute checks use: match and fullmatch)."""

    __slots__ = ("_pattern", "_valid")

    def __init__(self, pattern: str, valid: Callable[[str], bool], flags: int = 0) -> None:
        self._pattern = re.compile(pattern, flags)
        self._valid = valid

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        found = self._pattern.match(text, pos)
        return found if found is not None and self._valid(found.group()) else None

    def fullmatch(self, text: str) -> re.Match[str] | None:
        found = self._pattern.fullmatch(text)
        return found if found is not None and self._valid(text) else None


# XLA's lexer reads an integer token into [-2^63, 2^64-1] (2^63 and up wrap around to negative
# int64s) and refuses one outside; a long run of digits is rare, so only those are converted
# (a pad `0_N` or a DxD `1xN` holds one after a '_' or an 'x')
_LONG_INT = re.compile(r"(?<![A-Za-wyz0-9.])-?[0-9]{19,}+(?![0-9.eE])")


INT64 = (-(2**63), 2**63 - 1)


_LEXER_INT = (-(2**63), 2**64 - 1)


def ints_fit(text: str, bounds: tuple[int, int] = _LEXER_INT) -> bool:
    """Each integer token in `text` (outside its strings) within `bounds`."""
    found = _LONG_INT.search(text)
    if found is None:
        return True
    if '"' in text or "'" in text:
        text = re.sub(QUOTED, '""', text)
    low, high = bounds
    return all(low <= int(n) <= high for n in _LONG_INT.findall(text))


def metadata_int_ok(field: str, text: str) -> bool:
    """An integer metadata field's value as XLA takes it: an int32 once read as an int64
    (2^63 to 2^64-1 wrap around, so 2^64-1 is -1); profile_type's each a ProfileType (0-3)
    once cast to a 32-bit int."""
    if field == "profile_type":  # each cast to a 32-bit int: its low 32 bits
        numbers = [int(n) for n in text.strip("{} \t").split(",") if n.strip()]
        return all(ints_fit(str(n)) and (n & 0xFFFFFFFF) <= 3 for n in numbers)
    value = int(text)
    if not _LEXER_INT[0] <= value <= _LEXER_INT[1]:
        return False
    return -(2**31) <= (value - 2**64 if value >= 2**63 else value) < 2**31


_METADATA_INT = re.compile(
    r"(?<![\w.])(source_line|source_end_line|source_column|source_end_column|stack_frame_id"
    r"|profile_type)=\s*(\{[^{}]*\}|-?[0-9]+)"
)


def metadata_ints_ok(text: str) -> bool:
    """The integer metadata fields in `text` (a sharding's metadata) each `metadata_int_ok`."""
    if '"' in text or "'" in text:
        text = re.sub(QUOTED, '""', text)
    return all(metadata_int_ok(field, value) for field, value in _METADATA_INT.findall(text))


INT = r"-?[0-9]+"


INT_LIST = rf"{INT}(?:\s*,\s*{INT})*+"


BRACED_INTS = rf"\{{\s*(?:{INT_LIST})?\s*\}}"


BRACED_INT_LISTS = rf"\{{\s*(?:{BRACED_INTS}(?:\s*,\s*{BRACED_INTS})*+)?\s*\}}"


PAIR = rf"\{{\s*{INT}\s*,\s*{INT}\s*\}}"


BOOL = r"true|false"


# slice range ::= '[' start ':' limit (':' stride)? ']'
RANGE = rf"\[\s*{INT}\s*:\s*{INT}(?:\s*:\s*{INT})?\s*\]"


# a word ends where XLA's identifiers do: [a-zA-Z_][a-zA-Z0-9_.-]*
END_OF_WORD = r"(?![\w.\-])"


STRING = r'"(?:[^"\\]|\\.)*+"'


def braced(depth: int) -> str:
    """A pattern of '{...}' holding strings and braces nested up to `depth` deep."""
    quoted = rf"{STRING}|'(?:[^'\\]|\\.)*+'"  # (a '}' in either kind of string: not one)
    pattern = rf"\{{(?:[^{{}}\"']|{quoted})*+\}}"
    for _ in range(depth - 1):
        pattern = rf"\{{(?:[^{{}}\"']|{quoted}|{pattern})*+\}}"
    return pattern


def ints(text: str) -> list[int]:
    return [int(n) for n in text.split(",")]


def product(numbers: list[int]) -> int:
    result = 1
    for n in numbers:
        result *= n
    return result


# window ::= '{' (name '=' value)* '}', each sub-attribute once, no commas; size/stride/dilations/
# reversal take N or NxNx.., pad takes L_HxL_H..; each has as many dimensions as size
_DXD = r"(?:[0-9]++(?:x[0-9]++)++|-?[0-9]++)"


_WINDOW_PAD = r"-?[0-9]++_-?[0-9]++(?:x-?[0-9]++_-?[0-9]++)*+"


WINDOW = (
    rf"\{{\s*(?:(?:(?:size|stride|lhs_dilate|rhs_dilate|rhs_reversal)=\s*{_DXD}"
    rf"|pad=\s*{_WINDOW_PAD})\s*)*+\}}"
)


_WINDOW_PART = re.compile(r"([a-z_]+)=\s*([0-9x_\-]+)")


def window_ok(text: str) -> bool:
    dims: dict[str, int] = {}
    for name, value in _WINDOW_PART.findall(text):
        # a pad and an NxN.. are read as int64s (a lone N is an integer token)
        if name in dims or (("_" in value or "x" in value) and not ints_fit(value, INT64)):
            return False
        dims[name] = value.count("x") + 1
    size = dims.pop("size", 0)
    return all(n == size for n in dims.values())


# dim_labels ::= lhs '_' kernel '->' output; each part names its dimensions once: b/f (i/o in the
# kernel), '?', and the spatial dimensions 0..N-1, N the same in all three parts
DIM_LABELS = r"[0-9bf?]{2,}+_[0-9io?]{2,}+->[0-9bf?]{2,}+"


def dim_labels_ok(text: str) -> bool:
    lhs, _, rest = text.partition("_")
    kernel, _, output = rest.partition("->")
    spatial = set()
    for part, letters in ((lhs, "bf"), (kernel, "io"), (output, "bf")):
        named = part.replace("?", "")
        if len(set(named)) != len(named):
            return False
        digits = [int(c) for c in named if c not in letters]
        if any(d >= len(digits) for d in digits):
            return False
        spatial.add(len(digits))
    return len(spatial) == 1


# iota device list ::= '[' dims ']' '<=' '[' reshape ']' ('T(' permutation ')')?, T(...) only
# (and then required) when reshape has several dimensions, each entry of it in [0, len(reshape));
# the reshape and the dims hold as many devices
IOTA = (
    rf"\[\s*({INT_LIST})\s*\]\s*<=\s*\[\s*({INT_LIST})\s*\]"
    rf"(?:\s*T\s*\(\s*({INT_LIST})\s*\))?"
)


IOTA_PARTS = re.compile(IOTA)


def iota_ok(dims: str, reshape: str, transpose: str | None, full_permutation: bool) -> bool:
    reshaped = ints(reshape)
    if (len(reshaped) == 1) != (transpose is None):
        return False
    if transpose is not None:
        permutation = ints(transpose)
        if any(not 0 <= p < len(reshaped) for p in permutation):
            return False
        if full_permutation and len(permutation) != len(reshaped):
            return False
    return product(ints(dims)) == product(reshaped)


# string ::= '"' ... '"' | "'" ... "'", its escapes C escapes (as XLA unescapes them)
QUOTED = rf"{STRING}|'(?:[^'\\]|\\.)*+'"
