"""Phase 14 tests of where the time went: shares by fusion kind, name scope and source line, the
longest gap between steps (train_loop: test_phase14_loop.py).

The profiles are real (traces.py: recorded, or captured live on sizes drawn fresh for each
version of the learner's file) and run renamed too. Shares are compared with shares of the same
events read by xla_inspect.profile_query (within 1e-6); a gap's rank only where the host's delay
dwarfs the device's work; never a duration.
"""

import inspect
import random
import re
import time
from collections import defaultdict

import jax
import pytest
from pytest_check import check

from katas.phase14.programs import (
    PROFILES,
    PROGRAMS,
    STEP_NAME,
    args_for,
)
from katas.phase14.traces import (
    BANK,
    STEP_NAMES,
    bared,
    cases,
    compiled_program,
    instr_event,
    made_profile,
    messy_trace,
    other_module,
    other_step_name,
    ready,
    recording,
    renumbered,
    reprefixed,
    warm_profile,
)
from xla_inspect import parse_hlo
from xla_inspect.profile import Profile, TraceEvent, trace_events
from xla_inspect.profile_query import time_by

SHARE_TOLERANCE = 1e-6
HOST_DELAY_S = 0.25  # the host's delay in the gap tests: far above a step's device time here
GAP_PLACES = ("end of step", "start of next step", "between steps")


def _oracle_shares(profile: Profile, key) -> dict[str, float]:
    table = time_by(profile, key)
    total: dict[str, int] = defaultdict(int)
    for groups in table.values():
        for name, ns in groups.items():
            total[name] += ns
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()}


_WRAPPED = re.compile(r"^[\w-]+\((.*)\)$")


def _scope_of(op_name: str) -> str:
    for part in op_name.split(";", 1)[0].split("/")[1:-1]:
        while match := _WRAPPED.match(part):
            part = match.group(1)
        if part:
            return part
    return ""


SHARE_KEYS = {
    "kind_shares": lambda i: i.label,
    "scope_shares": lambda i: _scope_of(i.op_name),
    "line_shares": lambda i: i.source,
}


# ---- checks --------------------------------------------------------------------------------------


def _check_shares(got, expected: dict[str, float], what: str) -> None:
    __tracebackhide__ = True
    assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
    assert all(isinstance(v, float) for v in got.values()), f"{what}: shares must be floats"
    assert set(got) == set(expected), (
        f"{what}: groups {sorted(got)}; expected {len(expected)} groups "
        f"(missing {sorted(set(expected) - set(got))[:3]}, "
        f"extra {sorted(set(got) - set(expected))[:3]})"
    )
    off = {
        k: (got[k], expected[k]) for k in expected if abs(got[k] - expected[k]) > SHARE_TOLERANCE
    }
    assert not off, f"{what}: {len(off)} shares off by more than {SHARE_TOLERANCE}, e.g. " + (
        "{}: {:.4f} (expected {:.4f})".format(next(iter(off)), *next(iter(off.values())))
    )


# ---- kind_shares, scope_shares, line_shares ------------------------------------------------------


