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

This module compiles or reads the source and answers the queries; `Matches` and the excerpts
it shows live in `_facts_excerpts`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from os import PathLike
from typing import Any, Literal

from xla_inspect._facts_excerpts import Matches, brief, excerpt, fusion_excerpt, query, unquote
from xla_inspect.errors import InspectError
from xla_inspect.model import HloInstruction, HloModule
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


class FactsError(InspectError):
    """A fact asked of a source that does not hold it, or a query with an unknown name."""


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
            query("instructions", opcode=opcode),
            (
                (i, brief(c, i), excerpt(c, i))
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
            query("fusions", kind=kind, label=label),
            ((f, *fusion_excerpt(self.module, f)) for f in found),
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
            query("collectives", op=op),
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
                    brief(c, i),
                    excerpt(c, i),
                )
                for c, i in found
            ),
        )

    def custom_calls(self, target: str | None = None) -> Matches[HloInstruction]:
        """`custom-call` instructions (whose `custom_call_target` is `target`, if given)."""
        return self._matches(
            query("custom_calls", target=target),
            (
                (i, brief(c, i), excerpt(c, i))
                for c, i in instructions(self.module)
                if i.opcode == "custom-call"
                and (target is None or unquote(i.attribute("custom_call_target", "")) == target)
            ),
        )

    def _matches[T](self, query: str, found: Iterable[tuple[T, str, str]]) -> Matches[T]:
        return Matches(f"{self.stage_name} HLO {query}", found)


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
