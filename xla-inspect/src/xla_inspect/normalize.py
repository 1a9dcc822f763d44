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
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress

from xla_inspect.model import CALL_ATTRIBUTES

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


# -- renumber_names: a scan that follows XLA's grammar, so that only names in name positions are
# renamed. Whitespace and comments may stand between any two tokens, as XLA's lexer allows.
# (possessive: a pattern that fails after a run of blanks must not try every split of the run,
# which took time exponential in its length)
_SEP = r"(?:\s++|/\*[\s\S]*?\*/|//[^\n]*+)*+"
_WORD = r"[A-Za-z_][\w.\-]*"
_SKIP = re.compile(_SEP)
_MODULE = re.compile(rf"{_SEP}HloModule(?![\w.\-]){_SEP}[^\s,]+")
# Stack-frame tables, passed over when this rule runs without strip_stack_frame_tables first.
_FRAME_TABLE = re.compile(
    rf"{_SEP}(?:FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*\n(?:[ \t]*\d+[ \t].*\n?)*"
)
_COMPUTATION = re.compile(rf"{_SEP}(ENTRY(?![\w.\-]){_SEP})?%?({_WORD}){_SEP}")
_ARROW = re.compile(rf"{_SEP}->{_SEP}")
_BODY_OPEN = re.compile(rf"{_SEP}\{{")
_BODY_CLOSE = re.compile(rf"{_SEP}\}}")
# XLA's printed forms, tried first: `%name = f32[8]{0} opcode(%a, %b)`, `, key=value`.
_PRINTED_HEAD = re.compile(
    rf"\s*(?:ROOT )?%?({_WORD}) = {_WORD}\[[^\]]*\](?:\{{[\d:][^{{}}]*\}})? ({_WORD})"
    r"""(\([^()\[\]{}"'/]*\))"""
)
_PRINTED_ATTRIBUTE = re.compile(
    rf"""\s*, ?({_WORD})=([^\s,(){{}}\[\]"'/]+|\{{[^{{}}"'/]*\}})(?![^\s,])"""
)
_INSTRUCTION = re.compile(rf"{_SEP}(?:ROOT(?![\w.\-]){_SEP})?%?({_WORD}){_SEP}={_SEP}")
_OPCODE = re.compile(rf"{_SEP}({_WORD}){_SEP}\(")
_ATTRIBUTE = re.compile(rf"{_SEP},{_SEP}({_WORD}){_SEP}={_SEP}")
# Shapes: `f32[8]{1,0}`, a tuple `(f32[], s32[])`, a buffer `b(f32[8])`. A brace after the dims
# is a layout when an integer or ':' follows it, as in XLA's parser (else it opens a body).
_ARRAY = re.compile(rf"{_SEP}{_WORD}{_SEP}\[[^\]]*\]")
_BUFFER = re.compile(rf"{_SEP}b{_SEP}(?=\()")
_LAYOUT = re.compile(rf"{_SEP}(?=\{{{_SEP}[\d:])")
_STRING = r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
# A group without groups, strings or comments inside; else the next bracket, string, comment or
# lone '/' after a run of other characters.
_FLAT_GROUP = re.compile(r"""[(\[{][^()\[\]{}"'/]*[)\]}]""")
_GROUP_TOKEN = re.compile(
    rf"""[^()\[\]{{}}"'/]*(?:([()\[\]{{}}])|{_STRING}|/\*[\s\S]*?\*/|//[^\n]*|.)"""
)
_QUOTED = re.compile(_STRING)
_BARE_VALUE = re.compile(r"""[^\s,(){}\[\]"'/]+""")
_IGNORED = rf"/\*[\s\S]*?\*/|//[^\n]*|{_STRING}"
# A name among operands: not a dtype (followed by '['), not the opcode of a nested instruction
# (followed by '('); braces (layouts, literals) and brackets (dims) are passed over whole.
_OPERAND = re.compile(
    rf"{_IGNORED}|\{{[^{{}}]*\}}|\[[^\]]*\]|(?<![\w.\-%])(%?)({_WORD})(?![\w.\-]|{_SEP}[(\[])"
)
# The same in an operand list without brackets, strings or comments (XLA's printed form).
_FLAT_OPERAND = re.compile(rf"(?<![\w.\-%])(%?)({_WORD})")
_LISTED = re.compile(rf"{_IGNORED}|(?<![\w.\-%])(%?)({_WORD})(?![\w.\-])")
_SIGNATURE_PARAM = re.compile(rf"{_IGNORED}|(?<![\w.\-%])(%?)({_WORD})(?={_SEP}:)")
# Words XLA's lexer reads as keywords or types: written without '%' they never name anything.
_RESERVED = re.compile(
    r"true|false|inf|nan|HloModule|ENTRY|ROOT|maximal|replicated|manual|last_tile_dim_replicate"
    r"|shard_as|shard_like|unknown|unreduced|pred|token|opaque|[su](?:1|2|4|8|16|32|64)"
    r"|f(?:16|32|64)|bf16|c64|c128|f8e[0-9a-z]+|f4e2m1fn"
)
_PAYLOAD_OPCODES = frozenset({"parameter", "constant"})
_CALL_KEYS = frozenset(CALL_ATTRIBUTES)
_COMPUTATIONS = -1  # the table of computation names; a computation's own names use its index


