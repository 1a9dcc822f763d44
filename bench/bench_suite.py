"""How long the suite takes, against its bar and against what it must take at least.

Figures (printed, never asserted; timings depend on the machine and its load):

- suite: the README command ``uv run pytest --impl=reference -q``, best of N, with the machine
  as it is and again with CPU hogs beside it (``--hogs``, default one busy process per core
  minus one): wall seconds, CPU seconds (user + system of pytest and every process it waited
  for, which load barely moves; on a shared machine compare these) and the ratio of the wall
  time to the 90 s bar;
- batteries: ``uv run pytest --impl=reference -m battery -q`` (the tests that start Python or
  pytest again, left out of the default run; CI runs them once);
- phases: ``uv run pytest katas/phaseN -x -q`` to the first failure (stub state), target 4 s;
- floors: ``import jax`` in a fresh ``uv run python``, and the compile seconds the suite needs,
  measured with ``compile_census.py`` in one process (every backend compile with its module
  fingerprint): the first compile of each fingerprint is needed, every later one is repeated;
- the ratio of each figure to its floor, the slowest tests (``--durations``) and where the
  repeated compiles come from (by program, by test file, by honest-kata variant).

Compiles in subprocesses that tests start (the batteries, phase 13's cache test) are not counted.

    uv run python bench/bench_suite.py [--repeat 2] [--hogs N] [--top 10] [--skip-phases]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ["uv", "run", "pytest", "--impl=reference", "-q"]
BATTERIES = [*SUITE, "-m", "battery"]
BAR_S = 90.0  # the README command's budget on 2 cores (issue 30)
HOG = [sys.executable, "-c", "while True: pass"]
IMPORT_JAX = ["uv", "run", "python", "-c", "import jax"]
PHASE_TARGET_S = 4.0
_DURATION = re.compile(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+)", re.MULTILINE)
_VARIANT = re.compile(r"\[(reference|stub|decoy-[^\]]+)\]$")


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str, int]:
    """Wall seconds, CPU seconds (this command and every process it waited for), output, exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout + done.stderr, done.returncode


def _best(command: list[str], repeat: int) -> tuple[float, float, str, int]:
    runs = [_run(command) for _ in range(repeat)]
    return min(runs, key=lambda run: run[0])


def _with_hogs(count: int, command: list[str], repeat: int) -> tuple[float, float, str, int]:
    """``command`` (best of ``repeat``) while ``count`` busy processes compete for the cores."""
    hogs = [subprocess.Popen(HOG) for _ in range(count)]
    try:
        return _best(command, repeat)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _suite_line(label: str, run: tuple[float, float, str, int]) -> str:
    wall, cpu, output, code = run
    lines = output.strip().splitlines()
    summary = lines[-1] if lines else ""
    return (
        f"{label}: {wall:6.1f} s wall ({wall / BAR_S:.2f} of the {BAR_S:.0f} s bar), "
        f"{cpu:6.1f} s CPU; exit {code}: {summary}"
    )


