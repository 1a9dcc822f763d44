"""OperandReader: an instruction's operand list (plain, typed `f32[2] %x`, nested
instructions, tuple elements) and the shapes the operands have.
"""

from __future__ import annotations

import re

from xla_inspect.hlo.instruction_checks import ANY_COMMENT, InstructionChecks
from xla_inspect.hlo.lexical import is_shape, split_top_level
from xla_inspect.hlo.line_forms import PRINTED_SHAPE_TEXT
from xla_inspect.hlo.model import HloComputation, HloInstruction, Shape, new_instruction
from xla_inspect.hlo.rules import PAYLOAD_OPCODES
from xla_inspect.hlo.shapes import compatible_shapes, shape_problem, squeezed
from xla_inspect.hlo.tokens import DTYPE_WORD, IDENT

_INT = re.compile(r"[0-9]+")


# one operand: an optional shape, then its name (`f32[2]{0} %p`, `%p`, `p#1`)
_TYPED_OPERAND = re.compile(r"(.*?)\s*+%?([A-Za-z_][\w.\-]*+(?:#[0-9]++)?)", re.S).fullmatch


# operands each written after its shape, as XLA's long form prints them (`f32[2]{0} %a, s32[] %b`)
_LOOSE_SHAPE = r"[a-z][a-z0-9]*+\[[^\]\n]*+\](?:\{[^{}\n]*+\})?|\((?:[^()\n]++|\([^()\n]*+\))*+\)"


_OPERAND_NAME = r"%?[A-Za-z_][\w.\-]*+"


_TYPED_OPERANDS = re.compile(
    rf"(?a)(?:{_LOOSE_SHAPE}) {_OPERAND_NAME}(?:, (?:{_LOOSE_SHAPE}) {_OPERAND_NAME})*+"
).fullmatch


_TYPED_PAIRS = re.compile(rf"(?a)({_LOOSE_SHAPE}) %?([A-Za-z_][\w.\-]*+)").findall


# the number XLA prints before every fifth operand of a long list (`%e, /*index=5*/%f`)
_INDEX_COMMENT = re.compile(r", /\*index=[0-9]++\*/(?=%?[A-Za-z_])")


