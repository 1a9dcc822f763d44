"""Red team, phase 2, round 16: plausible wrong answers written from the contract alone."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt16_mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@wrong(
    "mlp_jaxpr",
    why="Clause 'weak types too (an x made by jnp.full(shape, 1.0) ... ~f32)': tracing from ShapeDtypeStructs drops the weak type; x = jnp.full((2, 16), 1.0) with f32 params gives x's in_aval float32[2,16] instead of ~float32[2,16].",
)
def _rt16_mlp_jaxpr_shape_structs(params: dict, x):
    spec = lambda a: jax.ShapeDtypeStruct(np.shape(a), jnp.asarray(a).dtype)  # noqa: E731
    return jax.make_jaxpr(_rt16_mlp)(jax.tree_util.tree_map(spec, params), spec(x))


@wrong(
    "mlp_jaxpr",
    why="Clause 'x keeps its dtype when it differs from the params'': casting x to the params' dtype first; f32 params with a bf16 x (8,16) give an f32[8,16] x input instead of bf16[8,16].",
)
def _rt16_mlp_jaxpr_cast_x(params: dict, x):
    dt = jnp.asarray(params["w1"]).dtype
    return jax.make_jaxpr(_rt16_mlp)(params, jnp.asarray(x).astype(dt))


@wrong(
    "mlp_jaxpr",
    why="Clause 'no setting of your own, such as a matmul precision': tracing under default_matmul_precision('highest') puts precision=HIGHEST in each dot_general's params; differs on every input (f32 8x16 MLP).",
)
def _rt16_mlp_jaxpr_highest(params: dict, x):
    with jax.default_matmul_precision("highest"):
        return jax.make_jaxpr(_rt16_mlp)(params, x)


def _rt16_subjaxprs(value):
    if isinstance(value, jax.extend.core.Jaxpr) or hasattr(value, "eqns"):
        yield value if hasattr(value, "eqns") else value.jaxpr
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt16_subjaxprs(v)


@wrong(
    "primitive_census",
    why="Clause 'a jitted function called twice shares one jaxpr object ... its contents count twice': memoising by id(jaxpr) counts a shared body once; shared=jit(sin*3) called twice gives sin 1, mul 1 instead of 2 and 2.",
)
def _rt16_primitive_census_seen_once(jaxpr) -> Counter:
    seen = set()

    def walk(j):
        j = j.jaxpr if hasattr(j, "jaxpr") and not hasattr(j, "eqns") else j
        if id(j) in seen:
            return Counter()
        seen.add(id(j))
        c = Counter()
        for eqn in j.eqns:
            c[eqn.primitive.name] += 1
            for v in eqn.params.values():
                for sub in _rt16_subjaxprs(v):
                    c += walk(sub)
        return c

    return walk(jaxpr)


@wrong(
    "primitive_census",
    why="Clause 'and others, at any depth' / custom_linear_solve's named tuple: only the listed param NAMES are searched (jaxpr, call_jaxpr, branches, cond_jaxpr, body_jaxpr); linear_call's `callee` and custom_vmap_call's `call` bodies are missed (sin, exp uncounted), and jaxprs's named tuple is skipped.",
)
def _rt16_primitive_census_named_params(jaxpr) -> Counter:
    names = ("jaxpr", "call_jaxpr", "branches", "cond_jaxpr", "body_jaxpr", "update_jaxpr")
    j = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and not hasattr(jaxpr, "eqns") else jaxpr
    c = Counter()
    for eqn in j.eqns:
        c[eqn.primitive.name] += 1
        for name in names:
            if name in eqn.params:
                for sub in _rt16_subjaxprs(eqn.params[name]):
                    c += _rt16_primitive_census_named_params(sub)
    return c


@wrong(
    "primitive_census",
    why="Clause 'The nesting equation itself counts too': only leaf primitives are counted, the cond/jit/scan equation holding a jaxpr is not; cond(x>0, sin, cos) gives {gt, sin, cos} without cond 1.",
)
def _rt16_primitive_census_leaves_only(jaxpr) -> Counter:
    j = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and not hasattr(jaxpr, "eqns") else jaxpr
    c = Counter()
    for eqn in j.eqns:
        subs = [s for v in eqn.params.values() for s in _rt16_subjaxprs(v)]
        if not subs:
            c[eqn.primitive.name] += 1
        for sub in subs:
            c += _rt16_primitive_census_leaves_only(sub)
    return c


@wrong(
    "io_avals",
    why="Clause 'when its one equation is a jit, not that jit's': unwrapping a lone jit equation and reporting the jit body's avals; make_jaxpr(lambda x, y: jax.jit(jnp.sin)(x))(f32[3], i32[]) has inputs [f32[3], i32[]] but the jit body has only [f32[3]]",
)
def _rt16_io_avals_unwrap_jit(jaxpr):
    j = jaxpr
    if len(j.jaxpr.eqns) == 1 and j.jaxpr.eqns[0].primitive.name in ("jit", "pjit"):
        j = j.jaxpr.eqns[0].params["jaxpr"]
    ins = [(tuple(a.shape), a.dtype.name) for a in j.in_avals]
    outs = [(tuple(a.shape), a.dtype.name) for a in j.out_avals]
    return ins, outs


@wrong(
    "io_avals",
    why="Clause 'One entry per input (not the constvars)': reading jaxpr.jaxpr.constvars + invars lists closed-over arrays as inputs; lambda a, b: closes_over(a) + (a - b,) gets TABLE[0]'s f32[3] const as an extra first input.",
)
def _rt16_io_avals_with_consts(jaxpr):
    j = jaxpr.jaxpr
    ins = [(tuple(v.aval.shape), v.aval.dtype.name) for v in list(j.constvars) + list(j.invars)]
    outs = [(tuple(a.shape), a.dtype.name) for a in jaxpr.out_avals]
    return ins, outs


@wrong(
    "literal_operands",
    why="Clause 'exactly (an int32 16777217 gives 16777217.0)': converting through np.float32 rounds; x + np.int32(16777217) on an int32 x gives 16777216.0.",
)
def _rt16_literal_operands_float32(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.jaxpr.eqns:
        if eqn.primitive.name == primitive:
            for v in eqn.invars:
                if isinstance(v, jax.extend.core.Literal):
                    out.append(float(np.float32(v.val)))
    return out


@wrong(
    "literal_operands",
    why="Clause 'by its whole name (add not scatter-add nor add_any)': substring match on the primitive name; asking for 'add' also collects add_any's / scatter-add's literals, asking for 'or' also xor's; e.g. x ^ 3 with primitive 'or' gives [3.0] instead of [].",
)
def _rt16_literal_operands_substring(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.jaxpr.eqns:
        if primitive in eqn.primitive.name:
            for v in eqn.invars:
                if isinstance(v, jax.extend.core.Literal):
                    out.append(float(np.asarray(v.val).item()))
    return out


@wrong(
    "unused_equations",
    why="Clause 'an equation read only by dead equations is dead too': a single pass reporting only equations whose results nobody reads; dead_chain reports ['cos'] instead of ['sin', 'mul', 'cos'].",
)
def _rt16_unused_equations_one_pass(jaxpr) -> list[str]:
    j = jaxpr.jaxpr
    read = {id(v) for v in j.outvars if not isinstance(v, jax.extend.core.Literal)}
    for eqn in j.eqns:
        for v in eqn.invars:
            if not isinstance(v, jax.extend.core.Literal):
                read.add(id(v))
    return [e.primitive.name for e in j.eqns if not any(id(o) in read for o in e.outvars)]


@wrong(
    "unused_equations",
    why="Clause 'An effect is not a read ... are dead by this rule': treating equations with effects as live (as jax's DCE does); x + 1 with an unread jax.debug.callback(print, sin(x)) reports [] instead of ['sin', 'debug_callback'].",
)
def _rt16_unused_equations_effects_live(jaxpr) -> list[str]:
    j = jaxpr.jaxpr
    live = {id(v) for v in j.outvars if not isinstance(v, jax.extend.core.Literal)}
    dead = []
    for eqn in reversed(j.eqns):
        if eqn.effects or any(id(o) in live for o in eqn.outvars):
            for v in eqn.invars:
                if not isinstance(v, jax.extend.core.Literal):
                    live.add(id(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "unused_equations",
    why="Clause 'An equation with several results is live when any of them is read': requiring every result to be read; a top-level while_loop returning (i, x*2, sin x) of which only one is read is reported dead (with what feeds it).",
)
def _rt16_unused_equations_all_results(jaxpr) -> list[str]:
    j = jaxpr.jaxpr
    live = {id(v) for v in j.outvars if not isinstance(v, jax.extend.core.Literal)}
    dead = []
    for eqn in reversed(j.eqns):
        if all(id(o) in live for o in eqn.outvars):
            for v in eqn.invars:
                if not isinstance(v, jax.extend.core.Literal):
                    live.add(id(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "stablehlo_of",
    why="Clause 'a Python scalar argument is a 0-d tensor too, weakly typed (w * 2.5 stays bf16)': converting args with np.asarray first makes 2.5 a strong f32; f=lambda w, s: w * s with (bf16[2], 2.5) lowers to f32 multiply.",
)
def _rt16_stablehlo_of_np_args(f, *args) -> str:
    return jax.jit(f).lower(*[np.asarray(a) for a in args]).as_text()


@wrong(
    "stablehlo_of",
    why="Clause 'an argument f never reads is pruned ... (keep_unused=True would keep both)': lowering with keep_unused=True keeps an unread argument in @main; lambda x, y: x + 1 gives @main two arguments instead of one.",
)
def _rt16_stablehlo_of_keep_unused(f, *args) -> str:
    return jax.jit(f, keep_unused=True).lower(*args).as_text()


@wrong(
    "stablehlo_of",
    why="Clause 'another path to StableHLO, such as jax.export's module, adds its own': jax.export's mlir_module() carries jax.uses_shape_polymorphism / mhlo.num_partitions... attributes and other arg attributes; differs from lower().as_text() on mixed(w, i, h).",
)
def _rt16_stablehlo_of_export(f, *args) -> str:
    from jax import export

    return export.export(jax.jit(f))(*args).mlir_module()


@wrong(
    "closure_consts",
    why="Clause 'read by an equation or not (a closed-over array returned as it is is a const no equation reads)': keeping only the constvars some equation reads; lambda x: (x + 1, TABLE) drops TABLE.",
)
def _rt16_closure_consts_read_only(jaxpr) -> list[np.ndarray]:
    j = jaxpr.jaxpr
    read = {id(v) for e in j.eqns for v in e.invars}
    return [np.asarray(c) for v, c in zip(j.constvars, jaxpr.consts) if id(v) in read]


@wrong(
    "closure_consts",
    why="Clause 'each with its own dtype ... (bfloat16 too)': np.array(c, dtype=float) turns everything to float64; two_consts' bf16 HALVES and int32 INTS come back float64.",
)
def _rt16_closure_consts_as_float(jaxpr) -> list[np.ndarray]:
    return [np.asarray(c, dtype=np.float64) for c in jaxpr.consts]


@wrong(
    "closure_consts",
    why="Clause 'equal ones too (two arrays closed over with the same ... values are two consts)': deduplicating consts by value; lambda x: x * A + B with A, B equal f32 ones arrays returns one const instead of two.",
)
def _rt16_closure_consts_dedupe(jaxpr) -> list[np.ndarray]:
    out = []
    for c in jaxpr.consts:
        a = np.asarray(c)
        if not any(b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b) for b in out):
            out.append(a)
    return out


_rt16_NP_KIND = {"int": "int32", "float": "float32"}


@wrong(
    "promoted_dtype",
    why="Clause 'Answer from JAX's promotion rules': NumPy's promotion with Python scalars mapped to int32/float32 and 64-bit names cut to 32; uint8 + 'int' gives int32 where JAX gives uint8, uint16 + bfloat16 gives float32 where JAX gives bfloat16.",
)
def _rt16_promoted_dtype_numpy(a: str, b: str) -> str:
    import ml_dtypes

    def dt(k):
        k = _rt16_NP_KIND.get(k, k)
        return np.dtype(ml_dtypes.bfloat16) if k == "bfloat16" else np.dtype(k)

    da, db = dt(a), dt(b)
    if da == db:
        return da.name
    if "bfloat16" in (da.name, db.name):
        other = db if da.name == "bfloat16" else da
        if other.kind in "biu":
            return "float32" if other.itemsize > 1 else "bfloat16"
        return "float32"
    r = np.promote_types(da, db).name
    return {"int64": "int32", "float64": "float32", "uint64": "uint32"}.get(r, r)


_rt16_ORDER = [
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


@wrong(
    "promoted_dtype",
    why="Clause 'int' / 'float' for a Python scalar: treating Python scalars as strong int32/float32 (forgetting weak typing); uint8 + 'int' gives int32 instead of uint8, bfloat16 + 'float' gives float32 instead of bfloat16.",
)
def _rt16_promoted_dtype_strong_scalars(a: str, b: str) -> str:
    a = _rt16_NP_KIND.get(a, a)
    b = _rt16_NP_KIND.get(b, b)
    if a == b:
        return a
    fl = {"bfloat16", "float16", "float32"}
    if a in fl and b in fl:
        return "float32"
    if a in fl or b in fl:
        return a if a in fl else b
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    ua, ub = a.startswith("u"), b.startswith("u")
    bits = lambda s: int(s.lstrip("uint") or 0)  # noqa: E731
    if ua == ub:
        return a if bits(a) >= bits(b) else b
    u, s = (a, b) if ua else (b, a)
    if bits(s) > bits(u):
        return s
    return {8: "int16", 16: "int32", 32: "int32"}[bits(u)]


def _rt16_jax_promote(a: str, b: str) -> str:
    """JAX lattice for the ten dtypes, with weak Python scalars."""
    if a == b:
        return {"int": "int32", "float": "float32"}.get(a, a)
    fl = ["bfloat16", "float16", "float32"]
    if a == "float" or b == "float":
        o = b if a == "float" else a
        return o if o in fl else "float32"
    if a == "int" or b == "int":
        o = b if a == "int" else a
        return "int32" if o == "bool" else o
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    if a in fl and b in fl:
        return "float32"
    if a in fl or b in fl:
        return a if a in fl else b
    ua, ub = a.startswith("u"), b.startswith("u")
    bits = lambda s: int(s.replace("uint", "").replace("int", ""))  # noqa: E731
    if ua == ub:
        return a if bits(a) >= bits(b) else b
    u, s = (a, b) if ua else (b, a)
    if bits(s) > bits(u):
        return s
    return {8: "int16", 16: "int32", 32: "int32"}[bits(u)]


@wrong(
    "mlp_avals",
    why="Clause 'in which order does jax flatten a dict': inputs listed in insertion order w1, b1, w2, b2 instead of sorted keys b1, b2, w1, w2; every shape with in_dim != hidden puts the wrong shape first.",
)
def _rt16_mlp_avals_insertion_order(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    p = param_dtype
    ins = [
        ((in_dim, hidden), p),
        ((hidden,), p),
        ((hidden, out_dim), p),
        ((out_dim,), p),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), _rt16_jax_promote(p, x_dtype))]


@wrong(
    "mlp_avals",
    why="Clause 'mlp's relu is jnp.maximum(v, 0), a Python 0': ignoring that bool v with a weak int 0 becomes int32; bool params with bool x give output int32 in JAX, this answers bool.",
)
def _rt16_mlp_avals_ignore_relu_zero(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    p = param_dtype
    ins = [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), _rt16_jax_promote(p, x_dtype))]


@wrong(
    "mlp_avals",
    why="Clause 'all of dtype param_dtype; x of dtype x_dtype' (promoted_dtype): assuming the output takes the params' dtype; bf16 params with an f32 x give float32 in JAX, this answers bfloat16; int8 params with a uint8 x give int16, this answers int8.",
)
def _rt16_mlp_avals_param_dtype_out(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    p = param_dtype
    ins = [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), p)]
