"""The traces phase 14's tests read, and their renamed variants.

Every profile is real: recorded in recorded/ (trimmed), or captured live with JAX's own profiler
from the programs of programs.py (a warm capture, or a "messy" trace with a run before the first
step, two other modules' runs inside every step, one of them the same program under another
name, a second loop's steps named otherwise and an annotation named like the steps that is not
a step). A variant renames each instruction and computation of the module (the events' hlo_op and
name follow, in every module), the step events and their numbers, the threads, and shuffles the
events.
"""

import functools
import random
import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness import metamorphic
from katas.phase14.programs import (
    PROGRAMS,
    args_for,
    recorded_profile,
)
from xla_inspect import op_metadata, parse_hlo
from xla_inspect.profile import Profile, TraceEvent, capture_profile, trace_events
from xla_inspect.profile_query import instruction_info

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


_FIRST_SEED: dict[tuple[str, str, tuple], int] = {}


def sized(program: str, seed: int) -> int:
    """The first seed drawn in this process that gives `program` arguments of the shapes
    `seed` gives (the sizes are drawn as before: from `seed`).

    A compile or a live capture depends on the arguments' shapes, never on their values in a
    way a test expects (every expected value is read from the same trace), so the caches below
    are keyed by this seed: the tests of a file, and the versions of the learner's file one
    session runs (the census runs every decoy and red-team answer), share the compile and the
    capture of each drawn size instead of repeating them.
    """
    args = args_for(program, seed)
    shapes = tuple(np.shape(leaf) for leaf in jax.tree.leaves(args))
    # the structure too: a dict's keys are part of the program (scoped's scope names)
    return _FIRST_SEED.setdefault((program, str(jax.tree.structure(args)), shapes), seed)


def compiled_program(program: str, seed: int):
    """The program compiled for the sizes `seed` draws, and arguments of those sizes."""
    return _compiled_program(program, sized(program, seed))


@functools.cache
def _compiled_program(program: str, seed: int):
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


def twin_program(program: str, seed: int, name: str = ""):
    """The program under another name (`name`, or `twin_<program>`: its module is `jit_<name>`,
    not the profiled one), compiled for the sizes `seed` draws (other sizes than the profiled
    program's): its instructions bear (mostly) the profiled module's names."""
    return _twin_program(program, sized(program, seed), name)


@functools.cache
def _twin_program(program: str, seed: int, name: str):
    fn = PROGRAMS[program]

    def twin(*args):
        return fn(*args)

    twin.__name__ = twin.__qualname__ = name or f"twin_{program}"
    args = args_for(program, seed)
    compiled = jax.jit(twin).lower(*args).compile()
    ready(compiled(*args))
    return compiled, args


def other_step_name(step_name: str, rng: random.Random) -> str:
    """The name of a second loop's steps (an evaluation loop annotated beside the training
    loop): not `step_name`, though it may begin or end with it, and none of STEP_NAMES."""
    return rng.choice(("eval", f"{step_name}_eval", f"eval_{step_name}"))


def messy_trace(program: str, seed: int, steps: int, step_name: str) -> Profile:
    """A trace of `steps` steps of the program, with one run of it before the first step (in
    no step) and inside every step, in an order drawn per step, a run of it, of its twin (the
    same program under another module name, at other sizes) and of another module. After each
    step, a step of a second loop, named otherwise and numbered alike (an evaluation step: a
    `StepTraceAnnotation` of another name), runs the program once more; and the whole loop
    lies in an annotation named `step_name` without a step_num (a `TraceAnnotation`): neither
    is a step event.

    The annotations are labels: the capture is shared by every step name (and every seed of
    the same sizes), its annotations then named `step_name` and the second loop's name."""
    base = sized(program, seed)
    other = other_step_name(step_name, random.Random(seed))
    events, text = _messy_capture(program, base, steps)
    names = {_STEP_LABEL: step_name, _OTHER_LABEL: other}
    events = tuple(
        TraceEvent(names[e.name], e.thread, e.start_ns, e.duration_ns, e.args)
        if e.name in names
        else e
        for e in events
    )
    return Profile(events, text, module_name(text), step_name)


_STEP_LABEL, _OTHER_LABEL = "messy-trace-step", "messy-trace-other-loop"


