"""A probe that never answers is rejected, as a learner's file that never answers fails its task:
pytest-timeout stops the test (the suite's 60 s) and the census counts the probe rejected,
"stopped after N s: never answered", not "broken, not judged" (phase 12's
r14_allreduce_elements_sleeps cost five timeouts, five minutes, and got no verdict). A red-team
answer must still be caught by an assertion (one that hangs stays broken), and a timeout that
stopped only the test's own work judges nothing."""

import pytest
import pytest_timeout

from kata_harness import curriculum, verdict


def _timeout_in(filename: str) -> BaseException:
    """pytest-timeout's failure, in its own words, raised while code of ``filename`` runs (its
    SIGALRM handler raises it in whatever frame the alarm interrupts)."""
    source = "import pytest\n\n\ndef answer(message):\n    pytest.fail(message)\n"
    space: dict = {}
    exec(compile(source, filename, "exec"), space)  # a frame that belongs to ``filename``
    try:
        space["answer"](pytest_timeout.PYTEST_FAILURE_MESSAGE % 2.5)
    except pytest.fail.Exception as error:
        return error
    raise AssertionError("pytest.fail returned")


def _phase():
    return next(p for p in curriculum.phases() if p.probes_dir.is_dir())


def test_a_probe_stopped_by_the_timeout_is_rejected():
    phase = _phase()
    error = _timeout_in(str(phase.probes_dir / "never_answers.py"))
    judged = verdict.judge("probe", phase, [error])
    assert judged.caught, judged
    assert judged.reason == "stopped after 2.5 s: never answered"


def test_a_red_team_answer_stopped_by_the_timeout_is_still_broken():
    phase = _phase()
    answer = curriculum.DECOYS_DIR / "redteam" / f"{phase.name}_round99.py"
    judged = verdict.judge("decoy", phase, [_timeout_in(str(answer))])
    assert not judged.caught and judged.reason == "the test timed out", judged
    # a probe's file judged as a red-team answer: the rule is the kind's, not the file's
    error = _timeout_in(str(phase.probes_dir / "never_answers.py"))
    assert not verdict.judge("decoy", phase, [error]).caught


def test_a_timeout_of_the_tests_own_work_judges_no_probe():
    phase = _phase()
    test_file = curriculum.KATAS_DIR / phase.name / f"test_{phase.name}.py"
    judged = verdict.judge("probe", phase, [_timeout_in(str(test_file))])
    assert not judged.caught and judged.reason == "the test timed out", judged
    assert verdict.stopped(RuntimeError("Timeout (>2.5s) from pytest-timeout.")) is None
