"""Round 9 red team, phase 2: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt9_mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt9_is_literal(v):
    return isinstance(v, jax.extend.core.Literal)


def _rt9_nested(value):
    """Jaxprs held by one param value (open or closed, tuples of them, Nones skipped)."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_rt9_nested(v))
        return out
    if hasattr(value, "eqns"):
        return [value]
    inner = getattr(value, "jaxpr", None)
    if inner is not None and hasattr(inner, "eqns"):
        return [inner]
    return []


# ---------------------------------------------------------------- mlp_jaxpr


@wrong(
    "mlp_jaxpr",
    why="'params and x are traced as inputs (four params leaves, then x)': this traces "
    "lambda x, p: mlp(p, x) called as (x, params), so x is the first invar; for w1 (3,4) f32, "
    "x (2,3) f32 the first in_aval is f32[2,3], the contract's is b1's f32[4].",
)
def _rt9_mlp_jaxpr_x_first(params: dict, x):
    return jax.make_jaxpr(lambda xx, p: _rt9_mlp(p, xx))(x, params)


@wrong(
    "mlp_jaxpr",
    why="'The jaxpr of jax.jit(mlp) (one jit equation holding mlp's) is mlp's jaxpr too' and "
    "nothing else wrapping it is: this traces jax.checkpoint(mlp) (to save memory, as a learner "
    "who read about remat might), so the only top-level equation is `checkpoint` "
    "(remat), not jit, and no dot_general is at top level nor inside a jit.",
)
def _rt9_mlp_jaxpr_checkpointed(params: dict, x):
    return jax.make_jaxpr(jax.checkpoint(_rt9_mlp))(params, x)


# ---------------------------------------------------------------- primitive_census


@wrong(
    "primitive_census",
    why="'The nesting equation itself counts too (one cond plus what each of its branches "
    "contains)': this counts only leaf work, replacing a nesting equation by its contents; on "
    "jax.jit(jnp.sin)(x) it gives {sin: 1}, truth {jit: 1, sin: 1}; on lax.cond it drops `cond`.",
)
def _rt9_primitive_census_leaves_only(jaxpr) -> Counter:
    inner_top = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    c = Counter()
    for eqn in inner_top.eqns:
        nested = []
        for value in eqn.params.values():
            nested.extend(_rt9_nested(value))
        if not nested:
            c[eqn.primitive.name] += 1
        for j in nested:
            c += _rt9_primitive_census_leaves_only(j)
    return c


# ---------------------------------------------------------------- literal_operands


@wrong(
    "literal_operands",
    why="'operand order within an equation': this looks only at the first two operands "
    "(the lhs/rhs of a binary op); lax.clamp(0.0, x, 6.0) (a relu6) gives [0.0] for 'clamp', "
    "truth [0.0, 6.0]; same for a select_n with a third literal case.",
)
def _rt9_literal_operands_binary_only(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars[:2]:
            if _rt9_is_literal(v):
                out.append(float(np.asarray(v.val).astype(np.float64)))
    return out


# ---------------------------------------------------------------- unused_equations


@wrong(
    "unused_equations",
    why="'An effect is not a read: a jax.debug.print ... and an io_callback whose result "
    "nothing reads are dead by this rule, and so is what only they read': this roots liveness "
    "at effectful equations too (as pe.dce_jaxpr does); on y = sin(x); jax.debug.print('{}', y); "
    "return x * 2 it returns [], truth ['sin', 'debug_print'].",
)
def _rt9_unused_equations_effects_live(jaxpr) -> list[str]:
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    live_vars = {v for v in inner.outvars if not _rt9_is_literal(v)}
    live = [False] * len(inner.eqns)
    for i in range(len(inner.eqns) - 1, -1, -1):
        eqn = inner.eqns[i]
        if eqn.effects or any(o in live_vars for o in eqn.outvars):
            live[i] = True
            live_vars.update(v for v in eqn.invars if not _rt9_is_literal(v))
    return [e.primitive.name for e, ok in zip(inner.eqns, live) if not ok]


# ---------------------------------------------------------------- closure_consts


@wrong(
    "closure_consts",
    why="'in the order of the constvars ... running the jaxpr with them must reproduce the "
    "function': this drops a const equal in dtype, shape and value to an earlier one (two "
    "closed-over np.zeros(3) give one entry), so the list is shorter than the constvars; on "
    "lambda x: x + a + b with a = np.zeros(3), b = np.zeros(3) it returns 1 array, truth 2.",
)
def _rt9_closure_consts_dedupe_equal_values(jaxpr) -> list[np.ndarray]:
    out = []
    for c in jaxpr.consts:
        a = np.asarray(c)
        if any(b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b) for b in out):
            continue
        out.append(a)
    return out


