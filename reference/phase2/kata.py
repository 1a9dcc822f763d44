"""Phase 2 reference: reading jaxprs."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

Avals = list[tuple[tuple[int, ...], str]]  # (shape, dtype name) per input or output


def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mlp_jaxpr(params: dict, x) -> jax.extend.core.ClosedJaxpr:  # pyright: ignore[reportPrivateImportUsage]
    # make_jaxpr traces with abstract values and returns the closed jaxpr.
    return jax.make_jaxpr(mlp)(params, x)


def _sub_jaxprs(value):
    # Parameters hold nested jaxprs directly (jit, custom_jvp_call, scan, while) or in tuples
    # (cond's branches); closed ones carry an inner .jaxpr with the equations.
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _sub_jaxprs(item)


def primitive_census(jaxpr) -> Counter:
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    census: Counter = Counter()
    for eqn in inner.eqns:
        census[eqn.primitive.name] += 1
        for param in eqn.params.values():
            for sub in _sub_jaxprs(param):
                census += primitive_census(sub)
    return census


def io_avals(jaxpr) -> tuple[Avals, Avals]:
    # Abstract values: shape and dtype, no data.
    def describe(avals):
        return [(tuple(a.shape), str(a.dtype)) for a in avals]

    return describe(jaxpr.in_avals), describe(jaxpr.out_avals)


def literal_operands(jaxpr, primitive: str) -> list[float]:
    # Literals are constants written inline in an equation (e.g. `mul a 6.0:f32[]`).
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    return [
        float(np.asarray(v.val))
        for eqn in inner.eqns
        if eqn.primitive.name == primitive
        for v in eqn.invars
        if hasattr(v, "val")
    ]


def unused_equations(jaxpr) -> list[str]:
    # An equation is dead when no later equation and no output reads what it wrote;
    # the printer shows its result as `_`.
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    used = {id(v) for v in inner.outvars}
    dead = []
    for eqn in reversed(inner.eqns):
        if not any(id(v) in used for v in eqn.outvars):
            dead.append(eqn.primitive.name)
            continue
        used.update(id(v) for v in eqn.invars if not hasattr(v, "val"))
    return list(reversed(dead))


def stablehlo_of(f, *args) -> str:
    # Lowering turns the jaxpr into StableHLO; dead equations are dropped on the way.
    return jax.jit(f).lower(*args).as_text()


def closure_consts(jaxpr) -> list[np.ndarray]:
    # Arrays closed over by the traced function become constvars, their values are in .consts.
    return [np.asarray(c) for c in jaxpr.consts]


# Each kind points at the kinds just above it in JAX's promotion lattice; "int" and "float" are
# the weak Python scalar kinds, "int64" a 64-bit node that 32-bit mode names int32.
_ABOVE = {
    "bool": ("int",),
    "int": ("uint8", "int8"),
    "uint8": ("uint16", "int16"),
    "uint16": ("uint32", "int32"),
    "uint32": ("int64",),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "int64": ("float",),
    "float": ("bfloat16", "float16"),
    "bfloat16": ("float32",),
    "float16": ("float32",),
    "float32": (),
}
_IN_32_BITS = {"int": "int32", "float": "float32", "int64": "int32"}


def _upper_set(kind: str) -> set[str]:
    found, todo = {kind}, [kind]
    while todo:
        for parent in _ABOVE[todo.pop()]:
            if parent not in found:
                found.add(parent)
                todo.append(parent)
    return found


def promoted_dtype(a: str, b: str) -> str:
    # The result is the least upper bound of the two kinds: the common kind below all others.
    common = _upper_set(a) & _upper_set(b)
    (least,) = [kind for kind in common if common <= _upper_set(kind)]
    return _IN_32_BITS.get(least, least)


def mlp_avals(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[Avals, Avals]:
    # A dict flattens in sorted key order (b1, b2, w1, w2), then x; the output dtype is promoted.
    shapes = {"b1": (hidden,), "b2": (out_dim,), "w1": (in_dim, hidden), "w2": (hidden, out_dim)}
    inputs = [(shapes[name], param_dtype) for name in sorted(shapes)]
    # relu is jnp.maximum(v, 0): the weak Python 0 joins in, which lifts bool + bool to int32.
    out = promoted_dtype(promoted_dtype(param_dtype, x_dtype), "int")
    return inputs + [((batch, in_dim), x_dtype)], [((batch, out_dim), out)]
