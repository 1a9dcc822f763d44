"""Phase 7 tests of count_traces: traces counted by the function's own body running (the
compile_counter tests: test_phase7_counter.py)."""

from collections import namedtuple
from decimal import Decimal

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import compile_events
from katas.phase7.programs import powers, scaler, vec

# ---- count_traces -----------------------------------------------------------------------------


def _count(kata, make, static_argnums, calls) -> tuple[int, int]:
    """(the kata's count, how many times the function's body ran while the kata counted)."""
    traces = []
    got = kata.count_traces(make(traces), static_argnums, calls)
    assert type(got) is int, f"expected an int, got {got!r}"
    return got, len(traces)


@pytest.mark.task("count_traces")
def test_one_trace_per_static_value(kata):
    ns = [2, 3, 2, 3, 4, 2]
    got, ran = _count(kata, powers, (1,), [(vec(), n) for n in ns])
    with check:
        assert got == len(set(ns)), f"{got} traces for static values {ns}: one per new value"
    with check:
        assert got == ran, f"you counted {got}, the function body ran {ran} times"


@pytest.mark.task("count_traces")
def test_new_shapes_trace_again(kata):
    calls = [(vec(3), 2), (vec(4), 2), (vec(3), 2), (vec(4), 3)]
    got, ran = _count(kata, powers, (1,), calls)
    keys = {(x.shape, n) for x, n in calls}
    with check:
        assert got == len(keys), f"{got} traces, expected {len(keys)}: (shape, static value) pairs"
    with check:
        assert got == ran, f"you counted {got}, the function body ran {ran} times"


@pytest.mark.task("count_traces")
def test_static_values_that_hash_alike(kata):
    # -1 and -2 have the same hash in CPython but are different values: two traces.
    # 2, 2.0 and True compare equal to 2 or 1 and hash alike, yet their types differ: the jit
    # cache keeps them apart, so each traces.
    collide, ran_collide = _count(kata, powers, (1,), [(vec(), -1), (vec(), -2), (vec(), -1)])
    typed, ran_typed = _count(
        kata, powers, (1,), [(vec(), 2), (vec(), 2.0), (vec(), 2), (vec(), 1), (vec(), True)]
    )
    with check:
        assert collide == ran_collide == 2, (
            f"static -1, -2, -1: counted {collide}, the body ran {ran_collide} times, expected 2 "
            "(equal hashes are not equal values)"
        )
    with check:
        assert typed == ran_typed == 4, (
            f"static 2, 2.0, 2, 1, True: counted {typed}, the body ran {ran_typed} times, "
            "expected 4 (an int, a float and a bool are different cache keys)"
        )


@pytest.mark.task("count_traces")
def test_dynamic_arguments_trace_per_type(kata):
    # Not static: the value never matters, its abstract type does (shape, dtype, weak type).
    calls = [
        (vec(), 2),
        (vec(), 3),
        (vec(), 2.0),
        (vec(), np.float32(2.0)),
        (vec(), np.int32(2)),
        (vec(), 5.0),
        (vec(4, np.float16), 2.0),
    ]
    got, ran = _count(kata, scaler, (), calls)
    with check:
        assert got == ran == 5, (
            f"counted {got}, the body ran {ran} times, expected 5: weak int, weak float, "
            "f32, i32 and a new x; the values 2, 3 and 5.0 never retrace"
        )


@pytest.mark.task("count_traces")
def test_traces_are_not_compiles(kata):
    # One trace, three compiles: the same abstract types committed to three devices.
    if jax.device_count() < 3:
        pytest.skip("needs 3 CPU devices")
    calls = [(jax.device_put(vec(), d), 2.0) for d in jax.devices()[:3]]
    with compile_events.measured_compiles() as measured:
        got, ran = _count(kata, scaler, (), calls)
    with check:
        assert len(measured) >= 3, f"XLA compiled {len(measured)} times, expected 3"
    with check:
        assert got == ran == 1, (
            f"counted {got}, the body ran {ran} times, expected 1 trace: XLA compiled "
            f"{len(measured)} times (once per device), but JAX traced once"
        )


Pair = namedtuple("Pair", "first second")


def _through_an_inner_jit(traces):
    inner = jax.jit(lambda v: v * 2.0)  # made afresh: it misses the cache once, traces once

    def summed(tree):
        traces.append(1)
        first, *rest = jax.tree_util.tree_leaves(tree)  # any tree: a wrong count, not an error
        return sum(rest, inner(first))

    return summed


