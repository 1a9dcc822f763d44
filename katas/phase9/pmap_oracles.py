"""Independent oracles for phase 9's pmap tasks that depend on its programs (pmap_programs.py),
kept out of the test file; the phase-independent ones (device groups in every spelling of
replica_groups, bytes moved) are in kata_harness.collectives.

- what one device receives from a pmap: the ENTRY parameters of the compiled program;
- which grouped collectives a module holds, by opcode;
- the inherited step's numbers: the least-squares gradient step in NumPy.
"""

from __future__ import annotations

import jax
import numpy as np

from kata_harness.collectives import GROUPED
from katas.phase9.pmap_programs import LEARNING_RATE, pmap_of_read_all
from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo


def compiled_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def _dims(shape: Shape) -> tuple[int, ...]:
    dims = tuple(d for d in shape.dims if d is not None)
    assert len(dims) == len(shape.dims), f"a dynamic dimension in {shape.text}"
    return dims


def pmap_entry_shapes(shapes, in_axes) -> list[tuple[int, ...]]:
    """ENTRY parameter shapes of the compiled pmap of read_all, by parameter number."""
    module = parse_hlo(compiled_text(pmap_of_read_all(shapes, in_axes).compile()))
    params = sorted(
        (i for i in module.entry if i.opcode == "parameter"), key=lambda i: int(i.payload or -1)
    )
    return [_dims(p.shape_info) for p in params]


def opcode_counts(text: str) -> dict[str, int]:
    """Grouped collectives of a module by opcode, over every computation."""
    counts: dict[str, int] = {}
    for instruction in (i for c in parse_hlo(text) for i in c if i.opcode in GROUPED):
        counts[instruction.opcode] = counts.get(instruction.opcode, 0) + 1
    return counts


# ---- the inherited training step, and what its collectives move ---------------------------------


def least_squares_step(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """One gradient step of mean((x @ w - y) ** 2) over the whole batch, in float64."""
    w64, x64, y64 = (a.astype(np.float64) for a in (w, x, y))
    error = x64 @ w64 - y64
    grad = 2 * x64.T @ error / error.size
    return w64 - LEARNING_RATE * grad, float(np.mean(error**2))
