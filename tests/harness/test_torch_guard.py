"""Kata code that uses torch under the guard: importing torch, and torch.compile with an empty
Inductor cache, must work, and must not break torch for the rest of the process.

Importing torch starts a program (``ldconfig``) and Inductor's first compile starts g++; the
guard refuses programs started by kata code. Each check runs in a new Python process, where torch
has not been imported yet (as in a learner's first run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xla_inspect import inductor_capture

pytestmark = [
    pytest.mark.battery,
    pytest.mark.skipif(
        inductor_capture.missing() is not None, reason=f"needs: {inductor_capture.INSTALL}"
    ),
]

KATA = textwrap.dedent("""
    def imports():
        import torch
        return torch.__version__

    def compiles():
        import torch
        layer = torch.nn.Linear(3, 2)
        with torch.no_grad():
            return torch.compile(layer)(torch.ones(2, 3)).shape
""")

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kata_harness import curriculum, guard, loading
    path = Path(sys.argv[1]).resolve()
    guard.install()
    guard.is_kata_file = lambda filename: filename == str(path)
    if sys.argv[2] == "prepared":
        loading.import_needed(curriculum.phase(16))
    kata = loading.load_file(path, "_kata_torch", label="phase16", scan=True)
    try:
        print("kata:", getattr(kata, sys.argv[3])())
    except Exception as error:
        print("kata failed:", type(error).__name__)
    import torch
    print("later import:", torch.__version__)
""")


def _run(tmp_path: Path, mode: str, call: str, cache: Path) -> str:
    kata = tmp_path / "kata.py"
    kata.write_text(KATA)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(kata), mode, call],
        capture_output=True,
        text=True,
        env=env,
        timeout=540,
        check=False,
    )
    return run.stdout + run.stderr


@pytest.mark.timeout(120)
def test_import_torch_in_kata_code_breaks_nothing(tmp_path):
    out = _run(tmp_path, "prepared", "imports", tmp_path / "cache")
    assert "kata: " in out and "later import: " in out, out


@pytest.mark.timeout(120)
def test_a_file_of_a_phase_without_torch_that_imports_it_breaks_nothing(tmp_path):
    """A phase 11 answer importing torch inside a function, loaded with nothing imported for
    the phase: without the harness importing torch first the guard refuses ldconfig, the import
    fails half-way, and torch can never be imported again in that process (a census's phase 16
    tests then all failed)."""
    out = _run(tmp_path, "bare", "imports", tmp_path / "cache")
    assert "kata: " in out and "later import: " in out, out


@pytest.mark.timeout(600)  # a compile with an empty Inductor cache: about a minute here
def test_torch_compile_in_kata_code_compiles_with_an_empty_cache(tmp_path):
    out = _run(tmp_path, "prepared", "compiles", tmp_path / "empty-cache")
    assert "kata: torch.Size([2, 2])" in out, out
