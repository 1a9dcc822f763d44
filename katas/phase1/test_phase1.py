"""Phase 1 tests: values are checked against NumPy computed here, IR facts against real jaxprs."""

import jax
import numpy as np
import pytest
from pytest_check import check

from xla_inspect.jaxpr import primitive_census
from xla_inspect.stablehlo import stablehlo_op_census

IN, HIDDEN, OUT, BATCH = 16, 32, 4, 8
WIDE = (64, 128, 32)  # (in, hidden, out) with enough weights that a sample std is within 3%


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(IN, HIDDEN)).astype(np.float32) / 4,
        "b1": rng.normal(size=(HIDDEN,)).astype(np.float32),
        "w2": rng.normal(size=(HIDDEN, OUT)).astype(np.float32) / 6,
        "b2": rng.normal(size=(OUT,)).astype(np.float32),
    }
    x = rng.normal(size=(BATCH, IN)).astype(np.float32)
    y = rng.normal(size=(BATCH, OUT)).astype(np.float32)
    return params, x, y


def _np_forward(p, x):
    hidden = np.maximum(x @ p["w1"] + p["b1"], 0.0)
    return hidden @ p["w2"] + p["b2"]


def _np_loss(p, x, y):
    return float(np.mean((_np_forward(p, x) - y) ** 2))


def _init(kata, seed: int, dims: tuple[int, int, int] = (IN, HIDDEN, OUT)):
    # jit compiles the learner's init once; run eagerly, every op would compile on its own
    init = jax.jit(kata.init_params, static_argnums=(1, 2, 3))
    return init(jax.random.key(seed), *dims)


@pytest.mark.task("init_params")
def test_init_params_shapes(kata):
    params = _init(kata, 0)
    shapes = {name: tuple(np.shape(value)) for name, value in params.items()}
    assert shapes == {"w1": (IN, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, OUT), "b2": (OUT,)}


@pytest.mark.task("init_params")
def test_init_params_scale_and_determinism(kata):
    a, b, c = _init(kata, 0, WIDE), _init(kata, 0, WIDE), _init(kata, 1, WIDE)
    n_in, hidden, _ = WIDE
    with check:
        assert np.array_equal(a["w1"], b["w1"]), "the same key must give the same params"
    with check:
        assert not np.array_equal(a["w1"], c["w1"]), "another key must give other params"
    with check:
        assert not np.any(a["b1"]) and not np.any(a["b2"]), "biases start at zero"
    for name, fan_in in (("w1", n_in), ("w2", hidden)):
        ratio = float(np.std(a[name])) * np.sqrt(fan_in)
        with check:
            assert 0.8 < ratio < 1.25, (
                f"{name}: std {ratio:.2f}/sqrt({fan_in}), expected 1/sqrt({fan_in}) (its fan-in)")


@pytest.mark.task("init_params")
def test_init_params_layers_use_different_keys(kata):
    params = _init(kata, 0, WIDE)
    w1, w2 = np.ravel(params["w1"]), np.ravel(params["w2"])
    size = min(w1.size, w2.size)
    corr = float(np.corrcoef(w1[:size], w2[:size])[0, 1])
    assert abs(corr) < 0.5, (
        f"w1 and w2 share their random numbers (correlation {corr:.2f}, expected about 0)")


@pytest.mark.task("mlp_forward")
def test_mlp_forward_matches_numpy(kata):
    params, x, _ = _data()
    out = np.asarray(kata.mlp_forward(params, x))
    np.testing.assert_allclose(out, _np_forward(params, x), rtol=1e-4, atol=1e-4)


@pytest.mark.task("mlp_forward")
def test_mlp_forward_jaxpr_has_two_dots_and_a_max(kata):
    params, x, _ = _data()
    census = primitive_census(jax.make_jaxpr(kata.mlp_forward)(params, x))
    jitted = np.asarray(jax.jit(kata.mlp_forward)(params, x))
    with check:
        assert census["dot_general"] == 2, f"dot_general x{census['dot_general']}, expected 2"
    with check:
        assert census["max"] == 1, f"max x{census['max']}, expected exactly one relu"
    with check:
        np.testing.assert_allclose(jitted, _np_forward(params, x), rtol=1e-4, atol=1e-4)


@pytest.mark.task("mse_loss")
def test_mse_loss_matches_numpy(kata):
    params, x, y = _data()
    loss = jax.jit(kata.mse_loss)(params, x, y)
    assert np.shape(loss) == (), f"loss has shape {np.shape(loss)}, expected a scalar"
    np.testing.assert_allclose(float(loss), _np_loss(params, x, y), rtol=1e-4)


@pytest.mark.task("loss_and_grad")
def test_loss_and_grad_structure(kata):
    params, x, y = _data()
    loss, grads = jax.jit(kata.loss_and_grad)(params, x, y)
    with check:
        np.testing.assert_allclose(float(loss), _np_loss(params, x, y), rtol=1e-4)
    with check:
        assert jax.tree.structure(grads) == jax.tree.structure(params), (
            f"grads structure {jax.tree.structure(grads)}, expected that of params")


