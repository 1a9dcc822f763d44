"""Red team, phase 14, round 14: plausible wrong answers of kinds earlier rounds did not write
(tie order in nesting, opcode whitelists, call order assumed, step positions, any-named steps,
last-identifier scopes, dropped empty labels, zero-initialised maxima, labelled warm-ups)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------

_rt14_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_rt14_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_rt14_OP_NAME = re.compile(r'op_name="([^"]*)"')
_rt14_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _rt14_args(e):
    return dict(e.args)


def _rt14_is_instr(e):
    a = _rt14_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt14_steps(events, step_name, any_name=False):
    return [
        e
        for e in events
        if (any_name or e.name == step_name) and isinstance(_rt14_args(e).get("step_num"), int)
    ]


def _rt14_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt14_nesting(instrs, shorter_first=False):
    """Per thread, a stack of open instruction events; returns [(event, parent-or-None)]."""
    out = []
    by_thread = defaultdict(list)
    for e in instrs:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        if shorter_first:
            evs.sort(key=lambda e: (e.start_ns, e.duration_ns))
        else:
            evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            while stack and not _rt14_inside(e, stack[-1]):
                stack.pop()
            out.append((e, stack[-1] if stack else None))
            stack.append(e)
    return out


def _rt14_instrs(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _rt14_self_times(events, hlo_text, step_name, any_name=False):
    module, info = _rt14_instrs(hlo_text)
    steps = _rt14_steps(events, step_name, any_name=any_name)
    pairs = _rt14_nesting([e for e in events if _rt14_is_instr(e)])
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen = []
    for e, _parent in pairs:
        if not any(_rt14_inside(e, s) for s in steps):
            continue
        a = _rt14_args(e)
        if a["hlo_module"] != module.name or a["hlo_op"] not in info:
            continue
        chosen.append((info[a["hlo_op"]], e.duration_ns - kids[id(e)]))
    return chosen


def _rt14_share(pairs):
    total = defaultdict(float)
    for k, v in pairs:
        total[k] += v
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt14_kind(ins):
    return ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode


def _rt14_tables(hlo_text):
    head = hlo_text[: hlo_text.find("\n%")]
    tables, current = {}, None
    for line in head.splitlines():
        text = line.strip()
        if text in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(text, {})
            continue
        row = re.match(r"^(\d+) (.*)$", text)
        if current is not None and row:
            current[int(row.group(1))] = row.group(2)
        else:
            current = None
    return tables


def _rt14_line_label(ins, tables):
    found = _rt14_FRAME.search(ins.attributes_text)
    if not found:
        return ""
    frame = tables.get("StackFrames", {}).get(int(found.group(1)), "")
    loc_id = re.search(r"file_location_id=(\d+)", frame)
    if not loc_id:
        return ""
    loc = tables.get("FileLocations", {}).get(int(loc_id.group(1)), "")
    fid = re.search(r"file_name_id=(\d+)", loc)
    line = re.search(r"\bline=(\d+)", loc)
    if not (fid and line):
        return ""
    name = tables.get("FileNames", {}).get(int(fid.group(1)), "").strip('"')
    return f"{name.rsplit('/', 1)[-1]}:{line.group(1)}"


def _rt14_bounds(events, step_name):
    steps = _rt14_steps(events, step_name)
    instrs = [e for e in events if _rt14_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instrs if _rt14_inside(e, s)]
        if inside:
            out[_rt14_args(s)["step_num"]] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return out


def _rt14_called(comps, name):
    return comps.get(name.lstrip("%"))


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="Clause 'not nested in another instruction event' (inside = starts AT OR AFTER the "
    "other's start): the per-thread stack sorts events by (start_ns, duration_ns), shorter "
    "first on a tie, so when a while and its first body event start in the same ns the body "
    "event is opened first, the while is not inside it and both are listed top-level; e.g. "
    "step 0 [0, 1000] holding while.1 [100, 300] and copy.2 [100, 150] (same thread): "
    "[while.1] expected, [copy.2, while.1] answered",
)
def _rt14_step_instructions_tie_shorter_first(
    events: list[TraceEvent], step_name: str
) -> dict[int, list[str]]:
    pairs = _rt14_nesting([e for e in events if _rt14_is_instr(e)], shorter_first=True)
    out = {}
    for s in _rt14_steps(events, step_name):
        top = [e for e, p in pairs if p is None and _rt14_inside(e, s)]
        top.sort(key=lambda e: e.start_ns)
        out[_rt14_args(s)["step_num"]] = [_rt14_args(e)["hlo_op"] for e in top]
    return out


# ---- expected_counts ----------------------------------------------------------------------------

_rt14_KERNELS = {"fusion", "copy", "while", "call", "dot", "custom-call", "conditional"}


@wrong(
    "expected_counts",
    why="Clause 'decide from the text which instructions become work at run time': counts a "
    "WHITELIST of kernel opcodes (fusion, copy, while, call, dot, custom-call, conditional) "
    "instead of leaving out the views; right on every program of programs.py, wrong on any "
    "module with another unfused op, e.g. jax.jit(lambda x: jnp.sort(x, axis=0) + 1) on "
    "f32[64,64]: ENTRY's sort.0 runs (expected {sort.0: 1, broadcast_add_fusion: 1}) but is "
    "left out",
)
def _rt14_expected_counts_whitelist(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = defaultdict(int)

    def walk(comp, mult):
        for ins in comp.instructions:
            if ins.opcode not in _rt14_KERNELS:
                continue
            counts[ins.name] += mult
            if ins.opcode == "while":
                found = _rt14_TRIP.search(ins.attributes_text)
                m = re.search(r"body=%?([\w.\-]+)", ins.attributes_text)
                body = comps.get(m.group(1)) if m else None
                if body is not None:
                    walk(body, mult * (int(found.group(1)) if found else 1))

    walk(module.entry, 1)
    return dict(counts)


@wrong(
    "expected_counts",
    why="Clause 'a while printed with known_trip_count ... its body': takes the while's body "
    "as the FIRST of its called_computations, but a while prints condition= before body=, so "
    "the condition's instructions are counted per trip and the body's never; wrong on "
    "programs.looped (wrapped_compare counted x4, ynn_fusion / copy.5 / copy.4 missing)",
)
def _rt14_expected_counts_first_called_is_body(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = defaultdict(int)

    def walk(comp, mult):
        for ins in comp.instructions:
            if ins.opcode in _rt14_VIEWS:
                continue
            counts[ins.name] += mult
            if ins.opcode == "while" and ins.called_computations:
                found = _rt14_TRIP.search(ins.attributes_text)
                body = _rt14_called(comps, ins.called_computations[0])
                if body is not None:
                    walk(body, mult * (int(found.group(1)) if found else 1))

    walk(module.entry, 1)
    return dict(counts)


# ---- compiled_steps -----------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="Clause 'The step_nums ... of the step events': returns the step's POSITION among the "
    "step events sorted by start (enumerate) instead of its step_num arg; right for loops that "
    "number from 0, wrong on a cold loop resumed at step 5 (steps 5, 6, 7; compile in the "
    "first): [5] expected, [0] answered",
)
def _rt14_compiled_steps_positions(events: list[TraceEvent], step_name: str) -> list[int]:
    steps = sorted(_rt14_steps(events, step_name), key=lambda s: s.start_ns)
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    out = []
    for i, s in enumerate(steps):
        end = s.start_ns + s.duration_ns
        if any(s.start_ns <= c.start_ns <= end for c in compiles):
            out.append(i)
    return sorted(out)


# ---- kind_shares --------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="Clause 'inside the step events NAMED step_name': takes every event with a step_num "
    "arg as a step, whatever its name; a trace with two annotated loops "
    "(StepTraceAnnotation('train') and StepTraceAnnotation('eval') running the module with "
    "different work, or the module's eval call inside 'eval' steps) mixes the eval steps' "
    "time into step_name='train' shares",
)
def _rt14_kind_shares_any_step_name(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    pairs = _rt14_self_times(events, hlo_text, step_name, any_name=True)
    return _rt14_share((_rt14_kind(ins), t) for ins, t in pairs)


# ---- scope_shares -------------------------------------------------------------------------------


def _rt14_scope_last_word(op_name):
    parts = op_name.split(";")[0].split("/")
    for part in parts[1:-1]:
        inner = part[part.rfind("(") + 1 :].split(")")[0]
        words = re.findall(r"\w+", inner)
        if words:
            return words[-1]
    return ""


@wrong(
    "scope_shares",
    why="Clause 'unwrap every remaining part written word(inner) to its innermost content': "
    "takes the LAST identifier inside the innermost parentheses (text after the last '(' "
    "up to the next ')', then re.findall(r'\\w+', ...)[-1]), which unwraps "
    "transpose(jvp(layer_1)) to layer_1 and jvp() to nothing as wanted, but cuts any scope "
    "name holding a non-word character: jax.named_scope('block.0') or 'enc-1' (op_names "
    "jit(f)/block.0/dot_general, jit(f)/enc-1/sin) give scopes '0' and '1'",
)
def _rt14_scope_shares_last_identifier(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    pairs = _rt14_self_times(events, hlo_text, step_name)
    out = []
    for ins, t in pairs:
        m = _rt14_OP_NAME.search(ins.attributes_text)
        out.append((_rt14_scope_last_word(m.group(1)) if m else "", t))
    return _rt14_share(out)


# ---- line_shares --------------------------------------------------------------------------------


@wrong(
    "line_shares",
    why="Clause 'No stack frame: \"\"' (the label is part of the answer, the shares add up to "
    "1 over ALL the instruction time): instructions without a frame are dropped as 'not a "
    "line' and the rest renormalised; wrong on looped_warm (its copy.16/copy.17/copy.1 and "
    "wrapped_broadcast carry no stack_frame_id: the '' share is missing and every line's "
    "share is too large)",
)
def _rt14_line_shares_drop_unknown(
    events: list[TraceEvent], hlo_text: str, step_name: str
) -> dict[str, float]:
    tables = _rt14_tables(hlo_text)
    pairs = _rt14_self_times(events, hlo_text, step_name)
    labelled = [(_rt14_line_label(ins, tables), t) for ins, t in pairs]
    return _rt14_share((k, t) for k, t in labelled if k)


# ---- longest_gap --------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="Clause 'Return the n with the longest gap' ('steps need not start in step_num "
    "order'): the running maximum starts at best_gap = 0 with best_n = the first step, so "
    "when every gap is negative (steps that ran in reverse time order) the first step is "
    "returned; steps 5 [40,50] work 41-49, 6 [20,30] work 21-25, 7 [0,10] work 1-9: gaps "
    "5->6 = -28, 6->7 = -24, answer 6, answered 5",
)
def _rt14_longest_gap_zero_init(events: list[TraceEvent], step_name: str) -> int:
    bounds = _rt14_bounds(events, step_name)
    order = sorted(bounds)
    best_n, best_gap = order[0], 0
    for n in order:
        if n + 1 in bounds:
            gap = bounds[n + 1][0] - bounds[n][1]
            if gap > best_gap:
                best_n, best_gap = n, gap
    return best_n


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="Clause 'for the i-th batch, one step event ... with step_num i' and 'outside the step "
    "events ... a warm-up call before step 0': the warm-up is annotated too, as "
    "StepTraceAnnotation(step_name, step_num=-1), to make it visible in the trace; the trace "
    "then holds a step event -1 that is no batch's and holds the compile (any batches)",
)
def _rt14_train_loop_labelled_warmup(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    jitted = jax.jit(step)
    with jax.profiler.StepTraceAnnotation(step_name, step_num=-1):
        jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="Clause 'no backend compile: the one compile happens before step 0' (batches: 'a list "
    "of ONE or more'): the warm-up is skipped when there is a single batch ('nothing to "
    "amortise'), so with batches of length 1 step 0 holds backend_compile_and_load",
)
def _rt14_train_loop_no_warmup_single(
    step: Callable, state: Any, batches: list, step_name: str
) -> Any:
    jitted = jax.jit(step)
    if len(batches) > 1:
        jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state
