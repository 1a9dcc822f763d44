"""The HLO data model: frozen dataclasses named with XLA's own words.

Parsing keeps raw text (shapes, attribute lists) and these classes interpret it on demand, so
reading a large module costs little more than splitting its lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple, overload

from xla_inspect.hlo.lexical import (
    COMMENT,
    DIMS,
    DTYPE,
    LAYOUT,
    match_close,
    split_attributes,
    split_top_level,
)

#: Every attribute whose value names called computations, the one list xla_inspect keeps (the
#: parser's checks, `called_computations` and normalize's renaming are built from it). XLA prints
#: one name (`calls=%c`: fusion, async-start; `to_apply=`: call, reduce, map, sort, all-reduce...;
#: `condition=`/`body=`: while; `true_computation=`/`false_computation=`: conditional;
#: `select=`/`scatter=`: select-and-scatter) or a braced list (`branch_computations={%a, %b}`:
#: conditional; `called_computations={...}`: custom-call).
CALL_ATTRIBUTES: tuple[str, ...] = (
    "calls",
    "to_apply",
    "condition",
    "body",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
    "select",
    "scatter",
)
#: A regex alternation of CALL_ATTRIBUTES, for patterns that look for `key=`.
CALL_ATTRIBUTE_KEYS = "(?:" + "|".join(CALL_ATTRIBUTES) + ")"
#: A lookahead for the first letters of CALL_ATTRIBUTES: first in a pattern that looks for a key
#: after a lookbehind, it lets the regex engine pass over most positions without trying either.
CALL_KEY_START = "(?=[" + "".join(sorted({key[0] for key in CALL_ATTRIBUTES})) + "])"
_CALL_ATTRIBUTE_SET = frozenset(CALL_ATTRIBUTES)
_CALL_KEY = re.compile(r"(?:^|,)\s*" + CALL_ATTRIBUTE_KEYS + "=")
_NAME_IN_LIST = re.compile(r"%?([^\s,{}%]+)")
_ARRAY_PARTS = re.compile(r"(" + DTYPE + r")\[(" + DIMS + r")\](" + LAYOUT + r")?")


_BRACKET_OR_QUOTE = re.compile(r"[{}()\[\]\"']").search


def _sole_top_level_value(text: str, at: int, width: int) -> str | None:
    """The value of the attribute whose `name=` (`width` characters) starts at `at` in an
    attribute list, when cheap checks show it is a top-level attribute named once: what
    precedes it has balanced brackets and quotes and no escapes, the name does not come again,
    and the value is a word or one bracket group. Else None (split the whole list instead)."""
    if at:
        before = text[:at]
        if (
            before[-2:] != ", "
            or "\\" in before
            or before.count('"') & 1
            or before.count("'") & 1
            or before.count("{") != before.count("}")
            or before.count("(") != before.count(")")
            or before.count("[") != before.count("]")
        ):
            return None
    start = at + width
    if text.find(text[at:start], start) >= 0:
        return None
    first = text[start : start + 1]
    if first in ("{", "(", "["):
        close = match_close(text, start)
        if close < 0:
            return None
        end = close + 1
        if text[end:].lstrip()[:1] not in ("", ","):
            return None
        return text[start:end]
    end = text.find(",", start)
    value = text[start : end if end >= 0 else len(text)].strip()
    if not value or _BRACKET_OR_QUOTE(value) is not None:
        return None
    return value


@lru_cache(maxsize=4096)
def _array_parts(text: str) -> tuple[str, str, str | None] | None:
    match = _ARRAY_PARTS.fullmatch(text)
    return (match.group(1), match.group(2), match.group(3)) if match else None


@lru_cache(maxsize=1024)
def _tuple_elements(text: str) -> tuple[str, ...]:
    inner = COMMENT.sub("", text).strip()[1:-1]
    return tuple(piece.strip() for piece in split_top_level(inner) if piece.strip())


@dataclass(frozen=True, slots=True)
class Shape:
    """An HLO shape, kept as its text (`f32[8,16]{1,0}`, `(f32[2]{0}, s32[])`, `f32[<=4]`)."""

    text: str

    @property
    def is_tuple(self) -> bool:
        return self.text.startswith("(")

    @property
    def elements(self) -> tuple[Shape, ...]:
        """Tuple element shapes; () for an array shape."""
        return tuple(Shape(t) for t in _tuple_elements(self.text)) if self.is_tuple else ()

    @property
    def dtype(self) -> str | None:
        """Element type such as `f32`, `bf16`, `pred`, `token`; None for a tuple."""
        parts = _array_parts(self.text)
        return parts[0] if parts else None

    @property
    def dims(self) -> tuple[int | None, ...]:
        """Dimension sizes; a bounded dynamic dim `<=N` gives N, an unbounded `?` gives None."""
        parts = _array_parts(self.text)
        if not parts or not parts[1]:
            return ()
        return tuple(None if d == "?" else int(d.removeprefix("<=")) for d in parts[1].split(","))

    @property
    def dynamic_dims(self) -> tuple[bool, ...]:
        parts = _array_parts(self.text)
        if not parts or not parts[1]:
            return ()
        return tuple(d == "?" or d.startswith("<=") for d in parts[1].split(","))

    @property
    def layout(self) -> str | None:
        """Layout text with braces (`{1,0}`, `{1,0:T(8,128)}`); None when absent or a tuple."""
        parts = _array_parts(self.text)
        return parts[2] if parts else None

    @property
    def minor_to_major(self) -> tuple[int, ...] | None:
        layout = self.layout
        if layout is None:
            return None
        order = layout[1:-1].partition(":")[0]
        return tuple(int(d) for d in order.split(",")) if order else ()


class HloInstruction(NamedTuple):
    """One `ROOT? name = shape opcode(operands), attributes` line.

    `operands` are names without `%`; `payload` holds what `parameter(N)` and `constant(...)`
    carry instead of operands; `attributes_text` is the raw text after the operand list.
    Immutable (a named tuple: a module holds tens of thousands, and a tuple is the cheapest
    object Python builds); `_replace(is_root=True)` makes a changed copy.
    """

    name: str
    opcode: str
    shape: str
    operands: tuple[str, ...]
    attributes_text: str
    is_root: bool
    payload: str | None
    line_no: int

    @property
    def attributes(self) -> Mapping[str, str]:
        """Attribute name -> raw value text (`kind` -> `kLoop`), split on each access."""
        return MappingProxyType(dict(split_attributes(self.attributes_text)))

    @overload
    def attribute(self, key: str) -> str | None: ...
    @overload
    def attribute(self, key: str, default: str) -> str: ...
    def attribute(self, key: str, default: str | None = None) -> str | None:
        """The raw value text of attribute `key`, else `default` (the same as
        `attributes.get(key, default)`)."""
        text = self.attributes_text
        at = text.find(key + "=")
        if at < 0:
            return default
        value = _sole_top_level_value(text, at, len(key) + 1)
        return value if value is not None else self.attributes.get(key, default)

    @property
    def shape_info(self) -> Shape:
        return Shape(self.shape)

    @property
    def called_computations(self) -> tuple[str, ...]:
        """Names in its CALL_ATTRIBUTES (calls=, to_apply=, body=, branch_computations={...})."""
        if not _CALL_KEY.search(self.attributes_text):
            return ()
        names: list[str] = []
        for key, value in split_attributes(self.attributes_text):
            if key in _CALL_ATTRIBUTE_SET:
                names.extend(_NAME_IN_LIST.findall(value))
        return tuple(names)


@dataclass(frozen=True, slots=True)
class HloComputation:
    """`ENTRY? name (params) -> shape { instructions }`."""

    name: str
    instructions: tuple[HloInstruction, ...]
    is_entry: bool
    line_no: int
    # name -> instruction, made on the first lookup (most computations are never looked into)
    _by_name: dict[str, HloInstruction] | None = field(
        init=False, repr=False, compare=False, default=None
    )

    @property
    def root(self) -> HloInstruction:
        """The ROOT instruction, else the last one."""
        for instruction in reversed(self.instructions):
            if instruction.is_root:
                return instruction
        return self.instructions[-1]

    @property
    def calls(self) -> tuple[str, ...]:
        """Names of computations its instructions call, in order of first mention."""
        seen: dict[str, None] = {}
        for instruction in self.instructions:
            for name in instruction.called_computations:
                seen.setdefault(name)
        return tuple(seen)

    def instruction(self, name: str) -> HloInstruction | None:
        by_name = self._by_name
        if by_name is None:
            by_name = {i.name: i for i in self.instructions}
            object.__setattr__(self, "_by_name", by_name)
        return by_name.get(name.removeprefix("%"))

    def __getitem__(self, name: str) -> HloInstruction:
        instruction = self.instruction(name)
        if instruction is None:
            raise KeyError(name)
        return instruction

    def __iter__(self) -> Iterator[HloInstruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)


@dataclass(frozen=True, slots=True)
class HloModule:
    """`HloModule name, attributes` followed by computations, one of them the entry."""

    name: str
    attributes: Mapping[str, str]
    computations: tuple[HloComputation, ...]
    entry: HloComputation
    _by_name: Mapping[str, HloComputation] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = MappingProxyType({c.name: c for c in self.computations})
        object.__setattr__(self, "_by_name", by_name)

    def computation(self, name: str) -> HloComputation | None:
        return self._by_name.get(name.removeprefix("%"))

    def __getitem__(self, name: str) -> HloComputation:
        computation = self.computation(name)
        if computation is None:
            raise KeyError(name)
        return computation

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.computation(name) is not None

    def __iter__(self) -> Iterator[HloComputation]:
        return iter(self.computations)


class _ComputationBuilder:
    """A mutable twin of HloComputation (see InstructionBuilder): `new_computation`."""

    __slots__ = HloComputation.__slots__

    def __init__(
        self, name: str, instructions: tuple[HloInstruction, ...], is_entry: bool, line_no: int
    ) -> None:
        self.name = name
        self.instructions = instructions
        self.is_entry = is_entry
        self.line_no = line_no
        self._by_name = None


def new_computation(
    name: str, instructions: tuple[HloInstruction, ...], is_entry: bool, line_no: int
) -> HloComputation:
    """Same as HloComputation(...), about twice as fast (a module may hold thousands)."""
    computation = _ComputationBuilder(name, instructions, is_entry, line_no)
    computation.__class__ = HloComputation  # type: ignore[assignment]
    return computation  # type: ignore[return-value]


def new_instruction(
    name: str,
    opcode: str,
    shape: str,
    operands: tuple[str, ...],
    attributes_text: str,
    is_root: bool,
    payload: str | None,
    line_no: int,
) -> HloInstruction:
    """Same as HloInstruction(...), without its argument handling (the reader's hot loop calls
    `tuple.__new__(HloInstruction, fields)` itself)."""
    return tuple.__new__(
        HloInstruction, (name, opcode, shape, operands, attributes_text, is_root, payload, line_no)
    )