def _census() -> dict:
    """Every backend compile of one reference run of the suite (see compile_census.py)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "census.json"
        path = os.pathsep.join(p for p in (str(ROOT / "bench"), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "COMPILE_CENSUS_OUT": str(out)}
        # one process: every xdist worker would write the same file and the last one would win
        _, _, output, code = _run([*SUITE, "-p", "compile_census", "-p", "no:xdist"], env=env)
        if not out.is_file():
            sys.exit(f"the census run wrote nothing (exit {code}):\n{output[-2000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def _variant(test: str) -> str:
    match = _VARIANT.search(test)
    if not match:
        return "other"
    return "decoy" if match.group(1).startswith("decoy-") else match.group(1)


def _waste(census: dict) -> dict:
    """Split compile seconds into needed (first of each fingerprint) and repeated."""
    records = census["compiles"]
    seen: set[str] = set()
    needed = repeated = 0.0
    by_program: dict[str, dict] = {}
    by_file: dict[str, float] = defaultdict(float)
    by_function: dict[str, float] = defaultdict(float)
    by_variant: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for record in records:
        fingerprint, seconds, test = record["fingerprint"], record["seconds"], record["test"]
        kind = by_variant[_variant(test)]
        kind[0] += seconds
        kind[2] += 1
        if fingerprint not in seen:
            seen.add(fingerprint)
            needed += seconds
            continue
        repeated += seconds
        kind[1] += seconds
        by_file[test.split("::")[0]] += seconds
        by_function[record["function"]] += seconds
        entry = by_program.setdefault(
            fingerprint,
            {"function": record["function"], "again": 0, "seconds": 0.0, "tests": set()},
        )
        entry["again"] += 1
        entry["seconds"] += seconds
        entry["tests"].add(test.split("[")[0])
    return {
        "count": len(records),
        "distinct": len(seen),
        "needed": needed,
        "repeated": repeated,
        "by_program": by_program,
        "by_file": by_file,
        "by_function": by_function,
        "by_variant": by_variant,
        "stages": census["stages"],
    }


def _ratio(value: float, floor: float) -> str:
    return f"{value / floor:5.1f}x" if floor > 0 else "  n/a"


def _print_durations(output: str, top: int) -> None:
    rows = sorted(
        ((float(s), when, node) for s, when, node in _DURATION.findall(output)), reverse=True
    )
    print(f"\nslowest {min(top, len(rows))} test phases (--durations of the best run):")
    for seconds, when, node in rows[:top]:
        print(f"  {seconds:6.2f} s  {when:8s} {node}")


def _print_waste(waste: dict, top: int) -> None:
    print(
        f"\ncompiles in-process: {waste['count']} backend compiles, {waste['distinct']} "
        f"distinct modules; {waste['needed'] + waste['repeated']:.2f} s in all, "
        f"{waste['needed']:.2f} s needed, {waste['repeated']:.2f} s repeated "
        f"({waste['count'] - waste['distinct']} compiles of a module compiled before)"
    )
    stages = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in waste["stages"].items())
    print(f"jax staging seconds in-process: {stages}")
    print("\nby honest-kata variant: compiles, compile s, of which repeated s")
    for kind, (seconds, repeated, count) in sorted(waste["by_variant"].items()):
        print(f"  {kind:10s} {count:5d} {seconds:8.2f} {repeated:8.2f}")
    print(f"\ntop {top} test files by repeated compile seconds:")
    for name, seconds in sorted(waste["by_file"].items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {seconds:6.2f} s  {name}")
    print(f"\ntop {top} function names by repeated compile seconds (eager ops show as jit(<op>)):")
    for name, seconds in sorted(waste["by_function"].items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {seconds:6.2f} s  {name}")
    print(f"\ntop {top} programs compiled again (function, extra compiles, seconds, tests):")
    programs = sorted(waste["by_program"].values(), key=lambda entry: -entry["seconds"])
    for entry in programs[:top]:
        tests = sorted(entry["tests"])
        shown = ", ".join(t.rsplit("::", 1)[-1] for t in tests[:3])
        more = f" +{len(tests) - 3} more" if len(tests) > 3 else ""
        print(
            f"  {entry['function'][:40]:40s} {entry['again']:4d} {entry['seconds']:6.2f} s  "
            f"in {len(tests)} tests: {shown}{more}"
        )


def _phases(repeat: int, floor: float) -> None:
    folders = sorted((ROOT / "katas").glob("phase*"), key=lambda p: int(p.name[5:]))
    print(
        f"\nper phase, `uv run pytest katas/phaseN -x -q` (best of {repeat}), "
        f"target {PHASE_TARGET_S:.0f} s, floor = import jax {floor:.2f} s:"
    )
    for folder in folders:
        seconds, _, output, _ = _best(
            ["uv", "run", "pytest", f"katas/{folder.name}", "-x", "-q"], repeat
        )
        lines = output.strip().splitlines()
        verdict = "ok" if seconds <= PHASE_TARGET_S else "OVER"
        print(
            f"  {folder.name:8s} {seconds:6.2f} s  {_ratio(seconds, floor)}  {verdict:4s}  "
            f"{lines[-1][:70] if lines else ''}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per timed figure (best)")
    parser.add_argument(
        "--hogs",
        type=int,
        default=max(1, (os.cpu_count() or 2) - 1),
        help="busy processes beside the second suite run (0: skip that run)",
    )
    parser.add_argument("--top", type=int, default=10, help="rows per ranking")
    parser.add_argument("--skip-phases", action="store_true", help="skip the per-phase runs")
    parser.add_argument("--skip-census", action="store_true", help="skip the compile census")
    options = parser.parse_args()

    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} at the start")
    import_jax = _best(IMPORT_JAX, max(options.repeat, 3))[0]
    bare = _best(["uv", "run", "python", "-c", "pass"], max(options.repeat, 3))[0]
    print(
        f"floor: `uv run python -c 'import jax'` {import_jax:.2f} s "
        f"(of which uv and Python start-up {bare:.2f} s)"
    )

    suite = _best([*SUITE, "--durations=30"], options.repeat)
    print(f"`{' '.join(SUITE)}`, best of {options.repeat}:")
    print(_suite_line("  as the machine is", suite))
    if options.hogs:
        hogged = _with_hogs(options.hogs, SUITE, options.repeat)
        print(_suite_line(f"  beside {options.hogs} CPU hog(s)", hogged))
    print(_suite_line(f"`{' '.join(BATTERIES)}` (CI runs it once)", _run(BATTERIES)))
    _print_durations(suite[2], options.top)
    if not options.skip_census:
        waste = _waste(_census())
        floor = import_jax + waste["needed"]
        print(
            f"\nsuite floor: import jax + needed compiles = {import_jax:.2f} + "
            f"{waste['needed']:.2f} = {floor:.2f} s; suite / floor = "
            f"{_ratio(suite[0], floor).strip()}"
        )
        _print_waste(waste, options.top)
    if not options.skip_phases:
        _phases(options.repeat, import_jax)


if __name__ == "__main__":
    main()
