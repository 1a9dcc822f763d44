"""Benchmark: xla_inspect's reader vs XLA's own C++ HLO parser, on the same text.

Run from the repository root: `uv run python bench/bench_parse.py [--sizes 0.3 3 30]`.

Each module is made of real optimized HLO from the corpus (tests/xla_inspect/corpus/*.opt.hlo:
transformer block and gradient, conv net, control flow, linear algebra custom calls, sort and
scatter, dtypes, donated state, sharded programs with collectives): copies of every module's
computations, names suffixed so that the C++ parser accepts the result, ENTRY kept only for the
last copy of the transformer gradient, whose header and stack-frame tables lead the module (the
other modules' stack_frame_ids fall within its table). Times are the best of several
interleaved runs; ours is `parse_hlo` plus `opcode_counts`, theirs is jaxlib's private
`hlo_module_from_text`. Peak memory is measured with tracemalloc in a separate run and
reported as a multiple of the text size. Prints only.
"""

from __future__ import annotations

import argparse
import gc
import re
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # jaxlib ships no stub

from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "xla_inspect" / "corpus"
BASE = "transformer_grad.opt.hlo"
_NAME = re.compile(r"%([\w.\-]+)")


def _computations(text: str) -> str:
    """The text from the first computation on (after the header and frame tables)."""
    return text[text.index("\n%") :]


def _renamed(body: str, suffix: str) -> str:
    return _NAME.sub(lambda m: f"%{m.group(1)}{suffix}", body)


def build_module(target_mb: float) -> str:
    """A valid optimized module of about `target_mb` MB made of renamed real computations."""
    base = (CORPUS / BASE).read_text()
    bodies = [_computations(p.read_text()) for p in sorted(CORPUS.glob("*.opt.hlo"))]
    head, last = base[: base.index("\n%")], _computations(base)
    parts = [head]
    size, copy = len(head) + len(last), 0
    while size < target_mb * 1e6 - len(last) / 2:
        for k, body in enumerate(bodies):
            renamed = _renamed(body, f".c{copy}m{k}").replace("\nENTRY ", "\n")
            parts.append(renamed)
            size += len(renamed)
        copy += 1
    parts.append(_renamed(last, ".last"))
    return "".join(parts)


def best_times(runs: tuple[Callable[[], object], ...], repeats: int) -> list[tuple[float, float]]:
    """(best thread CPU time, best wall time) per run, the runs interleaved per repeat so both
    sides see the same machine load. The C++ parser runs in the calling thread, so thread CPU
    time compares like with like even when other processes compete for the cores."""
    cpu = [float("inf")] * len(runs)
    wall = [float("inf")] * len(runs)
    for _ in range(repeats):
        for k, run in enumerate(runs):
            gc.collect()
            start_cpu, start_wall = time.thread_time(), time.perf_counter()
            run()
            cpu[k] = min(cpu[k], time.thread_time() - start_cpu)
            wall[k] = min(wall[k], time.perf_counter() - start_wall)
    return list(zip(cpu, wall, strict=True))


def peak_multiple(text: str) -> float:
    gc.collect()
    tracemalloc.start()
    module = parse_hlo(text)
    opcode_counts(module)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / len(text.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=float,
        nargs="+",
        default=[0.3, 3.0, 30.0],
        help="module sizes in MB (default: 0.3 3 30)",
    )
    args = parser.parse_args()
    print(
        f"{'MB':>6} {'instr':>7} {'ours ms':>8} {'C++ ms':>8} {'ratio':>5} {'wall ratio':>10} "
        f"{'ours MB/s':>9} {'C++ MB/s':>8} {'peak/text':>9}"
    )
    per_mb = []
    for size in args.sizes:
        text = build_module(size)
        mb = len(text.encode()) / 1e6
        repeats = max(3, min(20, int(30 / size)))
        instructions = sum(opcode_counts(parse_hlo(text)).values())
        (ours, ours_wall), (theirs, theirs_wall) = best_times(
            (
                lambda t=text: opcode_counts(parse_hlo(t)),
                lambda t=text: _hlo.hlo_module_from_text(t),
            ),
            repeats,
        )
        multiple = peak_multiple(text)
        per_mb.append((mb, ours / mb, theirs / mb))
        print(
            f"{mb:6.2f} {instructions:7d} {ours * 1e3:8.1f} {theirs * 1e3:8.1f} "
            f"{ours / theirs:5.2f} {ours_wall / theirs_wall:10.2f} {mb / ours:9.1f} "
            f"{mb / theirs:8.1f} {multiple:8.1f}x"
        )
    print("\nlinearity (CPU ms per MB; flat means linear):")
    for mb, ours_per_mb, theirs_per_mb in per_mb:
        print(f"  {mb:6.2f} MB: ours {ours_per_mb * 1e3:6.1f}  C++ {theirs_per_mb * 1e3:6.1f}")


if __name__ == "__main__":
    main()