@functools.cache
def _messy_capture(program: str, seed: int, steps: int) -> tuple[tuple[TraceEvent, ...], str]:
    runs = [
        compiled_program(program, seed),
        twin_program(program, (seed + 1) % (1 << 16)),
        (other_module()[0], other_module()[1:]),
    ]
    order = random.Random(seed)

    def body():
        ready(runs[0][0](*runs[0][1]))
        with jax.profiler.TraceAnnotation(_STEP_LABEL):
            for i in range(steps):
                with jax.profiler.StepTraceAnnotation(_STEP_LABEL, step_num=i):
                    for fn, args in order.sample(runs, len(runs)):
                        ready(fn(*args))
                with jax.profiler.StepTraceAnnotation(_OTHER_LABEL, step_num=i):
                    ready(runs[0][0](*runs[0][1]))

    events = tuple(trace_events(body))
    return events, runs[0][0].as_text() or ""


def warm_profile(program: str, seed: int, steps: int) -> Profile:
    """A warm capture of `steps` steps of the program at the sizes `seed` draws."""
    return _warm_profile(program, sized(program, seed), steps)


@functools.cache
def _warm_profile(program: str, seed: int, steps: int) -> Profile:
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
    """The profile with the module renamed (XLA's parser accepts it), the events' hlo_op
    following the new names (names are labels: an event of another module that bears one of the
    module's names follows too, so a twin of the module still shares its names) while the
    events' own names, the runtime's labels, stay as they ran (an event's name need not be the
    instruction's: XLA:GPU names it after the kernel), another step name, the steps numbered
    from another first number, relabelled threads, and the events shuffled."""
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
            args = tuple((k, new if k == "hlo_op" else v) for k, v in e.args)
        if e.name == profile.step_name:
            name = step_name
        return TraceEvent(name, threads[e.thread], e.start_ns, e.duration_ns, args)

    events = [renumbered(event(e), step_name, first) for e in profile.events]
    rng.shuffle(events)
    return Profile(tuple(events), text, profile.module, step_name), names


def shuffled_numbers(profile: Profile, rng: random.Random) -> Profile:
    """The profile with its steps' numbers dealt out in a drawn order, not the order the steps
    start in (another order than start order whenever there are two steps or more), as when
    two threads take turns numbering one loop's steps: a step is its step_num, not its place."""
    steps = sorted(
        (e for e in profile.events if e.name == profile.step_name),
        key=lambda e: e.start_ns,
    )
    numbers = [n for e in steps if isinstance(n := e.arg("step_num"), int)]
    dealt = list(numbers)
    while len(set(numbers)) > 1 and dealt == numbers:
        rng.shuffle(dealt)
    new = dict(zip(numbers, dealt, strict=True))

    def event(e: TraceEvent) -> TraceEvent:
        number = e.arg("step_num")
        if e.name != profile.step_name or not isinstance(number, int):
            return e
        args = tuple((k, new[number] if k == "step_num" else v) for k, v in e.args)
        return TraceEvent(e.name, e.thread, e.start_ns, e.duration_ns, args)

    return Profile(
        tuple(map(event, profile.events)), profile.hlo_text, profile.module, profile.step_name
    )


def with_half_instruction_events(profile: Profile, rng: random.Random) -> Profile:
    """The profile with, in every step holding instruction events, two events of the runtime
    on the thread of one of them that each carry only one of an instruction event's two args:
    one an `hlo_op` (the name of an instruction of the module, drawn) without an `hlo_module`,
    the other an `hlo_module` (the module's name) without an `hlo_op`, each spanning that
    thread's instruction events in the step (starting with its first, ending with its last).
    Neither is an instruction event: the steps' instructions, and their nesting, are the
    profile's."""
    names = sorted({i.name for c in parse_hlo(profile.hlo_text).computations for i in c})
    steps = [
        e
        for e in profile.events
        if e.name == profile.step_name and isinstance(e.arg("step_num"), int)
    ]
    instructions = [e for e in profile.events if e.hlo_op is not None and e.arg("hlo_module")]
    added: list[TraceEvent] = []
    for step in steps:
        inside = [
            e for e in instructions if step.start_ns <= e.start_ns and e.end_ns <= step.end_ns
        ]
        if not inside:
            continue
        thread = rng.choice(inside).thread
        mine = [e for e in inside if e.thread == thread]
        start = min(e.start_ns for e in mine)
        span = max(e.end_ns for e in mine) - start
        run = (("run_id", rng.randrange(1 << 20)),)
        label = rng.choice(("ThunkExecutor::Execute", "TfrtCpuExecutable::Execute", "Execute"))
        added.append(TraceEvent(label, thread, start, span, (("hlo_op", rng.choice(names)), *run)))
        added.append(TraceEvent(label, thread, start, span, (("hlo_module", profile.module), *run)))
    events = [*profile.events, *added]
    rng.shuffle(events)
    return Profile(tuple(events), profile.hlo_text, profile.module, profile.step_name)


