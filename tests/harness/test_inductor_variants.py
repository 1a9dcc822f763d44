"""kata_harness.inductor: the variants of generated code phase 16's reading tests run on keep
every fact the tasks read and change every name they must not read."""

from __future__ import annotations

import ast
import itertools
import random
import re

import pytest

from kata_harness import inductor
from katas.phase16 import programs
from katas.phase16.handwritten import HANDWRITTEN, HANDWRITTEN_HLO

TEXTS = [
    (f"{n}-{i}", c) for n in programs.recorded_names() for i, c in enumerate(programs.recorded(n))
]
TEXTS.append(("handwritten", HANDWRITTEN))


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
    inputs, original_inputs = inductor.inputs(variant), inductor.inputs(code)
    assert len(inputs) == len(original_inputs)
    kept = [n for n in inputs if n in original_inputs]
    assert all(n.startswith("tangents_") for n in kept), "inputs other than tangents renamed"
    assert not re.search(r"\bbuf\d+\b", variant), "every buffer renamed"
    kernels = set(inductor.kernel_sources(code))
    assert set(inductor.kernel_sources(variant)) != kernels or not kernels


def test_a_variant_unpacks_the_inputs_in_another_order() -> None:
    code = programs.recorded("train_mlp_outputs")[1]  # ten inputs, two of them tangents
    orders = set()
    for seed in range(4):
        names = inductor.inputs(inductor.variant(code, random.Random(seed)))
        orders.add(tuple(n if n.startswith("tangents_") else "in" for n in names))
    assert len(orders) > 1, "the tangents sit at other places of the unpacking"


def test_variants_are_drawn_from_the_seed() -> None:
    code = programs.recorded("train_mlp_gelu")[1]
    assert inductor.variant(code, random.Random(7)) == inductor.variant(code, random.Random(7))
    assert inductor.variant(code, random.Random(7)) != inductor.variant(code, random.Random(8))


def test_the_line_reader_on_what_xla_prints() -> None:
    kernels = inductor.xla_kernels(HANDWRITTEN_HLO["dense_library_call"])
    assert [(k.opcode, k.holds_dot) for k in kernels] == [("custom-call", True), ("fusion", False)]
    assert inductor.rank1_parameters(HANDWRITTEN_HLO["dense_output_fusion"]) == ["b"]
    assert inductor.asserted_sizes(HANDWRITTEN)["bias"] == (16,)
    reductions = inductor.xla_kernels(HANDWRITTEN_HLO["row_reductions"])
    assert [(k.opcode, k.reductions) for k in reductions] == [
        ("fusion", 2),
        ("fusion", 0),
        ("reduce", 1),
        ("fusion", 0),
    ]
    assert len(inductor.rank1_parameters(HANDWRITTEN_HLO["row_reductions"])) == 1


def test_the_xla_readers_hand_out_a_new_list_each_call() -> None:
    text = HANDWRITTEN_HLO["row_reductions"]
    first, second = inductor.xla_kernels(text), inductor.xla_kernels(text)
    assert first == second and first is not second
    first.clear()
    assert len(inductor.xla_kernels(text)) == 4, "a caller's change stays with the caller"
    names = inductor.rank1_parameters(text)
    names.append("x")
    assert len(inductor.rank1_parameters(text)) == 1


def _branch_calls(code: str) -> set[str]:
    """The kernels called in an `else:` or `finally:` branch of a block."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        for branch in (getattr(node, "orelse", []), getattr(node, "finalbody", [])):
            for inner in branch if isinstance(branch, list) else []:
                found |= {n.id for n in ast.walk(inner) if isinstance(n, ast.Name)}
    return {n for n in found if n.startswith("cpp_fused_")}


def test_variants_run_kernel_calls_in_else_and_finally_branches() -> None:
    code = programs.recorded("train_mlp_gelu")[1]
    variants = [inductor.variant(code, random.Random(seed)) for seed in range(8)]
    assert any(_branch_calls(v) for v in variants), "a kernel in an else or finally branch"
    facts = _facts(code)
    for v in variants:  # still the same kernels in the same order
        assert _facts(v) == facts


def test_overlapping_names_are_parts_of_one_another() -> None:
    """With `overlapping`, each input's new name is part of every buffer's: a reader that finds
    a name as a piece of a line, not as a whole word, reads the wrong kernel."""
    code = programs.recorded("bias_after_relu")[0]
    variant = inductor.variant(code, random.Random(3), overlapping=True)
    ast.parse(variant)
    assert _facts(variant) == _facts(code)
    buffers = set(re.findall(r"\b(v\d+(?:v\d+)*_\d+)\b", variant))
    assert buffers, "buffers named after the inputs"
    for name in inductor.inputs(variant):
        assert all(name in b for b in buffers), name


def test_repeated_runs_one_fused_kernel_twice_in_its_place() -> None:
    code = programs.recorded("train_mlp_gelu")[1]  # the backward: fused kernels and mm calls
    seen = set()
    for seed in range(6):
        text = inductor.repeated(inductor.variant(code, random.Random(seed)), random.Random(seed))
        assert text is not None
        ast.parse(text)
        before = inductor.calls(inductor.variant(code, random.Random(seed)))
        after = inductor.calls(text)
        assert len(after) == len(before) + 1
        twice = next(i for i, (a, b) in enumerate(itertools.pairwise(after)) if a == b)
        assert after[twice].kind == "fused", "a fused kernel statement runs twice in a row"
        assert after[: twice + 1] + after[twice + 2 :] == before
        seen.add(after[twice].name)
    assert len(seen) > 1, "the repeated kernel is drawn"
    no_fused = "def call(args):\n    x, = args\n    extern_kernels.mm(x, x, out=x)\n    return x\n"
    assert inductor.repeated(no_fused, random.Random(0)) is None
