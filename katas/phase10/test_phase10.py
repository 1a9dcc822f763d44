"""Phase 10 tests: training values against NumPy and jax.grad, HLO facts from parsed modules."""

import warnings
from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from pytest_check import check

from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo

IN, HIDDEN, OUT, BATCH = 16, 32, 4, 8
LEARNING_RATE = 0.05


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(IN, HIDDEN)).astype(np.float32) / 4,
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": rng.normal(size=(HIDDEN, OUT)).astype(np.float32) / 6,
        "b2": np.zeros(OUT, np.float32),
    }
    x = rng.normal(size=(BATCH, IN)).astype(np.float32)
    y = rng.normal(size=(BATCH, OUT)).astype(np.float32)
    return params, x, y


def _device_params(params):
    return jax.device_put(params)


def _np_example_losses(p, x, y):
    out = np.maximum(x @ p["w1"] + p["b1"], 0.0) @ p["w2"] + p["b2"]
    return ((out - y) ** 2).mean(axis=1)


# A training step owned by the tests: the reading tasks get its compiled form.
def _forward(p, x):
    return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def _loss(p, x, y):
    return jnp.mean((_forward(p, x) - y) ** 2)


_MOMENTUM = optax.sgd(LEARNING_RATE, momentum=0.9)  # has optimizer state, compiles fast


def _step(p, state, x, y):
    loss, grads = jax.value_and_grad(_loss)(p, x, y)
    updates, state = _MOMENTUM.update(grads, state, p)
    return optax.apply_updates(p, updates), state, loss


@cache
def _step_args():
    params, x, y = _data()
    params = _device_params(params)
    return params, _MOMENTUM.init(params), x, y


@cache
def _grads():
    params, x, y = _data()
    return jax.grad(_loss)(_device_params(params), x, y)


@cache
def _compiled_step(donate: bool = True):
    jitted = jax.jit(_step, donate_argnums=(0, 1) if donate else ())
    return jitted.lower(*_step_args()).compile()


@cache
def _compiled_forward():
    params, x, _ = _data()
    return jax.jit(_forward).lower(params, x).compile()


def _step_loss_first(p, state, x, y):
    new_p, state, loss = _step(p, state, x, y)
    return loss, new_p, state  # the outputs shift by one; the donated parameters do not


@cache
def _compiled_loss_first():
    return jax.jit(_step_loss_first, donate_argnums=(0, 1)).lower(*_step_args()).compile()


def _two_steps(p, state, x, y):  # a training loop inside one program: the body is a while
    def body(_, carry):
        return _step(*carry, x, y)[:2]

    return jax.lax.fori_loop(0, 2, body, (p, state))


@cache
def _compiled_two_steps():
    return jax.jit(_two_steps).lower(*_step_args()).compile()


def _tanh_forward(p, x):
    return jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


@cache
def _compiled_tanh_forward():
    params, x, _ = _data()
    return jax.jit(_tanh_forward).lower(params, x).compile()


def _opcodes(compiled) -> Counter:
    return Counter(i.opcode for c in parse_hlo(compiled.as_text()) for i in c)


# ---- task 1: per_example_losses ---------------------------------------------------------------


@pytest.mark.task("per_example_losses")
def test_per_example_values(kata):
    params, x, y = _data()
    got = np.asarray(kata.per_example_losses(_device_params(params), x, y))
    with check:
        assert got.shape == (BATCH,), f"shape {got.shape}, expected one loss per example"
    with check:
        np.testing.assert_allclose(got, _np_example_losses(params, x, y), rtol=1e-4, atol=1e-6)


@pytest.mark.task("per_example_losses")
def test_per_example_is_one_batched_program(kata):
    params, x, y = _data()
    census = primitive_census(jax.make_jaxpr(kata.per_example_losses)(params, x, y))
    assert census["dot_general"] == 2, (
        f"{census['dot_general']} dot_generals: vmap batches the two matmuls, a loop repeats them")


# ---- task 2: make_train_step ------------------------------------------------------------------


