"""Phase 11 tests on modules drawn afresh for every run (the ``fresh`` fixture): which
collectives run async, what runs while each is in flight, and what each matmul fusion holds.

The recordings and hand-written modules are a fixed bank; these modules cover the contract's
whole domain in every draw (kata_harness/oracles/tpu_drawn_schedule.py and tpu_drawn_matmul.py
list the situations: starts in loop bodies, async compute, tuple-rooted TPU bodies, two starts
of one signature finishing in the other order, barriers and copies in the windows, reducers
called from matmul fusions, matmul fusions outside ENTRY). Expected values come from XLA's own
parse of each text (kata_harness.oracles.tpu_hlo). A failure names the drawn case and its seed,
never the expected answer.
"""

from __future__ import annotations

import pytest
from pytest_check import check

from kata_harness.messages import mismatch
from kata_harness.oracles import tpu_hlo as oracle
from kata_harness.oracles.tpu_drawn_matmul import matmul_module
from kata_harness.oracles.tpu_drawn_schedule import async_module

DRAWS = 3  # modules per test and run; each holds every situation


@pytest.mark.task("async_collectives")
def test_async_collectives_of_drawn_schedules(kata, fresh):
    """Starts of every spelling in ENTRY only (a while body's are not), async compute that is no
    collective, TPU bodies ending in the marker or in a tuple of its elements, the collective in
    the body or in a fusion it calls."""
    for draw in range(DRAWS):
        text = async_module(fresh)
        got = kata.async_collectives(text)
        want = oracle.async_starts(text)
        with check:
            assert got == want, f"drawn schedule {draw} ({fresh.where()}): {mismatch(got, want)}"


@pytest.mark.task("overlapped_work")
def test_overlapped_work_of_drawn_schedules(kata, fresh):
    """Windows holding copies, transposes, slices, opt-barriers, tokens, a loop, a synchronous
    collective and parameters; two starts of one signature finishing in the other order."""
    for draw in range(DRAWS):
        text = async_module(fresh)
        got = kata.overlapped_work(text)
        want = oracle.overlaps(text)
        with check:
            assert got == want, f"drawn schedule {draw} ({fresh.where()}): {mismatch(got, want)}"


@pytest.mark.task("matmul_fusions")
def test_matmul_fusions_of_drawn_modules(kata, fresh):
    """Epilogues of every op kind (pads, slices, reducers of reduce-window, map and sort),
    matmuls in nested fusions, ENTRY fusions of every kind, matmul fusions in a while body and a
    called computation."""
    for draw in range(DRAWS):
        text = matmul_module(fresh)
        got = kata.matmul_fusions(text)
        want = oracle.matmul_fusions(text)
        with check:
            assert got == want, f"drawn module {draw} ({fresh.where()}): {mismatch(got, want)}"
