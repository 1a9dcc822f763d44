"""Compiler output kept in a phase's ``recorded/`` folder: where a recording lives, reading it,
and the versions its header names (``// versions: ...``), shared by the XLA and IREE recordings.
"""

from __future__ import annotations

from pathlib import Path

from . import curriculum

VERSIONS_LINE = "// versions: "


def recorded_path(phase: str, name: str, suffix: str) -> Path:
    """``katas/<phase>/recorded/<name><suffix>``."""
    return curriculum.KATAS_DIR / phase / curriculum.RECORDED_DIR / f"{name}{suffix}"


def read_recorded(path: Path, command: str) -> str:
    """The text of recording ``path``, or FileNotFoundError naming ``command`` that records it."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: record it with {command}")
    return path.read_text(encoding="utf-8")


def header_versions(text: str) -> str | None:
    """The versions a recorded text names in its header (the ``//`` lines that lead it)."""
    for line in text.splitlines():
        if line.startswith(VERSIONS_LINE):
            return line.removeprefix(VERSIONS_LINE)
        if not line.startswith("//"):
            break
    return None
