"""Phase 14 tests: profiles joined back to the HLO.

Every profile here is real: recorded in recorded/ (trimmed), or captured live with JAX's own
profiler from the programs of programs.py on sizes drawn fresh for each version of the learner's
file. Expected values come from the construction of the trace (which steps compiled, which step
the host delayed) or from xla_inspect.profile_query reading the same events; never from a
duration: shares are compared with shares of the same events (within 1e-6), ranks only where
the host's delay dwarfs the device's work.

The reading tests also run every trace renamed: each instruction and computation of the module
under a fresh label (the events' hlo_op and name follow), the step events under another name,
the threads relabelled and the events shuffled.
"""

import functools
import inspect
import random
import re
import time
from collections import Counter, defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import metamorphic
from katas.phase14.programs import (
    PROFILES,
    PROGRAMS,
    STEP_NAME,
    args_for,
    recorded_profile,
    sgd_step,
)
from xla_inspect import parse_hlo
from xla_inspect.profile import Profile, TraceEvent, capture_profile, trace_events
from xla_inspect.profile_query import op_runs, time_by

SHARE_TOLERANCE = 1e-6
HOST_DELAY_S = 0.25  # the host's delay in the gap tests: far above a step's device time here
BANK = ("mlp_grad", "looped", "reshaping", "layered", "heavy_line", "branchy", "nested", "rooted")
PREDICT_BANK = ("mlp_grad", "looped", "reshaping", "layered", "heavy_line", "nested", "rooted")
STEP_NAMES = ("train", "step", "iteration", "batch_step")
GAP_PLACES = ("end of step", "start of next step", "between steps")


# ---- traces --------------------------------------------------------------------------------------


def _block(value):
    return jax.block_until_ready(value)


@functools.cache
def _compiled(program: str, seed: int):
    args = args_for(program, seed)
    compiled = jax.jit(PROGRAMS[program]).lower(*args).compile()
    _block(compiled(*args))
    return compiled, args


@functools.cache
def _other():
    """A second module run inside the steps: its events are not the profiled module's."""
    x = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(6, 8)
    compiled = jax.jit(lambda v: (jnp.tanh(v) * 3.0, jnp.exp(v).sum())).lower(x).compile()
    _block(compiled(x))
    return compiled, x


@functools.cache
def _messy(program: str, seed: int, steps: int, step_name: str) -> Profile:
    """A trace of `steps` steps of the program, with one run of it before the first step (in
    no step) and a run of another module inside every step."""
    compiled, args = _compiled(program, seed)
    other, x = _other()

    def body():
        _block(compiled(*args))
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
                _block(compiled(*args))
                _block(other(x))

    events = tuple(trace_events(body))
    text = compiled.as_text() or ""
    return Profile(events, text, _module_name(text), step_name)


@functools.cache
def _warm(program: str, seed: int, steps: int) -> Profile:
    return capture_profile(PROGRAMS[program], *args_for(program, seed), steps=steps)


def _module_name(hlo_text: str) -> str:
    return parse_hlo(hlo_text).name


def _recorded(name: str) -> Profile:
    return recorded_profile(name)


# ---- renaming ------------------------------------------------------------------------------------


def _renamed(profile: Profile, rng: random.Random) -> tuple[Profile, dict[str, str]]:
    """The profile with the module renamed (XLA's parser accepts it), the events following the
    new names, another step name, relabelled threads, and the events shuffled."""
    variant = next(
        (v for v in metamorphic.variants(profile.hlo_text, rng.randrange(1 << 30))), None
    )
    names = dict(variant.names) if variant is not None else {}
    text = variant.text if variant is not None else profile.hlo_text
    step_name = rng.choice([n for n in STEP_NAMES if n != profile.step_name])
    threads = {t: f"t{rng.randrange(1000)}-{t}" for t in {e.thread for e in profile.events}}
    own = set(names) & {i.name for c in parse_hlo(profile.hlo_text).computations for i in c}
    module = profile.module

    def event(e: TraceEvent) -> TraceEvent:
        mine = e.arg("hlo_module") == module and e.hlo_op in own
        name = e.name
        args = e.args
        if mine:
            new = names[e.hlo_op or ""]
            name = new if e.name == e.hlo_op else e.name
            args = tuple((k, new if k == "hlo_op" else v) for k, v in e.args)
        if e.name == profile.step_name:
            name = step_name
        return TraceEvent(name, threads[e.thread], e.start_ns, e.duration_ns, args)

    events = [event(e) for e in profile.events]
    rng.shuffle(events)
    return Profile(tuple(events), text, module, step_name), names


