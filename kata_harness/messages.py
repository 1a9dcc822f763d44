"""One readable line instead of a traceback, for the failures a learner meets most.

An unfinished task (the stub's ``NotImplementedError``), a return value of the wrong type, a
timeout, and an exception raised by kata code are each cut to one line that names the task, where
it happened and what to do; the kata's own frames are kept aside (``katas run --full``, ``t`` in
watch). Assertion failures keep pytest's report: what the test expected is the lesson.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import curriculum, verdict
from .contract import ContractViolation
from .variants import task_of

MAX_CAPTURED = 2000
kata_traceback = pytest.StashKey[str]()  # kata and test frames of an exception cut to one line


def todo_message(text: str) -> str | None:
    """The line for a stub's ``NotImplementedError("phaseN task M: fn")``."""
    match = verdict.TODO_PATTERN.search(text)
    if not match:
        return None
    try:
        phase = curriculum.phase(int(match.group(1)))
        function = match.group(3)
        task = phase.task(function) if function else phase.tasks[int(match.group(2)) - 1]
    except (KeyError, IndexError):
        return None
    kata_file = phase.kata_path.relative_to(curriculum.ROOT)
    return (
        f"{task.id} ({task.kind} task {task.function}: {task.title}) is not done yet: "
        f"edit {kata_file}; "
        f"hint: {task.hint_command}"
    )


def short_failure(item: pytest.Item, call: pytest.CallInfo) -> str | None:
    """One line for an unfinished task, a wrong return type, a timeout or an exception from kata
    code; None to keep pytest's own report."""
    if call.excinfo is None:
        return None
    error = call.excinfo.value
    todo = verdict.todo_of(error)
    if todo is not None:
        return todo_message(str(todo))
    phase, task = task_of(item)
    kata_file = phase.kata_path.relative_to(curriculum.ROOT)
    if isinstance(error, ContractViolation):
        return f"{error}; read the task's docstring in {kata_file}"
    if type(error).__name__ == "Failed" and str(error).startswith("Timeout"):
        timeout = item.config.getini("timeout")
        return (
            f"{task.id} ({task.function}) did not finish within {timeout} s: look for a "
            f"loop that never ends in {kata_file}"
        )
    if isinstance(error, AssertionError) or not isinstance(error, Exception):
        return None
    if type(error).__module__.startswith(("_pytest", "pytest_check")):
        return None
    if item.config.option.tbstyle in ("long", "native"):
        return None  # asked for the whole traceback
    item.stash[kata_traceback] = verdict.kata_traceback(error, Path(item.path))
    where = _kata_frame(call.excinfo.tb, item)
    message = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return (
        f"{task.id} ({task.function}) raised {type(error).__name__}: {message} "
        f"[{where}]; check what {kata_file} returns for this task"
    )


def _kata_frame(tb, item: pytest.Item) -> str:
    """The innermost traceback line in a kata file, else in the test file."""
    in_kata, in_test = None, None
    while tb is not None:
        filename = Path(tb.tb_frame.f_code.co_filename)
        if filename.name == curriculum.KATA_FILE:
            in_kata = f"{filename.parent.name}/{filename.name}:{tb.tb_lineno}"
        elif filename == Path(item.path):
            in_test = f"{filename.name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return in_kata or in_test or "?"


def truncate_sections(report: pytest.TestReport) -> None:
    """A kata that prints megabytes must not bury its failure: cut captured output short."""
    cut = []
    for title, text in report.sections:
        if len(text) > MAX_CAPTURED:
            text = f"{text[:MAX_CAPTURED]}\n... ({len(text) - MAX_CAPTURED} more characters cut)"
        cut.append((title, text))
    report.sections = cut


def mismatch(got: object, want: dict) -> str:
    """What is wrong with an answer dict, named without the expected values (a failure on a
    drawn case must not print a table to copy): missing, extra and wrong keys, one of each."""
    if not isinstance(got, dict):
        return f"expected a dict, got {type(got).__name__}"
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    wrong = sorted(k for k in set(want) & set(got) if got[k] != want[k])
    parts = []
    if missing:
        parts.append(f"{len(missing)} entries missing (e.g. {missing[0]!r})")
    if extra:
        parts.append(f"{len(extra)} entries that should not be there (e.g. {extra[0]!r})")
    if wrong:
        parts.append(f"{len(wrong)} wrong (e.g. {wrong[0]!r}: you gave {got[wrong[0]]!r})")
    return "; ".join(parts)
