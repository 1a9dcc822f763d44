"""Show recipes: how to turn a task's function into a program whose IR `katas show` prints.

Tasks take different arguments (a params pytree, a function, nothing at all), so each phase that
has something worth showing gets a small table here, keyed by task function name. A recipe's
`build(module)` gets the learner's (or the reference) module and returns `(fn, args)`; `fn` may
already be `jax.jit`-wrapped (then static arguments are passed in `args` as plain values). Array
arguments are `jax.ShapeDtypeStruct`s: nothing is computed, only traced and compiled.

To add a phase: write its recipes below and add them to `RECIPES`. A task without a recipe gets
"nothing to show" (for example tasks that return a Python value rather than compute on arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp

from kata_harness.curriculum import Task


@dataclass(frozen=True, slots=True)
class Recipe:
    build: Callable[[ModuleType], tuple[Callable[..., Any], tuple[Any, ...]]]
    about: str


def _f32(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def _mlp_params() -> dict[str, jax.ShapeDtypeStruct]:
    return {"w1": _f32(16, 32), "b1": _f32(32), "w2": _f32(32, 4), "b2": _f32(4)}


def _power(x, n: int):
    result = x
    for _ in range(n - 1):
        result = result * x
    return result


PHASE1 = {
    "init_params": Recipe(lambda m: (lambda key: m.init_params(key, 16, 32, 4),
                                     (jax.random.key(0),)),
                          "init_params(key, 16, 32, 4)"),
    "mlp_forward": Recipe(lambda m: (m.mlp_forward, (_mlp_params(), _f32(8, 16))),
                          "mlp_forward(params, x) with x f32[8,16], hidden 32, out 4"),
    "mse_loss": Recipe(lambda m: (m.mse_loss, (_mlp_params(), _f32(8, 16), _f32(8, 4))),
                       "mse_loss(params, x f32[8,16], y f32[8,4])"),
    "loss_and_grad": Recipe(lambda m: (m.loss_and_grad, (_mlp_params(), _f32(8, 16), _f32(8, 4))),
                            "loss_and_grad(params, x f32[8,16], y f32[8,4])"),
    "make_power_jit": Recipe(lambda m: (m.make_power_jit(_power), (_f32(3), 3)),
                             "make_power_jit(power)(x f32[3], n=3)"),
    "abs_where": Recipe(lambda m: (m.abs_where, (_f32(8),)), "abs_where(x f32[8])"),
    "abs_cond": Recipe(lambda m: (m.abs_cond, (_f32(),)), "abs_cond(x f32[])"),
}

PHASE2 = {
    "mlp_jaxpr": Recipe(lambda m: (m.mlp, (_mlp_params(), _f32(8, 16))),
                        "the phase's mlp(params, x), the program this task traces"),
}

RECIPES: dict[int, dict[str, Recipe]] = {1: PHASE1, 2: PHASE2}


def recipe_for(task: Task) -> Recipe | None:
    return RECIPES.get(task.phase, {}).get(task.function)
