"""Per-instruction pass blame, read from a per-pass dump directory.

`blame(dump_dir, name)` answers, for one instruction:
- of the optimized module (the last per-pass file): which pass created it and from what;
- of the unoptimized module (`before_optimizations.txt`, else the first per-pass file): which
  pass removed it or absorbed it, and into what.

How an instruction is followed from one dump file to the next (XLA renames instructions, adds
`.N` suffixes and clones them into fused computations, so a name alone is not enough):
1. The same name, opcode and shape (layouts aside) is the same instruction (its operands may
   change: that is reported as "rewired").
2. Otherwise, among the instructions that disappeared and the ones that appeared across that
   pass, the one with the same opcode, the same shape (layouts ignored) and the same metadata
   `op_name` is the same instruction under a new name ("renamed"), or "absorbed" into the
   fusion whose fused computation now holds it (an `op_name` the call inliner prefixed counts).
   When several fit (repeated layers), the one computed from the same surviving instructions
   wins (a fused computation's parameters stand for the fusion's operands). An instruction
   without `op_name` is followed by position: the operand slot it fills in its user.
3. Otherwise it was created (going back) or removed (going forward) by that pass. A removed
   instruction's replacement is what its users read in its place after the pass; a created
   instruction's origin is what its users read in its place before the pass, the instructions
   with its `op_name` that disappeared, and for a fusion, the instructions its fused computation
   was cloned from. When none of these exist XLA kept no trace, and the blame says so.

Not guaranteed: XLA decides what it prints; passes that rewrite an instruction without metadata
into a differently shaped one leave no trace this can follow.

This module answers and formats; reading the dump into per-pass states is `_blame_states`'
job, following an instruction across them `_blame_follow`'s.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xla_inspect._blame_follow import BlameEvent, follow_backward, follow_forward
from xla_inspect._blame_states import dump_states, op_name
from xla_inspect.errors import InspectError

__all__ = ["Blame", "BlameError", "BlameEvent", "blame", "format_blame"]


class BlameError(InspectError):
    """An instruction name found in neither the unoptimized nor the optimized module."""


@dataclass(frozen=True)
class Blame:
    """The history of one instruction across the per-pass files.

    `side` is "optimized" (NAME is in the last file; events run backwards to where it came
    from) or "unoptimized" (NAME is only in the first file; events run forwards to where it
    went), events in pass order either way. `start_name` is its name in the first file (None:
    a pass created it); `final_name` its name in the last file (None: a pass removed it) and
    `final_fusion` the fusion holding it there. `origin_recorded` is False when the pass that
    created it left no trace of what from; `context` then lists its operands and users.
    """

    name: str
    opcode: str
    shape: str
    op_name: str | None
    side: str
    events: tuple[BlameEvent, ...]
    start_name: str | None
    final_name: str | None
    final_fusion: str | None
    origin_recorded: bool = True
    context: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "opcode": self.opcode,
            "shape": self.shape,
            "op_name": self.op_name,
            "side": self.side,
            "start_name": self.start_name,
            "final_name": self.final_name,
            "final_fusion": self.final_fusion,
            "origin_recorded": self.origin_recorded,
            "context": list(self.context),
            "events": [event.to_dict() for event in self.events],
        }


def blame(dump_dir: str | Path, name: str, module: str | int | None = None) -> Blame:
    """The pass history of instruction `name` (see the module docstring).

    Raises DumpError for a directory without per-pass files, BlameError for a name in neither
    the first nor the last file (the message lists close names).
    """
    states = dump_states(dump_dir, module)
    wanted = name.removeprefix("%")
    first, last = states[0], states[-1]
    if wanted in last.sites:
        site = last.sites[wanted]
        events, start_name, recorded = follow_backward(states, wanted)
        context: tuple[str, ...] = ()
        if not recorded:
            users = (user for user, _ in last.users.get(wanted, []))
            context = (*site.instruction.operands, *users)
        return Blame(
            wanted,
            site.instruction.opcode,
            site.instruction.shape,
            op_name(site.instruction),
            "optimized",
            tuple(reversed(events)),
            start_name,
            wanted,
            site.fusion,
            recorded,
            context,
        )
    if wanted in first.sites:
        site = first.sites[wanted]
        events, final = follow_forward(states, wanted)
        return Blame(
            wanted,
            site.instruction.opcode,
            site.instruction.shape,
            op_name(site.instruction),
            "unoptimized",
            tuple(events),
            wanted,
            final,
            last.sites[final].fusion if final else None,
        )
    known = sorted(set(first.sites) | set(last.sites))
    close = difflib.get_close_matches(wanted, known, n=5, cutoff=0.6)
    hint = f"close names: {', '.join(close)}" if close else "no close names"
    raise BlameError(
        f"{wanted}: no such instruction in the unoptimized or the optimized module; {hint}"
    )


def _where(event: BlameEvent) -> str:
    return f"#{event.seq} {event.pipeline}/{event.pass_name}"


def format_blame(result: Blame) -> str:
    """A few readable lines."""
    op = f', op_name "{result.op_name}"' if result.op_name else ""
    lines = [f"{result.name}: {result.opcode} {result.shape}{op} ({result.side} module)"]
    for event in result.events:
        before, after = ", ".join(event.before), ", ".join(event.after)
        if event.kind == "created":
            origin = f"from {before}" if before else "its origin is not recorded"
            lines.append(f"  created by {_where(event)}: {origin}")
        elif event.kind == "removed":
            instead = f"; its users now read {after}" if after else ""
            lines.append(f"  removed by {_where(event)}{instead}")
        elif event.kind == "absorbed":
            lines.append(
                f"  absorbed by {_where(event)} into fusion {event.fusion} (as {after}, "
                f"was {before})"
            )
        elif event.kind == "renamed":
            lines.append(f"  renamed by {_where(event)}: {before} -> {after}")
        else:
            lines.append(f"  rewired by {_where(event)}: operands ({before}) -> ({after})")
    if result.side == "optimized" and result.start_name:
        lines.append(f"  present in the unoptimized module as {result.start_name}")
    if not result.origin_recorded and result.context:
        lines.append(f"  next to: {', '.join(result.context)}")
    if result.side == "unoptimized" and result.final_name:
        inside = f" inside fusion {result.final_fusion}" if result.final_fusion else ""
        lines.append(f"  in the optimized module as {result.final_name}{inside}")
    return "\n".join(lines) + "\n"
