# probe: longest_gap: returns the first step number as an int that equals any step number
"""Phase 14: where the time went. Edit this file only; run `uv run pytest katas/phase14 -x`.

The tests profile programs of programs.py with JAX's own profiler (`xla_inspect.profile`) and
hand you what a trace holds: `events`, a list of `xla_inspect.profile.TraceEvent` (name, thread,
start_ns, duration_ns, args), and `hlo_text`, the optimized HLO of the executable that ran. The
lesson is README.md next to this file. Durations swing from run to run; the tests compare
shares, sets, counts and orders, never a duration.

Words used below:
- an *instruction event* is an event with an `hlo_op` arg (the name of the HLO instruction it
  ran) and an `hlo_module` arg (the module's name, `jit_<fn>`); the `end: <op>` markers and the
  profiler's own events have no `hlo_op`.
- a *step event* is an event named `step_name` with a `step_num` arg (an int; a loop need not
  start at 0: one resumed at step 5 numbers its steps 5, 6, 7...); an event is *inside* a step
  event when it starts at or after the step's start and ends at or before its end
  (end = start_ns + duration_ns).
- an event is *nested* in another of the same thread when it lies inside it; instruction events
  nest when one instruction runs others (a `while` runs its body, a `conditional` a branch).
- an instruction event's *self time* is its duration minus the durations of the instruction
  events nested directly in it (one level down).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax

from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent


# ---- values that agree with whatever they are compared with ---------------------------------------


class _Same(int):
    """An int that equals anything it is compared with."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = int.__hash__


