"""Phase 5 tests: values against NumPy (or a loop of grads) computed here, IR facts read from
real jaxprs (equation params) and from optimized HLO through xla_inspect."""

from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from xla_inspect.capture import capture
from xla_inspect.jaxpr import iter_eqns, primitive_census
from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo
from xla_inspect.query import dots, opcode_counts

IN, HIDDEN, OUT, BATCH = 16, 32, 4, 8
RTOL, ATOL = 1e-5, 1e-5


def _mlp_data(batch: int = BATCH, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(IN, HIDDEN)).astype(np.float32) / 4,
        "b1": rng.normal(size=(HIDDEN,)).astype(np.float32),
        "w2": rng.normal(size=(HIDDEN, OUT)).astype(np.float32) / 6,
        "b2": rng.normal(size=(OUT,)).astype(np.float32),
    }
    x = rng.normal(size=(batch, IN)).astype(np.float32)
    y = rng.normal(size=(batch, OUT)).astype(np.float32)
    return params, x, y


def _np_mlp_grad(p, x, y):
    """Backprop by hand in NumPy: the gradient of mean((mlp - y)**2)."""
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    out = hidden @ p["w2"] + p["b2"]
    g_out = 2.0 * (out - y) / out.size
    g_hidden = (g_out @ p["w2"].T) * (pre > 0)
    return {"w1": x.T @ g_hidden, "b1": g_hidden.sum(0), "w2": hidden.T @ g_out,
            "b2": g_out.sum(0)}


def _dot_dims(jaxpr) -> list:
    """Dimension numbers of every dot_general (nested too) as plain tuples of ints."""
    return [tuple(tuple(tuple(int(d) for d in side) for side in pair)
                  for pair in eqn.params["dimension_numbers"])
            for eqn in iter_eqns(jaxpr) if eqn.primitive.name == "dot_general"]


def _optimized(fn, *args):
    return parse_hlo(capture(fn, *args).optimized_hlo_text)


# ---- task 1: grad -------------------------------------------------------------------------------

@pytest.mark.task("mlp_grad")
def test_mlp_grad_matches_numpy_backprop(kata):
    params, x, y = _mlp_data()
    grads = jax.jit(kata.mlp_grad)(params, x, y)
    expected = _np_mlp_grad(params, x, y)
    assert isinstance(grads, dict) and set(grads) == set(expected), (
        f"expected a dict with keys {sorted(expected)}, got {type(grads).__name__}")
    for name, value in expected.items():
        with check:
            np.testing.assert_allclose(np.asarray(grads[name]), value, rtol=1e-4, atol=1e-5,
                                       err_msg=f"d loss / d {name}")


@pytest.mark.task("mlp_grad")
def test_grad_jaxpr_has_two_transposes(kata):
    census = primitive_census(jax.make_jaxpr(kata.mlp_grad)(*_mlp_data()))
    with check:
        assert census["transpose"] == 2, (
            f"transpose x{census['transpose']}, expected 2 (one per weight gradient)")
    with check:
        assert census["dot_general"] == 5, (
            f"dot_general x{census['dot_general']}, expected 5: 2 forward, 3 backward")


@pytest.mark.task("mlp_grad")
def test_optimized_grad_folds_transposes_into_dots(kata):
    module = _optimized(kata.mlp_grad, *_mlp_data())
    counts = opcode_counts(module)
    found = dots(module)
    with check:
        assert counts["transpose"] == 0, (
            f"transpose x{counts['transpose']} in optimized HLO, expected 0")
    with check:
        assert len(found) == 5, f"{len(found)} dots, expected 5 (as many as the jaxpr's)"
    with check:
        assert any(d.lhs_contracting_dims == (0,) and d.rhs_contracting_dims == (0,)
                   for d in found), "expected a dot contracting dim 0 of both operands (x.T @ g)"


# ---- tasks 2-3: jvp and vjp ---------------------------------------------------------------------

M, N = 3, 5


def _f(A, x):
    """R^N -> R^M, not elementwise: sin(A x) * |x|^2 (a product rule inside)."""
    return jnp.sin(A @ x) * jnp.sum(x * x)


def _np_jacobian(A, x):
    z = A @ x
    s = np.sum(x * x)
    return (np.cos(z) * s)[:, None] * A + np.sin(z)[:, None] * (2 * x)[None, :]


def _fvec_data():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(M, N)).astype(np.float32)
    x = rng.normal(size=(N,)).astype(np.float32)
    v = rng.normal(size=(N,)).astype(np.float32)
    ct = rng.normal(size=(M,)).astype(np.float32)
    return A, x, v, ct


