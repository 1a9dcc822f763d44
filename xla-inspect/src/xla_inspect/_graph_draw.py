"""The `dot` lines of a laid-out fusion graph: clusters, nodes and edges, with some units
collapsed into one summary node and some computations left out.

Edges are operands; a dashed edge goes from a caller to the computation it calls. Edges are
sorted, so the text depends on the module alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from xla_inspect._graph_labels import label, quote, summary
from xla_inspect._graph_layout import Layout, Unit
from xla_inspect.op_metadata import source
from xla_inspect.query import Fusion

__all__ = ["Drawing"]


class Drawing:
    """Draws one layout again and again as the budget collapses more of it; each node's label
    and each summary is made once."""

    def __init__(
        self,
        layout: Layout,
        fusions: Mapping[tuple[str, str], Fusion],
        flops: Mapping[str, float],
        frames: Mapping[int, str],
    ) -> None:
        self.layout = layout
        self.fusions = fusions  # (computation, instruction name) -> its fusion
        self.flops = flops
        self.frames = frames
        self.labels: dict[tuple[int, int], str] = {}
        self.summaries: dict[Unit, str] = {}

    def node_label(self, c: int, n: int) -> str:
        if (c, n) not in self.labels:
            computation = self.layout.drawn[c]
            instruction = computation.instructions[n]
            fusion = self.fusions.get((computation.name, instruction.name))
            text, style = label(instruction, fusion, self.flops, source(instruction, self.frames))
            self.labels[(c, n)] = f"[label={quote(text)}, {style}];"
        return self.labels[(c, n)]

    def summary(self, c: int, scope: str) -> str:
        if (c, scope) not in self.summaries:
            computation = self.layout.drawn[c]
            if scope:
                members = [computation.instructions[n] for n in self.layout.units[(c, scope)]]
                self.summaries[(c, scope)] = summary(scope, members)
            else:
                kind = "ENTRY " if computation.is_entry else ""
                members = list(computation.instructions)
                self.summaries[(c, scope)] = summary(f"{kind}{computation.name}", members)
        return self.summaries[(c, scope)]

    def build(
        self, collapsed: Collection[Unit], omitted: Collection[int]
    ) -> tuple[list[str], int, int]:
        """The body lines of the graph, its node count and its edge count."""
        layout = self.layout
        drawn = layout.drawn
        lines: list[str] = []
        edges: set[tuple[str, str, str]] = set()
        nodes = 0

        def node_id(c: int, n: int, user: Unit | None = None) -> str:
            key = layout.unit_of[(c, n)]
            if (c, "") in collapsed:
                return f"c{c}"
            if (c, n) in layout.shared and user is not None:
                # a parameter or constant used in several clusters: one copy per cluster
                return f"u{c}_{user[1]}" if user in collapsed else f"n{c}_{n}@{user[1]}"
            if key in collapsed:
                return f"u{c}_{key[1]}"
            return f"n{c}_{n}"

        for c, computation in enumerate(drawn):
            kind = "ENTRY " if computation.is_entry else ""
            if c in omitted:
                continue
            if (c, "") in collapsed:
                text = self.summary(c, "")
                lines.append(f"  {quote(f'c{c}')} [label={quote(text)}, shape=box3d];")
                nodes += 1
                continue
            lines.append(f"  subgraph {quote(f'cluster_c{c}')} {{")
            lines.append(f"    label={quote(f'{kind}{computation.name}')};")
            lines.append('    style=rounded; color="#495057";')
            for scope, unit in layout.by_computation.get(c, []):
                indent = "    "
                if scope and (c, scope) in collapsed:
                    text = self.summary(c, scope)
                    ident = quote(f"u{c}_{scope}")
                    lines.append(f"    {ident} [label={quote(text)}, shape=box3d];")
                    nodes += 1
                    continue
                if scope:
                    lines.append(f"    subgraph {quote(f'cluster_c{c}_{scope}')} {{")
                    lines.append(f'      label={quote(scope)}; style=dashed; color="#868e96";')
                    indent = "      "
                for n in unit:
                    if (c, n) not in layout.shared:
                        lines.append(f"{indent}{quote(f'n{c}_{n}')} {self.node_label(c, n)}")
                        nodes += 1
                # shared parameters and constants: a copy in each cluster that uses them
                for n in layout.copies.get((c, scope), []):
                    lines.append(f"{indent}{quote(f'n{c}_{n}@{scope}')} {self.node_label(c, n)}")
                    nodes += 1
                if scope:
                    lines.append("    }")
            lines.append("  }")
        for c, computation in enumerate(drawn):
            if c in omitted:
                continue
            for n in range(len(computation.instructions)):
                user = layout.unit_of[(c, n)]
                target = node_id(c, n)
                for operand in layout.operands[c][n]:
                    origin = node_id(c, operand, user)
                    if origin != target:
                        edges.add((origin, target, ""))
                for k in layout.calls[c][n]:
                    if k not in omitted:
                        callee = node_id(k, len(drawn[k].instructions) - 1)
                        edges.add((target, callee, "call"))
        for origin, target, kind in sorted(edges):
            style = " [style=dashed, constraint=false]" if kind else ""
            lines.append(f"  {quote(origin)} -> {quote(target)}{style};")
        return lines, nodes, len(edges)
