"""Fixtures for the `katas` CLI tests: a private state folder, a small course, a fake runner.

Every test runs against a copy of ``course/`` (two phases of plain-Python tasks that run in a
second), not the real phases, so that changing a lesson never breaks a CLI test and a test may edit
the course (reorder tasks, rename a function, break a kata file). Tests that need the real course
(those that compile a phase's programs) are marked ``real_course``.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from kata_harness import curriculum
from katas_cli.state import PhaseOutcome, TaskOutcome

COURSE = Path(__file__).parent / "course"
collect_ignore = ["course"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real_course: the test reads the real phases")


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("KATAS_STATE_DIR", str(folder))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return folder


@pytest.fixture(autouse=True)
def course(request, tmp_path):
    """The root of this test's copy of the small course (the real root for `real_course`)."""
    if request.node.get_closest_marker("real_course"):
        yield curriculum.ROOT
        return
    root = tmp_path / "course"
    shutil.copytree(COURSE, root)
    with curriculum.course_at(root):
        yield root


def outcomes_with(passed: set[str]) -> dict[str, PhaseOutcome]:
    """Every task of every phase failed, except the task ids in `passed`."""
    result = {}
    for phase in curriculum.phases():
        tasks = {
            t.function: TaskOutcome("passed")
            if t.id in passed
            else TaskOutcome("failed", f"{t.id} fails: expected 2, got 3")
            for t in phase.tasks
        }
        result[phase.name] = PhaseOutcome("", tasks)
    return result


@pytest.fixture
def fake_runner(monkeypatch):
    """Replace pytest runs with canned outcomes; `calls` records which phases were run."""

    class Fake:
        passed: set[str] = {"phase1.task1"}
        calls: list[list[str]] = []

        def __call__(self, phases, *, impl="katas", keys=None, on_progress=None, verbose=False):
            self.calls.append([p.name for p in phases])
            canned = outcomes_with(self.passed)
            out = {}
            for phase in phases:
                out[phase.name] = canned[phase.name]
                out[phase.name].key = (keys or {}).get(phase.name, "")
            return out

    fake = Fake()
    fake.calls = []
    monkeypatch.setattr("katas_cli.status.run_phases", fake)
    return fake


def console_text(console: Console) -> str:
    """What was printed on a console made with ``Console(file=io.StringIO())``."""
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()
