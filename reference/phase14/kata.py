"""Phase 14 reference: where the time went."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax

from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent

_NO_EVENT = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_FRAME = re.compile(r"stack_frame_id=(\d+)")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_ROW = re.compile(r"^(\d+) (.*)$")
_FIELD = re.compile(r"(\w+)=(\d+)")
_WRAPPED = re.compile(r"^[\w-]+\((.*)\)$")


def _steps(events: list[TraceEvent], step_name: str) -> list[tuple[int, TraceEvent]]:
    found = [(e.arg("step_num"), e) for e in events if e.name == step_name]
    return sorted((int(n), e) for n, e in found if n is not None)


def _instruction_events(events: list[TraceEvent]) -> list[TraceEvent]:
    # both args: a runtime event may carry one of them alone
    return [e for e in events if e.hlo_op is not None and e.arg("hlo_module") is not None]


def _inside(event: TraceEvent, step: TraceEvent) -> bool:
    return step.start_ns <= event.start_ns and event.end_ns <= step.end_ns


def _top_level(events: list[TraceEvent]) -> list[TraceEvent]:
    """Instruction events not nested in another of their thread, in start order."""
    by_thread: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in events:
        by_thread[event.thread].append(event)
    top = []
    for group in by_thread.values():
        group.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        end = -1
        for event in group:
            if event.start_ns >= end:
                top.append(event)
                end = event.end_ns
    return sorted(top, key=lambda e: e.start_ns)


def step_instructions(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    # nested = inside an earlier, longer event of the same thread, whether or not that one
    # lies in the step (a while that outlasts its step still holds its body)
    top = _top_level(_instruction_events(events))
    return {
        n: [e.hlo_op or "" for e in top if _inside(e, step)]
        for n, step in _steps(events, step_name)
    }


def expected_counts(hlo_text: str) -> dict[str, int]:
    # views and plumbing do no work; a while's body runs known_trip_count times inside it
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = {}

    def visit(computation_name: str, times: int) -> None:
        for ins in module[computation_name].instructions:
            if ins.opcode in _NO_EVENT:
                continue
            counts[ins.name] = counts.get(ins.name, 0) + times
            if ins.opcode == "while":
                trips = _TRIPS.search(ins.attribute("backend_config", ""))
                body = ins.attribute("body", "").lstrip("%")
                if trips and body:
                    visit(body, times * int(trips.group(1)))

    visit(module.entry.name, 1)
    return counts


def compiled_steps(events: list[TraceEvent], step_name: str) -> list[int]:
    # backend_compile_and_load is XLA's compile on every JAX; tracing and lowering are not
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    return [
        n
        for n, step in _steps(events, step_name)
        if any(step.start_ns <= c.start_ns < step.end_ns for c in compiles)
    ]


def _self_times(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, int]:
    """instruction name -> self time summed over the steps, for the module's own events."""
    module = parse_hlo(hlo_text)
    names = {i.name for c in module.computations for i in c.instructions}
    steps = [s for _, s in _steps(events, step_name)]
    ops = [
        e
        for e in events
        if e.hlo_op in names
        and e.arg("hlo_module") == module.name
        and any(_inside(e, s) for s in steps)
    ]
    by_thread: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in ops:
        by_thread[event.thread].append(event)
    total: dict[str, int] = defaultdict(int)
    for group in by_thread.values():
        group.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack: list[TraceEvent] = []
        for event in group:
            while stack and stack[-1].end_ns <= event.start_ns:
                stack.pop()
            if stack:
                total[stack[-1].hlo_op or ""] -= event.duration_ns
            total[event.hlo_op or ""] += event.duration_ns
            stack.append(event)
    return dict(total)


def _shares(times: dict[str, int], group: Callable[[str], str]) -> dict[str, float]:
    grouped: dict[str, int] = defaultdict(int)
    for name, ns in times.items():
        grouped[group(name)] += ns
    whole = sum(grouped.values())
    return {k: v / whole for k, v in grouped.items()} if whole else {}


def kind_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    # self time, so a while does not count its body twice; fusions by kind, others by opcode
    by_name = {i.name: i for c in parse_hlo(hlo_text).computations for i in c.instructions}

    def label(name: str) -> str:
        ins = by_name[name]
        return ins.attribute("kind", "") if ins.opcode == "fusion" else ins.opcode

    return _shares(_self_times(events, hlo_text, step_name), label)


def _scope(op_name: str) -> str:
    parts = op_name.split(";", 1)[0].split("/")[1:-1]
    for part in parts:
        while match := _WRAPPED.match(part):
            part = match.group(1)
        if part:
            return part
    return ""


def scope_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    # jax.named_scope lands in op_name, wrapped by the transformations that ran over it
    by_name = {i.name: i for c in parse_hlo(hlo_text).computations for i in c.instructions}

    def scope(name: str) -> str:
        match = _OP_NAME.search(by_name[name].attributes_text)
        return _scope(match.group(1)) if match else ""

    return _shares(_self_times(events, hlo_text, step_name), scope)


def _frames(hlo_text: str) -> dict[int, str]:
    tables: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in hlo_text.split("\n%", 1)[0].splitlines():
        if line.strip() in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(line.strip(), {})
        elif current is not None and (row := _ROW.match(line)):
            current[int(row.group(1))] = row.group(2)
        else:
            current = None
    files = {k: v.strip('"').rsplit("/", 1)[-1] for k, v in tables.get("FileNames", {}).items()}
    places = {}
    for key, row in tables.get("FileLocations", {}).items():
        fields = dict(_FIELD.findall(row))
        places[key] = f"{files[int(fields['file_name_id'])]}:{fields['line']}"
    return {
        key: places[int(dict(_FIELD.findall(row))["file_location_id"])]
        for key, row in tables.get("StackFrames", {}).items()
    }


def line_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    # the instruction's own frame (not its callers): the line that made it
    by_name = {i.name: i for c in parse_hlo(hlo_text).computations for i in c.instructions}
    frames = _frames(hlo_text)

    def line(name: str) -> str:
        match = _FRAME.search(by_name[name].attributes_text)
        return frames.get(int(match.group(1)), "") if match else ""

    return _shares(_self_times(events, hlo_text, step_name), line)


def longest_gap(events: list[TraceEvent], step_name: str) -> int:
    # the device's work, not the step events (which hold the Python too)
    ops = _instruction_events(events)
    spans = {}
    for n, step in _steps(events, step_name):
        inside = [e for e in ops if _inside(e, step)]
        if inside:
            spans[n] = (min(e.start_ns for e in inside), max(e.end_ns for e in inside))
    gaps = {n: spans[n + 1][0] - spans[n][1] for n in spans if n + 1 in spans}
    return max(gaps, key=lambda n: gaps[n])


def train_loop(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    # compile before the first step; wait for each step's work inside its step event
    jitted = jax.jit(step)
    compiled = jitted.lower(state, batches[0]).compile()
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = compiled(state, batch)
            jax.block_until_ready((state, loss))
    return state
