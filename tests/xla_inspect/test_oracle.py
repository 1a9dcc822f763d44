"""The reader agrees with XLA's own C++ parser on every corpus module and text fixture, on the
bank of valid and invalid modules, and on corpus modules reformatted or broken at random.

The oracle is jaxlib's private `jaxlib._hlo.hlo_module_from_text`, used by these tests only.
Its opcodes are enum members (`kExp` for `exponential`), so each instruction's opcode is read
from the C++ printer's canonical `name = shape opcode(...)` text instead, except for the generic
async ops, which the printer names after the op they wrap (`abs-start`): those are counted by enum
(`async-start`), as the hand-written fixture spells them.

The other topics are in test_oracle_*.py; what they share (the oracle's verdicts, the bank,
the reformatting sources, the values of typed attributes) in xla_verdicts.py.
"""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

from .xla_verdicts import (
    BANK,
    HERE,
    REFORMAT_SOURCES,
    bank_param,
    body_start,
    oracle,
    our_verdict,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )
TEXT_FILES = sorted(HERE.glob("corpus/*.hlo")) + sorted(HERE.glob("fixtures/*.hlo"))
# each gated where it is written in syntax older parsers lack
TEXT_PARAMS = [
    pytest.param(p, marks=versions.requires_jax(versions.NEWER_SYNTAX_GATE))
    if versions.uses_newer_hlo_syntax(p.read_text())
    else p
    for p in TEXT_FILES
]


@pytest.mark.parametrize("path", TEXT_PARAMS, ids=lambda p: p.name)
def test_reader_matches_xla_parser(path) -> None:
    text = path.read_text()
    module = parse_hlo(text)
    computations, counts = oracle(text)
    assert len(module.computations) == computations
    assert sum(len(c.instructions) for c in module.computations) == counts.total()
    assert opcode_counts(module) == counts


@pytest.mark.parametrize("path", TEXT_PARAMS, ids=lambda p: p.name)
def test_long_form_with_operand_shapes_matches_xla(path) -> None:
    """XLA's default printer writes each operand's shape before it (`add(f32[2]{0} %a, ...)`),
    as in its logs: the reader takes that form too, and still checks each shape against the
    operand's (a wrong one written in is rejected, as XLA rejects it)."""
    options = _hlo.HloPrintOptions()
    options.print_operand_shape = True
    long_form = oracles.xla_module(path.read_text()).long_text
    assert our_verdict(long_form) == xla_verdict(long_form) is not None
    typed = re.search(r"[a-z]\((pred|[a-z]+[0-9]+)\[", long_form)
    if typed is not None:  # the first operand shape written, made another element type's
        other = "s8" if typed.group(1) != "s8" else "u8"
        wrong = long_form[: typed.start(1)] + other + long_form[typed.end(1) :]
        assert our_verdict(wrong) == xla_verdict(wrong) is None


@pytest.mark.parametrize(
    "operands",
    [
        "%a, %b, %c, %d, %e, /*index=5*/%f",  # a long list as XLA prints it
        "a, %b, %c, %d, %e, /*index=5*/f",
        "%a, %b, %c, %d, %e, /*index=5*/ %f",
        "%a, %b, %c, %d, %e /*index=5*/, %f",
        "%a, %b, %c, %d, %e, /*index=5*//* more */%f",
        "%a, %b, %c, %d, %e, /*index=5*/%f, /*index=6*/%a",
        "%a, %b, %c, %d, %e, /*index=5*/%g",  # no instruction %g
        "%a, %b, %c, %d, %e, /*index=5*/",
        "%a, %b, %c, %d, %e, /*index=5*/%f /*index=6*/%a",
        "%a, %b, %c, %d, %e, /*index=5*/%f#0",
        "%a, %b, %c, %d, %e, /* a ',' last, then a comment */",
        "%a,\n    %b, %c, %d, %e, %f,\n  ",  # a ',' last, on a line of its own
    ],
)
def test_operand_comments_getxla_verdict(operands: str) -> None:
    """XLA's lexer reads a comment as a blank. An operand list with XLA's `/*index=N*/`
    numbers (which the reader takes on its line path) or other comments gets XLA's verdict, and
    an accepted one names the operands the list holds once its comments are taken out (an
    empty one skipped)."""
    parameters = "".join(f"  %{n} = f32[2]{{0}} parameter({k})\n" for k, n in enumerate("abcdef"))
    text = (
        f"HloModule m\nENTRY e {{\n{parameters}"
        f'  ROOT %t = f32[2]{{0}} custom-call({operands}), custom_call_target="x"\n}}\n'
    )
    verdict = xla_verdict(text)
    assert our_verdict(text) == verdict
    if verdict is not None:
        pieces = re.sub(r"/\*.*?\*/", " ", operands).split(",")
        names = tuple(piece.strip().removeprefix("%") for piece in pieces if piece.strip())
        assert parse_hlo(text).entry.root.operands == names


@pytest.fixture(scope="module")
def bank_asked_at_once() -> None:
    """XLA's verdicts on the whole bank, asked in one batch (the helper remembers them): not
    one round trip to it per file, each a wait for the helper under load."""
    oracles.xla_verdicts([path.read_bytes().decode() for path in BANK])


@pytest.mark.parametrize("path", [bank_param(p) for p in BANK], ids=lambda p: p.name)
@pytest.mark.usefixtures("bank_asked_at_once")
def test_bank_verdicts_match_xla(path) -> None:
    text = path.read_bytes().decode()  # bytes: keep '\r\n' where a fixture has it
    expected = xla_verdict(text)
    # the file name states XLA's verdict, so a fixture that stops saying what it says fails
    assert (expected is not None) == path.name.startswith("valid_")
    assert our_verdict(text) == expected


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


@functools.cache
def _lexed(
    text: str,
) -> tuple[int, list[tuple[int, int, str]], st.SearchStrategy[int], st.SearchStrategy[set[int]]]:
    """`text`'s body start, its tokens (start, end, text) and the strategies drawing a token and
    a set of tokens, made once per source: lexing a whole module at every draw was most of
    what drawing cost, and a strategy made at every draw is validated by hypothesis each time."""
    start = body_start(text)
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text, start)]
    one = st.integers(0, len(tokens) - 2)
    some = st.sets(st.integers(0, len(tokens) - 1), max_size=20)
    return start, tokens, one, some


_SOURCES = st.sampled_from(REFORMAT_SOURCES)
_EDITS = st.integers(1, 12)
_SEPARATOR = st.sampled_from(SEPARATORS)


@st.composite
def reformatted(draw: st.DrawFn) -> str:
    text = draw(_SOURCES)
    start, tokens, one, some = _lexed(text)
    edits: dict[int, str] = {}
    for _ in range(draw(_EDITS)):
        k = draw(one)
        edits[tokens[k][1]] = draw(_SEPARATOR)
    drop = draw(some)
    pieces, at = [text[:start]], start
    for k, (begin, end, word) in enumerate(tokens):
        pieces.append(text[at:begin])
        pieces.append(word[1:] if k in drop and word[:1] == "%" and word[-1] not in "=:" else word)
        pieces.append(edits.get(end, ""))
        at = end
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
    assert our_verdict(text) == xla_verdict(text)


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


_MISTAKE = st.sampled_from(MISTAKES)


@st.composite
def broken(draw: st.DrawFn) -> str:
    text = draw(reformatted())
    pattern, replace = draw(_MISTAKE)
    matches = list(pattern.finditer(text, body_start(text)))
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
    assert our_verdict(text) == xla_verdict(text)


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
