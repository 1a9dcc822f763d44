"""The in-process runner against real kata tests (one small phase, a few seconds)."""

from __future__ import annotations

from kata_harness import curriculum
from katas_cli.runner import run_phases
from katas_cli.state import OUTCOMES


def test_reference_passes_every_task_and_progress_is_reported():
    phase = curriculum.phase(2)
    ticks: list[tuple[int, int]] = []
    outcome = run_phases([phase], impl="reference", keys={"phase2": "k"},
                         on_progress=lambda done, total: ticks.append((done, total)))["phase2"]
    assert outcome.key == "k"
    assert {t.number: outcome.task(t.number).outcome for t in phase.tasks} == {
        t.number: "passed" for t in phase.tasks}
    assert ticks[0][0] == 0 and ticks[-1][0] == ticks[-1][1] > 0


def test_learner_outcomes_are_one_line_per_task():
    phase = curriculum.phase(2)
    outcome = run_phases([phase])["phase2"]
    for task in phase.tasks:
        result = outcome.task(task.number)
        assert result.outcome in OUTCOMES
        assert "\n" not in result.message
        assert result.done or result.message
