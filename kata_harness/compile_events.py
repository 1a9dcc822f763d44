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
# whether JAX traced, lowered or compiled since its caches were last cleared; whether JAX keeps
# its listeners where this module cannot see them (another version): then it clears every time
_state = {"used": True, "blind": False}


def _note_use(event: str, duration_secs: float, **_: Any) -> None:
    if event in _FILLS_CACHES:
        _state["used"] = True


def _listening(monitoring: Any) -> bool:
    registered = getattr(monitoring, "_event_duration_secs_listeners", ())
    return any(entry is _note_use for entry in registered)


def clear_caches_if_used() -> None:
    """Clear JAX's trace and compile caches if JAX traced, lowered or compiled anything since they
    were last cleared. A clear costs tens to hundreds of microseconds even when the caches are
    empty, and most tests of the suite never reach JAX. The listener that notes JAX's work is
    registered again whenever it is missing (the first call; a test that removed it), and the
    caches are then cleared at once."""
    import jax
    from jax._src import monitoring

    if not _state["blind"] and not _listening(monitoring):
        jax.monitoring.register_event_duration_secs_listener(_note_use)
        _state["blind"] = not _listening(monitoring)
        _state["used"] = True
    if _state["used"] or _state["blind"]:
        jax.clear_caches()
        _state["used"] = False


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
