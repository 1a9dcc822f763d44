"""Make HLO text deterministic: an ordered list of named, pure rules.

`normalize_hlo(text)` applies `RULES` in order. The output is meant to be identical across runs,
`PYTHONHASHSEED` values, source paths and line numbers, Python function and argument names, and
the number of usable cores; it keeps everything that says what the program computes: opcodes,
shapes, layouts (`{1,0}`), fusion kinds (`kind=kLoop`), dimension attributes, windows, slices,
replica groups, constants' literal values, custom-call targets and the custom fusion kind in
`backend_config`.

Not guaranteed: identical output across jax/jaxlib versions or platforms (XLA makes different
decisions there), and names that mean anything: instruction names become `<opcode>.<n>`.
Works on optimized HLO (`%` sigils, metadata, stack-frame tables) and on the short unoptimized
form (`lowered.as_text(dialect="hlo")`), and on text formatted otherwise where XLA's parser
accepts it (whitespace and comments between tokens, definitions split over lines). Names are
renamed only where they stand as names, never inside attribute names, other values or literals.

This module holds the rules and their order; the renaming rule's two ways of reading a module
live apart: `_renumber_printed` (XLA's printed form, fast) and `_renumber_walk` (any form XLA's
parser accepts), both naming as `_canonical_names` says.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xla_inspect._renumber_printed import renamed_printed
from xla_inspect._renumber_walk import Renamer, Unreadable

__all__ = ["RULES", "Rule", "normalize_hlo"]


@dataclass(frozen=True)
class Rule:
    """One normalization step: a pure `str -> str` function with a name."""

    name: str
    apply: Callable[[str], str]

    @property
    def doc(self) -> str:
        """What the rule removes and why (the function's docstring)."""
        return inspect.getdoc(self.apply) or ""

    def __call__(self, text: str) -> str:
        return self.apply(text)


def unify_line_endings(text: str) -> str:
    """Turn `\r\n` and lone `\r` into `\n`, so that every later rule sees one kind of line.

    Line endings depend on the editor or platform that last saved a file, not on the program.
    """
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


# a table's name and its rows (`N "string"` or `N {...}`, which may be spread over lines), from
# the newline before the name: the newline after the last row stays, so a table that follows at
# once is matched too
_TABLE = re.compile(
    r"\n[ \t]*(?:FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*"
    r'(?:\s*\d+\s*(?:"(?:[^"\\\n]|\\.)*"|\{[^{}]*\})[ \t]*)*(?=\n|\Z)'
)


def strip_stack_frame_tables(text: str) -> str:
    """Remove the `FileNames`/`FunctionNames`/`FileLocations`/`StackFrames` tables.

    They hold absolute source paths, Python function names and line/column numbers: they change
    when the code moves, never when the computation does.
    """
    return _TABLE.sub("", "\n" + text)[1:]


# `, metadata={...}` with quoted strings (which may hold braces) skipped as a whole. The literal
# start lets the regex engine jump between occurrences; a string is read a run of plain
# characters at a time, not one character per alternation (twice as fast).
_METADATA_VALUE = r'=\{[^{}"]*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"[^{}"]*+)*+\}'
_METADATA = re.compile(", metadata" + _METADATA_VALUE)
_METADATA_UNSPACED = re.compile(",metadata" + _METADATA_VALUE)


def strip_metadata(text: str) -> str:
    """Remove `metadata={op_name=... source_file=... stack_frame_id=N}` attributes.

    Metadata records where an op came from in Python (names, files, lines, stack frames); it does
    not affect what XLA computes.
    """
    text = _METADATA.sub("", text)
    return _METADATA_UNSPACED.sub("", text) if ",metadata={" in text else text


# A field after another one goes with its leading comma; a first field with its trailing one.
_LATER_PARTITIONS = re.compile(r',"outer_dimension_partitions":\[[^\]]*\]')
_FIRST_PARTITIONS = re.compile(r'"outer_dimension_partitions":\[[^\]]*\],?')
_EMPTY_CONFIG = re.compile(r', ?backend_config=(?:\{\}|"")')


def strip_volatile_backend_config(text: str) -> str:
    """Drop `"outer_dimension_partitions":[...]` from `backend_config` JSON.

    XLA:CPU splits loops by the number of usable cores, so the field changes with the machine.
    Everything else in `backend_config` is kept (for instance the custom fusion kind
    `{"fusion_config":{"kind":"__ynn_fusion"}}` or a while loop's known trip count); a config
    left empty is dropped altogether.
    """
    if "outer_dimension_partitions" not in text:
        return text
    text = _LATER_PARTITIONS.sub("", text)
    if '"outer_dimension_partitions"' in text:  # the first field of a config
        text = _FIRST_PARTITIONS.sub("", text)
    return _EMPTY_CONFIG.sub("", text) if "backend_config={}" in text else text


# The name may follow on another line or after comments, which are kept.
_MODULE_NAME = re.compile(r"^(HloModule(?:\s+|/\*[\s\S]*?\*/|//[^\n]*)+)[^\s,/][^\s,]*", re.M)


def canonical_module_name(text: str) -> str:
    """Rename the module to `module`: JAX names it after the Python function (`jit_foo`)."""
    return _MODULE_NAME.sub(r"\1module", text, count=1)


def renumber_names(text: str) -> str:
    """Rename computations and instructions canonically, in order of appearance.

    Names come from Python function and argument names (`jit_relu_.1`, `x.1`, `relu.1`) and from
    counters that shift whenever anything else in the process changes. The ENTRY computation
    becomes `main`, the others `comp.<n>` in order of definition; inside each computation a
    parameter becomes `param.<number>` and any other instruction `<opcode>.<n>`, counting each
    opcode from 0 in order of appearance. The `%` sigil is kept where the input had it.

    A name is renamed where it stands as a name: a computation's header and its signature's
    parameters, an instruction's definition, its operands (typed or not, with or without `%`),
    the values of the computation-valued attributes (model.CALL_ATTRIBUTES) and
    `control-predecessors`. Attribute names, other attribute values, strings, literals and
    comments are kept as written, whatever names the module defines; whitespace and comments may
    stand between any two tokens. Text that does not follow HLO's module grammar is returned as
    it is.
    """
    printed = renamed_printed(text)
    if printed is not None:
        return printed
    renamer = Renamer(text)
    try:
        renamer.scan()
    except Unreadable:
        return text
    return renamer.renamed()


_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
# Indentation other than exactly two spaces (most lines already have two: leave them alone).
_ODD_INDENT = re.compile(r"^(?!  \S)[ \t]+(?=\S)", re.MULTILINE)
# Cheap test for the above: a newline then a tab, one space, or three or more blanks.
_ODD_INDENT_HINT = re.compile(r"\n(?:\t| \t| (?=\S)|  [ \t])")
_BLANK_RUNS = re.compile(r"\n\n\n+")  # a literal start: the engine skips ahead fast


def normalize_whitespace(text: str) -> str:
    """Indent by two spaces, drop trailing spaces, keep at most one blank line in a row.

    Removing tables and attributes leaves uneven blank lines and spacing behind; layout carries
    no meaning in HLO text.
    """
    if " \n" in text or "\t\n" in text or text.endswith((" ", "\t")):
        text = _TRAILING_SPACE.sub("", text)
    if text.startswith((" ", "\t")) or _ODD_INDENT_HINT.search(text):
        text = _ODD_INDENT.sub("  ", text)
    if "\n\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip("\n") + "\n"


RULES: tuple[Rule, ...] = (
    Rule("unify_line_endings", unify_line_endings),
    Rule("strip_stack_frame_tables", strip_stack_frame_tables),
    Rule("strip_metadata", strip_metadata),
    Rule("strip_volatile_backend_config", strip_volatile_backend_config),
    Rule("canonical_module_name", canonical_module_name),
    Rule("renumber_names", renumber_names),
    Rule("normalize_whitespace", normalize_whitespace),
)


def normalize_hlo(text: str, rules: Iterable[Rule] = RULES) -> str:
    """Apply `rules` (by default every rule in `RULES`, in order) to HLO `text`."""
    for rule in rules:
        text = rule(text)
    return text
