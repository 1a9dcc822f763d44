"""The reader agrees with XLA's own C++ parser on every corpus module and text fixture.

The oracle is jaxlib's private `jaxlib._hlo.hlo_module_from_text`, asked only in a helper
process (kata_harness.oracles: an abort there is a verdict, not a dead worker). Its opcodes
are enum members (`kExp` for `exponential`), so each instruction's opcode is read from the
C++ printer's canonical `name = shape opcode(...)` text instead, except for the generic async
ops, which the printer names after the op they wrap (`abs-start`): those are counted by enum
(`async-start`), as the hand-written fixture spells them.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.hlo.attributes import BAD_ATTRIBUTE_VALUE, value_syntax
from xla_inspect.hlo.opcodes import ANY_INSTRUCTION_ATTRIBUTES, OPCODE_ARITY, OPCODE_ATTRIBUTES
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )

HERE = Path(__file__).parent
jaxlib_version = importlib.metadata.version("jaxlib")
TEXT_FILES = sorted(HERE.glob("corpus/*.hlo")) + sorted(HERE.glob("fixtures/*.hlo"))
# each gated where it is written in syntax older parsers lack
TEXT_PARAMS = [
    pytest.param(p, marks=versions.requires_jax(versions.NEWER_SYNTAX_GATE))
    if versions.uses_newer_hlo_syntax(p.read_text())
    else p
    for p in TEXT_FILES
]
_PRINTED_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")
_ASYNC = {"kAsyncStart": "async-start", "kAsyncUpdate": "async-update", "kAsyncDone": "async-done"}


def _oracle(text: str) -> tuple[int, Counter[str]]:
    module = oracles.xla_module(text)
    counts: Counter[str] = Counter()
    for computation in module.computations:
        for instruction in computation.instructions:
            opcode = _ASYNC.get(instruction.opcode)
            if opcode is None:
                printed = _PRINTED_OPCODE.search(instruction.printed)
                assert printed is not None, instruction.printed
                opcode = printed.group(1)
            counts[opcode] += 1
    return len(module.computations), counts


@pytest.mark.parametrize("path", TEXT_PARAMS, ids=lambda p: p.name)
def test_reader_matches_xla_parser(path) -> None:
    text = path.read_text()
    module = parse_hlo(text)
    computations, counts = _oracle(text)
    assert len(module.computations) == computations
    assert sum(len(c.instructions) for c in module.computations) == counts.total()
    assert opcode_counts(module) == counts


@pytest.mark.parametrize("path", TEXT_PARAMS, ids=lambda p: p.name)
def test_long_form_with_operand_shapes_matches_xla(path) -> None:
    """XLA's default printer writes each operand's shape before it (`add(f32[2]{0} %a, ...)`),
    as in its logs: the reader takes that form too, and still checks each shape against the
    operand's (a wrong one written in is rejected, as XLA rejects it)."""
    long_form = oracles.xla_module(path.read_text()).long_text
    assert _our_verdict(long_form) == _xla_verdict(long_form) is not None
    typed = re.search(r"[a-z]\((pred|[a-z]+[0-9]+)\[", long_form)
    if typed is not None:  # the first operand shape written, made another element type's
        other = "s8" if typed.group(1) != "s8" else "u8"
        wrong = long_form[: typed.start(1)] + other + long_form[typed.end(1) :]
        assert _our_verdict(wrong) == _xla_verdict(wrong) is None


# -- the bank: reformatted-valid and invalid modules, each checked against XLA's verdict --------

BANK = sorted((HERE / "fixtures" / "bank").glob("*.hlo"))
# a bank file whose first line says so gets another verdict from parsers before jaxlib 0.12
NEWER_VERDICT = "// verdict of jaxlib 0.12:"


def _bank_param(path: Path, value: object = None) -> object:
    """`value` (default: the path) as a parameter, gated to jaxlib 0.12 where the file says so."""
    value = path if value is None else value
    if path.read_text().startswith(NEWER_VERDICT):
        return pytest.param(value, marks=versions.requires_jax("xla-attribute-table"))
    return value


def _xla_verdict(text: str) -> tuple[int, Counter[str]] | None:
    """XLA's computation count and opcode counts, or None when its parser rejects `text`."""
    try:
        return _oracle(text)
    except Exception:  # noqa: BLE001 - the bindings raise a plain RuntimeError/ValueError
        return None


def _our_verdict(text: str) -> tuple[int, Counter[str]] | None:
    try:
        module = parse_hlo(text)
    except HloParseError as exc:
        assert exc.line_no >= 1 and exc.expected and "\n" not in str(exc)
        return None
    return len(module.computations), opcode_counts(module)


@pytest.mark.parametrize("path", [_bank_param(p) for p in BANK], ids=lambda p: p.name)
def test_bank_verdicts_match_xla(path) -> None:
    text = path.read_bytes().decode()  # bytes: keep '\r\n' where a fixture has it
    expected = _xla_verdict(text)
    # the file name states XLA's verdict, so a fixture that stops saying what it says fails
    assert (expected is not None) == path.name.startswith("valid_")
    assert _our_verdict(text) == expected


def test_bank_has_both_kinds() -> None:
    names = [p.name for p in BANK]
    assert sum(n.startswith("valid_") for n in names) >= 20
    assert sum(n.startswith("invalid_") for n in names) >= 25


# -- hypothesis: corpus modules with whitespace, comments and '%' changed between tokens ------

# one token of XLA's lexer, as far as reformatting goes: attribute names keep their '=' and
# parameter names their ':' (no space allowed there), dim labels and numbers stay whole
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|/\*.*?\*/|[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}'
    r"|%?[A-Za-z_][\w.\-]*(?:#[0-9]+)?[=:]?|-?[0-9][\w.+\-]*|->|<=|\.\.\.|\S",
    re.S,
)
SEPARATORS = [" ", "\n", "\n\t  ", " /* note */ ", " // note\n", "/**/", "\r\n", "  \n\n"]
REFORMAT_SOURCES = [
    text
    for text in [
        (HERE / "corpus" / name).read_text()
        for name in (
            "donated_state.opt.hlo",
            "control_flow.unopt.hlo",
            "sort_gather_scatter.before.hlo",
            "shard_map_collectives.opt.hlo",
            "dtypes.opt.hlo",
            "linalg.unopt.hlo",
        )
    ]
    + [(HERE / "fixtures" / "features.hlo").read_text()]
    # sources in newer syntax only where XLA's parser reads it (a gate, listed in the header)
    if versions.holds(versions.NEWER_SYNTAX_GATE) or not versions.uses_newer_hlo_syntax(text)
]


def _body_start(text: str) -> int:
    """Offset of the first computation header (stack-frame table rows are line-based)."""
    header = re.search(r"^(?:ENTRY )?%?[\w.\-]+ ?(?:\(.*\) -> .*)?\{$", text, re.M)
    assert header is not None
    return header.start()


@st.composite
def reformatted(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(REFORMAT_SOURCES))
    start = _body_start(text)
    tokens = list(_TOKEN.finditer(text, start))
    edits: dict[int, str] = {}
    for _ in range(draw(st.integers(1, 12))):
        k = draw(st.integers(0, len(tokens) - 2))
        edits[tokens[k].end()] = draw(st.sampled_from(SEPARATORS))
    drop = draw(st.sets(st.integers(0, len(tokens) - 1), max_size=20))
    pieces, at = [text[:start]], start
    for k, token in enumerate(tokens):
        pieces.append(text[at : token.start()])
        word = token.group()
        pieces.append(word[1:] if k in drop and word[:1] == "%" and word[-1] not in "=:" else word)
        pieces.append(edits.get(token.end(), ""))
        at = token.end()
    pieces.append(text[at:])
    return "".join(pieces)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(reformatted())
def test_reformatted_corpus_modules_match_xla(text: str) -> None:
    assert _our_verdict(text) == _xla_verdict(text)


# one mistake of a kind XLA's parser rejects: (pattern, replacement) applied at one match
MISTAKES = [
    (
        re.compile(r"(?<= )([a-z]{2})([a-z])([a-z\-]*)(?=\()"),
        lambda m: m[1] + m[3][:1] + m[2] + m[3][1:],
    ),
    (re.compile(r"parameter\(([1-9])\)"), lambda m: "parameter(0)"),
    (re.compile(r"\{1,0\}(?= )"), lambda m: "{0}"),
    (
        re.compile(r" (add|multiply|subtract|maximum)\(([^,()]+), "),
        lambda m: f" {m[1]}({m[2]}, {m[2]}, ",
    ),
    (
        re.compile(r" (negate|exponential|copy|convert)\(([^,()]+)\)"),
        lambda m: f" {m[1]}({m[2]}, {m[2]})",
    ),
    (re.compile(r"constant\(([0-9.]+)\)"), lambda m: f"constant({m[1]}x)"),
    (re.compile(r"constant\(([0-9.]+)\)"), lambda m: "constant({" + m[1] + "})"),
    # an attribute misspelled, or one another opcode takes
    (re.compile(r"(?<=, )(dimensions|to_apply|calls|index)="), lambda m: m[1][:-1] + "="),
    (
        re.compile(r" (add|multiply|negate|copy)(\([^()]*\))"),
        lambda m: f" {m[1]}{m[2]}, kind=kLoop",
    ),
]


@st.composite
def broken(draw: st.DrawFn) -> str:
    text = draw(reformatted())
    pattern, replace = draw(st.sampled_from(MISTAKES))
    matches = list(pattern.finditer(text, _body_start(text)))
    if not matches:
        return text
    match = draw(st.sampled_from(matches))
    return text[: match.start()] + replace(match) + text[match.end() :]


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(broken())
def test_broken_corpus_modules_match_xla(text: str) -> None:
    assert _our_verdict(text) == _xla_verdict(text)


