"""Round 12 red team, phase 2: wrong answers of kinds earlier rounds did not write.

jit treated as a transparent wrapper in the census, effects treated as reads, a multi-result
equation judged by its first result, the lowered text printed with debug locations, a
"capacity" promotion rule (a wide int does not fit a half float), literals filtered by
numbers.Number, and a last-equation guess for the jaxpr's outputs.
"""

from __future__ import annotations

import numbers
from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt12_is_literal(v):
    return isinstance(v, jax.extend.core.Literal)


def _rt12_nested(value):
    if value is None:
        return []
    if hasattr(value, "eqns"):
        return [value]
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        return [value.jaxpr]
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_rt12_nested(v))
        return out
    return []


def _rt12_eqns(jaxpr):
    return jaxpr.eqns if hasattr(jaxpr, "eqns") else jaxpr.jaxpr.eqns


@wrong(
    "primitive_census",
    why="'The nesting equation itself counts too': this treats jit (pjit) as a transparent "
    "wrapper, recursing into it without counting it; jit in jit in jit gives no 'jit' key "
    "instead of jit: 3, one jit called twice gives no jit: 2",
)
def _rt12_primitive_census_jit_transparent(jaxpr) -> Counter:
    counts: Counter = Counter()
    for eqn in _rt12_eqns(jaxpr):
        if eqn.primitive.name not in ("jit", "pjit"):
            counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            for sub in _rt12_nested(value):
                counts += _rt12_primitive_census_jit_transparent(sub)
    return counts


@wrong(
    "primitive_census",
    why="'and others, at any depth' / 'jaxprs under other param names': this recurses only "
    "into params whose name ends in 'jaxpr' or is 'branches'/'jaxprs'; linear_call's `callee` "
    "and custom_vmap_call's `call` are missed (sin, exp and their mul are not counted)",
)
def _rt12_primitive_census_param_name_suffix(jaxpr) -> Counter:
    counts: Counter = Counter()
    for eqn in _rt12_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        for name, value in eqn.params.items():
            if name.endswith("jaxpr") or name in ("branches", "jaxprs"):
                for sub in _rt12_nested(value):
                    counts += _rt12_primitive_census_param_name_suffix(sub)
    return counts


