"""Independent oracles the kata tests compare with, kept out of the test files: this module's
verdicts of XLA's HLO parser, and one module per phase or concern (:mod:`.tpu_hlo`: phase 11's
facts of TPU HLO, ...), each stating which XLA fact it computes.

XLA's own HLO parser (jaxlib's private ``jaxlib._hlo``, the one the reader's oracle tests use) is
the judge of what a module is: whether XLA reads a text at all, and what it makes of it. It is
asked only in a child process (:mod:`kata_harness.xla_child`), as on some jaxlib versions it
aborts the process on some invalid texts instead of raising, and has crashed re-reading a text
in the test process: an abort is a verdict too (:class:`XlaAborted`), and what XLA made of a text
comes back as plain data (:class:`XlaModule`). Only :func:`xla_parsed` builds the parser's
own objects here, and only from a text the helper accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..xla_child import XLA_PARSER, Verdict


class XlaAborted(Exception):
    """XLA's parser aborted (or hung) on this text instead of accepting or rejecting it."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(f"XLA's parser {verdict.kind} on this text: {verdict.message}")
        self.verdict = verdict


class XlaRejected(Exception):
    """XLA's parser rejected this text; the message is the parser's own."""


@dataclass(frozen=True, slots=True)
class XlaInstruction:
    name: str
    opcode: str  # XLA's enum name, e.g. "kFusion"
    printed: str  # XLA's canonical print of the instruction


@dataclass(frozen=True, slots=True)
class XlaComputation:
    name: str
    instructions: tuple[XlaInstruction, ...]


@dataclass(frozen=True, slots=True)
class XlaModule:
    """The module XLA's parser built, as plain data: its computations, its canonical print
    (``text``) and its print with each operand's shape (``long_text``, as in XLA's logs)."""

    computations: tuple[XlaComputation, ...]
    text: str
    long_text: str


def xla_verdict(text: str) -> Verdict:
    """XLA's verdict on ``text`` ("accepted", "rejected", "aborted" or "timed out"), from a
    child process."""
    return XLA_PARSER.verdict(text)


def xla_verdicts(texts: list[str]) -> list[Verdict]:
    """:func:`xla_verdict` of many texts at once (one round trip to the helper process)."""
    return XLA_PARSER.verdicts(texts)


def xla_module(text: str) -> XlaModule:
    """What XLA's parser builds from ``text``: raises :class:`XlaRejected` with XLA's message
    when it rejects the text, and :class:`XlaAborted` when it would have aborted the process."""
    verdict = XLA_PARSER.verdict(text)
    if verdict.kind == "rejected":
        raise XlaRejected(verdict.message)
    if verdict.kind != "accepted":
        raise XlaAborted(verdict)
    facts = verdict.facts
    computations = tuple(
        XlaComputation(name, tuple(XlaInstruction(*row) for row in rows))
        for name, rows in facts["computations"]
    )
    return XlaModule(computations, facts["text"], facts["long_text"])


def xla_parsed(text: str) -> Any:
    """The parser's own module object, for the few oracles that need its operands or shapes:
    built in this process only from a text the helper process accepted (and so never from one
    XLA rejects or aborts on); raises as :func:`xla_module` does otherwise."""
    verdict = XLA_PARSER.verdict(text)
    if verdict.kind == "rejected":
        raise XlaRejected(verdict.message)
    if verdict.kind != "accepted":
        raise XlaAborted(verdict)
    from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # no stub

    return _hlo.hlo_module_from_text(text)


def xla_accepts(text: str) -> bool:
    return XLA_PARSER.verdict(text).kind == "accepted"
