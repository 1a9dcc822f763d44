"""What the oracle tests (test_oracle*.py) share: XLA's verdict on a text through jaxlib's
private parser and the reader's verdict on it, the bank of valid and invalid modules, the
corpus modules they reformat, and the values a typed attribute takes (values_for)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.hlo.attributes import value_syntax
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

from .attribute_value_cases import VALUES_OF_KIND, VALUES_OF_NAME

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )

HERE = Path(__file__).parent
PRINTED_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")
ASYNC = {"kAsyncStart": "async-start", "kAsyncUpdate": "async-update", "kAsyncDone": "async-done"}


def oracle(text: str) -> tuple[int, Counter[str]]:
    module = oracles.xla_module(text)
    counts: Counter[str] = Counter()
    for computation in module.computations:
        for instruction in computation.instructions:
            opcode = ASYNC.get(instruction.opcode)
            if opcode is None:
                printed = PRINTED_OPCODE.search(instruction.printed)
                assert printed is not None, instruction.printed
                opcode = printed.group(1)
            counts[opcode] += 1
    return len(module.computations), counts


# -- the bank: reformatted-valid and invalid modules, each checked against XLA's verdict --------

BANK = sorted((HERE / "fixtures" / "bank").glob("*.hlo"))
# a bank file whose first line says so gets another verdict from parsers before jaxlib 0.12
NEWER_VERDICT = "// verdict of jaxlib 0.12:"


def bank_param(path: Path, value: object = None) -> object:
    """`value` (default: the path) as a parameter, gated to jaxlib 0.12 where the file says so."""
    value = path if value is None else value
    if path.read_text().startswith(NEWER_VERDICT):
        return pytest.param(value, marks=versions.requires_jax("xla-attribute-table"))
    return value


def xla_verdict(text: str) -> tuple[int, Counter[str]] | None:
    """XLA's computation count and opcode counts, or None when its parser rejects `text`."""
    try:
        return oracle(text)
    except Exception:  # noqa: BLE001 - the bindings raise a plain RuntimeError/ValueError
        return None


def our_verdict(text: str) -> tuple[int, Counter[str]] | None:
    try:
        module = parse_hlo(text)
    except HloParseError as exc:
        assert exc.line_no >= 1 and exc.expected and "\n" not in str(exc)
        return None
    return len(module.computations), opcode_counts(module)


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


def body_start(text: str) -> int:
    """Offset of the first computation header (stack-frame table rows are line-based)."""
    header = re.search(r"^(?:ENTRY )?%?[\w.\-]+ ?(?:\(.*\) -> .*)?\{$", text, re.M)
    assert header is not None
    return header.start()


def values_for(opcode: str, name: str) -> tuple[list[str], list[str]]:
    """(values XLA rejects, values it reads) for `opcode`'s attribute `name`."""
    for key in ((opcode, name), name):
        if key in VALUES_OF_NAME:
            return VALUES_OF_NAME[key]
    syntax = value_syntax(opcode, name)
    assert syntax is not None
    return VALUES_OF_KIND[syntax[0]]


NEGATE_MODULE = (
    "ENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4] parameter(0)\n"
    "  ROOT %r = f32[4] negate(%p)\n}\n"
)
