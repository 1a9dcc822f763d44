"""What several phase-15 test files share: the phase's name, its dtypes, standard-normal arrays
drawn from a test's rng, and a dtype's machine epsilon.
"""

from __future__ import annotations

import random

import jax
import jax.numpy as jnp
import numpy as np

PHASE = "phase15"
f32 = jnp.float32
bf16 = jnp.bfloat16


def normal(rng: random.Random, shape, dtype=f32) -> jax.Array:
    values = np.random.default_rng(rng.getrandbits(32)).standard_normal(shape)
    return jnp.asarray(values, dtype)


def eps_of(dtype) -> float:
    return float(jnp.finfo(dtype).eps) if jnp.issubdtype(dtype, jnp.floating) else 0.0