@pytest.mark.parametrize(
    "name",
    [
        "invalid_misspelled_broadcast.hlo",
        "invalid_misspelled_reduce.hlo",
        "invalid_misspelled_all_reduce.hlo",
        "invalid_misspelled_collective_permute.hlo",
        "invalid_jax_primitive_lt.hlo",
        "invalid_unterminated_block_comment.hlo",
        "invalid_instruction_name_glued_to_eq.hlo",
        "invalid_attribute_misspelled_dimensions.hlo",
        "invalid_attribute_of_another_opcode.hlo",
        "invalid_attribute_kind_on_reduce.hlo",
        "invalid_attribute_misspelled_to_apply.hlo",
        "invalid_attribute_unknown_after_metadata.hlo",
    ],
)
def test_error_points_where_xla_does(name: str) -> None:
    text = (HERE / "fixtures" / "bank" / name).read_text()
    with pytest.raises(Exception) as xla:  # noqa: PT011 - the bindings' own error type
        oracles.xla_module(text)
    where = re.search(r"was parsing (\d+):(\d+)", str(xla.value))
    assert where is not None, xla.value
    with pytest.raises(HloParseError) as ours:
        parse_hlo(text)
    assert (ours.value.line_no, ours.value.col) == (int(where[1]), int(where[2]))


# -- the attributes each opcode takes, as XLA's parser lists them -------------------------------

_ALLOWED = re.compile(r'unexpected attribute "zzz_probe"\. Allowed attributes: ([^\n]*)')
_PROBE_MODULE = """HloModule m
c {
  x = f32[2,3] parameter(0)
  ROOT n = f32[2,3] negate(x)
}
ENTRY e {
  p0 = f32[2,3] parameter(0)
  p1 = f32[2,3] parameter(1)
  p2 = f32[2,3] parameter(2)
  p3 = f32[2,3] parameter(3)
  p4 = f32[2,3] parameter(4)
  pr = pred[] parameter(5)
  p0i = s32[] parameter(6)
  ROOT r = SHAPE OPCODE(OPERANDS), EXTRA ATTRIBUTE
}
"""


def _probe(opcode: str, branches: bool = False, attribute: str = "zzz_probe=1") -> str:
    """A module whose last instruction is `opcode` with `attribute` (by default one no opcode
    takes; for conditional, its computations given as `branch_computations` if `branches`)."""
    arity = OPCODE_ARITY[opcode]
    operands = ", ".join(f"p{i}" for i in range(arity if arity is not None else 1))
    shape, extra = "f32[2,3]", ""
    if opcode == "parameter":
        operands = "7"
    elif opcode == "constant":
        operands = "{...}"
    elif opcode in ("tuple", "infeed", "recv"):
        shape = "(f32[2,3])"
    elif opcode == "conditional":
        operands, extra = "pr, p0, p1", "true_computation=c, false_computation=c, "
        if branches:
            operands, extra = "p0i, p0, p1", "branch_computations={c, c}, "
    elif opcode in ("async-start", "async-update"):
        shape, extra = "((f32[2,3]), f32[2,3], s32[])", "calls=c, "
    parts = {
        "SHAPE": shape,
        "OPCODE": opcode,
        "OPERANDS": operands,
        "EXTRA ": extra,
        "ATTRIBUTE": attribute,
    }
    text = _PROBE_MODULE
    for key, value in parts.items():
        text = text.replace(key, value)
    return text


# the jaxlib the table was read from; another may list attributes it added or dropped since
_TABLE_JAXLIB = "0.12.0.1"


@versions.requires_jax("xla-attribute-table")
@pytest.mark.parametrize("opcode", sorted(OPCODE_ATTRIBUTES))
def test_attribute_table_is_what_xla_lists(opcode: str) -> None:
    """XLA's parser names the attributes an opcode takes when it meets one it does not; the
    reader's table (and so what it rejects) must list the same ones."""
    xla_allows: frozenset[str] = frozenset()
    for text in {_probe(opcode), _probe(opcode, branches=True)}:
        with pytest.raises(Exception) as xla:  # noqa: PT011 - the bindings' own error type
            oracles.xla_module(text)
        listed = _ALLOWED.search(str(xla.value))
        assert listed is not None, str(xla.value)
        xla_allows |= frozenset(listed[1].split(", "))
        with pytest.raises(HloParseError) as ours:
            parse_hlo(text)
        assert "'zzz_probe'" in ours.value.expected
    if xla_allows != OPCODE_ATTRIBUTES[opcode] and jaxlib_version != _TABLE_JAXLIB:
        pytest.skip(
            f"jaxlib {jaxlib_version} lists {sorted(xla_allows ^ OPCODE_ATTRIBUTES[opcode])} "
            f"differently for {opcode} (the table is read from jaxlib {_TABLE_JAXLIB})"
        )
    assert xla_allows == OPCODE_ATTRIBUTES[opcode]


