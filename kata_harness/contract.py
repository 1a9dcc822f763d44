"""The return-type contract: each task function returns what the reference's annotation says.

Tests compare results with ``==``; an object whose ``__eq__`` always answers True, an ``int``
subclass, or a class the kata file defines for itself would pass such comparisons without being
an answer. So every task function of the module under test is wrapped: its return value must be of
the annotated type, checked strictly (``type(x) is int``, not ``isinstance``; containers element
by element). A mismatch raises :class:`ContractViolation`, an assertion the honest-kata checks
count as the task's tests catching a wrong answer.

Annotations are read from the reference module, never from the learner's file (deleting an
annotation there must not switch the check off). A result class the kata file itself defines (the
stub ships it, e.g. a timing dataclass) is matched by name and dataclass fields, since each module
under test holds its own copy.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import operator
import sys
import types
import typing
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from . import arguments, interrupts, process_state

# A builtin annotation and the concrete types that satisfy it. NumPy scalars count as numbers
# (``np.sum`` returns them), the standard library's dicts as dicts (a ``defaultdict(Counter)`` is
# a fine answer); other subclasses do not (they can redefine ``__eq__``).
_EXACT: dict[type, tuple[type, ...]] = {
    int: (int, np.integer),
    float: (float, int, np.floating, np.integer),
    bool: (bool, np.bool_),
    str: (str,),
    bytes: (bytes, bytearray),
    list: (list,),
    tuple: (tuple,),
    dict: (dict, collections.defaultdict, collections.OrderedDict, collections.Counter),
    set: (set, frozenset),
    np.ndarray: (np.ndarray,),  # a subclass's __array_ufunc__ can take the other operand's values
}
_UNCHECKED = (
    collections.abc.Callable,
    collections.abc.Iterator,
    collections.abc.Iterable,
    collections.abc.Generator,
    collections.abc.Sequence,
)


class ContractViolation(AssertionError):
    """A task function returned something of another type than the task asks for."""


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _exact(value: Any, allowed: tuple[type, ...]) -> bool:
    kind = type(value)
    if kind in allowed:
        return True
    # NumPy scalar types are abstract here (np.integer): any of NumPy's own scalar types is fine
    # (not a subclass that only claims to live in numpy).
    return kind in _NUMPY_SCALARS and any(
        isinstance(value, a) for a in allowed if a.__module__ == "numpy"
    )


_NUMPY_SCALARS = frozenset(t for t in np.sctypeDict.values() if isinstance(t, type))


def genuine(kind: type) -> bool:
    """Whether ``kind`` is found where it says it lives (its module, its qualified name): a class
    a kata file made and labelled ``__module__ = "numpy"`` is not."""
    found: Any = sys.modules.get(kind.__module__)
    for part in kind.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is kind


def mismatch(value: Any, hint: Any, module: ModuleType, where: str = "") -> str | None:
    """Why ``value`` does not satisfy ``hint`` (None when it does); ``module`` is under test."""
    if hint is Any or isinstance(hint, typing.TypeVar):
        return None
    if hint is None or hint is type(None):
        return None if value is None else f"{where}expected None, got {type(value).__name__}"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        reasons = [mismatch(value, option, module, where) for option in args]
        return (
            None
            if any(r is None for r in reasons)
            else (f"{where}expected {_name(hint)}, got {type(value).__name__}")
        )
    if origin in _UNCHECKED or hint in _UNCHECKED:
        return None
    if origin is type:
        ok = isinstance(value, type) and (not args or issubclass(value, args[0]))
        if ok and (value.__module__ == module.__name__ or not genuine(value)):
            return f"{where}expected a library class, got {value.__name__} defined in the kata"
        return None if ok else f"{where}expected a class {_name(hint)}, got {value!r:.60}"
    base = origin or hint
    if not isinstance(base, type):
        return None
    if base is collections.Counter:
        if type(value) is not collections.Counter:
            return f"{where}expected Counter, got {type(value).__name__}"
        return _items(value.items(), (args[0] if args else Any, int), module, where)
    if base in _EXACT:
        if not _exact(value, _EXACT[base]):
            own = " defined in the kata" if type(value).__module__ == module.__name__ else ""
            return f"{where}expected {_name(base)}, got {type(value).__name__}{own}"
        if base in (list, set) and args:
            return _each(value, args[0], module, where)
        if base is tuple and args:
            if len(args) == 2 and args[1] is Ellipsis:
                return _each(value, args[0], module, where)
            if len(value) != len(args):
                return f"{where}expected a tuple of {len(args)}, got {len(value)} items"
            for index, (item, item_hint) in enumerate(zip(value, args, strict=True)):
                reason = mismatch(item, item_hint, module, f"{where}item {index}: ")
                if reason:
                    return reason
            return None
        if base is dict and args:
            return _items(value.items(), args, module, where)
        return None
    if base.__module__ == getattr(module, "__kata_reference__", None):
        # A result class the kata file defines (the stub ships it): each module under test has
        # its own copy, so match by name and fields.
        kind = type(value)
        if kind.__name__ != base.__name__ or _fields(kind) != _fields(base):
            return f"{where}expected the kata's {base.__name__}, got {kind.__name__}"
        return None
    if not isinstance(value, base):
        return f"{where}expected {_name(base)}, got {type(value).__name__}"
    if type(value).__module__ == module.__name__ or not genuine(type(value)):
        return f"{where}expected {_name(base)}, got {type(value).__name__} defined in the kata"
    return None


def _fields(kind: type) -> tuple[str, ...] | None:
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(f.name for f in dataclasses.fields(kind))


def _each(values: Any, hint: Any, module: ModuleType, where: str) -> str | None:
    for index, item in enumerate(values):
        reason = mismatch(item, hint, module, f"{where}item {index}: ")
        if reason:
            return reason
    return None


def _items(items: Any, hints: tuple[Any, ...], module: ModuleType, where: str) -> str | None:
    for key, item in items:
        reason = mismatch(key, hints[0], module, f"{where}key {key!r:.40}: ") or mismatch(
            item, hints[1], module, f"{where}[{key!r:.40}]: "
        )
        if reason:
            return reason
    return None


def return_hints(reference: ModuleType, functions: list[str]) -> dict[str, Any]:
    """The reference's return annotation of each task function that has one."""
    hints = {}
    for name in functions:
        function = getattr(reference, name, None)
        if function is None:
            continue
        annotations = typing.get_type_hints(getattr(function, "__wrapped__", function))
        if "return" in annotations:
            hints[name] = annotations["return"]
    return hints


