"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on constant literals:
each element a value of the element type, and the literal's structure against its shape."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xla_inspect.errors import HloParseError
from xla_inspect.parse import parse_hlo

from .literal_cases import LITERAL_FORMS, LITERALS_XLA_CANNOT_READ
from .xla_verdicts import (
    our_verdict,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )


# -- constant literals: each element a value of the element type --------------------------------

_INTEGER_TYPES = ["s2", "s4", "s8", "s16", "s32", "s64", "u1", "u2", "u4", "u8", "u32", "u64"]
_FLOAT_TYPES = [
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8e5m2",
    "f8e4m3fn",
    "f8e4m3",
    "f8e3m4",
    "f8e4m3fnuz",
    "f4e2m1fn",
]


def _integer_values(dtype: str) -> list[str]:
    bits = int(dtype[1:])
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dtype[0] == "s" else (0, 2**bits - 1)
    return [str(v) for v in (low - 1, low, 0, high, high + 1, 2**64, -(2**63) - 1)] + [
        "1.5",
        "1e3",
        "nan",
        "+1",
    ]


_FLOAT_VALUES = [
    "0",
    "-1.5",
    "65504",
    "65519",
    "65520",
    "240",
    "241",
    "448",
    "465",
    "57344",
    "61440",
    "3.3961e38",
    "3.3963e38",
    "3.4028235e38",
    "3.4028236e38",
    "1e39",
    "1.7e308",
    "1.8e308",
    "-inf",
    "nan",
    "nan(0x1)",
    "nan(0x3)",
    "nan(0x4)",
    "nan(0x7f)",
    "nan(0x80)",
    "nan(0x3ff)",
    "nan(0x400)",
    "-nan(0x7fffff)",
    "nan(0x800000)",
    "+2",
    "5.",
]


@st.composite
def typed_literal(draw: st.DrawFn) -> str:
    """A module with one constant: a scalar or a two-element array of an integer, float,
    complex or pred type, its elements drawn around the type's limits (ranges, rounding to
    infinity, NaN payloads, the form of complex values)."""
    kind = draw(st.sampled_from(["integer", "float", "complex", "pred"]))
    if kind == "integer":
        dtype = draw(st.sampled_from(_INTEGER_TYPES))
        values = st.sampled_from(_integer_values(dtype))
    elif kind == "float":
        dtype = draw(st.sampled_from(_FLOAT_TYPES))
        values = st.sampled_from(_FLOAT_VALUES)
    elif kind == "complex":
        dtype = draw(st.sampled_from(["c64", "c128"]))
        part = st.sampled_from(_FLOAT_VALUES)
        values = st.one_of(st.builds(lambda r, i: f"({r}, {i})", part, part), part)
    else:
        # (true/false for another type aborts XLA's parser: never drawn there)
        dtype = "pred"
        values = st.sampled_from(["true", "false", "0", "1", "2", "-1", "1.5", "nan"])
    if draw(st.booleans()):
        return f"HloModule m\nENTRY e {{\n  ROOT c = {dtype}[] constant({draw(values)})\n}}\n"
    first, second = draw(values), draw(values)
    return f"HloModule m\nENTRY e {{\n  ROOT c = {dtype}[2] constant({{{first}, {second}}})\n}}\n"


@settings(max_examples=150, deadline=None, derandomize=True)
@given(typed_literal())
def test_literal_values_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


def _constant(shape: str, literal: str) -> str:
    return f"HloModule m\nENTRY e {{\n  ROOT c = {shape} constant({literal})\n}}\n"


@pytest.mark.parametrize(
    ("shape", "literal"), LITERAL_FORMS, ids=[f"{s} {v}" for s, v in LITERAL_FORMS]
)
def test_literal_forms_match_xla(shape: str, literal: str) -> None:
    text = _constant(shape, literal)
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize(
    ("shape", "literal"),
    LITERALS_XLA_CANNOT_READ,
    ids=[f"{s} {v}" for s, v in LITERALS_XLA_CANNOT_READ],
)
def test_literals_xla_cannot_read_are_rejected(shape: str, literal: str) -> None:
    with pytest.raises(HloParseError) as ours:
        parse_hlo(_constant(shape, literal))
    assert ours.value.line_no == 3 and "\n" not in str(ours.value)


# shapes for literal_forms, with no pred (true/false where another type is read crashes XLA)
_FORM_SHAPES = [
    "f32[]",
    "u8[]",
    "c64[]",
    "s8[3]",
    "c64[2]",
    "f32[2,3]",
    "f32[0]",
    "f32[3,0]",
    "f32[0,3]",
    "f32[<=3]",
    "f32[2,2]{0,1}",
    "c128[1,2]",
    "(f32[], s32[])",
    "(f32[2], s32[])",
    "((f32[], s32[]), f32[2])",
    "((f32[2], (f16[], u8[])), c64[])",
    "()",
    "(())",
    "((), f32[])",
]
_FORM_TOKENS = [
    "{",
    "}",
    "(",
    ")",
    ",",
    "...",
    "1",
    ".5",
    "-1",
    "300",
    "1e",
    "inf",
    "(1, 2)",
    "{1}",
]


def _valid_literal(shape: str, value: int) -> str:
    if shape[0] == "(":
        inner = shape[1:-1]
        elements, depth, start = [], 0, 0
        for i, char in enumerate(inner + ","):
            depth += (char in "([{") - (char in ")]}")
            if char == "," and depth == 0:
                if inner[start:i].strip():
                    elements.append(inner[start:i].strip())
                start = i + 1
        return "(" + ", ".join(_valid_literal(e, value + i) for i, e in enumerate(elements)) + ")"
    dtype, dims = shape[: shape.index("[")], shape[shape.index("[") + 1 : shape.index("]")]
    element = f"({value}, 2)" if dtype[0] == "c" else str(value)

    def nest(sizes: list[int]) -> str:
        if not sizes:
            return element
        return "{" + ", ".join(nest(sizes[1:]) for _ in range(sizes[0])) + "}"

    return nest([int(d.removeprefix("<=")) for d in dims.split(",") if d])


@st.composite
def literal_forms(draw: st.DrawFn) -> str:
    """A constant of a drawn shape (arrays, 0-sized dimensions, tuples nested two deep) with a
    valid literal, or one with a token or two deleted, inserted, duplicated or replaced, and
    its commas sometimes dropped or its tokens written without blanks."""
    shape = draw(st.sampled_from(_FORM_SHAPES))
    tokens = re.findall(
        r"\.\.\.|[{}(),]|[^\s{}(),]+", _valid_literal(shape, draw(st.integers(0, 9)))
    )
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(tokens)))
        edit = draw(st.sampled_from(["delete", "insert", "duplicate", "replace", "no commas"]))
        if edit == "insert" or not tokens:
            tokens.insert(at, draw(st.sampled_from(_FORM_TOKENS)))
        elif edit == "no commas":
            tokens = [t for t in tokens if t != ","]
        else:
            at = min(at, len(tokens) - 1)
            if edit == "delete":
                del tokens[at]
            elif edit == "duplicate":
                tokens.insert(at, tokens[at])
            else:
                tokens[at] = draw(st.sampled_from(_FORM_TOKENS))
    return _constant(shape, ("" if draw(st.booleans()) else " ").join(tokens))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(literal_forms())
def test_literal_structure_matches_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)
