"""Watch latency: from saving a kata file to the run's result rendered, over several saves.

    uv run python bench/bench_watch.py [--phase 1] [--saves 10]

Copies the code the tests need (harness, one phase, its reference and decoys, xla_inspect,
katas_cli, conftest, pyproject, snapshots) into a temporary folder and imports from there, so
the learner's files are never touched. Drives the real `katas watch` loop (watchfiles thread,
in-process pytest, rendering to a buffer) in this process. Two cases: the phase solved (the
reference copied over the kata file: every test runs and compiles) and the shipped stub (every
task stops at its NotImplementedError). Prints median, p90 and max; asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ("kata_harness", "xla-inspect", "katas_cli", "snapshots", "conftest.py", "pyproject.toml")


def copy_tree(phase: int, target: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__")
    for name in SHARED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, target / name)
    for parent in ("katas", "reference"):
        shutil.copytree(
            ROOT / parent / f"phase{phase}", target / parent / f"phase{phase}", ignore=ignore
        )
    decoys = ROOT / "decoys" / f"phase{phase}.py"
    if decoys.is_file():
        (target / "decoys").mkdir()
        shutil.copy2(decoys, target / "decoys" / decoys.name)
    return target / "katas" / f"phase{phase}" / "kata.py"


def measure(kata_file: Path, text: str, saves: int) -> list[float]:
    """Run the watch loop here; a thread saves `saves` times and times each result."""
    from rich.console import Console

    from kata_harness import curriculum
    from katas_cli.watch import Event, Watcher

    kata_file.write_text(text)
    shown = threading.Event()
    latencies: list[float] = []
    console = Console(file=io.StringIO(), width=120)
    watcher = Watcher(console, keys=False, on_result=lambda phase, outcome: shown.set())

    def save_repeatedly() -> None:
        shown.wait(120)  # the first run (warm-up: imports, first compiles) is not measured
        for index in range(saves):
            time.sleep(0.6)
            shown.clear()
            started = time.perf_counter()
            kata_file.write_text(f"{text}\n# save {index}\n")
            if not shown.wait(60):
                print(f"  save {index}: no result within 60 s", file=sys.stderr)
                break
            latencies.append(time.perf_counter() - started)
        watcher.events.put(Event("quit"))

    driver = threading.Thread(target=save_repeatedly, daemon=True)
    driver.start()
    watcher.loop(curriculum.phase_of_path(kata_file))
    driver.join()
    return latencies


def report(label: str, latencies: list[float]) -> None:
    if not latencies:
        print(f"{label}: no measurements")
        return
    ordered = sorted(latencies)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    print(
        f"{label}: n={len(ordered)} median {statistics.median(ordered) * 1000:.0f} ms, "
        f"p90 {p90 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument("--phase", type=int, default=1)
    parser.add_argument("--saves", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="katas-bench-") as folder:
        root = Path(folder)
        kata_file = copy_tree(args.phase, root)
        os.environ["KATAS_STATE_DIR"] = str(root / ".katas")
        sys.path.insert(0, str(root))
        stub = kata_file.read_text()
        solved = (root / "reference" / f"phase{args.phase}" / "kata.py").read_text()
        print(
            f"watch latency, phase{args.phase}, save -> result rendered "
            f"({os.cpu_count()} CPUs visible)"
        )
        report("  solved (reference)", measure(kata_file, solved, args.saves))
        report("  shipped stub      ", measure(kata_file, stub, args.saves))


if __name__ == "__main__":
    main()
