"""Renaming by a scan that follows XLA's module grammar, for HLO text in any form XLA's parser
accepts: whitespace and comments between any two tokens, definitions split over lines, names
with or without `%`.

`Renamer(text).scan()` records where each name stands and what it names; `renamed()` gives the
text with every name replaced by its canonical one (`_canonical_names`). Text that does not
follow the grammar where the scan needs it raises `Unreadable`.
"""

from __future__ import annotations

import re

from xla_inspect._canonical_names import RESERVED, computation_names, local_names
from xla_inspect.model import CALL_ATTRIBUTES

__all__ = ["Renamer", "Unreadable"]

# A scan that follows XLA's grammar, so that only names in name positions are
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
_PAYLOAD_OPCODES = frozenset({"parameter", "constant"})
_CALL_KEYS = frozenset(CALL_ATTRIBUTES)
_COMPUTATIONS = -1  # the table of computation names; a computation's own names use its index


class Unreadable(Exception):
    """The text does not follow HLO's module grammar where the scan needs it."""


class Renamer:
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
            raise Unreadable
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
                raise Unreadable
            pos = self._shape(arrow.end())
        body = _BODY_OPEN.match(text, pos)
        if body is None:
            raise Unreadable
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
                    raise Unreadable
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
                raise Unreadable
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
        if match[1] or not RESERVED.fullmatch(match[2]):
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
            raise Unreadable
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
                    raise Unreadable
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
        raise Unreadable

    def renamed(self) -> str:
        computations = computation_names(self.computations)
        tables = [local_names(definitions) for definitions in self.definitions]
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
