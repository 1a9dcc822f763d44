"""The caller's side of a task function: what the test passed comes back as it was given.

A task function reads its arguments; it does not consume or change them. An answer that donates
the caller's array to a jit (the array is deleted afterwards), writes into the caller's NumPy
array or list, renames the caller's function (``f.__name__ = ...`` before jitting it, so the
program and every profile of it carry another name) or leaves the caller's torch module in
another train/eval mode, or writes into its torch tensors or parameters in place, may return the
right value and still break the program that called it:
the test's next line, or the learner's next step, meets what the answer left behind.

:func:`taken` notes what can be checked about each argument (walking tuples, lists and dicts),
:func:`changes` says afterwards what differs. Cheap by design: a JAX array is immutable, so only
its deletion is checked; a NumPy array's bytes are copied; a function's names, code, defaults and
attributes are kept by identity; a torch tensor's in-place writes by its version counter (which
every in-place operation advances); a torch module's modes by submodule and its parameters and
buffers by identity and version.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

_DEPTH = 4  # containers nested deeper than this are not walked
_FUNCTION_FIELDS = (
    "__name__",
    "__qualname__",
    "__module__",
    "__code__",
    "__defaults__",
    "__kwdefaults__",
)

Check = Callable[[], str | None]  # what changed, or None


def taken(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Check]:
    """One check per argument leaf (``args[i]`` and keyword arguments, walked into containers)."""
    checks: list[Check] = []
    for index, value in enumerate(args):
        _walk(value, f"argument {index + 1}", checks, _DEPTH)
    for name, value in kwargs.items():
        _walk(value, f"argument {name}=", checks, _DEPTH)
    return checks


def changes(checks: list[Check]) -> list[str]:
    """What differs now from when the checks were taken."""
    return [found for check in checks if (found := check()) is not None]


@contextlib.contextmanager
def caller_unnamed() -> Iterator[None]:
    """While a task function runs, the environment does not name the test calling it (pytest
    keeps ``PYTEST_CURRENT_TEST`` there): an answer is the same whichever test asks, so it cannot
    do the task only where a test's name says its cost is measured."""
    name = os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        yield
    finally:
        if name is not None:
            os.environ["PYTEST_CURRENT_TEST"] = name


def _walk(value: Any, where: str, checks: list[Check], depth: int) -> None:
    if depth == 0:
        return
    if isinstance(value, tuple):
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]", checks, depth - 1)
    elif isinstance(value, list):
        checks.append(_same_items(value, list(value), where))
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]", checks, depth - 1)
    elif isinstance(value, dict):
        checks.append(_same_items(value, dict(value), where))
        for key, item in list(value.items()):
            _walk(item, f"{where}[{key!r}]", checks, depth - 1)
    elif isinstance(value, np.ndarray):
        if value.dtype != object:
            checks.append(_same_bytes(value, where))
    elif _is_jax_array(value):
        checks.append(_not_deleted(value, where))
    elif isinstance(value, types.FunctionType):
        checks.append(_same_function(value, where))
    elif _is_torch_module(value):
        checks.append(_same_modes(value, where))
        checks.append(_same_tensors(value, where))
    elif _is_torch_tensor(value):
        checks.append(_same_version(value, where))


def _same_items(container: list | dict, copy: list | dict, where: str) -> Check:
    def check() -> str | None:
        if isinstance(container, dict) and isinstance(copy, dict):
            same = container.keys() == copy.keys() and all(container[k] is copy[k] for k in copy)
        else:
            same = len(container) == len(copy) and all(map(operator.is_, container, copy))
        return None if same else f"{where}: the caller's {type(container).__name__} was changed"

    return check


def _same_bytes(array: np.ndarray, where: str) -> Check:
    shape, dtype, data = array.shape, array.dtype, array.tobytes()

    def check() -> str | None:
        if array.shape == shape and array.dtype == dtype and array.tobytes() == data:
            return None
        return f"{where}: the caller's NumPy array was written to"

    return check


def _not_deleted(array: Any, where: str) -> Check:
    def check() -> str | None:
        if not array.is_deleted():
            return None
        return f"{where}: the caller's JAX array was deleted (donated to a jit?)"

    return check


def _same_function(function: types.FunctionType, where: str) -> Check:
    fields = [getattr(function, name, None) for name in _FUNCTION_FIELDS]
    attributes = dict(vars(function))

    def check() -> str | None:
        now = [getattr(function, name, None) for name in _FUNCTION_FIELDS]
        changed = [
            name
            for name, a, b in zip(_FUNCTION_FIELDS, fields, now, strict=True)
            if a is not b and a != b
        ]
        current = vars(function)
        if current.keys() != attributes.keys() or any(
            current[k] is not attributes[k] for k in attributes
        ):
            changed.append("__dict__")
        if not changed:
            return None
        return f"{where}: the caller's function {fields[0]!r} was changed ({', '.join(changed)})"

    return check


def _same_modes(module: Any, where: str) -> Check:
    modes = [(name, sub.training) for name, sub in module.named_modules()]

    def check() -> str | None:
        now = [(name, sub.training) for name, sub in module.named_modules()]
        if now == modes:
            return None
        return f"{where}: the caller's torch module was left in other train/eval modes"

    return check


def _same_tensors(module: Any, where: str) -> Check:
    tensors = _tensors(module)

    def check() -> str | None:
        if _tensors(module) == tensors:
            return None
        return f"{where}: the caller's torch module had parameters or buffers replaced or written"

    return check


def _tensors(module: Any) -> list[tuple[str, int, int]]:
    named = [*module.named_parameters(), *module.named_buffers()]
    return [
        (name, id(tensor), -1 if tensor.is_inference() else tensor._version)
        for name, tensor in named
    ]


def _same_version(tensor: Any, where: str) -> Check:
    shape, version = tuple(tensor.shape), tensor._version

    def check() -> str | None:
        if tuple(tensor.shape) == shape and tensor._version == version:
            return None
        return f"{where}: the caller's torch tensor was written to in place"

    return check


def _is_jax_array(value: Any) -> bool:
    """A concrete JAX array (a tracer, when a test traces the task function, has no buffer)."""
    jax = sys.modules.get("jax")
    return (
        jax is not None
        and isinstance(value, jax.Array)
        and not isinstance(value, getattr(jax.core, "Tracer", ()))
    )


def _is_torch_module(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def _is_torch_tensor(value: Any) -> bool:
    """A torch tensor with a version counter (an inference-mode tensor has none)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor) and not value.is_inference()
