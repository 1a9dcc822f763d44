"""What the compiled programs a block runs are handed and return, with one input swapped on the
way to the device (phase 7's bucketed_mean: the mean must be the compiled program's reduction of
x, not a value the host computed and passed in).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.interpreters import pxla  # the Python path of every first call of a jitted program


@dataclass
class Seen:
    """What the compiled programs run while device_sees is open were handed and returned."""

    swapped: list[tuple[int, ...]] = field(default_factory=list)  # shapes of the x swapped for y
    results: list[float] = field(default_factory=list)  # one-element results of programs handed y


def _starts_with(arg, values: np.ndarray, dtype) -> bool:
    flat = np.array(arg).reshape(-1)
    return np.array_equal(flat[: len(values)], values.astype(dtype))


@contextlib.contextmanager
def device_sees(x: np.ndarray, y: np.ndarray) -> Iterator[Seen]:
    """While the block runs, a compiled program handed an array that starts with x's values
    (x padded, cast to any float dtype, moved to the device or not) runs on y's values there
    instead, padding kept: what the host read of x before the call no longer matches what the
    device reduces. Records the shapes of the arguments swapped, and the one-element results of
    every program handed y's values (swapped, or passed on by an earlier program). Only the
    Python path of a jitted call (a cache miss: its first call with new shapes) goes through
    here; an eager jnp op runs as a program of its own, and goes through here too."""
    run = pxla.ExecuteReplicated.__call__
    seen = Seen()

    def swap(arg) -> tuple[object, bool]:
        shape, dtype = getattr(arg, "shape", ()), getattr(arg, "dtype", np.dtype(np.int32))
        if len(shape) < 1 or math.prod(shape) < len(x) or not jnp.issubdtype(dtype, jnp.floating):
            return arg, False
        if _starts_with(arg, y, dtype):
            return arg, True
        if not _starts_with(arg, x, dtype):
            return arg, False
        host = np.array(arg)
        host.reshape(-1)[: len(x)] = y.astype(dtype)
        seen.swapped.append(tuple(shape))
        return (host if isinstance(arg, np.ndarray) else jax.device_put(host, arg.sharding)), True

    def execute(self, *args):
        swapped = [swap(arg) for arg in args]
        out = run(self, *(arg for arg, _ in swapped))
        if any(handed_y for _, handed_y in swapped):
            seen.results += [float(np.array(o).reshape(-1)[0]) for o in out if np.size(o) == 1]
        return out

    pxla.ExecuteReplicated.__call__ = execute  # pyright: ignore[reportAttributeAccessIssue]
    try:
        yield seen
    finally:
        pxla.ExecuteReplicated.__call__ = run