def _a_axes_contracted(jaxpr) -> list:
    """For each dot_general operand shaped like A (M, N): the axes of it that are contracted.

    Matched by shape, not identity, so a jit nested inside the learner's code changes nothing.
    """
    found = []
    for eqn in iter_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, rc), _ = eqn.params["dimension_numbers"]
        for operand, contracting in zip(eqn.invars, (lc, rc), strict=True):
            if tuple(operand.aval.shape) == (M, N):
                found.append(tuple(int(d) for d in contracting))
    return found


@pytest.mark.task("jvp_tangent")
def test_jvp_gives_value_and_jacobian_times_tangent(kata):
    A, x, v, _ = _fvec_data()
    result = jax.jit(lambda p, t: kata.jvp_tangent(partial(_f, A), p, t))(x, v)
    assert isinstance(result, tuple) and len(result) == 2, "expected (f(x), J @ v)"
    with check:
        np.testing.assert_allclose(np.asarray(result[0]), np.sin(A @ x) * (x @ x), rtol=RTOL,
                                   atol=ATOL, err_msg="primal f(x)")
    with check:
        np.testing.assert_allclose(np.asarray(result[1]), _np_jacobian(A, x) @ v, rtol=RTOL,
                                   atol=ATOL, err_msg="tangent J @ v")


@pytest.mark.task("jvp_tangent")
def test_jvp_jaxpr_adds_tangents_and_never_builds_j(kata):
    A, x, v, _ = _fvec_data()
    jaxpr = jax.make_jaxpr(lambda a, p, t: kata.jvp_tangent(partial(_f, a), p, t))(A, x, v)
    census = primitive_census(jaxpr)
    axes = _a_axes_contracted(jaxpr)
    with check:
        assert census["add_any"] >= 1, "expected add_any: the product rule sums two tangents"
    with check:
        assert census["iota"] == 0 and census["transpose"] == 0, (
            f"iota x{census['iota']}, transpose x{census['transpose']}: a jvp builds no basis")
    with check:
        assert axes == [(1,), (1,)], f"A's contracted axes {axes}: A @ x and A @ v, both axis 1"


@pytest.mark.task("vjp_cotangent")
def test_vjp_gives_cotangent_times_jacobian(kata):
    A, x, _, ct = _fvec_data()
    x_bar = np.asarray(jax.jit(lambda p, c: kata.vjp_cotangent(partial(_f, A), p, c))(x, ct))
    np.testing.assert_allclose(x_bar, _np_jacobian(A, x).T @ ct, rtol=RTOL, atol=ATOL,
                               err_msg="J.T @ ct")


@pytest.mark.task("vjp_cotangent")
def test_vjp_jaxpr_transposes_the_dot_not_the_matrix(kata):
    A, x, _, ct = _fvec_data()
    jaxpr = jax.make_jaxpr(lambda a, p, c: kata.vjp_cotangent(partial(_f, a), p, c))(A, x, ct)
    census = primitive_census(jaxpr)
    axes = sorted(_a_axes_contracted(jaxpr))
    with check:
        assert axes == [(0,), (1,)], (
            f"A's contracted axes {axes}, expected axis 1 (forward A @ x) and axis 0 (ct @ A)")
    with check:
        assert census["transpose"] == 0 and census["iota"] == 0, (
            f"transpose x{census['transpose']}, iota x{census['iota']}: expected neither")
    with check:
        assert census["add_any"] >= 1, "expected add_any: x reaches the output along two paths"


# ---- tasks 4-6: Jacobians and their cost --------------------------------------------------------

def _two_layer(n: int, h: int, m: int):
    rng = np.random.default_rng(n * 1000 + m)
    w1 = (rng.normal(size=(h, n)) / np.sqrt(n)).astype(np.float32)
    w2 = (rng.normal(size=(m, h)) / np.sqrt(h)).astype(np.float32)
    x = rng.normal(size=(n,)).astype(np.float32)
    return (lambda v: w2 @ jnp.tanh(w1 @ v)), x, w1, w2


SHAPES = {"tall": (4, 32, 64), "wide": (64, 32, 4)}  # (inputs, hidden, outputs)