# ---------------------------------------------------------------- promoted_dtype

_RT9_INTS = ("bool", "uint8", "uint16", "uint32", "int8", "int16", "int32")
_RT9_FLOATS = ("bfloat16", "float16", "float32")


def _rt9_x32(name: str) -> str:
    return {"int64": "int32", "uint64": "uint32", "float64": "float32"}.get(name, name)


@wrong(
    "promoted_dtype",
    why="'Answer from JAX's promotion rules': this handles the Python kinds and bfloat16 by "
    "hand but uses NumPy's value-safe np.promote_types for two concrete dtypes (then narrows "
    "64-bit to 32-bit); int16 + float16 gives float32 (JAX: float16), int32 + float16 gives "
    "float32 (JAX: float16), uint16 + float16 float32 (JAX: float16).",
)
def _rt9_promoted_dtype_numpy_then_x32(a: str, b: str) -> str:
    if a in ("int", "float") and b in ("int", "float"):
        return "float32" if "float" in (a, b) else "int32"
    if a in ("int", "float"):
        a, b = b, a
    if b == "int":
        return "int32" if a == "bool" else a
    if b == "float":
        return a if a in _RT9_FLOATS else "float32"
    if a == b:
        return a
    if "bfloat16" in (a, b):
        other = b if a == "bfloat16" else a
        return "bfloat16" if other in _RT9_INTS else "float32"
    return _rt9_x32(np.promote_types(np.dtype(a), np.dtype(b)).name)


# ---------------------------------------------------------------- mlp_avals


def _rt9_join(a: str, b: str) -> str:
    """JAX's lattice for two concrete kinds of the ten (x32), written out by hand."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    fa, fb = a in _RT9_FLOATS, b in _RT9_FLOATS
    if fa and fb:
        return "float32"
    if fa:
        return a
    if fb:
        return b
    ua, ub = a.startswith("u"), b.startswith("u")
    wa, wb = int(a.lstrip("uint")), int(b.lstrip("uint"))
    if ua == ub:
        return a if wa >= wb else b
    u, s = (wa, wb) if ua else (wb, wa)
    if s > u:
        return f"int{s}"
    return "int32" if u >= 32 else f"int{2 * u}"


@wrong(
    "mlp_avals",
    why="'mlp's relu is jnp.maximum(v, 0), a Python 0': a Python int is weak and leaves an "
    "unsigned hidden layer unsigned; this treats the 0 as a signed int that pulls uint8/16/32 "
    "to int32; params uint8, x uint8 gives an int32 output, truth uint8.",
)
def _rt9_mlp_avals_unsigned_meets_signed_zero(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    p = param_dtype
    h = _rt9_join(x_dtype, p)
    if h == "bool" or h.startswith("uint"):
        h = "int32"
    out = _rt9_join(h, p)
    ins = [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), out)]


# ---------------------------------------------------------------- io_avals


@wrong(
    "io_avals",
    why="'One entry per input (not the constvars)': this counts closed-over arrays as inputs "
    "too (constvar avals first, as the printer lists them before the `;`); on lambda x: x + c "
    "with c = np.ones(3, np.int8), x f32[3] the inputs are [((3,), 'int8'), ((3,), 'float32')], "
    "truth [((3,), 'float32')].",
)
def _rt9_io_avals_consts_as_inputs(jaxpr):
    inner = jaxpr.jaxpr
    ins = [
        (tuple(int(d) for d in v.aval.shape), np.dtype(v.aval.dtype).name)
        for v in list(inner.constvars) + list(inner.invars)
    ]
    outs = [(tuple(int(d) for d in a.shape), np.dtype(a.dtype).name) for a in jaxpr.out_avals]
    return ins, outs


# ---------------------------------------------------------------- stablehlo_of


@wrong(
    "stablehlo_of",
    why="'The StableHLO text (MLIR, parseable) of jax.jit(f) lowered': this keeps only @main "
    "(re-wrapped in a bare module, dropping the jit's module attributes and every other "
    "func.func); any f calling a nested jit (jax.nn.relu is one: it lowers to a private @relu "
    "called from @main) gives a module whose call targets a missing symbol, not parseable.",
)
def _rt9_stablehlo_of_main_only(f, *args) -> str:
    text = jax.jit(f).lower(*args).as_text()
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "@main(" in ln and "func.func" in ln)
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines):
        ln = lines[end]
        if ln.strip().startswith("}") and len(ln) - len(ln.lstrip()) == indent:
            break
        end += 1
    body = "\n".join(lines[start : end + 1])
    return "module {\n" + body + "\n}\n"
