"""Phase 3 tests, task 2 (dump_files): the files XLA writes when a compile asks it to dump, read
as HLO and compared with the texts `jax.stages` gives for the same program (bank.py).
"""

import os
from pathlib import Path

import pytest
from pytest_check import check

from katas.phase3 import bank
from katas.phase3.programs import ones, scale_and_shift, value_and_total
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

# --- task 2: dump_files ----------------------------------------------------------------------


def _dumped(kata, f, args, directory: Path) -> tuple[Path, Path]:
    paths = kata.dump_files(f, args, str(directory))
    assert isinstance(paths, tuple) and len(paths) == 2, f"expected two paths, got {paths!r:.80}"
    before, after = (Path(p) for p in paths)
    for path in (before, after):
        assert path.is_file() and path.parent == directory, f"{path} is not a file in the dump"
    return before, after


def _modules(before: Path, after: Path):
    return (
        bank.hlo_module(before.read_text(), before.name),
        bank.hlo_module(after.read_text(), after.name),
    )


@pytest.mark.task("dump_files")
def test_dump_holds_before_and_after(kata, tmp_path):
    flags = os.environ.get("XLA_FLAGS")
    before, after = _dumped(kata, scale_and_shift, (ones(3),), tmp_path)
    assert os.environ.get("XLA_FLAGS") == flags, "dump through compiler_options, not XLA_FLAGS"
    unoptimized, optimized = _modules(before, after)
    with check:
        assert opcode_counts(unoptimized)["fusion"] == 0, f"{before.name}: expected no fusion"
    with check:
        assert opcode_counts(optimized)["fusion"] > 0, f"{after.name}: expected fusions"
    with check:
        assert normalize_hlo(after.read_text()) == normalize_hlo(
            bank.hlo_texts("scale_and_shift")[1]
        ), "the after-optimizations file is the text compiled.as_text() gives"
    with check:
        assert opcode_counts(unoptimized) == opcode_counts(
            parse_hlo(bank.hlo_texts("scale_and_shift")[0])
        ), "the before-optimizations file is the module before any pass"


@pytest.mark.task("dump_files")
def test_dump_finds_this_compiles_files(kata, tmp_path):
    kata.dump_files(scale_and_shift, (ones(3),), str(tmp_path))
    before, after = _dumped(kata, value_and_total, (ones((2, 3)),), tmp_path)
    for module in _modules(before, after):
        with check:
            assert module.name == "jit_value_and_total", f"got module {module.name}"


@pytest.mark.task("dump_files")
def test_dump_of_the_same_function_again(kata, tmp_path):
    """Another process's dump with a higher module number is there, and this function was
    dumped before at another shape: only the files this compile wrote are the answer."""
    stale = "module_999999999.jit_value_and_total"  # above any number a process reaches
    for suffix, text in (
        (".before_optimizations.txt", bank.hlo_texts("value_and_total")[0]),
        (".cpu_after_optimizations.txt", bank.hlo_texts("value_and_total")[1]),
    ):
        (tmp_path / f"{stale}{suffix}").write_text(text)
    kata.dump_files(value_and_total, (ones((2, 3)),), str(tmp_path))
    before, after = _dumped(kata, value_and_total, (ones((5, 1)),), tmp_path)
    for module in _modules(before, after):
        parameter = next(i for i in module.entry if i.opcode == "parameter")
        with check:
            assert parameter.shape_info.dims == (5, 1), (
                f"{module.name} takes {parameter.shape}: not this compile (f32[5,1])"
            )
    with check:
        assert before.name.split(".")[0] == after.name.split(".")[0], (
            f"{before.name} and {after.name} are not one compile's files"
        )
