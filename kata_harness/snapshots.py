"""Snapshots of normalized IR, pinned per platform and per JAX version, side by side.

Layout: ``snapshots/<backend>-<machine>/jax-<jax version>/<test file path without .py>/<test
name>.txt``, and beside each test file's folder a record ``<test file stem>.versions.json`` of
the jax/jaxlib versions its snapshots were pinned with. Pinning one test file under one JAX
(``uv run pytest katas/phaseN --impl=reference --snapshot-update``) writes only that file's
snapshots and record: every other version's and phase's pins stay byte-identical.
Snapshots are written only from the reference (``--impl=reference --snapshot-update``).
"""

from __future__ import annotations

import difflib
import json
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .curriculum import ROOT

SNAPSHOTS_DIR = ROOT / "snapshots"
REPIN_COMMAND = "uv run pytest --impl=reference --snapshot-update"
RECORD_SUFFIX = ".versions.json"
_LOCKED_JAX = re.compile(r'^name = "jax"\nversion = "([^"]+)"', re.MULTILINE)


def platform_key() -> str:
    import jax

    return f"{jax.default_backend()}-{platform.machine()}"


def running_versions() -> dict[str, str]:
    import jax
    import jaxlib.version

    return {"jax": jax.__version__, "jaxlib": jaxlib.version.__version__}


def version_key() -> str:
    """The folder of the running JAX version's pins: ``jax-0.12.0.1``."""
    return f"jax-{running_versions()['jax']}"


def _relative(test_file: Path) -> Path:
    return Path(test_file).resolve().relative_to(ROOT).with_suffix("")


def snapshot_dir(key: str, test_file: Path) -> Path:
    return SNAPSHOTS_DIR / key / version_key() / _relative(test_file)


def record_file(key: str, test_file: Path) -> Path:
    relative = _relative(test_file)
    return SNAPSHOTS_DIR / key / version_key() / relative.parent / f"{relative.name}{RECORD_SUFFIX}"


def pinned_versions(key: str, test_file: Path) -> dict[str, str] | None:
    path = record_file(key, test_file)
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def record_versions(key: str, test_file: Path) -> None:
    """Record the running versions for ``test_file``'s pins (the file is left alone when it
    already says so, so re-pinning keeps it byte-identical)."""
    path = record_file(key, test_file)
    text = json.dumps(running_versions(), indent=2, sort_keys=True) + "\n"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _locked_jax() -> str | None:
    lock = ROOT / "uv.lock"
    match = _LOCKED_JAX.search(lock.read_text(encoding="utf-8")) if lock.is_file() else None
    return match[1] if match else None


def repin_command(test_files: list[str]) -> str:
    """The command that pins ``test_files`` (paths from the repo root) with the running JAX:
    ``--with`` names it when it is not the lock's."""
    running = running_versions()
    parts = ["uv run"]
    if running["jax"] != _locked_jax():
        parts.append(f"--with jax=={running['jax']} --with jaxlib=={running['jaxlib']}")
    parts.append("pytest")
    parts += test_files
    parts.append("--impl=reference --snapshot-update")
    return " ".join(parts)


def pinned_test_files(key: str) -> dict[str, list[str]]:
    """Per JAX version folder of platform ``key``, the test files (``katas/phase3/test_phase3.py``)
    with a record."""
    found: dict[str, list[str]] = {}
    for record in sorted((SNAPSHOTS_DIR / key).glob(f"jax-*/**/*{RECORD_SUFFIX}")):
        version_dir = record.relative_to(SNAPSHOTS_DIR / key).parts[0]
        relative = record.relative_to(SNAPSHOTS_DIR / key / version_dir)
        test_file = relative.parent / (relative.name.removesuffix(RECORD_SUFFIX) + ".py")
        found.setdefault(version_dir, []).append(test_file.as_posix())
    return found


@dataclass(frozen=True, slots=True)
class PinStatus:
    usable: bool
    message: str


def pin_status(key: str, test_file: Path) -> PinStatus:
    """Whether ``test_file``'s snapshots on platform ``key`` were pinned with the running JAX."""
    running = running_versions()
    pinned = pinned_versions(key, test_file)
    name = _relative(test_file).with_suffix(".py").as_posix()
    now = f"jax {running['jax']} / jaxlib {running['jaxlib']} on {key}"
    command = repin_command([name])
    if pinned is None:
        elsewhere = ", ".join(
            version.removeprefix("jax-")
            for version, files in pinned_test_files(key).items()
            if name in files
        )
        return PinStatus(
            False,
            f"{name}: no snapshots pinned for {now} (pinned for jax: {elsewhere or 'none'}); "
            f"pin them from the reference: {command}",
        )
    if pinned != running:
        return PinStatus(
            False,
            f"{name}: snapshots were pinned with jax {pinned.get('jax')} / jaxlib "
            f"{pinned.get('jaxlib')}, running {now}; re-pin them from the reference: {command}",
        )
    return PinStatus(True, "")


def header_lines() -> list[str]:
    """One line for the start of every run when some pinned test file has no pins for the
    running JAX: which files, what happens to their snapshot checks, and the command."""
    key = platform_key()
    pinned = pinned_test_files(key)
    every = sorted({name for files in pinned.values() for name in files})
    missing = [name for name in every if not pin_status(key, ROOT / name).usable]
    if not missing:
        return []
    elsewhere = [
        v.removeprefix("jax-") for v, files in sorted(pinned.items()) if set(files) & set(missing)
    ]
    return [
        f"katas: snapshots of {', '.join(missing)} are not pinned for jax "
        f"{running_versions()['jax']} on {key} (pinned for jax: "
        f"{', '.join(elsewhere)}): their snapshot checks "
        f"and the determinism tests that read them skip (fail with --impl=reference); pin "
        f"them: {repin_command(missing)}"
    ]


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
    def matches_test_location(cls, *, test_location, snapshot_location: str) -> bool:
        """A pin belongs to the test whose folder it sits in and whose name it has (syrupy's
        own rule expects the ``[reference]`` id in the name, and warns on every update)."""
        location = Path(snapshot_location)
        return location.parent == Path(cls.dirname(test_location=test_location)) and (
            location.stem.split(".")[0] == test_location.methodname
        )

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
