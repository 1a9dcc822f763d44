"""Jaxprs drawn for phase 7's loop_primitives task: a few pieces, each hiding loops in another
holder, run one after the other in a drawn order (repeats included), so that every run walks a
new jaxpr.

The holders the bank (programs.JAXPR_PROGRAMS) lacks: a `custom_vjp` function (its
`custom_vjp_call` keeps the primal in `call_jaxpr`), `lax.custom_linear_solve` (its jaxprs sit in
a namedtuple, `_LinearSolveTuple`), and one jitted function called twice (JAX's trace cache
hands both `jit` equations the very same jaxpr object: each call still holds its loops). Each
piece's loops, depth first, are read off the piece (a loop, then the loops inside it); the
tests also compare the counts with xla_inspect's primitive census.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

from katas.phase7.programs import custom, fori, inner_jit


@jax.custom_vjp
def _vjp_fori(x):
    return lax.fori_loop(0, 3, lambda i, c: c * 1.5, x)


_vjp_fori.defvjp(lambda x: (_vjp_fori(x), None), lambda _, g: (g * 1.5**3,))


@jax.custom_vjp
def _vjp_jit_twice(x):
    return inner_jit(x) * inner_jit(x + 1.0)


_vjp_jit_twice.defvjp(lambda x: (_vjp_jit_twice(x), x), lambda x, g: (g,))


def _linear_solve(x, n):
    """matvec runs a static fori_loop (scan), solve a while_loop."""
    b = jnp.ones(3) * x
    return lax.custom_linear_solve(
        lambda v: lax.fori_loop(0, 3, lambda i, c: c + v * 0.0, v),
        b,
        solve=lambda matvec, r: lax.while_loop(lambda c: c.sum() < -1.0, lambda c: c, r),
    ).sum()


Piece = tuple[Callable, list[str]]

PIECES: dict[str, Piece] = {
    "a static fori_loop": (lambda x, n: fori(x, 5), ["scan"]),
    "a traced-bound fori_loop": (lambda x, n: fori(x, n), ["while"]),
    "one jitted function called twice": (
        lambda x, n: inner_jit(x) + inner_jit(x * 2.0),
        ["scan", "scan"],
    ),
    "custom_vjp around a fori_loop": (lambda x, n: _vjp_fori(x), ["scan"]),
    "custom_vjp calling one jitted function twice": (
        lambda x, n: _vjp_jit_twice(x),
        ["scan", "scan"],
    ),
    "custom_linear_solve: a fori_loop in matvec, a while_loop in solve": (
        _linear_solve,
        ["scan", "while"],
    ),
    "custom_jvp around a while_loop": (lambda x, n: custom(x), ["while"]),
    "checkpoint around a traced-bound fori_loop": (
        lambda x, n: jax.checkpoint(lambda v: fori(v, n))(x),
        ["while"],
    ),
}

# the pieces every draw includes: the holders the bank lacks
NEEDED = (
    "one jitted function called twice",
    "custom_vjp around a fori_loop",
    "custom_linear_solve: a fori_loop in matvec, a while_loop in solve",
)


def draw_pieces(rng: random.Random) -> list[str]:
    """The needed pieces and one to three more (repeats allowed), in a drawn order."""
    names = [*NEEDED, *rng.choices(sorted(PIECES), k=rng.randint(1, 3))]
    rng.shuffle(names)
    return names


def chain(names: list[str]) -> tuple[Callable, list[str]]:
    """A function of (x: float, n: int) running the pieces in order, and its loops depth first."""

    def run(x, n):
        for name in names:
            x = PIECES[name][0](x, n)
        return x

    return run, [loop for name in names for loop in PIECES[name][1]]
