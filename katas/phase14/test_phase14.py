"""Phase 14 tests: profiles joined back to the HLO (step_instructions, expected_counts;
compiled_steps: test_phase14_compile.py; where the time went: test_phase14_time.py; the longest
gap: test_phase14_gap.py; train_loop: test_phase14_loop.py; the traces: traces.py).

Every profile here is real: recorded in recorded/ (trimmed), or captured live with JAX's own
profiler from the programs of programs.py on sizes drawn fresh for each version of the learner's
file. Expected values come from the construction of the trace (which steps compiled, which step
the host delayed) or from xla_inspect.profile_query reading the same events; never from a
duration: shares are compared with shares of the same events (within 1e-6), ranks only where
the host's delay dwarfs the device's work.

The reading tests also run every trace renamed: each instruction and computation of the module
under a fresh label (the events' hlo_op follows; their own names, the runtime's labels, do not),
the step events under another name, the threads relabelled and the events shuffled; and
step_instructions reads it again with the step numbers dealt out of start order, and with
runtime events in each step that carry an hlo_op or an hlo_module alone (not instruction events).
"""

import random
import re
from collections import Counter

import pytest
from pytest_check import check

from kata_harness import metamorphic, oracles
from katas.phase14.programs import (
    PROFILES,
    drawn_program,
)
from katas.phase14.traces import (
    BANK,
    PLUMBING,
    STEP_NAMES,
    cases,
    instr_event,
    messy_trace,
    other_step_name,
    recording,
    shuffled_numbers,
    step_threads,
    warm_profile,
    with_half_instruction_events,
)
from xla_inspect import parse_hlo
from xla_inspect.profile import Profile, TraceEvent, capture_profile
from xla_inspect.profile_query import op_runs

PREDICT_BANK = ("mlp_grad", "looped", "reshaping", "layered", "heavy_line", "nested", "rooted")


def _fresh_program(fresh, bank=BANK) -> tuple[str, int]:
    return fresh.choice(bank), fresh.randrange(1 << 16)


# ---- oracles (xla_inspect.profile_query over the same events) ------------------------------------


def _oracle_steps(profile: Profile) -> dict[int, list[str]]:
    """{step_num: top-level instruction events of any module inside the step, by start}."""
    modules = {e.arg("hlo_module") for e in profile.events if e.hlo_op is not None}
    runs = [r for m in modules - {None} for r in op_runs(profile, str(m)) if r.depth == 0]
    found: dict[int, list[str]] = {}
    for event in profile.events:
        number = event.arg("step_num")
        if event.name == profile.step_name and number is not None:
            found[int(number)] = []
    for run in sorted(runs, key=lambda r: r.start_ns):
        if run.step is not None:
            found[run.step].append(run.instruction)
    return found


# ---- step_instructions ---------------------------------------------------------------------------


def _step_cases(profile: Profile, rng):
    """cases(), then the renamed profile with its step numbers dealt out of start order, and
    the profile with runtime events in its steps that carry an hlo_op or an hlo_module alone
    (not instruction events), each spanning a thread's instruction events of the step."""
    for label, case, names in cases(profile, rng):
        yield label, case, names
        if label == "renamed":
            yield "renamed, steps numbered out of start order", shuffled_numbers(case, rng), names
    half = "with runtime events carrying an hlo_op or an hlo_module alone"
    yield half, with_half_instruction_events(profile, rng), {}


@pytest.mark.task("step_instructions")
def test_step_instructions_on_recordings(kata):
    for name in sorted(PROFILES):
        for label, profile, _names in _step_cases(recording(name), random.Random(name)):
            got = kata.step_instructions(list(profile.events), profile.step_name)
            expected = _oracle_steps(profile)
            with check:
                assert got == expected, (
                    f"{name} ({label}): the steps' instruction lists differ; expected steps "
                    f"{sorted(expected)} with {[len(v) for v in expected.values()]} instructions"
                )


@pytest.mark.task("step_instructions")
def test_step_instructions_live(kata, fresh):
    """Fresh sizes; a run before the first step, and inside each step, in a drawn order, a run
    of the program, of its twin under another module name and of a small module XLA runs on
    the Python thread; after each step a run in a step of another name, numbered alike, and
    around the loop an annotation named like the steps without a step_num (not steps)."""
    for program in ("looped", fresh.choice(BANK)):
        seed = fresh.randrange(1 << 16)
        profile = messy_trace(program, seed, fresh.randint(2, 4), fresh.choice(STEP_NAMES))
        for label, case, _names in _step_cases(profile, fresh):
            got = kata.step_instructions(list(case.events), case.step_name)
            expected = _oracle_steps(case)
            with check:
                assert got == expected, (
                    f"{program} ({label}, {fresh.where()}): the steps' instruction lists differ "
                    f"(got {sum(map(len, got.values())) if isinstance(got, dict) else '?'} "
                    f"entries, expected {sum(map(len, expected.values()))})"
                )


