"""Phase 5 tests, tasks 9-10 (decide): a directional derivative and a Hessian-vector product within
a flops budget read from XLA's cost analysis of the compiled program, values against the chain
rule in NumPy. Expected values come from kata_harness.oracles.autodiff.
"""

from collections import Counter
from functools import cache

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import autodiff as oracle
from katas.phase5.programs import (
    DECIDE_SHAPES,
    layer_energy,
    layer_map,
    points,
    tanh_pair,
)

# ---- tasks 9-10: decide, under a flops budget -----------------------------------------------


@cache
def _original_cost(task: str, size: str) -> tuple[float, Counter]:
    """The cost of the program the task improves (test-owned, compiled once per session)."""
    w1, w2 = tanh_pair(*DECIDE_SHAPES[size])
    x, v = points(DECIDE_SHAPES[size][0])[0]
    if task == "directional_derivative":
        f = layer_map(w1, w2)
        return oracle.compiled_cost(lambda a, b: jax.jacfwd(f)(a) @ b, x, v)
    g = layer_energy(w1)
    return oracle.compiled_cost(lambda a, b: jax.hessian(g)(a) @ b, x, v)


def _answer(kata, task: str, w1, w2):
    """The learner's program as a function of (x, v), for one size's weights."""
    if task == "directional_derivative":
        f = layer_map(w1, w2)
        return lambda a, b: kata.directional_derivative(f, a, b)
    g = layer_energy(w1)
    return lambda a, b: kata.hessian_vector_product(g, a, b)


def _decide_values(kata, task: str) -> None:
    for size, (n, h, m) in DECIDE_SHAPES.items():
        w1, w2 = tanh_pair(n, h, m)
        answer = jax.jit(_answer(kata, task, w1, w2))
        for x, v in points(n):
            got = answer(x, v)
            if task == "directional_derivative":
                want = oracle.np_jv(w1, w2, x, v)
            else:
                want = oracle.np_hv(w1, x, v)
            assert np.shape(got) == want.shape, (
                f"{size}: shape {np.shape(got)}, expected {want.shape}"
            )
            with check:
                np.testing.assert_allclose(
                    np.asarray(got, np.float64), want, rtol=2e-5, atol=2e-5, err_msg=f"{size}"
                )


def _decide_budget(kata, task: str) -> None:
    original = {
        "directional_derivative": "jax.jacfwd(f)(x) @ v",
        "hessian_vector_product": "jax.hessian(g)(x) @ v",
    }[task]
    for size, (n, h, m) in DECIDE_SHAPES.items():
        w1, w2 = tanh_pair(n, h, m)
        x, v = points(n)[0]
        flops, unseen = oracle.compiled_cost(_answer(kata, task, w1, w2), x, v)
        original_flops, original_unseen = _original_cost(task, size)
        # the flops figure is only a budget when it sees all the work: no more hidden work
        # (loops, host calls) than the original program holds (which has none)
        hidden = sorted(unseen - original_unseen)
        with check:
            assert not hidden, (
                f"{size}: your compiled program holds {oracle.UNCOUNTED[hidden[0]]}, which "
                f"{original} does not: the flops budget must see all the work (one jvp-like "
                "pass needs no loop and no host)"
            )
        budget = original_flops / 4
        with check:
            assert flops <= budget, (
                f"{size}: {flops:.0f} flops, budget {budget:.0f} (a quarter of {original}'s "
                f"{4 * budget:.0f})"
            )


@pytest.mark.task("directional_derivative")
def test_directional_derivative_values(kata):
    _decide_values(kata, "directional_derivative")


@pytest.mark.task("directional_derivative")
def test_directional_derivative_within_budget(kata):
    _decide_budget(kata, "directional_derivative")


@pytest.mark.task("hessian_vector_product")
def test_hessian_vector_product_values(kata):
    _decide_values(kata, "hessian_vector_product")


@pytest.mark.task("hessian_vector_product")
def test_hessian_vector_product_within_budget(kata):
    _decide_budget(kata, "hessian_vector_product")
