"""Version gates (kata_harness.versions), the printed-shape reader the XLA oracle falls back on
(kata_harness.xla_shapes) and the comparison behind `katas upgrade-report`."""

from pathlib import Path

import pytest

from kata_harness import versions
from kata_harness.xla_shapes import printed_shape
from katas_cli import upgrade

CORPUS = Path(__file__).parents[1] / "xla_inspect" / "corpus"


def test_versions_compare_as_numbers():
    assert versions.as_tuple("0.12.0.1") == (0, 12, 0, 1)
    assert versions.as_tuple("0.13.0.dev20261101") == (0, 13, 0)
    assert versions.as_tuple("0.13.0rc1") == (0, 13, 0)
    assert versions.in_range("0.10.2", ">=0.10,<0.11")
    assert not versions.in_range("0.11.0", ">=0.10,<0.11")
    assert versions.in_range("0.12.0.1", ">=0.12") and not versions.in_range("0.11.2", ">=0.12")
    with pytest.raises(ValueError, match="each bound"):
        versions.in_range("0.12", "==0.12")


def test_every_gate_declares_a_range_of_supported_versions_and_a_reason():
    for gate in versions.GATES.values():
        on = [minor for minor in versions.SUPPORTED if versions.in_range(f"{minor}.0", gate.spec)]
        assert on and len(on) < len(versions.SUPPORTED), f"{gate.name}: {gate.spec} gates nothing"
        assert len(gate.reason) > 40 and "jax" in gate.reason, gate.name


def test_header_lists_the_gates_off_on_the_running_jax(monkeypatch):
    monkeypatch.setattr(versions, "running_jax", lambda: "0.10.2")
    monkeypatch.delenv("KATAS_CHECK_ALL_FACTS", raising=False)
    lines = versions.header_lines()
    off = [g for g in versions.GATES.values() if not versions.in_range("0.10.2", g.spec)]
    assert lines[0] == f"katas: jax 0.10.2: {len(off)} fact(s) not checked on this version:"
    assert [line.removeprefix("katas:   ") for line in lines[1:]] == [g.line() for g in off]
    monkeypatch.setenv("KATAS_CHECK_ALL_FACTS", "1")
    assert versions.header_lines() == [] and versions.holds("f32-constant-multiplies-kept")


def test_newer_hlo_syntax_is_recognized():
    assert versions.uses_newer_hlo_syntax("  ROOT %t = (f32[]) tuple(%top_k.3#0)\n")
    assert versions.uses_newer_hlo_syntax("  %a = f32[] add(top_k.3#1, %b)\n")
    assert versions.uses_newer_hlo_syntax("  %c = pred[] compare(a, b), direction=LT, order=TOTAL")
    assert not versions.uses_newer_hlo_syntax('  %a = f32[] add(%b, %c), op_name="#1"\n')


def test_printed_shapes_read_tuples_layouts_and_index_comments():
    shape = printed_shape("%t = (f32[2,3]{0,1}, (s32[], /*index=1*/pred[4]{0})) tuple(%a, %b)")
    assert shape.is_tuple() and str(shape) == "(f32[2,3]{0,1}, (s32[], /*index=1*/pred[4]{0}))"
    first, second = shape.tuple_shapes()
    assert first.layout().minor_to_major() == (0, 1)
    assert [str(s) for s in second.tuple_shapes()] == ["s32[]", "pred[4]{0}"]
    assert second.tuple_shapes()[0].layout().minor_to_major() == ()


@versions.requires_jax("hlo-instruction-shape")
def test_printed_shape_is_xlas_shape_on_the_corpus():
    hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO parser is absent")
    seen = 0
    for path in sorted(CORPUS.glob("*.opt.hlo")):
        for computation in hlo.hlo_module_from_text(path.read_text()).computations():
            for instruction in computation.instructions():
                printed, real = printed_shape(instruction.to_string()), instruction.shape
                assert str(printed) == str(real)
                if not real.is_tuple():
                    assert printed.layout().minor_to_major() == tuple(
                        real.layout().minor_to_major()
                    )
                seen += 1
    assert seen > 1000


OLD = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[4]{0} broadcast(%c), dimensions={}
  %m = f32[4]{0} multiply(%p, %b)
  ROOT %n = f32[4]{0} multiply(%m, %b)
}
"""


def test_upgrade_report_names_what_changed_and_what_flipped():
    new = OLD.replace("  ROOT %n = f32[4]{0} multiply(%m, %b)\n", "").replace(
        "%m = f32[4]{0} multiply", "ROOT %m = f32[4]{0} multiply"
    )
    lines = upgrade.compare_program({"optimized": OLD}, {"optimized": new}, full_diff=False)
    assert lines[0] == "opcodes: multiply 2->1"
    assert lines[1].startswith("normalized HLO diff (")
    assert upgrade.compare_program({"optimized": OLD}, {"optimized": OLD}, False) == []
    assert upgrade.flips({"a": "passed", "b": "passed"}, {"a": "failed", "b": "passed"}) == [
        ("a", "passed", "failed")
    ]


def test_ci_runs_the_oldest_supported_jax():
    ci = (Path(__file__).parents[2] / ".ci" / "run").read_text()
    oldest = next(line for line in ci.splitlines() if line.startswith("OLDEST_JAX="))
    assert versions.as_tuple(oldest.split("=")[1])[:2] == versions.as_tuple(versions.SUPPORTED[0])
    # the upgrade report from the oldest JAX is that JAX's test run: --gate fails CI on a failure
    assert 'katas upgrade-report "$OLDEST_JAX" "$LOCKED_JAX" --gate' in ci


def test_pyproject_admits_every_supported_jax():
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    for package in ("jax", "jaxlib"):
        assert f'"{package}>={versions.SUPPORTED[0]}",' in pyproject, package


def test_upgrade_report_lists_gated_facts_per_side_and_what_flips():
    gate = "xla-attribute-table"
    old = upgrade.TestRun("0.10.2", {"a": "skipped", "b": "passed"}, {"a": {gate: False}})
    new = upgrade.TestRun("0.12.0.1", {"a": "passed", "b": "passed"})
    capture = {"jax": "0", "jaxlib": "0", "programs": {}}
    text = upgrade.render(capture, capture, (old, new), full_diff=False)
    assert f"  {gate}: jax 0.10.2: holds in 0, fails in 1; jax 0.12.0.1: asserted" in text
    assert f"  a: {gate} fails -> passed" in text and "  b:" not in text
