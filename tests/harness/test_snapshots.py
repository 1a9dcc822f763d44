"""Snapshot pinning: a JAX upgrade (or another platform) skips in kata mode with the re-pin
command and fails in reference mode; only the reference ever writes."""

import json

import pytest

from kata_harness import snapshots


@pytest.fixture
def pinned_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOTS_DIR", tmp_path)
    monkeypatch.setattr(
        snapshots, "running_versions", lambda: {"jax": "0.99.0", "jaxlib": "0.99.0"}
    )
    return tmp_path


def _pin(directory, key, jax_version):
    (directory / key).mkdir(parents=True, exist_ok=True)
    (directory / key / "versions.json").write_text(
        json.dumps({"jax": jax_version, "jaxlib": jax_version})
    )


def test_matching_versions_are_usable(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.99.0")
    assert snapshots.pin_status("cpu-x86_64").usable


def test_version_mismatch_names_both_versions_and_the_repin_command(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.12.0.1")
    status = snapshots.pin_status("cpu-x86_64")
    assert not status.usable
    assert "0.12.0.1" in status.message and "0.99.0" in status.message
    assert snapshots.REPIN_COMMAND in status.message


def test_unknown_platform_says_none_are_pinned_and_what_is(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.12.0.1")
    status = snapshots.pin_status("gpu-aarch64")
    assert not status.usable and "no snapshots are pinned for gpu-aarch64" in status.message
    assert "cpu-x86_64 with jax 0.12.0.1" in status.message and "0.99.0" in status.message


def test_mismatch_skips_learners_and_fails_the_reference(pinned_dir):
    _pin(pinned_dir, "cpu-x86_64", "0.12.0.1")
    status = snapshots.pin_status("cpu-x86_64")
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


def test_record_versions_writes_the_running_versions(pinned_dir):
    snapshots.record_versions("cpu-x86_64")
    assert snapshots.pinned_versions("cpu-x86_64") == {"jax": "0.99.0", "jaxlib": "0.99.0"}


def test_snapshot_update_is_refused_outside_reference_mode(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "kata_harness.plugin", "--snapshot-update", "--impl=katas"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--snapshot-update is refused unless --impl=reference*"])
