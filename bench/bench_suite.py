"""How long the suite takes, against what it must take at least.

Figures (printed, never asserted; timings depend on the machine and its load):

- suite: wall time of the README command ``uv run pytest --impl=reference -q``, best of N;
- phases: ``uv run pytest katas/phaseN -x -q`` to the first failure (stub state), target 4 s;
- floors: ``import jax`` in a fresh ``uv run python``, and the compile seconds the suite needs,
  measured with ``compile_census.py`` (every backend compile with its module fingerprint): the
  first compile of each fingerprint is needed, every later one is waste;
- the ratio of each figure to its floor, the slowest tests (``--durations``) and where the
  repeated compiles come from (by program, by test file, by honest-kata variant).

Compiles in subprocesses that tests start (the hostile-code and CLI tests) are not counted.

    uv run python bench/bench_suite.py [--repeat 2] [--top 10] [--skip-phases]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ["uv", "run", "pytest", "--impl=reference", "-q"]
IMPORT_JAX = ["uv", "run", "python", "-c", "import jax"]
PHASE_TARGET_S = 4.0
_DURATION = re.compile(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+)", re.MULTILINE)
_VARIANT = re.compile(r"\[(reference|stub|decoy-[^\]]+)\]$")


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str, int]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout + done.stderr, done.returncode


def _best(command: list[str], repeat: int) -> tuple[float, str, int]:
    runs = [_run(command) for _ in range(repeat)]
    return min(runs, key=lambda run: run[0])


def _census() -> dict:
    """Every backend compile of one reference run of the suite (see compile_census.py)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "census.json"
        path = os.pathsep.join(p for p in (str(ROOT / "bench"), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "COMPILE_CENSUS_OUT": str(out)}
        _, output, code = _run([*SUITE, "-p", "compile_census"], env=env)
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
        seconds, output, _ = _best(
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
    parser.add_argument("--top", type=int, default=10, help="rows per ranking")
    parser.add_argument("--skip-phases", action="store_true", help="skip the per-phase runs")
    options = parser.parse_args()

    import_jax, _, _ = _best(IMPORT_JAX, max(options.repeat, 3))
    bare, _, _ = _best(["uv", "run", "python", "-c", "pass"], max(options.repeat, 3))
    print(
        f"floor: `uv run python -c 'import jax'` {import_jax:.2f} s "
        f"(of which uv and Python start-up {bare:.2f} s)"
    )

    suite, output, code = _best([*SUITE, "--durations=30"], options.repeat)
    waste = _waste(_census())
    floor = import_jax + waste["needed"]
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    print(
        f"suite: `{' '.join(SUITE)}` best of {options.repeat}: {suite:.2f} s (exit {code}; "
        f"{summary})"
    )
    print(
        f"suite floor: import jax + needed compiles = {import_jax:.2f} + {waste['needed']:.2f}"
        f" = {floor:.2f} s; suite / floor = {_ratio(suite, floor).strip()}"
    )
    print(f"suite without its repeated compiles would take about {suite - waste['repeated']:.2f} s")
    _print_durations(output, options.top)
    _print_waste(waste, options.top)
    if not options.skip_phases:
        _phases(options.repeat, import_jax)


if __name__ == "__main__":
    main()
