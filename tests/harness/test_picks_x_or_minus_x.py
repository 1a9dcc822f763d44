"""jaxpr_walks.picks_x_or_minus_x: a select between x and -x (in either order, traced or on a
concrete array) is one; a select of a sign applied by a multiply, or of a 0, is not."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kata_harness.oracles.jaxpr_walks import picks_x_or_minus_x

X = np.array([[-3, -2, 5], [0, 2, 7]], np.float32)


def _sign_select(x):
    one = jnp.ones((), x.dtype)
    return x * jnp.where(x < 0, -one, one)


@pytest.mark.parametrize(
    ("function", "picks"),
    [
        (lambda x: jnp.where(x > 0, x, -x), True),
        (lambda x: jnp.where(x < 0, -x, x), True),
        (_sign_select, False),
        (lambda x: jnp.where(x > 0, x, 0.0), False),
    ],
)
def test_a_select_picks_x_or_minus_x_traced_and_concrete(function, picks):
    traced = jax.make_jaxpr(function)(X)
    concrete = jax.make_jaxpr(lambda: function(jnp.asarray(X)))()
    assert picks_x_or_minus_x(traced, [X], X) is picks
    assert picks_x_or_minus_x(concrete, [], X) is picks


def test_an_unsigned_select_picks_x_or_its_wrapped_negation():
    x = np.array([0, 1, 200], np.uint8)
    jaxpr = jax.make_jaxpr(lambda v: jnp.where(v < 0, -v, v))(x)
    assert picks_x_or_minus_x(jaxpr, [x], x)
