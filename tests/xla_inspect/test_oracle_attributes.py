"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on the attributes each
opcode takes (the table XLA lists) and on the values a typed attribute takes."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.hlo.attributes import BAD_ATTRIBUTE_VALUE, value_syntax
from xla_inspect.hlo.opcodes import ANY_INSTRUCTION_ATTRIBUTES, OPCODE_ARITY, OPCODE_ATTRIBUTES
from xla_inspect.parse import parse_hlo

from .xla_verdicts import (
    BANK,
    HERE,
    bank_param,
    values_for,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )
jaxlib_version = importlib.metadata.version("jaxlib")


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
@pytest.mark.usefixtures("asked_at_once")
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


# attributes every instruction takes are tried on a few opcodes, not on all of them
_ANY_INSTRUCTION_PROBES = ("negate", "parameter", "tuple", "fusion")
_TYPED = [
    (opcode, name)
    for opcode in sorted(BAD_ATTRIBUTE_VALUE)
    for name in sorted(OPCODE_ATTRIBUTES[opcode])
    if value_syntax(opcode, name) is not None
    and (name not in ANY_INSTRUCTION_ATTRIBUTES or opcode in _ANY_INSTRUCTION_PROBES)
]


@pytest.fixture(scope="module")
def asked_at_once() -> None:
    """XLA's verdicts on every probe the attribute table and value syntax tests send, asked in
    one batch: the helper remembers them, so each test's own `oracles.xla_module` is answered
    without a round trip to it per text (about 2,400, each a wait for the helper under load)."""
    texts = [_probe(opcode, b) for opcode in OPCODE_ATTRIBUTES for b in (False, True)]
    for opcode, name in _TYPED:
        wrong, right = values_for(opcode, name)
        texts += [_probe(opcode, attribute=f"{name}={v}, zzz_probe=1") for v in wrong + right]
    oracles.xla_verdicts(texts)


def _xla_stops_before_probe(text: str) -> bool:
    """Whether XLA's parser rejects `text` before it reaches the unknown attribute zzz_probe."""
    with pytest.raises(Exception) as xla:  # noqa: PT011 - the bindings' own error type
        oracles.xla_module(text)
    first = re.search(r"error: ([^\n]*)", str(xla.value))
    assert first is not None, str(xla.value)
    return 'unexpected attribute "zzz_probe"' not in first[1]


@versions.requires_jax("xla-attribute-table")
@pytest.mark.parametrize(("opcode", "name"), _TYPED, ids=lambda v: v)
@pytest.mark.usefixtures("asked_at_once")
def test_attribute_value_syntax_is_what_xla_reads(opcode: str, name: str) -> None:
    """On each wrong value XLA stops at the value (before the unknown attribute after it) and
    the reader rejects the value with one line naming the attribute; on each right value XLA
    reads on to that unknown attribute (so nothing is built) and the reader reads past it (it may
    then miss an attribute the opcode requires, which the probe leaves out, or reject what XLA
    rejects when it builds the probe, as XLA would)."""
    wrong, right = values_for(opcode, name)
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
            assert f"'{opcode}' requires:" in exc.expected or xla_verdict(text) is None, value


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
    [bank_param(p, p.name) for p in BANK if p.name.startswith("invalid_attribute_value_")]
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
