"""A patching library in a kata file: ``mock.patch(...).start()`` replaces a library's method
with no assignment the scan could see, and the patch outlives the file, so every later test of
the process (other phases' in the census) would read the kata's numbers as the compiler's. The
scan refuses the import, under any spelling."""

from __future__ import annotations

import pytest

from kata_harness import source_scan


@pytest.mark.parametrize(
    "source",
    [
        "from unittest import mock\nimport jax\n"
        "mock.patch.object(jax.stages.Compiled, 'cost_analysis', dict).start()\n",
        "import unittest.mock as m\n",
        "from unittest.mock import patch\n",
        "import mock\n",
        "def f():\n    import unittest\n    return unittest.mock\n",
    ],
)
def test_the_scan_refuses_patching_libraries(source):
    refusal = source_scan.scan(source, "kata.py")
    assert refusal is not None and "line" in refusal


def test_the_mock_probe_is_refused_before_it_loads():
    from kata_harness import curriculum

    probe = curriculum.DECOYS_DIR / "redteam" / "phase3_probes" / "r4_mock_cost_analysis.py"
    assert source_scan.scan(probe.read_text(), str(probe)) is not None
