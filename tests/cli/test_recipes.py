"""Show recipes of every phase: each builds and lowers with the reference; show runs them."""

from __future__ import annotations

import types

import jax
import pytest

from kata_harness import curriculum, loading
from katas_cli.main import main
from katas_cli.recipes import RECIPES


def test_every_task_has_a_recipe_or_returns_a_plain_value():
    for number, table in RECIPES.items():
        functions = {t.function for t in curriculum.phase(number).tasks}
        assert set(table) <= functions, f"phase{number}: recipes for unknown tasks"
    assert set(RECIPES) == {p.number for p in curriculum.phases()}


@pytest.mark.parametrize("number", sorted(RECIPES))
def test_recipes_build_and_lower_with_the_reference(number):
    module = loading.load_impl(curriculum.phase(number), "reference")
    for name, recipe in RECIPES[number].items():
        fn, args = recipe.build(module)
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        assert "func.func" in jitted.lower(*args).as_text(), f"phase{number} {name}"


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
