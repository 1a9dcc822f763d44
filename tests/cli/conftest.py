"""Fixtures for the `katas` CLI tests: a private state folder and a fake test runner."""

from __future__ import annotations

import pytest

from kata_harness import curriculum
from katas_cli.state import PhaseOutcome, TaskOutcome


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("KATAS_STATE_DIR", str(folder))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return folder


def outcomes_with(passed: set[str]) -> dict[str, PhaseOutcome]:
    """Every task of every phase failed, except the task ids in `passed`."""
    result = {}
    for phase in curriculum.phases():
        tasks = {
            t.number: TaskOutcome("passed")
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
