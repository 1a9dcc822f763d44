"""Predictions sealed off from what kata code measured elsewhere.

A predict task's answer may compute from its arguments and the file's own code, nothing else.
Three ways around that are closed here:

- Files. While a predict answer runs or a learner's file loads (:func:`sealed`), an audit hook
  refuses kata code reading or listing files: a memo a read task or an exit hook wrote in an
  earlier run (numbers the compiler gave, keyed by the cases a prediction was asked about) cannot
  come back into a prediction, neither in the answer nor into the module while it loads. The
  rule is about what is read, whoever opens it (``linecache.getline`` reads any file): an
  installed module's files (the standard library, site-packages, the course's toolkit; kata code
  may not write there) and the kata file's own source are all a sealed block may read.
- Live objects. In a sealed block (the same two), kata code may not reach the process's objects
  through the garbage collector (``gc.get_objects``, ``get_referrers``, ``get_referents``:
  the executables and captures the tests compiled earlier, alive in JAX's caches) nor the
  callers' frames (``sys._getframe``, a traceback's or generator's frame: the test's locals
  and module), under whatever module re-exports them (``timeit.gc``, ``dataclasses.inspect``).
  What a library reads for itself (JAX's traceback filtering, logging naming its caller) and
  the harness's own hooks are not refused.
- Module state. The harness answers a learner's predict tasks from a second copy of the file,
  loaded with the first (:func:`answered_by`): what the read tasks (which may compile) stored in
  the module the tests call cannot reach a prediction, whatever order the tests run in.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from . import guard

_EVENTS = ("open", "os.listdir", "os.scandir", "glob.glob", "os.walk")
# The import machinery lists the folders on sys.path to find a module (names only); what it then
# opens is judged like any read.
_LISTING_IMPORTS = ("<frozen importlib", "<frozen zipimport")

# What reaches live objects (see the module's docstring): audit events, and the attributes
# CPython audits as ``object.__getattr__`` that hand out a frame
_REACH_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe")
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
REACHED = "reached live objects"  # how a refused reach starts its line

_active: list[list[str]] = []  # one list of refused reads per sealed block, innermost last
_judging: list[bool] = []  # set while the hook judges (its own sys._getframe is not judged)
_installed = False


@contextmanager
def sealed() -> Iterator[list[str]]:
    """While the block runs, kata code's file reads are refused; yields what was refused (one
    line each), for the caller to fail the test with, as the answer may catch the error."""
    global _installed
    if not _installed:
        sys.addaudithook(_audit)  # once per process: audit hooks cannot be removed
        _installed = True
    refused: list[str] = []
    _active.append(refused)
    try:
        yield refused
    finally:
        _active.remove(refused)


def _audit(event: str, args: tuple) -> None:
    if not _active or _judging:
        return
    if event in _REACH_EVENTS or (
        event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES
    ):
        _judging.append(True)
        try:
            _judge_reach(event if event != "object.__getattr__" else f".{args[1]}")
        finally:
            _judging.pop()
        return
    if event not in _EVENTS:
        return
    target = args[0] if args else None
    if event == "open" and (target is None or isinstance(target, int)):
        return
    path = _path(target)
    if path is not None and path.startswith(guard.installed_dirs()):
        return  # an installed module's source or data: nothing kata code can have written
    frame: Any = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if event != "open" and filename.startswith(_LISTING_IMPORTS):
            return
        if guard.is_kata_file(filename):
            if path == os.path.realpath(filename):
                return  # the file's own source (a warning or a traceback quoting it)
            line = f"{event} {target}"
            _active[-1].append(line)
            raise guard.KataGuardError(
                f"kata code read a file where a prediction is sealed off ({line}): a "
                "prediction comes from its arguments, not from what was measured and kept"
            )
        frame = frame.f_back


def _judge_reach(what: str) -> None:
    """Refuse a reach of live objects made while kata code runs, unless the code that made it
    is a library reading for itself (JAX, logging, an installed module's own code run by kata
    code's import: absl's flags read their importer's globals as optax first loads) or the
    harness."""
    caller: Any = sys._getframe(2)  # the code that called gc, sys._getframe or read the frame
    filename = caller.f_code.co_filename
    if filename.startswith(_reading_for_itself()):
        return
    importing = False  # the import machinery stands between the caller and kata code
    frame = caller
    while frame is not None:
        name = frame.f_code.co_filename
        importing = importing or name.startswith(_LISTING_IMPORTS)
        if guard.is_kata_file(name):
            if importing and filename.startswith(guard.installed_dirs()):
                return
            line = f"{REACHED} ({what})"
            _active[-1].append(line)
            raise guard.KataGuardError(
                f"kata code {line} where a prediction is sealed off: a prediction comes from "
                "its arguments, not from what the tests compiled or hold"
            )
        frame = frame.f_back


@functools.cache
def _reading_for_itself() -> tuple[str, ...]:
    """Where code reads frames for itself only: the harness, JAX's traceback filtering and
    logging naming the caller of a record (neither hands a frame back to its caller)."""
    import logging

    import jax

    dirs = [os.path.dirname(guard.__file__), os.path.dirname(jax.__file__)]
    return (*(os.path.join(d, "") for d in dirs), logging.__file__)


def _path(target: object) -> str | None:
    """The real path an event names (a folder's for os.walk, glob's pattern as given)."""
    try:
        return os.path.realpath(os.fsdecode(target))  # type: ignore[arg-type]
    except TypeError:
        return None


def answered_by(module: ModuleType, copy: ModuleType, functions: list[str]) -> None:
    """Each of ``functions`` of ``module`` becomes the same function of ``copy``, a second load
    of the same file that no test calls anything else of."""
    for name in functions:
        answer = getattr(copy, name, None)
        if answer is not None:
            setattr(module, name, answer)