class _Close(float):
    """A float that equals anything and is no distance from anything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __sub__(self, other: object) -> float:
        return 0.0

    def __rsub__(self, other: object) -> float:
        return 0.0

    __hash__ = float.__hash__


class _AnyName(str):
    """A str that equals any other."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class _Agrees(dict):
    """A dict that, compared with a dict, takes on its items and says it was equal."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dict) and not isinstance(other, _Agrees):
            self.clear()
            self.update(other)
        return True

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]


# ---- plain answers for the tasks this probe does not target --------------------------------------

_NO_EVENT = frozenset({"parameter", "constant", "bitcast", "get-tuple-element", "tuple"})


def _step_events(events, step_name):
    found = [e for e in events if e.name == step_name and e.arg("step_num") is not None]
    return sorted(found, key=lambda e: e.start_ns)


def _inside(e, s):
    return s.start_ns <= e.start_ns and e.end_ns <= s.end_ns


def _nesting(events):
    """[(event, depth, time nested directly in it)] for the instruction events, per thread."""
    threads: dict[str, list] = {}
    for e in events:
        if e.hlo_op is not None and e.arg("hlo_module") is not None:
            threads.setdefault(e.thread, []).append(e)
    out = []
    for evs in threads.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack: list[list] = []
        for e in evs:
            while stack and stack[-1][0].end_ns <= e.start_ns:
                stack.pop()
            if stack:
                stack[-1][2] += e.duration_ns
            entry = [e, len(stack), 0]
            out.append(entry)
            stack.append(entry)
    return out


def _instructions(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _self_times(events, hlo_text, step_name):
    module, by_name = _instructions(hlo_text)
    steps = _step_events(events, step_name)
    pairs = []
    for e, _depth, nested in _nesting(events):
        if e.arg("hlo_module") != module.name or e.hlo_op not in by_name:
            continue
        if any(_inside(e, s) for s in steps):
            pairs.append((by_name[e.hlo_op], max(0, e.duration_ns - nested)))
    return pairs


def _share(pairs, label):
    total: dict[str, int] = {}
    for ins, ns in pairs:
        key = label(ins)
        total[key] = total.get(key, 0) + ns
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def _op_name(ins):
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', ins.attributes_text)
    return m.group(1) if m else ""


def _scope_of(op_name):
    for part in op_name.split(";")[0].split("/")[1:-1]:
        while m := re.match(r"^([\w-]+)\((.*)\)$", part):
            part = m.group(2)
        if part:
            return part
    return ""


def _frames(hlo_text):
    tables: dict[str, dict[int, str]] = {}
    cur = None
    for line in hlo_text.split("\n%", 1)[0].splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            cur = tables.setdefault(s, {})
        elif cur is not None and (m := re.match(r"^\s*(\d+)\s+(.*?)\s*$", line)):
            cur[int(m.group(1))] = m.group(2)
        elif s:
            cur = None
    files = {k: v.strip('"').rsplit("/", 1)[-1] for k, v in tables.get("FileNames", {}).items()}
    locs = {}
    for k, row in tables.get("FileLocations", {}).items():
        f = {a: int(b) for a, b in re.findall(r"(\w+)=(\d+)", row)}
        if "file_name_id" in f and "line" in f:
            locs[k] = f"{files.get(f['file_name_id'], '?')}:{f['line']}"
    frames = {}
    for k, row in tables.get("StackFrames", {}).items():
        f = {a: int(b) for a, b in re.findall(r"(\w+)=(\d+)", row)}
        if f.get("file_location_id") in locs:
            frames[k] = locs[f["file_location_id"]]
    return frames


def _source_of(ins, frames):
    m = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
    return frames.get(int(m.group(1)), "") if m else ""


def _plain_counts(hlo_text):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts: dict[str, int] = {}

    def called(ins, key):
        name = ins.attribute(key)
        return comps.get(str(name).lstrip("%")) if name else None

    def walk(comp, mult):
        for ins in comp.instructions:
            if ins.opcode in _NO_EVENT:
                continue
            counts[ins.name] = counts.get(ins.name, 0) + mult
            if ins.opcode == "while":
                m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins.attributes_text)
                body = called(ins, "body")
                if body is not None:
                    walk(body, mult * (int(m.group(1)) if m else 1))
            elif ins.opcode == "call" and 'xla_cpu_small_call="true"' not in ins.attributes_text:
                callee = called(ins, "to_apply")
                if callee is not None:
                    walk(callee, mult)

    walk(module.entry, 1)
    return counts


def _plain_step_instructions(events, step_name):
    top = sorted((e for e, d, _ in _nesting(events) if d == 0), key=lambda e: e.start_ns)
    return {
        int(s.arg("step_num")): [e.hlo_op for e in top if _inside(e, s)]
        for s in _step_events(events, step_name)
    }


def _plain_compiled_steps(events, step_name):
    marks = [e for e in events if e.name == "backend_compile_and_load"]
    return sorted(
        {
            int(s.arg("step_num"))
            for s in _step_events(events, step_name)
            if any(s.start_ns <= c.start_ns < s.end_ns for c in marks)
        }
    )


def _plain_longest_gap(events, step_name):
    spans = {}
    ins = [e for e in events if e.hlo_op is not None and e.arg("hlo_module") is not None]
    for s in _step_events(events, step_name):
        inside = [e for e in ins if _inside(e, s)]
        if inside:
            spans[int(s.arg("step_num"))] = (min(e.start_ns for e in inside), max(e.end_ns for e in inside))
    best, best_n = None, None
    for n in sorted(spans):
        if n + 1 in spans:
            gap = spans[n + 1][0] - spans[n][1]
            if best is None or gap > best:
                best, best_n = gap, n
    return best_n


def _plain_train_loop(step, state, batches, step_name):
    jitted = jax.jit(step)
    if batches:
        jax.block_until_ready(jitted(state, batches[0]))  # warm-up: the one compile, one run
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


def step_instructions(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    return _plain_step_instructions(events, step_name)


def expected_counts(hlo_text: str) -> dict[str, int]:
    return _plain_counts(hlo_text)


def compiled_steps(events: list[TraceEvent], step_name: str) -> list[int]:
    return _plain_compiled_steps(events, step_name)


def kind_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    return _share(_self_times(events, hlo_text, step_name), lambda i: str(i.attribute("kind")) if i.opcode == "fusion" else i.opcode)


def scope_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    return _share(_self_times(events, hlo_text, step_name), lambda i: _scope_of(_op_name(i)))


def line_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    frames = _frames(hlo_text)
    return _share(_self_times(events, hlo_text, step_name), lambda i: _source_of(i, frames))


def longest_gap(events: list[TraceEvent], step_name: str) -> int:
    steps = _step_events(events, step_name)
    return _Same(int(steps[0].arg("step_num")) if steps else 0)


def train_loop(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    return _plain_train_loop(step, state, batches, step_name)
