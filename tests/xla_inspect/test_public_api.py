"""The package's public names resolve, and importing it or reading HLO never imports JAX."""

import subprocess
import sys

import pytest

import xla_inspect


def test_every_public_name_resolves():
    missing = [name for name in xla_inspect.__all__ if getattr(xla_inspect, name, None) is None]
    assert not missing
    assert xla_inspect.__all__ == sorted(set(xla_inspect.__all__))


@pytest.mark.battery  # starts Python again in a subprocess: CI runs it once
def test_reading_hlo_does_not_import_jax():
    code = (
        "import sys, xla_inspect as xi; "
        "m = xi.parse_hlo('HloModule m\\nENTRY e {\\n  ROOT p = f32[] parameter(0)\\n}\\n'); "
        "print(dict(xi.opcode_counts(m)), callable(xi.capture), 'jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "{'parameter': 1} True False"
