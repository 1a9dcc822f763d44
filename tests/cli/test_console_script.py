"""The installed console script, and what a command that only reads the state imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kata_harness import curriculum
from katas_cli.state import PhaseOutcome, State, phase_keys

pytestmark = pytest.mark.battery  # each test starts Python in a subprocess


def test_console_script_hint_and_bad_phase(tmp_path, course):
    script = Path(sys.executable).with_name("katas")
    env = {"KATAS_STATE_DIR": str(tmp_path), "KATAS_ROOT": str(course), "PATH": "/usr/bin:/bin"}
    ok = subprocess.run(
        [script, "hint", "phase1.1"], capture_output=True, text=True, env=env, timeout=60
    )
    assert ok.returncode == 0 and "hint 1/" in ok.stdout
    bad = subprocess.run(
        [script, "run", "phase999"], capture_output=True, text=True, env=env, timeout=60
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_cached_status_and_hints_do_not_import_jax_or_pytest(state_dir, course):
    keys = phase_keys(curriculum.phases())
    State({name: PhaseOutcome(key) for name, key in keys.items()}, {}).save()
    code = (
        "import sys; from katas_cli.main import main; main(['--json']); main(['hint', '1.1']);"
        " print(sorted(m for m in ('jax', 'pytest') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"KATAS_STATE_DIR": str(state_dir), "KATAS_ROOT": str(course), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", "reading the cached state must start fast"
