"""show, compare and graph: IR of the reference through the recipes; graphs without `dot`."""

from __future__ import annotations

import pytest
from rich.console import Console

from kata_harness import curriculum
from katas_cli.compare import function_source, side_by_side
from katas_cli.main import main
from katas_cli.show import capture_task, highlight, stage_text

pytestmark = pytest.mark.real_course  # compiles the real phases' programs

SMALL_HLO = """HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%fused_computation (param_0: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  %constant.1 = f32[] constant(0)
  %broadcast.1 = f32[8]{0} broadcast(%constant.1), dimensions={}
  ROOT %maximum.1 = f32[8]{0} maximum(%param_0, %broadcast.1)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %sine = f32[8]{0} sine(%x)
  ROOT %relu_fusion = f32[8]{0} fusion(%sine), kind=kLoop, calls=%fused_computation
}
"""


def test_show_reference_stages(capsys):
    task = curriculum.phase(1).task("abs_where")
    shown = capture_task(task, "reference")
    assert "select_n" in stage_text(shown.capture, "jaxpr")
    optimized = stage_text(shown.capture, "optimized")
    assert "fusion(" in optimized and "metadata=" not in optimized and "FileNames" not in optimized
    assert main(["show", "phase1", "abs_where", "--reference", "--stage", "stablehlo"]) == 0
    out = capsys.readouterr().out
    assert "stablehlo.select" in out and "\x1b[" not in out


def test_highlight_marks_fusions_and_opcodes():
    text = highlight(SMALL_HLO, "optimized")
    console = Console(force_terminal=True, color_system="standard", width=200)
    with console.capture() as captured:
        console.print(text)
    rendered = captured.get()
    assert "# fused computation" in rendered
    styled = {text.plain[s.start : s.end] for s in text.spans}
    assert {"fusion", "sine", "maximum", "kind=kLoop"} <= styled


def test_task_without_recipe_has_nothing_to_show(capsys):
    assert main(["show", "phase1", "predict_traces"]) == 0
    assert "nothing to show" in capsys.readouterr().out


def test_compare_source_side_by_side(capsys):
    phase = curriculum.phase(1)
    source = function_source(phase.reference_path, "abs_where")
    assert source.startswith("def abs_where(")
    assert main(["compare", "phase1", "abs_where", "--no-ir"]) == 0
    out = capsys.readouterr().out
    assert "learner" in out and "reference" in out and "jnp.where" in out


def test_side_by_side_markers():
    rows = side_by_side(["a", "b", "c"], ["a", "B", "c", "d"])
    assert [r[0] for r in rows] == [" ", "|", " ", ">"]


def test_function_source_of_unparsable_file(tmp_path):
    bad = tmp_path / "kata.py"
    bad.write_text("def broken(:\n")
    assert "does not parse" in function_source(bad, "broken")


def test_graph_without_dot_writes_the_source(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    svg = tmp_path / "g.svg"
    assert main(["graph", "phase1", "abs_where", "--reference", "-o", str(svg)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"wrote the graph source: {svg.with_suffix('.dot')}" in out
    assert "apt-get install graphviz" in out
    assert svg.with_suffix(".dot").read_text().startswith("digraph ")
