"""A per-pass dump directory read for `blame`: one `State` per file that changed, with each
instruction's site (computation, calling fusion), its users, and indexes by opcode, shape
(layouts aside) and metadata `op_name`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xla_inspect.errors import HloParseError
from xla_inspect.model import HloInstruction, HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.passes import DumpError, pass_files

__all__ = ["Site", "State", "dump_states", "instruction_key", "op_name"]

_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_LAYOUT = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Site:
    """An instruction and where it stands."""

    instruction: HloInstruction
    computation: str
    fusion: str | None  # the fusion instruction calling `computation`, if any


@dataclass(frozen=True)
class State:
    """One dump file: the module after pass `pass_name` (#`seq`), indexed."""

    seq: int
    pipeline: str
    pass_name: str
    sites: dict[str, Site]
    users: dict[str, list[tuple[str, int]]]
    by_key: dict[tuple[str, str, str | None], list[str]]
    by_kind: dict[tuple[str, str], list[str]]

    def get(self, name: str, like: HloInstruction) -> Site | None:
        """The instruction `name` when it has the opcode and shape (layouts aside) of `like`."""
        site = self.sites.get(name)
        if site is None or instruction_key(site.instruction)[:2] != instruction_key(like)[:2]:
            return None
        return site


def op_name(instruction: HloInstruction) -> str | None:
    """The `op_name` of the instruction's metadata, None when there is none."""
    match = _OP_NAME.search(instruction.attribute("metadata", ""))
    return match.group(1) if match else None


def instruction_key(instruction: HloInstruction) -> tuple[str, str, str | None]:
    """(opcode, shape without layouts, op_name): what an instruction is, whatever its name."""
    return instruction.opcode, _LAYOUT.sub("", instruction.shape), op_name(instruction)


def _state(path: Path, seq: int, pipeline: str, pass_name: str) -> State:
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
    sites: dict[str, Site] = {}
    users: dict[str, list[tuple[str, int]]] = {}
    for computation in module:
        for instruction in computation:
            site = Site(instruction, computation.name, callers.get(computation.name))
            sites.setdefault(instruction.name, site)
            for position, operand in enumerate(instruction.operands):
                users.setdefault(operand, []).append((instruction.name, position))
    by_key: dict[tuple[str, str, str | None], list[str]] = {}
    by_kind: dict[tuple[str, str], list[str]] = {}
    for name, site in sites.items():
        key = instruction_key(site.instruction)
        by_key.setdefault(key, []).append(name)
        by_kind.setdefault(key[:2], []).append(name)
    return State(seq, pipeline, pass_name, sites, users, by_key, by_kind)


def dump_states(dump_dir: str | Path, module: str | int | None) -> list[State]:
    """The states of `module` in `dump_dir`, `before_optimizations` first when it is there."""
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
