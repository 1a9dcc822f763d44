"""Phase 13 tests of serve: requests answered within a compile budget (compiles counted by
jax.monitoring) and a padded-flops budget (the lowered module's cost analysis), each answer
checked to be what the original computes (donating_step and cache_settings:
test_phase13_running.py).
"""

import contextlib
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import performance as oracle
from katas.phase13 import budgets
from katas.phase13.programs import (
    SERVE_CASES,
    SERVE_WIDTH,
    request_stream,
    serve_model,
    serve_weights,
)

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def _measured_compiles():
    """The test's own count of backend compiles inside the block."""
    events = []

    def listener(event, duration_secs, **kwargs):
        if event == BACKEND_COMPILE:
            events.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


# ---- serve --------------------------------------------------------------------------------------


@functools.cache
def _lowered_serve_flops(rows: int, with_bias: bool) -> float:
    w = jax.ShapeDtypeStruct((SERVE_WIDTH, SERVE_WIDTH), jnp.float32)
    x = jax.ShapeDtypeStruct((rows, SERVE_WIDTH), jnp.float32)
    bias = jax.ShapeDtypeStruct((SERVE_WIDTH,), jnp.float32) if with_bias else None
    return oracle.cost(jax.jit(serve_model).lower(w, x, bias))["flops"]


def _serve_flops(rows: int, with_bias: bool) -> float:
    """Flops of one call on `rows` rows: the lowered module's cost analysis at 1 and 2 rows,
    extended along the line it draws (checked at 200 rows: the model is row by row)."""
    one, two = _lowered_serve_flops(1, with_bias), _lowered_serve_flops(2, with_bias)
    far = _lowered_serve_flops(200, with_bias)
    assert far == one + 199 * (two - one), f"flops are not linear in rows: {one}, {two}, {far}"
    return one + (rows - 1) * (two - one)


@dataclasses.dataclass(frozen=True)
class _Call:
    """One call of run, as host copies taken when it returned: its rows, its bias (None when
    not given) and what it returned."""

    rows: np.ndarray
    bias: np.ndarray | None
    out: np.ndarray

    @functools.cached_property
    def _index(self) -> dict[bytes, int]:
        """Each row's bytes -> its index in rows."""
        return {row.tobytes(): index for index, row in enumerate(self.rows)}

    def answers(self, x: np.ndarray, bias) -> np.ndarray | None:
        """What this call returned for the rows of `x`, if it was given all of them and the
        request's bias (zeros or None for a request without one); else None."""
        if bias is None:
            if self.bias is not None and np.any(self.bias):
                return None
        elif self.bias is None or not np.array_equal(self.bias, np.asarray(bias, np.float32)):
            return None
        found = [self._index.get(row.tobytes(), -1) for row in np.asarray(x, np.float32)]
        if -1 in found:
            return None
        return self.out[np.array(found, dtype=np.intp)]


def _serve(kata, requests, w, max_compiles):
    """(answers, compiles, every call of run)."""
    jitted = jax.jit(serve_model)
    calls = []

    def run(x, bias):
        out = jitted(w, x, bias)
        calls.append(
            _Call(
                np.array(x, np.float32),
                None if bias is None else np.array(bias, np.float32),
                np.array(out),
            )
        )
        return out

    with _measured_compiles() as compiles:
        answers = kata.serve(requests, run, max_compiles)
    assert isinstance(answers, list) and len(answers) == len(requests), (
        f"expected a list of {len(requests)} answers, got {type(answers).__name__} of "
        f"{len(answers)}"
    )
    return answers, len(compiles), calls


