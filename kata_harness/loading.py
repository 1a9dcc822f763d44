"""Load the module a kata test runs against: the learner's file, the reference, or a decoy.

Modules are loaded from their file path under a private name, so a learner's file and the
reference can live in one process without clashing. A file that fails to import becomes one
:class:`KataLoadError` whose message names the phase, the file and what to do.

A learner's file (and the shipped stub) is scanned before it is imported (:mod:`.guard`), and the
task functions of every module a test runs against are wrapped in the return-type contract
(:mod:`.contract`).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import traceback
import types
from pathlib import Path
from types import ModuleType
from typing import Any

from _pytest.outcomes import OutcomeException

from . import contract, curriculum, entry_points, guard, predict, sealed, source_scan, torch_setup
from .curriculum import Phase
from .decoys import (
    Accepted,
    Decoy,
    Probe,
    RedTeam,
    accepted_in,
    decoys_in,
    probe_of,
    redteam_in,
)
from .guard_lists import LIBRARIES, NEEDS_LIBRARIES

IMPLS = ("katas", "reference")


class KataLoadError(Exception):
    """A kata, reference or decoy file could not be imported."""


class KataRefused(KataLoadError):
    """The harness refused a kata file: the guard's scan, or a library changed as it loaded."""


_cache: dict[tuple[str, Path], tuple[int, ModuleType]] = {}
_compiled_at_load: dict[str, list[str]] = {}  # module name -> JAX events while it loaded


def _describe(error: BaseException, path: Path) -> str:
    if isinstance(error, SyntaxError):
        return f"SyntaxError at line {error.lineno}: {error.msg}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    where = f" at line {frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}{where}: {error}"


def load_file(
    path: Path,
    module_name: str,
    *,
    label: str,
    scan: bool = False,
    libraries: frozenset[str] | None = None,
) -> ModuleType:
    """Import ``path`` as ``module_name``; re-import only when the file changed.

    ``scan``: refuse a file that reaches into the test machinery (a learner's file);
    ``libraries``: the third-party packages it may import (:func:`libraries`; None: any).
    """
    path = path.resolve()
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise KataLoadError(f"{label}: {_relative(path)} is missing") from None
    cached = _cache.get((module_name, path))
    if cached and cached[0] == stamp:
        return cached[1]
    if scan:
        source = path.read_text(encoding="utf-8")
        found = source_scan.scan(source, str(path), libraries)
        if found:
            raise KataRefused(f"{label}: {_relative(path)} {found}: {guard.WHY}")
        if "torch" in source_scan.imported_roots(source):
            torch_setup.import_torch()  # whatever the phase: see import_needed
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    import jax

    jax.clear_caches()  # a file loaded before, or another copy, must not find the caches warm
    predict.count_client_compiles()  # before the fingerprint: the counter is the harness's
    before = contract.fingerprint()
    try:
        with (
            predict.compiles_seen() as seen,
            predict.calls_seen(
                _watched() if scan else (), _watched_layers() if scan else ()
            ) as called,
            sealed.sealed() as reads,
        ):
            spec.loader.exec_module(module)
    except (Exception, OutcomeException) as error:  # a learner's file may raise anything
        contract.restore(before)
        sys.modules.pop(module_name, None)
        _refuse_reads(scan, reads, label, path)  # a refused read the file did not catch
        raise KataLoadError(
            f"{label}: {_relative(path)} does not import ({_describe(error, path)}); "
            "fix that file, the other phases are unaffected"
        ) from None
    if scan and reads:
        sys.modules.pop(module_name, None)
        _refuse_reads(scan, reads, label, path)
    patched = contract.restore(before)
    if patched:
        sys.modules.pop(module_name, None)
        raise KataRefused(
            f"{label}: {_relative(path)} changes {patched[0]} while it loads: kata code may "
            "not change the libraries the tests measure with, nor leave anything in what a "
            "library keeps for the whole process; remove that"
        )
    _compiled_at_load[module_name] = seen + called
    _cache[(module_name, path)] = (stamp, module)
    return module


def allowed_libraries(phase: Phase) -> frozenset[str]:
    """The third-party packages a kata file of ``phase`` may import: the course's, and the one
    its ``needs`` names (torch for phase 16)."""
    return LIBRARIES | NEEDS_LIBRARIES.get(phase.needs or "", frozenset())


def _load_scanned(path: Path, module_name: str, label: str, phase: Phase) -> ModuleType:
    """A learner's file (or a probe standing in for one): scanned, with its phase's libraries."""
    return load_file(path, module_name, label=label, scan=True, libraries=allowed_libraries(phase))


def _refuse_reads(scan: bool, reads: list[str], label: str, path: Path) -> None:
    """A learner's file that read a file while it loaded (:mod:`.sealed`) is refused."""
    if scan and reads:
        raise KataRefused(
            f"{label}: {_relative(path)} reads a file while it loads ({reads[0]}): kata code "
            "reads what a test hands it, in the function that needs it; remove that"
        )


def _watched() -> set[str]:
    """What any predict task refuses beyond the compiler (jnp.result_type...), watched while a
    learner's file loads; a library not imported yet is left out (torch.compile: importing
    torch for it would cost every phase seconds, and a phase that needs torch imports it before
    its files load)."""
    return {
        name
        for phase in curriculum.phases()
        for task in phase.tasks
        for name in task.refuse
        if name.split(".")[0] in sys.modules
    }


def _watched_layers() -> list[tuple[Any, str]]:
    """JAX's tracing core and lowering layer, watched while a learner's file loads: a trace that
    no public function recorded (``jax.closure_convert``), or a lowering, counts as what the
    file did before any prediction."""
    return entry_points.tracing_core() + entry_points.lowering_layer()


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(curriculum.ROOT))
    except ValueError:
        return str(path)


