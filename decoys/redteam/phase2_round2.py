"""Red-team (round 2) wrong answers for phase 2, written from the contract only."""

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


@wrong(
    "mlp_jaxpr",
    why="'with their own shapes and dtypes: the jaxpr's avals follow the arguments': x is cast "
    "to the params' dtype first; right whenever params and x share a dtype (every MLP_CASES "
    "entry), wrong for f32 params with a bf16 x (x's input aval says float32, not bfloat16)",
)
def r2_mlp_jaxpr_x_in_param_dtype(params: dict, x):
    dtype = np.asarray(params["w1"]).dtype
    return jax.make_jaxpr(mlp)(params, np.asarray(x).astype(dtype))


def _census_whitelist(
    jaxpr, keys=("jaxpr", "call_jaxpr", "branches", "cond_jaxpr", "body_jaxpr", "jaxprs")
):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    counts = Counter()
    for eqn in inner.eqns:
        counts[eqn.primitive.name] += 1
        for key in keys:
            value = eqn.params.get(key)
            if value is None:
                continue
            values = value if isinstance(value, (tuple, list)) else (value,)
            for sub in values:
                if hasattr(sub, "eqns") or hasattr(sub, "jaxpr"):
                    counts += _census_whitelist(sub, keys)
    return counts


@wrong(
    "primitive_census",
    why="'every jaxpr nested in equation params ... at any depth' (the param names are 'such "
    "as', not a list): recurses only into the six param names the docstring lists; wrong on "
    "jax.custom_derivatives.linear_call, whose body sits in param `callee` (its sin and mul "
    "are missed)",
)
def r2_primitive_census_param_whitelist(jaxpr) -> Counter:
    return _census_whitelist(jaxpr)


@wrong(
    "primitive_census",
    why="'Count per equation: a jitted function called twice shares one jaxpr object ... its "
    "contents count twice': memoizes by the nested jaxpr's identity; wrong on "
    "shared(x) + shared(x + 1) with shared = jax.jit(sin * 3) (sin counted once)",
)
def r2_primitive_census_memo_by_id(jaxpr) -> Counter:
    seen = set()

    def walk(j):
        inner = j.jaxpr if hasattr(j, "jaxpr") and hasattr(j.jaxpr, "eqns") else j
        counts = Counter()
        for eqn in inner.eqns:
            counts[eqn.primitive.name] += 1
            for value in eqn.params.values():
                values = value if isinstance(value, (tuple, list)) else (value,)
                for sub in values:
                    core = (
                        sub.jaxpr if hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns") else sub
                    )
                    if not hasattr(core, "eqns") or id(core) in seen:
                        continue
                    seen.add(id(core))
                    counts += walk(core)
        return counts

    return walk(jaxpr)


@wrong(
    "io_avals",
    why="'One entry per input ... and per output, in order, repeats kept': outputs that are "
    "literals (a function returning 1.0) have no Var and are skipped; wrong on "
    "passthrough(x, y, flag) -> ({...}, x, 1.0) (the () float32 output is missing)",
)
def r2_io_avals_vars_only(jaxpr) -> tuple:
    def name(aval):
        return (tuple(int(d) for d in aval.shape), str(np.dtype(aval.dtype).name))

    ins = [name(a) for a in jaxpr.in_avals]
    outs = [name(v.aval) for v in jaxpr.jaxpr.outvars if isinstance(v, jax.extend.core.Var)]
    return ins, outs


@wrong(
    "literal_operands",
    why="'only top-level equations (not those of nested jaxprs)': also collects the literals of "
    "equations of `primitive` inside nested jaxprs (jit, cond, while bodies); wrong on "
    "x * 2.0 + jax.jit(lambda v: v * 3.0)(x) asked for 'mul' ([2.0, 3.0] instead of [2.0])",
)
def r2_literal_operands_recursive(jaxpr, primitive: str) -> list:
    out = []

    def walk(j):
        inner = j.jaxpr if hasattr(j, "jaxpr") and hasattr(j.jaxpr, "eqns") else j
        for eqn in inner.eqns:
            if eqn.primitive.name == primitive:
                out.extend(
                    float(v.val) for v in eqn.invars if isinstance(v, jax.extend.core.Literal)
                )
            for value in eqn.params.values():
                values = value if isinstance(value, (tuple, list)) else (value,)
                for sub in values:
                    if hasattr(sub, "eqns") or (
                        hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns")
                    ):
                        walk(sub)

    walk(jaxpr)
    return out


@wrong(
    "unused_equations",
    why="'An equation with several results is live when any of them is read': this one calls "
    "it live only when its first result is read; wrong on a while loop whose carry (i, x, "
    "sin x) is read only at index 1 (reported dead)",
)
def r2_unused_first_result_only(jaxpr) -> list:
    inner = jaxpr.jaxpr
    live = {v for v in inner.outvars if isinstance(v, jax.extend.core.Var)}
    dead = []
    for eqn in reversed(inner.eqns):
        if eqn.outvars and eqn.outvars[0] in live:
            live |= {v for v in eqn.invars if isinstance(v, jax.extend.core.Var)}
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "closure_consts",
    why="'Plain NumPy arrays, each with its own dtype': casts every const to float32 (values "
    "equal, dtype lost); wrong on x * HALVES + INTS (bf16 and int32 consts come back float32)",
)
def r2_closure_consts_as_float32(jaxpr) -> list:
    return [np.asarray(c, dtype=np.float32) for c in jaxpr.consts]


_RANK = {"bool": 0, "uint8": 1, "uint16": 2, "uint32": 3, "int8": 1, "int16": 2, "int32": 3}


@wrong(
    "promoted_dtype",
    why="'Python scalar ... int / float' are weak in JAX's lattice: this treats a Python int as "
    "int32 and a Python float as float32 (NumPy-1 style), otherwise the right lattice; wrong on "
    "('uint8', 'int') (uint8 expected, says int32) and ('bfloat16', 'float') (bfloat16 expected)",
)
def r2_promoted_dtype_strong_scalars(a: str, b: str) -> str:
    a = {"int": "int32", "float": "float32"}.get(a, a)
    b = {"int": "int32", "float": "float32"}.get(b, b)
    if a == b:
        return a
    floats = ("bfloat16", "float16", "float32")
    if a in floats or b in floats:
        fa, fb = a in floats, b in floats
        if fa and fb:
            return "float32"  # bf16 + f16 meet at f32; f32 absorbs either
        return a if fa else b
    if a == "bool":
        return b
    if b == "bool":
        return a
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if _RANK[a] >= _RANK[b] else b
    unsigned, signed = (a, b) if ua else (b, a)
    if _RANK[signed] > _RANK[unsigned]:
        return signed
    return {"uint8": "int16", "uint16": "int32", "uint32": "int32"}[unsigned]


@wrong(
    "mlp_avals",
    why="'What dtype comes out of mixed inputs' is the promotion lattice: this says the output "
    "is the shared dtype, or float32 whenever the dtypes differ (right on all six example mixes); "
    "wrong on bfloat16 params with an int32 x (bfloat16 expected) or float16 params with a "
    "uint8 x (float16 expected)",
)
def r2_mlp_avals_mixed_is_f32(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple:
    inputs = [
        ((hidden,), param_dtype),
        ((out_dim,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    out = param_dtype if param_dtype == x_dtype else "float32"
    return inputs, [((batch, out_dim), out)]
