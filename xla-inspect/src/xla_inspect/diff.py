"""What optimization did to a module: opcode counts before and after, and what fusions absorbed.

Typical use: `before` is unoptimized HLO (`lowered.as_text(dialect="hlo")`), `after` the optimized
module (`compiled.as_text()`). Instructions of *fused* computations (every computation reachable
from a `fusion`'s `calls=`, reducers included) are counted as *absorbed*: the op still runs, inside
a fusion. An opcode is *removed* when fewer of it remain anywhere (outside plus absorbed), and
*added* when more do. `ModuleDiff.fusions` are the `query.Fusion` records of `after` (the same
records `query.fusions` gives), grouped by their label (`kLoop`, `kCustom(__ynn_fusion)`) in
`fusions_by_kind`.

Not guaranteed: instructions are matched by opcode counts, not by identity (HLO has no stable
instruction ids across passes), so an op that disappeared in one place and appeared in another
shows as no change. `parameter` instructions are left out of the opcode counts (they are
plumbing: a fused computation has one per operand). Simplifications that happen while StableHLO
becomes HLO (`x*1`, double transposes) are already gone from the unoptimized HLO: diff StableHLO
facts for those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from xla_inspect.model import HloModule
from xla_inspect.query import Fusion, fused_computation_names, fusions

__all__ = [
    "ModuleDiff",
    "OpcodeChange",
    "diff_hlo",
    "format_diff",
    "fused_computation_names",
]

# Plumbing, not work: parameters are not counted in opcode changes.
_PLUMBING = frozenset({"parameter"})


@dataclass(frozen=True)
class OpcodeChange:
    """Counts of one opcode: outside fusions before and after, and inside fusions after."""

    opcode: str
    before: int
    after: int
    absorbed: int

    @property
    def delta(self) -> int:
        """Change in how many remain anywhere (outside plus absorbed) after optimization."""
        return self.after + self.absorbed - self.before


@dataclass(frozen=True)
class ModuleDiff:
    """Opcode-level difference between two versions of one module (see the module docstring)."""

    before_name: str
    after_name: str
    before_instructions: int
    after_instructions: int
    changes: tuple[OpcodeChange, ...]
    fusions: tuple[Fusion, ...]

    @property
    def removed(self) -> Mapping[str, int]:
        """Opcode -> how many fewer remain anywhere after optimization."""
        return MappingProxyType({c.opcode: -c.delta for c in self.changes if c.delta < 0})

    @property
    def added(self) -> Mapping[str, int]:
        """Opcode -> how many more exist anywhere after optimization (fusion, copy, bitcast...)."""
        return MappingProxyType({c.opcode: c.delta for c in self.changes if c.delta > 0})

    @property
    def fusions_by_kind(self) -> Mapping[str, int]:
        """Fusion label (`kLoop`, `kCustom(__ynn_fusion)`) -> how many fusions carry it."""
        return MappingProxyType(dict(Counter(f.label for f in self.fusions)))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (dicts, lists, strings, ints)."""
        return {
            "before": {"name": self.before_name, "instructions": self.before_instructions},
            "after": {"name": self.after_name, "instructions": self.after_instructions},
            "changes": [
                {"opcode": c.opcode, "before": c.before, "after": c.after, "absorbed": c.absorbed}
                for c in self.changes
            ],
            "removed": dict(self.removed),
            "added": dict(self.added),
            "fusions": [f.to_dict() for f in self.fusions],
            "fusions_by_kind": dict(self.fusions_by_kind),
        }


def _split_counts(module: HloModule) -> tuple[Counter[str], Counter[str]]:
    fused = fused_computation_names(module)
    outside: Counter[str] = Counter()
    inside: Counter[str] = Counter()
    for computation in module.computations:
        target = inside if computation.name in fused else outside
        target.update(i.opcode for i in computation.instructions if i.opcode not in _PLUMBING)
    return outside, inside


def _instruction_count(module: HloModule) -> int:
    return sum(len(computation.instructions) for computation in module.computations)


def diff_hlo(before: HloModule, after: HloModule) -> ModuleDiff:
    """Compare opcode counts of `before` and `after` (see the module docstring for the terms)."""
    before_outside, before_inside = _split_counts(before)
    after_outside, after_inside = _split_counts(after)
    # A fusion already present before: treat its contents as present outside, before.
    before_outside.update(before_inside)
    opcodes = sorted(set(before_outside) | set(after_outside) | set(after_inside))
    changes = tuple(
        OpcodeChange(op, before_outside[op], after_outside[op], after_inside[op]) for op in opcodes
    )
    return ModuleDiff(
        before_name=before.name,
        after_name=after.name,
        before_instructions=_instruction_count(before),
        after_instructions=_instruction_count(after),
        changes=changes,
        fusions=tuple(fusions(after)),
    )


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{op} x{n}" for op, n in sorted(counts.items())) or "nothing"


def format_diff(diff: ModuleDiff) -> str:
    """A readable plain-text report of `diff`."""
    lines = [
        f"{diff.before_name} -> {diff.after_name}: "
        f"{diff.before_instructions} -> {diff.after_instructions} instructions",
        "",
        f"{'opcode':<24}{'before':>8}{'after':>8}{'absorbed':>10}{'change':>8}",
    ]
    for c in diff.changes:
        if c.before or c.after or c.absorbed:
            lines.append(f"{c.opcode:<24}{c.before:>8}{c.after:>8}{c.absorbed:>10}{c.delta:>+8}")
    lines += ["", f"removed: {_counts(diff.removed)}", f"added:   {_counts(diff.added)}"]
    lines.append(f"fusions: {len(diff.fusions)} ({_counts(diff.fusions_by_kind)})")
    for fusion in diff.fusions:
        lines.append(f"  {fusion.name} [{fusion.label}] absorbs {_counts(fusion.absorbed)}")
    return "\n".join(lines) + "\n"
