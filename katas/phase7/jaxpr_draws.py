"""Jaxprs drawn for phase 7's loop_primitives task: a few pieces, each hiding loops in another
holder, run one after the other in a drawn order (repeats included), so that every run walks a
new jaxpr.

The holders the bank (programs.JAXPR_PROGRAMS) lacks: a `custom_vjp` function (its
`custom_vjp_call` keeps the primal in `call_jaxpr`), `lax.custom_linear_solve` (its jaxprs sit in
a namedtuple, `_LinearSolveTuple`), and one jitted function called twice (JAX's trace cache
hands both `jit` equations the very same jaxpr object: each call still holds its loops). Each
piece's loops, depth first, are read off the piece (a loop, then the loops inside it); the
tests also compare the counts with xla_inspect's primitive census.

Every draw also holds two conditionals whose branches hold different loops, drawn: a
`lax.switch` of 3 to 5 branches and a `lax.cond`. The switch lists one function holding a loop
at two drawn places: JAX traces it once and its `cond` equation holds that very jaxpr object
twice, a branch each, so its loops count twice. A `cond` equation keeps its branches in one
param, a tuple in index order: `lax.switch`'s list as given, and for
`lax.cond(p, true_fn, false_fn)` the false branch first (index 0 is False). The branches are
drawn so that walking them in another order gives another list.

Every draw also holds a nest of three to five drawn levels (static or traced-bound fori_loops,
`jax.jit`, `jax.checkpoint`), the innermost a loop: loops deeper than any walk of a fixed number
of levels reaches.

Every draw also holds two look-alikes, primitives that run along an axis like a loop but are
no loop primitives: `cumsum` (the one a learner most often takes for a scan) and one drawn from
`cumprod`, `cummax`, `cummin`, `cumlogsumexp` and `sort`, each alone or in the body of a static
or traced-bound fori_loop (drawn): only `scan` and `while` count.
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


# what a branch may hold: (its loops depth first, the branch as a function of (v, n))
BRANCHES: dict[str, tuple[list[str], Callable]] = {
    "no loop": ([], lambda v, n: v * 2.0),
    "a static fori_loop": (["scan"], lambda v, n: fori(v, 3)),
    "a traced-bound fori_loop": (["while"], lambda v, n: fori(v, n)),
    "a while holding a scan": (
        ["while", "scan"],
        lambda v, n: lax.fori_loop(0, n, lambda i, c: fori(c, 2), v),
    ),
}


# primitives that look like loops and are none (jnp.cumsum's jaxpr holds `cumsum`, no scan)
LOOKALIKES: dict[str, Callable] = {
    "jnp.cumsum": jnp.cumsum,
    "jnp.cumprod": jnp.cumprod,
    "lax.cummax": lax.cummax,
    "lax.cummin": lax.cummin,
    "lax.cumlogsumexp": lax.cumlogsumexp,
    "jnp.sort": jnp.sort,
}


def draw_lookalike(rng: random.Random, name: str) -> tuple[str, Piece]:
    """The look-alike `name`, alone ([]) or in a static ([scan]) or traced-bound ([while])
    fori_loop's body, drawn."""
    op = LOOKALIKES[name]

    def alone(v):
        return v + op(v * jnp.arange(1.0, 4.0)).sum()

    place = rng.choice(("alone", "static", "traced"))
    if place == "alone":
        return f"{name}, no loop around it", (lambda x, n: alone(x), [])
    if place == "static":
        return f"{name} in a static fori_loop's body", (
            lambda x, n: lax.fori_loop(0, 3, lambda i, c: alone(c), x),
            ["scan"],
        )
    return f"{name} in a traced-bound fori_loop's body", (
        lambda x, n: lax.fori_loop(0, n, lambda i, c: alone(c), x),
        ["while"],
    )


def _branches(kinds: list[str], n) -> list[Callable]:
    return [lambda v, body=BRANCHES[kind][1]: body(v, n) for kind in kinds]


