"""Argument parsing: phases and tasks by number or name; bad input is one line and exit 2."""

from __future__ import annotations

import pytest

from kata_harness import curriculum
from katas_cli.main import main
from katas_cli.targets import UsageError, parse_phase, parse_target, parse_task


def test_phase_by_name_or_number():
    assert parse_phase("phase1").number == 1
    assert parse_phase("2").number == 2


def test_task_by_number_function_or_dotted_form():
    phase = curriculum.phase(1)
    assert parse_task(phase, "2").function == "total"
    assert parse_task(phase, "task2").function == "total"
    assert parse_task(phase, "last").number == 4
    assert parse_target("phase1.3") == (phase, phase.tasks[2])
    assert parse_target("phase1", "evens") == (phase, phase.tasks[2])
    assert parse_target("phase1") == (phase, None)


@pytest.mark.parametrize("text", ["phase999", "nonsense", "phase1.99", "phase1.no_such"])
def test_unknown_targets_raise(text):
    with pytest.raises(UsageError):
        parse_target(text)


def _exit_code(argv):
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "phase999"],
        ["hint", "phase1.99"],
        ["show", "phase1", "no_such_task"],
        ["frobnicate"],
        ["reset"],
        ["show"],
        ["reset", "phase1", "--all"],
    ],
)
def test_bad_usage_is_one_line_on_stderr(argv, capsys):
    assert _exit_code(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("katas: error:")
    assert captured.err.count("\n") == 1, captured.err
    assert captured.out == ""


def test_reset_without_confirmation_off_a_terminal_refuses(capsys):
    assert _exit_code(["reset", "phase1"]) == 2
    assert "--yes" in capsys.readouterr().err
