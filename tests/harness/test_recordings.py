"""Every module recorded from a TPU/GPU compile (``RECORDINGS`` in a phase's programs.py) is there,
is read by XLA's own parser and by ours alike, and still matches what the compiler makes when its
target's group is installed with the versions it names. With ``--snapshot-update`` (reference
mode) a stale or missing recording is written again."""

from __future__ import annotations

import pytest

from kata_harness import curriculum, oracles, programs, versions
from kata_harness.targets import (
    RECORD_COMMAND,
    Recording,
    compile_recording,
    recorded_path,
    recorded_versions,
)
from xla_inspect import targets
from xla_inspect.parse import parse_hlo


def _recordings() -> list[tuple[str, str, Recording]]:
    found = []
    for phase in curriculum.phases():
        module = programs.load(phase)
        for name, recording in sorted(getattr(module, "RECORDINGS", {}).items()):
            found.append((phase.name, name, recording))
    return found


RECORDINGS = _recordings()
IDS = [f"{phase}/{name}" for phase, name, _ in RECORDINGS]


@pytest.mark.parametrize(("phase", "name", "recording"), RECORDINGS, ids=IDS)
def test_recording_is_current(request, phase, name, recording):
    path = recorded_path(phase, name)
    updating = bool(getattr(request.config.option, "update_snapshots", False))
    target = targets.get(recording.target)
    missing = target.missing()
    if not path.is_file() and not updating:
        pytest.fail(f"{path} is missing: record it with {RECORD_COMMAND}", pytrace=False)
    if missing is not None:
        pytest.skip(f"cannot check against the compiler: {missing}")
    kept = path.read_text(encoding="utf-8") if path.is_file() else None
    running = target.versions()
    if kept is not None and not updating and recorded_versions(kept) != running:
        pytest.skip(f"recorded with {recorded_versions(kept)}, running {running}")
    fresh = compile_recording(recording)
    if updating:
        if request.config.getoption("--impl") != "reference":
            pytest.fail("recordings are written in reference mode only", pytrace=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fresh, encoding="utf-8")
        return
    assert fresh == kept, f"{path} is stale: the compiler now makes other text; {RECORD_COMMAND}"


@pytest.mark.parametrize(("phase", "name", "recording"), RECORDINGS, ids=IDS)
def test_recording_reads_like_xla(phase, name, recording):
    path = recorded_path(phase, name)
    if not path.is_file():
        pytest.skip(f"{path} is not recorded yet (test_recording_is_current says so)")
    text = path.read_text(encoding="utf-8")
    gate = versions.NEWER_SYNTAX_GATE if versions.uses_newer_hlo_syntax(text) else None
    if gate is not None and not versions.checked(gate):
        pytest.skip(versions.GATES[gate].line())
    with versions.fact(gate):
        theirs = oracles.xla_module(text)
        ours = parse_hlo(text)
        assert len(ours.computations) == len(theirs.computations)
        assert sorted(len(c.instructions) for c in ours.computations) == sorted(
            len(c.instructions) for c in theirs.computations
        ), f"{path}: instructions per computation differ from XLA's parser"
