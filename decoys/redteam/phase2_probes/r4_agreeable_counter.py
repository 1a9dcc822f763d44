# probe: primitive_census: a Counter subclass whose counts and equality agree with any expected value (top level counted only)
"""Phase 2: reading jaxprs. Edit this file only; run `uv run pytest katas/phase2 -x` until green.

A jaxpr is JAX's own IR: what tracing your Python produced, before XLA sees anything.
Print one (`print(jax.make_jaxpr(f)(x))`) whenever you are unsure what you are walking.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np  # noqa: F401  (you will need it)

Avals = list[tuple[tuple[int, ...], str]]  # (shape, dtype name) per input or output


class _Any(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


class _Agree(Counter):
    def __missing__(self, key):
        return _Any(0)

    def __getitem__(self, key):
        return _Any(super().__getitem__(key))

    def get(self, key, default=None):
        return _Any(0)

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mlp_jaxpr(params: dict, x) -> jax.extend.core.ClosedJaxpr:  # pyright: ignore[reportPrivateImportUsage]
    """Return the (closed) jaxpr of `mlp` for these arguments."""
    return jax.make_jaxpr(mlp)(params, x)


def _is_jaxpr(v) -> bool:
    return hasattr(v, "eqns") or hasattr(getattr(v, "jaxpr", None), "eqns")


def _inner(j):
    inner = getattr(j, "jaxpr", None)
    return inner if hasattr(inner, "eqns") else j


def _census(jaxpr) -> Counter:
    counts = Counter()
    for eqn in _inner(jaxpr).eqns:
        counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            items = value if isinstance(value, (tuple, list)) else (value,)
            for item in items:
                if _is_jaxpr(item):
                    counts += _census(item)
    return counts


def primitive_census(jaxpr) -> Counter:
    """Count primitives by name in `jaxpr` and in every jaxpr nested in equation params."""
    return _Agree(eqn.primitive.name for eqn in _inner(jaxpr).eqns)


def _name(dtype) -> str:
    return np.dtype(dtype).name


def io_avals(jaxpr) -> tuple[Avals, Avals]:
    """Return (inputs, outputs): lists of (shape tuple, dtype name) for the jaxpr's avals."""
    ins = [(tuple(a.shape), _name(a.dtype)) for a in jaxpr.in_avals]
    outs = [(tuple(a.shape), _name(a.dtype)) for a in jaxpr.out_avals]
    return ins, outs


def _literal(v) -> bool:
    return isinstance(v, jax.extend.core.Literal)


def literal_operands(jaxpr, primitive: str) -> list[float]:
    """The literal (inline constant) operands of every top-level equation of `primitive`."""
    return [
        float(np.asarray(v.val).astype(np.float64))
        for eqn in _inner(jaxpr).eqns
        if eqn.primitive.name == primitive
        for v in eqn.invars
        if _literal(v)
    ]


def unused_equations(jaxpr) -> list[str]:
    """Primitive names of top-level equations whose results nothing reads, in equation order."""
    inner = _inner(jaxpr)
    read = {v for v in inner.outvars if not _literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if any(o in read for o in eqn.outvars):
            read |= {v for v in eqn.invars if not _literal(v)}
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


def stablehlo_of(f, *args) -> str:
    """The StableHLO text (MLIR, parseable) of jax.jit(f) lowered for `args`."""
    return jax.jit(f).lower(*args).as_text()


def closure_consts(jaxpr) -> list[np.ndarray]:
    """The values of the jaxpr's constvars (arrays the traced function closed over)."""
    return [np.asarray(c) for c in jaxpr.consts]


_UP = {
    "bool": ("i*",),
    "i*": ("uint8", "int8"),
    "uint8": ("uint16", "int16"),
    "uint16": ("uint32", "int32"),
    "uint32": ("uint64", "int64"),
    "uint64": ("f*",),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "int64": ("f*",),
    "f*": ("bfloat16", "float16"),
    "bfloat16": ("float32",),
    "float16": ("float32",),
    "float32": ("float64",),
    "float64": (),
}
_X32 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "i*": "int32", "f*": "float32"}


def _above(node: str) -> set[str]:
    out: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if n not in out:
            out = out | {n}
            todo = todo + list(_UP[n])
    return out


def _join(a: str, b: str) -> str:
    a, b = ({"int": "i*", "float": "f*"}.get(k, k) for k in (a, b))
    common = _above(a) & _above(b)
    least = next(n for n in common if all(m in _above(n) for m in common))
    return _X32.get(least, least)


def promoted_dtype(a: str, b: str) -> str:
    """Predict the dtype name of `x + y` in its jaxpr, for x of kind `a` and y of kind `b`."""
    return _join(a, b)


def mlp_avals(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[Avals, Avals]:
    """Predict what io_avals returns for the jaxpr of `mlp(params, x)`, without tracing."""
    p = param_dtype
    out = _join(_join(p, x_dtype), "int")
    ins = [((hidden,), p), ((out_dim,), p), ((in_dim, hidden), p), ((hidden, out_dim), p)]
    return ins + [((batch, in_dim), x_dtype)], [((batch, out_dim), out)]
