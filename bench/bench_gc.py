"""The garbage collector's share of a test run: CPU seconds spent collecting against the run's.

    uv run python bench/bench_gc.py [PYTEST ARGS...]   (default: tests/xla_inspect tests/cli)

Runs pytest in this process (one process, no xdist workers: ``-n 0``, reference mode) with a
``gc.callbacks`` hook timing every collection, and prints the collections, the seconds they
took, the run's CPU seconds and the share, split at the end of collecting the tests (from there
on :mod:`kata_harness.collector` has frozen what collecting made and raised the young
threshold). Prints figures only; asserts nothing.
"""

from __future__ import annotations

import gc
import resource
import sys
import time

import pytest


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


class Timer:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._started = 0.0
        self.at_collection: tuple[float, int, float] = (0.0, 0, 0.0)

    def callback(self, phase: str, info: dict[str, int]) -> None:  # noqa: ARG002
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1

    @pytest.hookimpl(tryfirst=True)  # before the harness's collector freezes anything
    def pytest_collection_finish(self, session: pytest.Session) -> None:  # noqa: ARG002
        self.at_collection = (self.seconds, self.collections, _cpu())


def main() -> None:
    args = sys.argv[1:] or ["tests/xla_inspect", "tests/cli"]
    timer = Timer()
    gc.callbacks.append(timer.callback)
    start = _cpu()
    pytest.main([*args, "--impl=reference", "-n", "0", "-q", "-p", "no:randomly"], plugins=[timer])
    total = _cpu() - start
    seconds, collections, cpu_at = timer.at_collection
    after = (timer.seconds - seconds, timer.collections - collections, total - (cpu_at - start))
    print(f"\ncollecting the tests: {collections} collections, {seconds:.2f} s")
    print(
        f"running the tests: {after[1]} collections, {after[0]:.2f} s of {after[2]:.1f} CPU s "
        f"({after[0] / max(after[2], 1e-9):.1%})"
    )


if __name__ == "__main__":
    main()
