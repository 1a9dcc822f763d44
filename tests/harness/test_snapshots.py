"""Snapshot pinning per platform and JAX version: a JAX without pins skips in kata mode with the
re-pin command and fails in reference mode; only the reference ever writes; re-pinning one phase
under one JAX leaves every other pin and record byte-identical."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from kata_harness import curriculum, snapshots

PHASE3 = curriculum.KATAS_DIR / "phase3" / "test_phase3.py"
PHASE4 = curriculum.KATAS_DIR / "phase4" / "test_phase4.py"


@pytest.fixture
def pinned_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOTS_DIR", tmp_path)
    monkeypatch.setattr(
        snapshots, "running_versions", lambda: {"jax": "0.99.0", "jaxlib": "0.99.0"}
    )
    return tmp_path


def _pin(directory, key, jax_version, test_file=PHASE3, jaxlib=None):
    relative = test_file.relative_to(curriculum.ROOT).with_suffix("")
    record = directory / key / f"jax-{jax_version}" / relative.parent
    record.mkdir(parents=True, exist_ok=True)
    (record / f"{relative.name}.versions.json").write_text(
        json.dumps({"jax": jax_version, "jaxlib": jaxlib or jax_version})
    )


def test_matching_versions_are_usable(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.99.0")
    assert snapshots.pin_status("cpu-x86_64", PHASE3).usable
    assert snapshots.snapshot_dir("cpu-x86_64", PHASE3) == (
        pinned_dir / "cpu-x86_64" / "jax-0.99.0" / "katas" / "phase3" / "test_phase3"
    )


def test_pins_of_another_version_name_it_and_the_repin_command(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.12.0.1")
    status = snapshots.pin_status("cpu-x86_64", PHASE3)
    assert not status.usable
    assert "pinned for jax: 0.12.0.1" in status.message and "0.99.0" in status.message
    assert "pytest katas/phase3/test_phase3.py --impl=reference --snapshot-update" in (
        status.message
    )
    assert "--with jax==0.99.0 --with jaxlib==0.99.0" in status.message  # not the lock's JAX


def test_another_jaxlib_under_the_same_jax_is_stale(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.99.0", jaxlib="0.98.0")
    status = snapshots.pin_status("cpu-x86_64", PHASE3)
    assert not status.usable and "jaxlib 0.98.0" in status.message


def test_versions_side_by_side_each_usable_under_its_own(pinned_dir, monkeypatch):
    _pin(pinned_dir, "cpu-x86_64", "0.99.0")
    _pin(pinned_dir, "cpu-x86_64", "0.98.0")
    assert snapshots.pin_status("cpu-x86_64", PHASE3).usable
    monkeypatch.setattr(
        snapshots, "running_versions", lambda: {"jax": "0.98.0", "jaxlib": "0.98.0"}
    )
    assert snapshots.pin_status("cpu-x86_64", PHASE3).usable
    assert snapshots.pinned_test_files("cpu-x86_64") == {
        "jax-0.98.0": ["katas/phase3/test_phase3.py"],
        "jax-0.99.0": ["katas/phase3/test_phase3.py"],
    }


def test_header_names_every_unpinned_file_once_with_one_command(pinned_dir, monkeypatch):
    monkeypatch.setattr(snapshots, "platform_key", lambda: "cpu-x86_64")
    _pin(pinned_dir, "cpu-x86_64", "0.99.0", PHASE3)
    assert snapshots.header_lines() == []
    _pin(pinned_dir, "cpu-x86_64", "0.12.0.1", PHASE4)
    (line,) = snapshots.header_lines()
    assert "katas/phase4/test_phase4.py are not pinned for jax 0.99.0" in line
    assert "phase3" not in line.split("pin them:")[0]
    assert line.endswith("pytest katas/phase4/test_phase4.py --impl=reference --snapshot-update")


def test_mismatch_skips_learners_and_fails_the_reference(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.12.0.1")
    status = snapshots.pin_status("cpu-x86_64", PHASE3)
    assert snapshots.decide("katas", False, status) == ("skip", status.message)
    assert snapshots.decide("reference", False, status) == ("fail", status.message)
    assert snapshots.decide("decoy", False, status)[0] == "skip"


def test_only_the_reference_writes():
    stale = snapshots.PinStatus(False, "stale")
    fresh = snapshots.PinStatus(True, "")
    assert snapshots.decide("reference", True, stale)[0] == "update"
    for kind in ("stub", "decoy"):
        assert snapshots.decide(kind, True, fresh)[0] == "compare"
        assert snapshots.decide(kind, False, fresh)[0] == "compare"
    assert snapshots.decide("katas", False, fresh)[0] == "syrupy"


def test_record_versions_writes_the_running_versions_once(pinned_dir):
    snapshots.record_versions("cpu-x86_64", PHASE3)
    assert snapshots.pinned_versions("cpu-x86_64", PHASE3) == {
        "jax": "0.99.0",
        "jaxlib": "0.99.0",
    }
    record = snapshots.record_file("cpu-x86_64", PHASE3)
    before = record.stat().st_mtime_ns
    os.utime(record, ns=(before - 10**9, before - 10**9))
    snapshots.record_versions("cpu-x86_64", PHASE3)
    assert record.stat().st_mtime_ns == before - 10**9  # not rewritten


@pytest.mark.battery
def test_snapshot_update_is_refused_outside_reference_mode(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "kata_harness.plugin", "--snapshot-update", "--impl=katas"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--snapshot-update is refused unless --impl=reference*"])


def _digests(root):
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.battery
@pytest.mark.timeout(240)  # one pytest run of phase 3's snapshot tests in a subprocess
def test_repinning_one_phase_leaves_every_other_pin_and_record_byte_identical(tmp_path):
    """In a copy of the course: another JAX's pins and the phase 4 pins of this JAX sit beside
    phase 3's; phase 3's pin is spoiled and its record removed; `pytest katas/phase3
    --snapshot-update` restores exactly those two files and touches nothing else."""
    key = snapshots.platform_key()
    here = snapshots.SNAPSHOTS_DIR / key / snapshots.version_key()
    if not (here / "katas" / "phase3").is_dir():
        pytest.skip(f"phase 3 has no pins in {here.relative_to(curriculum.ROOT)} to start from")
    course = tmp_path / "course"
    for name in ("katas", "reference", "decoys", "snapshots"):
        shutil.copytree(
            curriculum.ROOT / name, course / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(curriculum.ROOT / name, course / name)
    pins = course / "snapshots"
    other = pins / key / "jax-0.0.1"
    shutil.copytree(pins / key / snapshots.version_key(), other, dirs_exist_ok=True)
    mine = pins / key / snapshots.version_key() / "katas" / "phase3"
    spoiled = mine / "test_phase3" / "test_optimized_mlp_snapshot.txt"
    original = spoiled.read_bytes()
    spoiled.write_text("spoiled\n")
    (mine / "test_phase3.versions.json").unlink()
    before = _digests(pins)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KATAS_"))}
    env["KATAS_ROOT"] = str(course)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "katas/phase3", "-k", "snapshot", "--impl=reference"]
        + ["--no-honesty", "--snapshot-update", "-n", "0", "-p", "no:cacheprovider", "-W"]
        + ["error::UserWarning"],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    after = _digests(pins)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    phase3 = f"{key}/{snapshots.version_key()}/katas/phase3"
    assert changed == {
        f"{phase3}/test_phase3/test_optimized_mlp_snapshot.txt",
        f"{phase3}/test_phase3.versions.json",
    }
    assert spoiled.read_bytes() == original