def _check_serve(kata, requests, w, max_compiles: int, factor: float, where: str = "") -> None:
    """The answers, the compiles and the padded flops of serving `requests` (`factor`: padded
    flops at most this factor of the unpadded flops)."""
    answers, compiles, calls = _serve(kata, requests, w, max_compiles)
    w = w.astype(np.float64)
    for index, ((x, bias), got) in enumerate(zip(requests, answers, strict=True)):
        want = np.tanh(x @ w + (0.0 if bias is None else bias))
        got = np.asarray(got)
        with check:
            assert got.shape == want.shape, (
                f"request {index} ({len(x)} rows): answer {list(got.shape)}, expected "
                f"{list(want.shape)}{where}"
            )
            assert np.allclose(got, want, rtol=1e-4, atol=1e-5), (
                f"request {index} ({len(x)} rows, bias {'given' if bias is not None else 'none'})"
                f": differs from tanh(x @ w + bias) by up to {np.max(np.abs(got - want)):.3g}"
                f"{where}"
            )
    rows = sum(len(x) for x, _ in requests)
    with check:
        assert sum(len(c.rows) for c in calls) >= rows, (
            f"run saw {sum(len(c.rows) for c in calls)} rows, the requests hold {rows}: every "
            f"request goes through run{where}"
        )
    _check_answers_come_from_run(requests, answers, calls, where)
    padded = sum(_serve_flops(len(c.rows), c.bias is not None) for c in calls)
    unpadded = sum(_serve_flops(len(x), b is not None) for x, b in requests)
    budgets.within_budgets(
        compiles <= max_compiles
        or f"{compiles} compiles, budget {max_compiles}: how many shapes and pytree structures "
        f"reached the program?{where}",
        padded <= factor * unpadded
        or f"padded flops {padded / 1e6:.2f} M, budget {factor * unpadded / 1e6:.2f} M "
        f"({factor:.3g}x the unpadded {unpadded / 1e6:.2f} M): where does the padding go?{where}",
    )


def _check_answers_come_from_run(requests, answers, calls, where: str) -> None:
    """Each answer is the rows run returned for the request's rows, in a call given the
    request's bias: the model runs in run, the host only pads, stacks and slices (a bias added
    on the host afterwards, or a row computed by NumPy, is work the budgets never see). Shows
    the first request that breaks it."""
    for index, ((x, bias), got) in enumerate(zip(requests, answers, strict=True)):
        got = np.asarray(got)
        returned = [out for call in calls if (out := call.answers(x, bias)) is not None]
        if any(out.shape == got.shape and np.array_equal(out, got) for out in returned):
            continue
        given = "its bias" if bias is not None else "no bias (None or zeros)"
        problem = (
            f"its answer is not the rows run returned for them (given {given})"
            if returned
            else f"no call of run was given its rows with {given}"
        )
        with check:
            raise AssertionError(
                f"request {index} ({len(x)} rows, bias {'given' if bias is not None else 'none'})"
                f": {problem}: the model runs in run; the host only pads, stacks and slices"
                f"{where}"
            )
        return


@pytest.mark.task("serve")
@pytest.mark.parametrize("case", SERVE_CASES, ids=lambda c: "{}requests-seed{}".format(*c))
def test_serve_answers_within_compile_and_flops_budgets(kata, case):
    count, seed, max_compiles, factor = case
    _check_serve(kata, request_stream(count, seed), serve_weights(seed), max_compiles, factor)


FLOPS_SLACK = 0.05  # padded flops at most this much above the fewest max_compiles buckets give


def _best_buckets_factor(requests, max_compiles: int) -> float:
    """The factor of the unpadded flops that the best max_compiles buckets for `requests` (an
    oracle's fewest padded rows) pad to, plus FLOPS_SLACK."""
    sizes = [len(x) for x, _ in requests]
    fewest = oracle.fewest_padded_rows(sizes, max_compiles)
    # every call with a bias (a missing one given as zeros): flops are linear in rows
    per_row = _serve_flops(2, True) - _serve_flops(1, True)
    best = len(sizes) * _serve_flops(1, True) + (fewest - len(sizes)) * per_row
    unpadded = sum(_serve_flops(len(x), b is not None) for x, b in requests)
    return (1 + FLOPS_SLACK) * best / unpadded


def _requests(fresh, sizes: list[int]) -> list:
    rng = np.random.default_rng(fresh.randrange(2**32))
    return [
        (
            rng.normal(size=(n, SERVE_WIDTH)).astype(np.float32),
            rng.normal(size=SERVE_WIDTH).astype(np.float32) if fresh.random() < 0.5 else None,
        )
        for n in sizes
    ]


