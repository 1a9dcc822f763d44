"""Phase 1 tests: values are checked against NumPy computed here, IR facts against real jaxprs.

Every task is tried on several shapes (non-square, size 1, odd), and where the task allows it on
several dtypes; IR facts are the ones every correct spelling shares (a relu written with
jnp.maximum, jnp.where or jax.nn.relu passes alike).
"""

import functools

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pytest_check import check

from kata_harness.predict import compiler_refused
from katas.phase1.programs import (
    ABS_INPUTS,
    CALL_STREAMS,
    KEYS,
    SHAPES,
    counting_power,
    data,
    if_positive,
    random_streams,
)
from xla_inspect.jaxpr import primitive_census
from xla_inspect.stablehlo import stablehlo_op_census

# (in, hidden, out) with enough weights that a sample std is within a few percent; in == out so
# w1 and w2 hold the same number of values, and fan-ins that differ between the layers
WIDE = (48, 96, 48)

VALUES = settings(
    derandomize=True,
    max_examples=6,
    deadline=None,
    phases=[Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _f64(tree):
    return {k: np.asarray(v, np.float64) for k, v in tree.items()}


def _np_forward(p, x):
    p, x = _f64(p), np.asarray(x, np.float64)
    hidden = np.maximum(x @ p["w1"] + p["b1"], 0.0)
    return hidden @ p["w2"] + p["b2"]


def _np_loss(p, x, y):
    return float(np.mean((_np_forward(p, x) - np.asarray(y, np.float64)) ** 2))


def _np_backprop(p, x, d_out):
    """d params of a scalar whose gradient with respect to the MLP's output is d_out (NumPy)."""
    p, x = _f64(p), np.asarray(x, np.float64)
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    d_pre = (d_out @ p["w2"].T) * (pre > 0)  # the relu passes the gradient where pre > 0
    return {"w1": x.T @ d_pre, "b1": d_pre.sum(0), "w2": hidden.T @ d_out, "b2": d_out.sum(0)}


def _np_grads(p, x, y):
    """d mean((relu(x w1 + b1) w2 + b2 - y)^2) / d params, by the chain rule in NumPy."""
    y = np.asarray(y, np.float64)
    return _np_backprop(p, x, 2.0 * (_np_forward(p, x) - y) / y.size)


# ---------------------------------------------------------------------------------- init_params


def _check_keys(params):
    assert isinstance(params, dict), f"init_params returned {type(params).__name__}, not a dict"
    assert sorted(params) == sorted(KEYS), f"keys {sorted(params)}, expected {sorted(KEYS)}"


def _key_tree() -> list[tuple[str, int | None]]:
    """Keys a learner may draw from: the given key, split(key, n)[i], split(split(key, n)[i])[j].
    Each node is (label, index of the key it was split from)."""
    nodes: list[tuple[str, int | None]] = [("the key you were given", None)]
    for n in (2, 3, 4):
        for i in range(n):
            nodes.append((f"split(key, {n})[{i}]", 0))
            child = len(nodes) - 1
            nodes += [(f"split(split(key, {n})[{i}])[{j}]", child) for j in range(2)]
    return nodes


@functools.cache
def _key_tree_draws(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """normal(k, w1's shape) and normal(k, w2's shape) for every key of _key_tree (one program)."""
    n_in, hidden, out = WIDE

    def draws(parent):
        keys = [parent]
        for n in (2, 3, 4):
            for k in jax.random.split(parent, n):
                keys += [k, *jax.random.split(k)]
        stacked = jax.random.wrap_key_data(jax.numpy.stack([jax.random.key_data(k) for k in keys]))
        return jax.vmap(
            lambda k: (jax.random.normal(k, (n_in, hidden)), jax.random.normal(k, (hidden, out)))
        )(stacked)

    first, second = jax.jit(draws)(jax.random.key(seed))
    return np.asarray(first), np.asarray(second)


def _drawn_from(values: np.ndarray, candidates: np.ndarray) -> int | None:
    """Which key of _key_tree gave these (unscaled) values, if any."""
    for index, candidate in enumerate(candidates):
        if np.allclose(values, candidate, rtol=1e-3, atol=1e-4):
            return index
    return None


def _lineage(index: int | None) -> set[int]:
    nodes, found = _key_tree(), set()
    while index is not None:
        found.add(index)
        index = nodes[index][1]
    return found


@pytest.mark.task("init_params")
def test_init_params_shapes_and_dtypes(kata):
    for _, n_in, hidden, out in SHAPES:
        # eval_shape traces without compiling: shapes and dtypes, no values
        init = functools.partial(kata.init_params, in_dim=n_in, hidden=hidden, out_dim=out)
        params = jax.eval_shape(init, jax.random.key(0))
        _check_keys(params)
        shapes = {name: tuple(value.shape) for name, value in params.items()}
        expected = {"w1": (n_in, hidden), "b1": (hidden,), "w2": (hidden, out), "b2": (out,)}
        dtypes = {name: str(value.dtype) for name, value in params.items()}
        with check:
            assert shapes == expected, f"dims {(n_in, hidden, out)}: shapes {shapes}"
        with check:
            assert set(dtypes.values()) == {"float32"}, f"dtypes {dtypes}, expected float32"


@pytest.mark.task("init_params")
def test_init_params_each_layer_draws_alone(kata):
    """Each layer its own subkey: a layer's weights do not depend on the other layer's size
    (one draw sliced between the layers moves w2 when w1 grows)."""
    key = jax.random.key(7)
    base = kata.init_params(key, 3, 16, 5)
    wider_in = kata.init_params(key, 11, 16, 5)
    wider_out = kata.init_params(key, 3, 16, 9)
    assert np.array_equal(np.asarray(base["w2"]), np.asarray(wider_in["w2"])), (
        "w2 changed when only in_dim changed: give each layer its own subkey and draw it alone"
    )
    assert np.array_equal(np.asarray(base["w1"]), np.asarray(wider_out["w1"])), (
        "w1 changed when only out_dim changed: give each layer its own subkey and draw it alone"
    )


@pytest.mark.task("init_params")
def test_init_params_values(kata):
    n_in, hidden, _ = WIDE
    # jit compiles the learner's init once for the three keys (eagerly every op would compile)
    init = jax.jit(kata.init_params, static_argnums=(1, 2, 3))
    runs = []
    for seed in (3, 3, 4):
        params = init(jax.random.key(seed), *WIDE)
        _check_keys(params)
        runs.append({name: np.asarray(value) for name, value in params.items()})
    params, again, other = runs
    with check:
        assert not np.any(params["b1"]) and not np.any(params["b2"]), "biases start at zero"
    for name, fan_in in (("w1", n_in), ("w2", hidden)):
        z = params[name].ravel() * np.sqrt(fan_in)  # standard normal if the scale is right
        with check:
            assert 0.9 < float(np.std(z)) < 1.1, (
                f"{name}: std {float(np.std(z)):.2f}/sqrt({fan_in}), expected 1/sqrt({fan_in}) "
                "(its fan-in, the number of rows)"
            )
        with check:
            assert abs(float(np.mean(z))) < 0.1, f"{name}: mean {float(np.mean(z)):.2f}, expected 0"
        tail = float(np.mean(np.abs(z) > 2.0))  # 4.6% for a normal, 0% for a uniform of std 1
        with check:
            assert 0.03 < tail < 0.065, (
                f"{name}: {tail:.1%} of the values lie beyond 2 std, a normal has 4.6%"
            )
        far = int(np.sum(np.abs(z) > 3.0))  # a normal puts 0.27% (about 12 of these) there
        with check:
            assert far > 0, (
                f"{name}: no value lies beyond 3 std among {z.size}; a standard normal puts "
                "about 0.27% there (a truncated normal puts none)"
            )
        with check:
            assert np.array_equal(params[name], again[name]), (
                f"{name}: the same key must give the same params"
            )
        with check:
            assert not np.array_equal(params[name], other[name]), (
                f"{name}: another key must give other params"
            )
    # a key is used once: not drawn from and also split, not drawn from twice
    tree, draws = _key_tree(), _key_tree_draws(3)
    source = {
        name: _drawn_from(params[name] * np.sqrt(fan_in), candidates)
        for (name, fan_in), candidates in zip((("w1", n_in), ("w2", hidden)), draws, strict=True)
    }
    for name, index in source.items():
        with check:
            assert index != 0, (
                f"{name} is drawn from the key you were given; split it and draw from the "
                "subkeys (a key is used once: drawing from it and splitting it reuses it)"
            )
    if source["w1"] is not None and source["w2"] is not None:
        first, second = source["w1"], source["w2"]
        related = first in _lineage(second) or second in _lineage(first)
        with check:
            assert not related, (
                f"w1 comes from {tree[first][0]} and w2 from {tree[second][0]}: one key drawn "
                "from and split (or drawn from twice); give each layer its own subkey"
            )
    # in == out: w1 and w2 hold as many values; drawn from one key they are the same numbers
    z1 = params["w1"].ravel() * np.sqrt(n_in)
    z2 = params["w2"].ravel() * np.sqrt(hidden)
    corr = float(np.corrcoef(z1, z2)[0, 1])
    with check:
        assert abs(corr) < 0.2, (
            f"w1 and w2 share their random numbers (correlation {corr:.2f}, expected about 0): "
            "each layer needs its own subkey"
        )


# ---------------------------------------------------------------------------------- mlp_forward


@pytest.mark.task("mlp_forward")
def test_mlp_forward_matches_numpy(kata):
    forward = jax.jit(kata.mlp_forward)
    for seed, shape in enumerate(SHAPES[1:]):  # size 1 everywhere it can be; odd, non-square
        order = KEYS if seed % 2 else ("b2", "w2", "b1", "w1")  # dicts in any key order
        params, x, _ = data(seed, shape, order=order)
        out = np.asarray(forward(params, x))
        expected = _np_forward(params, x)
        with check:
            assert out.shape == expected.shape, (
                f"{shape}: output {out.shape}, expected {expected.shape}"
            )
        if out.shape == expected.shape:
            with check:
                np.testing.assert_allclose(
                    out,
                    expected,
                    rtol=1e-4,
                    atol=1e-3,
                    err_msg=f"(batch, in, hidden, out) = {shape}",
                )


@pytest.mark.task("mlp_forward")
def test_mlp_forward_keeps_the_dtype(kata):
    params, x, _ = data(5, SHAPES[2], dtype=ml_dtypes.bfloat16)
    out = jax.jit(kata.mlp_forward)(params, x)
    assert hasattr(out, "dtype"), f"mlp_forward returned {type(out).__name__}, not an array"
    with check:
        assert str(out.dtype) == "bfloat16", f"bf16 params and x gave {out.dtype}; keep bf16"
    with check:
        np.testing.assert_allclose(
            np.asarray(out, np.float32), _np_forward(params, x), rtol=0.05, atol=0.3
        )


@pytest.mark.task("mlp_forward")
def test_mlp_forward_is_a_pure_differentiable_function(kata):
    params, x, _ = data(2, SHAPES[2])
    jaxpr = jax.make_jaxpr(kata.mlp_forward)(params, x)
    census = primitive_census(jaxpr)
    grads = jax.jit(jax.grad(lambda p, v: kata.mlp_forward(p, v).sum()))(params, x)
    expected = _np_backprop(params, x, np.ones((x.shape[0], params["b2"].shape[0])))
    with check:
        assert census["dot_general"] == 2, f"dot_general x{census['dot_general']}, expected 2"
    with check:
        assert len(jaxpr.in_avals) == 5, (
            f"{len(jaxpr.in_avals)} jaxpr inputs, expected 5: the four params and x"
        )
    with check:
        assert not jaxpr.consts, "the jaxpr closed over arrays: use only params and x"
    for name in KEYS:
        with check:
            np.testing.assert_allclose(
                np.asarray(grads[name]),
                expected[name],
                rtol=1e-3,
                atol=1e-3,
                err_msg=f"d sum(mlp_forward) / d {name}",
            )


# ------------------------------------------------------------------------------------- mse_loss


@pytest.mark.task("mse_loss")
@settings(VALUES, max_examples=4)
@given(batch=st.integers(1, 9), out=st.integers(2, 5), seed=st.integers(0, 2**16))
def test_mse_loss_matches_numpy(kata, batch, out, seed):
    params, x, y = data(seed, (batch, 3, 5, out))
    loss = jax.jit(kata.mse_loss)(params, x, y)
    assert np.shape(loss) == (), f"loss has shape {np.shape(loss)}, expected a scalar"
    np.testing.assert_allclose(
        float(loss), _np_loss(params, x, y), rtol=1e-4, err_msg=f"batch {batch}, {out} outputs"
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


# -------------------------------------------------------------------------------- loss_and_grad


def _loss_and_grad(kata, params, x, y):
    result = jax.jit(kata.loss_and_grad)(params, x, y)
    assert isinstance(result, tuple) and len(result) == 2, "expected a pair (loss, grads)"
    loss, grads = result
    assert np.shape(loss) == (), f"the first item has shape {np.shape(loss)}: the loss is a scalar"
    assert isinstance(grads, dict), (
        f"grads is a {type(grads).__name__}, expected a dict like params"
    )
    return float(loss), grads


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_matches_numpy(kata):
    for seed, shape in enumerate(SHAPES[1:]):  # size 1 and odd; finite differences use SHAPES[0]
        params, x, y = data(seed, shape)
        loss, grads = _loss_and_grad(kata, params, x, y)
        expected = _np_grads(params, x, y)
        with check:
            np.testing.assert_allclose(loss, _np_loss(params, x, y), rtol=1e-4)
        with check:
            assert jax.tree.structure(grads) == jax.tree.structure(params), (
                f"grads structure {jax.tree.structure(grads)}, expected that of params"
            )
        for name in KEYS:
            if name in grads:
                with check:
                    np.testing.assert_allclose(
                        np.asarray(grads[name]),
                        expected[name],
                        rtol=1e-3,
                        atol=1e-5,
                        err_msg=f"{shape}: d loss / d {name}",
                    )


@pytest.mark.task("loss_and_grad")
def test_grad_matches_finite_differences(kata):
    params, x, y = data(1)
    _, grads = _loss_and_grad(kata, params, x, y)
    p64 = _f64(params)
    eps = 1e-6
    for name, index in (("w1", (3, 5)), ("b1", (7,)), ("w2", (11, 2)), ("b2", (1,))):
        up = {k: v.copy() for k, v in p64.items()}
        down = {k: v.copy() for k, v in p64.items()}
        up[name][index] += eps
        down[name][index] -= eps
        numeric = (_np_loss(up, x, y) - _np_loss(down, x, y)) / (2 * eps)
        assert name in grads, f"no gradient for {name}"
        got = float(np.asarray(grads[name])[index])
        with check:
            assert abs(got - numeric) <= 1e-3 + 1e-2 * abs(numeric), (
                f"d loss / d {name}{list(index)}: got {got:.5f}, finite differences {numeric:.5f}"
            )


# ------------------------------------------------------------------------------- make_power_jit


def _call(power, x, n):
    try:
        return np.asarray(power(x, n))
    except (jax.errors.TracerIntegerConversionError, jax.errors.ConcretizationTypeError) as error:
        pytest.fail(
            f"n reached range() as a tracer ({type(error).__name__}): jit must treat n as static"
        )


@pytest.mark.task("make_power_jit")
def test_power_jit_traces_once_per_static_value(kata):
    traces: list[int] = []
    power = kata.make_power_jit(counting_power(traces))
    rng = np.random.default_rng(0)
    ns = (3, 2, 3, 2, 4)
    xs = [rng.integers(-3, 4, size=(2, 5)).astype(np.float32) for _ in ns]  # new values each call
    results = [_call(power, x, n) for x, n in zip(xs, ns, strict=True)]
    with check:
        assert sorted(traces) == [2, 3, 4], (
            f"traced for n = {traces} over calls with n = {list(ns)}; expected one trace per "
            "distinct n (and none for new values of x)"
        )
    for x, n, got in zip(xs, ns, results, strict=True):
        with check:
            np.testing.assert_allclose(got, x**n, err_msg=f"n = {n}")


@pytest.mark.task("make_power_jit")
def test_power_jit_is_compiled_with_n_baked_in(kata):
    power = kata.make_power_jit(counting_power([]))
    assert hasattr(power, "lower") and hasattr(power, "trace"), (
        "expected what jax.jit returns (it has .lower and .trace)"
    )
    for x in (np.ones(3, np.float32), np.ones((2, 5), np.int32)):
        for n in (1, 3, 4):
            census = stablehlo_op_census(power.lower(x, n).as_text())
            inputs = len(power.trace(x, n).jaxpr.in_avals)
            with check:
                assert census["stablehlo.multiply"] == n - 1, (
                    f"n={n}: stablehlo.multiply x{census['stablehlo.multiply']}, expected {n - 1}"
                    " (the Python loop unrolls)"
                )
            with check:
                assert inputs == 1, f"n={n}: the program takes {inputs} inputs; n is no input"


# ------------------------------------------------------------------------------- predict_traces


@functools.cache  # a measurement of test-owned programs: the same for every variant
def _count(scenario: str) -> int:
    jax.clear_caches()
    calls: list = []

    def g(x):
        calls.append(1)
        return x * 2

    def h(x, n):
        calls.append(1)
        return x * n

    jg, jh = jax.jit(g), jax.jit(h, static_argnums=1)
    f3, f4 = np.ones(3, np.float32), np.ones(4, np.float32)
    if scenario == "same_shape_twice":
        jg(f3)
        jg(f3 + 1)
    elif scenario == "new_shape":
        jg(f3)
        jg(f4)
    elif scenario == "new_dtype":
        jg(f3)
        jg(np.ones(3, np.int32))
    elif scenario == "static_values_1_1_2":
        jh(f3, 1)
        jh(f3, 1)
        jh(f3, 2)
    elif scenario == "python_floats_1_and_2":
        jg(1.0)
        jg(2.0)
    return len(calls)


SCENARIOS = (
    "same_shape_twice",
    "new_shape",
    "new_dtype",
    "static_values_1_1_2",
    "python_floats_1_and_2",
)


@pytest.mark.task("predict_traces")
def test_predict_traces_covers_every_scenario(kata):
    predicted = kata.predict_traces()
    assert sorted(predicted) == sorted(SCENARIOS)


@pytest.mark.task("predict_traces")
def test_predict_traces_matches_measurement(kata):
    predicted = kata.predict_traces()
    assert isinstance(predicted, dict), f"expected a dict, got {type(predicted).__name__}"
    for scenario in SCENARIOS:
        measured = _count(scenario)
        with check:
            assert predicted.get(scenario) == measured, (
                f"{scenario}: you predicted {predicted.get(scenario)}, jit traced {measured} times"
            )


@pytest.mark.task("predict_traces")
def test_predict_traces_does_not_run_jit(kata):
    with compiler_refused("predict_traces"):
        predicted = kata.predict_traces()
    assert isinstance(predicted, dict), f"expected a dict, got {type(predicted).__name__}"


# -------------------------------------------------------------------------------- count_traces


def _measure_traces(stream: list[tuple]) -> int:
    """Traces of a fresh jax.jit(g, static_argnums=1) over the stream, counted in g."""
    calls: list = []

    def g(x, n):
        calls.append(n)
        return x * n

    jitted = jax.jit(g, static_argnums=1)
    for x, n in stream:
        jitted(x, n)
    return len(calls)


@functools.cache  # test-owned streams: measured once per session
def _measured_streams() -> dict[str, int]:
    return {name: _measure_traces(s) for name, s in {**CALL_STREAMS, **random_streams()}.items()}


@pytest.mark.task("count_traces")
def test_count_traces_matches_jit(kata):
    measured = _measured_streams()
    streams = {**CALL_STREAMS, **random_streams()}
    for name, stream in streams.items():
        with compiler_refused("count_traces"):
            predicted = kata.count_traces(list(stream))
        with check:
            assert predicted == measured[name], (
                f"{name}: you predicted {predicted} traces, jit traced {measured[name]}"
            )


# ------------------------------------------------------------------------------ python_if_error


@pytest.mark.task("python_if_error")
def test_python_if_error_is_exact(kata):
    expected = kata.python_if_error()
    assert isinstance(expected, type), f"expected an exception class, got {expected!r}"
    for arg in (1.0, np.float32(-2.0), np.int32(3)):
        with pytest.raises(Exception) as raised:
            jax.jit(if_positive)(arg)
        with check:
            assert type(raised.value) is expected, (
                f"you said {expected.__name__}, jit raised {type(raised.value).__name__}"
            )


# ------------------------------------------------------------------------------------ abs_where


def _abs_values(kata, fn):
    run = jax.jit(getattr(kata, fn))
    for x in ABS_INPUTS:
        got = run(x)
        assert hasattr(got, "dtype"), f"{fn} returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == (x.shape, str(x.dtype)), (
                f"|x| of {x.dtype}{list(x.shape)} came back as {got.dtype}{list(got.shape)}"
            )
        with check:
            np.testing.assert_array_equal(
                np.asarray(got, np.float64),
                np.abs(np.asarray(x, np.float64)),
                err_msg=f"{x.dtype}{list(x.shape)}",
            )


@pytest.mark.task("abs_where")
def test_abs_where_values_under_jit(kata):
    _abs_values(kata, "abs_where")


@pytest.mark.task("abs_where")
@VALUES
@given(
    values=st.lists(st.floats(-1e6, 1e6, width=32, allow_subnormal=False), min_size=6, max_size=6)
)  # one shape: one compile
def test_abs_where_any_floats(kata, values):
    x = np.array(values, np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(kata.abs_where)(x)), np.abs(x))


@pytest.mark.task("abs_where")
def test_abs_where_selects(kata):
    census = primitive_census(jax.make_jaxpr(kata.abs_where)(np.ones((2, 3), np.float32)))
    with check:
        assert census["select_n"] >= 1, f"no select_n in the jaxpr: {dict(census)}"
    with check:
        assert census["cond"] == 0, "jnp.where selects per element; it needs no cond"
    with check:
        assert census["abs"] == 0 and census["sign"] == 0, (
            f"the jaxpr computes |x| without a select: {dict(census)}"
        )


# ------------------------------------------------------------------------------------- abs_cond


@pytest.mark.task("abs_cond")
def test_abs_cond_values(kata):
    run = jax.jit(kata.abs_cond)
    cases = [np.float32(v) for v in (-2.5, 0.0, 3.0, -1e-3)]
    cases += [np.int32(-4), np.int32(7), ml_dtypes.bfloat16(-1.5)]
    for x in cases:
        got = run(x)
        assert hasattr(got, "dtype"), f"abs_cond returned {type(got).__name__}, not an array"
        with check:
            assert (got.shape, str(got.dtype)) == ((), str(np.asarray(x).dtype)), (
                f"abs_cond({x!r}) came back as {got.dtype}{list(got.shape)}"
            )
        with check:
            assert float(got) == abs(float(x)), f"abs_cond({x!r}) gave {float(got)}"


@pytest.mark.task("abs_cond")
def test_abs_cond_runs_one_branch(kata):
    jaxpr = jax.make_jaxpr(kata.abs_cond)(np.float32(1.0))
    everywhere = primitive_census(jaxpr)
    top = primitive_census(jaxpr, recursive=False)
    computing = {p: top[p] for p in ("neg", "sub", "mul", "abs", "select_n") if top[p]}
    with check:
        assert everywhere["cond"] == 1, f"cond x{everywhere['cond']} in the jaxpr, expected 1"
    with check:
        assert everywhere["select_n"] == 0, "a select computes both sides; use lax.cond"
    with check:
        assert not computing, (
            f"{computing} outside the cond: the negation must happen inside a branch, so that "
            "only the branch taken runs"
        )
