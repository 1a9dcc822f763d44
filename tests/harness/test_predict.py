"""compiler_refused: predictions made in plain Python pass; tracing, compiling or eager JAX ops
inside fail the test with one line naming the task, even under the learner's `except
Exception`; everything patched is restored. predicted_entries: a prediction keyed exactly like
the bank passes through; anything else fails an assertion naming the task and the keys."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.stages
import pytest

from kata_harness.predict import compiler_refused, predicted_entries

ORIGINALS = [(jax, "jit", jax.jit), (jax.stages.Lowered, "compile", jax.stages.Lowered.compile)]


def _restored() -> bool:
    return all(getattr(owner, name) is original for owner, name, original in ORIGINALS)


def test_plain_python_passes():
    with compiler_refused("phase0 predict_flops"):
        flops = 2 * 64 * 128 * 32
    assert flops == 524288 and _restored()


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: jax.jit(jnp.sin), "jit"),
        (lambda: jax.make_jaxpr(jnp.sin)(1.0), "make_jaxpr"),
        (lambda: jax.eval_shape(jnp.sin, jax.ShapeDtypeStruct((3,), jnp.float32)), "eval_shape"),
        (lambda: jnp.result_type(jnp.float32, jnp.int8), "result_type"),
    ],
)
def test_tracing_or_compiling_fails_naming_the_task(call, named):
    def swallowing():
        try:
            return call()
        except Exception:  # a learner's catch-all must not hide the refusal
            return None

    with pytest.raises(pytest.fail.Exception, match=f"phase0 guess called .*{named}"):
        with compiler_refused("phase0 guess", also=[(jnp, "result_type")]):
            swallowing()
    assert _restored() and "result_type" in vars(jnp)


def test_an_eager_op_that_compiles_fails():
    # refused where it is traced (jax 0.10) or lowered, before XLA compiles it
    eager = "JAX.s (tracing|lowering) .*an eager jnp operation"
    with pytest.raises(pytest.fail.Exception, match=eager):
        with compiler_refused("phase0 guess"):
            _ = jnp.arange(1237, dtype=jnp.float32).reshape(1237, 1).sum() * 3.5
    assert _restored()


def test_a_prediction_keyed_like_the_bank_passes_through():
    predicted = {"scan": 1, "fori": 0}
    assert predicted_entries("phase7 predict_while_loops", predicted, ["fori", "scan"]) is predicted


@pytest.mark.parametrize(
    ("predicted", "message"),
    [
        ([1, 0], "phase7 guess: expected a dict, got list"),
        ({"scan": 1}, r"phase7 guess: missing \['fori'\], extra \[\]"),
        ({"scan": 1, "fori": 0, 3: 2}, r"phase7 guess: missing \[\], extra \[3\]"),
    ],
)
def test_a_prediction_keyed_otherwise_fails_naming_task_and_keys(predicted, message):
    with pytest.raises(AssertionError, match=message):
        predicted_entries("phase7 guess", predicted, {"fori": 0, "scan": 1})
