"""Predict tasks: the answer must come from the program and its shapes, not from the compiler.

A test calls the learner's prediction inside :func:`compiler_refused`; while it runs, JAX's
tracing and compiling entry points refuse, and any XLA compile (eager ops compile too) is counted
through ``jax.monitoring``. Either fails the test with one line naming the task. The refusal is a
``BaseException``, so the learner's ``except Exception`` cannot swallow it.

A prediction is a dict keyed like the test's bank of programs; :func:`predicted_entries` checks
that before the test compares each entry with what the compiler produced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


class _Consulted(BaseException):
    """Raised by a refused entry point; names what was called."""


def _refused_entry_points() -> list[tuple[Any, str]]:
    import jax
    import jax.stages

    return [
        (jax, "jit"),
        (jax, "make_jaxpr"),
        (jax, "eval_shape"),
        (jax.stages.Traced, "lower"),
        (jax.stages.Lowered, "compile"),
        (jax.stages.Lowered, "cost_analysis"),
        (jax.stages.Compiled, "cost_analysis"),
        (jax.stages.Compiled, "memory_analysis"),
    ]


@contextmanager
def compiler_refused(
    task: str, also: Iterable[tuple[Any, str]] = (), allowed: Iterable[str] = ()
) -> Iterator[None]:
    """Run the block with JAX's tracing/compiling entry points (and ``also``: more
    ``(owner, attribute)`` pairs, e.g. ``(jnp, "result_type")``; minus the ``allowed`` names,
    e.g. ``"eval_shape"`` where the task may ask for an output's shape) refusing, and fail the
    test if any of them was called or XLA compiled anything."""
    import jax

    keep = set(allowed)
    patched = [(o, n) for o, n in _refused_entry_points() if n not in keep] + list(also)
    # (owner, name, the owner's own attribute or None when it inherits it)
    saved = [(owner, name, vars(owner).get(name)) for owner, name in patched]

    def refusing(label: str):
        def refuse(*_: Any, **__: Any) -> Any:
            raise _Consulted(label)

        return refuse

    compiles: list[float] = []

    def listener(event: str, duration_secs: float, **_: Any) -> None:
        if event == BACKEND_COMPILE:
            compiles.append(duration_secs)

    for owner, name, _ in saved:
        label = f"{getattr(owner, '__name__', owner)}.{name}"
        setattr(owner, name, refusing(label))
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield
    except _Consulted as consulted:
        pytest.fail(
            f"{task} called {consulted}: a prediction comes from the program and its shapes, "
            "before anything is traced or compiled",
            pytrace=False,
        )
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        for owner, name, original in reversed(saved):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
    if compiles:
        pytest.fail(
            f"{task} made XLA compile {len(compiles)} program(s) (an eager jnp operation "
            "compiles too): predict from the shapes with plain Python",
            pytrace=False,
        )


def predicted_entries(task: str, predicted: object, bank: Iterable[Any]) -> dict[Any, Any]:
    """Return ``predicted`` if it is a dict with exactly the keys of ``bank``; otherwise fail the
    assertion with one message naming ``task``, the bank's keys it lacks and the keys it adds."""
    if not isinstance(predicted, dict):
        raise AssertionError(f"{task}: expected a dict, got {type(predicted).__name__}")
    wanted, given = set(bank), set(predicted)
    missing, extra = sorted(wanted - given, key=repr), sorted(given - wanted, key=repr)
    if missing or extra:
        raise AssertionError(f"{task}: missing {missing}, extra {extra}")
    return predicted
