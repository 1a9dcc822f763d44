"""Phase 7 tests, tasks predict_while_loops and predict_compiles: predictions of while loops and
compiles checked against the compiler (the loops counted in XLA's module of the program compiled
here, kata_harness.oracles.control_flow; the compiles counted by jax.monitoring). The IR-reading
tasks are in test_phase7_control.py, count_traces in test_phase7_traces.py, compile_counter in
test_phase7_counter.py, explain_miss in test_phase7_recompile.py, bucketed_mean in
test_phase7_buckets.py.
"""

import functools

import jax
import pytest

from kata_harness import compile_events
from kata_harness.oracles import control_flow as oracle
from kata_harness.predict import compiler_refused
from katas.phase7.predict_programs import (
    COMPILE_SCENARIOS,
    LOOP_BANK,
    LoopProgram,
    build,
    draw_calls,
    draw_loop_program,
    loop_arguments,
    run_calls,
)
from katas.phase7.strata import call_strata, loop_strata

# ---- predict_while_loops and predict_compiles: predictions checked against XLA -----------------
# Each prediction is asked for one case at a time (the harness refuses the compiler around every
# call); the case is then compiled or run here. Fixed cases (the programs the task started with)
# and cases drawn fresh every run over the whole domain the docstrings state, a few per trap.


def _predicted(kata, task: str, case) -> int:
    predicted = getattr(kata, task)(case)
    assert type(predicted) is int, f"{task}: expected an int, got {predicted!r}"
    return predicted


def _whiles_in(program: LoopProgram) -> int:
    """`while` instructions in XLA's module of the compiled program, every computation."""
    return _whiles_of_text(repr(program), program)  # the repr tells unroll=True from unroll=1


@functools.cache
def _whiles_of_text(_key: str, program: LoopProgram) -> int:
    return oracle.whiles_compiled(build(program), loop_arguments())


@pytest.mark.task("predict_while_loops")
def test_predict_while_loops_on_the_bank(kata):
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: while counts measured on XLA:CPU's optimized HLO")
    for name, program in LOOP_BANK.items():
        predicted = _predicted(kata, "predict_while_loops", program)
        if predicted != _whiles_in(program):
            pytest.fail(
                f"{name} ({program.describe()}): you predicted {predicted} while loop(s); the "
                "optimized HLO has another number (which loops does XLA unroll or fold, and "
                "which stay?)"
            )


@pytest.mark.task("predict_while_loops")
def test_predict_while_loops_on_fresh_programs(kata, fresh):
    """One program drawn per situation the contract allows, every run (strata.loop_strata: each
    loop kind at 0, 1 and more trips, unrolls with and without a remainder, empty and nested
    bodies, every wrap, grad chains), and one drawn over the whole domain."""
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: while counts measured on XLA:CPU's optimized HLO")
    programs = {**loop_strata(fresh), "anything the domain allows": draw_loop_program(fresh)}
    for situation, program in programs.items():
        predicted = _predicted(kata, "predict_while_loops", program)
        compiled = _whiles_in(program)
        if predicted != compiled:
            pytest.fail(
                f"{situation}: {program.describe()}: you predicted {predicted} while loop(s), "
                f"the optimized HLO holds {compiled}; {fresh.where()}"
            )


@pytest.mark.task("predict_while_loops")
def test_predict_while_loops_does_not_compile(kata):
    for program in (LOOP_BANK["fori_loop inside fori_loop"], LOOP_BANK["grad of a tanh fori_loop"]):
        with compiler_refused("predict_while_loops"):
            kata.predict_while_loops(program)


@functools.cache
def _bank_compiles(name: str) -> int:
    return compile_events.compiles_of(lambda: run_calls(COMPILE_SCENARIOS[name]))


@pytest.mark.task("predict_compiles")
def test_predict_compiles_on_the_bank(kata):
    if jax.device_count() < 3:
        pytest.skip("needs 3 devices: one scenario commits the same shapes to three of them")
    for name, calls in COMPILE_SCENARIOS.items():
        predicted = _predicted(kata, "predict_compiles", list(calls))
        if predicted != _bank_compiles(name):
            pytest.fail(
                f"{name}: you predicted {predicted} compile(s); jax.monitoring counted another "
                "number (what is in jit's cache key: shapes, dtypes, static values, devices?)"
            )


@pytest.mark.task("predict_compiles")
def test_predict_compiles_on_fresh_patterns(kata, fresh):
    """One pattern drawn per respect of jit's cache key, every run (strata.call_strata: two
    calls differing in exactly that respect, the rest drawn; APIs, wrappers, lambdas and
    devices likewise), and one drawn over the whole domain."""
    if jax.device_count() < 3:
        pytest.skip("needs 3 devices: the patterns commit arguments to devices 0, 1 and 2")
    patterns = {**call_strata(fresh), "anything the domain allows": draw_calls(fresh)}
    for situation, calls in patterns.items():
        predicted = _predicted(kata, "predict_compiles", list(calls))
        measured = compile_events.compiles_of(lambda calls=calls: run_calls(calls))
        if predicted != measured:
            steps = "; ".join(f"{n}. {call.describe()}" for n, call in enumerate(calls, 1))
            pytest.fail(
                f"{situation}, from empty caches: {steps}. You predicted {predicted} "
                f"compile(s), jax.monitoring counted {measured}; {fresh.where()}"
            )


@pytest.mark.task("predict_compiles")
def test_predict_compiles_does_not_compile(kata):
    for name in ("same shapes committed to 3 devices", "lower and compile twice by hand"):
        with compiler_refused("predict_compiles"):
            kata.predict_compiles(list(COMPILE_SCENARIOS[name]))
