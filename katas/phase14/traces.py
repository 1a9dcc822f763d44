"""The traces phase 14's tests read, and their renamed variants.

Every profile is real: recorded in recorded/ (trimmed), or captured live with JAX's own profiler
from the programs of programs.py (a warm capture, or a "messy" trace with a run before the first
step and two other modules' runs inside every step, one of them the same program under another
name). A variant renames each instruction and computation of the module (the events' hlo_op and
name follow, in every module), the step events and their numbers, the threads, and shuffles the
events.
"""

import functools
import random

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness import metamorphic
from katas.phase14.programs import (
    PROGRAMS,
    args_for,
    recorded_profile,
)
from xla_inspect import parse_hlo
from xla_inspect.profile import Profile, TraceEvent, capture_profile, trace_events

BANK = (
    "mlp_grad",
    "looped",
    "reshaping",
    "layered",
    "heavy_line",
    "branchy",
    "nested",
    "rooted",
    "spread",
)
STEP_NAMES = ("train", "step", "iteration", "batch_step")


# ---- traces --------------------------------------------------------------------------------------


def ready(value):
    return jax.block_until_ready(value)


@functools.cache
def compiled_program(program: str, seed: int):
    args = args_for(program, seed)
    compiled = jax.jit(PROGRAMS[program]).lower(*args).compile()
    ready(compiled(*args))
    return compiled, args


@functools.cache
def other_module():
    """A second module run inside the steps: its events are not the profiled module's."""
    x = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(6, 8)
    compiled = jax.jit(lambda v: (jnp.tanh(v) * 3.0, jnp.exp(v).sum())).lower(x).compile()
    ready(compiled(x))
    return compiled, x


@functools.cache
def twin_program(program: str, seed: int, name: str = ""):
    """The program under another name (`name`, or `twin_<program>`: its module is `jit_<name>`,
    not the profiled one), compiled for other sizes: its instructions bear (mostly) the profiled
    module's names."""
    fn = PROGRAMS[program]

    def twin(*args):
        return fn(*args)

    twin.__name__ = twin.__qualname__ = name or f"twin_{program}"
    args = args_for(program, seed)
    compiled = jax.jit(twin).lower(*args).compile()
    ready(compiled(*args))
    return compiled, args


@functools.cache
def messy_trace(program: str, seed: int, steps: int, step_name: str) -> Profile:
    """A trace of `steps` steps of the program, with one run of it before the first step (in
    no step) and inside every step, in an order drawn per step, a run of it, of its twin (the
    same program under another module name, at other sizes) and of another module."""
    runs = [
        compiled_program(program, seed),
        twin_program(program, (seed + 1) % (1 << 16)),
        (other_module()[0], other_module()[1:]),
    ]
    order = random.Random(seed)

    def body():
        ready(runs[0][0](*runs[0][1]))
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
                for fn, args in order.sample(runs, len(runs)):
                    ready(fn(*args))

    events = tuple(trace_events(body))
    text = runs[0][0].as_text() or ""
    return Profile(events, text, module_name(text), step_name)


@functools.cache
def warm_profile(program: str, seed: int, steps: int) -> Profile:
    return capture_profile(PROGRAMS[program], *args_for(program, seed), steps=steps)


def module_name(hlo_text: str) -> str:
    return parse_hlo(hlo_text).name


def recording(name: str) -> Profile:
    return recorded_profile(name)


# ---- renaming ------------------------------------------------------------------------------------


def renumbered(event: TraceEvent, step_name: str, first: int) -> TraceEvent:
    """A step event numbered from `first` instead of 0 (a loop resumed at step `first`)."""
    number = event.arg("step_num")
    if event.name != step_name or not isinstance(number, int):
        return event
    args = tuple((k, number + first if k == "step_num" else v) for k, v in event.args)
    return TraceEvent(event.name, event.thread, event.start_ns, event.duration_ns, args)


def step_numbers(profile: Profile) -> list[int]:
    """The step_nums of the profile's step events, in the order they start."""
    steps = [e for e in profile.events if e.name == profile.step_name]
    return [int(e.arg("step_num") or 0) for e in sorted(steps, key=lambda e: e.start_ns)]


def renamed_profile(profile: Profile, rng: random.Random) -> tuple[Profile, dict[str, str]]:
    """The profile with the module renamed (XLA's parser accepts it), the events following the
    new names (names are labels: an event of another module that bears one of the module's
    names follows too, so a twin of the module still shares its names), another step name, the
    steps numbered from another first number, relabelled threads, and the events shuffled."""
    variant = next(
        (v for v in metamorphic.variants(profile.hlo_text, rng.randrange(1 << 30))), None
    )
    names = dict(variant.names) if variant is not None else {}
    text = variant.text if variant is not None else profile.hlo_text
    step_name = rng.choice([n for n in STEP_NAMES if n != profile.step_name])
    first = rng.randint(1, 5000)
    threads = {t: f"t{rng.randrange(1000)}-{t}" for t in {e.thread for e in profile.events}}
    own = set(names) & {i.name for c in parse_hlo(profile.hlo_text).computations for i in c}

    def event(e: TraceEvent) -> TraceEvent:
        name = e.name
        args = e.args
        if e.hlo_op in own:
            new = names[e.hlo_op or ""]
            name = new if e.name == e.hlo_op else e.name
            args = tuple((k, new if k == "hlo_op" else v) for k, v in e.args)
        if e.name == profile.step_name:
            name = step_name
        return TraceEvent(name, threads[e.thread], e.start_ns, e.duration_ns, args)

    events = [renumbered(event(e), step_name, first) for e in profile.events]
    rng.shuffle(events)
    return Profile(tuple(events), text, profile.module, step_name), names


def cases(profile: Profile, rng: random.Random):
    """The profile as it is, then renamed: (label, profile, names)."""
    yield "as recorded", profile, {}
    renamed, names = renamed_profile(profile, rng)
    yield "renamed", renamed, names


PLUMBING = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def instr_event(
    op: str, thread: str, start: int, duration: int, run: int, module: str = "jit_made"
) -> TraceEvent:
    args = (("hlo_module", module), ("hlo_op", op), ("run_id", run))
    return TraceEvent(op, thread, start, duration, args)
