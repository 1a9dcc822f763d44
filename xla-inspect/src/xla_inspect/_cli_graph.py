"""The `xla-inspect graph` subcommand: the fusion graph of an HLO file as SVG (or `.dot`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xla_inspect._cli_common import PROG, Command, load, read
from xla_inspect.graph import INSTALL_HINT, fusion_graph, save_graph

__all__ = ["GRAPH"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="HLO text file (optimized HLO shows the fusions)")
    parser.add_argument("--out", metavar="PATH.svg", help="SVG to write (default: FILE.svg)")
    parser.add_argument("--fused", action="store_true", help="draw the fused computations too")


def _graph(args: argparse.Namespace) -> int:
    source = Path(args.file)
    svg = Path(args.out) if args.out else source.with_suffix(".svg")
    text = read(source)
    graph = fusion_graph(load(source, text), text=text, fused=args.fused)
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


GRAPH = Command(
    "graph",
    "draw the fusion graph of an HLO file as SVG, a cluster per computation",
    _arguments,
    _graph,
)
