"""Process-wide state a library keeps for whoever asks, read for :mod:`.contract`'s check that a
task function leaves it as it found it.

The copy of a learner's file that answers predictions (:mod:`.sealed`) shares the process with
the copy whose read tasks compile. What a read task leaves in an object every caller of a library
gets back (the logger ``logging.getLogger(name)`` returns, a filter or handler on it, the state
of NumPy's global random generator) reaches the prediction. The scan refuses the setters and
registries kata code never needs (:mod:`.guard_lists`); these are the ones honest code uses
(phase 7 adds a handler to JAX's logger and removes it again), so a call is judged by what it
leaves behind.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np


def _handler(handler: Any) -> tuple[Any, ...]:
    return (id(handler), handler.level, tuple(map(id, handler.filters)), len(vars(handler)))


def _logger(logger: Any) -> tuple[Any, ...]:
    return (
        logger.level,
        logger.propagate,
        logger.disabled,
        tuple(map(id, logger.filters)),
        tuple(map(_handler, logger.handlers)) if logger.handlers else (),
        len(vars(logger)),
    )


_PLAIN = (logging.NOTSET, True, False, (), ())  # a logger as getLogger first makes it


def _loggers() -> dict[str, tuple[Any, ...]]:
    found = {
        name: _logger(logger)
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger)
    }
    found[""] = _logger(logging.getLogger())
    return found


def snapshot() -> dict[str, Any]:
    """``what -> its state``: each logger's settings, filters and handlers (by identity), the
    logging manager's, the state of NumPy's global random generator (the scan refuses Python's
    ``random``) and, once torch is loaded, its grad mode (phase 16: an answer that switches
    gradients off for good changes every later caller's module)."""
    state = np.random.get_state()
    found = {
        "logging": _loggers(),
        "logging.disable": logging.Logger.manager.disable,
        "the logger class": logging.getLoggerClass(),
        "numpy's global random generator": (state[0], state[1].tobytes(), *state[2:]),
    }
    torch = sys.modules.get("torch")  # read only once loaded: importing it takes seconds
    if torch is not None and hasattr(torch, "is_grad_enabled"):
        found["torch's grad mode (torch.set_grad_enabled)"] = torch.is_grad_enabled()
    return found


def changed(before: dict[str, Any]) -> list[str]:
    """What differs from ``before``. A logger made meanwhile counts when it carries a filter, a
    handler or a setting (attributes stored on it are the scan's: :mod:`.source_scan`), but one
    named after a loaded module (a library's ``getLogger(__name__)`` as it imports) only when it
    carries a filter."""
    now = snapshot()
    found = [what for what in before if what != "logging" and now[what] != before[what]]
    if now["logging"] == before["logging"]:  # one comparison in C, the usual case
        return found
    for name, state in now["logging"].items():
        was = before["logging"].get(name)
        if was is None:
            if state[:5] == _PLAIN or (name in sys.modules and not state[3]):
                continue
        elif was == state:
            continue
        found.append(f"the logger {name or 'root'!r} (logging.getLogger keeps it for every caller)")
    return found