class _Unreadable(Exception):
    """The text does not follow HLO's module grammar where the scan needs it."""


class _Renamer:
    """One scan of a module: where each name stands and what it names."""

    def __init__(self, text: str) -> None:
        self.text = text
        # (start, end, table, name) of every name token, in order of position
        self.places: list[tuple[int, int, int, str]] = []
        self.computations: list[tuple[str, bool]] = []  # (name, is ENTRY) in order
        self.definitions: list[list[tuple[str, str, str]]] = []  # (name, opcode, payload)

    def scan(self) -> None:
        text = self.text
        module = _MODULE.match(text)
        pos = self._attributes(module.end()) if module else 0
        while True:
            table = _FRAME_TABLE.match(text, pos)
            if table is not None:
                pos = table.end()
                continue
            if _SKIP.match(text, pos).end() == len(text):  # type: ignore[union-attr]
                return
            pos = self._computation(pos)

    def _computation(self, pos: int) -> int:
        text = self.text
        header = _COMPUTATION.match(text, pos)
        if header is None:
            raise _Unreadable
        index = len(self.computations)
        self.computations.append((header[2], header[1] is not None))
        self.definitions.append([])
        self.places.append((header.start(2), header.end(2), _COMPUTATIONS, header[2]))
        pos = header.end()
        if text.startswith("(", pos):
            end = self._close(pos)
            for match in _SIGNATURE_PARAM.finditer(text, pos + 1, end - 1):
                if match[2] is not None:
                    self._place(match, index)
            arrow = _ARROW.match(text, end)
            if arrow is None:
                raise _Unreadable
            pos = self._shape(arrow.end())
        body = _BODY_OPEN.match(text, pos)
        if body is None:
            raise _Unreadable
        pos = body.end()
        first = True
        while True:
            end = self._instruction(pos, index)
            if end < 0:
                close = _BODY_CLOSE.match(text, pos)
                if close is not None:
                    return self._attributes(close.end())
                # Not an instruction: the last attribute value, written with spaces between its
                # tokens (`[2,2] <=[4]`), goes on.
                after = _SKIP.match(text, pos).end()  # type: ignore[union-attr]
                end = self._value(after)
                if first or end == after:
                    raise _Unreadable
            pos = self._attribute_list(end, index)
            first = False

    def _instruction(self, pos: int, index: int) -> int:
        """Read an instruction up to its attributes: the position after its operands, or -1
        when no instruction starts at `pos`."""
        text = self.text
        head = _PRINTED_HEAD.match(text, pos)
        if head is not None:
            opcode, start, end = head[2], head.start(3), head.end(3)
            operands = _FLAT_OPERAND
        else:
            operands = _OPERAND
            head = _INSTRUCTION.match(text, pos)
            if head is None:
                return -1
            found = _OPCODE.match(text, self._shape(head.end()))
            if found is None:
                raise _Unreadable
            opcode, start = found[1], found.end() - 1
            end = self._close(start)
        self.places.append((head.start(1), head.end(1), index, head[1]))
        if opcode in _PAYLOAD_OPCODES:
            payload = text[start + 1 : end - 1]
        else:
            payload = ""
            for match in operands.finditer(text, start + 1, end - 1):
                if match[2] is not None:
                    self._place(match, index)
        self.definitions[index].append((head[1], opcode, payload))
        return end

    def _attribute_list(self, pos: int, index: int) -> int:
        """Read `, key=value` attributes of an instruction of computation `index`."""
        text = self.text
        while True:
            printed = _PRINTED_ATTRIBUTE.match(text, pos)
            if printed is not None:
                key, start, end = printed[1], printed.start(2), printed.end(2)
            elif (attribute := _ATTRIBUTE.match(text, pos)) is not None:
                key, start = attribute[1], attribute.end()
                end = self._value(start)
            else:
                return pos
            if key in _CALL_KEYS:
                self._place_all(start, end, _COMPUTATIONS)
            elif key == "control-predecessors":
                self._place_all(start, end, index)
            pos = end

    def _place_all(self, start: int, end: int, table: int) -> None:
        """Record every name token between `start` and `end` (a name or a braced list)."""
        for match in _LISTED.finditer(self.text, start, end):
            if match[2] is not None:
                self._place(match, table)

    def _place(self, match: re.Match[str], table: int) -> None:
        """Record a name token (`match` group 2, `%` in group 1) unless it is a reserved word."""
        if match[1] or not _RESERVED.fullmatch(match[2]):
            self.places.append((match.start(2), match.end(2), table, match[2]))

    def _shape(self, pos: int) -> int:
        """The position after the shape that starts at `pos` (after whitespace)."""
        text = self.text
        buffer = _BUFFER.match(text, pos)
        if buffer is not None:
            return self._close(buffer.end())
        start = _SKIP.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith("(", start):
            return self._close(start)
        array = _ARRAY.match(text, start)
        if array is None:
            raise _Unreadable
        layout = _LAYOUT.match(text, array.end())
        return self._close(layout.end()) if layout is not None else array.end()

    def _attributes(self, pos: int) -> int:
        """Skip `, key=value` attributes (of the module or of a computation)."""
        while (attribute := _ATTRIBUTE.match(self.text, pos)) is not None:
            pos = self._value(attribute.end())
        return pos

    def _value(self, pos: int) -> int:
        """The end of the attribute value at `pos`: groups, strings and bare runs that touch."""
        text = self.text
        while True:
            char = text[pos : pos + 1]
            if char in ("(", "[", "{"):
                pos = self._close(pos)
            elif char in ('"', "'"):
                quoted = _QUOTED.match(text, pos)
                if quoted is None:
                    raise _Unreadable
                pos = quoted.end()
            else:
                bare = _BARE_VALUE.match(text, pos)
                if bare is None:
                    return pos
                pos = bare.end()

    def _close(self, pos: int) -> int:
        """The position after the bracket that closes the one at `pos`."""
        text = self.text
        flat = _FLAT_GROUP.match(text, pos)
        if flat is not None:
            return flat.end()
        depth = 0
        match = _GROUP_TOKEN.match
        while (token := match(text, pos)) is not None and token.end() > pos:
            bracket = token[1]
            if bracket is None:
                pass
            elif bracket in "([{":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return token.end()
            pos = token.end()
        raise _Unreadable

    def renamed(self) -> str:
        computations = _computation_names(self.computations)
        tables = [_local_names(definitions) for definitions in self.definitions]
        text = self.text
        pieces: list[str] = []
        at = 0
        for start, end, table, name in self.places:
            new = (computations if table == _COMPUTATIONS else tables[table]).get(name)
            if new is not None:
                pieces += (text[at:start], new)
                at = end
        pieces.append(text[at:])
        return "".join(pieces)


