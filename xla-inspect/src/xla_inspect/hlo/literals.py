"""Constant literals: each element's value for its element type (`literal_value_problem`),
and a literal read as XLA's parser reads it for a shape (`literal_problem`; hlo_parser.cc:
ParseLiteral, ParseTupleLiteral, ParseDenseLiteral, ParseComplex).

    literal       ::= tuple_literal | dense_literal     (by the shape: a tuple shape or not)
    tuple_literal ::= '(' ')' | '(' literal (','? literal)* ')'   one literal per element
    dense_literal ::= tokens read until the braces opened close again (or one token at depth 0)

A dense literal is read token by token: '{' opens a level of the shape (no deeper than its rank,
and no more sub-arrays in a level than its dimension), '}' closes one (holding exactly its
dimension's count of items), ',' is skipped anywhere, '...' (at depth 1 only) counts the outer
dimension as full, a number or true/false is one more element, and '(re, im)' is one complex
element, allowed at the innermost depth only.
"""

from __future__ import annotations

import re
from math import prod

from xla_inspect.hlo.model import Shape

# -- literal values: what XLA's parser checks of each element of a constant -------------------

# the largest finite value of the types XLA checks a literal's numbers against, and the
# smallest magnitude that rounds to infinity in them (a value between the two rounds down)
_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38}


_FLOAT_ROUNDS_TO_INF = {"f16": 65520.0, "bf16": 3.3961775292304957e38, "f32": 3.4028235677973366e38}


# NaN payload bits per type; types not listed take no payload
_NAN_PAYLOAD_MASK = {
    "f16": 0x3FF,
    "bf16": 0x7F,
    "f32": 0x7FFFFF,
    "f64": 0xFFFFFFFFFFFFF,
    "f8e5m2": 0x3,
    "f8e4m3": 0x7,
    "f8e3m4": 0xF,
}


# the type of a complex type's parts
_PARTS_TYPE = {"c64": "f32", "c128": "f64"}


_INTEGER_TYPE = re.compile(r"([su])(1|2|4|8|16|32|64)").fullmatch


# element ::= '(' number ',' number ')' (complex) | number | true | false; numbers as the
# lexer reads them: [-+]?digits, decimals with '.' or an exponent, inf, nan with a payload
_ELEMENT_TOKEN = re.compile(
    r"\s*+(?:([(),])|(true|false)|(-?)(?:inf|nan(?:\(0x([0-9a-fA-F]++)\))?)|(-?[0-9]++)(?![.eE0-9])"
    r"|(-?(?:[0-9]++\.?[0-9]*+|\.[0-9]++)(?:[eE][+-]?[0-9]++)?)|([{}.]|\S))"
)


def _number_problem(text: str, dtype: str, part: str = "") -> str | None:
    """Why the number `text` is no value of `dtype` (a float or complex type), or None."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return f"a number a double holds, not {text}"
    if dtype == "c64" and abs(value) > _FLOAT_MAX["f32"]:
        return f"parts c64 holds (at most {_FLOAT_MAX['f32']:g} in magnitude), not {part}{text}"
    limit = _FLOAT_ROUNDS_TO_INF.get(dtype)
    if limit is not None and abs(value) >= limit:
        return f"a value {dtype} holds (at most {_FLOAT_MAX[dtype]:g} in magnitude), not {text}"
    if (
        dtype[1] in "468"
        and dtype[0] == "f"
        and value == value
        and not _small_float_holds(dtype, value)
    ):
        return f"a value {dtype} holds (it rounds to no finite {dtype}), not {text}"
    return None


def _small_float_holds(dtype: str, value: float) -> bool:
    """Whether `value` rounds to a finite number of the 4/6/8-bit float type `dtype`
    (f8e4m3fn -> ml_dtypes' float8_e4m3fn; jax depends on ml_dtypes)."""
    import ml_dtypes
    import numpy as np

    kind = getattr(ml_dtypes, f"float{dtype[1]}_{dtype[2:]}", None)
    if kind is None:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.array(value, dtype=np.float64).astype(kind)))


def literal_value_problem(literal: str, dtype: str) -> str | None:
    """Why an element of the constant literal `literal` (comments taken out) is no value of
    the element type `dtype`, as XLA's parser checks while it reads it, or None: integer types
    take integers within their range (pred any integer, true or false), float types numbers
    that do not round to infinity and NaN payloads their significand holds, complex types
    '(re, im)' pairs."""
    if dtype in ("token", "opaque"):
        return f"no literal for a {dtype} shape (XLA's parser aborts)"
    integer = _INTEGER_TYPE(dtype)
    complex_type = dtype in ("c64", "c128")
    is_pred = dtype == "pred"
    pair = 0  # position inside a '(re, im)' pair: 0 outside, 1 real part, 2 imaginary part
    pos, size = 0, len(literal)
    while pos < size:
        token = _ELEMENT_TOKEN.match(literal, pos)
        if token is None:
            break
        pos = token.end()
        paren, word, payload, whole, decimal, other = token.group(1, 2, 4, 5, 6, 7)
        if paren is not None:
            if paren == "(":
                if not complex_type:
                    return "'(' only around the parts of a complex number"
                pair = 1
            elif paren == "," and pair == 1:
                pair = 2
            elif paren == ")":
                pair = 0
            continue
        if other is not None:
            if other == "+":
                return "a number without '+' (XLA's lexer reads no '+' sign)"
            continue
        if complex_type and pair == 0:
            return f"a complex value as (real, imaginary) for {dtype}"
        part = ("real part " if pair == 1 else "imaginary part ") if pair else ""
        if word is not None:
            if not is_pred:
                return f"a number for {dtype}, not {word}"
        elif whole is not None:
            number = int(whole)
            if not -(2**63) <= number < 2**64:
                return f"an integer of at most 64 bits, not {whole}"
            if number >= 2**63:  # XLA reads it into an int64: it wraps around to a negative
                number -= 2**64
                whole = str(number)
            if integer is not None:
                bits = int(integer[2])
                low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
                if integer[1] == "u":
                    low, high = 0, 2**bits - 1
                if bits < 64 and not low <= number <= high:
                    return f"a value of {dtype} ({low} to {high}), not {whole}"
            elif not is_pred and (problem := _number_problem(whole, dtype, part)) is not None:
                return problem
        elif integer is not None or is_pred:
            return f"an integer for {dtype}, not {token.group().strip()}"
        elif decimal is not None:
            if (problem := _number_problem(decimal, dtype, part)) is not None:
                return problem
        elif payload is not None:
            # (XLA checks the payload of a complex value's real part only; any is lexed up to
            # a double's)
            mask = _NAN_PAYLOAD_MASK.get(_PARTS_TYPE.get(dtype, dtype) if pair < 2 else "f64", 0)
            if not 0 < int(payload, 16) <= mask:
                return f"a NaN payload {dtype} holds (1 to {mask:#x}), not 0x{payload}"
    return None


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
    reader = _LiteralReader(literal, _TOKEN.findall(literal))
    tokens = reader.tokens
    try:
        reader.literal(Shape(shape))
        if reader.at < len(tokens):
            raise _Reject(f"')' after the literal, not '{''.join(tokens[reader.at])}'")
    except _Reject as problem:
        return f"{problem} (literal for shape {shape})"
    return None


class _LiteralReader:
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
