"""Every module recorded from a TPU/GPU compile (``RECORDINGS`` in a phase's programs.py) is there,
is read by XLA's own parser and by ours alike, and still matches what the compiler makes when its
target's group is installed with the versions it names. With ``--snapshot-update`` (reference
mode) a stale or missing recording is written again."""

from __future__ import annotations

import pytest

from kata_harness import oracles, recordings, versions
from kata_harness.targets import RECORD_COMMAND, compile_recording, recorded_path
from xla_inspect import targets
from xla_inspect.parse import parse_hlo

RECORDINGS = [
    (phase, name, recording)
    for phase, module in recordings.programs_with("RECORDINGS")
    for name, recording in sorted(module.RECORDINGS.items())
]
IDS = [f"{phase}/{name}" for phase, name, _ in RECORDINGS]


@pytest.mark.parametrize(("phase", "name", "recording"), RECORDINGS, ids=IDS)
def test_recording_is_current(request, phase, name, recording):
    path = recorded_path(phase, name)
    target = targets.get(recording.target)
    missing = target.missing()

    def compare(kept: str, fresh: str) -> None:
        assert fresh == kept, (
            f"{path} is stale: the compiler now makes other text; {RECORD_COMMAND}"
        )

    recordings.check_current(
        request,
        path,
        command=RECORD_COMMAND,
        unavailable=None if missing is None else f"cannot check against the compiler: {missing}",
        running=target.versions,
        recorded_with=recordings.header_versions,
        make=lambda: compile_recording(recording),
        render=lambda text: text,
        compare=compare,
    )


@pytest.mark.parametrize(("phase", "name", "recording"), RECORDINGS, ids=IDS)
def test_recording_reads_like_xla(phase, name, recording):
    path = recorded_path(phase, name)
    text = recordings.recorded_or_skip(path, "test_recording_is_current")
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
