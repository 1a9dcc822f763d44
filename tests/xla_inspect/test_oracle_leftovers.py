"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on frame-table rows,
comments holding brackets, sharding details and what is left after an instruction."""

from __future__ import annotations

import pytest

from kata_harness import versions
from xla_inspect.errors import HloParseError
from xla_inspect.parse import parse_hlo

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


# -- frame tables, comments holding brackets, sharding details, leftovers ----------------------

_TABLES = (
    'FileNames\n1 "a.py"\nFunctionNames\n1 "f"\nFileLocations\n'
    "1 {file_name_id=1 function_name_id=1 line=2 end_line=2 column=0 end_column=0}\n"
    "StackFrames\n1 {file_location_id=1 parent_frame_id=0}\n"
)
_TWO = "%t (a: f32[4]) -> f32[4] {\n  ROOT %a = f32[4] parameter(0)\n}\n"


def _stack_frames(row: str) -> str:
    return (
        f"HloModule m\nFileNames\nFunctionNames\nFileLocations\nStackFrames\n{row}\n"
        + NEGATE_MODULE
    )


def _file_names(row: str) -> str:
    return (
        f"HloModule m\nFileNames\n{row}\nFunctionNames\nFileLocations\nStackFrames\n"
        + NEGATE_MODULE
    )


@pytest.mark.parametrize(
    "text",
    [
        "HloModule m\n" + _TABLES + NEGATE_MODULE,
        _TABLES + NEGATE_MODULE,
        "HloModule m\n" + NEGATE_MODULE + _TABLES,
        "HloModule m\n" + _TWO + _TABLES + NEGATE_MODULE,
        _TABLES + "HloModule m\n" + NEGATE_MODULE,
        "HloModule m\n" + _TABLES + _TABLES + NEGATE_MODULE,
        "HloModule m\n" + _TABLES.replace("\n", " ") + "\n" + NEGATE_MODULE,
        'HloModule m, is_scheduled=true FileNames 1 "a" FunctionNames FileLocations StackFrames '
        + NEGATE_MODULE,
        'HloModule m\nFileNames // x\n// c\n1 /* k */ "a.py"\nFunctionNames\nFileLocations\n'
        "StackFrames\n" + NEGATE_MODULE,
        "HloModule m\nFileNames\n" + NEGATE_MODULE,
        "HloModule m\n%FileNamesX (a: f32[4]) -> f32[4] {\n  ROOT %a = f32[4] parameter(0)\n}\n"
        + NEGATE_MODULE,
        _file_names('1 "a\nb"'),
        _file_names("1 'a'"),
        _file_names('1 "a\\qb"'),
        _file_names('1 "a" "b"'),
        _file_names("1 abc"),
        _file_names("1"),
        _file_names('1 2 "a"'),
        _file_names('1 "abc'),
        *(
            _file_names(f'{row} "a"')
            for row in (
                "-1",
                "+1",
                "0x1",
                "1.5",
                "2147483648",
                "18446744073709551615",
                "18446744073709551616",
                "-9223372036854775808",
                "-9223372036854775809",
            )
        ),
        *(
            _stack_frames(row)
            for row in (
                "1 {file_location_id=1, parent_frame_id=0}",
                "1 {file_location_id=1, parent_frame_id=0,}",
                "1 {,file_location_id=1 parent_frame_id=0}",
                "1 {,,file_location_id=1 parent_frame_id=0}",
                "1 {file_location_id=1,, parent_frame_id=0}",
                "1 {,}",
                "1 {}",
                "1",
                "1 {file_location_id=1}",
                "1 {file_location_id=1 parent_frame_id=0 parent_frame_id=0}",
                "1 {file_location_id=1 parent_frame_id=0 x=1}",
                "1 /*x*/ {/*y*/file_location_id=1 /*z*/ parent_frame_id=0 /*w*/}",
                "1\n{\nfile_location_id=1\nparent_frame_id=0\n}",
                "1 {file_location_id = 1 parent_frame_id=0}",
                "1 {file_location_id=2147483647 parent_frame_id=-2147483648}",
                "1 {file_location_id=2147483648 parent_frame_id=0}",
                "1 {file_location_id=-2147483649 parent_frame_id=0}",
                "1 {file_location_id=99999999999999999999 parent_frame_id=0}",
                "1 {file_location_id=+1 parent_frame_id=0}",
                '1 {file_location_id="1" parent_frame_id=0}',
                "2147483648 {file_location_id=1 parent_frame_id=0}",
                "1 {file_location_id=1 parent_frame_id=0",
            )
        ),
    ],
)
def test_frame_table_placement_and_tokens_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


def _body(*lines: str) -> str:
    return "HloModule m\nENTRY e {\n" + "".join(f"  {line}\n" for line in lines) + "}\n"


def _signature(shape: str) -> str:
    return f"HloModule m\nENTRY e (a: {shape}) -> {shape} {{\n  ROOT a = {shape} parameter(0)\n}}\n"


_P2 = "p = f32[2]{0} parameter(0)"


@pytest.mark.parametrize(
    "operands",
    ["p%", "p%%", "%p%", "%%p", "p, p%", "p%, p", "%p, %p", "%p,%p", "p ,%p", "% p", "p %"]
    + ["f32[2]{0} %p", "f32[2]{0} p%", "f32[2]{0} %p, f32[2]{0} %p%"],
)
def test_percent_signs_in_operand_lists_match_xla(operands: str) -> None:
    opcode = "add" if "," in operands else "negate"
    text = _body(_P2, f"ROOT n = f32[2]{{0}} {opcode}({operands})")
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize(
    "text",
    [
        *(
            _body(_P2, f"ROOT n = f32[2]{{0}} {'add' if ',' in ops else 'negate'}({ops})")
            for ops in ("p // ", "p /* ) */", "p // )\n)", "p, // \n p", "p, /* ) */ p", "p /")
        ),
        *(
            maker(shape)
            for shape in (
                "f32[2]{0 /* } */}",
                "f32[2]{0:T(2) /* } */}",
                "f32[2]{0 // }\n}",
                "f32[2]{0 /* } */",
                "f32[2,3]{1, /*}*/ 0}",
                "f32[2]{0:T(2)// }\n}",
            )
            for maker in (lambda s: _body(f"ROOT c = {s} parameter(0)"), _signature)
        ),
        *(
            _body(f"ROOT c = f32[2]{{0}} {x}")
            for x in (
                "parameter(0 // )\n)",
                "parameter(0 /* ) */)",
                "constant({1, 2 // })\n})",
                "constant({1, 2 /* }) */})",
                "constant({1, 2} // )\n)",
            )
        ),
    ],
)
def test_comments_holding_brackets_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


def _negate_with(attribute: str) -> str:
    return NEGATE_MODULE.replace("negate(%p)", f"negate(%p), {attribute}")


def _domain(entry: str, exit_: str) -> str:
    return NEGATE_MODULE.replace(
        "negate(%p)", f'domain(%p), domain={{kind="sharding", entry={entry}, exit={exit_}}}'
    )


_ONE_SHARDINGS = (
    "{bogus}",
    "{replicated}",
    "{maximal device=0}",
    "{maximal}",
    "{devices=[2,1]0,1}",
    "{devices=[2,1]0,1,2}",
    "{}",
    "{{replicated},{replicated}}",
    "{replicated metadata={op_name='}'}}",
    "{devices=[2,2]<=[4] last_tile_dims={manual}}",
)


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize(
    "text",
    [
        *(
            _negate_with(f"sharding={{devices={tile} last_tile_dims={{{types}}}}}")
            for tile, types in (
                ("[2,2]<=[4]", "manual"),
                ("[2,2]<=[4]", "manual, replicated"),
                ("[4]<=[4]", "manual"),
                ("[2,2]0,1,2,3", "manual, replicated"),
                ("[2,1,2]<=[4]", "manual, replicated"),
                ("[2,2]<=[4]", ""),
            )
        ),
        *(
            _negate_with(f"sharding={s}")
            for s in (
                "{replicated metadata={op_name='}'}}",
                "{replicated metadata={op_name='{'}}",
                "{devices=[2,2]<=[4] metadata={op_name='a}b' op_type=\"}\"}}",
                "{{replicated metadata={op_name='}'}}, {maximal device=0}}",
                "{replicated metadata={op_name='\\''}}",
                "{replicated metadata={op_name='\"'}}",
            )
        ),
        *(_domain(s, "{replicated}") for s in _ONE_SHARDINGS),
        *(_domain("{replicated}", s) for s in _ONE_SHARDINGS),
    ],
)
def test_sharding_details_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize(
    "sharding",
    [
        "{devices=[2,2]<=[4] last_tile_dims={manual, replicated, manual}}",
        "{devices=[4]<=[4] last_tile_dims={manual, manual}}",
    ],
)
def test_more_last_tile_dims_than_tile_dimensions_are_rejected(sharding: str) -> None:
    """XLA fails on these (std::bad_alloc): the reader alone is asked."""
    with pytest.raises(HloParseError) as raised:
        parse_hlo(_negate_with(f"sharding={sharding}"))
    assert len(str(raised.value).splitlines()) == 1


def _custom_call_literal(literal: str) -> str:
    return NEGATE_MODULE.replace(
        "negate(%p)", f'custom-call(%p), custom_call_target="x", literal={literal}'
    )


@pytest.mark.parametrize(
    "literal",
    ["s8[] 300", "s8[] 127", "s8[] -129", "f32[] 1.5", "pred[] true", "pred[] 2", "u8[] -1"]
    + ["f32[2] {1, 2}", "f32[2]{0} {1, 2}", "f32[2]{0} {1, 2, 3}", "f32[2]{0} {1}", "f32[0] {}"]
    + ["f32[2,2] {{1,2},{3,4}}", "f32[2,2]{1,0} {{1,2},{3,4}}", "f32[2,2] {{1,2},{3}}"]
    + ["f32[] (1)", "f32[]", "f32[] 1 2", "s32[] 0x10", "f16[] 70000", "s32[] 2147483648"]
    + ["f32[2]{0:T(2)} {1, 2}", "f32[1] {}", "c64[] (1, 2)", "f32[] /*x*/ 1", "f32[]{} 1"]
    + ["s32[] 1.5", "f32[2]{0}{1,2}", "(f32[], s32[]) (f32[] 1, s32[] 2)", "(f32[]) (f32[] 1)"],
)
def test_custom_call_literals_match_xla(literal: str) -> None:
    text = _custom_call_literal(literal)
    assert our_verdict(text) == xla_verdict(text)


@pytest.mark.parametrize("literal", ["f32[2]{1} {1,2}", "f32[2,2]{0,0} {{1,2},{3,4}}"])
def test_custom_call_literal_layouts_xla_aborts_on_are_rejected(literal: str) -> None:
    """XLA's parser aborts on a literal's layout that is no permutation: the reader alone."""
    with pytest.raises(HloParseError) as raised:
        parse_hlo(_custom_call_literal(literal))
    assert len(str(raised.value).splitlines()) == 1
