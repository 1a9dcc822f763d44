"""The return-type contract: strict where a wrong answer could hide behind ``==``."""

from __future__ import annotations

import signal as signal_module
import types
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
import pytest

from kata_harness import interrupts
from kata_harness.contract import ContractViolation, mismatch, wrap

KATA = types.ModuleType("_kata_under_test")
vars(KATA)["__kata_reference__"] = __name__


@dataclass(frozen=True)
class Timing:
    eager_s: float
    jit_s: float


class Sneaky(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class KataError(Exception):
    pass


KataError.__module__ = KATA.__name__


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        (3, int),
        (np.int64(3), int),
        (2.5, float),
        (3, float),
        (np.float32(1), float),
        ("x", str),
        (b"x", bytes),
        (bytearray(b"x"), bytes),
        (True, bool),
        (None, None),
        ([1, 2], list[int]),
        ((1, "a"), tuple[int, str]),
        ((1, 2, 3), tuple[int, ...]),
        ({"a": 1}, dict[str, int]),
        (Counter(a=2), Counter),
        (Counter(a=2), dict[str, int]),
        (defaultdict(Counter, a=Counter(b=1)), dict[str, Counter]),
        (None, str | None),
        ("x", str | None),
        ([("add", 2)], list[tuple[str, int]]),
        (ValueError, type[Exception]),
        (np.ones(2), np.ndarray),
        (Path("a"), Path),
        (Timing(1.0, 2.0), Timing),
    ],
)
def test_right_types_pass(value, hint):
    assert mismatch(value, hint, KATA) is None


def test_jax_arrays_and_tracers_pass():
    assert mismatch(jax.numpy.ones(2), jax.Array, KATA) is None
    jax.jit(lambda x: x if mismatch(x, jax.Array, KATA) is None else None)(np.ones(2))


@pytest.mark.parametrize(
    ("value", "hint", "said"),
    [
        (Sneaky(0), int, "expected int, got Sneaky"),
        (True, int, "expected int, got bool"),
        ("3", int, "expected int, got str"),
        (3.0, int, "expected int, got float"),
        ([1, "2"], list[int], "item 1: expected int, got str"),
        ((1, 2), tuple[int, int, int], "a tuple of 3, got 2"),
        ([1, 2], tuple[int, int], "expected tuple, got list"),
        ({"a": 1.5}, dict[str, int], "['a']: expected int, got float"),
        ({"a": 1}, Counter, "expected Counter, got dict"),
        (Counter({1: 2}), Counter[str], "expected str, got int"),
        (KataError, type[Exception], "defined in the kata"),
        (3, str | None, "expected str | None, got int"),
        ((Timing, 1), tuple[int, int], "item 0: expected int"),
    ],
)
def test_wrong_types_are_named(value, hint, said):
    reason = mismatch(value, hint, KATA)
    assert reason is not None and said in reason, reason


def test_a_kata_class_is_matched_by_name_and_fields():
    @dataclass(frozen=True)
    class Timing:  # another module's copy of the kata's class
        eager_s: float
        jit_s: float

    @dataclass(frozen=True)
    class Other:
        eager_s: float

    assert mismatch(Timing(1.0, 2.0), globals()["Timing"], KATA) is None
    reason = mismatch(Other(1.0), globals()["Timing"], KATA)
    assert reason is not None and "expected the kata's Timing, got Other" in reason


def test_an_object_defined_in_the_kata_is_refused():
    own = type("Array", (np.ndarray,), {"__module__": KATA.__name__})
    value = np.ones(2).view(own)
    reason = mismatch(value, np.ndarray, KATA)
    assert reason is not None and "defined in the kata" in reason


def test_wrapped_functions_raise_a_named_violation():
    module = types.ModuleType("_kata_wrap")
    vars(module).update(count=lambda items: Sneaky(len(items)), free=lambda: Sneaky(1))
    wrap(module, {"count": "phase9.task9 (count)"}, {"count": int}, __name__)
    with pytest.raises(
        ContractViolation,
        match=r"phase9.task9 \(count\) returned the wrong type: "
        r"expected int, got Sneaky",
    ):
        module.count([1])
    assert module.free() == 1  # only task functions with a hint are wrapped
    wrap(module, {"count": "phase9.task9 (count)"}, {"count": int}, __name__)
    assert not hasattr(module.count.__wrapped__, "__wrapped__")  # wrapping twice is a no-op


class _OwnExit(BaseException):
    __module__ = "_pytest.outcomes"  # claims to be pytest's: it is not found there


@pytest.mark.parametrize(
    "escape",
    [GeneratorExit("nothing to count"), SystemExit(0), _OwnExit("bye"), pytest.exit.Exception()],
    ids=repr,
)
def test_a_base_exception_from_a_task_is_a_named_violation(escape):
    """A BaseException that is not an Exception would end the test neither failed by an
    assertion nor passed: the task fails with one line naming it."""

    def count(items):
        raise escape

    module = types.ModuleType("_kata_escape")
    vars(module).update(count=count)
    wrap(module, {"count": "phase9.task9 (count)"}, {"count": int}, __name__)
    with pytest.raises(ContractViolation, match=r"phase9.task9 \(count\) raised ") as caught:
        module.count([1])
    assert type(escape).__name__ in str(caught.value), caught.value
    assert "test_contract.py:" in str(caught.value), caught.value
    assert caught.value.__cause__ is escape


