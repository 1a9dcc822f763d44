"""Red-team wrong answers for phase 14, written from the contract only.

Round 5: each answer agrees with a correct one on the recorded profiles and the plain bank
programs, and goes wrong on one valid input named in its `why`.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect.profile import TraceEvent

# ---- shared helpers (each answer below bends exactly one of them) -------------------------------


def _rt5_end(e: TraceEvent) -> int:
    return e.start_ns + e.duration_ns


def _rt5_is_instr(e: TraceEvent) -> bool:
    return e.arg("hlo_op") is not None and e.arg("hlo_module") is not None


def _rt5_steps(events, step_name):
    return [e for e in events if e.name == step_name and e.arg("step_num") is not None]


def _rt5_inside(e, s) -> bool:
    return e.start_ns >= s.start_ns and _rt5_end(e) <= _rt5_end(s)


def _rt5_parents(instrs, same_thread=True, strict_start=False):
    """index -> index of the innermost instruction event holding it (or None)."""
    order = sorted(range(len(instrs)), key=lambda i: (instrs[i].start_ns, -instrs[i].duration_ns))
    parent: dict[int, int | None] = {}
    stacks: dict[str, list[int]] = defaultdict(list)
    for i in order:
        e = instrs[i]
        key = e.thread if same_thread else "*"
        stack = stacks[key]
        while stack and not (
            (instrs[stack[-1]].start_ns < e.start_ns if strict_start else True)
            and _rt5_inside(e, instrs[stack[-1]])
        ):
            stack.pop()
        parent[i] = stack[-1] if stack else None
        stack.append(i)
    return parent


_rt5_COMP = re.compile(r"^(ENTRY )?%(\S+) \(.*?\{\s*$", re.MULTILINE)
_rt5_INSTR = re.compile(r"^\s*(ROOT )?%(\S+) = (.*?) ([a-z][a-z0-9\-]*)\((.*)$")


def _rt5_computations(hlo_text: str) -> dict[str, list[dict]]:
    comps: dict[str, list[dict]] = {}
    current = None
    for line in hlo_text.splitlines():
        m = _rt5_COMP.match(line)
        if m:
            current = m.group(2)
            comps[current] = []
            if m.group(1):
                comps["__entry__"] = comps[current]
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is None:
            continue
        m = _rt5_INSTR.match(line)
        if m:
            comps[current].append(
                {"root": bool(m.group(1)), "name": m.group(2), "opcode": m.group(4), "line": line}
            )
    return comps


def _rt5_instructions(hlo_text: str) -> dict[str, dict]:
    out = {}
    for name, ins in _rt5_computations(hlo_text).items():
        if name == "__entry__":
            continue
        for i in ins:
            out[i["name"]] = i
    return out


def _rt5_module(hlo_text: str) -> str:
    m = re.search(r"^HloModule (\S+?),?\s", hlo_text, re.MULTILINE)
    return m.group(1).rstrip(",") if m else ""


def _rt5_label_kind(i: dict) -> str:
    if i["opcode"] == "fusion":
        m = re.search(r"kind=(k\w+)", i["line"])
        return m.group(1) if m else "fusion"
    return i["opcode"]


def _rt5_self_times(
    events,
    hlo_text,
    step_name,
    *,
    module_filter=True,
    same_thread=True,
    all_descendants=False,
    only_while_opcode=False,
):
    """[(instruction dict, self time)] for the module's instruction events inside steps."""
    table = _rt5_instructions(hlo_text)
    module = _rt5_module(hlo_text)
    steps = _rt5_steps(events, step_name)
    instrs = [
        e
        for e in events
        if _rt5_is_instr(e)
        and (not module_filter or e.arg("hlo_module") == module)
        and e.arg("hlo_op") in table
        and any(_rt5_inside(e, s) for s in steps)
    ]
    parent = _rt5_parents(instrs, same_thread=same_thread)
    selfs = [e.duration_ns for e in instrs]
    for i, p in parent.items():
        if p is None:
            continue
        if only_while_opcode and table[instrs[p].arg("hlo_op")]["opcode"] != "while":
            continue
        selfs[p] -= instrs[i].duration_ns
        if all_descendants:
            q = parent[p]
            while q is not None:
                selfs[q] -= instrs[i].duration_ns
                q = parent[q]
    return [(table[e.arg("hlo_op")], selfs[k]) for k, e in enumerate(instrs)]


