"""jaxpr_walks.compares_x: a select whose predicate compares x (traced or on a concrete JAX
array, through nested jits and conversions of the bool) compares x; one on a constant predicate,
or on one made from x's shape alone, does not, on an unsigned x as on a signed one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from kata_harness.oracles.jaxpr_walks import compares_x

XS = (np.array([[-3, -2, 5], [0, 2, 7]], np.float32), np.array([[0, 1, 200]], np.uint8))


@pytest.mark.parametrize("x", XS, ids=lambda x: str(x.dtype))
@pytest.mark.parametrize(
    ("function", "compares"),
    [
        (lambda x: jnp.where(x > 0, x, -x), True),
        (lambda x: lax.select(x >= 0, x, -x), True),
        (lambda x: lax.select_n((x < 0).astype(jnp.int32), x, -x), True),
        (lambda x: jnp.where(jnp.zeros(x.shape, bool), -x, x), False),
        (lambda x: jnp.where(jnp.ones(x.shape, bool), x, -x), False),
    ],
)
def test_a_select_compares_x_traced_and_concrete(x, function, compares):
    traced = jax.make_jaxpr(function)(x)
    concrete = jax.make_jaxpr(lambda: function(jax.device_put(x)))()
    assert any(compares_x(traced, [x], x)) is compares
    assert any(compares_x(concrete, [], x)) is compares
