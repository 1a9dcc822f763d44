"""Phase 6 tests, task eager_vs_jit: the timing is measured as the contract says (warm-ups off
the clock, every result awaited, mean seconds per call), checked with a counting and a fake
clock rather than by asserting a duration."""

import math
import time

import jax
import jax.core
import jax.numpy as jnp
import pytest
from jax._src import array as jax_array
from pytest_check import check

from katas.phase6.programs import device_ones, tracked


@pytest.mark.task("eager_vs_jit")
def test_timing_is_a_sane_measurement(kata):
    timing = kata.eager_vs_jit(tracked([]), (device_ones(512),), 3)
    sane = {}
    for field in ("eager_s", "jit_s", "ratio"):
        value = getattr(timing, field)
        sane[field] = isinstance(value, float) and math.isfinite(value) and value > 0
        with check:
            assert sane[field], f"{field}={value!r}: a positive, finite float"
    with check:
        assert timing.repeats == 3, f"repeats={timing.repeats!r}, expected the 3 it was given"
    if sane["eager_s"] and sane["jit_s"]:  # else the ratio has no expected value to compare to
        with check:
            assert timing.ratio == pytest.approx(timing.eager_s / timing.jit_s), "ratio = eager/jit"


@pytest.mark.task("eager_vs_jit")
def test_timing_runs_eager_and_jit(kata):
    calls = []
    kata.eager_vs_jit(tracked(calls), (device_ones(512),), 4)
    eager, traced = calls.count(False), calls.count(True)
    with check:
        assert eager == 4 + 1, f"{eager} eager calls, expected 1 warm-up + 4 timed"
    with check:
        assert traced == 1, f"traced {traced} times, expected once (jit caches the trace)"


@pytest.mark.task("eager_vs_jit")
def test_timing_leaves_warm_ups_off_the_clock(kata, monkeypatch):
    events = []  # "clock" for each perf_counter reading, then the calls of f in order
    real = time.perf_counter

    def clock():
        events.append("clock")
        return real()

    monkeypatch.setattr(time, "perf_counter", clock)
    if getattr(kata, "perf_counter", None) is real:  # `from time import perf_counter`
        monkeypatch.setattr(kata, "perf_counter", clock)

    def f(x):
        events.append("trace" if isinstance(x, jax.core.Tracer) else "eager")
        return jnp.sin(x) * 2.0

    kata.eager_vs_jit(f, (device_ones(512),), 3)
    monkeypatch.undo()
    readings = events.count("clock")
    with check:
        assert readings >= 2, (
            f"{readings} time.perf_counter() readings: time each loop with time.perf_counter()"
        )
    first = {}
    for position, event in enumerate(events):
        first.setdefault(event, position)
    for call, what in (
        ("eager", "the first eager call (it compiles each op)"),
        ("trace", "the first jitted call (it traces and compiles)"),
    ):
        running = events[: first.get(call, 0)].count("clock") % 2 == 1
        with check:
            assert not running, (
                f"{what} ran between a start and a stop reading of the clock: warm up before "
                "you start timing, or the compile is part of the measurement"
            )


@pytest.mark.task("eager_vs_jit")
def test_timing_blocks_on_every_result(kata, monkeypatch):
    blocked = []
    original = jax_array.ArrayImpl.block_until_ready

    def counting(self):
        blocked.append(1)
        return original(self)

    monkeypatch.setattr(jax_array.ArrayImpl, "block_until_ready", counting)
    kata.eager_vs_jit(tracked([]), (device_ones(512),), 5)
    assert len(blocked) >= 2 * 5, (
        f"blocked {len(blocked)} times; each of the 2x5 timed calls must block_until_ready, or "
        "the clock stops before the work is done (dispatch is asynchronous)"
    )


def _call_costs(fresh, repeats: int) -> list[float]:
    """Fake seconds for a warm-up call and `repeats` timed calls: a slow warm-up, then fast
    calls with one slow call among them, so that their mean is neither their median nor the
    fastest of them."""
    fast = fresh.choice([1.0, 2.0])
    timed = [fast] * repeats
    timed[fresh.randrange(repeats)] = fast + fresh.randint(3, 9)
    return [fresh.randint(20, 40) + 0.5, *timed]


@pytest.mark.task("eager_vs_jit")
def test_timing_reports_mean_seconds_per_call(kata, monkeypatch, fresh):
    """A fake clock: time passes only while f's Python body runs eagerly (the n-th eager call
    takes eager[n] seconds) and while a jitted result is first awaited (the n-th takes jit[n]
    seconds; jitted results are one element shorter, which is how the clock tells them apart),
    and a reading itself takes a nanosecond (so an unawaited loop is not a division by zero).
    Both are drawn for this run, the warm-up slow and one timed call slower than the others, so
    the honest means are known exactly and differ from a median or a best call."""
    repeats = fresh.randint(3, 6)
    eager, jitted = _call_costs(fresh, repeats), _call_costs(fresh, repeats)
    now, eager_calls, awaited = [100.0], [0], []
    original = jax_array.ArrayImpl.block_until_ready

    def clock():  # each reading takes a nanosecond, so no honest or dishonest loop takes zero
        now[0] += 1e-9
        return now[0]

    def blocking(self):
        if self.shape == (63,) and not any(self is seen for seen in awaited):
            now[0] += jitted[min(len(awaited), repeats)]
            awaited.append(self)
        return original(self)

    def f(x):
        if isinstance(x, jax.core.Tracer):
            return (jnp.sin(x) * 2.0)[1:]
        now[0] += eager[min(eager_calls[0], repeats)]
        eager_calls[0] += 1
        return jnp.sin(x) * 2.0

    monkeypatch.setattr(time, "perf_counter", clock)
    if getattr(kata, "perf_counter", None) is not None:  # `from time import perf_counter`
        monkeypatch.setattr(kata, "perf_counter", clock)
    monkeypatch.setattr(jax_array.ArrayImpl, "block_until_ready", blocking)
    timing = kata.eager_vs_jit(f, (device_ones(64),), repeats)
    monkeypatch.undo()
    assert isinstance(timing, kata.Timing), f"expected a Timing, got {type(timing).__name__}"
    eager_mean, jit_mean = sum(eager[1:]) / repeats, sum(jitted[1:]) / repeats
    with check:
        assert timing.eager_s == pytest.approx(eager_mean), (
            f"eager_s {timing.eager_s}, expected {eager_mean}: the mean of the clock's seconds "
            f"over the {repeats} timed eager calls, warm-up excluded ({fresh.where()})"
        )
    with check:
        assert timing.jit_s == pytest.approx(jit_mean), (
            f"jit_s {timing.jit_s}, expected {jit_mean}: the mean over the {repeats} timed "
            f"jitted calls, warm-up excluded ({fresh.where()})"
        )
    with check:
        assert timing.repeats == repeats and timing.ratio == pytest.approx(eager_mean / jit_mean), (
            f"repeats {timing.repeats}, ratio {timing.ratio}: expected {repeats} and eager/jit"
        )