@pytest.mark.parametrize(
    "signal",
    [pytest.skip.Exception("later"), pytest.fail.Exception("Timeout")],
    ids=repr,
)
def test_pytest_outcomes_from_a_task_pass_through(signal):
    def count(items):
        raise signal

    module = types.ModuleType("_kata_signal")
    vars(module).update(count=count)
    wrap(module, {"count": "phase9.task9 (count)"}, {"count": int}, __name__)
    with pytest.raises(type(signal)):
        module.count([1])


def test_a_keyboard_interrupt_is_the_codes_unless_ctrl_c_was_pressed(monkeypatch):
    """raise KeyboardInterrupt in a task would stop the session with no verdict and the other
    phases unrun: with no SIGINT received it fails the task; after a real Ctrl-C it stops."""
    monkeypatch.setattr(interrupts, "_state", {"watching": True, "received": 0})

    def count(items):
        raise KeyboardInterrupt

    module = types.ModuleType("_kata_interrupt")
    vars(module).update(count=count)
    wrap(module, {"count": "phase9.task9 (count)"}, {"count": int}, __name__)
    with pytest.raises(ContractViolation, match=r"raised KeyboardInterrupt"):
        module.count([1])
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C: counted, then Python's own handler
        interrupts._interrupted(signal_module.SIGINT, None)
    with pytest.raises(KeyboardInterrupt):
        module.count([1])


def test_the_sigint_handler_goes_only_where_pythons_own_is(monkeypatch):
    installed = []
    monkeypatch.setattr(interrupts, "_state", {"watching": False, "received": 0})
    monkeypatch.setattr(signal_module, "signal", lambda signum, handler: installed.append(handler))
    monkeypatch.setattr(signal_module, "getsignal", lambda signum: print)
    interrupts.watch()  # someone else's handler: left alone, Ctrl-C does what it decides
    assert not installed and not interrupts.raised_by_code(KeyboardInterrupt())
    python_s = signal_module.default_int_handler
    monkeypatch.setattr(signal_module, "getsignal", lambda signum: python_s)
    interrupts.watch()
    assert installed == [interrupts._interrupted]
    assert interrupts.raised_by_code(KeyboardInterrupt())


@pytest.mark.parametrize("current", [signal_module.SIG_IGN, signal_module.SIG_DFL], ids=str)
def test_where_no_ctrl_c_can_raise_every_keyboard_interrupt_is_the_codes(monkeypatch, current):
    """A background job or CI ignores SIGINT: no Ctrl-C raises there (a census run with nohup
    was stopped by a kata's own KeyboardInterrupt)."""
    installed = []
    monkeypatch.setattr(interrupts, "_state", {"watching": False, "received": 0})
    monkeypatch.setattr(signal_module, "signal", lambda signum, handler: installed.append(handler))
    monkeypatch.setattr(signal_module, "getsignal", lambda signum: current)
    interrupts.watch()
    assert not installed and interrupts.raised_by_code(KeyboardInterrupt())


class _PosingAsNumpy(np.int64):
    """Claims to be NumPy's, equals anything."""

    __module__ = "numpy"

    def __eq__(self, other):
        return True

    __hash__ = np.int64.__hash__


class _PosingAsJaxError(Exception):
    __module__ = "jax.errors"


def test_a_class_that_only_claims_to_be_a_library_class_is_refused():
    """A type is a library's when it is found where it says it lives."""
    assert mismatch(_PosingAsNumpy(3), int, KATA) is not None
    assert mismatch(_PosingAsJaxError, type[Exception], KATA) is not None
    assert mismatch(np.int64(3), int, KATA) is None
    assert mismatch(jax.errors.ConcretizationTypeError, type[Exception], KATA) is None


def test_a_task_that_changes_a_library_it_is_measured_with_is_refused():
    module = types.ModuleType("_kata_patcher")

    def fast_step() -> int:
        jax.stages.Compiled.memory_analysis = lambda self: None  # type: ignore[method-assign]
        return 1

    module.fast_step = fast_step  # type: ignore[attr-defined]
    original = jax.stages.Compiled.memory_analysis
    wrap(module, {"fast_step": "phase0.task1 (fast_step)"}, {"fast_step": int}, __name__)
    try:
        with pytest.raises(ContractViolation, match="changed .*Compiled.memory_analysis"):
            module.fast_step()  # type: ignore[attr-defined]
    finally:
        jax.stages.Compiled.memory_analysis = original  # type: ignore[method-assign]


def test_a_task_that_changes_a_jax_setting_is_refused_and_one_set_back_is_not():
    module = types.ModuleType("_kata_settings")
    original = jax.config.values["jax_dump_ir_to"]

    def leaves_it(path: str) -> int:
        jax.config.update("jax_dump_ir_to", path)
        return 1

    def sets_it_back(path: str) -> int:
        jax.config.update("jax_dump_ir_to", path)
        jax.config.update("jax_dump_ir_to", original)
        return 1

    module.leaves_it = leaves_it  # type: ignore[attr-defined]
    module.sets_it_back = sets_it_back  # type: ignore[attr-defined]
    tasks = {"leaves_it": "phase0.task1 (leaves_it)", "sets_it_back": "phase0.task2 (sets_it_back)"}
    wrap(module, tasks, {"leaves_it": int, "sets_it_back": int}, __name__)
    try:
        assert module.sets_it_back("/tmp/elsewhere") == 1  # type: ignore[attr-defined]
        with pytest.raises(ContractViolation, match="changed jax.config setting jax_dump_ir_to"):
            module.leaves_it("/tmp/elsewhere")  # type: ignore[attr-defined]
    finally:
        jax.config.update("jax_dump_ir_to", original)
