"""Red team, phase 14, round 11: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import defaultdict

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.profile_query import COMPILE_EVENTS

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------

_rt11_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_rt11_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_rt11_OP_NAME = re.compile(r'op_name="([^"]*)"')
_rt11_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _rt11_args(e):
    return dict(e.args)


def _rt11_is_instr(e):
    a = _rt11_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt11_steps(events, step_name):
    return [
        e for e in events if e.name == step_name and isinstance(_rt11_args(e).get("step_num"), int)
    ]


def _rt11_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt11_nesting(instrs, single_pop=False):
    """Per thread, a stack of open instruction events; returns [(event, parent-or-None)]."""
    out = []
    by_thread = defaultdict(list)
    for e in instrs:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        stack = []
        for e in evs:
            if single_pop:
                if stack and not _rt11_inside(e, stack[-1]):
                    stack.pop()
                parent = stack[-1] if stack and _rt11_inside(e, stack[-1]) else None
            else:
                while stack and not _rt11_inside(e, stack[-1]):
                    stack.pop()
                parent = stack[-1] if stack else None
            out.append((e, parent))
            stack.append(e)
    return out


def _rt11_instrs(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _rt11_self_times(events, hlo_text, step_name, top_only_full=False, all_modules_total=False):
    """[(instruction, self ns)] for the module's instruction events inside the steps, and the
    total the shares divide by."""
    module, info = _rt11_instrs(hlo_text)
    steps = _rt11_steps(events, step_name)
    instrs = [e for e in events if _rt11_is_instr(e)]
    pairs = _rt11_nesting(instrs)
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen, other_total = [], 0
    for e, parent in pairs:
        if not any(_rt11_inside(e, s) for s in steps):
            continue
        a = _rt11_args(e)
        self_ns = e.duration_ns - kids[id(e)]
        if a["hlo_module"] != module.name or a["hlo_op"] not in info:
            other_total += self_ns
            continue
        if top_only_full:
            if parent is not None:
                continue
            self_ns = e.duration_ns
        chosen.append((info[a["hlo_op"]], self_ns))
    return chosen, other_total


def _rt11_share(pairs, extra_total=0):
    total = defaultdict(float)
    for k, v in pairs:
        total[k] += v
    whole = sum(total.values()) + extra_total
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt11_tables(hlo_text):
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


def _rt11_line_label(ins, tables):
    found = _rt11_FRAME.search(ins.attributes_text)
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


def _rt11_work_bounds(events, step_name):
    """step_num -> (first start, last end) of the instruction events inside it."""
    steps = _rt11_steps(events, step_name)
    instrs = [e for e in events if _rt11_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instrs if _rt11_inside(e, s)]
        if inside:
            out[_rt11_args(s)["step_num"]] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return out


def _rt11_gaps(events, step_name):
    bounds = _rt11_work_bounds(events, step_name)
    gaps = {}
    for n in sorted(bounds):
        if n + 1 in bounds:
            gaps[n] = bounds[n + 1][0] - bounds[n][1]
    return gaps


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="'not nested in another instruction event' (a stack of open events, any depth): the stack "
    "of open events is popped ONCE per new event ('if' where a 'while' is needed), so after a "
    "loop nested two deep closes, the next event of the outer body is compared with the closed "
    "inner while only and listed as top-level; right on looped (one level), wrong on "
    "programs.nested: the outer scan body's broadcast_multiply_fusion (and wrapped_add) after the "
    "inner while.5 appear in the step's list, 3 times each",
)
def _rt11_step_instructions_single_pop(events, step_name):
    instrs = [e for e in events if _rt11_is_instr(e)]
    top = [e for e, parent in _rt11_nesting(instrs, single_pop=True) if parent is None]
    top.sort(key=lambda e: e.start_ns)
    out = {}
    for s in _rt11_steps(events, step_name):
        out[_rt11_args(s)["step_num"]] = [
            _rt11_args(e)["hlo_op"] for e in top if _rt11_inside(e, s)
        ]
    return out


# ---- expected_counts ----------------------------------------------------------------------------


def _rt11_counts(hlo_text, *, into_fusions=False, small_call_silent=False):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = defaultdict(int)

    def called(ins, key):
        m = re.search(key + r"=%?([\w.\-]+)", ins.attributes_text)
        return comps.get(m.group(1)) if m else None

    def walk(comp, mult):
        for ins in comp.instructions:
            if ins.opcode in _rt11_VIEWS:
                continue
            if ins.opcode == "call" and small_call_silent:
                continue
            counts[ins.name] += mult
            if ins.opcode == "while":
                found = _rt11_TRIP.search(ins.attributes_text)
                body = called(ins, "body")
                if body is not None:
                    walk(body, mult * (int(found.group(1)) if found else 1))
            elif ins.opcode == "fusion" and into_fusions:
                fused = called(ins, "calls")
                if fused is not None:
                    walk(fused, mult)

    walk(module.entry, 1)
    return dict(counts)


@wrong(
    "expected_counts",
    why="'A fusion is one kernel: one event, and its fused computation's instructions none': the "
    "learner walks each fusion's calls= computation like a while body and counts its working "
    "instructions (broadcast, multiply, tanh, dot...) once per run of the fusion; wrong on every "
    "module with a fusion, e.g. programs.looped: dot_general.0 of the scan body's ynn_fusion "
    "predicted 4 times, it leaves no event",
)
def _rt11_expected_counts_into_fusions(hlo_text):
    return _rt11_counts(hlo_text, into_fusions=True)


@wrong(
    "expected_counts",
    why="'A call marked xla_cpu_small_call is compiled as one kernel: ONE EVENT, nothing inside': "
    "the learner reads 'nothing inside' as 'a call is only a wrapper' and leaves the call out "
    "with its computation; wrong on programs.looped (its fori_loop is wrapped in such a call: "
    "the call leaves 1 event per call, predicted 0) and branchy",
)
def _rt11_expected_counts_small_call_silent(hlo_text):
    return _rt11_counts(hlo_text, small_call_silent=True)


# ---- compiled_steps -----------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="'a backend compile started inside the step event': the learner takes the toolkit's "
    "COMPILE_EVENTS (backend_compile_and_load AND FusionCompiler::Compile) as compile marks, so "
    "a kernel compile on a codegen thread that starts after its backend compile's step closed "
    "(README: a compile on a worker thread that outlasts its step) puts the NEXT step in the "
    "list too: backend compile started in step 2, its last FusionCompiler::Compile in step 3 -> "
    "[2, 3] instead of [2]",
)
def _rt11_compiled_steps_toolkit_events(events, step_name):
    steps = _rt11_steps(events, step_name)
    marks = [e for e in events if e.name in COMPILE_EVENTS]
    out = set()
    for s in steps:
        end = s.start_ns + s.duration_ns
        if any(s.start_ns <= c.start_ns <= end for c in marks):
            out.add(_rt11_args(s)["step_num"])
    return sorted(out)


# ---- kind_shares --------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="'the shares add up to 1' over the module's instruction events: the numerators are the "
    "module's self times but the denominator is the self time of EVERY instruction event inside "
    "the steps, other modules too ('the total' read as the steps' device time); wrong on a step "
    "that also runs another jitted program (an eager jnp update, an eval): the shares add up to "
    "less than 1, e.g. 0.6 when the other module takes 40% of the device time",
)
def _rt11_kind_shares_all_modules_total(events, hlo_text, step_name):
    chosen, other = _rt11_self_times(events, hlo_text, step_name)
    pairs = [
        (ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode, t) for ins, t in chosen
    ]
    return _rt11_share(pairs, extra_total=other)


# ---- scope_shares -------------------------------------------------------------------------------

_rt11_WRAP_NONEMPTY = re.compile(r"^\w+\((.+)\)$")


def _rt11_scope_nonempty(op_name):
    for part in op_name.split(";")[0].split("/")[1:-1]:
        while found := _rt11_WRAP_NONEMPTY.match(part):
            part = found.group(1)
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="'unwrap every remaining part written word(inner) to its innermost content; the first "
    "part that is not empty then is the scope': the unwrapping regex ^\\w+\\((.+)\\)$ needs a "
    "non-empty inner, so an empty wrapper jvp() or transpose(jvp()) is never unwrapped and is "
    "itself taken as the scope; wrong on programs.mlp_grad and layered: the unscoped loss "
    "(jit(layered)/jvp()/mul) counts for 'jvp()' instead of '', relu's max for 'jvp()' not 'relu'",
)
def _rt11_scope_shares_nonempty_wrapper(events, hlo_text, step_name):
    chosen, _ = _rt11_self_times(events, hlo_text, step_name)
    pairs = []
    for ins, t in chosen:
        found = _rt11_OP_NAME.search(ins.attributes_text)
        pairs.append((_rt11_scope_nonempty(found.group(1)) if found else "", t))
    return _rt11_share(pairs)


# ---- line_shares --------------------------------------------------------------------------------


@wrong(
    "line_shares",
    why="'grouped by the source line of EACH instruction' with self time: only top-level "
    "instruction events are joined, each with its whole duration, so a loop's body time is "
    "given to the line the loop is written on ('the loop owns its body'); wrong on "
    "programs.looped: the scan body's matmul on programs.py:50 gets 0 and its time goes to the "
    "while's line",
)
def _rt11_line_shares_loop_owns_body(events, hlo_text, step_name):
    tables = _rt11_tables(hlo_text)
    chosen, _ = _rt11_self_times(events, hlo_text, step_name, top_only_full=True)
    return _rt11_share([(_rt11_line_label(ins, tables), t) for ins, t in chosen])


# ---- longest_gap --------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="'For each pair of consecutive step events': the pair after the first step is skipped as "
    "warm-up noise (the learner 'knows' step 0 is slow); wrong on a loop whose host sleeps or "
    "loads data after its first step (steps 0..3, a 50 ms sleep after step 0: answers 1 or 2, "
    "not 0), and on any two-step trace (no pair left: answers the first step_num by default)",
)
def _rt11_longest_gap_skip_first_pair(events, step_name):
    gaps = _rt11_gaps(events, step_name)
    keys = sorted(gaps)
    rest = keys[1:] or keys
    return max(rest, key=lambda n: gaps[n])


@wrong(
    "longest_gap",
    why="'For each pair of consecutive step events (n and n + 1)': the pairs are built with "
    "range(first, last - 1) (an off-by-one at the top edge), so the gap before the LAST step is "
    "never measured; wrong on a loop that waits longest before its final step (steps 0..4, a "
    "sleep after step 3: answers another step, not 3) and on a two-step trace",
)
def _rt11_longest_gap_last_pair_dropped(events, step_name):
    bounds = _rt11_work_bounds(events, step_name)
    nums = sorted(bounds)
    first, last = nums[0], nums[-1]
    best, best_gap = first, None
    for n in range(first, last - 1):
        if n in bounds and n + 1 in bounds:
            gap = bounds[n + 1][0] - bounds[n][1]
            if best_gap is None or gap > best_gap:
                best, best_gap = n, gap
    return best


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="'one step event named step_name with step_num i (jax.profiler.StepTraceAnnotation)': "
    "the learner passes the step number under the keyword step= (StepTraceAnnotation takes any "
    "keyword and records it), so the events are named step_name but carry no step_num arg: no "
    "step event at all in the trace; wrong on any batches",
)
def _rt11_train_loop_step_keyword(step, state, batches, step_name):
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="'no backend compile: the one compile happens before step 0': the warm-up runs on ONE "
    "example of the first batch (x[:1], y[:1], 'cheap to compile') so it compiles for batch "
    "size 1; the real batches have another shape, so jax.jit compiles again inside step 0 "
    "(backend_compile_and_load in step 0); wrong on any batches of more than one example",
)
def _rt11_train_loop_one_example_warmup(step, state, batches, step_name):
    jitted = jax.jit(step)
    tiny = jax.tree.map(lambda a: np.asarray(a)[:1], batches[0])
    jax.block_until_ready(jitted(state, tiny))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="'each holding exactly one execution of the jitted step ..., ALL of it': the learner "
    "dispatches the step first and opens the step event only around the wait (annotating 'the "
    "time the step takes'); with asynchronous dispatch the execution starts before the step "
    "event opens, so its first instruction events lie outside every step (and count as a "
    "second execution outside the steps besides the warm-up); wrong on sgd_step with any batches",
)
def _rt11_train_loop_annotate_the_wait(step, state, batches, step_name):
    jitted = jax.jit(step)
    jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        state, loss = jitted(state, batch)
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            jax.block_until_ready((state, loss))
    return state
