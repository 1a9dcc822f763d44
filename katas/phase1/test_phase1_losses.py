"""Phase 1 tests, mse_loss and loss_and_grad: values checked against NumPy computed in float64
(kata_harness.oracles.jax_basics), on several shapes, under jit and called eagerly, in float32
and in both 16-bit floats, with exact-zero hidden pre-activations where the relu's gradient is 0.
"""

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_check import check

from kata_harness.oracles import jax_basics as oracle
from katas.phase1.programs import KEYS, SHAPES, data
from katas.phase1.strata import (
    ARRAY_KINDS,
    VALUES,
    as_given,
    exact_fit,
    keeps_nothing,
    key_orders,
    lone_unit_axes,
    near_fit,
    refilled,
)

NARROW_FLOATS = (ml_dtypes.bfloat16, np.float16)


# ------------------------------------------------------------------------------------- mse_loss


@pytest.mark.task("mse_loss")
@settings(VALUES, max_examples=4)
@given(batch=st.integers(1, 9), out=st.integers(2, 5), seed=st.integers(0, 2**16))
def test_mse_loss_matches_numpy(kata, batch, out, seed):
    params, x, y = data(seed, (batch, 3, 5, out))
    loss = jax.jit(kata.mse_loss)(params, x, y)
    assert np.shape(loss) == (), f"loss has shape {np.shape(loss)}, expected a scalar"
    np.testing.assert_allclose(
        float(loss),
        oracle.np_loss(params, x, y),
        rtol=1e-4,
        err_msg=f"batch {batch}, {out} outputs",
    )


@pytest.mark.task("mse_loss")
def test_mse_loss_with_lone_axes_of_size_one(kata, fresh):
    """Shapes where one axis has size 1 and the others do not (one output at a batch > 1, a
    batch of 1 at several outputs, one input or hidden unit), drawn fresh: y keeps its shape
    (batch, out), and the mean runs over its batch * out elements (every other shape has rows
    of x that are all zeros: rows like any other)."""
    loss = jax.jit(kata.mse_loss)
    for index, shape in enumerate(lone_unit_axes(fresh)):
        params, x, y = data(40 + index, shape, zero_rows=index % 2 == 1)
        got = loss(params, x, y)
        zero = [int(i) for i in np.flatnonzero(~np.any(x != 0, axis=1))]
        where = (
            f"(batch, in, hidden, out) = {shape}, y of shape {y.shape}, rows {zero} of x all "
            f"zeros ({fresh.where()})"
        )
        assert np.shape(got) == (), f"{where}: the loss has shape {np.shape(got)}, not a scalar"
        np.testing.assert_allclose(
            float(got), oracle.np_loss(params, x, y), rtol=1e-4, err_msg=where
        )


@pytest.mark.task("mse_loss")
def test_mse_loss_does_not_grow_with_the_batch(kata):
    params, x, y = data(4, SHAPES[2])
    loss = jax.jit(kata.mse_loss)
    once = loss(params, x, y)
    twice = loss(params, np.concatenate([x, x]), np.concatenate([y, y]))
    assert np.shape(once) == () and np.shape(twice) == (), "the loss is a scalar"
    np.testing.assert_allclose(
        float(twice),
        float(once),
        rtol=1e-5,
        err_msg="the same rows twice must give the same loss (a mean)",
    )


@pytest.mark.task("mse_loss")
def test_mse_loss_near_a_perfect_fit(kata, fresh):
    """y a small residual away from the prediction (strata.near_fit: outputs of a few hundred,
    exact in float32, residuals of 1e-3 to 1e-2, drawn): the loss is the mean of the residuals'
    squares, to float32's precision."""
    params, x, y = near_fit(fresh, SHAPES[2])
    got = float(jax.jit(kata.mse_loss)(params, x, y))
    expected = oracle.np_loss(params, x, y)
    prediction = oracle.np_forward(params, x)
    assert abs(got - expected) <= 1e-3 * expected, (
        f"x = {x.tolist()}, params = { {k: v.tolist() for k, v in params.items()} }: the "
        f"prediction is {prediction.tolist()} (exact in float32) and y = {y.tolist()} lies "
        f"1e-3 to 1e-2 from it; mse_loss gave {got!r}, the mean squared error is {expected!r} "
        f"({fresh.where()})"
    )


@pytest.mark.task("mse_loss")
def test_mse_loss_counts_every_element(kata, fresh):
    """A NaN target anywhere makes the mean over every element NaN: no element is skipped."""
    params, x, y = data(6, SHAPES[2])
    row, column = fresh.randrange(y.shape[0]), fresh.randrange(y.shape[1])
    y[row, column] = np.nan
    loss = float(jax.jit(kata.mse_loss)(params, x, y))
    assert np.isnan(loss), (
        f"y[{row}, {column}] is NaN, so the mean over every element is NaN; the loss was {loss} "
        f"(an element was left out of the mean; {fresh.where()})"
    )


