"""What every `xla-inspect` subcommand shares: the `Command` record a subcommand is registered
as, the usage error and parser that turn bad input into one line, and reading an HLO file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.model import HloModule
from xla_inspect.parse import parse_hlo

__all__ = [
    "PROG",
    "Command",
    "UsageError",
    "UsageParser",
    "emit_json",
    "load",
    "read",
    "where",
]

PROG = "xla-inspect"


@dataclass(frozen=True)
class Command:
    """One subcommand: its name and one-line help, what adds its arguments to its parser, and
    what runs it (returning the exit code)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class UsageError(InspectError):
    """Bad command-line usage or input; `hint` says what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(f"{message} — {hint}")


class UsageParser(argparse.ArgumentParser):
    """An argument parser whose errors are `UsageError`s (one line, then what to do)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, f"see '{self.prog} --help'")


def read(path: str | Path) -> str:
    """The text of the file at `path`; a `UsageError` saying why when it cannot be read."""
    file = Path(path)
    if not file.exists():
        raise UsageError(f"{file}: no such file", "check the path")
    if file.is_dir():
        raise UsageError(f"{file}: is a directory", "pass one HLO text file")
    try:
        return file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file}: cannot read ({exc})", "pass an HLO text file") from exc


def load(path: str | Path, text: str | None = None) -> HloModule:
    """Parse the HLO file at `path` (its `text`, when already read)."""
    if text is None:
        text = read(path)
    try:
        return parse_hlo(text)
    except HloParseError as exc:
        raise UsageError(where(path, exc), "is this an HLO text file?") from exc


def where(path: object, exc: HloParseError) -> str:
    """`path:line:col: expected ...`, the form editors and terminals link to the spot."""
    col = f":{exc.col}" if exc.col is not None else ""
    return f"{path}:{exc.line_no}{col}: expected {exc.expected}"


def emit_json(data: Any) -> None:
    """Print `data` as indented JSON."""
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
