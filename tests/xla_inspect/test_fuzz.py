"""Mutated and truncated real modules either parse or raise HloParseError, nothing else.

Queries run on whatever parses, and must not raise either.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_inspect.errors import HloParseError
from xla_inspect.hlo.attributes import ATTRIBUTE_SYNTAX, OTHER_TYPE
from xla_inspect.model import HloModule, Shape
from xla_inspect.parse import parse_hlo
from xla_inspect.query import (
    call_graph,
    collectives,
    custom_call_targets,
    dots,
    fusions,
    opcode_counts,
    parameter_layouts,
    root_layout,
)

HERE = Path(__file__).parent
SOURCES = [
    (HERE / p).read_text()
    for p in (
        "corpus/donated_state.opt.hlo",
        "corpus/shard_map_collectives.opt.hlo",
        "corpus/control_flow.before.hlo",
        "corpus/conv_net.unopt.hlo",
        "corpus/sharded_auto.opt.hlo",
        "fixtures/features.hlo",
        "fixtures/minimal_short.hlo",
    )
]
INSERTS = [
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ",",
    "=",
    "%",
    "\n",
    " ",
    "/*",
    "*/",
    "ROOT ",
    "ENTRY ",
    "<=",
    "?",
    "0",
    "-",
    # pieces of structured attribute values: windows (3x3, 0_1), dim labels, iota device lists
    "x",
    "_",
    "->",
    "T(",
    "'",
]
FUZZ = settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _exercise(module: HloModule) -> None:
    opcode_counts(module)
    opcode_counts(module, entry_only=True)
    call_graph(module)
    fusions(module)
    collectives(module)
    custom_call_targets(module)
    dots(module)
    parameter_layouts(module)
    root_layout(module)
    for computation in module.computations:
        for instruction in computation.instructions:
            dict(instruction.attributes)
            shape = Shape(instruction.shape)
            assert len(shape.dynamic_dims) == len(shape.dims)
            assert shape.minor_to_major is None or len(shape.minor_to_major) <= len(shape.dims)
            assert len(shape.elements) == 0 or shape.is_tuple


def _parse_or_parse_error(text: str) -> None:
    try:
        module = parse_hlo(text)
    except HloParseError as exc:
        assert exc.line_no >= 1 and exc.expected
        return
    _exercise(module)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "insert"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        elif action == "duplicate":
            text = text[:at] + text[at : at + draw(st.integers(1, 40))] + text[at:]
        elif action == "swap" and at + 1 < len(text):
            text = text[:at] + text[at + 1] + text[at] + text[at + 2 :]
        else:
            text = text[:at] + draw(st.sampled_from(INSERTS)) + text[at:]
    return text


@FUZZ
@given(mutated())
def test_mutated_modules_raise_only_parse_errors(text: str) -> None:
    _parse_or_parse_error(text)


@FUZZ
@given(st.sampled_from(SOURCES), st.floats(0.0, 1.0))
def test_truncated_modules_raise_only_parse_errors(text: str, fraction: float) -> None:
    _parse_or_parse_error(text[: int(len(text) * fraction)])


@FUZZ
@given(st.text(alphabet='%(){}[]",=/* \nROTENabcfsu0123456789.-<>:?', max_size=300))
def test_arbitrary_text_raises_only_parse_errors(text: str) -> None:
    _parse_or_parse_error(text)


# every syntax the reader checks attribute values with, including per-opcode ones
VALUE_SYNTAXES = [syntax for _, syntax in ATTRIBUTE_SYNTAX.values()] + [
    other[1] for names in OTHER_TYPE.values() for other in names.values() if other is not None
]


# pieces values are made of, so that drawn texts come close to real values
VALUE_PIECES = (
    "{ } [ ] ( ) <= , : _ x T 0 1 2 4 - ? b f i o -> size= stride= pad= device= devices="
    " replicated maximal manual last_tile_dim_replicate last_tile_dims= shard_as mesh 'a'=2"
    ' "s" \\x4 \\400 \\u nan 1e39 kLoop'
).split() + [" "]


@FUZZ
@given(
    st.one_of(
        st.text(alphabet="{}[]()<=,:_x-0123456789 TbfioqAZaz?'\"\\.", max_size=60),
        st.lists(st.sampled_from(VALUE_PIECES), max_size=24).map("".join),
    )
)
def test_value_syntaxes_answer_any_text(text: str) -> None:
    """A value check says yes or no on any text (its tests of counts and ranges never raise)."""
    for syntax in VALUE_SYNTAXES:
        syntax.fullmatch(text)
        syntax.match(text, 0)
        syntax.match("x=" + text, 2)
