"""Backend compiles, counted the way JAX reports them: one ``jax.monitoring`` event per XLA compile.

The tests measure calling patterns with :func:`measured_compiles` (their own listener, removed
when the block ends, however it ends) and :func:`compiles_of` (a pattern run from empty caches).
Every test starts from empty caches too (:func:`clear_caches_if_used`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_FILLS_CACHES = frozenset((TRACE, LOWER, BACKEND_COMPILE))
_used = [True]  # whether JAX traced, lowered or compiled since its caches were last cleared


def _note_use(event: str, duration_secs: float, **_: Any) -> None:
    if event in _FILLS_CACHES:
        _used[0] = True


def clear_caches_if_used() -> None:
    """Clear JAX's trace and compile caches if JAX traced, lowered or compiled anything since they
    were last cleared. A clear costs about a third of a millisecond even when the caches are
    empty, and most tests of the suite never reach JAX. The listener that notes JAX's work is
    registered again whenever it is missing (the first call; a test that removed it), and the
    caches are then cleared at once. Where JAX keeps its listeners out of sight (another
    version), the caches are cleared every time."""
    import jax
    from jax._src import monitoring

    registered = getattr(monitoring, "_event_duration_secs_listeners", None)
    if registered is not None and not any(entry is _note_use for entry in registered):
        jax.monitoring.register_event_duration_secs_listener(_note_use)
        _used[0] = True
    if _used[0] or registered is None:
        jax.clear_caches()
        _used[0] = False


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