def _rt5_shares(pairs, label: Callable[[dict], str]) -> dict[str, float]:
    times: dict[str, float] = defaultdict(float)
    for ins, t in pairs:
        times[label(ins)] += t
    total = sum(times.values())
    return {k: (v / total if total else 0.0) for k, v in times.items()}


# ---- task 1: step_instructions ---------------------------------------------------------------


def _rt5_step_instr(events, step_name, *, same_thread=True, strict_start=False, strict_end=False):
    instrs = [e for e in events if _rt5_is_instr(e)]
    parent = _rt5_parents(instrs, same_thread=same_thread, strict_start=strict_start)
    top = [e for i, e in enumerate(instrs) if parent[i] is None]
    out: dict[int, list[str]] = {}
    for s in _rt5_steps(events, step_name):
        inside = [
            e
            for e in top
            if e.start_ns >= s.start_ns
            and (_rt5_end(e) < _rt5_end(s) if strict_end else _rt5_end(e) <= _rt5_end(s))
        ]
        inside.sort(key=lambda e: e.start_ns)
        out[int(s.arg("step_num"))] = [str(e.arg("hlo_op")) for e in inside]
    return out


@wrong(
    "step_instructions",
    why="nesting is per thread ('nested in another of the same thread'), this stack is shared by "
    "all threads; wrong on a profile whose instruction events run on two execute threads at once "
    "(two async executions / intra-op threads): an event of thread B that overlaps a longer "
    "event of thread A is dropped as 'nested'",
)
def _rt5_step_instructions_threads_merged(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt5_step_instr(events, step_name, same_thread=False)


@wrong(
    "step_instructions",
    why="'inside' is start >= start: a body event whose start_ns equals its while's start_ns is "
    "nested; this answer demands a strictly later start, so it lists that first body "
    "instruction as top-level; wrong on a while whose first body event starts in the same ns",
)
def _rt5_step_instructions_strict_start(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt5_step_instr(events, step_name, strict_start=True)


@wrong(
    "step_instructions",
    why="an event ends 'at or before' the step's end; this answer needs end < step end, so it "
    "drops the last instruction when it ends in the very ns the step event closes (a "
    "block_until_ready step whose event closes with the last kernel)",
)
def _rt5_step_instructions_end_exclusive(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    return _rt5_step_instr(events, step_name, strict_end=True)


# ---- task 2: expected_counts -----------------------------------------------------------------

_rt5_FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def _rt5_counts(
    hlo_text: str, *, inner_trips=True, one_trip=None, skip_root=False
) -> dict[str, int]:
    comps = _rt5_computations(hlo_text)
    first = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', hlo_text)
    counts: dict[str, int] = defaultdict(int)

    def walk(comp: str, times: int, depth: int) -> None:
        for i in comps.get(comp, []):
            if i["opcode"] in _rt5_FREE:
                continue
            if skip_root and i["root"] and comp == entry:
                continue
            counts[i["name"]] += times
            if i["opcode"] == "while":
                body = re.search(r"body=%([^\s,]+)", i["line"]).group(1)
                if one_trip and first:
                    n = int(first.group(1))
                else:
                    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', i["line"])
                    n = int(m.group(1)) if m else 1
                if not inner_trips and depth > 0:
                    n = 1
                walk(body, times * n, depth + 1)

    entry_comp = comps.get("__entry__", [])
    entry = next((k for k, v in comps.items() if v is entry_comp and k != "__entry__"), "")
    walk(entry, 1, 0)
    return dict(counts)


@wrong(
    "expected_counts",
    why="a while's body runs known_trip_count times per run of the while, at every depth; this "
    "multiplies only the outermost loop's trips, so an inner while's body counts outer trips "
    "once each; wrong on a drawn program with a 'nested' stage (scan of t holding a fori of t+1)",
)
def _rt5_expected_counts_inner_trip_ignored(hlo_text: str) -> dict[str, int]:
    return _rt5_counts(hlo_text, inner_trips=False)


@wrong(
    "expected_counts",
    why="each while has its own known_trip_count; this reads the first one in the module and "
    "uses it for every while; wrong on a drawn program with two loops of different trip counts "
    "(e.g. scan of 3 then fori of 5)",
)
def _rt5_expected_counts_first_trip_count(hlo_text: str) -> dict[str, int]:
    return _rt5_counts(hlo_text, one_trip=True)


@wrong(
    "expected_counts",
    why="the ENTRY's ROOT leaves an event when it is work; this skips it as if it were always "
    "the output tuple; wrong on a drawn program returning one array (ROOT is a fusion/dot, "
    "like programs.rooted)",
)
def _rt5_expected_counts_root_skipped(hlo_text: str) -> dict[str, int]:
    return _rt5_counts(hlo_text, skip_root=True)


# ---- task 3: compiled_steps ------------------------------------------------------------------

_rt5_COMPILES = ("backend_compile_and_load", "FusionCompiler::Compile")


@wrong(
    "compiled_steps",
    why="step_nums are listed once each, ascending; this lists a step once per compile it holds, "
    "so a step that compiles two programs (the step's jit and a helper op dispatched eagerly) "
    "appears twice",
)
def _rt5_compiled_steps_per_compile(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = _rt5_steps(events, step_name)
    out = []
    for c in sorted(
        (e for e in events if e.name == "backend_compile_and_load"), key=lambda e: e.start_ns
    ):
        for s in steps:
            if s.start_ns <= c.start_ns <= _rt5_end(s):
                out.append(int(s.arg("step_num")))
    return out


@wrong(
    "compiled_steps",
    why="'inside a step event' is about time only (events come on any threads); this also "
    "demands the compile's thread be the step's thread, as nesting does, so a compile run from "
    "another Python thread (a worker thread calling the jit inside the step, or a profile whose "
    "python thread is labelled differently for the compile) is missed",
)
def _rt5_compiled_steps_same_thread(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = _rt5_steps(events, step_name)
    found = {
        int(s.arg("step_num"))
        for c in events
        if c.name == "backend_compile_and_load"
        for s in steps
        if c.thread == s.thread and s.start_ns <= c.start_ns <= _rt5_end(s)
    }
    return sorted(found)


@wrong(
    "compiled_steps",
    why="the compile must START inside the step; this asks for the whole compile event inside "
    "the step, so a step whose compile started inside it but whose trace was cut (or whose "
    "compile event outlives a step closed early, no block_until_ready) is left out",
)
def _rt5_compiled_steps_whole_inside(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = _rt5_steps(events, step_name)
    found = {
        int(s.arg("step_num"))
        for c in events
        if c.name == "backend_compile_and_load"
        for s in steps
        if _rt5_inside(c, s)
    }
    return sorted(found)


# ---- task 4: kind_shares ---------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="self time subtracts only the events nested directly (one level down); this subtracts "
    "every descendant, so an outer while loses its inner while's body twice; wrong on "
    "programs.nested (scan holding a fori_loop): the outer while share goes negative/too small",
)
def _rt5_kind_shares_all_descendants(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name, all_descendants=True), _rt5_label_kind
    )


@wrong(
    "kind_shares",
    why="only events whose hlo_module is this module count; this joins on hlo_op alone, so a "
    "step that also runs another jitted module with same-named instructions (copy.1, "
    "loop_add_fusion) adds that module's time; wrong on a step running two jitted functions",
)
def _rt5_kind_shares_no_module_filter(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name, module_filter=False), _rt5_label_kind
    )


@wrong(
    "kind_shares",
    why="nesting is within one thread; this nests across threads, so a kernel on a second "
    "execute thread that overlaps a long dot on the first is subtracted from the dot's self "
    "time; wrong on a profile with instruction events on two threads at once",
)
def _rt5_kind_shares_cross_thread(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name, same_thread=False), _rt5_label_kind
    )


# ---- task 5: scope_shares --------------------------------------------------------------------


def _rt5_op_name(ins: dict) -> str:
    m = re.search(r'op_name="([^"]*)"', ins["line"])
    return m.group(1) if m else ""


def _rt5_unwrap(part: str) -> str:
    while True:
        m = re.fullmatch(r"[A-Za-z_][\w\-]*\((.*)\)", part)
        if not m:
            return part
        part = m.group(1)


def _rt5_scope(ins: dict, *, last_segment=False, innermost=False, skip_jit=False) -> str:
    op = _rt5_op_name(ins)
    if not op:
        return ""
    op = op.split(";")[-1] if last_segment else op.split(";")[0]
    parts = op.split("/")[1:-1]
    if skip_jit:
        parts = [p for p in parts if not p.startswith(("jit(", "pjit("))]
    parts = [_rt5_unwrap(p) for p in parts]
    parts = [p for p in parts if p]
    if not parts:
        return ""
    return parts[-1] if innermost else parts[0]


@wrong(
    "scope_shares",
    why="the scope is the FIRST non-empty part; this takes the last one (the part just before "
    "the primitive), so nested named scopes jax.named_scope('layer_1') > named_scope('attn') "
    "count for 'attn' instead of 'layer_1'",
)
def _rt5_scope_shares_innermost(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name), lambda i: _rt5_scope(i, innermost=True)
    )


@wrong(
    "scope_shares",
    why="op_name is cut at its FIRST ';'; this keeps the last of the joined names, so a fusion "
    "whose op_name joins 'jit(f)/jvp(layer_0)/tanh;jit(f)/jvp(layer_1)/mul' counts for layer_1; "
    "wrong on a fused instruction joining two scopes",
)
def _rt5_scope_shares_last_joined(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name), lambda i: _rt5_scope(i, last_segment=True)
    )