@pytest.mark.task("count_traces")
def test_pytree_structures_trace_apart(kata):
    # One f32[3] leaf twice in a tuple, a list, a dict and a namedtuple: the leaves flatten
    # alike, the structures differ, so each is a cache key. f calls a jitted function of its
    # own: tracing that one is not a trace of f.
    x = vec(3)
    shapes = [(x, x), [x, x], (x, x), {"a": x, "b": x}, Pair(x, x), [x, x], {"b": x, "a": x}]
    got, ran = _count(kata, _through_an_inner_jit, (), [(tree,) for tree in shapes])
    with check:
        assert got == ran == 4, (
            f"counted {got}, the body ran {ran} times, expected 4: a tuple, a list, a dict and "
            "a namedtuple of the same leaves are four structures (a dict's key order is not "
            "part of it); the inner jitted function's own trace is not f's"
        )


@pytest.mark.task("count_traces")
def test_count_is_the_same_for_an_f_traced_before(kata, fresh):
    # JAX's trace cache keys on the function object, not on the jax.jit wrapper: an f the
    # caller jitted before, or counted before, is in it; the count is what the calls need on
    # their own, so it may not depend on that.
    ns = [fresh.randint(1, 4) for _ in range(fresh.randint(3, 6))]
    calls = [(vec(fresh.choice((3, 4))), n) for n in ns]
    traces: list[int] = []
    f = powers(traces)
    before = fresh.choice(["jitted", "counted"])
    if before == "jitted":  # the caller's own jit of f on the same calls
        jitted = jax.jit(f, static_argnums=(1,))
        for args in calls:
            jitted(*args)
    else:
        kata.count_traces(f, (1,), calls)
    expected = len({(x.shape, n) for x, n in calls})
    counts = [kata.count_traces(f, (1,), calls) for _ in range(2)]
    assert counts == [expected, expected], (
        f"f {before} on {[(x.shape, n) for x, n in calls]} (n static) before, then counted "
        f"twice: got {counts}, expected {expected} each time (one trace per (shape, n) pair, "
        f"whatever traced f before); {fresh.where()}"
    )


def _first_times(traces):
    def first_times(xs, n):
        traces.append(1)
        return xs[0] * n

    return first_times


@pytest.mark.task("count_traces")
def test_python_scalars_in_containers_are_pytrees(kata, fresh):
    # A tuple or list of Python numbers is a pytree of weakly typed scalars, not an array:
    # its container and length are cache keys, the values are not (the leaves are traced).
    a, b, c = (float(fresh.randint(-9, 9)) for _ in range(3))
    calls = [
        ((a, b), 2),
        ([a, b], 2),  # a list, not a tuple: a new structure
        ((b + 1.0, a - 1.0), 2),  # new values, same structure and types: cached
        ((int(a), int(b)), 2),  # weak int leaves
        ((a, b, c), 2),  # three leaves
        ([c, a], 2),
    ]
    fresh.shuffle(calls)
    got, ran = _count(kata, _first_times, (1,), calls)
    with check:
        assert got == ran == 4, (
            f"calls {[args for args, _ in calls]} (n=2 static): counted {got}, the body ran "
            f"{ran} times, expected 4: a tuple and a list of two floats, a tuple of two ints and "
            "a tuple of three floats (values never retrace; a container is not an array); "
            f"{fresh.where()}"
        )


def _scaled_by(traces):
    def scaled(x, k):
        traces.append(1)
        leaves = k if isinstance(k, tuple) else (k,)
        return x * sum(complex(v).real for v in leaves)

    return scaled


def _equal_with_other_reprs(rng) -> list[tuple[object, object]]:
    """Pairs of static values of one type that compare equal and hash alike but print
    differently (the jit cache compares static arguments with ==, not by their text)."""
    digits = rng.randint(1, 99)
    m = rng.randint(1, 9)
    return [
        (0.0, -0.0),
        (Decimal(digits) / 10, Decimal(f"{digits / 10:.1f}0")),
        ((0.0, m), (-0.0, m)),
        (complex(0.0, 0.0), complex(-0.0, -0.0)),
    ]


@pytest.mark.task("count_traces")
def test_equal_static_values_with_other_reprs_trace_once(kata, fresh):
    # 0.0 == -0.0, Decimal("1.5") == Decimal("1.50"): equal values of one type with equal
    # hashes are one cache key, whatever repr() prints; values of another type (2 and 2.0) or
    # unequal values are other keys.
    pairs = fresh.sample(_equal_with_other_reprs(fresh), 2)
    statics = [value for pair in pairs for value in pair]
    statics += [fresh.choice(statics) for _ in range(fresh.randint(1, 3))]
    statics.append(float(fresh.randint(1, 9)))  # a key of its own
    fresh.shuffle(statics)
    keys = {(type(k), k) for k in statics}  # the set's own == and hash decide
    got, ran = _count(kata, _scaled_by, (1,), [(vec(), k) for k in statics])
    assert got == ran == len(keys), (
        f"static values {statics!r}: counted {got}, the body ran {ran} times, expected "
        f"{len(keys)} (values that compare equal are one key, however they print); "
        f"{fresh.where()}"
    )
