"""Programs phase 2's census test draws fresh for every run (from a ``random.Random``):
higher-order constructs nested in a drawn order, 2 to 7 deep, around leaves that may hold a
jaxpr of their own; xla_inspect's census of each program is the answer.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap

F32 = np.float32


# ------------------------------------------------------------------------------ primitive_census


def _wrap_jit(f):
    return jax.jit(f)


def _wrap_remat(f):
    return jax.checkpoint(f)


def _wrap_cond(f):
    # both branches hold a mul: the census adds what each branch contains (only one runs)
    return lambda x: lax.cond(x.sum() > 0, lambda v: f(v) * 2.0, lambda v: v * 3.0 - 1.0, x)


def _wrap_switch(f):
    # one function listed twice: JAX traces it once, so two branches hold the same jaxpr
    # object, and the census still adds what each branch contains
    def twice(v):
        return f(v) * 2.0

    return lambda x: lax.switch((x.sum() > 0).astype(jnp.int32), [twice, jnp.negative, twice], x)


def _wrap_while(f):
    return lambda x: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, f(c[1])), (0, x))[1]


def _wrap_scan(f):
    return lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=2)[0]


def _wrap_linear_call(f):
    # linear in v: f's equations sit in the `callee` param, the transpose is a function
    return lambda x: jax.custom_derivatives.linear_call(
        lambda c, v: v * c + f(c) * 0.0, lambda c, t: t * c, x, x
    )


def _wrap_custom_vmap(f):
    g = custom_vmap(f)
    g.def_vmap(lambda axis_size, in_batched, x: (f(x), in_batched[0]))
    return g


def _wrap_custom_jvp(f):
    g = jax.custom_jvp(f)
    g.defjvp(lambda primals, tangents: (f(*primals), tangents[0]))
    return g


def _wrap_linear_solve(f):
    return lambda x: lax.custom_linear_solve(
        lambda v: v * 2.0, f(x), solve=lambda m, r: r / 2.0, symmetric=True
    )


def _wrap_linear_solve_transposable(f):
    # not symmetric, no transpose_solve: None stands beside jaxprs in the `jaxprs` tuple
    return lambda x: lax.custom_linear_solve(lambda v: v * 2.0, f(x), solve=lambda m, r: r / 2.0)


# Higher-order constructs, each keeping its body's jaxpr in some param (jaxpr, branches,
# body_jaxpr, callee, call, call_jaxpr, jaxprs), one jaxpr object there twice in a switch: the
# fresh census nests a few of them. Leaves
# may hold a jaxpr too: scatter-add's combiner in `update_jaxpr`, a reduce's in `jaxpr`.
WRAPPERS = {
    "jit": _wrap_jit,
    "checkpoint": _wrap_remat,
    "cond": _wrap_cond,
    "switch (a branch twice)": _wrap_switch,
    "while_loop": _wrap_while,
    "scan": _wrap_scan,
    "linear_call": _wrap_linear_call,
    "custom_vmap": _wrap_custom_vmap,
    "custom_jvp": _wrap_custom_jvp,
    "custom_linear_solve": _wrap_linear_solve,
    "custom_linear_solve (not symmetric)": _wrap_linear_solve_transposable,
}
LEAVES = {
    "sin": jnp.sin,
    "exp": jnp.exp,
    "tanh": jnp.tanh,
    "log1p": jnp.log1p,
    "cos": jnp.cos,
    "scatter-add": lambda v: v.at[1].add(jnp.sin(v[0])),
    "reduce": lambda v: v + lax.reduce(v, F32(0.0), lambda a, b: a + jnp.cos(b), (0,)),
}


def fresh_nestings(rng) -> dict[str, Callable]:
    """One program per higher-order construct, from a random.Random: the constructs in a drawn
    cyclic order, program i nesting construct i around construct i + 1 (and i + 2 in every
    other program) around a leaf, so that every construct is met both outermost and nested in
    another, and every other program nests three deep; then one program nesting 5 to 7 drawn
    constructs that hold the function they wrap (not custom_linear_solve, whose right-hand
    side is computed outside it)."""
    order, leaves = sorted(WRAPPERS), sorted(LEAVES)
    rng.shuffle(order)
    rng.shuffle(leaves)
    nesting = [n for n in order if not n.startswith("custom_linear_solve")]  # b is outside
    chains = [
        [order[(i + k) % len(order)] for k in range(3 if i % 2 else 2)] for i in range(len(order))
    ]
    chains.append([rng.choice(nesting) for _ in range(rng.randint(5, 7))])
    programs = {}
    for i, names in enumerate(chains):
        leaf = leaves[i % len(leaves)]  # every leaf in every run
        f = LEAVES[leaf]
        for name in reversed(names):
            f = WRAPPERS[name](f)
        programs[f"{' of '.join(names)} of {leaf}"] = f
    return programs
