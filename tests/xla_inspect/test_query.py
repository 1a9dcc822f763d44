"""Queries over parsed modules: hand-written fixtures for exact values, corpus for robust facts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from xla_inspect.parse import parse_hlo
from xla_inspect.query import (
    DotInfo,
    ParameterLayout,
    call_graph,
    collectives,
    custom_call_targets,
    dots,
    fusions,
    instructions,
    opcode_counts,
    parameter_layouts,
    root_layout,
)


@pytest.fixture(scope="module")
def hlo_features(hlo_features_text: str):
    return parse_hlo(hlo_features_text)


def corpus(name: str):
    return parse_hlo(read_corpus(name))


def read_corpus(name: str) -> str:
    return (Path(__file__).parent / "corpus" / name).read_text()


def test_opcode_counts_cover_every_computation(hlo_short_text: str) -> None:
    module = parse_hlo(hlo_short_text)
    assert opcode_counts(module) == Counter(
        {"parameter": 4, "add": 1, "dot": 1, "constant": 1, "reduce": 1, "tanh": 1}
    )
    assert opcode_counts(module, entry_only=True)["parameter"] == 2
    assert sum(1 for _ in instructions(module)) == 9


def test_call_graph(hlo_features) -> None:
    graph = call_graph(hlo_features)
    assert graph["main"] == ("fused_exp", "true_branch", "false_branch", "add", "ge", "async_body")
    assert graph["add"] == ()


def test_fusions_count_ops_inside(hlo_features) -> None:
    [fusion] = fusions(hlo_features)
    assert (fusion.name, fusion.kind, fusion.fused_computation) == ("fusion", "kLoop", "fused_exp")
    assert fusion.opcodes == Counter({"parameter": 1, "exponential": 1, "add": 1})


def test_cpu_matmul_is_a_custom_fusion_wrapping_a_dot() -> None:
    found = fusions(corpus("transformer_grad.opt.hlo"))
    kinds = Counter(f.kind for f in found)
    assert set(kinds) <= {"kLoop", "kCustom"} and kinds["kLoop"] > 0
    assert any(f.kind == "kCustom" and f.opcodes["dot"] == 1 for f in found)


def test_while_bodies_are_reachable_from_entry() -> None:
    module = corpus("control_flow.opt.hlo")
    graph = call_graph(module)
    whiles = [i for _, i in instructions(module) if i.opcode == "while"]
    assert len(whiles) == 2
    for w in whiles:
        assert {w.attributes["condition"][1:], w.attributes["body"][1:]} <= set(graph)
    assert opcode_counts(module)["conditional"] == 2


def test_collectives_from_shard_map() -> None:
    found = collectives(corpus("shard_map_collectives.opt.hlo"))
    assert Counter(c.opcode for c in found) == Counter(
        {
            "all-reduce": 1,
            "all-gather": 1,
            "reduce-scatter": 1,
            "collective-permute": 1,
            "all-to-all": 1,
        }
    )
    reduce = next(c for c in found if c.opcode == "all-reduce")
    assert reduce.replica_groups == "mesh['x'=8] {'x'}"
    permute = next(c for c in found if c.opcode == "collective-permute")
    assert (permute.source_target_pairs or "").startswith("{{0,1},{1,2}")


def test_async_collectives_are_listed_once(hlo_features) -> None:
    assert [c.opcode for c in collectives(hlo_features)] == [
        "all-reduce-start",
        "collective-permute-start",
    ]


def test_custom_call_targets() -> None:
    targets = custom_call_targets(corpus("linalg.opt.hlo"))
    assert {"lapack_spotrf_ffi", "lapack_sgeqrf_ffi", "lapack_ssyevd_ffi"} <= set(targets)
    assert custom_call_targets(parse_hlo(read_corpus("conv_net.opt.hlo"))) == Counter()


def test_dots_with_operand_shapes(hlo_short_text: str) -> None:
    assert dots(parse_hlo(hlo_short_text)) == [
        DotInfo("dot.1", "main.2", "f32[8,16]{1,0}", "f32[16,4]{1,0}", (1,), (0,), (), ())
    ]


def test_dot_operand_that_is_a_tuple_element() -> None:
    text = """HloModule m
ENTRY %e (p: (s32[], f32[2,3])) -> f32[2,2] {
  %p = (s32[], f32[2,3]{1,0}) parameter(0)
  ROOT %d = f32[2,2]{1,0} dot(%p#1, %p#1), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
"""
    (dot,) = dots(parse_hlo(text))
    assert (dot.lhs_shape, dot.rhs_shape) == ("f32[2,3]{1,0}", "f32[2,3]{1,0}")


def test_batched_dot_in_attention() -> None:
    batched = [d for d in dots(corpus("transformer_block.opt.hlo")) if d.lhs_batch_dims]
    assert batched and all(len(d.lhs_batch_dims) == len(d.rhs_batch_dims) for d in batched)


def test_parameter_and_root_layouts(hlo_short_text: str) -> None:
    module = parse_hlo(hlo_short_text)
    assert parameter_layouts(module) == [
        ParameterLayout(0, "x.1", "f32[8,16]{1,0}", "{1,0}"),
        ParameterLayout(1, "w.1", "f32[16,4]{1,0}", "{1,0}"),
    ]
    assert root_layout(module) == "{1,0}"


def test_tuple_root_layout_and_donation() -> None:
    module = corpus("donated_state.opt.hlo")
    assert "input_output_alias" in module.attributes
    assert root_layout(module) == "({1,0}, {1,0}, {})"
    assert [p.layout for p in parameter_layouts(module)] == ["{1,0}", "{1,0}", None, "{1,0}"]