def draw_branching(rng: random.Random, spelled_cond: bool) -> tuple[str, Piece]:
    """A lax.cond of two drawn branches, or a lax.switch of 3 to 5 drawn branches, two of them
    one function holding a loop, and its loops depth first."""
    looping = [kind for kind in sorted(BRANCHES) if BRANCHES[kind][0]]
    while True:
        kinds = rng.choices(sorted(BRANCHES), k=2 if spelled_cond else rng.randint(1, 3))
        if not spelled_cond:  # one looping branch function at two drawn places
            twice = rng.choice(looping)
            for _ in range(2):
                kinds.insert(rng.randint(0, len(kinds)), twice)
        want = [loop for kind in kinds for loop in BRANCHES[kind][0]]
        if want != [loop for kind in reversed(kinds) for loop in BRANCHES[kind][0]]:
            break
    if spelled_cond:  # lax.cond(p, true_fn, false_fn) holds branches (false_fn, true_fn)
        false_kind, true_kind = kinds

        def run(x, n):
            false_fn, true_fn = _branches(kinds, n)
            return lax.cond(x > 0.0, true_fn, false_fn, x)

        return f"lax.cond(true: {true_kind}, false: {false_kind})", (run, want)

    def run_switch(x, n):
        # n an operand, not closed over: a branch closing over a tracer is traced anew per place
        functions = [lambda v, m, body=BRANCHES[kind][1]: body(v, m) for kind in kinds]
        shared = [i for i, kind in enumerate(kinds) if kind == twice]
        for i in shared:  # the same function object: JAX gives both one jaxpr object
            functions[i] = functions[shared[0]]
        return lax.switch(n % len(kinds), functions, x, n)

    listing = ", ".join(f"{kind} (one function)" if kind == twice else kind for kind in kinds)
    return f"lax.switch over [{listing}]", (run_switch, want)


# a level of a nest: (its loop if it is one, the level as a function of (inner, v, n))
LEVELS: dict[str, tuple[list[str], Callable]] = {
    "a static fori_loop": (["scan"], lambda g, v, n: lax.fori_loop(0, 2, lambda i, c: g(c, n), v)),
    "a traced-bound fori_loop": (
        ["while"],
        lambda g, v, n: lax.fori_loop(0, n, lambda i, c: g(c, n), v),
    ),
    "jax.jit": ([], lambda g, v, n: jax.jit(lambda c, m: g(c, m))(v, n)),
    "jax.checkpoint": ([], lambda g, v, n: jax.checkpoint(lambda c, m: g(c, m))(v, n)),
}


def draw_nest(rng: random.Random) -> tuple[str, Piece]:
    """Three to five levels nested one in the next (loops and holders that are no loops, drawn),
    the innermost a loop and at least two loops in all: loops deeper than any walk of a fixed
    number of levels reaches. Its loops depth first are the levels' loops, outermost first."""
    loops = [name for name in sorted(LEVELS) if LEVELS[name][0]]
    while True:
        levels = [*rng.choices(sorted(LEVELS), k=rng.randint(2, 4)), rng.choice(loops)]
        want = [loop for level in levels for loop in LEVELS[level][0]]
        if len(want) >= 2:
            break

    def nest(v, n, depth=0):
        if depth == len(levels):
            return v * 1.5
        return LEVELS[levels[depth]][1](lambda c, m: nest(c, m, depth + 1), v, n)

    return f"nested {' > '.join(levels)}", (nest, want)


def draw_pieces(rng: random.Random) -> list[tuple[str, Piece]]:
    """The needed pieces, a drawn cond and a drawn switch, a drawn nest, cumsum and a drawn
    look-alike, and one to three more (repeats allowed), in a drawn order."""
    names = [*NEEDED, *rng.choices(sorted(PIECES), k=rng.randint(1, 3))]
    pieces = [(name, PIECES[name]) for name in names]
    pieces += [draw_branching(rng, True), draw_branching(rng, False), draw_nest(rng)]
    other = rng.choice(sorted(set(LOOKALIKES) - {"jnp.cumsum"}))
    pieces += [draw_lookalike(rng, "jnp.cumsum"), draw_lookalike(rng, other)]
    rng.shuffle(pieces)
    return pieces


def chain(pieces: list[tuple[str, Piece]]) -> tuple[Callable, list[str]]:
    """A function of (x: float, n: int) running the pieces in order, and its loops depth first."""

    def run(x, n):
        for _, (piece, _) in pieces:
            x = piece(x, n)
        return x

    return run, [loop for _, (_, loops) in pieces for loop in loops]


def _is_jaxpr(value: object) -> bool:
    return hasattr(value, "eqns")


def _listed_param(value: object) -> object:
    if _is_jaxpr(value):
        return listed(value)
    if isinstance(value, tuple | list) and any(_is_jaxpr(item) for item in value):
        return [listed(item) if _is_jaxpr(item) else item for item in value]
    return value


def listed(jaxpr):
    """The same jaxpr (closed or open) with every tuple of jaxprs in an equation's params, at any
    depth (cond's branches, custom_linear_solve's namedtuple), rebuilt as a list in the same
    order: the holder's container kind is not the program's meaning, and the contract names
    both. Nothing is traced or compiled; only the params' containers change."""
    open_jaxpr = getattr(jaxpr, "jaxpr", jaxpr)  # a closed jaxpr wraps an open one (or is one)
    eqns = [
        eqn.replace(params={key: _listed_param(value) for key, value in eqn.params.items()})
        for eqn in open_jaxpr.eqns
    ]
    rebuilt = open_jaxpr.replace(eqns=eqns)
    return rebuilt if open_jaxpr is jaxpr else jaxpr.replace(jaxpr=rebuilt)
