"""Where the learner stands: refresh stale phases (with progress), find the current task.

A phase is rerun only when its key (see `state.phase_key`) changed since its outcomes were
cached; everything stale runs in one pytest session.

The current task is the first unfinished task of the phase the learner is working on: the phase
of the last `katas start phaseN`, or the phase whose kata file they changed last, whichever came
later. Past it, a phase whose dependency group is not installed is passed over (its compiling
tests skip), unless the learner chose it or nothing else is left.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kata_harness.curriculum import Phase, Task
from xla_inspect.targets import group_missing

from .runner import ProgressFn, run_phases
from .state import PhaseOutcome, State, phase_keys
from .targets import all_phases


def make_console(*, stderr: bool = False) -> Console:
    """Colours and live displays only on a terminal; rich honours NO_COLOR by itself."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(
        file=stream,
        highlight=False,
        no_color="NO_COLOR" in os.environ,
        soft_wrap=not stream.isatty(),
    )


def run_with_progress(
    phases: list[Phase],
    keys: dict[str, str],
    *,
    impl: str = "katas",
    console: Console | None = None,
    on_progress: ProgressFn | None = None,
) -> dict[str, PhaseOutcome]:
    """Run `phases`, showing a progress bar on a terminal or one line otherwise (on `console`,
    by default stderr); `on_progress` also hears of every finished test."""
    err = console or make_console(stderr=True)
    names = ", ".join(p.name for p in phases)
    if not err.is_terminal:
        err.print(f"katas: running the tests of {names} ...")
        return run_phases(phases, impl=impl, keys=keys, on_progress=on_progress)
    columns = (
        TextColumn("running {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with (
        _uncaptured(err) as live,
        Progress(
            *columns, console=live, transient=True, redirect_stdout=False, redirect_stderr=False
        ) as bar,
    ):
        task = bar.add_task(names, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            if on_progress:
                on_progress(done, total)

        return run_phases(phases, impl=impl, keys=keys, on_progress=advance)


@contextlib.contextmanager
def _uncaptured(console: Console) -> Iterator[Console]:
    """A console on a duplicate of `console`'s file descriptor: pytest captures descriptors 1
    and 2 while tests run, which would freeze a progress bar drawn on them."""
    try:
        fd = os.dup(console.file.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):  # not a real file: draw as is
        yield console
        return
    with os.fdopen(fd, "w", encoding="utf-8") as terminal:
        yield Console(
            file=terminal, highlight=False, no_color=console.no_color, force_terminal=True
        )


def refresh(
    phases: Sequence[Phase] | None = None, *, force: bool = False, state: State | None = None
) -> dict[str, PhaseOutcome]:
    """Outcomes of `phases` (default: all), rerunning only the stale ones; saves the state."""
    chosen = list(phases if phases is not None else all_phases())
    state = state or State.load()
    keys = phase_keys(chosen)
    stale = [p for p in chosen if force or state.fresh(p.name, keys[p.name]) is None]
    if stale:
        outcomes = run_with_progress(stale, keys)
        state.update(lambda current: current.phases.update(outcomes))
    return {p.name: state.phases[p.name] for p in chosen}


def available(phase: Phase) -> bool:
    """False when the phase needs a dependency group that is not installed."""
    return not (phase.needs and group_missing(phase.needs))


def is_stub(phase: Phase, text: str) -> bool:
    """Every task of the phase still raises its stub's NotImplementedError."""
    return all(
        f'NotImplementedError("{phase.name} task {task.number}: {task.function}")' in text
        for task in phase.tasks
    )


def last_touched() -> tuple[float, Phase] | None:
    """(modification time, phase) of the newest kata file that is no longer the shipped stub."""
    touched = []
    for phase in all_phases():
        try:
            when = phase.kata_path.stat().st_mtime
            text = phase.kata_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not is_stub(phase, text):
            touched.append((when, phase))
    return max(touched, key=lambda found: found[0], default=None)


def working_phase(state: State) -> Phase | None:
    """The phase the learner works on: the later of `katas start` and the last kata file they
    changed; None when they did neither."""
    candidates = []
    touched = last_touched()
    if touched is not None:
        candidates.append(touched)
    if state.started is not None:
        name, when = state.started
        phase = next((p for p in all_phases() if p.name == name), None)
        if phase is not None:
            candidates.append((when, phase))
    return max(candidates, key=lambda found: found[0], default=(0.0, None))[1]


def current_task(outcomes: dict[str, PhaseOutcome], working: Phase | None) -> Task | None:
    """The first unfinished task of `working`, even when it needs a missing group (the learner
    chose it; its reading tasks run). Otherwise, or when `working` is finished: the next phase
    with unfinished tasks after it (from the first when None), wrapping round, passing over
    phases that need a missing group unless nothing else is left. A phase without outcomes
    counts as unfinished."""
    phases = list(all_phases())

    def unfinished(phase: Phase) -> Task | None:
        outcome = outcomes.get(phase.name)
        return next((t for t in phase.tasks if outcome is None or not outcome.task(t).done), None)

    if working in phases:
        found = unfinished(working)
        if found is not None:
            return found
    start = phases.index(working) + 1 if working in phases else 0
    ordered = phases[start:] + phases[:start]
    candidates = [p for p in ordered if available(p)] + [p for p in ordered if not available(p)]
    return next((t for t in map(unfinished, candidates) if t is not None), None)


def first_unfinished(phase: Phase, outcome: PhaseOutcome) -> Task | None:
    """The phase's first task that is not done, or None."""
    return next((t for t in phase.tasks if not outcome.task(t).done), None)


def shared_failure(phase: Phase, outcome: PhaseOutcome) -> str | None:
    """The message when every task of the phase failed alike (its kata file does not import,
    is missing, or its tests do not import); None otherwise."""
    results = [outcome.task(t) for t in phase.tasks]
    messages = {r.message for r in results}
    if len(results) < 2 or len(messages) != 1 or any(r.outcome != "failed" for r in results):
        return None
    return messages.pop() or None


def phase_summary(phase: Phase, outcome: PhaseOutcome) -> tuple[int, int]:
    done = sum(outcome.task(t).done for t in phase.tasks)
    return done, len(phase.tasks)
