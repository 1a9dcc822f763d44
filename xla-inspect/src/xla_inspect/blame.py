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
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.model import HloInstruction, HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.passes import DumpError, pass_files

__all__ = ["Blame", "BlameError", "BlameEvent", "blame", "format_blame"]

_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_LAYOUT = re.compile(r"\{[^{}]*\}")
_DEPTH = 4  # how many users deep `_match` looks for an instruction without op_name
_ANCHOR_STEPS = 64  # how many instructions `_anchors` visits


class BlameError(InspectError):
    """An instruction name found in neither the unoptimized nor the optimized module."""


@dataclass(frozen=True)
class BlameEvent:
    """What one pass did to the followed instruction.

    `kind` is one of: "created", "removed", "renamed", "absorbed" (into `fusion`), "rewired"
    (same name, new operands). `before`/`after` are instruction names in the files around the
    pass (for "created": its origin; for "removed": its replacement).
    """

    seq: int
    pipeline: str
    pass_name: str
    kind: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    fusion: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "pipeline": self.pipeline,
            "pass": self.pass_name,
            "kind": self.kind,
            "before": list(self.before),
            "after": list(self.after),
            "fusion": self.fusion,
        }


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


@dataclass(frozen=True)
class _Site:
    instruction: HloInstruction
    computation: str
    fusion: str | None  # the fusion instruction calling `computation`, if any


@dataclass(frozen=True)
class _State:
    seq: int
    pipeline: str
    pass_name: str
    sites: dict[str, _Site]
    users: dict[str, list[tuple[str, int]]]
    by_key: dict[tuple[str, str, str | None], list[str]]
    by_kind: dict[tuple[str, str], list[str]]

    def get(self, name: str, like: HloInstruction) -> _Site | None:
        """The instruction `name` when it has the opcode and shape (layouts aside) of `like`."""
        site = self.sites.get(name)
        if site is None or _key(site.instruction)[:2] != _key(like)[:2]:
            return None
        return site


def _op_name(instruction: HloInstruction) -> str | None:
    match = _OP_NAME.search(instruction.attribute("metadata", ""))
    return match.group(1) if match else None


def _key(instruction: HloInstruction) -> tuple[str, str, str | None]:
    return instruction.opcode, _LAYOUT.sub("", instruction.shape), _op_name(instruction)


def _state(path: Path, seq: int, pipeline: str, pass_name: str) -> _State:
    try:
        module: HloModule = parse_hlo(path.read_text())
    except HloParseError as exc:
        raise DumpError(f"{path.name}: not readable HLO ({exc}); is the dump complete?") from exc
    callers = {
        called: instruction.name
        for computation in module
        for instruction in computation
        if instruction.opcode == "fusion"
        for called in instruction.called_computations
    }
    sites: dict[str, _Site] = {}
    users: dict[str, list[tuple[str, int]]] = {}
    for computation in module:
        for instruction in computation:
            site = _Site(instruction, computation.name, callers.get(computation.name))
            sites.setdefault(instruction.name, site)
            for position, operand in enumerate(instruction.operands):
                users.setdefault(operand, []).append((instruction.name, position))
    by_key: dict[tuple[str, str, str | None], list[str]] = {}
    by_kind: dict[tuple[str, str], list[str]] = {}
    for name, site in sites.items():
        key = _key(site.instruction)
        by_key.setdefault(key, []).append(name)
        by_kind.setdefault(key[:2], []).append(name)
    return _State(seq, pipeline, pass_name, sites, users, by_key, by_kind)


def _states(dump_dir: str | Path, module: str | int | None) -> list[_State]:
    files = pass_files(dump_dir, module)
    start = files[0].path.with_name(f"{files[0].module_key}.before_optimizations.txt")
    states = [_state(start, -1, "", "before_optimizations")] if start.is_file() else []
    previous = start.read_text() if start.is_file() else None
    for file in files:
        text = file.path.read_text()
        if text != previous:
            states.append(_state(file.path, file.seq, file.pipeline, file.pass_name))
        previous = text
    return states


