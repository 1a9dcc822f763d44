"""Phase 5 tests, tasks 7-8 (vmap, per-example gradients): values against NumPy and a loop of
grads, dimension numbers read from real jaxprs, optimized HLO through xla_inspect, and XLA's
cost analysis; per-example gradients on drawn params of any float dtype and structure
(strata_grads.mlp_strata). Expected values come from kata_harness.oracles.autodiff.
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.contract import ContractViolation
from kata_harness.oracles import autodiff as oracle
from kata_harness.traced import called_traced
from katas.phase5.programs import (
    BATCH,
    IN_AXES_CASES,
    MV_M,
    MV_N,
    matvec_case,
    mlp_data,
    mlp_ties,
)
from katas.phase5.strata_grads import mlp_strata
from katas.phase5.tree_checks import check_tree, wide
from xla_inspect.jaxpr import primitive_census
from xla_inspect.model import Shape
from xla_inspect.query import dots, opcode_counts

RTOL, ATOL = 1e-5, 1e-5


def _spelled_case(W, vs, in_axes) -> str:
    """One batched_matvec case as a failure message shows it."""
    return (
        f"in_axes={in_axes}, W {np.dtype(W.dtype).name}{list(W.shape)}, "
        f"vs {np.dtype(vs.dtype).name}{list(vs.shape)}"
    )


def _mapped(kata, W, vs, in_axes, case: str):
    """kata.batched_matvec as the tests call it, traced: an answer asking for the values of a
    traced array (a result turned into NumPy) fails naming the case (kata_harness.traced)."""
    __tracebackhide__ = True
    return called_traced(kata.batched_matvec, W, vs, in_axes, task="batched_matvec", case=case)


# ---- task 7: vmap and dimension numbers ---------------------------------------------------------


@pytest.mark.task("batched_matvec")
def test_batched_matvec_values(kata):
    """Every in_axes case, called eagerly (the result a jax.Array, as the task says) and under
    one jax.jit (the values against NumPy)."""
    axes = list(IN_AXES_CASES)
    cases = [matvec_case(in_axes) for in_axes in axes]
    for in_axes, (W, vs, _) in zip(axes, cases, strict=True):
        try:
            kata.batched_matvec(W, vs, in_axes)
        except ContractViolation as error:  # the harness's check of the annotated return type
            pytest.fail(f"batched_matvec, {_spelled_case(W, vs, in_axes)}, called eagerly: {error}")
    results = jax.jit(
        lambda arrays: [
            _mapped(kata, w, v, a, _spelled_case(w, v, a))
            for a, (w, v) in zip(axes, arrays, strict=True)
        ]
    )([(W, vs) for W, vs, _ in cases])
    for in_axes, (_, _, expected), got in zip(axes, cases, results, strict=True):
        with check:
            assert tuple(got.shape) == expected.shape, (
                f"in_axes={in_axes}: shape {got.shape}, expected (batch, m) {expected.shape}"
            )
        with check:
            np.testing.assert_allclose(
                np.asarray(got).reshape(-1)[: expected.size],
                expected.reshape(-1),
                rtol=RTOL,
                atol=ATOL,
                err_msg=f"in_axes={in_axes}",
            )


@pytest.mark.task("batched_matvec")
def test_batched_matvec_maps_matvec_itself(kata, monkeypatch):
    """vmap calls the function it maps once, with ONE example's shapes (a loop calls it per
    example; einsum or `vs @ W.T` never calls it)."""
    seen = []
    given = kata.matvec

    def spy(W, v):
        seen.append((tuple(W.shape), tuple(v.shape)))
        return given(W, v)

    monkeypatch.setattr(kata, "matvec", spy)
    for in_axes in IN_AXES_CASES:
        W, vs, _ = matvec_case(in_axes)
        seen.clear()
        case = _spelled_case(W, vs, in_axes)
        jax.make_jaxpr(lambda w, v, a=in_axes, c=case: _mapped(kata, w, v, a, c))(W, vs)
        with check:
            assert seen == [((MV_M, MV_N), (MV_N,))], (
                f"in_axes={in_axes}: matvec saw {seen}; expected one call with one example's "
                f"shapes ({MV_M}, {MV_N}) and ({MV_N},): map `matvec` with jax.vmap"
            )


@pytest.mark.task("batched_matvec")
def test_vmap_rewrites_dot_dimension_numbers(kata):
    expected = {  # what vmap writes: the batch axis stays where in_axes put it
        (None, 0): ([(((1,), (1,)), ((), ()))], 1),
        (0, 0): ([(((2,), (1,)), ((0,), (0,)))], 0),
        (1, 0): ([(((2,), (1,)), ((1,), (0,)))], 0),
        (None, 1): ([(((1,), (0,)), ((), ()))], 1),
    }
    for in_axes, (dims, transposes) in expected.items():
        W, vs, _ = matvec_case(in_axes)
        case = _spelled_case(W, vs, in_axes)
        jaxpr = jax.make_jaxpr(lambda w, v, a=in_axes, c=case: _mapped(kata, w, v, a, c))(W, vs)
        got = oracle.dot_dims(jaxpr)
        with check:
            assert got == dims, (
                f"in_axes={in_axes}: dot_general dimension numbers {got}, expected {dims} "
                "(contracting, then batch)"
            )
        with check:
            count = primitive_census(jaxpr)["transpose"]
            assert count == transposes, (
                f"in_axes={in_axes}: transpose x{count}, expected {transposes}"
                + (" (the (m, batch) result is moved to (batch, m))" if transposes else "")
            )


@pytest.mark.task("batched_matvec")
def test_vmapped_matvec_compiles_to_one_matmul(kata):
    W, vs, _ = matvec_case((None, 0))
    case = _spelled_case(W, vs, (None, 0))
    module = oracle.optimized(lambda w, v: _mapped(kata, w, v, (None, 0), case), W, vs)
    found = dots(module)
    counts = opcode_counts(module)
    with check:
        assert counts["while"] == 0, "a while loop: the batch is iterated, not vectorized"
    with check:
        assert len(found) == 1, f"{len(found)} dots, expected one for the whole batch"
    with check:
        ranks = [(len(Shape(d.lhs_shape).dims), len(Shape(d.rhs_shape).dims)) for d in found]
        assert ranks == [(2, 2)], f"operand ranks {ranks}: expected a matrix-matrix product"


# ---- task 8: per-example gradients --------------------------------------------------------------


@pytest.mark.task("per_example_grads")
def test_per_example_grads_match_a_loop_of_grads(kata):
    """Random data, then data on relu's kink (an example of zeros, zero biases: jax.nn.relu's
    derivative there is 0)."""
    shapes = ((3, (6, 9, 2)), (4, (5, 8, 3)))
    cases = [mlp_data(3, 3, shapes[0][1]), mlp_ties(4, 6, shapes[1][1])]
    results = jax.jit(lambda all_cases: [kata.per_example_grads(*c) for c in all_cases])(cases)
    for (batch, _), case, got in zip(shapes, cases, results, strict=True):
        expected = oracle.loop_of_grads(*case)
        assert isinstance(got, dict) and set(got) == set(expected), "expected a dict like params"
        assert all(isinstance(leaf, jax.Array) for leaf in got.values()), "expected array leaves"
        for name, value in expected.items():
            with check:
                assert tuple(got[name].shape) == value.shape, (
                    f"batch {batch}: {name} shape {got[name].shape}, expected {value.shape}"
                )
            with check:
                np.testing.assert_allclose(
                    np.asarray(got[name]).reshape(value.shape),
                    value,
                    rtol=1e-4,
                    atol=1e-5,
                    err_msg=f"per-example d loss / d {name}, batch {batch}",
                )


@cache
def _loop_flops(batch: int) -> float:
    """Flops of B separate single-example gradients: B times one example's (test-owned)."""
    params, xs, ys = mlp_data(1)

    def one_example(p, x, y):
        return jnp.mean((jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2)

    return batch * oracle.lowered_flops(jax.grad(one_example), params, xs[0], ys[0])


@pytest.mark.task("per_example_grads")
def test_per_example_cost_grows_linearly_with_batch(kata, fresh):
    """At three fresh batches, one of 1 to 4, one of 5 to 16 and one of 17 to 64, the program
    costs no more than that many single-example gradients (a Jacobian of the losses, at any
    batch, costs batch squared)."""
    for batch in (fresh.randint(1, 4), fresh.randint(5, 16), fresh.randint(17, 64)):
        flops = oracle.lowered_flops(kata.per_example_grads, *mlp_data(batch))
        with check:
            assert flops <= 1.1 * _loop_flops(batch), (
                f"batch {batch}: {flops} flops, a loop of {batch} single-example gradients "
                f"costs {_loop_flops(batch)}: per-example gradients cost linear in the batch "
                f"({fresh.where()})"
            )


@pytest.mark.task("per_example_grads")
def test_per_example_jaxpr_does_not_grow_with_batch(kata):
    jaxprs = {b: jax.make_jaxpr(kata.per_example_grads)(*mlp_data(batch=b)) for b in (4, 8)}
    census = {b: primitive_census(j) for b, j in jaxprs.items()}
    with check:
        assert census[4]["dot_general"] == census[8]["dot_general"], (
            f"dot_general x{census[4]['dot_general']} at batch 4, x{census[8]['dot_general']} at 8"
        )
    with check:
        loops = {p: census[8][p] for p in ("scan", "while") if census[8][p]}
        assert not loops, f"{loops}: the batch must be a dimension, not a loop"
    with check:
        outer = (((), ()), ((0,), (0,)))
        assert outer in oracle.dot_dims(jaxprs[8]), (
            "expected a dot_general with batch dims only: per-example outer products dW"
        )


@pytest.mark.task("per_example_grads")
def test_per_example_grads_compile_to_few_batched_dots(kata):
    module = oracle.optimized(kata.per_example_grads, *mlp_data())
    counts = opcode_counts(module)
    found = dots(module)
    with check:
        assert counts["while"] == 0, "a while loop over examples"
    with check:
        assert 1 <= len(found) < BATCH, f"{len(found)} dots for {BATCH} examples, expected a few"
    with check:
        batched = [d for d in found if BATCH in Shape(d.lhs_shape).dims + Shape(d.rhs_shape).dims]
        assert batched == found, "every dot should take the whole batch as one operand axis"


@pytest.mark.task("per_example_grads")
def test_per_example_grads_on_fresh_params(kata, fresh):
    """The same params and data: every leaf gets a leading batch axis (a batch of one too) and
    keeps its dtype. Last, the first situation's params again with other examples of the same
    shapes and dtypes: the gradients follow the examples handed in, not the shapes."""
    cases = mlp_strata(fresh)
    first, (params, xs, ys) = next(iter(cases.items()))
    draw = np.random.default_rng(fresh.randrange(2**32))
    cases[f"{first}, again with other examples"] = (
        params,
        *(draw.normal(size=a.shape).astype(np.float32).astype(a.dtype) for a in (xs, ys)),
    )
    results = jax.jit(lambda all_cases: [kata.per_example_grads(*c) for c in all_cases])(
        list(cases.values())
    )
    for (situation, case), got in zip(cases.items(), results, strict=True):
        expected = oracle.loop_of_grads(*wide(case))
        where = f"{situation} ({fresh.where()})"
        check_tree(got, case[0], expected, where, batch=len(case[1]))