def cases(profile: Profile, rng: random.Random):
    """The profile as it is, then renamed: (label, profile, names)."""
    yield "as recorded", profile, {}
    renamed, names = renamed_profile(profile, rng)
    yield "renamed", renamed, names


PLUMBING = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def instr_event(
    op: str,
    thread: str,
    start: int,
    duration: int,
    run: int,
    module: str = "jit_made",
    name: str | None = None,
) -> TraceEvent:
    """An instruction event running `op`, named `name` (the runtime's label; default `op`, as
    XLA:CPU names them)."""
    args = (("hlo_module", module), ("hlo_op", op), ("run_id", run))
    return TraceEvent(op if name is None else name, thread, start, duration, args)


def joined_scopes(text: str, scope_of, rng: random.Random) -> str:
    """The module with one working instruction's op_name joined (`;`) to the op_name of an
    instruction of another scope, as XLA joins the op_names of what it fuses: the scope is the
    first one's."""
    module = parse_hlo(text)
    laid, todo = [], [module.entry.name]  # the computations made_profile lays events for
    while todo:
        laid.append(todo.pop())
        for ins in module[laid[-1]].instructions:
            if ins.opcode == "while":
                todo.append(ins.attribute("body", "").lstrip("%"))
            elif ins.opcode in ("conditional", "call"):
                todo.extend(ins.called_computations)
    named = [
        (i, op_metadata.op_name(i))
        for c in laid
        for i in module[c].instructions
        if i.opcode not in PLUMBING and scope_of(op_metadata.op_name(i))
    ]
    for ins, op_name in rng.sample(named, len(named)):
        other = [o for _, o in named if scope_of(o) != scope_of(op_name)]
        if other:
            lines = text.splitlines(keepends=True)
            line = lines[ins.line_no - 1]
            joined = f'op_name="{op_name};{rng.choice(other)}"'
            lines[ins.line_no - 1] = line.replace(f'op_name="{op_name}"', joined, 1)
            return "".join(lines)
    return text


_OP_NAME = re.compile(r'op_name="([^"]*)"')


def reprefixed(text: str, rng: random.Random) -> str:
    """The module with the first part of each op_name (`jit(fn)`, the function JAX traced)
    written as another transformation or none would write it (`pjit(fn)`, `pmap(fn)`,
    `xla_pmap(fn)`, a bare `fn`), drawn per op_name: the scope never reads that part."""

    def first_part(part: str) -> str:
        head, slash, rest = part.partition("/")
        if not slash:
            return part
        fn = head[4:-1] if head.startswith("jit(") and head.endswith(")") else head
        wrapper = rng.choice(("pjit({})", "pmap({})", "xla_pmap({})", "{}"))
        return wrapper.format(fn) + slash + rest

    def op_name(match: re.Match[str]) -> str:
        return 'op_name="{}"'.format(";".join(map(first_part, match.group(1).split(";"))))

    return _OP_NAME.sub(op_name, text)


def bared(text: str, rng: random.Random) -> str:
    """The module with op_names written without any `/`, one part alone (as XLA names what its
    own passes add: `op_name="reduce_window_sum"`): a primitive's name, or a scope's, drawn;
    one working ENTRY instruction's always (its primitive's name), others drawn. Such an
    op_name is its first part only: no scope ("")."""
    module = parse_hlo(text)
    named = [
        i
        for i in module.entry
        if i.opcode not in PLUMBING and op_metadata.op_name(i) and ";" not in op_metadata.op_name(i)
    ]
    always = rng.choice(named).line_no if named else -1
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines, 1):
        found = _OP_NAME.search(line)
        if found is None or ";" in found.group(1) or (number != always and rng.random() > 0.25):
            continue  # joined op_names (joined_scopes) kept
        parts = [p for p in found.group(1).split(";", 1)[0].split("/") if p]
        bare = parts[-1] if number == always else rng.choice(parts[1:] or parts)
        lines[number - 1] = line[: found.start(1)] + bare + line[found.end(1) :]
    return "".join(lines)


