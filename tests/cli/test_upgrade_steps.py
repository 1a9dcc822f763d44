"""upgrade-report's steps never wait silently: each says what it does, and one that runs out of
time or fails ends the report naming the step and its last lines."""

from __future__ import annotations

import sys

import pytest

from katas_cli.errors import RunError
from katas_cli.upgrade import _run


def test_a_step_that_hangs_ends_with_its_name_and_last_lines(capsys):
    hang = [
        sys.executable,
        "-c",
        "print('compiled 3 of 9', flush=True); import time; time.sleep(60)",
    ]
    # the child sleeps 60 s: any time limit ends it; a short one keeps the test short
    with pytest.raises(
        RunError, match=r"running the tests with jax 0\.0 did not finish within 0\.2 s"
    ):
        _run(hang, "running the tests with jax 0.0", timeout=0.2)
    assert "upgrade-report: running the tests with jax 0.0 ..." in capsys.readouterr().err


def test_a_step_that_crashes_names_its_exit_and_output():
    crash = [sys.executable, "-c", "import os; print('worker gw0 crashed'); os.abort()"]
    with pytest.raises(RunError, match=r"failed \(exit -6\): worker gw0 crashed"):
        _run(crash, "compiling with jax 0.0", timeout=30)
