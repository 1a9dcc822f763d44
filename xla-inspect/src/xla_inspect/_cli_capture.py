"""The `xla-inspect capture` subcommand: capture every stage of `MODULE:FUNCTION` (or of a
`.hlo`/`.mlir` file) and write each stage's text into a directory. The only subcommand that
imports JAX, and only when it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xla_inspect._cli_args import call_args, import_function
from xla_inspect._cli_common import Command, UsageError, where
from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.targets import TARGETS, TargetError, prepare_environment
from xla_inspect.targets import get as get_target

__all__ = ["CAPTURE"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        metavar="WHAT",
        help="MODULE:FUNCTION (dotted module or path/to/file.py), or a .hlo/.txt/.mlir file",
    )
    parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="SPEC",
        help="one argument, in order: f32[8,16] (an array), x=f32[8,16] (a keyword), n=3 or 3 "
        "(a static Python value); f64/s64/c128 need JAX_ENABLE_X64=1",
    )
    parser.add_argument(
        "--args-from",
        metavar="FILE.py:FN",
        help="FN() returns (args, kwargs) of example arrays or ShapeDtypeStructs (pytrees too)",
    )
    parser.add_argument("--out", required=True, help="directory to write into")
    parser.add_argument("--passes", action="store_true", help="also dump one file per pass")
    parser.add_argument(
        "--target",
        metavar="NAME",
        help="compile for this chip without the hardware: "
        + ", ".join(TARGETS)
        + " (TPU/GPU need uv sync --group tpu / gpu); default: this machine",
    )


def _capture(args: argparse.Namespace) -> int:
    if Path(args.source).suffix in (".hlo", ".mlir", ".txt") and ":" not in args.source:
        return _capture_file(args)
    if args.target is not None:
        try:
            target = get_target(args.target)
        except TargetError as exc:
            raise UsageError(str(exc), "pick a name from xla-inspect capture --help") from exc
        missing = target.missing()
        if missing is not None:
            raise UsageError(missing, "install the group, then run this again")
        prepare_environment()  # before JAX starts its backends (call_args imports it)
    positional, keywords, options = call_args(args.arg, args.args_from)
    function = import_function(args.source)
    from xla_inspect.capture import capture

    if callable(getattr(function, "lower", None)):
        options = {}  # a jit wrapper (jax, flax.nnx, equinox) fixed its static arguments itself
    out = Path(args.out)
    try:
        captured = capture(
            function,
            *positional,
            dump_dir=out,
            dump_passes=args.passes,
            target=args.target,
            **options,
            **keywords,
        )
    except InspectError as exc:
        raise UsageError(f"capturing {args.source} failed: {exc}", "check the --arg specs") from exc
    written = {
        "jaxpr.txt": None if captured.jaxpr is None else f"{captured.jaxpr}\n",
        "stablehlo.mlir": captured.stablehlo_text,
        "hlo.txt": captured.hlo_text,
        "optimized_hlo.txt": captured.optimized_hlo_text,
        "cost.json": json.dumps(dict(captured.cost_analysis), indent=2, sort_keys=True) + "\n",
        "memory.json": json.dumps(dict(captured.memory_analysis), indent=2) + "\n",
    }
    names = _write(out, written)
    sys.stdout.write(
        f"captured {args.source} into {out}: {', '.join(names)} "
        f"and XLA dumps ({captured.dump_module})\n"
    )
    return 0


def _capture_file(args: argparse.Namespace) -> int:
    if args.arg or args.args_from or args.passes or args.target:
        raise UsageError(
            f"{args.source} is an IR file: it takes no --arg, --args-from, --passes or --target",
            "pass MODULE:FUNCTION to capture a function with arguments",
        )
    from xla_inspect.capture import capture_ir

    if not Path(args.source).is_file():
        raise UsageError(f"{args.source}: no such file", "check the path")
    try:
        held = capture_ir(args.source)
    except HloParseError as exc:
        raise UsageError(
            where(args.source, exc),
            "a .hlo or .txt file holds HLO text; StableHLO goes in a .mlir file",
        ) from exc
    except InspectError as exc:
        raise UsageError(f"capturing {args.source} failed: {exc}", "check the file") from exc
    compiled = held.optimized_hlo_text is not None
    written = {
        "stablehlo.mlir": held.stablehlo_text,
        "hlo.txt": held.hlo_text,
        "optimized_hlo.txt": held.optimized_hlo_text,
        "cost.json": json.dumps(dict(held.cost_analysis), indent=2, sort_keys=True) + "\n",
        "memory.json": json.dumps(dict(held.memory_analysis), indent=2) + "\n",
    }
    if not compiled:
        written["cost.json"] = written["memory.json"] = None
    out = Path(args.out)
    names = _write(out, written)
    sys.stdout.write(f"captured {args.source} into {out}: {', '.join(names)}\n")
    return 0


def _write(out: Path, texts: dict[str, str | None]) -> list[str]:
    """Write each text that is there into `out`; return the names written."""
    out.mkdir(parents=True, exist_ok=True)
    names = [name for name, text in texts.items() if text is not None]
    for name in names:
        (out / name).write_text(texts[name] or "")
    return names


CAPTURE = Command(
    "capture",
    "capture every stage of MODULE:FUNCTION (or of a .hlo/.mlir file)",
    _arguments,
    _capture,
)
