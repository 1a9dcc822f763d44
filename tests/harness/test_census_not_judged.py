"""`katas dev check` names a red-team answer or probe that no test could run as broken, not as
accepted: a probe whose import timed out (pytest-timeout, on a loaded machine) failed every
test's setup, so no test judged it, and "the guard and every test accepted it" was false."""

from kata_harness import curriculum, loading
from kata_harness.records import TestRecord
from katas_cli.devcheck import census


def _record(phase, task, kind: str, name: str, when: str, outcome: str, message: str, caught):
    return TestRecord(
        phase=phase.name,
        function=task.function,
        task=task.id,
        test="test_some_test_of_the_task",
        variant=f"{kind}-{name}",
        kind=kind,
        when=when,
        outcome=outcome,
        message=message,
        caught=caught,
    )


def _problems(phase, task, found: list[TestRecord]) -> list[str]:
    rows = census([phase], found)
    return next(row.problems for row in rows if row.task.function == task.function)


def test_a_probe_whose_import_timed_out_is_broken_not_accepted():
    phase = next(p for p in curriculum.phases() if loading.phase_probes(p))
    probe = loading.phase_probes(phase)[0]
    task = next(t for t in phase.tasks if t.function == probe.replaces)
    timed_out = (
        f"{phase.name} probe {probe.name}: {probe.path.name} does not import (Failed at line 9: "
        "Timeout (>60.0s) from pytest-timeout.); fix that file, the other phases are unaffected"
    )
    found = [_record(phase, task, "probe", probe.name, "setup", "failed", timed_out, None)]
    problems = [p for p in _problems(phase, task, found) if probe.name in p]
    assert not any("accepted" in p for p in problems), problems
    assert any("broken, not judged" in p for p in problems), problems
    assert any("Timeout" in p for p in problems), problems  # how it broke is still said

    passed = [_record(phase, task, "probe", probe.name, "call", "passed", "", False)]
    problems = [p for p in _problems(phase, task, passed) if probe.name in p]
    assert problems == [f"probe {probe.name}: the guard and every test accepted it"]

    caught = [*found, _record(phase, task, "probe", probe.name, "call", "passed", "", True)]
    assert not [p for p in _problems(phase, task, caught) if probe.name in p]


def test_a_red_team_answer_no_test_could_run_is_broken_not_uncaught():
    phase = next(p for p in curriculum.phases() if loading.phase_redteam(p))
    answer = loading.phase_redteam(phase)[0]
    task = next(t for t in phase.tasks if t.function == answer.replaces)
    broken = f"broken redteam: {task.id} ({task.function}): it failed with NameError: x"
    found = [_record(phase, task, "redteam", answer.name, "call", "failed", broken, None)]
    problems = [p for p in _problems(phase, task, found) if answer.name in p]
    assert any("broken, not judged" in p for p in problems), problems
    assert not any("no test of the task fails on it" in p for p in problems), problems
