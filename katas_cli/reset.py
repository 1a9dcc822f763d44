"""Put a phase's kata file back to the shipped stub, after backing up the learner's version.

Where the stub comes from: git history, not HEAD (the learner may have committed work). The
commits that touched the file are walked newest first (`git log --format=%H -- <path>`), and the
first version in which every task still raises its `NotImplementedError("phaseN task M: ...")`
is the stub: that survives learner commits and picks up later fixes to the stub itself. If no
version is a full stub, the version of the commit that added the file is used. Without git, or
outside a git checkout, reset refuses (exit 2).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from kata_harness import curriculum
from kata_harness.curriculum import Phase

from .state import state_dir
from .status import is_stub
from .targets import UsageError


def _git(*args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise UsageError("reset needs git to find the shipped stub, and git is not installed")
    result = subprocess.run(
        [git, *args], cwd=curriculum.ROOT, capture_output=True, text=True, timeout=60
    )
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["unknown error"])[0]
        raise UsageError(
            f"reset needs the git history of {curriculum.ROOT}: git {args[0]} failed ({reason})"
        )
    return result.stdout


def pristine_stub(phase: Phase) -> tuple[str, str]:
    """(text, commit) of the shipped stub of `phase` (see the module docstring)."""
    path = phase.kata_path.relative_to(curriculum.ROOT).as_posix()
    commits = _git("log", "--format=%H", "--", path).split()
    if not commits:
        raise UsageError(f"{path} has no git history: there is no shipped stub to reset to")
    versions = []
    for commit in commits:
        text = _git("show", f"{commit}:{path}") if _exists(commit, path) else None
        if text is not None and is_stub(phase, text):
            return text, commit
        versions.append((text, commit))
    added = [(t, c) for t, c in versions if t is not None]
    if not added:
        raise UsageError(f"no commit holds {path}: there is no shipped stub to reset to")
    return added[-1]


def _exists(commit: str, path: str) -> bool:
    return bool(_git("ls-tree", "--name-only", commit, "--", path).strip())


def backup(phase: Phase) -> Path | None:
    """Copy the learner's file to `.katas/backups/<phase>-<timestamp>.py`; None if it is missing."""
    if not phase.kata_path.is_file():
        return None
    folder = state_dir() / "backups"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"{phase.name}-{stamp}.py"
    counter = 1
    while target.exists():
        target = folder / f"{phase.name}-{stamp}-{counter}.py"
        counter += 1
    shutil.copy2(phase.kata_path, target)
    return target


def reset(phase: Phase) -> tuple[Path | None, str, bool]:
    """Back up, then write the stub. Returns (backup path, commit the stub came from, whether
    the file changed: a file that already is the stub is neither backed up nor rewritten)."""
    text, commit = pristine_stub(phase)
    if phase.kata_path.is_file() and phase.kata_path.read_text(encoding="utf-8") == text:
        return None, commit, False
    saved = backup(phase)
    phase.kata_path.parent.mkdir(parents=True, exist_ok=True)
    phase.kata_path.write_text(text, encoding="utf-8")
    return saved, commit, True
