"""parse_hlo remembers: a text read again (up to REMEMBERED_CHARS) returns the immutable model
read before; a larger text is read each time; a malformed text raises each time."""

from __future__ import annotations

import dataclasses

import pytest

from xla_inspect.errors import HloParseError
from xla_inspect.hlo.reader import REMEMBERED_CHARS
from xla_inspect.parse import parse_hlo


def _module(instructions: int, name: str = "m") -> str:
    body = [f"  a{i} = f32[4]{{0}} add(p, p)" for i in range(instructions)]
    return "\n".join(
        [f"HloModule {name}", "", "ENTRY e {", "  p = f32[4]{0} parameter(0)", *body,
         "  ROOT r = f32[4]{0} negate(p)", "}", ""]
    )  # fmt: skip


def test_a_text_read_again_is_the_model_read_before():
    text = _module(3)
    first = parse_hlo(text)
    assert parse_hlo("".join(text)) is first  # an equal text, another string object
    other = parse_hlo(_module(3, name="n"))
    assert other is not first and other.name == "n"
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.entry.name = "changed"  # type: ignore[misc]


def test_a_text_past_the_limit_is_read_each_time():
    text = _module(REMEMBERED_CHARS // 25)
    assert len(text) > REMEMBERED_CHARS
    first, again = parse_hlo(text), parse_hlo(text)
    assert first is not again and first == again


def test_a_malformed_text_raises_each_time():
    text = _module(2).replace("negate(p)", "negate(p")
    for _ in range(2):
        with pytest.raises(HloParseError):
            parse_hlo(text)
