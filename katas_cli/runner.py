"""Run kata tests in this process with `pytest.main` and record one outcome per task.

Running in-process keeps JAX imported between runs (watch mode reruns in well under a second);
the harness reloads a kata module when its file changes and clears JAX's caches before each test.
Outcomes come from the harness's structured records (`kata_harness.records`), one per test,
keyed by the task's function name: nothing printed is parsed, and reordering or renaming tasks in
`tasks.toml` cannot point an outcome at the wrong task.
Pytest's terminal output goes to a buffer (the terminal plugin stays loaded: pytest-timeout writes
its stack dump through it); `verbose=True` lets it through (`katas run -v`). pytest is imported on
the first run, so commands that only read the cached state start fast.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kata_harness import curriculum, records
from kata_harness.curriculum import Phase
from kata_harness.records import TestRecord

from .errors import RunError
from .state import PhaseOutcome, TaskOutcome

if TYPE_CHECKING:
    import pytest

ProgressFn = Callable[[int, int], None]
_IMPL_KINDS = ("katas", "reference")  # the runs that decide a task; stub and variant runs do not


@dataclass(slots=True)
class _Recorder:
    """A pytest plugin object: the harness's records of the learner's (or reference) runs."""

    on_progress: ProgressFn | None = None
    total: int = 0
    done: int = 0
    records: list[TestRecord] = field(default_factory=list)
    collect_errors: list[tuple[str, str]] = field(default_factory=list)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)
        if self.on_progress:
            self.on_progress(0, self.total)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append((report.nodeid, _first_line(report.longreprtext)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.records += [r for r in records.read(report) if r.kind in _IMPL_KINDS]
        if report.when == "teardown":
            self.done += 1
            if self.on_progress:
                self.on_progress(self.done, self.total)


def _first_line(text: str) -> str:
    """The error of a test file that does not import: its last `E` line says what broke."""
    errors = [line.removeprefix("E").strip() for line in text.splitlines() if line.startswith("E ")]
    line = errors[-1] if errors else text.strip().splitlines()[-1] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."


def _aggregate(phase: Phase, recorder: _Recorder) -> PhaseOutcome:
    outcome = PhaseOutcome(key="")
    for nodeid, message in recorder.collect_errors:
        if curriculum.phase_of_path(curriculum.ROOT / nodeid.split("::")[0]) == phase:
            failed = TaskOutcome("failed", f"the tests of {phase.name} do not import: {message}")
            outcome.tasks = {task.function: failed for task in phase.tasks}
            return outcome
    by_task: dict[str, list[TestRecord]] = {}
    for record in recorder.records:
        if record.phase == phase.name:
            by_task.setdefault(record.function, []).append(record)
    for task in phase.tasks:
        results = by_task.get(task.function, [])
        failed = [r for r in results if r.outcome == "failed"]
        if failed:
            first = failed[0]
            outcome.tasks[task.function] = TaskOutcome(
                "failed", first.message, first.details, first.traceback
            )
        elif any(r.outcome == "passed" for r in results):
            outcome.tasks[task.function] = TaskOutcome("passed")
        elif results:
            outcome.tasks[task.function] = TaskOutcome("skipped", results[0].message)
        else:
            outcome.tasks[task.function] = TaskOutcome("not run", "no test of this task ran")
    return outcome


def _forget_test_modules(phases: Iterable[Phase]) -> None:
    """pytest reuses a test module already in `sys.modules` (as `katas.phaseN.test_phaseN`,
    whichever copy of the course it came from): drop those of `phases`, and the programs they
    import, so that a rerun in this process reads the files as they are now."""
    phase_packages = tuple(f"katas.{p.name}" for p in phases)
    inside = tuple(f"{p}." for p in phase_packages)
    for name in list(sys.modules):
        # `katas` itself too: a namespace package bound to the copy of the course it came from
        if name == "katas" or name in phase_packages or name.startswith(inside):
            del sys.modules[name]


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

    _forget_test_modules(phases)
    recorder = _Recorder(on_progress)
    with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main(pytest_args(phases, impl), plugins=[recorder])
    if code == pytest.ExitCode.INTERRUPTED and not recorder.collect_errors:
        raise KeyboardInterrupt  # (pytest also says "interrupted" when a test file fails to import)
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
