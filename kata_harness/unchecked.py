"""Tasks that no test checked: every test of the task skipped (an optional group is missing).

Such a task is not done, however green the run: pytest's summary names each one with the command
that makes its tests run. Records come from every worker (see :mod:`.records`).

With ``--group-skips PATH`` the node ids of every test (kata test or not) that skipped for a
missing group go to PATH, so a run with the groups installed can take up exactly those
(``pytest @PATH``) instead of the whole suite again.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from . import curriculum, records

# (course root, phase, function) -> outcomes: a test may run another course's pytest inside this
# process, whose records must not mix with this one's
_outcomes: dict[tuple[str, str, str], set[str]] = defaultdict(set)
_skip_reasons: dict[tuple[str, str, str], str] = {}
_group_skips: set[str] = set()  # node ids of the tests a missing optional group skipped
GROUP_SKIP = "uv sync --group"  # how every skip for a missing group says what to install


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and isinstance(report.longrepr, tuple) and GROUP_SKIP in report.longrepr[2]:
        _group_skips.add(report.nodeid)
    for record in records.read(report):
        if record.kind not in ("katas", "reference") or record.when not in ("call", "setup"):
            continue
        key = (str(curriculum.ROOT), record.phase, record.function)
        _outcomes[key].add(record.outcome)
        if record.outcome == "skipped":
            _skip_reasons.setdefault(key, record.message)


def unchecked() -> list[str]:
    """One line per task whose every test skipped."""
    lines = []
    known = {phase.name: phase for phase in curriculum.phases()}
    for (root, phase_name, function), outcomes in sorted(_outcomes.items()):
        if root != str(curriculum.ROOT) or outcomes != {"skipped"} or phase_name not in known:
            continue
        phase = known[phase_name]
        if function not in {t.function for t in phase.tasks}:
            continue
        task = phase.task(function)
        needs = phase.install_command or "its tests to run"
        lines.append(
            f"{task.id} ({function}) is not done: every test skipped "
            f"({_skip_reasons.get((root, phase_name, function), '')}); needs: {needs}"
        )
    return lines


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--group-skips")
    if path and not hasattr(session.config, "workerinput"):  # the controller, with every report
        Path(path).write_text("".join(f"{nodeid}\n" for nodeid in sorted(_group_skips)))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    lines = unchecked()
    if lines:
        terminalreporter.section("tasks no test checked")
        for line in lines:
            terminalreporter.line(line)
