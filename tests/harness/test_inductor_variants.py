"""kata_harness.inductor: the variants of generated code phase 16's reading tests run on keep
every fact the tasks read and change every name they must not read."""

from __future__ import annotations

import ast
import random
import re

import pytest

from kata_harness import inductor
from katas.phase16 import programs

TEXTS = [
    (f"{n}-{i}", c) for n in programs.recorded_names() for i, c in enumerate(programs.recorded(n))
]
TEXTS.append(("handwritten", programs.HANDWRITTEN))


def _facts(code: str) -> list:
    sources = inductor.kernel_sources(code)
    return [
        (c.kind, inductor.fused_ops(c.name) if c.kind == "fused" else c.name)
        + ((inductor.accumulators(sources[c.name]),) if c.kind == "fused" else ())
        for c in inductor.calls(code)
    ]


@pytest.mark.parametrize(("name", "code"), TEXTS, ids=[n for n, _ in TEXTS])
def test_a_variant_keeps_the_facts_and_changes_the_names(name: str, code: str) -> None:
    variant = inductor.variant(code, random.Random(name))
    ast.parse(variant)
    assert _facts(variant) == _facts(code)
    assert len(inductor.inputs(variant)) == len(inductor.inputs(code))
    kept = [n for n in inductor.inputs(variant) if n in inductor.inputs(code)]
    assert all(n.startswith("tangents_") for n in kept), "inputs other than tangents renamed"
    assert not re.search(r"\bbuf\d+\b", variant), "every buffer renamed"
    assert set(inductor.kernel_sources(variant)) != set(inductor.kernel_sources(code)) or not (
        inductor.kernel_sources(code)
    )


def test_variants_are_drawn_from_the_seed() -> None:
    code = programs.recorded("train_mlp_gelu")[1]
    assert inductor.variant(code, random.Random(7)) == inductor.variant(code, random.Random(7))
    assert inductor.variant(code, random.Random(7)) != inductor.variant(code, random.Random(8))


def test_the_line_reader_on_what_xla_prints() -> None:
    kernels = inductor.xla_kernels(programs.HANDWRITTEN_HLO["dense_library_call"])
    assert [(k.opcode, k.holds_dot) for k in kernels] == [("custom-call", True), ("fusion", False)]
    assert inductor.rank1_parameters(programs.HANDWRITTEN_HLO["dense_output_fusion"]) == ["b"]
    assert inductor.asserted_sizes(programs.HANDWRITTEN)["bias"] == (16,)
