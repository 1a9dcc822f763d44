"""Phase 5 tests, tasks 9-10 (decide): a directional derivative and a Hessian-vector product within
a flops budget read from XLA's cost analysis of the compiled program, values against the chain
rule in NumPy. Expected values come from kata_harness.oracles.autodiff.
"""

import itertools
from collections import Counter
from functools import cache

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import autodiff as oracle
from katas.phase5.programs import (
    DECIDE_SHAPES,
    abs_energy,
    abs_map,
    layer_energy,
    layer_map,
    points,
    tanh_pair,
)

# ---- tasks 9-10: decide, under a flops budget -----------------------------------------------


def _original(task: str, w1, w2):
    """The program the task improves, as a function of (x, v), for one size's weights."""
    if task == "directional_derivative":
        f = layer_map(w1, w2)
        return lambda a, b: jax.jacfwd(f)(a) @ b
    g = layer_energy(w1)
    return lambda a, b: jax.hessian(g)(a) @ b


def _sizes(fresh) -> dict[str, tuple[int, int, int]]:
    """The listed sizes, then a fresh one past them: n of 33 to 128 inputs, as many outputs or
    more (so that no Jacobian of any mode fits the budget there), 8 to 32 hidden."""
    n = fresh.randint(33, 128)
    shape = (n, fresh.randint(8, 32), fresh.randint(n, 2 * n))
    return DECIDE_SHAPES | {"fresh size {}-{}-{} ({})".format(*shape, fresh.where()): shape}


@cache
def _original_cost(task: str, shape: tuple[int, int, int]) -> tuple[float, Counter, float]:
    """The cost of the program the task improves (test-owned, measured once per session):
    compiled with (x, v) as arguments, and lowered with them as concrete arrays."""
    w1, w2 = tanh_pair(*shape)
    x, v = points(shape[0])[0]
    original = _original(task, w1, w2)
    flops, unseen = oracle.compiled_cost(original, x, v)
    return flops, unseen, oracle.lowered_flops_of_constants(original, x, v)


@cache
def _original_eager(task: str, shape: tuple[int, int, int]) -> int:
    """The dot flops the program the task improves executes when called eagerly: each dot
    equation of its jaxpr once (it has no loop or branch; running it op by op, as the answer
    is, counts the same and takes ten times longer)."""
    w1, w2 = tanh_pair(*shape)
    return oracle.jaxpr_dot_flops(_original(task, w1, w2), *points(shape[0])[0])


def _answer(kata, task: str, w1, w2, holomorphic: bool = True):
    """The learner's program as a function of (x, v), for one size's weights: on the tanh
    programs, or (``holomorphic=False``) on ones built from abs."""
    if task == "directional_derivative":
        f = (layer_map if holomorphic else abs_map)(w1, w2)
        return lambda a, b: kata.directional_derivative(f, a, b)
    g = (layer_energy if holomorphic else abs_energy)(w1)
    return lambda a, b: kata.hessian_vector_product(g, a, b)


def _want(task: str, holomorphic: bool, w1, w2, x, v):
    if task == "directional_derivative":
        return (oracle.np_jv if holomorphic else oracle.np_jv_abs)(w1, w2, x, v)
    return (oracle.np_hv if holomorphic else oracle.np_hv_abs)(w1, x, v)


def _square_size(fresh) -> tuple[str, tuple[int, int, int]]:
    """A drawn square map for J @ v (as many outputs as inputs, 2 to 16; 2 to 16 hidden) whose
    Jacobian is not symmetric at the points the values are checked on: there J.T @ v has the
    shape of J @ v and other values, so an answer that confuses the two modes fails on values,
    not on a shape JAX refuses. Drawn again until J @ v and J.T @ v differ far past the
    tolerance at every point (w2 @ diag(...) @ w1 almost never is symmetric: the first draw
    was at every seed tried; 50 draws bound the loop)."""
    for _ in range(50):
        n, h = fresh.randint(2, 16), fresh.randint(2, 16)
        w1, w2 = tanh_pair(n, h, n)
        gaps = []
        for x, v in points(n):
            J = np.stack([oracle.np_jv(w1, w2, x, e) for e in np.eye(n)], axis=1)  # the chain rule
            gaps.append(np.abs(J @ v - J.T @ v).max())
        if min(gaps) > 1e-2:
            return f"square, size {n}-{h}-{n}, J not symmetric ({fresh.where()})", (n, h, n)
    raise AssertionError(f"no square map with J @ v far from J.T @ v in 50 draws ({fresh.where()})")


