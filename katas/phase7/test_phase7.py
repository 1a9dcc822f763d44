"""Phase 7 tests, tasks explain_miss, bucketed_mean, predict_while_loops and predict_compiles:
cache misses explained, compiles bounded by bucketing, and predictions of while loops and
compiles checked against the compiler (the loops counted in XLA's module of the program compiled
here, kata_harness.oracles.control_flow; the compiles counted by jax.monitoring). The IR-reading
tasks are in test_phase7_control.py, count_traces and compile_counter in test_phase7_traces.py.
"""

import functools
import itertools
import logging

import jax
import numpy as np
import pytest
from pytest_check import check

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
from katas.phase7.programs import mul, vec
from katas.phase7.strata import call_strata, loop_strata

# ---- explain_miss -----------------------------------------------------------------------------


def _explain(kata, f, first, second) -> list[str]:
    got = kata.explain_miss(f, first, second)
    assert isinstance(got, list) and all(isinstance(m, str) for m in got), (
        f"expected a list of str, got {got!r}"
    )
    return got


def _one_explanation(kata, f, first, second) -> str:
    messages = _explain(kata, f, first, second)
    assert len(messages) == 1, (
        f"{len(messages)} explanations, expected one for the second call: {messages}"
    )
    return messages[0]


@pytest.mark.task("explain_miss")
def test_explains_a_shape_miss(kata):
    text = _one_explanation(kata, mul, (vec(3), 2.0), (vec(4), 2.0))
    with check:
        assert "at x" in text, f"the explanation should name argument x:\n{text}"
    with check:
        assert "f32[4]" in text and "f32[3]" in text, f"expected f32[4] and f32[3] in:\n{text}"


@pytest.mark.task("explain_miss")
def test_explains_a_dtype_miss(kata):
    def scale(x, y):
        return x * y

    text = _one_explanation(kata, scale, (vec(3), 2.0), (vec(3, np.float16), 2.0))
    with check:
        assert "at x" in text, f"the explanation should name argument x:\n{text}"
    with check:
        assert "f16[3]" in text and "f32[3]" in text, f"expected f16[3] and f32[3] in:\n{text}"


@pytest.mark.task("explain_miss")
def test_explains_a_weak_type_miss(kata):
    def shift(x, y):
        return x + y

    text = _one_explanation(kata, shift, (vec(3), 2.0), (vec(3), np.float32(2.0)))
    with check:
        assert "at y" in text, f"the explanation should name argument y:\n{text}"
    with check:
        assert "weak_type" in text, f"a Python float is weakly typed, np.float32 is not:\n{text}"


@pytest.mark.task("explain_miss")
def test_explains_a_pytree_miss(kata):
    def pair(t):
        return t[0] * t[1]

    text = _one_explanation(kata, pair, ((vec(3), vec(3)),), ([vec(3), vec(3)],))
    with check:
        assert "list" in text and "tuple" in text, f"a tuple became a list:\n{text}"


@pytest.mark.task("explain_miss")
def test_only_explanations_are_returned(kata):
    def noisy(x):
        logging.getLogger("jax").warning("noisy traced again")  # a log record, not a miss
        return x + 1.0

    messages = _explain(kata, noisy, (vec(3),), (vec(5),))
    with check:
        assert len(messages) == 1 and "noisy traced again" not in messages[0], (
            f"expected only the cache-miss explanation, got {messages}"
        )


@pytest.mark.task("explain_miss")
def test_no_miss_no_explanation(kata):
    original = jax.config.jax_explain_cache_misses
    found = {}
    try:
        for before in (False, True):
            jax.config.update("jax_explain_cache_misses", before)
            messages = _explain(kata, mul, (vec(3), 2.0), (vec(3), 3.0))
            found[before] = (messages, jax.config.jax_explain_cache_misses)
    finally:
        jax.config.update("jax_explain_cache_misses", original)  # keep other tests quiet
    for before, (messages, after) in found.items():
        with check:
            assert messages == [], f"a new Python float is not a new cache key; got {messages}"
        with check:
            assert after == before, (
                f"the setting was {before} before the call and {after} after it: restore "
                "the value you found, not a fixed one"
            )


# ---- bucketed_mean ----------------------------------------------------------------------------

BUCKETS = (8, 16, 32)
ODD_BUCKETS = (40, 5, 12)  # unsorted, not powers of two


def _mean(kata, x, buckets) -> float:
    try:
        got = kata.bucketed_mean(x, buckets)
    except ValueError as error:
        pytest.fail(f"length {len(x)} fits a bucket of {buckets}, yet: ValueError {error}")
    assert type(got) is float, f"expected a Python float, got {type(got).__name__}"
    return got


def _new_compiles(kata, lengths, buckets) -> list[int]:
    """Backend compiles caused by each call, in order; each result is checked against NumPy."""
    counts = []
    for n in lengths:
        x = np.arange(n, dtype=np.float32) + 0.5
        with compile_events.measured_compiles() as measured:
            got = _mean(kata, x, buckets)
        counts.append(len(measured))
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}, buckets {buckets}: {got}, expected {np.mean(x)}"
            )
    return counts