# Values XLA's parser rejects (it stops before the attribute after them) and values it reads
# past, per kind of value the reader checks; several spellings each, from what people write.
_INT_VALUES = (["zz", "true", "{1}", "1.5"], ["0", "-2", "12"])
_VALUES_OF_KIND = {
    "a braced list of integers like {0,1}": (
        ["zz", "1", "{1,}", "{1 2}", "{a}"],
        ["{0}", "{}", "{0, 1}", "{ -1 }"],
    ),
    "an integer": _INT_VALUES,
    "true or false": (["zz", "1", "TRUE", "{true}"], ["true", "false"]),
}
_VALUES_OF_NAME = {
    "kind": (["zz", "kloop", "loop"], ["kLoop", "kInput", "kOutput", "kCustom"]),
    "direction": (["zz", "lt", "Lt"], ["EQ", "NE", "GE", "GT", "LE", "LT"]),
    "epsilon": (
        ["zz", "true", "{1}", ".5", "+1", "1e39", "inf"],
        ["1", "1.5", "-2", "1e-3", "5.", "nan"],
    ),
    "window": (
        [
            "{size=3x3, stride=2x2}",
            "{size=3x3 stride=2}",
            "{size=3x3 size=3x3}",
            "{size=3x3 pad=0x1}",
            "{size=3 pad=0_1_2}",
            "{size=3x-3}",
            "{size=3x3 foo=1}",
            "size=3x3",
            "{stride=2}",
            "{size=3x3x}",
            "{size=3x3 rhs_reversal=1}",
        ],
        [
            "{size=3x3}",
            "{size=3}",
            "{}",
            "{size=3x3 stride=2x2 pad=0_1x1_0 lhs_dilate=1x1 rhs_dilate=2x2 rhs_reversal=0x1}",
            "{ size=3x3  stride=1x1 }",
            "{size=3 pad=-1_-2}",
            "{size=-3}",
        ],
    ),
    "dim_labels": (
        [
            "b01f_01io->b0f",
            "b00f_01io->b01f",
            "b02f_01io->b01f",
            "b01f-01io->b01f",
            "b01f_01io_b01f",
            '"b01f_01io->b01f"',
            "bf01_01io->bf01x",
        ],
        [
            "b01f_01io->b01f",
            "bf_io->bf",
            "01bf_01oi->bf01",
            "b?f_?io->b?f",
            "b012f_012io->b012f",
            "b0f_0io->0bf",
        ],
    ),
    "replica_groups": (
        [
            "{0,1}",
            "{{0,1},}",
            "{{0,1}{2,3}}",
            "{{a}}",
            "[2,2]",
            "[2,2]<=[2,2]",
            "[4]<=[4]",
            "[2,2,1]<=[4]",
            "[2,2]<=[4]T(0)",
            "[2,2]<=[2,2]T(2,0)",
            "[2,2]<=[2,2]T(-1,0)",
            "[2,2]<=[3]",
            "mesh['a'=2,'b'=2], device_ids=([2,2]T(1,0))",
        ],
        [
            "{}",
            "{{0,1},{2,3}}",
            "{ {0, 1}, {2, 3} }",
            "{{}}",
            "[2,2]<=[4]",
            "[1,4]<=[4]",
            "[2,2]<=[2,2]T(1,0)",
            "[2, 2] <= [2 ,2] T( 1 , 0 )",
            "[2,2]<=[2,2]T(1)",
            "mesh['a'=2,'b'=2], device_ids=([2,2]T(1,0)) {'b'}",
            "mesh['a'=2,'b'=2] {'b'}",
            "mesh['a'=2,'b'=2], device_ids= ([2,2]T(1,0)) {'b'}",
        ],
    ),
    "source_target_pairs": (
        ["{0,1}", "{{0,1},}", "{{0,1}{1,0}}", "[2,2]<=[4]", "{{a,b}}"],
        ["{}", "{{0,1},{1,0}}", "{ {0,1} , {1,0} }", "{{-1,0}}"],
    ),
    "sharding": (
        [
            "replicated",
            "{replicate}",
            '{replicated, metadata={op_name="a"}}',
            "{maximal}",
            "{device=0}",
            "{devices=[2,1]0}",
            "{devices=[1,1]0}",
            "{devices=[2,1]0,1,2}",
            "{devices=[2,1]<=[3]}",
            "{devices=[3]<=[2]}",
            "{devices=[2,2]<=[2,2]}",
            "{devices=[2,1]<=[2]T(0)}",
            "{devices=[2,1]<=[2] last_tile_dims={foo}}",
            "{replicated devices=[2,1]0,1}",
            "{{replicated},}",
            "{{replicated} {manual}}",
            "{shard_as 0}",
            "{replicated shard_as}",
            "{mesh}",
            '{maximal device=0 metadata={op_name="a""a"}}',
            '{replicated metadata={op_naame="a"}}',
            "{replicated metadata={op_name={0}}}",
            '{replicated metadata={op_name="a",}}',
        ],
        [
            "{replicated}",
            "{ replicated }",
            "{maximal device=0}",
            "{maximal device=-1}",
            "{manual}",
            "{unknown}",
            "{devices=[2,1]0,1}",
            "{devices=[2,1]1,0}",
            "{devices=[2,1]<=[2]}",
            "{devices=[2,2]<=[2,2]T(1,0)}",
            "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
            "{devices=[2,1,2]<=[4] last_tile_dims={manual}}",
            "{replicated shard_as 0}",
            "{devices=[2,1]<=[2] shard_like 1}",
            '{replicated metadata={op_name="a"}}',
            '{replicated metadata={op_name="a", op_type="b" source_line=3}}',
            "{replicated metadata={profile_type={1,2} stack_frame_id=1}}",
            "{}",
            "{{replicated}}",
            "{{replicated}, {maximal device=1}}",
            "{mesh['a'=2], [{'a'}, {}]}",
            "{maximal_mesh[device_id=0]}",
        ],
    ),
    "padding": (
        ["0x0", "0", "{0_0x1_1}", "0_0x1", "0_0_0_0", "0_0_-1", "0_0x", "0_0 x1_1"],
        ["0_0x1_1", "0_0_0x1_1_1", "0_0", "-1_2x0_0_1", "0_-1_1"],
    ),
    "slice": (
        ["[0:4]", "{[0]}", "{[0,4]}", "{[:4]}", "{[0:4:1:1]}", "{[0:4],}", "{[0:4][1:8]}"],
        ["{[0:4], [1:8:2]}", "{}", "{[0:4]}", "{[-1:4]}", "{ [0 : 4] , [1:8:2] }"],
    ),
    "operand_precision": (
        ["default", "{foo}", "{default,}", "{HIGH, PACKED_NIBBLE}"],
        ["{default,highest}", "{DEFAULT, HIGHEST}", "{high}", "{}", "{Default}"],
    ),
    "fft_type": (["fft", "rfft", "DFT"], ["FFT", "IFFT", "RFFT", "IRFFT"]),
    "type": (
        ["float", "totalorder", "INT", "PARTIALORDER"],
        ["FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"],
    ),
    "convolution_kind": (["FPROP", "bprop"], ["fprop", "wgrad", "dgrad", "unset"]),
    "mode": (
        ["CROSS_REPLICA", "FLATTENED_ID", "kCrossReplica", "foo"],
        ["cross_replica", "cross_partition", "cross_replica_and_partition", "flattened_id"],
    ),
    "api_version": (
        ["ORIGINAL", "typed_ffi", "4"],
        [
            "API_VERSION_ORIGINAL",
            "API_VERSION_STATUS_RETURNING",
            "API_VERSION_STATUS_RETURNING_UNIFIED",
            "API_VERSION_TYPED_FFI",
            "api_version_original",
        ],
    ),
    "schedule": (
        ["NONE", "LATEST"],
        ["SCHEDULE_NONE", "SCHEDULE_LATEST", "SCHEDULE_EARLIEST", "schedule_none"],
    ),
    "distribution": (["uniform", "normal"], ["rng_uniform", "rng_normal", "RNG_UNIFORM"]),
    "padding_type": (["padding_valid", "VALID"], ["PADDING_VALID", "PADDING_SAME"]),
    "algorithm": (
        ["foo", "alg_dot_f32_f32_f32", "dot_f32", "dot_bf16_bf16_f32_x3x"],
        [
            "dot_f32_f32_f32",
            "dot_bf16_bf16_f32",
            "dot_bf16_bf16_f32_x6",
            "unset",
            "DOT_TF32_TF32_F32",
        ],
    ),
    "custom_call_target": (
        ["x", "1", '"a\\qb"', '"\\400"', '"\\xZZ"', '"\\x400"'],
        ['"x"', "'x'", '"a\\"b"', "'a\"b'", '"\\x41"', '"\\101"', '"\\u0041"', '"\\?"'],
    ),
    "async_execution_thread": (["main", "1"], ['"main"', "'host'"]),
    ("custom-call", "literal"): (
        ["s8[] 300", "f32[2] {1, 2}", "f32[]", "f32[] (1)"],
        ["s8[] 127", "f32[2]{0} {1, 2}", "f32[2,2] {{1,2},{3,4}}", "pred[] true"],
    ),
    "infeed_config": (["x", "1"], ['"x"', "''"]),
    "outfeed_config": (["x", "1"], ['"x"', "''"]),
    "output_to_operand_aliasing": (
        [
            "{{}: (0)}",
            "{(0, {})}",
            "{{}: 0, {}}",
            "{{}: (0 {})}",
            "{,}",
            "{{0 1}: (0, {})}",
            "{{}: (0, {}) {1}: (1, {})}",
        ],
        [
            "{}",
            "{{}: (0, {})}",
            "{{0}: (1, {0}), {1}: (0, {})}",
            "{ {} : ( 0 , { } ) }",
            "{{}: (0, {}),}",
            "{{0,}: (0, {})}",
        ],
    ),
    "frontend_attributes": (
        ['"x"', "{a=1}", '{a="b",}', '{a="b" c="d"}', '{ a = "b" }', '{"a"="b"}', "{a=}"],
        ["{}", '{a="b"}', '{a="b", c.d-e="f"}', "{a='b'}", '{a={"x":[1,"}"]}}', '{ a= "b" }'],
    ),
    "backend_config": (
        ["x", "1", '"a""b"', '{"a":1}{}', "true"],
        ['"x"', "'x'", "{}", '{"a":{"b":[1,2]}}', '{"a":"}"}', '""'],
    ),
    "statistics": (
        [
            "1",
            "{a=1.5}",
            "{visualizing_index=x}",
            "{visualizing_index=1 a=2}",
            '{visualizing_index=1,a="x"}',
            "{visualizing_index=1,}",
            "{a=1e3}",
        ],
        ["{}", "{visualizing_index=1}", "{visualizing_index=1,a=0.5,b=2}", "{i=0, s=-1e3}"],
    ),
    "parameter_replication": (
        ["true", "{1}", "{true,}", "{true false}", "{TRUE}"],
        ["{}", "{true}", "{true,false}", "{ true , false }"],
    ),
    "result_accuracy": (
        [
            "{mode=high}",
            "{mode=highest,}",
            "{}",
            "{0.5}",
            "{foo=1}",
            "{tolerance={rtol=x}}",
            "{tolerance={ulps=2 atol=1}}",
            "{ mode = highest }",
        ],
        [
            "{mode=highest}",
            "{mode=DEFAULT}",
            "{tolerance={atol=1.0,rtol=0.5,ulps=2}}",
            "{tolerance={}}",
            "{mode= highest }",
        ],
    ),
    # (another word: XLA reads it, then aborts the process building the instruction; see
    # test_values_xla_aborts_on_are_rejected)
    "transpose_a": (
        ["true", '"NO_TRANSPOSE"', "1", "{NO_TRANSPOSE}", "f32"],
        ["NO_TRANSPOSE", "ADJOINT", "TRANSPOSE"],
    ),
    "order": (["total", "Total", "TOTALORDER", "1", '"TOTAL"'], ["TOTAL", "PARTIAL"]),
    ("shuffle", "mode"): (["up", "ROTATE", "cross_replica", "0", "{rotate}"], ["rotate"]),
    ("collective-permute", "slice_sizes"): (
        ["x", "0", "{0}", "{1,2}", "{{1},}", "{{99999999999999999999}}"],
        ["{}", "{{1}}", "{{1},{2, 3}}"],
    ),
    ("collective-permute-start", "slice_sizes"): (
        ["x", "0", "{0}", "{1,2}", "{{1},}", "{{99999999999999999999}}"],
        ["{}", "{{1}}", "{{1},{2, 3}}"],
    ),
    "sparsity_config": (
        ["x", '"x"', "{a=1}", "{lhs={},rhs={}}", "{,lhs={}}", "{lhs=1}"],
        ["{}", "{lhs={}}", "{rhs={}}", "{lhs={} rhs={}}", "{ lhs={} }"],
    ),
    "control-predecessors": (
        ["{}", "-1", "{0}", "{p0,}", "{p0 p1}", '"p0"', "p0"],
        ["{p0}", "{p0, p1}", "{%p0}", "{ p0 ,p1 }"],
    ),
    "origin": (
        ["true", "{0}", '{"a"}', "{{a}}", "{[foo]}", '{{"a"}, 1}', '{{"a"} x}'],
        [
            '{{"v3"}}',
            '{({"a"}, {"b"})}',
            "{[synthetic_call]}",
            "{}",
            '{{"a" {1}}}',
            '{(({}, {"v"}), {})}',
        ],
    ),
    "domain": (
        [
            '{kind="sharding", entry={maximal device=1}, calls={}}',
            "{}",
            "x",
            '{kind="x"}',
            '{kind="s", entry={replicated}, exit={replicated}, kind="t"}',
            '{kind="s", entry={maximal device=0}, exit={replicated}}',
        ],
        [
            '{kind="sharding", entry={maximal device=1}, exit={maximal device=0}}',
            '{exit={replicated}, kind="sharding", entry={maximal device=0}}',
        ],
    ),
    ("rng-bit-generator", "algorithm"): (
        ["philox", "dot_f32_f32_f32"],
        ["rng_default", "rng_three_fry", "rng_philox", "RNG_DEFAULT"],
    ),
}
# attributes every instruction takes are tried on a few opcodes, not on all of them
_ANY_INSTRUCTION_PROBES = ("negate", "parameter", "tuple", "fusion")
_TYPED = [
    (opcode, name)
    for opcode in sorted(BAD_ATTRIBUTE_VALUE)
    for name in sorted(OPCODE_ATTRIBUTES[opcode])
    if value_syntax(opcode, name) is not None
    and (name not in ANY_INSTRUCTION_ATTRIBUTES or opcode in _ANY_INSTRUCTION_PROBES)
]


