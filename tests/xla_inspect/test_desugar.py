"""Instructions written without a shape: the reader infers the shape XLA's parser infers, and
rejects (with line and column) where XLA's parser cannot infer one.

The oracle is jaxlib's private `jaxlib._hlo.hlo_module_from_text`: each instruction's shape is
read from the module XLA prints back, through our reader of that printed (fully shaped) text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.hlo.infer import CannotInfer, infer_shape
from xla_inspect.model import HloModule, Shape
from xla_inspect.parse import parse_hlo

from .desugar_cases import INFERRED, NESTED, NESTED_REJECTED, NOT_INFERRED

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )

HERE = Path(__file__).parent


def _shapes(module: HloModule) -> dict[tuple[str, str], Shape]:
    """Each instruction's shape by (computation, instruction name). The get-tuple-element that
    operand `p#1` adds is named `p#1` by our reader and `p_1` by XLA's: keyed as XLA names it."""
    return {
        (c.name, i.name.replace("#", "_")): Shape(i.shape)
        for c in module.computations
        for i in c.instructions
    }


def _same_shape(ours: Shape, xla: Shape) -> bool:
    """Equal element types and dimensions (tuples element by element); the layout too where
    ours states one."""
    if ours.is_tuple or xla.is_tuple:
        return len(ours.elements) == len(xla.elements) and all(
            _same_shape(a, b) for a, b in zip(ours.elements, xla.elements, strict=True)
        )
    if (ours.dtype, ours.dims) != (xla.dtype, xla.dims):
        return False
    return ours.layout is None or ours.minor_to_major == xla.minor_to_major


def _xla_shapes(text: str) -> dict[tuple[str, str], Shape] | None:
    """XLA's shape of each (computation, instruction), or None when its parser rejects `text`."""
    verdict = oracles.xla_verdict(text)  # in a helper process: an abort is a verdict there
    if verdict.kind != "accepted":
        return None
    return _shapes(parse_hlo(verdict.facts["text"]))


def _assert_agrees(text: str) -> None:
    """Our reader and XLA's parser agree on `text`: both reject it, or both accept it and give
    every instruction the same shape."""
    expected = _xla_shapes(text)
    try:
        ours = _shapes(parse_hlo(text))
    except HloParseError as error:
        assert expected is None, f"XLA accepts, we reject: {error}"
        return
    assert expected is not None, "XLA rejects, we accept"
    assert ours.keys() == expected.keys()
    wrong = {
        k: (ours[k].text, expected[k].text) for k in ours if not _same_shape(ours[k], expected[k])
    }
    assert not wrong


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # `p#1` (an element of a tuple as an operand) is newer syntax than some XLA parsers read
        pytest.param(n, t, marks=versions.requires_jax(versions.NEWER_SYNTAX_GATE))
        if versions.uses_newer_hlo_syntax(t)
        else (n, t)
        for n, t in INFERRED
    ],
    ids=[n for n, _ in INFERRED],
)
def test_inferred_shape_is_xlas(name: str, text: str) -> None:
    assert _xla_shapes(text) is not None, f"{name}: XLA's parser rejects the example"
    _assert_agrees(text)


@pytest.mark.parametrize(("name", "text"), NESTED, ids=[n for n, _ in NESTED])
def test_nested_instructions_are_xlas(name: str, text: str) -> None:
    assert _xla_shapes(text) is not None, f"{name}: XLA's parser rejects the example"
    _assert_agrees(text)


@pytest.mark.parametrize(
    ("name", "text", "line"), NESTED_REJECTED, ids=[n for n, _, _ in NESTED_REJECTED]
)
def test_nested_instruction_xla_rejects_is_rejected(name: str, text: str, line: int) -> None:
    assert _xla_shapes(text) is None, f"{name}: XLA's parser accepts the example"
    with pytest.raises(HloParseError) as caught:
        parse_hlo(text)
    assert (caught.value.line_no, caught.value.col is not None) == (line, True)


@pytest.mark.parametrize(
    ("name", "text", "line"), NOT_INFERRED, ids=[n for n, _, _ in NOT_INFERRED]
)
def test_shape_xla_cannot_infer_is_rejected_where_it_is_missing(
    name: str, text: str, line: int
) -> None:
    assert _xla_shapes(text) is None, f"{name}: XLA's parser accepts the example"
    with pytest.raises(HloParseError) as caught:
        parse_hlo(text)
    assert caught.value.line_no == line
    assert caught.value.col is not None
    assert "shape" in caught.value.expected


def test_unknown_rule_names_the_opcode() -> None:
    with pytest.raises(CannotInfer, match="'custom-call'"):
        infer_shape("custom-call", ["f32[3]"], 'custom_call_target="f"', lambda _: None)


# -- hypothesis: corpus modules with the shape dropped from some instructions ------------------

# an instruction line with a shape, other than parameter, constant and broadcast (whose form
# without a shape means another broadcast, so the rest of the module no longer fits)
_SHAPED_LINE = re.compile(
    r"^(\s*(?:ROOT )?%?[\w.\-]+ = )(\S+|\([^=]*?\)) "
    r"((?!parameter\(|constant\(|broadcast\()[a-z][a-z0-9\-]*\()",
    re.M,
)
_SOURCES = [
    text
    for text in (p.read_text() for p in sorted((HERE / "corpus").glob("*.hlo")))
    if len(text) < 60_000
]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_dropping_shapes_from_corpus_modules_matches_xla(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(_SOURCES), label="module")
    lines = list(_SHAPED_LINE.finditer(text))
    chosen = data.draw(
        st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=8), label="lines"
    )
    pieces, at = [], 0
    for index in sorted(chosen):
        match = lines[index]
        pieces += [text[at : match.start(2)]]
        at = match.start(3)
    dropped = "".join(pieces) + text[at:]
    verdict = oracles.xla_verdict(dropped)
    if verdict.kind != "accepted":
        if "infer shape" in verdict.message:
            with pytest.raises(HloParseError):
                parse_hlo(dropped)
        # else XLA inferred every shape and then rejected an inferred shape that does not fit
        # the written one (say a f32 result where bf16 was written): checks the reader does
        # not make on any instruction, so this case says nothing about inference
        return
    _assert_agrees(dropped)