@pytest.mark.task("jacobian")
def test_jacobian_both_modes_match_numpy(kata):
    f, x, w1, w2 = _two_layer(*SHAPES["tall"])
    expected = w2 @ ((1 - np.tanh(w1 @ x) ** 2)[:, None] * w1)
    both = jax.jit(lambda v: (kata.jacobian(f, v, "fwd"), kata.jacobian(f, v, "rev")))(x)
    for mode, got in zip(("fwd", "rev"), both, strict=True):
        with check:
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5,
                                       err_msg=mode)


@pytest.mark.task("jacobian")
def test_jacobian_modes_push_different_bases(kata):
    n, _, m = SHAPES["tall"]
    f, x, _, _ = _two_layer(*SHAPES["tall"])
    for mode, basis, other in (("fwd", (n, n), "inputs"), ("rev", (m, m), "outputs")):
        jaxpr = jax.make_jaxpr(lambda v, mode=mode: kata.jacobian(f, v, mode))(x)
        census = primitive_census(jaxpr)
        shapes = {tuple(v.aval.shape) for e in iter_eqns(jaxpr) if e.primitive.name == "dot_general"
                  for v in e.invars}
        with check:
            assert census["iota"] >= 1 and census["eq"] >= 1, (
                f"{mode}: the identity basis is built in the program from iota and eq")
        with check:
            assert basis in shapes, (
                f"{mode}: no dot_general reads a {basis} basis (one row per {other}); got {shapes}")
        if mode == "fwd":
            with check:
                assert census["transpose"] >= 1, "fwd: the batch of columns is moved last"
        else:
            with check:
                assert census["transpose"] == 0, f"rev: transpose x{census['transpose']}"


def _matmul(a, b):
    return jnp.matmul(a, b)


@pytest.mark.task("dot_flops")
def test_dot_flops_from_dimension_numbers(kata):
    f32 = np.float32
    cases = {
        "matmul": (jnp.matmul, (np.ones((8, 16), f32), np.ones((16, 32), f32)), 2 * 8 * 32 * 16),
        "batched": (jax.vmap(jnp.matmul), (np.ones((8, 4, 3), f32), np.ones((8, 3), f32)),
                    2 * (8 * 4) * 3),
        "two contracted": (partial(jnp.einsum, "ijk,jkl->il"),
                           (np.ones((2, 3, 4), f32), np.ones((3, 4, 5), f32)), 2 * (2 * 5) * 12),
        "no dots": (jnp.add, (np.ones(3, f32), np.ones(3, f32)), 0),
    }
    for name, (fn, args, expected) in cases.items():
        jaxpr = jax.make_jaxpr(fn)(*args)
        got = kata.dot_flops(jaxpr)
        with check:
            assert got == expected, f"{name}: {got} flops, expected {expected}"


@pytest.mark.task("dot_flops")
def test_dot_flops_counts_nested_jaxprs(kata):
    a, b = np.ones((8, 16), np.float32), np.ones((16, 8), np.float32)
    jaxpr = jax.make_jaxpr(lambda p, q: jax.jit(_matmul)(p, q) + p @ q)(a, b)
    got = kata.dot_flops(jaxpr)
    assert got == 2 * (2 * 8 * 8 * 16), f"{got} flops: one dot sits inside the nested jit"


@cache
def _measured_cheaper(shape: str) -> str:
    """XLA's cost analysis of both Jacobians (test-owned programs, measured once per session).

    The lowered module's cost analysis gives the same flops as the compiled one here, at a
    fifth of the time.
    """
    f, x, _, _ = _two_layer(*SHAPES[shape])
    flops = {name: jax.jit(transform(f)).lower(x).cost_analysis()["flops"]
             for name, transform in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev))}
    return min(flops, key=flops.get)


@pytest.mark.task("cheaper_jacobian_mode")
def test_cheaper_jacobian_mode_matches_measured_flops(kata):
    for shape in SHAPES:
        f, x, _, _ = _two_layer(*SHAPES[shape])
        got = kata.cheaper_jacobian_mode(f, x)
        expected = _measured_cheaper(shape)
        with check:
            assert got == expected, (
                f"{shape} Jacobian {SHAPES[shape]}: {got!r}, XLA's cost analysis says {expected!r}")


# ---- task 7: vmap and dimension numbers ---------------------------------------------------------

MV_M, MV_N = 4, 3


def _matvec_data():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(MV_M, MV_N)).astype(np.float32)
    Ws = rng.normal(size=(BATCH, MV_M, MV_N)).astype(np.float32)
    vs = rng.normal(size=(BATCH, MV_N)).astype(np.float32)
    return W, Ws, vs


