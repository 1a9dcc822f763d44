"""A one-screen summary of an HLO module: the library side of `xla-inspect summary`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from xla_inspect.model import HloModule
from xla_inspect.query import (
    COLLECTIVE_OPCODES,
    custom_call_targets,
    fusion_labels,
    opcode_counts,
)

__all__ = ["ModuleSummary", "format_summary", "summarize"]

_TOP = 8


@dataclass(frozen=True)
class ModuleSummary:
    """Counts that describe a module. `opcode_counts` covers every instruction of every
    computation, by the opcode as XLA prints it (`parameter` and fused contents included).
    `fusions_by_kind` counts every fusion (nested ones too) by its `query.Fusion.label`: `kLoop`,
    or `kCustom(__ynn_fusion)` for a custom fusion."""

    name: str
    entry: str
    computations: int
    instructions: int
    opcode_counts: Mapping[str, int]
    fusions_by_kind: Mapping[str, int]
    dots: int
    collectives: Mapping[str, int]
    custom_calls: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data."""
        return {
            "module": self.name,
            "entry": self.entry,
            "computations": self.computations,
            "instructions": self.instructions,
            "opcode_counts": dict(self.opcode_counts),
            "fusions_by_kind": dict(self.fusions_by_kind),
            "dots": self.dots,
            "collectives": dict(self.collectives),
            "custom_calls": dict(self.custom_calls),
        }


def _frozen(counts: Counter[str]) -> Mapping[str, int]:
    """Most common first, ties by name: the same order on every run."""
    return MappingProxyType(dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))


def summarize(module: HloModule) -> ModuleSummary:
    """Count what `module` holds (see `ModuleSummary`)."""
    counts = opcode_counts(module)
    return ModuleSummary(
        name=module.name,
        entry=module.entry.name,
        computations=len(module.computations),
        instructions=counts.total(),
        opcode_counts=_frozen(counts),
        fusions_by_kind=_frozen(fusion_labels(module) if "fusion" in counts else Counter()),
        dots=counts["dot"],
        collectives=_frozen(Counter({op: counts[op] for op in COLLECTIVE_OPCODES & counts.keys()})),
        custom_calls=_frozen(custom_call_targets(module) if "custom-call" in counts else Counter()),
    )


def _counts(counts: Mapping[str, int], limit: int | None = None) -> str:
    items = list(counts.items())
    shown = ", ".join(f"{name} {n}" for name, n in items[:limit])
    if limit is not None and len(items) > limit:
        shown += f", ... ({len(items) - limit} more)"
    return shown or "none"


def format_summary(summary: ModuleSummary, title: str | None = None) -> str:
    """Plain-text report, one fact per line (no colours)."""
    rows = [
        ("module", summary.name),
        ("computations", f"{summary.computations} (entry {summary.entry})"),
        ("instructions", str(summary.instructions)),
        ("top opcodes", _counts(summary.opcode_counts, _TOP)),
        ("fusions", f"{sum(summary.fusions_by_kind.values())}: {_counts(summary.fusions_by_kind)}"),
        ("dots", str(summary.dots)),
        ("collectives", _counts(summary.collectives)),
        ("custom calls", _counts(summary.custom_calls)),
    ]
    lines = [title] if title else []
    lines += [f"  {key:<13} {value}" for key, value in rows]
    return "\n".join(lines) + "\n"
