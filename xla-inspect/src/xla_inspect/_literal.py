"""A constant's literal read as XLA's parser reads it (hlo_parser.cc: ParseLiteral,
ParseTupleLiteral, ParseDenseLiteral, ParseComplex), to tell whether XLA accepts it.

    literal       ::= tuple_literal | dense_literal     (by the shape: a tuple shape or not)
    tuple_literal ::= '(' ')' | '(' literal (','? literal)* ')'   one literal per element
    dense_literal ::= tokens read until the braces opened close again (or one token at depth 0)

A dense literal is read token by token: '{' opens a level of the shape (no deeper than its rank,
and no more sub-arrays in a level than its dimension), '}' closes one (holding exactly its
dimension's count of items), ',' is skipped anywhere, '...' (at depth 1 only) counts the outer
dimension as full, a number or true/false is one more element (XLA records but ignores a depth
that does not fit the rank for these, and fails only when the element's linear index is past
the shape's element count), and '(re, im)' is one complex element, allowed at the innermost
depth only. Element values are checked per element type by `literal_value_problem`.
"""

from __future__ import annotations

import re
from math import prod

from xla_inspect._lexing import literal_value_problem
from xla_inspect.model import Shape

# literal tokens as XLA's lexer reads them: punctuation, '...', an element (true/false/inf/nan as
# whole words, '-inf', NaN with a payload, integers and decimals; no '+' sign and no leading '.'
# without '-'), or anything else (`\S`: a token XLA does not take in a literal)
_TOKEN = re.compile(
    r"\s*+(?:([{}(),]|\.\.\.)"
    r"|((?:true|false|inf|nan)(?![\w.\-(])|-(?:inf|nan)(?!\()|-?nan\(0x[0-9a-fA-F]+\)"
    r"|-?(?:[0-9]+\.?[0-9]*|(?<=-)\.[0-9]+)(?:[eE][+-]?[0-9]+)?)|(\S))"
)
_WORD = frozenset({"true", "false"})


class _Reject(Exception):
    pass


def literal_problem(literal: str, shape: str) -> str | None:
    """Why XLA's parser rejects `literal` (comments taken out) as the literal of a constant of
    `shape`, or None when it reads it."""
    reader = _Reader(literal, _TOKEN.findall(literal))
    tokens = reader.tokens
    try:
        reader.literal(Shape(shape))
        if reader.at < len(tokens):
            raise _Reject(f"')' after the literal, not '{''.join(tokens[reader.at])}'")
    except _Reject as problem:
        return f"{problem} (literal for shape {shape})"
    return None


class _Reader:
    """Reads a list of tokens (punctuation, element, stray: one of the three not empty)."""

    __slots__ = ("at", "literal_text", "tokens")

    def __init__(self, literal_text: str, tokens: list[tuple[str, str, str]]) -> None:
        self.literal_text = literal_text
        self.tokens = tokens
        self.at = 0

    def next_kind(self) -> str:
        """The next token's punctuation; '' for an element, a stray or the end."""
        return self.tokens[self.at][0] if self.at < len(self.tokens) else ""

    def literal(self, shape: Shape) -> None:
        if shape.is_tuple:
            self.tuple_literal(shape)
        else:
            self.dense_literal(shape)

    def tuple_literal(self, shape: Shape) -> None:
        if self.next_kind() != "(":
            raise _Reject("'(' in front of tuple elements")
        self.at += 1
        if self.next_kind() != ")":
            for i, element in enumerate(shape.elements):
                if i and self.next_kind() == ",":
                    self.at += 1
                self.literal(element)
        if self.next_kind() != ")":
            raise _Reject(f"')' at the end of a tuple of {len(shape.elements)} elements")
        self.at += 1

    def dense_literal(self, shape: Shape) -> None:
        dtype = shape.dtype
        dims = shape.dims
        if dtype is None or dtype in ("token", "opaque"):
            raise _Reject(f"no literal for a {dtype} shape (XLA's parser aborts)")
        if None in dims:
            raise _Reject("no literal for an unbounded dimension (XLA's parser aborts)")
        sizes: tuple[int, ...] = dims  # pyright: ignore[reportAssignmentType]
        rank = len(sizes)
        count = prod(sizes)
        is_complex = dtype in ("c64", "c128")
        tokens = self.tokens
        end = len(tokens)
        at = self.at
        start = at
        depth = linear = 0
        seen = [0] * rank
        while True:
            if at >= end:
                raise _Reject("more of the literal (it ends early)")
            kind, element, stray = tokens[at]
            at += 1
            if element:
                if is_complex:
                    raise _Reject(f"a complex value as (real, imaginary) for {dtype}")
                if rank and depth == rank:
                    seen[-1] += 1
                if linear >= count:
                    raise _Reject(f"at most {count} elements")
                linear += 1
            elif kind == ",":
                pass
            elif kind == "{":
                depth += 1
                if depth > rank:
                    raise _Reject(f"braces nested at most {rank} deep")
                if depth > 1:
                    seen[depth - 2] += 1
                    if seen[depth - 2] > sizes[depth - 2]:
                        raise _Reject(f"{sizes[depth - 2]} items at level {depth - 1}")
            elif kind == "}":
                if depth == 0:
                    raise _Reject("no '}' before a '{'")
                depth -= 1
                if seen[depth] != sizes[depth]:
                    raise _Reject(f"{sizes[depth]} items at level {depth + 1}")
                seen[depth] = 0
            elif kind == "...":
                if depth != 1:
                    raise _Reject("'...' at brace depth 1 only")
                seen[0] = sizes[0]
            elif kind == "(":
                if not is_complex:
                    raise _Reject("'(' only around the parts of a complex number")
                if rank:
                    if depth != rank:
                        raise _Reject(f"braces nested {rank} deep around complex values")
                    seen[-1] += 1
                    if seen[-1] > sizes[-1]:
                        raise _Reject(f"{sizes[-1]} items at level {rank}")
                parts = tokens[at : at + 4]
                if (
                    len(parts) < 4
                    or not parts[0][1]
                    or parts[1][0] != ","
                    or not parts[2][1]
                    or parts[3][0] != ")"
                    or parts[0][1] in _WORD
                    or parts[2][1] in _WORD
                ):
                    raise _Reject("a complex value as (real, imaginary)")
                at += 4
                if linear >= count:
                    raise _Reject(f"at most {count} elements")
                linear += 1
            else:
                raise _Reject(f"an element, not '{kind or stray}'")
            if depth == 0:
                break
        if start == 0 and at == end:
            text = self.literal_text
        else:
            text = " ".join("".join(token) for token in tokens[start:at])
        self.at = at
        problem = literal_value_problem(text, dtype)
        if problem is not None:
            raise _Reject(problem)
