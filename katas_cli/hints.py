"""Tiered hints: each `katas hint` shows one more level of a task, persisted in the state file."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from kata_harness import curriculum
from kata_harness.curriculum import Task

from .state import State, hint_key


def next_hint(task: Task, state: State) -> tuple[int, int]:
    """Advance the task's hint level (up to the last one): the levels shown before and now.

    Read from the file under its lock, so a level taken in another terminal counts."""
    levels: list[int] = []

    def advance(current: State) -> None:
        levels.append(current.hints.get(hint_key(task), 0))
        current.hints[hint_key(task)] = min(levels[0] + 1, len(task.hints))

    state.update(advance)
    return levels[0], state.hints[hint_key(task)]


def render_hints(console: Console, task: Task, before: int, shown: int) -> None:
    """Every level shown so far; the newest one last. `before` is the level shown earlier."""
    total = len(task.hints)
    console.print(
        f"[bold]{task.id}[/] [cyan]{task.function}[/] ({task.kind} task): {escape(task.title)}"
    )
    if total == 0:
        console.print("this task has no hints")
        return
    for level in range(1, shown + 1):
        style = "bold" if level == shown and level > before else "dim"
        console.print(f"[{style}]hint {level}/{total}:[/] {escape(task.hints[level - 1])}")
    if before >= total:
        phase = curriculum.phase(task.phase)
        readme = (phase.kata_path.parent / "README.md").relative_to(curriculum.ROOT)
        reference = phase.reference_path.relative_to(curriculum.ROOT)
        console.print(
            f"There are no more hints for {task.id}. Read {readme}; after solving, "
            f"compare with {reference}."
        )
    elif shown < total:
        console.print(f"[dim]more: {task.hint_command}[/]")


def show_next_hint(console: Console, task: Task | None, state: State) -> None:
    """Advance `task`'s hint level and show every level so far; None means every task is done."""
    if task is None:
        console.print("every task is done: no hint needed")
        return
    render_hints(console, task, *next_hint(task, state))
