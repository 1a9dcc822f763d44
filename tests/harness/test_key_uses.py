"""jaxpr_walks.key_uses: a key split or drawn from twice shows up twice, however the copies were
picked out of a split; keys picked apart from one split do not."""

from __future__ import annotations

from collections import Counter

import jax

from kata_harness.oracles.jaxpr_walks import key_uses


def _most_uses(function) -> int:
    jaxpr = jax.make_jaxpr(function)(jax.random.key(0))
    counts = Counter(data for _, data in key_uses(jaxpr, [jax.random.key(11)]))
    return max(counts.values())


def test_one_split_then_one_draw_per_subkey_uses_each_key_once():
    def once(key):
        k1, k2 = jax.random.split(key)
        return jax.random.normal(k1, (2,)), jax.random.normal(k2, (3,))

    def picked(key):
        keys = jax.random.split(key, 4)
        return jax.random.normal(keys[2], (2,)), jax.random.normal(keys[3], (3,))

    assert _most_uses(once) == 1
    assert _most_uses(picked) == 1


def test_a_key_split_twice_or_split_and_drawn_from_is_used_twice():
    def split_twice(key):
        return jax.random.normal(jax.random.split(key)[0]), jax.random.normal(
            jax.random.split(key)[1]
        )

    def split_and_drawn(key):
        k1, _ = jax.random.split(key)
        return jax.random.normal(k1), jax.random.normal(key)

    def subkey_picked_twice(key):
        keys = jax.random.split(key)
        return jax.jit(jax.random.normal)(keys[0]), jax.random.uniform(keys[0:1][0])

    assert _most_uses(split_twice) == 2
    assert _most_uses(split_and_drawn) == 2
    assert _most_uses(subkey_picked_twice) == 2
