"""Phase 14 tests of compiled_steps: which steps of a trace compiled (the other reading tasks:
test_phase14.py, test_phase14_time.py and test_phase14_gap.py; the traces: traces.py).

The traces are real (captured live, cold and warm, on sizes drawn fresh for each version of the
learner's file, and the recording of recorded/), or built by hand where a real trace cannot be
made to order (a compile on a worker thread that outlasts its step); the steps that compiled are
known from the construction, never from a duration.
"""

import random

import jax
import numpy as np
import pytest
from pytest_check import check

from katas.phase14.programs import PROGRAMS, args_for
from katas.phase14.traces import (
    BANK,
    STEP_NAMES,
    cases,
    instr_event,
    other_step_name,
    ready,
    recording,
    step_numbers,
    twin_program,
    warm_profile,
)
from xla_inspect.profile import TraceEvent, capture_profile, trace_events

COMPILING = ("compile", "compile bare", "compile only")


def _compiling_trace(fresh, step_name: str) -> tuple[list[TraceEvent], list[int], str]:
    """Steps that run a compiled program (named `compiled_<program>`: a name that holds
    "compile" is a label, not a compile), compile it for a new shape and run it, compile a
    program that gives XLA no kernel to generate (a lone matmul: a backend compile, no fusion
    compiled), compile one ahead of time and run nothing, or only lower one, numbered from 0 or
    from a later step (a resumed loop); the steps that compiled are known from the
    construction."""
    program = fresh.choice(("looped", "heavy_line", "mlp_grad"))
    seeds = [fresh.randrange(1 << 16) for _ in range(4)]
    warm, warm_args = twin_program(program, seeds[0], f"compiled_{program}")
    steps = fresh.randint(5, 7)
    plan = ["run"] * steps
    compiling = fresh.sample(range(steps), len(COMPILING))
    lowering = fresh.choice([i for i in range(steps) if i not in compiling])
    for i, what in zip(compiling, COMPILING, strict=True):
        plan[i] = what
    plan[lowering] = "lower"
    fn = jax.jit(PROGRAMS[program])
    shapes = iter(seeds[1:])
    bare = jax.jit(lambda a: a @ a)
    square = np.ones((fresh.randint(3, 40),) * 2, np.float32)
    first = fresh.choice((0, fresh.randint(1, 900)))

    def body():
        for i, what in enumerate(plan, start=first):
            with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
                if what == "run":
                    ready(warm(*warm_args))
                    continue
                jax.clear_caches()  # so the call compiles, whatever shapes it draws
                if what == "compile":
                    ready(fn(*args_for(program, next(shapes))))
                elif what == "compile bare":
                    ready(bare(square))
                elif what == "compile only":
                    fn.lower(*args_for(program, next(shapes))).compile()
                else:
                    fn.lower(*args_for(program, seeds[0]))

    jax.clear_caches()
    return (
        trace_events(body),
        sorted(first + i for i in compiling),
        f"{program}, plan {plan} from {first}",
    )


@pytest.mark.task("compiled_steps")
def test_compiled_steps_live(kata, fresh):
    step_name = fresh.choice(STEP_NAMES)
    events, expected, what = _compiling_trace(fresh, step_name)
    got = kata.compiled_steps(list(events), step_name)
    assert got == expected, f"{what} ({fresh.where()}): got {got!r:.80}"


@pytest.mark.task("compiled_steps")
def test_compiled_steps_cold_and_warm(kata, fresh):
    program, seed = fresh.choice(BANK), fresh.randrange(1 << 16)
    steps = fresh.randint(2, 4)
    jax.clear_caches()
    cold = capture_profile(PROGRAMS[program], *args_for(program, seed), steps=steps, cold=True)
    for label, profile, _names in cases(cold, fresh):
        got = kata.compiled_steps(list(profile.events), profile.step_name)
        first = step_numbers(profile)[0]  # the cold call compiles in the first step
        with check:
            assert got == [first], f"{program} cold ({label}, {fresh.where()}): got {got!r:.60}"
    warm = warm_profile(program, seed, steps)
    got = kata.compiled_steps(list(warm.events), warm.step_name)
    assert got == [], f"{program} warm ({fresh.where()}): got {got!r:.60}"


@pytest.mark.task("compiled_steps")
def test_compiled_steps_on_recording(kata):
    profile = recording("mlp_grad_cold")
    for label, case, _names in cases(profile, random.Random(3)):
        got = kata.compiled_steps(list(case.events), case.step_name)
        with check:
            assert got == step_numbers(case)[:1], f"mlp_grad_cold ({label}): got {got!r:.60}"


PLAN = ("compile", "compile only", "compile past the end", "compile two", "lower")


