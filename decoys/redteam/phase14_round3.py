"""Red-team wrong answers for phase 14, written from the contract only.

Round 3: every answer here agrees with a correct one on the recorded profiles of `recorded/`
wherever that was possible, and goes wrong on a valid input the recordings lack (another
thread, a second module, events exactly touching, a nested jit scope, a multi-line call, a
step that ran nothing, a while nested two deep, a trace with a warm-up outside the steps...).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import jax

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.profile import TraceEvent

# ---- shared helpers (correct unless a decoy passes a wrong switch) ------------------------------

_rt3_NO_EVENT = frozenset({"parameter", "constant", "bitcast", "get-tuple-element", "tuple"})


def _rt3_steps(events, step_name, need_num=True):
    found = [
        e for e in events if e.name == step_name and (e.arg("step_num") is not None or not need_num)
    ]
    return sorted(found, key=lambda e: e.start_ns)


def _rt3_inside(e, s):
    return s.start_ns <= e.start_ns and e.end_ns <= s.end_ns


def _rt3_instr(events):
    return [e for e in events if e.hlo_op is not None and e.arg("hlo_module") is not None]


def _rt3_nest(events, per_thread=True, tie_longest_first=True, all_levels=False):
    """[(event, depth, nested_time)] for instruction events."""
    groups: dict[str, list[TraceEvent]] = defaultdict(list)
    for e in _rt3_instr(events):
        groups[e.thread if per_thread else ""].append(e)
    out = []
    for evs in groups.values():
        if tie_longest_first:
            evs.sort(key=lambda e: (e.start_ns, -e.duration_ns))
        else:
            evs.sort(key=lambda e: e.start_ns)
        stack: list[list[Any]] = []
        for e in evs:
            while stack and stack[-1][0].end_ns <= e.start_ns:
                stack.pop()
            if stack:
                if all_levels:
                    for entry in stack:
                        entry[2] += e.duration_ns
                else:
                    stack[-1][2] += e.duration_ns
            entry = [e, len(stack), 0]
            out.append(entry)
            stack.append(entry)
    return out


def _rt3_top_level(events, **kw):
    return [e for e, depth, _ in _rt3_nest(events, **kw) if depth == 0]


def _rt3_self_times(events, steps_, module, names, **kw):
    res = []
    for e, _depth, nested in _rt3_nest(events, **kw):
        if e.arg("hlo_module") != module or e.hlo_op not in names:
            continue
        if steps_ is not None and not any(_rt3_inside(e, s) for s in steps_):
            continue
        res.append((e.hlo_op, max(0, e.duration_ns - nested)))
    return res


def _rt3_shares(pairs, label):
    total: dict[str, int] = defaultdict(int)
    for name, ns in pairs:
        total[label(name)] += ns
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def _rt3_module_info(hlo_text):
    module = parse_hlo(hlo_text)
    info = {}
    for comp in module.computations:
        for ins in comp.instructions:
            info[ins.name] = (comp, ins)
    return module, info


def _rt3_op_name(ins):
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', ins.attributes_text)
    return m.group(1) if m else ""


_rt3_WRAP = re.compile(r"^([\w-]+)\((.*)\)$")


def _rt3_scope(op_name, unwrap=True, skip_jit=False, first=True, split_semicolon=True):
    if split_semicolon:
        op_name = op_name.split(";")[0]
    parts = op_name.split("/")[1:-1]
    found = []
    for part in parts:
        if skip_jit and part.startswith("jit("):
            continue
        if unwrap:
            while m := _rt3_WRAP.match(part):
                part = m.group(2)
        if part:
            found.append(part)
            if first:
                break
    if not found:
        return ""
    return found[0] if first else found[-1]


def _rt3_tables(hlo_text):
    head = hlo_text.split("\n%", 1)[0]
    tables: dict[str, dict[int, str]] = {}
    cur = None
    for line in head.splitlines():
        s = line.strip()
        if s in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            cur = tables.setdefault(s, {})
        elif cur is not None and (m := re.match(r"^\s*(\d+)\s+(.*?)\s*$", line)):
            cur[int(m.group(1))] = m.group(2)
        elif s:
            cur = None
    return tables


def _rt3_frames(hlo_text, line_key="line", keep_dirs=False, location_by_frame=False):
    t = _rt3_tables(hlo_text)
    files = {}
    for k, v in t.get("FileNames", {}).items():
        v = v.strip('"')
        files[k] = v if keep_dirs else v.rsplit("/", 1)[-1]
    locs = {}
    for k, row in t.get("FileLocations", {}).items():
        f = dict((a, int(b)) for a, b in re.findall(r"(\w+)=(\d+)", row))
        if line_key == "last-line=":
            line = int(re.findall(r"line=(\d+)", row)[-1])
        else:
            line = f.get(line_key, f.get("line"))
        if "file_name_id" in f and line is not None:
            locs[k] = f"{files.get(f['file_name_id'], '?')}:{line}"
    frames = {}
    for k, row in t.get("StackFrames", {}).items():
        f = dict((a, int(b)) for a, b in re.findall(r"(\w+)=(\d+)", row))
        loc = locs.get(k if location_by_frame else f.get("file_location_id", 0))
        if loc:
            frames[k] = loc
    return frames


def _rt3_source(ins, frames):
    m = re.search(r"stack_frame_id=(\d+)", ins.attributes_text)
    return frames.get(int(m.group(1)), "") if m else ""


# ---- 1. step_instructions ------------------------------------------------------------------------


@wrong(
    "step_instructions",
    why="nesting is decided across all threads, not per thread (an event is nested only in "
    "one of the same thread); wrong on a step whose instructions run on two execute threads, "
    "e.g. a top-level instruction on execute:1 that runs while a while event is open on execute",
)
def _rt3_step_instructions_cross_thread_nesting(events, step_name):
    top = _rt3_top_level(events, per_thread=False)
    out = {}
    for s in _rt3_steps(events, step_name):
        out[int(s.arg("step_num"))] = [
            e.hlo_op for e in sorted(top, key=lambda e: e.start_ns) if _rt3_inside(e, s)
        ]
    return out


@wrong(
    "step_instructions",
    why="sorts by start only, so a body event starting at the very ns its while starts (ties "
    "are common at the profiler's clock resolution) is taken as the parent and the while is "
    "dropped as nested; wrong on a step whose while and its first body event share start_ns "
    "when the events come body-first (events come in any order: e.g. reversed)",
)
def _rt3_step_instructions_start_tie(events, step_name):
    top = _rt3_top_level(events, tie_longest_first=False)
    out = {}
    for s in _rt3_steps(events, step_name):
        out[int(s.arg("step_num"))] = [
            e.hlo_op for e in sorted(top, key=lambda e: e.start_ns) if _rt3_inside(e, s)
        ]
    return out


@wrong(
    "step_instructions",
    why="keeps only the events of the module that ran most in the trace (the 'main' program), "
    "but every instruction event inside the step counts; wrong on a step that runs two jitted "
    "programs (a train step plus an eager jnp op, or a metrics jit) inside one step event",
)
def _rt3_step_instructions_main_module_only(events, step_name):
    counts: dict[Any, int] = defaultdict(int)
    for e in _rt3_instr(events):
        counts[e.arg("hlo_module")] += 1
    main = max(counts, key=counts.get) if counts else None
    top = [e for e in _rt3_top_level(events) if e.arg("hlo_module") == main]
    out = {}
    for s in _rt3_steps(events, step_name):
        out[int(s.arg("step_num"))] = [
            e.hlo_op for e in sorted(top, key=lambda e: e.start_ns) if _rt3_inside(e, s)
        ]
    return out


@wrong(
    "step_instructions",
    why="an instruction is put in a step when it STARTS inside it, but inside means it also "
    "ends at or before the step's end; wrong on a trace whose loop did not block, where a "
    "step's last kernel starts before the step event closes and ends after it",
)
def _rt3_step_instructions_start_only(events, step_name):
    top = _rt3_top_level(events)
    out = {}
    for s in _rt3_steps(events, step_name):
        out[int(s.arg("step_num"))] = [
            e.hlo_op
            for e in sorted(top, key=lambda e: e.start_ns)
            if s.start_ns <= e.start_ns <= s.end_ns
        ]
    return out


# ---- 2. expected_counts (predict) ----------------------------------------------------------------


def _rt3_trip(ins):
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins.attributes_text)
    return int(m.group(1)) if m else 1


def _rt3_called(module, ins, key):
    name = ins.attribute(key)
    if not name:
        return None
    name = str(name).lstrip("%")
    for c in module.computations:
        if c.name == name:
            return c
    return None


def _rt3_counts(
    hlo_text,
    nested_mult=True,
    small_call_transparent=False,
    count_condition=False,
    count_root=True,
    trip_from_condition=False,
):
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = defaultdict(int)

    def bound(ins):
        cond = _rt3_called(module, ins, "condition")
        found = []
        for c in cond.instructions if cond is not None else ():
            if c.opcode == "constant" and c.shape and str(c.shape).startswith("s32"):
                m = re.search(r"constant\((-?\d+)\)", c.payload or "") or re.search(
                    r"^(-?\d+)$", str(c.payload or "")
                )
                if m:
                    found.append(int(m.group(1)))
        return max(found) if found else _rt3_trip(ins)

    def walk(comp, mult, depth):
        for ins in comp.instructions:
            if ins.opcode in _rt3_NO_EVENT:
                continue
            if not count_root and ins.is_root and comp.is_entry:
                continue
            counts[ins.name] += mult
            if ins.opcode == "while":
                trip = bound(ins) if trip_from_condition else _rt3_trip(ins)
                body = _rt3_called(module, ins, "body")
                inner = mult * trip if (nested_mult or depth == 0) else trip
                if body is not None:
                    walk(body, inner, depth + 1)
                if count_condition:
                    cond = _rt3_called(module, ins, "condition")
                    if cond is not None:
                        walk(cond, inner + (1 if depth == 0 else 0), depth + 1)
            elif ins.opcode == "call":
                small = 'xla_cpu_small_call="true"' in ins.attributes_text
                if small_call_transparent or not small:
                    callee = _rt3_called(module, ins, "to_apply")
                    if callee is not None:
                        walk(callee, mult, depth + 1)

    walk(module.entry, 1, 0)
    return dict(counts)


@wrong(
    "expected_counts",
    why="a while two levels deep runs (outer trips x inner trips) times, but the inner body is "
    "counted with the inner trip count alone; wrong on a drawn program with a 'nested' stage "
    "(a scan of t trips holding a fori_loop of t + 1): the inner body's fusions get t+1, not t*(t+1)",
)
def _rt3_expected_counts_inner_trips_not_multiplied(hlo_text):
    return _rt3_counts(hlo_text, nested_mult=False)


@wrong(
    "expected_counts",
    why="the condition computation's working instruction (wrapped_compare) is counted "
    "trips + 1 times, as the loop semantics say, but with a known_trip_count the condition "
    "leaves no event; wrong on every module with a while (looped, any drawn scan/fori)",
)
def _rt3_expected_counts_condition_runs(hlo_text):
    return _rt3_counts(hlo_text, count_condition=True)


@wrong(
    "expected_counts",
    why="reads a while's trip count from the bound its condition compares with (the integer "
    "constant of the condition computation) instead of known_trip_count; the same for a loop "
    "from 0 by 1 (every scan and fori_loop, which XLA canonicalizes), wrong for a while stepping "
    "by 2: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 2, ...)) prints "
    "known_trip_count 5, known_init_step step 2 and a condition constant 10 (body counted 10x)",
)
def _rt3_expected_counts_trip_from_condition(hlo_text):
    return _rt3_counts(hlo_text, trip_from_condition=True)


@wrong(
    "expected_counts",
    why="the ROOT of ENTRY is taken as the output tuple and left out, but a module whose ROOT "
    "is work (rooted: the last matmul; a drawn program with one array out ending in a matmul or "
    "elementwise stage) runs it once; wrong on rooted and on such drawn programs",
)
def _rt3_expected_counts_root_is_view(hlo_text):
    return _rt3_counts(hlo_text, count_root=False)


# ---- 3. compiled_steps ---------------------------------------------------------------------------


@wrong(
    "compiled_steps",
    why="takes FusionCompiler::Compile (one per generated kernel, on the codegen threads) as "
    "the mark of a compile; a compile that generates no new kernel (a module of kCustom/"
    "library calls only, or kernels served from XLA's kernel cache) has backend_compile_and_load "
    "and no FusionCompiler event; wrong on a cold step of a program that is one matmul",
)
def _rt3_compiled_steps_fusion_compiler_only(events, step_name):
    marks = [e for e in events if e.name == "FusionCompiler::Compile"]
    out = set()
    for s in _rt3_steps(events, step_name):
        if any(s.start_ns <= c.start_ns <= s.end_ns for c in marks):
            out.add(int(s.arg("step_num")))
    return sorted(out)


@wrong(
    "compiled_steps",
    why="a compile is put in the step it ENDS in (end inside the step), but the contract says "
    "started inside; wrong on a trace where a compile started in step n runs past the step's "
    "close (a compile triggered asynchronously or a step event closed early) and in a trace where "
    "a compile begun before step 0 ends inside it",
)
def _rt3_compiled_steps_by_end(events, step_name):
    marks = [e for e in events if e.name == "backend_compile_and_load"]
    out = set()
    for s in _rt3_steps(events, step_name):
        if any(s.start_ns <= c.end_ns <= s.end_ns for c in marks):
            out.add(int(s.arg("step_num")))
    return sorted(out)


@wrong(
    "compiled_steps",
    why="matches any event whose name contains 'compile' (case-insensitive), which also "
    "matches a step name or a PjitFunction(<fn>) of a function whose name holds 'compile' "
    "(names are labels); wrong on steps named e.g. 'precompile_step' or on a loop that calls a "
    "jitted 'compiled_loss' every step: every step is listed",
)
def _rt3_compiled_steps_substring(events, step_name):
    marks = [e for e in events if "compile" in e.name.lower() and e.name != step_name]
    marks += [e for e in events if e.name == step_name and "compile" in step_name.lower()]
    out = set()
    for s in _rt3_steps(events, step_name):
        if any(s.start_ns <= c.start_ns < s.end_ns for c in marks):
            out.add(int(s.arg("step_num")))
    return sorted(out)


@wrong(
    "compiled_steps",
    why="lists a step only when a compile lies wholly inside it and its instructions run "
    "after it (the 'cold step' pattern); a step that compiled a program and then ran nothing "
    "(an AOT lower().compile() inside the step, or a compile whose run landed in the next step) "
    "is left out; wrong on a step holding backend_compile_and_load but no instruction event",
)
def _rt3_compiled_steps_needs_execution(events, step_name):
    marks = [e for e in events if e.name == "backend_compile_and_load"]
    ins = _rt3_instr(events)
    out = set()
    for s in _rt3_steps(events, step_name):
        compiled = any(s.start_ns <= c.start_ns < s.end_ns for c in marks)
        ran = any(_rt3_inside(e, s) for e in ins)
        if compiled and ran:
            out.add(int(s.arg("step_num")))
    return sorted(out)


# ---- 4. kind_shares ------------------------------------------------------------------------------


def _rt3_kind_label(info):
    def label(name):
        _comp, ins = info[name]
        return str(ins.attribute("kind")) if ins.opcode == "fusion" else ins.opcode

    return label


@wrong(
    "kind_shares",
    why="self time subtracts every descendant, not only the events nested one level down, so a "
    "while inside a while loses its inner body's time twice (clamped at 0); wrong on nested "
    "(a scan holding a fori_loop) and on drawn programs with a nested stage",
)
def _rt3_kind_shares_all_descendants(events, hlo_text, step_name):
    module, info = _rt3_module_info(hlo_text)
    pairs = _rt3_self_times(
        events, _rt3_steps(events, step_name), module.name, info, all_levels=True
    )
    return _rt3_shares(pairs, _rt3_kind_label(info))


@wrong(
    "kind_shares",
    why="counts every instruction event of the module, in or out of the step events; a warm-up "
    "run before step 0 or a run between steps is outside every step and must not count; wrong "
    "on a trace of train_loop (warm-up outside the steps) or of a loop with an eval call between steps",
)
def _rt3_kind_shares_ignores_steps(events, hlo_text, step_name):
    module, info = _rt3_module_info(hlo_text)
    pairs = _rt3_self_times(events, None, module.name, info)
    return _rt3_shares(pairs, _rt3_kind_label(info))


@wrong(
    "kind_shares",
    why="nests events across threads (one global stack) instead of per thread: an instruction "
    "of another execute thread that starts while a while is open is taken as its child, so the "
    "while's self time loses it; wrong on a trace whose kernels run on two execute threads",
)
def _rt3_kind_shares_global_stack(events, hlo_text, step_name):
    module, info = _rt3_module_info(hlo_text)
    pairs = _rt3_self_times(
        events, _rt3_steps(events, step_name), module.name, info, per_thread=False
    )
    return _rt3_shares(pairs, _rt3_kind_label(info))


# ---- 5. scope_shares -----------------------------------------------------------------------------


def _rt3_scope_shares(events, hlo_text, step_name, **kw):
    module, info = _rt3_module_info(hlo_text)
    pairs = _rt3_self_times(events, _rt3_steps(events, step_name), module.name, info)
    return _rt3_shares(pairs, lambda n: _rt3_scope(_rt3_op_name(info[n][1]), **kw))


@wrong(
    "scope_shares",
    why="drops every part written jit(...) as the function wrapper, but only the FIRST part is "
    "jit(fn); a nested jit's name (jit(relu) in mlp_grad's relu: 'jit(mlp_grad)/jvp()/jit(relu)/max') "
    "unwraps to a scope ('relu'); wrong on mlp_grad and on any program calling a jitted helper",
)
def _rt3_scope_shares_skips_nested_jit(events, hlo_text, step_name):
    return _rt3_scope_shares(events, hlo_text, step_name, skip_jit=True)


@wrong(
    "scope_shares",
    why="takes the LAST named part instead of the first; the same for one named_scope level, "
    "wrong when the op_name holds two (a scope inside a while body: 'jit(looped)/while/body/"
    "eval_jaxpr/dot_general' is 'while', not 'eval_jaxpr'); wrong on looped, nested, branchy",
)
def _rt3_scope_shares_innermost(events, hlo_text, step_name):
    return _rt3_scope_shares(events, hlo_text, step_name, first=False)


@wrong(
    "scope_shares",
    why="splits the whole op_name on '/' without cutting it at the first ';' first; a fused "
    "instruction joining 'jit(f)/mul;jit(f)/jvp(layer_1)/add' then yields the bogus scope "
    "'mul;jit(f)' instead of ''; wrong on a fusion whose first op_name has no scope and a later "
    "one does (the loss fusion of layered/mlp_grad joins two op_names)",
)
def _rt3_scope_shares_no_semicolon_cut(events, hlo_text, step_name):
    return _rt3_scope_shares(events, hlo_text, step_name, split_semicolon=False)


# ---- 6. line_shares ------------------------------------------------------------------------------


def _rt3_line_shares(events, hlo_text, step_name, **kw):
    module, info = _rt3_module_info(hlo_text)
    frames = _rt3_frames(hlo_text, **kw)
    pairs = _rt3_self_times(events, _rt3_steps(events, step_name), module.name, info)
    return _rt3_shares(pairs, lambda n: _rt3_source(info[n][1], frames))


@wrong(
    "line_shares",
    why="reads the LAST 'line=' of a FileLocations row, which is end_line; the same for a "
    "one-line call, wrong for a call written over several lines (line=62 end_line=72): the "
    "share goes to the closing line; wrong on any program whose op comes from a multi-line call",
)
def _rt3_line_shares_end_line(events, hlo_text, step_name):
    return _rt3_line_shares(events, hlo_text, step_name, line_key="last-line=")


@wrong(
    "line_shares",
    why="keeps FileNames as printed; the recordings have their directories cut, a live capture "
    "prints the full path ('/work/.../programs.py'), and the label must be the file name "
    "without directories; wrong on every live capture",
)
def _rt3_line_shares_keeps_directories(events, hlo_text, step_name):
    return _rt3_line_shares(events, hlo_text, step_name, keep_dirs=True)


@wrong(
    "line_shares",
    why="indexes FileLocations by the stack_frame_id itself instead of following the frame's "
    "file_location_id; right only where the two ids coincide; wrong on modules whose frames "
    "and locations are numbered differently (most: frames share locations, parents come first)",
)
def _rt3_line_shares_frame_as_location(events, hlo_text, step_name):
    return _rt3_line_shares(events, hlo_text, step_name, location_by_frame=True)


# ---- 7. longest_gap ------------------------------------------------------------------------------


def _rt3_spans(events, step_name, pick_step=None, use=None):
    steps_ = _rt3_steps(events, step_name)
    ins = use if use is not None else _rt3_instr(events)
    spans = {}
    for s in steps_:
        inside = [e for e in ins if (pick_step or _rt3_inside)(e, s)]
        if inside:
            spans[int(s.arg("step_num"))] = (
                min(e.start_ns for e in inside),
                max(e.end_ns for e in inside),
            )
    return spans


def _rt3_best_gap(spans):
    best, best_n = None, None
    for n in sorted(spans):
        if n + 1 in spans:
            gap = spans[n + 1][0] - spans[n][1]
            if best is None or gap > best:
                best, best_n = gap, n
    return best_n


@wrong(
    "longest_gap",
    why="gives each instruction event to the last step that started before it, so work landing "
    "after step n's event closed (a jitted eval or data-prep op the host ran between steps) "
    "counts as step n's; wrong on a loop that runs a jitted op between steps: step n's last "
    "end moves to that op and its gap shrinks",
)
def _rt3_longest_gap_latest_started_step(events, step_name):
    steps_ = _rt3_steps(events, step_name)
    spans: dict[int, list[int]] = {}
    for e in _rt3_instr(events):
        owner = None
        for s in steps_:
            if s.start_ns <= e.start_ns:
                owner = s
        if owner is None:
            continue
        n = int(owner.arg("step_num"))
        lo, hi = spans.get(n, [e.start_ns, e.end_ns])
        spans[n] = [min(lo, e.start_ns), max(hi, e.end_ns)]
    return _rt3_best_gap(spans)


@wrong(
    "longest_gap",
    why="uses every event of the execute threads (ThreadpoolListener::StartRegion/StopRegion, "
    "ThunkExecutor::Execute, the 'end:' markers) as the device's work, not only instruction "
    "events; the runtime's region markers sit a variable time before the first kernel, so the "
    "argmax moves on a trace where one step's runtime set-up is slow but its kernels start late",
)
def _rt3_longest_gap_execute_thread_events(events, step_name):
    use = [e for e in events if e.thread.split(":")[0] == "execute"]
    return _rt3_best_gap(_rt3_spans(events, step_name, use=use))


@wrong(
    "longest_gap",
    why="takes the first and last instruction events of the profiled program's module only "
    "(the most frequent hlo_module), but every instruction event inside the step bounds the "
    "device's work; wrong on a loop whose steps also run a small jitted op (a data-prep "
    "jnp op at the step's start, a metrics op at its end) with a module of its own",
)
def _rt3_longest_gap_main_module_only(events, step_name):
    counts: dict[Any, int] = defaultdict(int)
    for e in _rt3_instr(events):
        counts[e.arg("hlo_module")] += 1
    main = max(counts, key=counts.get) if counts else None
    use = [e for e in _rt3_instr(events) if e.arg("hlo_module") == main]
    return _rt3_best_gap(_rt3_spans(events, step_name, use=use))


# ---- 8. train_loop (decide) ----------------------------------------------------------------------


@wrong(
    "train_loop",
    why="warms up with jitted(state, batches[0]) but does not wait for it: the warm-up's "
    "execution is dispatched asynchronously and lands inside step 0, which then holds two "
    "executions; wrong on sgd_step with w f32[256,1] and batches of x f32[20000,256] (checked: "
    "step 0 held 2 run_ids); with tiny batches the run ends before step 0 opens",
)
def _rt3_train_loop_unwaited_warmup(step, state, batches, step_name):
    jitted = jax.jit(step)
    if batches:
        jitted(state, batches[0])  # warm-up (compile), result dropped, not waited for
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state


@wrong(
    "train_loop",
    why="keeps a running loss total with an eager jnp add inside each step; that add is an "
    "execution of another module (jit_add) inside the step event, so the step holds two "
    "executions, not exactly one; wrong on sgd_step over any 2+ batches",
)
def _rt3_train_loop_eager_loss_sum(step, state, batches, step_name):
    jitted = jax.jit(step)
    if batches:
        jax.block_until_ready(jitted(state, batches[0]))
    total = jax.numpy.zeros(())
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            total = total + loss
            jax.block_until_ready((state, total))
    return state


@wrong(
    "train_loop",
    why="blocks on the state it passed in, not on the step's result (the old `state` is ready "
    "long before); the step event closes before the run ends, so its instruction events land "
    "after it; wrong on sgd_step with w f32[256,1] and batches of x f32[20000,256] (checked: "
    "step 1 held no run, step 2 held two); tiny batches finish before the with block exits",
)
def _rt3_train_loop_blocks_on_input(step, state, batches, step_name):
    jitted = jax.jit(step)
    if batches:
        jax.block_until_ready(jitted(state, batches[0]))
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            new_state, _loss = jitted(state, batch)
            jax.block_until_ready(state)
        state = new_state
    return jax.block_until_ready(state)


@wrong(
    "train_loop",
    why="'compiles ahead' with jax.jit(step).lower(state, batches[0]) and stops there: lower() "
    "only traces and lowers to StableHLO, the backend compile still happens at the first call, "
    "inside step 0; wrong on sgd_step over any batches (step 0 holds backend_compile_and_load)",
)
def _rt3_train_loop_lower_is_not_compile(step, state, batches, step_name):
    jitted = jax.jit(step)
    if batches:
        jitted.lower(state, batches[0])  # ahead-of-time 'compile'
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, loss = jitted(state, batch)
            jax.block_until_ready((state, loss))
    return state