class OperandReader(InstructionChecks):
    """An instruction's operands (typed, nested, tuple elements) and the shapes they
    must have."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.shapes: dict[str, str] = {}
        # (shape as written, shape) pairs found alike, layouts aside: a computation's result and
        # its ROOT's, an operand's shape written before it and the operand's
        self.compatible: set[tuple[str, str]] = set()
        self.read: dict[str, HloComputation] = {}  # the computations read so far, by name
        # instructions written as operands, not yet added: (name, shape, opcode, operands)
        self.nested: list[tuple[str, str, str, str]] = []
        self.nested_names: set[str] = set()
        # the instruction list `shape_of` indexed last, and its name -> shape index
        self._shape_index: tuple[list[HloInstruction] | None, dict[str, str]] = (None, {})

    # operands ::= (shape? name ('#' int)? (',' shape? name ('#' int)?)*)?
    def operand_list(self, pos: int, end: int) -> str:
        text = self.text
        names = []
        at = self.skip(pos)
        if at >= end:
            return ""
        while True:
            if text.startswith(",", at):  # an empty operand: XLA skips it
                at = self.skip(at + 1)
                if at >= end:
                    return ", ".join(names)
                continue
            shape = ""
            if text.startswith("(", at) or DTYPE_WORD.match(text, at):
                shape, at = self.shape(at)
                shape += " "
                at = self.skip(at)
            match = IDENT.match(text, at)
            if match is None or at >= end:
                raise self.stray(at, "operand names separated by ','")
            name = match.group().removeprefix("%")
            at = match.end()
            if match.group()[0] != "%" and text.startswith("(", self.skip(at)):
                name, at = self.nested_instruction(shape.strip(), name, self.skip(at))
                shape = ""
            if text.startswith("#", at):
                number = _INT.match(text, at + 1)
                name += "#" + (number.group() if number else "")
                at = number.end() if number else at + 1
            names.append(shape + name)
            at = self.skip(at)
            if at >= end:
                return ", ".join(names)
            if text[at] != ",":
                raise self.stray(at, "',' between operands")
            at = self.skip(at + 1)
            if at >= end:  # a ',' last (before a comment, say): XLA skips the empty operand
                return ", ".join(names)

    def nested_instruction(self, shape: str, opcode: str, pos: int) -> tuple[str, int]:
        """An instruction written as an operand, `shape? opcode(operands)` with its '(' at
        `pos` (XLA reads no attributes there): queued in `self.nested`, its operands first,
        under the name XLA gives it (`opcode.anon`, then `.1`, `.2`... when taken). Returns the
        name and the offset after its ')'."""
        close = self.group_end(pos)
        if opcode in PAYLOAD_OPCODES:
            operands = " ".join(ANY_COMMENT.sub(" ", self.text[pos + 1 : close - 1]).split())
        else:
            operands = self.operand_list(pos + 1, close - 1)
        name = f"{opcode}.anon"
        number = 0
        while name in self.nested_names:
            number += 1
            name = f"{opcode}.anon.{number}"
        self.nested_names.add(name)
        self.nested.append((name, shape, opcode, operands))
        return name, close

    # operands with shapes or comments, read by the fast path
    def operands(
        self,
        text: str,
        defined: dict[str, str],
        index: int,
        instructions: list[HloInstruction],
        computation: str,
    ) -> tuple[str, ...]:
        """Operand names from an operand list in any spelling XLA reads: `%a, b`, comments,
        empty operands (XLA skips `a,, b` and a leading or trailing ','), and `shape name`,
        whose shape must be the operand's (layouts and dynamic bounds aside)."""
        found: list[str] = []
        for piece in split_top_level(ANY_COMMENT.sub(" ", text)):
            piece = piece.strip()
            if not piece:
                continue
            match = _TYPED_OPERAND(piece)
            written = squeezed(match.group(1)) if match is not None else piece
            if match is None or (written and not is_shape(written)):
                raise self.error(
                    index,
                    f"an operand as 'name' or 'shape name' (is a ',' missing?), not '{piece}'",
                    near=piece,
                )
            name = match.group(2)
            if name not in defined:
                self.tuple_element(name, defined, index, instructions, computation)
            if written:
                if (problem := shape_problem(written)) is not None:
                    raise self.error(
                        index, f"a shape before operand '{name}': {problem}", near=piece
                    )
                actual = self.shape_of(name, instructions)
                if not compatible_shapes(Shape(written), Shape(actual)):
                    raise self.error(
                        index,
                        f"the shape of operand '{name}', {actual}, not {written}",
                        near=piece,
                    )
            found.append(name)
        return tuple(found)

    def typed_operands(
        self, text: str, defined: dict[str, str], instructions: list[HloInstruction]
    ) -> tuple[str, ...] | None:
        """The operand names of XLA's long form (`f32[2]{0} %a, s32[] %b`), when each names an
        instruction defined before and its written shape is in printed form and the operand's
        (layouts aside); else None, and `operands` reads the list and says what is wrong."""
        if _TYPED_OPERANDS(text) is None:
            return None
        compatible = self.compatible
        names: list[str] = []
        for written, name in _TYPED_PAIRS(text):
            if name not in defined:
                return None
            actual = self.shape_of(name, instructions)
            if written != actual and (written, actual) not in compatible:
                if (
                    PRINTED_SHAPE_TEXT(written) is None
                    or shape_problem(written) is not None
                    or not compatible_shapes(Shape(written), Shape(actual))
                ):
                    return None
                compatible.add((written, actual))
            names.append(name)
        return tuple(names)

    def indexed_operands(self, text: str, defined: dict[str, str]) -> tuple[str, ...] | None:
        """The operand names of a long list as XLA prints it (`%a, %b, %c, %d, %e,
        /*index=5*/%f`: the comments between operands are blanks to XLA's lexer), when each
        names an instruction defined before; else None (the token path reads the line)."""
        plain = _INDEX_COMMENT.sub(", ", text)
        if "/" in plain:
            return None
        try:
            return tuple(
                map(defined.__getitem__, plain.replace(", %", ", ").removeprefix("%").split(", "))
            )
        except KeyError:
            return None

    def shape_of(self, name: str, instructions: list[HloInstruction]) -> str:
        """The shape of instruction `name` of the computation being read (`instructions`)."""
        known, index = self._shape_index
        if known is not instructions:
            index = {}
            self._shape_index = (instructions, index)
        if name not in index:
            index.update((i.name, i.shape) for i in instructions[len(index) :])
        return index[name]

    def tuple_element(
        self,
        name: str,
        defined: dict[str, str],
        index: int,
        instructions: list[HloInstruction],
        computation: str,
    ) -> None:
        """Add the get-tuple-element that operand `name#N` stands for, as XLA's parser does.

        Newer XLA prints element N of a tuple-shaped instruction as `name#N` (loop-carried
        tuples, multi-output collectives) and its parser turns each distinct one into a
        `get-tuple-element`. Here it is named `name#N` (a name XLA cannot print, so it never
        clashes) and placed just before its first user.
        """
        base, sep, element = name.partition("#")
        if not sep or base not in defined:
            raise self.error(
                index, f"operand '{name}' defined earlier in computation '{computation}'", near=name
            )
        tuple_shape = self.shape_of(base, instructions)
        elements = Shape(tuple_shape).elements
        if not element.isdecimal() or int(element) >= len(elements):
            raise self.error(index, f"'{base}#N' with N an element of its shape {tuple_shape}")
        shape = self.shapes.setdefault(elements[int(element)].text, elements[int(element)].text)
        instructions.append(
            new_instruction(
                name,
                "get-tuple-element",
                shape,
                (base,),
                f"index={element}",
                False,
                None,
                index + 1,
            )
        )
        defined[name] = name