def _cases(profile: Profile, rng: random.Random):
    """The profile as it is, then renamed: (label, profile, names)."""
    yield "as recorded", profile, {}
    renamed, names = _renamed(profile, rng)
    yield "renamed", renamed, names


def _fresh_program(fresh, bank=BANK) -> tuple[str, int]:
    return fresh.choice(bank), fresh.randrange(1 << 16)


# ---- oracles (xla_inspect.profile_query over the same events) ------------------------------------


def _oracle_steps(profile: Profile) -> dict[int, list[str]]:
    """{step_num: top-level instruction events of any module inside the step, by start}."""
    modules = {e.arg("hlo_module") for e in profile.events if e.hlo_op is not None}
    runs = [r for m in modules for r in op_runs(profile, str(m)) if r.depth == 0]
    found: dict[int, list[str]] = {}
    for event in profile.events:
        number = event.arg("step_num")
        if event.name == profile.step_name and number is not None:
            found[int(number)] = []
    for run in sorted(runs, key=lambda r: r.start_ns):
        if run.step is not None:
            found[run.step].append(run.instruction)
    return found


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


# ---- step_instructions ---------------------------------------------------------------------------


@pytest.mark.task("step_instructions")
def test_step_instructions_on_recordings(kata):
    for name in sorted(PROFILES):
        for label, profile, _names in _cases(_recorded(name), random.Random(name)):
            got = kata.step_instructions(list(profile.events), profile.step_name)
            expected = _oracle_steps(profile)
            with check:
                assert got == expected, (
                    f"{name} ({label}): the steps' instruction lists differ; expected steps "
                    f"{sorted(expected)} with {[len(v) for v in expected.values()]} instructions"
                )


@pytest.mark.task("step_instructions")
def test_step_instructions_live(kata, fresh):
    """Fresh sizes; a run before the first step and another module's run inside each step."""
    for program in ("looped", fresh.choice(BANK)):
        seed = fresh.randrange(1 << 16)
        profile = _messy(program, seed, fresh.randint(2, 4), fresh.choice(STEP_NAMES))
        for label, case, _names in _cases(profile, fresh):
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
    profile = _warm(program, seed, 2)
    got = kata.step_instructions(list(profile.events), profile.step_name)
    entry = parse_hlo(profile.hlo_text).entry
    working = Counter(i.name for i in entry if i.opcode not in _PLUMBING)
    assert isinstance(got, dict) and sorted(got) == [0, 1], f"{program}: steps {got!r:.80}"
    for number, names in got.items():
        with check:
            assert Counter(names) == working, (
                f"{program} step {number} ({fresh.where()}): {len(names)} instructions, "
                f"expected each of the {len(working)} working ENTRY instructions once"
            )


_PLUMBING = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _instr(op: str, thread: str, start: int, duration: int, run: int) -> TraceEvent:
    args = (("hlo_module", "jit_made"), ("hlo_op", op), ("run_id", run))
    return TraceEvent(op, thread, start, duration, args)


