"""The watch loop driven by queued events (no threads, no real pytest runs)."""

from __future__ import annotations

import _thread
import io
import signal
import time

import pytest
from rich.console import Console

from kata_harness import curriculum
from katas_cli.state import State
from katas_cli.watch import Event, Watcher

from .conftest import console_text


def _watcher(results):
    console = Console(file=io.StringIO(), width=120)
    watcher = Watcher(
        console,
        manual=True,
        keys=False,
        on_result=lambda phase, outcome: results.append(phase.name),
    )
    return watcher, console


def test_save_reruns_phase_and_keys_work(fake_runner):
    results: list[str] = []
    watcher, console = _watcher(results)
    for event in (
        Event("changed", "phase2"),
        Event("changed", "phase2"),
        Event("key", "h"),
        Event("key", "n"),
        Event("key", "r"),
        Event("key", "q"),
    ):
        watcher.events.put(event)
    watcher.loop()
    out = console_text(console)
    assert results[:2] == ["phase1", "phase2"], "initial screen, then one run for two saves"
    assert fake_runner.calls.count(["phase2"]) == 2, "the save and the r key"
    assert "hint 1/" in out
    assert State.load().hints["phase2.shout"] == 1
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
    for event in (
        Event("changed", "phase2"),
        Event("key", "h"),
        Event("key", "l"),
        Event("key", "q"),
    ):
        watcher.events.put(event)
    watcher.loop()
    out = console_text(console)
    assert "running the tests of phase2" in out, "a run shows it started (a loop takes 60 s)"
    after_hint = out.split("hint 1/")[1]
    last_task = curriculum.phases()[-1].tasks[-1].function
    assert "Enter reruns" in after_hint.split(last_task)[0], "the footer follows the hint"
    assert "Enter reruns" in after_hint.split(last_task)[1], "and the list"


@pytest.mark.parametrize(
    "sigint",
    [signal.default_int_handler, signal.SIG_IGN],
    ids=["sigint-handled", "sigint-ignored"],  # ignored: started with `&` by a script
)
@pytest.mark.parametrize("lost", [0, 1], ids=["delivered", "first-interrupt-lost"])
def test_a_save_during_a_run_interrupts_it_and_runs_again(fake_runner, monkeypatch, lost, sigint):
    before = signal.signal(signal.SIGINT, sigint)
    try:
        _save_during_a_run(fake_runner, monkeypatch, lost)
        assert signal.getsignal(signal.SIGINT) is sigint, "the loop gives the handler back"
    finally:
        signal.signal(signal.SIGINT, before)


def _save_during_a_run(fake_runner, monkeypatch, lost):
    sent: list[int] = []
    deliver = _thread.interrupt_main

    def interrupt_main() -> None:  # the first `lost` interrupts vanish, as in a finalizer
        sent.append(1)
        if len(sent) > lost:
            deliver()

    monkeypatch.setattr("katas_cli.watch._thread.interrupt_main", interrupt_main)
    results: list[str] = []
    watcher, console = _watcher(results)
    runs: list[str] = []

    def quit_once_phase2_is_shown(phase, outcome):
        results.append(phase.name)
        if phase.name == "phase2":
            watcher.events.put(Event("key", "q"))

    watcher.on_result = quit_once_phase2_is_shown

    def looping_then_fixed(phases, *, impl="katas", keys=None, on_progress=None, verbose=False):
        if [p.name for p in phases] != ["phase2"] or "started" in runs:  # all but the first
            runs.append("again")
            return fake_runner(phases, impl=impl, keys=keys)
        runs.append("started")
        assert on_progress is not None
        on_progress(0, 1)
        # the learner saves a fix while a test loops
        watcher.events.put(Event("changed", "phase2"))
        watcher._interrupt_run_of("phase2")
        deadline = time.monotonic() + 20  # bounds a failure only: the interrupt ends it
        while time.monotonic() < deadline:
            time.sleep(0.01)
        raise AssertionError("the save did not interrupt the run")

    monkeypatch.setattr("katas_cli.status.run_phases", looping_then_fixed)
    watcher.events.put(Event("changed", "phase2"))
    watcher.events.put(Event("key", "h"))  # drained with the save: must survive the interrupt
    watcher.loop()
    assert runs[:2] == ["again", "started"] and "again" in runs[2:]
    assert results == ["phase1", "phase2"]
    assert "running again" in console_text(console) and "hint 1/" in console_text(console)
    assert watcher.running is None and not watcher.restart.is_set()
    assert len(sent) == lost + 1, "sent again until one arrived, then no more"


def test_r_reruns_the_phase_on_screen_once_it_is_done(fake_runner):
    fake_runner.passed = {t.id for t in curriculum.phase(2).tasks}
    results: list[str] = []
    watcher, _ = _watcher(results)
    for event in (Event("changed", "phase2"), Event("key", "r"), Event("key", "q")):
        watcher.events.put(event)
    watcher.loop()
    assert watcher.focus is None, "phase2 is done: no task in focus"
    assert fake_runner.calls[-2:] == [["phase2"], ["phase2"]]


def test_the_working_phase_comes_first_and_the_other_stale_phases_after(
    course, fake_runner, monkeypatch
):
    kata = course / "katas" / "phase2" / "kata.py"
    kata.write_text(kata.read_text().replace('raise NotImplementedError("phase2 task 1', "#", 1))
    results: list[str] = []
    watcher, console = _watcher(results)

    def run_then_quit(phases, **options):
        if fake_runner.calls:  # the second run: the rest
            watcher.events.put(Event("key", "q"))
        return fake_runner(phases, **options)

    monkeypatch.setattr("katas_cli.status.run_phases", run_then_quit)
    watcher.loop()
    assert results == ["phase2"], "the phase being edited is the first screen"
    assert fake_runner.calls == [["phase2"], ["phase1"]], "then the rest, once"
    assert "every phase: 1/7 tasks done" in console_text(console)
