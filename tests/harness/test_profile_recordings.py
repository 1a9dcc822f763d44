"""Every profile recorded from a phase's programs (``PROFILES`` in its programs.py, kept as
``recorded/<name>.json``) is there, reads back, and still matches a fresh capture on the JAX it
names: the same optimized module (normalized), the same instructions in every step, the same
steps compiling and the same source lines. Durations are never compared. With
``--snapshot-update`` (reference mode) a stale or missing recording is written again."""

from __future__ import annotations

from collections import Counter

import pytest

from kata_harness import curriculum, programs
from xla_inspect.normalize import normalize_hlo
from xla_inspect.profile import Profile
from xla_inspect.profile_query import instruction_info, op_runs, steps

COMMAND = (
    "uv run pytest tests/harness/test_profile_recordings.py --impl=reference --snapshot-update"
)


def _profiles() -> list[tuple[str, str, object]]:
    found = []
    for phase in curriculum.phases():
        module = programs.load(phase)
        for name in sorted(getattr(module, "PROFILES", {})):
            found.append((phase.name, name, module))
    return found


PROFILES = _profiles()
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

    path = curriculum.KATAS_DIR / phase / curriculum.RECORDED_DIR / f"{name}.json"
    updating = bool(getattr(request.config.option, "update_snapshots", False))
    if not path.is_file() and not updating:
        pytest.fail(f"{path} is missing: record it with {COMMAND}", pytrace=False)
    kept = module.recorded_profile(name) if path.is_file() else None
    if kept is not None and not updating and _jax_of(kept) != jax.__version__:
        pytest.skip(f"recorded with jax {_jax_of(kept)}, running {jax.__version__}")
    fresh = module.record_profile(name)
    if updating:
        if request.config.getoption("--impl") != "reference":
            pytest.fail("recordings are written in reference mode only", pytrace=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fresh.to_json(), encoding="utf-8")
        return
    assert kept is not None
    before, now = _shape(kept), _shape(fresh)
    for key in before:
        assert before[key] == now[key], f"{path} is stale: its {key} changed; {COMMAND}"


@pytest.mark.parametrize(("phase", "name", "module"), PROFILES, ids=IDS)
def test_profile_recording_reads_back(phase, name, module):
    path = curriculum.KATAS_DIR / phase / curriculum.RECORDED_DIR / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path} is not recorded yet (test_profile_recording_is_current says so)")
    profile = module.recorded_profile(name)
    found = steps(profile)
    assert found and all(s.runs for s in found), f"{path}: a step ran no instruction"
    info = instruction_info(profile.hlo_text)
    assert all(r.instruction in info for r in op_runs(profile)), f"{path}: an unknown instruction"
    assert "/" not in "".join(s for s in (i.source for i in info.values())), f"{path}: a path"
    assert len(path.read_bytes()) < 100_000, f"{path}: recordings are kept trimmed and small"
