"""Programs phase 8's census tests draw afresh: ops nested as deep as a program likes.

A drawn program wraps a leaf (an op that keeps its own body in a region, or several functions)
in five to seven control-flow ops (cond, switch, while, scan), with a nested jax.jit somewhere
between them and a sharding constraint around the whole when drawn: a census that stops at a
fixed depth, at the ops it knows hold regions or at the dialects it has met does not match
MLIR's walk of it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from katas.phase8.programs import F

Body = Callable[[jax.Array], jax.Array]  # f32[8,4] -> f32[8,4], as every wrapper needs


@cache
def one_device_mesh() -> jax.sharding.Mesh:
    """A mesh of one CPU device whose axis `x` the compiler places (Auto)."""
    return jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def _psum(v: jax.Array) -> jax.Array:
    mesh = one_device_mesh()
    return jax.shard_map(lambda u: lax.psum(u, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())(v)


def constrained(body: Body) -> Body:
    """`body` under a sharding constraint: the module gains ops of the sdy dialect, one of them
    (the mesh) next to the functions."""
    return lambda v: lax.with_sharding_constraint(body(v), NamedSharding(one_device_mesh(), P("x")))


LEAVES: dict[str, Body] = {
    "reduce_window": lambda v: lax.reduce_window(v, 0.0, lax.add, (2, 2), (1, 1), "SAME"),
    "sum": lambda v: v + v.sum(),
    "sort": lambda v: jnp.sort(v, axis=0),
    "cumsum": lambda v: jnp.cumsum(v, axis=0),
    "psum under shard_map": _psum,
}


def _cond(inner: Body) -> Body:
    return lambda v: lax.cond(v.sum() > 0, inner, jnp.cos, v)


def _switch(inner: Body) -> Body:
    return lambda v: lax.switch((v[0, 0] > 0).astype(jnp.int32), [jnp.sin, inner, jnp.tanh], v)


def _while(inner: Body) -> Body:
    return lambda v: lax.while_loop(lambda c: c.sum() < 100.0, inner, v)


def _scan(inner: Body) -> Body:
    return lambda v: lax.scan(lambda c, _: (inner(c), None), v, length=2)[0]


WRAPPERS: dict[str, Callable[[Body], Body]] = {
    "cond": _cond,
    "switch": _switch,
    "while": _while,
    "scan": _scan,
    "jit": jax.jit,
}
_REGIONS = ("cond", "switch", "while", "scan")


def nested_program(rng: random.Random) -> tuple[Body, tuple, str]:
    """(function, argument specs, what it is, innermost first) of a freshly drawn program."""
    leaf = rng.choice(sorted(LEAVES))
    wrappers = [rng.choice(_REGIONS) for _ in range(rng.randint(5, 7))]
    wrappers.insert(rng.randrange(len(wrappers) + 1), "jit")
    body = LEAVES[leaf]
    for name in wrappers:
        body = WRAPPERS[name](body)
    what = " in ".join([leaf, *wrappers])
    if rng.random() < 0.5:
        body, what = constrained(body), f"{what}, sharding-constrained"
    return body, (F,), what


# More census programs, each with ops outside the functions' bodies or bodies in ops that the
# lesson does not name: name -> (function, argument specs)
MORE_CENSUS_PROGRAMS = {
    "sharding_constraint": (constrained(jnp.sin), (F,)),
    "reduce_window": (LEAVES["reduce_window"], (F,)),
    "psum": (_psum, (F,)),
}