def _match(instruction: HloInstruction, home: _State, among: _State, depth: int = 0) -> str | None:
    """The instruction of `among`, absent from `home`, that `instruction` of `home` became.

    First by opcode, shape and op_name; for an instruction without op_name, by position: the
    operand its user (followed the same way, a few users deep) takes in its place in `among`.
    """
    key = _key(instruction)
    if key[2] is not None:
        candidates = [n for n in among.by_key.get(key, []) if _new(n, home, among)]
        if not candidates:  # the call inliner prefixes op_name with the call's op_name
            candidates = [
                n
                for n in among.by_kind.get(key[:2], [])
                if _new(n, home, among) and _nested(key[2], _op_name(among.sites[n].instruction))
            ]
        if len(candidates) > 1:  # repeated layers: the one computed from the same inputs
            inputs = _anchors(instruction.name, home, among)
            stem = instruction.name.rpartition(".")[0] or instruction.name
            metadata = instruction.attribute("metadata")
            candidates.sort(
                key=lambda name: (
                    -len(inputs & _anchors(name, among, home)),
                    (name.rpartition(".")[0] or name) != stem,
                    among.sites[name].instruction.attribute("metadata") != metadata,
                )
            )
        if candidates:
            return candidates[0]
    if key[2] is not None or depth == _DEPTH:
        return None
    for user, position in home.users.get(instruction.name, []):
        user_instruction = home.sites[user].instruction
        twin = user if among.get(user, user_instruction) else None
        twin = twin or _match(user_instruction, home, among, depth + 1)
        operands = among.sites[twin].instruction.operands if twin else ()
        if position < len(operands):
            operand = operands[position]
            site = among.sites.get(operand)
            if (
                site is not None
                and home.get(operand, site.instruction) is None
                and _key(site.instruction)[:2] == key[:2]
            ):
                return operand
    return None


def _anchors(name: str, state: _State, other: _State) -> set[str]:
    """The instructions, kept by name across the pass, that `name` of `state` is computed from:
    its operands followed upwards (a fused computation's parameter stands for the fusion's
    operand) until one is also in `other`, at most _ANCHOR_STEPS instructions visited."""
    found: set[str] = set()
    seen: set[str] = set()
    todo = list(state.sites[name].instruction.operands)
    while todo and len(seen) < _ANCHOR_STEPS:
        current = todo.pop()
        site = state.sites.get(current)
        if current in seen or site is None:
            continue
        seen.add(current)
        if other.get(current, site.instruction) is not None:
            found.add(current)
        elif site.instruction.opcode == "parameter" and site.fusion is not None:
            operands = state.sites[site.fusion].instruction.operands
            number = int(site.instruction.payload or "-1")
            todo.extend(operands[number : number + 1])
        else:
            todo.extend(site.instruction.operands)
    return found


def _new(name: str, home: _State, among: _State) -> bool:
    """Whether instruction `name` of `among` is not in `home` (by name, opcode and shape)."""
    return home.get(name, among.sites[name].instruction) is None


def _nested(one: str, other: str | None) -> bool:
    return other is not None and (one.endswith("/" + other) or other.endswith("/" + one))


def _event(state: _State, kind: str, before: Any, after: Any, fusion: str | None = None):
    return BlameEvent(
        state.seq, state.pipeline, state.pass_name, kind, tuple(before), tuple(after), fusion
    )


def _moved(old: _Site, new: _Site) -> str | None:
    """The fusion that absorbed the instruction, when it moved into a fused computation."""
    if new.fusion is not None and new.computation != old.computation:
        return new.fusion
    return None