@pytest.mark.task("step_instructions")
def test_step_instructions_match_the_entry(kata, fresh):
    """A fact, not a copy: a warm step of a loop-free program runs each working ENTRY
    instruction once, and nothing else at top level."""
    program, seed = _fresh_program(fresh, ("mlp_grad", "reshaping", "heavy_line"))
    profile = warm_profile(program, seed, 2)
    got = kata.step_instructions(list(profile.events), profile.step_name)
    entry = parse_hlo(profile.hlo_text).entry
    working = Counter(i.name for i in entry if i.opcode not in PLUMBING)
    assert isinstance(got, dict) and sorted(got) == [0, 1], f"{program}: steps {got!r:.80}"
    for number, names in got.items():
        with check:
            assert Counter(names) == working, (
                f"{program} step {number} ({fresh.where()}): {len(names)} instructions, "
                f"expected each of the {len(working)} working ENTRY instructions once"
            )


def _made_steps(
    fresh, step_name: str, children_first: bool
) -> tuple[list[TraceEvent], dict[int, list[str]]]:
    """A hand-built trace, its answer known from the construction: steps whose work runs on two
    execute threads at once (one thread's short events inside the other's long while, one of
    them the same instruction run again), whiles holding bodies two levels deep (a while, its
    first inner while and that one's first body event start at the same ns, and in some steps,
    one always, its last inner while and that one's last body event end in the ns it ends: the
    clock's resolution makes such ties; and, one step always, an event starting in the ns the
    one before it on its thread ends: touching, not nested; and, one step always, an event of
    0 ns after the while: an instruction event like any other), step events on two threads (the
    first step on one, a later one on the other), an empty step, a step event that closes in
    the ns its last instruction event ends, a run before the first step, and a while
    that starts in a step and ends after it (in no step, unless a later step reaches back over
    it), its body's event inside the step (nested in the while: not listed either); one step
    always starts inside the work of the step before it, on the other thread (steps of two
    loops at once: an instruction event inside both steps is listed in both, one nested in a
    while that began before the later step in neither); after each step, a second loop's step
    named otherwise and numbered alike, holding an instruction event, and around them all an
    event named `step_name` without a step_num (neither is a step event). The steps are numbered out
    of start order (two threads take turns numbering them), and each instruction event is
    named by the runtime's label of its kernel, not the instruction it ran (its hlo_op). The
    events come shuffled, or with `children_first` by start with the shorter of two events that
    start together first."""
    threads = [f"execute:{fresh.randrange(100)}", f"execute:{100 + fresh.randrange(100)}"]
    steps = fresh.randint(3, 5)
    empty, straddle, flush = fresh.sample(range(steps), 3)
    tied, touching, zero = (fresh.choice([n for n in range(steps) if n != empty]) for _ in "abc")
    # the step whose event starts inside the work of the step before it (one with work)
    laps = [n for n in range(1, steps) if n - 1 != empty]
    lap = fresh.choice([n for n in laps if n - 1 != straddle] or laps)
    step_thread = step_threads(fresh, steps)
    # on the other thread than the step it overlaps (step_threads' two threads both stay used)
    step_thread[lap] = next(t for t in set(step_thread) if t != step_thread[lap - 1])
    events: list[TraceEvent] = []
    tops: list[tuple[int, int, str]] = []  # every top-level instruction event: start, end, op
    spans: list[tuple[int, int, int]] = []  # every step event: number, start, end
    label = iter(f"{fresh.choice(('fusion', 'dot', 'copy', 'while'))}.{i}" for i in range(10**6))
    other = other_step_name(step_name, fresh)
    first = fresh.choice((0, fresh.randint(1, 900)))  # a loop resumed at step `first`
    dealt = list(range(steps))  # the n-th step to start is numbered first + dealt[n]
    while dealt == sorted(dealt):
        fresh.shuffle(dealt)
    kernels: dict[str, str] = {}

    def ran(op: str, thread: str, start: int, duration: int, run: int) -> TraceEvent:
        """An event running `op`, named as a runtime names its kernels (not `op`)."""
        name = f"{fresh.choice(('loop', 'input', 'custom'))}_{op.replace('.', '_')}"
        return instr_event(op, thread, start, duration, run, name=kernels.setdefault(op, name))

    t = 1000
    for n in range(-1, steps):
        start, top = t, []
        if n == lap:  # from the start of a top-level event of the step before, drawn
            _, before, after = spans[-1]
            start = fresh.choice([s for s, e, _op in tops if before <= s and e <= after])
        t += 100 + 10 * fresh.randrange(5)  # host time before the work
        if n != empty:
            # thread 0: a long while holding its body (a loop holding another), then more
            outer = next(label)
            cursor = t  # the outer while, its first inner while and its first body event tie
            # with `tie`, the end too: the last inner while and its last body event end in
            # the ns the outer while ends (inside it: nested, not listed)
            tie = n == tied or fresh.random() < 0.3
            loops = fresh.randint(2 if tie else 1, 3)  # never the outer's very interval
            for i in range(loops):
                last = tie and i == loops - 1
                inner = next(label)
                events.append(ran(inner, threads[0], cursor, 200, n))
                events.append(ran(next(label), threads[0], cursor + 20 * i, 60, n))
                events.append(ran(next(label), threads[0], cursor + (140 if last else 100), 60, n))
                cursor += 200 if last else 300
            events.append(ran(outer, threads[0], t, cursor - t, n))
            top.append((t, cursor, outer))
            # with `touch`, the next one starts in the ns the while ends (and one on thread 1
            # in the ns the one before it ends): touching, not nested
            touch = n == touching or fresh.random() < 0.3
            for k in range(fresh.randint(1 if touch else 0, 2)):
                cursor += 0 if touch and k == 0 else 10 * fresh.randint(1, 4)
                op = next(label)
                events.append(ran(op, threads[0], cursor, 50, n))
                top.append((cursor, cursor + 50, op))
                cursor += 50
            # one step always, others drawn: then one of 0 ns (a cheap copy under the clock's
            # resolution): an instruction event all the same, at top level
            if n == zero or fresh.random() < 0.3:
                cursor += 10 * fresh.randint(1, 4)
                op = next(label)
                events.append(ran(op, threads[0], cursor, 0, n))
                top.append((cursor, cursor, op))
            # thread 1, at the same time: short events, each inside thread 0's while; the
            # first runs the while's instruction again (another execution of the program)
            at = last = t + 15
            for i in range(fresh.randint(1, 4)):
                op = outer if i == 0 else next(label)
                events.append(ran(op, threads[1], at, 40, n + 1000))
                top.append((at, at + 40, op))
                last = at + 40
                at += 40 if touch and i == 0 else 50 + 10 * fresh.randrange(3)
            t = max(cursor, at)
            if n == flush:  # the step event closes in the ns its last instruction ends
                t = max(cursor, last)
        t += 0 if n == flush else 100 + 10 * fresh.randrange(5)  # host time after the work
        tops.extend(top)
        if n >= 0:
            number = (("step_num", first + dealt[n]),)
            events.append(TraceEvent(step_name, step_thread[n], start, t - start, number))
            spans.append((first + dealt[n], start, t))
        if n == straddle:  # a while that outlasts the step; its body's event lies inside it
            op = next(label)
            events.append(ran(op, threads[0], t - 50, 120, -n))
            events.append(ran(next(label), threads[0], t - 40, 20, -n))
            tops.append((t - 50, t + 70, op))
        events.append(TraceEvent("end: x", threads[0], t - 60, 1))
        if n >= 0:  # a second loop's step, named otherwise and numbered alike: not a step
            number = (("step_num", first + dealt[n]),)
            events.append(TraceEvent(other, "python", t + 80, 100, number))
            op = next(label)
            events.append(ran(op, "execute:eval", t + 100, 50, -1000 - n))
            tops.append((t + 100, t + 150, op))
        t += 200
    # the whole loop in an annotation named like the steps, without a step_num: not a step
    events.append(TraceEvent(step_name, "python", 900, t - 900))
    fresh.shuffle(events)
    if children_first:
        events.sort(key=lambda e: (e.start_ns, e.duration_ns))
    expected = {
        number: [op for s, e, op in sorted(tops) if start <= s and e <= end]
        for number, start, end in spans
    }
    return events, expected


