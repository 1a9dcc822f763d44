"""Metamorphic HLO variants keep every fact but names and order: same opcodes, shapes and call
structure, XLA's parser accepts them, and no new name says what its instruction does."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kata_harness import curriculum, metamorphic, oracles
from xla_inspect.parse import parse_hlo

RECORDED = sorted(curriculum.KATAS_DIR.glob("phase1[12]/recorded/*.hlo"))


def _facts(text: str) -> Counter:
    module = parse_hlo(text)
    return Counter((i.opcode, str(i.shape)) for c in module.computations for i in c)


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_variants_keep_the_facts_and_drop_the_names(path: Path):
    text = path.read_text()
    found = list(metamorphic.variants(text, seed=7))
    assert found and found[0].kind == "renamed", "every recorded module can be renamed"
    facts = _facts(text)
    for variant in found:
        assert oracles.xla_accepts(variant.text)
        assert _facts(variant.text) == facts, variant.kind
    renamed = parse_hlo(found[0].text)
    for computation in renamed.computations:
        for instruction in computation:
            if f"%{instruction.name} " in found[0].text:  # not one the reader made up
                assert instruction.opcode.split("-")[0] not in instruction.name


def test_rename_carries_an_expected_answer_through():
    variant = metamorphic.HloVariant("renamed", "", {"all-gather-start": "n3", "fusion.1": "n9"})
    expected = {"all-gather-start": ["fusion.1", "p"], "k": ("fusion.1",)}
    assert variant.rename(expected) == {"n3": ["n9", "p"], "k": ("n9",)}


def test_a_different_seed_gives_different_names():
    text = RECORDED[0].read_text()
    first = next(metamorphic.variants(text, seed=1))
    second = next(metamorphic.variants(text, seed=2))
    assert first.names != second.names


def test_names_printed_bare_are_relabelled_too():
    """JAX's unoptimized text prints names without '%' (reduce_sum.3, region_0.1)."""
    import jax
    import jax.numpy as jnp

    text = jax.jit(lambda x: jnp.sum(jnp.sin(x) @ x)).lower(jnp.ones((4, 4))).as_text("hlo")
    assert "%" not in text
    variant = next(metamorphic.variants(text, seed=3))
    assert variant.kind == "renamed" and oracles.xla_accepts(variant.text)
    assert _facts(variant.text) == _facts(text)
    module = parse_hlo(variant.text)
    assert {i.name for c in module.computations for i in c} <= set(variant.names.values())
    assert f"to_apply={module.computations[0].name}" in variant.text


@pytest.mark.parametrize("path", RECORDED[:2], ids=[p.name for p in RECORDED[:2]])
def test_an_uncalled_computation_after_entry_keeps_entry(path: Path):
    """ENTRY is the computation the keyword marks, not the last one printed: the variant
    prints a copy of a called computation after it, which XLA's parser accepts."""
    import random

    text = path.read_text()
    variant = metamorphic.trailing(text, random.Random(5))
    assert variant is not None and oracles.xla_accepts(variant.text)
    original, moved = parse_hlo(text), parse_hlo(variant.text)
    assert moved.computations[-1].name != moved.entry.name
    assert [(i.opcode, str(i.shape)) for i in moved.entry] == [
        (i.opcode, str(i.shape)) for i in original.entry
    ]
    assert len(moved.computations) == len(original.computations) + 1
    names = [i.name for c in moved.computations for i in c]
    assert len(set(names)) == len(names), "the copy's instructions have names of their own"


_ONE_REDUCING_FUSION = """HloModule sums

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%fused_sum (p0: f32[8,4], p1: f32[]) -> f32[8] {
  %p0 = f32[8,4]{1,0} parameter(0)
  %p1 = f32[] parameter(1)
  ROOT %r = f32[8]{0} reduce(%p0, %p1), dimensions={1}, to_apply=%add
}

%fused_neg (q0: f32[8]) -> f32[8] {
  %q0 = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%q0)
}

ENTRY %main (x: f32[8,4]) -> f32[8] {
  %x = f32[8,4]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %rows = f32[8]{0} fusion(%x, %zero), kind=kLoop, calls=%fused_sum
  ROOT %out = f32[8]{0} fusion(%rows), kind=kLoop, calls=%fused_neg
}
"""


def test_shared_gives_two_entry_fusions_one_computation():
    """XLA's parser accepts two fusions calling one computation; the copy is used."""
    twin = metamorphic.shared(_ONE_REDUCING_FUSION, "rows")
    assert twin is not None and oracles.xla_accepts(twin.text)
    entry = twin.text[twin.text.index("ENTRY") :]
    assert entry.count("calls=%fused_sum") == 2
    assert "fusion(%rows.twin)" in entry
    assert metamorphic.shared(_ONE_REDUCING_FUSION, "out") is None  # the ROOT: no user
    assert metamorphic.shared(_ONE_REDUCING_FUSION, "zero") is None  # no fusion