def wrap(
    module: ModuleType, label: dict[str, str], hints: dict[str, Any], reference_name: str
) -> None:
    """Wrap each task function of ``module`` in the check of its annotated return type.

    ``label`` maps a function name to the task it is ("phase3.task2 (entry_root)").
    """
    module.__kata_reference__ = reference_name  # type: ignore[attr-defined]
    for name, hint in hints.items():
        function = getattr(module, name, None)
        if function is None or not callable(function) or is_wrapped(function):
            continue
        setattr(module, name, _checked(function, hint, module, label[name]))


@functools.cache
def _measuring_libraries() -> tuple[Any, ...]:
    """What the tests measure with: a task that changes them grades itself."""
    import jax
    import jax.extend.backend
    import jax.numpy as jnp
    import jax.stages

    stages = (jax.stages.Compiled, jax.stages.Lowered, jax.stages.Traced, jax.stages.Wrapped)
    client = type(jax.extend.backend.get_backend())
    return (jax, jnp, jax.monitoring, np, np.testing, *stages, client)


_toolkit: tuple[int, tuple[ModuleType, ...]] = (-1, ())  # (len(sys.modules), its modules then)


def _libraries() -> tuple[Any, ...]:
    """The measuring libraries and the toolkit's loaded modules (tests read profiles, listings
    and modules with it). The toolkit's modules are looked up again only when the count of loaded
    modules changed: walking every loaded module's name cost each task call a millisecond."""
    global _toolkit
    count = len(sys.modules)
    if _toolkit[0] != count:
        found = [m for n, m in list(sys.modules.items()) if n.split(".")[0] == "xla_inspect"]
        _toolkit = (count, tuple(found))
    return _measuring_libraries() + _toolkit[1]


Snapshot = dict[str, tuple[Any, dict[str, Any]]]  # owner's name -> (owner, its names then)

# jax.config's settings are part of what the tests measure with: a kata file that sets, say,
# ``jax_dump_ir_to`` at import would read the programs the tests compile from the dumps
CONFIG = "jax.config"


def _config_values() -> dict[str, Any]:
    jax = sys.modules.get("jax")
    return jax.config.values if jax is not None else {}


def fingerprint() -> Snapshot:
    """``owner -> (owner, {name: value})`` over the libraries the tests measure with, and JAX's
    settings (``jax.config -> (None, {setting: value})``).

    One dict copy per library and no call per name: it runs around every call of a task
    function (some 6,000 in a run of the kata tests), where a call per name would cost each one
    milliseconds. Holding the values (not their ids) also keeps an id from being reused by a new
    object.
    """
    found = {owner.__name__: (owner, dict(vars(owner))) for owner in _libraries()}
    found[CONFIG] = (None, dict(_config_values()))
    found[_PROCESS] = (None, process_state.snapshot())
    return found


_PROCESS = "process-wide state"  # what a library keeps for every caller (:mod:`.process_state`)