def _made_compiles(fresh, step_name: str) -> tuple[list[TraceEvent], list[int], str]:
    """A hand-built trace, its answer known from the construction: steps that run a program
    (its Python call `PjitFunction(compiled_step)`), compile and run it, compile it and run
    nothing (the compile starting in the ns the step starts: inside it), compile and run it
    and then compile a second program (listed once), only trace and lower it, or start a
    compile on a worker thread that ends after the step closes (a compile that started in the
    step); a compile on another worker that starts in the host time before step `into` (a step
    that compiled nothing) and ends inside it (started before it: not that step's compile).
    A backend compile's kernels (FusionCompiler::Compile, on codegen threads) are compiled at
    any time within it: a worker's compile that outlasts its step compiles its last kernel in
    the next step, the one before `into` its last kernel inside `into` (part of a compile that
    started elsewhere: neither step compiled). A third worker's compile starts in the host time
    after a step `after` that compiled nothing (no step's compile: it starts before the next).
    After one step, a step of a second loop, named otherwise and numbered like a step that did
    not compile, that compiles and runs; and around them all an event named `step_name` without
    a step_num (neither is a step event)."""
    steps = fresh.randint(5, 7)
    plan = fresh.sample([*PLAN, *["run"] * (steps - len(PLAN))], steps)
    into = fresh.choice([i for i in range(steps) if plan[i] not in PLAN[:4]])
    after = fresh.choice([i for i in range(steps) if plan[i] not in PLAN[:4]])
    workers = fresh.sample([f"compile-worker:{i}" for i in range(100)], 3)
    runs = iter(range(fresh.randrange(1000), 1 << 30))
    first = fresh.choice((0, fresh.randint(1, 900)))
    other = other_step_name(step_name, fresh)
    evaluated = fresh.randrange(steps)
    number = first + fresh.choice([i for i in range(steps) if plan[i] not in PLAN[:4]])
    events: list[TraceEvent] = []

    def compile_at(thread: str, start: int, duration: int, last: int | None = None) -> None:
        """A backend compile and its kernels, each drawn within it; `last`: a kernel there."""
        events.append(TraceEvent("backend_compile_and_load", thread, start, duration))
        kernels = [fresh.randint(start + 1, start + duration - 41) for _ in range(3)]
        kernels = kernels[: fresh.randint(0, 2)] if last is None else [*kernels[:1], last]
        for i, at in enumerate(kernels):  # a compile may generate no kernel
            module = (("module", f"fusion.{i}_kernel_module"),)
            events.append(TraceEvent("FusionCompiler::Compile", f"codegen:{i}", at, 40, module))

    def execute(start: int) -> int:
        events.append(TraceEvent("PjitFunction(compiled_step)", "python", start, 900))
        run = next(runs)
        for k, op in enumerate(("fusion.1", "copy.2")):
            events.append(instr_event(op, "execute", start + 100 + 300 * k, 200, run))
        return start + 900

    t = 1000
    for i, what in enumerate(plan):
        t += 400  # host time between the steps
        start = t
        if i == into:  # its last kernel compiled 5 ns into the step
            compile_at(workers[0], start - 200, 200 + fresh.randint(50, 90), start + 5)
        if i - 1 == after:  # late in the host time after a step that compiled nothing
            compile_at(workers[2], start - 150, 150 + fresh.randint(50, 90))
        t += 100
        if what == "compile only":  # the step's first act: the compile starts in its first ns
            compile_at("python", start, 3100)
            t += 3000
        elif what == "compile":
            compile_at("python", t, 3000)
            t += 3000
        elif what == "compile two":  # the step's program, then a helper dispatched eagerly
            compile_at("python", t, 3000)
            t = execute(t + 3000)
            compile_at("python", t + 50, 1000)
            t += 1050
        elif what == "lower":
            events.append(TraceEvent("trace_to_jaxpr_dynamic", "python", t, 500))
            events.append(TraceEvent("lower_sharding_computation", "python", t + 500, 500))
            t += 1000
        elif what == "compile past the end":  # its last kernel early in the next step
            late = 1500 if i != evaluated else 3650  # after the other loop's step, if one
            compile_at(workers[1], t, late + 40 + fresh.randint(0, 600), t + late)
        if what != "compile only":
            t = execute(t)
        t += 100
        events.append(TraceEvent(step_name, "python", start, t - start, (("step_num", first + i),)))
        if i == evaluated:  # a second loop's step, named otherwise, compiles: not a step event
            at, t = t + 50, execute(t + 1200) + 50
            compile_at("python", at + 100, 1000)
            events.append(TraceEvent(other, "python", at, t - at, (("step_num", number),)))
    if after == steps - 1:  # after the last step, which compiled nothing: in no step
        compile_at(workers[2], t + 200, 300)
    # the whole loop in an annotation named like the steps, without a step_num: not a step
    events.append(TraceEvent(step_name, "python", 500, t + 500))
    fresh.shuffle(events)
    expected = [first + i for i, what in enumerate(plan) if what in PLAN[:4]]
    return events, expected, f"a made trace: {steps} steps from {first}, each kind of {PLAN}"


@pytest.mark.task("compiled_steps")
def test_compiled_steps_on_a_made_trace(kata, fresh):
    """Compiles that begin before a step and end inside it, or begin in a step and outlast it,
    on worker threads; a compile that begins in the ns its step begins and runs nothing; a
    program whose name holds "compile"; a compile in a step of another name, and an event named
    like the steps without a step_num."""
    for _ in range(2):
        step_name = fresh.choice(STEP_NAMES)
        events, expected, what = _made_compiles(fresh, step_name)
        got = kata.compiled_steps(events, step_name)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): got {got!r:.80}"
