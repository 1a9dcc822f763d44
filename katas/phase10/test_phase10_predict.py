"""Phase 10 tests, predictions: aliased bytes and a step's flops from the sizes alone, checked
against ``memory_analysis()`` and ``cost_analysis()`` of the compiled step.

The sizes are drawn fresh on every run, one case per situation the contract distinguishes
(katas/phase10/strata.py): each optimizer for the aliased bytes, each layer's products
dominating for the flops, and both weighing alike. A failure names its one case and the seed
that draws it again.
"""

import jax
import pytest

from kata_harness.predict import compiler_refused
from katas.phase10.programs import donated_step, sized_step_specs
from katas.phase10.strata import alias_past_2_31, alias_strata, flops_strata

# ---- predict_alias_bytes and predict_step_flops: predictions checked against the compiler ------


def _compiled_step(features: int, hidden: int, out: int, batch: int, optimizer: str):
    args = sized_step_specs(features, hidden, out, batch, optimizer)
    return donated_step(optimizer).lower(*args).compile()


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_matches_memory_analysis(kata, fresh):
    """Fresh sizes for each optimizer (strata.alias_strata), the step compiled at those sizes."""
    for situation, (features, hidden, out, optimizer, batch) in alias_strata(fresh).items():
        predicted = kata.predict_alias_bytes(features, hidden, out, optimizer)
        case = f"{situation}: ({features}, {hidden}, {out}, {optimizer!r})"
        assert type(predicted) is int, f"{case}: expected an int, got {predicted!r}"
        stats = _compiled_step(features, hidden, out, batch, optimizer).memory_analysis()
        assert stats is not None, "this backend has no memory analysis"
        assert predicted == stats.alias_size_in_bytes, (
            f"{case}: you predicted {predicted} aliased bytes, memory_analysis says "
            f"{stats.alias_size_in_bytes} ({fresh.where()})"
        )


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_past_2_31(kata, fresh):
    """A step of more than 2**31 aliased bytes, compiled from shapes (nothing allocated)."""
    features, hidden, out, optimizer, batch = alias_past_2_31(fresh)
    predicted = kata.predict_alias_bytes(features, hidden, out, optimizer)
    case = f"({features}, {hidden}, {out}, {optimizer!r})"
    assert type(predicted) is int, f"{case}: expected an int, got {predicted!r}"
    stats = _compiled_step(features, hidden, out, batch, optimizer).memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    assert predicted == stats.alias_size_in_bytes > 2**31, (
        f"{case}: you predicted {predicted} aliased bytes, memory_analysis says "
        f"{stats.alias_size_in_bytes}: past 2**31, does your arithmetic wrap? ({fresh.where()})"
    )


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_does_not_compile(kata, fresh):
    with compiler_refused("predict_alias_bytes"):
        for features, hidden, out, optimizer, _ in alias_strata(fresh).values():
            kata.predict_alias_bytes(features, hidden, out, optimizer)


@pytest.mark.task("predict_step_flops")
def test_predict_step_flops_within_ten_percent(kata, fresh):
    """Fresh sizes with each layer's products dominating, then with both weighing alike
    (strata.flops_strata), the momentum step compiled at those sizes."""
    for situation, sizes in flops_strata(fresh).items():
        predicted = kata.predict_step_flops(*sizes)
        assert type(predicted) is int, f"{sizes}: expected an int, got {predicted!r}"
        if jax.default_backend() != "cpu":
            pytest.skip("CPU-only fact: XLA:CPU's cost model, where the products dominate")
        cost = _compiled_step(*sizes, "momentum").cost_analysis()
        assert isinstance(cost, dict) and "flops" in cost, f"no flops in {cost!r:.80}"
        measured = cost["flops"]
        assert abs(predicted - measured) <= 0.1 * measured, (
            f"{situation}: sizes (features, hidden, out, batch) = {sizes}: you predicted "
            f"{predicted} flops, cost_analysis says {measured:.0f} (accepted: "
            f"{0.9 * measured:.0f} to {1.1 * measured:.0f}) ({fresh.where()})"
        )


@pytest.mark.task("predict_step_flops")
def test_predict_step_flops_does_not_compile(kata, fresh):
    with compiler_refused("predict_step_flops"):
        for sizes in flops_strata(fresh).values():
            kata.predict_step_flops(*sizes)
