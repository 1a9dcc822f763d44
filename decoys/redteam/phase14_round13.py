"""Red team, phase 14, round 13: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import defaultdict

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo

# ---- shared helpers (correct unless a knob says otherwise) -------------------------------------

_rt13_VIEWS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
_rt13_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_rt13_OP_NAME = re.compile(r'op_name="([^"]*)"')
_rt13_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _rt13_args(e):
    return dict(e.args)


def _rt13_is_instr(e):
    a = _rt13_args(e)
    return "hlo_op" in a and "hlo_module" in a


def _rt13_steps(events, step_name):
    return [
        e for e in events if e.name == step_name and isinstance(_rt13_args(e).get("step_num"), int)
    ]


def _rt13_inside(e, outer):
    return (
        e.start_ns >= outer.start_ns
        and e.start_ns + e.duration_ns <= outer.start_ns + outer.duration_ns
    )


def _rt13_nesting(instrs, single_pop=False):
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
                if stack and not _rt13_inside(e, stack[-1]):
                    stack.pop()
                parent = stack[-1] if stack and _rt13_inside(e, stack[-1]) else None
            else:
                while stack and not _rt13_inside(e, stack[-1]):
                    stack.pop()
                parent = stack[-1] if stack else None
            out.append((e, parent))
            stack.append(e)
    return out


def _rt13_instrs(hlo_text):
    module = parse_hlo(hlo_text)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def _rt13_self_times(events, hlo_text, step_name, top_only_full=False, all_modules_total=False):
    """[(instruction, self ns)] for the module's instruction events inside the steps, and the
    total the shares divide by."""
    module, info = _rt13_instrs(hlo_text)
    steps = _rt13_steps(events, step_name)
    instrs = [e for e in events if _rt13_is_instr(e)]
    pairs = _rt13_nesting(instrs)
    kids = defaultdict(int)
    for e, parent in pairs:
        if parent is not None:
            kids[id(parent)] += e.duration_ns
    chosen, other_total = [], 0
    for e, parent in pairs:
        if not any(_rt13_inside(e, s) for s in steps):
            continue
        a = _rt13_args(e)
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


def _rt13_share(pairs, extra_total=0):
    total = defaultdict(float)
    for k, v in pairs:
        total[k] += v
    whole = sum(total.values()) + extra_total
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt13_tables(hlo_text):
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


def _rt13_line_label(ins, tables):
    found = _rt13_FRAME.search(ins.attributes_text)
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


def _rt13_work_bounds(events, step_name):
    """step_num -> (first start, last end) of the instruction events inside it."""
    steps = _rt13_steps(events, step_name)
    instrs = [e for e in events if _rt13_is_instr(e)]
    out = {}
    for s in steps:
        inside = [e for e in instrs if _rt13_inside(e, s)]
        if inside:
            out[_rt13_args(s)["step_num"]] = (
                min(e.start_ns for e in inside),
                max(e.start_ns + e.duration_ns for e in inside),
            )
    return out


def _rt13_gaps(events, step_name):
    bounds = _rt13_work_bounds(events, step_name)
    gaps = {}
    for n in sorted(bounds):
        if n + 1 in bounds:
            gaps[n] = bounds[n + 1][0] - bounds[n][1]
    return gaps


def _rt13_counts(hlo_text, *, is_view=None):
    """Correct walk (ENTRY, while bodies times known_trip_count) unless is_view is replaced."""
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    counts = defaultdict(int)
    view = is_view or (lambda ins: ins.opcode in _rt13_VIEWS)

    def called(ins, key):
        m = re.search(key + r"=%?([\w.\-]+)", ins.attributes_text)
        return comps.get(m.group(1)) if m else None

    def walk(comp, mult):
        for ins in comp.instructions:
            if view(ins):
                continue
            counts[ins.name] += mult
            if ins.opcode == "while":
                found = _rt13_TRIP.search(ins.attributes_text)
                body = called(ins, "body")
                if body is not None:
                    walk(body, mult * (int(found.group(1)) if found else 1))

    walk(module.entry, 1)
    return dict(counts)


def _rt13_kind(ins):
    return ins.attribute("kind") if ins.opcode == "fusion" else ins.opcode


# ---- step_instructions --------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="Clause 'an instruction event is an event with an hlo_op arg AND an hlo_module arg': "
    "takes every event carrying hlo_op as an instruction (never checks hlo_module), so a "
    "runtime/profiler event that carries an hlo_op arg but no hlo_module inside a step is listed "
    "(and can swallow real instructions as 'nested' in it).",
)
def _rt13_step_instructions_hlo_op_only(events, step_name):
    steps = _rt13_steps(events, step_name)
    instrs = [e for e in events if "hlo_op" in _rt13_args(e)]
    pairs = _rt13_nesting(instrs)
    out = {}
    for s in steps:
        top = [e for e, parent in pairs if parent is None and _rt13_inside(e, s)]
        top.sort(key=lambda e: e.start_ns)
        out[_rt13_args(s)["step_num"]] = [_rt13_args(e)["hlo_op"] for e in top]
    return out


# ---- expected_counts ----------------------------------------------------------------------------

_rt13_MOVES = {"broadcast", "reshape", "transpose", "slice", "bitcast", "parameter", "copy"}


@wrong(
    "expected_counts",
    why="Clause 'decide which instructions become work at run time' + README 'a fusion is one "
    "kernel: one event': drops a fusion whose fused computation only moves data (parameters plus "
    "broadcast/reshape/transpose/slice/copy), reading it as a view. looped's ENTRY "
    "`wrapped_broadcast` (kLoop) leaves one event per call but is missing from the answer.",
)
def _rt13_expected_counts_data_movement_fusions_free(hlo_text):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}

    def is_view(ins):
        if ins.opcode in _rt13_VIEWS:
            return True
        if ins.opcode == "fusion":
            m = re.search(r"calls=%?([\w.\-]+)", ins.attributes_text)
            fused = comps.get(m.group(1)) if m else None
            if fused is not None and all(i.opcode in _rt13_MOVES for i in fused.instructions):
                return True
        return False

    return _rt13_counts(hlo_text, is_view=is_view)


# ---- kind_shares --------------------------------------------------------------------------------


@wrong(
    "kind_shares",
    why="Clause 'the label is the fusion kind when it is a fusion and its OPCODE otherwise': "
    "labels a `call` by what it wraps (the opcode of its to_apply computation's ROOT: 'while' for "
    "the xla_cpu_small_call of looped), so looped's `call` time lands under 'while' and the "
    "'call' label that ran is missing.",
)
def _rt13_kind_shares_call_as_callee(events, hlo_text, step_name):
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}

    def label(ins):
        if ins.opcode == "call":
            m = re.search(r"to_apply=%?([\w.\-]+)", ins.attributes_text)
            callee = comps.get(m.group(1)) if m else None
            if callee is not None and callee.instructions:
                root = [i for i in callee.instructions if getattr(i, "is_root", False)]
                return (root or callee.instructions)[-1].opcode
        return _rt13_kind(ins)

    chosen, other = _rt13_self_times(events, hlo_text, step_name)
    return _rt13_share([(label(i), t) for i, t in chosen])


# ---- scope_shares -------------------------------------------------------------------------------


def _rt13_scope_first_close(op_name):
    op_name = op_name.split(";", 1)[0]
    parts = op_name.split("/")
    for part in parts[1:-1]:
        while "(" in part:
            part = part[part.find("(") + 1 : part.find(")")]
        if part:
            return part
    return ""


@wrong(
    "scope_shares",
    why="Clause 'unwrap every part written word(inner) to its innermost content': peels with "
    "part[find('(')+1 : find(')')], pairing the first '(' with the FIRST ')', so "
    "`transpose(jvp(layer_1))` -> 'jvp(layer_1' -> 'layer_' : the backward pass of layer_1 in "
    "layered is counted for a scope 'layer_' instead of 'layer_1' (forward `jvp(layer_1)` is right).",
)
def _rt13_scope_shares_first_close_paren(events, hlo_text, step_name):
    chosen, _ = _rt13_self_times(events, hlo_text, step_name)
    pairs = []
    for ins, t in chosen:
        m = _rt13_OP_NAME.search(ins.attributes_text)
        pairs.append((_rt13_scope_first_close(m.group(1)) if m else "", t))
    return _rt13_share(pairs)


# ---- longest_gap --------------------------------------------------------------------------------


@wrong(
    "longest_gap",
    why="Clause 'the gap runs from the end of the last instruction event inside step n to the "
    "start of the first instruction event inside step n + 1': ends the gap at the START OF STEP "
    "EVENT n+1, so host work done inside step n+1 before dispatch (data loading, float(loss) of "
    "the previous step placed after the with opens) is not counted: with steps 0,1,2 where step 2 "
    "loads data for 30 ms before dispatching, it answers by the between-step Python instead of 1.",
)
def _rt13_longest_gap_to_step_open(events, step_name):
    bounds = _rt13_work_bounds(events, step_name)
    opens = {_rt13_args(s)["step_num"]: s.start_ns for s in _rt13_steps(events, step_name)}
    gaps = {n: opens[n + 1] - bounds[n][1] for n in bounds if n + 1 in opens and n + 1 in bounds}
    return max(gaps, key=gaps.get)


@wrong(
    "longest_gap",
    why="Clause 'return the n with the longest gap' (absolute time from last end of n to first "
    "start of n+1): divides each gap by step n's device work span (a 'relative stall'), so a "
    "1 ms gap after a 0.1 ms step beats a 5 ms gap after a 10 ms step: answers the short step.",
)
def _rt13_longest_gap_relative_to_work(events, step_name):
    bounds = _rt13_work_bounds(events, step_name)
    gaps = _rt13_gaps(events, step_name)
    rel = {n: g / max(1, bounds[n][1] - bounds[n][0]) for n, g in gaps.items()}
    return max(rel, key=rel.get)


# ---- compiled_steps -----------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="Clause 'a backend compile STARTED inside the step event': attributes each compile to "
    "the step event whose start is closest to the compile's start (before or after), not the "
    "step containing it: a warm profile whose one compile runs BEFORE step 0 (the warm-up of "
    "train_loop's contract) answers [0] instead of []; a compile late in a long step 0 goes to 1.",
)
def _rt13_compiled_steps_nearest_step(events, step_name):
    steps = _rt13_steps(events, step_name)
    found = set()
    for e in events:
        if e.name.startswith("backend_compile") and steps:
            s = min(steps, key=lambda s: abs(s.start_ns - e.start_ns))
            found.add(_rt13_args(s)["step_num"])
    return sorted(found)


# ---- train_loop ---------------------------------------------------------------------------------


@wrong(
    "train_loop",
    why="Clause 'outside the step events the trace holds at most one execution: a warm-up call "
    "before step 0': jits with donate_argnums=0 and, so as not to lose the caller's state to "
    "donation, warms up on jax.tree.map(jnp.copy, state): each jnp.copy is its own executed "
    "program (jit_copy), so the trace holds 1 + len(leaves) executions outside the steps.",
)
def _rt13_train_loop_donated_copy_warmup(step, state, batches, step_name):
    import jax.numpy as jnp

    jitted = jax.jit(step, donate_argnums=0)
    warm_state = jax.tree.map(jnp.copy, state)
    jax.block_until_ready(jitted(warm_state, batches[0]))
    state = jax.tree.map(jnp.copy, state)
    jax.block_until_ready(state)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


# ---- line_shares --------------------------------------------------------------------------------


@wrong(
    "line_shares",
    why="Clause 'No stack frame: \"\"': an instruction of a nested computation without a "
    "stack_frame_id inherits the line of the while/call that runs it (walks up the caller "
    "chain), so looped's body copies (copy.4, copy.5 in the while body, no metadata) count for "
    'the while\'s programs.py:52 instead of "".',
)
def _rt13_line_shares_inherit_caller_line(events, hlo_text, step_name):
    module, info = _rt13_instrs(hlo_text)
    tables = _rt13_tables(hlo_text)
    owner = {}
    for c in module.computations:
        for i in c.instructions:
            for key in ("body", "condition", "to_apply", "calls"):
                m = re.search(key + r"=%?([\w.\-]+)", i.attributes_text)
                if m:
                    owner.setdefault(m.group(1), i)
    comp_of = {i.name: c.name for c in module.computations for i in c.instructions}

    def label(ins):
        seen = 0
        while ins is not None and seen < 50:
            found = _rt13_line_label(ins, tables)
            if found:
                return found
            ins = owner.get(comp_of.get(ins.name))
            seen += 1
        return ""

    chosen, _ = _rt13_self_times(events, hlo_text, step_name)
    return _rt13_share([(label(i), t) for i, t in chosen])
