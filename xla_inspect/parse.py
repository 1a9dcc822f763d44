"""parse_hlo: read HLO text (optimized, unoptimized short form, or hand-written) into a model.

The reader is line-oriented: one precompiled regular expression recognises the common
instruction line; anything else (wrapped lines, tuple shapes, operand shapes, comments,
literals with parentheses) takes a slower exact path. Attribute text is kept raw.
"""

from __future__ import annotations

import gc
import re
from dataclasses import replace
from types import MappingProxyType

from xla_inspect._lexing import (
    ARRAY_SHAPE,
    ARRAY_SHAPE_PATTERN,
    FLAT_TUPLE_SHAPE_PATTERN,
    BracketError,
    is_shape,
    match_close,
    operand_names,
    scan_brackets,
    split_attributes,
)
from xla_inspect.errors import HloParseError
from xla_inspect.model import (
    HloComputation,
    HloInstruction,
    HloModule,
    Shape,
    new_instruction,
)

# instruction ::= 'ROOT '? '%'? name ' = ' shape ' ' opcode '(' operands ')' (', ' attr)*
# (the common case: an array or flat tuple shape, no parentheses inside the operand list)
_FAST = re.compile(
    r"\s*(ROOT )?%?([\w.\-]+) = (" + ARRAY_SHAPE_PATTERN + "|" + FLAT_TUPLE_SHAPE_PATTERN
    + r") ([a-z][a-z0-9\-]*)\(([^()]*)\)(?:, (.*))?$"
)
# instruction_head ::= 'ROOT'? '%'? name '=' (any spacing)
_HEAD = re.compile(r"\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*")
# opcode ::= [a-z][a-z0-9-]* followed by '('
_OPCODE = re.compile(r"\s*([a-z][a-z0-9\-]*)\(")
# module_header ::= 'HloModule' name (',' attr)*
_MODULE = re.compile(r"HloModule\s+([^\s,]+)\s*(,.*)?")
# computation_header ::= 'ENTRY'? '%'? name signature? '{'
# signature ::= '(' (name ':' shape (',' name ':' shape)*)? ')' '->' shape
_COMPUTATION = re.compile(r"(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\)\s*->\s*\S.*?)?\s*\{")
# computation_end ::= '}' (',' 'execution_thread=' string)?
_COMPUTATION_END = re.compile(r'\}\s*(?:,\s*execution_thread\s*=\s*"[^"]*")?')
# frame_tables ::= ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames') row*
# row ::= integer (string | '{' ... '}')
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
# Opcodes whose attributes may name computations (`calls=`, `to_apply=`, `body=`, ...): only
# these are checked for references to computations the module does not define.
_CALLERS = frozenset({
    "fusion", "call", "while", "conditional", "reduce", "reduce-window", "map", "sort", "scatter",
    "select-and-scatter", "all-reduce", "all-reduce-start", "reduce-scatter", "custom-call",
    "async-start", "async-update", "async-done",
})
# `key=%name`: the common form, checked cheaply; lists and anything odd take the exact path
_CALLED_NAME = re.compile(
    r"(?:calls|to_apply|condition|body|branch_computations|true_computation|false_computation"
    r"|called_computations|select|scatter)=(?:\{([^{}]*)\}|%?([\w.\-]+))"
)


