"""Phase 7 tests of compile_counter: compiles measured here with jax.monitoring
(kata_harness.compile_events; the count_traces tests: test_phase7_traces.py)."""

import logging
import threading

import jax
import jax.numpy as jnp
import pytest
from pytest_check import check

from kata_harness import compile_events
from katas.phase7.programs import doubler, vec

# ---- compile_counter --------------------------------------------------------------------------


def _count_of(counter) -> int:
    count = getattr(counter, "count", None)
    assert type(count) is int, f"the counter's .count should be an int, got {count!r}"
    return count


@pytest.mark.task("compile_counter")
def test_compile_counter_counts_backend_compiles(kata):
    f = doubler()
    lowered = f.lower(vec(6))  # traced and lowered before the block: only its compile is inside
    with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
        for n in (3, 4, 3, 5, 4):
            f(vec(n))
        lowered.compile()
    count = _count_of(counter)
    with check:
        assert count == len(measured), (
            f"counted {count}, XLA compiled {len(measured)} times (three shapes traced "
            "and compiled, plus one program lowered earlier and compiled in the block: tracing "
            "and lowering are events of their own)"
        )
    with check:
        assert len(measured) == 4, f"three shapes and one pre-lowered program, {len(measured)}"


@pytest.mark.task("compile_counter")
def test_tracing_and_lowering_are_not_compiles(kata):
    f = doubler()
    with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
        jax.make_jaxpr(lambda v: jnp.sin(v) + 1.0)(vec(3))
        jax.eval_shape(lambda v: v @ v, vec(5))
        f.lower(vec(7))  # traced and lowered, never compiled
    count = _count_of(counter)
    with check:
        assert len(measured) == 0, f"nothing should compile here, XLA compiled {len(measured)}"
    with check:
        assert count == 0, (
            f"counted {count}: make_jaxpr, eval_shape and lower() trace and lower but never compile"
        )


@pytest.mark.task("compile_counter")
def test_eager_ops_compile_without_tracing(kata):
    x = vec(9)
    with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
        jnp.sin(x)
        jnp.cos(x)
        jnp.sin(x)  # cached
    count = _count_of(counter)
    with check:
        assert len(measured) == 2, f"two eager ops, XLA compiled {len(measured)} programs"
    with check:
        assert count == len(measured), (
            f"counted {count}, XLA compiled {len(measured)}: eager ops compile small programs "
            "without a jit trace"
        )


@pytest.mark.task("compile_counter")
def test_compile_counter_stops_at_exit(kata):
    f = doubler()
    with kata.compile_counter() as first:
        f(vec(3))
    with kata.compile_counter() as second:
        f(vec(4))
        f(vec(3))
    f(vec(5))
    with check:
        assert _count_of(first) == 1, f"first counter: {first.count}, expected 1 (compiles "
        "after its block must not count)"
    with check:
        assert _count_of(second) == 1, f"second counter: {second.count}, expected 1 (a cache "
        "hit does not compile)"


@pytest.mark.task("compile_counter")
def test_nested_counters_and_live_counts(kata):
    f = doubler()
    with compile_events.measured_compiles() as everything:
        with kata.compile_counter() as outer:
            f(vec(3))
            seen_inside = _count_of(outer)
            with kata.compile_counter() as inner:
                f(vec(4))
                f(vec(10))
            f(vec(11))
        after_counters = len(everything)
        f(vec(12))  # the test's own listener must still hear this one
    with check:
        assert seen_inside == 1, f".count inside the block read {seen_inside} after one compile"
    with check:
        assert _count_of(inner) == 2, f"inner counter {inner.count}, expected 2"
    with check:
        assert _count_of(outer) == 4, f"outer counter {outer.count}, expected 4 (it keeps "
        "counting while and after an inner counter runs)"
    with check:
        assert len(everything) == after_counters + 1, (
            "a listener registered by someone else stopped hearing compiles after your counter "
            "exited: remove only your own listener"
        )


@pytest.mark.task("compile_counter")
def test_counter_stops_when_the_block_raises(kata):
    f = doubler()
    counter = None
    with pytest.raises(KeyError, match="leaving the block"):
        with kata.compile_counter() as counter:
            f(vec(3))
            raise KeyError("leaving the block")
    assert counter is not None
    f(vec(4))
    f(vec(5))
    with check:
        assert _count_of(counter) == 1, (
            f"counted {counter.count}: compiles after a block that raised still counted "
            "(unregister in a finally)"
        )


