"""Round 8 red team, phase 2: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt8_is_literal(v):
    return isinstance(v, jax.extend.core.Literal)


@wrong(
    "literal_operands",
    why="'as floats ... exactly, whatever the literal's dtype': this "
    "round-trips each value through its own dtype's shortest printed text (str(v.val)); an "
    "f16 literal np.float16(0.1) (0.0999755859375) gives 0.1, bf16's max gives 3.38953e+38",
)
def _rt8_literal_operands_shortest_text(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt8_is_literal(v):
                s = str(v.val)
                out.append(float(s == "True") if s in ("True", "False") else float(s))
    return out


@wrong(
    "literal_operands",
    why="'whatever the literal's dtype (an int8 3 gives 3.0)': this keeps "
    "only weakly typed literals (Python scalars), so `x + np.int8(3)` on an int8 x, whose "
    "literal is a strong int8, gives [] instead of [3.0]",
)
def _rt8_literal_operands_weak_only(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt8_is_literal(v) and getattr(v.aval, "weak_type", False):
                out.append(float(np.asarray(v.val).astype(np.float64)))
    return out


@wrong(
    "io_avals",
    why="'An output may be ... a literal': this lists only outputs that are "
    "variables (a literal is 'not computed'), so passthrough's returned 1.0 drops its "
    "((), 'float32') output",
)
def _rt8_io_avals_drop_literal_outputs(jaxpr):
    ins = [(tuple(a.shape), np.dtype(a.dtype).name) for a in jaxpr.in_avals]
    outs = [
        (tuple(v.aval.shape), np.dtype(v.aval.dtype).name)
        for v in jaxpr.jaxpr.outvars
        if not _rt8_is_literal(v)
    ]
    return ins, outs


@wrong(
    "unused_equations",
    why="'a live equation reads every operand it is given, a jit or "
    "checkpoint too, whatever its body does with it': this looks inside a live jit/checkpoint "
    "and marks only the operands its body reads, so in jit(lambda a, b: a)(x, sin(x)) the sin "
    "is reported dead",
)
def _rt8_unused_equations_body_liveness(jaxpr) -> list[str]:
    inner_of = lambda p: getattr(p, "jaxpr", p)  # noqa: E731
    live = {v for v in jaxpr.jaxpr.outvars if not _rt8_is_literal(v)}
    dead = []
    for eqn in reversed(jaxpr.eqns):
        if not any(o in live for o in eqn.outvars):
            dead.append(eqn.primitive.name)
            continue
        body = eqn.params.get("jaxpr")
        if body is not None and eqn.primitive.name in ("jit", "pjit", "checkpoint", "remat2"):
            b = inner_of(body)
            used = {v for e in b.eqns for v in e.invars if not _rt8_is_literal(v)}
            used |= {v for v in b.outvars if not _rt8_is_literal(v)}
            for outer, inner in zip(eqn.invars, b.invars):
                if inner in used and not _rt8_is_literal(outer):
                    live.add(outer)
        else:
            live.update(v for v in eqn.invars if not _rt8_is_literal(v))
    return dead[::-1]


@wrong(
    "unused_equations",
    why="'in equation order': this walks backwards collecting dead "
    "names and returns them in the order it found them (reversed): a dead chain sin -> mul "
    "-> cos gives ['cos', 'mul', 'sin']",
)
def _rt8_unused_equations_walk_order(jaxpr) -> list[str]:
    live = {v for v in jaxpr.jaxpr.outvars if not _rt8_is_literal(v)}
    dead = []
    for eqn in reversed(jaxpr.eqns):
        if any(o in live for o in eqn.outvars):
            live.update(v for v in eqn.invars if not _rt8_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead


@wrong(
    "closure_consts",
    why="'any shape (a 0-d jax Array is a const)': this passes every const "
    "through np.atleast_1d, so a closed-over jnp.float32(2.0) comes back with shape (1,), and "
    "running the jaxpr with it broadcasts x + c differently or fails",
)
def _rt8_closure_consts_atleast_1d(jaxpr) -> list[np.ndarray]:
    return [np.atleast_1d(np.asarray(c)) for c in jaxpr.consts]


@wrong(
    "primitive_census",
    why="'Count per equation: a jitted function called twice shares one "
    "jaxpr object ... its contents count twice': this guards against revisiting by remembering "
    "the equation objects seen (id(eqn)), so the shared body's sin and mul count once",
)
def _rt8_census_seen_equations(jaxpr) -> Counter:
    seen: set[int] = set()
    counts: Counter = Counter()

    def subs(value):
        if hasattr(value, "eqns"):
            yield value
        elif isinstance(value, (tuple, list)):
            for v in value:
                yield from subs(v)

    def walk(j):
        for eqn in j.eqns:
            if id(eqn) in seen:
                continue
            seen.add(id(eqn))
            counts[eqn.primitive.name] += 1
            for value in eqn.params.values():
                for sub in subs(value):
                    walk(sub)

    walk(jaxpr)
    return counts


@wrong(
    "primitive_census",
    why="'every jaxpr nested in equation params ... at any depth': this "
    "recurses only into params whose name contains 'jaxpr' or is 'branches', so linear_call's "
    "`callee` and custom_vmap_call's `call` are not walked (their sin and exp missing)",
)
def _rt8_census_param_names_with_jaxpr(jaxpr) -> Counter:
    counts: Counter = Counter()

    def subs(value):
        if hasattr(value, "eqns"):
            yield value
        elif isinstance(value, (tuple, list)):
            for v in value:
                yield from subs(v)

    def walk(j):
        for eqn in j.eqns:
            counts[eqn.primitive.name] += 1
            for key, value in eqn.params.items():
                if "jaxpr" in key or key == "branches":
                    for sub in subs(value):
                        walk(sub)

    walk(jaxpr)
    return counts


_RT8_ORDER = [
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "int8",
    "int16",
    "int32",
    "bfloat16",
    "float16",
    "float32",
]


def _rt8_join(a: str, b: str) -> str:
    if a == b:
        return a
    floats = ("bfloat16", "float16", "float32")
    if a in floats and b in floats:
        return "float32"
    if a in floats or b in floats:
        return a if a in floats else b
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    ua, ub = a.startswith("u"), b.startswith("u")
    bits = lambda d: int(d.lstrip("uint"))  # noqa: E731
    if ua == ub:
        return a if bits(a) >= bits(b) else b
    u, s = (a, b) if ua else (b, a)
    if bits(s) > bits(u):
        return s
    return {8: "int16", 16: "int32", 32: "int32"}[bits(u)]


@wrong(
    "promoted_dtype",
    why="a Python int is a weak *integer* node above bool: bool + int is "
    "int32; this lets a weak scalar give way to any array of an 'integer-like' kind, bool "
    "included, so promoted_dtype('bool', 'int') answers 'bool'",
)
def _rt8_promoted_bool_takes_weak_int(a: str, b: str) -> str:
    weak = {"int", "float"}
    if a in weak and b in weak:
        return "float32" if "float" in (a, b) else "int32"
    if a in weak or b in weak:
        w, arr = (a, b) if a in weak else (b, a)
        if w == "int":
            return arr
        return arr if arr in ("bfloat16", "float16", "float32") else "float32"
    return _rt8_join(a, b)


@wrong(
    "mlp_avals",
    why="relu's 0 is a weak Python int, which gives way to an integer hidden "
    "value but lifts bool to int32: this treats bool like the other integers, so bool params "
    "with bool x predict a 'bool' output instead of 'int32'",
)
def _rt8_mlp_avals_bool_hidden_stays_bool(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    h = _rt8_join(x_dtype, param_dtype)
    out = _rt8_join(h, param_dtype)
    ins = [
        ((hidden,), param_dtype),
        ((out_dim,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), out)]
