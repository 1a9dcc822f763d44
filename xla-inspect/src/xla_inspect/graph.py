"""The fusion graph of an HLO module, as Graphviz `dot` text and, with graphviz, as SVG: the
one entry point that puts the graph's parts together.

`fusion_graph` draws every computation of a module: the ENTRY, while bodies and conditions,
called computations and reducers (the fused computations too with `fused=True`), each as a
cluster, and inside a computation one sub-cluster per JAX name scope (the first scope of the op
metadata's `op_name`, `jit(f)/transpose(jvp(layer_3))/...` -> `layer_3 (backward)`). A node is
one instruction; a fusion is a box naming its `query.Fusion` label (`kLoop`,
`kCustom(__ynn_fusion)`) and the opcodes it absorbed; parameters and constants are ellipses.
Every node shows its output bytes and its flops (both from shapes, see `instruction_flops`; a
caller may pass its own flops instead), and the source line of its op metadata
(`source_file`/`source_line`, or the module's stack-frame tables through `stack_frame_id`).
Edges are operands; a dashed edge goes from a caller to the computation it calls.

Large modules stay drawable: a parameter or constant used in several clusters is drawn once per
cluster, and while over a node/edge budget the graph sheds detail, largest first: computations
that reduce, sort or scatter apply (and fused computations drawn with `fused=True`) are left
out, then name-scope clusters are collapsed into one summary node each, then whole computations,
then computations are left out (never the entry); `FusionGraph.note` and the graph's title say
what went. The text is deterministic: it depends on the module text alone.

It works on text alone (no JAX). `render_svg` runs graphviz's `dot` program and raises
`GraphvizMissing` when there is none; `save_graph` writes the SVG, or the `.dot` source beside
it when graphviz is missing.

The parts, each in its own module: `_graph_layout` (which cluster each instruction goes in),
`_graph_labels` (what a node says), `_graph_draw` (the `dot` lines), `_graph_budget` (what to
collapse or leave out), `_flops` (flops from shapes) and `_graphviz` (running `dot`); the name
scopes and source lines come from the public `op_metadata`, which the profile reads too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xla_inspect._flops import instruction_flops
from xla_inspect._graph_budget import fit
from xla_inspect._graph_draw import Drawing
from xla_inspect._graph_labels import listed, quote
from xla_inspect._graph_layout import lay_out
from xla_inspect._graphviz import INSTALL_HINT, GraphvizMissing, render_svg, save_graph
from xla_inspect.model import HloModule
from xla_inspect.op_metadata import frame_tables
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fused_computation_names, fusions

__all__ = [
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_NODES",
    "INSTALL_HINT",
    "FusionGraph",
    "GraphvizMissing",
    "fusion_graph",
    "fusion_graph_dot",
    "instruction_flops",
    "render_svg",
    "save_graph",
]

#: Beyond these many drawn nodes or edges, clusters are collapsed: on this project's 2-core
#: machine `dot` lays out 106 nodes / 289 edges of a transformer gradient in under a second,
#: 151 / 392 in 2 s, and the whole 460 / 1,634 in 100 s.
DEFAULT_MAX_NODES = 150
DEFAULT_MAX_EDGES = 300


@dataclass(frozen=True, slots=True)
class FusionGraph:
    """A drawn module: the `dot` text and what it holds.

    - `computations`: the computations drawn, in module order, each a cluster.
    - `clusters`: the name-scope clusters drawn (`computation/scope`), collapsed ones included.
    - `collapsed`: the clusters (`computation/scope`, or a computation's name) drawn as one
      summary node because the graph was over its budget; empty when nothing was collapsed.
    - `nodes`, `edges`: how many the `dot` text has.
    - `note`: one line saying what was collapsed and why ("" when nothing was).
    """

    dot: str
    computations: tuple[str, ...]
    clusters: tuple[str, ...]
    collapsed: tuple[str, ...]
    nodes: int
    edges: int
    note: str


def fusion_graph(
    hlo: str | HloModule,
    *,
    title: str = "",
    fused: bool = False,
    flops: Mapping[str, float] | None = None,
    text: str = "",
    max_nodes: int = DEFAULT_MAX_NODES,
    max_edges: int = DEFAULT_MAX_EDGES,
) -> FusionGraph:
    """Draw `hlo` (HLO text or a parsed module); see the module docstring.

    `fused` draws the fused computations too; `flops` maps instruction names to the flops shown
    on their nodes (default: `instruction_flops` of the module). Source lines through
    `stack_frame_id` need the module text, for its stack-frame tables (a parsed module keeps
    none): pass it as `text` with a parsed module; `source_file`/`source_line` metadata work
    on both.
    """
    text = hlo if isinstance(hlo, str) else text
    module = parse_hlo(hlo) if isinstance(hlo, str) else hlo
    frames = frame_tables(text) if "StackFrames" in text else {}
    flops = instruction_flops(module) if flops is None else flops
    fused_names = fused_computation_names(module)
    drawn = [c for c in module.computations if fused or c.name not in fused_names]
    by_name = {(f.computation, f.name): f for f in fusions(module)}
    layout = lay_out(module, drawn, fused, fused_names)
    graph = fit(Drawing(layout, by_name, flops, frames), max_nodes, max_edges)

    left_out = [drawn[c].name for c in sorted(graph.omitted)]
    names = [
        f"{drawn[c].name}/{s}" if s else drawn[c].name
        for c, s in sorted(graph.collapsed)
        if c not in graph.omitted
    ]
    clusters = tuple(f"{drawn[c].name}/{s}" for c, s in layout.units if s)
    said = []
    if left_out:
        said.append(f"left out {len(left_out)} of {len(drawn)} computations: {listed(left_out)}")
    if names:
        said.append(f"collapsed {len(names)} clusters into one node each: {listed(names)}")
    note = ""
    if said:
        note = f"{'; '.join(said)} (over the budget of {max_nodes} nodes / {max_edges} edges)"
    heading = "\n".join(filter(None, [title or module.name, note]))
    header = [
        f"digraph {quote(module.name)} {{",
        "  rankdir=TB; newrank=true; nslimit=2; nslimit1=2; mclimit=0.5;",
        '  node [fontname="Helvetica", fontsize=10];',
        f"  label={quote(heading)}; labelloc=t;",
    ]
    return FusionGraph(
        dot="\n".join(header + graph.lines + ["}"]) + "\n",
        computations=tuple(c.name for k, c in enumerate(drawn) if k not in graph.omitted),
        clusters=clusters,
        collapsed=tuple(names),
        nodes=graph.nodes,
        edges=graph.edges,
        note=note,
    )


def fusion_graph_dot(hlo: str | HloModule, *, title: str = "", fused: bool = False) -> str:
    """The `dot` text of `fusion_graph(hlo, title=title, fused=fused)`."""
    return fusion_graph(hlo, title=title, fused=fused).dot
