"""Phase 1's facts read by walking a jaxpr (into nested jits), for the tests of init_params,
abs_where and abs_cond: which primitives make the key of each random draw, which keys are used
(split or drawn from) more than once, whether one select or
cond decides the result (evaluated with its two sides swapped), whether a select's predicate
compares x, and what a cond's predicate computes beyond comparing x.

Each function takes a jaxpr the test traced, never the kata's answer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Literal

_COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})

# what a key becomes without being split or drawn from: picked out of a split, reshaped, wrapped
KEY_MOVES = frozenset(
    {
        "unstack", "slice", "squeeze", "reshape", "dynamic_slice", "gather", "concatenate",
        "broadcast_in_dim", "copy", "copy_p", "transpose", "random_wrap", "random_unwrap",
    }
)  # fmt: skip


def key_derivations(jaxpr, seen: list) -> list[tuple[tuple[int, ...], frozenset[str]]]:
    """For each random draw (random_bits) in jaxpr, into nested jits: its shape and the
    primitives other than random_split and KEY_MOVES between the jaxpr's inputs and its key.
    seen holds, per input of jaxpr, that set (None: not made from the key). What a nested jit
    returns carries what made it inside (a seed drawn from the key by jax.random.randint, itself
    a jit, and turned into a new key, is made from the key by random_bits and random_seed)."""
    return _derive(jaxpr, seen)[0]


def _derive(jaxpr, seen: list) -> tuple[list, list]:
    """key_derivations' draws, and the same set for each of jaxpr's outputs."""
    made: dict = {}
    made.update(zip(jaxpr.jaxpr.invars, seen, strict=True))
    draws = []
    for eqn in jaxpr.jaxpr.eqns:
        ins = [made.get(v) for v in eqn.invars if not isinstance(v, Literal)]
        name = eqn.primitive.name
        if name in ("jit", "pjit"):
            inner = eqn.params["jaxpr"]
            inner_seen = [made.get(v) if not isinstance(v, Literal) else None for v in eqn.invars]
            inner_draws, outs = _derive(inner, inner_seen)
            draws += inner_draws
            made.update({v: o for v, o in zip(eqn.outvars, outs, strict=True) if o is not None})
            continue
        if name == "random_bits" and ins and ins[0] is not None:
            draws.append((tuple(eqn.params["shape"]), ins[0]))
        if any(i is not None for i in ins):
            kept = frozenset().union(*(i for i in ins if i is not None))
            extra = {name} if name not in KEY_MOVES | {"random_split"} else set()
            made.update(dict.fromkeys(eqn.outvars, kept | extra))
    outs = [None if isinstance(v, Literal) else made.get(v) for v in jaxpr.jaxpr.outvars]
    return draws, outs


# what takes a key and uses it up: splitting it, drawing bits from it, folding data into it
KEY_USES = frozenset({"random_split", "random_bits", "random_fold_in"})


def _is_key(var) -> bool:
    dtype = getattr(var.aval, "dtype", None)
    return dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)


def key_uses(jaxpr, args) -> list[tuple[str, bytes]]:
    """Every use of a key in jaxpr (into nested jits), in order: the primitive (KEY_USES) and
    the key's data, one entry per key of a key array. Only the key's path is evaluated (its
    splits and KEY_MOVES, on args eagerly). A key whose data appears twice is used twice, however
    each copy was picked out of a split (index, slice, unstack)."""
    uses: list[tuple[str, bytes]] = []
    env: dict = dict(zip(jaxpr.jaxpr.invars, args, strict=True))
    env.update(zip(jaxpr.jaxpr.constvars, jaxpr.consts, strict=True))
    _walk_keys(jaxpr.jaxpr, env, uses)
    return uses


def _walk_keys(inner, env: dict, uses: list) -> None:
    def known(var) -> bool:
        return isinstance(var, Literal) or var in env

    def read(var):
        return var.val if isinstance(var, Literal) else env[var]

    for eqn in inner.eqns:
        name = eqn.primitive.name
        if name in ("jit", "pjit"):
            sub = eqn.params["jaxpr"]
            sub_env = {
                v: read(o) for v, o in zip(sub.jaxpr.invars, eqn.invars, strict=True) if known(o)
            }
            sub_env.update(zip(sub.jaxpr.constvars, sub.consts, strict=True))
            _walk_keys(sub.jaxpr, sub_env, uses)
            returned = zip(sub.jaxpr.outvars, eqn.outvars, strict=True)
            env.update(
                {o: sub_env[v] for v, o in returned if not isinstance(v, Literal) and v in sub_env}
            )
            continue
        keyed = [v for v in eqn.invars if not isinstance(v, Literal) and _is_key(v) and v in env]
        if not keyed:
            continue
        if name in KEY_USES:
            data = np.asarray(jax.random.key_data(read(keyed[0])))
            uses += [(name, row.tobytes()) for row in data.reshape(-1, data.shape[-1])]
        if name == "random_bits" or not all(known(v) for v in eqn.invars):
            continue  # bits are not a key; a key made from unknown data is not followed
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs, strict=True))


def _run_swapping(
    jaxpr, args, chooser: str, swap: int | None, seen: list[int], cases: list | None = None
):
    """Evaluate jaxpr on args eagerly, with the two sides of its swap-th `chooser` (select_n's
    cases or cond's branches; counted in order, into nested jits) swapped; seen[0] counts the
    choosers met; `cases`, if given, collects the values each select_n picks between."""
    env: dict = {}

    def read(var):
        return var.val if isinstance(var, Literal) else env[var]

    inner = jaxpr.jaxpr
    env.update(zip(inner.constvars, jaxpr.consts, strict=True))
    env.update(zip(inner.invars, args, strict=True))
    for eqn in inner.eqns:
        values, params = [read(v) for v in eqn.invars], eqn.params
        if eqn.primitive.name in ("jit", "pjit"):
            outs = _run_swapping(params["jaxpr"], values, chooser, swap, seen, cases)
        else:
            if eqn.primitive.name == "select_n" and cases is not None:
                cases.append(values[1:])
            if eqn.primitive.name == chooser:
                if seen[0] == swap and chooser == "select_n":
                    values = [values[0], *reversed(values[1:])]
                elif seen[0] == swap:
                    params = {**params, "branches": tuple(reversed(params["branches"]))}
                seen[0] += 1
            outs = eqn.primitive.bind(*values, **params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs, strict=True))
    return [read(v) for v in inner.outvars]


def deciding(jaxpr, args, x, chooser: str) -> list[int]:
    """The `chooser`s of jaxpr (counted in order, into nested jits) that decide the result: with
    the two sides of one swapped, every nonzero element of |x| comes out otherwise (x and -x
    swap places)."""
    seen = [0]
    (base,) = _run_swapping(jaxpr, args, chooser, None, seen)
    base, nonzero = np.asarray(base), np.asarray(x) != 0
    found = []
    for index in range(seen[0]):
        (swapped,) = _run_swapping(jaxpr, args, chooser, index, [0])
        if np.all(np.asarray(swapped)[nonzero] != base[nonzero]):
            found.append(index)
    return found


def decides(jaxpr, args, x, chooser: str) -> bool:
    """Whether one `chooser` of jaxpr decides the result (see :func:`deciding`)."""
    return bool(deciding(jaxpr, args, x, chooser))


def compares_x(jaxpr, args, x) -> list[bool]:
    """For each select_n of jaxpr (counted in order, into nested jits, as :func:`deciding`
    counts them): whether its predicate is computed by a comparison (lt, le, gt, ge, eq, ne)
    of x itself with zero, evaluated on args: one operand, computed from x, holds x's elements
    in x's dtype and shape, the other zeros. x is jaxpr's input when args are given, else the
    constant closed over that equals x (same shape, dtype and elements). A predicate that is a
    constant (a broadcast False), computed from x's shape alone, or a comparison of something
    else computed from x (its sign bit shifted down or masked, a bitcast, a conversion to
    another dtype) does not compare x."""
    inner, x = jaxpr.jaxpr, np.asarray(x)
    env: dict = dict(zip(inner.constvars, jaxpr.consts, strict=True))
    if args:
        sources = set(inner.invars[:1])
        env.update(zip(inner.invars, args, strict=True))
    else:
        sources = {
            v
            for v, c in zip(inner.constvars, jaxpr.consts, strict=True)
            if np.shape(c) == x.shape
            and np.asarray(c).dtype == x.dtype
            and np.array_equal(np.asarray(c), x, equal_nan=x.dtype.kind == "f")
        }
    found: list[bool] = []
    _taint(inner, env, dict.fromkeys(sources, "x"), found, x)
    return found


def _x_against_zero(values: list, x: np.ndarray) -> bool:
    """Whether two operands are x itself (x's dtype, shape and elements) and zeros."""
    if len(values) != 2:
        return False
    for first, second in (values, values[::-1]):
        first, second = np.asarray(first), np.asarray(second)
        if first.dtype != x.dtype or first.shape != x.shape:
            continue
        same = np.array_equal(first.astype(np.float64), x.astype(np.float64), equal_nan=True)
        if same and np.all(second.astype(np.float64) == 0):
            return True
    return False


def _taint(inner, env: dict, marks: dict, found: list[bool], x: np.ndarray) -> list:
    """Evaluate inner on env (its inputs and constants) eagerly, marking each var "x"
    (computed from x) or "compared" (computed by a comparison of x itself with zero), in
    place; append, per select_n, whether its predicate is "compared"; return the outputs."""

    def mark(var) -> str | None:
        return None if isinstance(var, Literal) else marks.get(var)

    def read(var):
        return var.val if isinstance(var, Literal) else env[var]

    for eqn in inner.eqns:
        name, got = eqn.primitive.name, [mark(v) for v in eqn.invars]
        values = [read(v) for v in eqn.invars]
        if name in ("jit", "pjit"):
            sub = eqn.params["jaxpr"]
            sub_env = dict(zip(sub.jaxpr.constvars, sub.consts, strict=True))
            sub_env.update(zip(sub.jaxpr.invars, values, strict=True))
            sub_marks = {v: m for v, m in zip(sub.jaxpr.invars, got, strict=True) if m}
            outs = _taint(sub.jaxpr, sub_env, sub_marks, found, x)
            for v, o in zip(sub.jaxpr.outvars, eqn.outvars, strict=True):
                if mark_out := (None if isinstance(v, Literal) else sub_marks.get(v)):
                    marks[o] = mark_out
            env.update(zip(eqn.outvars, outs, strict=True))
            continue
        if name == "select_n":
            found.append(got[0] == "compared")
        itself = name in _COMPARISONS and "x" in got and _x_against_zero(values, x)
        if "compared" in got or itself:
            marks.update(dict.fromkeys(eqn.outvars, "compared"))
        elif "x" in got:
            marks.update(dict.fromkeys(eqn.outvars, "x"))
        outs = eqn.primitive.bind(*values, **eqn.params)
        env.update(
            zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs], strict=True)
        )
    return [read(v) for v in inner.outvars]