def _hot_stream(fresh) -> tuple[list, int]:
    """A stream unlike request_stream's, where how often each size comes decides the buckets:
    one common size carries half or more of the requests; of the rest, half are rarer sizes a
    little above it and half spread evenly up to the largest, which one request always needs."""
    count, largest = fresh.randrange(80, 121), fresh.randrange(120, 257)
    common, share = fresh.randrange(4, largest // 6), fresh.uniform(0.5, 0.7)

    def rarer() -> int:
        if fresh.random() < 0.5:
            return fresh.randrange(common + 1, common + largest // 5)
        return fresh.randrange(1, largest + 1)

    sizes = [common if fresh.random() < share else rarer() for _ in range(count)]
    sizes[fresh.randrange(count)] = largest
    return _requests(fresh, sizes), fresh.choice([3, 4, 5])


def _skewed_tail_stream(fresh) -> tuple[list, int]:
    """A stream skewed the other way, with 3 compiles: one small size carries 40% to 60% of the
    requests and the rest fall off geometrically, a long tail up to the largest (which one
    request needs). The best buckets are then not the ones that each, in turn, save the most
    rows: a bucket that serves the common size well must be weighed with the two after it."""
    count, largest = fresh.randrange(80, 121), fresh.randrange(120, 257)
    common, share = fresh.randrange(2, largest // 8), fresh.uniform(0.4, 0.6)
    mean = fresh.uniform(largest / 12, largest / 6)
    rng = np.random.default_rng(fresh.randrange(2**32))
    tail = [int(n) for n in np.minimum(rng.geometric(1 / mean, size=count), largest)]
    sizes = [common if fresh.random() < share else n for n in tail]
    sizes[fresh.randrange(count)] = largest
    return _requests(fresh, sizes), 3


@pytest.mark.task("serve")
def test_serve_pads_fresh_streams_about_as_little_as_the_best_buckets(kata, fresh):
    """Streams drawn fresh, where how often each size comes matters (one with a common size
    among sizes near it, two skewed to a small size with a long tail): the budget is the padded
    flops of the best max_compiles buckets for the stream (an oracle's), plus FLOPS_SLACK."""
    for draw in (_hot_stream, _skewed_tail_stream, _skewed_tail_stream):
        requests, max_compiles = draw(fresh)
        factor = _best_buckets_factor(requests, max_compiles)
        where = f" ({len(requests)} requests, at most {max_compiles} compiles; {fresh.where()})"
        _check_serve(
            kata, requests, serve_weights(fresh.randrange(100)), max_compiles, factor, where
        )


def _stepped_streams(fresh) -> tuple[list, list, int]:
    """Two streams of one length, one largest size and one compile budget, each of at most
    max_compiles sizes (so its best buckets pad nothing), all well below request_stream's 200:
    the first's smaller sizes at least double from one to the next, the second's sit a little
    above them (each pads to the next size up in the first's buckets)."""
    max_compiles, count = fresh.choice([3, 4]), fresh.randrange(30, 51)
    steps = [fresh.randrange(1, 4)]
    while len(steps) < max_compiles:
        steps.append(fresh.randrange(2 * steps[-1] + 2, 2 * steps[-1] + 7))
    largest = steps.pop()
    above = [n + 1 + fresh.randrange(max(1, n // 2)) for n in steps]
    streams = []
    for smaller in (steps, above):
        sizes = [fresh.choice(smaller) for _ in range(count)]
        sizes[fresh.randrange(count)] = largest
        streams.append(_requests(fresh, sizes))
    return streams[0], streams[1], max_compiles


@pytest.mark.task("serve")
def test_serve_pads_each_stream_of_one_length_to_its_own_best_buckets(kata, fresh):
    """Two streams drawn fresh, served one after the other in one process: same length, same
    largest request (well below 200), same max_compiles, different sizes. Each is held to the
    padded flops of its own best buckets plus FLOPS_SLACK: buckets that assume the largest
    request is 200, or that carry over from a stream before, pad far more."""
    first, second, max_compiles = _stepped_streams(fresh)
    for name, requests in (("first", first), ("second", second)):
        sizes = [len(x) for x, _ in requests]
        factor = _best_buckets_factor(requests, max_compiles)
        where = (
            f" (the {name} of two streams of {len(sizes)} requests, largest {max(sizes)}, at most "
            f"{max_compiles} compiles; {fresh.where()})"
        )
        _check_serve(
            kata, requests, serve_weights(fresh.randrange(100)), max_compiles, factor, where
        )
