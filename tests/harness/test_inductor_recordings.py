"""The generated code phase 16 keeps from Inductor (katas/phase16/recorded/) is there, is read
alike by xla_inspect.inductor and by the tests' line reader, and, when the ``torch`` group is
installed with the torch version a recording names, still matches what Inductor generates now.

"Matches" compares what the tasks read, not the text: the kernels `call` runs (kind and name
without its number), the number of inputs and outputs, and the reductions of each fused kernel.
The C++ inside a kernel depends on the vector instructions of the CPU it was compiled on (the
header names them), so the text itself differs from machine to machine. With
``--snapshot-update`` (reference mode) a stale or missing recording is written again:

    uv run --group torch pytest tests/harness/test_inductor_recordings.py --impl=reference \
        --snapshot-update

The first compile of a process with an empty Inductor cache takes about a minute here; the whole
set then about 80 s more (one process, the cache in .cache/inductor).
"""

from __future__ import annotations

import pytest

from kata_harness import inductor as lines
from kata_harness import recordings
from katas.phase16 import programs
from xla_inspect import inductor_capture
from xla_inspect.inductor import read_inductor, reduction_count

NAMES = programs.recorded_names()


def _facts(codes: list[str]) -> list[tuple]:
    """Per graph: its kernels (kind, name without number), inputs, outputs, reductions."""
    facts = []
    for code in codes:
        graph = read_inductor(code)
        facts.append(
            (
                [(c.kind, c.short_name) for c in graph.calls],
                len(graph.inputs),
                len(graph.outputs),
                [reduction_count(graph.kernels.get(c.kernel, "")) for c in graph.calls],
            )
        )
    return facts


def _header(text: str) -> dict[str, str]:
    header = {}
    for line in text.splitlines():
        if not line.startswith("# ") or line.startswith(programs.GRAPH_LINE):
            break
        key, _, value = line[2:].partition(": ")
        header[key] = value
    return header


@pytest.mark.parametrize("name", NAMES)
def test_inductor_recording_reads_alike(name):
    path = programs.recorded_path(name)
    assert path.is_file(), f"{path} is missing: record it with {programs.RECORD_COMMAND}"
    header = _header(path.read_text(encoding="utf-8"))
    assert {"torch", "cpu", "program"} <= set(header), f"{path}: header lacks versions or CPU"
    codes = programs.recorded(name)
    assert len(codes) == (2 if name in programs.TRAIN else 1), f"{path}: graphs"
    for code in codes:
        ours = [(c.kind, c.short_name) for c in read_inductor(code).calls]
        theirs = [(c.kind, c.name) for c in lines.calls(code)]
        assert [kind for kind, _ in ours] == [kind for kind, _ in theirs]
        assert [n for _, n in ours] == [
            lines.fused_ops(n) if kind == "fused" else n for kind, n in theirs
        ]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NAMES)
def test_inductor_recording_is_current(request, name):
    missing = inductor_capture.missing()
    path = programs.recorded_path(name)

    def running() -> str:
        import torch  # pyright: ignore[reportMissingImports]  (the torch group)

        return f"torch {torch.__version__}"

    def compare(_kept: str, codes: list[str]) -> None:
        assert _facts(codes) == _facts(programs.recorded(name)), (
            f"{path} is stale: Inductor now generates other kernels; {programs.RECORD_COMMAND}"
        )

    recordings.check_current(
        request,
        path,
        command=programs.RECORD_COMMAND,
        unavailable=None if missing is None else f"cannot check against Inductor: {missing}",
        running=running,
        recorded_with=lambda text: f"torch {_header(text).get('torch')}",
        make=lambda: programs.generate(name),
        render=lambda codes: programs.recording_text(name, codes),
        compare=compare,
        fail_if_missing=False,
    )
