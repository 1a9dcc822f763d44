"""The caller's side: a task function that consumes or changes what its test passed is a wrong
answer (kata_harness.arguments, checked by the wrapper of every task function)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kata_harness import arguments
from kata_harness.contract import ContractViolation, wrap


def _task(body: Callable[..., Any]) -> Callable[..., Any]:
    module = types.ModuleType("_kata_arguments")
    vars(module)["answer"] = body
    wrap(module, {"answer": "phase0.task1 (answer)"}, {"answer": float}, __name__)
    return module.answer


def _donating(x, y):
    return float(jax.jit(lambda a, b: a * 2 + b.sum(), donate_argnums=0)(x, y).sum())


def _writing(x, y):
    x[0] = 7.0
    return float(np.sum(x) + np.sum(y))


def _appending(params, y):
    params.append(y)
    return 1.0


def _setting(params, y):
    params["b"] = y
    return 1.0


def _renaming(f, y):
    f.__name__ = f"{f.__name__}_static"
    return float(jax.jit(f)(y).sum())


def _marking(f, y):
    f.seen = True
    return float(f(y).sum())


def _keyword_default(f, y):
    f.__kwdefaults__ = {"scale": 2.0}
    return float(f(y).sum())


def _scaled(v, *, scale=1.0):
    return v * scale


def _square(v):
    return v * v


def _fresh(function: types.FunctionType) -> types.FunctionType:
    copy = types.FunctionType(function.__code__, function.__globals__)
    copy.__kwdefaults__ = dict(function.__kwdefaults__ or {})
    return copy


@pytest.mark.parametrize(
    ("body", "given", "said"),
    [
        (_donating, lambda: (jnp.ones(4), jnp.ones(3)), "JAX array was deleted"),
        (_writing, lambda: (np.ones(4), np.ones(3)), "NumPy array was written to"),
        (_appending, lambda: ([np.ones(2)], np.ones(3)), "list was changed"),
        (_setting, lambda: ({"w": np.ones(2)}, np.ones(3)), "dict was changed"),
        (_renaming, lambda: (types.FunctionType(_square.__code__, {}), np.ones(3)), "__name__"),
        (_marking, lambda: (types.FunctionType(_square.__code__, {}), np.ones(3)), "__dict__"),
        (_keyword_default, lambda: (_fresh(_scaled), np.ones(3)), "__kwdefaults__"),
    ],
    ids=["donated", "written", "appended", "set", "renamed", "marked", "keyword default"],
)
def test_an_answer_that_changes_its_arguments_is_a_violation(body, given, said):
    args = given()
    with pytest.raises(
        ContractViolation,
        match=rf"phase0.task1 \(answer\) changed what its caller passed: .*{said}",
    ):
        _task(body)(*args)


def test_nested_arguments_are_walked_and_keyword_arguments_too():
    def deep(tree, *, extra):
        tree[0]["w"][1] = 0.0
        return 1.0

    with pytest.raises(ContractViolation, match=r"argument 1\[0\]\['w'\]"):
        _task(deep)(({"w": np.ones(2)},), extra=np.ones(1))

    def keyword(tree, *, extra):
        extra.fill(3.0)
        return 1.0

    with pytest.raises(ContractViolation, match=r"argument extra="):
        _task(keyword)(({"w": np.ones(2)},), extra=np.ones(1))


def test_answers_that_only_read_pass():
    def reads(params, f, x):
        return float(jax.jit(f)(x).sum() + sum(np.sum(p) for p in params.values()))

    answer = _task(reads)
    params, x = {"w": np.ones((2, 2)), "b": jnp.zeros(2)}, jnp.arange(3.0)
    f = types.FunctionType(_square.__code__, {})
    assert answer(params, f, x) == 5.0 + 4.0
    assert answer(params, f, x) == 9.0  # and again: nothing was consumed


def test_a_tracer_is_not_checked_for_a_buffer():
    found = []

    def body(v):
        checks = arguments.taken((v, [v]), {})
        found.append(arguments.changes(checks))
        return v * 2

    jax.jit(body)(jnp.ones(2))
    assert found == [[]]


def test_a_torch_module_left_in_other_modes_is_a_violation():
    torch = pytest.importorskip("torch", reason="needs: uv sync --group torch (torch modules)")
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))
    model[1].eval()

    def flattens(m, y):
        m.eval()
        m.train(True)
        return 1.0

    with pytest.raises(ContractViolation, match="other train/eval modes"):
        _task(flattens)(model, np.ones(1))


def test_torch_tensors_and_parameters_written_in_place_are_a_violation():
    torch = pytest.importorskip("torch", reason="needs: uv sync --group torch (torch tensors)")
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())

    def folds(m, y):
        with torch.no_grad():
            m[0].weight.mul_(2.0)
        return 1.0

    with pytest.raises(ContractViolation, match="had parameters or buffers replaced or written"):
        _task(folds)(model, np.ones(1))

    def clamps(m, x):
        x.clamp_(min=0.0)
        return float(m(x).sum())

    with pytest.raises(ContractViolation, match="torch tensor was written to in place"):
        _task(clamps)(model, torch.randn(3, 2))

    def reads(m, x):
        with torch.no_grad():
            return float(m(x).sum())

    x = torch.randn(3, 2)
    assert _task(reads)(model, x) == _task(reads)(model, x)


def test_the_answer_does_not_see_which_test_calls_it():
    import os

    seen = []

    def sniffs(x, y):
        seen.append(os.environ.get("PYTEST_CURRENT_TEST"))
        return 1.0

    assert os.environ.get("PYTEST_CURRENT_TEST")
    _task(sniffs)(np.ones(1), np.ones(1))
    assert seen == [None]
    assert "test_the_answer_does_not_see" in os.environ["PYTEST_CURRENT_TEST"]