def step_threads(fresh, steps: int) -> list[str]:
    """The thread of each of `steps` step events, as when two loops annotate alike: the first
    step on one thread, a later step on another, the rest drawn between the two."""
    on = fresh.sample(("python", "MainThread", f"Thread-{fresh.randint(1, 9)}", "loader"), 2)
    aside = fresh.randrange(1, steps)
    return [on[n == aside] if n in (0, aside) else fresh.choice(on) for n in range(steps)]


def made_profile(
    fresh, program: str, step_name: str, scope_of=None, label_of=None, seed: int | None = None
) -> Profile:
    """A hand-built trace over a real module (`program` compiled at fresh sizes; with
    `scope_of`, one op_name joined to another scope's): in every step two executions of it at
    once on two execute threads (the second starting while the first's events are open; a
    while's body runs twice inside its event, its first body event starting with the while and,
    drawn, its last body event ending with it; a conditional's drawn branch, and a call's
    computation (as when XLA does not run the call as one kernel), inside its event), then one
    of another module bearing the same names, whose name extends this one's (`jit_f_2` beside
    `jit_f`); an execution before the first step; the step
    events on two threads (the first step on one, a later one on the other). Durations are
    drawn: the shares are the construction's. With `label_of` (a function of an
    `InstructionInfo`: the group a task reads), the instructions of one group of the ENTRY
    drawn do a few ns of work each and the others thousands (a group far under 1%). `seed`
    sizes the program (drawn when None)."""
    seed = fresh.randrange(1 << 16) if seed is None else seed
    text = compiled_program(program, seed)[0].as_text() or ""
    if scope_of is not None:
        text = joined_scopes(text, scope_of, fresh)
    module = parse_hlo(text)
    threads = fresh.sample([f"execute:{i}" for i in range(100)], 2)
    events: list[TraceEvent] = []
    faint: set[str] = set()
    scale = 1
    if label_of is not None:
        info = instruction_info(text, module)
        labels = {i.name: label_of(info[i.name]) for c in module.computations for i in c}
        faint_label = fresh.choice(
            sorted({labels[i.name] for i in module.entry if i.opcode not in PLUMBING})
        )
        faint, scale = {n for n, label in labels.items() if label == faint_label}, 100

    def lay(
        computation: str, at: int, thread: int, run: int, name: str = module.name
    ) -> tuple[int, int]:
        """Lays the computation's working instructions from `at`: (where the next one may
        start, where the last one ended)."""
        t = last = at
        for ins in module[computation].instructions:
            if ins.opcode in PLUMBING:
                continue
            work = (
                1 + fresh.randrange(3) if ins.name in faint else scale * 10 * fresh.randint(2, 60)
            )
            end = t
            if ins.opcode == "while":
                for _ in range(2):
                    end, inner = lay(ins.attribute("body", "").lstrip("%"), end, thread, run, name)
                if inner > t and fresh.random() < 0.5:  # ends in the ns its body's last event does
                    end, work = inner, 0
            elif ins.opcode in ("conditional", "call"):
                branch = fresh.choice(ins.called_computations)
                end, _ = lay(branch, end + 10 * fresh.randint(0, 2), thread, run, name)
            end += work
            events.append(instr_event(ins.name, threads[thread], t, end - t, run, name))
            last, t = end, end + 10 * fresh.randint(0, 3)
        return t, last

    # the other module's name extends this one's (as jit_f_2 extends jit_f): not this module
    twin = module.name + fresh.choice(("_2", "_1", "2", "_eval", "_twin", "_grad"))
    t = lay(module.entry.name, 0, 0, 0)[0] + 1000
    step_thread = step_threads(fresh, 3)
    for n in range(3):
        start, t = t, t + 500
        ends = [
            lay(module.entry.name, t, 0, 2 * n + 1)[0],
            lay(module.entry.name, t + 30, 1, 2 * n + 2)[0],
        ]
        t = lay(module.entry.name, max(ends), 1, 0, twin)[0] + 500
        events.append(TraceEvent(step_name, step_thread[n], start, t - start, (("step_num", n),)))
        t += 1000
    fresh.shuffle(events)
    return Profile(tuple(events), text, module.name, step_name)
