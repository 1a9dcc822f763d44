"""Phase 7 tests: control flow read from real jaxprs and HLO; traces and compiles measured here."""

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from pytest_check import check

from xla_inspect.capture import capture
from xla_inspect.parse import parse_hlo

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _vec(n=8):
    return np.ones(n, np.float32)  # NumPy: creating jnp arrays would compile eager ops


def _body(i, c):
    return c * 2.0 + i


def _cond(x):
    return lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)


def _switch(x):
    return lax.switch(jnp.int32(x.sum()) % 3, [jnp.sin, jnp.cos, jnp.tanh], x)


def _cond_in_scan(x):
    def step(c, row):
        return c + lax.cond(row.sum() > 0, jnp.sin, jnp.cos, row), None

    return lax.scan(step, jnp.zeros(4), x.reshape(-1, 4))[0]


LOOPS = {
    "fori_loop": lambda x: lax.fori_loop(0, 5, _body, x),
    "while_loop": lambda x: lax.while_loop(lambda c: c.sum() < 100, lambda c: c * 2, x),
    "scan": lambda x: lax.scan(lambda c, r: (c + r, None), jnp.zeros(4), x.reshape(-1, 4))[0],
}


@functools.cache
def _hlo(name: str) -> str:
    programs = {"cond": _cond, "switch": _switch, "cond_in_scan": _cond_in_scan, **LOOPS,
                "nested": lambda x: lax.fori_loop(0, 3, lambda i, c: LOOPS["scan"](c).sum() + c,
                                                  x)}
    return capture(programs[name], _vec()).optimized_hlo_text


@pytest.mark.task("conditionals")
def test_cond_and_switch_become_conditional(kata):
    found = {name: kata.conditionals(_hlo(name)) for name in ("cond", "switch")}
    with check:
        assert found["cond"] == [("s32", 2)], f"cond: {found['cond']}; the bool predicate is "
        "converted to an s32 branch index"
    with check:
        assert found["switch"] == [("s32", 3)], f"switch over 3 functions: {found['switch']}"


@pytest.mark.task("conditionals")
def test_conditional_inside_a_loop_body(kata):
    found = kata.conditionals(_hlo("cond_in_scan"))
    assert found == [("s32", 2)], f"got {found}: the cond lives in the loop body computation"


@pytest.mark.task("while_loops")
def test_every_loop_becomes_one_while(kata):
    for name in LOOPS:
        got = kata.while_loops(_hlo(name))
        with check:
            assert got == 1, f"{name}: {got} while loops, expected 1"
    got = kata.while_loops(_hlo("nested"))
    with check:
        assert got == 2, f"a scan inside a fori_loop: {got}, expected 2"


@pytest.mark.task("while_loops")
def test_cpu_wraps_while_in_a_call(kata):
    counted = kata.while_loops(_hlo("fori_loop"))
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: the CPU backend wraps while in a call (xla_cpu_small_call)")
    entry = parse_hlo(_hlo("fori_loop")).entry
    opcodes = [i.opcode for i in entry]
    with check:
        assert "while" not in opcodes and "call" in opcodes, f"ENTRY opcodes {opcodes}"
    with check:
        assert counted == 1, f"{counted}: the while is one call away from ENTRY"


def _fori(x, n):
    return lax.fori_loop(0, n, _body, x)


@pytest.mark.task("loop_primitives")
def test_static_bounds_scan_dynamic_bounds_while(kata):
    static = kata.loop_primitives(jax.make_jaxpr(lambda x: _fori(x, 5))(1.0))
    dynamic = kata.loop_primitives(jax.make_jaxpr(_fori)(1.0, 5))
    with check:
        assert static == ["scan"], f"fori_loop(0, 5): {static}; a known trip count is a scan"
    with check:
        assert dynamic == ["while"], f"fori_loop(0, n) with traced n: {dynamic}"


@pytest.mark.task("loop_primitives")
def test_loops_nested_in_bodies(kata):
    def nested(x, n):
        return lax.fori_loop(0, n, lambda i, c: _fori(c, 3), x)

    def in_cond(x):
        return lax.cond(x > 0, lambda v: lax.while_loop(lambda c: c < 9.0, jnp.exp, v),
                        lambda v: v, x)

    outer_while = kata.loop_primitives(jax.make_jaxpr(nested)(1.0, 4))
    under_cond = kata.loop_primitives(jax.make_jaxpr(in_cond)(1.0))
    with check:
        assert outer_while == ["while", "scan"], f"got {outer_while}: outer while, inner scan"
    with check:
        assert under_cond == ["while"], f"got {under_cond}: the while hides in a cond branch"


def _powers(traces):
    def power(x, n):
        traces.append(n)
        for _ in range(n):  # Python control flow: n must be static
            x = x * 2.0
        return x

    return power


@pytest.mark.task("count_traces")
def test_one_trace_per_static_value(kata):
    traces = []
    ns = [2, 3, 2, 3, 4, 2]
    got = kata.count_traces(_powers(traces), (1,), [(_vec(), n) for n in ns])
    with check:
        assert got == len(set(ns)), f"{got} traces for static values {ns}: one per new value"
    with check:
        assert got == len(traces), f"you counted {got}, the function body ran {len(traces)} times"


