"""Which task is current: the phase the learner works on, the kind of every task shown, and
phases that need a missing group passed over."""

from __future__ import annotations

import io
import json
import os
import time

import pytest
from rich.console import Console

from kata_harness import curriculum
from katas_cli import status
from katas_cli.hints import render_hints
from katas_cli.main import main
from katas_cli.state import PhaseOutcome, State, TaskOutcome

from .conftest import console_text


def _touch(course, phase: int, function: str, when: float) -> None:
    """The learner starts on `function` of `phase`: its stub line gone, saved at `when`."""
    kata = course / "katas" / f"phase{phase}" / "kata.py"
    text = kata.read_text()
    start = text.index(f"def {function}(")
    line = text.index("raise NotImplementedError", start)
    end = text.index("\n", line)
    kata.write_text(text[:line] + "return None  # working on it" + text[end:])
    os.utime(kata, (when, when))


def _current(capsys) -> str:
    capsys.readouterr()
    assert main(["--json"]) == 0
    return json.loads(capsys.readouterr().out)["current"]


def test_the_phase_last_edited_is_current_though_an_earlier_one_is_unfinished(
    course, fake_runner, capsys
):
    assert _current(capsys) == "phase1.task2", "nothing edited yet: the first unfinished task"
    _touch(course, 2, "word_count", time.time())
    assert _current(capsys) == "phase2.task1"
    _touch(course, 1, "evens", time.time() + 5)
    assert _current(capsys) == "phase1.task2", "the newest edit wins"


def test_katas_start_makes_a_phase_current_until_the_next_edit(course, fake_runner, capsys):
    _touch(course, 1, "evens", time.time() - 60)
    assert main(["start", "phase2"]) == 0
    started = State.load().started
    assert started is not None and started[0] == "phase2"
    assert _current(capsys) == "phase2.task1"
    assert main(["hint"]) == 0
    assert capsys.readouterr().out.startswith("phase2.task1 shout (read task)")
    _touch(course, 1, "evens", time.time() + 5)
    assert _current(capsys) == "phase1.task2"


def test_a_finished_working_phase_hands_on_to_the_next_unfinished_one(course, fake_runner, capsys):
    fake_runner.passed = {"phase2.task1", "phase2.task2", "phase2.task3"}
    _touch(course, 2, "shout", time.time())
    assert _current(capsys) == "phase1.task1", "after the last phase, round to the first"


def test_a_phase_whose_group_is_missing_is_marked_and_current_only_when_chosen(
    course, fake_runner, capsys, monkeypatch
):
    tasks = course / "katas" / "phase2" / "tasks.toml"
    tasks.write_text('needs = "tpu"\n' + tasks.read_text())
    curriculum.phases.cache_clear()
    monkeypatch.setattr(status, "group_missing", lambda group: f"{group} is not installed")
    fake_runner.passed = {"phase1.task1", "phase1.task2"}
    _touch(course, 1, "evens", time.time())
    assert _current(capsys) == "phase1.task3"
    fake_runner.passed = {t.id for t in curriculum.phase(1).tasks}
    State.load().update(lambda state: state.phases.clear())  # the runs above were cached
    assert _current(capsys) == "phase2.task1", "nothing else left: the missing group's phase"
    assert main(["list", "--json"]) == 0
    phases = json.loads(capsys.readouterr().out)["phases"]
    assert [p["needs"] for p in phases] == [None, "uv sync --group tpu"]
    assert main(["list"]) == 0
    assert "needs: uv sync --group tpu" in capsys.readouterr().out
    assert main(["start", "phase2"]) == 0
    assert "its tests that compile skip until uv sync --group tpu" in capsys.readouterr().out
    assert main([]) == 0
    assert "needs: uv sync --group tpu (its compiling tests skip)" in capsys.readouterr().out


def test_past_the_working_phase_a_phase_whose_group_is_missing_is_passed_over(monkeypatch):
    """Phases 1..3 of the same shape: 1 is done and was worked on, 2 needs a missing group."""
    one = curriculum.phase(1)
    phases = tuple(
        curriculum.Phase(n, f"p{n}", one.tasks, "tpu" if n == 2 else None) for n in (1, 2, 3)
    )
    monkeypatch.setattr(status, "all_phases", lambda: phases)
    monkeypatch.setattr(status, "group_missing", lambda group: "missing")
    done = {t.function: TaskOutcome("passed") for t in one.tasks}
    outcomes = {"phase1": PhaseOutcome("", done)}
    assert status.current_task(outcomes, phases[0]) == phases[2].tasks[0]
    assert status.current_task(outcomes, phases[1]) == phases[1].tasks[0], "chosen: current"


def test_the_kind_of_each_task_is_in_list_json_hints_and_status(fake_runner, capsys):
    assert main(["list"]) == 0
    rows = {r.split()[1]: r.split() for r in capsys.readouterr().out.splitlines() if "." in r}
    assert rows["phase2.task2"][2] == "decide" and rows["phase1.task1"][2] == "read"
    assert main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    kinds = {t["function"]: t["kind"] for p in data["phases"] for t in p["tasks"]}
    assert kinds["word_count"] == "decide" and kinds["double"] == "read"
    assert main([]) == 0
    assert "current: phase1.task2 total (read)" in capsys.readouterr().out


@pytest.mark.parametrize("function", ["word_count", "shout"])
def test_the_hint_header_names_the_kind(function):
    task = curriculum.phase(2).task(function)
    console = Console(file=io.StringIO(), width=200)
    render_hints(console, task, 0, 1)
    assert console_text(console).startswith(f"{task.id} {function} ({task.kind} task)")
