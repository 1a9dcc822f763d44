"""Every red-team file is one the census reads: a wrong answer in a file or a probe in a folder
that no phase's census loads would be counted nowhere, and the census would call its phase
honest without having tried it."""

from __future__ import annotations

from kata_harness import curriculum


def test_every_red_team_file_is_read_by_its_phases_census() -> None:
    folder = curriculum.DECOYS_DIR / "redteam"
    read = set()
    for phase in curriculum.phases():
        read.update(phase.redteam_paths)
        if phase.probes_dir.is_dir():
            read.update(phase.probes_dir.glob("*.py"))
    found = {p for p in folder.rglob("*.py") if p.name != "__init__.py"}
    unread = sorted(str(p.relative_to(folder)) for p in found - read)
    assert not unread, (
        f"the census reads none of {unread}: wrong answers go in phaseN.py or phaseN_roundM.py, "
        "probes in phaseN_probes/"
    )
