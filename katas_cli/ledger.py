"""The census ledger: the phases whose last honest census still holds, so CI reruns the others.

A phase's census verdict depends only on what its tests can read and on what runs them. ``keys``
hashes that per phase: every file git knows in the checkout (tracked, or new and not ignored),
except other phases' files, the tests outside katas/, documentation, benchmarks, CI scripts and
the census's own records; then the seed, the Python version, the machine and every installed
distribution with its version. ``katas dev check --record`` writes the key of each phase it found
honest to ``decoys/census-ledger.json``; ``katas dev check --changed`` runs the phases whose key
is not there, and one phase more drawn from the keys, so that a ledger which stops holding (a
verdict that changed while nothing it hashes did) shows up within a few landings.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import platform
import re
import subprocess
import sys
from pathlib import Path

from kata_harness import curriculum

PATH = curriculum.ROOT / "decoys" / "census-ledger.json"
_OWN_RECORDS = {"decoys/census-ledger.json", "decoys/redteam/catchers.json"}
_NOT_READ = re.compile(r"^(tests|bench|docs|\.ci)/|^[^/]*\.md$")
_PHASE = re.compile(r"(?:^|/)phase(\d+)(?=[/._]|$)")


def _files() -> list[str] | None:
    """The checkout's files git knows, or None without git (then nothing is skipped)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=curriculum.ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted({name for name in listed.decode().split("\0") if name})


@functools.cache
def _installed() -> tuple[str, ...]:
    """Every installed distribution with its version, read once per process (reading the
    metadata of about 130 distributions takes a tenth of a second or more)."""
    return tuple(
        sorted(
            f"{dist.metadata['Name']}=={dist.version}"
            for dist in importlib.metadata.distributions()
        )
    )


def _environment(seed: int | None) -> bytes:
    return json.dumps(
        [seed, list(sys.version_info[:3]), sys.platform, platform.machine(), list(_installed())]
    ).encode()


def _digest(paths: list[str]) -> bytes:
    whole = hashlib.sha256()
    for name in paths:
        path = Path(curriculum.ROOT, name)
        whole.update(name.encode() + b"\0")
        whole.update(path.read_bytes() if path.is_file() else b"(missing)")
        whole.update(b"\0")
    return whole.digest()


def keys(numbers: list[int], seed: int | None) -> dict[str, str] | None:
    """{phase name: key} for the phases ``numbers``; None when git cannot list the files."""
    files = _files()
    if files is None:
        return None
    shared, own = [], {n: [] for n in numbers}
    for name in files:
        if name in _OWN_RECORDS or _NOT_READ.search(name):
            continue
        found = _PHASE.search(name)
        if found is None:
            shared.append(name)
        elif int(found.group(1)) in own:
            own[int(found.group(1))].append(name)
    common = _environment(seed) + _digest(shared)
    return {
        f"phase{n}": hashlib.sha256(common + _digest(paths)).hexdigest() for n, paths in own.items()
    }


def load() -> dict[str, str]:
    """{phase name: key of its last honest census}; empty when missing or unreadable."""
    try:
        found = json.loads(PATH.read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}


def to_run(current: dict[str, str]) -> tuple[list[str], list[str]]:
    """(phases to run, phases whose recorded census holds): the changed ones, plus one unchanged
    phase drawn from the keys (the same checkout draws the same phase)."""
    recorded = load()
    changed = [name for name, key in current.items() if recorded.get(name) != key]
    held = [name for name in current if name not in changed]
    if held:
        draw = int(hashlib.sha256("".join(sorted(current.values())).encode()).hexdigest(), 16)
        changed.append(held.pop(draw % len(held)))
    return changed, held


def record(current: dict[str, str], honest: set[str]) -> int:
    """Write the keys of the ``honest`` phases of ``current``, drop the others' entries, keep
    phases not in ``current``; the number of keys written."""
    entries = load()
    for name, key in current.items():
        if name in honest:
            entries[name] = key
        else:
            entries.pop(name, None)
    ordered = dict(sorted(entries.items(), key=lambda kv: int(kv[0].removeprefix("phase"))))
    PATH.write_text(json.dumps(ordered, indent=1) + "\n")
    return sum(name in honest for name in current)
