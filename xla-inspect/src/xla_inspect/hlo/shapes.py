"""Shapes as XLA's parser takes them: what it refuses in shape text (`shape_problem`),
whether a written shape is an operand's (`compatible_shapes`), element counts.
"""

from __future__ import annotations

import re
from functools import lru_cache, partial

from xla_inspect.hlo.layouts import SKIP_RUN, layout_problem
from xla_inspect.hlo.model import Shape

LONE_MINUS = re.compile(r"-(?![0-9])").search


_MINUS_APART = partial(re.compile(r"-(?=[\s/])").sub, "-~")


def leaf_count(shape: Shape) -> int:
    """The arrays (and tokens) in `shape`: 1 for an array, the sum over a tuple's elements."""
    return sum(map(leaf_count, shape.elements)) if shape.is_tuple else 1


def compatible_shapes(written: Shape, actual: Shape) -> bool:
    """Whether a shape written before an operand is the operand's, as XLA compares them:
    element type and dimensions, not layout nor dynamic bounds (`f32[<=2]` is `f32[2]`); an
    unbounded `?` dimension on either side matches any size."""
    if written.is_tuple or actual.is_tuple:
        return (
            written.is_tuple == actual.is_tuple
            and len(written.elements) == len(actual.elements)
            and all(map(compatible_shapes, written.elements, actual.elements))
        )
    if written.dtype != actual.dtype:
        return False
    dims, others = written.dims, actual.dims
    return dims == others or (
        len(dims) == len(others)
        and all(a == b or a is None or b is None for a, b in zip(dims, others, strict=True))
    )


def element_count_problem(operand: str, result: str, dynamic: bool = False) -> str | None:
    """Why a reshape (`dynamic`: a dynamic-reshape) of an `operand` shape cannot give `result`:
    XLA wants as many elements, bounds counted and a `?` counted as 1; a reshape of an operand
    with a `?` is not checked. None when it can."""
    before, after = Shape(operand).dims, Shape(result).dims
    if (None in before and not dynamic) or _count(before) == _count(after):
        return None
    return f"a reshape to as many elements as its operand has ({operand}), not {result}"


def _count(dims: tuple[int | None, ...]) -> int:
    count = 1
    for size in dims:
        count *= 1 if size is None else size
    return count


def _product(dims: tuple[int | None, ...]) -> int:
    count = 1
    for size in dims:
        count *= size or 0
    return count


_EMPTY_BRACES = re.compile(r"\]\{\}").search


_SHAPED_TOKEN = re.compile(r"(?:token|opaque)\[(?!\])").search


def squeezed(shape: str) -> str:
    """Shape text without its blanks and comments; a '-' that a blank or comment parts from its
    number (XLA's lexer reads none there) stays followed by '~', which no shape holds."""
    if "-" in shape:
        shape = _MINUS_APART(shape)
    return SKIP_RUN.sub("", shape)


@lru_cache(maxsize=4096)
def shape_problem(shape: str) -> str | None:
    """Why XLA's parser refuses `shape` (shape text, blanks and comments removed) wherever it
    reads one: an instruction's shape, a typed operand's, a computation's parameters and result,
    outfeed_shape= and operand_layout_constraints=. `{}` is no layout (XLA reads '{' as one only
    before a number or ':'), a token or opaque has no dimensions (XLA's parser aborts), and the
    layout must fit (layout_problem). None when XLA takes it. Cached: shapes repeat."""
    if "-" in shape and LONE_MINUS(shape):
        return f"a number glued to its '-' ('{shape}')"
    if _EMPTY_BRACES(shape):
        return f"a layout with its dimensions, or none, not '{{}}' ('{shape}')"
    if _SHAPED_TOKEN(shape):
        return f"no dimensions for a token or opaque shape (XLA's parser aborts on '{shape}')"
    return layout_problem(shape, tails=True)
