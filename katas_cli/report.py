"""Render progress for people (rich markup, plain text off a terminal) and for tools (JSON)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from kata_harness import curriculum
from kata_harness.curriculum import Phase, Task

from .state import PhaseOutcome, State, hint_key
from .status import (
    available,
    current_task,
    first_unfinished,
    phase_summary,
    shared_failure,
    working_phase,
)
from .targets import all_phases

MARKS = {
    "passed": "[green]✓[/]",
    "failed": "[red]✗[/]",
    "skipped": "[yellow]~[/]",
    "not run": "[dim]·[/]",
}


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return f"[green]{'█' * filled}[/][dim]{'░' * (width - filled)}[/]"


def _rel(task: Task) -> str:
    phase = curriculum.phase(task.phase)
    return str(phase.kata_path.relative_to(curriculum.ROOT))


def render_current(console: Console, task: Task | None, outcomes: dict[str, PhaseOutcome]) -> None:
    if task is None:
        console.print(
            "[bold green]Every task of every phase is done.[/] Compare with the "
            "reference: uv run katas compare phaseN"
        )
        return
    outcome = outcomes[f"phase{task.phase}"].task(task)
    console.print(
        f"[bold]current:[/] {task.id} [cyan]{task.function}[/] ({task.kind}): {escape(task.title)}"
    )
    console.print(f"  {MARKS[outcome.outcome]} {escape(outcome.message or outcome.outcome)}")
    console.print(f"  edit {_rel(task)}, then run: uv run katas watch")
    phase = curriculum.phase(task.phase)
    if not available(phase):
        console.print(f"  [yellow]needs: {phase.install_command}[/] (its compiling tests skip)")
    if task.hint_command not in outcome.message:
        console.print(f"  hint: {task.hint_command}")


def _needs(phase: Phase) -> str:
    return "" if available(phase) else f"  [yellow]needs: {phase.install_command}[/]"


def render_status(console: Console, outcomes: dict[str, PhaseOutcome], state: State) -> None:
    phases = all_phases()
    totals = [phase_summary(p, outcomes[p.name]) for p in phases]
    done, total = sum(d for d, _ in totals), sum(t for _, t in totals)
    console.print(f"[bold]xla-katas[/]: {done}/{total} tasks done")
    width = max(len(p.title) for p in phases)
    for phase, (d, t) in zip(phases, totals, strict=True):
        title = escape(phase.title)
        row = f"  {phase.name:<8} {title:<{width}}  {d:>2}/{t:<2} {_bar(d, t)}"
        if shared_failure(phase, outcomes[phase.name]) is not None:
            row += f"  [red]broken: uv run katas run {phase.name}[/]"
        else:
            row += _needs(phase)
        console.print(row)
    console.print()
    render_current(console, current_task(outcomes, working_phase(state)), outcomes)


def _matches(task: Task, text: str | None) -> bool:
    if not text:
        return True
    haystack = f"{task.id} {task.function} {task.title} {task.kind}".lower()
    return text.lower() in haystack


def render_list(
    console: Console, outcomes: dict[str, PhaseOutcome], state: State, text: str | None
) -> None:
    current = current_task(outcomes, working_phase(state))
    width = max(len(t.function) for p in all_phases() for t in p.tasks)
    shown = 0
    for phase in all_phases():
        tasks = [t for t in phase.tasks if _matches(t, text)]
        if not tasks:
            continue
        d, t = phase_summary(phase, outcomes[phase.name])
        console.print(f"[bold]{phase.name}[/] {escape(phase.title)}  {d}/{t}{_needs(phase)}")
        for task in tasks:
            outcome = outcomes[phase.name].task(task)
            arrow = "[bold]→[/]" if task == current else " "
            hints = f"hints {state.hints.get(hint_key(task), 0)}/{len(task.hints)}"
            console.print(
                f" {arrow}{MARKS[outcome.outcome]} {task.id:<14} {task.kind:<7} [cyan]"
                f"{task.function:<{width}}[/] {escape(task.title)}  [dim]{hints}[/]"
            )
            shown += 1
    if not shown:
        console.print(f"no task matches {text!r}")


def to_json(outcomes: dict[str, PhaseOutcome], state: State, text: str | None = None) -> Any:
    phases = []
    for phase in all_phases():
        outcome = outcomes[phase.name]
        d, t = phase_summary(phase, outcome)
        tasks = [
            {
                "id": task.id,
                "function": task.function,
                "kind": task.kind,
                "title": task.title,
                "outcome": outcome.task(task).outcome,
                "message": outcome.task(task).message,
                "hints_shown": state.hints.get(hint_key(task), 0),
                "hints_total": len(task.hints),
                "hint_command": task.hint_command,
            }
            for task in phase.tasks
            if _matches(task, text)
        ]
        phases.append(
            {
                "phase": phase.name,
                "title": phase.title,
                "done": d,
                "total": t,
                "needs": None if available(phase) else phase.install_command,
                "tasks": tasks,
            }
        )
    current = current_task(outcomes, working_phase(state))
    return {
        "done": sum(p["done"] for p in phases),
        "total": sum(p["total"] for p in phases),
        "current": None if current is None else current.id,
        "phases": phases,
    }


def render_phase(
    console: Console,
    phase: Phase,
    outcome: PhaseOutcome,
    focus: Task | None = None,
    *,
    full: bool = False,
) -> None:
    """One phase after a run: a line per task, then the failure of the focused task in full
    (``full``: with the kata's traceback when it raised)."""
    d, t = phase_summary(phase, outcome)
    console.print(f"[bold]{phase.name}[/] {escape(phase.title)}: {d}/{t} tasks done {_bar(d, t)}")
    if focus is None:
        focus = first_unfinished(phase, outcome)
    shared = shared_failure(phase, outcome)  # said once, below, instead of on every line
    for task in phase.tasks:
        result = outcome.task(task)
        arrow = "[bold]→[/]" if task == focus else " "
        line = (
            f" {arrow}{MARKS[result.outcome]} {task.number:>2} [cyan]{task.function}[/] "
            f"[dim]({task.kind})[/]"
        )
        if result.message and not result.done and result.message != shared:
            todo = "is not done yet" in result.message
            line += f"  [dim]{'not done yet' if todo else escape(result.message)}[/]"
        console.print(line)
    if focus is None:
        console.print(
            f"[bold green]{phase.name} is done.[/] Read katas/{phase.name}/README.md "
            f"again and compare with the reference: reference/{phase.name}/kata.py"
        )
        return
    result = outcome.task(focus)
    console.print(
        f"\n[bold]{focus.id}[/] [cyan]{focus.function}[/] ({focus.kind}): {escape(focus.title)}"
    )
    if "\n" in result.details:
        console.print(escape(result.details))
    else:
        console.print(f"{MARKS[result.outcome]} {escape(result.message or result.outcome)}")
    if result.traceback:
        console.print(
            escape(result.traceback)
            if full
            else f"[dim]the whole traceback: uv run katas run {phase.name} --full (t in watch)[/]"
        )
    if focus.hint_command not in result.message:
        console.print(f"hint: {focus.hint_command}")
