"""The fresh fixture: the same file draws the same cases, an edited file or another test other
ones, and --kata-seed fixes them."""

from __future__ import annotations

import types

from kata_harness.fresh import Fresh, seed_of


def _module(tmp_path, text: str) -> types.ModuleType:
    path = tmp_path / "kata.py"
    path.write_text(text)
    module = types.ModuleType("_fresh_under_test")
    module.__file__ = str(path)
    return module


def test_the_same_file_draws_the_same_cases(tmp_path):
    module = _module(tmp_path, "def f():\n    return 1\n")
    assert seed_of(module, "test_a[katas]") == seed_of(module, "test_a[katas]")
    assert seed_of(module, "test_a[katas]") != seed_of(module, "test_b[katas]")


def test_an_edited_file_draws_new_cases(tmp_path):
    before = seed_of(_module(tmp_path, "def f():\n    return 1\n"), "test_a")
    after = seed_of(_module(tmp_path, "def f():\n    return 2\n"), "test_a")
    assert before != after


def test_a_failure_names_the_seed_that_draws_it_again():
    drawn = Fresh(1234)
    first = [drawn.randrange(100) for _ in range(5)]
    again = Fresh(1234)
    assert [again.randrange(100) for _ in range(5)] == first
    assert "--kata-seed=1234" in drawn.where()
