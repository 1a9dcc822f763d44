"""Following one instruction across the passes of a dump, forwards (where did it go) or
backwards (where did it come from), as `BlameEvent`s; the matching rules are those of
`xla_inspect.blame`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xla_inspect._blame_states import Site, State, instruction_key, op_name
from xla_inspect.model import HloInstruction

__all__ = ["BlameEvent", "follow_backward", "follow_forward"]

_DEPTH = 4  # how many users deep `_match` looks for an instruction without op_name
_ANCHOR_STEPS = 64  # how many instructions `_anchors` visits


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


def _match(instruction: HloInstruction, home: State, among: State, depth: int = 0) -> str | None:
    """The instruction of `among`, absent from `home`, that `instruction` of `home` became.

    First by opcode, shape and op_name; for an instruction without op_name, by position: the
    operand its user (followed the same way, a few users deep) takes in its place in `among`.
    """
    key = instruction_key(instruction)
    if key[2] is not None:
        candidates = [n for n in among.by_key.get(key, []) if _new(n, home, among)]
        if not candidates:  # the call inliner prefixes op_name with the call's op_name
            candidates = [
                n
                for n in among.by_kind.get(key[:2], [])
                if _new(n, home, among) and _nested(key[2], op_name(among.sites[n].instruction))
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
                and instruction_key(site.instruction)[:2] == key[:2]
            ):
                return operand
    return None


def _anchors(name: str, state: State, other: State) -> set[str]:
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


def _new(name: str, home: State, among: State) -> bool:
    """Whether instruction `name` of `among` is not in `home` (by name, opcode and shape)."""
    return home.get(name, among.sites[name].instruction) is None


def _nested(one: str, other: str | None) -> bool:
    return other is not None and (one.endswith("/" + other) or other.endswith("/" + one))


def _event(state: State, kind: str, before: Any, after: Any, fusion: str | None = None):
    return BlameEvent(
        state.seq, state.pipeline, state.pass_name, kind, tuple(before), tuple(after), fusion
    )


def _moved(old: Site, new: Site) -> str | None:
    """The fusion that absorbed the instruction, when it moved into a fused computation."""
    if new.fusion is not None and new.computation != old.computation:
        return new.fusion
    return None


def follow_forward(states: list[State], name: str) -> tuple[list[BlameEvent], str | None]:
    """Events in pass order, and its name in the last file (None: removed by a pass)."""
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


def _origin(prev: State, nxt: State, site: Site) -> list[str]:
    instruction = site.instruction
    found: list[str] = []
    for user, position in nxt.users.get(instruction.name, []):
        if user in prev.sites and position < len(prev.sites[user].instruction.operands):
            replaced = prev.sites[user].instruction.operands[position]
            if replaced not in nxt.sites:
                found.append(replaced)
    named = op_name(instruction)
    if named is not None and instruction.opcode != "fusion":
        found += [
            name
            for name, old in prev.sites.items()
            if name not in nxt.sites
            and old.fusion is None
            and old.instruction.opcode != "parameter"
            and op_name(old.instruction) == named
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


def follow_backward(states: list[State], name: str) -> tuple[list[BlameEvent], str | None, bool]:
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