def _shares_cases(fresh, task: str):
    """Recordings, live traces of the bank (loops, and a loop in a loop, always among them;
    for line_shares calls written over several lines, and fusions with no stack frame of their
    own around fused instructions that have one) and a made trace of two executions at
    once (one group of the task far under 1% of the time: every group that ran appears; for
    scope_shares op_names that begin otherwise than jit(fn), and op_names without a `/`),
    each as it is and renamed."""
    programs = {"kind_shares": BANK, "scope_shares": ("layered",), "line_shares": BANK}[task]
    yield from (("recorded " + n, recording(n)) for n in sorted(PROFILES))
    always = {
        "kind_shares": ("looped", "nested"),
        "scope_shares": ("layered",),
        "line_shares": ("looped", "nested", "spread", "reshaping"),
    }[task]
    for program in sorted({fresh.choice(programs), *always}):
        seed = fresh.randrange(1 << 16)
        yield (
            f"{program} live ({fresh.where()})",
            messy_trace(program, seed, 3, fresh.choice(STEP_NAMES)),
        )
    # a conditional's branch nested in its event, always for line_shares; an op_name joining
    # two scopes, always for scope_shares
    program = {"kind_shares": fresh.choice(("looped", "nested", "branchy"))}.get(
        task, programs[0] if task == "scope_shares" else "branchy"
    )
    scope_of = _scope_of if task == "scope_shares" else None
    made = made_profile(fresh, program, fresh.choice(STEP_NAMES), scope_of, SHARE_KEYS[task])
    if task == "scope_shares":  # op_names whose first part is not jit(fn): pjit(fn), fn...,
        # and op_names of one part, no `/` (a primitive's or a scope's name alone): no scope
        text = bared(reprefixed(made.hlo_text, fresh), fresh)
        made = Profile(made.events, text, made.module, made.step_name)
    yield f"{program}: two executions at once ({fresh.where()})", made
    if task == "line_shares":  # frameless fusions around fused instructions with a frame, with
        # time of their own, always: in a live trace they may take too little to move a share
        seed = _frameless_fusion_seed(fresh)
        yield (
            f"reshaping: two executions at once ({fresh.where()})",
            made_profile(fresh, "reshaping", fresh.choice(STEP_NAMES), seed=seed),
        )


def _frameless_fusion_seed(fresh) -> int:
    """A seed sizing reshaping so that ENTRY holds a fusion with no stack frame of its own
    around fused instructions that have one (most sizes do; some compile none)."""
    for _ in range(50):
        seed = fresh.randrange(1 << 16)
        module = parse_hlo(compiled_program("reshaping", seed)[0].as_text() or "")
        for ins in module.entry:
            if ins.opcode == "fusion" and "stack_frame_id" not in ins.attributes_text:
                body = module[ins.called_computations[0]]
                if any("stack_frame_id" in fused.attributes_text for fused in body):
                    return seed
    raise AssertionError(f"no size of reshaping compiled a frameless fusion ({fresh.where()})")


def _run_shares(kata, fresh, task: str) -> None:
    for what, profile in _shares_cases(fresh, task):
        for label, case, _names in cases(profile, fresh):
            expected = _oracle_shares(case, SHARE_KEYS[task])
            got = getattr(kata, task)(list(case.events), case.hlo_text, case.step_name)
            with check:
                _check_shares(got, expected, f"{what} ({label})")


@pytest.mark.task("kind_shares")
def test_kind_shares(kata, fresh):
    _run_shares(kata, fresh, "kind_shares")


@pytest.mark.task("scope_shares")
def test_scope_shares(kata, fresh):
    _run_shares(kata, fresh, "scope_shares")


@pytest.mark.task("scope_shares")
def test_scope_shares_name_every_layer(kata, fresh):
    """A fact of the layered program: every layer_i has time, forward and backward together."""
    seed = fresh.randrange(1 << 16)
    params, _x = args_for("layered", seed)
    profile = messy_trace("layered", seed, 3, STEP_NAME)
    got = kata.scope_shares(list(profile.events), profile.hlo_text, profile.step_name)
    layers = {f"layer_{i}" for i in range(len(params))}
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    assert layers <= set(got), f"layers {sorted(layers)} ({fresh.where()}): got {sorted(got)}"
    assert not {k for k in got if "backward" in k or "(" in k}, f"unwrapped scopes: {sorted(got)}"


@pytest.mark.task("line_shares")
def test_line_shares(kata, fresh):
    _run_shares(kata, fresh, "line_shares")