_PARAMETER_NUMBER = re.compile(r"\s*(\d+)\s*")


def _computation_names(computations: list[tuple[str, bool]]) -> dict[str, str]:
    names: dict[str, str] = {}
    others = 0
    for name, is_entry in computations:
        if is_entry:
            names[name] = "main"
        else:
            names[name] = f"comp.{others}"
            others += 1
    return names


def _local_names(definitions: list[tuple[str, str, str]]) -> dict[str, str]:
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    for name, opcode, payload in definitions:
        number = _PARAMETER_NUMBER.fullmatch(payload) if opcode == "parameter" else None
        if number is not None:
            names[name] = f"param.{number[1]}"
        else:
            count = counts.get(opcode, 0)
            names[name] = f"{opcode}.{count}"
            counts[opcode] = count + 1
    return names


# -- The same renaming in a few passes over the whole text, for a module in XLA's printed form
# with '%' on every name (what XLA and JAX print). Each line after the module's must match
# _PRINTED_LINE as a computation header, an instruction, a closing brace or a blank line ('%' on
# every name and nowhere else; no whitespace or comment that XLA would not print), and each
# instruction name must be defined once in the whole module, none of them a computation's
# name. Then every '%name' stands as a name and one table renames them all; any other module
# goes to the walk above.
_P_WORD = r"[A-Za-z_][A-Za-z0-9_.\-]*+"  # an ASCII _WORD: other letters send text to the walk
_P_STRING = r'"[^"\\%\n]*+(?:\\[^%\n][^"\\%\n]*+)*+"'
_P_COMMENT = r"/\*index=[0-9]+\*/"  # the only comment XLA prints: it numbers long lists