@pytest.mark.task("loss_and_grad")
def test_grad_matches_finite_differences(kata):
    params, x, y = _data(1)
    _, grads = jax.jit(kata.loss_and_grad)(params, x, y)
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    eps = 1e-6
    for name, index in (("w1", (3, 5)), ("b1", (7,)), ("w2", (11, 2)), ("b2", (1,))):
        up = {k: v.copy() for k, v in p64.items()}
        down = {k: v.copy() for k, v in p64.items()}
        up[name][index] += eps
        down[name][index] -= eps
        numeric = (_np_loss(up, x, y) - _np_loss(down, x, y)) / (2 * eps)
        got = float(np.asarray(grads[name])[index])
        with check:
            assert abs(got - numeric) <= 1e-3 + 1e-2 * abs(numeric), (
                f"d loss / d {name}{list(index)}: got {got:.5f}, finite differences {numeric:.5f}")


def _power(counter):
    def power(x, n):
        counter.append(n)
        result = x
        for _ in range(n - 1):
            result = result * x
        return result

    return power


@pytest.mark.task("make_power_jit")
def test_power_jit_traces_once_per_static_value(kata):
    traces: list[int] = []
    power = kata.make_power_jit(_power(traces))
    x = np.arange(1.0, 4.0, dtype=np.float32)
    results = [np.asarray(power(x, n)) for n in (2, 2, 3)]
    with check:
        assert len(traces) == 2, f"traced {len(traces)} times for n = 2, 2, 3; expected 2"
    with check:
        np.testing.assert_allclose(results[2], np.arange(1.0, 4.0) ** 3)


@pytest.mark.task("make_power_jit")
def test_power_jit_is_compiled(kata):
    power = kata.make_power_jit(_power([]))
    assert hasattr(power, "lower"), "expected a jax.jit-wrapped function (it has .lower)"
    census = stablehlo_op_census(power.lower(np.ones(3, np.float32), 3).as_text())
    got = census["stablehlo.multiply"]
    assert got == 2, f"stablehlo.multiply x{got}, expected 2 (n=3 unrolls into two multiplies)"


def _count(fn_calls: list, scenario: str) -> int:
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
        jg(f3), jg(f3 + 1)
    elif scenario == "new_shape":
        jg(f3), jg(f4)
    elif scenario == "new_dtype":
        jg(f3), jg(np.ones(3, np.int32))
    elif scenario == "static_values_1_1_2":
        jh(f3, 1), jh(f3, 1), jh(f3, 2)
    elif scenario == "python_floats_1_and_2":
        jg(1.0), jg(2.0)
    return len(calls)


SCENARIOS = ("same_shape_twice", "new_shape", "new_dtype", "static_values_1_1_2",
             "python_floats_1_and_2")


@pytest.mark.task("predict_traces")
def test_predict_traces_covers_every_scenario(kata):
    assert sorted(kata.predict_traces()) == sorted(SCENARIOS)


@pytest.mark.task("predict_traces")
def test_predict_traces_matches_measurement(kata):
    predicted = kata.predict_traces()
    for scenario in SCENARIOS:
        jax.clear_caches()
        measured = _count([], scenario)
        with check:
            assert predicted.get(scenario) == measured, (
                f"{scenario}: you predicted {predicted.get(scenario)}, jit traced {measured} times")


@pytest.mark.task("python_if_error")
def test_python_if_error_is_exact(kata):
    expected = kata.python_if_error()

    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(Exception) as raised:
        jax.jit(f)(1.0)
    assert type(raised.value) is expected, (
        f"you said {expected.__name__}, jit raised {type(raised.value).__name__}")


@pytest.mark.task("abs_where")
def test_abs_where_values_under_jit(kata):
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(kata.abs_where)(x)), [2.0, 0.0, 3.0])


@pytest.mark.task("abs_where")
def test_abs_where_selects(kata):
    census = primitive_census(jax.make_jaxpr(kata.abs_where)(np.ones(3, np.float32)))
    with check:
        assert census["select_n"] >= 1, f"no select_n in the jaxpr: {dict(census)}"
    with check:
        assert census["cond"] == 0, "jnp.where selects per element; it needs no cond"


@pytest.mark.task("abs_cond")
def test_abs_cond_branches(kata):
    census = primitive_census(jax.make_jaxpr(kata.abs_cond)(1.0))
    values = [float(jax.jit(kata.abs_cond)(v)) for v in (-2.0, 3.0)]
    with check:
        assert census["cond"] == 1, f"cond x{census['cond']} in the jaxpr, expected 1"
    with check:
        assert values == [2.0, 3.0], f"abs_cond(-2), abs_cond(3) gave {values}"
