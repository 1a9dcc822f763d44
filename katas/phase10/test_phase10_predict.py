"""Phase 10 tests, predictions: aliased bytes and a step's flops from the sizes alone, checked
against ``memory_analysis()`` and ``cost_analysis()`` of the compiled step.
"""

import warnings
from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness.predict import compiler_refused
from katas.phase10.programs import (
    OPTIMIZERS,
    SIZES,
    donated_step,
    sized_step_args,
)

# ---- predict_alias_bytes and predict_step_flops: predictions checked against the compiler ------


# (features, hidden, out): two of the phase's sizes and a larger one
ALIAS_SIZES = [SIZES["wide"][:3], SIZES["odd"][:3], (100, 300, 10)]


@cache
def _sized_step(features: int, hidden: int, out: int, batch: int, optimizer: str):
    args = sized_step_args(features, hidden, out, batch, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy arguments cannot be donated: the plan can
        return donated_step(optimizer).lower(*args).compile()


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_matches_memory_analysis(kata):
    cases = [(*sizes, optimizer) for sizes in ALIAS_SIZES for optimizer in OPTIMIZERS]
    got = {case: kata.predict_alias_bytes(*case) for case in cases}
    for case, predicted in got.items():
        assert type(predicted) is int, f"{case}: expected an int, got {predicted!r}"
        stats = _sized_step(*case[:3], 4, case[3]).memory_analysis()
        assert stats is not None, "this backend has no memory analysis"
        with check:
            assert predicted == stats.alias_size_in_bytes, (
                f"sizes {case[:3]}, {case[3]}: you predicted {predicted} aliased bytes, "
                f"memory_analysis says {stats.alias_size_in_bytes}"
            )


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_does_not_compile(kata):
    with compiler_refused("predict_alias_bytes"):
        for optimizer in OPTIMIZERS:
            kata.predict_alias_bytes(16, 32, 4, optimizer)


# (features, hidden, out, batch): batches large enough that the matrix products dominate
FLOP_SIZES = [(64, 128, 32, 16), (128, 256, 64, 32), (100, 300, 10, 50), (32, 64, 16, 64)]


@pytest.mark.task("predict_step_flops")
def test_predict_step_flops_within_ten_percent(kata):
    got = {sizes: kata.predict_step_flops(*sizes) for sizes in FLOP_SIZES}
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: XLA:CPU's cost model, where the products dominate")
    for sizes, predicted in got.items():
        assert type(predicted) is int, f"{sizes}: expected an int, got {predicted!r}"
        cost = _sized_step(*sizes, "momentum").cost_analysis()
        assert isinstance(cost, dict) and "flops" in cost, f"no flops in {cost!r:.80}"
        measured = cost["flops"]
        with check:
            assert abs(predicted - measured) <= 0.1 * measured, (
                f"sizes {sizes}: you predicted {predicted} flops, cost_analysis says "
                f"{measured:.0f} (accepted: {0.9 * measured:.0f} to {1.1 * measured:.0f})"
            )


@pytest.mark.task("predict_step_flops")
def test_predict_step_flops_does_not_compile(kata):
    with compiler_refused("predict_step_flops"):
        for sizes in FLOP_SIZES:
            kata.predict_step_flops(*sizes)