@wrong(
    "scope_shares",
    why="every part written word(inner) is unwrapped, jit(...) too; this skips nested jit parts "
    "as if they were the outer jit, so 'jit(f)/jit(helper)/mul' (a jitted helper called inside) "
    "gives '' instead of 'helper'",
)
def _rt5_scope_shares_skip_inner_jit(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name), lambda i: _rt5_scope(i, skip_jit=True)
    )


# ---- task 6: line_shares ---------------------------------------------------------------------


def _rt5_tables(hlo_text: str):
    tables: dict[str, dict[int, str]] = {}
    current = None
    for line in hlo_text.splitlines():
        if line.strip() in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = line.strip()
            tables[current] = {}
            continue
        if current is None:
            continue
        m = re.match(r"^(\d+) (.*)$", line)
        if not m:
            if (
                line.startswith("%")
                or line.startswith("ENTRY")
                or (tables[current] and not line.strip())
            ):
                current = None
            continue
        tables[current][int(m.group(1))] = m.group(2)
    return tables


def _rt5_line_of(ins: dict, tables, *, end_line=False) -> str:
    m = re.search(r"stack_frame_id=(\d+)", ins["line"])
    if not m:
        return ""
    frame = tables.get("StackFrames", {}).get(int(m.group(1)), "")
    loc_id = re.search(r"file_location_id=(\d+)", frame)
    if not loc_id:
        return ""
    loc = tables.get("FileLocations", {}).get(int(loc_id.group(1)), "")
    fid = re.search(r"file_name_id=(\d+)", loc)
    key = r"\bend_line=(\d+)" if end_line else r"(?<![_\w])line=(\d+)"
    line = re.search(key, loc)
    if not fid or not line:
        return ""
    name = tables.get("FileNames", {}).get(int(fid.group(1)), "").strip('"')
    return f"{os.path.basename(name)}:{line.group(1)}"


