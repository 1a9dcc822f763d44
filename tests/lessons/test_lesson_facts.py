"""Statements the lessons make about the compiler, checked against it on the JAX this suite
runs (CI: the locked one and the oldest supported): if an upgrade changes one, this fails and
the lesson must change with it."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from katas.phase13.programs import LEARNING_RATE, f32_step, mlp_args

BF16, F32 = jnp.bfloat16, jnp.float32


@pytest.mark.parametrize("state_shape, batch_shape", [((64, 64), (32, 16)), ((8,), (3, 5, 7))])
def test_a_donated_buffer_no_output_can_use_is_not_aliased_and_stays_valid_on_cpu(
    state_shape, batch_shape
):
    """Phase 11 and 13: JAX warns "not usable", leaves it out of input_output_alias and, on CPU,
    does not delete it; only the buffers an output took over are deleted."""
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: what another backend does with an unusable donation differs")

    def step(state, batch):
        return state * 2.0, jnp.sum(batch)

    rng = np.random.default_rng(len(state_shape) + len(batch_shape))
    state = jax.device_put(rng.normal(size=state_shape).astype(np.float32))
    batch = jax.device_put(rng.normal(size=batch_shape).astype(np.float32))
    want = float(np.sum(np.asarray(batch)))
    donating = jax.jit(step, donate_argnums=(0, 1))
    with warnings.catch_warnings(record=True) as caught:  # said when the step is lowered
        warnings.simplefilter("always")
        text = donating.lower(state, batch).compile().as_text()
        jax.block_until_ready(donating(state, batch))
    assert any("donated buffers were not usable" in str(w.message) for w in caught)
    assert text is not None, "this backend does not print its module"
    header = text.splitlines()[0]
    assert "input_output_alias={ {0}: (0, {}, may-alias) }" in header, header
    assert state.is_deleted(), "the state's buffer was taken over by the output"
    assert not batch.is_deleted(), "the unusable donated batch is left alone"
    assert np.isclose(float(jnp.sum(batch)), want, rtol=1e-5), "and still holds its values"


def _step_of(loss):
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads), value

    return step


def _bf16_operands(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jax.nn.gelu(jnp.dot(x.astype(BF16), w1.astype(BF16), preferred_element_type=F32) + b1)
    out = jnp.dot(h.astype(BF16), w2.astype(BF16), preferred_element_type=F32) + b2
    return jnp.mean((out - y) ** 2)


def _bf16_activations(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.dot(x.astype(BF16), w1.astype(BF16), preferred_element_type=F32) + b1
    h = jax.nn.gelu(h.astype(BF16))
    out = jnp.dot(h, w2.astype(BF16), preferred_element_type=F32) + b2
    return jnp.mean((out - y) ** 2)


@pytest.mark.parametrize("case", [(256, 128, 512, 0), (200, 64, 256, 3)])
def test_bf16_matmul_operands_alone_raise_bytes_accessed_bf16_activations_lower_them(case):
    """Phase 13's mixed-precision lesson: the converts feeding bf16 operands to f32 activations
    are instructions of their own in the lowered module, so its bytes accessed grow; carrying
    the activations in bf16 is what brings them down."""
    args = mlp_args(*case)

    def moved(step) -> float:
        cost = jax.jit(step).lower(*args).cost_analysis()
        assert cost is not None, "this backend gives no cost_analysis()"
        return float(cost["bytes accessed"])

    original = moved(f32_step)
    assert moved(_step_of(_bf16_operands)) > original
    assert moved(_step_of(_bf16_activations)) < 0.8 * original
