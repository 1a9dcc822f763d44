"""Layouts: the part after ':' read in XLA's order (D T L # * E S SC P M), whether a layout
fits its shape's rank, and what XLA's layout validation refuses in a tuple element's layout.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from xla_inspect.hlo.lexical import DTYPE

# a run of blanks and comments (XLA's lexer skips them between tokens)
SKIP_RUN = re.compile(r"(?:[ \t\r\n]+|//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)+")


# an array shape's dims and layout, in canonical text
_DIMS_AND_ORDER = re.compile(r"\[([^\]]*)\]\{([^}:]*)")


# each array's dims and minor-to-major order ('' when it has no layout), in shape text
_DIMS_AND_LAYOUT = re.compile(r"\[([^\]]*)\](?:\{([^}:]*))?").findall


_LONG_NUMBER = re.compile(r"[0-9]{19}").search


# a layout's part after ':', in the order XLA's parser reads its items (each optional): dim level
# types D(...), tiles T(...)(...), L(n), index type #(uN), pointer type *(uN), element size E(n),
# memory space S(n), split configs SC(d:i,...)..., physical shape P(shape), M(n)
# (XLA's parser asks for an unsigned type in #(...) and *(...) but goes on with any)
_UNSIGNED = DTYPE


_LEVEL = r"[DCSH]\+?~?"


_TILE_DIM = r"(?:-?[0-9]+|\*)"


_LAYOUT_TAIL = re.compile(
    rf"(?:D\((?:{_LEVEL}(?:,{_LEVEL})*)?\))?"
    rf"(?:T(?:\((?:{_TILE_DIM}(?:,{_TILE_DIM})*)?\))+)?"
    r"(?:L\(-?[0-9]+\))?"
    rf"(?:#\({_UNSIGNED}\))?(?:\*\({_UNSIGNED}\))?"
    r"(?:E\(-?[0-9]+\))?(?:S\(-?[0-9]+\))?"
    r"(?:SC(?:\(-?[0-9]+:(?:-?[0-9]+(?:,-?[0-9]+)*)?\))+)?"
    r"(?:P\((?:[^()]|\([^()]*\))*\))?"
    r"(?:M\(-?[0-9]+\))?"
).fullmatch


# a layout's part after ':' in an array shape
_LAYOUT_TAILS = re.compile(r"\]\{[^}:]*:((?:[^{}]|\{[^{}]*\})*)\}").findall


# each array's dims, minor-to-major order and part after ':' (or '')
_ELEMENT_LAYOUTS = re.compile(r"\[([^\]]*)\]\{([^}:]*)(?::((?:[^{}]|\{[^{}]*\})*))?\}").findall


_NEGATIVE_TILE = re.compile(r"T(?:\([^()]*\))*\([^()]*-").search


_NO_LINEAR = re.compile(r"L\((?:-|0\))").search


def joins_numbers(text: str) -> bool:
    """Whether blanks or comments alone stand between two numbers in `text` (in a layout,
    XLA's parser wants a ',' there)."""
    parts = SKIP_RUN.split(text)
    return any(
        left[-1:].isdigit() and right[:1].isdigit()
        for left, right in zip(parts, parts[1:], strict=False)
    )


def _number_problem(shape: str) -> str | None:
    """Why a dimension size or minor-to-major number in `shape` is not one XLA reads: its lexer
    takes -2^63 to 2^64-1 (from 2^63 on, wrapped to a negative int64), and a size must come
    out from 0 to 2^63-1 (`-0` is 0), or a bound `<=N` -2^63 (read as `?`: `<=2^63` too).
    None when each is."""
    if "-" not in shape and _LONG_NUMBER(shape) is None:
        return None
    for dims, order in _DIMS_AND_LAYOUT(shape):
        for size in dims.split(",") if dims else ():
            bound = size.removeprefix("<=")
            if bound == "?" or 0 <= int(bound) < 2**63:
                continue
            if bound != size and int(bound) in (-(2**63), 2**63):
                continue
            return f"dimension sizes from 0 to 2^63-1, not {size} ('{shape}')"
        for number in order.split(",") if order else ():
            if not -(2**63) <= int(number) < 2**64:
                return f"minor-to-major numbers that fit in 64 bits, not {number} ('{shape}')"
    return None


def layout_problem(shape: str, tails: bool = False) -> str | None:
    """Why an array shape's layout does not fit its rank or (with `tails`: in an instruction,
    where XLA reads the part after ':' strictly) XLA's layout syntax, or its dimension sizes
    or minor-to-major numbers are not ones XLA reads (_number_problem), or None."""
    if (problem := _number_problem(shape)) is not None:
        return problem
    if "{" not in shape:
        return None
    if tails and ":" in shape:
        for tail in _LAYOUT_TAILS(shape):
            if "/" in tail:
                if joins_numbers(tail):
                    return f"',' between the numbers of a layout, not '{tail}'"
                tail = SKIP_RUN.sub(" ", tail)
            if _LAYOUT_TAIL(tail) is None and not read_tail(tail).closed:
                return (
                    f"a layout's part after ':' as D(...), T(...), L(n), #(uN), *(uN), E(n), "
                    f"S(n), SC(...), P(shape), M(n) in that order, not '{tail}' ('{shape}')"
                )
            if "P(" in tail:  # XLA keeps no dim level types, so no array is sparse
                return f"no physical shape P(...): it is for sparse arrays ('{shape}')"
    for dims, order in _DIMS_AND_ORDER.findall(shape):
        rank = dims.count(",") + 1 if dims else 0
        listed = order.count(",") + 1 if order else 0
        if rank != listed:
            return (
                f"a layout listing {rank} dimension{'s' if rank != 1 else ''} for "
                f"[{dims}], not {listed} ('{shape}')"
            )
    if ":" in shape:
        for tail in _LAYOUT_TAILS(shape):
            if _NEGATIVE_TILE(tail) or _NO_LINEAR(tail):  # XLA's parser crashes on them
                return f"tiles of positive sizes and L(n) of n >= 1, not '{tail}' ('{shape}')"
    return _element_layout_problem(shape) if shape[0] == "(" else None


def _element_layout_problem(shape: str) -> str | None:
    """Why a tuple's element has a layout XLA rejects there (it checks the layout of a tuple's
    elements, not of an array shape standing alone), as invalid_layout says:
    minor-to-major not a permutation of the dimensions, a tile without sizes or of size 0,
    E(n) below 0, an index or pointer type #(uN) or *(uN), SC(d:...) of a dimension d the
    array lacks. None when each is valid."""
    for dims, order, tail in _ELEMENT_LAYOUTS(shape):
        problem = invalid_layout(
            f"x[{dims}]{{{SKIP_RUN.sub('', order)}}}", read_tail(tail) if tail else None
        )
        if problem is not None:
            return f"a tuple element's layout XLA builds: {problem}"
    return None


WORD_END = r"(?![\w.\-])"


INT = re.compile(r"-?[0-9]++" + WORD_END)


# layout_tail ::= ':' ('D' list(level))? ('T' list(tile_dim)+)? ('L' int_part)? ('#' type_part)?
#                 ('*' type_part)? ('E' int_part)? ('S' int_part)? ('SC' split+)? ('M' int_part)?
# list(item) ::= '(' (item (',' item)*)? ')'      int_part ::= '(' int ')'
# type_part ::= '('? dtype? ')'?                   split ::= '(' int ':' (int (',' int)*)? ')'
# XLA reads the parts in this order and ignores how each ends: a part read halfway (`T(512`,
# `L(`) is kept as far as it got and the next part is tried from there; the layout only has to
# close after the last. A physical shape 'P' is refused for every dense array.
_TAIL_TOKEN = re.compile(r"-?[0-9]+|[A-Za-z_][\w.\-]*|\S")


_DTYPE = re.compile(DTYPE)


class _Tail:
    """A layout's parts after ':', read token by token as XLA's ParseLayout reads them."""

    def __init__(self, text: str) -> None:
        self.tokens = _TAIL_TOKEN.findall(text)
        self.at = 0
        self.tiles: list[list[str]] = []
        self.splits: list[tuple[int, list[int]]] = []
        self.typed = False  # an index or pointer type ('#', '*')
        self.padding = 1
        self.bits = 0
        self.physical = False
        self.closed = False  # set by read

    def peek(self, token: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at] == token

    def eat(self, token: str) -> bool:
        if self.peek(token):
            self.at += 1
            return True
        return False

    def int(self) -> int | None:
        if self.at < len(self.tokens) and INT.fullmatch(self.tokens[self.at]):
            self.at += 1
            return int(self.tokens[self.at - 1])
        return None

    def items(self, first: str, item: Callable[[], bool]) -> bool:
        """`first` (item (',' item)*)? ')', as far as it goes; whether it closed."""
        if not self.eat(first):
            return False
        if not self.eat(")"):
            while item():
                if not self.eat(","):
                    return self.eat(")")
            return False
        return True

    def int_part(self) -> int | None:
        """'(' int ')', as far as it goes: the int, or None when it is not there."""
        found = self.int() if self.eat("(") else None
        if found is not None:
            self.eat(")")
        return found

    def read(self) -> None:
        """Reads every part; `closed`: the layout's end follows."""
        if self.eat("D"):
            self.items("(", self.level)
        if self.eat("T"):
            while True:
                self.tiles.append([])
                if not self.items("(", self.tile_dim) or not self.peek("("):
                    break
        if self.eat("L"):
            found = self.int_part()
            self.padding = self.padding if found is None else found
        for mark in "#*":
            if self.eat(mark):
                self.eat("(")
                if self.at < len(self.tokens) and _DTYPE.fullmatch(self.tokens[self.at]):
                    self.at += 1
                    self.typed = True
                self.eat(")")
        if self.eat("E"):
            found = self.int_part()
            self.bits = self.bits if found is None else found
        if self.eat("S"):
            self.int_part()
        if self.eat("SC"):
            while self.eat("("):
                dim = self.int()
                if dim is None:
                    break
                self.splits.append((dim, []))
                if not self.items(":", self.split_index) or not self.peek("("):
                    break
        self.physical = self.eat("P")
        if self.eat("M"):
            self.int_part()
        self.closed = self.at == len(self.tokens) and not self.physical

    def level(self) -> bool:
        if not (self.eat("D") or self.eat("C") or self.eat("S") or self.eat("H")):
            return False
        self.eat("+")
        self.eat("~")
        return True

    def tile_dim(self) -> bool:
        found = self.int()
        if found is not None:
            self.tiles[-1].append(str(found))
            return True
        if self.eat("*"):
            self.tiles[-1].append("*")
            return True
        return False

    def split_index(self) -> bool:
        found = self.int()
        if found is None:
            return False
        self.splits[-1][1].append(found)
        return True


@functools.lru_cache(maxsize=1024)
def read_tail(text: str) -> _Tail:
    """The layout parts in `text` (after ':'), read. Cached: shapes of many sizes share them."""
    tail = _Tail(text)
    tail.read()
    return tail


_ARRAY_PARTS = re.compile(r"[^\[]*\[([^\]]*)\](?:\{([^}:]*))?")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)  # XLA reads `f32[/**/4]{/* c */0}`


