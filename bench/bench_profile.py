"""Benchmark: `xla-inspect profile` end to end on the gradient of a 4-layer transformer.

Run from the repository root: `uv run python bench/bench_profile.py [--steps 5]`.

The model is bench_graph's (`gpt_grad` of tests/xla_inspect/test_graph.py: 4 layers in
`layer_N` name scopes, `jax.grad` of a next-token loss). One run is the whole command in a fresh
process, `xla-inspect profile FILE.py:grad --args-from FILE.py:args --steps N --json`: Python
and JAX start, compile, the traced steps, reading the trace and joining it to the module. Prints
the wall time against the 10 s budget, the command's CPU time (what the wall time would be
with its cores to itself, at most), and each layer's share of the steps' instruction time
(forward and backward together), which with the rest add up to the whole step. Prints only.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BUDGET_S = 10.0
TEST = Path(__file__).resolve().parent.parent / "tests" / "xla_inspect" / "test_graph.py"
MODEL = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("test_graph", {str(TEST)!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
grad, _shapes = _module.gpt_grad()


def args():
    return _shapes, {{}}
"""
_LAYER = re.compile(r"^(layer_\d+)")


def main() -> None:
    parser = argparse.ArgumentParser(description="xla-inspect profile on a transformer gradient")
    parser.add_argument("--steps", type=int, default=5, help="steps to profile")
    args = parser.parse_args()
    command = shutil.which("xla-inspect")
    if command is None:
        raise SystemExit("xla-inspect is not installed: run through `uv run`")
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "gpt_model.py"
        model.write_text(MODEL, encoding="utf-8")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [command, "profile", f"{model}:grad", "--args-from", f"{model}:args"]
            + ["--steps", str(args.steps), "--json"],
            check=True,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(done.stdout)
    layers: dict[str, float] = defaultdict(float)
    for scope, share in report["by_scope"].items():
        match = _LAYER.match(scope)
        layers[match.group(1) if match else "(outside the layers)"] += share
    print(f"xla-inspect profile, 4-layer transformer grad, {args.steps} steps: {seconds:.2f} s")
    print(f"ratio to the {BUDGET_S:.0f} s budget: {seconds / BUDGET_S:.2f}")
    print(f"CPU time of the command: {cpu:.2f} s (wall time on a loaded machine is more)")
    for name in sorted(layers):
        print(f"  {layers[name] * 100:6.2f}%  {name}")
    print(f"  {sum(layers.values()) * 100:6.2f}%  in all (the steps' instruction time)")


if __name__ == "__main__":
    main()