@pytest.mark.task("line_shares")
def test_line_shares_find_the_matmul_line(kata, fresh):
    """A rank that holds under load: heavy_line's big matmul outweighs its elementwise lines."""
    seed = fresh.randrange(1 << 16)
    profile = warm_profile("heavy_line", seed, 4)
    got = kata.line_shares(list(profile.events), profile.hlo_text, profile.step_name)
    assert isinstance(got, dict) and got, f"expected a non-empty dict, got {got!r:.60}"
    source, first = inspect.getsourcelines(PROGRAMS["heavy_line"])
    matmul = first + next(i for i, line in enumerate(source) if "x @ w" in line)
    top = max(got, key=lambda k: got[k])
    assert top == f"programs.py:{matmul}", f"heaviest line ({fresh.where()}): got {top!r}"


# ---- longest_gap ---------------------------------------------------------------------------------


def _gap_trace(
    fresh, step_name: str, where: str, split: bool = False
) -> tuple[list[TraceEvent], int, str]:
    """Steps of a program; the host sleeps HOST_DELAY_S once after step k: at the end of step k
    (inside it, after its work), at the start of step k + 1 (before its work), or between the
    two step events, then runs a small jitted op (another module) outside every step event;
    and a fifth of that between the step events of another pair j, j + 1. With `split`, a step
    m runs the program twice with longer host work between the two calls, and a step p opens
    with the small op, then longer host work, then the program: inside the steps, not waits
    between steps (m and p are neither k nor k + 1: the longest step event is not k's)."""
    program = fresh.choice(("mlp_grad", "looped", "reshaping"))
    compiled, args = compiled_program(program, fresh.randrange(1 << 16))
    small, small_args = other_module()
    steps = fresh.randint(4 if split else 3, 5)
    k, j = fresh.sample(range(steps - 1), 2)
    m = fresh.choice([i for i in range(steps) if i not in (k, k + 1)]) if split else -1
    p = fresh.choice([i for i in range(1, steps) if i not in (k, k + 1)]) if split else -1
    first = fresh.choice((0, fresh.randint(1, 900)))  # a loop resumed at step `first`

    def body():
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(step_name, step_num=first + i):
                if i == p:
                    ready(small(small_args))
                    time.sleep(HOST_DELAY_S * 1.6)
                if i == k + 1 and where == "start of next step":
                    time.sleep(HOST_DELAY_S)
                ready(compiled(*args))
                if i == m:
                    time.sleep(HOST_DELAY_S * 1.6)
                    ready(compiled(*args))
                if i == k and where == "end of step":
                    time.sleep(HOST_DELAY_S)
            if i == k and where == "between steps":
                time.sleep(HOST_DELAY_S)
            if i == k:
                ready(small(small_args))  # in no step: not the device's work of step k
            if i == j:
                time.sleep(HOST_DELAY_S / 5)

    what = (
        f"{program}, steps {first} to {first + steps - 1}, the longer sleep at the {where} "
        f"{first + k}, the shorter after {first + j}"
        + (f", host work inside steps {first + m} and {first + p}" if split else "")
    )
    return trace_events(body), first + k, what


@pytest.mark.task("longest_gap")
def test_longest_gap(kata, fresh):
    places = fresh.sample(GAP_PLACES, len(GAP_PLACES))
    for where in places:
        step_name = fresh.choice(STEP_NAMES)
        events, expected, what = _gap_trace(fresh, step_name, where, split=where == places[0])
        got = kata.longest_gap(list(events), step_name)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): got {got!r:.40}"


@pytest.mark.task("longest_gap")
def test_longest_gap_renamed_and_shuffled(kata, fresh):
    step_name = fresh.choice(STEP_NAMES)
    events, expected, what = _gap_trace(fresh, step_name, fresh.choice(GAP_PLACES))
    profile = Profile(tuple(events), "", "", step_name)
    renamed, shift = _renamed_steps_only(profile, fresh)
    got = kata.longest_gap(list(renamed.events), renamed.step_name)
    assert got == expected + shift, (
        f"{what}, renumbered from +{shift}, events shuffled ({fresh.where()}): got {got!r:.40}"
    )


