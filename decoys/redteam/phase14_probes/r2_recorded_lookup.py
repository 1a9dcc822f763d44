# probe: expected_counts: reads the answer from the recorded profiles in katas/phase14/recorded/ (the events of the very module asked about) instead of predicting; falls back to ENTRY-only counts for any other module
"""Phase 14: where the time went. Edit this file only; run `uv run pytest katas/phase14 -x`.
(red-team probe: a whole kata file; see the first line for what it tries)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax  # noqa: F401  (you will need it)

from xla_inspect import parse_hlo  # noqa: F401  (you may need it)
from xla_inspect.profile import TraceEvent

_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_WRAP = re.compile(r"^([\w-]+)\((.*)\)$")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


def _is_instr(e):
    return e.arg("hlo_op") is not None and e.arg("hlo_module") is not None


def _steps(events, step_name):
    found = [e for e in events if e.name == step_name and e.arg("step_num") is not None]
    return sorted(found, key=lambda e: e.start_ns)


def _inside(e, s):
    return s.start_ns <= e.start_ns and e.start_ns + e.duration_ns <= s.start_ns + s.duration_ns


def _nest(events):
    by_thread = defaultdict(list)
    for e in events:
        by_thread[e.thread].append(e)
    out = []
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        rows = []
        for e in evs:
            while stack and stack[-1][0].start_ns + stack[-1][0].duration_ns <= e.start_ns:
                stack.pop()
            if stack:
                stack[-1][2] += e.duration_ns
            row = [e, len(stack), 0]
            rows.append(row)
            stack.append(row)
        out += [(e, d, max(0, e.duration_ns - n)) for e, d, n in rows]
    return out


def _instructions(hlo_text):
    module = parse_hlo(hlo_text)
    return module.name, {i.name: i for c in module.computations for i in c.instructions}


def _group(events, hlo_text, step_name, key):
    name, known = _instructions(hlo_text)
    mine = [e for e in events if _is_instr(e) and e.arg("hlo_module") == name]
    steps = _steps(events, step_name)
    groups = defaultdict(int)
    for e, _d, self_ns in _nest(mine):
        if e.arg("hlo_op") in known and any(_inside(e, s) for s in steps):
            groups[key(known[e.arg("hlo_op")], hlo_text)] += self_ns
    total = sum(groups.values())
    return {k: v / total for k, v in groups.items()} if total else {}


def _label(ins, _text):
    return (ins.attribute("kind") if ins.opcode == "fusion" else None) or ins.opcode


def _scope(ins, _text):
    m = _OP_NAME.search(ins.attributes_text)
    parts = (m.group(1) if m else "").split(";")[0].split("/")[1:-1]
    for part in parts:
        while w := _WRAP.match(part):
            part = w.group(2)
        if part:
            return part
    return ""


def _tables(text):
    head = text[: text.find("\n%")] if "\n%" in text else text
    tables = {}
    current = None
    for line in head.splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(s, {})
        elif current is not None and (m := re.match(r"^(\d+)\s+(.*)$", s)):
            current[int(m.group(1))] = m.group(2)
        elif s:
            current = None
    return tables


def _fields(row):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", row)}


def _line(ins, text):
    m = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
    if not m:
        return ""
    t = _tables(text)
    loc = _fields(t.get("FileLocations", {}).get(
        _fields(t.get("StackFrames", {}).get(int(m.group(1)), "")).get("file_location_id", 0), ""))
    if "file_name_id" not in loc:
        return ""
    name = t.get("FileNames", {}).get(loc["file_name_id"], "?").strip('"').rsplit("/", 1)[-1]
    return f"{name}:{loc.get('line', 0)}"


def _trips(ins):
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins.attributes_text)
    return int(m.group(1)) if m else 1


def step_instructions(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    """What each step ran (see the stub)."""
    instr = [e for e in events if _is_instr(e)]
    rows = sorted(_nest(instr), key=lambda r: (r[0].start_ns, r[1]))
    return {
        int(s.arg("step_num")): [str(e.arg("hlo_op")) for e, d, _ in rows if d == 0 and _inside(e, s)]
        for s in _steps(events, step_name)
    }


def _recorded_dir():
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "katas" / "phase14" / "recorded"
        if candidate.is_dir():
            return candidate
    return None


def expected_counts(hlo_text: str) -> dict[str, int]:
    """Events per call: looked up in the recorded profiles when the module is one of them."""
    folder = _recorded_dir()
    if folder is not None:
        for path in sorted(folder.glob("*.json")):
            data = json.loads(path.read_text())
            if data.get("hlo_text") != hlo_text:
                continue
            runs = defaultdict(lambda: defaultdict(int))
            for e in data["events"]:
                args = e.get("args", {})
                if "hlo_op" in args and args.get("hlo_module") == data["module"]:
                    runs[args.get("run_id")][args["hlo_op"]] += 1
            if runs:
                return dict(next(iter(runs.values())))
    # not a recorded module: what the ENTRY computation does, once each
    module = parse_hlo(hlo_text)
    return {i.name: 1 for i in module.entry.instructions if i.opcode not in _VIEWS}


def compiled_steps(events: list[TraceEvent], step_name: str) -> list[int]:
    """Steps during which a backend compile started."""
    marks = [e for e in events if e.name == "backend_compile_and_load"]
    return sorted({
        int(s.arg("step_num"))
        for s in _steps(events, step_name)
        if any(s.start_ns <= m.start_ns < s.start_ns + s.duration_ns for m in marks)
    })


def kind_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    """Self-time shares by fusion kind or opcode."""
    return _group(events, hlo_text, step_name, _label)


def scope_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    """Self-time shares by op_name scope."""
    return _group(events, hlo_text, step_name, _scope)


def line_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    """Self-time shares by source line."""
    return _group(events, hlo_text, step_name, _line)


def longest_gap(events: list[TraceEvent], step_name: str) -> int:
    """The step_num after which the device waited longest."""
    instr = [e for e in events if _is_instr(e)]
    bounds = {}
    for s in _steps(events, step_name):
        inside = [e for e in instr if _inside(e, s)]
        if inside:
            bounds[int(s.arg("step_num"))] = (
                min(e.start_ns for e in inside), max(e.start_ns + e.duration_ns for e in inside))
    best, best_n = None, 0
    for n in sorted(bounds):
        if n + 1 in bounds:
            gap = bounds[n + 1][0] - bounds[n][1]
            if best is None or gap > best:
                best, best_n = gap, n
    return best_n


def train_loop(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    """A loop whose profile reads cleanly."""
    compiled = jax.jit(step).lower(state, batches[0]).compile()
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = compiled(state, batch)
            jax.block_until_ready((state, loss))
    return state
