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


SIGNED = np.array([[-3, -2, 5], [0, 2, 7]], np.int32)


@pytest.mark.parametrize(
    ("function", "compares"),
    [
        (lambda x: jnp.where(0 > x, -x, x), True),
        (lambda x: jnp.where(x >= jnp.zeros_like(x), x, -x), True),
        (lambda x: jnp.where((x >> 31) != 0, -x, x), False),
        (lambda x: jnp.where((x & jnp.int32(-(2**31))) != 0, -x, x), False),
        (lambda x: jnp.where(lax.bitcast_convert_type(x, jnp.uint32) > 2**31 - 1, -x, x), False),
        (lambda x: jnp.where(x.astype(jnp.float32) < 0, -x, x), False),
        (lambda x: jnp.where(x < -x, -x, x), False),
    ],
    ids=["zero-first", "zeros-like", "shift", "mask", "bitcast", "converted", "x-vs-minus-x"],
)
def test_a_comparison_of_something_else_computed_from_x_does_not_compare_x(function, compares):
    """The predicate compares x itself with zero: its sign bit shifted down or masked, x
    bitcast or converted to another dtype, or x against -x, compare something else."""
    traced = jax.make_jaxpr(function)(SIGNED)
    concrete = jax.make_jaxpr(lambda: function(jax.device_put(SIGNED)))()
    assert any(compares_x(traced, [SIGNED], SIGNED)) is compares
    assert any(compares_x(concrete, [], SIGNED)) is compares
