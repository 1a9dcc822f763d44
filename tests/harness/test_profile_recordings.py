"""Every profile recorded from a phase's programs (``PROFILES`` in its programs.py, kept as
``recorded/<name>.json``) is there, reads back, and still matches a fresh capture on the JAX it
names: the same optimized module (normalized), the same instructions in every step, the same
steps compiling and the same source lines. Durations are never compared. With
``--snapshot-update`` (reference mode) a stale or missing recording is written again."""

from __future__ import annotations

from collections import Counter

import pytest

from kata_harness import recordings
from xla_inspect.normalize import normalize_hlo
from xla_inspect.profile import Profile, load_profile
from xla_inspect.profile_query import instruction_info, op_runs, steps

COMMAND = (
    "uv run pytest tests/harness/test_profile_recordings.py --impl=reference --snapshot-update"
)

PROFILES = [
    (phase, name, module)
    for phase, module in recordings.programs_with("PROFILES")
    for name in sorted(module.PROFILES)
]
IDS = [f"{phase}/{name}" for phase, name, _ in PROFILES]


def _shape(profile: Profile) -> dict[str, object]:
    """What a recording must keep: everything but durations and run-dependent names."""
    info = instruction_info(profile.hlo_text)
    ran = op_runs(profile)
    return {
        "module": normalize_hlo(profile.hlo_text),
        "steps": {
            s.number: (
                Counter((r.instruction, r.depth, r.parent) for r in s.runs),
                bool([c for c in s.compiles if c.name == "backend_compile_and_load"]),
            )
            for s in steps(profile)
        },
        "sources": sorted({info[r.instruction].source for r in ran if r.instruction in info}),
    }


def _jax_of(profile: Profile) -> str:
    return profile.about.rsplit("jax ", 1)[-1] if "jax " in profile.about else "?"


@pytest.mark.parametrize(("phase", "name", "module"), PROFILES, ids=IDS)
def test_profile_recording_is_current(request, phase, name, module):
    import jax

    path = recordings.recorded_path(phase, name, ".json")

    def compare(kept: str, fresh: Profile) -> None:
        before, now = _shape(load_profile(kept)), _shape(fresh)
        for key in before:
            assert before[key] == now[key], f"{path} is stale: its {key} changed; {COMMAND}"

    recordings.check_current(
        request,
        path,
        command=COMMAND,
        unavailable=None,
        running=lambda: f"jax {jax.__version__}",
        recorded_with=lambda text: f"jax {_jax_of(load_profile(text))}",
        make=lambda: module.record_profile(name),
        render=Profile.to_json,
        compare=compare,
    )


@pytest.mark.parametrize(("phase", "name", "module"), PROFILES, ids=IDS)
def test_profile_recording_reads_back(phase, name, module):
    path = recordings.recorded_path(phase, name, ".json")
    recordings.recorded_or_skip(path, "test_profile_recording_is_current")
    profile = module.recorded_profile(name)
    found = steps(profile)
    assert found and all(s.runs for s in found), f"{path}: a step ran no instruction"
    info = instruction_info(profile.hlo_text)
    assert all(r.instruction in info for r in op_runs(profile)), f"{path}: an unknown instruction"
    assert "/" not in "".join(s for s in (i.source for i in info.values())), f"{path}: a path"
    assert len(path.read_bytes()) < 100_000, f"{path}: recordings are kept trimmed and small"