@functools.cache
def _return_hints(phase: Phase, reference: ModuleType) -> dict:
    """Once per phase and reference module (the kata fixture asks on every test)."""
    return contract.return_hints(reference, [task.function for task in phase.tasks])


def _with_contract(module: ModuleType, phase: Phase) -> ModuleType:
    reference = load_file(phase.reference_path, f"_reference_{phase.name}", label=phase.name)
    labels = {task.function: f"{task.id} ({task.function})" for task in phase.tasks}
    at_load = _compiled_at_load.setdefault(module.__name__, [])
    with predict.compiles_seen() as seen:  # a task "function" may compile when looked at
        contract.wrap(module, labels, _return_hints(phase, reference), reference.__name__)
    at_load += seen
    predict.refuse_in(module, phase.tasks, at_load)
    return module


def _with_sealed_predictions(
    module: ModuleType, phase: Phase, path: Path, label: str
) -> ModuleType:
    """A learner's file (or a probe) with its predict tasks answered by a second copy of the
    file, loaded with it and wrapped the same way (:mod:`.sealed`)."""
    module = _with_contract(module, phase)
    predictions = [task.function for task in phase.tasks if task.kind == "predict"]
    if predictions:
        copy = _load_scanned(path, f"{module.__name__}_sealed", label, phase)
        sealed.answered_by(module, _with_contract(copy, phase), predictions)
    return module


def import_needed(phase: Phase) -> None:
    """Import the optional library the phase's tasks use before any of its files loads.

    Importing torch starts a program (``ldconfig``, through ctypes), which the guard refuses
    when kata code asked for the import; and torch cannot be imported again in a process where
    one import failed half-way. One learner's ``import torch`` (or a probe's) would then break
    every later test that imports torch. Imported here first, torch is in ``sys.modules``
    before any kata code runs, so an ``import torch`` there starts nothing. A scanned file of
    any other phase that imports torch gets the same (:func:`load_file`): a phase 11 answer
    importing torch broke phase 16 for the rest of the census's process.
    """
    if phase.needs == "torch":
        torch_setup.import_torch()


def load_impl(phase: Phase, impl: str) -> ModuleType:
    """The learner's kata module (``katas``) or the reference module of a phase."""
    import_needed(phase)
    if impl == "katas":
        module = _load_scanned(phase.kata_path, f"_kata_{phase.name}", phase.name, phase)
        return _with_sealed_predictions(module, phase, phase.kata_path, phase.name)
    if impl == "reference":
        module = load_file(phase.reference_path, f"_reference_{phase.name}", label=phase.name)
    else:
        raise ValueError(f"unknown impl {impl!r}; expected one of {IMPLS}")
    return _with_contract(module, phase)


def load_stub(phase: Phase) -> ModuleType:
    """The shipped stub (``katas/phaseN/kata.py`` in reference mode)."""
    import_needed(phase)
    module = _load_scanned(phase.kata_path, f"_stub_{phase.name}", phase.name, phase)
    return _with_contract(module, phase)


def _phase_variants(phase: Phase) -> ModuleType | None:
    if not phase.decoys_path.is_file():
        return None
    return load_file(phase.decoys_path, f"_decoys_{phase.name}", label=f"{phase.name} decoys")


def phase_decoys(phase: Phase) -> list[Decoy]:
    module = _phase_variants(phase)
    return decoys_in(module) if module else []


def phase_accepted(phase: Phase) -> list[Accepted]:
    module = _phase_variants(phase)
    return accepted_in(module) if module else []


def phase_redteam(phase: Phase) -> list[RedTeam]:
    found = []
    for path in phase.redteam_paths:
        label = f"{phase.name} red team ({path.name})"
        found += redteam_in(load_file(path, f"_redteam_{path.stem}", label=label))
    return found


def phase_probes(phase: Phase) -> list[Probe]:
    if not phase.probes_dir.is_dir():
        return []
    return [probe_of(path) for path in sorted(phase.probes_dir.glob("*.py"))]


def load_probe(phase: Phase, probe: Probe) -> ModuleType:
    """A probe is loaded exactly as a learner's file is: scanned, imported, contract-wrapped."""
    import_needed(phase)
    name, label = f"_probe_{phase.name}_{probe.name}", f"{phase.name} probe {probe.name}"
    module = _load_scanned(probe.path, name, label, phase)
    return _with_sealed_predictions(module, phase, probe.path, label)


def load_variant(phase: Phase, variant: Decoy | Accepted | RedTeam) -> ModuleType:
    """A fresh copy of the reference module with one task function replaced by ``variant``.

    The variant runs as if it were written in the kata file: its global names resolve in that
    module first (its ``matvec``, its ``Timing``, what a test patched there), then in the decoys
    file (its imports and helpers).
    """
    import_needed(phase)
    kind = {Decoy: "decoy", Accepted: "accepted", RedTeam: "redteam"}[type(variant)]
    name = f"_{kind}_{phase.name}_{variant.name}"
    module = load_file(phase.reference_path, name, label=f"{phase.name} {kind} {variant.name}")
    function = variant.function
    if isinstance(function, types.FunctionType):
        for key, value in function.__globals__.items():
            module.__dict__.setdefault(key, value)
        rebound = types.FunctionType(
            function.__code__,
            module.__dict__,
            function.__name__,
            function.__defaults__,
            function.__closure__,
        )
        rebound.__kwdefaults__ = function.__kwdefaults__
        function = functools.update_wrapper(rebound, function)
    setattr(module, variant.replaces, function)
    return _with_contract(module, phase)