@pytest.mark.task("make_train_step")
def test_loss_decreases(kata):
    params, x, y = _data()
    optimizer = optax.sgd(LEARNING_RATE)
    step = kata.make_train_step(optimizer)
    state = optimizer.init(_device_params(params))
    current, losses = _device_params(params), []
    for _ in range(5):
        current, state, loss = step(current, state, x, y)
        losses.append(float(loss))
    with check:
        assert losses[0] == pytest.approx(_np_example_losses(params, x, y).mean(), rel=1e-4), (
            f"first loss {losses[0]}: the loss of the params passed in, before the update")
    with check:
        assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), f"losses {losses}"


@pytest.mark.task("make_train_step")
def test_sgd_step_is_a_gradient_step(kata):
    params, x, y = _data()
    grads = _grads()
    optimizer = optax.sgd(LEARNING_RATE)
    new, _, _ = kata.make_train_step(optimizer)(
        _device_params(params), optimizer.init(_device_params(params)), x, y)
    for name in params:
        want = params[name] - LEARNING_RATE * np.asarray(grads[name])
        with check:
            np.testing.assert_allclose(np.asarray(new[name]), want, rtol=1e-4, atol=1e-6,
                                       err_msg=name)


@pytest.mark.task("make_train_step")
def test_step_donates_params_and_state(kata):
    params, x, y = _data()
    optimizer = optax.sgd(LEARNING_RATE, momentum=0.9)
    step = kata.make_train_step(optimizer)
    params = _device_params(params)
    state = optimizer.init(params)
    old = jax.tree.leaves((params, state))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = parse_hlo(step.lower(params, state, x, y).compile().as_text())
        step(params, state, x, y)
    deleted = sum(leaf.is_deleted() for leaf in old)
    with check:
        assert deleted == len(old), f"{deleted} of {len(old)} params/state buffers were donated"
    with check:
        assert "input_output_alias" in module.attributes, "the compiled module aliases no buffer"
    unusable = [str(w.message).splitlines()[0] for w in caught
                if "donated buffers were not usable" in str(w.message)]
    with check:
        assert not unusable, (
            f"JAX warned: {unusable}: donate only what an output can reuse (params and "
            "optimizer state), not the batch")


# ---- task 3: fusion_count ---------------------------------------------------------------------


@pytest.mark.task("fusion_count")
def test_fusion_count_matches_module(kata):
    for name, compiled in (("step", _compiled_step()), ("forward", _compiled_forward()),
                           ("two steps in a fori_loop", _compiled_two_steps())):
        got, want = kata.fusion_count(compiled), _opcodes(compiled)["fusion"]
        with check:
            assert got == want, f"{name}: got {got}, the module has {want} fusions"


@pytest.mark.task("fusion_count")
def test_step_has_more_kernels_than_forward(kata):
    step, forward = kata.fusion_count(_compiled_step()), kata.fusion_count(_compiled_forward())
    assert step > 2 * forward > 0, (
        f"step {step}, forward {forward}: backward and the optimizer add element-wise kernels")


# ---- task 4: aliased_parameters ---------------------------------------------------------------


@pytest.mark.task("aliased_parameters")
def test_donated_buffers_are_aliased(kata):
    params, state, _, _ = _step_args()
    donated = jax.tree.leaves((params, state))
    got = kata.aliased_parameters(_compiled_step())
    with check:
        assert list(got) == list(range(len(donated))), (
            f"got {got}: the {len(donated)} params and state leaves come first and are donated")
    alias_bytes = _compiled_step().memory_analysis().alias_size_in_bytes
    with check:
        assert alias_bytes == sum(leaf.nbytes for leaf in donated), (
            f"memory_analysis says {alias_bytes} bytes are aliased")


@pytest.mark.task("aliased_parameters")
def test_parameters_not_output_indices(kata):
    params, state, _, _ = _step_args()
    donated = len(jax.tree.leaves((params, state)))
    got = kata.aliased_parameters(_compiled_loss_first())
    assert list(got) == list(range(donated)), (
        f"got {got}: this step returns (loss, params, state), so output {{1}} reuses "
        f"parameter 0; answer with the parameter numbers 0..{donated - 1}, not output indices")


