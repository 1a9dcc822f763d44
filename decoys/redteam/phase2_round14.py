"""Red team, phase 2, round 14: abstract stand-ins that drop facts, version-stripped
primitive names, lone-jit unwrapping, function names for primitive names, re-using a given
jit's own lowering, 32-bit clamping by the wider operand, and bool matmul casts."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt14_mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt14_is_literal(v) -> bool:
    return hasattr(v, "val") and not hasattr(v, "count") and type(v).__name__ == "Literal"


def _rt14_eqns(jaxpr):
    return jaxpr.jaxpr.eqns if hasattr(jaxpr, "jaxpr") else jaxpr.eqns


@wrong(
    "mlp_jaxpr",
    why="Clause 'with their own shapes and dtypes ... the jaxpr's avals follow the arguments of "
    "each call': traces jax.ShapeDtypeStruct stand-ins built from shape and dtype only, which "
    "drops weak_type; for x = jnp.broadcast_to(jnp.asarray(1.0), (8, 16)) (a weakly typed f32 "
    "batch) with mlp_args() params, the x input aval is f32[8,16] instead of the weakly typed "
    "~f32[8,16] the call gives (jaxpr.in_avals[-1] differs in weak_type).",
)
def _rt14_mlp_jaxpr_shape_dtype_structs(params: dict, x):
    def spec(a):
        return jax.ShapeDtypeStruct(np.shape(a), jax.numpy.asarray(a).dtype)

    return jax.make_jaxpr(_rt14_mlp)(jax.tree.map(spec, params), spec(x))


def _rt14_census_versionless(jaxpr, counts):
    for eqn in _rt14_eqns(jaxpr):
        # primitives get versioned names (pjit, remat2, ...): count the operation, not the version
        name = re.sub(r"\d+$", "", eqn.primitive.name)
        counts[{"pjit": "jit"}.get(name, name)] += 1
        for val in eqn.params.values():
            subs = val if isinstance(val, (tuple, list)) else (val,)
            for sub in subs:
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    _rt14_census_versionless(sub, counts)
    return counts


@wrong(
    "primitive_census",
    why="Clause 'Count primitives by name': strips a trailing version number from each name "
    "(thinking remat2 is the second version of remat, as pjit was of jit), so the checkpoint's "
    "equation is counted as 'remat' (and atan2 as 'atan'); on census_programs()'s "
    "'custom_vjp, custom_jvp, remat, closed call' program it gives remat: 1 and no remat2.",
)
def _rt14_primitive_census_versionless_names(jaxpr) -> Counter:
    return _rt14_census_versionless(jaxpr, Counter())


@wrong(
    "literal_operands",
    why="Clause 'only top-level equations (not those of nested jaxprs)': when the jaxpr's only "
    "equation is a jit it reads that jit's body instead (treating the wrapper as transparent); "
    "for jax.make_jaxpr(jax.jit(lambda x: x * 2.0))(1.0) and 'mul' it returns [2.0] instead of [].",
)
def _rt14_literal_operands_unwrap_lone_jit(jaxpr, primitive: str) -> list[float]:
    eqns = _rt14_eqns(jaxpr)
    while (
        len(eqns) == 1 and "jaxpr" in eqns[0].params and eqns[0].primitive.name in ("jit", "pjit")
    ):
        eqns = _rt14_eqns(eqns[0].params["jaxpr"])
    out = []
    for eqn in eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt14_is_literal(v):
                out.append(float(np.asarray(v.val).astype(np.float64)))
    return out


@wrong(
    "unused_equations",
    why="Clause 'Primitive names of top-level equations': reports a dead call equation by the "
    "name in its params (the jitted function's name, as the printer shows jit[name=...]) "
    "instead of its primitive's; for jax.make_jaxpr(lambda x: (jax.jit(jnp.sin)(x), x + 1)[1])(1.0) "
    "it returns ['sin'] instead of ['jit'].",
)
def _rt14_unused_equations_call_by_function_name(jaxpr) -> list[str]:
    closed = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    live = {v for v in closed.outvars if not _rt14_is_literal(v)}
    dead = []
    for eqn in reversed(closed.eqns):
        if any(o in live for o in eqn.outvars):
            live.update(v for v in eqn.invars if not _rt14_is_literal(v))
        else:
            name = eqn.params.get("name") if isinstance(eqn.params.get("name"), str) else None
            dead.append(name or eqn.primitive.name)
    return dead[::-1]


@wrong(
    "stablehlo_of",
    why="Clause 'The StableHLO text ... of jax.jit(f) lowered for args ... a nested jit in f lowers "
    "to a function beside @main': when f is already jitted it lowers f itself (no double jit), so "
    "@main holds f's body instead of calling a nested function, and f's own jit options (say "
    "keep_unused=True) leak in; for f = jax.jit(programs.mixed) with MIXED_ARGS the text differs.",
)
def _rt14_stablehlo_of_reuse_given_jit(f, *args) -> str:
    lowerable = f if hasattr(f, "lower") else jax.jit(f)
    return lowerable.lower(*args).as_text()


@wrong(
    "closure_consts",
    why="Clause 'one per constvar ... any shape': skips consts with no elements (nothing to "
    "return), so a closed-over np.zeros((0, 3), np.float32) (x + Z for x f32[0,3]) gives [] "
    "instead of [array of shape (0, 3)].",
)
def _rt14_closure_consts_skip_empty(jaxpr) -> list[np.ndarray]:
    return [np.asarray(c) for c in jaxpr.consts if np.size(c) > 0]


_rt14_INTS = {"int8": 8, "int16": 16, "int32": 32}
_rt14_UINTS = {"uint8": 8, "uint16": 16, "uint32": 32}
_rt14_FLOAT_ORDER = ("bfloat16", "float16", "float32")


def _rt14_join(a: str, b: str, mixed_sign) -> str:
    # Python scalars are weak: they adopt the other kind when it can hold them
    if a in ("int", "float") and b in ("int", "float"):
        return "float32" if "float" in (a, b) else "int32"
    if a in ("int", "float"):
        a, b = b, a
    if b == "int":
        return "int32" if a == "bool" else a
    if b == "float":
        return a if a in _rt14_FLOAT_ORDER else "float32"
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    fa, fb = a in _rt14_FLOAT_ORDER, b in _rt14_FLOAT_ORDER
    if fa and fb:
        return "float32"  # bf16 + f16 and anything with f32
    if fa or fb:
        return a if fa else b
    if a in _rt14_INTS and b in _rt14_INTS:
        return a if _rt14_INTS[a] >= _rt14_INTS[b] else b
    if a in _rt14_UINTS and b in _rt14_UINTS:
        return a if _rt14_UINTS[a] >= _rt14_UINTS[b] else b
    u, s = (a, b) if a in _rt14_UINTS else (b, a)
    return mixed_sign(u, s)


def _rt14_mixed_clamp_to_wider(u: str, s: str) -> str:
    ub, sb = _rt14_UINTS[u], _rt14_INTS[s]
    if sb > ub:
        return s
    need = 2 * ub
    if need > 32:  # no 64-bit types: keep the wider operand
        return u
    return f"int{need}"


@wrong(
    "promoted_dtype",
    why="Clause 'JAX runs with its default 32-bit types': for uint32 with a signed int the "
    "lattice's int64 is canonicalised to int32, but this keeps the wider 32-bit operand instead; "
    "promoted_dtype('uint32', 'int8') gives 'uint32' instead of 'int32'.",
)
def _rt14_promoted_dtype_x32_keeps_wider(a: str, b: str) -> str:
    return _rt14_join(a, b, _rt14_mixed_clamp_to_wider)


def _rt14_mixed_unsigned_decides(u: str, s: str) -> str:
    return {"uint8": "int16", "uint16": "int32", "uint32": "int32"}[u]


@wrong(
    "promoted_dtype",
    why="Clause 'where do a and b meet in the lattice': for an unsigned with a signed int it "
    "answers the signed type just above the unsigned one, ignoring the signed operand's own "
    "width; promoted_dtype('uint8', 'int32') gives 'int16' instead of 'int32'.",
)
def _rt14_promoted_dtype_unsigned_decides(a: str, b: str) -> str:
    return _rt14_join(a, b, _rt14_mixed_unsigned_decides)


def _rt14_correct_mixed(u: str, s: str) -> str:
    ub, sb = _rt14_UINTS[u], _rt14_INTS[s]
    return s if sb > ub else f"int{min(2 * ub, 32)}"


@wrong(
    "mlp_avals",
    why="Clause 'every pair of the ten dtype names ... What dtype comes out of mixed inputs?': "
    "assumes dot_general cannot take bool operands, so a bool x or bool weights are first cast "
    "to float32; mlp_avals(2, 3, 4, 5, 'int8', 'bool') gives output float32 instead of int8.",
)
def _rt14_mlp_avals_bool_matmul_float(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    def matmul(a, b):
        if "bool" in (a, b):
            a = "float32" if a == "bool" else a
            b = "float32" if b == "bool" else b
        return _rt14_join(a, b, _rt14_correct_mixed)

    p = param_dtype
    h = _rt14_join(matmul(x_dtype, p), p, _rt14_correct_mixed)
    h = _rt14_join(h, "int", _rt14_correct_mixed)
    o = _rt14_join(matmul(h, p), p, _rt14_correct_mixed)
    ins = [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), o)]


@wrong(
    "closure_consts",
    why="Clause 'Top level only: a nested jit keeps the arrays it closed over in its own jaxpr': "
    "when the jaxpr is one jit equation it reads that jit's consts as the function's; for "
    "jax.make_jaxpr(jax.jit(lambda x: x + programs.TABLE[0]))(np.ones(3, np.float32)) it returns "
    "[TABLE[0]] instead of [].",
)
def _rt14_closure_consts_unwrap_lone_jit(jaxpr) -> list[np.ndarray]:
    eqns = _rt14_eqns(jaxpr)
    if not jaxpr.consts and len(eqns) == 1 and hasattr(eqns[0].params.get("jaxpr"), "consts"):
        jaxpr = eqns[0].params["jaxpr"]
    return [np.asarray(c) for c in jaxpr.consts]
