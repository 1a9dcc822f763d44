"""The `xla-inspect` subcommands that read HLO files: `summary`, `diff` and `normalize`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xla_inspect._cli_common import Command, UsageError, emit_json, load, read
from xla_inspect.diff import diff_hlo, format_diff
from xla_inspect.normalize import normalize_hlo
from xla_inspect.summary import format_summary, summarize

__all__ = ["DIFF", "NORMALIZE", "SUMMARY"]


def _looks_like_hlo(path: Path) -> bool:
    try:
        with path.open() as handle:
            for line in handle:
                stripped = line.strip()
                if stripped and not stripped.startswith("//"):
                    return stripped.startswith("HloModule")
    except (OSError, UnicodeDecodeError):
        return False
    return False


def _summary_files(path: Path) -> list[Path]:
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory", "check the path")
    if path.is_file():
        return [path]
    optimized = sorted(path.glob("*after_optimizations.txt"))
    if optimized:
        return optimized
    files = sorted(p for p in path.iterdir() if p.suffix in (".txt", ".hlo") and p.is_file())
    found = [p for p in files if _looks_like_hlo(p)]
    if not found:
        raise UsageError(f"{path}: no HLO text files", "pass an HLO file or an XLA dump directory")
    return found


def _summary_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="HLO text file, or a directory of XLA dumps")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _summary(args: argparse.Namespace) -> int:
    files = _summary_files(Path(args.path))
    summaries = [(file, summarize(load(file))) for file in files]
    if args.json:
        emit_json({"modules": [{"file": str(f), **s.to_dict()} for f, s in summaries]})
    else:
        sys.stdout.write("\n".join(format_summary(s, title=str(f)) for f, s in summaries))
    return 0


def _diff_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", help="HLO before optimization (e.g. hlo.txt)")
    parser.add_argument("after", help="HLO after optimization (e.g. optimized_hlo.txt)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _diff(args: argparse.Namespace) -> int:
    diff = diff_hlo(load(args.before), load(args.after))
    if args.json:
        emit_json(diff.to_dict())
    else:
        sys.stdout.write(format_diff(diff))
    return 0


def _normalize_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="HLO text file")


def _normalize(args: argparse.Namespace) -> int:
    text = read(args.file)
    load(args.file, text)  # refuse text that is not HLO rather than echo it back
    sys.stdout.write(normalize_hlo(text))
    return 0


SUMMARY = Command(
    "summary", "summarize an HLO file or a dump directory", _summary_arguments, _summary
)
DIFF = Command("diff", "opcode changes from BEFORE to AFTER", _diff_arguments, _diff)
NORMALIZE = Command("normalize", "print deterministic HLO text", _normalize_arguments, _normalize)
