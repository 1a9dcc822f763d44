"""`xla-inspect`: the toolkit's verbs from the command line.

Exit codes: 0 ok (also `graph` without graphviz: it writes the .dot source and says how to
install graphviz), 1 a check failed (`passes --removed/--added` found no such pass), 2 bad usage
or bad input. Errors are one line on stderr saying what is wrong and what to do.
JAX is imported only by the `capture` verb, so the text verbs start fast.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from xla_inspect import targets
from xla_inspect.blame import BlameError, blame, format_blame
from xla_inspect.diff import diff_hlo, format_diff
from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.graph import INSTALL_HINT, fusion_graph, save_graph
from xla_inspect.model import HloModule
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.passes import DumpError, first_pass_adding, first_pass_removing, pass_timeline
from xla_inspect.profile_cli import add_profile_verb
from xla_inspect.summary import format_summary, summarize
from xla_inspect.targets import TARGETS

__all__ = ["main"]

PROG = "xla-inspect"
_DTYPES = {
    "pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
    "bf16": "bfloat16", "f32": "float32", "f64": "float64", "c64": "complex64",
    "c128": "complex128",
}  # fmt: skip
_ARG_SPEC = re.compile(r"([a-z0-9]+)\[((?:\d+(?:,\d+)*)?)\]")


class UsageError(InspectError):
    """Bad command-line usage or input; `hint` says what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(f"{message} — {hint}")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, f"see '{self.prog} --help'")


def _read(path: str | Path) -> str:
    file = Path(path)
    if not file.exists():
        raise UsageError(f"{file}: no such file", "check the path")
    if file.is_dir():
        raise UsageError(f"{file}: is a directory", "pass one HLO text file")
    try:
        return file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file}: cannot read ({exc})", "pass an HLO text file") from exc


def _load(path: str | Path, text: str | None = None) -> HloModule:
    """Parse the HLO file at `path` (its `text`, when already read)."""
    if text is None:
        text = _read(path)
    try:
        return parse_hlo(text)
    except HloParseError as exc:
        raise UsageError(_where(path, exc), "is this an HLO text file?") from exc


def _where(path: object, exc: HloParseError) -> str:
    """`path:line:col: expected ...`, the form editors and terminals link to the spot."""
    col = f":{exc.col}" if exc.col is not None else ""
    return f"{path}:{exc.line_no}{col}: expected {exc.expected}"


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


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _summary(args: argparse.Namespace) -> int:
    files = _summary_files(Path(args.path))
    summaries = [(file, summarize(_load(file))) for file in files]
    if args.json:
        _emit_json({"modules": [{"file": str(f), **s.to_dict()} for f, s in summaries]})
    else:
        sys.stdout.write("\n".join(format_summary(s, title=str(f)) for f, s in summaries))
    return 0


def _diff(args: argparse.Namespace) -> int:
    diff = diff_hlo(_load(args.before), _load(args.after))
    if args.json:
        _emit_json(diff.to_dict())
    else:
        sys.stdout.write(format_diff(diff))
    return 0


def _normalize(args: argparse.Namespace) -> int:
    text = _read(args.file)
    _load(args.file, text)  # refuse text that is not HLO rather than echo it back
    sys.stdout.write(normalize_hlo(text))
    return 0


def _passes(args: argparse.Namespace) -> int:
    timeline = pass_timeline(args.dump_dir, args.module)
    if args.removed or args.added:
        opcode = args.removed or args.added
        finder = first_pass_removing if args.removed else first_pass_adding
        step = finder(timeline, opcode)
        verb = "removed" if args.removed else "added"
        if args.json:
            _emit_json({"opcode": opcode, verb: step.to_dict() if step else None})
        elif step is None:
            sys.stdout.write(f"no pass {verb} {opcode}\n")
        else:
            delta = abs(step.opcode_deltas[opcode])
            sys.stdout.write(
                f"{step.pipeline}/{step.pass_name} (#{step.seq}) {verb} {delta} {opcode}\n"
            )
        return 0 if step else 1
    if args.json:
        _emit_json({"passes": [step.to_dict() for step in timeline]})
        return 0
    for step in timeline:
        deltas = ", ".join(f"{op} {n:+d}" for op, n in step.opcode_deltas.items()) or "no count"
        sys.stdout.write(
            f"#{step.seq:<5} {step.pipeline}/{step.pass_name}: "
            f"{step.instructions_before} -> {step.instructions_after} ({deltas})\n"
        )
    return 0