def _values(opcode: str, name: str) -> tuple[list[str], list[str]]:
    """(values XLA rejects, values it reads) for `opcode`'s attribute `name`."""
    for key in ((opcode, name), name):
        if key in _VALUES_OF_NAME:
            return _VALUES_OF_NAME[key]
    syntax = value_syntax(opcode, name)
    assert syntax is not None
    return _VALUES_OF_KIND[syntax[0]]


def _xla_stops_before_probe(text: str) -> bool:
    """Whether XLA's parser rejects `text` before it reaches the unknown attribute zzz_probe."""
    with pytest.raises(Exception) as xla:  # noqa: PT011 - the bindings' own error type
        oracles.xla_module(text)
    first = re.search(r"error: ([^\n]*)", str(xla.value))
    assert first is not None, str(xla.value)
    return 'unexpected attribute "zzz_probe"' not in first[1]


@versions.requires_jax("xla-attribute-table")
@pytest.mark.parametrize(("opcode", "name"), _TYPED, ids=lambda v: v)
def test_attribute_value_syntax_is_what_xla_reads(opcode: str, name: str) -> None:
    """On each wrong value XLA stops at the value (before the unknown attribute after it) and
    the reader rejects the value with one line naming the attribute; on each right value XLA
    reads on to that unknown attribute (so nothing is built) and the reader reads past it (it may
    then miss an attribute the opcode requires, which the probe leaves out, or reject what XLA
    rejects when it builds the probe, as XLA would)."""
    wrong, right = _values(opcode, name)
    for value in wrong:
        assert _xla_stops_before_probe(_probe(opcode, attribute=f"{name}={value}, zzz_probe=1"))
        with pytest.raises(HloParseError) as ours:
            parse_hlo(_probe(opcode, attribute=f"{name}={value}"))
        assert f"for '{name}' of '{opcode}'" in ours.value.expected, value
        assert "\n" not in str(ours.value)
    for value in right:
        assert not _xla_stops_before_probe(
            _probe(opcode, attribute=f"{name}={value}, zzz_probe=1")
        ), value
        text = _probe(opcode, attribute=f"{name}={value}")
        try:
            parse_hlo(text)
        except HloParseError as exc:
            # a missing attribute, or what XLA checks when it builds the probe (as XLA does)
            assert f"'{opcode}' requires:" in exc.expected or _xla_verdict(text) is None, value


@versions.requires_jax("xla-attribute-table")
@pytest.mark.parametrize("pairs", ["{{0}}", "{{0,1,2}}", "{{0,1},{1}}"])
def test_source_target_pairs_are_pairs(pairs: str) -> None:
    """XLA reads any braced lists as source_target_pairs, then rejects lists that are not
    pairs when it builds the collective-permute; the reader rejects them as it reads."""
    text = _probe("collective-permute", attribute=f"source_target_pairs={pairs}")
    with pytest.raises(Exception, match="list of pairs"):
        oracles.xla_module(text)
    with pytest.raises(HloParseError, match="source_target_pairs"):
        parse_hlo(text)


@pytest.mark.parametrize(
    "name",
    [_bank_param(p, p.name) for p in BANK if p.name.startswith("invalid_attribute_value_")]
    + [
        "invalid_attribute_dimensions_not_braced.hlo",
        "invalid_attribute_dimensions_trailing_comma.hlo",
    ],
)
def test_value_error_points_where_xla_names_the_attribute(name: str) -> None:
    """XLA reports a bad value twice: at the token where reading it failed, then 'error parsing
    attribute NAME' at the attribute's name. The reader does not re-read values token by token,
    so it points where the second report does."""
    text = (HERE / "fixtures" / "bank" / name).read_text()
    with pytest.raises(Exception) as xla:  # noqa: PT011 - the bindings' own error type
        oracles.xla_module(text)
    where = re.search(r"was parsing (\d+):(\d+): error: error parsing attribute", str(xla.value))
    assert where is not None, xla.value
    with pytest.raises(HloParseError) as ours:
        parse_hlo(text)
    assert (ours.value.line_no, ours.value.col) == (int(where[1]), int(where[2]))


# -- hypothesis: a typed attribute of a (reformatted) corpus module gets a wrong value ---------

WRONG_VALUE_SOURCES = REFORMAT_SOURCES + [
    text
    for text in [(HERE / "corpus" / name).read_text() for name in ("conv_net.opt.hlo",)]
    if versions.holds(versions.NEWER_SYNTAX_GATE) or not versions.uses_newer_hlo_syntax(text)
]
# a top-level attribute name, and the opcode before it on the same line
_ATTRIBUTE_NAME = re.compile(r"(?<=, )([a-z_]+)=")
_OPCODE_BEFORE = re.compile(r" ([a-z][a-z0-9\-]*)\(")


@st.composite
def wrong_value(draw: st.DrawFn) -> str:
    """A module where one typed attribute whose value reads as its syntax gets a value of the
    table's wrong ones for that opcode and attribute (the module unchanged when none reads)."""
    text = draw(st.sampled_from(WRONG_VALUE_SOURCES))
    spots = []
    for name in _ATTRIBUTE_NAME.finditer(text, _body_start(text)):
        line = text.rfind("\n", 0, name.start()) + 1
        opcode = _OPCODE_BEFORE.search(text, line, name.start())
        if opcode is None or name[1] not in OPCODE_ATTRIBUTES.get(opcode[1], ()):
            continue
        syntax = value_syntax(opcode[1], name[1])
        value = syntax[1].match(text, name.end()) if syntax is not None else None
        if value is not None:
            spots.append((opcode[1], name[1], name.end(), value.end()))
    if not spots:
        return text
    opcode, name, begin, end = draw(st.sampled_from(spots))
    wrong = draw(st.sampled_from(_values(opcode, name)[0]))
    return text[:begin] + wrong + text[end:]


@versions.requires_jax("xla-attribute-table")
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(wrong_value())
def test_wrong_attribute_values_match_xla(text: str) -> None:
    assert _our_verdict(text) == _xla_verdict(text)


_REPEAT = """HloModule m

%add.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%f.1 (p: f32[2]) -> f32[2] {
  ROOT %p = f32[2]{0} parameter(0)
}

ENTRY %e (x: f32[2]) -> f32[] {
  %x = f32[2]{0} parameter(0)
  %z = f32[] constant(0)
  %u = f32[2]{0} fusion(%x), kind=kLoop, calls=%f.1
  %r = f32[] reduce(%u, %z), dimensions={0}, to_apply=%add.1
  %c = f32[1]{0} constant({1})
REPEAT
}
"""


@pytest.mark.parametrize(
    "repeat",
    [
        # each line repeats one above with only its callee or payload changed
        "  %v = f32[2]{0} fusion(%x), kind=kLoop, calls=%g.1\n  ROOT %o = f32[] constant(0)",
        "  %v = f32[2]{0} fusion(%x), kind=kLoop, calls=%f.1\n  ROOT %o = f32[] constant(0)",
        "  %w = f32[] reduce(%u, %z), dimensions={0}, to_apply=%add.9\n  ROOT %o = f32[] abs(%w)",
        "  %d = f32[2]{0} constant({1})\n  ROOT %o = f32[] constant(0)",
        "  %d = f32[1]{0} constant({1})\n  ROOT %o = f32[] constant(0)",
        "  %y = f32[2]{0} parameter(0)\n  ROOT %o = f32[] constant(0)",
    ],
)
def test_repeated_lines_are_checked_for_what_differs(repeat: str) -> None:
    """The reader checks an attribute list or constant once and reuses the verdict on lines
    that repeat it; a repeat that names another computation, gives a payload another shape or
    a parameter number again is still read as XLA reads it."""
    text = _REPEAT.replace("REPEAT", repeat)
    assert _our_verdict(text) == _xla_verdict(text)


_WRAPPED = """HloModule m
ENTRY e {
  p = f32[4,2] parameter(0)
  ROOT c = f32[4,2] ATTRIBUTES
}
"""


@pytest.mark.parametrize(
    "attributes",
    [
        'copy(p),\n    sharding={window=[1,4]0,1 metadata={op_name="a"}}',
        'copy(p),\n    metadata={op_name="a"},\n    dimensions={0}',
        "transpose(p),\n    dimensions={1,0} /* wrapped */,\n  zzz_probe=1",
        "reverse(p),\n    dimensions=\n      {0,x}",
    ],
)
def test_errors_inside_a_wrapped_instruction_point_where_xla_does(attributes: str) -> None:
    """In an instruction written over several lines, an error names the line and column of
    the attribute, as XLA's parser does, not the instruction's first line."""
    text = _WRAPPED.replace("ATTRIBUTES", attributes)
    with pytest.raises(Exception) as xla:  # noqa: PT011 - the bindings' own error type
        oracles.xla_module(text)
    reports = re.findall(r"was parsing (\d+):(\d+): error: (\S+ \S+)", str(xla.value))
    named = [where for where in reports if where[2] == "error parsing"] or reports
    with pytest.raises(HloParseError) as ours:
        parse_hlo(text)
    assert (ours.value.line_no, ours.value.col) == (int(named[0][0]), int(named[0][1]))


# -- what XLA checks while it builds an instruction: shapes against operand counts and shapes ---

_DIMS = st.lists(st.integers(1, 4), min_size=0, max_size=3)


def _dims(sizes: list[int]) -> str:
    return ",".join(map(str, sizes))