def parse_hlo(text: str) -> HloModule:
    """Parse HLO module text. Raises HloParseError (line, line text, what was expected).

    The cyclic garbage collector is paused while parsing (and restored after): the reader
    makes no cycles, and on a 30 MB module the collector's repeated passes over the growing
    instruction list would otherwise cost a third of the time.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Reader(text.split("\n")).module()
    finally:
        if collecting:
            gc.enable()


class _Reader:
    """Walks the lines once; `self.i` is the index of the next line to read."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.i = 0
        self.opcodes: dict[str, str] = {}
        self.shapes: dict[str, str] = {}
        self.callers: list[HloInstruction] = []

    def error(self, index: int, expected: str, line: str | None = None) -> HloParseError:
        shown = self.lines[index] if line is None and index < len(self.lines) else line or ""
        return HloParseError(index + 1, shown, expected)

    # module ::= comment* module_header? (frame_tables | computation)+
    def module(self) -> HloModule:
        lines = self.lines
        name = ""
        attributes: dict[str, str] = {}
        computations: list[HloComputation] = []
        names: set[str] = set()
        entry: HloComputation | None = None
        while self.i < len(lines):
            index = self.i
            stripped = lines[index].strip()
            if not stripped or stripped.startswith("//"):
                self.i += 1
            elif stripped.startswith("HloModule"):
                if name or computations:
                    raise self.error(index, "one 'HloModule' header, before any computation")
                name, attributes = self.module_header()
            elif stripped in _TABLES:
                self.skip_table()
            else:
                computation = self.computation()
                if computation.name in names:
                    raise self.error(index, f"a new computation name, not '{computation.name}'")
                names.add(computation.name)
                if computation.is_entry:
                    if entry is not None:
                        raise self.error(index, f"one ENTRY (already '{entry.name}')")
                    entry = computation
                computations.append(computation)
        if not computations:
            raise self.error(len(lines) - 1, "at least one computation")
        if entry is None:
            entry = computations[-1]
        self.check_calls(names)
        return HloModule(name, MappingProxyType(attributes), tuple(computations), entry)

    def check_calls(self, names: set[str]) -> None:
        """Every computation an instruction calls is defined in the module (XLA refuses a
        module that calls a missing one; it also wants callees first, which is not checked)."""
        for instruction in self.callers:
            found = _CALLED_NAME.findall(instruction.attributes_text)
            if found and all(not listed and single in names for listed, single in found):
                continue
            for name in instruction.called_computations:
                if name not in names:
                    raise self.error(instruction.line_no - 1,
                                     f"a computation named '{name}' defined in the module")

    def module_header(self) -> tuple[str, dict[str, str]]:
        index = self.i
        text = self.logical_line()
        match = _MODULE.fullmatch(text.strip())
        if match is None:
            raise self.error(index, "'HloModule <name>' followed by ', key=value' attributes")
        attributes: dict[str, str] = {}
        for key, value in split_attributes((match.group(2) or ",")[1:]):
            if not key or not value:
                raise self.error(index, "module attributes as 'key=value'")
            attributes[key] = value
        return match.group(1), attributes

    # frame_tables: skip the keyword line and its numbered rows
    def skip_table(self) -> None:
        self.i += 1
        lines = self.lines
        while self.i < len(lines) and lines[self.i][:1].isdigit():
            self.i += 1

    def logical_line(self, left_open: int = 0) -> str:
        """Join source lines from `self.i` until brackets balance and no ',' ends the text.

        `left_open` brackets may stay open (a computation header ends inside its '{').
        """
        lines = self.lines
        start = self.i
        stack: list[str] = []
        parts: list[str] = []
        while True:
            line = lines[self.i]
            try:
                scan_brackets(line, stack)
            except BracketError as exc:
                raise self.error(self.i, exc.expected) from None
            parts.append(line.strip())
            self.i += 1
            if len(stack) <= left_open and not line.rstrip().endswith(","):
                return " ".join(parts)
            if self.i == len(lines) or lines[self.i].strip() == "}":
                closer = f"'{stack[-1]}'" if stack else "more attributes after ','"
                raise self.error(start, f"{closer} before the end of the instruction",
                                 " ".join(parts))

    # computation ::= computation_header instruction+ computation_end
    def computation(self) -> HloComputation:
        index = self.i
        header = self.lines[index].strip()
        if header.endswith("{") and '"' not in header and header.count("(") == header.count(")"):
            self.i += 1
        else:
            header = self.logical_line(left_open=1).strip()
        match = _COMPUTATION.fullmatch(header)
        if match is None:
            raise self.error(index, "a computation header 'name (params) -> shape {'", header)
        instructions = self.body(match.group(2))
        return HloComputation(match.group(2), instructions, match.group(1) is not None, index + 1)

    def body(self, computation: str) -> tuple[HloInstruction, ...]:
        lines = self.lines
        count = len(lines)
        fast = _FAST.match
        opcodes = self.opcodes
        shapes = self.shapes
        callers = _CALLERS
        defined: dict[str, str] = {}
        instructions: list[HloInstruction] = []
        append = instructions.append
        root = -1
        i = self.i
        while i < count:
            line = lines[i]
            match = fast(line)
            if match is not None:
                is_root, name, shape, opcode, operand_text, tail = match.groups()
                # complete when brackets and quotes balance by count; in doubt, the exact path
                if tail is None:
                    tail = ""
                elif (
                    not tail
                    or tail[-1] == ","
                    or tail.count("{") != tail.count("}")
                    or tail.count("(") != tail.count(")")
                    or (("[" in tail or "]" in tail) and tail.count("[") != tail.count("]"))
                    or ('"' in tail and ("\\" in tail or tail.count('"') & 1))
                ):
                    match = None
            if match is None:
                stripped = line.strip()
                if not stripped or stripped.startswith("//"):
                    i += 1
                    continue
                if stripped[0] == "}":
                    if _COMPUTATION_END.fullmatch(stripped) is None:
                        raise self.error(i, "'}' or '}, execution_thread=\"name\"'")
                    i += 1
                    break
                self.i = i
                is_root, name, shape, opcode, operand_text, tail = self.slow_instruction()
                index, i = i, self.i
            else:
                index = i
                i += 1
            opcode = opcodes.setdefault(opcode, opcode)
            shape = shapes.setdefault(shape, shape)
            payload = None
            operands: tuple[str, ...] = ()
            if opcode == "parameter" or opcode == "constant":
                payload = operand_text
                if opcode == "parameter" and not payload.strip().isdecimal():
                    raise self.error(index, "a parameter number in 'parameter(N)'")
            elif operand_text:
                try:
                    # fast: '%a, %b' or 'a, b'; operand_names handles shapes, comments, 'a,b'
                    operands = tuple(map(defined.__getitem__,
                                         operand_text.replace("%", "").split(", ")))
                except KeyError:
                    operands = self.operands(operand_text, defined, index, instructions,
                                             computation)
            if name in defined:
                raise self.error(index, f"a new instruction name, not '{name}'")
            defined[name] = name
            if is_root:
                if root >= 0:
                    raise self.error(index, f"one ROOT in computation '{computation}'")
                root = len(instructions)
            instruction = new_instruction(name, opcode, shape, operands, tail, bool(is_root),
                                          payload, index + 1)
            append(instruction)
            if opcode in callers:
                self.callers.append(instruction)
        else:
            raise self.error(count - 1, f"'}}' to close computation '{computation}'")
        self.i = i
        if not instructions:
            raise self.error(i - 1, f"at least one instruction in '{computation}'")
        if root < 0:
            instructions[-1] = replace(instructions[-1], is_root=True)
        return tuple(instructions)

    # operands ::= (shape? '%'? name ('#' index)? (',' shape? '%'? name ('#' index)?)*)?
    # (comments allowed)
    def operands(self, text: str, defined: dict[str, str], index: int,
                 instructions: list[HloInstruction], computation: str) -> tuple[str, ...]:
        found = operand_names(text)
        if found is None:
            raise self.error(index, "operand names separated by ','")
        for name in found:
            if name not in defined:
                self.tuple_element(name, defined, index, instructions, computation)
        return tuple(found)

    def tuple_element(self, name: str, defined: dict[str, str], index: int,
                      instructions: list[HloInstruction], computation: str) -> None:
        """Add the get-tuple-element that operand `name#N` stands for, as XLA's parser does.

        Newer XLA prints element N of a tuple-shaped instruction as `name#N` (loop-carried
        tuples, multi-output collectives) and its parser turns each distinct one into a
        `get-tuple-element`. Here it is named `name#N` (a name XLA cannot print, so it never
        clashes) and placed just before its first user.
        """
        base, sep, element = name.partition("#")
        if not sep or base not in defined:
            raise self.error(index, f"operand '{name}' defined earlier in computation "
                                    f"'{computation}'")
        tuple_shape = next(i.shape for i in reversed(instructions) if i.name == base)
        elements = Shape(tuple_shape).elements
        if not element.isdecimal() or int(element) >= len(elements):
            raise self.error(index, f"'{base}#N' with N an element of its shape {tuple_shape}")
        shape = self.shapes.setdefault(elements[int(element)].text, elements[int(element)].text)
        instructions.append(new_instruction(name, "get-tuple-element", shape, (base,),
                                            f"index={element}", False, None, index + 1))
        defined[name] = name

    # instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' attr)*
    # shape ::= array_shape | '(' (shape (',' shape)*)? ')'
    def slow_instruction(self) -> tuple[str | None, str, str, str, str, str]:
        index = self.i
        text = self.logical_line()
        head = _HEAD.match(text)
        if head is None:
            raise self.error(index, "an instruction 'name = shape opcode(operands)'", text)
        pos = head.end()
        if text.startswith("(", pos):
            end = match_close(text, pos) + 1
            shape = text[pos:end]
            if not is_shape(shape):
                raise self.error(index, "a tuple shape like '(f32[2]{0}, s32[])'", text)
        else:
            array = ARRAY_SHAPE.match(text, pos)
            if array is None:
                raise self.error(index, "a shape like 'f32[2,3]{1,0}' after '='", text)
            shape, end = array.group(), array.end()
        opcode = _OPCODE.match(text, end)
        if opcode is None or (end < len(text) and not text[end].isspace()):
            raise self.error(index, "an opcode followed by '(' after the shape", text)
        close = match_close(text, opcode.end() - 1)
        tail = text[close + 1 :].strip()
        if tail and not tail.startswith(","):
            raise self.error(index, "',' before attributes after the operand list", text)
        tail = tail[1:].strip()
        operand_text = text[opcode.end() : close]
        return head.group(1), head.group(2), shape, opcode.group(1), operand_text, tail

