"""--group-skips: the tests a missing optional group skipped, listed for a run with the groups."""

from types import SimpleNamespace
from typing import Literal

import pytest

from kata_harness import unchecked


def _report(
    nodeid: str, outcome: Literal["passed", "skipped"], reason: str = ""
) -> pytest.TestReport:
    longrepr = ("tests/x.py", 3, f"Skipped: {reason}") if outcome == "skipped" else None
    return pytest.TestReport(nodeid, ("tests/x.py", 3, "x"), {}, outcome, longrepr, "setup")


def _finish(path, *, worker: bool = False) -> None:
    config = SimpleNamespace(getoption=lambda name: str(path) if name == "--group-skips" else None)
    if worker:
        config.workerinput = {}
    unchecked.pytest_sessionfinish(SimpleNamespace(config=config))  # type: ignore[arg-type]


def test_only_skips_for_a_missing_group_are_listed(tmp_path, monkeypatch):
    monkeypatch.setattr(unchecked, "_group_skips", set())
    reports = [
        _report("tests/a.py::test_tpu[v5e]", "skipped", "needs: uv sync --group tpu (tpu-v5e)"),
        _report("tests/a.py::test_gated", "skipped", "gated: jax >= 0.11 (a stated reason)"),
        _report("tests/a.py::test_passes", "passed"),
        _report("tests/b.py::test_iree", "skipped", "iree-base-compiler: uv sync --group iree"),
    ]
    for report in reports:
        unchecked.pytest_runtest_logreport(report)
    path = tmp_path / "skips.txt"
    _finish(tmp_path / "worker.txt", worker=True)
    assert not (tmp_path / "worker.txt").exists(), "a worker has only its own reports"
    _finish(path)
    assert path.read_text().splitlines() == ["tests/a.py::test_tpu[v5e]", "tests/b.py::test_iree"]


def test_nothing_is_written_without_the_option(tmp_path, monkeypatch):
    monkeypatch.setattr(unchecked, "_group_skips", {"tests/a.py::test_tpu"})
    monkeypatch.chdir(tmp_path)
    _finish("")
    assert list(tmp_path.iterdir()) == []
