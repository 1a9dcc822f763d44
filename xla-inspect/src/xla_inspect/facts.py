"""HLO facts for a user's own test suite: `hlo_facts(step, params, batch)` and assertions on it.

    from xla_inspect import hlo_facts

    facts = hlo_facts(step, params, batch)       # compiles as jax.jit(step)(params, batch) would
    assert facts.fusions(kind="kLoop") <= 3
    assert not facts.collectives("all-gather")
    assert facts.opcodes["dot"] == 2

`fusions`, `collectives`, `custom_calls` and `instructions` return a `Matches`: a list of the
records that matched, which compares with an int by its length (`<= 3`, `== 0`) and with a list
as a list. Each match keeps an excerpt of the IR (the instruction and its computation, and the
first lines of a fusion's fused computation); with the pytest plugin (registered when
xla-inspect is installed) a failing comparison prints those excerpts.
`opcodes` is a plain `Counter` of ints, counted over every computation.

JAX is imported only when a function or a JAX stage is compiled, never for HLO text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from os import PathLike
from typing import Any, Literal

from xla_inspect.errors import InspectError
from xla_inspect.hlo.lexical import split_attributes
from xla_inspect.model import HloComputation, HloInstruction, HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.query import (
    COLLECTIVE_OPCODES,
    CollectiveInfo,
    Fusion,
    ParameterLayout,
    fusions,
    instructions,
    opcode_counts,
    parameter_layouts,
)

__all__ = ["FUSION_KINDS", "FactsError", "HloFacts", "Matches", "hlo_facts"]

Stage = Literal["optimized", "unoptimized"]

# XLA's HloInstruction::FusionKind, as printed in `kind=`
FUSION_KINDS = frozenset({"kLoop", "kInput", "kOutput", "kCustom"})
# collectives named by their synchronous opcode; the async `-start` form counts as the same op
_COLLECTIVE_NAMES = frozenset(op.removesuffix("-start") for op in COLLECTIVE_OPCODES)
# attributes left out of an excerpt: long, and about where the op came from, not what it is
_NOISY_ATTRIBUTES = frozenset({"metadata", "frontend_attributes", "statistics_viz"})
_LINE_WIDTH = 160
_BRIEF_WIDTH = 80
_LAYOUT = re.compile(r"\{[^{}]*\}")
_BODY_LINES = 6


class FactsError(InspectError):
    """A fact asked of a source that does not hold it, or a query with an unknown name."""


class Matches[T](list[T]):
    """The records a query matched, in module text order, each with an IR excerpt.

    Compares with an int by length (`facts.fusions(kind="kLoop") <= 3`, `== 0`) and with
    anything else as a list; `not matches` is true when nothing matched. `query` says what was
    asked. For `self[i]`, `briefs[i]` is one short line (its computation, name, shape and
    opcode; for a fusion, its kind and the opcodes it fused) and `excerpts[i]` the IR: its
    computation and its instruction as printed (without `metadata`), and for a fusion the first
    lines of its fused computation.
    """

    query: str
    briefs: tuple[str, ...]
    excerpts: tuple[str, ...]

    def __init__(self, query: str, found: Iterable[tuple[T, str, str]]) -> None:
        rows = list(found)
        super().__init__(item for item, _, _ in rows)
        self.query = query
        self.briefs = tuple(brief for _, brief, _ in rows)
        self.excerpts = tuple(excerpt for _, _, excerpt in rows)

    __hash__ = None  # type: ignore[assignment]  # a list: unhashable

    def __eq__(self, other: object) -> bool:
        return len(self) == other if _is_count(other) else list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: Any) -> bool:
        return len(self) < other if _is_count(other) else list.__lt__(self, other)

    def __le__(self, other: Any) -> bool:
        return len(self) <= other if _is_count(other) else list.__le__(self, other)

    def __gt__(self, other: Any) -> bool:
        return len(self) > other if _is_count(other) else list.__gt__(self, other)

    def __ge__(self, other: Any) -> bool:
        return len(self) >= other if _is_count(other) else list.__ge__(self, other)

    def __repr__(self) -> str:
        """One line (pytest escapes newlines in a repr and cuts it at 240 characters)."""
        shown = "; ".join(self.briefs)
        return f"<{self.query}: {len(self)} found{': ' + shown if shown else ''}>"

    def explain(
        self, brief: bool = False, max_chars: int | None = None, max_lines: int | None = None
    ) -> str:
        """The query and count, then each match's excerpt (its brief line, if `brief`), as many
        as fit in `max_chars` characters and `max_lines` lines (no limit when None), the last
        line saying how many more there are."""
        lines = [f"{self.query}: {len(self)} found"]
        size = len(lines[0])
        for shown, block in enumerate(self.briefs if brief else self.excerpts):
            more = shown < len(self) - 1  # a line must be kept for "... and N more"
            over_chars = max_chars is not None and size + len(block) + 24 * more > max_chars
            over_lines = max_lines is not None and len(lines) + 1 + more > max_lines
            if over_chars or over_lines:
                lines.append(f"  ... and {len(self) - shown} more")
                break
            lines.append(f"  {block}" if brief else block)
            size += len(block) + 3
        return "\n".join(lines)


def _is_count(other: object) -> bool:
    return isinstance(other, int) and not isinstance(other, bool)


@dataclass(frozen=True, eq=False)
class HloFacts:
    """Facts about one HLO module, read from what XLA compiled (see `hlo_facts`).

    - `text`, `module`: the HLO text and its parse; `stage_name` says which stage it is
      (`optimized`, `unoptimized`, or `text` for HLO text given as is).
    - `opcodes`: instructions per opcode over every computation (a fusion's body included).
    - `parameters`: ENTRY parameters in parameter-number order, with their layouts.
    - `cost`, `memory`: XLA's `cost_analysis()` and `memory_analysis()` of the compile; a
      `FactsError` when the source was HLO text, which nothing compiled.
    - `stage("optimized" | "unoptimized")`: the facts of that stage of the same compile;
      `stages` maps each stage the source holds to its text (empty for HLO text).
    - `cost_analysis`, `memory_analysis`: what `cost` and `memory` return, None when nothing
      was compiled.
    """

    text: str
    stage_name: str
    stages: Mapping[str, str]
    cost_analysis: Mapping[str, float] | None
    memory_analysis: Mapping[str, int] | None

    def __repr__(self) -> str:
        module = self.module
        count = sum(len(c) for c in module.computations)
        return (
            f"<HloFacts {self.stage_name} {module.name}: {len(module.computations)} computations,"
            f" {count} instructions>"
        )

    @cached_property
    def module(self) -> HloModule:
        return parse_hlo(self.text)

    @cached_property
    def opcodes(self) -> Counter[str]:
        return opcode_counts(self.module)

    @property
    def parameters(self) -> list[ParameterLayout]:
        return parameter_layouts(self.module)

    @property
    def cost(self) -> Mapping[str, float]:
        if self.cost_analysis is None:
            raise FactsError("HLO text was given, not compiled: it has no cost analysis")
        return self.cost_analysis

    @property
    def memory(self) -> Mapping[str, int]:
        if self.memory_analysis is None:
            raise FactsError("HLO text was given, not compiled: it has no memory analysis")
        return self.memory_analysis

    def stage(self, name: Stage) -> HloFacts:
        """The facts of stage `name` of the same compile (the same object for its own stage)."""
        if name == self.stage_name:
            return self
        if name not in ("optimized", "unoptimized"):
            raise FactsError(f"unknown stage {name!r}: 'optimized' or 'unoptimized'")
        if name not in self.stages:
            raise FactsError(f"this source holds no {name} HLO (it has {sorted(self.stages)})")
        return HloFacts(
            self.stages[name], name, self.stages, self.cost_analysis, self.memory_analysis
        )

    def instructions(self, opcode: str | None = None) -> Matches[HloInstruction]:
        """Every instruction (of `opcode`, if given) in every computation."""
        return self._matches(
            _query("instructions", opcode=opcode),
            (
                (i, _brief(c, i), self._excerpt(c, i))
                for c, i in instructions(self.module)
                if opcode is None or i.opcode == opcode
            ),
        )

    def fusions(self, kind: str | None = None, label: str | None = None) -> Matches[Fusion]:
        """Fusions of every computation, filtered by XLA's `kind` (`kLoop`, `kInput`, `kOutput`,
        `kCustom`) and/or xla_inspect's `label` (`kCustom(__ynn_fusion)`; see `Fusion`)."""
        if kind is not None and kind not in FUSION_KINDS:
            raise FactsError(f"unknown fusion kind {kind!r}: one of {sorted(FUSION_KINDS)}")
        found = [
            f
            for f in fusions(self.module)
            if (kind is None or f.kind == kind) and (label is None or f.label == label)
        ]
        return self._matches(
            _query("fusions", kind=kind, label=label),
            ((f, *self._fusion_excerpt(f)) for f in found),
        )

    def collectives(self, op: str | None = None) -> Matches[CollectiveInfo]:
        """Cross-device instructions (of `op`, e.g. `all-gather`; its async `all-gather-start`
        counts as one too) in every computation."""
        if op is not None and op not in _COLLECTIVE_NAMES:
            raise FactsError(f"unknown collective {op!r}: one of {sorted(_COLLECTIVE_NAMES)}")
        found = [
            (c, i)
            for c, i in instructions(self.module)
            if i.opcode in COLLECTIVE_OPCODES
            and (op is None or i.opcode.removesuffix("-start") == op)
        ]
        return self._matches(
            _query("collectives", op=op),
            (
                (
                    CollectiveInfo(
                        i.name,
                        i.opcode,
                        c.name,
                        i.shape,
                        i.attribute("replica_groups"),
                        i.attribute("source_target_pairs"),
                    ),
                    _brief(c, i),
                    self._excerpt(c, i),
                )
                for c, i in found
            ),
        )

    def custom_calls(self, target: str | None = None) -> Matches[HloInstruction]:
        """`custom-call` instructions (whose `custom_call_target` is `target`, if given)."""
        return self._matches(
            _query("custom_calls", target=target),
            (
                (i, _brief(c, i), self._excerpt(c, i))
                for c, i in instructions(self.module)
                if i.opcode == "custom-call"
                and (target is None or _unquote(i.attribute("custom_call_target", "")) == target)
            ),
        )

    def _matches[T](self, query: str, found: Iterable[tuple[T, str, str]]) -> Matches[T]:
        return Matches(f"{self.stage_name} HLO {query}", found)

    def _excerpt(self, computation: HloComputation, instruction: HloInstruction) -> str:
        return f"  {_where(computation)}: {_instruction_line(instruction)}"

    def _fusion_excerpt(self, fusion: Fusion) -> tuple[str, str]:
        """(brief, excerpt): the fusion's line with what it fused, and for the excerpt the first
        lines of its fused computation."""
        holder = self.module[fusion.computation]
        instruction = holder[fusion.name]
        fused_ops = ", ".join(
            op if n == 1 else f"{op} x{n}" for op, n in sorted(fusion.absorbed.items())
        )
        brief = (
            f"{_where(holder)}: %{fusion.name} = {_bare(fusion.shape)} fusion"
            f" {fusion.label} [fuses {fused_ops}]"
        )
        lines = [f"{self._excerpt(holder, instruction)}  [fuses {fused_ops}]"]
        fused = self.module.computation(fusion.fused_computation)
        if fused is not None:
            body = [i for i in fused if i.opcode != "parameter"]
            lines += [f"      {_instruction_line(i)}" for i in body[:_BODY_LINES]]
            if len(body) > _BODY_LINES:
                lines.append(f"      ... {len(body) - _BODY_LINES} more in {fused.name}")
        return brief, "\n".join(lines)


