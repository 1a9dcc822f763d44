"""Red-team wrong answers for phase 2, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.extend.core
import ml_dtypes
import numpy as np

from kata_harness.decoys import wrong


def _rt4_mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt4_is_literal(v) -> bool:
    return isinstance(v, jax.extend.core.Literal)


def _rt4_inner(j):
    """The open jaxpr with .eqns of a closed or open jaxpr."""
    inner = getattr(j, "jaxpr", None)
    return inner if hasattr(inner, "eqns") else j


def _rt4_is_jaxpr(v) -> bool:
    return hasattr(v, "eqns") or hasattr(getattr(v, "jaxpr", None), "eqns")


# ---------------------------------------------------------------- task 1: mlp_jaxpr


@wrong(
    "mlp_jaxpr",
    why="x keeps its rank (x may be one example (in_dim,)): this adds a batch axis first; "
    "wrong on x of shape (16,) (the jaxpr's x aval becomes (1, 16), the output (1, 4))",
)
def _rt4_mlp_jaxpr_batches_x(params: dict, x):
    return jax.make_jaxpr(_rt4_mlp)(params, np.atleast_2d(np.asarray(x)))


@wrong(
    "mlp_jaxpr",
    why="x keeps its dtype when it differs from the params': this casts x to w1's dtype before "
    "tracing; wrong on bf16 params with an f32 x (x aval bf16, output bf16 instead of f32)",
)
def _rt4_mlp_jaxpr_casts_x(params: dict, x):
    x = np.asarray(x).astype(np.asarray(params["w1"]).dtype)
    return jax.make_jaxpr(_rt4_mlp)(params, x)


@wrong(
    "mlp_jaxpr",
    why="params are traced as one pytree (dict leaves in jax's sorted-key order b1, b2, w1, w2, "
    "then x): this passes the leaves in insertion order w1, b1, w2, b2 as separate arguments; "
    "wrong on every input (invars in the wrong order)",
)
def _rt4_mlp_jaxpr_insertion_order(params: dict, x):
    def flat(w1, b1, w2, b2, x):
        return _rt4_mlp({"w1": w1, "b1": b1, "w2": w2, "b2": b2}, x)

    return jax.make_jaxpr(flat)(params["w1"], params["b1"], params["w2"], params["b2"], x)


# ---------------------------------------------------------------- task 2: primitive_census


def _rt4_census(jaxpr, depth, max_depth, branch_max, strict_tuples):
    counts = Counter()
    for eqn in _rt4_inner(jaxpr).eqns:
        counts[eqn.primitive.name] += 1
        if max_depth is not None and depth >= max_depth:
            continue
        for key, value in eqn.params.items():
            if _rt4_is_jaxpr(value):
                counts += _rt4_census(value, depth + 1, max_depth, branch_max, strict_tuples)
            elif isinstance(value, (tuple, list)):
                items = list(value)
                if strict_tuples and not all(_rt4_is_jaxpr(v) for v in items):
                    continue
                subs = [
                    _rt4_census(v, depth + 1, max_depth, branch_max, strict_tuples)
                    for v in items
                    if _rt4_is_jaxpr(v)
                ]
                if branch_max and key == "branches":
                    merged = Counter()
                    for s in subs:
                        merged |= s
                    counts += merged
                else:
                    for s in subs:
                        counts += s
    return counts


@wrong(
    "primitive_census",
    why="nested jaxprs count 'at any depth': this stops recursing after three levels of nesting "
    "(enough for jit in jit in jit); wrong on four nested jax.jit around jnp.exp (exp missing)",
)
def _rt4_census_depth_three(jaxpr) -> Counter:
    return _rt4_census(jaxpr, 0, 3, False, False)


@wrong(
    "primitive_census",
    why="'one cond plus what each of its branches contains': this takes the max over cond "
    "branches (only one runs) instead of the sum; wrong on lax.cond(p, jnp.sin, lambda v: "
    "jnp.sin(v) * 2.0, x) (sin 1 instead of 2)",
)
def _rt4_census_branch_max(jaxpr) -> Counter:
    return _rt4_census(jaxpr, 0, None, True, False)


@wrong(
    "primitive_census",
    why="custom_linear_solve's `jaxprs` is a named tuple of four 'some of them None': this only "
    "recurses into a tuple whose every element is a jaxpr; wrong on a non-symmetric "
    "lax.custom_linear_solve with no transpose_solve (its mul and div are missed)",
)
def _rt4_census_all_or_nothing_tuple(jaxpr) -> Counter:
    return _rt4_census(jaxpr, 0, None, False, True)


# ---------------------------------------------------------------- task 3: io_avals

_rt4_KIND = {"f": "float", "i": "int", "u": "uint"}


def _rt4_dtype_name(dtype) -> str:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return "bool"
    if dt.kind == "V":  # ml_dtypes' extension types: the example's one is bfloat16
        return "bfloat16"
    return f"{_rt4_KIND[dt.kind]}{dt.itemsize * 8}"


@wrong(
    "io_avals",
    why="a dtype is numpy's name 'for every dtype': this builds the name from kind and width and "
    "takes every ml_dtypes extension type for bfloat16; wrong on a float8_e4m3fn or int4 input "
    "or output ('bfloat16' instead of 'float8_e4m3fn' / 'int4')",
)
def _rt4_io_avals_kind_width(jaxpr):
    ins = [(tuple(a.shape), _rt4_dtype_name(a.dtype)) for a in jaxpr.in_avals]
    outs = [(tuple(a.shape), _rt4_dtype_name(a.dtype)) for a in jaxpr.out_avals]
    return ins, outs


@wrong(
    "io_avals",
    why="an output may be a literal of any dtype (0-d NumPy arrays are inlined as literals): "
    "this gives a literal output the Python-scalar rule (floating -> 'float32', integer -> "
    "'int32'); wrong on lambda x: (x, np.float16(2.0), np.uint8(3)) ('float32', 'int32' "
    "instead of 'float16', 'uint8')",
)
def _rt4_io_avals_literal_python_rule(jaxpr):
    def entry(v):
        if _rt4_is_literal(v):
            kind = np.dtype(v.aval.dtype).kind
            name = {"b": "bool", "i": "int32", "u": "int32"}.get(kind, "float32")
            return tuple(v.aval.shape), name
        return tuple(v.aval.shape), np.dtype(v.aval.dtype).name

    ins = [(tuple(a.shape), np.dtype(a.dtype).name) for a in jaxpr.in_avals]
    outs = [entry(v) for v in jaxpr.jaxpr.outvars]
    return ins, outs


@wrong(
    "io_avals",
    why="'one entry per output, in order, repeats kept': this collects outputs keyed by variable "
    "(dict.fromkeys, to skip literals that are not hashable twice); wrong on lambda x: (x, x) "
    "(one output entry instead of two)",
)
def _rt4_io_avals_dedupe_outvars(jaxpr):
    ins = [(tuple(a.shape), np.dtype(a.dtype).name) for a in jaxpr.in_avals]
    seen = {}
    for v in jaxpr.jaxpr.outvars:
        key = id(v) if _rt4_is_literal(v) else v
        seen.setdefault(key, v)
    outs = [(tuple(v.aval.shape), np.dtype(v.aval.dtype).name) for v in seen.values()]
    return ins, outs


# ---------------------------------------------------------------- task 4: literal_operands


@wrong(
    "literal_operands",
    why="'only equations of that primitive, by its whole name (add not scatter-add)': this "
    "matches the name as a regex word (\\b), and '-' is a word boundary; wrong on "
    "x.at[0].add(2.0) asked for 'add' ([2.0] instead of [])",
)
def _rt4_literal_operands_word_match(jaxpr, primitive: str) -> list[float]:
    pattern = re.compile(rf"\b{re.escape(primitive)}\b")
    return [
        float(np.asarray(v.val))
        for eqn in _rt4_inner(jaxpr).eqns
        if pattern.search(eqn.primitive.name)
        for v in eqn.invars
        if _rt4_is_literal(v)
    ]


@wrong(
    "literal_operands",
    why="'as floats (an int8 3 gives 3.0, True gives 1.0)': this returns .item() of each "
    "literal, so ints stay int and bools stay bool; wrong on x + np.int8(3) for int8 x "
    "([3], an int, not 3.0) and on b | True for bool b ([True], not 1.0)",
)
def _rt4_literal_operands_item(jaxpr, primitive: str) -> list[float]:
    return [
        np.asarray(v.val).item()
        for eqn in _rt4_inner(jaxpr).eqns
        if eqn.primitive.name == primitive
        for v in eqn.invars
        if _rt4_is_literal(v)
    ]


@wrong(
    "literal_operands",
    why="'exactly (an int32 16777217 gives 16777217.0)': this goes through float32 (jax's "
    "default float); wrong on x + 16777217 for int32 x (16777216.0)",
)
def _rt4_literal_operands_float32(jaxpr, primitive: str) -> list[float]:
    return [
        float(np.float32(np.asarray(v.val)))
        for eqn in _rt4_inner(jaxpr).eqns
        if eqn.primitive.name == primitive
        for v in eqn.invars
        if _rt4_is_literal(v)
    ]


# ---------------------------------------------------------------- task 5: unused_equations


@wrong(
    "unused_equations",
    why="'an equation read only by dead equations is dead too ... however long the chain': "
    "this prunes in three passes (the docstring's chain has three links); wrong on a four-link "
    "dead chain sin -> mul -> cos -> exp (sin reported live)",
)
def _rt4_unused_three_passes(jaxpr) -> list[str]:
    eqns = list(_rt4_inner(jaxpr).eqns)
    outs = {v for v in _rt4_inner(jaxpr).outvars if not _rt4_is_literal(v)}
    dead: set[int] = set()
    for _ in range(3):
        read = set(outs)
        for k, eqn in enumerate(eqns):
            if k in dead:
                continue
            read.update(v for v in eqn.invars if not _rt4_is_literal(v))
        for k, eqn in enumerate(eqns):
            if not any(o in read for o in eqn.outvars):
                dead.add(k)
    return [eqn.primitive.name for k, eqn in enumerate(eqns) if k in dead]


@wrong(
    "unused_equations",
    why="'however many times they read it': this counts readers per operand occurrence but "
    "releases a dead reader once per distinct operand; wrong on s = sin(x); unused s * s "
    "(sin stays live, only mul reported)",
)
def _rt4_unused_refcount_once(jaxpr) -> list[str]:
    inner = _rt4_inner(jaxpr)
    eqns = list(inner.eqns)
    readers: Counter = Counter()
    for v in inner.outvars:
        if not _rt4_is_literal(v):
            readers[v] += 1
    for eqn in eqns:
        for v in eqn.invars:
            if not _rt4_is_literal(v):
                readers[v] += 1
    dead = [False] * len(eqns)
    changed = True
    while changed:
        changed = False
        for k in range(len(eqns) - 1, -1, -1):
            if dead[k]:
                continue
            if all(readers[o] == 0 for o in eqns[k].outvars):
                dead[k] = True
                changed = True
                for v in {v for v in eqns[k].invars if not _rt4_is_literal(v)}:
                    readers[v] -= 1
    return [e.primitive.name for e, d in zip(eqns, dead, strict=True) if d]


def _rt4_dead_in(inner) -> list[str]:
    read = {v for v in inner.outvars if not _rt4_is_literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if any(o in read for o in eqn.outvars):
            read.update(v for v in eqn.invars if not _rt4_is_literal(v))
            for value in eqn.params.values():
                for item in value if isinstance(value, tuple) else (value,):
                    if _rt4_is_jaxpr(item):
                        dead.extend(reversed(_rt4_dead_in(_rt4_inner(item))))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "unused_equations",
    why="'Only top-level equations are reported (dead code inside a live jit's own jaxpr is "
    "not)': this also reports the dead equations of live equations' nested jaxprs; wrong on "
    "jax.jit(lambda v: (v * 2.0, v + 1.0)[1])(x) (reports the inner mul)",
)
def _rt4_unused_nested_too(jaxpr) -> list[str]:
    return _rt4_dead_in(_rt4_inner(jaxpr))


# ---------------------------------------------------------------- task 6: stablehlo_of


@wrong(
    "stablehlo_of",
    why="@main takes the arguments 'as jax.jit lowers it': this turns every argument into a "
    "NumPy array first, so a Python float becomes a strong f32 (not weak); wrong on "
    "f = lambda w, s: w * s with w bf16[2], s = 2.5 (multiply in f32, result f32, not bf16)",
)
def _rt4_stablehlo_numpy_args(f, *args) -> str:
    return jax.jit(f).lower(*[np.asarray(a) for a in args]).as_text()


@wrong(
    "stablehlo_of",
    why="'@main takes one tensor per argument': this marks Python scalar arguments static "
    "(they are not arrays), so they vanish from @main and are baked in as constants; wrong on "
    "f = lambda w, s: w * s with w f32[3], s = 2.5 (@main takes one tensor, not two)",
)
def _rt4_stablehlo_static_scalars(f, *args) -> str:
    static = tuple(k for k, a in enumerate(args) if isinstance(a, (bool, int, float, complex)))
    return jax.jit(f, static_argnums=static).lower(*args).as_text()


@wrong(
    "stablehlo_of",
    why="'as jax.jit lowers it by default: an argument f never reads is pruned': this keeps "
    "every argument (keep_unused=True); wrong on lambda x, y: x * 2 (@main takes y too)",
)
def _rt4_stablehlo_keep_unused(f, *args) -> str:
    return jax.jit(f, keep_unused=True).lower(*args).as_text()


# ---------------------------------------------------------------- task 7: closure_consts


@wrong(
    "closure_consts",
    why="'plain NumPy arrays (np.ndarray)': this returns jaxpr.consts as they are; wrong when "
    "the closed-over value was a jax Array (jnp.arange(3.0)): a jax Array, not an np.ndarray",
)
def _rt4_consts_as_stored(jaxpr) -> list[np.ndarray]:
    return list(jaxpr.consts)


@wrong(
    "closure_consts",
    why="'a 0-d jax Array is a const' (only Python scalars and 0-d NumPy arrays are inlined): "
    "this drops 0-d values, taking them for literals; wrong on lambda x: x + jnp.float32(3.0)",
)
def _rt4_consts_drop_scalars(jaxpr) -> list[np.ndarray]:
    return [np.asarray(c) for c in jaxpr.consts if np.ndim(c) > 0]


@wrong(
    "closure_consts",
    why="'Top level only: a nested jit keeps the arrays it closed over in its own jaxpr': this "
    "also collects nested jaxprs' consts; wrong on a nested jax.jit closing over a jax Array "
    "(extra arrays appended)",
)
def _rt4_consts_nested_too(jaxpr) -> list[np.ndarray]:
    found = [np.asarray(c) for c in getattr(jaxpr, "consts", ())]

    def walk(j):
        for eqn in _rt4_inner(j).eqns:
            for value in eqn.params.values():
                items = value if isinstance(value, tuple) else (value,)
                for item in items:
                    if _rt4_is_jaxpr(item):
                        found.extend(np.asarray(c) for c in getattr(item, "consts", ()))
                        walk(item)

    walk(jaxpr)
    return found


# ---------------------------------------------------------------- task 8: promoted_dtype

# JAX's lattice (jax docs, type promotion): edges child -> parents
_rt4_UP = {
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
_rt4_X32 = {
    "int64": "int32",
    "uint64": "uint32",
    "float64": "float32",
    "i*": "int32",
    "f*": "float32",
}


def _rt4_above(node):
    out, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo.extend(_rt4_UP[n])
    return out


def _rt4_node(kind):
    return {"int": "i*", "float": "f*"}.get(kind, kind)


def _rt4_join(a, b):
    common = _rt4_above(a) & _rt4_above(b)
    return next(n for n in common if all(m in _rt4_above(n) for m in common))


def _rt4_lattice(a: str, b: str, canon=True) -> str:
    j = _rt4_join(_rt4_node(a), _rt4_node(b))
    return _rt4_X32.get(j, j) if canon else j


@wrong(
    "promoted_dtype",
    why="'JAX runs with its default 32-bit types': this walks the lattice but forgets to "
    "canonicalize the 64-bit meet; wrong on ('uint32', 'int32') and ('uint32', 'int8') "
    "('int64', jax says int32)",
)
def _rt4_promoted_no_x32(a: str, b: str) -> str:
    j = _rt4_lattice(a, b, canon=False)
    return {"i*": "int32", "f*": "float32"}.get(j, j)


@wrong(
    "promoted_dtype",
    why="Python scalars are weak but still nodes of the lattice: this lets a Python scalar always "
    "take the other side's dtype; wrong on ('bool', 'int') ('bool', jax says int32) and "
    "('int32', 'float') ('int32', jax says float32)",
)
def _rt4_promoted_scalar_always_loses(a: str, b: str) -> str:
    if a in ("int", "float") and b not in ("int", "float"):
        return b
    if b in ("int", "float") and a not in ("int", "float"):
        return a
    return _rt4_lattice(a, b)


@wrong(
    "promoted_dtype",
    why="unsigned meets signed at the lowest signed type holding both: this takes the signed "
    "type of twice the wider width; wrong on ('uint8', 'int16') ('int32', jax says int16)",
)
def _rt4_promoted_double_width(a: str, b: str) -> str:
    ints = {"uint8": 8, "uint16": 16, "uint32": 32, "int8": 8, "int16": 16, "int32": 32}
    if a in ints and b in ints and a.startswith("u") != b.startswith("u"):
        width = min(2 * max(ints[a], ints[b]), 32)
        return f"int{width}"
    return _rt4_lattice(a, b)


# ---------------------------------------------------------------- task 9: mlp_avals


def _rt4_mlp_io(batch, in_dim, hidden, out_dim, p, x, out_dtype):
    ins = [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x),
    ]
    return ins, [((batch, out_dim), out_dtype)]


@wrong(
    "mlp_avals",
    why="relu is jnp.maximum(v, 0) with a Python 0, a weak int node of the lattice: this "
    "promotes x with the params only; wrong on bool params and bool x (output 'bool', "
    "jax says int32)",
)
def _rt4_mlp_avals_ignore_relu(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    return _rt4_mlp_io(
        batch, in_dim, hidden, out_dim, param_dtype, x_dtype, _rt4_lattice(param_dtype, x_dtype)
    )


@wrong(
    "mlp_avals",
    why="relu's 0 is a Python int (weak), not an int32 array: this promotes with 'int32'; "
    "wrong on uint8 params and uint8 x (output 'int32', jax says uint8)",
)
def _rt4_mlp_avals_strong_zero(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    out = _rt4_lattice(_rt4_lattice(param_dtype, x_dtype), "int32")
    return _rt4_mlp_io(batch, in_dim, hidden, out_dim, param_dtype, x_dtype, out)


def _rt4_numpy_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


@wrong(
    "mlp_avals",
    why="the output dtype follows JAX's lattice, not NumPy's: this promotes x with the params "
    "by np.promote_types (ml_dtypes for bfloat16), narrows 64-bit to 32 and lets relu's 0 "
    "turn bool into int32; wrong on float16 params with int32 x ('float32', jax says float16) "
    "and bfloat16 params with uint16 x ('float32', jax says bfloat16)",
)
def _rt4_mlp_avals_numpy_promotion(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    try:
        out = np.promote_types(_rt4_numpy_dtype(param_dtype), _rt4_numpy_dtype(x_dtype)).name
    except TypeError:
        out = "float32"
    out = {"float64": "float32", "int64": "int32", "uint64": "uint32"}.get(out, out)
    if out == "bool":
        out = "int32"
    return _rt4_mlp_io(batch, in_dim, hidden, out_dim, param_dtype, x_dtype, out)