def _forward(states: list[_State], name: str) -> tuple[list[BlameEvent], str | None]:
    events: list[BlameEvent] = []
    current = name
    for prev, nxt in zip(states, states[1:], strict=False):
        old = prev.sites[current]
        new = nxt.get(current, old.instruction)
        if new is None:
            successor = _match(old.instruction, prev, nxt)
            if successor is None:
                replacement = [
                    nxt.sites[user].instruction.operands[position]
                    for user, position in prev.users.get(current, [])
                    if user in nxt.sites and position < len(nxt.sites[user].instruction.operands)
                ]
                events.append(_event(nxt, "removed", [current], dict.fromkeys(replacement)))
                return events, None
            new = nxt.sites[successor]
        fusion = _moved(old, new)
        if fusion is not None:
            events.append(_event(nxt, "absorbed", [current], [new.instruction.name], fusion))
        elif new.instruction.name != current:
            events.append(_event(nxt, "renamed", [current], [new.instruction.name]))
        elif new.instruction.operands != old.instruction.operands:
            events.append(
                _event(nxt, "rewired", old.instruction.operands, new.instruction.operands)
            )
        current = new.instruction.name
    return events, current


def _origin(prev: _State, nxt: _State, site: _Site) -> list[str]:
    instruction = site.instruction
    found: list[str] = []
    for user, position in nxt.users.get(instruction.name, []):
        if user in prev.sites and position < len(prev.sites[user].instruction.operands):
            replaced = prev.sites[user].instruction.operands[position]
            if replaced not in nxt.sites:
                found.append(replaced)
    op_name = _op_name(instruction)
    if op_name is not None and instruction.opcode != "fusion":
        found += [
            name
            for name, old in prev.sites.items()
            if name not in nxt.sites
            and old.fusion is None
            and old.instruction.opcode != "parameter"
            and _op_name(old.instruction) == op_name
        ]
    for called in instruction.called_computations if instruction.opcode == "fusion" else ():
        for inner in (s for s in nxt.sites.values() if s.computation == called):
            if inner.instruction.opcode == "parameter":
                continue
            if prev.get(inner.instruction.name, inner.instruction) is not None:
                source: str | None = inner.instruction.name
            else:
                source = _match(inner.instruction, nxt, prev)
            if source is not None:
                found.append(prev.sites[source].fusion or source)
    return list(dict.fromkeys(found))


def _backward(states: list[_State], name: str) -> tuple[list[BlameEvent], str | None, bool]:
    """Events newest first, its name in the first file (None: created by a pass), and whether
    its origin is known."""
    events: list[BlameEvent] = []
    current = name
    for prev, nxt in zip(reversed(states[:-1]), reversed(states[1:]), strict=True):
        new = nxt.sites[current]
        old = prev.get(current, new.instruction)
        if old is None:
            predecessor = _match(new.instruction, nxt, prev)
            if predecessor is None:
                origin = _origin(prev, nxt, new)
                events.append(_event(nxt, "created", origin, [current]))
                return events, None, bool(origin)
            old = prev.sites[predecessor]
        fusion = _moved(old, new)
        if fusion is not None:
            events.append(_event(nxt, "absorbed", [old.instruction.name], [current], fusion))
        elif old.instruction.name != current:
            events.append(_event(nxt, "renamed", [old.instruction.name], [current]))
        elif new.instruction.operands != old.instruction.operands:
            events.append(
                _event(nxt, "rewired", old.instruction.operands, new.instruction.operands)
            )
        current = old.instruction.name
    return events, current, True


def blame(dump_dir: str | Path, name: str, module: str | int | None = None) -> Blame:
    """The pass history of instruction `name` (see the module docstring).

    Raises DumpError for a directory without per-pass files, BlameError for a name in neither
    the first nor the last file (the message lists close names).
    """
    states = _states(dump_dir, module)
    wanted = name.removeprefix("%")
    first, last = states[0], states[-1]
    if wanted in last.sites:
        site = last.sites[wanted]
        events, start_name, recorded = _backward(states, wanted)
        context: tuple[str, ...] = ()
        if not recorded:
            users = (user for user, _ in last.users.get(wanted, []))
            context = (*site.instruction.operands, *users)
        return Blame(
            wanted,
            site.instruction.opcode,
            site.instruction.shape,
            _op_name(site.instruction),
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
        events, final = _forward(states, wanted)
        return Blame(
            wanted,
            site.instruction.opcode,
            site.instruction.shape,
            _op_name(site.instruction),
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
