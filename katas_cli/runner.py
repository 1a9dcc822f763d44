"""Run kata tests in this process with `pytest.main` and record one outcome per task.

Running in-process keeps JAX imported between runs (watch mode reruns in well under a second);
the harness reloads a kata module when its file changes and clears JAX's caches before each test.
Tests are attributed to tasks by the harness's marks (`phaseN_taskM`), read from each report.
Pytest's terminal output goes to a buffer (the terminal plugin stays loaded: pytest-timeout writes
its stack dump through it); `verbose=True` lets it through (`katas run -v`). pytest is imported on
the first run, so commands that only read the cached state start fast.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kata_harness import curriculum
from kata_harness.curriculum import Phase

from .errors import RunError
from .state import PhaseOutcome, TaskOutcome

if TYPE_CHECKING:
    import pytest

_TASK_MARK = re.compile(r"phase(\d+)_task(\d+)")
_HARNESS_LINE = re.compile(r"phase\d+[.:]")  # the harness's one-liners name the task or phase
_DETAIL_LINES = 40
ProgressFn = Callable[[int, int], None]


@dataclass(slots=True)
class _TestResult:
    outcome: str = "passed"
    message: str = ""
    details: str = ""
    traceback: str = ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().removeprefix("E").strip()
        if line:
            return line if len(line) <= 200 else line[:197] + "..."
    return ""


def _one_line(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        return _first_line(str(longrepr[2]))
    if isinstance(longrepr, str):
        return _first_line(longrepr)
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        return _first_line(crash.message)
    errors = [line for line in report.longreprtext.splitlines() if line.startswith("E ")]
    return _first_line(errors[0] if errors else report.longreprtext)


def _one_line_failure(report: pytest.TestReport) -> str | None:
    """The message of a failure the harness reports as one line (`pytest.fail(pytrace=False)`).

    Its chained exceptions (the harness fails while handling the import error) are dropped.
    """
    chain = getattr(report.longrepr, "chain", None)
    if not chain:
        return None
    traceback, crash, _ = chain[-1]
    if getattr(traceback, "style", None) != "value" or crash is None:
        return None
    return _first_line(crash.message.removeprefix("Failed: "))


def _trim(text: str) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) <= _DETAIL_LINES:
        return "\n".join(lines)
    return "\n".join([*lines[:_DETAIL_LINES], f"... ({len(lines) - _DETAIL_LINES} more lines)"])


@dataclass(slots=True)
class _Recorder:
    """A pytest plugin object: per test, its task mark and worst outcome."""

    on_progress: ProgressFn | None = None
    total: int = 0
    done: int = 0
    tests: dict[str, tuple[tuple[int, int], _TestResult]] = field(default_factory=dict)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)
        if self.on_progress:
            self.on_progress(0, self.total)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append((report.nodeid, _one_line(report)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        task = next((m for m in map(_TASK_MARK.fullmatch, report.keywords) if m), None)
        if task is not None:
            key = (int(task.group(1)), int(task.group(2)))
            _, result = self.tests.setdefault(report.nodeid, (key, _TestResult()))
            if report.failed and result.outcome != "failed":
                result.outcome = "failed"
                name = report.nodeid.split("::")[-1]
                line = _one_line(report)
                harness_line = _one_line_failure(report)
                if harness_line is not None:
                    result.message, result.details = harness_line, ""
                else:
                    result.message = line if _HARNESS_LINE.match(line) else f"{name}: {line}"
                    details = _trim(report.longreprtext)
                    result.details = details if "\n" in details else ""
                result.traceback = next(
                    (
                        record.get("traceback", "")
                        for key, record in report.user_properties
                        if key == "kata"
                    ),
                    "",
                )
            elif report.skipped and result.outcome == "passed":
                result.outcome, result.message = "skipped", _one_line(report)
        if report.when == "teardown":
            self.done += 1
            if self.on_progress:
                self.on_progress(self.done, self.total)


def _aggregate(phase: Phase, recorder: _Recorder) -> PhaseOutcome:
    outcome = PhaseOutcome(key="")
    for nodeid, message in recorder.collect_errors:
        if curriculum.phase_of_path(curriculum.ROOT / nodeid.split("::")[0]) == phase:
            failed = TaskOutcome("failed", f"the tests of {phase.name} do not import: {message}")
            outcome.tasks = {task.number: failed for task in phase.tasks}
            return outcome
    by_task: dict[int, list[_TestResult]] = {}
    for (phase_number, task_number), result in recorder.tests.values():
        if phase_number == phase.number:
            by_task.setdefault(task_number, []).append(result)
    for task in phase.tasks:
        results = by_task.get(task.number, [])
        failed = [r for r in results if r.outcome == "failed"]
        if failed:
            first = failed[0]
            outcome.tasks[task.number] = TaskOutcome(
                "failed", first.message, first.details, first.traceback
            )
        elif any(r.outcome == "passed" for r in results):
            outcome.tasks[task.number] = TaskOutcome("passed")
        elif results:
            outcome.tasks[task.number] = TaskOutcome("skipped", results[0].message)
        else:
            outcome.tasks[task.number] = TaskOutcome("not run", "no test of this task ran")
    return outcome


def pytest_args(phases: Iterable[Phase], impl: str) -> list[str]:
    root = curriculum.ROOT
    args = [str(p.kata_path.parent) for p in phases]
    args += [
        f"--impl={impl}",
        "--rootdir",
        str(root),
        "-c",
        str(root / "pyproject.toml"),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
    ]
    if impl == "reference":
        args.append("--no-honesty")
    return [*args, "-q"]


def run_phases(
    phases: list[Phase],
    *,
    impl: str = "katas",
    keys: dict[str, str] | None = None,
    on_progress: ProgressFn | None = None,
    verbose: bool = False,
) -> dict[str, PhaseOutcome]:
    """Run the tests of `phases` in one pytest session; outcomes by phase name."""
    import pytest

    recorder = _Recorder(on_progress)
    with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main(pytest_args(phases, impl), plugins=[recorder])
    if code == pytest.ExitCode.INTERRUPTED:
        raise KeyboardInterrupt
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        names = " ".join(str(Path(p.kata_path.parent).relative_to(curriculum.ROOT)) for p in phases)
        raise RunError(
            f"pytest stopped with {code.name.lower().replace('_', ' ')}; "
            f"see why with: uv run pytest {names}"
        )
    results = {}
    for phase in phases:
        results[phase.name] = _aggregate(phase, recorder)
        results[phase.name].key = (keys or {}).get(phase.name, "")
    return results