@pytest.mark.task("step_instructions")
def test_step_instructions_on_a_made_trace(kata, fresh):
    """Events on two execute threads at once, loops in loops (a loop and its body starting, or
    ending, at the same ns), events that touch (one starts in the ns the one before it ends),
    steps annotated on two threads and numbered out of start order, two steps that overlap
    (an event inside both belongs to both), an empty step, events of 0 ns (the clock's
    resolution), an event that starts in a step and ends after it, events named otherwise than
    the instruction they ran, and events that are not step events (another name, or no
    step_num); the answer is known from how the trace was built."""
    for children_first in (True, False, False):
        step_name = fresh.choice(STEP_NAMES)
        events, expected = _made_steps(fresh, step_name, children_first)
        got = kata.step_instructions(events, step_name)
        assert got == expected, (
            f"a made trace of {len(expected)} steps ({fresh.where()}): the steps' instruction "
            f"lists differ (got {sum(map(len, got.values())) if isinstance(got, dict) else '?'} "
            f"entries, expected {sum(map(len, expected.values()))})"
        )


# ---- expected_counts -----------------------------------------------------------------------------


def _counted(profile: Profile, step: int) -> dict[str, int]:
    return dict(Counter(r.instruction for r in op_runs(profile) if r.step == step))


def _live_counts(fresh):
    """(what, profile) for programs drawn fresh, which no other task runs (their names, loops
    and trip counts drawn here; a while_loop stepping by 2 or 3 from anywhere, whose condition
    bound is not its trip count, always among them, a fori_loop, which the CPU backend wraps in
    a call marked xla_cpu_small_call: one event, nothing inside, and a matmul of the array seen
    with other dims, in ENTRY or in a scan's body: bitcasts that change the printed dims, of the
    same rank or not, views all the same; it and a scan holding a fori_loop, a loop in a loop,
    always in one program; an op XLA:CPU leaves unfused, its own instruction of an opcode
    no other stage prints (a sort, an FFT or a convolution), always in one; a top_k, a
    custom-call whose called computation, its comparator, is no fusion and leaves no event,
    always in the first), and for programs of the bank at fresh sizes: rooted (its ROOT is
    work, not a tuple) always."""
    for stages in (("stride", "compared"), ("fori", "unfused"), ("nested", "reshape"), ()):
        fn, args, what = drawn_program(fresh.randrange(1 << 30), with_stages=stages)
        yield what, capture_profile(fn, *args, steps=1)
    others = [p for p in PREDICT_BANK if p != "rooted"]
    for program in ("rooted", *fresh.sample(others, 2)):
        yield program, warm_profile(program, fresh.randrange(1 << 16), 1)