def _p_group(depth: int, opening: str = r"[(\[{]") -> str:
    """A bracket group nested up to `depth` deep, without '%', newlines, "'" or a '/' outside
    strings and comments (any closing bracket closes any opening one, as in _Renamer._close)."""
    inner = rf"""[^(){{}}\[\]"'/%\n]++|{_P_STRING}|{_P_COMMENT}"""
    if depth > 1:
        inner += "|" + _p_group(depth - 1)
    return rf"{opening}(?:{inner})*+[)\]}}]"


_P_VALUE = rf"""(?:[^\s,(){{}}\[\]"'/%]++|{_P_STRING}|{_p_group(8)})++"""
_P_SHAPE = (
    r"(?:[a-z][a-z0-9]*+\[[0-9,<=?]*+\](?:\{[0-9:][^{}\s%]*+\})?+"  # f32[8,16]{1,0}
    rf"|{_p_group(8, r'\(')})"  # a tuple
)
_P_NAME = rf"%{_P_WORD}"
_P_NAMES = rf"\{{(?:{_P_NAME}(?:, {_P_NAME})*+)?+\}}"
_P_OPERAND = rf"(?:{_P_NAME}|(?:{_P_COMMENT})?+(?:{_P_SHAPE} )?+{_P_NAME})"
_P_CALL_KEYS = "|".join(CALL_ATTRIBUTES)
_P_ATTRIBUTE = (
    rf", (?:(?:{_P_CALL_KEYS})={_P_NAME}|(?:called|branch)_computations={_P_NAMES}"
    rf"|control-predecessors={_P_NAMES}"
    rf"|(?!(?:{_P_CALL_KEYS}|control-predecessors)=){_P_WORD}={_P_VALUE})"
)
_P_PARAMETER = rf"(?:{_P_COMMENT})?+{_P_WORD}: {_P_SHAPE}"
_P_SIGNATURE = rf"(?:{_P_PARAMETER}(?:, {_P_PARAMETER})*+)?+"
# The module's line, after whole-line comments (as files of XLA's modules often start).
_PRINTED_MODULE_LINE = re.compile(
    rf"(?://[^%\n]*+\n)*+HloModule [^\s,%]+(?:, {_P_WORD}={_P_VALUE})*+\n"
)
# The lines after it, one match each: an instruction's (name, opcode, parameter number), a
# header's (ENTRY, name, signature), a body's closing brace, a blank line, or any other line.
_PRINTED_LINE = re.compile(
    rf"  (?:ROOT )?%({_P_WORD}) = {_P_SHAPE} ({_P_WORD})(?:(?<= parameter)\(([0-9]++)\)"
    rf"|(?<= constant){_p_group(8, r'\(')}"
    rf"|(?<! parameter)(?<! constant)\((?:{_P_OPERAND}(?:, {_P_OPERAND})*+)?+\))"
    rf"(?:{_P_ATTRIBUTE})*+\n"
    rf"|(ENTRY )?%({_P_WORD}) \(({_P_SIGNATURE})\) -> {_P_SHAPE} \{{\n"
    rf"|(\}})(?:, {_P_WORD}={_P_VALUE})*+(?:\n|\Z)"
    r"|[ \t]*+\n"
    r"|([^\n]++)"
)
_PRINTED_NAME = re.compile(rf"%({_P_WORD})")  # in such a module, every '%' starts a name
# The computations that call attributes name (lists: called_computations, branch_computations).
_PRINTED_CALL = re.compile(rf"=%({_P_WORD})")
_PRINTED_CALL_LIST = re.compile(r"_computations=\{([^}\n]*)\}")
# A signature's names: in a signature that matches _P_SIGNATURE, a name is any word before ':'.
_PRINTED_SIGNATURE_NAME = re.compile(rf"({_P_WORD})(?=:)")


