"""The `xla-inspect` subcommands that read a per-pass dump directory: `passes` and `blame`."""

from __future__ import annotations

import argparse
import sys

from xla_inspect._cli_common import PROG, Command, UsageError, emit_json
from xla_inspect.blame import BlameError, blame, format_blame
from xla_inspect.passes import first_pass_adding, first_pass_removing, pass_timeline

__all__ = ["BLAME", "PASSES"]


def _passes_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dump_dir", help="directory written with per-pass dumps")
    parser.add_argument("--module", help="module name, module_<id>.<name> prefix, or id")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--removed", metavar="OPCODE", help="first pass removing OPCODE")
    which.add_argument("--added", metavar="OPCODE", help="first pass adding OPCODE")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _passes(args: argparse.Namespace) -> int:
    timeline = pass_timeline(args.dump_dir, args.module)
    if args.removed or args.added:
        opcode = args.removed or args.added
        finder = first_pass_removing if args.removed else first_pass_adding
        step = finder(timeline, opcode)
        verb = "removed" if args.removed else "added"
        if args.json:
            emit_json({"opcode": opcode, verb: step.to_dict() if step else None})
        elif step is None:
            sys.stdout.write(f"no pass {verb} {opcode}\n")
        else:
            delta = abs(step.opcode_deltas[opcode])
            sys.stdout.write(
                f"{step.pipeline}/{step.pass_name} (#{step.seq}) {verb} {delta} {opcode}\n"
            )
        return 0 if step else 1
    if args.json:
        emit_json({"passes": [step.to_dict() for step in timeline]})
        return 0
    for step in timeline:
        deltas = ", ".join(f"{op} {n:+d}" for op, n in step.opcode_deltas.items()) or "no count"
        sys.stdout.write(
            f"#{step.seq:<5} {step.pipeline}/{step.pass_name}: "
            f"{step.instructions_before} -> {step.instructions_after} ({deltas})\n"
        )
    return 0


def _blame_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dump_dir", help="directory written with per-pass dumps")
    parser.add_argument("name", help="instruction name in the unoptimized or optimized module")
    parser.add_argument("--module", help="module name, module_<id>.<name> prefix, or id")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _blame(args: argparse.Namespace) -> int:
    try:
        result = blame(args.dump_dir, args.name, args.module)
    except BlameError as exc:
        raise UsageError(str(exc), f"run '{PROG} passes {args.dump_dir}' to see the files") from exc
    if args.json:
        emit_json(result.to_dict())
    else:
        sys.stdout.write(format_blame(result))
    return 0


PASSES = Command(
    "passes", "passes that changed the module, from a dump", _passes_arguments, _passes
)
BLAME = Command(
    "blame",
    "which pass created, removed or absorbed instruction NAME, from a dump",
    _blame_arguments,
    _blame,
)