def invalid_layout(shape: str, tail: _Tail | None) -> str | None:
    """What XLA's layout validation (of tuple elements only) refuses in an array shape's
    layout whose rank fits, or None."""
    parts = _ARRAY_PARTS.match(_BLOCK_COMMENT.sub("", shape))
    assert parts is not None  # an array shape with a layout
    dims = [int(d.removeprefix("<=")) if d != "?" else -1 for d in parts[1].split(",") if d]
    order = [int(d) for d in parts[2].split(",") if d]
    if sorted(order) != list(range(len(dims))):
        return f"a layout listing each dimension once, not '{shape}'"
    if tail is None:
        return None
    if tail.typed:
        return f"no index or pointer type (#, *) in a dense array's layout, not '{shape}'"
    if tail.bits < 0:
        return f"a non-negative E(...) element size, not '{shape}'"
    for tile in tail.tiles:
        if not tile or any(d != "*" and int(d) <= 0 for d in tile):
            return f"tiles of positive sizes or '*', not '{shape}'"
    split = set[int]()
    for dim, points in tail.splits:
        if not 0 <= dim < len(dims) or dim in split:
            return f"split configs of distinct dimensions below {len(dims)}, not '{shape}'"
        split.add(dim)
        size = dims[order[len(order) - 1 - dim]]
        if points != sorted(set(points)) or any(not 0 < i < size for i in points):
            return f"split indices increasing within the dimension's size, not '{shape}'"
    return None