def _made_steps(fresh, step_name: str) -> tuple[list[TraceEvent], dict[int, list[str]]]:
    """A hand-built trace, its answer known from the construction: steps whose work runs on two
    execute threads at once (one thread's short events inside the other's long while, one of
    them the same instruction run again), whiles
    holding bodies two levels deep, an empty step, a run before the first step, and a while
    that starts in a step and ends after it (in no step), its body's event inside the step
    (nested in the while: not listed either)."""
    threads = [f"execute:{fresh.randrange(100)}", f"execute:{100 + fresh.randrange(100)}"]
    steps = fresh.randint(3, 5)
    empty, straddle = fresh.sample(range(steps), 2)
    events: list[TraceEvent] = []
    expected: dict[int, list[str]] = {}
    label = iter(f"{fresh.choice(('fusion', 'dot', 'copy', 'while'))}.{i}" for i in range(10**6))
    t = 1000
    for n in range(-1, steps):
        start, top = t, []
        t += 100 + 10 * fresh.randrange(5)  # host time before the work
        if n != empty:
            # thread 0: a long while holding its body (a loop holding another), then more
            outer = next(label)
            cursor = t + 10
            for _ in range(fresh.randint(1, 3)):
                inner = next(label)
                events.append(_instr(inner, threads[0], cursor, 200, n))
                events.append(_instr(next(label), threads[0], cursor + 20, 60, n))
                events.append(_instr(next(label), threads[0], cursor + 100, 60, n))
                cursor += 300
            events.append(_instr(outer, threads[0], t, cursor - t, n))
            top.append((t, outer))
            for _ in range(fresh.randint(0, 2)):
                cursor += 10 * fresh.randint(1, 4)
                op = next(label)
                events.append(_instr(op, threads[0], cursor, 50, n))
                top.append((cursor, op))
                cursor += 50
            # thread 1, at the same time: short events, each inside thread 0's while; the
            # first runs the while's instruction again (another execution of the program)
            at = t + 15
            for i in range(fresh.randint(1, 4)):
                op = outer if i == 0 else next(label)
                events.append(_instr(op, threads[1], at, 40, n + 1000))
                top.append((at, op))
                at += 50 + 10 * fresh.randrange(3)
            t = max(cursor, at)
        t += 100 + 10 * fresh.randrange(5)  # host time after the work
        if n >= 0:
            events.append(TraceEvent(step_name, "python", start, t - start, (("step_num", n),)))
            expected[n] = [op for _, op in sorted(top)]
        if n == straddle:  # a while that outlasts the step; its body's event lies inside it
            events.append(_instr(next(label), threads[0], t - 50, 120, -n))
            events.append(_instr(next(label), threads[0], t - 40, 20, -n))
        events.append(TraceEvent("end: x", threads[0], t - 60, 1))
        t += 200
    fresh.shuffle(events)
    return events, expected


@pytest.mark.task("step_instructions")
def test_step_instructions_on_a_made_trace(kata, fresh):
    """Events on two execute threads at once, loops in loops, an empty step, and an event that
    starts in a step and ends after it; the answer is known from how the trace was built."""
    for _ in range(3):
        step_name = fresh.choice(STEP_NAMES)
        events, expected = _made_steps(fresh, step_name)
        got = kata.step_instructions(events, step_name)
        assert got == expected, (
            f"a made trace of {len(expected)} steps ({fresh.where()}): the steps' instruction "
            f"lists differ (got {sum(map(len, got.values())) if isinstance(got, dict) else '?'} "
            f"entries, expected {sum(map(len, expected.values()))})"
        )


# ---- expected_counts -----------------------------------------------------------------------------


def _counted(profile: Profile, step: int) -> dict[str, int]:
    return dict(Counter(r.instruction for r in op_runs(profile) if r.step == step))


@pytest.mark.task("expected_counts")
def test_expected_counts_match_a_live_profile(kata, fresh):
    for program in PREDICT_BANK:
        seed = fresh.randrange(1 << 16)
        profile = _warm(program, seed, 1)
        got = kata.expected_counts(profile.hlo_text)
        expected = _counted(profile, 0)
        with check:
            assert got == expected, (
                f"{program} ({fresh.where()}): {len(got) if isinstance(got, dict) else got!r:.60} "
                f"instructions, {sum(got.values()) if isinstance(got, dict) else '?'} events; "
                f"the profile shows {len(expected)} instructions, {sum(expected.values())} events"
            )


@pytest.mark.task("expected_counts")
def test_expected_counts_on_renamed_modules(kata, fresh):
    for program in (fresh.choice(("looped", "nested")), fresh.choice(("mlp_grad", "rooted"))):
        profile = _warm(program, fresh.randrange(1 << 16), 1)
        expected = _counted(profile, 0)
        for variant in metamorphic.variants(profile.hlo_text, fresh.randrange(1 << 30)):
            got = kata.expected_counts(variant.text)
            with check:
                assert got == variant.rename(expected), (
                    f"{program} ({variant.kind}, {fresh.where()}): the counts differ from the "
                    "profile's once the names change"
                )


# ---- compiled_steps ------------------------------------------------------------------------------