@pytest.mark.task("mse_loss")
def test_mse_loss_keeps_the_dtype(kata, fresh):
    """float32 and 16-bit params and data give a loss of that dtype, under jit and called
    eagerly on NumPy and on JAX arrays, each call on other values of the same shapes (params
    keys inserted in a drawn order: an eager call sees it). Some rows of x are all zeros: they
    are rows like any other, and the mean runs over them too."""
    seeds = iter(range(30, 40))
    orders = iter(key_orders(fresh, KEYS, 9))
    for dtype in (np.float32, *NARROW_FLOATS):
        name = np.dtype(dtype).name
        runs = [("under jit", jax.jit(kata.mse_loss), as_given)]
        runs += [(f"eagerly on {kind}", kata.mse_loss, put) for kind, put in ARRAY_KINDS]
        for how, loss_of, put in runs:
            params, x, y = data(
                next(seeds), SHAPES[2], dtype=dtype, order=next(orders), zero_rows=True
            )
            zero = [int(i) for i in np.flatnonzero(~np.any(x != 0, axis=1))]
            how = (
                f"{how}, params keys inserted as {tuple(params)}, rows {zero} of x all zeros "
                f"({fresh.where()})"
            )
            args = (put(params), put(x), put(y))
            with keeps_nothing(f"{name}, called {how}", args):
                loss = loss_of(*args)
            assert np.shape(loss) == (), f"loss has shape {np.shape(loss)}, expected a scalar"
            with check:
                assert str(getattr(loss, "dtype", None)) == name, (
                    f"{name} params and data, called {how}, gave a loss of dtype "
                    f"{getattr(loss, 'dtype', None)}; keep {name}"
                )
            with check:
                np.testing.assert_allclose(
                    float(loss),
                    oracle.np_loss(params, x, y),
                    rtol=1e-4 if dtype is np.float32 else 0.02,
                    err_msg=f"{name}, {how}",
                )


@pytest.mark.task("mse_loss")
def test_mse_loss_is_exact_where_every_step_is(kata, fresh):
    """Small-integer params, x and residuals (strata.exact_fit, drawn), in float32 and both
    16-bit floats: every output, residual, square and partial sum is exact in the dtype and so
    is the mean, so the loss is the mean of the squares exactly (in the loss's own dtype too),
    under jit and called eagerly on NumPy and on JAX arrays: a detour through other arithmetic
    (a root and its square) rounds it."""
    runs = [("under jit", jax.jit(kata.mse_loss), as_given)]
    runs += [(f"eagerly on {kind}", kata.mse_loss, put) for kind, put in ARRAY_KINDS]
    for dtype in (np.float32, *NARROW_FLOATS):
        for index in range(6):
            how, loss_of, put = runs[index % len(runs)]
            params, x, y = exact_fit(fresh, dtype)
            expected = oracle.np_loss(params, x, y)
            got = float(loss_of(put(params), put(x), put(y)))
            with check:
                assert got == expected, (
                    f"{np.dtype(dtype).name}, called {how}: x = {x.astype(int).tolist()}, "
                    f"params = { {k: v.astype(int).tolist() for k, v in params.items()} }, y = "
                    f"{y.astype(int).tolist()}; every step is exact in the dtype, the mean "
                    f"squared error is {expected!r}, mse_loss gave {got!r} ({fresh.where()})"
                )


# -------------------------------------------------------------------------------- loss_and_grad


def _loss_and_grad(run, params, x, y):
    result = run(params, x, y)
    assert isinstance(result, tuple) and len(result) == 2, "expected a pair (loss, grads)"
    loss, grads = result
    assert np.shape(loss) == (), f"the first item has shape {np.shape(loss)}: the loss is a scalar"
    assert isinstance(grads, dict), (
        f"grads is a {type(grads).__name__}, expected a dict like params"
    )
    return loss, grads