def changed(before: Snapshot) -> list[str]:
    """What was replaced or removed since ``before`` (an import adding a submodule is not).

    Each library's names now are read where they live, without a copy; a library whose names
    are the same objects in the same order, each holding the same object, is passed over in C
    (``operator.is_`` over both dicts' keys, then values, without a lookup per name: a dict keeps
    a replaced name in its place, so a replacement, a removal or an addition changes the pairs).
    A JAX setting counts when its value is no longer equal (one set back to what it was is no
    change)."""
    found = []
    for label, (owner, values) in before.items():
        if label == _PROCESS:
            found += process_state.changed(values)
            continue
        if owner is None:
            settings = _config_values()
            if settings == values:  # one comparison in C, the usual case
                continue
            found += [
                f"{label} setting {name}"
                for name, value in values.items()
                if name not in settings or settings[name] != value
            ]
            continue
        now = vars(owner)
        if _same_pairs(now, values) or (
            values.keys() <= now.keys()  # an import added a submodule: look each name up
            and all(map(operator.is_, map(now.__getitem__, values), values.values()))
        ):
            continue
        for name, value in values.items():
            if name not in now or now[name] is not value:
                found.append(f"{label}.{name}")
    return sorted(found)


def _same_pairs(now: dict[str, Any], then: dict[str, Any]) -> bool:
    return (
        len(now) == len(then)
        and all(map(operator.is_, now, then))
        and all(map(operator.is_, now.values(), then.values()))
    )


def restore(before: Snapshot) -> list[str]:
    """Put back what was replaced or removed since ``before`` (see :func:`changed`) and return
    what it was: a refused file's patch (``Compiled.as_text`` replaced at import) must not
    outlive it, or every later test of the process reads the kata's answer as the library's."""
    patched = changed(before)
    if not patched:
        return patched
    for label, (owner, values) in before.items():
        if label == _PROCESS:
            continue  # a logger's filters or the global generator: refused, not put back
        if owner is None:
            _restore_config(values)
            continue
        now = vars(owner)
        for name, value in values.items():
            if name not in now or now[name] is not value:
                try:
                    setattr(owner, name, value)
                except (AttributeError, TypeError):  # a read-only owner: changed() still says so
                    pass
    return patched


def _restore_config(values: dict[str, Any]) -> None:
    jax = sys.modules.get("jax")
    settings = _config_values()
    for name, value in values.items():
        if jax is not None and name in settings and settings[name] != value:
            jax.config.update(name, value)


def _checked(function: Any, hint: Any, module: ModuleType, task: str) -> Any:
    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        before, given = fingerprint(), arguments.taken(args, kwargs)
        try:
            with arguments.caller_unnamed():
                value = function(*args, **kwargs)
        except BaseException as error:
            if not _escapes(error):
                raise
            raise ContractViolation(
                f"{task} raised {type(error).__name__} [{_innermost(error)}], which ends a test "
                "or the run without a verdict, instead of returning: a task function returns its "
                "answer (or fails with an Exception)"
            ) from error
        finally:
            patched = restore(before)
        if patched:
            raise ContractViolation(
                f"{task} changed {patched[0]}: kata code may not change the libraries the tests "
                "measure with, nor leave anything in what a library keeps for the whole process"
            )
        if changed := arguments.changes(given):
            raise ContractViolation(
                f"{task} changed what its caller passed: {changed[0]}; a task function reads "
                "its arguments and leaves them as they were given"
            )
        reason = mismatch(value, hint, module)
        if reason:
            raise ContractViolation(
                f"{task} returned the wrong type: {reason} (the task returns {_name(hint)})"
            )
        return value

    _wrappers[id(checked)] = checked
    return checked


def _escapes(error: BaseException) -> bool:
    """A BaseException that is not an Exception, raised by kata code to leave the test neither
    failed nor passed (GeneratorExit, SystemExit, KeyboardInterrupt, a class of its own): a wrong
    answer, as is ``pytest.exit()`` (an Exception pytest ends the run on). Not a
    KeyboardInterrupt a real Ctrl-C caused (:mod:`.interrupts`: Ctrl-C stops the run), not
    pytest's other outcomes (a skip from kata code is judged as one; a timeout is reported as
    one), not the harness's own (a predict task's refusal), each a class found where it says it
    lives."""
    if isinstance(error, pytest.exit.Exception):  # pytest.exit(): kata code may not end the run
        return True
    if isinstance(error, Exception):
        return False
    if isinstance(error, KeyboardInterrupt):
        return interrupts.raised_by_code(error)
    return not any(
        kind.__module__.startswith(("_pytest", "pytest", "kata_harness")) and genuine(kind)
        for kind in type(error).__mro__
    )


def _innermost(error: BaseException) -> str:
    """folder/file:line of the innermost frame the error passed through."""
    tb, found = error.__traceback__, "?"
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename.replace("\\", "/").split("/")
        found, tb = f"{'/'.join(path[-2:])}:{tb.tb_lineno}", tb.tb_next
    return found


# The harness's own wrappers, by identity: a marker attribute could be set by a kata file (and
# functools.wraps copies a function's attributes onto its wrapper), and an object could answer
# == or hash() as it likes.
_wrappers: dict[int, Any] = {}


def is_wrapped(function: Any) -> bool:
    """Whether ``function`` is one of the harness's wrappers (this module's or another's)."""
    return _wrappers.get(id(function)) is function


def mark_wrapper(function: Any) -> None:
    """Record a wrapper another harness module made around a task function."""
    _wrappers[id(function)] = function
