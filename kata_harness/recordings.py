"""Compiler output kept in a phase's ``recorded/`` folder: where a recording lives, reading it,
the versions its header names, and the freshness check every recording test runs.

A recording is a text file led by comment lines naming what made it (``// versions: ...`` for
XLA's and IREE's modules). The tests in ``tests/harness/test_*recordings.py`` make each one again
when the tool that made it is installed: :func:`check_current` holds the steps they share, and
each test file states only what its tool does (how a recording is made and written, which
versions it names, what must match).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import curriculum, programs

VERSIONS_LINE = "// versions: "


def recorded_path(phase: str, name: str, suffix: str) -> Path:
    """``katas/<phase>/recorded/<name><suffix>``."""
    return curriculum.KATAS_DIR / phase / curriculum.RECORDED_DIR / f"{name}{suffix}"


def read_recorded(path: Path, command: str) -> str:
    """The text of recording ``path``, or FileNotFoundError naming ``command`` that records it."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: record it with {command}")
    return path.read_text(encoding="utf-8")


def header_versions(text: str) -> str | None:
    """The versions a recorded text names in its header (the ``//`` lines that lead it)."""
    for line in text.splitlines():
        if line.startswith(VERSIONS_LINE):
            return line.removeprefix(VERSIONS_LINE)
        if not line.startswith("//"):
            break
    return None


def programs_with(attribute: str) -> list[tuple[str, Any]]:
    """(phase name, its ``programs`` module) for every phase whose programs.py has ``attribute``."""
    found = []
    for phase in curriculum.phases():
        module = programs.load(phase)
        if hasattr(module, attribute):
            found.append((phase.name, module))
    return found


def updating(request: pytest.FixtureRequest) -> bool:
    """Whether this run rewrites recordings (``--snapshot-update``)."""
    return bool(getattr(request.config.option, "update_snapshots", False))


def check_current[Made](
    request: pytest.FixtureRequest,
    path: Path,
    *,
    command: str,
    unavailable: str | None,
    running: Callable[[], str],
    recorded_with: Callable[[str], str | None],
    make: Callable[[], Made],
    render: Callable[[Made], str],
    compare: Callable[[str, Made], None],
    fail_if_missing: bool = True,
) -> None:
    """The freshness check of recording ``path``, which ``command`` records.

    Fails when the file is missing (unless ``fail_if_missing`` is off: another test says so), then
    skips with ``unavailable`` (why the tool cannot run here, or None) and when the file names
    other versions (``recorded_with(text)``) than run here (``running()``). Otherwise it makes the
    recording again (``make()``); with ``--snapshot-update`` it writes ``render(made)`` (reference
    mode only), else ``compare(kept_text, made)`` asserts they match.
    """
    __tracebackhide__ = True
    update = updating(request)
    if fail_if_missing and not path.is_file() and not update:
        pytest.fail(f"{path} is missing: record it with {command}", pytrace=False)
    if unavailable is not None:
        pytest.skip(unavailable)
    kept = path.read_text(encoding="utf-8") if path.is_file() else None
    if kept is not None and not update:
        was, now = recorded_with(kept), running()
        if was != now:
            pytest.skip(f"recorded with {was}, running {now}")
    made = make()
    if update:
        if request.config.getoption("--impl") != "reference":
            pytest.fail("recordings are written in reference mode only", pytrace=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(made), encoding="utf-8")
        return
    compare(kept if kept is not None else read_recorded(path, command), made)


def recorded_or_skip(path: Path, checked_by: str) -> str:
    """The text of recording ``path``; skips while it is not recorded (``checked_by``, the
    freshness test, fails on that)."""
    if not path.is_file():
        pytest.skip(f"{path} is not recorded yet ({checked_by} says so)")
    return path.read_text(encoding="utf-8")
