"""Phase 7 tests, task explain_miss: cache misses explained by JAX's own log records (bucketed_mean,
the compiles bounded by bucketing: test_phase7_buckets.py).
"""

import logging

import jax
import numpy as np
import pytest
from pytest_check import check

from katas.phase7.programs import mul, vec

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


class _Logged(logging.Handler):
    """Every record the 'jax' logger tree hands on, as its message."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.task("explain_miss")
def test_every_miss_of_the_second_call_whole(kata):
    inner = jax.jit(lambda v: v * 2.0)  # made afresh: a new shape misses its cache too

    def outer(x):
        return inner(x) + 1.0

    logged = _Logged()
    logger = logging.getLogger("jax")
    logger.addHandler(logged)
    try:
        messages = _explain(kata, outer, (vec(3),), (vec(6),))
    finally:
        logger.removeHandler(logged)
    with check:
        assert len(messages) == 2, (
            f"{len(messages)} explanations: the second call misses twice, outer's cache and "
            "then, while outer traces, the cache of the jitted function it calls"
        )
    for message in messages:
        with check:
            assert message in logged.messages, (
                f"not a message JAX logged (return each whole, first line included):\n{message}"
            )
        with check:
            assert "f32[6]" in message, f"not an explanation of the second call:\n{message}"


@pytest.mark.task("explain_miss")
def test_a_function_never_seen_is_a_miss_too(kata):
    # outer makes a new jitted lambda each time it traces: on the second call that function
    # object is new, its cache empty, and JAX explains the miss as "never seen function".
    def outer(x):
        return jax.jit(lambda v: v * 2.0)(x) + 1.0

    messages = _explain(kata, outer, (vec(3),), (vec(6),))
    never_seen = [m for m in messages if "never seen function" in m]
    with check:
        assert len(messages) == 2 and len(never_seen) == 1, (
            f"{len(messages)} explanations ({len(never_seen)} of a function never seen), "
            "expected 2: outer's keys differ (f32[6]), and the jitted lambda outer makes anew "
            "while it traces is a function never seen: a miss like any other"
        )


@pytest.mark.task("explain_miss")
def test_misses_with_the_same_text_each_count(kata, fresh):
    """f makes a new jitted lambda k times in a Python for loop (k drawn): on the second call
    (a new shape) f misses, and each of the k lambdas, never seen, misses while f traces. JAX
    logs the k explanations alike, word for word: each is a miss of its own."""
    k = fresh.randint(2, 4)

    def outer(x):
        for _ in range(k):
            x = jax.jit(lambda v: v + 1.0)(x)
        return x

    n = fresh.randint(2, 6)
    messages = _explain(kata, outer, (vec(n),), (vec(n + fresh.randint(1, 4)),))
    if len(messages) != 1 + k:
        pytest.fail(
            f"f calls a new jax.jit(lambda v: v + 1.0) {k} times in a Python for loop: "
            f"{len(messages)} explanations, expected {1 + k} (f's own miss, then one per "
            "lambda, whose messages may read the same: one per miss, duplicates included); "
            f"{fresh.where()}"
        )


def _left_behind(kata, f, calls: tuple, before: bool) -> tuple[bool, list[list]]:
    """The setting and the handlers added to the 'jax' and root loggers after explain_miss(f,
    ...) with the setting `before`, whether it raised or not; then everything is put back."""
    original = jax.config.jax_explain_cache_misses
    loggers = (logging.getLogger("jax"), logging.getLogger())
    handlers = [list(logger.handlers) for logger in loggers]
    try:
        jax.config.update("jax_explain_cache_misses", before)
        try:
            kata.explain_miss(f, (calls[0],), (calls[1],))
        except NotImplementedError:
            raise
        except Exception:  # noqa: BLE001  (raising or not is up to the kata; what is left is not)
            pass
        after = jax.config.jax_explain_cache_misses
        left = [
            [h for h in logger.handlers if h not in kept]
            for logger, kept in zip(loggers, handlers, strict=True)
        ]
    finally:
        jax.config.update("jax_explain_cache_misses", original)
        for logger, kept in zip(loggers, handlers, strict=True):
            for handler in [h for h in logger.handlers if h not in kept]:
                logger.removeHandler(handler)
    return after, left


@pytest.mark.task("explain_miss")
def test_setting_and_loggers_restored_when_f_raises(kata, fresh):
    """f raises on the first call, then (another run) on the second (a reshape the shape
    cannot take), the setting drawn True or False before each: whatever explain_miss does with
    the exception, the setting and the handlers of the 'jax' and root loggers are as they were
    afterwards."""

    def halves(x):
        return x.reshape(2, -1)

    for fails_on in fresh.sample(("first", "second"), 2):
        before = fresh.choice((False, True))
        good, bad = vec(2 * fresh.randint(1, 4)), vec(2 * fresh.randint(1, 4) + 1)
        calls = (bad, good) if fails_on == "first" else (good, bad)
        after, left = _left_behind(kata, halves, calls, before)
        case = (
            f"f = lambda x: x.reshape(2, -1) raises on the {fails_on} call (first "
            f"{calls[0].shape}, second {calls[1].shape}), the setting {before} before"
        )
        if after != before:
            pytest.fail(
                f"{case}: the setting is {after} afterwards (restore it in a finally); "
                f"{fresh.where()}"
            )
        if any(left):
            pytest.fail(
                f"{case}: handlers left on the 'jax' and root loggers: {left} (remove yours "
                f"in a finally); {fresh.where()}"
            )
