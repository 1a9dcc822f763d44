"""Where iree_verdict's tests put a drawn function: at the top level, or inside each kind of
called jaxpr the contract names (jit, checkpoint, a cond's branches, the first one or a later
one, a while's body or its condition, a scan's body, custom_jvp and custom_vjp, and nested),
so that the operation that decides the verdict sits in every kind of sub-jaxpr an answer has
to walk into.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

PLACEMENTS = (
    "plain",
    "jit",
    "checkpoint",
    "cond",
    "later branch",
    "while",
    "while condition",
    "scan",
    "custom_jvp",
    "custom_vjp",
    "nested",
)
# where a function with a PRNG key among its results or arguments may go (no zeros of a key
# type to start a loop or fill another branch with)
KEYED_PLACEMENTS = ("plain", "jit", "checkpoint", "custom_jvp", "custom_vjp")


def _zeros_like_result(fn, args):
    shapes = jax.eval_shape(fn, *args)
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)


def _in_later_branch(fn, at: int):
    """fn as branch ``at`` (1 or 2: the jaxpr's branches[at]) of three switch branches, the
    others returning zeros."""

    def in_switch(*args):
        def zeros(a):
            return _zeros_like_result(fn, a)

        branches = [zeros, zeros, zeros]
        branches[at] = lambda a: fn(*a)
        return jax.lax.switch(at, branches, args)

    return in_switch


def _in_while_condition(fn):
    """fn called in a while's condition, every result read there (so none is dead code)."""

    def in_condition(*args):
        def condition(count):
            unordered = [jnp.any(leaf != leaf) for leaf in jax.tree.leaves(fn(*args))]
            return functools.reduce(jnp.logical_and, [count < 1, *(~u for u in unordered)])

        return jax.lax.while_loop(condition, lambda count: count + 1, 0)

    return in_condition


def _with_custom_jvp(fn):
    wrapped = jax.custom_jvp(fn)
    wrapped.defjvp(lambda primals, tangents: jax.jvp(fn, primals, tangents))
    return wrapped


def _with_custom_vjp(fn):
    wrapped = jax.custom_vjp(fn)
    wrapped.defvjp(
        lambda *args: (fn(*args), args),
        lambda args, _: tuple(jax.tree.map(jnp.zeros_like, args)),
    )
    return wrapped


def placed(fn, how: str):
    """fn, called where ``how`` (one of PLACEMENTS) says."""
    if how == "jit":
        return jax.jit(fn)
    if how == "checkpoint":
        return jax.checkpoint(fn)
    if how == "cond":

        def in_cond(*args):
            return jax.lax.cond(True, lambda a: fn(*a), lambda a: fn(*a), args)

        return in_cond
    if how == "later branch":
        return _in_later_branch(fn, 1)
    if how == "while":

        def in_while(*args):
            start = _zeros_like_result(fn, args)
            _, out = jax.lax.while_loop(
                lambda carry: carry[0] < 1, lambda carry: (carry[0] + 1, fn(*args)), (0, start)
            )
            return out

        return in_while
    if how == "while condition":
        return _in_while_condition(fn)
    if how == "scan":

        def in_scan(*args):
            _, out = jax.lax.scan(lambda carry, _: (carry, fn(*args)), 0, None, length=2)
            return out

        return in_scan
    if how == "custom_jvp":
        return _with_custom_jvp(fn)
    if how == "custom_vjp":
        return _with_custom_vjp(fn)
    if how == "nested":  # a jit in the last of three branches, inside a scan's body
        return placed(_in_later_branch(jax.jit(fn), 2), "scan")
    return fn
