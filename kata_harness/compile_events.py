"""Backend compiles, counted the way JAX reports them: one ``jax.monitoring`` event per XLA compile.

The tests measure calling patterns with :func:`measured_compiles` (their own listener, removed
when the block ends, however it ends) and :func:`compiles_of` (a pattern run from empty caches).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextmanager
def measured_compiles() -> Iterator[list[float]]:
    """The durations of the backend compiles inside the block, one entry per compile."""
    import jax

    events: list[float] = []

    def listener(event: str, duration_secs: float, **_: Any) -> None:
        if event == BACKEND_COMPILE:
            events.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def compiles_of(run: Callable[[], object]) -> int:
    """How many times XLA compiles while ``run`` runs, starting from JAX's caches emptied."""
    import jax

    jax.clear_caches()
    with measured_compiles() as events:
        run()
    return len(events)