@st.composite
def built_instruction(draw: st.DrawFn) -> str:
    """A module whose last instruction is one XLA checks as it builds it: a reshape (to the
    same element count or not), a tuple (with as many shape elements as operands or not), a
    conditional (predicate pred or s32, scalar or not, for either form), an all-reduce (with
    or without channel_id and use_global_device_ids), a dot, reduce or concatenate with some
    operands, a dynamic-slice or -update-slice with some indices, a send-done/recv-done with
    a channel_id like its send/recv's or not, or a broadcast with dimensions or without."""
    kind = draw(
        st.sampled_from(
            [
                "reshape",
                "tuple",
                "conditional",
                "all-reduce",
                "operands",
                "slices",
                "channels",
                "broadcast",
            ]
        )
    )
    lines = ["HloModule m", ""]
    if kind in ("conditional", "all-reduce"):
        lines += [
            "b {",
            "  x = f32[] parameter(0)",
            "  y = f32[] parameter(1)",
            "  ROOT n = f32[] add(x, y)",
            "}",
            "c {",
            "  z = f32[] parameter(0)",
            "  ROOT m = f32[] negate(z)",
            "}",
        ]
    lines.append("ENTRY e {")
    if kind == "reshape":
        before = draw(_DIMS)
        after = draw(st.one_of(_DIMS, st.permutations(before)))
        lines += [
            f"  p = f32[{_dims(before)}] parameter(0)",
            f"  ROOT r = f32[{_dims(after)}] reshape(p)",
        ]
    elif kind == "tuple":
        elements = draw(st.integers(0, 3))
        operands = draw(st.integers(0, 3))
        shape = ", ".join(["f32[2]"] * elements)
        names = ", ".join(["p"] * operands)
        lines += ["  p = f32[2] parameter(0)", f"  ROOT t = ({shape}) tuple({names})"]
    elif kind == "conditional":
        dtype = draw(st.sampled_from(["pred", "s32", "u32", "f32"]))
        dims = draw(st.sampled_from(["", "1", "2"]))
        branches = draw(
            st.sampled_from(
                ["true_computation=c, false_computation=c", "branch_computations={c, c}"]
            )
        )
        lines += [
            f"  i = {dtype}[{dims}] parameter(0)",
            "  v = f32[] parameter(1)",
            f"  ROOT r = f32[] conditional(i, v, v), {branches}",
        ]
    elif kind == "operands":
        opcode, attributes = draw(
            st.sampled_from(
                [
                    ("dot", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
                    ("reduce", "dimensions={0}, to_apply=b"),
                    ("concatenate", f"dimensions={{{draw(st.sampled_from(['0', '', '0,0']))}}}"),
                ]
            )
        )
        names = ", ".join(draw(st.lists(st.sampled_from(["p", "z"]), min_size=1, max_size=4)))
        lines += [
            "  p = f32[2] parameter(0)",
            "  z = f32[] parameter(1)",
            f"  ROOT r = f32[] {opcode}({names}), {attributes}",
        ]
    elif kind == "slices":
        opcode = draw(st.sampled_from(["dynamic-slice", "dynamic-update-slice"]))
        rank = draw(st.integers(1, 3))
        dims = ",".join(["4"] * rank)
        indices = draw(st.lists(st.sampled_from(["i", "v"]), min_size=0, max_size=4))
        update = ["u"] if opcode == "dynamic-update-slice" else []
        attributes = f", dynamic_slice_sizes={{{','.join(['1'] * rank)}}}" if not update else ""
        shape = f"f32[{dims}]" if update else f"f32[{','.join(['1'] * rank)}]"
        lines += [
            f"  a = f32[{dims}] parameter(0)",
            f"  u = f32[{','.join(['1'] * rank)}] parameter(1)",
            "  i = s32[] parameter(2)",
            f"  v = s32[{rank}] parameter(3)",
            f"  ROOT r = {shape} {opcode}({', '.join(['a', *update, *indices])}){attributes}",
        ]
    elif kind == "broadcast":
        source = draw(st.sampled_from(["f32[]", "f32[2]"]))
        dims = draw(st.sampled_from(["", ", dimensions={}", ", dimensions={1}"]))
        lines += [f"  p = {source} parameter(0)", f"  ROOT r = f32[3,2] broadcast(p){dims}"]
    elif kind == "channels":
        start_id, done_id = (
            draw(st.sampled_from(["", ", channel_id=1", ", channel_id=2"])) for _ in "ab"
        )
        if draw(st.booleans()):
            start = f"  s = (f32[2], u32[], token[]) send(p, t){start_id}"
            done = f"  ROOT d = token[] send-done(s){done_id}"
        else:
            start = f"  s = (f32[2], u32[], token[]) recv(t){start_id}"
            done = f"  ROOT d = (f32[2], token[]) recv-done(s){done_id}"
        lines += ["  p = f32[2] parameter(0)", "  t = token[] after-all()", start, done]
    else:
        extra = draw(
            st.lists(st.sampled_from(["channel_id=1", "use_global_device_ids=true"]), unique=True)
        )
        attributes = ", ".join(["replica_groups={}", *extra, "to_apply=b"])
        lines += ["  p = f32[8] parameter(0)", f"  ROOT r = f32[8] all-reduce(p), {attributes}"]
    return "\n".join([*lines, "}", ""])


# before jaxlib 0.12 many drawn texts abort the parser, and each abort starts its helper again
@pytest.mark.timeout(180)
@settings(max_examples=150, deadline=None, derandomize=True)
@given(built_instruction())
def test_build_checks_match_xla(text: str) -> None:
    """Before jaxlib 0.12 the parser aborts its process on some of these (a dot with one
    operand, a recv with an array shape, a reshape that changes the element count): asked in
    a helper process (kata_harness.xla_child), that is a verdict, and the reader rejects them."""
    assert _our_verdict(text) == _xla_verdict(text)


_LAYOUT_ITEMS = [
    "D(D,C)",
    "T(8,128)(2,1)",
    "T(2,*)",
    "L(1024)",
    "#(u32)",
    "*(u16)",
    "E(4)",
    "S(1)",
    "SC(0:1,2)",
    "M(8)",
    "T(8 8,128)",
    "T(8,/**/128)",
    "T(8/**/8)",
    "D(X)",
    "Q(1)",
    "P(f32[4,4])",
]


@st.composite
def layout_shape(draw: st.DrawFn) -> str:
    """A module with a parameter of shape f32[4,4,4] whose layout is drawn: its dimensions
    separated by ',' with blanks or comments (now and then by a blank or comment alone), then
    maybe ':' and items of
    XLA's layout syntax, in its order or not, some of them malformed."""
    order = [str(d) for d in draw(st.permutations([0, 1, 2]))]
    text = order[0]
    for dim in order[1:]:
        text += draw(st.sampled_from([",", ", ", " ,", ",/**/", " ", " /* c */ "])) + dim
    items = draw(st.lists(st.sampled_from(_LAYOUT_ITEMS), max_size=3, unique=True))
    if draw(st.booleans()):
        items.sort(key=_LAYOUT_ITEMS.index)
    if items or draw(st.booleans()):
        text += ":" + draw(st.sampled_from(["", " ", "/**/"])).join(items)
    return f"HloModule m\nENTRY e {{\n  ROOT p = f32[4,4,4]{{{text}}} parameter(0)\n}}\n"


@settings(max_examples=80, deadline=None, derandomize=True)
@given(layout_shape())
def test_layout_syntax_matches_xla(text: str) -> None:
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


def _constant(shape: str, literal: str) -> str:
    return f"HloModule m\nENTRY e {{\n  ROOT c = {shape} constant({literal})\n}}\n"


# (shape, literal) pairs read as XLA's parser reads a literal: a tuple shape takes
# '(' literal (','? literal)* ')' (or '()'), one literal per element, recursively; an array
# takes braces nested per dimension with each level's exact count (down to a 0-sized one),
# commas skipped anywhere, '...' at depth 1 only, '(re, im)' for a complex element
LITERAL_FORMS = [
    # tuples: element count, parentheses, element types and ranges, nesting
    ("(f32[], s32[])", "(1, 2)"),
    ("(f32[], s32[])", "(1, 2, 3)"),
    ("(f32[], s32[])", "(1)"),
    ("(f32[], s32[])", "(1, 2.5)"),
    ("(u8[])", "(256)"),
    ("(u8[])", "(255)"),
    ("(f32[])", "(1e400)"),
    ("(f8e4m3fn[])", "(500)"),
    ("(s4[])", "(8)"),
    ("(f16[])", "(1e6)"),
    ("(f32[])", "(+1)"),
    ("(c64[])", "(1)"),
    ("(c64[], f32[])", "((1, 2), 3)"),
    ("(f32[2])", "({1})"),
    ("(f32[2,3])", "({1,2,3,4,5,6})"),
    ("(f32[2,3])", "({{1,2,3},{4,5,6}})"),
    ("(f32[<=3])", "({1})"),
    ("(f32[<=3])", "({1,2,3})"),
    ("(f32[], f32[])", "{1, 2}"),
    ("(f32[], f32[])", "((1), 2)"),
    ("(f32[])", "(1,)"),
    ("(f32[], f32[])", "(1,,)"),
    ("(f32[], f32[])", "(1,,2)"),
    ("(f32[], f32[])", "(,1,2)"),
    ("(f32[], f32[])", "()"),
    ("()", "()"),
    ("()", "(1)"),
    ("(())", "(())"),
    ("(())", "(,())"),
    ("(f32[2], s32[])", "(...)"),
    ("(f32[2], s32[])", "({...}, 1)"),
    ("(f32[0], f32[])", "({}, 1)"),
    ("(f32[0], f32[])", "({1}, 1)"),
    # tuples nested two deep
    ("((f32[]))", "(1)"),
    ("((f32[]))", "((1))"),
    ("((f32[], s32[]), f32[2])", "((1, 2), {3, 4})"),
    ("((f32[], s32[]), f32[2])", "((1 2) {3 4})"),
    ("((f32[], s32[]), f32[2])", "((1, 2, 3), {3, 4})"),
    ("((f32[], s32[]), f32[2])", "((1, 2.5), {3, 4})"),
    ("((f32[], s32[]), f32[2])", "((1, 2), {3})"),
    ("((f32[], s32[]), f32[2])", "(1, 2, {3, 4})"),
    ("((f32[], s32[]), f32[2])", "((1, 2)), {3, 4})"),
    ("((f32[], f32[]), f32[])", "((), 1)"),
    ("((), f32[])", "((), 1)"),
    ("((f32[2], (pred[], u8[])), c64[])", "(({1, 2}, (true, 255)), (1, 2))"),
    ("((f32[2], (pred[], u8[])), c64[])", "(({1, 2}, (true, 256)), (1, 2))"),
    ("((f32[2], (pred[], u8[])), c64[])", "(({1, 2}, (true, 255)), 1)"),
    ("((f32[2], (pred[], u8[])), c64[])", "(({1, 2}, true, 255), (1, 2))"),
    # arrays with a 0-sized dimension: every count down to the first 0, nothing inside it
    ("f32[0]", "{}"),
    ("f32[0]", "{...}"),
    ("f32[0]", "{1}"),
    ("f32[0]", "{0}"),
    ("f32[0]", "0"),
    ("f32[0,3]", "{}"),
    ("f32[0,3]", "{{}}"),
    ("f32[3,0]", "{}"),
    ("f32[3,0]", "{{},{}}"),
    ("f32[3,0]", "{{},{},{}}"),
    ("f32[3,0]", "{{},{},{},{}}"),
    ("f32[2,0]", "{{}{}}"),
    ("f32[2,0]", "{{},{1}}"),
    ("f32[1,0]", "{}"),
    ("f32[<=2,0]", "{}"),
    ("f32[2,0,2]", "{}"),
    ("f32[2,0,2]", "{{},{}}"),
    ("f32[2,2,0]", "{{},{}}"),
    ("f32[2,2,0]", "{{{},{}},{{},{}}}"),
    # elided literals: '...' at depth 1, after the elements it follows
    ("f32[]", "..."),
    ("f32[]", "{...}"),
    ("f32[2]", "{...}"),
    ("f32[2]", "{1, ...}"),
    ("f32[2]", "{1 ...}"),
    ("f32[2]", "{..., ...}"),
    ("f32[2]", "{...,1}"),
    ("f32[2]", "{1...}"),
    ("f32[2,2]", "{...}"),
    ("f32[2,2]", "{{...}}"),
    ("f32[2,2]", "{{1,2}, ...}"),
    ("f32[2,2]", "{..., {1,2}}"),
    ("f32[2,2]", "{{1,2},{...}}"),
    ("f32[2,2]", "{{...},{...}}"),
    # complex values: exactly '(' real ',' imaginary ')', innermost
    ("c64[]", "(1, 2)"),
    ("c64[]", "( 1 , 2 )"),
    ("c64[]", "(1)"),
    ("c64[]", "(1, 2, 3)"),
    ("c64[]", "((1, 2))"),
    ("c64[]", "(1,)"),
    ("c64[]", "(,1)"),
    ("c64[]", "()"),
    ("c64[]", "(1 2)"),
    ("c64[]", "(1, 2),"),
    ("c64[2]", "(1, 2)"),
    ("c64[2]", "{(1, 2)}"),
    ("c64[2]", "{(1,2)(3,4)}"),
    ("c64[2]", "{1, 2}"),
    ("c128[1,2]", "{{(1, 2), (3, 4)}}"),
    ("c128[1,2]", "{(1, 2), (3, 4)}"),
    # commas: optional and repeatable between elements; tokens as XLA's lexer splits them
    ("f32[2]", "{1 2}"),
    ("f32[2,2]", "{{1 2},{3 4}}"),
    ("f32[2,2]", "{{1,2}{3,4}}"),
    ("f32[2]", "{{1,2}{3,4}}"),
    ("f32[2]", "{inf nan}"),
    ("pred[2]", "{true false}"),
    ("pred[2]", "{1true}"),
    ("pred[2]", "{truefalse}"),
    ("f32[2]", "{1 -2}"),
    ("f32[2]", "{1-2}"),
    ("f32[2]", "{-inf-inf}"),
    ("f32[2]", "{-inf1}"),
    ("f32[2]", "{inf1}"),
    ("f32[2]", "{infnan}"),
    ("f32[2]", "{nan(0x1)nan}"),
    ("f32[2]", "{1e5 5}"),
    ("f32[2]", "{1e5e5}"),
    ("f32[2]", "{1.5.5}"),
    ("f32[2]", "{1.2.}"),
    ("f32[2]", "{1/**/2}"),
    ("f32[2]", "{1,,2}"),
    ("f32[2]", "{,1,2,}"),
    ("(f32[], f32[])", "(1 2)"),
    ("(f32[], f32[], f32[])", "(1 2 3)"),
    # a leading '.', and what may follow the literal
    ("f32[]", ".5"),
    ("f32[]", "-.5"),
    ("f32[2]", "{.5, 1}"),
    ("f32[2]", "{-.5, 1.}"),
    ("f32[]", "1,"),
    ("f32[]", ",1"),
    ("f32[]", ","),
    ("f32[]", "1 2"),
    ("f32[2]", "{1,2},"),
    ("f32[2]", "{1,2} {3}"),
    ("f32[2]", ","),
    # integers from 2^63 to 2^64-1: XLA reads them into an int64, wrapped around to negatives
    ("s8[]", "18446744073709551615"),
    ("s8[]", "18446744073709551488"),
    ("u8[]", "18446744073709551615"),
    ("s32[2]", "{1, 9223372036854775808}"),
    ("s64[]", "9223372036854775808"),
    ("u64[]", "18446744073709551615"),
    ("f16[]", "18446744073709551614"),
    ("f8e4m3fn[]", "18446744073709551615"),
    ("(s4[], f16[])", "(18446744073709551615, 18446744073709551615)"),
    ("s8[]", "18446744073709551616"),
    # a bare number for an array: one element, past the end of none
    ("f32[2]", "1"),
    ("f32[2,3]", "1"),
    ("f32[0]", "1"),
    ("f32[]", "{1}"),
]


@pytest.mark.parametrize(
    ("shape", "literal"), LITERAL_FORMS, ids=[f"{s} {v}" for s, v in LITERAL_FORMS]
)
def test_literal_forms_match_xla(shape: str, literal: str) -> None:
    text = _constant(shape, literal)
    assert _our_verdict(text) == _xla_verdict(text)


# XLA's parser crashes the process on these literals (a failed CHECK): true/false for another
# type inside a tuple, a token element, an unbounded dimension; the reader rejects them
LITERALS_XLA_CANNOT_READ = [
    ("(s32[])", "(true)"),
    ("(f32[])", "(true)"),
    ("(s32[], pred[])", "(true, true)"),
    ("((pred[], s32[]))", "((true, false))"),
    ("(f32[], token[])", "(1, )"),
    ("(f32[], token[])", "(1)"),
    ("token[]", "0"),
    ("token[]", "{...}"),
    ("f32[?]", "{1}"),
    ("f32[?]", "{...}"),
    ("f32[2]", "true"),
]


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
    assert _our_verdict(text) == _xla_verdict(text)


# -- frame tables: their order and their rows ----------------------------------------------------

_LOCATION = "1 {file_name_id=1 function_name_id=1 line=4 end_line=4 column=2 end_column=9}"
_FRAME = "1 {file_location_id=1 parent_frame_id=0}"
_TABLE_ROWS = {
    "FileNames": ['1 "model.py"', "1 model.py", '1 "a" "b"', "1 'model.py'", '1\n"model.py"'],
    "FunctionNames": ['1 "forward"', "1 {x=1}"],
    "FileLocations": [
        _LOCATION,
        _LOCATION.replace(" column=2", ""),
        _LOCATION.replace(" ", ", ").replace("1,", "1", 1),
        _LOCATION.replace("line=4 ", "line=x ", 1),
        _LOCATION.replace("}", " foo=1}"),
        _LOCATION.replace(" line=4", "\n     line=4"),
        _LOCATION.replace("1 {", "1\n {", 1),
    ],
    "StackFrames": [
        _FRAME,
        "1 {file_location_id=1}",
        "1 {file_location_id=1 parent_frame_id=0 3}",
        "1 {file_location_id=1 parens_frame_id=0}",
        "1 {file_location_id=1 parent_frame_id=0 file_location_id=1}",
        "1{ parent_frame_id=0 , file_location_id=1 }",
    ],
}


@st.composite
def frame_tables(draw: st.DrawFn) -> str:
    """A module whose frame tables are drawn: each of the four with one of its rows (some
    malformed), now and then one left out, the tables indented or not."""
    indent = draw(st.sampled_from(["", "  "]))
    lines = ["HloModule m"]
    for table, rows in _TABLE_ROWS.items():
        if draw(st.integers(0, 5)) == 0:
            continue
        lines += [table, draw(st.sampled_from(rows))]
    lines += ["ENTRY e {", "  ROOT p = f32[] parameter(0), metadata={stack_frame_id=1}", "}"]
    return "".join(indent + line + "\n" for line in "\n".join(lines).split("\n"))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(frame_tables())
def test_frame_tables_match_xla(text: str) -> None:
    assert _our_verdict(text) == _xla_verdict(text)


# -- async ops: sugar (`abs-start`) and the generic form, and how XLA links a chain -------------

_ASYNC_MODULE = """HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
%neg (w: f32[4]) -> f32[4] {
  w = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(w)
}
%abs (w: f32[4]) -> f32[4] {
  w = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} abs(w)
}
ENTRY e {
  p = f32[4]{0} parameter(0)
  q = f32[4]{0} parameter(1)
  t = ((f32[4]{0}), f32[4]{0}, s32[]) parameter(2)
BODY
}
"""
_S1 = "((f32[4]{0}), f32[4]{0}, s32[])"
_S2 = "((f32[4]{0}, f32[4]{0}), f32[4]{0}, s32[])"
# each body, as XLA's parser (jaxlib 0.12) reads it: a chain of async ops in many spellings
ASYNC_BODIES = {
    "sugar": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "sugar with updates": (
        "st = <S2> add-start(p, q)\nua = <S2> add-update(st)\nub = <S2> add-update(ua)\n"
        "ROOT d = f32[4]{0} add-done(ub)"
    ),
    # XLA builds the wrapped op from the start's shape, not its operands
    "operands not read": "st = <S1> add-start()\nROOT d = f32[4]{0} add-done(st)",
    "more operand shapes than taken": "st = <S2> abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "two elements": "st = ((f32[4]{0}), f32[4]{0}) abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "start as ROOT": "ROOT st = <S1> abs-start(p)",
    "done twice": (
        "st = <S1> abs-start(p)\nd = f32[4]{0} abs-done(st)\nROOT e = f32[4]{0} abs-done(st)"
    ),
    "collective": (
        "st = ((f32[4]{0}), f32[2]{0}, s32[]) reduce-scatter-start(p), dimensions={0}, "
        "to_apply=%sum, replica_groups={}\nROOT d = f32[2]{0} reduce-scatter-done(st)"
    ),
    "custom-call": (
        'st = <S1> custom-call-start(p, q), custom_call_target="x"\n'
        "ROOT d = f32[4]{0} custom-call-done(st)"
    ),
    "tuple": "st = ((), (), s32[]) tuple-start()\nROOT d = () tuple-done(st)",
    "tuple of another arity": (
        "st = ((f32[4]{0}, f32[4]{0}), (f32[4]{0}), s32[]) tuple-start(p, q)\n"
        "ROOT d = (f32[4]{0}) tuple-done(st)"
    ),
    "threads": (
        'st = <S1> abs-start(p), async_execution_thread="x"\n'
        'ua = <S1> abs-update(st)\nROOT d = f32[4]{0} abs-done(ua), async_execution_thread="x"'
    ),
    "metadata": (
        'st = <S1> abs-start(p), metadata={op_name="a"}\n'
        'ROOT d = f32[4]{0} abs-done(st), metadata={op_name="b"}'
    ),
    "generic": "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} async-done(st)",
    "generic, calls on all": (
        "st = <S1> async-start(p), calls=%neg\nua = <S1> async-update(st), calls=%neg\n"
        "ROOT d = f32[4]{0} async-done(ua), calls=%neg"
    ),
    "generic then sugar": (
        "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} negate-done(st)"
    ),
    "sugar then generic": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} async-done(st)",
    "one computation, two starts": (
        "st = <S1> async-start(p), calls=%neg\nd = f32[4]{0} async-done(st)\n"
        "sb = <S1> async-start(d), calls=%neg\nROOT db = f32[4]{0} async-done(sb)"
    ),
    "done of a parameter": "ROOT d = f32[4]{0} abs-done(p)",
    "update of a parameter": "ua = <S1> abs-update(p)\nROOT d = f32[4]{0} abs-done(ua)",
    "done of a tuple parameter": "ROOT d = f32[4]{0} negate-done(t), calls=%neg",
    "done of a native start": (
        "st = (f32[4]{0}, f32[8]{0}) all-gather-start(p), dimensions={0}, replica_groups={}\n"
        "ROOT d = f32[8]{0} async-done(st)"
    ),
    "a second operand": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(p, st)",
    "an array start": "st = f32[4]{0} abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "operands not a tuple": (
        "st = (f32[4]{0}, f32[4]{0}, s32[]) abs-start(p)\nROOT d = f32[4]{0} abs-done(st)"
    ),
    "one element": "st = ((f32[4]{0})) abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "an array update": (
        "st = <S1> abs-start(p)\nua = f32[4]{0} abs-update(st)\nROOT d = f32[4]{0} abs-done(ua)"
    ),
    "generic array start": (
        "st = f32[4]{0} async-start(p), calls=%neg\nROOT d = f32[4]{0} async-done(st)"
    ),
    "another wrapped op done": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} negate-done(st)",
    "another wrapped op update": (
        "st = <S1> abs-start(p)\nua = <S1> negate-update(st)\nROOT d = f32[4]{0} abs-done(ua)"
    ),
    "sugar done of another computation": (
        "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} abs-done(st)"
    ),
    "done of a done": (
        "st = <S1> abs-start(p)\nd = f32[4]{0} abs-done(st)\nROOT e = f32[4]{0} abs-done(d)"
    ),
    "update of a done": (
        "st = <S1> async-start(p), calls=%neg\nd = <S1> async-done(st)\n"
        "ROOT ua = <S1> async-update(d)"
    ),
    "done without operand": "ROOT d = f32[4]{0} abs-done()",
    "calls on sugar": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(st), calls=%abs",
    "another calls": (
        "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} async-done(st), calls=%abs"
    ),
    "no calls": "st = <S1> async-start(p)\nROOT d = f32[4]{0} async-done(st)",
    "another thread": (
        'st = <S1> abs-start(p), async_execution_thread="x"\n'
        'ROOT d = f32[4]{0} abs-done(st), async_execution_thread="y"'
    ),
    "another thread than main": (
        "st = <S1> async-start(p), calls=%neg\n"
        'ua = <S1> async-update(st), async_execution_thread="y"\nROOT d = f32[4]{0} async-done(ua)'
    ),
    "an attribute of the wrapped op on done": (
        "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(st), dimensions={0}"
    ),
    "called by another op too": (
        "st = <S1> async-start(p), calls=%neg\nd = f32[4]{0} async-done(st)\n"
        "ROOT c = f32[4]{0} call(d), to_apply=%neg"
    ),
    "called by an op before": (
        "f = f32[4]{0} fusion(p), kind=kLoop, calls=%neg\n"
        "st = <S1> async-start(f), calls=%neg\nROOT d = f32[4]{0} async-done(st)"
    ),
    "a start of an op with async opcodes": (
        "tk = token[] after-all()\nst = <S1> send-start(p, tk), channel_id=1\n"
        "ROOT d = f32[4]{0} send-done(st)"
    ),
    "an update of a native start": (
        "st = (f32[4]{0}, f32[8]{0}) all-gather-start(p), dimensions={0}, replica_groups={}\n"
        "ua = (f32[4]{0}, f32[8]{0}) all-gather-update(st)\nROOT d = f32[8]{0} all-gather-done(ua)"
    ),
}