@wrong(
    "line_shares",
    why="the line is the location's `line` (where the call starts); this reads end_line, "
    "identical for one-line calls, so it is wrong on programs.spread (jnp.matmul(...) and "
    "jnp.tanh(...) written over several lines)",
)
def _rt5_line_shares_end_line(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    tables = _rt5_tables(hlo_text)
    return _rt5_shares(
        _rt5_self_times(events, hlo_text, step_name),
        lambda i: _rt5_line_of(i, tables, end_line=True),
    )


@wrong(
    "line_shares",
    why="self time subtracts the events nested in ANY instruction event; this subtracts only "
    "under a `while`, so a `conditional` keeps its taken branch's time too (counted twice); "
    "wrong on programs.branchy, where the cond's line gets the branch's time again",
)
def _rt5_line_shares_while_only(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    tables = _rt5_tables(hlo_text)
    pairs = _rt5_self_times(events, hlo_text, step_name, only_while_opcode=True)
    return _rt5_shares(pairs, lambda i: _rt5_line_of(i, tables))


@wrong(
    "line_shares",
    why="every instruction event counts, an instruction that ran n times n times; this keeps "
    "one time per instruction name (last one wins), so a while body run 4 times counts once; "
    "wrong on programs.looped / nested, whose loop-body lines are undercounted",
)
def _rt5_line_shares_one_per_instruction(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    tables = _rt5_tables(hlo_text)
    last: dict[str, tuple[dict, int]] = {}
    for ins, t in _rt5_self_times(events, hlo_text, step_name):
        last[ins["name"]] = (ins, t)
    return _rt5_shares(last.values(), lambda i: _rt5_line_of(i, tables))


# ---- task 7: longest_gap ---------------------------------------------------------------------


def _rt5_gap(events, step_name, *, any_event=False, list_order=False, skip_empty=False) -> int:
    steps = {int(s.arg("step_num")): s for s in _rt5_steps(events, step_name)}
    spans: dict[int, tuple[int, int]] = {}
    for n, s in steps.items():
        inside = [
            e
            for e in events
            if e is not s
            and (any_event or _rt5_is_instr(e))
            and e.name != step_name
            and _rt5_inside(e, s)
        ]
        if not inside:
            continue
        if list_order:
            spans[n] = (inside[0].start_ns, _rt5_end(inside[-1]))
        else:
            spans[n] = (min(e.start_ns for e in inside), max(_rt5_end(e) for e in inside))
    best, best_gap = None, None
    nums = sorted(spans) if skip_empty else sorted(steps)
    for a, b in zip(nums, nums[1:]):
        if not skip_empty and (b != a + 1 or a not in spans or b not in spans):
            continue
        g = spans[b][0] - spans[a][1]
        if best_gap is None or g > best_gap:
            best, best_gap = a, g
    return best if best is not None else min(steps)


@wrong(
    "longest_gap",
    why="the gap runs between INSTRUCTION events; this uses every event inside the step (the "
    "PjitFunction call, ThunkExecutor, StartRegion markers on the python/execute threads), which "
    "start before and end after the device work; wrong on a loop whose host-side prologue "
    "(a slow PjitFunction dispatch) differs from step to step",
)
def _rt5_longest_gap_any_event(events: list[TraceEvent], step_name: str) -> int:
    return _rt5_gap(events, step_name, any_event=True)


@wrong(
    "longest_gap",
    why="events come in any order; this takes the first and last instruction event in list "
    "order as the step's first start and last end; wrong on shuffled events (the tests may "
    "shuffle) or a thread-by-thread listing",
)
def _rt5_longest_gap_list_order(events: list[TraceEvent], step_name: str) -> int:
    return _rt5_gap(events, step_name, list_order=True)


@wrong(
    "longest_gap",
    why="gaps are between step n and n + 1 only; this pairs consecutive steps that hold work, so "
    "with an empty step 7 (say, a step that only logged) it measures 6 -> 8, a gap that spans a "
    "whole step, and returns 6",
)
def _rt5_longest_gap_skip_empty(events: list[TraceEvent], step_name: str) -> int:
    return _rt5_gap(events, step_name, skip_empty=True)


# ---- task 8: train_loop ----------------------------------------------------------------------


@wrong(
    "train_loop",
    why="each step event must hold all of its execution; this pipelines (blocks on step i's "
    "state at the start of step i + 1), so step i's kernels spill into step i + 1's event and "
    "the last execution ends outside every step; wrong whenever the step takes longer than the "
    "Python dispatch (any real size)",
)
def _rt5_train_loop_deferred_block(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    jitted = jax.jit(step)
    jitted.lower(state, batches[0]).compile()
    pending = None
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            if pending is not None:
                jax.block_until_ready(pending)
            state, _loss = jitted(state, batch)
            pending = state
    return jax.block_until_ready(state)


@wrong(
    "train_loop",
    why="outside the steps the trace holds at most ONE execution; this warms up twice (a first "
    "call to compile, a second 'hot cache' call), so two executions lie outside the step events",
)
def _rt5_train_loop_two_warmups(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    for _ in range(2):
        jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="the returned state must equal jax.jit(step) applied batch by batch; this keeps the "
    "warm-up call's result as the starting state, so batch 0 is applied twice; wrong for any "
    "batches (the profile itself reads cleanly)",
)
def _rt5_train_loop_warmup_kept(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    jitted = jax.jit(step)
    state, _ = jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state