def picks_x_or_minus_x(jaxpr, args, x) -> bool:
    """Whether some select_n of jaxpr, evaluated on args, picks between x and -x themselves:
    its two cases hold, element by element, x and -x (negated in x's dtype, so an unsigned or
    a most negative int wraps around), in either order. A select between other values (a sign
    +1/-1 that a multiply applies afterwards, a 0) does not pick x or -x."""
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        minus = np.negative(x)
    cases: list = []
    _run_swapping(jaxpr, args, "select_n", None, [0], cases)
    for pair in cases:
        if len(pair) != 2:
            continue
        first, second = (np.asarray(c) for c in pair)
        if first.shape != x.shape or second.shape != x.shape:
            continue
        straight = (first == x) & (second == minus)
        crossed = (first == minus) & (second == x)
        if np.all(straight | crossed):
            return True
    return False


def outside_the_cond(jaxpr) -> list[str]:
    """Top-level primitives that compute more than the cond's predicate: those after the cond,
    those before it that the predicate does not read, and those the predicate reads whose
    results also go into the cond's operands or the outputs."""
    eqns = jaxpr.jaxpr.eqns
    at = [i for i, eqn in enumerate(eqns) if eqn.primitive.name == "cond"]
    if len(at) != 1:
        return []  # the census check names a missing or extra cond
    cond = eqns[at[0]]
    read = {id(cond.invars[0])}
    predicate = []
    for eqn in reversed(eqns[: at[0]]):  # what the predicate is computed from
        if any(id(v) in read for v in eqn.outvars):
            predicate.append(eqn)
            read |= {id(v) for v in eqn.invars}
    shared = {id(v) for v in [*cond.invars[1:], *jaxpr.jaxpr.outvars]}
    outside = [
        eqn.primitive.name
        for eqn in eqns
        if eqn is not cond
        and (all(eqn is not p for p in predicate) or any(id(v) in shared for v in eqn.outvars))
    ]
    # the predicate reads x as it is: x (an input, or the concrete array closed over) and what is
    # computed from it go into comparisons only (a comparison's bool may then be converted, as
    # cond and switch do); x < 0.0 on an int32 x converts x to float32 first
    values = {id(v) for v in [*jaxpr.jaxpr.invars, *jaxpr.jaxpr.constvars]}
    for eqn in eqns[: at[0]]:
        if any(id(v) in values for v in eqn.invars) and eqn.primitive.name not in _COMPARISONS:
            outside.append(f"{eqn.primitive.name} of x for the predicate")
            values |= {id(v) for v in eqn.outvars}
    return outside