def _async_module(body: str) -> str:
    """The module with `body` (<S1>, <S2>: start shapes of one and two operands) in its entry."""
    body = body.replace("<S1>", _S1).replace("<S2>", _S2)
    return _ASYNC_MODULE.replace("BODY\n", "".join(f"  {line}\n" for line in body.splitlines()))


@versions.requires_jax("xla-attribute-table")
@pytest.mark.parametrize("body", list(ASYNC_BODIES.values()), ids=list(ASYNC_BODIES))
def test_async_ops_match_xla(body: str) -> None:
    """Accepted or rejected as XLA does; when accepted, a sugar op counts as XLA holds it (an
    async-start calling a computation of parameters and the wrapped op), not as written."""
    text = _async_module(body)
    assert _our_verdict(text) == _xla_verdict(text)


_ASYNC_WRAPPED = ["abs", "negate", "add", "select", "clamp", "tuple", "iota"]


@st.composite
def async_chain(draw: st.DrawFn) -> str:
    """A start (sugar of one of _ASYNC_WRAPPED with an operand tuple of 0-4 shapes, or generic),
    0-2 updates and 0-2 dones, each sugar of any of them or generic, with or without a
    thread, each continuing the op before it or another."""
    wrapped = draw(st.sampled_from(_ASYNC_WRAPPED))
    count = draw(st.integers(0, 4))
    operands = "(" + ", ".join(["f32[4]{0}"] * count) + ")"
    shape = f"({operands}, f32[4]{{0}}, s32[])"
    threads = st.sampled_from(
        ["", ', async_execution_thread="main"', ', async_execution_thread="x"']
    )
    attribute = ", iota_dimension=0" if wrapped == "iota" else ""
    if draw(st.booleans()):
        lines = [f"a0 = {shape} {wrapped}-start(p){attribute}{draw(threads)}"]
    else:
        lines = [f"a0 = {shape} async-start(p), calls=%{draw(st.sampled_from(['neg', 'abs']))}"]
    names = ["a0"]
    for kind in ["update"] * draw(st.integers(0, 2)) + ["done"] * draw(st.integers(0, 2)):
        spelled = draw(st.sampled_from([*_ASYNC_WRAPPED[:3], "async"]))
        result = shape if kind == "update" or draw(st.booleans()) else "f32[4]{0}"
        operand = draw(st.sampled_from(names[-2:]))
        name = f"a{len(names)}"
        lines.append(f"{name} = {result} {spelled}-{kind}({operand}){draw(threads)}")
        names.append(name)
    return "\n".join(lines)


