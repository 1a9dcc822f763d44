"""Phase 2 tests' view of a jaxpr's equation params: what two traces of one function under one
configuration agree on (a dot_general's precision and preferred_element_type, a broadcast's
shape, nested jaxprs' equations at any depth), left without the functions a param may hold
(a custom_jvp's jvp rule), which no two traces share.
"""

from __future__ import annotations

import enum

import numpy as np


def _plain(value) -> bool:
    """A param compared as it is (a dtype, a precision, dimension numbers, a shape), not a
    jaxpr or a function."""
    if isinstance(value, (tuple, list)):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, (bool, int, float, str, enum.Enum, np.dtype))


def params_of(jaxpr) -> list[tuple[str, dict]]:
    """Each equation's primitive and params, a nested jaxpr's as its own equations (a function
    param, such as a custom_jvp's jvp rule, is left out)."""
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    listed = []
    for eqn in inner.eqns:
        params = {}
        for key, value in eqn.params.items():
            nested = value if isinstance(value, (tuple, list)) else (value,)
            if all(hasattr(item, "eqns") for item in nested) and nested:
                params[key] = [params_of(item) for item in nested]
            elif _plain(value):
                params[key] = value
        listed.append((eqn.primitive.name, params))
    return listed


def first_params_difference(got: list, want: list) -> str:
    """The first param that differs, with its equation, as a test says it."""
    for n, ((name, params), (_, expected)) in enumerate(zip(got, want, strict=True)):
        if params != expected:
            key = min(k for k in {*params, *expected} if params.get(k) != expected.get(k))
            return (
                f"equation {n} ({name}) has {key}={params.get(key)!r}, mlp's {expected.get(key)!r}"
            )
    return "the params differ"