def _compiling_trace(fresh, step_name: str) -> tuple[list[TraceEvent], list[int], str]:
    """Steps that run a compiled program, compile it for a new shape, compile a program that
    gives XLA no kernel to generate (a lone matmul: a backend compile, no fusion compiled), or
    only lower one; the steps that compiled are known from the construction."""
    program = fresh.choice(("looped", "heavy_line", "mlp_grad"))
    seeds = [fresh.randrange(1 << 16) for _ in range(3)]
    warm, warm_args = _compiled(program, seeds[0])
    steps = fresh.randint(4, 6)
    plan = ["run"] * steps
    compiling = sorted(fresh.sample(range(steps), 2))
    lowering = fresh.choice([i for i in range(steps) if i not in compiling])
    for i in compiling:
        plan[i] = "compile"
    plan[fresh.choice(compiling)] = "compile bare"
    plan[lowering] = "lower"
    fn = jax.jit(PROGRAMS[program])
    shapes = iter(seeds[1:])
    bare = jax.jit(lambda a: a @ a)
    square = np.ones((fresh.randint(3, 40),) * 2, np.float32)

    def body():
        for i, what in enumerate(plan):
            with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
                if what == "compile":
                    jax.clear_caches()  # so the call compiles, whatever shapes it draws
                    _block(fn(*args_for(program, next(shapes))))
                elif what == "compile bare":
                    jax.clear_caches()
                    _block(bare(square))
                elif what == "lower":
                    jax.clear_caches()
                    fn.lower(*args_for(program, seeds[0]))
                else:
                    _block(warm(*warm_args))

    jax.clear_caches()
    return trace_events(body), compiling, f"{program}, plan {plan}"


@pytest.mark.task("compiled_steps")
def test_compiled_steps_live(kata, fresh):
    step_name = fresh.choice(STEP_NAMES)
    events, expected, what = _compiling_trace(fresh, step_name)
    got = kata.compiled_steps(list(events), step_name)
    assert got == expected, f"{what} ({fresh.where()}): got {got!r:.80}"


@pytest.mark.task("compiled_steps")
def test_compiled_steps_cold_and_warm(kata, fresh):
    program, seed = _fresh_program(fresh)
    steps = fresh.randint(2, 4)
    jax.clear_caches()
    cold = capture_profile(PROGRAMS[program], *args_for(program, seed), steps=steps, cold=True)
    for label, profile, _names in _cases(cold, fresh):
        got = kata.compiled_steps(list(profile.events), profile.step_name)
        with check:
            assert got == [0], f"{program} cold ({label}, {fresh.where()}): got {got!r:.60}"
    warm = _warm(program, seed, steps)
    got = kata.compiled_steps(list(warm.events), warm.step_name)
    assert got == [], f"{program} warm ({fresh.where()}): got {got!r:.60}"


@pytest.mark.task("compiled_steps")
def test_compiled_steps_on_recording(kata):
    profile = _recorded("mlp_grad_cold")
    for label, case, _names in _cases(profile, random.Random(3)):
        got = kata.compiled_steps(list(case.events), case.step_name)
        with check:
            assert got == [0], f"mlp_grad_cold ({label}): got {got!r:.60}"


# ---- kind_shares, scope_shares, line_shares ------------------------------------------------------


def _shares_cases(fresh, task: str):
    """Recordings and live traces of the bank (loops, and a loop in a loop, always among them),
    each as it is and renamed."""
    programs = {"kind_shares": BANK, "scope_shares": ("layered",), "line_shares": BANK}[task]
    yield from (("recorded " + n, _recorded(n)) for n in sorted(PROFILES))
    always = ("layered",) if task == "scope_shares" else ("looped", "nested")
    for program in sorted({fresh.choice(programs), *always}):
        seed = fresh.randrange(1 << 16)
        yield (
            f"{program} live ({fresh.where()})",
            _messy(program, seed, 3, fresh.choice(STEP_NAMES)),
        )


def _run_shares(kata, fresh, task: str) -> None:
    for what, profile in _shares_cases(fresh, task):
        for label, case, _names in _cases(profile, fresh):
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
    profile = _messy("layered", seed, 3, STEP_NAME)
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
    profile = _warm("heavy_line", seed, 4)
    got = kata.line_shares(list(profile.events), profile.hlo_text, profile.step_name)
    assert isinstance(got, dict) and got, f"expected a non-empty dict, got {got!r:.60}"
    source, first = inspect.getsourcelines(PROGRAMS["heavy_line"])
    matmul = first + next(i for i, line in enumerate(source) if "x @ w" in line)
    top = max(got, key=lambda k: got[k])
    assert top == f"programs.py:{matmul}", f"heaviest line ({fresh.where()}): got {top!r}"


# ---- longest_gap ---------------------------------------------------------------------------------


