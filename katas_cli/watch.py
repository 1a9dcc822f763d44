"""`katas watch`: rerun a phase's tests each time its kata file is saved, in one warm process.

JAX and pytest are imported once; every run is an in-process `pytest.main` (the harness reloads
the kata module whose file changed and clears JAX's caches per test), so a phase with small
compiles is back on screen well within a second or two of the save. File events come from
watchfiles (a thread that watches `katas/` for `kata.py` saves, atomic renames included; use
`--poll` where native events do not arrive). On a terminal, single keys steer it like rustlings:
n next task, h hint, t the whole traceback of the task on screen, l list, r rerun, c check all
phases, q quit. `--manual` turns file watching
off: press Enter to rerun (or type a key letter and Enter). A save of the phase that is running
cuts the run short (`_thread.interrupt_main`) and starts it again, so a loop that never ends
costs one save, not the harness's timeout per test.

On start, the phase of the current task (`status.current_task`: the phase the learner works on)
is shown first, run only if its cached outcome is stale; the other stale phases run after it,
as a queued event that a save cuts short like any run.
"""

from __future__ import annotations

import _thread
import os
import queue
import select
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from kata_harness import curriculum
from kata_harness.curriculum import Phase, Task

from .hints import show_next_hint
from .report import render_list, render_phase, render_status
from .state import PhaseOutcome, State, phase_keys
from .status import (
    current_task,
    first_unfinished,
    phase_summary,
    refresh,
    run_with_progress,
    working_phase,
)
from .targets import all_phases

ANY = "*"  # `running` while the other phases run: a save of any phase interrupts them
KEYS = "n next · h hint · t traceback · l list · r run · c check all · q quit"


@dataclass(frozen=True, slots=True)
class Event:
    kind: str  # "changed" (value: phase name), "key" (the key), "rest" (stale phases) or "quit"
    value: str = ""


ResultFn = Callable[[Phase, PhaseOutcome], None]


