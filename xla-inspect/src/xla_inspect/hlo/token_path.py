"""TokenPath: an instruction read token by token (what the fast line regex does not take),
its called computations' values, inferred shapes, and instructions nested as operands.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

from xla_inspect.hlo.infer import infer_shape
from xla_inspect.hlo.infer_rules import CannotInfer
from xla_inspect.hlo.instruction_checks import ANY_COMMENT
from xla_inspect.hlo.lexical import DTYPE
from xla_inspect.hlo.model import HloInstruction, Shape, new_instruction
from xla_inspect.hlo.operands import OperandReader
from xla_inspect.hlo.rules import CALL_KEYS, CALL_LISTS, PAYLOAD_OPCODES
from xla_inspect.hlo.tokens import ATTRIBUTE_NAME, DTYPE_WORD, IDENT

# Words XLA's lexer reads as keywords, not names: a name spelled so is rejected ('expects
# name'), except with a '%' (`%ROOT`); a type's name is rejected as an instruction name even
# with a '%'
KEYWORD = re.compile(
    r"(?:inf|nan|true|false|ROOT|ENTRY|HloModule|maximal|replicated|manual|unknown"
    r"|last_tile_dim_replicate|shard_as|shard_like)\Z"
).match


TYPE_NAME = re.compile(DTYPE + r"\Z").match


def reserved(raw: str, instruction: bool = False) -> str | None:
    """What makes `raw` (a name as written, with its '%' if any) no name to XLA, or None."""
    if "." in raw:  # no keyword or type name has one
        return None
    bare = raw.removeprefix("%")
    if (instruction or bare == raw) and TYPE_NAME(bare):
        return f"the type name '{bare}'"
    if bare == raw and KEYWORD(bare):
        return f"the keyword '{bare}'"
    return None


class TokenPath(OperandReader, ABC):
    """An instruction read token by token (what the fast line regex does not take), and the
    instructions written as operands, added before the one that uses them."""

    @abstractmethod
    def inline_computation(self, pos: int) -> tuple[str, int]:
        """A computation written inline as an attribute's value (`to_apply={...}`) at `pos`:
        its name and the offset after it. Reading computations is the module reader's job."""

    def call_value(self, key: str, pos: int) -> tuple[str, int] | None:
        """The value of the call attribute `key` (`to_apply`, `branch_computations`...) from
        `pos` when it writes a computation inline, as `{` instructions `}` (or a list holding
        one: `branch_computations={{...}, %b}`): each is read as a computation named `_`
        (`_.1`, ...), as XLA names it, added before the computation that calls it, and the
        value names it. None when the value writes no computation inline."""
        text = self.text
        if not text.startswith("{", pos):
            return None
        if key not in CALL_LISTS:
            return self.inline_computation(pos)
        end = self.group_end(pos)
        if "{" not in text[pos + 1 : end]:
            return None
        names: list[str] = []
        at = self.skip(pos + 1)
        while not text.startswith("}", at):
            if text.startswith("{", at):
                name, at = self.inline_computation(at)
            else:
                word = IDENT.match(text, at)
                if word is None:
                    raise self.stray(at, "a computation name or '{' instructions '}'")
                name, at = word.group().removeprefix("%"), word.end()
            names.append(name)
            at = self.skip(at)
            if text.startswith(",", at):
                at = self.skip(at + 1)
            elif not text.startswith("}", at):
                raise self.stray(at, "',' or '}' in the list of computations")
        return "{" + ", ".join(names) + "}", at + 1

    def add_nested(
        self,
        index: int,
        defined: dict[str, str],
        parameters: set[str],
        instructions: list[HloInstruction],
        computation: str,
    ) -> None:
        """Add the instructions written as operands on line `index` (self.nested), each before
        its user, as XLA's parser does."""
        nested, self.nested = self.nested, []
        for name, shape, opcode, operand_text in nested:
            known = self.opcodes.get(opcode) or self.new_opcode(opcode, index)
            opcode, expected, required = known[0], known[1], known[5]
            if required:  # XLA reads no attributes here: an opcode that needs one fails
                self.check_required(opcode, required, "", index, 0)
            payload = None
            operands: tuple[str, ...] = ()
            if opcode in PAYLOAD_OPCODES:
                payload = operand_text
                if not shape:
                    raise self.error(
                        index, f"a shape before '{opcode}' (XLA infers none for it)", near=opcode
                    )
                if opcode == "parameter":
                    if payload in parameters or not payload.isdecimal():
                        self.check_parameter(payload, parameters, index, computation)
                    parameters.add(payload)
                else:
                    self.check_literal(payload, shape, index)
            elif operand_text:
                operands = self.operands(operand_text, defined, index, instructions, computation)
            if expected is not None and len(operands) != expected:
                raise self.error(
                    index, f"{expected} operands for '{opcode}', not {len(operands)}", near=opcode
                )
            if opcode == "broadcast" and any(
                (operand := Shape(self.shape_of(o, instructions))).dims or operand.is_tuple
                for o in operands
            ):
                raise self.error(
                    index,
                    "a scalar operand for a broadcast written as an operand (its dimensions= "
                    "cannot be written there)",
                    near=opcode,
                )
            if shape:
                self.check_shape(shape, index)
            else:
                shape = self.inferred_shape(opcode, operands, "", instructions, index)
            shape = self.shapes.setdefault(shape, shape)
            instructions.append(
                new_instruction(name, opcode, shape, operands, "", False, payload, index + 1)
            )
            defined[name] = name

    def inferred_shape(
        self,
        opcode: str,
        operands: tuple[str, ...],
        tail: str,
        instructions: list[HloInstruction],
        index: int,
    ) -> str:
        """The shape XLA's parser infers for an instruction written without one, else the error
        asking for it."""
        try:
            shape = infer_shape(
                opcode,
                [self.shape_of(o, instructions) for o in operands],
                tail,
                self.root_shape,
            )
        except CannotInfer as problem:
            raise self.error(
                index,
                f"a shape before '{opcode}': XLA cannot infer it here ({problem})",
                near=opcode,
            ) from None
        return self.shapes.setdefault(shape, shape)

    def root_shape(self, computation: str) -> str | None:
        """The root shape of computation `computation` when it was read before, else None."""
        found = self.read.get(computation)
        if found is None:
            return None
        return next(i.shape for i in reversed(found.instructions) if i.is_root)

    # instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' attribute)*
    def token_instruction(self, pos: int) -> tuple[str | None, str, str, str, str, str, int]:
        text = self.text
        start = pos
        what = "an instruction 'name = shape opcode(operands)'"
        match = IDENT.match(text, pos)
        is_root = None
        if match is not None and match.group() == "ROOT":
            is_root = "ROOT "
            match = IDENT.match(text, self.skip(match.end()))
        if match is None:
            raise self.stray(self.skip(pos) if is_root else start, what)
        word, end = match.group(), match.end()
        if (problem := reserved(word, True)) is not None:
            raise self.error_at(match.start(), f"an instruction name, not {problem}")
        if word.removeprefix("%").startswith("__"):
            raise self.error_at(
                match.start(), f"an instruction name not starting '__' (XLA's own), not '{word}'"
            )
        if word[0] != "%" and text.startswith("=", end):
            raise self.error_at(
                match.start(),
                f"{what}: '{word}=' without a space before '=' is an attribute name to XLA",
            )
        at = self.expect(end, "=", f"'=' after the instruction name '{word}'")
        at = self.skip(at)
        if (opcode := IDENT.match(text, at)) is not None and (
            DTYPE_WORD.match(text, at) is None and text.startswith("(", self.skip(opcode.end()))
        ):
            shape = ""  # no shape: XLA infers it once the operands are read (see _infer)
        else:
            shape, at = self.shape(at)
        at = self.skip(at)
        match = IDENT.match(text, at)
        if match is None or match.group()[0] == "%":
            raise self.stray(at, "an opcode followed by '(' after the shape")
        opcode = match.group()
        at = self.expect(match.end(), "(", f"'(' after the opcode '{opcode}'")
        close = self.group_end(at - 1)
        if opcode == "parameter" or opcode == "constant":
            operand_text = " ".join(ANY_COMMENT.sub(" ", text[at : close - 1]).split())
        else:
            operand_text = self.operand_list(at, close - 1)
        pos = close
        attributes = []
        while text.startswith(",", at := self.skip(pos)):
            at = self.skip(at + 1)
            key = ATTRIBUTE_NAME.match(text, at)
            if key is None:
                raise self.stray(at, "an attribute 'name=value' after ','")
            inline = None
            if key.group()[:-1] in CALL_KEYS:
                inline = self.call_value(key.group()[:-1], self.skip(key.end()))
            value, pos = inline if inline is not None else self.value(key.end())
            attributes.append(key.group() + value)
        if at < len(text) and text[at] not in "}" and not self.starts_instruction(at):
            raise self.stray(at, "',' before attributes after the operand list")
        name = word.removeprefix("%")
        return is_root, name, shape, opcode, operand_text, ", ".join(attributes), pos