@pytest.mark.task("aliased_parameters")
def test_no_donation_no_alias(kata):
    got = kata.aliased_parameters(_compiled_step(donate=False))
    with check:
        assert list(got) == [], f"got {got} without donate_argnums"
    with check:
        assert _compiled_step(donate=False).memory_analysis().alias_size_in_bytes == 0


# ---- task 5: flops_per_step -------------------------------------------------------------------


@pytest.mark.task("flops_per_step")
def test_flops_match_cost_model(kata):
    for compiled in (_compiled_step(), _compiled_forward(), _compiled_tanh_forward()):
        got, want = kata.flops_per_step(compiled), compiled.cost_analysis()["flops"]
        with check:
            assert got == pytest.approx(want), f"got {got}, the cost model says {want}"


@pytest.mark.task("flops_per_step")
def test_step_costs_forward_plus_backward_matmuls(kata):
    forward = 2 * BATCH * (IN * HIDDEN + HIDDEN * OUT)  # multiply-adds of the two forward dots
    weight_grads = forward  # x^T @ g1 and h^T @ g2 have the same sizes
    hidden_grad = 2 * BATCH * HIDDEN * OUT  # g2 @ w2^T; no gradient flows into the data x
    step = kata.flops_per_step(_compiled_step())
    assert step >= forward + weight_grads + hidden_grad, (
        f"{step} flops: the dots alone are {forward} + {weight_grads} + {hidden_grad}")


# ---- task 6: transpose_counts -----------------------------------------------------------------


@pytest.mark.task("transpose_counts")
def test_transposes_vanish_in_hlo(kata):
    step = jax.jit(_step)
    in_jaxpr, in_hlo = kata.transpose_counts(step, *_step_args())
    want_jaxpr = primitive_census(jax.make_jaxpr(step)(*_step_args()))["transpose"]
    want_hlo = _opcodes(_compiled_step(donate=False))["transpose"]  # the same program, no donation
    with check:
        assert in_jaxpr == want_jaxpr > 0, f"jaxpr: got {in_jaxpr}, it has {want_jaxpr}"
    with check:
        assert in_hlo == want_hlo == 0, f"optimized HLO: got {in_hlo}, it has {want_hlo}"


def _transposed_output(a):
    return a.T * 2.0  # nothing to fold this transpose into: it survives optimization


@pytest.mark.task("transpose_counts")
def test_a_transpose_that_survives(kata):
    a = np.ones((16, 8), np.float32)
    got = kata.transpose_counts(_transposed_output, a)
    want_jaxpr = primitive_census(jax.make_jaxpr(_transposed_output)(a))["transpose"]
    want_hlo = _opcodes(jax.jit(_transposed_output).lower(a).compile())["transpose"]
    assert tuple(got) == (want_jaxpr, want_hlo) and want_hlo > 0, (
        f"got {got}, expected {(want_jaxpr, want_hlo)}: count the compiled module, "
        "not what you expect XLA to do")


# ---- task 7: absorbed_transposes --------------------------------------------------------------


def _dot_dims(compiled):
    return [(i.attribute("lhs_contracting_dims"), i.attribute("rhs_contracting_dims"))
            for c in parse_hlo(compiled.as_text()) for i in c if i.opcode == "dot"]


@pytest.mark.task("absorbed_transposes")
def test_absorbed_transposes_match_module(kata):
    for name, compiled in (("step", _compiled_step()), ("forward", _compiled_forward())):
        got = kata.absorbed_transposes(compiled)
        want = sum(dims != ("{1}", "{0}") for dims in _dot_dims(compiled))
        with check:
            assert got == want, f"{name}: got {got}, the module has {want} such dots"


@pytest.mark.task("absorbed_transposes")
def test_weight_gradients_contract_the_batch(kata):
    step, forward = kata.absorbed_transposes(_compiled_step()), kata.absorbed_transposes(
        _compiled_forward())
    weights = 2
    with check:
        assert step >= weights, f"got {step}: each weight gradient x^T @ g contracts the batch"
    with check:
        assert forward == 0, f"got {forward}: the forward pass has no transposed operand"
