"""Red-team wrong answers for phase 2, written from the contract only."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt5_mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


# ----------------------------------------------------------------------------- mlp_jaxpr


_rt5_CACHE: dict = {}


@wrong(
    "mlp_jaxpr",
    why="the jaxpr's avals must follow the arguments of each call; the cache is keyed on shapes "
    "and x's dtype only, so wrong on the same shapes met with a second params dtype in a row "
    "(f32 params then bf16 params, x f32 (7,5)): returns the f32-params jaxpr",
)
def _rt5_mlp_jaxpr_cached_by_shape(params: dict, x):
    key = (np.shape(x), str(np.asarray(x).dtype), tuple(np.shape(v) for v in params.values()))
    if key not in _rt5_CACHE:
        _rt5_CACHE[key] = jax.make_jaxpr(_rt5_mlp)(params, x)
    return _rt5_CACHE[key]


@wrong(
    "mlp_jaxpr",
    why="x keeps its dtype when it differs from the params'; casting a non-float x (int32 or bool) "
    "to the params' dtype first changes the x input aval: wrong on f32 params with int32 x",
)
def _rt5_mlp_jaxpr_casts_int_x(params: dict, x):
    x = np.asarray(x)
    w = np.asarray(params["w1"])
    if not np.issubdtype(x.dtype, np.floating) and x.dtype.name != "bfloat16":
        x = x.astype(w.dtype)
    return jax.make_jaxpr(_rt5_mlp)(params, x)


@wrong(
    "mlp_jaxpr",
    why="x keeps its rank (one example (in_dim,) or a batch, or more); reshaping x to 2-D "
    "changes the x aval: wrong on x of rank 1 (16,) or rank 3 (2,3,16)",
)
def _rt5_mlp_jaxpr_forces_2d(params: dict, x):
    x = np.asarray(x)
    x2 = x.reshape(-1, x.shape[-1])
    return jax.make_jaxpr(_rt5_mlp)(params, x2)


# ----------------------------------------------------------------------------- census


def _rt5_as_jaxprs(value):
    if value is None:
        return []
    if hasattr(value, "eqns"):
        return [value]
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        return [value.jaxpr]
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_rt5_as_jaxprs(v))
        return out
    return []


def _rt5_eqns(j):
    return j.eqns if hasattr(j, "eqns") else j.jaxpr.eqns


@wrong(
    "primitive_census",
    why="each branch of a cond counts; deduplicating branches that are the same jaxpr object "
    "(only one runs, and JAX's trace cache shares identical branches) undercounts: wrong on "
    "lax.cond(p, jnp.sin, jnp.sin, x) (sin: 2, not 1)",
)
def _rt5_census_dedupes_shared_branches(jaxpr) -> Counter:
    c = Counter()
    for eqn in _rt5_eqns(jaxpr):
        c[eqn.primitive.name] += 1
        for name, value in eqn.params.items():
            subs = _rt5_as_jaxprs(value)
            if name == "branches":
                unique = []
                for sub in subs:
                    if not any(sub is u for u in unique):
                        unique.append(sub)
                subs = unique
            for sub in subs:
                c += _rt5_census_dedupes_shared_branches(sub)
    return c


def _rt5_census_depth(jaxpr, depth) -> Counter:
    c = Counter()
    for eqn in _rt5_eqns(jaxpr):
        c[eqn.primitive.name] += 1
        if depth >= 4:  # guard against runaway recursion
            continue
        for value in eqn.params.values():
            for sub in _rt5_as_jaxprs(value):
                c += _rt5_census_depth(sub, depth + 1)
    return c


@wrong(
    "primitive_census",
    why="nested jaxprs count at any depth; a recursion guard stops after 4 nesting levels: "
    "wrong on a 6-deep nesting (jit(cond(scan(while(remat(jit(sin)))))): sin is missing)",
)
def _rt5_census_depth_limited(jaxpr) -> Counter:
    return _rt5_census_depth(jaxpr, 0)


_rt5_ONLY_HIGHER_ORDER = {
    "jit",
    "pjit",
    "closed_call",
    "core_call",
    "cond",
    "while",
    "scan",
    "remat",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
    "custom_linear_solve",
    "linear_call",
    "custom_vmap_call",
    "remat2",
    "eval_jaxpr",
    "shard_map",
    "xla_pmap",
    "run_state",
    "custom_lin",
}


@wrong(
    "primitive_census",
    why="every equation's params may hold a jaxpr, leaves too (scatter-add's update_jaxpr, a "
    "reduce's jaxpr, reduce_window's jaxpr); recursing only into a list of higher-order "
    "primitives misses them: wrong on jit(lambda x: x.at[i].add(y)) (the update_jaxpr's add) "
    "or lax.reduce with a custom max computation",
)
def _rt5_census_control_flow_only(jaxpr) -> Counter:
    c = Counter()
    for eqn in _rt5_eqns(jaxpr):
        c[eqn.primitive.name] += 1
        if eqn.primitive.name not in _rt5_ONLY_HIGHER_ORDER:
            continue
        for value in eqn.params.values():
            for sub in _rt5_as_jaxprs(value):
                c += _rt5_census_control_flow_only(sub)
    return c


# ----------------------------------------------------------------------------- io_avals


@wrong(
    "io_avals",
    why="an output literal's dtype is its aval's (a returned Python 1.0 is a float32 output, 3 an "
    "int32 one); reading it from the literal's value with np.asarray gives float64/int64: wrong "
    "on passthrough-like f(x) = (x, 1.0) or (x, 3)",
)
def _rt5_io_avals_literal_value_dtype(jaxpr):
    ins = [(tuple(a.shape), a.dtype.name) for a in jaxpr.in_avals]
    outs = []
    for v, a in zip(jaxpr.jaxpr.outvars, jaxpr.out_avals):
        if isinstance(v, jax.extend.core.Literal):
            val = np.asarray(v.val)
            outs.append((tuple(val.shape), val.dtype.name))
        else:
            outs.append((tuple(a.shape), a.dtype.name))
    return ins, outs


def _rt5_lit_dtype(val):
    kind = np.asarray(val).dtype.kind
    return {"b": "bool", "f": "float32", "V": "float32", "i": "int32", "u": "int32"}.get(
        kind, np.asarray(val).dtype.name
    )


@wrong(
    "io_avals",
    why="a 0-d NumPy value returned is inlined with its own dtype; naming a literal output by its "
    "Python kind (float -> float32, int -> int32) is wrong on returning np.float16(2) or "
    "np.uint8(7) as an output (float16 / uint8)",
)
def _rt5_io_avals_literal_by_kind(jaxpr):
    ins = [(tuple(a.shape), a.dtype.name) for a in jaxpr.in_avals]
    outs = []
    for v, a in zip(jaxpr.jaxpr.outvars, jaxpr.out_avals):
        if isinstance(v, jax.extend.core.Literal):
            outs.append(((), _rt5_lit_dtype(v.val)))
        else:
            outs.append((tuple(a.shape), a.dtype.name))
    return ins, outs


@wrong(
    "io_avals",
    why="a Python scalar argument is a 'float32' or 'int32' input; naming weakly typed inputs by "
    "their Python kind ('float', 'int', as promoted_dtype's kinds) is wrong on f(x, 2.5) with a "
    "Python float argument",
)
def _rt5_io_avals_weak_as_kind(jaxpr):
    def name(a):
        if getattr(a, "weak_type", False) and a.shape == ():
            return "float" if np.issubdtype(a.dtype, np.floating) else "int"
        return a.dtype.name

    ins = [(tuple(a.shape), name(a)) for a in jaxpr.in_avals]
    outs = [(tuple(a.shape), a.dtype.name) for a in jaxpr.out_avals]
    return ins, outs


# ----------------------------------------------------------------------------- literals


def _rt5_literals(jaxpr, primitive):
    for eqn in _rt5_eqns(jaxpr):
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if isinstance(v, jax.extend.core.Literal):
                yield v


@wrong(
    "literal_operands",
    why="literals of every dtype, unsigned ones too, exactly; normalising integer literals "
    "through int32 wraps a uint32 at its edge: wrong on x + np.uint32(4294967295) for a uint32 x "
    "(gives -1.0)",
)
def _rt5_literal_operands_via_int32(jaxpr, primitive: str):
    out = []
    for v in _rt5_literals(jaxpr, primitive):
        val = np.asarray(v.val)
        if np.issubdtype(val.dtype, np.integer):
            out.append(float(val.astype(np.int32)))
        else:
            out.append(float(val))
    return out


@wrong(
    "literal_operands",
    why="every literal operand counts, in operand order, repeats kept; taking only the first "
    "literal of each equation is wrong on an equation with two literal operands, e.g. "
    "lax.clamp(0.0, x, 6.0) (clamp 0.0 and 6.0) or jnp.where(p, 1.0, 2.0)'s select_n",
)
def _rt5_literal_operands_first_only(jaxpr, primitive: str):
    out = []
    for eqn in _rt5_eqns(jaxpr):
        if eqn.primitive.name != primitive:
            continue
        lits = [v for v in eqn.invars if isinstance(v, jax.extend.core.Literal)]
        if lits:
            out.append(float(np.asarray(lits[0].val)))
    return out


@wrong(
    "literal_operands",
    why="values exactly, whatever the dtype; going through float32 rounds an int32 16777217 to "
    "16777216.0 and a large uint32 too: wrong on x + np.int32(16777217) for an int32 x",
)
def _rt5_literal_operands_float32(jaxpr, primitive: str):
    return [float(np.float32(np.asarray(v.val))) for v in _rt5_literals(jaxpr, primitive)]


# ----------------------------------------------------------------------------- unused


@wrong(
    "unused_equations",
    why="an equation read only by dead equations is dead, however many times it is read; "
    "reference counting that subtracts once per distinct operand of a dead reader leaves a "
    "value read twice alive: wrong on a = sin(x); b = a * a (unused) -> sin and mul both dead",
)
def _rt5_unused_refcount_distinct(jaxpr):
    j = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    counts: Counter = Counter()
    for v in j.outvars:
        if not isinstance(v, jax.extend.core.Literal):
            counts[v] += 1
    for eqn in j.eqns:
        for v in eqn.invars:
            if not isinstance(v, jax.extend.core.Literal):
                counts[v] += 1
    dead = [False] * len(j.eqns)
    changed = True
    while changed:
        changed = False
        for i, eqn in enumerate(j.eqns):
            if dead[i]:
                continue
            if all(counts[o] == 0 for o in eqn.outvars):
                dead[i] = True
                changed = True
                for v in set(v for v in eqn.invars if not isinstance(v, jax.extend.core.Literal)):
                    counts[v] -= 1
    return [e.primitive.name for e, d in zip(j.eqns, dead) if d]


def _rt5_top(jaxpr):
    return jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr


@wrong(
    "unused_equations",
    why="a jit whose results nobody reads is dead like any equation; treating every equation "
    "that holds a jaxpr as live (it may have effects) is wrong on y = jax.jit(jnp.sin)(x) unused "
    "(jit dead)",
)
def _rt5_unused_calls_always_live(jaxpr):
    j = _rt5_top(jaxpr)
    read = {v for v in j.outvars if not isinstance(v, jax.extend.core.Literal)}
    dead = []
    for eqn in reversed(j.eqns):
        holds = any(_rt5_as_jaxprs(p) for p in eqn.params.values())
        if holds or any(o in read for o in eqn.outvars):
            read.update(v for v in eqn.invars if not isinstance(v, jax.extend.core.Literal))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "unused_equations",
    why="an equation with several results is live when any of them is read; requiring every "
    "result to be read marks a jit returning (exp, log) with only exp read as dead: wrong on "
    "programs.dead_inside_only",
)
def _rt5_unused_all_results(jaxpr):
    j = _rt5_top(jaxpr)
    read = {v for v in j.outvars if not isinstance(v, jax.extend.core.Literal)}
    dead = []
    for eqn in reversed(j.eqns):
        outs = [o for o in eqn.outvars if type(o).__name__ != "DropVar"]
        if outs and all(o in read for o in outs):
            read.update(v for v in eqn.invars if not isinstance(v, jax.extend.core.Literal))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


# ----------------------------------------------------------------------------- stablehlo


@wrong(
    "stablehlo_of",
    why="a Python scalar argument is a 0-d tensor of @main; making Python scalars static "
    "(they are constants anyway) drops them from @main: wrong on f(w, 2.5) with w bf16[3]",
)
def _rt5_stablehlo_static_scalars(f, *args):
    static = tuple(i for i, a in enumerate(args) if isinstance(a, (int, float, bool)))
    return jax.jit(f, static_argnums=static).lower(*args).as_text()


@wrong(
    "stablehlo_of",
    why="a Python scalar stays weakly typed (w * 2.5 stays bf16 for a bf16 w); lowering on "
    "ShapeDtypeStructs built from np.result_type makes 2.5 a strong f32 (float64 canonicalised): "
    "wrong on f = lambda w, s: w * s with w bf16[3], s = 2.5 (result tensor<3xf32>)",
)
def _rt5_stablehlo_abstract(f, *args):
    specs = [
        jax.ShapeDtypeStruct(np.shape(a), jax.dtypes.canonicalize_dtype(np.result_type(a)))
        for a in args
    ]
    return jax.jit(f).lower(*specs).as_text()


@wrong(
    "stablehlo_of",
    why="@main takes the arguments' dtypes; converting bf16 NumPy arguments to float32 first "
    "(NumPy has no native bf16) changes them: wrong on programs.mixed with w bf16[2,3]",
)
def _rt5_stablehlo_bf16_as_f32(f, *args):
    def fix(a):
        if isinstance(a, np.ndarray) and a.dtype.name == "bfloat16":
            return a.astype(np.float32)
        return a

    return jax.jit(f).lower(*map(fix, args)).as_text()


# ----------------------------------------------------------------------------- consts


@wrong(
    "closure_consts",
    why="each const keeps its own dtype, bfloat16 too; converting bf16 consts to float32 "
    "(NumPy has no bf16) is wrong on programs.two_consts (HALVES is bf16)",
)
def _rt5_closure_consts_bf16_f32(jaxpr):
    out = []
    for c in jaxpr.consts:
        a = np.asarray(c)
        if a.dtype.name == "bfloat16":
            a = a.astype(np.float32)
        out.append(a)
    return out


@wrong(
    "closure_consts",
    why="a 0-d jax Array closed over is a const (only Python scalars and 0-d NumPy arrays are "
    "inlined); dropping 0-d consts is wrong on lambda x: x + jnp.float32(2.0) closed over as a "
    "jax Array (jnp.asarray(2.0))",
)
def _rt5_closure_consts_skip_scalars(jaxpr):
    return [np.asarray(c) for c in jaxpr.consts if np.ndim(c) > 0]


@wrong(
    "closure_consts",
    why="top level only: a nested jit keeps its own closed-over arrays; collecting nested "
    "ClosedJaxprs' consts too adds extra arrays: wrong on lambda x: jax.jit(lambda v: v + TABLE)(x) "
    "when the inner jit keeps TABLE as its own const, or x*HALVES plus such a jit",
)
def _rt5_closure_consts_nested(jaxpr):
    out = [np.asarray(c) for c in jaxpr.consts]

    def walk(j):
        for eqn in _rt5_eqns(j):
            for value in eqn.params.values():
                for v in [value] if not isinstance(value, (tuple, list)) else value:
                    consts = getattr(v, "consts", None)
                    if consts:
                        out.extend(np.asarray(c) for c in consts)
                    if v is not None and (hasattr(v, "eqns") or hasattr(v, "jaxpr")):
                        try:
                            walk(v)
                        except AttributeError:
                            pass

    walk(jaxpr)
    return out


# ----------------------------------------------------------------------------- promotion

# JAX lattice (x64 names), Python kinds as weak nodes.
_rt5_UP = {
    "bool": ["i*"],
    "i*": ["uint8", "int8"],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["uint64", "int64"],
    "uint64": ["f*"],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": ["f*"],
    "f*": ["bfloat16", "float16"],
    "bfloat16": ["float32"],
    "float16": ["float32"],
    "float32": ["float64"],
    "float64": [],
}
_rt5_X32 = {
    "i*": "int32",
    "f*": "float32",
    "int64": "int32",
    "uint64": "uint32",
    "float64": "float32",
}


def _rt5_above(node):
    seen = {node}
    todo = [node]
    while todo:
        for n in _rt5_UP[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _rt5_join(a, b):
    common = _rt5_above(a) & _rt5_above(b)
    return next(n for n in common if common <= _rt5_above(n))


def _rt5_node(kind):
    return {"int": "i*", "float": "f*"}.get(kind, kind)


@wrong(
    "promoted_dtype",
    why="JAX runs with 32-bit types, so the lattice's int64 node is int32; keeping the 64-bit "
    "name is wrong on ('uint32', 'int32') and ('uint32', 'int8') (int32, not int64)",
)
def _rt5_promoted_dtype_int64(a: str, b: str) -> str:
    j = _rt5_join(_rt5_node(a), _rt5_node(b))
    return {"i*": "int32", "f*": "float32"}.get(j, j)


@wrong(
    "promoted_dtype",
    why="Python scalars are weak in either position; handling the weak kind only as the second "
    "operand (x + 2) treats a leading Python int as int32: wrong on ('int', 'uint8') (uint8)",
)
def _rt5_promoted_dtype_weak_right_only(a: str, b: str) -> str:
    if a in ("int", "float") and b not in ("int", "float"):
        a = "int32" if a == "int" else "float32"
    j = _rt5_join(_rt5_node(a), _rt5_node(b))
    return _rt5_X32.get(j, j)


@wrong(
    "promoted_dtype",
    why="an integer meets a float at that float (int16 + bfloat16 is bfloat16); promoting mixed "
    "int/float to float32 (a float wide enough for the int) is wrong on ('int8', 'bfloat16') "
    "and ('uint16', 'float16')",
)
def _rt5_promoted_dtype_int_float_f32(a: str, b: str) -> str:
    j = _rt5_join(_rt5_node(a), _rt5_node(b))
    ints = {"bool", "uint8", "uint16", "uint32", "int8", "int16", "int32", "int"}
    if {a in ints, b in ints} == {True, False} and j in ("bfloat16", "float16"):
        other = b if a in ints else a
        if other != "float":
            return "float32"
    return _rt5_X32.get(j, j)


def _rt5_promote(a, b):
    j = _rt5_join(_rt5_node(a), _rt5_node(b))
    return _rt5_X32.get(j, j)


def _rt5_mlp_in(batch, in_dim, hidden, out_dim, p, x):
    return [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x),
    ]


@wrong(
    "mlp_avals",
    why="relu is jnp.maximum(v, 0) with a Python 0: a bool hidden value meets a weak int and "
    "becomes int32, so the output is int32; promoting x and params only gives bool: wrong on "
    "param_dtype='bool', x_dtype='bool'",
)
def _rt5_mlp_avals_no_relu_promotion(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    d = _rt5_promote(param_dtype, x_dtype)
    return _rt5_mlp_in(batch, in_dim, hidden, out_dim, param_dtype, x_dtype), [
        ((batch, out_dim), d)
    ]


@wrong(
    "mlp_avals",
    why="JAX runs in 32-bit mode: uint32 params with int32 x meet at int32; keeping the lattice's "
    "64-bit name gives int64: wrong on param_dtype='uint32', x_dtype='int8'",
)
def _rt5_mlp_avals_int64(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    j = _rt5_join(_rt5_node(param_dtype), _rt5_node(x_dtype))
    d = {"i*": "int32", "f*": "float32"}.get(j, j)
    if d == "bool":
        d = "int32"
    return _rt5_mlp_in(batch, in_dim, hidden, out_dim, param_dtype, x_dtype), [
        ((batch, out_dim), d)
    ]


@wrong(
    "mlp_avals",
    why="the output dtype is where x's and the params' dtypes meet; taking the wider by itemsize "
    "(ties to the params) is wrong on bfloat16 params with float16 x (float32) and on uint8 "
    "params with int8 x (int16)",
)
def _rt5_mlp_avals_wider_itemsize(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    import ml_dtypes

    def size(n):
        return np.dtype(ml_dtypes.bfloat16 if n == "bfloat16" else n).itemsize

    ints = {"bool", "uint8", "uint16", "uint32", "int8", "int16", "int32"}
    if (param_dtype in ints) != (x_dtype in ints):
        d = x_dtype if param_dtype in ints else param_dtype
    else:
        d = x_dtype if size(x_dtype) > size(param_dtype) else param_dtype
    if d == "bool":
        d = "int32"
    return _rt5_mlp_in(batch, in_dim, hidden, out_dim, param_dtype, x_dtype), [
        ((batch, out_dim), d)
    ]
