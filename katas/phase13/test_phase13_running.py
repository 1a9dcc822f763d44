"""Phase 13 tests, tasks donating_step and cache_settings: decisions about running a program,
each held to a budget read from the compiler or measured here (peak memory by memory_analysis,
a second process's cache hits) and each checked to compute what the original computes (serve:
test_phase13_serving.py).
"""

import functools
import json
import subprocess
import sys

import jax
import pytest
from pytest_check import check

from kata_harness.oracles import performance as oracle
from katas.phase13 import budgets
from katas.phase13.programs import (
    CACHE_CHILD,
    CACHE_CHILD_TIMEOUT,
    DONATION_CASES,
    PEAK_SHARE,
    momentum_args,
    momentum_step,
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
