"""Phase 3 tests, task 2 (dump_files): the files XLA writes when a compile asks it to dump, read
as HLO and compared with the texts `jax.stages` gives for the same program (bank.py).
"""

import os
import re
import time
from pathlib import Path

import jax
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


def _stale(directory: Path, prefix: str) -> None:
    """An earlier process's dump of value_and_total at f32[2,3] under ``prefix``, a day old."""
    old = time.time() - 86400
    for suffix, text in zip(
        (".before_optimizations.txt", ".cpu_after_optimizations.txt"),
        bank.hlo_texts("value_and_total"),
        strict=True,
    ):
        path = directory / f"{prefix}.jit_value_and_total{suffix}"
        path.write_text(text)
        os.utime(path, (old, old))


def _last_module_number(directory: Path) -> int:
    """The module number of the last compile this process dumped (the test's own compile)."""
    jax.jit(value_and_total).lower(ones((2, 3))).compile(
        compiler_options={"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}
    )
    return max(int(m[1]) for p in directory.iterdir() if (m := re.match(r"module_(\d+)\.", p.name)))


@pytest.mark.task("dump_files")
def test_dump_rewrites_an_earlier_process_files(kata, tmp_path):
    """An earlier process left dumps of this function under the very module numbers this compile
    will take (XLA rewrites those files: no name is new) and one with a higher number: the answer
    is the pair this compile wrote."""
    number = _last_module_number(tmp_path / "scratch")
    dump = tmp_path / "dump"
    dump.mkdir()
    for taken in range(number + 1, number + 129):  # the next compiles' numbers, whatever they are
        _stale(dump, f"module_{taken:04d}")
    _stale(dump, "module_999999999")
    before, after = _dumped(kata, value_and_total, (ones((5, 1)),), dump)
    for module in _modules(before, after):
        parameter = next(i for i in module.entry if i.opcode == "parameter")
        with check:
            assert parameter.shape_info.dims == (5, 1), (
                f"{module.name} takes {parameter.shape}: an earlier process's file, not this "
                "compile's (f32[5,1])"
            )
    with check:
        assert before.name.split(".")[0] == after.name.split(".")[0], (
            f"{before.name} and {after.name} are not one compile's files"
        )


@pytest.mark.task("dump_files")
def test_dump_of_a_lambda(kata, tmp_path):
    """XLA names the files after the module (jit__lambda for a lambda), not after f.__name__."""
    program = lambda x: x * 3.0 - 1.0  # noqa: E731  (a lambda is the case under test)
    expected = jax.jit(program).lower(ones(4)).as_text(dialect="hlo").split()[1].rstrip(",")
    kata.dump_files(scale_and_shift, (ones(3),), str(tmp_path))
    for module in _modules(*_dumped(kata, program, (ones(4),), tmp_path)):
        with check:
            assert module.name == expected, f"got module {module.name}, expected {expected}"
