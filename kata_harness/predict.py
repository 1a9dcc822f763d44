"""Predict tasks: the answer must come from the program and its shapes, not from the compiler.

A test calls the learner's prediction inside :func:`compiler_refused`; while it runs, JAX's
tracing and compiling entry points refuse, and any XLA compile (eager ops compile too) is counted
through ``jax.monitoring``. Either fails the test with one line naming the task. The refusal is a
``BaseException``, so the learner's ``except Exception`` cannot swallow it.

Every call of a predict task's function is refused the same way, by the harness and not only by
the test (:func:`refuse_in`, applied when a module is loaded), so a value test cannot call the
answer outside the refusal: a refused entry point that the answer caught, a trace, a lowering or
a compile seen by ``jax.monitoring`` (however the answer reached JAX: a ``jit`` saved at import, a
stage method kept aside), the harness's listener removed, or a module that traced or compiled
while it loaded, each fails the test after the answer returns.

A prediction is a dict keyed like the test's bank of programs; :func:`predicted_entries` checks
that before the test compares each entry with what the compiler produced.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_HEARTBEAT = "/kata_harness/predict/listening"
REFUSED = "__kata_refused__"


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
        *_client_compiles(),
    ]


def _label(owner: Any, name: str) -> str:
    if name in _CLIENT_COMPILES and getattr(owner, "__name__", "") == "Client":
        return "XLA's compiler (an eager jnp operation compiles too)"
    return f"{getattr(owner, '__name__', owner)}.{name}"


def _client_compiles() -> list[tuple[Any, str]]:
    """The compile methods of jaxlib's XLA client: text that was never traced compiles there."""
    import jax.extend.backend

    client = type(jax.extend.backend.get_backend())
    return [(client, name) for name in sorted(_CLIENT_COMPILES) if hasattr(client, name)]


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
        label = _label(owner, name)
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


@contextmanager
def compiles_seen(events: tuple[str, ...] = (TRACE, LOWER, BACKEND_COMPILE)) -> Iterator[list[str]]:
    """The JAX trace/lower/compile events while the block runs, and whether the listener was
    still registered at its end (``"listener removed"`` appended when it was not)."""
    import jax

    seen: list[str] = []
    beats: list[bool] = []

    def listener(event: str, duration_secs: float, **_: Any) -> None:
        if event in events:
            seen.append(event.rsplit("/", 1)[-1].removesuffix("_duration"))
        elif event == _HEARTBEAT:
            beats.append(True)

    count_client_compiles()
    before = _client_compiles_done[0]
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.record_event_duration_secs(_HEARTBEAT, 0.0)
        if not beats:
            seen.append("listener removed")
        else:
            jax.monitoring.unregister_event_duration_listener(listener)
        seen += ["compile"] * (_client_compiles_done[0] - before)


_client_compiles_done = [0]