@versions.requires_jax("xla-attribute-table")
@settings(max_examples=80, deadline=None, derandomize=True)
@given(async_chain())
def test_async_chains_match_xla(body: str) -> None:
    text = _async_module(body)
    assert _our_verdict(text) == _xla_verdict(text)


# XLA's parser (jaxlib 0.12) crashes the process on these (a failed CHECK or worse): the reader
# rejects them, one line each
XLA_CANNOT_BUILD = {
    "an attribute the wrapped op does not take": "st = <S1> abs-start(p), dimensions={0}",
    "calls on sugar start": "st = <S1> abs-start(p), calls=%abs",
    "a required attribute missing": (
        "st = ((f32[4]{0}), f32[2]{0}, s32[]) reduce-scatter-start(p), dimensions={0}, "
        "replica_groups={}"
    ),
    "no custom_call_target": "st = <S1> custom-call-start(p)",
    "a thread not a string": "st = <S1> abs-start(p), async_execution_thread=x",
    "parameter": "st = <S1> parameter-start(p)",
    "constant": "st = ((), f32[], s32[]) constant-start()",
    "async-start": "st = <S1> async-start-start(p)",
    "a reshape of another size": "st = ((f32[4]{0}), f32[5]{0}, s32[]) reshape-start(p)",
    "a partition-id not u32[]": "st = ((), f32[4]{0}, s32[]) partition-id-start()",
    "a replica-id not u32[]": "r = f32[4]{0} replica-id()",
}


