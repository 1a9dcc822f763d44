"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on computations written
inline as attribute values, a computation header's parameters, layouts checked only inside
tuples, named shardings and mesh replica groups."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kata_harness import versions
from xla_inspect.errors import HloParseError
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo

from .xla_verdicts import (
    REFORMAT_SOURCES,
    body_start,
    our_verdict,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )


# -- computations written inline as attribute values (`to_apply={...}`) ------------------------

_INLINE_MODULE = """HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0)
  z = f32[] constant(0)
  i = s32[] constant(0)
BODY
}
"""
_ADDER = "{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}"
_NEGATE = "{\n  a = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(a)\n}"
INLINE_BODIES = {
    "to_apply": f"ROOT r = f32[] reduce(p, z), dimensions={{0}}, to_apply={_ADDER}",
    "on one line": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={a = f32[] parameter(0) "
        "b = f32[] parameter(1) ROOT s = f32[] add(a, b)}"
    ),
    "with comments and attributes after": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={ // adds\n"
        "  a = f32[] parameter(0) /* x */\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n"
        '}, metadata={op_name="r"}'
    ),
    "two, named apart": (
        f"r = f32[] reduce(p, z), dimensions={{0}}, to_apply={_ADDER}\n"
        "ROOT t = f32[] reduce(p, r), dimensions={0}, to_apply=" + _ADDER.replace("add", "maximum")
    ),
    "names of the caller's computation": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={\n"
        "  p = f32[] parameter(0)\n  z = f32[] parameter(1)\n  ROOT s = f32[] add(p, z)\n}"
    ),
    "without ROOT": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=" + _ADDER.replace("ROOT ", "")
    ),
    "nested": (
        "ROOT r = f32[] fusion(p), kind=kInput, calls={\n  a = f32[4]{0} parameter(0)\n"
        "  y = f32[] constant(0)\n"
        f"  ROOT n = f32[] reduce(a, y), dimensions={{0}}, to_apply={_ADDER}\n}}"
    ),
    "fusion": f"ROOT r = f32[4]{{0}} fusion(p), kind=kLoop, calls={_NEGATE}",
    "in a list": f"ROOT r = f32[4]{{0}} conditional(i, p), branch_computations={{{_NEGATE}}}",
    "while": (
        "ROOT w = f32[4]{0} while(p), condition={\n  a = f32[4]{0} parameter(0)\n"
        f"  ROOT t = pred[] constant(false)\n}}, body={_NEGATE}"
    ),
    "custom-call": (
        'ROOT r = f32[4]{0} custom-call(p), custom_call_target="x", '
        f"called_computations={{{_NEGATE}}}"
    ),
    "async-start": (
        f"st = ((f32[4]{{0}}), f32[4]{{0}}, s32[]) async-start(p), calls={_NEGATE}\n"
        "ROOT d = f32[4]{0} async-done(st)"
    ),
    "empty": "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={}",
    "a name of the caller's": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply="
        + _ADDER.replace("add(a, b)", "add(a, z)")
    ),
    "a parameter number twice": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply="
        + _ADDER.replace("parameter(1)", "parameter(0)")
    ),
    "a misspelled opcode": (
        "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=" + _ADDER.replace("add(", "ad(")
    ),
    "unclosed": "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={\n  a = f32[] parameter(0)",
}


def _inline_module(body: str) -> str:
    return _INLINE_MODULE.replace("BODY", "\n".join(f"  {line}" for line in body.splitlines()))


@pytest.mark.parametrize("body", list(INLINE_BODIES.values()), ids=list(INLINE_BODIES))
def test_inline_computations_match_xla(body: str) -> None:
    """Read as XLA reads them (a computation `_`, `_.1`... before its caller), and normalize's
    output of an accepted one reads the same."""
    text = _inline_module(body)
    verdict = xla_verdict(text)
    assert our_verdict(text) == verdict
    if verdict is not None:
        normalized = normalize_hlo(text)
        assert our_verdict(normalized) == xla_verdict(normalized) == verdict


def test_inline_computation_comes_before_its_caller() -> None:
    module = parse_hlo(_inline_module(INLINE_BODIES["two, named apart"]))
    assert [c.name for c in module.computations] == ["_", "_.1", "e"]
    assert module.entry["t"].called_computations == ("_.1",)
    assert module["_.1"].root.opcode == "maximum"


_CALL_REFERENCE = re.compile(r"\b(to_apply|calls|condition|body)=%?([\w.\-]+)")


