"""`katas dev new`: a new phase runs at once, honestly, and nothing existing is overwritten."""

from __future__ import annotations

import pytest

from kata_harness import curriculum, loading
from katas_cli.devcheck import census, run
from katas_cli.main import main
from katas_cli.runner import run_phases


@pytest.mark.battery  # three pytest runs of a new phase, in this process
def test_a_new_phase_passes_on_the_reference_and_its_stub_is_not_done(course, capsys):
    assert main(["dev", "new", "phase3"]) == 0
    out = capsys.readouterr().out
    assert "wrote katas/phase3/kata.py" in out and "wrote decoys/phase3.py" in out
    phase = curriculum.phase(3)
    assert [t.function for t in phase.tasks] == ["count_adds"]
    (task,) = phase.tasks
    reference = run_phases([phase], impl="reference")["phase3"].task(task)
    assert reference.outcome == "passed", reference.message
    learner = run_phases([phase])["phase3"].task(task)
    assert learner.outcome == "failed" and "is not done yet" in learner.message
    (row,) = census([phase], run([phase]))
    assert row.decoys == {"count_adds": True}, "the example decoy is caught"
    assert row.problems == ["1 decoy(s), at least 2 needed"], "what the contributor adds next"
    assert loading.phase_accepted(phase) == []


def test_an_existing_phase_is_left_alone(course, capsys):
    before = (course / "katas" / "phase1" / "kata.py").read_text()
    assert main(["dev", "new", "phase1"]) == 2
    assert "phase1 already has katas/phase1/kata.py" in capsys.readouterr().err
    assert (course / "katas" / "phase1" / "kata.py").read_text() == before
    assert not (course / "katas" / "phase1" / "programs.py").exists()


_SEEDED_TEST = """

@pytest.mark.task("total")
def test_total_on_fresh_lists(kata, fresh):
    xs = [fresh.randrange(10) for _ in range(3)]
    assert kata.total(xs) == sum(xs)
    assert fresh.seed_value != 7, f"seed 7 drew {xs}; {fresh.where()}"
"""


@pytest.mark.battery  # two census runs of the small course, in this process
def test_the_census_draws_fresh_cases_from_the_seed_it_is_given(course, capsys):
    with (course / "katas" / "phase1" / "test_phase1.py").open("a") as tests:
        tests.write(_SEEDED_TEST)
    main(["dev", "check", "phase1", "--kata-seed", "7"])
    out = capsys.readouterr().out
    assert "fresh cases: seed 7" in out
    assert "reference: test_total_on_fresh_lists" in out and "--kata-seed=7" in out
    main(["dev", "check", "phase1", "--kata-seed", "8"])
    assert "test_total_on_fresh_lists" not in capsys.readouterr().out