class _Records(logging.Handler):
    """Every record at WARNING or above that reaches the handler (JAX logs compiles there only
    when someone switched jax_log_compiles on)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.task("compile_counter")
def test_compiles_of_other_threads_count_and_nothing_else_changes(kata, fresh):
    # The block is a span of time, not a thread: a compile another thread runs while the block
    # is open counts. And the counter only listens: JAX's settings and the caller's log stay
    # as they were (no flag switched on for the block, no records sent to anyone's handlers).
    f = doubler()
    size = fresh.randint(13, 40)
    flag = jax.config.jax_log_compiles
    handler, logger = _Records(), logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
            flag_inside = jax.config.jax_log_compiles
            worker = threading.Thread(target=lambda: f(vec(size)))
            worker.start()
            worker.join()
            f(vec(size + 1))
    finally:
        logger.removeHandler(handler)
    with check:
        assert _count_of(counter) == len(measured) == 2, (
            f"counted {counter.count}, XLA compiled {len(measured)} times while the block ran: "
            f"f32[{size}] compiled in a thread started and joined inside the block, then "
            f"f32[{size + 1}] in the block's own thread (count every thread's compiles); "
            f"{fresh.where()}"
        )
    with check:
        assert flag_inside == flag, (
            f"jax_log_compiles was {flag} before the block and {flag_inside} inside it: "
            "count the BACKEND_COMPILE event, leave JAX's settings as the caller set them"
        )
    with check:
        assert not handler.records, (
            f"a handler on the 'jax' logger received {len(handler.records)} record(s) while the "
            f"block ran, e.g. {handler.records[0].getMessage()[:80]!r}: counting must not log"
            if handler.records
            else ""
        )


def _unregister(listener) -> None:
    try:
        jax.monitoring.unregister_event_duration_listener(listener)
    except (AssertionError, ValueError):  # the kata's counter removed it already
        pass


@pytest.mark.task("compile_counter")
def test_a_listener_registered_in_the_block_stays(kata):
    f = doubler()
    heard = []

    def mine(event: str, duration_secs: float, **_) -> None:
        if event == compile_events.BACKEND_COMPILE:
            heard.append(duration_secs)

    try:
        with kata.compile_counter() as counter:
            f(vec(3))
            jax.monitoring.register_event_duration_secs_listener(mine)  # kept after the block
            f(vec(4))
        f(vec(5))
    finally:
        _unregister(mine)
    with check:
        assert _count_of(counter) == 2, (
            f"counted {counter.count}, expected 2: your listener still counts after the block, "
            "or stopped early (remove your own listener, not the last one registered)"
        )
    with check:
        assert len(heard) == 2, (
            f"a listener registered inside the block heard {len(heard)} of the 2 compiles after "
            "it was registered: your counter removed someone else's listener"
        )


def _listeners() -> list[list]:
    """Every listener jax.monitoring holds, of each kind (jax.monitoring publishes no getter)."""
    from jax._src import monitoring

    return [
        monitoring.get_event_duration_listeners(),
        monitoring.get_event_listeners(),
        monitoring.get_event_time_span_listeners(),
        monitoring.get_scalar_listeners(),
    ]


@pytest.mark.task("compile_counter")
def test_counters_leave_the_listeners_as_found(kata):
    # README: listen only while you measure. A listener left behind, even one that no longer
    # counts, is called on every event from then on: one more per counter ever used.
    f = doubler()
    before = _listeners()
    with kata.compile_counter():
        f(vec(3))
        with kata.compile_counter():
            f(vec(4))
    after_blocks = _listeners()
    with pytest.raises(KeyError, match="leaving the block"):
        with kata.compile_counter():
            f(vec(5))
            raise KeyError("leaving the block")
    after_raise = _listeners()
    for when, after in (("two nested blocks", after_blocks), ("a block that raised", after_raise)):
        extra = sum(map(len, after)) - sum(map(len, before))
        with check:
            assert after == before, (
                f"after {when} ended, jax.monitoring holds {extra:+d} listeners compared with "
                "before: unregister your own listener when the block ends (a flag is not enough)"
            )