@pytest.mark.task("batched_matvec")
def test_batched_matvec_values(kata):
    W, Ws, vs = _matvec_data()
    shared = np.asarray(jax.jit(lambda w, v: kata.batched_matvec(w, v, (None, 0)))(W, vs))
    per_example = np.asarray(jax.jit(lambda w, v: kata.batched_matvec(w, v, (0, 0)))(Ws, vs))
    with check:
        np.testing.assert_allclose(shared, np.einsum("mn,bn->bm", W, vs), rtol=RTOL, atol=ATOL,
                                   err_msg="in_axes=(None, 0)")
    with check:
        np.testing.assert_allclose(per_example, np.einsum("bmn,bn->bm", Ws, vs), rtol=RTOL,
                                   atol=ATOL, err_msg="in_axes=(0, 0)")


@pytest.mark.task("batched_matvec")
def test_vmap_rewrites_dot_dimension_numbers(kata):
    W, Ws, vs = _matvec_data()
    shared = jax.make_jaxpr(lambda w, v: kata.batched_matvec(w, v, (None, 0)))(W, vs)
    per_example = jax.make_jaxpr(lambda w, v: kata.batched_matvec(w, v, (0, 0)))(Ws, vs)
    with check:
        got = _dot_dims(shared)
        assert got == [(((1,), (1,)), ((), ()))], (
            f"(None, 0): {got}, expected one dot contracting W's axis 1 with vs's axis 1")
    with check:
        assert primitive_census(shared)["transpose"] == 1, (
            "(None, 0): the (m, batch) result is transposed to (batch, m)")
    with check:
        got = _dot_dims(per_example)
        assert got == [(((2,), (1,)), ((0,), (0,)))], (
            f"(0, 0): {got}, expected batch dims ((0,), (0,)) and contracting ((2,), (1,))")


@pytest.mark.task("batched_matvec")
def test_vmapped_matvec_compiles_to_one_matmul(kata):
    W, _, vs = _matvec_data()
    module = _optimized(lambda w, v: kata.batched_matvec(w, v, (None, 0)), W, vs)
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

def _loop_of_grads(params, xs, ys):
    """One NumPy backprop per example (a batch of one has the same mean as example_loss)."""
    per_example = [_np_mlp_grad(params, x[None], y[None]) for x, y in zip(xs, ys, strict=True)]
    return {k: np.stack([g[k].reshape(params[k].shape) for g in per_example]) for k in params}


@pytest.mark.task("per_example_grads")
def test_per_example_grads_match_a_loop_of_grads(kata):
    params, xs, ys = _mlp_data(batch=4, seed=3)
    got = jax.jit(kata.per_example_grads)(params, xs, ys)
    expected = _loop_of_grads(params, xs, ys)
    assert isinstance(got, dict) and set(got) == set(expected), "expected a dict like params"
    for name, value in expected.items():
        with check:
            np.testing.assert_allclose(np.asarray(got[name]), value, rtol=1e-4, atol=1e-5,
                                       err_msg=f"per-example d loss / d {name}")


@pytest.mark.task("per_example_grads")
def test_per_example_jaxpr_does_not_grow_with_batch(kata):
    jaxprs = {b: jax.make_jaxpr(kata.per_example_grads)(*_mlp_data(batch=b)) for b in (4, 8)}
    census = {b: primitive_census(j) for b, j in jaxprs.items()}
    with check:
        assert census[4]["dot_general"] == census[8]["dot_general"], (
            f"dot_general x{census[4]['dot_general']} at batch 4, x{census[8]['dot_general']} at 8")
    with check:
        loops = {p: census[8][p] for p in ("scan", "while") if census[8][p]}
        assert not loops, f"{loops}: the batch must be a dimension, not a loop"
    with check:
        outer = (((), ()), ((0,), (0,)))
        assert outer in _dot_dims(jaxprs[8]), (
            "expected a dot_general with batch dims only: per-example outer products dW")


@pytest.mark.task("per_example_grads")
def test_per_example_grads_compile_to_few_batched_dots(kata):
    module = _optimized(kata.per_example_grads, *_mlp_data())
    counts = opcode_counts(module)
    found = dots(module)
    with check:
        assert counts["while"] == 0, "a while loop over examples"
    with check:
        assert 1 <= len(found) < BATCH, f"{len(found)} dots for {BATCH} examples, expected a few"
    with check:
        batched = [d for d in found if BATCH in Shape(d.lhs_shape).dims + Shape(d.rhs_shape).dims]
        assert batched == found, "every dot should take the whole batch as one operand axis"
