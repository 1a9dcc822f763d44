"""TPU and GPU targets in kata tests: live compiles that skip without their dependency group, and
modules recorded from those compiles so that IR-reading tasks run everywhere.

A phase's ``programs.py`` may define ``RECORDINGS``: name -> :class:`Recording`. Each is kept as
``katas/phaseN/recorded/<name>.hlo``, optimized HLO text led by ``//`` lines naming the target, the
compiler versions and the program (XLA's parser skips them). Tests read it with :func:`recorded`.
``tests/harness/test_recordings.py`` recompiles every recording whose target's group is installed
and compares: a recording that no longer matches the compiler fails, naming the command that
records it again (the CPU snapshots' re-pin command, which rewrites the files):

    uv run pytest tests/harness/test_recordings.py --impl=reference --snapshot-update
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from xla_inspect import targets
from xla_inspect.targets import Target

from . import recordings

if TYPE_CHECKING:
    import jax.stages

RECORD_COMMAND = "uv run pytest tests/harness/test_recordings.py --impl=reference --snapshot-update"


@dataclass(frozen=True)
class Recording:
    """A program compiled for ``target``: ``lower(target)`` returns its ``jax.stages.Lowered``
    (arguments placed with ``target.place``/``target.mesh``); ``what`` says in one line what it
    is; ``compiler_options`` go to ``compile``."""

    target: str
    what: str
    lower: Callable[[Target], jax.stages.Lowered]
    compiler_options: Mapping[str, Any] = field(default_factory=dict)


def require(name: str) -> Target:
    """The target called ``name``, or skip the test saying which group to install."""
    target = targets.get(name)
    missing = target.missing()
    if missing is not None:
        pytest.skip(f"needs: {target.install_command} ({missing})")
    return target


def recorded_path(phase: str, name: str) -> Path:
    return recordings.recorded_path(phase, name, ".hlo")


def recorded(phase: str, name: str) -> str:
    """The recorded optimized HLO text of ``phaseN``'s recording ``name`` (with its header)."""
    return recordings.read_recorded(recorded_path(phase, name), RECORD_COMMAND)


@contextmanager
def _stable_locations() -> Iterator[None]:
    """Source locations that depend on the program only: file names without directories (the
    checkout's path is not in the text) and the program's own frame without its callers
    (pytest's or xdist's frames would make a recording differ between -n 0 and -n auto)."""
    import jax

    settings = {
        "jax_hlo_source_file_canonicalization_regex": ".*/",
        "jax_include_full_tracebacks_in_locations": False,
    }
    before = {name: getattr(jax.config, name) for name in settings}
    for name, value in settings.items():
        jax.config.update(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)


def compile_recording(recording: Recording) -> str:
    """Compile ``recording`` for its target now; the text as it would be recorded."""
    target = targets.get(recording.target)
    with _stable_locations():
        lowered = recording.lower(target)
        compiled = lowered.compile(compiler_options=dict(recording.compiler_options) or None)
    text = compiled.as_text()
    if text is None:
        raise RuntimeError(f"{recording.target} gave no optimized HLO text")
    options = "".join(f" {k}={v}" for k, v in sorted(recording.compiler_options.items()))
    header = [
        f"// recorded by: {RECORD_COMMAND}",
        f"// target: {target.name} ({target.description}){options}",
        f"{recordings.VERSIONS_LINE}{target.versions()}",
        f"// program: {recording.what}",
    ]
    return "\n".join(header) + "\n" + text