@pytest.mark.task("count_traces")
def test_new_shapes_trace_again(kata):
    calls = [(_vec(3), 2), (_vec(4), 2), (_vec(3), 2), (_vec(4), 3)]
    got = kata.count_traces(_powers([]), (1,), calls)
    keys = {(x.shape, n) for x, n in calls}
    assert got == len(keys), f"{got} traces, expected {len(keys)}: (shape, static value) pairs"


@contextlib.contextmanager
def _measured_compiles():
    """The test's own count of backend compiles inside the block."""
    events = []

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            events.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def _doubler():
    return jax.jit(lambda v: v * 2.0)


@pytest.mark.task("compile_counter")
def test_compile_counter_counts_backend_compiles(kata):
    f = _doubler()
    lowered = f.lower(_vec(6))  # traced and lowered before the block: only its compile is inside
    with kata.compile_counter() as counter, _measured_compiles() as measured:
        for n in (3, 4, 3, 5, 4):
            f(_vec(n))
        lowered.compile()
    with check:
        assert counter.count == len(measured), (
            f"counted {counter.count}, XLA compiled {len(measured)} times (three shapes traced "
            "and compiled, plus one program lowered earlier and compiled in the block: tracing "
            "and lowering are events of their own)")
    with check:
        assert len(measured) == 4, f"three shapes and one pre-lowered program, {len(measured)}"


@pytest.mark.task("compile_counter")
def test_compile_counter_stops_at_exit(kata):
    f = _doubler()
    with kata.compile_counter() as first:
        f(_vec(3))
    with kata.compile_counter() as second:
        f(_vec(4))
        f(_vec(3))
    f(_vec(5))
    with check:
        assert first.count == 1, f"first counter: {first.count}, expected 1 (compiles after "
        "its block must not count)"
    with check:
        assert second.count == 1, f"second counter: {second.count}, expected 1 (a cache hit "
        "does not compile)"


BUCKETS = (8, 16, 32)


def _compiles_for(kata, lengths) -> int:
    with _measured_compiles() as measured:
        for n in lengths:
            kata.bucketed_mean(np.arange(n, dtype=np.float32), BUCKETS)
    return len(measured)


@pytest.mark.task("bucketed_mean")
def test_bucketing_bounds_compiles(kata):
    first = _compiles_for(kata, (1,))  # bucket 8: whatever a first call compiles
    same_bucket = _compiles_for(kata, (5, 8, 3, 7))
    new_bucket = _compiles_for(kata, (9,))
    again = _compiles_for(kata, (12, 16, 10))
    with check:
        assert first >= 1, f"the first call compiled {first} programs: is anything jitted?"
    with check:
        assert same_bucket == 0, (
            f"new lengths in a bucket already compiled cost {same_bucket} compiles, expected 0: "
            "is the length static, or is an eager op run on each new length?")
    with check:
        assert new_bucket >= 1, (
            "length 9 needs bucket 16, a new shape, yet nothing compiled: is every input "
            "padded to the same size? Short inputs then pay for the largest bucket")
    with check:
        assert again == 0, (
            f"lengths 12, 16, 10 fit bucket 16, compiled for length 9; {again} compiles, "
            "expected 0")


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_is_correct(kata):
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 31):
        x = rng.normal(size=n).astype(np.float32) + 1.0
        got = kata.bucketed_mean(x, BUCKETS)
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}: {got}, expected {np.mean(x)} (padding must not count)")
    with pytest.raises(ValueError):
        kata.bucketed_mean(np.ones(40, np.float32), BUCKETS)


def _mul(x, y):
    return x * y


@pytest.mark.task("explain_miss")
def test_explains_a_shape_miss(kata):
    messages = kata.explain_miss(_mul, (_vec(3), 2.0), (_vec(4), 2.0))
    assert len(messages) == 1, f"{len(messages)} explanations, expected one for the second call"
    text = messages[0]
    old, new = "f32[3]", "f32[4]"
    with check:
        assert "at x" in text, f"the explanation should name argument x:\n{text}"
    with check:
        assert new in text and old in text, f"expected {new} and {old} in:\n{text}"


@pytest.mark.task("explain_miss")
def test_no_miss_no_explanation(kata):
    original = jax.config.jax_explain_cache_misses
    found = {}
    try:
        for before in (False, True):
            jax.config.update("jax_explain_cache_misses", before)
            messages = kata.explain_miss(_mul, (_vec(3), 2.0), (_vec(3), 3.0))
            found[before] = (messages, jax.config.jax_explain_cache_misses)
    finally:
        jax.config.update("jax_explain_cache_misses", original)  # keep other tests quiet
    for before, (messages, after) in found.items():
        with check:
            assert messages == [], f"a new Python float is not a new cache key; got {messages}"
        with check:
            assert after == before, (
                f"the setting was {before} before the call and {after} after it: restore "
                "the value you found, not a fixed one")