@st.composite
def inlined(draw: st.DrawFn) -> str:
    """A corpus module with one call attribute's computation written inline in its place."""
    text = draw(st.sampled_from(REFORMAT_SOURCES))
    module = parse_hlo(text)
    lines = text.split("\n")
    references = [m for m in _CALL_REFERENCE.finditer(text, body_start(text)) if m[2] in module]
    if not references:
        return text
    reference = draw(st.sampled_from(references))
    callee = module[reference[2]]
    end = callee.instructions[-1].line_no  # its last instruction is on its last line
    while not lines[end].lstrip().startswith("}"):
        end += 1
    body = "\n".join(lines[callee.line_no : end])
    start = reference.start(2) - (text[reference.start(2) - 1] == "%")
    return text[:start] + "{\n" + body + "\n}" + text[reference.end() :]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(inlined())
def test_corpus_modules_with_a_computation_inline_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


# -- a computation header's parameters, in each way XLA's lexer reads them ---------------------

HEADER_PARAMETERS = [
    "p: f32[4]",
    "p:f32[4]",
    "p f32[4]",
    "%p f32[4]",
    "p.1 f32[4]",
    "p-1 f32[4]",
    "p\nf32[4]",
    "p /* c */ f32[4]",
    "f32: f32[4]",
    "/* none */",
    " // none\n",
    "p : f32[4]",
    "p :f32[4]",
    "%p: f32[4]",
    "%p:f32[4]",
    "f32 f32[4]",
    "ROOT f32[4]",
    "p",
    "p: f32[4], ",
]


@pytest.mark.parametrize("parameters", HEADER_PARAMETERS)
def test_header_parameters_match_xla(parameters: str) -> None:
    one = "p" in parameters
    result = "f32[4]" if one else "f32[]"
    body = (
        "  p = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(p)"
        if one
        else ("  ROOT c = f32[] constant(0)")
    )
    text = f"HloModule m\nENTRY e ({parameters}) -> {result} {{\n{body}\n}}\n"
    assert our_verdict(text) == xla_verdict(text)


# -- layouts XLA checks only inside tuples, and layouts its parser cannot build -----------------

LAYOUTS = [
    "f32[2]{0}",
    "f32[2]{1}",
    "f32[2]{5}",
    "f32[2,3]{0,1}",
    "f32[2,3]{0,0}",
    "f32[2,3]{2,0}",
    "f32[2]{0:T(2)}",
    "f32[2]{0:T(0)}",
    "f32[2]{0:T(2)(1)}",
    "f32[2,3]{1,0:T(8,128)(2,1)}",
    "f32[2,3]{1,0:T(0,128)}",
    "f32[2]{0:E(8)}",
    "f32[2]{0:E(0)}",
    "f32[2]{0:E(-1)}",
    "f32[2]{0:#(u8)}",
    "f32[2]{0:*(u8)}",
    "f32[2]{0:D(C)#(u8)}",
    "f32[2]{0:S(1)}",
    "f32[2]{0:S(-1)}",
    "f32[2]{0:SC(0:1)}",
    "f32[2]{0:SC(5:1)}",
    "f32[2]{0:D(C)}",
    "f32[2]{0:T(128)S(1)}",
    "f32[2]{0:M(1)}",
]
# XLA's parser crashes the process on these (a failed CHECK) wherever they are written
LAYOUTS_XLA_CANNOT_BUILD = ["f32[2]{0:T(-1)}", "f32[2,3]{1,0:T(8,-1)}", "f32[2]{0:L(0)}"]


@pytest.mark.parametrize("element", [False, True], ids=["array", "tuple element"])
@pytest.mark.parametrize("shape", LAYOUTS)
def test_layouts_match_xla(shape: str, element: bool) -> None:
    written = f"({shape}, s32[])" if element else shape
    text = f"HloModule m\nENTRY e {{\n  ROOT p = {written} parameter(0)\n}}\n"
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize("shape", LAYOUTS_XLA_CANNOT_BUILD)
def test_layouts_xla_cannot_build_are_rejected(shape: str) -> None:
    for written in (shape, f"({shape}, s32[])"):
        with pytest.raises(HloParseError) as ours:
            parse_hlo(f"HloModule m\nENTRY e {{\n  ROOT p = {written} parameter(0)\n}}\n")
        assert ours.value.line_no == 3


INSTRUCTION_NAMES = [
    "p",
    "_",
    "x__",
    "a.b-c",
    "%a.b-c",
    "0",
    "%0",
    "1a",
    ".p",
    "-p",
    "-1",
    "0x1",
    "__x",
    "%__x",
    "__p.1",
    "pé",
    "true",
    "%true",
    "f32",
]


@pytest.mark.parametrize("root", [False, True], ids=["operand", "ROOT"])
@pytest.mark.parametrize("name", INSTRUCTION_NAMES)
def test_instruction_names_match_xla(name: str, root: bool) -> None:
    if root:
        body = f"  p = f32[2]{{0}} parameter(0)\n  ROOT {name} = f32[2]{{0}} negate(p)"
    else:
        body = f"  {name} = f32[2]{{0}} parameter(0)\n  ROOT r = f32[2]{{0}} negate({name})"
    text = f"HloModule m\nENTRY e {{\n{body}\n}}\n"
    assert our_verdict(text) == xla_verdict(text)


