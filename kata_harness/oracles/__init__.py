"""Independent oracles the kata tests compare with, kept out of the test files: this module's
verdicts of XLA's HLO parser, and one module per phase or concern (:mod:`.tpu_hlo`: phase 11's
facts of TPU HLO, ...), each stating which XLA fact it computes.

XLA's own HLO parser (jaxlib's private ``jaxlib._hlo``, the one the reader's oracle tests use) is
the judge of what a module is: whether XLA reads a text at all, and what it makes of it. It is
asked first in a child process (:mod:`kata_harness.xla_child`), as on some jaxlib versions it
aborts the process on some invalid texts instead of raising: that is a verdict too
(:class:`XlaAborted`).
"""

from __future__ import annotations

from typing import Any

from ..xla_child import XLA_PARSER, Verdict


class XlaAborted(Exception):
    """XLA's parser aborted (or hung) on this text instead of accepting or rejecting it."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(f"XLA's parser {verdict.kind} on this text: {verdict.message}")
        self.verdict = verdict


def xla_verdict(text: str) -> Verdict:
    """XLA's verdict on ``text`` ("accepted", "rejected", "aborted" or "timed out"), from a
    child process."""
    return XLA_PARSER.verdict(text)


def xla_verdicts(texts: list[str]) -> list[Verdict]:
    """:func:`xla_verdict` of many texts at once (one round trip to the helper process)."""
    return XLA_PARSER.verdicts(texts)


def xla_module(text: str) -> Any:
    """The module XLA's parser builds from ``text``: raises what XLA raises when it rejects the
    text, and :class:`XlaAborted` when it would have aborted the process."""
    verdict = XLA_PARSER.verdict(text)
    if verdict.kind not in ("accepted", "rejected"):
        raise XlaAborted(verdict)
    from jaxlib import _hlo  # type: ignore[attr-defined]

    return _hlo.hlo_module_from_text(text)


def xla_accepts(text: str) -> bool:
    return XLA_PARSER.verdict(text).kind == "accepted"
