"""`katas graph`: the fusion graph of a task's optimized HLO, drawn by `xla_inspect.graph`.

The SVG goes to `--output` or `.katas/graphs/<task>-<impl>.svg`; without graphviz the `.dot`
source is written there instead and the message says how to install graphviz.
"""

from __future__ import annotations

from pathlib import Path

from kata_harness.curriculum import Task
from xla_inspect.errors import InspectError
from xla_inspect.graph import INSTALL_HINT, fusion_graph_dot, save_graph

from .show import ShowError, capture_task
from .state import state_dir


def graph_task(task: Task, impl: str, output: Path | None) -> str:
    """Draw the task's fusion graph; return the line that says where it went."""
    shown = capture_task(task, impl)
    svg = output or state_dir() / "graphs" / f"{task.id}-{impl}.svg"
    try:
        dot = fusion_graph_dot(shown.capture.optimized_hlo_text, title=f"{task.id} {task.function}")
        path, is_svg = save_graph(dot, svg)
    except InspectError as error:  # HLO the reader rejects, or `dot` failing on it
        raise ShowError(f"{task.id} ({task.function}): no graph: {error}") from None
    if is_svg:
        return f"fusion graph of {task.id} ({impl}): {path}"
    return (
        f"graphviz's `dot` is not installed, so wrote the graph source: {path}; for the SVG, "
        f"{INSTALL_HINT}, then: dot -Tsvg {path} -o {svg}"
    )
