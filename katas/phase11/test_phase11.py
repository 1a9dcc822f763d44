"""Phase 11 tests, reading the schedule: which collectives run async, the work XLA scheduled
while each one is in flight, and what each matmul fusion holds beside its matmul.

Expected values come from XLA's own parser (kata_harness.oracles.tpu_hlo), on the modules
recorded in `recorded/` and hand-written ones (katas/phase11/texts.py), as printed and renamed.
"""

from __future__ import annotations

import pytest
from pytest_check import check

from kata_harness.oracles import tpu_hlo as oracle
from katas.phase11 import texts
from katas.phase11.programs import FSDP_CASES, HANDWRITTEN, RECORDINGS
from katas.phase11.texts import FUSED_COLLECTIVES, TEXTS
from xla_inspect import parse_hlo
from xla_inspect.query import fusions

# ---- async_collectives --------------------------------------------------------------------------


@pytest.mark.task("async_collectives")
def test_async_collectives_counts_every_spelling(kata):
    """Every start, in both spellings, with the collective it runs, whatever it is named and
    whatever it wraps (the hand-written TPU module wraps an all-reduce and a permute)."""
    for name in TEXTS:
        expected = oracle.async_starts(texts.any_text(name))
        for what, text, variant in texts.forms(name):
            got = kata.async_collectives(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            want = texts.renamed_keys(variant, expected)
            with check:
                assert got == want, (
                    f"{what}: XLA reads the starts {want} (AsyncCollectiveStart fusions, named as "
                    f"you like, and collective *-start ops; copy-start is a DMA), got {got}"
                )


@pytest.mark.task("async_collectives")
def test_async_collectives_facts_per_target(kata):
    """What libtpu made async: v5e overlaps the last gathers of an FSDP stack, v6e keeps them
    all synchronous, a single matmul has nothing to overlap; a TPU start may wrap any
    collective."""
    got = {name: kata.async_collectives(texts.text(name)) for name in RECORDINGS}
    with check:
        assert sorted(got["fsdp6_v5e"].values()) == ["all-gather", "all-gather"], got["fsdp6_v5e"]
    with check:
        assert list(got["fsdp4_v5e"].values()) == ["all-gather"], got["fsdp4_v5e"]
    for name in ("fsdp4_v6e", "fsdp2_v5e", "matmul_v5e", "mlp_grad_v5e"):
        with check:
            assert got[name] == {}, f"{name}: no async collective, got {got[name]}"
    with check:
        assert set(got["mlp_rows_v5e"].values()) == {"collective-permute"}, got["mlp_rows_v5e"]
    tpu = kata.async_collectives(HANDWRITTEN["handwritten_tpu"])
    with check:
        assert tpu == {"launch.a": "all-reduce", "launch.b": "collective-permute"}, (
            f"handwritten_tpu: %launch.a wraps an all-reduce, %launch.b a collective-permute, "
            f"got {tpu}"
        )


# ---- overlapped_work ----------------------------------------------------------------------------


@pytest.mark.task("overlapped_work")
def test_overlapped_work_in_schedule_order(kata):
    """Every start's window, under any names and computation order; in the hand-written TPU
    module the second pair finishes first and a parameter and a constant sit in the windows."""
    for name in TEXTS:
        expected = oracle.overlaps(texts.any_text(name))
        for what, text, variant in texts.forms(name):
            got = kata.overlapped_work(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            want = texts.renamed(variant, expected)
            with check:
                assert got == want, (
                    f"{what}: between each start and the done that consumes it XLA scheduled "
                    f"{want}, got {got}"
                )


@pytest.mark.task("overlapped_work")
def test_overlapped_work_hides_a_matmul(kata):
    """The point of an async gather: the next layer's matmul runs while the weight arrives."""
    for name in ("fsdp4_v5e", "fsdp6_v5e", "fsdp3_f32_v5e"):
        got = kata.overlapped_work(texts.text(name))
        assert isinstance(got, dict) and got, f"{name}: expected async collectives, got {got!r}"
        by_name = {f.name: f for f in fusions(parse_hlo(texts.text(name)))}
        for start, between in got.items():
            with check:
                assert any(by_name[n].opcodes["convolution"] for n in between if n in by_name), (
                    f"{name}: no fusion holding a convolution between {start} and its done: "
                    f"{between}"
                )


# ---- matmul_fusions -----------------------------------------------------------------------------


@pytest.mark.task("matmul_fusions")
def test_matmul_fusions_match_xla(kata):
    """The recordings, the hand-written TPU module (an overlap fusion holding a permute next to
    its matmul) and matmul fusions holding each kind of collective, under any names."""
    for name in [*sorted(RECORDINGS), *HANDWRITTEN, FUSED_COLLECTIVES]:
        expected = oracle.matmul_fusions(texts.any_text(name))
        for what, text, variant in texts.forms(name):
            got = kata.matmul_fusions(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            want = texts.renamed_keys(variant, expected)
            with check:
                assert got == want, (
                    f"{what}: {want} (a collective in a matmul fusion moves data, whichever "
                    f"kind it is), got {got}"
                )


@pytest.mark.task("matmul_fusions")
def test_matmul_fusions_hold_the_epilogue(kata):
    """Every layer's relu is fused into its matmul; the bias gradients of the MLP are reduced
    inside the matmul fusions of the backward pass."""
    for name in FSDP_CASES:
        got = kata.matmul_fusions(texts.text(name))
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        with check:
            assert got and all(ops == ["maximum"] for ops in got.values()), (
                f"{name}: each matmul fusion holds the relu (maximum) and no other arithmetic, "
                f"got {got}"
            )
    grad = kata.matmul_fusions(texts.text("mlp_grad_v5e"))
    assert isinstance(grad, dict), f"expected a dict, got {type(grad).__name__}"
    with check:
        assert sum("reduce" in ops for ops in grad.values()) == 2, (
            f"two matmul fusions also reduce the bias gradients, got {grad}"
        )
