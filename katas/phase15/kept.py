"""The expected side of a phase-15 test's drawn cases, computed once per test, draw and case.

Under one ``--kata-seed`` the census runs a test on every version of a kata file (reference,
stub, decoys, the red team's answers), and each version's ``fresh`` starts from the same state,
so it draws the same cases. What the test computes from its own draws alone (XLA's values of a
drawn program, IREE's own run of its export, the export's verdict) is then the same on every
version: it is kept here under the test's name, the generator's state before the test drew
anything and the case's place among its draws. Nothing an answer returned or computed is kept,
and what is kept is read-only. Without a fixed seed each version draws its own cases, and
nothing is shared.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Any

import jax
import numpy as np


class PerDraw:
    """The expected values of one run of a test that draws from ``rng``; make it before the
    test draws (its key is the generator's state then)."""

    def __init__(self, test: str, rng: random.Random) -> None:
        self._key = (test, rng.getstate())

    def __call__[T](self, case: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, once per test, starting state and ``case``."""
        key = (*self._key, case)
        if key not in _KEPT:
            _KEPT[key] = compute()
        return _KEPT[key]


_KEPT: dict[tuple[Any, ...], Any] = {}


def host_leaves(tree: Any) -> list[np.ndarray]:
    """Every leaf of ``tree`` as a read-only NumPy array."""
    leaves = [np.array(leaf) for leaf in jax.tree.leaves(tree)]
    for leaf in leaves:
        leaf.setflags(write=False)
    return leaves