def _where(computation: HloComputation) -> str:
    return f"ENTRY {computation.name}" if computation.is_entry else computation.name


def _bare(shape: str) -> str:
    """A shape without its layouts: `f32[8,16]{1,0}` -> `f32[8,16]`."""
    return _LAYOUT.sub("", shape)


def _brief(computation: HloComputation, instruction: HloInstruction) -> str:
    """`computation: %name = shape opcode(operands)`, without layouts, cut short."""
    operands = ", ".join(f"%{name}" for name in instruction.operands)
    line = f"%{instruction.name} = {_bare(instruction.shape)} {instruction.opcode}({operands})"
    if len(line) > _BRIEF_WIDTH:
        line = line[: _BRIEF_WIDTH - 4] + "...)"
    return f"{_where(computation)}: {line}"


def _query(name: str, **filters: str | None) -> str:
    given = ", ".join(f"{k}={v!r}" for k, v in filters.items() if v is not None)
    return f"{name}({given})"


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _instruction_line(instruction: HloInstruction) -> str:
    """The instruction as XLA prints it, without `metadata` and such, cut to one screen line."""
    inside = instruction.payload if instruction.payload is not None else ""
    if not inside:
        inside = ", ".join(f"%{name}" for name in instruction.operands)
    attributes = [
        f"{key}={value}"
        for key, value in split_attributes(instruction.attributes_text)
        if key not in _NOISY_ATTRIBUTES
    ]
    root = "ROOT " if instruction.is_root else ""
    line = f"{root}%{instruction.name} = {instruction.shape} {instruction.opcode}({inside})"
    line = ", ".join([line, *attributes])
    return line if len(line) <= _LINE_WIDTH else line[: _LINE_WIDTH - 3] + "..."


