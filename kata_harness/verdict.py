"""Whether a failing test failed for the right reason.

In reference mode a test runs against the shipped stub and against decoys, and must fail on
them. A failure only counts when it is the test doing its job:

- on the stub, through the stub's own ``NotImplementedError`` ("phaseN task M: ...");
- on a decoy, through an assertion of the test: an ``assert`` or ``pytest.fail`` in the phase's
  test files (inside ``with check:`` too), ``pytest.raises`` that does not match, a pinned
  snapshot that differs, or the return-type contract (:mod:`kata_harness.contract`).

Anything else (a ``NameError`` in the decoy, a ``TypeError`` while the test handles its result,
a skip called by kata code, a timeout) says nothing about the test, so the harness reports the
decoy as broken instead of counting it as caught. A red-team probe is a learner's file, and a
learner's file that never answers fails its task (pytest-timeout stops it, in one line): a probe
pytest-timeout stopped while its own code ran is rejected, "stopped after N s: never answered"
(:func:`stopped`). A red-team answer, like an author's decoy, must be caught by an assertion:
one that hangs is still broken.

``pytest_check`` swallows the exceptions of ``with check:`` blocks; :func:`record_checks` keeps
them for the verdict.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pytest
from pytest_check.context_manager import CheckContextManager

from . import curriculum
from .contract import ContractViolation
from .curriculum import KATA_FILE, Phase
from .guard import is_kata_file

# The stub's `NotImplementedError("phaseN task M: function")`; the function names the task (M is
# its position when the stub was written, and goes stale when tasks.toml is reordered).
TODO_PATTERN = re.compile(r"\bphase(\d+) task (\d+)\b(?:: (\w+))?")

_swallowed: list[BaseException] = []


def record_checks() -> None:
    """Make ``with check:`` blocks remember what they swallow (idempotent)."""
    if getattr(CheckContextManager.__exit__, "_kata_records", False):
        return
    original = CheckContextManager.__exit__

    def __exit__(self, exc_type, exc_val, exc_tb):  # noqa: N807
        __tracebackhide__ = True
        if exc_val is not None:
            _swallowed.append(exc_val)
        return original(self, exc_type, exc_val, exc_tb)

    __exit__._kata_records = True  # type: ignore[attr-defined]
    CheckContextManager.__exit__ = __exit__  # type: ignore[method-assign]


def start() -> None:
    """Forget what earlier tests' check blocks swallowed."""
    _swallowed.clear()


def swallowed() -> list[BaseException]:
    return list(_swallowed)


@dataclass(frozen=True, slots=True)
class Verdict:
    caught: bool
    reason: str  # why it counts, or what went wrong instead


def _project_frames(tb: TracebackType | None) -> list[tuple[Path, int]]:
    frames = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if "site-packages" not in filename and filename.startswith(str(curriculum.ROOT)):
            frames.append((Path(filename), tb.tb_lineno))
        tb = tb.tb_next
    return frames


def origin(error: BaseException) -> tuple[Path, int] | None:
    """The innermost frame of this project (not a library) the exception passed through."""
    frames = _project_frames(error.__traceback__)
    return frames[-1] if frames else None


def where(error: BaseException) -> str:
    found = origin(error)
    if found is None:
        return "?"
    path, line = found
    try:
        return f"{path.relative_to(curriculum.ROOT)}:{line}"
    except ValueError:
        return f"{path}:{line}"


def from_kata_code(error: BaseException) -> bool:
    """Raised by kata code: the learner's file, the reference, a decoy."""
    found = origin(error)
    if found is None:
        return False
    path = found[0]
    return (
        is_kata_file(str(path))
        or path.parent.parent == curriculum.REFERENCE_DIR
        or path.parent in (curriculum.DECOYS_DIR, curriculum.DECOYS_DIR / "redteam")
    )