def count_client_compiles() -> None:
    """Count every compile of jaxlib's XLA client, for good (idempotent).

    JAX's monitoring events come from JAX's own code; text compiled straight through the client
    (``get_backend().compile_and_load``), even through a method bound before any refusal began,
    raises none. The counting wrapper is installed before any kata file loads, so whatever a
    file binds is the wrapper."""
    for client, name in _client_compiles():
        original = vars(client).get(name)
        if original is None or getattr(original, "__kata_counted__", False):
            continue

        def counted(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            _client_compiles_done[0] += 1
            return _original(self, *args, **kwargs)

        counted.__kata_counted__ = True  # type: ignore[attr-defined]
        counted.__name__ = name
        setattr(client, name, counted)


def refuse_in(module: Any, tasks: Iterable[Any], at_load: list[str]) -> None:
    """Wrap each predict task function of ``module`` so that every call runs with the compiler
    refused (``tasks``: the phase's tasks; ``at_load``: what the module compiled as it loaded)."""

    for task in tasks:
        function = getattr(module, task.function, None)
        if task.kind != "predict" or function is None or hasattr(function, REFUSED):
            continue
        label = f"{task.id} ({task.function})"
        also = [_resolve(dotted) for dotted in task.refuse]
        setattr(module, task.function, _refusing(function, label, task.allow, also, at_load))


def _resolve(dotted: str) -> tuple[Any, str]:
    """``"jax.sharding.NamedSharding.shard_shape"`` -> ``(NamedSharding, "shard_shape")``."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part)
        return owner, parts[-1]
    raise ValueError(f"tasks.toml refuses {dotted!r}, which names no module attribute")


def _refusing(
    function: Any,
    label: str,
    allowed: tuple[str, ...],
    also: list[tuple[Any, str]],
    at_load: list[str],
) -> Any:
    events = (
        (LOWER, BACKEND_COMPILE) if "eval_shape" in allowed else (TRACE, LOWER, BACKEND_COMPILE)
    )

    @functools.wraps(function)
    def refused(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if at_load:
            pytest.fail(
                f"{label}: the kata file ran JAX's compiler while it loaded ({at_load[0]}); "
                "a prediction must come from the program and its shapes, so move that work "
                "into the functions that read compiled output",
                pytrace=False,
            )
        attempts: list[str] = []
        with compiles_seen(events) as seen, _entry_points_refused(allowed, also, attempts):
            try:
                value = function(*args, **kwargs)
            except _Consulted:
                value = None
        if attempts or seen:
            what = f"called {attempts[0]}" if attempts else f"made JAX {seen[0].replace('_', ' ')}"
            pytest.fail(
                f"{label} {what}: a prediction comes from the program and its shapes, before "
                "anything is traced or compiled (predict with plain Python)",
                pytrace=False,
            )
        return value

    setattr(refused, REFUSED, True)
    return refused


@contextmanager
def _entry_points_refused(
    allowed: Iterable[str], also: list[tuple[Any, str]], attempts: list[str]
) -> Iterator[None]:
    keep = set(allowed)
    pairs = [(o, n) for o, n in _refused_entry_points() if n not in keep] + also
    saved = [(o, n, vars(o).get(n)) for o, n in pairs]
    codes, wrappers = _codes(pairs)
    previous = sys.getprofile()

    def profile(frame: Any, event: str, _: Any) -> None:
        # A refused function reached under another name (saved at import, an alias) runs its
        # own code all the same; a call JAX makes inside itself is not the answer's.
        if event == "call" and frame.f_code in codes:
            caller = frame.f_back
            while caller is not None and caller.f_code in wrappers:
                caller = caller.f_back  # jax's api_boundary layer around the function
            if not _inside_jax(caller):
                attempts.append(codes[frame.f_code])

    sys.setprofile(profile)
    for owner, name, _ in saved:
        label = _label(owner, name)

        def refuse(*_: Any, _label: str = label, **__: Any) -> Any:
            attempts.append(_label)
            raise _Consulted(_label)

        setattr(owner, name, refuse)
    try:
        yield
    finally:
        sys.setprofile(previous)
        for owner, name, original in reversed(saved):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def _codes(pairs: list[tuple[Any, str]]) -> tuple[dict[Any, str], set[Any]]:
    """The code of each refused function (the innermost of its ``functools.wraps`` layers, as
    the outer ones are shared wrappers such as jax's api_boundary), and the wrappers' codes."""
    codes: dict[Any, str] = {}
    wrappers: set[Any] = set()
    for owner, name in pairs:
        layers = []
        function = getattr(owner, name, None)
        while function is not None:
            if getattr(function, "__code__", None) is not None:
                layers.append(function.__code__)
            function = getattr(function, "__wrapped__", None)
        if layers:
            codes[layers[-1]] = _label(owner, name)
            wrappers.update(layers[:-1])
    return codes, wrappers - codes.keys()


_JAX_DIR = None
_CLIENT_COMPILES = frozenset({"compile", "compile_and_load", "deserialize_executable"})


def _inside_jax(frame: Any) -> bool:
    global _JAX_DIR
    if _JAX_DIR is None:
        import jax

        _JAX_DIR = os.path.dirname(jax.__file__) + os.sep
    return frame is not None and frame.f_code.co_filename.startswith(_JAX_DIR)


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
