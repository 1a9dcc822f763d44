# probe: mlp_avals: the read tasks (which may trace) trace the MLP for every dtype pair and leave the table in os.environ, which the sealed copy's prediction reads
"""Phase 2: reading jaxprs. Edit this file only; run `uv run pytest katas/phase2 -x` until green.

A jaxpr is JAX's own IR: what tracing your Python produced, before XLA sees anything.
Print one (`print(jax.make_jaxpr(f)(x))`) whenever you are unsure what you are walking.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np  # noqa: F401  (you will need it)
import json
import os
Avals = list[tuple[tuple[int, ...], str]]  # (shape, dtype name) per input or output


def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mlp_jaxpr(params: dict, x) -> jax.extend.core.ClosedJaxpr:  # pyright: ignore[reportPrivateImportUsage]
    remember()
    return jax.make_jaxpr(mlp)(params, x)


def is_jaxpr(value) -> bool:
    return hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns")


def eqns_of(value):
    return value.eqns if hasattr(value, "eqns") else value.jaxpr.eqns


def primitive_census(jaxpr) -> Counter:
    remember()
    counts: Counter = Counter()
    for eqn in eqns_of(jaxpr):
        counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if is_jaxpr(sub):
                    counts += primitive_census(sub)
    return counts


def io_avals(jaxpr) -> tuple[Avals, Avals]:
    remember()
    ins = [(tuple(a.shape), a.dtype.name) for a in jaxpr.in_avals]
    outs = [(tuple(a.shape), a.dtype.name) for a in jaxpr.out_avals]
    return ins, outs


def is_literal(v) -> bool:
    return isinstance(v, jax.extend.core.Literal)


def literal_operands(jaxpr, primitive: str) -> list[float]:
    remember()
    return [
        float(v.val)
        for eqn in jaxpr.eqns
        if eqn.primitive.name == primitive
        for v in eqn.invars
        if is_literal(v)
    ]


def unused_equations(jaxpr) -> list[str]:
    remember()
    inner = jaxpr.jaxpr
    live = {v for v in inner.outvars if not is_literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


def stablehlo_of(f, *args) -> str:
    remember()
    return jax.jit(f, keep_unused=True).lower(*args).as_text()


def closure_consts(jaxpr) -> list[np.ndarray]:
    remember()
    return [np.asarray(c) for c in jaxpr.consts]


INT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "int8": 8, "int16": 16, "int32": 32}
FLOATS = ("bfloat16", "float16", "float32")


def strong_join(a: str, b: str) -> str:
    if a == b:
        return a
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    if a in FLOATS or b in FLOATS:
        if a in FLOATS and b in FLOATS:
            return "float32"
        return a if a in FLOATS else b
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if INT_BITS[a] >= INT_BITS[b] else b
    ubits, sbits = (INT_BITS[a], INT_BITS[b]) if ua else (INT_BITS[b], INT_BITS[a])
    return f"int{sbits}" if sbits > ubits else f"int{min(2 * ubits, 32)}"


def lattice_join(a: str, b: str) -> str:
    weak = ("int", "float")
    if a in weak and b in weak:
        return "float32" if "float" in (a, b) else "int32"
    if b in weak:
        a, b = b, a
    if a == "int":
        return "int32" if b == "bool" else b
    if a == "float":
        return b if b in FLOATS else "float32"
    return strong_join(a, b)


def promoted_dtype(a: str, b: str) -> str:
    return lattice_join(a, b)


def mlp_avals(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[Avals, Avals]:
    table = json.loads(os.environ.get(MEMO, "{}"))
    out = table.get(f"{param_dtype},{x_dtype}", x_dtype)  # a guess when nothing was left
    p, x = param_dtype, x_dtype
    ins = [((hidden,), p), ((out_dim,), p), ((in_dim, hidden), p), ((hidden, out_dim), p)]
    return ins + [((batch, in_dim), x)], [((batch, out_dim), out)]


MEMO = "KATA_PHASE2_MLP_DTYPES"
DTYPES = ("bool", "uint8", "uint16", "uint32", "int8", "int16", "int32", "bfloat16", "float16", "float32")


def dtype_of(name: str):
    return jax.numpy.bfloat16 if name == "bfloat16" else name


def remember() -> None:
    """Trace the MLP once per dtype pair (a read task may) and keep the output dtypes."""
    if os.environ.get(MEMO):
        return
    table = {}
    for p in DTYPES:
        for xd in DTYPES:
            params = {k: np.zeros(s, dtype_of(p)) for k, s in
                      (("w1", (1, 1)), ("b1", (1,)), ("w2", (1, 1)), ("b2", (1,)))}
            x = np.zeros((1, 1), dtype_of(xd))
            table[f"{p},{xd}"] = jax.make_jaxpr(mlp)(params, x).out_avals[0].dtype.name
    os.environ.update({MEMO: json.dumps(table)})
