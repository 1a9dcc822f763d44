"""Show recipes: how to turn a task's function into a program whose IR `katas show` prints.

Tasks take different arguments (a params pytree, a function, a mesh, nothing at all), so each
phase has a small table keyed by task function name (see `base.Recipe`). Array arguments are
`jax.ShapeDtypeStruct`s: nothing is computed, only traced and compiled. A task that reads IR or
compiles what it is handed (phases 3, 6, 7, 8, and the readers of phases 9-10) gets the tests'
program it works on, marked `given`. A task without a recipe gets "nothing to show": it returns
a Python value (a count, a timing, a pass name) rather than building a program.

To add a phase: write its table in one of the modules here and add it to `RECIPES`.
"""

from __future__ import annotations

from kata_harness.curriculum import Task

from .base import Recipe
from .basics import PHASE1, PHASE2, PHASE3, PHASE4
from .scale import PHASE8, PHASE9, PHASE10
from .transforms import PHASE5, PHASE6, PHASE7

__all__ = ["RECIPES", "Recipe", "recipe_for"]

RECIPES: dict[int, dict[str, Recipe]] = {
    1: PHASE1,
    2: PHASE2,
    3: PHASE3,
    4: PHASE4,
    5: PHASE5,
    6: PHASE6,
    7: PHASE7,
    8: PHASE8,
    9: PHASE9,
    10: PHASE10,
}


def recipe_for(task: Task) -> Recipe | None:
    return RECIPES.get(task.phase, {}).get(task.function)
