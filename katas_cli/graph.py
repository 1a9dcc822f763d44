"""The fusion graph of an optimized HLO module, as Graphviz `dot` text and, with `dot`, as SVG.

`fusion_graph_dot(text)` draws the ENTRY computation: one node per instruction, an edge per
operand. A fusion is a box naming its kind (`kLoop`, `kCustom(__ynn_fusion)`) and the opcodes it
absorbed; parameters and constants are ellipses; other ops are plain boxes. Works on text alone
(no JAX), so `xla-inspect` can reuse it. `render_svg` calls the `dot` program; without it the
`.dot` file is written instead and the caller tells the user how to install graphviz.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from xla_inspect.diff import fusion_summaries
from xla_inspect.model import HloInstruction
from xla_inspect.parse import parse_hlo

INSTALL_HINT = "apt-get install graphviz (macOS: brew install graphviz)"
_PLAIN = frozenset({"parameter", "constant"})
_QUIET = frozenset({"get-tuple-element", "tuple", "bitcast"})


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _node(instruction: HloInstruction, fusion_label: str | None, absorbed: str) -> str:
    shape = instruction.shape if len(instruction.shape) <= 40 else instruction.shape[:37] + "..."
    if instruction.opcode == "fusion":
        label = f"fusion {fusion_label}\n{absorbed}\n{shape}"
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


def fusion_graph_dot(text: str, *, title: str = "") -> str:
    """Graphviz source for the ENTRY computation of optimized HLO `text`."""
    module = parse_hlo(text)
    summaries = {f.name: f for f in fusion_summaries(module)}
    lines = [f"digraph {_quote(module.name)} {{", "  rankdir=TB;",
             '  node [fontname="Helvetica", fontsize=10];',
             f"  label={_quote(title or module.name)}; labelloc=t;"]
    for instruction in module.entry.instructions:
        summary = summaries.get(instruction.name)
        absorbed = ""
        if summary is not None:
            absorbed = ", ".join(f"{op} x{n}" if n > 1 else op
                                 for op, n in sorted(summary.absorbed.items()))
        lines.append(_node(instruction, summary.label if summary else None, absorbed))
    for instruction in module.entry.instructions:
        for operand in instruction.operands:
            if module.entry.instruction(operand) is not None:
                lines.append(f"  {_quote(operand)} -> {_quote(instruction.name)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str, svg_path: Path) -> tuple[Path, bool]:
    """Write `svg_path` with `dot`; without `dot`, write the `.dot` file beside it instead.

    Returns (path written, whether it is the SVG).
    """
    svg_path.parent.mkdir(parents=True, exist_ok=True)
    dot_path = svg_path.with_suffix(".dot")
    dot_path.write_text(dot_text, encoding="utf-8")
    program = shutil.which("dot")
    if program is None:
        return dot_path, False
    subprocess.run([program, "-Tsvg", "-o", str(svg_path), str(dot_path)], check=True,
                   capture_output=True, timeout=60)
    return svg_path, True
