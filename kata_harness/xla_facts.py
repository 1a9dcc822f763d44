"""What XLA's own parser reads in an HLO text: the oracle of the phase 3 reading tasks.

The text goes through jaxlib's private HLO parser (:func:`.oracles.xla_module`, asked first in a
child process) and XLA prints the module back; the facts are read from XLA's objects and its own
printing, never from xla_inspect, so a test compares the learner's reading (or prediction) with
XLA's and not with the library the learner may use.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

import pytest

from . import oracles
from .xla_shapes import printed_shape

_PRINTED = re.compile(r"^%?(?P<name>[\w.\-]+) = .*? (?P<opcode>[a-z][a-z0-9-]*)\((?P<args>.*?)\)")
_ENTRY_LINE = re.compile(r"^ENTRY %?([\w.\-]+) ", re.MULTILINE)
_ROOT_LINE = re.compile(r"^\s*ROOT %?([\w.\-]+) = ", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class XlaFacts:
    """ENTRY's parameters as (number, layout as XLA prints it), sorted by number; ENTRY's ROOT
    as (opcode, shape as XLA prints it); the shapes of every constant of every computation, and
    (shape, literal) of each; how many computations the module holds; per fusion kind, the
    opcodes of the computations its fusions call, each call counted (parameters left out)."""

    params: tuple[tuple[int, str], ...]
    root: tuple[str, str]
    constants: Counter
    literals: Counter
    computations: int
    fusions: dict[str, Counter]


_LAYOUT = re.compile(r"\{[^{}]*\}$")
# Every attribute by which XLA prints a called computation: one name, or a list in braces.
_CALLED = re.compile(
    r"\b(?:calls|to_apply|select|scatter|condition|body|true_computation|false_computation)"
    r"=%?([\w.\-]+)"
)
_CALLED_LIST = re.compile(r"\b(?:branch_computations|called_computations)=\{([^{}]*)\}")
_KIND = re.compile(r", kind=(\w+)")


def layout_of(shape) -> str:
    """The layout XLA prints for a shape, braces and all ("{1,0}", tiles too: "{1,0:T(2)}"); a
    scalar's "{}"; a tuple's its elements' in parentheses: "({1,0}, {})"."""
    if shape.is_tuple():
        return "(" + ", ".join(layout_of(s) for s in shape.tuple_shapes()) + ")"
    found = _LAYOUT.search(str(shape))
    return found[0] if found else "{}"


def _literal(printed: str) -> str:
    """The text between a printed constant's parentheses (a complex literal has its own)."""
    start = printed.index(" constant(") + len(" constant(")
    depth = 1
    for at in range(start, len(printed)):
        depth += {"(": 1, ")": -1}.get(printed[at], 0)
        if depth == 0:
            return printed[start:at]
    raise AssertionError(f"unbalanced constant: {printed}")


def _constant_literals(printed: str) -> dict[str, str]:
    """Each constant's literal by instruction name, read from a printed module's lines."""
    rows = (row.strip().removeprefix("ROOT ") for row in printed.splitlines())
    return {
        line["name"]: _literal(line.string)
        for line in map(_PRINTED.match, rows)
        if line and line["opcode"] == "constant"
    }


def _full_literals(text: str) -> dict[str, str]:
    """Each constant's literal by instruction name (unique in XLA's print), printed in full: XLA's
    default print elides a tuple-shaped literal and an array's of more than ten elements as
    "{...}", which is not the literal the text holds. A literal the text itself elides (the
    compiled stage's default print does) stays "{...}": XLA's parser fills it with made-up
    values, which are not what the text holds either."""
    from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # no stub

    options = _hlo.HloPrintOptions()
    options.print_large_constants = True
    full = _constant_literals(oracles.xla_parsed(text).to_string(options))
    elided = {name for name, literal in _constant_literals(text).items() if literal == "{...}"}
    return {name: "{...}" if name in elided else literal for name, literal in full.items()}


def _called(printed: str) -> list[str]:
    """The computations a printed instruction calls, by every attribute that names them."""
    listed = [name for names in _CALLED_LIST.findall(printed) for name in names.split(",")]
    return _CALLED.findall(printed) + [name.strip().lstrip("%") for name in listed]


def _fusion_contents(computations) -> dict[str, Counter]:
    """What each fusion runs, read from XLA's printed instructions: the opcodes of the computation
    its calls= names, and of what those call in turn (calls=, to_apply=, select=, scatter=, a
    nested fusion's calls=, ...), once per call."""
    lines = {c.name: [_PRINTED.match(i.printed) for i in c.instructions] for c in computations}

    def reached(name: str) -> Counter:
        counts: Counter = Counter()
        for line in lines[name]:
            assert line, name
            if line["opcode"] != "parameter":
                counts[line["opcode"]] += 1
            for called in _called(line.string):
                counts += reached(called)
        return counts

    contents: dict[str, Counter] = {}
    for computation in computations:
        for line in lines[computation.name]:
            if line and line["opcode"] == "fusion":
                kind = _KIND.search(line.string)
                assert kind, line.string
                counts = contents.setdefault(kind[1], Counter())
                for called in _called(line.string):
                    counts += reached(called)
    return contents


@cache
def xla_facts(text: str) -> XlaFacts:
    """XLA's reading of ``text`` (skips the test when jaxlib has no HLO parser)."""
    pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO parser is absent")
    module = oracles.xla_module(text)
    printed = module.text
    entry_line = _ENTRY_LINE.search(printed)
    assert entry_line, "XLA printed no ENTRY computation"
    entry_name = entry_line.group(1)
    entry_block = printed[printed.index(f"ENTRY %{entry_name}") :]
    entry_block = entry_block[: entry_block.index("\n}")]
    root_line = _ROOT_LINE.search(entry_block)
    assert root_line, "XLA printed no ROOT in ENTRY"
    root_name = root_line.group(1)
    params: list[tuple[int, str]] = []
    root: tuple[str, str] | None = None
    constants: Counter = Counter()
    literals: Counter = Counter()
    computations = module.computations
    full: dict[str, str] | None = None
    for computation in computations:
        for instruction in computation.instructions:
            printed_line = _PRINTED.match(instruction.printed)
            assert printed_line, instruction.printed
            opcode = printed_line["opcode"]
            shape = printed_shape(instruction.printed)
            if opcode == "constant":
                constants[str(shape)] += 1
                literal = _literal(instruction.printed)
                if literal == "{...}":
                    full = full if full is not None else _full_literals(text)
                    literal = full[instruction.name]
                literals[(str(shape), literal)] += 1
            if computation.name != entry_name:
                continue
            if opcode == "parameter":
                params.append((int(printed_line["args"]), layout_of(shape)))
            if instruction.name == root_name:
                root = (opcode, str(shape))
    assert root is not None, f"XLA names ROOT {root_name} but holds no such instruction"
    return XlaFacts(
        tuple(sorted(params)),
        root,
        constants,
        literals,
        len(computations),
        _fusion_contents(computations),
    )