def _decide_values(kata, task: str, fresh) -> None:
    """Compiled on the tanh programs at every size (a fresh one last; for J @ v also drawn
    sizes with one output, m = 1, and square, m = n, first) and on programs built from abs
    (not holomorphic) at the last, along the zero vector too; and called eagerly (one
    function, several points in a row, op by op with jit disabled as the budget test runs it)
    at the first listed size (op by op is slow; for J @ v the square one too), before it is
    compiled: an answer that keeps what it computed for one point of a function (by its
    identity) is read at the next."""
    sizes = list(_sizes(fresh).items())
    eager_at = {0}
    if task == "directional_derivative":  # one output (m = 1): J @ v has shape (1,), not ()
        n, h = fresh.randint(2, 16), fresh.randint(2, 16)
        sizes.insert(1, (f"one output, size {n}-{h}-1 ({fresh.where()})", (n, h, 1)))
        # square (m = n) first: J @ v and J.T @ v have one shape, and differ in value
        sizes.insert(0, _square_size(fresh))
        eager_at = {0, 1}
    kept = []  # every function handed in stays alive: each call gets a function of its own id
    for index, (size, (n, h, m)) in enumerate(sizes):
        w1, w2 = tanh_pair(n, h, m)
        x0 = points(n)[0][0]
        for holomorphic in (True, False)[: 1 + (index == len(sizes) - 1)]:
            program = _answer(kata, task, w1, w2, holomorphic)
            kept.append(program)
            compiled = jax.jit(program)
            cases = [*points(n), (x0, np.zeros(n, np.float32))]
            # eagerly first (the same f or g at every point in a row), then compiled
            calls = [("eager", program)] * (index in eager_at) + [("compiled", compiled)]
            for (how, call), (x, v) in itertools.product(calls, cases):
                want = _want(task, holomorphic, w1, w2, x, v)
                with jax.disable_jit(how == "eager"):
                    got = call(x, v)
                case = f"{size}, {'tanh' if holomorphic else 'abs'} program, {how}"
                assert np.shape(got) == want.shape, (
                    f"{case}: shape {np.shape(got)}, expected {want.shape}"
                )
                with check:
                    np.testing.assert_allclose(
                        np.asarray(got, np.float64), want, rtol=2e-5, atol=2e-5, err_msg=case
                    )


def _decide_budget(kata, task: str, fresh) -> None:
    original = {
        "directional_derivative": "jax.jacfwd(f)(x) @ v",
        "hessian_vector_product": "jax.hessian(g)(x) @ v",
    }[task]
    sizes = _sizes(fresh)
    # what an eager call really executes, op by op, at every size: every dot it runs. The fresh
    # size first, so that an answer that builds the whole matrix eagerly stops there (op by op
    # is slow); the listed ones after it, since a quarter is tightest where n is small (9-13-5:
    # a jvp executes 2 forward passes' dots, 3 of them are over the budget there and not at n 33)
    for size, (n, h, m) in reversed(sizes.items()):
        eager = oracle.eager_dot_flops(_answer(kata, task, *tanh_pair(n, h, m)), *points(n)[0])
        original_eager = _original_eager(task, (n, h, m))
        assert eager <= original_eager / 4, (
            f"{size}: called eagerly on concrete arrays your answer executes {eager} dot flops, "
            f"over a quarter of the {original_eager} that {original} executes so: the budget "
            "holds for the work a call runs at every size, not only for the program measured"
        )
    for size, (n, h, m) in sizes.items():
        w1, w2 = tanh_pair(n, h, m)
        x, v = points(n)[0]
        answer = _answer(kata, task, w1, w2)
        flops, unseen = oracle.compiled_cost(answer, x, v)
        original_flops, original_unseen, original_concrete = _original_cost(task, (n, h, m))
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
                f"{size}: {flops:.0f} flops (every device's work), budget {budget:.0f} (a "
                f"quarter of {original}'s {4 * budget:.0f})"
            )
        # the same program traced with x and v as concrete arrays (closed over by a jit)
        concrete = oracle.lowered_flops_of_constants(answer, x, v)
        with check:
            assert concrete <= original_concrete / 4, (
                f"{size}: traced with x and v as concrete arrays your program costs "
                f"{concrete:.0f} flops, over a quarter of {original}'s {original_concrete:.0f}: "
                "the budget holds for every call, traced or not"
            )


@pytest.mark.task("directional_derivative")
def test_directional_derivative_values(kata, fresh):
    _decide_values(kata, "directional_derivative", fresh)


@pytest.mark.task("directional_derivative")
def test_directional_derivative_within_budget(kata, fresh):
    _decide_budget(kata, "directional_derivative", fresh)


@pytest.mark.task("hessian_vector_product")
def test_hessian_vector_product_values(kata, fresh):
    _decide_values(kata, "hessian_vector_product", fresh)


@pytest.mark.task("hessian_vector_product")
def test_hessian_vector_product_within_budget(kata, fresh):
    _decide_budget(kata, "hessian_vector_product", fresh)