def _made_gaps(
    fresh, step_name: str, delay: int, empty: bool, long_work: bool = False
) -> tuple[list[TraceEvent], int, str]:
    """A hand-built trace whose longest wait is known from the construction: host time before,
    after and between the step events, the long wait after step k at the end of k (`delay` 0),
    between the step events (1) or at the start of k + 1 (2), then an op of another module
    outside every step; a step whose device work outlasts every wait (start to start, it is the
    longest); a step before the answer that runs the program twice or not at all; a step whose
    host work between its two runs lasts longer than every wait, and one that opens with an op
    of another module and then does such host work (inside the steps: not waits between steps);
    runs on two execute threads, a while holding its body (in the long step, the whole run: its
    last-starting and first-ending events are body ops well inside it, and a second, short
    execution at once on the other thread, starting late in the while and done long before it
    ends); step events on two threads (the first step on one, a later one on the other); in
    every step a host-side event (on the step's thread) spanning the step, and between the
    step events of a pair q half the long wait (so the longest wait between the host's events
    is after q); after each step, early in the wait, a step of a second loop named otherwise
    and numbered alike, running an op of another module, and around them all an event named
    `step_name` without a step_num (neither is a step event).
    With `empty`, the step that runs the program no times comes after another and holds host
    work longer than every wait (no gap around it: it holds no instruction event).
    With `long_work`, step k's own device work lasts twice the long wait (yet less than the heavy
    step's): the gap after k is the longest in time, not beside k's work (q's gap, half the long
    wait after a step of one short run, is many times q's work; k's is half of k's)."""
    steps = 7 if long_work else fresh.randint(5, 7)
    k = fresh.randrange(2, steps - 1)
    odd = fresh.randrange(1 if empty else 0, k)
    heavy = fresh.choice([n for n in range(steps - 1) if n not in (k, odd, odd - 1)])
    # with long_work, q's step runs once, without host work inside it (not heavy, split, opens)
    q = fresh.choice(
        [n for n in range(steps - 1) if n not in (k, odd, odd - 1, heavy if long_work else k)]
    )
    calm = q if long_work else k + 1  # a step that neither opens nor splits
    opens = fresh.choice([n for n in range(1, steps) if n not in (k + 1, odd, odd + 1, calm)])
    split = fresh.choice([n for n in range(steps) if n not in (k + 1, odd, heavy, opens, calm)])
    runs_in = {n: 1 for n in range(steps)} | {odd: 0 if empty else 2, split: 2}
    threads = [f"execute:{fresh.randrange(50)}", f"execute:{50 + fresh.randrange(50)}"]
    events: list[TraceEvent] = []
    t, run = 10_000, fresh.randrange(1000)
    first = fresh.choice((0, fresh.randint(1, 900)))  # a loop resumed at step `first`
    other = other_step_name(step_name, fresh)
    eval_thread = f"execute:{100 + fresh.randrange(50)}"
    # the step events on two threads (two loops annotating alike): the first step on one, a
    # later step on the other, the rest drawn
    on = fresh.sample(("python", "MainThread", f"Thread-{fresh.randint(1, 9)}", "loader"), 2)
    aside_step = fresh.randrange(1, steps)
    step_thread = [
        on[n == aside_step] if n in (0, aside_step) else fresh.choice(on) for n in range(steps)
    ]
    for n in range(steps):
        waits = [fresh.randint(1, 5) * 1000 for _ in range(3)]  # before, after, between
        if n == k + 1 and delay == 2:
            waits[0] += 100_000
        if n == k and delay < 2:
            waits[1 + delay] += 100_000
        if n == q:
            waits[2] += 50_000
        if n == odd and empty:  # a step that only logs, at length
            waits[0] += 200_000
        start = t
        t += waits[0]
        if n == opens:  # another module's op, then host work longer than every wait
            events.append(instr_event("fusion.2", fresh.choice(threads), t, 800, 0, "jit_other"))
            t += 300_000
        for i in range(runs_in[n]):
            if i and n == split:
                t += 300_000  # host work between the two calls of the step
            run += 1
            thread = fresh.choice(threads)
            work = 1_000_000 if n == heavy else fresh.randint(5, 9) * 1000
            if n == k and long_work:
                work = 200_000
            events.append(instr_event("while.1", thread, t, work, run))
            if n == heavy:  # the while is the whole run: its body starts late and ends early
                events.append(instr_event("fusion.2", thread, t + work // 4, work // 4, run))
                events.append(instr_event("copy.3", thread, t + work // 2, 500, run))
                # and a second execution at once on the other thread, short, started late in
                # the while and done long before it ends: it starts last and ends early
                aside, at, short = threads[thread == threads[0]], t + work // 2 + 1000, 7000
                run += 1
                events.append(instr_event("while.1", aside, at, short, run))
                events.append(instr_event("fusion.2", aside, at + 100, short // 2, run))
                events.append(instr_event("copy.3", aside, at + short + 100, 500, run))
                t += work
                continue
            events.append(instr_event("fusion.2", thread, t + 100, work // 2, run))
            events.append(instr_event("copy.3", thread, t + work + 100, 500, run))
            t += work + 600
        t += waits[1]
        number = (("step_num", first + n),)
        events.append(TraceEvent(step_name, step_thread[n], start, t - start, number))
        events.append(
            TraceEvent(f"PjitFunction({step_name})", step_thread[n], start + 1, t - start - 2)
        )
        # a second loop's step, named otherwise and numbered alike, runs an op: not a step
        events.append(TraceEvent(other, "python", t + 100, 400, number))
        events.append(instr_event("fusion.2", eval_thread, t + 200, 200, -1 - n, "jit_eval"))
        t += waits[2]
        if n == k:  # an op outside every step, late in the wait: no step's work
            events.append(instr_event("copy.3", threads[0], t - 900, 400, 1, "jit_other"))
    # the whole loop in an annotation named like the steps, without a step_num: not a step
    events.append(TraceEvent(step_name, "python", 5_000, t))
    fresh.shuffle(events)
    what = (
        f"a made trace: {steps} steps from {first}, step {first + odd} runs the program "
        f"{runs_in[odd]} times, step {first + heavy} works 10 times longer than the longest "
        f"wait in a while that holds the rest of its work and a short execution at once on "
        f"another thread, steps on two threads, steps {first + split} and "
        f"{first + opens} hold longer host work, the longest wait follows step {first + k}"
        + (" (whose device work lasts twice that wait)" if long_work else "")
    )
    return events, first + k, what


@pytest.mark.task("longest_gap")
def test_longest_gap_on_made_traces(kata, fresh):
    for delay, empty, long_work in (
        (0, True, False),
        (1, False, False),
        (2, fresh.random() < 0.5, False),
        (fresh.randrange(3), True, False),
        (fresh.randrange(3), fresh.random() < 0.5, True),
    ):
        step_name = fresh.choice(STEP_NAMES)
        events, expected, what = _made_gaps(fresh, step_name, delay, empty, long_work)
        got = kata.longest_gap(events, step_name)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): got {got!r:.40}"


def _renamed_steps_only(profile: Profile, rng: random.Random) -> tuple[Profile, int]:
    """The steps renamed and numbered from another first number, threads relabelled, events
    shuffled; and the shift of the step numbers."""
    step_name = rng.choice([n for n in STEP_NAMES if n != profile.step_name])
    shift = rng.randint(1, 5000)
    events = [
        TraceEvent(
            step_name if e.name == profile.step_name else e.name,
            f"th{rng.randrange(99)}{e.thread}",
            e.start_ns,
            e.duration_ns,
            e.args,
        )
        for e in profile.events
    ]
    events = [renumbered(e, step_name, shift) for e in events]
    rng.shuffle(events)
    return Profile(tuple(events), profile.hlo_text, profile.module, step_name), shift
