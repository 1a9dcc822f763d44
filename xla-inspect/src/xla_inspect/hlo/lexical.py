"""Lexical pieces every layer shares: bracket matching and splitting at depth 0 (strings
and comments skipped), and the regular expressions of an element type, dimensions, a layout
and an array or flat tuple shape. Imports nothing of xla_inspect.
"""

from __future__ import annotations

import re

# token ::= string | '"' (unterminated) | bracket
_BRACKET_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|"|[()\[\]{}]')


# split_token ::= string | bracket | ','
_SPLIT_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|\'(?:[^\'\\]|\\.)*\'?|[()\[\]{},]')


_OPEN_OF = {")": "(", "]": "[", "}": "{"}


_CLOSE_OF = {"(": ")", "[": "]", "{": "}"}


COMMENT = re.compile(r"/\*.*?\*/")


# dtype       ::= XLA's primitive type names: pred s4 s32 u8 f16 bf16 f8e4m3fn c64 token ...
# array_shape ::= dtype '[' dims ']' layout?     dims may hold '<=N' and '?'
# layout      ::= '{' minor_to_major (':' tiling and memory-space parts)? '}'
DTYPE = (
    r"(?:pred|[su](?:1|2|4|8|16|32|64)|f(?:16|32|64)|bf16|c(?:64|128)"
    r"|f8e[0-9a-z]+|f[46]e[0-9a-z]+|token|opaque)"
)


_DIM = r"(?:(?:<=)?-?[0-9]+|\?)"  # (XLA's lexer reads '-0'; _shape_problem bounds them)


DIMS = r"(?:" + _DIM + r"(?:," + _DIM + r")*)?"


LAYOUT = r"\{(?:-?[0-9]+(?:,-?[0-9]+)*)?(?::[^{}\s]*)?\}"


ARRAY_SHAPE_PATTERN = DTYPE + r"\[" + DIMS + r"\](?:" + LAYOUT + r")?"


# flat_tuple_shape ::= '(' (array_shape (', ' ('/*index=N*/')? array_shape)*)? ')'
FLAT_TUPLE_SHAPE_PATTERN = (
    r"\((?:"
    + ARRAY_SHAPE_PATTERN
    + r"(?:, (?:/\*index=[0-9]+\*/)?"
    + ARRAY_SHAPE_PATTERN
    + r")*)?\)"
)


ARRAY_SHAPE = re.compile(ARRAY_SHAPE_PATTERN)


class BracketError(Exception):
    """A closing bracket or quote that does not match; `expected` says what would have."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


def scan_brackets(line: str, stack: list[str]) -> None:
    """Push the closers that `line`'s open brackets (outside quoted strings) await on `stack`,
    and pop them as they come, in place.

    Raises BracketError on a mismatched closer or a string left open at the end of the line.
    """
    for match in _BRACKET_TOKEN.finditer(line):
        token = match.group()
        if token in _CLOSE_OF:
            stack.append(_CLOSE_OF[token])
        elif token in _OPEN_OF:
            if not stack:
                raise BracketError(f"no '{token}' without a matching '{_OPEN_OF[token]}'")
            closer = stack.pop()
            if token != closer:
                raise BracketError(f"'{closer}' to close '{_OPEN_OF[closer]}' before '{token}'")
        elif token == '"':
            raise BracketError("'\"' to close the string on the same line")


def match_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at `text[start]`, or -1 when it is never closed."""
    depth = 0
    for match in _BRACKET_TOKEN.finditer(text, start):
        token = match.group()
        if token in _CLOSE_OF:
            depth += 1
        elif token in _OPEN_OF:
            depth -= 1
            if depth == 0:
                return match.start()
    return -1


def split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quoted strings. Lenient: never raises."""
    if (
        '"' not in text
        and "{" not in text
        and "(" not in text
        and "[" not in text
        and "'" not in text
    ):
        return text.split(",")
    pieces: list[str] = []
    depth = 0
    begin = 0
    for match in _SPLIT_TOKEN.finditer(text):
        token = match.group()
        if token == ",":
            if depth == 0:
                pieces.append(text[begin : match.start()])
                begin = match.end()
        elif token in _CLOSE_OF:
            depth += 1
        elif token in _OPEN_OF:
            depth = max(depth - 1, 0)
    pieces.append(text[begin:])
    return pieces


def split_attributes(text: str) -> tuple[tuple[str, str], ...]:
    """`k1=v1, k2={...}` -> ((k1, v1), (k2, '{...}')). A piece without '=' maps to ''."""
    if not text.strip():
        return ()
    pairs: list[tuple[str, str]] = []
    for piece in split_top_level(text):
        key, _, value = piece.partition("=")
        if key.strip() == "device_ids" and pairs and pairs[-1][0] == "replica_groups":
            # XLA before jax 0.11 prints a mesh's device order inside the replica groups:
            # `replica_groups=mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0)) {'b'}` is one value.
            pairs[-1] = ("replica_groups", f"{pairs[-1][1]}, {piece.strip()}")
            continue
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def is_shape(text: str) -> bool:
    """Whether `text` is an array shape or a (nested) tuple of shapes, comments allowed."""
    if ARRAY_SHAPE.fullmatch(text):
        return True
    if not text.startswith("("):
        return False
    # tuple_shape ::= '(' (shape (',' shape)*)? ')'  -- checked with a flat state machine
    flat = ARRAY_SHAPE.sub("a", COMMENT.sub("", text)).replace(" ", "")
    depth = 0
    previous = ","
    for char in flat:
        if char == "(":
            if previous not in ",(":
                return False
            depth += 1
        elif char == ")":
            if previous == "," or depth == 0:
                return False
            depth -= 1
        elif char == ",":
            if previous not in "a)":
                return False
        elif char != "a" or previous not in ",(":
            return False
        previous = char
    return depth == 0 and previous in "a)"
