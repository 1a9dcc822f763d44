"""The census ledger: a phase's recorded census holds until something its tests read changes."""

import subprocess

import pytest

from kata_harness import curriculum
from katas_cli import ledger

FILES = {
    "kata_harness/guard.py": "shared",
    "katas/phase1/test_phase1.py": "one",
    "katas/phase2/test_phase2.py": "two",
    "katas/phase12/test_phase12.py": "twelve",
    "reference/phase2/kata.py": "two's reference",
    "decoys/redteam/phase12_probes/r1_x.py": "a probe",
    "snapshots/cpu/jax-0.12/katas/phase1/test_phase1/a.txt": "pinned",
    "docs/figures.md": "figures",
    "tests/cli/test_x.py": "not read by the census",
    "CHANGELOG.md": "notes",
    "decoys/redteam/catchers.json": "{}",
}


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setattr(curriculum, "ROOT", tmp_path)
    monkeypatch.setattr(ledger, "PATH", tmp_path / "decoys" / "census-ledger.json")
    return tmp_path


def _changed_by(checkout, name: str, text: str = "edited") -> set[str]:
    before = ledger.keys([1, 2, 12], seed=1)
    (checkout / name).parent.mkdir(parents=True, exist_ok=True)
    (checkout / name).write_text(text)
    after = ledger.keys([1, 2, 12], seed=1)
    assert before is not None and after is not None
    return {phase for phase in before if before[phase] != after[phase]}


@pytest.mark.parametrize(
    ("name", "phases"),
    [
        ("katas/phase2/test_phase2.py", {"phase2"}),
        ("reference/phase2/kata.py", {"phase2"}),
        ("decoys/redteam/phase12_probes/r1_x.py", {"phase12"}),
        ("decoys/redteam/phase12_round3.py", {"phase12"}),  # a new file counts
        ("snapshots/cpu/jax-0.12/katas/phase1/test_phase1/a.txt", {"phase1"}),
        ("kata_harness/guard.py", {"phase1", "phase2", "phase12"}),
        ("docs/figures.md", set()),
        ("tests/cli/test_x.py", set()),
        ("CHANGELOG.md", set()),
        ("decoys/redteam/catchers.json", set()),
    ],
)
def test_an_edit_changes_the_keys_of_the_phases_that_read_it(checkout, name, phases):
    assert _changed_by(checkout, name) == phases


def test_the_seed_is_part_of_the_key(checkout):
    assert ledger.keys([1], seed=1) != ledger.keys([1], seed=2)
    assert ledger.keys([1], seed=1) == ledger.keys([1], seed=1)


def test_recorded_honest_phases_are_skipped_but_one_drawn_from_the_keys(checkout):
    current = ledger.keys([1, 2, 12], seed=1)
    assert current is not None
    assert ledger.to_run(current) == (["phase1", "phase2", "phase12"], [])
    assert ledger.record(current, honest={"phase1", "phase12"}) == 2
    runs, held = ledger.to_run(current)
    assert runs[0] == "phase2" and len(runs) == 2 and len(held) == 1
    assert set(runs[1:] + held) == {"phase1", "phase12"}
    assert ledger.to_run(current) == (runs, held)  # the same checkout draws the same phase


def test_a_phase_with_gaps_loses_its_entry(checkout):
    current = ledger.keys([1, 2], seed=1)
    assert current is not None
    ledger.record(current, honest={"phase1", "phase2"})
    ledger.record(current, honest={"phase1"})
    assert set(ledger.load()) == {"phase1"}


def test_without_git_there_are_no_keys(checkout, monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert ledger.keys([1], seed=1) is None
