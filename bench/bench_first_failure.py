"""A learner's first answer: wall time of `uv run pytest katas/phaseN -x` to the first failure.

    uv run python bench/bench_first_failure.py [--repeat 3] [--phases 1 11 12]

Runs each phase's tests on the kata files as they are (the shipped stub: the first task stops
at its NotImplementedError), `--repeat` times, and prints per phase the median and best wall
time, the CPU seconds the run used (user + system with its children: the figure load changes
least), what pytest itself reports, and the start-up share (median wall minus pytest's figure:
uv, Python, imports, plugin set-up). Two floors for scale: `uv run python -c pass` and
`uv run python -c 'import jax'`. The issue's target is 3 s wall on 2 cores; the table marks
phases over it. Prints figures only; asserts nothing (timings depend on the machine and load).

`--watch N ...` times `katas watch` after `katas start phaseN` instead (with `--phases` too,
both), in a private state folder so nothing is cached: from the start of the process to phase
N's result on screen (wall and the process's CPU seconds), and to the end of the other phases'
run that follows it.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 3.0
_PYTEST_SECONDS = re.compile(r" in (\d+\.\d+)s")


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(command: list[str]) -> tuple[float, float, float | None]:
    """Wall and CPU seconds of one run, and the seconds pytest printed (None if none)."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy(), check=False
    )
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    found = _PYTEST_SECONDS.findall(done.stdout)
    return wall, cpu, float(found[-1]) if found else None


def _floor(command: list[str], repeat: int) -> float:
    return min(_timed(command)[0] for _ in range(repeat))


_WATCH = """
import io, sys, threading, time
from rich.console import Console
from katas_cli.state import State
from katas_cli.watch import Event, Watcher

State.load().update(lambda s: setattr(s, "started", ("phase{n}", time.time())))
watcher = Watcher(Console(file=io.StringIO()), manual=True, keys=False)
first = []
watcher.on_result = lambda phase, outcome: first.append(
    (phase.name, time.perf_counter(), time.process_time())
)
real = watcher._refresh_rest
def rest():
    real()
    name, wall, cpu = first[0]
    print(name, f"{{wall - START:.2f}}", f"{{cpu:.2f}}", f"{{time.perf_counter() - START:.2f}}")
    watcher.events.put(Event("quit"))
watcher._refresh_rest = rest
watcher.loop()
"""


def _watch(phase: int) -> None:
    with tempfile.TemporaryDirectory() as state:
        code = "import time; START = time.perf_counter()\n" + _WATCH.format(n=phase)
        done = subprocess.run(
            ["uv", "run", "python", "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "KATAS_STATE_DIR": state},
            check=False,
        )
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 4:
        print(f"watch phase{phase}: failed: {done.stderr.strip().splitlines()[-1:]}")
        return
    print(
        f"katas watch after katas start phase{phase}: {fields[0]} on screen {fields[1]} s after "
        f"Python started ({fields[2]} CPU s), the other phases done at {fields[3]} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase (median, best)")
    parser.add_argument("--phases", type=int, nargs="*", help="phase numbers (default: all)")
    parser.add_argument("--watch", type=int, nargs="*", default=[], help="time katas watch too")
    options = parser.parse_args()
    for phase in options.watch:
        _watch(phase)
    if options.watch and not options.phases:
        return
    folders = sorted((ROOT / "katas").glob("phase*"), key=lambda p: int(p.name[5:]))
    if options.phases:
        folders = [f for f in folders if int(f.name[5:]) in options.phases]

    bare = _floor(["uv", "run", "python", "-c", "pass"], options.repeat)
    jax = _floor(["uv", "run", "python", "-c", "import jax"], options.repeat)
    print(f"floors (best of {options.repeat}): uv run python {bare:.2f} s, import jax {jax:.2f} s")
    print(f"`uv run pytest katas/phaseN -x`, {options.repeat} runs, target {TARGET_S:.0f} s wall")
    print(f"{'phase':8s} {'median':>7s} {'best':>6s} {'cpu':>6s} {'pytest':>7s} {'start-up':>8s}")
    for folder in folders:
        runs = [
            _timed(["uv", "run", "pytest", f"katas/{folder.name}", "-x"])
            for _ in range(options.repeat)
        ]
        walls = [wall for wall, _, _ in runs]
        cpu = statistics.median(cpu for _, cpu, _ in runs)
        inner = [seconds for _, _, seconds in runs if seconds is not None]
        median = statistics.median(walls)
        pytest_s = statistics.median(inner) if inner else float("nan")
        mark = "" if median <= TARGET_S else "  over"
        print(
            f"{folder.name:8s} {median:6.2f}s {min(walls):5.2f}s {cpu:5.2f}s {pytest_s:6.2f}s "
            f"{median - pytest_s:7.2f}s{mark}"
        )


if __name__ == "__main__":
    main()
