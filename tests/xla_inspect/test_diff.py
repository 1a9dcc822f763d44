"""diff_hlo: opcode counts before/after, fused contents counted as absorbed, JSON-able data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xla_inspect.diff import ModuleDiff, diff_hlo, format_diff, fused_computation_names
from xla_inspect.parse import parse_hlo

CORPUS = Path(__file__).parent / "corpus"

BEFORE = """\
HloModule jit_mlp, entry_computation_layout={(f32[8,16]{1,0}, f32[16,32]{1,0})->f32[8,32]{1,0}}

relu.1 {
  Arg_0.1 = f32[8,32]{1,0} parameter(0)
  constant.1 = f32[] constant(0)
  max.2 = f32[8,32]{1,0} broadcast(constant.1), dimensions={}
  ROOT max.3 = f32[8,32]{1,0} maximum(Arg_0.1, max.2)
}

ENTRY main.2 {
  x.1 = f32[8,16]{1,0} parameter(0)
  w1.1 = f32[16,32]{1,0} parameter(1)
  dot_general.2 = f32[8,32]{1,0} dot(x.1, w1.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b1.1 = f32[32]{0} parameter(2)
  reshape.1 = f32[1,32]{1,0} reshape(b1.1)
  add.9 = f32[32]{0} reshape(reshape.1)
  add.10 = f32[8,32]{1,0} broadcast(add.9), dimensions={1}
  add.11 = f32[8,32]{1,0} add(dot_general.2, add.10)
  ROOT jit_relu_.1 = f32[8,32]{1,0} call(add.11), to_apply=relu.1
}
"""

AFTER = """\
HloModule jit_mlp, is_scheduled=true

%fused_computation (param_0: f32[8,16], param_1: f32[16,32]) -> f32[8,32] {
  %param_0 = f32[8,16]{1,0} parameter(0)
  %param_1 = f32[16,32]{1,0} parameter(1)
  ROOT %dot.0 = f32[8,32]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1},
    rhs_contracting_dims={0}
}

%fused_computation.1 (param_0.1: f32[8,32], param_1.1: f32[32]) -> f32[8,32] {
  %param_0.1 = f32[8,32]{1,0} parameter(0)
  %param_1.1 = f32[32]{0} parameter(1)
  %add.3 = f32[8,32]{1,0} broadcast(%param_1.1), dimensions={1}
  %add.2 = f32[8,32]{1,0} add(%param_0.1, %add.3)
  %constant.2 = f32[] constant(0)
  %max.5 = f32[8,32]{1,0} broadcast(%constant.2), dimensions={}
  ROOT %max.4 = f32[8,32]{1,0} maximum(%add.2, %max.5)
}

ENTRY %main.2 (x.1: f32[8,16], w1.1: f32[16,32], b1.1: f32[32]) -> f32[8,32] {
  %x.1 = f32[8,16]{1,0} parameter(0)
  %w1.1 = f32[16,32]{1,0} parameter(1)
  %b1.1 = f32[32]{0} parameter(2)
  %ynn_fusion = f32[8,32]{1,0} fusion(%x.1, %w1.1), kind=kCustom, calls=%fused_computation,
    backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
  ROOT %bias_relu = f32[8,32]{1,0} fusion(%ynn_fusion, %b1.1), kind=kLoop,
    calls=%fused_computation.1
}
"""


@pytest.fixture(scope="module")
def xi_diff() -> ModuleDiff:
    return diff_hlo(parse_hlo(BEFORE), parse_hlo(AFTER))


def test_changes_by_opcode(xi_diff: ModuleDiff) -> None:
    by_opcode = {c.opcode: c for c in xi_diff.changes}
    assert (by_opcode["dot"].before, by_opcode["dot"].after, by_opcode["dot"].absorbed) == (1, 0, 1)
    assert by_opcode["dot"].delta == 0
    assert by_opcode["maximum"].absorbed == 1
    assert "parameter" not in by_opcode
    assert [c.opcode for c in xi_diff.changes] == sorted(by_opcode)


def test_removed_and_added(xi_diff: ModuleDiff) -> None:
    assert dict(xi_diff.removed) == {"reshape": 2, "call": 1}
    assert dict(xi_diff.added) == {"fusion": 2}


def test_fusions_created_with_kind_and_contents(xi_diff: ModuleDiff) -> None:
    ynn, loop = xi_diff.fusions
    assert (ynn.name, ynn.kind, ynn.custom_kind, ynn.label) == (
        "ynn_fusion",
        "kCustom",
        "__ynn_fusion",
        "kCustom(__ynn_fusion)",
    )
    assert dict(ynn.absorbed) == {"dot": 1}
    assert (loop.computation, loop.fused_computation) == ("main.2", "fused_computation.1")
    assert dict(loop.absorbed) == {"add": 1, "broadcast": 2, "constant": 1, "maximum": 1}
    assert dict(xi_diff.fusions_by_kind) == {"kCustom(__ynn_fusion)": 1, "kLoop": 1}


def test_instruction_totals(xi_diff: ModuleDiff) -> None:
    assert (xi_diff.before_instructions, xi_diff.after_instructions) == (13, 15)


def test_to_dict_is_json(xi_diff: ModuleDiff) -> None:
    data = json.loads(json.dumps(xi_diff.to_dict()))
    assert data["removed"] == {"call": 1, "reshape": 2}
    assert data["fusions"][0]["absorbed"] == {"dot": 1}
    assert data["before"] == {"name": "jit_mlp", "instructions": 13}


def test_format_diff_reads_as_a_report(xi_diff: ModuleDiff) -> None:
    report = format_diff(xi_diff)
    assert report.startswith("jit_mlp -> jit_mlp: 13 -> 15 instructions")
    assert "removed: call x1, reshape x2" in report
    assert "ynn_fusion [kCustom(__ynn_fusion)] absorbs dot x1" in report
    assert "\x1b[" not in report


def test_reducers_called_from_fusions_count_as_fused() -> None:
    module = parse_hlo((CORPUS / "transformer_block.opt.hlo").read_text())
    fused = fused_computation_names(module)
    reducers = {
        name
        for computation in module.computations
        if computation.name in fused
        for instruction in computation.instructions
        if instruction.opcode == "reduce"
        for name in instruction.called_computations
    }
    assert reducers and reducers <= fused
    assert module.entry.name not in fused


def test_corpus_pair_keeps_the_dots() -> None:
    before = parse_hlo((CORPUS / "transformer_grad.unopt.hlo").read_text())
    after = parse_hlo((CORPUS / "transformer_grad.opt.hlo").read_text())
    diff = diff_hlo(before, after)
    dot = next(c for c in diff.changes if c.opcode == "dot")
    assert dot.delta == 0
    assert diff.removed["reshape"] > 0
    assert diff.added["bitcast"] > 0
    assert sum(diff.fusions_by_kind.values()) == diff.added["fusion"]
