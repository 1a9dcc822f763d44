"""Every test starts with JAX's trace and compile caches empty (kata_harness/compile_events.py,
``clear_caches_if_used``): a function traced by an earlier test is traced again, and the clear
is skipped only when JAX did no work since the last one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from kata_harness import compile_events


@pytest.fixture
def clears(monkeypatch):
    """The calls of jax.clear_caches that clear_caches_if_used makes (they still clear)."""
    made = []
    original = jax.clear_caches

    def counted():
        made.append(1)
        original()

    monkeypatch.setattr(jax, "clear_caches", counted)
    return made


def _traces_of(function, *args) -> int:
    traced = []

    def body(x):
        traced.append(1)
        return function(x)

    jitted = jax.jit(body)
    jitted(*args)
    compile_events.clear_caches_if_used()
    jitted(*args)
    return len(traced)


@pytest.mark.parametrize("work", ["jit", "eager op", "lower only"])
def test_caches_are_cleared_after_any_work_of_jax(clears, work):
    compile_events.clear_caches_if_used()
    clears.clear()
    x = jnp.arange(3.0 + len(work))  # a shape no earlier test of this file used
    if work == "jit":
        jax.jit(lambda v: v * 2)(x)
    elif work == "eager op":
        jnp.sin(x)
    else:
        jax.jit(lambda v: v - 1).lower(x)
    compile_events.clear_caches_if_used()
    assert clears == [1]


def test_a_function_traced_before_the_clear_is_traced_again():
    assert _traces_of(jnp.cos, jnp.ones(5)) == 2


def test_no_clear_without_work_of_jax(clears):
    compile_events.clear_caches_if_used()
    clears.clear()
    sum(range(10))  # plain Python
    compile_events.clear_caches_if_used()
    compile_events.clear_caches_if_used()
    assert clears == []


def test_a_removed_listener_is_registered_again_and_the_caches_cleared(clears):
    compile_events.clear_caches_if_used()
    jax.monitoring.unregister_event_duration_listener(compile_events._note_use)  # noqa: SLF001
    clears.clear()
    compile_events.clear_caches_if_used()
    assert clears == [1]
    jax.jit(lambda v: v + 3)(jnp.ones(7))  # noted again by the listener registered anew
    compile_events.clear_caches_if_used()
    assert clears == [1, 1]


def test_where_the_listeners_cannot_be_seen_it_registers_once_and_clears_every_time(
    clears, monkeypatch
):
    """Another JAX may keep its listeners elsewhere: registering again before every test would
    pile them up, and skipping a clear would let trace counts leak."""
    registered = []
    monkeypatch.setattr(compile_events, "_listening", lambda monitoring: False)
    monkeypatch.setitem(compile_events._state, "blind", False)  # noqa: SLF001
    monkeypatch.setattr(jax.monitoring, "register_event_duration_secs_listener", registered.append)
    for _ in range(3):
        compile_events.clear_caches_if_used()
    assert (len(registered), len(clears)) == (1, 3)
