"""reset: the stub comes from git history (robust to learner commits); a backup comes first."""

from __future__ import annotations

import subprocess

import pytest

from kata_harness import curriculum
from katas_cli.main import main

TASKS = """title = "t"

[[task]]
function = "f"
title = "f"
hints = ["a?", "b"]
"""
STUB = 'def f():\n    # TODO\n    raise NotImplementedError("phase1 task 1: f")\n'
FIXED_STUB = STUB.replace("# TODO", "# TODO: return 1")


def _git(root, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    folder = root / "katas" / "phase1"
    folder.mkdir(parents=True)
    (folder / "tasks.toml").write_text(TASKS)
    (folder / "kata.py").write_text(STUB)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "stub")
    (folder / "kata.py").write_text(FIXED_STUB)
    _git(root, "commit", "-qam", "authors fix the stub")
    (folder / "kata.py").write_text("def f():\n    return 1\n")
    _git(root, "commit", "-qam", "learner commits a solution")
    with curriculum.course_at(root):
        yield folder / "kata.py"


def test_reset_restores_newest_stub_and_backs_up(repo, state_dir, capsys):
    repo.write_text("def f():\n    return 2  # uncommitted work\n")
    assert main(["reset", "phase1", "--yes"]) == 0
    assert repo.read_text() == FIXED_STUB
    backups = list((state_dir / "backups").glob("phase1-*.py"))
    assert len(backups) == 1 and "uncommitted work" in backups[0].read_text()
    assert str(backups[0]) in capsys.readouterr().out


def test_reset_of_an_untouched_stub_makes_no_backup(repo, state_dir, capsys):
    repo.write_text(FIXED_STUB)
    assert main(["reset", "phase1", "--yes"]) == 0
    assert "already the stub" in capsys.readouterr().out
    assert not (state_dir / "backups").exists()


def test_reset_all_and_missing_file(repo, state_dir):
    repo.unlink()
    assert main(["reset", "--all", "--yes"]) == 0
    assert repo.read_text() == FIXED_STUB
    assert not (state_dir / "backups").exists()


def test_reset_without_git_exits_2(repo, monkeypatch, capsys):
    monkeypatch.setattr("katas_cli.reset.shutil.which", lambda name: None)
    assert main(["reset", "phase1", "--yes"]) == 2
    assert "git is not installed" in capsys.readouterr().err
    assert "return 1" in repo.read_text()