def _blame(args: argparse.Namespace) -> int:
    try:
        result = blame(args.dump_dir, args.name, args.module)
    except BlameError as exc:
        raise UsageError(str(exc), f"run '{PROG} passes {args.dump_dir}' to see the files") from exc
    if args.json:
        _emit_json(result.to_dict())
    else:
        sys.stdout.write(format_blame(result))
    return 0


def _graph(args: argparse.Namespace) -> int:
    source = Path(args.file)
    svg = Path(args.out) if args.out else source.with_suffix(".svg")
    text = _read(source)
    graph = fusion_graph(_load(source, text), text=text, fused=args.fused)
    if graph.note:
        sys.stderr.write(f"{PROG}: {graph.note}\n")
    path, is_svg = save_graph(graph.dot, svg)
    if not is_svg:
        sys.stderr.write(
            f"{PROG}: graphviz's `dot` is not installed, so wrote the graph source instead; "
            f"{INSTALL_HINT}, then: dot -Tsvg {path} -o {svg}\n"
        )
    sys.stdout.write(f"{path}\n")
    return 0


_SPEC_HINT = (
    "write [NAME=]DTYPE[DIMS] (f32[8,16], s32[]) for an array or [NAME=]LITERAL (3, 0.5, True, "
    f"'mean') for a static value; DTYPE is one of {', '.join(_DTYPES)}"
)


@dataclass(frozen=True)
class _Spec:
    """One `--arg`: its keyword name (None: positional), its value, and whether it is static."""

    name: str | None
    value: Any
    static: bool


def _parse_spec(spec: str) -> _Spec:
    """`[NAME=]DTYPE[DIMS]` is an array placeholder, `[NAME=]LITERAL` a static Python value."""
    import jax
    import jax.numpy as jnp

    name, sep, value = spec.partition("=")
    if not sep or not name.strip().isidentifier():
        name, value = "", spec
    text = value.replace(" ", "")
    shaped = re.fullmatch(r"(\w+)\[(.*)\]", text)
    if shaped:
        match = _ARG_SPEC.fullmatch(text)
        if not match or match.group(1) not in _DTYPES:
            raise UsageError(f"bad --arg {spec!r}", _SPEC_HINT)
        dims = tuple(int(d) for d in match.group(2).split(",")) if match.group(2) else ()
        struct = jax.ShapeDtypeStruct(dims, jnp.dtype(_DTYPES[match.group(1)]))
        return _Spec(name.strip() or None, struct, static=False)
    try:
        literal = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise UsageError(f"bad --arg {spec!r}", _SPEC_HINT) from exc
    return _Spec(name.strip() or None, literal, static=True)


def _call_args(
    specs: list[str], args_from: str | None
) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
    """Positional args, keyword args and the jit options that mark the static ones."""
    if args_from is not None:
        if specs:
            raise UsageError("--arg and --args-from together", "give the arguments one way")
        built = _import_function(args_from)
        try:
            result = built() if callable(built) else None
        except Exception as exc:  # anything the user's builder raises is bad input here
            raise UsageError(
                f"--args-from {args_from} raised {type(exc).__name__}: {exc}", "fix the builder"
            ) from exc
        if not (
            isinstance(result, tuple)
            and len(result) == 2
            and isinstance(result[0], (tuple, list))
            and isinstance(result[1], dict)
        ):
            raise UsageError(
                f"--args-from {args_from} gave {type(result).__name__}",
                "return (args, kwargs): a tuple or list of example arrays or ShapeDtypeStructs "
                "(pytrees too) and a dict of keyword arguments",
            )
        return tuple(result[0]), dict(result[1]), {}
    parsed = [_parse_spec(spec) for spec in specs]
    positional = [p for p in parsed if p.name is None]
    keywords = {p.name: p.value for p in parsed if p.name is not None}
    if len(keywords) != len(parsed) - len(positional):
        raise UsageError("the same keyword in two --arg", "give each NAME= once")
    options = {
        "static_argnums": tuple(i for i, p in enumerate(positional) if p.static),
        "static_argnames": tuple(p.name for p in parsed if p.name is not None and p.static),
    }
    return tuple(p.value for p in positional), keywords, options