def _check_against_numpy(loss, grads, params, x, y, where: str, rtol=1e-3, atol=1e-5):
    """The loss within rtol / 10 (1e-4 at least), each grad within rtol and atol."""
    expected = oracle.np_grads(params, x, y)
    with check:
        np.testing.assert_allclose(
            float(loss), oracle.np_loss(params, x, y), rtol=max(rtol / 10, 1e-4), err_msg=where
        )
    with check:
        assert jax.tree.structure(grads) == jax.tree.structure(params), (
            f"{where}: grads structure {jax.tree.structure(grads)}, expected that of params"
        )
    for name in KEYS:
        if name in grads:
            with check:
                np.testing.assert_allclose(
                    np.asarray(grads[name], np.float64),
                    expected[name],
                    rtol=rtol,
                    atol=atol,
                    err_msg=f"{where}: d loss / d {name}",
                )


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_matches_numpy(kata, fresh):
    """Under jit, on batches with all-zero rows and zero entries in b1 (hidden pre-activations
    exactly 0, where the relu's gradient is 0), on size 1 everywhere, odd sizes, and drawn
    shapes where one axis has size 1 and the others do not (strata.lone_unit_axes)."""
    run = jax.jit(kata.loss_and_grad)
    # finite differences use SHAPES[0]
    for seed, shape in enumerate((*SHAPES[1:], *lone_unit_axes(fresh))):
        params, x, y = data(seed, shape, zero_rows=True)
        loss, grads = _loss_and_grad(run, params, x, y)
        where = f"(batch, in, hidden, out) = {shape}, some pre-activations 0 ({fresh.where()})"
        _check_against_numpy(loss, grads, params, x, y, where)


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_reads_its_arguments_on_every_call(kata, fresh):
    """After a call under jit, called eagerly (no jit around it) on NumPy and on JAX arrays, on
    one params and batches of the same shapes with other values, then on that params dict
    refilled in place with other arrays: each result is that call's loss and gradient. The
    params dict has its keys inserted in a drawn order (only an eager call sees it)."""
    args = data(20, SHAPES[2])
    with keeps_nothing("a call under jit", args):
        _loss_and_grad(jax.jit(kata.loss_and_grad), *args)
    (order,) = key_orders(fresh, KEYS, 1)
    params = data(21, SHAPES[2], order=order)[0]
    for index, seed in enumerate((22, 23, 24)):
        _, x, y = data(seed, SHAPES[2])
        kinds, how = ARRAY_KINDS, "another batch"
        if index == 2:  # the dict itself, as given (device_put would copy it into a new one)
            x, y = data(23, SHAPES[2])[1:]
            kinds, how = ARRAY_KINDS[:1], "the batch before, the params dict refilled in place"
            refilled(params, data(seed, SHAPES[2])[0])
        for kind, put in kinds:
            where = (
                f"eager call {index + 1} of 3 on {kind} ({how}), params keys inserted as "
                f"{order} ({fresh.where()})"
            )
            args = (put(params), put(x), put(y))
            with keeps_nothing(where, args):
                loss, grads = _loss_and_grad(kata.loss_and_grad, *args)
            _check_against_numpy(loss, grads, params, x, y, where)


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_keeps_the_dtype(kata):
    """16-bit params and data give a loss and grads of that dtype (grads like params)."""
    run = jax.jit(kata.loss_and_grad)
    for dtype in NARROW_FLOATS:
        name = np.dtype(dtype).name
        params, x, y = data(8, SHAPES[2], dtype=dtype)
        loss, grads = _loss_and_grad(run, params, x, y)
        dtypes = {key: str(getattr(value, "dtype", None)) for key, value in grads.items()}
        with check:
            assert set(dtypes.values()) == {name}, (
                f"{name} params and data gave grads of dtypes {dtypes}; grads keep the params' "
                "dtype"
            )
        with check:
            assert str(getattr(loss, "dtype", None)) == name, (
                f"{name} params and data gave a loss of dtype {getattr(loss, 'dtype', None)}"
            )
        _check_against_numpy(loss, grads, params, x, y, name, rtol=0.2, atol=0.1)


