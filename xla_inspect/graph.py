"""The fusion graph of an HLO module, as Graphviz `dot` text and, with graphviz, as SVG.

`fusion_graph_dot` draws the ENTRY computation: one node per instruction, an edge per operand.
A fusion is a box naming its `query.Fusion` label (`kLoop`, `kCustom(__ynn_fusion)`) and the
opcodes it absorbed; parameters and constants are ellipses; other ops are plain boxes. It works on
text alone (no JAX). `render_svg` runs graphviz's `dot` program and raises `GraphvizMissing` when
there is none; `save_graph` writes the SVG, or the `.dot` source beside it when graphviz is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from xla_inspect.errors import InspectError
from xla_inspect.model import HloInstruction, HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.query import Fusion, fusions

__all__ = ["INSTALL_HINT", "GraphvizMissing", "fusion_graph_dot", "render_svg", "save_graph"]

INSTALL_HINT = "install graphviz: apt-get install graphviz (macOS: brew install graphviz)"
_PLAIN = frozenset({"parameter", "constant"})
_QUIET = frozenset({"get-tuple-element", "tuple", "bitcast"})
_MAX_SHAPE = 40


class GraphvizMissing(InspectError):
    """graphviz's `dot` program is not on PATH, so no SVG can be drawn."""

    def __init__(self) -> None:
        super().__init__(f"graphviz's `dot` program is not on PATH; {INSTALL_HINT}")


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _node(instruction: HloInstruction, fusion: Fusion | None) -> str:
    shape = instruction.shape
    if len(shape) > _MAX_SHAPE:
        shape = shape[: _MAX_SHAPE - 3] + "..."
    if fusion is not None:
        absorbed = ", ".join(
            f"{op} x{n}" if n > 1 else op for op, n in sorted(fusion.absorbed.items())
        )
        label = f"fusion {fusion.label}\n{absorbed}\n{shape}"
        style = 'shape=box, style="rounded,filled", fillcolor="#f3d9fa", color="#862e9c"'
    elif instruction.opcode in _PLAIN:
        payload = (instruction.payload or "")[:24]
        label = f"{instruction.opcode} {payload}\n{shape}"
        style = 'shape=ellipse, color="#868e96", fontcolor="#495057"'
    else:
        label = f"{instruction.opcode}\n{shape}"
        quiet = instruction.opcode in _QUIET
        style = f'shape=box, color="{"#adb5bd" if quiet else "#1971c2"}"'
    return f"  {_quote(instruction.name)} [label={_quote(label)}, {style}];"


def fusion_graph_dot(hlo: str | HloModule, *, title: str = "") -> str:
    """Graphviz source for the ENTRY computation of `hlo` (HLO text or a parsed module)."""
    module = parse_hlo(hlo) if isinstance(hlo, str) else hlo
    by_name = {f.name: f for f in fusions(module) if f.computation == module.entry.name}
    lines = [
        f"digraph {_quote(module.name)} {{",
        "  rankdir=TB;",
        '  node [fontname="Helvetica", fontsize=10];',
        f"  label={_quote(title or module.name)}; labelloc=t;",
    ]
    for instruction in module.entry.instructions:
        lines.append(_node(instruction, by_name.get(instruction.name)))
    for instruction in module.entry.instructions:
        for operand in instruction.operands:
            if module.entry.instruction(operand) is not None:
                lines.append(f"  {_quote(operand)} -> {_quote(instruction.name)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str, path: str | Path) -> Path:
    """Draw `dot_text` into the SVG file `path` with graphviz's `dot`; return the path.

    Raises `GraphvizMissing` when `dot` is not on PATH, `InspectError` when `dot` rejects the
    text or does not finish within a minute.
    """
    program = shutil.which("dot")
    if program is None:
        raise GraphvizMissing
    svg = Path(path)
    svg.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [program, "-Tsvg", "-o", str(svg)],
            input=dot_text,
            text=True,
            check=True,
            capture_output=True,
            timeout=60,
        )
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()
        raise InspectError(f"dot failed ({reason[0] if reason else exc.returncode})") from exc
    except subprocess.TimeoutExpired as exc:
        raise InspectError("dot did not finish within 60 s") from exc
    return svg


def save_graph(dot_text: str, svg_path: str | Path) -> tuple[Path, bool]:
    """The SVG at `svg_path`, or without graphviz the `.dot` source beside it.

    Returns (the path written, whether it is the SVG).
    """
    try:
        return render_svg(dot_text, svg_path), True
    except GraphvizMissing:
        dot_path = Path(svg_path).with_suffix(".dot")
        dot_path.parent.mkdir(parents=True, exist_ok=True)
        dot_path.write_text(dot_text, encoding="utf-8")
        return dot_path, False