@pytest.mark.task("expected_counts")
def test_expected_counts_match_a_live_profile(kata, fresh):
    for what, profile in _live_counts(fresh):
        got = kata.expected_counts(profile.hlo_text)
        expected = _counted(profile, 0)
        with check:
            assert got == expected, (
                f"{what} ({fresh.where()}): {len(got) if isinstance(got, dict) else got!r:.60} "
                f"instructions, {sum(got.values()) if isinstance(got, dict) else '?'} events; "
                f"the profile shows {len(expected)} instructions, {sum(expected.values())} events"
            )


def _dashed(variant: metamorphic.HloVariant, rng) -> metamorphic.HloVariant:
    """The renamed module with a dash in every instruction's and computation's label
    (`n41-fusion`, as XLA names `bitcast_dynamic-update-slice_fusion`): XLA's parser takes a
    `-` in a name like a letter."""
    dash = {
        new: f"{new}-{rng.choice(('fusion', 'update-slice', 'x', 'done'))}"
        for new in variant.names.values()
    }

    def name(match: re.Match[str]) -> str:
        return match.group(1) + dash.get(match.group(2), match.group(2))

    text = re.sub(r"(%|(?<=\()|(?<=, ))([\w.\-]+)(?=[^\w.\-])", name, variant.text)
    names = {old: dash.get(new, new) for old, new in variant.names.items()}
    return metamorphic.HloVariant("renamed with dashes", text, names)


@pytest.mark.task("expected_counts")
def test_expected_counts_on_renamed_modules(kata, fresh):
    """Each program renamed, reordered, both, and renamed with a dash in every name."""
    for program in (fresh.choice(("looped", "nested")), fresh.choice(("mlp_grad", "rooted"))):
        profile = warm_profile(program, fresh.randrange(1 << 16), 1)
        expected = _counted(profile, 0)
        found = list(metamorphic.variants(profile.hlo_text, fresh.randrange(1 << 30)))
        renamed = [v for v in found if v.kind == "renamed"]
        if renamed:
            dashed = _dashed(renamed[0], fresh)
            assert oracles.xla_accepts(dashed.text), f"{program}: XLA refuses the dashed names"
            found.append(dashed)
        for variant in found:
            got = kata.expected_counts(variant.text)
            with check:
                assert got == variant.rename(expected), (
                    f"{program} ({variant.kind}, {fresh.where()}): the counts differ from the "
                    "profile's once the names change"
                )
