"""Every IREE flow listing a phase records (``FLOWS`` in its programs.py) is there, is read by
xla_inspect.iree, and still matches what IREE makes when the ``iree`` group is installed with
the versions it names; with ``--snapshot-update`` (reference mode) a stale or missing listing is
written again. The verdicts a phase records for its bank of functions (``VERDICTS``) are checked
against IREE the same way."""

from __future__ import annotations

import numpy as np
import pytest

from kata_harness import iree, recordings
from xla_inspect import iree_compile
from xla_inspect.iree import read_flow

FLOWS = [
    (phase, name, program)
    for phase, module in recordings.programs_with("FLOWS")
    for name, program in sorted(module.FLOWS.items())
]
BANKS = [
    (phase, name, module)
    for phase, module in recordings.programs_with("VERDICTS")
    for name in sorted(module.VERDICTS)
]


def _unavailable(doing: str) -> str | None:
    reason = iree.missing()
    return None if reason is None else f"cannot {doing} IREE: {reason}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("phase", "name", "program"), FLOWS, ids=[f"{p}/{n}" for p, n, _ in FLOWS])
def test_flow_listing_is_current(request, phase, name, program):
    path = iree.recorded_path(phase, name)

    def compare(kept: str, fresh: str) -> None:
        assert fresh == kept, (
            f"{path} is stale: IREE now makes another listing; {iree.RECORD_COMMAND}"
        )

    recordings.check_current(
        request,
        path,
        command=iree.RECORD_COMMAND,
        unavailable=_unavailable("check against"),
        running=iree_compile.versions,
        recorded_with=recordings.header_versions,
        make=lambda: iree.compile_flow(program),
        render=lambda text: text,
        compare=compare,
    )


@pytest.mark.parametrize(("phase", "name", "program"), FLOWS, ids=[f"{p}/{n}" for p, n, _ in FLOWS])
def test_flow_listing_reads(phase, name, program):
    path = iree.recorded_path(phase, name)
    text = recordings.recorded_or_skip(path, "test_flow_listing_is_current")
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
        # both verdicts from one export, as a phase's test asks for them (IREE's compile of the
        # same text is kept: no second compile)
        both = iree.verdicts(fn, args)
        assert both == (iree.export_verdict(fn, args), got), f"{phase} {name}: {both}"


AGREEMENTS = recordings.programs_with("ROUND_TRIPS")
AGREEMENT_FILE = "agreement"


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("phase", "module"), AGREEMENTS, ids=[p for p, _ in AGREEMENTS])
def test_agreement_is_current(request, phase, module):
    """The recorded worst disagreement between IREE and JAX on the phase's ROUND_TRIPS (seeded
    draws), measured again."""
    path = recordings.recorded_path(phase, AGREEMENT_FILE, ".txt")

    def compare(kept: str, fresh: str) -> None:
        assert iree.read_agreement(fresh) == iree.read_agreement(kept), (
            f"{path} is stale: IREE now agrees with JAX differently; {iree.RECORD_COMMAND}"
        )

    recordings.check_current(
        request,
        path,
        command=iree.RECORD_COMMAND,
        unavailable=_unavailable("measure with"),
        running=iree_compile.versions,
        recorded_with=recordings.header_versions,
        make=lambda: iree.agreement_table(module.ROUND_TRIPS),
        render=lambda text: text,
        compare=compare,
    )
