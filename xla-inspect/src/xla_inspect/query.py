"""Questions asked of a parsed HloModule: counts, fusions, calls, collectives, dots, layouts.

Queries interpret the raw attribute text the parser kept. They never raise on odd but parsable
text: a missing or malformed attribute reads as absent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any

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
# `backend_config={"fusion_config":{"kind":"__ynn_fusion"}}` (CPU), `"fusion_backend_config"` (GPU)
_CUSTOM_FUSION_KIND = re.compile(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"')


@dataclass(frozen=True, slots=True)
class Fusion:
    """A `fusion` instruction and what it fused: the one fusion record of xla_inspect.

    `query.fusions` builds these; `diff`, `summary` and `graph` read them, so every view of a
    module agrees on its fusions.

    - `name`, `computation`: the fusion instruction and the computation that holds it (ENTRY, a
      while body, or another fused computation for a nested fusion).
    - `kind`: XLA's `kind=` attribute as printed (`kLoop`, `kInput`, `kOutput`, `kCustom`); ""
      when the text has none.
    - `custom_kind`: for a custom fusion, the kind its `backend_config` names
      (`"fusion_config":{"kind":"__ynn_fusion"}` on CPU, `"fusion_backend_config":{"kind":...}`
      on GPU, e.g. `__triton_gemm`); None otherwise.
    - `label`: how xla_inspect shows and groups a fusion: `kind`, or `kind(custom_kind)` when
      there is one, so a YNN fusion on CPU reads `kCustom(__ynn_fusion)`. `kind` stays XLA's
      word, so counting by `kind` matches what XLA printed.
    - `fused_computation`: the computation named by `calls=` ("" when the text has none).
    - `opcodes`: instructions per opcode in the fused computation and in everything it calls
      (nested fusions and their computations, reducers), `parameter` included; `absorbed` is the
      same without `parameter` (plumbing: a fused computation has one per operand).
    - `parameters`: `parameter` instructions of the fused computation itself (its operands).
    - `root_opcode`: opcode of the fused computation's root (`tuple` for a multi-output fusion).
    - `shape`: the fusion's output shape text.
    """

    name: str
    computation: str
    kind: str
    custom_kind: str | None
    fused_computation: str
    opcodes: Counter[str]
    parameters: int
    root_opcode: str
    shape: str

    @property
    def label(self) -> str:
        return _label(self.kind, self.custom_kind)

    @property
    def absorbed(self) -> Counter[str]:
        """`opcodes` without `parameter`."""
        return Counter({op: n for op, n in self.opcodes.items() if op != "parameter"})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (the opcode counts sorted by opcode)."""
        return {
            "name": self.name,
            "computation": self.computation,
            "kind": self.kind,
            "custom_kind": self.custom_kind,
            "label": self.label,
            "fused_computation": self.fused_computation,
            "opcodes": dict(sorted(self.opcodes.items())),
            "absorbed": dict(sorted(self.absorbed.items())),
            "parameters": self.parameters,
            "root_opcode": self.root_opcode,
            "shape": self.shape,
        }


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


_OPCODE = attrgetter("opcode")


def opcode_counts(module: HloModule, entry_only: bool = False) -> Counter[str]:
    """Instructions per opcode as XLA prints it (`add`, `fusion`, `parameter`, ...)."""
    computations = (module.entry,) if entry_only else module.computations
    every = chain.from_iterable(computation.instructions for computation in computations)
    return Counter(map(_OPCODE, every))


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


def _custom_kind(instruction: HloInstruction) -> str | None:
    # read in the whole attribute list: only a backend_config in braces holds unescaped JSON
    text = instruction.attributes_text
    found = _CUSTOM_FUSION_KIND.search(text) if '"kind"' in text else None
    return found.group(1) if found else None


def _label(kind: str, custom_kind: str | None) -> str:
    return f"{kind}({custom_kind})" if custom_kind else kind


def fusion_labels(module: HloModule) -> Counter[str]:
    """Fusions per `Fusion.label` (`kLoop`, `kCustom(__ynn_fusion)`), nested ones too: the same
    counts as grouping `fusions(module)` by label, without walking the fused computations."""
    return Counter(
        _label(instruction.attribute("kind") or "", _custom_kind(instruction))
        for computation in module.computations
        for instruction in computation.instructions
        if instruction.opcode == "fusion"
    )


def _fused_name(fusion: HloInstruction) -> str:
    called = fusion.attribute("calls")
    return called.removeprefix("%") if called else ""


def fusions(module: HloModule) -> list[Fusion]:
    """Every `fusion` instruction of every computation, in text order (see `Fusion`)."""
    found = []
    for computation, instruction in instructions(module):
        if instruction.opcode != "fusion":
            continue
        fused_name = _fused_name(instruction)
        opcodes: Counter[str] = Counter()
        for reached in reachable(module, (fused_name,)):
            opcodes.update(i.opcode for i in reached.instructions)
        fused = module.computation(fused_name) if fused_name else None
        found.append(
            Fusion(
                name=instruction.name,
                computation=computation.name,
                kind=instruction.attribute("kind") or "",
                custom_kind=_custom_kind(instruction),
                fused_computation=fused_name,
                opcodes=opcodes,
                parameters=sum(i.opcode == "parameter" for i in fused) if fused else 0,
                root_opcode=fused.root.opcode if fused else "",
                shape=instruction.shape,
            )
        )
    return found


def fused_computation_names(module: HloModule) -> frozenset[str]:
    """Computations reachable from a fusion's `calls=` (nested fusions and reducers included)."""
    roots = tuple(_fused_name(i) for _, i in instructions(module) if i.opcode == "fusion")
    return frozenset(computation.name for computation in reachable(module, roots))


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
    for raw in [
        instruction.attribute("custom_call_target") or ""
        for computation in module.computations
        for instruction in computation.instructions
        if instruction.opcode == "custom-call"
    ]:
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
