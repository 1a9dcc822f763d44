"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on attribute values:
integer ranges, enumerations, metadata, escapes, nesting."""

from __future__ import annotations

import pytest

from kata_harness import versions

from .xla_verdicts import (
    NEGATE_MODULE,
    our_verdict,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )


# -- attribute values: integer ranges, enumerations, metadata, escapes, nesting ----------------

_ATTR_MODULE = (
    "HloModule m\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n"
    "ENTRY %e (p: f32[4], q: f32[2,2]) -> f32[4] {\n  %p = f32[4] parameter(0)\n"
    "  %q = f32[2,2] parameter(1)\n  %z = f32[] constant(0)\n  ROOT %r = ROOT_TEXT\n}\n"
)
_BIG = {
    "2^63-1": str(2**63 - 1),
    "2^63": str(2**63),
    "2^64-1": str(2**64 - 1),
    "2^64": str(2**64),
    "-2^63": str(-(2**63)),
    "-2^63-1": str(-(2**63) - 1),
}
# XLA's lexer takes integers in [-2^63, 2^64-1] in every attribute; padding and a window's pad
# are read as int64s; metadata's integers are int32s once read as int64s (2^64-1 is -1)
_INTEGER_ROOTS = {
    "channel_id": "f32[4] all-reduce(%p), channel_id=N, to_apply=%add",
    "replica_groups": "f32[4] all-reduce(%p), replica_groups={{0,N}}, to_apply=%add",
    "source_target_pairs": "f32[4] collective-permute(%p), source_target_pairs={{0,N}}",
    "dimensions": "f32[4] reverse(%p), dimensions={N}",
    "iota_dimension": "f32[4] iota(), iota_dimension=N",
    "window size": "f32[4] reduce-window(%p, %z), window={size=N}, to_apply=%add",
    "window sizes": "f32[4] reduce-window(%p, %z), window={size=1xN}, to_apply=%add",
    "window pad": "f32[4] reduce-window(%p, %z), window={size=1 pad=N_0}, to_apply=%add",
    "padding": "f32[4] pad(%p, %z), padding=N_0",
    "slice": "f32[4] slice(%p), slice={[0:N]}",
    "device": "f32[4] negate(%p), sharding={maximal device=N}",
    "aliasing": (
        'f32[4] custom-call(%p), custom_call_target="x", output_to_operand_aliasing={{}: (N, {})}'
    ),
    "statistics": "f32[4] negate(%p), statistics={visualizing_index=N}",
    "metadata source_line": "f32[4] negate(%p), metadata={source_line=N}",
    "metadata stack_frame_id": "f32[4] negate(%p), metadata={stack_frame_id=N}",
    "sharding metadata": "f32[4] negate(%p), sharding={replicated metadata={source_line=N}}",
    "profile_type": "f32[4] negate(%p), metadata={profile_type={N}}",
}


@pytest.mark.parametrize("big", list(_BIG.values()), ids=list(_BIG))
@pytest.mark.parametrize("root", list(_INTEGER_ROOTS.values()), ids=list(_INTEGER_ROOTS))
def test_integer_attribute_ranges_match_xla(root: str, big: str) -> None:
    text = _ATTR_MODULE.replace("ROOT_TEXT", root.replace("N", big))
    assert our_verdict(text) == xla_verdict(text)


_VALUE_ROOTS = {
    "profile_type 0-3": "f32[4] negate(%p), metadata={profile_type={0,1,2,3}}",
    "profile_type 4": "f32[4] negate(%p), metadata={profile_type={4}}",
    "profile_type -1": "f32[4] negate(%p), metadata={profile_type={-1}}",
    "profile_type 2^32+1": "f32[4] negate(%p), metadata={profile_type={4294967297}}",
    "sharding profile_type 5": (
        "f32[4] negate(%p), sharding={replicated metadata={profile_type={5}}}"
    ),
    "ulps 2^31": "f32[4] exponential(%p), result_accuracy={tolerance={ulps=2147483648}}",
    "ulps 1.5": "f32[4] exponential(%p), result_accuracy={tolerance={ulps=1.5}}",
    "atol -0": "f32[4] exponential(%p), result_accuracy={tolerance={atol=-0.0}}",
    "atol inf": "f32[4] exponential(%p), result_accuracy={tolerance={atol=inf}}",
    "order TOTAL": "pred[4] compare(%p, %p), direction=LT, order=TOTAL",
    "order total": "pred[4] compare(%p, %p), direction=LT, order=total",
    "shuffle rotate": "f32[4] shuffle(%p), dimensions={0}, mode=rotate, shifts={1}",
    "shuffle up": "f32[4] shuffle(%p), dimensions={0}, mode=up, shifts={1}",
    "transpose_a ADJOINT": "f32[2,2] triangular-solve(%q, %q), transpose_a=ADJOINT",
}


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize("root", list(_VALUE_ROOTS.values()), ids=list(_VALUE_ROOTS))
def test_enumerated_and_checked_values_match_xla(root: str) -> None:
    text = _ATTR_MODULE.replace("ROOT_TEXT", root)
    assert our_verdict(text) == xla_verdict(text)


# XLA reads these, then aborts the process as it builds the instruction (so no XLA call here)
_ABORTING_ROOTS = {
    "transpose_a BOGUS": "f32[2,2] triangular-solve(%q, %q), transpose_a=BOGUS",
    "transpose_a lower case": "f32[2,2] triangular-solve(%q, %q), transpose_a=transpose",
    "negative atol": "f32[4] exponential(%p), result_accuracy={tolerance={atol=-1}}",
    "negative rtol": "f32[4] exponential(%p), result_accuracy={tolerance={rtol=-1e-9}}",
    "negative ulps": "f32[4] exponential(%p), result_accuracy={tolerance={ulps=-1}}",
    "ulps 2^63-1": f"f32[4] exponential(%p), result_accuracy={{tolerance={{ulps={2**63 - 1}}}}}",
    "nan atol": "f32[4] exponential(%p), result_accuracy={tolerance={atol=nan}}",
}


@pytest.mark.parametrize("root", list(_ABORTING_ROOTS.values()), ids=list(_ABORTING_ROOTS))
def test_values_xla_aborts_on_are_rejected(root: str) -> None:
    assert our_verdict(_ATTR_MODULE.replace("ROOT_TEXT", root)) is None


_STRING_PLACES = {
    "custom_call_target": 'f32[4] custom-call(%p), custom_call_target="aESC"',
    "metadata": 'f32[4] negate(%p), metadata={op_name="aESC"}',
    "metadata single-quoted": "f32[4] negate(%p), metadata={op_name='aESC'}",
    "sharding metadata": 'f32[4] negate(%p), sharding={replicated metadata={op_name="aESC"}}',
    "backend_config string": 'f32[4] negate(%p), backend_config="aESC"',
    "backend_config JSON": 'f32[4] negate(%p), backend_config={"a":"aESC"}',
    "frontend_attributes": 'f32[4] negate(%p), frontend_attributes={k="aESC"}',
    "origin": 'f32[4] negate(%p), origin={{"aESC"}}',
}
_ESCAPES = {
    "\\n": "\\n",
    "\\?": "\\?",
    "\\x41": "\\x41",
    "\\u00e9": "\\u00e9",
    "\\U0010FFFF": "\\U0010FFFF",
    "\\q": "\\q",
    "\\x": "\\x",
    "\\x141": "\\x141",
    "\\400": "\\400",
    "\\u12": "\\u12",
    "\\ud800": "\\ud800",
    "\\udfff": "\\udfff",
    "\\U00110000": "\\U00110000",
}


@pytest.mark.parametrize("escape", list(_ESCAPES.values()), ids=list(_ESCAPES))
@pytest.mark.parametrize("root", list(_STRING_PLACES.values()), ids=list(_STRING_PLACES))
def test_string_escapes_match_xla(root: str, escape: str) -> None:
    text = _ATTR_MODULE.replace("ROOT_TEXT", root.replace("ESC", escape))
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize("escape", list(_ESCAPES.values()), ids=list(_ESCAPES))
@pytest.mark.parametrize("place", ["FileNames", "FunctionNames", "execution_thread"])
def test_module_string_escapes_match_xla(place: str, escape: str) -> None:
    if place == "execution_thread":
        text = (
            "HloModule m\n%t (a: f32[4]) -> f32[4] {\n  ROOT %a = f32[4] parameter(0)\n}, "
            f'execution_thread="a{escape}"\n'
            + NEGATE_MODULE.replace("negate(%p)", "call(%p), to_apply=%t")
        )
    else:
        rows = {"FileNames": "", "FunctionNames": ""}
        rows[place] = f'1 "a{escape}"\n'
        text = (
            f"HloModule m\nFileNames\n{rows['FileNames']}FunctionNames\n{rows['FunctionNames']}"
            "FileLocations\nStackFrames\n" + NEGATE_MODULE
        )
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize(
    "metadata",
    [
        '{,op_name="a"}',
        '{ , op_name="a" source_line=1}',
        "{,source_line=1}",
        "{,}",
        '{,,op_name="a"}',
        '{op_name="a",,op_type="b"}',
        '{op_name="a",}',
        "{profile_type={-1}}",
        "{profile_type={1,3}}",
    ],
)
@pytest.mark.parametrize("where", ["instruction", "sharding"])
def test_metadata_details_match_xla(where: str, metadata: str) -> None:
    attribute = (
        f"metadata={metadata}"
        if where == "instruction"
        else f"sharding={{replicated metadata={metadata}}}"
    )
    text = _ATTR_MODULE.replace("ROOT_TEXT", f"f32[4] negate(%p), {attribute}")
    assert our_verdict(text) == xla_verdict(text)


_TUPLE_RESULT = (
    "ENTRY %e (p: f32[4]) -> (f32[4], (f32[4], f32[4])) {\n  %p = f32[4] parameter(0)\n"
    "  %t = (f32[4], f32[4]) tuple(%p, %p)\n"
    "  ROOT %r = (f32[4], (f32[4], f32[4])) tuple(%p, %t)\n}\n"
)


@pytest.mark.parametrize("index", ["{}", "{0}", "{1, 1}", "{1,}", "{-1}", "{2}", "{0,0}", "{1,2}"])
@pytest.mark.parametrize("result", ["array", "tuple"])
def test_alias_output_index_is_of_the_result_as_in_xla(result: str, index: str) -> None:
    body = NEGATE_MODULE if result == "array" else _TUPLE_RESULT
    text = f"HloModule m, input_output_alias={{ {index}: (0, {{}}) }}\n" + body
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize("flags", ["{}", "{true}", "{true,false}", "{true,false,true}"])
@pytest.mark.parametrize(
    "shape", ["f32[4]", "()", "(f32[4], (f32[2], s32[]))", "(f32[4], token[])"]
)
def test_parameter_replication_counts_leaf_buffers_as_xla(shape: str, flags: str) -> None:
    text = (
        f"HloModule m\n%c (a: {shape}) -> {shape} {{\n"
        f"  ROOT %a = {shape} parameter(0), parameter_replication={flags}\n}}\n"
        f"ENTRY %e (p: {shape}) -> {shape} {{\n  %p = {shape} parameter(0)\n"
        f"  ROOT %r = {shape} call(%p), to_apply=%c\n}}\n"
    )
    assert our_verdict(text) == xla_verdict(text)


def test_parameter_replication_is_checked_again_for_another_shape() -> None:
    """The same attribute list on a parameter of another shape (it is not cached by its text)."""
    text = (
        "HloModule m\nENTRY %e (p: f32[4], q: (f32[4], f32[4])) -> f32[4] {\n"
        "  %p = f32[4] parameter(0), parameter_replication={true}\n"
        "  %q = (f32[4], f32[4]) parameter(1), parameter_replication={true}\n"
        "  ROOT %r = f32[4] negate(%p)\n}\n"
    )
    assert our_verdict(text) is None
    assert xla_verdict(text) is None


_DEEP = {depth: '{"a":' * depth + "1" + "}" * depth for depth in (16, 17, 64)}


@pytest.mark.parametrize(
    "value",
    [
        *(f"backend_config={j}" for j in _DEEP.values()),
        *(f'frontend_attributes={{a={j}, b="x"}}' for j in _DEEP.values()),
        "backend_config=" + _DEEP[64][:-1],
        "frontend_attributes={a=" + _DEEP[17][:-1] + "}",
        'frontend_attributes={a={"k":"}"}}',
        'frontend_attributes={a="x",}',
        'frontend_attributes={a="x" b="y"}',
        'backend_config={"a":1}}',
    ],
)
def test_json_values_nest_as_deep_as_in_xla(value: str) -> None:
    text = _ATTR_MODULE.replace("ROOT_TEXT", f"f32[4] negate(%p), {value}")
    assert our_verdict(text) == xla_verdict(text)
