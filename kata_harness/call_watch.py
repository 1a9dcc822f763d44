"""Starts of chosen functions, seen under any name they are reached by, for the predict refusal
(:mod:`.predict`).

The watch asks ``sys.monitoring`` for the start of just those functions' code, so nothing else
the process runs pays for it. ``sys.setprofile``, used before, ran a Python hook on every call of
the process while an answer ran (about five million in one run of the kata tests), and each of
its reads of a frame's ``f_code`` raised an audit event for the guard's hook (:mod:`.guard`).

A watch is global to the process, not to a thread: a refused function started by a thread the
answer left running is seen too. Watches nest as ``sys.setprofile`` hooks did: an inner watch's
callbacks stand in for the outer's until it ends, and everything is put back as it was.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

_EVENTS = sys.monitoring.events
_STARTS = _EVENTS.PY_START | _EVENTS.PY_RESUME  # a generator's resume is a start, as for a profiler
_EXITS = _EVENTS.PY_RETURN | _EVENTS.PY_YIELD  # local events; an exception's exit is PY_UNWIND
_tool: list[int] = []  # the sys.monitoring tool id this process's watches use


def _tool_id() -> int:
    """A tool id no one else uses (3 and 4 are free by convention; debuggers, coverage,
    profilers and optimizers take 0, 1, 2 and 5), claimed once for the process."""
    if not _tool:
        free = [i for i in (3, 4, 2, 5, 1, 0) if sys.monitoring.get_tool(i) is None]
        if not free:
            raise RuntimeError("every sys.monitoring tool id is taken: the refusal cannot watch")
        sys.monitoring.use_tool_id(free[0], "xla-katas predict refusal")
        _tool.append(free[0])
    return _tool[0]


@contextmanager
def watching(
    codes: Collection[CodeType],
    started: Callable[[CodeType, FrameType], None],
    counted: Collection[CodeType] = (),
    left: Callable[[CodeType], None] = lambda code: None,
) -> Iterator[None]:
    """Within the block, call ``started(code, frame)`` whenever a function whose code is in
    ``codes`` starts (``frame`` is its own frame), and ``left(code)`` whenever one whose code is
    in ``counted`` returns, yields or is left by an exception."""
    monitoring, tool = sys.monitoring, _tool_id()

    def on_start(code: CodeType, _offset: int) -> None:
        started(code, sys._getframe(1))

    def on_exit(code: CodeType, _offset: int, _value: Any) -> None:
        if code in counted:
            left(code)

    callbacks = {_EVENTS.PY_START: on_start, _EVENTS.PY_RESUME: on_start}
    if counted:
        callbacks |= {e: on_exit for e in (_EVENTS.PY_RETURN, _EVENTS.PY_YIELD, _EVENTS.PY_UNWIND)}
    before = {event: monitoring.register_callback(tool, event, f) for event, f in callbacks.items()}
    local_before = {code: monitoring.get_local_events(tool, code) for code in {*codes, *counted}}
    global_before = monitoring.get_events(tool)
    try:
        for code, events in local_before.items():
            ours = (_STARTS if code in codes else 0) | (_EXITS if code in counted else 0)
            monitoring.set_local_events(tool, code, events | ours)
        if counted:  # PY_UNWIND is only ever global
            monitoring.set_events(tool, global_before | _EVENTS.PY_UNWIND)
        yield
    finally:
        monitoring.set_events(tool, global_before)
        for code, events in local_before.items():
            monitoring.set_local_events(tool, code, events)
        for event, callback in before.items():
            monitoring.register_callback(tool, event, callback)
