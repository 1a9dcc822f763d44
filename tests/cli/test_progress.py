"""Status, list and hints: cached per phase key, JSON for tools, hint levels persisted."""

from __future__ import annotations

import io
import json
import threading

from rich.console import Console

from kata_harness import curriculum
from katas_cli import state as state_module
from katas_cli import status
from katas_cli.hints import next_hint
from katas_cli.main import main
from katas_cli.report import render_phase, render_status
from katas_cli.state import PhaseOutcome, State, TaskOutcome, hint_key

from .conftest import console_text, outcomes_with


def test_status_shows_phases_and_current_task(fake_runner, capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for phase in curriculum.phases():
        assert phase.name in out
    assert "current: phase1.task2 total" in out
    assert "phase1.task2 fails: expected 2, got 3" in out
    assert "uv run katas hint phase1.2" in out
    assert "\x1b[" not in out, "no colour codes when stdout is not a terminal"


def test_status_json(fake_runner, capsys):
    assert main(["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["current"] == "phase1.task2"
    assert data["done"] == 1
    first = data["phases"][0]
    assert first["phase"] == "phase1" and first["done"] == 1
    assert first["tasks"][0]["outcome"] == "passed"
    assert first["tasks"][1]["message"] == "phase1.task2 fails: expected 2, got 3"


def test_unchanged_phases_are_not_rerun(fake_runner, monkeypatch, capsys):
    main(["status"])
    main(["status", "--json"])
    assert len(fake_runner.calls) == 1, "the second status must come from the state file"
    changed = {
        p.name: "new-key" if p.number == 2 else k
        for p, k in zip(
            curriculum.phases(), state_module.phase_keys(curriculum.phases()).values(), strict=True
        )
    }
    monkeypatch.setattr("katas_cli.status.phase_keys", lambda phases: changed)
    main(["status"])
    assert fake_runner.calls[-1] == ["phase2"]


def test_state_survives_reload(fake_runner, state_dir):
    main(["status", "--json"])
    assert (state_dir / "state.json").is_file()
    assert State.load().phases["phase1"].task(curriculum.phase(1).tasks[0]).done


def test_list_filter_and_json(fake_runner, capsys):
    assert main(["list", "--filter", "word"]) == 0
    out = capsys.readouterr().out
    assert "word_count" in out and "the first letter of every word" in out and "shout" not in out
    assert main(["list", "--json", "--filter", "sum"]) == 0
    data = json.loads(capsys.readouterr().out)
    tasks = [t["id"] for p in data["phases"] for t in p["tasks"]]
    assert tasks == ["phase1.task2"]


def test_hints_advance_and_run_out(fake_runner, capsys):
    task = curriculum.phase(1).tasks[1]
    for level in range(1, len(task.hints) + 1):
        assert main(["hint", "phase1.2"]) == 0
        out = capsys.readouterr().out
        assert f"hint {level}/{len(task.hints)}" in out
        assert f"hint {level + 1}/" not in out
    assert main(["hint", "phase1.2"]) == 0
    out = capsys.readouterr().out
    assert "no more hints" in out and "katas/phase1/README.md" in out
    assert State.load().hints["phase1.total"] == len(task.hints)


def test_hint_defaults_to_current_task(fake_runner, capsys):
    assert main(["hint"]) == 0
    assert capsys.readouterr().out.startswith("phase1.task2 total")


def test_a_phase_that_does_not_import_is_said_once():
    broken = "phase2: katas/phase2/kata.py does not import (SyntaxError at line 3: invalid syntax)"
    outcomes = outcomes_with(set())
    phase = curriculum.phase(2)
    outcomes["phase2"] = PhaseOutcome(
        "", {t.function: TaskOutcome("failed", broken) for t in phase.tasks}
    )
    console = Console(file=io.StringIO(), width=200)
    render_phase(console, phase, outcomes["phase2"])
    assert console_text(console).count(broken) == 1
    console = Console(file=io.StringIO(), width=200)
    render_status(console, outcomes, State.load())
    broken_rows = [r.split() for r in console_text(console).splitlines() if "broken" in r]
    assert len(broken_rows) == 1 and broken_rows[0][0] == "phase2"
    assert " ".join(broken_rows[0][-5:]) == "uv run katas run phase2"


def test_progress_draws_on_a_copy_of_the_descriptor_pytest_captures(tmp_path):
    from katas_cli.status import _uncaptured

    with (tmp_path / "terminal").open("w") as file:
        console = Console(file=file)
        with _uncaptured(console) as live:
            assert live.file.fileno() != file.fileno() and live.is_terminal
            live.print("drawn")
    assert (tmp_path / "terminal").read_text() == "drawn\n"
    buffered = Console(file=io.StringIO())
    with _uncaptured(buffered) as live:
        assert live is buffered


def test_hint_levels_taken_elsewhere_survive_a_stale_copy(state_dir):
    """watch holds the state it loaded at start; a hint taken in another terminal meanwhile
    must survive watch saving a phase's outcome."""
    watch_copy = State.load()  # what a long-running `katas watch` holds
    task = curriculum.phases()[1].tasks[0]
    assert next_hint(task, State.load()) == (0, 1)  # `katas hint` in a second terminal
    assert next_hint(task, State.load()) == (1, 2)
    watch_copy.update(lambda current: current.phases.update({"phase2": PhaseOutcome("k")}))
    on_disk = State.load()
    assert on_disk.hints == {hint_key(task): 2} and "phase2" in on_disk.phases
    assert watch_copy.hints == {hint_key(task): 2}, "the stale copy adopts what is on disk"


def test_concurrent_updates_lose_nothing(state_dir):
    tasks = [t for p in curriculum.phases() for t in p.tasks][:4]

    def take(task):
        for _ in range(len(task.hints)):
            next_hint(task, State.load())

    threads = [threading.Thread(target=take, args=(t,)) for t in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert State.load().hints == {hint_key(t): len(t.hints) for t in tasks}


def test_the_whole_traceback_is_one_flag_away():
    phase = curriculum.phases()[0]
    trace = 'Traceback (kata and test frames):\n  File "kata.py", line 3\nZeroDivisionError: x'
    first = phase.tasks[0].function
    outcome = PhaseOutcome("", {first: TaskOutcome("failed", "phase1.task1 raised ...", "", trace)})
    short, full = io.StringIO(), io.StringIO()
    render_phase(Console(file=short, width=200), phase, outcome)
    render_phase(Console(file=full, width=200), phase, outcome, full=True)
    assert "ZeroDivisionError: x" not in short.getvalue()
    assert f"uv run katas run {phase.name} --full" in short.getvalue()
    assert trace in full.getvalue()


def test_a_phase_whose_group_is_missing_says_what_to_install(course, monkeypatch):
    tasks = course / "katas" / "phase2" / "tasks.toml"
    tasks.write_text('needs = "tpu"\n' + tasks.read_text())
    curriculum.phases.cache_clear()
    phase = curriculum.phase(2)
    keys = {}
    for missing in ("tpu-v5e:2x2 needs libtpu: uv sync --group tpu", None):
        monkeypatch.setattr(status, "group_missing", lambda group, m=missing: m)
        monkeypatch.setattr(state_module, "group_missing", lambda group, m=missing: m)
        console = Console(file=io.StringIO(), width=200)
        render_status(console, outcomes_with(set()), State.load())
        rows = [r for r in console_text(console).splitlines() if r.split()[:1] == ["phase2"]]
        assert len(rows) == 1
        assert rows[0].endswith("needs: uv sync --group tpu") == (missing is not None)
        keys[missing] = state_module.phase_key(phase)
    assert len(set(keys.values())) == 2, "installing the group makes the phase run again"
