"""Load the module a kata test runs against: the learner's file, the reference, or a decoy.

Modules are loaded from their file path under a private name, so a learner's file and the
reference can live in one process without clashing. A file that fails to import becomes one
:class:`KataLoadError` whose message names the phase, the file and what to do.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from .curriculum import ROOT, Phase
from .decoys import Decoy, decoys_in

IMPLS = ("katas", "reference")


class KataLoadError(Exception):
    """A kata, reference or decoy file could not be imported."""


_cache: dict[tuple[str, Path], tuple[int, ModuleType]] = {}


def _describe(error: BaseException, path: Path) -> str:
    if isinstance(error, SyntaxError):
        return f"SyntaxError at line {error.lineno}: {error.msg}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    where = f" at line {frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}{where}: {error}"


def load_file(path: Path, module_name: str, *, label: str) -> ModuleType:
    """Import ``path`` as ``module_name``; re-import only when the file changed."""
    path = path.resolve()
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise KataLoadError(f"{label}: {_relative(path)} is missing") from None
    cached = _cache.get((module_name, path))
    if cached and cached[0] == stamp:
        return cached[1]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # a learner's file may raise anything at import time
        sys.modules.pop(module_name, None)
        raise KataLoadError(
            f"{label}: {_relative(path)} does not import ({_describe(error, path)}); "
            "fix that file, the other phases are unaffected"
        ) from None
    _cache[(module_name, path)] = (stamp, module)
    return module


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def load_impl(phase: Phase, impl: str) -> ModuleType:
    """The learner's kata module (``katas``) or the reference module of a phase."""
    if impl == "katas":
        return load_file(phase.kata_path, f"_kata_{phase.name}", label=phase.name)
    if impl == "reference":
        return load_file(phase.reference_path, f"_reference_{phase.name}", label=phase.name)
    raise ValueError(f"unknown impl {impl!r}; expected one of {IMPLS}")


def phase_decoys(phase: Phase) -> list[Decoy]:
    if not phase.decoys_path.is_file():
        return []
    module = load_file(phase.decoys_path, f"_decoys_{phase.name}", label=f"{phase.name} decoys")
    return decoys_in(module)


def load_decoy(phase: Phase, decoy: Decoy) -> ModuleType:
    """A fresh copy of the reference module with one task function replaced by the decoy."""
    name = f"_decoy_{phase.name}_{decoy.name}"
    module = load_file(phase.reference_path, name, label=f"{phase.name} decoy {decoy.name}")
    setattr(module, decoy.replaces, decoy.function)
    return module
