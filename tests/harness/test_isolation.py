"""Isolation: trace counts never leak between tests, and a user's XLA_FLAGS cannot change the
facts (only dump settings are kept)."""

import os
import sys

import jax
import numpy as np
import pytest

from kata_harness import options

TRACES: list[int] = []


def _traced(x):
    TRACES.append(1)
    return x + 1


JITTED = jax.jit(_traced)


def test_first_user_of_a_shared_jitted_function():
    TRACES.clear()
    JITTED(np.ones(3, np.float32))
    assert len(TRACES) == 1


def test_second_user_sees_a_fresh_trace_cache():
    # Without the harness clearing JAX's caches between tests, whichever of these two tests runs
    # second would see 0 traces.
    TRACES.clear()
    JITTED(np.ones(3, np.float32))
    assert len(TRACES) == 1


def test_user_xla_flags_keep_only_dump_settings(monkeypatch):
    monkeypatch.setenv(
        "XLA_FLAGS", "--xla_dump_to=xla_dump --xla_cpu_enable_fast_math=true --xla_dump_hlo_as_text"
    )
    assert options.filter_xla_flags() == "--xla_cpu_enable_fast_math=true"
    kept = "--xla_dump_to=xla_dump --xla_dump_hlo_as_text"
    assert os.environ["XLA_FLAGS"] == " ".join([kept, *options.OWN_XLA_FLAGS])
    assert options.filter_xla_flags() is None, "the harness's own flags are not the user's"
    assert os.environ["XLA_FLAGS"] == " ".join([kept, *options.OWN_XLA_FLAGS])


@pytest.mark.battery
@pytest.mark.timeout(240)  # a Python process that starts JAX, then pytest
def test_jax_started_before_pytest_skips_instead_of_crashing(pytester):
    pytester.makepyfile(
        test_devices="""
        import jax
        import pytest

        def test_needs_eight():
            if jax.device_count() < 8:
                pytest.skip("needs 8 CPU devices")
    """
    )
    code = (
        "import sys, jax, pytest; jax.numpy.ones(3); "
        "sys.exit(pytest.main(['-p', 'kata_harness.plugin', '-p', 'no:cacheprovider']))"
    )
    result = pytester.run(sys.executable, "-c", code)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*JAX was initialized before the tests*", "*1 skipped*"])


@pytest.mark.battery
@pytest.mark.timeout(240)  # pytest and one xdist worker in subprocesses
def test_xdist_controller_leaves_jax_to_its_workers(pytester):
    """The controller runs no test: it starts its workers without importing JAX first, and each
    worker still has the 8 CPU devices the tests need."""
    pytester.makeconftest(
        """
        import sys

        def pytest_xdist_setupnodes(config, specs):  # the controller, as it starts the workers
            print(f"controller imported jax: {'jax' in sys.modules}")
        """
    )
    pytester.makepyfile(
        test_devices="""
        import jax

        def test_eight_devices():
            assert jax.device_count() == 8
    """
    )
    result = pytester.run(
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "kata_harness.plugin",
        "-p",
        "no:cacheprovider",
        "-n",
        "1",
        "-s",  # the header too: it is written before the workers start
        "--impl=reference",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*controller imported jax: False*", "*1 passed*"])