def _renamed_printed(text: str) -> str | None:
    """`text` renamed as _Renamer renames it, or None when `text` is not a module in the printed
    form (see above). A reference to an instruction of another computation, which XLA rejects,
    is renamed here as that instruction (the walk keeps it)."""
    module = _PRINTED_MODULE_LINE.match(text)
    if module is None:
        return None
    # Each computation's names, 'name' -> '%new'; all of them in `table`.
    table: dict[str, str] = {}
    headers: list[tuple[str, str, str, dict[str, str]]] = []
    local: dict[str, str] | None = None  # None outside a body
    counts: dict[str, int] = {}
    for name, opcode, number, entry, computation, signature, close, other in _PRINTED_LINE.findall(
        text, module.end()
    ):
        if name:
            if local is None:
                return None
            if number:
                table[name] = local[name] = "%param." + number
            else:
                count = counts.get(opcode, 0)
                counts[opcode] = count + 1
                table[name] = local[name] = f"%{opcode}.{count}"
        elif computation:
            if local is not None:
                return None
            local, counts = {}, {}
            headers.append((entry, computation, signature, local))
        elif close:
            if local is None:
                return None
            local = None
        elif other:
            return None
    if local is not None:
        return None
    computations = _computation_names([(header[1], bool(header[0])) for header in headers])
    for name, new in computations.items():
        table[name] = "%" + new
    if len(table) != len(computations) + sum(len(header[3]) for header in headers):
        return None  # a name defined in two computations, or naming a computation too
    called = _PRINTED_CALL.findall(text)
    if "_computations={" in text:
        for names in _PRINTED_CALL_LIST.findall(text):
            called += _PRINTED_NAME.findall(names)
    if not computations.keys() >= set(called):  # a call attribute names an instruction
        return None
    parts: list[str] = _PRINTED_NAME.split(text)
    names = parts[1::2]
    named = list(compress(range(1, len(parts), 2), map(computations.__contains__, names)))
    if len(named) != len(headers) + len(called):
        return None  # an operand names a computation
    # Of those, the headers' names start a line (call attributes' follow '=', '{' or ', ').
    starts = [at for at in named if parts[at - 1].endswith(("\n", "\nENTRY "))]
    if len(starts) != len(headers):
        return None
    try:
        parts[1::2] = map(table.__getitem__, names)
    except KeyError:  # an operand that no instruction defines
        parts[1::2] = [table.get(name) or "%" + name for name in names]
    # A signature's names stand without '%', in the text after the header's name; a reserved
    # word there (never one with a '.') is not a name, as in the walk.
    for at, (_, _, signature, local) in zip(starts, headers, strict=True):
        if signature:
            pieces = _PRINTED_SIGNATURE_NAME.split(signature)
            pieces[1::2] = [
                name
                if (new := local.get(name)) is None
                or ("." not in name and _RESERVED.fullmatch(name))
                else new[1:]
                for name in pieces[1::2]
            ]
            parts[at + 1] = f" ({''.join(pieces)}{parts[at + 1][len(signature) + 2 :]}"
    return "".join(parts)


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
    printed = _renamed_printed(text)
    if printed is not None:
        return printed
    renamer = _Renamer(text)
    try:
        renamer.scan()
    except _Unreadable:
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