def hlo_facts(
    target: Any,
    /,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    donate_argnames: str | Sequence[str] = (),
    compiler_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> HloFacts:
    """Compile `target` as JAX would and return the facts of its optimized HLO.

    `target` is one of:
    - a function (plain, `jax.jit`, `flax.nnx.jit`, `equinox.filter_jit`) with its arguments:
      arrays or `jax.ShapeDtypeStruct` pytrees, static ones as plain values, keyword arguments
      too; the jit options apply to a plain function (see `xla_inspect.capture`);
    - a `jax.stages.Lowered` or `Traced` (no arguments): compiled here;
    - a `jax.stages.Compiled`: its optimized HLO, cost and memory analysis (no unoptimized
      stage: nothing public gives it back);
    - a `str` of HLO text: read as is (`stage_name` "text"; no cost, memory or other stage);
    - a path (`pathlib.Path`) to a `.hlo`/`.txt` or `.mlir` file (see `capture_ir`).
    """
    from xla_inspect.capture import capture, capture_ir

    options: dict[str, Any] = {
        "static_argnums": static_argnums,
        "static_argnames": static_argnames,
        "donate_argnums": donate_argnums,
        "donate_argnames": donate_argnames,
    }
    if isinstance(target, str):
        _no_arguments("HLO text", args, kwargs, options, compiler_options)
        return HloFacts(target, "text", {}, None, None)
    if isinstance(target, PathLike) or _is_compiled(target):
        _no_arguments("a compiled or file source", args, kwargs, options, None)
        ir = capture_ir(target, compiler_options=compiler_options)
        stages = {
            stage: text
            for stage, text in (("optimized", ir.optimized_hlo_text), ("unoptimized", ir.hlo_text))
            if text is not None
        }
        if "optimized" not in stages:  # a .hlo file: its text as is, nothing compiled
            return HloFacts(stages["unoptimized"], "text", {}, None, None)
        return HloFacts(
            stages["optimized"], "optimized", stages, ir.cost_analysis, ir.memory_analysis
        )
    captured = capture(target, *args, compiler_options=compiler_options, **options, **kwargs)
    stages = {"optimized": captured.optimized_hlo_text, "unoptimized": captured.hlo_text}
    return HloFacts(
        captured.optimized_hlo_text,
        "optimized",
        stages,
        captured.cost_analysis,
        captured.memory_analysis,
    )


def _no_arguments(
    what: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: dict[str, Any],
    compiler_options: Mapping[str, Any] | None,
) -> None:
    given = [k for k, v in options.items() if v not in ((), "", [])]
    if args or kwargs or given or compiler_options:
        raise FactsError(f"{what} takes no arguments, jit options or compiler options")


def _is_compiled(target: Any) -> bool:
    """A `jax.stages.Compiled`, or a wrapper keeping one in `.compiled` (equinox)."""
    import jax.stages

    inner = getattr(target, "compiled", None) if not isinstance(target, type) else None
    return isinstance(target, jax.stages.Compiled) or isinstance(inner, jax.stages.Compiled)
