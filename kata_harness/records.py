"""The structured outcome of every kata test: what the harness tells the CLI and the census.

The plugin attaches one record per test phase that matters (the call, or a failed setup or
teardown) to ``report.user_properties`` as ``("kata", {...})``; pytest and pytest-xdist carry it
to whoever listens (``katas`` reads it with :func:`read`; nothing parses printed text). A task is
identified by its *function*, which survives reordering ``tasks.toml``; ``task`` (``phaseN.taskM``)
is for people.

This module does not import pytest: the CLI reads records without loading it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

RECORD = "kata"
DETAIL_LINES = 40
MESSAGE_CHARS = 200


@dataclass(frozen=True, slots=True)
class TestRecord:
    phase: str  # "phase3"
    function: str  # the task's function: its identity
    task: str  # "phase3.task2"
    test: str  # the test function's name
    variant: str  # "katas", "reference", "stub", "decoy-NAME", "accepted-NAME"
    kind: str  # the variant without its name
    when: str  # "setup", "call" or "teardown"
    outcome: str  # after the honest-kata verdict: "passed", "failed" or "skipped"
    message: str  # one line, naming the test unless the harness wrote the line itself
    details: str = ""  # pytest's report of an assertion, cut to DETAIL_LINES
    traceback: str = ""  # kata frames of an exception that `message` cut to one line
    hint: str = ""  # the command that shows the task's next hint
    caught: bool | None = None  # a red-team answer or probe: did this test reject it?

    __test__ = False  # not a pytest test class, whatever its name


def read(report: Any) -> list[TestRecord]:
    """The records a test report carries (from this process or an xdist worker)."""
    return [TestRecord(**value) for key, value in report.user_properties if key == RECORD]


def attach(report: Any, record: TestRecord) -> None:
    report.user_properties.append((RECORD, asdict(record)))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().removeprefix("E").strip()
        if line:
            return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 3] + "..."
    return ""


def _trim(text: str) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) <= DETAIL_LINES:
        return "\n".join(lines)
    return "\n".join([*lines[:DETAIL_LINES], f"... ({len(lines) - DETAIL_LINES} more lines)"])


def _harness_line(longrepr: Any) -> str | None:
    """A failure the harness or a test reported as one line (``pytest.fail(pytrace=False)``);
    the exceptions chained to it (the harness fails while handling an import error) are not."""
    chain = getattr(longrepr, "chain", None)
    if not chain:
        return None
    traceback, crash, _ = chain[-1]
    if getattr(traceback, "style", None) != "value" or crash is None:
        return None
    return _first_line(crash.message.removeprefix("Failed: "))


def describe(report: Any, test: str) -> tuple[str, str]:
    """``(message, details)`` of a failed or skipped report."""
    longrepr = report.longrepr
    if report.skipped:
        reason = longrepr[2] if isinstance(longrepr, tuple) else report.longreprtext
        return _first_line(str(reason)), ""
    if not report.failed:
        return "", ""
    if isinstance(longrepr, str):  # a line the harness wrote (names the task itself)
        return _first_line(longrepr), ""
    line = _harness_line(longrepr)
    if line is not None:
        return line, ""
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        line = _first_line(crash.message)
    else:
        errors = [x for x in report.longreprtext.splitlines() if x.startswith("E ")]
        line = _first_line(errors[0] if errors else report.longreprtext)
    details = _trim(report.longreprtext)
    return f"{test}: {line}", details if "\n" in details else ""
