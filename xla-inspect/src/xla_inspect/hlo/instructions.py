"""InstructionReader: a computation's body, ordinary lines by the fast line regex and the
rest by the token path, both through instruction_checks.

    instruction ::= 'ROOT'? name '=' shape? opcode '(' operands ')' (',' attribute)*
"""

from __future__ import annotations

from xla_inspect.hlo.line_forms import (
    BRACE_THEN_NAME,
    ESCAPED,
    FAST,
    KEY_AFTER_COMMA,
    NUMBERS,
    PLAIN_SCALAR,
    PRINTED_SHAPE_TEXT,
    callee_free,
)
from xla_inspect.hlo.metadata import without_metadata
from xla_inspect.hlo.model import HloInstruction
from xla_inspect.hlo.rules import PAYLOAD_OPCODES
from xla_inspect.hlo.token_path import KEYWORD, TYPE_NAME, TokenPath, reserved
from xla_inspect.hlo.tokens import SKIP


class InstructionReader(TokenPath):
    """A computation's instructions: ordinary lines by the fast line regex, the rest token by
    token, both through the same checks."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.callers: list[tuple[HloInstruction, int]] = []
        self.has_control = "control-predecessors" in text

    def resume(self, pos: int) -> tuple[bool, int, int]:
        """After an instruction ending at `pos`: (line mode?, line index, offset). Line mode
        when the next token starts its line (only blanks before it): then the offset is where
        that line starts; else it is the token's."""
        text = self.text
        skipped = SKIP.match(text, pos)
        assert skipped is not None  # SKIP matches the empty string too
        after = skipped.end()
        start = text.rfind("\n", 0, after) + 1
        if start > pos and (start == after or text[start:after].isspace()):
            return True, self.line_of(after), start
        return False, 0, after

    def body(
        self, computation: str, number: int, pos: int, line: int = -1
    ) -> tuple[tuple[HloInstruction, ...], int, int]:
        """Instructions up to the computation's closing '}', from offset `pos` or, in line
        mode, from line `line` (which starts at `pos`). Returns them, the offset after the '}'
        and -1, or (when the '}' stood alone on its line) the offset and index of the next
        line."""
        text = self.text
        size = len(text)
        build = tuple.__new__  # HloInstruction(...) without its argument handling
        after_comma = KEY_AFTER_COMMA
        fast = FAST.match
        opcodes = self.opcodes
        shapes = self.shapes
        callers = self.calling
        defined: dict[str, str] = {}
        look_up = defined.__getitem__
        parameters: set[str] = set()
        instructions: list[HloInstruction] = []
        append = instructions.append
        root = -1
        printed = self.printed_metadata
        literals = self.literals
        # the attribute list was one the fast path read and checked before for this opcode
        accepted = False
        # line index and offset of the last instruction, when the fast path read it (else -1)
        last_fast = last_fast_pos = -1
        if line >= 0:
            line_mode, i = True, line
        else:
            line_mode, i, pos = self.resume(pos)
        while True:
            if line_mode:
                match = fast(text, pos)
                # The common line: its opcode, shape and attribute list were all read and checked
                # before in this module, and it is no constant, new parameter number or second
                # ROOT. Any other line leaves this loop (before changing any state) and takes the
                # general path below with `match`.
                while match is not None:
                    is_root, name, shape, opcode, operand_text, tail = match.groups()
                    known = opcodes.get(opcode)
                    if (
                        known is None
                        or name in defined
                        or ("." not in name and (KEYWORD(name) or TYPE_NAME(name)))
                    ):
                        break
                    payload = numbered = None
                    if opcode in PAYLOAD_OPCODES:
                        if opcode != "parameter":
                            if (shape, operand_text) not in literals:
                                break
                        elif operand_text in parameters or not operand_text.isdecimal():
                            break
                        else:
                            numbered = operand_text
                        payload = operand_text
                    seen = shapes.get(shape)
                    if seen is None:
                        break
                    shape = seen
                    if tail is None:
                        if known[5]:
                            break
                        tail = ""
                    else:
                        seen = known[4].get(tail)
                        if seen is not None:
                            tail = seen
                        elif (key := without_metadata(tail, printed) or tail) in known[4] or (
                            opcode in callers and callee_free(key) in known[4]
                        ):
                            known[4][tail] = tail
                        else:
                            break
                    try:
                        if payload is not None or not operand_text:
                            operands = ()
                        elif "," in operand_text:
                            operands = tuple(
                                map(
                                    look_up,
                                    operand_text.replace(", %", ", ").removeprefix("%").split(", "),
                                )
                            )
                        else:
                            operands = (look_up(operand_text.removeprefix("%")),)
                    except KeyError:
                        typed = self.typed_operands(operand_text, defined, instructions)
                        if typed is None and "/" in operand_text:
                            typed = self.indexed_operands(operand_text, defined)
                        if typed is None:
                            break
                        operands = typed
                    if known[1] is not None and len(operands) != known[1]:
                        break
                    if is_root:
                        if root >= 0:
                            break
                        root = len(instructions)
                    if numbered is not None:
                        parameters.add(numbered)
                    defined[name] = name
                    instruction = build(
                        HloInstruction,
                        (name, opcode, shape, operands, tail, is_root is not None, payload, i + 1),
                    )
                    append(instruction)
                    if opcode in callers:
                        self.callers.append((instruction, number))
                    last_fast, last_fast_pos = i, pos
                    i += 1
                    pos = match.end() + 1
                    match = fast(text, pos)
                if pos > size:
                    count = len(self.lines)
                    raise self.error(count - 1, f"'}}' to close computation '{computation}'")
                if match is not None:
                    is_root, name, shape, opcode, operand_text, tail = match.groups()
                    # complete when brackets and quotes balance by count; in doubt, the token path
                    if (shape not in shapes and PRINTED_SHAPE_TEXT(shape) is None) or (
                        # a comment may hide the ')': the token path, unless it is XLA's index
                        "/" in operand_text
                        and (
                            opcode in PAYLOAD_OPCODES
                            or self.indexed_operands(operand_text, defined) is None
                        )
                    ):
                        match = None
                    elif tail is None:
                        tail = ""
                    elif (known := opcodes.get(opcode)) is not None and (
                        seen := known[4].get(tail)
                    ) is not None:
                        tail = seen  # read and checked before: skip the checks, share the text
                        accepted = True
                    elif (
                        not tail
                        or tail[-1] in ",= \t\r"
                        or tail.count("{") != tail.count("}")
                        or tail.count("(") != tail.count(")")
                        or (("[" in tail or "]" in tail) and tail.count("[") != tail.count("]"))
                        or (
                            '"' in tail
                            and (
                                ESCAPED.sub("", tail).count('"') & 1
                                if "\\" in tail
                                else tail.count('"') & 1
                            )
                        )
                        or "//" in tail
                        or "/*" in tail
                        or " =" in tail  # 'name =': XLA's lexer reads no attribute name there
                        or ("} " in tail and BRACE_THEN_NAME(tail) is not None)
                    ):
                        match = None
                if match is None:
                    end = self.line_end(pos)
                    stripped = text[pos:end].strip()
                    if not stripped or stripped.startswith("//"):
                        i, pos = i + 1, end + 1
                        continue
                    if stripped == "}":
                        i, pos = i + 1, end + 1
                        break
                    if stripped[0] == "," and last_fast >= 0:
                        # the attributes of the instruction read last go on: read it again
                        # (with the get-tuple-elements its operands added, same line number)
                        i, pos = last_fast, last_fast_pos
                        while instructions and instructions[-1].line_no == i + 1:
                            dropped = instructions.pop()
                            del defined[dropped.name]
                            if dropped.is_root:
                                root = -1
                            if self.callers and self.callers[-1][0] is dropped:
                                self.callers.pop()
                            if dropped.opcode == "parameter":
                                parameters.discard((dropped.payload or "").strip())
                    line_mode, last_fast = False, -1
                    continue
                if "." not in name and (
                    problem := reserved(
                        "%" + name if text[match.start(2) - 1 : match.start(2)] == "%" else name,
                        True,
                    )
                ):
                    raise self.error(i, f"an instruction name, not {problem}", near=name)
                index = last_fast = i
                last_fast_pos = pos
                i += 1
                pos = match.end() + 1
                fast_tail = True
            else:
                pos = self.skip(pos)
                if text.startswith("}", pos):
                    pos += 1
                    i = -1
                    break
                index = self.line_of(pos)
                (is_root, name, shape, opcode, operand_text, tail, pos) = self.token_instruction(
                    pos
                )
                line_mode, i, pos = self.resume(pos)
                last_fast = -1
                fast_tail = False
                if self.nested:
                    self.add_nested(index, defined, parameters, instructions, computation)
            known = opcodes.get(opcode)
            if known is None:
                known = self.new_opcode(opcode, index)
            opcode, expected, allowed, bad_value, tails, required = known
            if accepted:
                accepted = False
            elif not tail:
                if required:
                    self.check_required(opcode, required, "", index, pos if fast_tail else 0)
            else:
                # attribute names: the first, and each after a ',', each known and none twice
                # (a nested one may show up here too: then the exact split decides)
                names = after_comma(tail) if "," in tail else []
                names.append(tail[: tail.find("=")])
                if (allowed is not None and not allowed.issuperset(names)) or (
                    len(names) > 1 and len(set(names)) != len(names)
                ):
                    self.check_attribute_names(opcode, allowed, tail, index)
                if bad_value is not None and bad_value(tail):
                    self.check_attribute_values(opcode, tail, index)
                if "metadata=" not in tail:
                    key = None
                elif (key := without_metadata(tail, printed)) is None:
                    self.check_metadata(tail, index)
                # (after the values: XLA reads every attribute before it misses one)
                if required and not required.issubset(names):
                    self.check_required(opcode, required, tail, index, pos if fast_tail else 0)
                # (parameter_replication is checked against the shape: not cached by the tail)
                if fast_tail and (opcode != "parameter" or "parameter_replication" not in tail):
                    tails[tail] = tail
                    if key is not None:
                        tails[key] = key
                    if opcode in callers:
                        free = callee_free(key or tail)
                        tails[free] = free
            if shape:
                known = shapes.get(shape)
                if known is None:
                    self.check_shape(shape, index)
                    shapes[shape] = known = shape
                shape = known
            elif opcode in PAYLOAD_OPCODES:
                raise self.error(
                    index, f"a shape before '{opcode}' (XLA infers none for it)", near=opcode
                )
            payload = None
            operands: tuple[str, ...] = ()
            if opcode in PAYLOAD_OPCODES:
                payload = operand_text
                if opcode == "parameter":
                    if payload in parameters or not payload.isdecimal():
                        self.check_parameter(payload, parameters, index, computation)
                    else:
                        parameters.add(payload)
                    if tail and "parameter_replication" in tail:
                        self.check_replication(tail, shape, index)
                else:
                    if (
                        shape[-2:] != "[]"
                        or (plain := PLAIN_SCALAR.get(shape)) is None
                        or plain(payload) is None
                    ):
                        self.check_literal(payload, shape, index)
                    if fast_tail:
                        literals.add((shape, payload))
            elif operand_text:
                try:
                    # fast: '%a, %b' or 'a, b'; typed_operands and operands read the rest
                    if "," in operand_text:
                        operands = tuple(
                            map(
                                look_up,
                                operand_text.replace(", %", ", ").removeprefix("%").split(", "),
                            )
                        )
                    else:
                        operands = (look_up(operand_text.removeprefix("%")),)
                except KeyError:
                    typed = self.typed_operands(operand_text, defined, instructions)
                    if typed is None and "/" in operand_text:
                        typed = self.indexed_operands(operand_text, defined)
                    operands = (
                        typed
                        if typed is not None
                        else self.operands(operand_text, defined, index, instructions, computation)
                    )
            if expected is not None and len(operands) != expected:
                raise self.error(
                    index,
                    f"{expected} operand{'s' if expected != 1 else ''} for "
                    f"'{opcode}', not {len(operands)}",
                    near=opcode,
                )
            if not shape:
                shape = self.inferred_shape(opcode, operands, tail, instructions, index)  # pyright: ignore[reportArgumentType]
            if name in defined:
                raise self.error(index, f"a new instruction name, not '{name}'", near=name)
            defined[name] = name
            if "." not in name and KEYWORD(name):  # `%true`: its users must write the '%'
                self.keyword_names.add(name)
            if is_root:
                if root >= 0:
                    raise self.error(index, f"one ROOT in computation '{computation}'", near=name)
                root = len(instructions)
            instruction = build(
                HloInstruction,
                (name, opcode, shape, operands, tail, is_root is not None, payload, index + 1),
            )
            append(instruction)
            if opcode in callers:
                self.callers.append((instruction, number))
        if not instructions:
            raise self.error(
                self.line_of(pos - 1) if i < 0 else i - 1,
                f"at least one instruction in '{computation}'",
            )
        if self.has_control or self.keyword_names:
            self.check_names(instructions, computation)
        if parameters and not parameters.issuperset(NUMBERS[: len(parameters)]):
            self.parameter_gap(instructions, len(parameters), computation)
        if root < 0:
            instructions[-1] = instructions[-1]._replace(is_root=True)
        return tuple(instructions), pos, i
