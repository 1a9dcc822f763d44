"""Red team, phase 14, round 10: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------


def _rt10_args(e):
    return dict(e.args)


def _rt10_is_instr(e):
    a = _rt10_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt10_steps(events, step_name):
    return [e for e in events if e.name == step_name and "step_num" in _rt10_args(e)]


def _rt10_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt10_toplevel(instrs):
    """Per thread, a stack of open instruction events; returns (event, parent-or-None)."""
    out = []
    by_thread = {}
    for e in instrs:
        by_thread.setdefault(e.thread, []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            while stack and not _rt10_inside(e, stack[-1]):
                stack.pop()
            out.append((e, stack[-1] if stack else None))
            stack.append(e)
    return out


def _rt10_selected(events, hlo_text, step_name, in_steps=None):
    module = parse_hlo(hlo_text)
    instrs = {}
    for comp in module.computations:
        for ins in comp.instructions:
            instrs[ins.name] = ins
    steps = _rt10_steps(events, step_name)
    all_instr = [e for e in events if _rt10_is_instr(e)]
    pairs = _rt10_toplevel(all_instr)
    child_time = {}
    for e, parent in pairs:
        if parent is not None:
            child_time[id(parent)] = child_time.get(id(parent), 0) + e.duration_ns
    inside = in_steps or (lambda e: any(_rt10_inside(e, s) for s in steps))
    chosen = []
    for e, _ in pairs:
        a = _rt10_args(e)
        if a["hlo_module"] != module.name or a["hlo_op"] not in instrs:
            continue
        if not inside(e):
            continue
        chosen.append((instrs[a["hlo_op"]], e.duration_ns - child_time.get(id(e), 0)))
    return chosen, module


def _rt10_share(pairs):
    total = {}
    for label, t in pairs:
        total[label] = total.get(label, 0) + t
    s = sum(total.values())
    return {k: v / s for k, v in total.items()}


def _rt10_kind(ins):
    if ins.opcode == "fusion":
        m = re.search(r"kind=(\w+)", ins.attributes_text)
        return m.group(1) if m else "fusion"
    return ins.opcode


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="'events come in any order, ON ANY THREADS': keeps only the instruction events of the "
    "thread that holds the most of them (the 'execute' thread) before nesting; a trace with two "
    "executions at once on two threads (README: hand-built traces) loses the second thread's "
    "top-level instructions, e.g. step 0 running copy.1 on 'execute' and fusion.2 on 'execute.2' "
    "answers [copy.1] instead of both",
)
def _rt10_step_instructions_main_thread_only(events, step_name):
    instrs = [e for e in events if _rt10_is_instr(e)]
    counts = {}
    for e in instrs:
        counts[e.thread] = counts.get(e.thread, 0) + 1
    main = max(counts, key=counts.get) if counts else None
    instrs = [e for e in instrs if e.thread == main]
    top = [e for e, parent in _rt10_toplevel(instrs) if parent is None]
    top.sort(key=lambda e: e.start_ns)
    out = {}
    for s in _rt10_steps(events, step_name):
        out[_rt10_args(s)["step_num"]] = [
            _rt10_args(e)["hlo_op"] for e in top if _rt10_inside(e, s)
        ]
    return out


@wrong(
    "step_instructions",
    why="'an instruction event is an event with an hlo_op arg': drops instruction events whose "
    "duration_ns is 0, taking them for the sub-microsecond 'end:' markers; a trace where a cheap "
    "copy or tiny fusion is recorded with 0 ns (the clock's resolution, or a hand-built trace) "
    "loses that instruction from its step's list",
)
def _rt10_step_instructions_drop_zero_length(events, step_name):
    instrs = [e for e in events if _rt10_is_instr(e) and e.duration_ns > 0]
    top = [e for e, parent in _rt10_toplevel(instrs) if parent is None]
    top.sort(key=lambda e: e.start_ns)
    out = {}
    for s in _rt10_steps(events, step_name):
        out[_rt10_args(s)["step_num"]] = [
            _rt10_args(e)["hlo_op"] for e in top if _rt10_inside(e, s)
        ]
    return out


# ---- expected_counts ----------------------------------------------------------------------------

_RT10_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _rt10_counts(hlo_text, while_self_per_trip=False, extra_views=()):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = {}
    views = _RT10_VIEWS | set(extra_views)

    def walk(comp, times):
        for ins in comp.instructions:
            if ins.opcode in views:
                continue
            if ins.opcode == "while":
                m = re.search(r'"known_trip_count":\{"n":"(\d+)"', ins.attributes_text)
                n = int(m.group(1)) if m else 1
                counts[ins.name] = counts.get(ins.name, 0) + (
                    times * n if while_self_per_trip else times
                )
                body = re.search(r"body=%?([\w.\-]+)", ins.attributes_text).group(1)
                walk(comps[body], times * n)
                continue
            counts[ins.name] = counts.get(ins.name, 0) + times

    walk(module.entry, 1)
    return counts


@wrong(
    "expected_counts",
    why="'A while is one event, and its body's working instructions run inside it, once per "
    "trip': the while event itself is counted known_trip_count times too (one event per trip, "
    "as for its body); programs.looped's scan while (n=4) is predicted 4 events per call, not 1",
)
def _rt10_expected_counts_while_per_trip(hlo_text):
    return _rt10_counts(hlo_text, while_self_per_trip=True)


@wrong(
    "expected_counts",
    why="'how many times (a while printed with known_trip_count)': the trip count is read with "
    'the regex \'"n":"(\\d)\' (one digit), so a while of 10 or more trips (a scan of length 12, '
    "jax.lax.fori_loop(0, 16, ...)) has its body predicted 1 time per call instead of 12/16",
)
def _rt10_expected_counts_one_digit_trips(hlo_text):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = {}

    def walk(comp, times):
        for ins in comp.instructions:
            if ins.opcode in _RT10_VIEWS:
                continue
            counts[ins.name] = counts.get(ins.name, 0) + times
            if ins.opcode == "while":
                m = re.search(r'"n":"(\d)', ins.attributes_text)
                n = int(m.group(1)) if m else 1
                body = re.search(r"body=%?([\w.\-]+)", ins.attributes_text).group(1)
                walk(comps[body], times * n)

    walk(module.entry, 1)
    return counts


# ---- compiled_steps -----------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="'a backend compile started inside the step event' (the event, not an inference): a step "
    "is taken to have compiled when it holds the first execution of a program_id not seen "
    "earlier in the trace; a warm capture (compiled before the trace) answers [first step] "
    "instead of [], e.g. recorded/layered_warm.json -> [0]",
)
def _rt10_compiled_steps_new_program_id(events, step_name):
    steps = sorted(_rt10_steps(events, step_name), key=lambda s: s.start_ns)
    seen = set()
    out = []
    for s in steps:
        ids = {
            (_rt10_args(e)["hlo_module"], _rt10_args(e).get("program_id"))
            for e in events
            if _rt10_is_instr(e) and _rt10_inside(e, s)
        }
        if ids - seen:
            out.append(_rt10_args(s)["step_num"])
        seen |= ids
    return sorted(out)


# ---- kind_shares --------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="'instruction events INSIDE the step events': takes every event between the first step's "
    "start and the last step's end (one window), so work that lands between two step events "
    "(a loop that does not wait inside its steps, a stray eager op of the same module) is "
    "counted; shares differ on any trace with module events between steps",
)
def _rt10_kind_shares_one_window(events, hlo_text, step_name):
    steps = _rt10_steps(events, step_name)
    lo = min(s.start_ns for s in steps)
    hi = max(s.start_ns + s.duration_ns for s in steps)
    chosen, _ = _rt10_selected(
        events,
        hlo_text,
        step_name,
        in_steps=lambda e: e.start_ns >= lo and e.start_ns + e.duration_ns <= hi,
    )
    return _rt10_share((_rt10_kind(ins), t) for ins, t in chosen)


@wrong(
    "kind_shares",
    why="'every label that ran appears, and the shares add up to 1': shares rounded to 2 "
    "decimals for a readable table and labels that round to 0.00 dropped; a kind with 0.4% of "
    "the time (the small copies of looped) disappears and the others no longer sum to 1",
)
def _rt10_kind_shares_rounded(events, hlo_text, step_name):
    chosen, _ = _rt10_selected(events, hlo_text, step_name)
    shares = _rt10_share((_rt10_kind(ins), t) for ins, t in chosen)
    return {k: round(v, 2) for k, v in shares.items() if round(v, 2) > 0}


# ---- scope_shares -------------------------------------------------------------------------------


def _rt10_scope(op_name, drop_first_only_if_jit):
    op = op_name.split(";")[0]
    parts = op.split("/")
    if drop_first_only_if_jit:
        if parts and parts[0].startswith("jit("):
            parts = parts[1:]
        parts = parts[:-1]
    else:
        parts = parts[1:-1]
    for p in parts:
        while True:
            m = re.fullmatch(r"[\w.\-]+\((.*)\)", p)
            if not m:
                break
            p = m.group(1)
        if p:
            return p
    return ""


def _rt10_opname(ins):
    m = re.search(r'op_name="([^"]*)"', ins.attributes_text)
    return m.group(1) if m else ""


@wrong(
    "scope_shares",
    why="'split it on /, drop the first part (jit(fn))': drops the first part only when it is "
    "written jit(...); an op_name whose first part is pjit(f), pmap(f), xla_pmap or a bare "
    "function name (hand-written/other-transform modules, e.g. 'pjit(f)/layer_1/mul') keeps "
    "that wrapper, which unwraps to the function name 'f' instead of the scope 'layer_1'",
)
def _rt10_scope_shares_only_jit_prefix(events, hlo_text, step_name):
    chosen, _ = _rt10_selected(events, hlo_text, step_name)
    return _rt10_share((_rt10_scope(_rt10_opname(ins), True), t) for ins, t in chosen)


# ---- line_shares --------------------------------------------------------------------------------

_RT10_TABLES: dict = {}


def _rt10_tables(hlo_text):
    if "t" in _RT10_TABLES:  # parsed once: the tables are 'the module's', read them once
        return _RT10_TABLES["t"]
    sections = {}
    cur = None
    for line in hlo_text.splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            cur = s
            sections[cur] = {}
            continue
        if (
            not s
            or s.startswith(("%", "ENTRY", "HloModule"))
            or "{" in s
            and "=" in s
            and cur is None
        ):
            if s.startswith(("%", "ENTRY")):
                cur = None
            continue
        if cur:
            m = re.match(r"(\d+)\s+(.*)", s)
            if m:
                sections[cur][int(m.group(1))] = m.group(2)
    _RT10_TABLES["t"] = sections
    return sections


@wrong(
    "line_shares",
    why="'the module's StackFrames, FileLocations and FileNames tables': the tables are parsed "
    "on the first call and kept in a module-level cache, so every later module (another "
    "program, a drawn one) is joined against the first module's tables; any second call with a "
    "different module gives wrong or '' lines",
)
def _rt10_line_shares_cached_tables(events, hlo_text, step_name):
    t = _rt10_tables(hlo_text)
    chosen, _ = _rt10_selected(events, hlo_text, step_name)

    def label(ins):
        m = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
        if not m:
            return ""
        frame = t.get("StackFrames", {}).get(int(m.group(1)), "")
        fl = re.search(r"file_location_id=(\d+)", frame)
        if not fl:
            return ""
        loc = t.get("FileLocations", {}).get(int(fl.group(1)), "")
        fn = re.search(r"file_name_id=(\d+)", loc)
        ln = re.search(r"\bline=(\d+)", loc)
        if not fn or not ln:
            return ""
        name = t.get("FileNames", {}).get(int(fn.group(1)), "").strip('"').split("/")[-1]
        return f"{name}:{ln.group(1)}"

    return _rt10_share((label(ins), tm) for ins, tm in chosen)


# ---- longest_gap --------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="'step_num n and n + 1' ('they need not start in step_num order'): pairs the steps in "
    "the order they START (sorted by start_ns) instead of by step_num; a trace whose step 7 "
    "started before step 6 (renumbered / resumed loop, hand-built) pairs the wrong steps and "
    "can name a step whose successor by number is not the one measured",
)
def _rt10_longest_gap_by_start(events, step_name):
    steps = sorted(_rt10_steps(events, step_name), key=lambda s: s.start_ns)
    instrs = [e for e in events if _rt10_is_instr(e)]
    spans = []
    for s in steps:
        inside = [e for e in instrs if _rt10_inside(e, s)]
        if inside:
            spans.append(
                (
                    _rt10_args(s)["step_num"],
                    min(e.start_ns for e in inside),
                    max(e.start_ns + e.duration_ns for e in inside),
                )
            )
    best, best_gap = None, None
    for (n, _, end), (_, start, _) in zip(spans, spans[1:]):
        if best_gap is None or start - end > best_gap:
            best, best_gap = n, start - end
    return best


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="'Outside the step events the trace holds at most one execution: a warm-up': after a "
    "clean loop the learner logs the mean loss, jnp.mean(jnp.stack(losses)), an eager "
    "computation that compiles and runs two more programs after the last step",
)
def _rt10_train_loop_mean_loss_after(step, state, batches, step_name):
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    losses = []
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
        losses.append(loss)
    mean = jnp.mean(jnp.stack(losses))
    jax.block_until_ready(mean)
    return state


@wrong(
    "train_loop",
    why="'each holding exactly one execution of the jitted step ... all of it': the step is "
    "split into a jitted gradient and an eager update (w - 0.1 * gw as separate jnp ops inside "
    "the step), so each step event holds several executions of several modules, not one "
    "run_id of one module",
)
def _rt10_train_loop_eager_update(step, state, batches, step_name):
    def grads(state, batch):
        w, b = state
        x, y = batch
        return jax.value_and_grad(lambda w, b: jnp.mean((x @ w + b - y) ** 2), argnums=(0, 1))(w, b)

    g = jax.jit(grads)
    w, b = state
    v, (gw, gb) = g(state, batches[0])
    jax.block_until_ready(w - 0.1 * gw)
    jax.block_until_ready(b - 0.1 * gb)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            w, b = state
            _, (gw, gb) = g(state, batch)
            state = (w - 0.1 * gw, b - 0.1 * gb)
            jax.block_until_ready(state)
    return state


# ---- more ---------------------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="'started inside the step event' (inside = at or after the step's start, at or before "
    "its end): the compile's start is tested with strict inequalities, so a compile that starts "
    "at the very ns its step starts (a step whose first act is the compile; hand-built traces "
    "at the edges, a coarse clock) is given to no step, e.g. step 0 [0, 100] with "
    "backend_compile_and_load at 0 answers [] instead of [0]",
)
def _rt10_compiled_steps_strict_edges(events, step_name):
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    out = []
    for s in _rt10_steps(events, step_name):
        lo, hi = s.start_ns, s.start_ns + s.duration_ns
        if any(lo < k.start_ns < hi for k in compiles):
            out.append(_rt10_args(s)["step_num"])
    return sorted(out)


_RT10_STRUCTURAL = {"while", "body", "cond", "cond_fun", "body_fun", "remat", "checkpoint"}


@wrong(
    "scope_shares",
    why="'the first part that is not empty then is the scope' (whatever it is): parts that name "
    "control flow (while, body, cond, branch_*) are skipped as 'not a layer', so the scan body "
    "of programs.looped, op_name jit(looped)/while/body/eval_jaxpr/dot_general, is put under "
    "'eval_jaxpr' instead of 'while'",
)
def _rt10_scope_shares_skip_control_flow(events, hlo_text, step_name):
    chosen, _ = _rt10_selected(events, hlo_text, step_name)

    def scope(ins):
        parts = _rt10_opname(ins).split(";")[0].split("/")[1:-1]
        for p in parts:
            while True:
                m = re.fullmatch(r"[\w.\-]+\((.*)\)", p)
                if not m:
                    break
                p = m.group(1)
            if p and p not in _RT10_STRUCTURAL and not p.startswith("branch_"):
                return p
        return ""

    return _rt10_share((scope(ins), t) for ins, t in chosen)
