"""The ``hlo_snapshot`` fixture: a test's normalized HLO against its pinned text.

What is pinned where, and when a pin is stale, is :mod:`.snapshots`' business; this fixture
decides per run (learner, reference, stub, re-pin) whether to compare, skip with the re-pin
command, or record.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import curriculum, snapshots
from .variants import Variant


@pytest.fixture
def hlo_snapshot(request: pytest.FixtureRequest, snapshot):
    """Assert text (already normalized) against the pinned snapshot of this test."""
    callspec = getattr(request.node, "callspec", None)
    variant: Variant = callspec.params["kata"] if callspec else Variant("katas")
    key = snapshots.platform_key()
    status = snapshots.pin_status(key, Path(request.node.path))
    updating = bool(request.config.option.update_snapshots)
    calls = [0]  # syrupy names the n-th snapshot of a test "<test>.n" (the first has no suffix)

    def check(text: str) -> None:
        __tracebackhide__ = True
        action, message = snapshots.decide(variant.kind, updating, status)
        if action == "fail":
            pytest.fail(message, pytrace=False)
        if action == "skip":
            pytest.skip(message)
        if action == "update":
            snapshots.record_versions(key, Path(request.node.path))
        if action in ("update", "syrupy"):
            assert snapshot(extension_class=snapshots.NormalizedHloExtension) == text
            return
        index, calls[0] = calls[0], calls[0] + 1
        directory = snapshots.snapshot_dir(key, Path(request.node.path))
        suffix = f".{index}" if index else ""
        pinned = directory / f"{request.node.originalname}{suffix}.txt"
        if not pinned.is_file():
            pytest.skip(f"no snapshot pinned at {pinned.relative_to(curriculum.ROOT)}")
        snapshots.compare_with_pinned(pinned, text)

    return check
