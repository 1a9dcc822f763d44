"""Questions to a `Profile`: its steps, the HLO instructions each step ran, the compiles it holds,
and where the time went, joined to the optimized module of the same capture.

Every executed instruction event leads to its instruction in `Profile.hlo_text`: the computation
it sits in, its opcode, its fusion kind (`kLoop`, `kCustom`...), its `op_name` and its source
line (from the module's stack-frame tables). Time is attributed by *self* time: an instruction
event's duration minus that of the instruction events nested in it (a `while` or `conditional`
event holds the events of the body it ran), so the times of one step add up without counting
anything twice. Shares, never durations, are what stays comparable between runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from xla_inspect import op_metadata
from xla_inspect.model import HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.profile import Profile, TraceEvent

__all__ = [
    "COMPILE_EVENTS",
    "InstructionInfo",
    "OpRun",
    "Step",
    "compile_events",
    "instruction_info",
    "op_runs",
    "shares",
    "steps",
    "time_by",
]

#: Events that mark a backend compile, on every supported JAX: the whole compile (on the Python
#: thread), and one `FusionCompiler::Compile {module: <fusion>_kernel_module}` per kernel XLA:CPU
#: generated code for (on the codegen threads).
COMPILE_EVENTS = ("backend_compile_and_load", "FusionCompiler::Compile")


@dataclass(frozen=True, slots=True)
class InstructionInfo:
    """What the module says about one instruction: where it is and where it came from."""

    name: str
    computation: str
    opcode: str
    kind: str | None  # a fusion's kind= (kLoop, kCustom...), else None
    op_name: str  # metadata op_name, '' when absent
    source: str  # `file.py:LINE`, '' when absent
    scope: str  # the first named scope of op_name (`layer_1`, `layer_1 (backward)`), or ''

    @property
    def label(self) -> str:
        """The fusion kind, or the opcode of an instruction that is no fusion."""
        return self.kind or self.opcode


@dataclass(frozen=True, slots=True)
class OpRun:
    """One executed instruction: an event with an `hlo_op` arg, placed in its step and nesting."""

    instruction: str
    module: str
    start_ns: int
    duration_ns: int
    self_ns: int  # duration minus the instruction events nested directly in it
    depth: int  # 0 for an ENTRY instruction; 1 for one inside a while/conditional it ran...
    parent: str | None  # the enclosing instruction event, if any
    step: int | None  # the step_num of the step event it falls in, if any


@dataclass(frozen=True, slots=True)
class Step:
    """One step event (`StepTraceAnnotation`) and what ran inside it."""

    number: int
    start_ns: int
    duration_ns: int
    runs: tuple[OpRun, ...]
    compiles: tuple[TraceEvent, ...]


def instruction_info(hlo_text: str, module: HloModule | None = None) -> dict[str, InstructionInfo]:
    """name -> InstructionInfo for every instruction of every computation of the module."""
    module = module or parse_hlo(hlo_text)
    frames = op_metadata.frame_tables(hlo_text)
    found: dict[str, InstructionInfo] = {}
    for computation in module.computations:
        for ins in computation.instructions:
            op_name = op_metadata.op_name(ins)
            kind = ins.attribute("kind") if ins.opcode == "fusion" else None
            found[ins.name] = InstructionInfo(
                ins.name,
                computation.name,
                ins.opcode,
                kind,
                op_name,
                op_metadata.source(ins, frames),
                op_metadata.scope(op_name),
            )
    return found


def _step_events(profile: Profile) -> list[TraceEvent]:
    named = (e for e in profile.events if e.name == profile.step_name)
    return sorted((e for e in named if e.arg("step_num") is not None), key=lambda e: e.start_ns)


def _step_of(event: TraceEvent, step_events: list[TraceEvent]) -> int | None:
    for step in step_events:
        if step.start_ns <= event.start_ns and event.end_ns <= step.end_ns:
            number = step.arg("step_num")
            return int(number) if number is not None else None
    return None


def op_runs(profile: Profile, module: str | None = None) -> list[OpRun]:
    """Every instruction event of `module` (default: the profile's own), in start order."""
    wanted = module or profile.module
    step_events = _step_events(profile)
    runs: list[OpRun] = []
    by_thread: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in profile.events:
        if event.hlo_op is not None and event.arg("hlo_module") == wanted:
            by_thread[event.thread].append(event)
    for events in by_thread.values():
        events.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        open_: list[tuple[TraceEvent, list[int]]] = []  # (event, [nested time])
        done: list[tuple[TraceEvent, int, str | None, list[int]]] = []
        for event in events:
            while open_ and open_[-1][0].end_ns <= event.start_ns:
                open_.pop()
            parent = open_[-1][0] if open_ else None
            if open_:
                open_[-1][1].append(event.duration_ns)
            nested: list[int] = []
            done.append((event, len(open_), parent.hlo_op if parent else None, nested))
            open_.append((event, nested))
        for event, depth, parent_name, nested in done:
            runs.append(
                OpRun(
                    event.hlo_op or "",
                    wanted,
                    event.start_ns,
                    event.duration_ns,
                    max(0, event.duration_ns - sum(nested)),
                    depth,
                    parent_name,
                    _step_of(event, step_events),
                )
            )
    runs.sort(key=lambda r: (r.start_ns, r.depth))
    return runs


def compile_events(profile: Profile) -> list[TraceEvent]:
    """The events of COMPILE_EVENTS, in start order."""
    return sorted((e for e in profile.events if e.name in COMPILE_EVENTS), key=lambda e: e.start_ns)


def steps(profile: Profile) -> list[Step]:
    """The step events in order, each with the instruction runs and compile events inside it."""
    runs = op_runs(profile)
    compiles = compile_events(profile)
    found = []
    for event in _step_events(profile):
        number = int(event.arg("step_num") or 0)
        inside = tuple(r for r in runs if r.step == number)
        held = tuple(c for c in compiles if event.start_ns <= c.start_ns < event.end_ns)
        found.append(Step(number, event.start_ns, event.duration_ns, inside, held))
    return found


def time_by(
    profile: Profile,
    key: str | Callable[[InstructionInfo], str] = "instruction",
    info: Mapping[str, InstructionInfo] | None = None,
) -> dict[int, dict[str, int]]:
    """{step number: {group: self time in ns}}, grouping each run's instruction by `key`:
    "instruction", "kind" (fusion kind or opcode), "scope", "source", "op_name", or a function
    of its InstructionInfo. An event whose instruction the module lacks groups under '?'."""
    info = info if info is not None else instruction_info(profile.hlo_text)
    pick: Callable[[InstructionInfo], str]
    if callable(key):
        pick = key
    else:
        pick = {
            "instruction": lambda i: i.name,
            "kind": lambda i: i.label,
            "scope": lambda i: i.scope or "(no scope)",
            "source": lambda i: i.source or "(no source)",
            "op_name": lambda i: i.op_name or "(no op_name)",
        }[key]
    table: dict[int, dict[str, int]] = {}
    for step in steps(profile):
        groups: dict[str, int] = defaultdict(int)
        for run in step.runs:
            known = info.get(run.instruction)
            groups[pick(known) if known else "?"] += run.self_ns
        table[step.number] = dict(groups)
    return table


def shares(times: Mapping[int, Mapping[str, int]]) -> dict[str, float]:
    """Each group's share of the total over all the steps given (adds up to 1)."""
    total: dict[str, int] = defaultdict(int)
    for groups in times.values():
        for name, ns in groups.items():
            total[name] += ns
    whole = sum(total.values())
    return {name: ns / whole for name, ns in total.items()} if whole else {}
