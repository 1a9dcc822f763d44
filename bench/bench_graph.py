"""Benchmark: `xla-inspect graph` end to end on the optimized gradient of a 4-layer transformer.

Run from the repository root: `uv run python bench/bench_graph.py [--runs 5]`.

The model is the one tests/xla_inspect/test_graph.py builds (`gpt_grad_hlo`: plain JAX, 4
layers, `jax.grad` of a next-token loss), compiled once. Each run is the whole command in a fresh
process, `xla-inspect graph FILE --out FILE.svg`: Python start, reading, parsing, building the
graph and graphviz's `dot` drawing the SVG. Prints the median of the runs, its ratio to the 5 s
budget, and the graph's size against the module's. Needs graphviz (`dot` on PATH). Prints only.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xla_inspect.graph import fusion_graph

BUDGET_S = 5.0
TEST = Path(__file__).resolve().parent.parent / "tests" / "xla_inspect" / "test_graph.py"


def _model_text() -> str:
    spec = importlib.util.spec_from_file_location("test_graph", TEST)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {TEST}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gpt_grad_hlo()


def main() -> None:
    parser = argparse.ArgumentParser(description="xla-inspect graph on a transformer gradient")
    parser.add_argument("--runs", type=int, default=5, help="runs to take the median of")
    args = parser.parse_args()
    if shutil.which("dot") is None:
        raise SystemExit("graphviz's `dot` is not on PATH: apt-get install graphviz")
    command = shutil.which("xla-inspect")
    if command is None:
        raise SystemExit("xla-inspect is not installed: run through `uv run`")
    with tempfile.TemporaryDirectory() as folder:
        hlo = Path(folder) / "gpt_grad.opt.hlo"
        hlo.write_text(_model_text(), encoding="utf-8")
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run(
                [command, "graph", str(hlo), "--out", str(hlo.with_suffix(".svg"))],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - start)
        text = hlo.read_text(encoding="utf-8")
    whole = fusion_graph(text, max_nodes=sys.maxsize, max_edges=sys.maxsize)
    drawn = fusion_graph(text)
    median = statistics.median(times)
    print(f"xla-inspect graph, 4-layer transformer grad, median of {args.runs}: {median:.2f} s")
    print(f"ratio to the {BUDGET_S:.0f} s budget: {median / BUDGET_S:.2f}")
    print(f"runs: {', '.join(f'{t:.2f}' for t in times)} s")
    print(f"whole module: {whole.nodes} nodes, {whole.edges} edges")
    print(f"drawn: {drawn.nodes} nodes, {drawn.edges} edges; {drawn.note or 'nothing collapsed'}")


if __name__ == "__main__":
    main()
