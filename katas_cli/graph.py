"""`katas graph`: the fusion graph of a task's optimized HLO, drawn by `xla_inspect.graph`.

The SVG goes to `--output` or `.katas/graphs/<task>-<impl>.svg`; without graphviz the `.dot`
source is written there instead and the message says how to install graphviz. The title carries
the module's flops from XLA's cost analysis (a module total: XLA gives no per-instruction flops
through JAX); a graph over the budget says what it collapsed.
"""

from __future__ import annotations

from pathlib import Path

from kata_harness.curriculum import Task
from xla_inspect.errors import InspectError
from xla_inspect.graph import INSTALL_HINT, fusion_graph, save_graph

from .show import ShowError, capture_task
from .state import state_dir


def graph_task(task: Task, impl: str, output: Path | None) -> str:
    """Draw the task's fusion graph; return the line that says where it went."""
    shown = capture_task(task, impl)
    svg = output or state_dir() / "graphs" / f"{task.id}-{impl}.svg"
    title = f"{task.id} {task.function}"
    flops = shown.capture.cost_analysis.get("flops")
    if flops is not None:
        title += f" ({flops:,.0f} flops, XLA cost analysis)"
    try:
        graph = fusion_graph(shown.capture.optimized_hlo_text, title=title)
        path, is_svg = save_graph(graph.dot, svg)
    except InspectError as error:  # HLO the reader rejects, or `dot` failing on it
        raise ShowError(f"{task.id} ({task.function}): no graph: {error}") from None
    note = f" ({graph.note})" if graph.note else ""
    if is_svg:
        return f"fusion graph of {task.id} ({impl}): {path}{note}"
    return (
        f"graphviz's `dot` is not installed, so wrote the graph source: {path}{note}; for the "
        f"SVG, {INSTALL_HINT}, then: dot -Tsvg {path} -o {svg}"
    )
