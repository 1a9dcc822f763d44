"""Phase 14 tests of longest_gap: after which step the host kept the device waiting longest
(the other reading tasks: test_phase14.py, test_phase14_compile.py, test_phase14_time.py).

The traces are real (captured live around host delays far above a step's device time) or built
by hand where a real trace cannot be made to order (work on two threads, steps annotated on two
threads, steps numbered against the order they ran in); the answer is known from the
construction, never from a duration.
"""

import random
import time

import jax
import pytest
from pytest_check import check

from katas.phase14.traces import (
    STEP_NAMES,
    compiled_program,
    instr_event,
    other_module,
    other_step_name,
    ready,
    renumbered,
)
from xla_inspect.profile import Profile, TraceEvent, trace_events

HOST_DELAY_S = 0.25  # the host's delay in the gap tests: far above a step's device time here
GAP_PLACES = ("end of step", "start of next step", "between steps")


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


def _countdown_gaps(fresh, step_name: str) -> tuple[list[TraceEvent], int, str]:
    """A hand-built trace of a loop numbered against the order it ran in (a countdown: the
    step that ran first bears the highest step_num), so that step n + 1's work ends before
    step n's starts and every gap, from the end of n's work to the start of n + 1's, is
    negative: the longest is the one closest to zero, the pair of steps that ran nearest each
    other (the host waits long between the others). Each step runs the program once or twice,
    a while holding its body, on one of two execute threads; the step events are on two
    threads; after each step, a step of a second loop named otherwise and numbered alike runs
    an op of another module, and around them all an event named `step_name` without a
    step_num (neither is a step event)."""
    steps = fresh.randint(4, 6)
    first = fresh.choice((0, fresh.randint(1, 900)))
    near = fresh.randrange(1, steps - 1)  # the step (in time order) that follows its pair closely
    threads = [f"execute:{fresh.randrange(50)}", f"execute:{50 + fresh.randrange(50)}"]
    step_thread = [fresh.choice(("python", "MainThread")) for _ in range(steps)]
    other = other_step_name(step_name, fresh)
    events: list[TraceEvent] = []
    t, run = 10_000, fresh.randrange(1000)
    for i in range(steps):
        number = (("step_num", first + steps - 1 - i),)
        t += 1_000 if i == near else fresh.randint(60, 90) * 1_000  # the host between steps
        start = t
        t += fresh.randint(1, 5) * 1_000
        for _ in range(fresh.randint(1, 2)):
            run += 1
            thread, work = fresh.choice(threads), fresh.randint(5, 9) * 1_000
            events.append(instr_event("while.1", thread, t, work, run))
            events.append(instr_event("fusion.2", thread, t + 100, work // 2, run))
            events.append(instr_event("copy.3", thread, t + work + 100, 500, run))
            t += work + 600 + fresh.randint(0, 2) * 1_000
        t += fresh.randint(1, 5) * 1_000
        events.append(TraceEvent(step_name, step_thread[i], start, t - start, number))
        events.append(TraceEvent(other, "python", t + 100, 400, number))
        events.append(instr_event("fusion.2", threads[0], t + 200, 200, -1 - i, "jit_eval"))
        t += 600
    events.append(TraceEvent(step_name, "python", 5_000, t))
    fresh.shuffle(events)
    answer = first + steps - 1 - near
    what = (
        f"a made trace: {steps} steps numbered down from {first + steps - 1} to {first} as "
        f"they ran (every gap negative), steps {answer + 1} and {answer} ran nearest each other"
    )
    return events, answer, what


@pytest.mark.task("longest_gap")
def test_longest_gap_when_steps_ran_in_reverse(kata, fresh):
    """Steps need not run in step_num order: when step n + 1 ran before step n, the gap from
    n's work to n + 1's is negative, and when all are the longest is the largest of them."""
    step_name = fresh.choice(STEP_NAMES)
    events, expected, what = _countdown_gaps(fresh, step_name)
    got = kata.longest_gap(events, step_name)
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
