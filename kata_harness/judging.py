"""How the outcome of each kata test is decided and reported.

Stub and decoy runs are inverted: they pass only when the test fails for the right reason
(:mod:`.verdict`); a pass is an honest-kata violation and a failure for another reason a broken
stub or decoy, both naming phase, task and test. Accepted variants must pass. On the learner's
file, the common failures are cut to one line (:mod:`.messages`). Every outcome is then recorded
for the CLI (:mod:`.records`).
"""

from __future__ import annotations

import copy

import pytest

from . import curriculum, gated, guard, messages, records, verdict
from .decoys import Accepted, Decoy
from .variants import CAUGHT, GUARD_REFUSED, RED_TEAM, Variant, task_of, variant_of

_call_error = pytest.StashKey[BaseException | None]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Keep the test's own exception: pytest_check replaces it in the report. Record the gated
    facts the test evaluated (kata_harness.gated)."""
    verdict.start()
    gated.start()
    outcome = yield
    gated.finish(item, outcome)
    item.stash[_call_error] = outcome.excinfo[1] if outcome.excinfo else None


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
def pytest_runtest_makereport_when_caught(
    item: pytest.Item, call: pytest.CallInfo
) -> pytest.TestReport | None:
    """A stub, decoy or red-team run that failed for the right reason gets the report of a
    pass at once: pytest would first format the failure with the source of every frame (parsing
    the test file again each time: most of a stub run's time), which :func:`_invert` and
    :func:`_judge_red_team` then throw away. Every other outcome is left to pytest. (pytest
    registers only functions named ``pytest_*``: hence the name.)"""
    if call.when != "call" or call.excinfo is None:
        return None
    variant = variant_of(item)
    if variant is None or not (variant.expects_failure or variant.kind in RED_TEAM):
        return None
    phase, _ = task_of(item)
    # red-team answers are judged as decoys; a probe as a learner's file (a hang fails it)
    kind = variant.kind if variant.kind in ("stub", "probe") else "decoy"
    if not verdict.judge(kind, phase, _errors(item)).caught:
        return None
    passed = copy.copy(call)
    passed.excinfo = None
    return pytest.TestReport.from_item_and_call(item, passed)


def _errors(item: pytest.Item) -> list[BaseException]:
    """Every failure of the test's call: swallowed by check blocks, then the one that ended it."""
    errors = verdict.swallowed()
    last = item.stash.get(_call_error, None)
    return errors + ([last] if last is not None else [])


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    variant = variant_of(item)
    if variant is None:
        return
    caught = None
    if report.when == "call" and variant.kind in RED_TEAM:
        caught = _judge_red_team(item, report, variant)
    elif report.when == "call":
        _judge(item, call, report, variant)
    elif report.when == "setup" and GUARD_REFUSED in item.stash:
        caught = True
    if caught:
        phase, task = task_of(item)
        CAUGHT[(phase.name, task.function, variant.id)] = getattr(item, "originalname", item.name)
    if report.when == "call" or report.failed or report.skipped or caught:
        _record(item, report, variant, caught)


def _judge_red_team(item: pytest.Item, report: pytest.TestReport, variant: Variant) -> bool | None:
    """A red-team answer or probe is caught when this test fails through an assertion; the test
    passing only means another test of the task has to catch it (the census adds them up)."""
    phase, task = task_of(item)
    errors = _errors(item)
    if report.skipped and not any(verdict.from_kata_code(e) for e in errors):
        return None  # the test skipped for its own reason: nothing was judged
    if variant.kind == "probe" and any(isinstance(e, guard.KataGuardError) for e in errors):
        report.outcome, report.longrepr = "passed", None
        return True  # the audit hook refused what it opened
    judged = verdict.judge("probe" if variant.kind == "probe" else "decoy", phase, errors)
    if judged.caught or judged.reason == "the test passed":
        report.outcome, report.longrepr = "passed", None
        return judged.caught
    test = getattr(item, "originalname", item.name)
    report.outcome = "failed"
    report.longrepr = (
        f"broken {variant.kind}: {task.id} ({task.function}) {test} on "
        f"{variant.id} ({getattr(variant.spec, 'why', '')}): {judged.reason}"
    )
    return None


def _record(
    item: pytest.Item, report: pytest.TestReport, variant: Variant, caught: bool | None = None
) -> None:
    phase, task = task_of(item)
    test = getattr(item, "originalname", item.name)
    message, details = records.describe(report, test)
    record = records.TestRecord(
        phase=phase.name,
        function=task.function,
        task=task.id,
        test=test,
        variant=variant.id,
        kind=variant.kind,
        when=report.when,
        outcome=report.outcome,
        message=message,
        details=details,
        traceback=item.stash.get(messages.kata_traceback, ""),
        hint=task.hint_command,
        caught=caught,
    )
    records.attach(report, record)


def _judge(
    item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, variant: Variant
) -> None:
    if variant.expects_failure:
        _invert(item, report, variant)
        return
    messages.truncate_sections(report)
    _, task = task_of(item)
    if report.skipped and call.excinfo and verdict.from_kata_code(call.excinfo.value):
        report.outcome = "failed"
        report.longrepr = (
            f"{task.id} ({task.function}) is not done: your code called "
            f"pytest.skip or pytest.xfail [{verdict.where(call.excinfo.value)}]"
        )
        return
    if report.failed and variant.kind == "katas":
        short = messages.short_failure(item, call)
        if short:
            report.longrepr = short
    elif report.failed and variant.kind == "accepted":
        assert isinstance(variant.spec, Accepted)
        test = getattr(item, "originalname", item.name)
        report.longrepr = (
            f"honest-kata violation: {task.id} ({task.function}) "
            f"{test} rejects accepted variant {variant.spec.name!r} "
            f"({variant.spec.why})\n{report.longreprtext}"
        )


def _invert(item: pytest.Item, report: pytest.TestReport, variant: Variant) -> None:
    """Stub and decoy runs must fail through the test doing its job (see :mod:`.verdict`)."""
    phase, task = task_of(item)
    errors = _errors(item)
    if report.skipped and not any(verdict.from_kata_code(e) for e in errors):
        return  # the test skipped for its own reason (a platform gate): nothing was judged
    judged = verdict.judge(variant.kind, phase, errors)
    if judged.caught:
        report.outcome = "passed"
        report.longrepr = None
        return
    test = getattr(item, "originalname", item.name)
    if variant.kind == "stub":
        what = f"the shipped stub {phase.kata_path.relative_to(curriculum.ROOT)}"
    else:
        assert isinstance(variant.spec, Decoy)
        what = f"decoy {variant.spec.name!r} ({variant.spec.why})"
    report.outcome = "failed"
    if judged.reason == "the test passed":
        report.longrepr = (
            f"honest-kata violation: {task.id} ({task.function}) {test} passes on {what}"
        )
    else:
        report.longrepr = (
            f"broken {variant.kind}: {task.id} ({task.function}) {test} on {what}: {judged.reason}"
        )
