"""A task function called traced (under jax.jit, make_jaxpr or a lowering), as many tests call
the functions whose result is an array: an answer that asks for the values of a traced array
(a result turned into NumPy, ``float()`` of it, an ``if`` on it) raises one of JAX's errors
there, which this turns into a failed assertion naming the task and the case. Without it such an
answer ends the test in an error, which the honesty census reports as "broken, not judged".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import pytest

# What JAX raises when traced code asks for the values of an array: they do not exist yet.
NEEDS_VALUES = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
)


def called_traced(function: Callable[..., Any], *args: Any, task: str, case: str) -> Any:
    """``function(*args)``, called inside the caller's trace; a failed assertion naming ``task``
    and ``case`` when the answer asks for the values of a traced array."""
    __tracebackhide__ = True
    try:
        return function(*args)
    except NEEDS_VALUES as error:
        pytest.fail(
            f"{task}, {case}: traced (as jax.jit and make_jaxpr call it) it asked for the values "
            f"of an array ({type(error).__name__}): a result turned into NumPy (np.asarray, "
            "np.array, jax.device_get) or read on the host is not the jax.Array the task "
            "returns; hand back what JAX computes"
        )
