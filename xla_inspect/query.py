"""Questions asked of a parsed HloModule: counts, fusions, calls, collectives, dots, layouts.

Queries interpret the raw attribute text the parser kept. They never raise on odd but parsable
text: a missing or malformed attribute reads as absent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from xla_inspect.model import HloComputation, HloInstruction, HloModule, Shape

COLLECTIVE_OPCODES = frozenset(
    {
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "collective-permute",
        "all-to-all",
        "collective-broadcast",
        "ragged-all-to-all",
        "all-reduce-start",
        "all-gather-start",
        "collective-permute-start",
    }
)
_INTS = re.compile(r"-?\d+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class FusionInfo:
    """A `fusion` instruction: its kind (`kLoop`, `kCustom`, ...), fused computation and ops."""

    name: str
    kind: str | None
    computation: str | None
    opcodes: Counter[str]


@dataclass(frozen=True, slots=True)
class CollectiveInfo:
    """A cross-device instruction with its raw `replica_groups` / `source_target_pairs` text."""

    name: str
    opcode: str
    computation: str
    shape: str
    replica_groups: str | None
    source_target_pairs: str | None


@dataclass(frozen=True, slots=True)
class DotInfo:
    """A `dot` with its operand shapes and dimension numbers."""

    name: str
    computation: str
    lhs_shape: str
    rhs_shape: str
    lhs_contracting_dims: tuple[int, ...]
    rhs_contracting_dims: tuple[int, ...]
    lhs_batch_dims: tuple[int, ...]
    rhs_batch_dims: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ParameterLayout:
    """An ENTRY parameter: `parameter(number)`, its shape text and layout (`{1,0}` or None)."""

    number: int
    name: str
    shape: str
    layout: str | None


def instructions(module: HloModule) -> Iterator[tuple[HloComputation, HloInstruction]]:
    """Every (computation, instruction) pair, in text order."""
    for computation in module.computations:
        for instruction in computation.instructions:
            yield computation, instruction


def opcode_counts(module: HloModule, entry_only: bool = False) -> Counter[str]:
    """Instructions per opcode as XLA prints it (`add`, `fusion`, `parameter`, ...)."""
    computations = (module.entry,) if entry_only else module.computations
    counts: Counter[str] = Counter()
    for computation in computations:
        counts.update([i.opcode for i in computation.instructions])
    return counts


def call_graph(module: HloModule) -> dict[str, tuple[str, ...]]:
    """Computation name -> names of the computations it calls (fusions, loops, reducers...)."""
    return {c.name: c.calls for c in module.computations}


def reachable(module: HloModule, roots: tuple[str, ...]) -> list[HloComputation]:
    """Computations named in `roots` and all they call, each once (known names only), depth
    first. Only the computations reached are visited, so a walk per fusion stays cheap."""
    found: dict[str, HloComputation] = {}
    pending = list(reversed(roots))
    while pending:
        name = pending.pop()
        computation = None if name in found else module.computation(name)
        if computation is None or computation.name != name:  # unknown, or `%name`
            continue
        found[name] = computation
        pending.extend(reversed(computation.calls))
    return list(found.values())


def fusions(module: HloModule) -> list[FusionInfo]:
    """Every `fusion` instruction with the opcodes of its fused computation, nested calls too."""
    found = []
    for _, instruction in instructions(module):
        if instruction.opcode != "fusion":
            continue
        called = instruction.attribute("calls")
        fused = called.removeprefix("%") if called else None
        opcodes: Counter[str] = Counter()
        for computation in reachable(module, (fused,) if fused else ()):
            opcodes.update(i.opcode for i in computation.instructions)
        found.append(FusionInfo(instruction.name, instruction.attribute("kind"), fused, opcodes))
    return found


def collectives(module: HloModule) -> list[CollectiveInfo]:
    """all-reduce, all-gather, reduce-scatter, collective-permute, all-to-all (and -start)."""
    return [
        CollectiveInfo(
            i.name,
            i.opcode,
            c.name,
            i.shape,
            i.attribute("replica_groups"),
            i.attribute("source_target_pairs"),
        )
        for c, i in instructions(module)
        if i.opcode in COLLECTIVE_OPCODES
    ]


def custom_call_targets(module: HloModule) -> Counter[str]:
    """`custom_call_target="..."` values of every custom-call, counted."""
    targets: Counter[str] = Counter()
    for _, instruction in instructions(module):
        if instruction.opcode == "custom-call":
            raw = instruction.attribute("custom_call_target") or ""
            quoted = _QUOTED.fullmatch(raw)
            targets[quoted.group(1) if quoted else raw] += 1
    return targets


def _dims(instruction: HloInstruction, key: str) -> tuple[int, ...]:
    return tuple(int(d) for d in _INTS.findall(instruction.attribute(key) or ""))


def dots(module: HloModule) -> list[DotInfo]:
    """Every `dot`, with operand shapes looked up in its own computation."""
    found = []
    for computation, instruction in instructions(module):
        if instruction.opcode != "dot":
            continue
        shapes = []
        for operand in instruction.operands[:2]:
            defining = computation.instruction(operand)
            shapes.append(defining.shape if defining else "")
        shapes += [""] * (2 - len(shapes))
        found.append(
            DotInfo(
                instruction.name,
                computation.name,
                shapes[0],
                shapes[1],
                _dims(instruction, "lhs_contracting_dims"),
                _dims(instruction, "rhs_contracting_dims"),
                _dims(instruction, "lhs_batch_dims"),
                _dims(instruction, "rhs_batch_dims"),
            )
        )
    return found


def parameter_layouts(module: HloModule) -> list[ParameterLayout]:
    """ENTRY parameters in parameter-number order, with their layouts."""
    found = []
    for instruction in module.entry.instructions:
        if instruction.opcode == "parameter" and instruction.payload is not None:
            found.append(
                ParameterLayout(
                    int(instruction.payload),
                    instruction.name,
                    instruction.shape,
                    Shape(instruction.shape).layout,
                )
            )
    return sorted(found, key=lambda p: p.number)


def root_layout(module: HloModule) -> str | None:
    """Layout of the ENTRY root: `{1,0}`; for a tuple, its elements' like `({1,0}, {0})`."""
    return _layout_text(Shape(module.entry.root.shape))


def _layout_text(shape: Shape) -> str | None:
    if not shape.is_tuple:
        return shape.layout
    return "(" + ", ".join(_layout_text(e) or "{}" for e in shape.elements) + ")"
