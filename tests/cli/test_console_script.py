"""One smoke test of the installed console script (no JAX import on this path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_console_script_hint_and_bad_phase(tmp_path):
    script = Path(sys.executable).with_name("katas")
    env = {"KATAS_STATE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    ok = subprocess.run([script, "hint", "phase1.1"], capture_output=True, text=True, env=env,
                        timeout=60)
    assert ok.returncode == 0 and "hint 1/" in ok.stdout
    bad = subprocess.run([script, "run", "phase999"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
