"""pass_timeline: which pass changed what, from a per-pass dump directory."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from xla_inspect.capture import Capture, capture
from xla_inspect.passes import (
    DumpError,
    PassStep,
    first_pass_adding,
    first_pass_removing,
    pass_files,
    pass_timeline,
)


def _projection(x, w):
    return jnp.tanh(x @ w.T).reshape(-1)


@pytest.fixture(scope="module")
def xi_pass_capture(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    args = (jax.ShapeDtypeStruct((4, 8), jnp.float32), jax.ShapeDtypeStruct((6, 8), jnp.float32))
    dump = tmp_path_factory.mktemp("passes")
    return capture(_projection, *args, dump_dir=dump, dump_passes=True)


@pytest.fixture(scope="module")
def xi_timeline(xi_pass_capture: Capture) -> list[PassStep]:
    assert xi_pass_capture.dump_dir is not None
    return pass_timeline(xi_pass_capture.dump_dir, xi_pass_capture.dump_module)


def test_timeline_is_in_sequence_order_and_only_has_changes(xi_timeline) -> None:
    seqs = [step.seq for step in xi_timeline]
    assert seqs == sorted(seqs)
    assert len(xi_timeline) >= 2
    for earlier, later in zip(xi_timeline, xi_timeline[1:], strict=False):
        assert earlier.instructions_after == later.instructions_before
    for step in xi_timeline:
        delta = sum(step.opcode_deltas.values())
        assert delta == step.instructions_after - step.instructions_before


def test_which_pass_removed_the_transpose(xi_pass_capture, xi_timeline) -> None:
    assert " transpose(" in xi_pass_capture.hlo_text
    assert " transpose(" not in xi_pass_capture.optimized_hlo_text
    step = first_pass_removing(xi_timeline, "transpose")
    assert step is not None
    assert step.opcode_deltas["transpose"] < 0
    assert step.pass_name and step.pipeline
    assert step.path.is_file()
    assert first_pass_removing(xi_timeline, "no-such-op") is None


def test_which_pass_added_fusions(xi_timeline) -> None:
    step = first_pass_adding(xi_timeline, "fusion")
    assert step is not None
    assert step.to_dict()["opcode_deltas"]["fusion"] > 0
    assert step.to_dict()["file"].endswith(".txt")


def test_module_can_be_chosen_by_name_prefix_or_id(xi_pass_capture) -> None:
    prefix = xi_pass_capture.dump_module
    module_id = prefix.split(".")[0].removeprefix("module_")
    by_prefix = pass_files(xi_pass_capture.dump_dir, prefix)
    assert pass_files(xi_pass_capture.dump_dir, "jit__projection") == by_prefix
    assert pass_files(xi_pass_capture.dump_dir, int(module_id)) == by_prefix
    assert pass_files(xi_pass_capture.dump_dir) == by_prefix


HLO = """\
HloModule {name}

ENTRY %main (p: f32[4]) -> f32[4] {{
  %p = f32[4]{{0}} parameter(0)
{body}
}}
"""
NEG = "  ROOT %n = f32[4]{0} negate(%p)"
TWO = "  %n = f32[4]{0} negate(%p)\n  ROOT %t = f32[4]{0} transpose(%n), dimensions={0}"


def _write(directory: Path, name: str, body: str, module: str = "jit_f.v2_x") -> None:
    (directory / name).write_text(HLO.format(name=module, body=body))


def test_synthetic_dump_parses_names_and_skips_unchanged_files(tmp_path: Path) -> None:
    key = "module_0007.jit_f.v2_x"
    _write(tmp_path, f"{key}.before_optimizations.txt", TWO)
    _write(tmp_path, f"{key}.0000.pipe.after_pipeline-start.before_algsimp.txt", TWO)
    _write(tmp_path, f"{key}.0001.pipe.after_algsimp.before_dce.txt", NEG)
    _write(tmp_path, f"{key}.0002.pipe.after_dce.before_pipeline-end.txt", NEG + "  ")
    _write(tmp_path, f"{key}.0003.copy-insertion.after_adding_copies.txt", NEG, module="other")
    (tmp_path / f"{key}.cpu_after_optimizations.txt").write_text("not a pass file")
    files = pass_files(tmp_path)
    assert [f.seq for f in files] == [0, 1, 2, 3]
    assert files[0].module == "jit_f.v2_x"
    assert files[1].pass_name == "algsimp"
    assert files[1].next_pass == "dce"
    assert files[3].pipeline == "copy-insertion"
    assert files[3].next_pass is None
    assert files[3].pass_name == "adding_copies"
    (step,) = pass_timeline(tmp_path)
    assert (step.seq, step.pipeline, step.pass_name) == (1, "pipe", "algsimp")
    assert dict(step.opcode_deltas) == {"transpose": -1}
    assert (step.instructions_before, step.instructions_after) == (3, 2)


def test_several_modules_need_a_choice(tmp_path: Path) -> None:
    _write(tmp_path, "module_0001.jit_a.0000.p.after_x.before_y.txt", NEG)
    _write(tmp_path, "module_0002.jit_b.0000.p.after_x.before_y.txt", NEG)
    with pytest.raises(DumpError, match="several modules; choose one of: module_0001.jit_a, "):
        pass_files(tmp_path)
    with pytest.raises(DumpError, match="no module matching 'jit_c'"):
        pass_files(tmp_path, "jit_c")
    assert pass_files(tmp_path, "jit_b")[0].module_id == "0002"
    assert pass_timeline(tmp_path, 1) == []


def test_missing_or_empty_directories(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match="not a directory"):
        pass_files(tmp_path / "nope")
    with pytest.raises(DumpError, match="dump_passes=True"):
        pass_files(tmp_path)


def test_tuple_element_operands_in_dumps_are_read(tmp_path: Path) -> None:
    # XLA's before_optimizations dump of a while body can use `%tuple#0` operands.
    body = "  %t = (f32[4]{0}) tuple(%p)\n  ROOT %n = f32[4]{0} negate(%t#0)"
    _write(tmp_path, "module_0001.jit_w.before_optimizations.txt", body)
    _write(tmp_path, "module_0001.jit_w.0000.p.after_tuple-simplifier.before_y.txt", NEG)
    (step,) = pass_timeline(tmp_path)
    # '%t#0' is an implicit get-tuple-element, counted as XLA's parser counts it
    assert dict(step.opcode_deltas) == {"get-tuple-element": -1, "tuple": -1}


def test_unreadable_pass_file_names_the_file(tmp_path: Path) -> None:
    _write(tmp_path, "module_0001.jit_w.0000.p.after_x.before_y.txt", NEG)
    _write(tmp_path, "module_0001.jit_w.0001.p.after_y.before_z.txt", NEG.replace("(%p)", "(%q)"))
    with pytest.raises(DumpError, match=r"0001\.p\.after_y\.before_z\.txt: not readable HLO"):
        pass_timeline(tmp_path)
