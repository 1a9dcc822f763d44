"""Predict tasks: the answer must come from the program and its shapes, not from the compiler.

A test calls the learner's prediction inside :func:`compiler_refused`; while it runs, JAX's
tracing, lowering and compiling entry points refuse (public or internal:
:mod:`.entry_points`), and any XLA compile (eager ops compile too) is counted
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

import copy
import functools
import inspect
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from . import call_watch, contract, entry_points, guard, sealed
from .compile_events import BACKEND_COMPILE, LOWER, TRACE

_HEARTBEAT = "/kata_harness/predict/listening"


class _Consulted(BaseException):
    """Raised by a refused entry point; names what was called."""


def _frozen(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001  (an object that cannot be copied is compared as it is)
        return value


@contextmanager
def compiler_refused(
    task: str, also: Iterable[tuple[Any, str]] = (), allowed: Iterable[str] = ()
) -> Iterator[None]:
    """Run the block with JAX's tracing/compiling entry points (and ``also``: more
    ``(owner, attribute)`` pairs, e.g. ``(jnp, "result_type")``; minus the ``allowed`` names,
    e.g. ``"eval_shape"`` where the task may ask for an output's shape) refusing, and fail the
    test if any of them was called or XLA compiled anything."""
    import jax

    patched = entry_points.refused(allowed) + list(also)
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
        _stand_in(owner, name, refusing(entry_points.label(owner, name)))
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
        _restore(saved)
    if compiles:
        pytest.fail(
            f"{task} made XLA compile {len(compiles)} program(s) (an eager jnp operation "
            "compiles too): predict from the shapes with plain Python",
            pytrace=False,
        )


@contextmanager
def compiles_seen(events: tuple[str, ...] = (TRACE, LOWER, BACKEND_COMPILE)) -> Iterator[list[str]]:
    """The JAX trace/lower/compile events while the block runs, and whether the listener was
    still registered at its end (a line saying so appended when it was not)."""
    import jax

    seen: list[str] = []
    beats: list[bool] = []

    def listener(event: str, duration_secs: float, **_: Any) -> None:
        if event in events:
            seen.append(event.rsplit("/", 1)[-1].removesuffix("_duration"))
        elif event == _HEARTBEAT:
            beats.append(True)

    count_client_compiles()
    before = _client_compiles_done
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.record_event_duration_secs(_HEARTBEAT, 0.0)
        if not beats:
            seen.append("it removed JAX's monitoring listeners")
        else:
            jax.monitoring.unregister_event_duration_listener(listener)
        seen += ["compile"] * (_client_compiles_done - before)


_client_compiles_done = 0  # compiles of jaxlib's client, since count_client_compiles
_counting = False  # whether the counting wrapper is installed


def count_client_compiles() -> None:
    """Count every compile of jaxlib's XLA client, for good (idempotent).

    JAX's monitoring events come from JAX's own code; text compiled straight through the client
    (``get_backend().compile_and_load``), even through a method bound before any refusal began,
    raises none. The counting wrapper is installed before any kata file loads, so whatever a
    file binds is the wrapper."""
    global _counting
    if _counting:
        return
    _counting = True  # once: later the class may hold a refusal's stand-in
    for client, name in entry_points.client_compiles():
        original = vars(client).get(name)
        if original is None:
            continue

        def counted(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            global _client_compiles_done
            _client_compiles_done += 1
            return _original(self, *args, **kwargs)

        counted.__name__ = name
        setattr(client, name, counted)


@contextmanager
def calls_seen(dotted: Iterable[str], pairs: Iterable[tuple[Any, str]] = ()) -> Iterator[list[str]]:
    """The functions named in ``dotted`` (and the ``(owner, attribute)`` ``pairs``) that the
    block called, under any name (a file that builds a table with jnp.result_type, or lowers
    jaxprs with jax.interpreters.mlir, while it loads records no trace or compile event)."""
    codes = _codes([_resolve(name) for name in dotted] + list(pairs))
    called: list[str] = []
    previous = sys.getprofile()

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call" and frame.f_code in codes:
            called.append(f"called {codes[frame.f_code]}")

    sys.setprofile(profile)
    try:
        yield called
    finally:
        sys.setprofile(previous)


def refuse_in(module: Any, tasks: Iterable[Any], at_load: list[str]) -> None:
    """Wrap each predict task function of ``module`` so that every call runs with the compiler
    refused (``tasks``: the phase's tasks; ``at_load``: what the module compiled as it loaded)."""

    for task in tasks:
        function = getattr(module, task.function, None)
        if task.kind != "predict" or function is None or _refusers.get(id(function)) is function:
            continue
        label = f"{task.id} ({task.function})"
        also = [_resolve(dotted) for dotted in task.refuse if _importable(dotted)]
        setattr(module, task.function, _refusing(function, label, task.allow, also, at_load))


def _importable(dotted: str) -> bool:
    """Whether the library a refused name lives in is installed (``torch.compile`` needs the
    torch group; without it no answer can call it)."""
    import importlib.util

    root = dotted.split(".")[0]
    return root in sys.modules or importlib.util.find_spec(root) is not None


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

    code = getattr(inspect.unwrap(function), "__code__", None)
    own = code.co_filename if code is not None else "?"  # the file the answer is written in

    @functools.wraps(function)
    def refused(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if at_load:
            pytest.fail(
                f"{label}: the kata file traced, compiled or called what a prediction may not "
                f"while it loaded ({at_load[0]}); "
                "a prediction must come from the program and its shapes, so move that work "
                "into the functions that read compiled output",
                pytrace=False,
            )
        attempts: list[str] = []
        ran_out = ""  # the answer made arrays of the shapes it was asked about
        with (
            compiles_seen(events) as seen,
            _entry_points_refused(allowed, also, attempts, own),
            sealed.sealed() as reads,
        ):
            try:
                value = function(*args, **kwargs)
            except _Consulted:
                value = None
            except guard.KataGuardError:
                value = None  # a refused read: failed below, whatever the answer made of it
            except MemoryError as error:
                # Shapes past what any host holds (the tests draw some) only fit in a
                # prediction that never makes arrays of them: one that runs the program on
                # stand-in data, in NumPy or anywhere outside JAX's refusals, runs out here.
                value, ran_out = None, f"ran out of memory making arrays ({str(error)[:80]})"
        # What the test compares is what the answer returned now: a copy, which a listener or
        # anything else the file left behind cannot fill in later.
        value = _frozen(value)
        if reads or attempts or seen or ran_out:
            what = ran_out or _first_offence(reads, attempts, seen)
            pytest.fail(
                f"{label} {what}: a prediction comes from the program and its shapes, before "
                "anything is traced or compiled (predict with plain Python)",
                pytrace=False,
            )
        return value

    _refusers[id(refused)] = refused
    contract.mark_wrapper(refused)  # the contract does not wrap it again on the next load
    return refused


_refusers: dict[int, Any] = {}  # the harness's wrappers, by identity (see contract._wrappers)


def _first_offence(reads: list[str], attempts: list[str], seen: list[str]) -> str:
    """What a prediction did that it may not, first of: a live object or file it read, a
    refused function it called, a trace or compile JAX reported."""
    if reads:
        return reads[0] if reads[0].startswith(sealed.REACHED) else f"read a file ({reads[0]})"
    if attempts:
        return f"called {attempts[0]}"
    return f"made JAX {seen[0].replace('_', ' ')}"


@contextmanager
def _entry_points_refused(
    allowed: Iterable[str], also: list[tuple[Any, str]], attempts: list[str], own: str
) -> Iterator[None]:
    pairs = entry_points.refused(allowed) + also
    saved = [(o, n, vars(o).get(n)) for o, n in pairs]
    codes = _codes(pairs)
    allowed_codes = set(_codes(entry_points.allowed_pairs(allowed)))
    # With eval_shape allowed, the tracing core runs for it (and for every jnp function the
    # traced program calls): refused only outside it.
    core = _codes(entry_points.tracing_core()) if allowed_codes else {}
    inside_allowed = [0]

    def started(code: Any, frame: Any) -> None:
        # A refused function reached under any name (saved at import, an alias, passed to
        # jax.tree.map) runs its own code all the same; only inside a function the task may
        # call (eval_shape) does JAX run refused code on its own behalf.
        if code in allowed_codes:
            inside_allowed[0] += 1
        elif code in codes:
            if not inside_allowed[0] or _asked_by_kata(frame, allowed_codes, own):
                attempts.append(codes[code])
        elif code in core and not inside_allowed[0]:
            attempts.append(core[code])

    def left(_code: Any) -> None:
        inside_allowed[0] -= 1

    with call_watch.watching({*codes, *core, *allowed_codes}, started, allowed_codes, left):
        for owner, name, _ in saved:

            def refuse(*_: Any, _label: str = entry_points.label(owner, name), **__: Any) -> Any:
                attempts.append(_label)
                raise _Consulted(_label)

            _stand_in(owner, name, refuse)
        try:
            yield
        finally:
            _restore(saved)


def _asked_by_kata(frame: Any, allowed_codes: set[Any], own: str) -> bool:
    """Whether kata code (the answer's file ``own``, or any learner's file) asked for the refused
    function called in ``frame`` inside a function the task may call: the nearest caller that is
    not a library (JAX, the standard library, another package: the trampolines ``jax.tree.map``,
    ``numpy.vectorize``...) is kata code. JAX's own calls (eval_shape tracing with jit,
    ``jnp.einsum`` jitting its body under a test's program) have the allowed function or the
    test's code there."""
    caller = frame.f_back
    while caller is not None and caller.f_code not in allowed_codes:
        filename = caller.f_code.co_filename
        if filename == own or guard.is_kata_file(filename):
            return True
        if not filename.startswith(_library_dirs()):
            return False  # the test's program: JAX traces it for eval_shape
        caller = caller.f_back
    return False


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Where installed code lives (the standard library, every site-packages on the path: ``uv
    run --with`` adds its own), and code with no file (``<frozen importlib._bootstrap>``, a
    dataclass's generated ``__init__``)."""
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs |= {d for d in sys.path if os.path.basename(d) in ("site-packages", "dist-packages")}
    return (*{os.path.join(p, "") for d in dirs for p in (d, os.path.realpath(d))}, "<")


_stand_ins: dict[int, Any] = {}  # id of a refusing stand-in -> what it stands in for


def _stand_in(owner: Any, name: str, stand_in: Any) -> None:
    """Put ``stand_in`` in place of ``owner.name``, remembering the real function behind it."""
    _stand_ins[id(stand_in)] = getattr(owner, name, None)
    setattr(owner, name, stand_in)


def _restore(saved: list[tuple[Any, str, Any]]) -> None:
    """Put back each ``(owner, name, the owner's own attribute or None when it inherited it)``,
    forgetting the stand-in (its id may be reused once it is gone)."""
    for owner, name, original in reversed(saved):
        _stand_ins.pop(id(vars(owner).get(name)), None)
        if original is None:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


def _codes(pairs: list[tuple[Any, str]]) -> dict[Any, str]:
    """The code of each refused function: the real one behind any stand-in, the innermost of
    its ``functools.wraps`` layers (the outer ones are shared wrappers, jax's api_boundary)."""
    codes: dict[Any, str] = {}
    for owner, name in pairs:
        function = getattr(owner, name, None)
        while id(function) in _stand_ins:
            function = _stand_ins[id(function)]
        while getattr(function, "__wrapped__", None) is not None:
            function = function.__wrapped__  # type: ignore[union-attr]
        code = getattr(function, "__code__", None)
        if code is not None:
            codes[code] = entry_points.label(owner, name)
    return codes


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
