"""Phase 6's oracles: XLA's cost and memory analyses of compiled programs (a list of steps
compiled one by one and as one program, a program with donated arguments, a matmul chain's temp
buffers, a program's bytes accessed), and XLA's own parser's verdict on a module.

Each function takes a program and its arguments or a module's text, never the kata's answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import jax
import numpy as np

from xla_inspect.capture import capture

from . import xla_module


def step_bytes(steps, make) -> tuple[float, float]:
    """(op by op, fused) bytes accessed, each program's cost read from what XLA compiled."""
    value = make()
    op_by_op = 0.0
    for step in steps:
        op_by_op += capture(step, value).cost_analysis.get("bytes accessed", 0.0)
        value = np.asarray(jax.jit(step)(value))  # the real output, dtype and all

    def composed(v):
        for step in steps:
            v = step(v)
        return v

    return op_by_op, capture(composed, make()).cost_analysis.get("bytes accessed", 0.0)


def memory(fn, args: tuple, donate) -> Mapping[str, int]:
    """XLA's memory analysis of ``fn`` compiled at ``args`` with ``donate_argnums=donate``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        return capture(fn, *args, donate_argnums=donate).memory_analysis


def xla_parses(text: str) -> None:
    """XLA's own C++ parser accepts the text (where jaxlib has the private binding)."""
    try:
        # jaxlib ships no stub for its _hlo extension module
        from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]
    except ImportError:
        return
    if hasattr(_hlo, "hlo_module_from_text"):
        xla_module(text)


def temp_bytes(fn, *args) -> int:
    """The temp buffers XLA's buffer assignment gives ``fn`` compiled at ``args``, in bytes."""
    stats = jax.jit(fn).lower(*args).compile().memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    return int(stats.temp_size_in_bytes)


def bytes_accessed(fn, *args) -> float:
    """XLA's cost analysis of ``fn`` compiled at ``args``: its bytes accessed."""
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    assert isinstance(cost, dict), f"cost_analysis gave {cost!r:.80}"
    return float(cost.get("bytes accessed", 0.0))
