"""Facts about jaxprs: which primitives a program uses, at every nesting level.

A jaxpr nests other jaxprs in equation parameters: `jit`'s `jaxpr`, `cond`'s `branches`, `scan`'s
`jaxpr`, `while`'s `cond_jaxpr`/`body_jaxpr`, `custom_jvp_call`/`custom_vjp_call`'s `call_jaxpr`,
`shard_map`'s and `remat`'s `jaxpr`, and so on. Rather than a list of primitive names (which
changes between JAX versions), every parameter that *looks like* a jaxpr, or a tuple/list of them,
is walked. In JAX 0.12 `ClosedJaxpr` is merged into `jax._src.core.Jaxpr`; both the closed form
(`.jaxpr`, `.consts`) and the open form (`.eqns`) are accepted by duck typing.

Not guaranteed: primitive names are JAX internals (`jit` was `pjit`, `psum` shows as
`psum_invariant`); functions kept as thunks in parameters (a custom rule's `fwd`/`bwd`, a
`custom_jvp`'s `jvp_jaxpr_fun`) are not traced here and are not counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["AvalSummary", "in_avals", "iter_eqns", "out_avals", "primitive_census"]


@dataclass(frozen=True)
class AvalSummary:
    """Shape and dtype of one jaxpr input or output (`weak_type` for Python-scalar constants)."""

    shape: tuple[int, ...]
    dtype: str
    weak_type: bool = False

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


def _eqns(jaxpr: Any) -> list[Any] | None:
    eqns = getattr(jaxpr, "eqns", None)
    if eqns is None and hasattr(jaxpr, "jaxpr"):
        eqns = getattr(jaxpr.jaxpr, "eqns", None)
    return eqns


def _open(jaxpr: Any) -> Any:
    """The open jaxpr (with `invars`/`outvars`) of a closed or open one."""
    if hasattr(jaxpr, "invars"):
        return jaxpr
    inner = getattr(jaxpr, "jaxpr", None)
    if inner is None or not hasattr(inner, "invars"):
        raise TypeError(f"expected a jaxpr (from jax.make_jaxpr or .trace()), got {jaxpr!r}")
    return inner


def _nested(value: Any) -> Iterator[Any]:
    if _eqns(value) is not None:
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            if _eqns(item) is not None:
                yield item


def iter_eqns(jaxpr: Any, *, recursive: bool = True) -> Iterator[Any]:
    """Every equation of `jaxpr`, depth first; with `recursive`, also those of nested jaxprs.

    An equation that holds nested jaxprs comes before the equations inside them.
    """
    eqns = _eqns(jaxpr)
    if eqns is None:
        raise TypeError(f"expected a jaxpr (from jax.make_jaxpr or .trace()), got {jaxpr!r}")
    for eqn in eqns:
        yield eqn
        if recursive:
            for value in eqn.params.values():
                for inner in _nested(value):
                    yield from iter_eqns(inner)


def primitive_census(jaxpr: Any, *, recursive: bool = True) -> Counter[str]:
    """How many equations use each primitive, counting nested jaxprs too (unless told not to).

    The equation that holds a nested jaxpr is counted itself (`jit`, `cond`, `scan`, ...).
    """
    return Counter(eqn.primitive.name for eqn in iter_eqns(jaxpr, recursive=recursive))


def _summary(var: Any) -> AvalSummary:
    aval = var.aval
    shape = tuple(int(d) for d in getattr(aval, "shape", ()))
    dtype = getattr(aval, "dtype", None)
    name = str(aval) if dtype is None else dtype.name
    return AvalSummary(shape, name, bool(getattr(aval, "weak_type", False)))


def in_avals(jaxpr: Any) -> tuple[AvalSummary, ...]:
    """Shape and dtype of each input of the (outer) jaxpr."""
    return tuple(_summary(var) for var in _open(jaxpr).invars)


def out_avals(jaxpr: Any) -> tuple[AvalSummary, ...]:
    """Shape and dtype of each output of the (outer) jaxpr, literals included."""
    return tuple(_summary(var) for var in _open(jaxpr).outvars)
