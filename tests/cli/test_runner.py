"""The in-process runner against real kata tests (one small phase, a few seconds), and against
small generated test files for failures a learner's file can cause (a loop, a broken import)."""

from __future__ import annotations

import textwrap

from kata_harness import curriculum
from katas_cli import runner
from katas_cli.runner import run_phases
from katas_cli.state import OUTCOMES

BROKEN = "phase2: katas/phase2/kata.py does not import (SyntaxError at line 3: invalid syntax)"
GENERATED = f'''
import time

import pytest


@pytest.mark.phase2_task1
def test_loops_forever():
    while True:
        time.sleep(0.01)


@pytest.mark.phase2_task2
def test_kata_does_not_import():
    try:
        raise SyntaxError("invalid syntax")
    except SyntaxError:  # as the harness's `kata` fixture does: the failure chains the error
        pytest.fail("{BROKEN}", pytrace=False)


@pytest.mark.phase2_task3
def test_wrong_answer():
    assert [1, 2] == [1, 3]
'''


def test_reference_passes_every_task_and_progress_is_reported():
    phase = curriculum.phase(2)
    ticks: list[tuple[int, int]] = []
    outcome = run_phases(
        [phase],
        impl="reference",
        keys={"phase2": "k"},
        on_progress=lambda done, total: ticks.append((done, total)),
    )["phase2"]
    assert outcome.key == "k"
    assert {t.number: outcome.task(t.number).outcome for t in phase.tasks} == {
        t.number: "passed" for t in phase.tasks
    }
    assert ticks[0][0] == 0 and ticks[-1][0] == ticks[-1][1] > 0


def test_learner_outcomes_are_one_line_per_task():
    phase = curriculum.phase(2)
    outcome = run_phases([phase])["phase2"]
    for task in phase.tasks:
        result = outcome.task(task.number)
        assert result.outcome in OUTCOMES
        assert "\n" not in result.message
        assert result.done or result.message


def test_timeout_and_import_failures_are_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "test_generated.py").write_text(textwrap.dedent(GENERATED))
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 1\n")
    args = [
        str(tmp_path),
        "--rootdir",
        str(tmp_path),
        "-c",
        str(tmp_path / "pytest.ini"),
        "--import-mode=importlib",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    monkeypatch.setattr(runner, "pytest_args", lambda phases, impl: args)
    outcome = run_phases([curriculum.phase(2)])["phase2"]
    loop, broken, wrong = (outcome.task(n) for n in (1, 2, 3))
    # pytest-timeout dumps stacks through pytest's terminal writer: the plugin must stay loaded
    assert loop.outcome == "failed" and "Timeout" in loop.message, loop.message
    assert "AssertionError" not in loop.message
    assert (broken.message, broken.details) == (BROKEN, ""), "no chained traceback, no test name"
    assert wrong.message.startswith("test_wrong_answer: ") and "\n" in wrong.details
    assert capsys.readouterr().out == "", "pytest's own report is not printed"