@pytest.mark.task("bucketed_mean")
def test_bucketing_bounds_compiles(kata):
    first = _new_compiles(kata, (1,), BUCKETS)[0]  # bucket 8: whatever a first call compiles
    same_bucket = sum(_new_compiles(kata, (5, 8, 3, 7), BUCKETS))
    new_bucket = _new_compiles(kata, (9,), BUCKETS)[0]
    again = sum(_new_compiles(kata, (12, 16, 10), BUCKETS))
    with check:
        assert first >= 1, f"the first call compiled {first} programs: is anything jitted?"
    with check:
        assert same_bucket == 0, (
            f"new lengths in a bucket already compiled cost {same_bucket} compiles, expected 0: "
            "is the length static, or is an eager op run on each new length?"
        )
    with check:
        assert new_bucket >= 1, (
            "length 9 needs bucket 16, a new shape, yet nothing compiled: is every input "
            "padded to the same size? Short inputs then pay for the largest bucket"
        )
    with check:
        assert again == 0, (
            f"lengths 12, 16, 10 fit bucket 16, compiled for length 9; {again} compiles, expected 0"
        )


@pytest.mark.task("bucketed_mean")
def test_smallest_bucket_of_an_unsorted_tuple(kata):
    # buckets (40, 5, 12): 3 -> 5, 5 -> 5, 6 -> 12, 12 -> 12, 13 -> 40, 40 -> 40, 2 -> 5
    lengths = (3, 5, 4, 6, 12, 13, 40, 2)
    fits = {3: 5, 5: 5, 4: 5, 6: 12, 12: 12, 13: 40, 40: 40, 2: 5}
    counts = _new_compiles(kata, lengths, ODD_BUCKETS)
    seen = set()
    for n, compiles in zip(lengths, counts, strict=True):
        bucket = fits[n]
        with check:
            if bucket in seen:
                assert compiles == 0, (
                    f"length {n} fits bucket {bucket} (smallest bucket >= length, buckets "
                    f"{ODD_BUCKETS}), already compiled, yet {compiles} compiles"
                )
            else:
                assert compiles >= 1, (
                    f"length {n} is the first to need bucket {bucket} of {ODD_BUCKETS}, yet "
                    "nothing compiled: which bucket did you pad to?"
                )
        seen.add(bucket)


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_is_correct(kata):
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 31, 32):
        x = rng.normal(size=n).astype(np.float32) * 10.0 + 100.0
        got = _mean(kata, x, BUCKETS)
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}, buckets {BUCKETS}: {got}, expected {np.mean(x)} (padding must "
                "not count)"
            )


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_other_dtypes(kata):
    rng = np.random.default_rng(3)
    for dtype in (np.float16, np.float32, np.float64):
        for n in (2, 11):
            x = (rng.normal(size=n) + 4.0).astype(dtype)
            got = _mean(kata, x, BUCKETS)
            with check:
                assert got == pytest.approx(float(np.mean(x.astype(np.float64))), rel=2e-3), (
                    f"{np.dtype(dtype).name} length {n}: {got}, expected {np.mean(x)}"
                )


def _fresh_values(fresh, n: int, dtype) -> np.ndarray:
    """Small integers (exact in every float dtype), zeros among them."""
    x = np.array([fresh.randint(-3, 4) for _ in range(n)], dtype=dtype)
    x[fresh.randrange(n)] = 0
    return x


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_on_fresh_buckets_and_lengths(kata, fresh):
    """Buckets drawn in any order (sizes no other test uses, so each is new to this process),
    lengths in every bucket and at its edges, a float dtype, values with zeros: the mean must
    be NumPy's, a bucket's first length must compile and the next ones must not."""
    buckets = tuple(fresh.sample(range(41, 161), fresh.randint(2, 4)))
    dtype = fresh.choice((np.float16, np.float32, np.float64))
    edges = [0, *sorted(buckets)]
    lengths = []
    for low, high in itertools.pairwise(edges):
        lengths += [high, fresh.randint(low + 1, high), fresh.randint(low + 1, high)]
    fresh.shuffle(lengths)
    seen = set()
    for n in lengths:
        x = _fresh_values(fresh, n, dtype)
        bucket = min(b for b in buckets if b >= n)
        case = f"length {n} ({np.dtype(dtype).name}), buckets {buckets}"
        with compile_events.measured_compiles() as measured:
            got = _mean(kata, x, buckets)
        want = float(np.mean(x.astype(np.float64)))
        if got != pytest.approx(want, rel=2e-3, abs=1e-3):
            pytest.fail(f"{case}, x {x.tolist()}: mean {got}, NumPy says {want}; {fresh.where()}")
        if bucket in seen and measured:
            pytest.fail(
                f"{case}: bucket {bucket} was compiled already, yet {len(measured)} compiles "
                f"(which bucket did you pad to? is anything static?); {fresh.where()}"
            )
        if bucket not in seen and not measured:
            pytest.fail(
                f"{case}: the first length needing bucket {bucket} (smallest bucket >= length), "
                f"yet nothing compiled: which size did you pad to?; {fresh.where()}"
            )
        seen.add(bucket)
    too_long = max(buckets) + fresh.randint(1, 20)
    with pytest.raises(ValueError):
        kata.bucketed_mean(np.ones(too_long, dtype), buckets)
        pytest.fail(f"length {too_long} exceeds buckets {buckets}: expected ValueError")


@pytest.mark.task("bucketed_mean")
def test_too_long_raises(kata):
    for buckets, n in ((BUCKETS, 33), (ODD_BUCKETS, 41), ((3,), 4)):
        with pytest.raises(ValueError):
            kata.bucketed_mean(np.ones(n, np.float32), buckets)


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
