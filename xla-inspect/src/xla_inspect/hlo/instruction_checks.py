"""InstructionChecks: the checks of one instruction that the fast line path and the token
path share (opcode, operand count, attribute names and values, required attributes,
metadata, parameters, literals, names).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xla_inspect.errors import HloParseError, did_you_mean
from xla_inspect.hlo.attributes import ATTRIBUTE_SYNTAX, BAD_ATTRIBUTE_VALUE, OTHER_TYPE
from xla_inspect.hlo.lexical import match_close, split_attributes
from xla_inspect.hlo.literals import literal_problem, literal_value_problem
from xla_inspect.hlo.metadata import FIELD_VALUE, METADATA_FIELD, METADATA_FIELDS
from xla_inspect.hlo.model import HloInstruction, Shape
from xla_inspect.hlo.opcodes import (
    ANY_INSTRUCTION_ATTRIBUTES,
    OPCODE_ARITY,
    OPCODE_ATTRIBUTES,
    async_sugar,
    is_opcode,
)
from xla_inspect.hlo.rules import (
    ASYNC,
    BUILT,
    CALLERS,
    NOT_WRAPPED,
    REQUIRED,
    REQUIRED_TOGETHER,
    THREAD,
)
from xla_inspect.hlo.shapes import leaf_count
from xla_inspect.hlo.strings import strings_ok
from xla_inspect.hlo.tokens import TokenReader
from xla_inspect.hlo.values import metadata_int_ok

ANY_COMMENT = re.compile(r"//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/")


# a scalar constant's literal that needs its value checked only (no '.5': XLA's lexer reads
# a leading '.' only after '-')
_SCALAR = re.compile(
    r"true|false|[-+]?(?:inf|nan)|(?:[-+]?[0-9]+\.?[0-9]*|[-+]\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
)


def _sugar_value_check(wrapped: str | None) -> Callable[[str], bool]:
    """The bad-value test of an async sugar opcode's attributes: the thread's, and those of
    the opcode it wraps (`wrapped`, for `X-start`)."""
    thread = BAD_ATTRIBUTE_VALUE["async-done"]
    own = BAD_ATTRIBUTE_VALUE.get(wrapped) if wrapped is not None else None
    if own is None:
        return thread
    return lambda tail: own(tail) or thread(tail)


_LISTED_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)").findall


_ATTRIBUTE_KEY = re.compile(r"[A-Za-z_][\w.\-]*").fullmatch


# (opcode, fixed operand count, attributes it takes, a test for a typed attribute's bad value,
# the attribute lists the fast path read and checked for it, each kept once, and the attributes
# it requires)
_OpcodeFacts = tuple[
    str,
    int | None,
    frozenset[str] | None,
    Callable[[str], bool] | None,
    dict[str, str],
    frozenset[str],
]


class InstructionChecks(TokenReader):
    """The checks of one instruction that both paths (the fast line and the token path) share:
    opcode, attribute names and values, metadata, parameters, literals, names."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.opcodes: dict[str, _OpcodeFacts] = {}
        # opcodes that may name computations in their attributes, or that check_built checks
        self.calling = set(CALLERS | BUILT)
        self.printed_metadata: set[str] = set()  # see _without_metadata
        self.has_async = False  # an async-start, -update or -done, or sugar for one, was read
        self.keyword_names: set[str] = set()  # instructions named by a keyword (`%true`)
        self.literals: set[tuple[str, str]] = set()  # (shape, constant payload) pairs checked

    def check_names(self, instructions: list[HloInstruction], computation: str) -> None:
        """As XLA resolves names while it reads: each instruction a control-predecessors list
        names is one defined before in the computation, and an instruction named by a keyword
        (`%true`) is named with its '%' where it is an operand (`true` alone is the keyword)."""
        seen: set[str] = set()
        for instruction in instructions:
            line = instruction.line_no - 1
            if "control-predecessors=" in instruction.attributes_text:
                for name in _LISTED_NAME(instruction.attribute("control-predecessors", "")):
                    if name not in seen:
                        raise self.error(
                            line,
                            f"an instruction defined before '{instruction.name}' in "
                            f"'{computation}' as its control predecessor, not '{name}'",
                            near=name,
                        )
            for name in self.keyword_names.intersection(instruction.operands):
                written = self.lines[line]
                start = written.find(instruction.opcode + "(") + len(instruction.opcode)
                operands = written[start : match_close(written, start) + 1 or None]
                if re.search(rf"(?<![%\w.\-]){name}(?![\w.\-])", operands):
                    raise self.error(line, f"'%{name}' as the operand, not the keyword", near=name)
            seen.add(instruction.name)

    def parameter_gap(
        self, instructions: list[HloInstruction], count: int, computation: str
    ) -> None:
        """XLA numbers a computation's N parameters 0 to N-1 (its parser aborts otherwise)."""
        for instruction in instructions:
            if instruction.opcode != "parameter":
                continue
            number = int(ANY_COMMENT.sub(" ", instruction.payload or "0"))
            if number >= count:
                raise self.error(
                    instruction.line_no - 1,
                    f"parameter numbers 0 to {count - 1} in '{computation}' ({count} "
                    f"parameters), not {number}",
                    near="parameter",
                )

    def new_opcode(self, opcode: str, index: int) -> _OpcodeFacts:
        """(opcode, its fixed operand count or None, the attributes it takes or None when
        not known, a test for a typed attribute with a bad value or None, an empty dict of
        checked attribute lists), once per opcode and module."""
        if not is_opcode(opcode):
            hint = did_you_mean(opcode, OPCODE_ARITY)
            raise self.error(index, f"an XLA opcode, not '{opcode}'{hint}", near=opcode)
        sugar = async_sugar(opcode)
        if sugar is not None or opcode in ASYNC:
            self.has_async = True
        if sugar is None:
            facts = self.opcodes[opcode] = (
                opcode,
                OPCODE_ARITY.get(opcode),
                OPCODE_ATTRIBUTES.get(opcode),
                BAD_ATTRIBUTE_VALUE.get(opcode),
                {},
                REQUIRED.get(opcode, frozenset()),
            )
            return facts
        # `X-start` is async-start wrapping X: XLA builds X from its attributes (and from as
        # many parameters as the start's operand tuple has, or as X takes: its operands are
        # not read); `X-update` and `X-done` take what every instruction takes, and the thread
        generic, wrapped = sugar
        if wrapped in NOT_WRAPPED:
            raise self.error(
                index, f"an opcode XLA can wrap in an async op, not '{wrapped}'", near=opcode
            )
        self.calling.add(opcode)
        if generic == "async-start":
            allowed = OPCODE_ATTRIBUTES.get(wrapped)
            facts = self.opcodes[opcode] = (
                opcode,
                None,
                None if allowed is None else allowed | THREAD,
                _sugar_value_check(wrapped),
                {},
                REQUIRED.get(wrapped, frozenset()),
            )
        else:
            facts = self.opcodes[opcode] = (
                opcode,
                None,
                ANY_INSTRUCTION_ATTRIBUTES | THREAD,
                _sugar_value_check(None),
                {},
                frozenset(),
            )
        return facts

    def check_required(
        self, opcode: str, required: frozenset[str], tail: str, index: int, after: int
    ) -> None:
        """The attribute list `tail` has each attribute `opcode` requires (a conditional: its
        branch_computations, or true_computation and false_computation). `after`: for a line
        the fast path read, the offset after it: the list may go on after a ',' there."""
        if after and self.text.startswith(",", self.skip(after)):
            return
        given = {key for key, _ in split_attributes(tail)}
        together = REQUIRED_TOGETHER.get(opcode, frozenset())
        if together and together & given:  # the pair stands in for what is required: all of it
            required = together
        missing = sorted(required - given)
        if missing:
            raise self.error(
                index,
                f"the attribute{'s' if len(missing) > 1 else ''} '{opcode}' requires: "
                f"{', '.join(f'{name}=...' for name in missing)}",
                near=opcode,
            )

    def check_attribute_values(self, opcode: str, tail: str, index: int) -> None:
        """Each typed attribute of `opcode` in the list `tail` has a value of its syntax."""
        sugar = async_sugar(opcode)
        other = OTHER_TYPE.get(opcode if sugar is None else sugar[1], {})
        for key, value in split_attributes(tail):
            syntax = other[key] if key in other else ATTRIBUTE_SYNTAX.get(key)
            if syntax is not None and not syntax[1].fullmatch(value):
                # at `key=` (XLA's "error parsing attribute" points there; the opcode's own
                # name may come first: slice, pad, domain)
                raise self.error(
                    index, f"{syntax[0]} for '{key}' of '{opcode}', not '{value}'", near=f"{key}="
                )

    def check_metadata(self, tail: str, index: int) -> None:
        """The metadata in the attribute list `tail`, if any, is '{' (field ','?)* '}' with
        fields XLA knows, each once, each value of its type."""
        value = next((v for k, v in split_attributes(tail) if k == "metadata"), None)
        if value is None:
            return
        if value[:1] != "{" or value[-1:] != "}":
            raise self.error(index, f"metadata as {{field=value ...}}, not '{value}'", near=value)
        body, pos, seen = value[1:-1], 0, set()
        if body.lstrip().startswith(",") and body.lstrip()[1:].strip():  # XLA skips one
            pos = body.index(",") + 1
        while body[pos:].strip():
            match = METADATA_FIELD.match(body, pos)
            if match is None:
                rest = body[pos:].split()[0]
                raise self.error(index, f"a metadata field as name=value, not '{rest}'", near=rest)
            field, text, comma = match.groups()
            kind = METADATA_FIELDS.get(field)
            if kind is None:
                hint = did_you_mean(field, METADATA_FIELDS)
                raise self.error(
                    index,
                    f"a metadata field ({', '.join(sorted(METADATA_FIELDS))}), not '{field}'{hint}",
                    near=field,
                )
            if field in seen:
                raise self.error(
                    index, f"each metadata field once, not '{field}' again", near=field
                )
            seen.add(field)
            if FIELD_VALUE[kind].fullmatch(text) is None or not (
                strings_ok(text) if kind == "a string" else metadata_int_ok(field, text)
            ):
                raise self.error(
                    index, f"{kind} for metadata field '{field}', not '{text}'", near=field
                )
            pos = match.end()
            if comma and pos == len(body):
                raise self.error(index, f"a metadata field after ',' in '{value}'", near=field)

    def check_attribute_names(
        self, opcode: str, allowed: frozenset[str] | None, tail: str, index: int
    ) -> None:
        """Every attribute of the list `tail` is one `opcode` takes (XLA rejects others; None:
        any name), and none comes twice."""
        seen: set[str] = set()
        for key, value in split_attributes(tail):
            if _ATTRIBUTE_KEY(key) is None:
                piece = f"{key}={value}" if value else key
                raise self.error(
                    index,
                    f"an attribute 'name=value' after ',', not '{piece}'",
                    near=piece if piece else None,
                )
            if key in seen:
                line = self.lines[index]
                found = list(re.finditer(r"(?<![\w.\-])" + re.escape(key) + "=", line))
                column = found[-1].start() + 1 if len(found) > 1 else None
                raise HloParseError(
                    index + 1, line, f"each attribute once, not '{key}' again", column
                )
            seen.add(key)
            if allowed is not None and key not in allowed:
                own = sorted(allowed - ANY_INSTRUCTION_ATTRIBUTES)
                hint = did_you_mean(key, sorted(allowed))
                takes = f"{', '.join(own)} or " if own else ""
                raise self.error(
                    index,
                    f"an attribute '{opcode}' takes ({takes}any instruction's: "
                    f"{', '.join(sorted(ANY_INSTRUCTION_ATTRIBUTES))}), not '{key}'{hint}",
                    near=key,
                )

    def check_parameter(
        self, payload: str, parameters: set[str], index: int, computation: str
    ) -> None:
        number = ANY_COMMENT.sub(" ", payload).strip()
        if not number.isdecimal():
            raise self.error(index, "a parameter number in 'parameter(N)'", near="parameter")
        if number in parameters or str(int(number)) in parameters:
            raise self.error(
                index,
                f"a parameter number not used before in '{computation}', not {number}",
                near="parameter",
            )
        parameters.add(number)

    def check_replication(self, tail: str, shape: str, index: int) -> None:
        """parameter_replication has one entry per leaf buffer of the parameter's shape."""
        value = next((v for k, v in split_attributes(tail) if k == "parameter_replication"), None)
        if value is None:
            return
        given = len(re.findall(r"true|false", value))
        leaves = leaf_count(Shape(shape))
        if given != leaves:
            raise self.error(
                index,
                f"as many parameter_replication entries as the parameter has leaf buffers"
                f" ({leaves}), not {given}",
                near="parameter_replication",
            )

    def check_literal(self, payload: str, shape: str, index: int) -> None:
        """A constant's literal, as XLA's parser reads it for the shape (literal_problem): a
        scalar number or true/false needs its value checked only."""
        if shape[-2:] == "[]" and _SCALAR.fullmatch(payload.strip()) is not None:
            problem = literal_value_problem(payload, shape[:-2])
        else:
            literal = ANY_COMMENT.sub(" ", payload) if "/" in payload else payload
            problem = literal_problem(literal, shape)
        if problem is not None:
            raise self.error(index, problem, near="constant")