@pytest.mark.parametrize("line", list(XLA_CANNOT_BUILD.values()), ids=list(XLA_CANNOT_BUILD))
def test_async_sugar_xla_cannot_build_is_rejected(line: str) -> None:
    with pytest.raises(HloParseError) as ours:
        parse_hlo(_async_module("ROOT " + line))
    assert ours.value.line_no == _ASYNC_MODULE.count("\n", 0, _ASYNC_MODULE.index("BODY")) + 1
    assert "\n" not in str(ours.value)


def test_async_sugar_is_held_as_xla_holds_it() -> None:
    """`X-start` is an async-start calling a new computation `async_wrapped` whose ROOT is X
    with the start's attributes, and the update and done call it too."""
    module = parse_hlo(_async_module(ASYNC_BODIES["collective"]))
    start, done = module.entry["st"], module.entry["d"]
    assert (start.opcode, done.opcode) == ("async-start", "async-done")
    assert start.called_computations == done.called_computations == ("async_wrapped",)
    wrapped = module["async_wrapped"]
    assert [i.opcode for i in wrapped] == ["parameter", "reduce-scatter"]
    assert wrapped.root.attribute("to_apply") == "%sum"
    assert wrapped.root.shape == "f32[2]{0}"


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
    verdict = _xla_verdict(text)
    assert _our_verdict(text) == verdict
    if verdict is not None:
        normalized = normalize_hlo(text)
        assert _our_verdict(normalized) == _xla_verdict(normalized) == verdict


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
    references = [m for m in _CALL_REFERENCE.finditer(text, _body_start(text)) if m[2] in module]
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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


@versions.requires_jax("xla-parser-checks-as-in-jaxlib-0.12")
@pytest.mark.parametrize("groups", MESH_REPLICA_GROUPS)
def test_mesh_replica_groups_match_xla(groups: str) -> None:
    text = _sharded(f"replica_groups={groups}, to_apply=%add")
    assert _our_verdict(text) == _xla_verdict(text)


@pytest.mark.parametrize("attribute", MESH_XLA_CANNOT_BUILD)
def test_mesh_axes_named_twice_are_rejected(attribute: str) -> None:
    with pytest.raises(HloParseError) as ours:
        parse_hlo(_sharded(attribute))
    assert ours.value.line_no == 9


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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


@pytest.mark.parametrize("where", _PLACES)
@pytest.mark.parametrize("shape", SHAPES_READ_ALIKE)
def test_shapes_are_read_alike_everywhere(shape: str, where: str) -> None:
    text = _placed(where, shape)
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


@pytest.mark.parametrize(
    "index", ["9223372036854775807", "9223372036854775808", "18446744073709551616", "-0", "1"]
)
def test_integer_attributes_xla_can_read_match_xla(index: str) -> None:
    text = (
        "HloModule m\nENTRY e {\n  t = (f32[2]{0}, s32[]) parameter(0)\n"
        f"  ROOT g = s32[] get-tuple-element(t), index={index}\n}}\n"
    )
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


@pytest.mark.parametrize("items", [i for i in LAYOUT_ITEMS if " " not in i])
def test_layout_items_in_signatures_and_typed_operands_match_xla(items: str) -> None:
    for where in ("signature parameter", "typed operand"):
        text = _placed(where, f"f32[2]{{0:{items}}}")
        assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(_ATTR_MODULE.replace("ROOT_TEXT", root)) is None


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
    assert _our_verdict(text) == _xla_verdict(text)


_NEGATE = (
    "ENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4] parameter(0)\n"
    "  ROOT %r = f32[4] negate(%p)\n}\n"
)


@pytest.mark.parametrize("escape", list(_ESCAPES.values()), ids=list(_ESCAPES))
@pytest.mark.parametrize("place", ["FileNames", "FunctionNames", "execution_thread"])
def test_module_string_escapes_match_xla(place: str, escape: str) -> None:
    if place == "execution_thread":
        text = (
            "HloModule m\n%t (a: f32[4]) -> f32[4] {\n  ROOT %a = f32[4] parameter(0)\n}, "
            f'execution_thread="a{escape}"\n'
            + _NEGATE.replace("negate(%p)", "call(%p), to_apply=%t")
        )
    else:
        rows = {"FileNames": "", "FunctionNames": ""}
        rows[place] = f'1 "a{escape}"\n'
        text = (
            f"HloModule m\nFileNames\n{rows['FileNames']}FunctionNames\n{rows['FunctionNames']}"
            "FileLocations\nStackFrames\n" + _NEGATE
        )
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


_TUPLE_RESULT = (
    "ENTRY %e (p: f32[4]) -> (f32[4], (f32[4], f32[4])) {\n  %p = f32[4] parameter(0)\n"
    "  %t = (f32[4], f32[4]) tuple(%p, %p)\n"
    "  ROOT %r = (f32[4], (f32[4], f32[4])) tuple(%p, %t)\n}\n"
)


@pytest.mark.parametrize("index", ["{}", "{0}", "{1, 1}", "{1,}", "{-1}", "{2}", "{0,0}", "{1,2}"])
@pytest.mark.parametrize("result", ["array", "tuple"])
def test_alias_output_index_is_of_the_result_as_in_xla(result: str, index: str) -> None:
    body = _NEGATE if result == "array" else _TUPLE_RESULT
    text = f"HloModule m, input_output_alias={{ {index}: (0, {{}}) }}\n" + body
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


def test_parameter_replication_is_checked_again_for_another_shape() -> None:
    """The same attribute list on a parameter of another shape (it is not cached by its text)."""
    text = (
        "HloModule m\nENTRY %e (p: f32[4], q: (f32[4], f32[4])) -> f32[4] {\n"
        "  %p = f32[4] parameter(0), parameter_replication={true}\n"
        "  %q = (f32[4], f32[4]) parameter(1), parameter_replication={true}\n"
        "  ROOT %r = f32[4] negate(%p)\n}\n"
    )
    assert _our_verdict(text) is None
    assert _xla_verdict(text) is None


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
    assert _our_verdict(text) == _xla_verdict(text)


# -- frame tables, comments holding brackets, sharding details, leftovers ----------------------

_TABLES = (
    'FileNames\n1 "a.py"\nFunctionNames\n1 "f"\nFileLocations\n'
    "1 {file_name_id=1 function_name_id=1 line=2 end_line=2 column=0 end_column=0}\n"
    "StackFrames\n1 {file_location_id=1 parent_frame_id=0}\n"
)
_TWO = "%t (a: f32[4]) -> f32[4] {\n  ROOT %a = f32[4] parameter(0)\n}\n"


def _stack_frames(row: str) -> str:
    return f"HloModule m\nFileNames\nFunctionNames\nFileLocations\nStackFrames\n{row}\n" + _NEGATE


def _file_names(row: str) -> str:
    return f"HloModule m\nFileNames\n{row}\nFunctionNames\nFileLocations\nStackFrames\n" + _NEGATE


@pytest.mark.parametrize(
    "text",
    [
        "HloModule m\n" + _TABLES + _NEGATE,
        _TABLES + _NEGATE,
        "HloModule m\n" + _NEGATE + _TABLES,
        "HloModule m\n" + _TWO + _TABLES + _NEGATE,
        _TABLES + "HloModule m\n" + _NEGATE,
        "HloModule m\n" + _TABLES + _TABLES + _NEGATE,
        "HloModule m\n" + _TABLES.replace("\n", " ") + "\n" + _NEGATE,
        'HloModule m, is_scheduled=true FileNames 1 "a" FunctionNames FileLocations StackFrames '
        + _NEGATE,
        'HloModule m\nFileNames // x\n// c\n1 /* k */ "a.py"\nFunctionNames\nFileLocations\n'
        "StackFrames\n" + _NEGATE,
        "HloModule m\nFileNames\n" + _NEGATE,
        "HloModule m\n%FileNamesX (a: f32[4]) -> f32[4] {\n  ROOT %a = f32[4] parameter(0)\n}\n"
        + _NEGATE,
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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


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
    assert _our_verdict(text) == _xla_verdict(text)


def _negate_with(attribute: str) -> str:
    return _NEGATE.replace("negate(%p)", f"negate(%p), {attribute}")


def _domain(entry: str, exit_: str) -> str:
    return _NEGATE.replace(
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
    assert _our_verdict(text) == _xla_verdict(text)


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
    return _NEGATE.replace(
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
    assert _our_verdict(text) == _xla_verdict(text)


@pytest.mark.parametrize("literal", ["f32[2]{1} {1,2}", "f32[2,2]{0,0} {{1,2},{3,4}}"])
def test_custom_call_literal_layouts_xla_aborts_on_are_rejected(literal: str) -> None:
    """XLA's parser aborts on a literal's layout that is no permutation: the reader alone."""
    with pytest.raises(HloParseError) as raised:
        parse_hlo(_custom_call_literal(literal))
    assert len(str(raised.value).splitlines()) == 1
