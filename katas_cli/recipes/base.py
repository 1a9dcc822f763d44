"""What a recipe is, and the argument shapes and small programs the phase tables share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to build the program `katas show` compiles for one task.

    `build(module)` gets the learner's (or the reference) module and returns `(fn, args)`; `fn`
    may already be `jax.jit`-wrapped (static arguments then go in `args` as plain values).
    `given` marks a program that belongs to the tests, not to the learner: the task reads its IR
    (a text, a jaxpr, a compiled module) or compiles whatever it is handed, so the IR is the same
    for every learner and `compare` does not diff it.
    """

    build: Callable[[ModuleType], tuple[Callable[..., Any], tuple[Any, ...]]]
    about: str
    given: bool = False


def f32(*shape: int, sharding: Any = None) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)


def s32(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.int32)


def mlp_params() -> dict[str, jax.ShapeDtypeStruct]:
    """The curriculum's MLP: 16 inputs, 32 hidden, 4 outputs."""
    return {"w1": f32(16, 32), "b1": f32(32), "w2": f32(32, 4), "b2": f32(4)}


def mlp(params, x):
    """The MLP the tests of phases 3 and 10 compile (phases 2 and 5 ship it in the kata file)."""
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def given(program: Callable[..., Any], args: tuple[Any, ...], about: str) -> Recipe:
    """A recipe for a tests' program: the module is not used."""
    return Recipe(lambda _module: (program, args), about, given=True)
