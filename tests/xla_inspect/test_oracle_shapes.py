"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on what it checks as it
builds and resolves (operand counts, dimensions) and on a shape read alike wherever it is
written."""

from __future__ import annotations

import re

import pytest

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.parse import parse_hlo

from .xla_verdicts import (
    our_verdict,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )


# -- what XLA's parser checks as it builds and resolves: operand counts, one-dimension
# attributes, names resolved in order, keywords, the module's name and a computation's thread

_BUILD_MODULE = """HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
%lt (a: f32[], b: f32[]) -> pred[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
%t (a: f32[4]) -> f32[4] {
  ROOT a = f32[4] parameter(0)
}
ENTRY e {
  p = f32[4] parameter(0)
  i = s32[] constant(0)
  b = pred[] constant(true)
  m = f32[3,4] parameter(1)
  j = s32[2,1] parameter(2)
  u = f32[2,4] parameter(3)
BODY
}
"""
BUILT = {
    "conditional, one branch": "ROOT r = f32[4] conditional(i, p), BRANCHES={%t}",
    "conditional, two branches": "ROOT r = f32[4] conditional(i, p, p), BRANCHES={%t, %t}",
    "conditional, an operand short": "ROOT r = f32[4] conditional(i, p), BRANCHES={%t, %t}",
    "conditional, an operand more": "ROOT r = f32[4] conditional(i, p, p), BRANCHES={%t}",
    "conditional, no operand": "ROOT r = f32[4] conditional(), BRANCHES={%t}",
    "conditional, true/false": (
        "ROOT r = f32[4] conditional(b, p, p), true_computation=%t, false_computation=%t"
    ),
    "conditional, true/false short": (
        "ROOT r = f32[4] conditional(b, p), true_computation=%t, false_computation=%t"
    ),
    "scatter": (
        "ROOT r = f32[3,4] scatter(m, j, u), update_window_dims={1}, inserted_window_dims={0}, "
        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add"
    ),
    "scatter, even operands": (
        "ROOT r = f32[3,4] scatter(m, j), update_window_dims={1}, inserted_window_dims={0}, "
        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add"
    ),
    "all-gather, one dimension": (
        "ROOT r = f32[8] all-gather(p), dimensions={0}, replica_groups={{0,1}}"
    ),
    "all-gather, two": "ROOT r = f32[8] all-gather(p), dimensions={0,0}, replica_groups={{0,1}}",
    "all-to-all, none": "ROOT r = f32[4] all-to-all(p), dimensions={}, replica_groups={{0,1}}",
    "all-to-all, not given": "ROOT r = f32[4] all-to-all(p), replica_groups={{0,1}}",
    "sort, two": "ROOT r = f32[4] sort(p), dimensions={0,0}, to_apply=%lt",
    "get-dimension-size, none": "ROOT r = s32[] get-dimension-size(p), dimensions={}",
    "reduce-scatter, two": (
        "ROOT r = f32[2] reduce-scatter(p), dimensions={0,0}, replica_groups={{0,1}}, to_apply=%add"
    ),
    "control predecessor before": (
        "x = f32[4] negate(p)\nROOT r = f32[4] negate(p), control-predecessors={%x}"
    ),
    "control predecessor after": (
        "x = f32[4] negate(p), control-predecessors={%r}\nROOT r = f32[4] negate(x)"
    ),
    "control predecessor itself": "ROOT r = f32[4] negate(p), control-predecessors={%r}",
    "control predecessor undefined": "ROOT r = f32[4] negate(p), control-predecessors={%nope}",
    "control predecessor of another computation": (
        "ROOT r = f32[4] negate(p), control-predecessors={%a}"
    ),
    "keyword name with %": "%true = f32[4] negate(p)\nROOT r = f32[4] negate(%true)",
    "keyword name bare": "%true = f32[4] negate(p)\nROOT r = f32[4] negate(true)",
    "keyword name with %, true in the attributes": (
        "%true = f32[4] negate(p)\n"
        "ROOT r = f32[4] sort(%true), dimensions={0}, is_stable=true, to_apply=%lt"
    ),
}


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize("body", list(BUILT.values()), ids=list(BUILT))
def test_what_xla_checks_as_it_builds_matches(body: str) -> None:
    body = body.replace("BRANCHES=", "branch_computations=")
    text = _BUILD_MODULE.replace("BODY", "\n".join(f"  {line}" for line in body.splitlines()))
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize(
    "text",
    [
        "HloModule %m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
        "HloModule %f32\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
        '%c {\n  ROOT x = f32[] parameter(0)\n}\n, execution_thread="x"\n'
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=%c\n}\n",
        "%c {\n  ROOT x = f32[] parameter(0)\n}, execution_thread=x\n"
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=%c\n}\n",
    ],
    ids=["module %name", "module %type name", "thread on the next line", "thread unquoted"],
)
def test_module_names_and_threads_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


# -- a shape read alike wherever it is written: an instruction's, a typed operand's, a ---------
# -- computation's parameter and result, outfeed_shape= and operand_layout_constraints= --------

_NO_LAYOUT = re.compile(r"\s*\{[^{}]*\}")


def _placed(where: str, shape: str) -> str:
    """A module that is valid when `shape` is read as XLA reads it at `where` (the other
    shapes are `shape` without its layouts)."""
    base = _NO_LAYOUT.sub("", shape)
    lines = {
        "instruction": [f"ROOT p = {shape} parameter(0)"],
        "typed operand": [f"p = {base} parameter(0)", f"ROOT n = {base} copy({shape} p)"],
        "outfeed_shape": [
            f"p = {base} parameter(0)",
            "t = token[] after-all()",
            f"ROOT o = token[] outfeed(p, t), outfeed_shape={shape}",
        ],
        "operand layout constraint": [
            f"p = {base} parameter(0)",
            f'ROOT n = {base} custom-call(p), custom_call_target="x", '
            f"operand_layout_constraints={{{shape}}}",
        ],
    }
    if where == "signature parameter":
        return (
            f"HloModule m\nENTRY e (a: {shape}) -> {base} {{\n  ROOT a = {base} parameter(0)\n}}\n"
        )
    if where == "signature result":
        return (
            f"HloModule m\nENTRY e (a: {base}) -> {shape} {{\n  ROOT a = {base} parameter(0)\n}}\n"
        )
    body = "\n".join(f"  {line}" for line in lines[where])
    return f"HloModule m\nENTRY e {{\n{body}\n}}\n"


_PLACES = [
    "instruction",
    "typed operand",
    "signature parameter",
    "signature result",
    "outfeed_shape",
    "operand layout constraint",
]
# layouts of the wrong rank, '{}' (no layout to XLA, after a scalar too), tuple elements
SHAPES_READ_ALIKE = [
    "f32[]",
    "f32[]{}",
    "f32[]{ }",
    "f32[] {}",
    "f32[]{0}",
    "f32[2]{0}",
    "f32[2]{}",
    "f32[2]{1,0}",
    "f32[2]{0,0}",
    "f32[2]{1}",
    "f32[2]{1,0:T(2)}",
    "f32[2]{0:T(2)}",
    "f32[2,3]{1,0}",
    "f32[2,3]{0}",
    "f32[2,3]{0,1,2}",
    "f32[2,3]{1 0}",
    "f32[2,3]{1, /*c*/ 0}",
    "f32[1,2,3]{0,1,2}",
    "f32[1,2,3]{0,1}",
    "(f32[2]{0}, s32[])",
    "(f32[2]{1}, s32[])",
    "(f32[2]{1,0})",
    "(f32[]{})",
    "(f32[2]{0}, s32[]{})",
    "((f32[2]{1,0}))",
    "(f32[2]{0}, (s32[3]{0,1}))",
    "(f32[2,3]{0,0})",
    # negative minor-to-major numbers: taken at top level, not in a tuple element (-0 is 0)
    "f32[2]{-1}",
    "f32[2,3]{-1,0}",
    "f32[2,3]{0,-1}",
    "f32[2]{-0}",
    "f32[2]{-1:T(2)}",
    "(f32[2]{-1})",
    "(f32[2]{-0})",
    "f32[2]{- 1}",
    "f32[2]{-/*c*/1}",
    "f32[2]{0:T(- 1)}",
    # numbers XLA's lexer reads: -2^63 to 2^64-1, from 2^63 on wrapped to a negative int64
    "f32[2]{-9223372036854775808}",
    "f32[2]{-9223372036854775809}",
    "f32[2]{9223372036854775808}",
    "f32[2]{18446744073709551616}",
    # dimension sizes: -0 is 0; 2^63 and more are not sizes, save a bound read as '?'
    "f32[-0]",
    "f32[-00]",
    "f32[-0,3]{1,0}",
    "(f32[-0])",
    "f32[<=-0]",
    "f32[-1]",
    "f32[- 0]",
    "f32[9223372036854775807]",
    "f32[9223372036854775808]",
    "(f32[9223372036854775808])",
    "f32[99999999999999999999]",
    "f32[<=9223372036854775808]",
    "f32[<=-9223372036854775808]",
    "f32[<=9223372036854775809]",
]


@pytest.fixture(scope="module")
def placed_asked_at_once() -> None:
    """XLA's verdicts on every shape in every place, asked in one batch (the helper remembers
    them): not one round trip to it per case, each a wait for the helper under load."""
    oracles.xla_verdicts([_placed(w, shape) for shape in SHAPES_READ_ALIKE for w in _PLACES])


@pytest.mark.parametrize("where", _PLACES)
@pytest.mark.parametrize("shape", SHAPES_READ_ALIKE)
@pytest.mark.usefixtures("placed_asked_at_once")
def test_shapes_are_read_alike_everywhere(shape: str, where: str) -> None:
    text = _placed(where, shape)
    assert our_verdict(text) == xla_verdict(text)


# an operand's shape, and the shape written for it; XLA takes an unbounded '?' as any size
UNBOUNDED_WRITTEN = [
    ("f32[2]", "f32[?]"),
    ("f32[?]", "f32[2]"),
    ("f32[?,3]", "f32[2,3]"),
    ("f32[?,3]", "f32[<=2,3]"),
    ("f32[?,3]", "f32[0,3]"),
    ("f32[<=4,3]", "f32[?,3]"),
    ("f32[2,3]", "f32[?,?]"),
    ("f32[2,3]", "f32[?]"),
    ("f32[]", "f32[?]"),
    ("f32[2,3]", "f32[?,4]"),
    ("f32[2]", "s32[?]"),
    ("(f32[2], s32[])", "(f32[?], s32[])"),
    ("(f32[?], s32[])", "(f32[5], s32[])"),
    ("((f32[2]))", "((f32[?]))"),
    ("(f32[2], s32[])", "(f32[?,?], s32[])"),
    ("f32[2]", "f32[<=3]"),
]


@pytest.mark.parametrize("where", ["typed operand", "signature result", "layout constraint"])
@pytest.mark.parametrize(("actual", "written"), UNBOUNDED_WRITTEN)
def test_unbounded_dimensions_match_any_size_as_in_xla(
    actual: str, written: str, where: str
) -> None:
    if where == "signature result":
        header = f"ENTRY e (a: {actual}) -> {written}"
        text = f"HloModule m\n{header} {{\n  ROOT a = {actual} parameter(0)\n}}\n"
    else:
        use = (
            f"copy({written} p)"
            if where == "typed operand"
            else f'custom-call(p), custom_call_target="x", operand_layout_constraints={{{written}}}'
        )
        text = (
            f"HloModule m\nENTRY e {{\n  p = {actual} parameter(0)\n  ROOT n = {actual} {use}\n}}\n"
        )
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize(
    "index", ["9223372036854775807", "9223372036854775808", "18446744073709551616", "-0", "1"]
)
def test_integer_attributes_xla_can_read_match_xla(index: str) -> None:
    text = (
        "HloModule m\nENTRY e {\n  t = (f32[2]{0}, s32[]) parameter(0)\n"
        f"  ROOT g = s32[] get-tuple-element(t), index={index}\n}}\n"
    )
    assert our_verdict(text) == xla_verdict(text)


# XLA's parser aborts the process on a token or opaque shape with dimensions, wherever written
SHAPED_TOKENS = ["token[2]", "opaque[2]", "token[2,3]{1,0}", "(f32[], (opaque[1]))", "token[?]"]


@pytest.mark.parametrize("where", _PLACES)
@pytest.mark.parametrize("shape", SHAPED_TOKENS)
def test_tokens_with_dimensions_are_rejected(shape: str, where: str) -> None:
    with pytest.raises(HloParseError) as ours:
        parse_hlo(_placed(where, shape))
    assert "\n" not in str(ours.value) and ours.value.line_no in (2, 3, 4, 5)


# a layout's items after ':' as XLA's ParseLayout reads them: each may stand without its
# parentheses or stop halfway, and only the layout's '}' must follow the last one read
LAYOUT_ITEMS = [
    "T", "S", "D", "E", "L", "M", "SC", "#", "*", "P", "TS", "T()", "T(2)S", "#u8", "#()",
    "*()", "D(C)T", "T(2)L", "#(u8)*", "#(f32)", "S(1)T(2)", "E(1)E(2)", "T S", "E S(1)",
    "T(2) S(1)", "T /*c*/ S", " T", "T ",
]  # fmt: skip


@pytest.mark.parametrize(
    "written", ["f32[2]{0:ITEMS}", "f32[2,3]{1,0:ITEMS}", "(f32[2]{0:ITEMS}, s32[])"]
)
@pytest.mark.parametrize("items", LAYOUT_ITEMS)
def test_layout_items_match_xla(items: str, written: str) -> None:
    text = (
        f"HloModule m\nENTRY e {{\n  ROOT p = {written.replace('ITEMS', items)} parameter(0)\n}}\n"
    )
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize("items", [i for i in LAYOUT_ITEMS if " " not in i])
def test_layout_items_in_signatures_and_typed_operands_match_xla(items: str) -> None:
    for where in ("signature parameter", "typed operand"):
        text = _placed(where, f"f32[2]{{0:{items}}}")
        assert our_verdict(text) == xla_verdict(text)


# (operand, result): XLA counts elements with bounds, a '?' as 1, and does not check a reshape
# of an operand with a '?' (a dynamic-reshape it does)
RESHAPES = [
    ("f32[2]", "f32[?]"),
    ("f32[<=2]", "f32[?]"),
    ("f32[0]", "f32[?]"),
    ("f32[]", "f32[?]"),
    ("f32[2]", "f32[?,?]"),
    ("f32[0]", "f32[0,?]"),
    ("f32[]", "f32[0,?]"),
    ("f32[?]", "f32[5]"),
    ("f32[?,2]", "f32[3]"),
    ("f32[2,3]", "f32[6]"),
    ("f32[2,3]", "f32[5]"),
    ("f32[6]", "f32[2,<=3]"),
    ("f32[6]", "f32[2,<=4]"),
    ("f32[]", "f32[1,1]"),
]


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize("sizes", [None, 0, 1], ids=["reshape", "rank sizes", "rank+1 sizes"])
@pytest.mark.parametrize(("operand", "result"), RESHAPES)
def test_reshape_element_counts_match_xla(operand: str, result: str, sizes: int | None) -> None:
    rank = 0 if result.endswith("[]") else result.count(",") + 1
    extra = 0 if sizes is None else rank + sizes
    lines = [f"p = {operand} parameter(0)"] + [
        f"a{i} = s32[] parameter({i + 1})" for i in range(extra)
    ]
    op = "reshape" if sizes is None else "dynamic-reshape"
    lines.append(f"ROOT n = {result} {op}({', '.join(['p'] + [f'a{i}' for i in range(extra)])})")
    text = "HloModule m\nENTRY e {\n" + "".join(f"  {line}\n" for line in lines) + "}\n"
    assert our_verdict(text) == xla_verdict(text)
