"""The watch loop driven by queued events (no threads, no real pytest runs)."""

from __future__ import annotations

import io

from rich.console import Console

from kata_harness import curriculum
from katas_cli.state import State
from katas_cli.watch import Event, Watcher


def _watcher(results):
    console = Console(file=io.StringIO(), width=120)
    watcher = Watcher(console, manual=True, keys=False,
                      on_result=lambda phase, outcome: results.append(phase.name))
    return watcher, console


def test_save_reruns_phase_and_keys_work(fake_runner):
    results: list[str] = []
    watcher, console = _watcher(results)
    for event in (Event("changed", "phase2"), Event("changed", "phase2"), Event("key", "h"),
                  Event("key", "n"), Event("key", "r"), Event("key", "q")):
        watcher.events.put(event)
    watcher.loop()
    out = console.file.getvalue()
    assert results[:2] == ["phase1", "phase2"], "initial screen, then one run for two saves"
    assert fake_runner.calls.count(["phase2"]) == 2, "the save and the r key"
    assert "hint 1/" in out
    assert State.load().hints["phase2.task1"] == 1
    assert watcher.focus is not None and watcher.focus.id == "phase2.task2"


def test_quit_event_stops(fake_runner):
    results: list[str] = []
    watcher, _ = _watcher(results)
    watcher.events.put(Event("quit"))
    watcher.loop()
    assert results == ["phase1"] and watcher.stop.is_set()


def test_runs_say_so_and_keys_end_with_the_footer(fake_runner):
    results: list[str] = []
    watcher, console = _watcher(results)
    for event in (Event("changed", "phase2"), Event("key", "h"), Event("key", "l"),
                  Event("key", "q")):
        watcher.events.put(event)
    watcher.loop()
    out = console.file.getvalue()
    assert "running the tests of phase2" in out, "a run shows it started (a loop takes 60 s)"
    after_hint = out.split("hint 1/")[1]
    last_task = curriculum.phases()[-1].tasks[-1].function
    assert "Enter reruns" in after_hint.split(last_task)[0], "the footer follows the hint"
    assert "Enter reruns" in after_hint.split(last_task)[1], "and the list"
