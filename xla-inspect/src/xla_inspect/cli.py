"""`xla-inspect`: the toolkit's verbs from the command line; this module registers the
subcommands and turns every error into one line and an exit code.

Exit codes: 0 ok (also `graph` without graphviz: it writes the .dot source and says how to
install graphviz), 1 a check failed (`passes --removed/--added` found no such pass), 2 bad usage
or bad input. Errors are one line on stderr saying what is wrong and what to do.
JAX is imported only by the `capture` and `profile` verbs, so the text verbs start fast.

A subcommand is a `Command` (`_cli_common`: name, help, its arguments, what runs it), kept in
a module of its own; adding one is adding it to `COMMANDS`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xla_inspect._cli_capture import CAPTURE
from xla_inspect._cli_common import PROG, Command, UsageError, UsageParser
from xla_inspect._cli_dumps import BLAME, PASSES
from xla_inspect._cli_graph import GRAPH
from xla_inspect._cli_profile import PROFILE
from xla_inspect._cli_reading import DIFF, NORMALIZE, SUMMARY
from xla_inspect.errors import InspectError
from xla_inspect.passes import DumpError

__all__ = ["COMMANDS", "main"]

#: The subcommands, in the order `--help` lists them.
COMMANDS: tuple[Command, ...] = (
    SUMMARY,
    DIFF,
    NORMALIZE,
    PASSES,
    BLAME,
    GRAPH,
    CAPTURE,
    PROFILE,
)


def _parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog=PROG, description="Inspect what JAX and XLA did to a program.")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=UsageParser)
    for command in COMMANDS:
        verb = verbs.add_parser(command.name, help=command.help)
        command.arguments(verb)
        verb.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; return the exit code (see the module docstring)."""
    try:
        args = _parser().parse_args(argv)
        return args.run(args)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except (UsageError, DumpError) as exc:  # their messages say what to do
        sys.stderr.write(f"{PROG}: error: {_one_line(exc)}\n")
    except InspectError as exc:
        sys.stderr.write(f"{PROG}: error: {_one_line(exc)} — check the input\n")
    except OSError as exc:
        sys.stderr.write(f"{PROG}: error: {_one_line(exc)} — check the path and permissions\n")
    return 2


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
