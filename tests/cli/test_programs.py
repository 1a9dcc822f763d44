"""Each phase's programs.py: the tests import their programs from it, `katas show` compiles its
recipes (the same objects), every recipe compiles on the reference, and a task without one says
so without naming internal files."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

import jax
import pytest

from kata_harness import curriculum, loading, options
from kata_harness.programs import Recipe, load, recipe_for, recipes
from katas_cli.main import main

pytestmark = pytest.mark.real_course  # compiles the real phases' programs

NUMBERS = [p.number for p in curriculum.phases()]


def test_every_phase_has_programs_for_its_own_tasks():
    for phase in curriculum.phases():
        assert phase.programs_path.is_file(), f"{phase.name} has no programs.py"
        table = recipes(phase)
        functions = {t.function for t in phase.tasks}
        assert table, f"{phase.name}: programs.py shows no task"
        assert set(table) <= functions, f"{phase.name}: recipes for unknown tasks"
        assert all(isinstance(r, Recipe) for r in table.values()), phase.name


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement of a module, nested ones too (in functions, classes, branches, loops,
    ``with``, ``try`` and ``match``): an import is a statement, and a statement sits only in
    another's statement lists, never inside an expression, so the expressions (most of a test
    file's nodes, which ``ast.walk`` would visit too) need no visit."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        for field in ("body", "orelse", "finalbody"):
            pending.extend(getattr(node, field, ()))
        for handler in getattr(node, "handlers", ()):
            pending.extend(handler.body)
        for case in getattr(node, "cases", ()):
            pending.extend(case.body)


def test_the_tests_import_their_programs_from_programs_py():
    """Or from the phase's strata.py (the cases drawn afresh each run, beside programs.py in
    the phase folder), or draw every input afresh (the ``fresh`` fixture), as phase 11's drawn
    modules."""
    for phase in curriculum.phases():
        for test_file in phase.programs_path.parent.glob("test_*.py"):
            tree = ast.parse(test_file.read_text(encoding="utf-8"))
            sources = set()
            for n in _statements(tree):
                if isinstance(n, ast.ImportFrom):
                    sources.add(n.module)
                elif isinstance(n, ast.Import):
                    sources |= {alias.name for alias in n.names}
            tests = [
                n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
            ]
            drawn = tests and all("fresh" in {a.arg for a in t.args.args} for t in tests)
            # a file whose every test draws its inputs afresh has no program to show
            shown = {f"katas.{phase.name}.programs", f"katas.{phase.name}.strata"}
            assert drawn or shown & sources, f"{test_file.name}"


class _Reference(types.ModuleType):
    """The phase's reference module, loaded when a recipe first reads from it: a recipe of
    the tests' own programs ignores it (phase 16's three, whose reference imports torch)."""

    def __init__(self, phase: curriculum.Phase) -> None:
        super().__init__(f"_lazy_reference_{phase.name}")
        self._phase = phase
        self._loaded: types.ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self._loaded is None:
            self._loaded = loading.load_impl(self._phase, "reference")
        return getattr(self._loaded, name)


def _lowered_recipes(number: int):
    phase = curriculum.phase(number)
    module = _Reference(phase)
    for name, recipe in recipes(phase).items():
        fn, args = recipe.build(module)
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        yield f"{phase.name} {name}", jitted.lower(*args)


@pytest.mark.parametrize("number", NUMBERS)
def test_every_program_builds_and_lowers_on_the_reference(number):
    for label, lowered in _lowered_recipes(number):
        assert "func.func public @main" in lowered.as_text(), label


# Compiling all of them again costs about 5 CPU seconds of the default run, and the phases' own
# tests compile these programs on the reference: CI runs this once, with the batteries.
@pytest.mark.battery
@pytest.mark.parametrize("number", NUMBERS)
def test_every_program_compiles_on_the_reference(number):
    """At the harness's LLVM level (options.OWN_XLA_FLAGS) and at XLA's default, to one text:
    the level the tests compile at changes the machine code only, never the HLO they read."""
    assert set(options.OWN_XLA_FLAGS) <= set(os.environ["XLA_FLAGS"].split())
    for label, lowered in _lowered_recipes(number):
        text = lowered.compile().as_text()
        assert text is not None and "HloModule" in text, label
        default = {"xla_backend_optimization_level": 2}
        assert lowered.compile(compiler_options=default).as_text() == text, label


def _phase_module(phase: curriculum.Phase, file_name: str) -> types.ModuleType:
    """A module of the phase's folder that the tests import (a test file, or the bank of
    programs they compile), imported under a private name (pytest's own copy is not reachable
    from here: its name depends on the rootdir and import mode)."""
    path = phase.programs_path.parent / file_name
    spec = importlib.util.spec_from_file_location(f"_programs_check_{phase.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_show_compiles_the_objects_the_tests_import(capsys, monkeypatch):
    phase = curriculum.phase(7)
    # a test before this one may have left another course's phase 7 under the name (load then
    # keeps it there and loads this course's file aside: not the case this test is about)
    monkeypatch.delitem(sys.modules, f"katas.{phase.name}.programs", raising=False)
    programs = load(phase)  # what `katas show` reads
    assert programs is not None
    # the bank the while_loops tests compile: its `from katas.phase7.programs import ...` finds
    # the same
    tests = _phase_module(phase, "bank.py")
    assert tests.PROGRAMS is programs.PROGRAMS
    recipe = recipe_for(phase.task("while_loops"))
    assert recipe is not None and recipe.given
    fn, _ = recipe.build(types.ModuleType("unused"))  # a given program ignores the module
    assert fn is tests.PROGRAMS["nested_while"]
    assert main(["show", "phase7", "while_loops", "--reference", "--stage", "hlo"]) == 0
    assert "while(" in capsys.readouterr().out


def test_tasks_without_a_program_say_so_without_internal_paths(capsys):
    for phase in curriculum.phases():
        for task in phase.tasks:
            if recipe_for(task) is not None:
                continue
            assert main(["show", phase.name, task.function]) == 0
            captured = capsys.readouterr()
            said = captured.out + captured.err
            assert f"nothing to show for {task.id} ({task.function})" in said, said
            for internal in ("katas/", "katas_cli", "kata_harness", ".py"):
                assert internal not in said, f"{task.id}: {said!r} names {internal}"


def test_phase9_shows_a_collective_on_eight_devices(capsys):
    assert main(["show", "phase9", "psum_total", "--reference"]) == 0
    out = capsys.readouterr().out
    assert "num_partitions=8" in out and "all-reduce(" in out


def test_a_given_program_says_it_is_the_tests(capsys):
    assert main(["show", "phase3", "constants", "--reference", "--stage", "hlo"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("phase3.task6 constants (the tests' program): hlo, program: x * 0.5")


@pytest.fixture
def stub_phase10(monkeypatch):
    """The learner's phase 10 as shipped: every task raises NotImplementedError."""

    def stub(*_args):
        raise NotImplementedError("phase10: not done")

    real = loading.load_impl
    fake = types.SimpleNamespace(per_example_losses=stub, make_train_step=stub)
    monkeypatch.setattr(
        loading, "load_impl", lambda phase, impl: fake if impl == "katas" else real(phase, impl)
    )


@pytest.mark.parametrize("task", ["per_example_losses", "make_train_step"])
def test_unfinished_task_is_one_line_and_exit_1(stub_phase10, task, capsys):
    assert main(["show", "phase10", task]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert f"({task}) is not done yet: nothing to compile; hint: uv run katas hint" in captured.err


def test_compare_marks_the_unfinished_side(stub_phase10, capsys):
    assert main(["compare", "phase10", "per_example_losses", "--unified"]) == 0
    out = capsys.readouterr().out
    assert "is not done yet" in out and "fusion(" in out
