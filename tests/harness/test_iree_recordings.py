"""Every IREE flow listing a phase records (``FLOWS`` in its programs.py) is there, is read by
xla_inspect.iree, and still matches what IREE makes when the ``iree`` group is installed with
the versions it names; with ``--snapshot-update`` (reference mode) a stale or missing listing is
written again. The verdicts a phase records for its bank of functions (``VERDICTS``) are checked
against IREE the same way."""

from __future__ import annotations

import numpy as np
import pytest

from kata_harness import curriculum, iree, programs, recordings
from xla_inspect import iree_compile
from xla_inspect.iree import read_flow


def _phases_with(attribute: str) -> list[tuple[str, object]]:
    found = []
    for phase in curriculum.phases():
        module = programs.load(phase)
        if hasattr(module, attribute):
            found.append((phase.name, module))
    return found


FLOWS = [
    (phase, name, program)
    for phase, module in _phases_with("FLOWS")
    for name, program in sorted(module.FLOWS.items())  # type: ignore[attr-defined]
]
BANKS = [
    (phase, name, module)
    for phase, module in _phases_with("VERDICTS")
    for name in sorted(module.VERDICTS)  # type: ignore[attr-defined]
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("phase", "name", "program"), FLOWS, ids=[f"{p}/{n}" for p, n, _ in FLOWS])
def test_flow_listing_is_current(request, phase, name, program):
    path = iree.recorded_path(phase, name)
    updating = bool(getattr(request.config.option, "update_snapshots", False))
    if not path.is_file() and not updating:
        pytest.fail(f"{path} is missing: record it with {iree.RECORD_COMMAND}", pytrace=False)
    reason = iree.missing()
    if reason is not None:
        pytest.skip(f"cannot check against IREE: {reason}")
    kept = path.read_text(encoding="utf-8") if path.is_file() else None
    running = iree_compile.versions()
    if kept is not None and not updating and recordings.header_versions(kept) != running:
        pytest.skip(f"recorded with {recordings.header_versions(kept)}, running {running}")
    fresh = iree.compile_flow(program)
    if updating:
        if request.config.getoption("--impl") != "reference":
            pytest.fail("recordings are written in reference mode only", pytrace=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fresh, encoding="utf-8")
        return
    assert fresh == kept, f"{path} is stale: IREE now makes another listing; {iree.RECORD_COMMAND}"


@pytest.mark.parametrize(("phase", "name", "program"), FLOWS, ids=[f"{p}/{n}" for p, n, _ in FLOWS])
def test_flow_listing_reads(phase, name, program):
    path = iree.recorded_path(phase, name)
    if not path.is_file():
        pytest.skip(f"{path} is not recorded yet (test_flow_listing_is_current says so)")
    text = path.read_text(encoding="utf-8")
    dispatches = read_flow(text)
    assert dispatches, f"{path}: no dispatch read"
    assert len(dispatches) == text.count("flow.executable.export"), path


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("phase", "name", "module"), BANKS, ids=[f"{p}/{n}" for p, n, _ in BANKS])
def test_recorded_verdict_is_iree_s(phase, name, module):
    """What IREE does with two draws of the family, against the verdict recorded for it."""
    iree.require()
    for seed in (0, 1):
        fn, args = module.BANK[name](np.random.default_rng(seed))
        got = iree.verdict(fn, args)
        assert got == module.VERDICTS[name], f"{phase} {name} (draw {seed}): IREE says {got}"


AGREEMENTS = [(phase, module) for phase, module in _phases_with("ROUND_TRIPS")]
AGREEMENT_FILE = "agreement"


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("phase", "module"), AGREEMENTS, ids=[p for p, _ in AGREEMENTS])
def test_agreement_is_current(request, phase, module):
    """The recorded worst disagreement between IREE and JAX on the phase's ROUND_TRIPS (seeded
    draws), measured again."""
    path = iree.recorded_path(phase, AGREEMENT_FILE).with_suffix(".txt")
    updating = bool(getattr(request.config.option, "update_snapshots", False))
    if not path.is_file() and not updating:
        pytest.fail(f"{path} is missing: record it with {iree.RECORD_COMMAND}", pytrace=False)
    reason = iree.missing()
    if reason is not None:
        pytest.skip(f"cannot measure with IREE: {reason}")
    kept = path.read_text(encoding="utf-8") if path.is_file() else None
    running = iree_compile.versions()
    if kept is not None and not updating and recordings.header_versions(kept) != running:
        pytest.skip(f"recorded with {recordings.header_versions(kept)}, running {running}")
    fresh = iree.agreement_table(module.ROUND_TRIPS)
    if updating:
        if request.config.getoption("--impl") != "reference":
            pytest.fail("recordings are written in reference mode only", pytrace=False)
        path.write_text(fresh, encoding="utf-8")
        return
    assert kept is not None
    assert iree.read_agreement(fresh) == iree.read_agreement(kept), (
        f"{path} is stale: IREE now agrees with JAX differently; {iree.RECORD_COMMAND}"
    )
