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
from xla_inspect.normalize import RULES, normalize_hlo
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


# What a dump's before file records of where the program came from (the caller's files, lines
# and frames): the same program prints the same module everywhere else.
_PLACELESS = tuple(
    rule
    for rule in RULES
    if rule.name
    in ("unify_line_endings", "strip_stack_frame_tables", "strip_metadata", "normalize_whitespace")
)


def _number(path: Path) -> int:
    """The module number XLA put in a dump file's name (-1 if it has none)."""
    found = re.match(r"module_(\d+)\.", path.name)
    return int(found[1]) if found else -1


def _own_dump(f, args, directory: Path) -> tuple[int, str]:
    """The test's own dump of jax.jit(f) at args: XLA's module number and before file text."""
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}
    )
    (before,) = directory.glob("*.before_optimizations.txt")
    return _number(before), before.read_text()


@pytest.mark.task("dump_files")
def test_dump_holds_before_and_after(kata, tmp_path):
    """The files are the dump XLA wrote for this compile: numbered between the test's own dumps
    of the program just before and after it, the before file XLA's own print of the module."""
    flags = os.environ.get("XLA_FLAGS")
    dump = tmp_path / "dump"
    dump.mkdir()
    first, printed = _own_dump(scale_and_shift, (ones(3),), tmp_path / "own_first")
    before, after = _dumped(kata, scale_and_shift, (ones(3),), dump)
    last, _ = _own_dump(scale_and_shift, (ones(3),), tmp_path / "own_last")
    assert os.environ.get("XLA_FLAGS") == flags, "dump through compiler_options, not XLA_FLAGS"
    with check:
        assert first < _number(before) < last, (
            f"{before.name}: XLA numbered this compile's module between {first} and {last} (the "
            "test's own dumps just before and after it): not a file XLA dumped for this compile"
        )
    with check:
        assert normalize_hlo(before.read_text(), _PLACELESS) == normalize_hlo(
            printed, _PLACELESS
        ), (
            f"{before.name} is not what XLA dumps before optimizing scale_and_shift(f32[3]) "
            "(the test's own dump of it, source locations aside)"
        )
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
    """Another process's dump with a higher module number is there, written just before the
    call, and this function was dumped before at another shape: only the files this compile
    wrote are the answer."""
    stale = "module_999999999.jit_value_and_total"  # above any number a process reaches
    unoptimized, optimized = bank.hlo_texts("value_and_total")
    kata.dump_files(value_and_total, (ones((2, 3)),), str(tmp_path))
    for suffix, text in (
        (".before_optimizations.txt", unoptimized),
        (".cpu_after_optimizations.txt", optimized),
    ):
        (tmp_path / f"{stale}{suffix}").write_text(text)
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


_DAY = 86400.0


def _earlier_process(written: Path, directory: Path) -> None:
    """An earlier process's dump of the program whose before file is ``written``, a day old, left
    in ``directory`` under the next 32 module numbers (a compile takes two or so) and under one
    no process reaches: byte for byte what a compile of it writes there."""
    old = time.time() - _DAY
    prefix = written.name.split(".")[0]
    texts = {p.name[len(prefix) :]: p.read_bytes() for p in written.parent.glob(f"{prefix}.*.txt")}
    for number in (*range(_number(written) + 1, _number(written) + 33), 999999999):
        for suffix, text in texts.items():
            path = directory / f"module_{number:04d}{suffix}"
            path.write_bytes(text)
            os.utime(path, (old, old))


@pytest.mark.task("dump_files")
def test_dump_rewrites_an_earlier_process_files(kata, tmp_path):
    """An earlier process dumped this very program: its files carry the names this compile will
    take and the bytes it will write (XLA rewrites them: no name is new, no content changes), and
    more under higher numbers. The answer is the pair this compile wrote, during the call."""
    dump = tmp_path / "dump"
    started = 0.0
    pairs: list[tuple[Path, Path]] = []
    for directory in (tmp_path / "first", dump):  # one call site: one program, the same bytes
        directory.mkdir()
        if pairs:
            _earlier_process(pairs[0][0], dump)
            started = time.time()
        pairs.append(_dumped(kata, value_and_total, (ones((5, 1)),), directory))
    before, after = pairs[-1]
    for path in (before, after):
        age = started - path.stat().st_mtime
        with check:
            assert age < _DAY / 2, (
                f"{path.name} was last written {age:.0f} s before the call: an earlier "
                "process's file with this compile's name and bytes, not the one it rewrote"
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
