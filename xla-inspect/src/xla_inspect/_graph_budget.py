"""Keeping a large fusion graph drawable: what to leave out or collapse while it is over its
node/edge budget.

Largest first: computations that reduce, sort or scatter apply (and fused computations drawn
with `fused=True`) are left out, then name-scope clusters are collapsed into one summary node
each, then whole computations, then computations are left out (never the entry).
"""

from __future__ import annotations

from dataclasses import dataclass

from xla_inspect._graph_draw import Drawing
from xla_inspect._graph_layout import Unit

__all__ = ["Fitted", "fit"]

_REBUILDS = 8  # collapse one cluster at a time for this many rebuilds of the graph


@dataclass(frozen=True, slots=True)
class Fitted:
    """A graph within its budget: its body lines, counts, and what was collapsed or left out."""

    lines: list[str]
    nodes: int
    edges: int
    collapsed: frozenset[Unit]
    omitted: frozenset[int]


def fit(drawing: Drawing, max_nodes: int, max_edges: int) -> Fitted:
    """Draw `drawing`, collapsing and leaving out as little as keeps it within the budget."""
    layout = drawing.layout
    drawn = layout.drawn
    omitted: set[int] = set()  # computations left out
    collapsed: set[Unit] = set()  # (computation, scope); scope "": all of it
    lines: list[str] = []
    count = range(len(drawn))
    nodes, edges = sum(layout.node_count(c, collapsed, omitted) for c in count), 0
    # while over the budget: leave out helpers (largest first), collapse the largest name-scope
    # clusters, collapse whole computations, leave out computations (largest first); the
    # entry is never collapsed whole nor left out
    helper = layout.helper
    by_size = sorted(count, key=lambda c: (-len(drawn[c].instructions), c))
    scoped = (key for key in layout.units if key[1] and not helper[key[0]])
    others = [c for c in by_size if not helper[c] and not drawn[c].is_entry]
    helpers = [c for c in by_size if helper[c]]
    # (what grows, in what order, how many one at a time before doubling the step)
    phases: list[tuple[set[int] | set[Unit], list[int] | list[Unit], int]]
    phases = [
        (omitted, helpers, 0 if len(helpers) <= _REBUILDS else -1),
        (collapsed, sorted(scoped, key=lambda k: (-len(layout.units[k]), k[0], k[1])), _REBUILDS),
        (collapsed, [(c, "") for c in others], 0),
        (omitted, others, 0),
    ]
    stale = True  # `nodes` is kept exact without a rebuild; `edges` needs one
    for chosen, order, singles in phases:
        # over the node budget: one more at a time, no rebuild; over the edge budget only: one
        # at a time for `singles` rebuilds, then twice as many each time (all at once for -1),
        # so that a module of thousands of clusters still takes a few dozen rebuilds
        done, step, rebuilds = 0, len(order) if singles < 0 else 1, 0
        while done < len(order):
            if stale and nodes <= max_nodes:
                lines, nodes, edges = drawing.build(frozenset(collapsed), omitted)
                stale = False
            if nodes <= max_nodes and edges <= max_edges:
                break
            take = 1 if nodes > max_nodes else step
            for key in order[done : done + take]:
                c = key if isinstance(key, int) else key[0]
                before = layout.node_count(c, collapsed, omitted)
                chosen.add(key)  # type: ignore[arg-type]
                nodes += layout.node_count(c, collapsed, omitted) - before
            done, stale = done + take, True
            if nodes <= max_nodes:
                rebuilds += 1
                step = step * 2 if rebuilds >= singles else 1
    if stale:
        lines, nodes, edges = drawing.build(frozenset(collapsed), omitted)
    return Fitted(lines, nodes, edges, frozenset(collapsed), frozenset(omitted))