# -- named shardings (a mesh and the axes each dimension is sharded over) and mesh replica groups

NAMED_SHARDINGS = [
    "{mesh['a'=2,'b'=4,'c'=4,'d'=2], device_ids=([4,16]T(1,0)), [{'a'}]}",
    "{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}]}",
    "{mesh[], replicated}",
    "{mesh['a'=2,'b'=4], [{'a'}], replicated={'b'}}",
    "{maximal_mesh[device_id=5]}",
    "{mesh['a.b'=2,'<axis> def'=4,'z/w'=2], [{'a.b'}, {'<axis> def':(2)2, 'z/w'}]}",
    "{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{}, {'b'}], unreduced={'d':(4)2}}",
    "{mesh['a'=2,'b'=4], manual}",
    "{mesh['x'=8], [{'x'}, {}]}",
    "{mesh[], [{}]}",
    '{mesh["a"=2], [{"a"}]}',
    "{mesh['a'=2], [{'a', ?}]}",
    "{mesh['a'=4], [{'a':(2)2, 'a':(1)2}]}",
    "{mesh['a'=2], [{'a'}], metadata={op_name=\"x\"}}",
    '{maximal_mesh[device_id=0], metadata={op_name="x"}}',
    "{{mesh['x'=8], [{'x'}]}, {mesh[], [{}]}}",
    '{mesh["a"=2], [{"b"}]}',
    "{mesh['a'=2], [{'a'}], replicated={'b'}}",
    "{maximal_mesh[]}",
    "{maximal_mesh[device_id=-1]}",
    "{single_device[device_id=3]}",
    "{single_device [ device_id= -1 ]}",
    '{single_device[device_id=0], metadata={op_name="x"}}',
    "{{single_device[device_id=0]}, {replicated}}",
    "{single_device[device_id = 3]}",
    "{single_device[device_id=3, x=1]}",
    "{single_device[device_id=3] metadata={}}",
    "{single_device}",
    "{mesh[], [{}] garbage}",
    "{mesh['a'=2], [{a}]}",
    "{mesh['a'=2]}",
    "{mesh['a'=2], bogus={'a'}}",
    "{mesh['a'=2] device_ids=(0,1), [{'a'}]}",
]
MESH_REPLICA_GROUPS = [
    "mesh['x'=8] {'x'}",
    "mesh['a'=2,'b'=2] {'a','b'}",
    "mesh['a'=2] {}",
    "mesh['a'=2], device_ids=(1,0) {'a'}",
    "mesh['a'=4] {'a':(1)2}",
    "mesh['x'=8] {'y'}",
    "mesh['a'=2]",
    "mesh['a'=2] {a}",
    "mesh['a'=2] {'a'} junk",
]
# XLA's parser crashes the process on an axis named twice
MESH_XLA_CANNOT_BUILD = [
    "sharding={mesh['a'=2], [{'a'}, {'a'}]}",
    "sharding={mesh['a'=2,'a'=2], [{'a'}]}",
    "sharding={mesh['a'=2], [{'a'}], replicated={'a'}}",
    "replica_groups=mesh['a'=2,'b'=2] {'a','a'}, to_apply=%add",
]
_ADD_COMPUTATION = "%add (a: f32[], b: f32[]) -> f32[] {\n  a = f32[] parameter(0)\n"
_ADD_COMPUTATION += "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"


def _sharded(attribute: str, tuple_shaped: bool = False) -> str:
    opcode = "all-reduce(p)" if attribute.startswith("replica") else "negate(p)"
    shape = "f32[8]{0}"
    if tuple_shaped:
        opcode, shape = "tuple(p, p)", "(f32[8]{0}, f32[8]{0})"
    return (
        f"HloModule m\n{_ADD_COMPUTATION}ENTRY e {{\n  p = f32[8]{{0}} parameter(0)\n"
        f"  ROOT r = {shape} {opcode}, {attribute}\n}}\n"
    )


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize("sharding", NAMED_SHARDINGS)
def test_named_shardings_match_xla(sharding: str) -> None:
    text = _sharded(f"sharding={sharding}", tuple_shaped=sharding.startswith("{{"))
    assert our_verdict(text) == xla_verdict(text)


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize("groups", MESH_REPLICA_GROUPS)
def test_mesh_replica_groups_match_xla(groups: str) -> None:
    text = _sharded(f"replica_groups={groups}, to_apply=%add")
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize("attribute", MESH_XLA_CANNOT_BUILD)
def test_mesh_axes_named_twice_are_rejected(attribute: str) -> None:
    with pytest.raises(HloParseError) as ours:
        parse_hlo(_sharded(attribute))
    assert ours.value.line_no == 9