def _gap_trace(fresh, step_name: str, where: str) -> tuple[list[TraceEvent], int, str]:
    """Steps of a program; the host sleeps HOST_DELAY_S once after step k: at the end of step k
    (inside it, after its work), at the start of step k + 1 (before its work), or between the
    two step events; and a fifth of that between the step events of another pair j, j + 1."""
    program = fresh.choice(("mlp_grad", "looped", "reshaping"))
    compiled, args = _compiled(program, fresh.randrange(1 << 16))
    steps = fresh.randint(3, 5)
    k, j = fresh.sample(range(steps - 1), 2)

    def body():
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
                if i == k + 1 and where == "start of next step":
                    time.sleep(HOST_DELAY_S)
                _block(compiled(*args))
                if i == k and where == "end of step":
                    time.sleep(HOST_DELAY_S)
            if i == k and where == "between steps":
                time.sleep(HOST_DELAY_S)
            if i == j:
                time.sleep(HOST_DELAY_S / 5)

    what = f"{program}, {steps} steps, the longer sleep at the {where} {k}, the shorter after {j}"
    return trace_events(body), k, what


@pytest.mark.task("longest_gap")
def test_longest_gap(kata, fresh):
    for where in fresh.sample(GAP_PLACES, len(GAP_PLACES)):
        step_name = fresh.choice(STEP_NAMES)
        events, expected, what = _gap_trace(fresh, step_name, where)
        got = kata.longest_gap(list(events), step_name)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): got {got!r:.40}"


@pytest.mark.task("longest_gap")
def test_longest_gap_renamed_and_shuffled(kata, fresh):
    step_name = fresh.choice(STEP_NAMES)
    events, expected, what = _gap_trace(fresh, step_name, fresh.choice(GAP_PLACES))
    profile = Profile(tuple(events), "", "", step_name)
    renamed, _names = _renamed_steps_only(profile, fresh)
    got = kata.longest_gap(list(renamed.events), renamed.step_name)
    assert got == expected, f"{what}, events shuffled ({fresh.where()}): got {got!r:.40}"