def _test_side(path: Path, phase: Phase) -> bool:
    folder = curriculum.KATAS_DIR / phase.name
    return (
        path.parent == folder and path.name != KATA_FILE
    ) or curriculum.HARNESS_DIR in path.parents


def _is_timeout(error: BaseException) -> bool:
    return isinstance(error, pytest.fail.Exception) and str(error).startswith("Timeout")


# pytest-timeout's failure: "Timeout (>60.0s) from pytest-timeout."
_TIMEOUT_AFTER = re.compile(r"Timeout \(>([\d.]+)s\)")


def stopped(error: BaseException) -> str | None:
    """The reason "stopped after N s: never answered" for pytest-timeout's failure raised
    while a kata file's code ran (a frame of the learner's file, or of a probe standing in for
    it, on the traceback); None for any other error, and for a timeout that stopped only the
    test's or the harness's own work (a slow compile on a loaded machine says nothing of the
    answer)."""
    if not _is_timeout(error):
        return None
    tb = error.__traceback__
    while tb is not None and not is_kata_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    if tb is None:
        return None
    found = _TIMEOUT_AFTER.match(str(error))
    after = f"{float(found.group(1)):g}" if found else "?"
    return f"stopped after {after} s: never answered"


def chain(error: BaseException) -> list[BaseException]:
    """The error and what it was raised from (a capture wraps the kata's exception)."""
    found: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and link not in found:
        found.append(link)
        link = link.__cause__ or link.__context__
    return found


def todo_of(error: BaseException) -> NotImplementedError | None:
    """A stub's "phaseN task M" NotImplementedError in the error's chain."""
    for link in chain(error):
        if isinstance(link, NotImplementedError) and TODO_PATTERN.search(str(link)):
            return link
    return None


def is_todo(error: BaseException, phase: Phase) -> bool:
    """The stub's own NotImplementedError for a task of this phase, raised in the stub."""
    todo = todo_of(error)
    if todo is None:
        return False
    match = TODO_PATTERN.search(str(todo))
    found = origin(todo)
    return (
        match is not None
        and int(match.group(1)) == phase.number
        and found is not None
        and found[0] == phase.kata_path
    )


def is_assertion(error: BaseException, phase: Phase) -> bool:
    """A failed assertion of the test (or of the harness on the test's behalf)."""
    if isinstance(error, ContractViolation):
        return True
    if _is_timeout(error) or isinstance(error, pytest.skip.Exception):
        return False
    if not isinstance(error, (AssertionError, pytest.fail.Exception)):
        return False
    found = origin(error)
    return found is not None and _test_side(found[0], phase)


def kata_traceback(error: BaseException, test_file: Path) -> str:
    """The error's traceback through kata and test code only (no harness, no library frames)."""
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if is_kata_file(f.filename) or Path(f.filename) == test_file
    ]
    lines = traceback.format_list(frames) + traceback.format_exception_only(error)
    return "Traceback (kata and test frames):\n" + "".join(lines).rstrip()


def describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:160] if text else ''} [{where(error)}]"


def judge(kind: str, phase: Phase, errors: list[BaseException]) -> Verdict:
    """Did the stub (``kind='stub'``), a decoy or red-team answer (``'decoy'``) or a probe
    (``'probe'``: also when pytest-timeout stopped its code) fail through the test doing its
    job?"""
    if not errors:
        return Verdict(False, "the test passed")
    accept = is_todo if kind == "stub" else is_assertion
    for error in errors:
        if accept(error, phase):
            return Verdict(True, describe(error))
    if kind == "probe":
        for error in errors:
            never = stopped(error)
            if never is not None:
                return Verdict(True, never)
    first = errors[0]
    if isinstance(first, pytest.skip.Exception):
        return Verdict(False, f"the test skipped ({describe(first)})")
    if _is_timeout(first):
        return Verdict(False, "the test timed out")
    expected = "its NotImplementedError" if kind == "stub" else "an assertion of the test"
    return Verdict(False, f"it failed with {describe(first)}, not through {expected}")
