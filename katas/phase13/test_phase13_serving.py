"""Phase 13 tests, tasks serve, donating_step and cache_settings: decisions about running a
program, each held to a budget read from the compiler or measured here (compiles counted by
jax.monitoring, flops by the lowered module's cost analysis, peak memory by memory_analysis, a
second process's cache hits), and each checked to compute what the original computes.
"""

import contextlib
import dataclasses
import functools
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import performance as oracle
from katas.phase13 import budgets
from katas.phase13.programs import (
    CACHE_CHILD,
    CACHE_CHILD_TIMEOUT,
    DONATION_CASES,
    PEAK_SHARE,
    SERVE_CASES,
    SERVE_WIDTH,
    momentum_args,
    momentum_step,
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
        sizes = [len(x) for x, _ in requests]
        fewest = oracle.fewest_padded_rows(sizes, max_compiles)
        # every call with a bias (a missing one given as zeros): flops are linear in rows
        per_row = _serve_flops(2, True) - _serve_flops(1, True)
        best = len(sizes) * _serve_flops(1, True) + (fewest - len(sizes)) * per_row
        unpadded = sum(_serve_flops(len(x), b is not None) for x, b in requests)
        factor = (1 + FLOPS_SLACK) * best / unpadded
        where = f" ({len(requests)} requests, at most {max_compiles} compiles; {fresh.where()})"
        _check_serve(
            kata, requests, serve_weights(fresh.randrange(100)), max_compiles, factor, where
        )


# ---- donating_step ------------------------------------------------------------------------------


@functools.cache
def _donation_original(case) -> int:
    compiled = jax.jit(momentum_step).lower(*momentum_args(*case)).compile()
    return oracle.memory(compiled).peak_memory_in_bytes


# what jax.jit returns (its class moved between jaxlib versions): a call of one runs the program
# its .lower() gives, which an object of the learner's own class need not do
JITTED = type(jax.jit(abs))


def _stepper(kata):
    got = kata.donating_step(momentum_step)
    assert isinstance(got, JITTED), (
        f"donating_step returned a {type(got).__name__}, expected what jax.jit returns: a call "
        "of that runs the very program its .lower() reports"
    )
    return got


@pytest.mark.task("donating_step")
@pytest.mark.parametrize(
    "case",
    [*DONATION_CASES, (256, 16, 4)],  # and one smaller than the listed cases
    ids=lambda c: "width{}-batch{}".format(*c),
)
def test_donating_step_halves_peak_memory(kata, case):
    step = _stepper(kata)
    compiled = step.lower(*momentum_args(*case)).compile()
    budgets.check_no_hidden_work(oracle.text(compiled), "the compiled step")
    peak, original = oracle.memory(compiled).peak_memory_in_bytes, _donation_original(case)
    budget = PEAK_SHARE * original
    assert peak <= budget, (
        f"peak memory {budgets.mb(peak)}, budget {budgets.mb(budget)} ({PEAK_SHARE:.0%} of the "
        f"original's {budgets.mb(original)}): which buffers must exist at once, inputs and outputs?"
    )
    # the figure above is of .lower(); a call must run the same program: the old state's buffers,
    # reused for the new state, are gone once the call returns
    state, batch = jax.device_put(momentum_args(*case))
    step(state, batch)
    kept = [
        jax.tree_util.keystr(path)
        for path, leaf in jax.tree_util.tree_leaves_with_path(state)
        if not leaf.is_deleted()
    ]
    assert not kept, (
        f"after a call of the returned step, the old state's buffers {kept} are still alive: "
        "the call holds old and new state at once, whatever .lower() reports"
    )


@pytest.mark.task("donating_step")
@pytest.mark.parametrize("case", [*DONATION_CASES, (64, 3, 2)])
def test_donating_step_trains_like_the_original(kata, case):
    state, batch = momentum_args(*case)
    step = _stepper(kata)
    got_state = jax.device_put(state)
    for want in _momentum_trajectory(case):
        got_state, got_loss = step(got_state, batch)
        budgets.close((got_state, got_loss), want, "state and loss", 1e-5, 1e-6)


@functools.cache
def _momentum_trajectory(case, steps: int = 3) -> tuple:
    """The original's (state, loss) after each of `steps` steps from momentum_args(*case),
    computed once per case, as host copies nothing can write to."""
    state, batch = momentum_args(*case)
    original, state, trajectory = jax.jit(momentum_step), jax.device_put(state), []
    for _ in range(steps):
        state, loss = original(state, batch)
        trajectory.append(budgets.frozen((state, loss)))
    return tuple(trajectory)


@pytest.mark.task("donating_step")
def test_donating_step_moves_nothing_to_or_from_the_host(kata):
    state, batch = momentum_args(256, 8, 3)
    step = _stepper(kata)
    state, batches = jax.device_put(state), [jax.device_put(batch)] * 4
    step(state, batches[0])  # compile outside the guard (the guard is about the loop)
    state = jax.device_put(momentum_args(256, 8, 3)[0])
    losses = []
    with jax.transfer_guard("disallow"):
        try:
            for batch in batches:
                state, loss = step(state, batch)
                losses.append(loss)
        except Exception as error:  # jax raises its runtime error type, which moved across versions
            pytest.fail(f"a step moved data between host and device: {str(error)[:200]}")
    assert all(isinstance(loss, jax.Array) for loss in losses), (
        "every step returns its loss as a device array (jax.Array)"
    )


# ---- cache_settings -----------------------------------------------------------------------------


def _child(settings) -> dict:
    try:
        done = subprocess.run(
            [sys.executable, "-c", CACHE_CHILD, json.dumps(settings)],
            capture_output=True,
            text=True,
            timeout=CACHE_CHILD_TIMEOUT,
            env={"JAX_PLATFORMS": "cpu", "PATH": "", "HOME": "/nonexistent"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a process with these settings did not finish in {CACHE_CHILD_TIMEOUT} s")
    assert done.returncode == 0, f"the process failed: {done.stderr.strip()[-300:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.task("cache_settings")
@pytest.mark.timeout(2 * CACHE_CHILD_TIMEOUT + 30)  # two processes, each with its own limit
def test_second_process_hits_the_cache(kata, tmp_path):
    settings = kata.cache_settings(str(tmp_path / "cache"))
    assert isinstance(settings, dict) and all(isinstance(k, str) for k in settings), (
        f"expected a dict of jax config names to values, got {settings!r:.120}"
    )
    first = _child(settings)
    written = sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file())
    # a failure already: a second process (another JAX start-up) would only say it again
    assert written, (
        f"the first process missed the cache {first['misses']} times and wrote nothing under "
        "cache_dir: where did its entries go?"
    )
    second = _child(settings)
    with check:
        assert first["misses"] >= 1, (
            f"the first process missed the cache {first['misses']} times: did it use one?"
        )
    with check:
        assert second["misses"] == 0 and second["hits"] >= first["misses"], (
            f"second process: {second['hits']} cache hits and {second['misses']} misses, expected "
            f"{first['misses']} hits (the first process's misses) and none missed: was anything "
            "written, and where did each process look?"
        )
    with check:
        assert second["result"] == first["result"], (
            f"the two processes computed {first['result']} and {second['result']}"
        )


@pytest.mark.task("cache_settings")
def test_cache_settings_hold_for_every_compile(kata, tmp_path):
    """ "Every compile" cannot hang on how fast this machine compiles: a minimum compile time or
    entry size above zero leaves out the programs that compile fast or come out small, and
    whether the test's program is one of them depends on the machine and its load."""
    settings = kata.cache_settings(str(tmp_path / "cache"))
    for name in (
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    ):
        value = settings.get(name, getattr(jax.config, name))
        assert float(value) <= 0, (
            f"{name} is {value}: a compile faster (or an entry smaller) than that is not cached, "
            "so whether a second process finds it depends on the machine"
        )