def _made_gaps(fresh, step_name: str) -> tuple[list[TraceEvent], int, str]:
    """A hand-built trace whose longest wait is known from the construction: host time before,
    after and between the step events; a step whose device work outlasts every wait (start to
    start, it is the longest); a step before the answer that runs the program twice or not at
    all; runs on two execute threads, a while holding its body."""
    steps = fresh.randint(5, 7)
    k = fresh.randrange(2, steps - 1)
    odd = fresh.randrange(k)
    heavy = fresh.choice([n for n in range(steps - 1) if n not in (k, odd, odd - 1)])
    runs_in = {n: 1 for n in range(steps)} | {odd: fresh.choice((0, 2))}
    delay = fresh.randrange(3)  # where the long wait goes: end of k, between, start of k + 1
    threads = [f"execute:{fresh.randrange(50)}", f"execute:{50 + fresh.randrange(50)}"]
    events: list[TraceEvent] = []
    t, run = 10_000, fresh.randrange(1000)
    for n in range(steps):
        waits = [fresh.randint(1, 5) * 1000 for _ in range(3)]  # before, after, between
        if n == k + 1 and delay == 2:
            waits[0] += 100_000
        if n == k and delay < 2:
            waits[1 + delay] += 100_000
        start = t
        t += waits[0]
        for _ in range(runs_in[n]):
            run += 1
            thread = fresh.choice(threads)
            work = 1_000_000 if n == heavy else fresh.randint(5, 9) * 1000
            events.append(_instr("while.1", thread, t, work, run))
            events.append(_instr("fusion.2", thread, t + 100, work // 2, run))
            events.append(_instr("copy.3", thread, t + work + 100, 500, run))
            t += work + 600
        t += waits[1]
        events.append(TraceEvent(step_name, "python", start, t - start, (("step_num", n),)))
        t += waits[2]
    fresh.shuffle(events)
    what = (
        f"a made trace: {steps} steps, step {odd} runs the program {runs_in[odd]} times, step "
        f"{heavy} works 10 times longer than the longest wait, which follows step {k}"
    )
    return events, k, what


@pytest.mark.task("longest_gap")
def test_longest_gap_on_made_traces(kata, fresh):
    for _ in range(4):
        step_name = fresh.choice(STEP_NAMES)
        events, expected, what = _made_gaps(fresh, step_name)
        got = kata.longest_gap(events, step_name)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): got {got!r:.40}"


def _renamed_steps_only(profile: Profile, rng: random.Random) -> tuple[Profile, dict]:
    step_name = rng.choice([n for n in STEP_NAMES if n != profile.step_name])
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
    rng.shuffle(events)
    return Profile(tuple(events), profile.hlo_text, profile.module, step_name), {}


# ---- train_loop ----------------------------------------------------------------------------------


def _batches(fresh, features: int, batch: int, out: int = 1) -> tuple[tuple, list]:
    rng = np.random.default_rng(fresh.randrange(1 << 16))
    scale = np.float32(1 / np.sqrt(features))
    state = (rng.normal(size=(features, out)).astype(np.float32), np.zeros(out, np.float32))
    batches = [
        (
            rng.normal(size=(batch, features)).astype(np.float32) * scale,
            rng.normal(size=(batch, out)).astype(np.float32),
        )
        for _ in range(fresh.randint(2, 4))
    ]
    return state, batches


def _expected_state(state, batches):
    step = jax.jit(sgd_step)
    for batch in batches:
        state, _loss = step(state, batch)
    return state


def _step_program(state, batch) -> tuple[str, set[str]]:
    """The module name and the working ENTRY instructions of sgd_step's optimized module (it
    holds no loop: each runs once, at top level, in every execution)."""
    module = parse_hlo(jax.jit(sgd_step).lower(state, batch).compile().as_text() or "")
    return module.name, {i.name for i in module.entry if i.opcode not in _PLUMBING}


def _check_loop(kata, fresh, state, batches) -> None:
    __tracebackhide__ = True
    step_name = fresh.choice(STEP_NAMES)
    shape = "x".join(map(str, np.shape(batches[0][0])))
    what = f"{len(batches)} batches of {shape} ({fresh.where()})"
    holder = []
    events = trace_events(
        lambda: holder.append(kata.train_loop(sgd_step, state, batches, step_name))
    )
    module, working = _step_program(state, batches[0])  # after: the loop must compile it
    steps = sorted(
        (e for e in events if e.name == step_name and e.arg("step_num") is not None),
        key=lambda e: e.start_ns,
    )
    numbers = [e.arg("step_num") for e in steps]
    assert numbers == list(range(len(batches))), f"{what}: step_nums {numbers}"
    for one, two in zip(steps, steps[1:], strict=False):
        assert one.end_ns <= two.start_ns, f"{what}: steps {one.arg('step_num')} and after overlap"
    ops = [e for e in events if e.hlo_op is not None]
    runs: dict[tuple, list[TraceEvent]] = defaultdict(list)
    for e in ops:
        runs[(e.arg("hlo_module"), e.arg("run_id"))].append(e)
    compiles = [e for e in events if e.name == "backend_compile_and_load"]
    for step in steps:
        n = step.arg("step_num")
        inside = {
            key
            for key, group in runs.items()
            if any(step.start_ns <= e.start_ns < step.end_ns for e in group)
        }
        with check:
            assert len(inside) == 1, f"{what}: step {n} holds {len(inside)} executions, expected 1"
        for key in inside:
            group = runs[key]
            outside = [
                e for e in group if not (step.start_ns <= e.start_ns and e.end_ns <= step.end_ns)
            ]
            with check:
                assert not outside, (
                    f"{what}: {len(outside)} of step {n}'s {len(group)} instruction events lie "
                    "outside its step event"
                )
            with check:
                assert key[0] == module and {e.hlo_op for e in group} == working, (
                    f"{what}: step {n} runs module {key[0]!r} ({len(group)} instruction events), "
                    f"not an execution of the step program's optimized module {module!r} "
                    f"(each of its {len(working)} working ENTRY instructions)"
                )
        held = [c for c in compiles if step.start_ns <= c.start_ns < step.end_ns]
        with check:
            assert not held, f"{what}: step {n} holds a backend compile"
    got = holder[0]
    expected = _expected_state(state, batches)
    leaves, want = jax.tree.leaves(got), jax.tree.leaves(expected)
    assert len(leaves) == len(want), (
        f"{what}: the state has {len(leaves)} arrays, expected {len(want)}"
    )
    for a, b in zip(leaves, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.task("train_loop")
def test_train_loop_reads_cleanly(kata, fresh):
    _check_loop(kata, fresh, *_batches(fresh, fresh.randint(2, 12), fresh.randint(4, 40)))


@pytest.mark.task("train_loop")
def test_train_loop_waits_for_big_steps(kata, fresh):
    """Batches big enough (x f32[2048,1024]) that a step's work outlasts its dispatch many times:
    a loop that does not wait sees the work land after its step event."""
    _check_loop(kata, fresh, *_batches(fresh, 1024, 2048, fresh.randint(32, 64)))
