"""What `katas show` compiles for a task, read from its phase's ``programs.py``.

Each ``katas/phaseN/programs.py`` holds the programs its tests compile (the functions, the banks
of programs the IR-reading tasks run on, the argument shapes) and a table ``SHOWN`` from task
function name to a :class:`Recipe`. The tests import their programs from there, and `katas show`,
`katas compare` and `katas graph` build the recipe's program, so both compile the same one.

A task without a recipe returns a Python value (a count, a timing, a pass name) rather than
building a program of its own: `katas show` has nothing to show for it.

Nothing here imports pytest or JAX: `katas show` loads this module before JAX starts.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .curriculum import Phase, Task, phase


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to build the program `katas show` compiles for one task.

    `build(module)` gets the learner's (or the reference) kata module and returns `(fn, args)`;
    `fn` may already be `jax.jit`-wrapped (static arguments then go in `args` as plain values).
    Array arguments are `jax.ShapeDtypeStruct`s: nothing runs, the program is only traced and
    compiled. `given` marks a program that belongs to the tests, not to the learner: the task
    reads its IR (a text, a jaxpr, a compiled module) or compiles whatever it is handed, so the
    IR is the same for every learner and `katas compare` does not diff it.
    """

    build: Callable[[ModuleType], tuple[Callable[..., Any], tuple[Any, ...]]]
    about: str
    given: bool = False


def given(program: Callable[..., Any], args: tuple[Any, ...], about: str) -> Recipe:
    """A recipe for one of the tests' programs: the kata module is not used."""
    return Recipe(lambda _module: (program, args), about, given=True)


_LOADED: dict[Path, ModuleType] = {}


def load(of: Phase) -> ModuleType | None:
    """The phase's ``programs.py`` as module ``katas.phaseN.programs``, or None if it has none.

    Loaded by path (the course may live elsewhere: ``KATAS_ROOT``, ``curriculum.course_at``) and
    registered under the name the tests import unless that name holds another file's module, so
    the tests and `katas show` share its objects.
    """
    path = of.programs_path.resolve()
    if not path.is_file():
        return None
    name = f"katas.{of.name}.programs"
    for known in (sys.modules.get(name), _LOADED.get(path)):
        if known is not None and Path(known.__file__ or "").resolve() == path:
            sys.modules.setdefault(name, known)  # dropped from sys.modules since: the tests'
            return known  # import must find this one again, not load a second copy
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    register = name not in sys.modules
    if register:
        sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if register:
            del sys.modules[name]
        raise
    _LOADED[path] = module
    return module


def recipes(of: Phase) -> Mapping[str, Recipe]:
    """The phase's table of recipes by task function name (empty without ``programs.py``)."""
    module = load(of)
    return getattr(module, "SHOWN", {}) if module is not None else {}


def recipe_for(task: Task) -> Recipe | None:
    return recipes(phase(task.phase)).get(task.function)
