"""Ctrl-C told apart from a KeyboardInterrupt that kata code raises itself.

A KeyboardInterrupt stops a pytest session, so a task function that raised one would end the run
with no verdict and the other phases not run. Ctrl-C must still stop the run. :func:`watch`
counts the SIGINTs this process receives (then raises KeyboardInterrupt as Python does), and
:func:`raised_by_code` tells the contract (:mod:`.contract`) that a KeyboardInterrupt came with no
SIGINT behind it: the kata's own, judged as a wrong answer. Where another handler is in place (or
this is not the main thread), every KeyboardInterrupt stops the run as before.
"""

from __future__ import annotations

import signal
import threading

_state = {"watching": False, "received": 0}


def _interrupted(signum, frame) -> None:
    _state["received"] += 1
    signal.default_int_handler(signum, frame)


def watch() -> None:
    """Count this process's SIGINTs from now on, where Python's own handler is in place; where
    SIGINT is ignored (a background job, CI) or ends the process, no Ctrl-C ever raises
    KeyboardInterrupt here, so every one is the code's."""
    if _state["watching"] or threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGINT)
    if current is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted)
    elif current not in (signal.SIG_IGN, signal.SIG_DFL):
        return
    _state["watching"] = True


def raised_by_code(error: BaseException) -> bool:
    """Whether ``error`` is a KeyboardInterrupt no SIGINT of this process caused."""
    return isinstance(error, KeyboardInterrupt) and _state["watching"] and not _state["received"]
