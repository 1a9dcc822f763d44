"""Stratified draws for phase 5's two predict tasks that draw fresh cases: one drawn case per
situation the contract distinguishes, every run, whatever the seed.

Independent random shapes meet a situation only by chance (a multi-axis output whose leading axis
alone would flip the answer, a batch on the last axis of W under a negative out_axes); here each
situation is a stratum and only the values inside it are drawn.
"""

from __future__ import annotations

import math
import random

# ---- cheaper_jacobian_mode: x of rank 1 to 3 (axes 1 to 4), f(x) of rank 0 to 3 (axes 1 to 5) --


def _shape(rng: random.Random, ranks: tuple[int, int], high: int) -> tuple[int, ...]:
    return tuple(rng.randint(1, high) for _ in range(rng.randint(*ranks)))


def _drawn(rng: random.Random, x_ranks, out_ranks, holds) -> tuple[tuple, tuple]:
    """x and f(x) shapes of those ranks, one side at least twice the other's size, drawn until
    `holds(x, out)`."""
    while True:
        x, out = _shape(rng, x_ranks, 4), _shape(rng, out_ranks, 5)
        n_in, n_out = math.prod(x), math.prod(out)
        if max(n_in, n_out) >= 2 * min(n_in, n_out) and holds(x, out):
            return x, out


def jacobian_mode_strata(rng: random.Random) -> dict[str, tuple[tuple, tuple]]:
    """(x shape, f(x) shape) per situation: a scalar output; more inputs than outputs though
    every axis of x alone is shorter than f(x); more outputs than inputs though every axis of
    f(x) alone is shorter than x (so an answer reading one axis instead of the size flips)."""
    return {
        "wide: f(x) a scalar": _drawn(rng, (1, 3), (0, 0), lambda x, out: math.prod(x) >= 2),
        "wide: x of rank >= 2, each axis of x shorter than f(x)'s size": _drawn(
            rng, (2, 3), (1, 3), lambda x, out: max(x) < math.prod(out) < math.prod(x)
        ),
        "tall: f(x) of rank >= 2, each axis of f(x) shorter than x's size": _drawn(
            rng, (1, 3), (2, 3), lambda x, out: max(out) < math.prod(x) < math.prod(out)
        ),
    }


# ---- vmapped_shape: W (m, n), v (n,), the batch on any axis of one or both -----------------------

_IN_AXES = (
    *((w, None) for w in range(3)),
    *((None, v) for v in range(2)),
    *((w, v) for w in range(3) for v in range(2)),
)
_OUT_AXES = (0, 1, -1, -2)


def vmap_strata(rng: random.Random) -> dict[str, tuple[tuple, tuple, tuple, int]]:
    """(W shape, v shape, in_axes, out_axes) per in_axes the contract allows (the batch on each
    axis of W, of v, or of both; None for the shared one), the out_axes 0, 1, -1 and -2 spread
    over them; the batch (2 to 9), m and n drawn distinct, so that an answer that takes one for
    another differs, and m or n of size 1 in every third case."""
    out_axes = [_OUT_AXES[k % len(_OUT_AXES)] for k in range(len(_IN_AXES))]
    rng.shuffle(out_axes)
    cases = {}
    for k, (in_axes, out) in enumerate(zip(_IN_AXES, out_axes, strict=True)):
        batch = rng.randint(2, 9)
        m, n = rng.sample([d for d in range(1 if k % 3 else 2, 10) if d != batch], 2)
        if k % 3 == 0:
            m, n = (1, n) if rng.random() < 0.5 else (m, 1)
        shapes = [
            tuple(example if axis is None else [*example[:axis], batch, *example[axis:]])
            for example, axis in zip(([m, n], [n]), in_axes, strict=True)
        ]
        cases[f"in_axes {in_axes}, out_axes {out}"] = (shapes[0], shapes[1], in_axes, out)
    return cases
