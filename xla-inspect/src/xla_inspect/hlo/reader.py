"""parse_hlo: read HLO text (optimized, unoptimized short form, or hand-written) into a model.

Two paths share one set of checks. The fast path is line-oriented: one precompiled regular
expression recognises the common one-line instruction as XLA prints it. Everything else
(module and computation headers, wrapped lines, comments, spaces inside shapes, multi-line
attribute values, several instructions on a line) is read token by token with the rules of
XLA's lexer (xla/hlo/parser/hlo_lexer.cc): whitespace and `/* */` / `//` comments between any two
tokens, `name=` (no space) is an attribute name, `%` optional on names. Attribute text is kept
(comments dropped, runs of whitespace as one space).

The reader is built in layers (docs/architecture.md): tokens, one instruction's checks, its
operands, the token path, a computation's instructions, the module; then the passes that need
every computation (calls, async chains) run over what was read.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Mapping
from types import MappingProxyType

from xla_inspect.hlo import header
from xla_inspect.hlo.async_ops import AsyncOps
from xla_inspect.hlo.model import HloModule


class Reader(AsyncOps):
    """Reads a module, then applies the checks that need every computation read."""

    def module(self) -> HloModule:
        name, attributes, computations, entry, order = self.read_module()
        if "input_output_alias" in attributes:
            self.check_output_indices(attributes["input_output_alias"], entry)
        self.check_calls(order, computations)
        if self.has_async:
            computations = self.async_ops(computations)
            entry = next(c for c in computations if c.name == entry.name)
        return HloModule(name, MappingProxyType(attributes), tuple(computations), entry)

    def module_attributes(self, text: str) -> Mapping[str, str]:
        return module_attributes(text)


# Texts up to this many characters are remembered (the last 64): a model is immutable, so a
# text read again (a test's variants, a notebook cell run twice) gets the model read before.
# A model is 2.6-4x its text (docs/figures.md), so what is kept stays under about 64 MB; larger
# texts are read each time. The course's recorded modules are 2-47 KB.
REMEMBERED_CHARS = 1 << 18


def parse_hlo(text: str) -> HloModule:
    """Parse HLO module text. Raises HloParseError (line, line text, what was expected).

    The model is immutable (frozen dataclasses, tuples, read-only mappings): the same text, up to
    REMEMBERED_CHARS, parsed again returns the model read the first time (the last 64 texts).
    The cyclic garbage collector is paused while parsing (and restored after): the reader
    makes no cycles, and on a 30 MB module the collector's repeated passes over the growing
    instruction list would otherwise cost a third of the time.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if type(text) is str and len(text) <= REMEMBERED_CHARS:
        return _remembered(text)
    return _read(text)


@functools.lru_cache(maxsize=64)
def _remembered(text: str) -> HloModule:
    return _read(text)


def _read(text: str) -> HloModule:
    collecting = gc.isenabled()
    gc.disable()
    try:
        return Reader(text).module()
    finally:
        if collecting:
            gc.enable()


def check_module_attributes(attributes: Mapping[str, str]) -> tuple[str, str] | None:
    """The first header attribute XLA's parser would refuse, as (its name, what was expected),
    or None (header.check_module_attributes, a module held in a value read by parse_hlo)."""
    return header.check_module_attributes(attributes, module_attributes)


def module_attributes(text: str) -> Mapping[str, str]:
    """The header attributes of the module `text` holds."""
    return parse_hlo(text).attributes