@pytest.mark.task("loss_and_grad")
def test_grad_matches_finite_differences(kata):
    params, x, y = data(1)
    _, grads = _loss_and_grad(jax.jit(kata.loss_and_grad), params, x, y)
    p64 = oracle.f64(params)
    eps = 1e-6
    for name, index in (("w1", (3, 5)), ("b1", (7,)), ("w2", (11, 2)), ("b2", (1,))):
        up = {k: v.copy() for k, v in p64.items()}
        down = {k: v.copy() for k, v in p64.items()}
        up[name][index] += eps
        down[name][index] -= eps
        numeric = (oracle.np_loss(up, x, y) - oracle.np_loss(down, x, y)) / (2 * eps)
        assert name in grads, f"no gradient for {name}"
        got = float(np.asarray(grads[name])[index])
        with check:
            assert abs(got - numeric) <= 1e-3 + 1e-2 * abs(numeric), (
                f"d loss / d {name}{list(index)}: got {got:.5f}, finite differences {numeric:.5f}"
            )


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_at_an_exact_fit(kata, fresh):
    """Small-integer params and x (strata.exact_fit, drawn) with y the network's output exactly
    (a perfect fit: the loss 0 and every gradient 0, finite), then with drawn integer residuals,
    some 0 (elements fitted exactly), in float32 under jit and called eagerly; a perfect fit in
    bf16 too."""
    runs = [("under jit", jax.jit(kata.loss_and_grad), as_given)]
    runs += [(f"eagerly on {kind}", kata.loss_and_grad, put) for kind, put in ARRAY_KINDS]
    cases = [(np.float32, True), (np.float32, False), (ml_dtypes.bfloat16, True)]
    for index, (dtype, fitted) in enumerate(cases * 2):
        how, run, put = runs[index % len(runs)]
        params, x, y = exact_fit(fresh, dtype, fitted=fitted)
        loss, grads = _loss_and_grad(run, put(params), put(x), put(y))
        fit = "y the network's output exactly" if fitted else "integer residuals, some 0"
        where = (
            f"{np.dtype(dtype).name}, called {how}, {fit}: x = {x.astype(int).tolist()}, "
            f"params = { {k: v.astype(int).tolist() for k, v in params.items()} } "
            f"({fresh.where()})"
        )
        if not fitted:
            _check_against_numpy(loss, grads, params, x, y, where, rtol=1e-5, atol=1e-6)
            continue
        with check:
            assert float(loss) == 0.0, f"{where}: the loss is {float(loss)!r}, expected 0"
        for name in KEYS:
            value = np.asarray(grads.get(name), np.float64)
            with check:
                assert np.all(value == 0.0), (
                    f"{where}: d loss / d {name} is {value.tolist()}, expected 0 everywhere "
                    "(every residual is 0)"
                )


def _non_finite_everywhere(params, x, y) -> dict[str, np.ndarray]:
    """Where d loss / d params is non-finite for every relu spelling (float64 NumPy): the chain
    rule with the relu's gradient as a select, which passes nothing of an inactive unit (a
    multiply by its 0 mask would pass NaN there)."""
    p, x = oracle.f64(params), np.asarray(x, np.float64)
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        d_out = 2.0 * (hidden @ p["w2"] + p["b2"] - np.asarray(y, np.float64)) / np.size(y)
        d_pre = np.where(pre > 0, d_out @ p["w2"].T, 0.0)
        grads = {"w1": x.T @ d_pre, "b1": d_pre.sum(0), "w2": hidden.T @ d_out, "b2": d_out.sum(0)}
    return {name: ~np.isfinite(value) for name, value in grads.items()}


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_lets_non_finite_data_through(kata, fresh):
    """A NaN or an infinity in y (which, where and the shape drawn; its row has a hidden unit
    that is off), float32, under jit and called eagerly: the loss is NaN or inf as NumPy's,
    every gradient entry it reaches stays non-finite (never replaced by a number), the others
    are the chain rule's (the relu passes nothing to a unit that is off, NaN included)."""
    runs = (("under jit", jax.jit(kata.loss_and_grad)), ("eagerly", kata.loss_and_grad))
    for how, run in runs:
        shape = fresh.choice((SHAPES[0], SHAPES[2]))
        params, x, y = data(fresh.randrange(2**16), shape)
        # the row holds a unit that is off (pre-activation <= 0): its gradient passes nothing
        # of the row's non-finite residual there, so d loss / d w1 stays finite in its column
        pre = np.asarray(x, np.float64) @ oracle.f64(params)["w1"] + oracle.f64(params)["b1"]
        rows = np.flatnonzero((pre <= 0).any(axis=1)).tolist() or list(range(shape[0]))
        at = (fresh.choice(rows), fresh.randrange(shape[3]))
        y[at] = fresh.choice((np.nan, np.inf, -np.inf))
        where = f"{how}, shape {shape}, y{list(at)} = {y[at]} ({fresh.where()})"
        loss, grads = _loss_and_grad(run, params, x, y)
        expected = oracle.np_loss(params, x, y)
        with check:
            assert str(float(loss)) == str(expected), (
                f"{where}: the loss is {float(loss)}, expected {expected}"
            )
        with np.errstate(invalid="ignore", over="ignore"):
            chain = oracle.np_grads(params, x, y)
        for name, reached in _non_finite_everywhere(params, x, y).items():
            got = np.asarray(grads.get(name), np.float64)
            assert got.shape == reached.shape, (
                f"{where}: d loss / d {name} has shape {got.shape}, expected {reached.shape}"
            )
            numbers = np.argwhere(reached & np.isfinite(got))[:3].tolist()
            with check:
                assert not numbers, (
                    f"{where}: d loss / d {name} is finite at {numbers} where the gradient is "
                    "NaN or infinite: a non-finite gradient comes back as it is, never "
                    "replaced by a number"
                )
            finite = np.isfinite(chain[name])
            with check:
                np.testing.assert_allclose(
                    got[finite], chain[name][finite], rtol=1e-3, atol=1e-5, err_msg=where
                )
