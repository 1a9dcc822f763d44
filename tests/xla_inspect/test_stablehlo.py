"""stablehlo_op_census: walk the MLIR module, from a Lowered, a Capture, a module or text."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from xla_inspect.capture import capture
from xla_inspect.stablehlo import StableHloError, iter_operations, stablehlo_op_census


def _attention(q, k):
    scores = q @ k.T
    total = jax.lax.fori_loop(0, 2, lambda i, s: s * 0.5, jnp.sum(scores))
    return jax.nn.softmax(scores, axis=-1) * total


ARGS = (jax.ShapeDtypeStruct((4, 8), jnp.float32),) * 2


@pytest.fixture(scope="module")
def xi_lowered():
    return jax.jit(_attention).lower(*ARGS)


def test_census_counts_ops_inside_regions(xi_lowered) -> None:
    census = stablehlo_op_census(xi_lowered)
    assert census["stablehlo.dot_general"] == 1
    assert census["stablehlo.transpose"] == 1
    assert census["stablehlo.while"] == 1
    assert census["stablehlo.multiply"] >= 1
    assert census["stablehlo.reduce"] >= 2
    assert census["func.func"] >= 1
    assert census["func.return"] == census["func.func"]
    assert "builtin.module" not in census


def test_every_source_form_gives_the_same_census(xi_lowered) -> None:
    expected = stablehlo_op_census(xi_lowered)
    captured = capture(_attention, *ARGS)
    assert stablehlo_op_census(captured) == expected
    assert stablehlo_op_census(captured.stablehlo_module) == expected
    assert stablehlo_op_census(xi_lowered.as_text()) == expected
    assert stablehlo_op_census(xi_lowered.as_text().encode()) == expected


def test_pre_order_walk(xi_lowered) -> None:
    names = [op.name for op in iter_operations(xi_lowered)]
    assert names[0] == "func.func"
    assert names.index("stablehlo.while") < names.index("stablehlo.multiply")


def test_bad_input_raises_stablehlo_error() -> None:
    with pytest.raises(StableHloError, match="not parseable"):
        stablehlo_op_census("HloModule jit_f")
    with pytest.raises(StableHloError, match="expected a Lowered"):
        stablehlo_op_census(42)
