"""What kata code may not do: use the test machinery, or read the answers.

A learner's file is graded by the tests in its phase folder. Two checks keep the grade about the
code rather than about the grader:

- Before the file is imported its source is scanned (:func:`.source_scan.scan`): importing
  pytest, the harness or the reference, dynamic imports, patching a library, storing into what
  a module holds, threads and signal handlers are refused with one line naming the line.
- While any kata file runs, an audit hook (:func:`install`) refuses to open a file under
  ``reference/``, ``decoys/`` or Inductor's cache, to write anywhere in the course's checkout
  (the kata files too) or to the harness, however the path was spelled, and to start another
  program (where neither the hook nor the predict refusal would see what it does), or to
  change the environment variables, unless a compiler the kata code called does it for its own
  work (Inductor's g++ and its cache, Dynamo reading the source it compiles). Threads are
  refused by the scan for the same reason.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from . import curriculum
from .curriculum import KATA_FILE
from .guard_lists import STATE

WHY = (
    "kata code may not use the test machinery or read the answers "
    "(pytest, kata_harness, reference/, decoys/, dynamic imports); remove it"
)


class KataGuardError(RuntimeError):
    """Kata code tried to open the reference or the decoys."""


class KataGuardBytecodeError(KataGuardError, OSError):
    """A write of compiled bytecode (``__pycache__/*.pyc``) refused while kata code runs: an
    ``OSError`` too, so an import the kata code makes goes on without caching its bytecode (the
    import system skips a cache it cannot write) while a write of its own is still refused."""


@functools.cache
def is_kata_file(filename: str) -> bool:
    """A learner's file: katas/phaseN/kata.py, or a red-team probe standing in for one. Cached
    by name: the audit hooks ask it for every frame of the stack on every event they judge
    (pytest sets an environment variable three times per test), and a Path per frame made
    that a millisecond an event."""
    path = Path(filename)
    if path.name == KATA_FILE and path.parent.parent == curriculum.KATAS_DIR:
        return True
    return path.parent.parent == curriculum.DECOYS_DIR / "redteam" and path.suffix == ".py"


def _unreadable() -> tuple[str, ...]:
    """The answers (reference/, decoys/) and Inductor's cache (the course's, .cache/inductor,
    and one TORCHINDUCTOR_CACHE_DIR names): the code Inductor generated for earlier compiles,
    among them a live test's compile of the program a prediction is asked about. Inductor reads
    its cache itself, as a compiler the kata code called."""
    dirs = [
        curriculum.REFERENCE_DIR,
        curriculum.DECOYS_DIR,
        curriculum.ROOT / ".cache" / "inductor",
    ]
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if chosen:
        dirs.append(Path(chosen))
    return tuple(os.path.realpath(d) + os.sep for d in dirs)


@functools.cache
def installed_dirs() -> tuple[str, ...]:
    """Where installed Python code lives: the entries of ``sys.path`` the first time this is
    asked, before kata code runs (the standard library, site-packages, the course's toolkit), but
    the course's root (kata code may not write there either) and the current directory. A
    sealed prediction may read there (:mod:`.sealed`), so kata code may not write there."""
    root = os.path.realpath(curriculum.ROOT)
    found = {os.path.realpath(entry) for entry in sys.path if entry and os.path.isdir(entry)}
    found.discard(os.path.realpath(os.getcwd()))
    return tuple(
        os.path.join(d, "")
        for d in sorted(found)
        if not root.startswith(os.path.join(d, "")) and d != root
    )


def _unwritable() -> tuple[str, ...]:
    """The course's checkout (a kata file, its own included, that a read task appends a table
    of compiled answers to is read back as code by the next run's import; a ``pytest.ini``
    there changes how the tests run), the harness, and where installed code lives."""
    return (
        os.path.realpath(curriculum.ROOT) + os.sep,
        str(curriculum.HARNESS_DIR) + os.sep,
        *installed_dirs(),
    )


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_installed = False


def _protected(path: str, mode: object, flags: object) -> bool:
    if path.startswith(_unreadable()):
        return True
    writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and flags & _WRITE_FLAGS
    )
    if not writes:
        return False
    return path.startswith(_unwritable())


_PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn")
# os.environ[...] = ..., .update(...), .pop(...) under any name: the environment is the
# process's, read by the copy of the file that answers predictions
_ENVIRONMENT_EVENTS = ("os.putenv", "os.unsetenv")
_FORK_EVENTS = ("os.fork", "os.forkpty")
# Every event the hook acts on. The hook runs on every audited event of the process, and most are
# others: in a test run, ``object.__getattr__`` (a frame's ``f_code``, read by every call the
# predict refusal watches), ``builtins.id`` and ``sys._getframe`` come a million times and more.
_WATCHED = frozenset((*_PROCESS_EVENTS, *_FORK_EVENTS, *_ENVIRONMENT_EVENTS, "open"))


# Compilers whose own work, done for kata code that called them, the hook lets through (a
# package's module name): Inductor runs g++, a Python that checks the CPU's vector ISA and
# openssl when `torch.compile` compiles with an empty cache; Dynamo reads the source of the
# frames it compiles (the kata file's own, a probe's under decoys/). Refused half-way, either
# leaves torch broken for the rest of the process. Kata code reaches them only through
# torch.compile (the scan refuses the private modules); what they call back in kata code is
# checked again (that kata frame is then nearer the event than theirs).
_COMPILERS = ("torch._inductor", "torch._dynamo")


def _compiler_dirs() -> tuple[str, ...]:
    found = (sys.modules.get(name) for name in _COMPILERS)
    return tuple(os.path.dirname(m.__file__) + os.sep for m in found if m and m.__file__)


def _audit(event: str, args: tuple) -> None:
    if event not in _WATCHED:
        return
    error = KataGuardError
    if event in _PROCESS_EVENTS or event in _FORK_EVENTS:
        what = f"starts another program ({event})"
    elif event in _ENVIRONMENT_EVENTS:
        what = f"changes the environment ({event} {args[0] if args else ''}): {STATE}"
    elif not args or isinstance(args[0], int) or args[0] is None:  # an "open" of a descriptor
        return
    else:
        path = os.path.realpath(os.fsdecode(args[0]))
        mode, flags = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else None)
        if not _protected(path, mode, flags):
            return
        shown = Path(path)
        if shown.is_relative_to(curriculum.ROOT):
            shown = shown.relative_to(curriculum.ROOT)
        what = f"opens {shown}"
        if _is_bytecode(path):
            error = KataGuardBytecodeError
    frame = sys._getframe(1)
    compilers = _compiler_dirs()
    while frame is not None:
        if compilers and frame.f_code.co_filename.startswith(compilers):
            return  # the compiler's own work, on behalf of the kata code that called it
        if is_kata_file(frame.f_code.co_filename):
            where = Path(frame.f_code.co_filename)
            raise error(f"{where.parent.name}/{where.name} line {frame.f_lineno} {what}: {WHY}")
        frame = frame.f_back


def _is_bytecode(path: str) -> bool:
    """``__pycache__/x.cpython-312.pyc`` and the import system's temporary ``....pyc.<id>``."""
    head, name = os.path.split(path)
    return os.path.basename(head) == "__pycache__" and ".pyc" in name


def install() -> None:
    """Add the audit hook once per process (audit hooks cannot be removed)."""
    global _installed
    if not _installed:
        sys.addaudithook(_audit)
        _installed = True
