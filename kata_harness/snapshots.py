"""Snapshots of normalized IR, pinned per platform and per JAX version.

Layout: ``snapshots/<backend>-<machine>/<test file path without .py>/<test name>.txt`` plus one
``versions.json`` per platform that records the jax/jaxlib versions the snapshots were pinned with.
Snapshots are written only from the reference (``--impl=reference --snapshot-update``).
"""

from __future__ import annotations

import difflib
import json
import platform
from dataclasses import dataclass
from pathlib import Path

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .curriculum import ROOT

SNAPSHOTS_DIR = ROOT / "snapshots"
REPIN_COMMAND = "uv run pytest --impl=reference --snapshot-update"


def platform_key() -> str:
    import jax

    return f"{jax.default_backend()}-{platform.machine()}"


def running_versions() -> dict[str, str]:
    import jax
    import jaxlib.version

    return {"jax": jax.__version__, "jaxlib": jaxlib.version.__version__}


def versions_file(key: str) -> Path:
    return SNAPSHOTS_DIR / key / "versions.json"


def pinned_versions(key: str) -> dict[str, str] | None:
    path = versions_file(key)
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def record_versions(key: str) -> None:
    path = versions_file(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(running_versions(), indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True, slots=True)
class PinStatus:
    usable: bool
    message: str


def pin_status(key: str) -> PinStatus:
    """Whether the snapshots of platform ``key`` were pinned with the running JAX."""
    running = running_versions()
    pinned = pinned_versions(key)
    now = f"jax {running['jax']} / jaxlib {running['jaxlib']} on {key}"
    if pinned is None:
        elsewhere = (
            ", ".join(
                f"{path.parent.name} with jax {json.loads(path.read_text()).get('jax')}"
                for path in sorted(SNAPSHOTS_DIR.glob("*/versions.json"))
            )
            or "no platform"
        )
        return PinStatus(
            False,
            f"no snapshots are pinned for {key} (running {now}; pinned: "
            f"{elsewhere}); pin them from the reference: {REPIN_COMMAND}",
        )
    if pinned != running:
        return PinStatus(
            False,
            f"snapshots were pinned with jax {pinned.get('jax')} / jaxlib "
            f"{pinned.get('jaxlib')}, running {now}; "
            f"re-pin them from the reference: {REPIN_COMMAND}",
        )
    return PinStatus(True, "")


def decide(kind: str, updating: bool, status: PinStatus) -> tuple[str, str]:
    """What one snapshot assertion does, and why.

    ``kind`` is the variant (katas, reference, stub, decoy). Returns ``("update" | "syrupy" |
    "compare" | "skip" | "fail", message)``: only the reference ever writes; a missing or stale
    pin skips in kata mode and fails in reference mode; stubs and decoys compare read-only.
    """
    if updating:
        return ("update", "") if kind == "reference" else ("compare", "")
    if not status.usable:
        return ("fail", status.message) if kind == "reference" else ("skip", status.message)
    return ("syrupy", "") if kind in ("reference", "katas") else ("compare", "")


def snapshot_dir(key: str, test_file: Path) -> Path:
    relative = Path(test_file).resolve().relative_to(ROOT).with_suffix("")
    return SNAPSHOTS_DIR / key / relative


class NormalizedHloExtension(SingleFileSnapshotExtension):
    """One text file per test under the top-level ``snapshots/`` folder, keyed by platform.

    The name ignores the honest-kata variant (``[reference]``), so every variant of a test reads
    the same pinned file.
    """

    _write_mode = WriteMode.TEXT
    file_extension = "txt"

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(snapshot_dir(platform_key(), Path(test_location.filepath)))

    @classmethod
    def get_snapshot_name(cls, *, test_location, index=0) -> str:
        suffix = f".{index}" if index else ""
        return f"{test_location.methodname}{suffix}"


def compare_with_pinned(path: Path, actual: str) -> None:
    """Compare without syrupy (used for stub and decoy variants, which must never write)."""
    expected = path.read_text(encoding="utf-8")
    if expected == actual:
        return
    diff = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "pinned", "actual", lineterm="", n=1
    )
    lines = list(diff)
    shown = "\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")
    raise AssertionError(f"normalized HLO differs from the pinned snapshot {path.name}:\n{shown}")
