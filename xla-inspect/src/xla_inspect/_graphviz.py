"""Running graphviz's `dot` program: `dot` text to an SVG file, or the `.dot` source without it.

The one module of the graph that starts a program; everything else builds text.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from xla_inspect.errors import InspectError

__all__ = ["INSTALL_HINT", "GraphvizMissing", "render_svg", "save_graph"]

INSTALL_HINT = "install graphviz: apt-get install graphviz (macOS: brew install graphviz)"
DOT_TIMEOUT = 60


class GraphvizMissing(InspectError):
    """graphviz's `dot` program is not on PATH, so no SVG can be drawn."""

    def __init__(self) -> None:
        super().__init__(f"graphviz's `dot` program is not on PATH; {INSTALL_HINT}")


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
            timeout=DOT_TIMEOUT,
        )
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()
        raise InspectError(f"dot failed ({reason[0] if reason else exc.returncode})") from exc
    except subprocess.TimeoutExpired as exc:
        raise InspectError(f"dot did not finish within {DOT_TIMEOUT} s") from exc
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
