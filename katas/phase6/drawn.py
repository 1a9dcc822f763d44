"""Cases phase 6's tests draw on every run (the `fresh` fixture): calls of cost_of, step lists of
fusion_traffic and programs of memory_report (naive_temp_bytes' modules: drawn_naive.py). Each
is built so that the property it varies (a Python number's weak type, the same function at
another dtype or shape, a step listed twice (and fed two shapes) or two steps with one name,
the order of the steps, several donated arguments, an argument the program ignores) changes the
answer on every draw;
the expected values come from XLA (kata_harness.oracles.memory), never from a formula here.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from katas.phase6.programs import BYTES_DIMS, rng_array

NARROW_FLOATS = ("bfloat16", "float16")


def cost_calls(fresh: random.Random) -> list[tuple[Callable, tuple]]:
    """Calls of cost_of in a drawn order: one function at a narrow float dtype and at float32 on
    one shape, and at the narrow dtype on another shape; a second function with the same name
    (`<lambda>`) on the same arguments. Each takes a Python float first: weakly typed, it keeps
    a bfloat16 or float16 x in its dtype."""
    scale = fresh.choice([0.5, 1.5, 3.0])
    narrow = fresh.choice(NARROW_FLOATS)
    first, other = fresh.sample(BYTES_DIMS, 2), fresh.sample(BYTES_DIMS, 2)

    def x(shape, dtype):
        return rng_array(tuple(shape), jnp.dtype(dtype), seed=fresh.randrange(1000))

    exp_scaled = lambda s, v: jnp.exp(v) * s  # noqa: E731  (both are named <lambda>)
    column_sums = lambda s, v: (v * s).sum(axis=0)  # noqa: E731
    calls = [
        (exp_scaled, (scale, x(first, narrow))),
        (exp_scaled, (scale, x(first, "float32"))),
        (exp_scaled, (scale, x(other, narrow))),
        (column_sums, (scale, x(first, narrow))),
    ]
    fresh.shuffle(calls)
    return calls


def step_list(fresh: random.Random) -> tuple[list[Callable], np.ndarray]:
    """A step list and its x: a cast to a narrow float and a widening cast at the two ends (in a
    drawn order, so the list reversed ends in another dtype), between them a scaling and a sum
    over an axis (two lambdas on one input shape and dtype), one jnp function listed twice, and
    a step that shortens its input (jnp.diff or a slice) listed twice, so that one step object
    meets two input shapes on every draw, in a drawn order; x float32 or a narrow float of a
    drawn shape (never square). A transpose follows the first cast and another one precedes the
    scaling: a transpose's output cannot take its input's buffer, so a step compiled with its
    input donated costs twice the bytes there, more than a cast to x's own dtype saves when
    donated."""
    narrow = jnp.dtype(fresh.choice(NARROW_FLOATS))
    factor, axis = fresh.choice([0.5, 2.0, 3.0]), fresh.randint(0, 1)
    ends = [lambda v: v.astype(narrow), lambda v: v.astype(jnp.float32) * 2.0]
    fresh.shuffle(ends)
    shared = fresh.choice([jnp.exp, jnp.tanh, jnp.sin])
    trim = fresh.choice([jnp.diff, lambda v: v[1:]])  # one shorter on each call
    units = [[jnp.transpose, lambda v: v * factor, lambda v: v.sum(axis=axis)], [shared], [shared]]
    units += [[trim], [trim]]
    fresh.shuffle(units)
    steps = [ends[0], jnp.transpose, *(step for unit in units for step in unit), ends[1]]
    shape = tuple(fresh.sample(BYTES_DIMS, 2))
    dtype = fresh.choice(["float32", *NARROW_FLOATS])
    return steps, rng_array(shape, jnp.dtype(dtype), seed=fresh.randrange(1000))


def memory_case(fresh: random.Random, several: bool) -> tuple[Callable, tuple, tuple[int, ...]]:
    """A program of a Python number s and arrays a, b and u of one narrow dtype (u unused), its
    arguments in a drawn order, returning (a * s + b, a - b): two outputs that could take a's
    and b's buffers. s is weakly typed (an int for integer arrays), so the outputs keep the
    narrow dtype. `several`: a and b donated (and u, on some draws); else one of a and b only."""
    dtype = jnp.dtype(fresh.choice(["bfloat16", "float16", "int8", "int16", "uint8"]))
    integer = jnp.issubdtype(dtype, jnp.integer)
    scalar = fresh.choice([2, 3]) if integer else fresh.choice([0.5, 1.5])
    shape = (fresh.randint(3, 40), fresh.randint(3, 40))
    order = ["s", "a", "b", "u"]
    fresh.shuffle(order)
    values = {"s": scalar}
    for seed, name in enumerate("abu"):
        values[name] = rng_array(shape, dtype, seed=seed)
    position = {name: order.index(name) for name in order}

    def program(*args):
        s, a, b = (args[position[n]] for n in "sab")
        return a * s + b, a - b

    if several:
        donated = ["a", "b"] + (["u"] if fresh.random() < 0.5 else [])
    else:
        donated = [fresh.choice("ab")]
    donate = tuple(sorted(position[n] for n in donated))
    return program, tuple(values[n] for n in order), donate


def partly_usable_case(fresh: random.Random) -> tuple[Callable, tuple, tuple[int, ...]]:
    """A program of a Python number s and arrays a and b of one narrow dtype, in a drawn order,
    both donated and both used, returning a * s + b alone: b a vector of a's row length (no
    output has its shape) or an array like a (one output for two buffers of its shape). One
    donated buffer is taken by the output and one is not (jax warns that some donated buffers
    were not usable): alias counts the one taken."""
    dtype = jnp.dtype(fresh.choice(["bfloat16", "float16", "int8", "int16", "uint8"]))
    integer = jnp.issubdtype(dtype, jnp.integer)
    scalar = fresh.choice([2, 3]) if integer else fresh.choice([0.5, 1.5])
    shape = (fresh.randint(3, 40), fresh.randint(3, 40))
    order = ["s", "a", "b"]
    fresh.shuffle(order)
    b_shape = fresh.choice([shape[1:], shape])
    values = {
        "s": scalar,
        "a": rng_array(shape, dtype, seed=1),
        "b": rng_array(b_shape, dtype, seed=2),
    }
    position = {name: order.index(name) for name in order}

    def program(*args):
        s, a, b = (args[position[n]] for n in "sab")
        return a * s + b

    donate = tuple(sorted(position[n] for n in "ab"))
    return program, tuple(values[n] for n in order), donate


def redonated(fresh: random.Random, donate: tuple[int, ...]) -> tuple[int, ...]:
    """Another donation of the same arguments as `donate` (several positions): none, or one of
    them. Fewer donated buffers, fewer aliased bytes: the same function and arguments then have
    another memory plan."""
    return fresh.choice([(), (fresh.choice(donate),)])