def _import_function(target: str) -> Any:
    module_name, sep, attribute = target.rpartition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"bad target {target!r}", "write MODULE:FUNCTION, e.g. pkg.mod:f")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if spec is None or spec.loader is None or not Path(module_name).is_file():
                raise FileNotFoundError(module_name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        function: Any = module
        for part in attribute.split("."):
            function = getattr(function, part)
    except Exception as exc:  # anything the imported code raises is bad input here
        raise UsageError(
            f"cannot import {target}: {type(exc).__name__}: {exc}",
            "check the module path and function name",
        ) from exc
    return function


def _capture(args: argparse.Namespace) -> int:
    if Path(args.source).suffix in (".hlo", ".mlir", ".txt") and ":" not in args.source:
        return _capture_file(args)
    if args.target is not None:
        try:
            target = targets.get(args.target)
        except targets.TargetError as exc:
            raise UsageError(str(exc), "pick a name from xla-inspect capture --help") from exc
        missing = target.missing()
        if missing is not None:
            raise UsageError(missing, "install the group, then run this again")
        targets.prepare_environment()  # before JAX starts its backends (_call_args imports it)
    positional, keywords, options = _call_args(args.arg, args.args_from)
    function = _import_function(args.source)
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
            _where(args.source, exc),
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Inspect what JAX and XLA did to a program.")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    summary = verbs.add_parser("summary", help="summarize an HLO file or a dump directory")
    summary.add_argument("path", help="HLO text file, or a directory of XLA dumps")
    summary.add_argument("--json", action="store_true", help="print JSON")
    summary.set_defaults(run=_summary)

    diff = verbs.add_parser("diff", help="opcode changes from BEFORE to AFTER")
    diff.add_argument("before", help="HLO before optimization (e.g. hlo.txt)")
    diff.add_argument("after", help="HLO after optimization (e.g. optimized_hlo.txt)")
    diff.add_argument("--json", action="store_true", help="print JSON")
    diff.set_defaults(run=_diff)

    normalize = verbs.add_parser("normalize", help="print deterministic HLO text")
    normalize.add_argument("file", help="HLO text file")
    normalize.set_defaults(run=_normalize)

    passes = verbs.add_parser("passes", help="passes that changed the module, from a dump")
    passes.add_argument("dump_dir", help="directory written with per-pass dumps")
    passes.add_argument("--module", help="module name, module_<id>.<name> prefix, or id")
    which = passes.add_mutually_exclusive_group()
    which.add_argument("--removed", metavar="OPCODE", help="first pass removing OPCODE")
    which.add_argument("--added", metavar="OPCODE", help="first pass adding OPCODE")
    passes.add_argument("--json", action="store_true", help="print JSON")
    passes.set_defaults(run=_passes)

    blame = verbs.add_parser(
        "blame", help="which pass created, removed or absorbed instruction NAME, from a dump"
    )
    blame.add_argument("dump_dir", help="directory written with per-pass dumps")
    blame.add_argument("name", help="instruction name in the unoptimized or optimized module")
    blame.add_argument("--module", help="module name, module_<id>.<name> prefix, or id")
    blame.add_argument("--json", action="store_true", help="print JSON")
    blame.set_defaults(run=_blame)

    graph = verbs.add_parser(
        "graph", help="draw the fusion graph of an HLO file as SVG, a cluster per computation"
    )
    graph.add_argument("file", help="HLO text file (optimized HLO shows the fusions)")
    graph.add_argument("--out", metavar="PATH.svg", help="SVG to write (default: FILE.svg)")
    graph.add_argument("--fused", action="store_true", help="draw the fused computations too")
    graph.set_defaults(run=_graph)

    capture = verbs.add_parser(
        "capture", help="capture every stage of MODULE:FUNCTION (or of a .hlo/.mlir file)"
    )
    capture.add_argument(
        "source",
        metavar="WHAT",
        help="MODULE:FUNCTION (dotted module or path/to/file.py), or a .hlo/.txt/.mlir file",
    )
    capture.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="SPEC",
        help="one argument, in order: f32[8,16] (an array), x=f32[8,16] (a keyword), n=3 or 3 "
        "(a static Python value); f64/s64/c128 need JAX_ENABLE_X64=1",
    )
    capture.add_argument(
        "--args-from",
        metavar="FILE.py:FN",
        help="FN() returns (args, kwargs) of example arrays or ShapeDtypeStructs (pytrees too)",
    )
    capture.add_argument("--out", required=True, help="directory to write into")
    capture.add_argument("--passes", action="store_true", help="also dump one file per pass")
    capture.add_argument(
        "--target",
        metavar="NAME",
        help="compile for this chip without the hardware: "
        + ", ".join(TARGETS)
        + " (TPU/GPU need uv sync --group tpu / gpu); default: this machine",
    )
    capture.set_defaults(run=_capture)
    add_profile_verb(verbs)
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
