"""The in-process runner on the small course: outcomes come from the harness's records, keyed by
the task's function, and every failure a learner's file can cause is one line."""

from __future__ import annotations

import json

import pytest

from kata_harness import curriculum
from katas_cli.main import main
from katas_cli.runner import _forget_test_modules, pytest_args, run_phases
from katas_cli.state import OUTCOMES, State, TaskOutcome

pytestmark = pytest.mark.battery  # each test is a pytest run of the small course


def _outcomes(phase_number: int, impl: str = "katas") -> dict[str, TaskOutcome]:
    phase = curriculum.phase(phase_number)
    outcome = run_phases([phase], impl=impl)[phase.name]
    return {t.function: outcome.task(t) for t in phase.tasks}


def _solve(course, phase: int, *functions: str) -> None:
    """Copy the reference's `functions` into the learner's file of `phase`."""
    reference = (course / "reference" / f"phase{phase}" / "kata.py").read_text()
    kata = course / "katas" / f"phase{phase}" / "kata.py"
    text = kata.read_text()
    for function in functions:
        stub = _block(text, function)
        text = text.replace(stub, _block(reference, function))
    kata.write_text(text)


def _block(source: str, function: str) -> str:
    start = source.index(f"def {function}(")
    end = source.find("\n\n\ndef ", start)
    return source[start:] if end == -1 else source[start:end]


def test_reference_passes_every_task_and_progress_is_reported():
    phase = curriculum.phase(1)
    ticks: list[tuple[int, int]] = []
    outcome = run_phases(
        [phase],
        impl="reference",
        keys={"phase1": "k"},
        on_progress=lambda done, total: ticks.append((done, total)),
    )["phase1"]
    assert outcome.key == "k"
    assert set(outcome.tasks) == {t.function for t in phase.tasks}
    assert {f: o.outcome for f, o in outcome.tasks.items()} == dict.fromkeys(
        outcome.tasks, "passed"
    )
    assert ticks[0] == (0, 6) and ticks[-1] == (6, 6), "3 cases of double, 3 other tests"


def test_stubs_are_not_done_in_one_line_with_the_kind_and_the_hint(course):
    kinds = {t.function: t.kind for t in curriculum.phase(1).tasks}
    for function, result in _outcomes(1).items():
        assert result.outcome == "failed"
        assert "\n" not in result.message and result.details == ""
        assert f"({kinds[function]} task {function}: " in result.message
        assert "is not done yet" in result.message
        assert "uv run katas hint phase1." in result.message


def test_each_failure_a_learner_causes_is_one_line(course):
    kata = course / "katas" / "phase1" / "kata.py"
    _solve(course, 1, "total")
    text = kata.read_text()
    text = text.replace(
        _block(text, "double"), "def double(x: int) -> int:\n    while True:\n        pass"
    )
    text = text.replace(
        _block(text, "evens"), "def evens(xs: list[int]) -> list[int]:\n    return xs"
    )
    text = text.replace(_block(text, "last"), "def last(xs: list[int]) -> int:\n    return 1 / 0")
    kata.write_text(text)
    got = _outcomes(1)
    assert got["total"].done and got["total"].message == ""
    loop, wrong, error = got["double"], got["evens"], got["last"]
    assert loop.outcome == "failed" and loop.message.startswith("phase1.task1 (double) did not")
    assert "within 3 s" in loop.message
    assert wrong.message.startswith("test_evens: assert [3, 2, 7, 4, 0] == [2, 4, 0]")
    assert "\n" in wrong.details, "the assertion's full report is kept"
    assert error.message.startswith("phase1.task4 (last) raised ZeroDivisionError: division")
    assert "[phase1/kata.py:" in error.message
    assert "return 1 / 0" in error.traceback and "ZeroDivisionError" in error.traceback
    for result in got.values():
        assert result.outcome in OUTCOMES and "\n" not in result.message


def test_a_kata_file_that_does_not_import_fails_every_task_in_one_line(course):
    (course / "katas" / "phase2" / "kata.py").write_text("def shout(:\n")
    got = _outcomes(2)
    messages = {r.message for r in got.values()}
    assert len(messages) == 1, "the same line for every task"
    (message,) = messages
    assert message.startswith("phase2: katas/phase2/kata.py does not import (SyntaxError")
    assert all(r.details == "" and r.outcome == "failed" for r in got.values())


def _reorder_and_rename(course) -> None:
    """Move the last task of phase 1 to the front and rename `total` to `sum_all` in the
    course's tasks.toml, stub, reference and tests, as an author would."""
    folder = course / "katas" / "phase1"
    tasks = (folder / "tasks.toml").read_text()
    head, *entries = tasks.split("[[task]]\n")
    entries = [entries[-1], *entries[:-1]]
    reordered = head + "".join(f"[[task]]\n{e}" for e in entries)
    (folder / "tasks.toml").write_text(reordered.replace('"total"', '"sum_all"'))
    for path in (
        folder / "kata.py",
        folder / "test_phase1.py",
        course / "reference/phase1/kata.py",
    ):
        path.write_text(path.read_text().replace("total", "sum_all"))
    curriculum.phases.cache_clear()


@pytest.mark.parametrize("solved", [("double", "evens"), ("last",)])
def test_reordering_and_renaming_tasks_keeps_outcomes_and_hints_with_their_task(
    course, solved, capsys
):
    _solve(course, 1, *solved)
    assert main(["hint", "phase1.evens"]) == 0
    assert main(["hint", "phase1.evens"]) == 0
    assert main(["hint", "phase1.double"]) == 0
    assert main(["status"]) == 0
    _reorder_and_rename(course)
    assert [t.function for t in curriculum.phase(1).tasks] == ["last", "double", "sum_all", "evens"]
    state = State.load()
    assert state.hints == {"phase1.evens": 2, "phase1.double": 1}
    capsys.readouterr()
    assert main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    phase1 = data["phases"][0]["tasks"]
    by_function = {t["function"]: t for t in phase1}
    assert [t["id"] for t in phase1] == [f"phase1.task{n}" for n in range(1, 5)]
    for function in ("last", "double", "sum_all", "evens"):
        expected = "passed" if function in solved else "failed"
        assert by_function[function]["outcome"] == expected, by_function[function]["message"]
    assert by_function["evens"]["hints_shown"] == 2 and by_function["double"]["hints_shown"] == 1
    assert by_function["sum_all"]["hints_shown"] == 0
    assert "(read task sum_all: " in by_function["sum_all"]["message"]


def test_tests_run_in_the_order_of_tasks_toml(course, capsys):
    """`-x` stops at the first unfinished task of tasks.toml, not of the test file."""
    folder = course / "katas" / "phase1"
    head, *entries = (folder / "tasks.toml").read_text().split("[[task]]\n")
    entries = [entries[2], entries[0], entries[3], entries[1]]  # evens, double, last, total
    (folder / "tasks.toml").write_text(head + "".join(f"[[task]]\n{e}" for e in entries))
    curriculum.phases.cache_clear()
    phase = curriculum.phase(1)
    _forget_test_modules([phase])
    capsys.readouterr()
    pytest.main([*pytest_args([phase], "katas"), "--collect-only"])
    collected = [line for line in capsys.readouterr().out.splitlines() if "::" in line]
    tests = [line.split("::")[1].split("[")[0] for line in collected]
    assert list(dict.fromkeys(tests)) == ["test_evens", "test_double", "test_last", "test_total"]
