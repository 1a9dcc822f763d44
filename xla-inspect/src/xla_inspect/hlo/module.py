"""ModuleReader: the module header, computation headers (signature, result), bodies and
computations written inline, in the order XLA reads them.

    module      ::= 'HloModule' name (',' attribute)* frame_tables? computation+
    computation ::= 'ENTRY'? name signature? '{' instruction+ '}' (',' attribute)*
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Mapping

from xla_inspect.hlo.frames import TABLE_WORD, FrameTableReader
from xla_inspect.hlo.header import check_module_attributes
from xla_inspect.hlo.instruction_checks import ANY_COMMENT
from xla_inspect.hlo.instructions import InstructionReader
from xla_inspect.hlo.lexical import (
    ARRAY_SHAPE_PATTERN,
    FLAT_TUPLE_SHAPE_PATTERN,
    is_shape,
    split_top_level,
)
from xla_inspect.hlo.line_forms import PRINTED_SHAPE_TEXT
from xla_inspect.hlo.model import HloComputation, Shape, new_computation
from xla_inspect.hlo.shapes import compatible_shapes, shape_problem, squeezed
from xla_inspect.hlo.strings import strings_ok
from xla_inspect.hlo.token_path import reserved
from xla_inspect.hlo.tokens import ATTRIBUTE_NAME, COMMENT_RUN, IDENT

# computation_header as XLA prints it on one line: 'ENTRY'? name ('(' params ')' '->' shape)? '{'
_HEADER_LINE = re.compile(
    r"(ENTRY[ \t]++)?%?([A-Za-z_][\w.\-]*+)[ \t]*+"
    r"(?:\((.*)\)[ \t]*+->[ \t]*+(\S(?:.*\S)?))?[ \t]*+\{"
)


# a computation parameter: 'name: shape'
# A header parameter as XLA's lexer reads one: `name:` (the ':' glued to the name), `%name` (no
# ':'), or a name that is no keyword or type name (no ':'), then its shape
_PARAMETER = re.compile(r"\s*+(%?)([A-Za-z_][\w.\-]*+)(:?)\s*+(.*)", re.S).fullmatch


_PARAMETER_NAME = re.compile(r"[A-Za-z_][\w.\-]*+").fullmatch


# the parameters as XLA prints them: 'name: shape, name: shape'
_PRINTED_PARAMETERS = re.compile(
    r"(?:[A-Za-z_][\w.\-]*+: (?:"
    + ARRAY_SHAPE_PATTERN
    + "|"
    + FLAT_TUPLE_SHAPE_PATTERN
    + r")(?:, (?=.)|\Z))*+"
).fullmatch


# what stands between the shapes of printed parameters (split on it)
_PARAMETER_NAMES = re.compile(r"(?:\A|, )[A-Za-z_][\w.\-]*+: ").split


# entry_computation_layout's value as XLA prints it: '{(' parameter shapes ')->' result '}'
_PRINTED_ENTRY_LAYOUT = re.compile(
    r"\{"
    + FLAT_TUPLE_SHAPE_PATTERN
    + "->(?:"
    + ARRAY_SHAPE_PATTERN
    + "|"
    + FLAT_TUPLE_SHAPE_PATTERN
    + r")\}"
)


# frame_tables ::= 'FileNames' row* 'FunctionNames' row* 'FileLocations' row* 'StackFrames' row*
#   (all four, in this order, token by token, only right after the HloModule header)
# row ::= int64 (string | '{' (name=int32 ','?)* '}')
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})


class ModuleReader(InstructionReader, FrameTableReader):
    """The module header, computations (headers, bodies, inline ones) and their order."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        # computation names in the order their reading started (the callers' numbers index it)
        self.started: list[str] = []
        # computations written inline (`to_apply={...}`) read since the last one was added
        self.inline: list[HloComputation] = []
        self.taken: set[str] = set()  # computation names given so far
        self.header_shapes: set[str] = set()  # shapes of header parameters checked

    @abstractmethod
    def module_attributes(self, text: str) -> Mapping[str, str]:
        """The header attributes of the module `text` holds, read as a whole module is (an
        origin_recovery_table value holds whole modules)."""

    # -- module --------------------------------------------------------------------------------
    # module ::= module_header? (frame_tables | computation)+
    def read_module(
        self,
    ) -> tuple[str, dict[str, str], list[HloComputation], HloComputation, dict[str, int]]:
        """The module as read, before the checks that need every computation: its name, header
        attributes, computations (each inline one before its caller), entry and each
        computation's position."""
        text = self.text
        name = ""
        attributes: dict[str, str] = {}
        computations: list[HloComputation] = []
        order: dict[str, int] = {}
        entry: HloComputation | None = None
        size = len(text)
        # line mode (i: the next line, pos: its offset) while lines start with a token; else
        # token mode (pos: the next token)
        line_mode, i, pos = True, 0, 0
        while True:
            if line_mode:
                if pos > size:
                    break
                end = self.line_end(pos)
                stripped = text[pos:end].strip()
                if not stripped or stripped.startswith("//"):
                    i, pos = i + 1, end + 1
                    continue
                match = None
                if (
                    stripped[-1] == "{"
                    and "/" not in stripped
                    and '"' not in stripped
                    and "'" not in stripped
                    and stripped.count("(") == stripped.count(")")
                ):
                    match = _HEADER_LINE.fullmatch(stripped)
                if match is None:
                    line_mode = False
                    continue
                index = i
                result = self.signature(match.group(3), match.group(4), index)
                number = self.start(match.group(2))
                instructions, pos, i = self.body(match.group(2), number, end + 1, i + 1)
                computation = new_computation(
                    match.group(2), instructions, match.group(1) is not None, index + 1
                )
                self.check_result(computation, result)
                if i < 0 or text.startswith(",", self.skip(pos)):
                    computation, pos = self.computation_end(computation, pos)
                    line_mode, i, pos = self.resume(pos)
                else:
                    line_mode = True
            else:
                pos = self.skip(pos)
                if pos >= len(text):
                    break
                word = IDENT.match(text, pos)
                keyword = word.group() if word is not None else ""
                if keyword == "HloModule":
                    if name or computations:
                        raise self.error_at(pos, "one 'HloModule' header, before any computation")
                    name, attributes, pos = self.module_header(pos + len(keyword))
                    after = self.skip(pos)
                    word = TABLE_WORD.match(text, after)
                    if word is not None and word.group() == "FileNames":
                        pos = self.frame_tables(after)
                    line_mode, i, pos = self.resume(pos)
                    continue
                if keyword in _TABLES:
                    raise self.error_at(
                        pos,
                        f"a computation, not '{keyword}' (frame tables go right after the"
                        " HloModule header)",
                    )
                index = self.line_of(pos)
                computation, pos = self.computation(pos)
                line_mode, i, pos = self.resume(pos)
            for inline in self.inline:  # each before the computation that calls it
                order[inline.name] = len(computations)
                computations.append(inline)
            self.inline = []
            name_problem = reserved(computation.name)
            if name_problem and "%" + computation.name not in self.lines[index]:
                raise self.error(
                    index, f"a computation name, not {name_problem}", near=computation.name
                )
            if computation.name in order:
                raise self.error(
                    index,
                    f"a new computation name, not '{computation.name}'",
                    near=computation.name,
                )
            order[computation.name] = len(computations)
            if computation.is_entry:
                if entry is not None:
                    raise self.error(index, f"one ENTRY (already '{entry.name}')", near="ENTRY")
                entry = computation
            computations.append(computation)
            self.read[computation.name] = computation
        if not computations:
            raise self.error(len(self.lines) - 1, "at least one computation")
        if entry is None:
            entry = computations[-1]
        if [c.name for c in computations] != self.started:
            # inline computations come before their caller: number the callers anew
            numbers = [order[name] for name in self.started]
            self.callers = [(instruction, numbers[at]) for instruction, at in self.callers]
        return name, attributes, computations, entry, order

    # module_header ::= 'HloModule' name (',' attribute_name '=' value)*
    def module_header(self, pos: int) -> tuple[str, dict[str, str], int]:
        text = self.text
        at = self.skip(pos)
        match = IDENT.match(text, at) if at > pos else None
        if match is None:
            raise self.stray(at, "'HloModule <name>' followed by ', key=value' attributes")
        if (problem := reserved(match.group())) is not None:
            raise self.error_at(at, f"a module name, not {problem}")
        attributes: dict[str, str] = {}
        pos = match.end()
        if text.startswith(":", pos):  # `HloModule name:`, as XLA once printed it
            pos += 1
        where: dict[str, int] = {}  # attribute name -> offset
        while text.startswith(",", at := self.skip(pos)):
            at = self.skip(at + 1)
            key = ATTRIBUTE_NAME.match(text, at)
            if key is None:
                raise self.stray(at, "module attributes as 'key=value'")
            name = key.group()[:-1]
            if name in where:
                raise self.error_at(at, f"each module attribute once, not '{name}' again")
            printed = (
                _PRINTED_ENTRY_LAYOUT.match(text, key.end())
                if name == "entry_computation_layout"
                else None
            )
            if printed is not None:  # long (a shape per parameter): read at once
                value, pos = COMMENT_RUN.sub(" ", printed.group()), printed.end()
            else:
                value, pos = self.value(key.end(), single=True)
            attributes[name] = value
            where[name] = at
        if (problem := check_module_attributes(attributes, self.module_attributes)) is not None:
            name, expected = problem
            raise self.error_at(where[name], f"{expected} (module attribute '{name}')")
        return match.group().removeprefix("%"), attributes, pos

    # computation ::= 'ENTRY'? name ('(' params ')' '->' shape)? '{' instruction+ '}'
    #                 (',' 'execution_thread=' string)?
    def computation(self, pos: int) -> tuple[HloComputation, int]:
        text = self.text
        index = self.line_of(pos)
        # the common one-line header as XLA prints it, without comments or strings
        end = text.find("\n", pos)
        line = text[pos : end if end >= 0 else len(text)].rstrip()
        if line[-1:] == "{" and "/" not in line and '"' not in line and "'" not in line:
            match = _HEADER_LINE.fullmatch(line)
            if match is not None and line.count("(") == line.count(")"):
                result = self.signature(match.group(3), match.group(4), index)
                number = self.start(match.group(2))
                instructions, pos, _ = self.body(match.group(2), number, pos + len(line))
                computation = new_computation(
                    match.group(2), instructions, match.group(1) is not None, index + 1
                )
                self.check_result(computation, result)
                return self.computation_end(computation, pos)
        header = "a computation header 'name (params) -> shape {'"
        match = IDENT.match(text, pos)
        is_entry = False
        if match is not None and match.group() == "ENTRY":
            is_entry = True
            match = IDENT.match(text, self.skip(match.end()))
        if match is None:
            raise self.stray(pos, header)
        name = match.group().removeprefix("%")
        at = self.skip(match.end())
        result = None
        if text.startswith("(", at):
            close = self.group_end(at)
            self.signature(text[at + 1 : close - 1], None, index)
            at = self.skip(close)
            if not text.startswith("->", at):
                raise self.stray(at, "'->' and the result shape after the parameters")
            result, at = self.shape(self.skip(at + 2))
            at = self.skip(at)
        if not text.startswith("{", at):
            raise self.stray(at, header) if at < len(text) else self.error_at(pos, header)
        instructions, pos, _ = self.body(name, self.start(name), at + 1)
        computation = new_computation(name, instructions, is_entry, index + 1)
        self.check_result(computation, result)
        return self.computation_end(computation, pos)

    def start(self, name: str) -> int:
        """The number the callers of computation `name`, whose reading starts, are kept with."""
        self.started.append(name)
        self.taken.add(name)
        return len(self.started) - 1

    def inline_computation(self, pos: int) -> tuple[str, int]:
        """Read the computation written inline from the '{' at `pos`: its name and the offset
        after its '}'."""
        name = "_"
        n = 0
        while name in self.taken:
            n += 1
            name = f"_.{n}"
        nested, self.nested = self.nested, []
        instructions, end, _ = self.body(name, self.start(name), pos + 1)
        self.nested = nested
        computation = new_computation(name, instructions, False, self.line_of(pos) + 1)
        self.inline.append(computation)
        self.read[name] = computation
        return name, end

    def signature(self, parameters: str | None, result: str | None, index: int) -> str | None:
        """Check a header's `name: shape` parameters and result shape (as one-line text);
        return the result shape without blanks, or None when the header has none."""
        if parameters is not None and not self.printed_parameters(parameters):
            written = ANY_COMMENT.sub(" ", parameters)
            for piece in split_top_level(written) if written.strip() else ():
                found = _PARAMETER(piece)
                if (
                    found is None
                    or (found[1] == "%" and found[3] == ":")
                    or (not found[1] and not found[3] and reserved(found[2]) is not None)
                    or not is_shape(shape := squeezed(found[4]))
                ):
                    shown = " ".join(piece.split())
                    raise self.error(
                        index,
                        f"parameters as 'name: shape' (or 'name shape'), not '{shown}'",
                        near=shown or None,
                    )
                if (problem := shape_problem(shape)) is not None:
                    raise self.error(index, problem, near=found[2])
        if result is None or result in self.header_shapes:
            return result
        if PRINTED_SHAPE_TEXT(result) is not None and shape_problem(result) is None:
            self.header_shapes.add(result)
            return result
        result = squeezed(result)
        if not is_shape(result):
            raise self.error(index, f"a result shape after '->', not '{result}'", near=result)
        if (problem := shape_problem(result)) is not None:
            raise self.error(index, problem, near="->")
        return result

    def printed_parameters(self, parameters: str) -> bool:
        """Whether `parameters` is 'name: shape, ...' as XLA prints it (each shape checked once
        per module; a tuple shape, which holds ', ', is read by the whole-list pattern)."""
        known = self.header_shapes
        for piece in parameters.split(", "):
            name, colon, shape = piece.partition(": ")
            if _PARAMETER_NAME(name) is None:
                return self.printed_tuple_parameters(parameters)
            if shape not in known:
                if not colon or PRINTED_SHAPE_TEXT(shape) is None:
                    return self.printed_tuple_parameters(parameters)
                if shape_problem(shape) is not None:
                    return False
                known.add(shape)
        return True

    def printed_tuple_parameters(self, parameters: str) -> bool:
        """Whether `parameters` is 'name: shape, ...' as XLA prints it, tuple shapes among
        them, each shape one XLA takes."""
        if _PRINTED_PARAMETERS(parameters) is None:
            return False
        return all(shape_problem(shape) is None for shape in _PARAMETER_NAMES(parameters) if shape)

    def check_result(self, computation: HloComputation, result: str | None) -> None:
        """XLA rejects a computation whose root does not have the header's result shape."""
        if result is None:
            return
        root = computation.root
        if root.shape[: len(result)] == result and root.shape[len(result) : len(result) + 1] in (
            "",
            "{",
        ):
            return  # the same shape, with or without a layout
        if (result, root.shape) not in self.compatible and not compatible_shapes(
            Shape(result), Shape(root.shape)
        ):
            raise self.error(
                computation.line_no - 1,
                f"the result shape of '{computation.name}' to be its ROOT's "
                f"('{root.name}', {root.shape}), not {result}",
                near=result,
            )
        self.compatible.add((result, root.shape))

    def computation_end(self, computation: HloComputation, pos: int) -> tuple[HloComputation, int]:
        """After the closing '}': an optional `, execution_thread="name"`."""
        text = self.text
        at = self.skip(pos)
        if text.startswith(",", at):
            at = self.skip(at + 1)
            if not text.startswith("execution_thread=", at):
                raise self.stray(at, "'}' or '}, execution_thread=\"name\"'")
            start = self.skip(at + len("execution_thread="))
            value, pos = self.value(start, single=True)
            if value[0] not in "\"'" or not strings_ok(value):
                raise self.error_at(start, f"a quoted thread name (C escapes), not {value}")
        return computation, pos