class Watcher:
    def __init__(
        self,
        console: Console,
        *,
        manual: bool = False,
        poll: bool = False,
        keys: bool = True,
        on_result: ResultFn | None = None,
    ) -> None:
        self.console = console
        self.manual = manual
        self.poll = poll
        self.keys = keys and (manual or sys.stdin.isatty())
        self.on_result = on_result
        self.events: queue.Queue[Event] = queue.Queue()
        self.stop = threading.Event()
        self.state = State.load()
        self.focus: Task | None = None
        self.running: str | None = None  # the phase whose tests are running now
        self.restart = threading.Event()  # set when a save interrupted that run
        self.lock = threading.Lock()
        self.pending: list[Event] = []
        self.shown: Phase = all_phases()[0]  # the phase on screen: r reruns it

    # --- inputs -----------------------------------------------------------------------------
    def _watch_files(self) -> None:
        import watchfiles

        def is_kata(_change: object, path: str) -> bool:
            return Path(path).name == curriculum.KATA_FILE

        for changes in watchfiles.watch(
            curriculum.KATAS_DIR,
            watch_filter=is_kata,
            stop_event=self.stop,
            force_polling=self.poll or None,
            debounce=400,
            step=30,
        ):
            for _, path in changes:
                phase = curriculum.phase_of_path(Path(path))
                if phase is not None:
                    self.events.put(Event("changed", phase.name))
                    self._interrupt_run_of(phase.name)

    def _progress_of(self, name: str) -> Callable[[int, int], None]:
        """Keeps the run interruptible until its last test is done (pytest handles an
        interrupt in collection or in its test loop like Ctrl-C: no half-finished teardown);
        after that a save is queued and runs next."""

        def progress(done: int, total: int) -> None:
            with self.lock:
                self.running = name if done < total else None

        return progress

    def _interrupt_run_of(self, name: str) -> None:
        with self.lock:
            if self.running not in (name, ANY) or self.restart.is_set():
                return
            self.restart.set()
        threading.Thread(
            target=self._interrupt_until_ended, name="katas-interrupt", daemon=True
        ).start()

    def _interrupt_until_ended(self) -> None:
        """Interrupt the main thread, again every half second until the run has ended: one
        interrupt can be lost (Python drops an exception raised inside a finalizer that runs at
        that moment), and then the run would go on to its end or its timeout."""
        while True:
            with self.lock:
                if self.running is None or not self.restart.is_set():
                    return
                _thread.interrupt_main()
            if self.stop.wait(0.5):
                return

    def _read_lines(self) -> None:
        for line in sys.stdin:
            self.events.put(Event("key", line.strip()[:1].lower() or "r"))
        self.events.put(Event("quit"))

    def _read_keys(self) -> None:
        fd = sys.stdin.fileno()
        while not self.stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                key = os.read(fd, 1).decode(errors="ignore").lower()
                if key:
                    self.events.put(Event("key", key))

    def start_inputs(self) -> None:
        if not self.manual:
            threading.Thread(target=self._watch_files, name="katas-files", daemon=True).start()
        if self.keys:
            reader = self._read_lines if self.manual else self._read_keys
            threading.Thread(target=reader, name="katas-keys", daemon=True).start()

    # --- actions ----------------------------------------------------------------------------
    def _footer(self) -> None:
        if self.manual:
            self.console.print("[dim]manual mode: Enter reruns; n, h, t, l, c, q + Enter[/]")
        elif self.keys:
            self.console.print(f"[dim]watching katas/*/kata.py · {KEYS}[/]")
        else:
            self.console.print("[dim]watching katas/*/kata.py · Ctrl-C quits[/]")

    def _show(self, phase: Phase, outcome: PhaseOutcome) -> None:
        self.shown = phase
        if self.console.is_terminal:
            self.console.clear()
        render_phase(self.console, phase, outcome, self.focus)
        self._footer()
        if self.on_result:
            self.on_result(phase, outcome)

    def run(self, phase: Phase) -> None:
        keys = phase_keys([phase])
        with self.lock:  # a save while pytest starts and collects interrupts it too
            self.running = phase.name
        try:
            outcome = run_with_progress(
                [phase], keys, console=self.console, on_progress=self._progress_of(phase.name)
            )[phase.name]
        finally:
            with self.lock:
                self.running = None
        self._ended_before_the_interrupt()
        self.state.update(lambda current: current.phases.update({phase.name: outcome}))
        if self.focus is None or self.focus.phase != phase.number or outcome.task(self.focus).done:
            self.focus = first_unfinished(phase, outcome)
        self._show(phase, outcome)

    def _ended_before_the_interrupt(self) -> None:
        """A run that a save asked to stop but that finished first: the save is queued and runs
        next; forget the request, so that the next save can interrupt again."""
        self.restart.clear()

    def _first_screen(self) -> None:
        """The current task's phase, from the cache when it is fresh, else run now."""
        self.focus = current_task(self.state.phases, working_phase(self.state))
        phase = curriculum.phase(self.focus.phase) if self.focus else all_phases()[-1]
        cached = self.state.fresh(phase.name, phase_keys([phase])[phase.name])
        if cached is None:
            self.run(phase)
        else:
            self._show(phase, cached)

    def _refresh_rest(self) -> None:
        """Run the stale phases not on screen, then say in one line where the course stands."""
        phases = all_phases()
        keys = phase_keys(phases)
        stale = [p for p in phases if self.state.fresh(p.name, keys[p.name]) is None]
        if stale:
            with self.lock:
                self.running = ANY
            try:
                outcomes = run_with_progress(
                    stale, keys, console=self.console, on_progress=self._progress_of(ANY)
                )
            finally:
                with self.lock:
                    self.running = None
            self._ended_before_the_interrupt()
            self.state.update(lambda current: current.phases.update(outcomes))
        totals = [
            phase_summary(p, self.state.phases[p.name])
            for p in phases
            if p.name in self.state.phases
        ]
        done, total = sum(d for d, _ in totals), sum(t for _, t in totals)
        self.console.print(f"[dim]every phase: {done}/{total} tasks done (l lists them)[/]")
        self._footer()

    def _next(self) -> None:
        order = [t for p in all_phases() for t in p.tasks]
        start = order.index(self.focus) + 1 if self.focus in order else 0
        for task in order[start:] + order[:start]:
            outcome = self.state.phases.get(f"phase{task.phase}")
            if outcome is None or not outcome.task(task).done:
                self.focus = task
                phase = curriculum.phase(task.phase)
                self._show(phase, refresh([phase], state=self.state)[phase.name])
                return
        self.console.print("every task is done")

    def handle(self, event: Event) -> bool:
        """Act on one event; False means quit."""
        if event.kind == "quit" or (event.kind == "key" and event.value == "q"):
            return False
        focus_phase = curriculum.phase(self.focus.phase) if self.focus else self.shown
        if event.kind == "rest":
            self._refresh_rest()
        elif event.kind == "changed":
            changed = curriculum.phase(int(event.value.removeprefix("phase")))
            if self.focus is not None and self.focus.phase != changed.number:
                self.focus = None
            self.run(changed)
        elif event.value == "r":
            self.run(focus_phase)
        elif event.value == "n":
            self._next()
        elif event.value == "h":
            task = self.focus or current_task(self.state.phases, working_phase(self.state))
            show_next_hint(self.console, task, self.state)
            self._footer()
        elif event.value == "t":
            outcome = self.state.phases.get(self.shown.name)
            if outcome is not None:
                render_phase(self.console, self.shown, outcome, self.focus, full=True)
            self._footer()
        elif event.value == "l":
            render_list(self.console, refresh(state=self.state), self.state, None)
            self._footer()
        elif event.value == "c":
            outcomes = refresh(force=True, state=self.state)
            render_status(self.console, outcomes, self.state)
            self.focus = current_task(outcomes, working_phase(self.state))
            self._footer()
        return True

    def _drain(self, first: Event) -> list[Event]:
        """The event plus everything queued behind it, with repeated saves merged."""
        events = [first]
        while True:
            try:
                events.append(self.events.get_nowait())
            except queue.Empty:
                break
        merged: list[Event] = []
        for event in events:
            if event not in merged or event.kind != "changed":
                merged.append(event)
        return merged

    def _step(self) -> bool:
        """Handle the next events (if any within 0.2 s); False means quit. Events not handled
        yet stay in `pending` when a save interrupts the run of one of them."""
        if not self.pending:
            try:
                self.pending = self._drain(self.events.get(timeout=0.2))
            except queue.Empty:
                return True
        while self.pending:
            if not self.handle(self.pending.pop(0)):
                return False
        return True

    def loop(self, start: Phase | None = None) -> None:
        """Show `start` (run now) or the current task's phase, then the other stale phases run;
        then react until quit."""
        self.start_inputs()
        previous = _interruptible()
        try:
            if start is not None:
                self.events.put(Event("changed", start.name))
            else:
                self._first_screen()
            self.events.put(Event("rest"))
            while True:
                try:
                    if not self._step():
                        return
                except KeyboardInterrupt:
                    if not self.restart.is_set():
                        raise  # Ctrl-C
                    self.restart.clear()  # the save that interrupted the run is queued
                    self.console.print("[dim]saved during the run: running again[/]")
        finally:
            self.stop.set()
            if previous is not None:
                signal.signal(signal.SIGINT, previous)


def _interruptible() -> signal.Handlers | None:
    """Make SIGINT raise KeyboardInterrupt in the main thread while the loop runs, and return the
    handler it replaced (None when nothing changed). A process started in the background of a
    script inherits SIGINT ignored, and with SIGINT ignored or left to the system's default
    `_thread.interrupt_main` does nothing: a save could never cut a run short."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGINT)
    if not isinstance(previous, signal.Handlers):  # a Python handler (Ctrl-C's by default)
        return None
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return previous


def watch(console: Console, *, manual: bool, poll: bool, start: Phase | None = None) -> int:
    watcher = Watcher(console, manual=manual, poll=poll)
    if watcher.keys and not manual:
        import termios
        import tty

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
        try:
            watcher.loop(start)
        except KeyboardInterrupt:
            pass
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        return 0
    try:
        watcher.loop(start)
    except KeyboardInterrupt:
        pass
    return 0
