"""The README's test command runs each kata test on the reference and the shipped stub; the
accepted spellings (correct answers written differently) run with ``--spellings``, with
``--decoys`` and in the census, never with ``--impl=katas`` or ``--no-honesty``."""

from __future__ import annotations

import pytest

from kata_harness import curriculum, loading, variants


class _Config:
    def __init__(self, **options: object) -> None:
        self.options = {"--impl": "reference", "--no-honesty": False, "--decoys": False}
        self.options |= {"--spellings": False, **options}

    def getoption(self, name: str) -> object:
        return self.options[name]


PHASE = curriculum.phase(1)
TASK = PHASE.task("abs_cond")
SPELLINGS = ["accepted"] * sum(a.replaces == "abs_cond" for a in loading.phase_accepted(PHASE))


def _kinds(**options: object) -> list[str]:
    config = _Config(**options)
    return [v.kind for v in variants._variants(config, PHASE, TASK, "test_abs_cond")]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "kinds"),
    [
        ({}, ["reference", "stub"]),
        ({"--spellings": True}, ["reference", "stub", *SPELLINGS]),
        ({"--no-honesty": True, "--spellings": True}, ["reference"]),
        ({"--impl": "katas", "--spellings": True}, ["katas"]),
    ],
)
def test_which_runs_each_test_gets(options, kinds) -> None:
    assert _kinds(**options) == kinds


def test_phase_1_keeps_spellings_of_abs_cond() -> None:
    assert SPELLINGS, "the test above needs a task with accepted spellings"


def test_the_decoy_sweep_runs_the_spellings_too() -> None:
    kinds = _kinds(**{"--decoys": True})
    assert kinds[:2] == ["reference", "stub"] and kinds.count("accepted") == len(SPELLINGS)