@wrong(
    "unused_equations",
    why="'An effect is not a read': this keeps every equation with effects alive (as jax's own "
    "DCE does), so a jax.debug.print and an unread io_callback, and what only they read, are "
    "not reported; f(x)=debug.print(sin(x)); x+1 should give ['sin', 'debug_print'], gives []",
)
def _rt12_unused_equations_effects_live(jaxpr) -> list[str]:
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    live = {v for v in inner.outvars if not _rt12_is_literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if eqn.effects or any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not _rt12_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "unused_equations",
    why="'An equation with several results is live when any of them is read': this looks only "
    "at the first result; jit(lambda v: (exp(v), log(v)))(x)[1] + 1 reports the live jit (and "
    "nothing else needed) as dead: ['jit'] instead of []",
)
def _rt12_unused_equations_first_result(jaxpr) -> list[str]:
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    live = {v for v in inner.outvars if not _rt12_is_literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if eqn.outvars and eqn.outvars[0] in live:
            live.update(v for v in eqn.invars if not _rt12_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "stablehlo_of",
    why="'Printed as the lowered stage prints by default: no debug locations': this asks "
    "as_text for debug_info=True, so the text carries loc(...) attributes and #loc lines; "
    "for f(x)=x*2, x=1.0 the module text differs from the default print",
)
def _rt12_stablehlo_of_with_locations(f, *args) -> str:
    return jax.jit(f).lower(*args).as_text(debug_info=True)


_rt12_EDGES = {
    "bool": ["int"],
    "int": ["uint8", "int8", "float"],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["int64"],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": ["float"],
    "float": ["bfloat16", "float16"],
    "bfloat16": ["float32"],
    "float16": ["float32"],
    "float32": [],
}
_rt12_RENAME = {"int64": "int32", "int": "int32", "float": "float32"}
_rt12_WIDE_INTS = {"int16", "uint16", "int32", "uint32"}


def _rt12_ups(node):
    seen, todo = {node}, [node]
    while todo:
        for n in _rt12_EDGES[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _rt12_capacity_join(a, b):
    # the learner's "capacity" exception: a half float cannot hold a 16/32-bit int exactly,
    # so the sum goes to float32 (true of NumPy, not of JAX's lattice)
    for x, y in ((a, b), (b, a)):
        if x in _rt12_WIDE_INTS and y in ("float16", "bfloat16"):
            return "float32"
    common = _rt12_ups(a) & _rt12_ups(b)
    lowest = [n for n in common if all(m in _rt12_ups(n) for m in common)][0]
    return _rt12_RENAME.get(lowest, lowest)


@wrong(
    "promoted_dtype",
    why="JAX's lattice puts every integer below every float: int32 + bfloat16 is bfloat16 "
    "(README). This answers float32 for a 16/32-bit int meeting float16/bfloat16 (NumPy's "
    "'capacity' thinking): promoted_dtype('int32', 'bfloat16') gives float32",
)
def _rt12_promoted_dtype_capacity(a: str, b: str) -> str:
    return _rt12_capacity_join(a, b)


@wrong(
    "mlp_avals",
    why="the MLP's dtype follows JAX's lattice: int16 x with float16 params gives float16 "
    "outputs; this uses the 'capacity' rule (a 16/32-bit int with a half float goes to "
    "float32): mlp_avals(2,3,4,5,'float16','int16') outputs float32 instead of float16",
)
def _rt12_mlp_avals_capacity(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    inputs = [
        ((hidden,), param_dtype),  # b1
        ((out_dim,), param_dtype),  # b2
        ((in_dim, hidden), param_dtype),  # w1
        ((hidden, out_dim), param_dtype),  # w2
        ((batch, in_dim), x_dtype),
    ]
    h = _rt12_capacity_join(x_dtype, param_dtype)
    h = _rt12_capacity_join(h, "int")  # relu's weak 0
    out = _rt12_capacity_join(h, param_dtype)
    return inputs, [((batch, out_dim), out)]


@wrong(
    "literal_operands",
    why="'whatever the literal's dtype': this keeps only literals whose value is a "
    "numbers.Number; NumPy-typed literals (jax's TypedNdArray, e.g. x | np.bool_(False), "
    "x * np.int8(3), np.float16 literals) are skipped: x | np.bool_(False) gives [] not [0.0]",
)
def _rt12_literal_operands_numbers_number(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in _rt12_eqns(jaxpr):
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt12_is_literal(v) and isinstance(v.val, numbers.Number):
                out.append(float(v.val))
    return out


@wrong(
    "io_avals",
    why="outputs are the jaxpr's outvars in order; this takes the avals of the last "
    "equation's results when the jaxpr has equations (it assumes the last equation computes "
    "the result): f(x) = x + 1 with a dead jnp.sin(x).astype(int32) traced after it, x f32[3], "
    "gives outputs [((3,), 'int32')] instead of [((3,), 'float32')]",
)
def _rt12_io_avals_last_equation(jaxpr):
    def fmt(a):
        return (tuple(int(d) for d in a.shape), np.dtype(a.dtype).name)

    inputs = [fmt(a) for a in jaxpr.in_avals]
    eqns = _rt12_eqns(jaxpr)
    if eqns and len(eqns[-1].outvars) == len(jaxpr.out_avals):
        outputs = [fmt(v.aval) for v in eqns[-1].outvars]
    else:
        outputs = [fmt(a) for a in jaxpr.out_avals]
    return inputs, outputs


@wrong(
    "closure_consts",
    why="'Plain NumPy arrays (np.ndarray), each with its own dtype ... (a 0-d jax Array is a "
    "const)': this turns 0-d consts into Python scalars with .item(); a closed-over "
    "jnp.asarray(2.0, bfloat16) comes back as the float 2.0, not a 0-d bfloat16 ndarray",
)
def _rt12_closure_consts_item_scalars(jaxpr) -> list[np.ndarray]:
    out = []
    for c in jaxpr.consts:
        a = np.asarray(c)
        out.append(a.item() if a.ndim == 0 else a)
    return out
