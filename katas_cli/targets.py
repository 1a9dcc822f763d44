"""Resolve what the learner typed (`phase1`, `phase1.2`, `phase1 mlp_forward`) to phases and tasks.

Every mistake raises :class:`UsageError` with one line saying what was wrong and what exists;
`main` prints it on stderr and exits 2.
"""

from __future__ import annotations

import re

from kata_harness import curriculum
from kata_harness.curriculum import Phase, Task

from .errors import UsageError

_PHASE = re.compile(r"(?:phase)?(\d+)")
_PHASE_TASK = re.compile(r"(?:phase)?(\d+)[.:/](?:task)?(.+)")


def all_phases() -> tuple[Phase, ...]:
    found = curriculum.phases()
    if not found:
        raise UsageError(f"no phases under {curriculum.KATAS_DIR} (no katas/phaseN/tasks.toml)")
    return found


def _known() -> str:
    return ", ".join(p.name for p in all_phases())


def parse_phase(text: str) -> Phase:
    """`phase3` or `3`."""
    match = _PHASE.fullmatch(text.strip().lower())
    if not match:
        raise UsageError(f"{text!r} is not a phase; expected phaseN, one of: {_known()}")
    try:
        return curriculum.phase(int(match.group(1)))
    except KeyError:
        raise UsageError(f"there is no phase{match.group(1)}; phases: {_known()}") from None


def parse_task(phase: Phase, text: str) -> Task:
    """A task of `phase` by number (`2`, `task2`) or function name (`mlp_forward`)."""
    key = text.strip().lower().removeprefix("task")
    if key.isdigit() and 1 <= int(key) <= len(phase.tasks):
        return phase.tasks[int(key) - 1]
    for task in phase.tasks:
        if task.function == text.strip():
            return task
    names = ", ".join(f"{t.number} {t.function}" for t in phase.tasks)
    raise UsageError(f"{phase.name} has no task {text!r}; its tasks: {names}")


def parse_target(text: str, task_text: str | None = None) -> tuple[Phase, Task | None]:
    """`phase1`, `phase1.2`, `phase1.mlp_forward`, or `phase1` plus a separate task argument."""
    match = _PHASE_TASK.fullmatch(text.strip())
    if match and task_text is None:
        phase = parse_phase(match.group(1))
        return phase, parse_task(phase, match.group(2))
    phase = parse_phase(text)
    return phase, (parse_task(phase, task_text) if task_text is not None else None)


def require_file(phase: Phase) -> None:
    if not phase.kata_path.is_file():
        raise UsageError(
            f"{phase.name}: {phase.kata_path} is missing; restore it with "
            f"`uv run katas reset {phase.name}`"
        )
