"""Red-team wrong answers for phase 2, written from the contract only.

Round 3: each answer agrees with a correct one on the programs programs.py banks (as far as the
contract lets one guess the tests) and is wrong on a valid input named in its `why`.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong

_rt3_Avals = list[tuple[tuple[int, ...], str]]


def _rt3_mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


# ----------------------------------------------------------------------------------------------
# helpers shared by several answers (a learner's own small utilities)


def _rt3_is_jaxpr(value) -> bool:
    return hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns")


def _rt3_eqns(value):
    return value.eqns if hasattr(value, "eqns") else value.jaxpr.eqns


def _rt3_is_literal(v) -> bool:
    return isinstance(v, jax.extend.core.Literal)


_rt3_INT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "int8": 8, "int16": 16, "int32": 32}
_rt3_FLOATS = ("bfloat16", "float16", "float32")


def _rt3_strong_join(a: str, b: str) -> str:
    """The join of two (non-weak) dtype names in JAX's 32-bit lattice."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if a in _rt3_FLOATS or b in _rt3_FLOATS:
        if a in _rt3_FLOATS and b in _rt3_FLOATS:
            return "float32"  # bf16 with f16, or either with f32
        return a if a in _rt3_FLOATS else b
    ua, ub = a.startswith("u"), b.startswith("u")
    ba, bb = _rt3_INT_BITS[a], _rt3_INT_BITS[b]
    if ua == ub:
        return a if ba >= bb else b
    ubits, sbits = (ba, bb) if ua else (bb, ba)
    if sbits > ubits:
        return f"int{sbits}"
    return f"int{min(2 * ubits, 32)}"


def _rt3_join(a: str, b: str) -> str:
    """JAX's promotion of kinds a and b (dtype names, or 'int' / 'float' for Python scalars)."""
    weak = ("int", "float")
    if a in weak and b in weak:
        return "float32" if "float" in (a, b) else "int32"
    if b in weak:
        a, b = b, a
    if a == "int":
        return "int32" if b == "bool" else b
    if a == "float":
        return b if b in _rt3_FLOATS else "float32"
    return _rt3_strong_join(a, b)


def _rt3_mlp_out_dtype(p: str, x: str, join=_rt3_join) -> str:
    h = join(join(x, p), p)
    r = join(h, "int")  # relu: jnp.maximum(v, 0) with a Python 0
    return join(join(r, p), p)


def _rt3_mlp_in_avals(batch, in_dim, hidden, out_dim, p, x) -> _rt3_Avals:
    return [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x),
    ]


# ----------------------------------------------------------------------------------------------
# task 1: mlp_jaxpr

_rt3_MLP_CACHE: dict = {}


@wrong(
    "mlp_jaxpr",
    why=(
        "the jaxpr's avals follow the arguments (params' dtype too); a cache keyed on the shapes "
        "and x's dtype only hands back a stale jaxpr; wrong on mlp_jaxpr(f32 params, x) after "
        "mlp_jaxpr(bf16 params of the same shapes, x): the second answer has bf16 param avals"
    ),
)
def _rt3_mlp_jaxpr_cache_ignores_param_dtype(params: dict, x):
    # tracing is slow: trace once per shape
    key = (tuple(np.shape(v) for v in params.values()), np.shape(x), np.asarray(x).dtype.name)
    if key not in _rt3_MLP_CACHE:
        _rt3_MLP_CACHE[key] = jax.make_jaxpr(_rt3_mlp)(params, x)
    return _rt3_MLP_CACHE[key]


@wrong(
    "mlp_jaxpr",
    why=(
        "x is traced with its own shape; promoting a vector to a batch of one changes x's aval "
        "and the output's: wrong on x of shape (in_dim,) (mlp(params, x) of one example: "
        "in aval f32[in_dim], out f32[out]; this answer gives f32[1,in_dim] and f32[1,out])"
    ),
)
def _rt3_mlp_jaxpr_atleast_2d(params: dict, x):
    x = np.atleast_2d(np.asarray(x))  # a single example is a batch of one
    return jax.make_jaxpr(_rt3_mlp)(params, x)


# ----------------------------------------------------------------------------------------------
# task 2: primitive_census

_rt3_JAXPR_PARAMS = (
    "jaxpr",  # jit, scan, remat
    "call_jaxpr",  # custom_jvp_call, custom_vjp_call, closed calls
    "branches",  # cond, switch
    "cond_jaxpr",  # while
    "body_jaxpr",
    "jaxprs",  # custom_linear_solve
    "callee",  # linear_call
    "call",  # custom_vmap_call
)


@wrong(
    "primitive_census",
    why=(
        "counts only jaxprs under the param names it knows (the docstring's plus linear_call's "
        "`callee` and custom_vmap's `call`); scatter-add keeps its combiner in `update_jaxpr`: "
        "wrong on make_jaxpr(lambda v: v.at[1].add(2.0))(f32[4]) (misses the nested `add`)"
    ),
)
def _rt3_primitive_census_known_param_names(jaxpr) -> Counter:
    counts: Counter = Counter()
    for eqn in _rt3_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        for name in _rt3_JAXPR_PARAMS:
            value = eqn.params.get(name)
            if value is None:
                continue
            subs = value if isinstance(value, tuple) else (value,)
            for sub in subs:
                if _rt3_is_jaxpr(sub):
                    counts += _rt3_primitive_census_known_param_names(sub)
    return counts


@wrong(
    "primitive_census",
    why=(
        "a param holding a tuple counts as jaxprs only when every element is one; "
        "custom_linear_solve without symmetric=True (and no transpose_solve) keeps None in "
        "`jaxprs.vecmat` and `jaxprs.transpose_solve`: wrong on "
        "lax.custom_linear_solve(lambda v: v * 2.0, b, solve=lambda m, r: r / 2.0) (misses its "
        "mul and div)"
    ),
)
def _rt3_primitive_census_all_or_nothing_tuples(jaxpr) -> Counter:
    counts: Counter = Counter()
    for eqn in _rt3_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            if _rt3_is_jaxpr(value):
                counts += _rt3_primitive_census_all_or_nothing_tuples(value)
            elif (
                isinstance(value, (tuple, list)) and value and all(_rt3_is_jaxpr(v) for v in value)
            ):
                for sub in value:
                    counts += _rt3_primitive_census_all_or_nothing_tuples(sub)
    return counts


_rt3_MAX_NESTING = 4  # guard against runaway recursion


@wrong(
    "primitive_census",
    why=(
        "nested jaxprs count at any depth; this walk stops four levels down: wrong on five "
        "nested jits, jax.jit(jax.jit(jax.jit(jax.jit(jax.jit(jnp.sin)))))(x) (no `sin`, four "
        "`jit` instead of five)"
    ),
)
def _rt3_primitive_census_depth_capped(jaxpr, _depth: int = 0) -> Counter:
    counts: Counter = Counter()
    for eqn in _rt3_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        if _depth >= _rt3_MAX_NESTING - 1:
            continue
        for value in eqn.params.values():
            subs = value if isinstance(value, (tuple, list)) else (value,)
            for sub in subs:
                if _rt3_is_jaxpr(sub):
                    counts += _rt3_primitive_census_depth_capped(sub, _depth + 1)
    return counts


# ----------------------------------------------------------------------------------------------
# task 3: io_avals

_rt3_SHORT = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "bool": "bool",
}


def _rt3_from_short(aval) -> tuple[tuple[int, ...], str]:
    dtype, _, dims = aval.str_short(short_dtypes=True).partition("[")
    shape = tuple(int(d) for d in dims.rstrip("]").split(",") if d.strip())
    return shape, _rt3_SHORT.get(dtype, dtype)


@wrong(
    "io_avals",
    why=(
        "a dtype is a name such as 'int32'; the printed short names are mapped by a table that "
        "lacks i8/i16/u16/u32: wrong on make_jaxpr(lambda v: v)(np.ones(2, np.int8)) "
        "(gives 'i8', not 'int8'; likewise int16, uint16, uint32)"
    ),
)
def _rt3_io_avals_short_name_table(jaxpr) -> tuple[_rt3_Avals, _rt3_Avals]:
    ins = [_rt3_from_short(a) for a in jaxpr.in_avals]
    outs = [_rt3_from_short(a) for a in jaxpr.out_avals]
    return ins, outs


@wrong(
    "io_avals",
    why=(
        "one entry per output: an output is an input, an equation's result, a literal, or a "
        "closed-over array returned unchanged (a constvar); this answer knows only the first "
        "three: wrong on make_jaxpr(lambda x: (x, TABLE))(f32[3]) (one output, not two)"
    ),
)
def _rt3_io_avals_outputs_from_known_vars(jaxpr) -> tuple[_rt3_Avals, _rt3_Avals]:
    inner = jaxpr.jaxpr
    known = {v: v.aval for v in inner.invars}
    for eqn in inner.eqns:
        known.update({v: v.aval for v in eqn.outvars})
    ins = [(tuple(v.aval.shape), v.aval.dtype.name) for v in inner.invars]
    outs = []
    for v in inner.outvars:
        if _rt3_is_literal(v):
            outs.append((tuple(v.aval.shape), v.aval.dtype.name))
        elif v in known:
            outs.append((tuple(known[v].shape), known[v].dtype.name))
    return ins, outs


@wrong(
    "io_avals",
    why=(
        "a dtype is a name such as 'float32' or 'int32'; a weak-typed input (a Python scalar "
        "argument) is named 'float'/'int' as in promoted_dtype's kinds: wrong on "
        "make_jaxpr(lambda x, s: x * s)(f32[3], 2.0) (input 2 is ((), 'float32'), not "
        "((), 'float'))"
    ),
)
def _rt3_io_avals_weak_inputs_as_kinds(jaxpr) -> tuple[_rt3_Avals, _rt3_Avals]:
    def name(aval) -> str:
        if getattr(aval, "weak_type", False) and aval.shape == ():
            return "float" if np.issubdtype(aval.dtype, np.floating) else "int"
        return aval.dtype.name

    ins = [(tuple(a.shape), name(a)) for a in jaxpr.in_avals]
    outs = [(tuple(a.shape), a.dtype.name) for a in jaxpr.out_avals]
    return ins, outs


# ----------------------------------------------------------------------------------------------
# task 4: literal_operands


@wrong(
    "literal_operands",
    why=(
        "literals as floats (Python floats, exact for every int32); going through float32 "
        "rounds integers above 2**24: wrong on make_jaxpr(lambda v: v + 16777217)(i32[3]) "
        "with 'add' (gives 16777216.0, not 16777217.0)"
    ),
)
def _rt3_literal_operands_via_float32(jaxpr, primitive: str) -> list[float]:
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt3_is_literal(v):
                found.append(float(np.float32(np.asarray(v.val))))
    return found


@wrong(
    "literal_operands",
    why=(
        "every literal operand counts, of any dtype; this answer keeps only kinds 'f', 'i', "
        "'b' (it skips complex, and unsigned with it): wrong on "
        "make_jaxpr(lambda v: v + 3)(np.ones(3, np.uint8)) with 'add' (gives [], not [3.0])"
    ),
)
def _rt3_literal_operands_skips_unsigned(jaxpr, primitive: str) -> list[float]:
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt3_is_literal(v) and np.dtype(v.aval.dtype).kind in "fib":
                found.append(float(v.val))
    return found


@wrong(
    "literal_operands",
    why=(
        "only equations of `primitive` count; a substring match takes other primitives whose "
        "name contains it: wrong on make_jaxpr(lambda v: (v | True, v ^ False))(bool[3]) with "
        "'or' (gives [1.0, 0.0], not [1.0]); likewise 'add' picks up scatter-add"
    ),
)
def _rt3_literal_operands_substring_match(jaxpr, primitive: str) -> list[float]:
    found = []
    for eqn in jaxpr.eqns:
        if primitive not in str(eqn.primitive):
            continue
        for v in eqn.invars:
            if _rt3_is_literal(v):
                found.append(float(v.val))
    return found


# ----------------------------------------------------------------------------------------------
# task 5: unused_equations


@wrong(
    "unused_equations",
    why=(
        "an equation read only by dead equations is dead; reference counts that add one per "
        "operand but take one back per distinct operand leave `y` read when a dead equation "
        "reads it twice: wrong on y = sin(x); y * y (unused); return x + 1 (gives ['mul'], "
        "not ['sin', 'mul'])"
    ),
)
def _rt3_unused_equations_refcount(jaxpr) -> list[str]:
    inner = jaxpr.jaxpr
    reads: Counter = Counter()
    for eqn in inner.eqns:
        for v in eqn.invars:
            if not _rt3_is_literal(v):
                reads[v] += 1
    for v in inner.outvars:
        if not _rt3_is_literal(v):
            reads[v] += 1
    dead = [False] * len(inner.eqns)
    for i in range(len(inner.eqns) - 1, -1, -1):
        eqn = inner.eqns[i]
        if all(reads[v] == 0 for v in eqn.outvars):
            dead[i] = True
            for v in {v for v in eqn.invars if not _rt3_is_literal(v)}:
                reads[v] -= 1
    return [e.primitive.name for e, d in zip(inner.eqns, dead, strict=True) if d]


def _rt3_dead_in(inner) -> list[str]:
    live = {v for v in inner.outvars if not _rt3_is_literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not _rt3_is_literal(v))
            for value in eqn.params.values():
                subs = value if isinstance(value, (tuple, list)) else (value,)
                for sub in subs:
                    if _rt3_is_jaxpr(sub):
                        dead += _rt3_dead_in(sub.jaxpr if hasattr(sub, "jaxpr") else sub)
        else:
            dead.append(eqn.primitive.name)
    return dead


@wrong(
    "unused_equations",
    why=(
        "top-level equations only; this answer also reports dead code inside the jaxprs of "
        "live equations: wrong on jax.jit(lambda a: (a * 2.0, a + 1.0)[1])(x) (gives ['mul'], "
        "not [])"
    ),
)
def _rt3_unused_equations_also_nested(jaxpr) -> list[str]:
    return list(reversed(_rt3_dead_in(jaxpr.jaxpr)))


@wrong(
    "unused_equations",
    why=(
        "an equation with several results is dead when none is read; this answer keeps every "
        "multi-result equation (while, scan, a jit returning a pair) alive: wrong on "
        "jax.jit(lambda v: (jnp.sin(v), jnp.cos(v)))(x) left unused beside return x + 1 "
        "(gives [], not ['jit'])"
    ),
)
def _rt3_unused_equations_multi_result_live(jaxpr) -> list[str]:
    inner = jaxpr.jaxpr
    live = {v for v in inner.outvars if not _rt3_is_literal(v)}
    dead = []
    for eqn in reversed(inner.eqns):
        if len(eqn.outvars) > 1 or any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not _rt3_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


# ----------------------------------------------------------------------------------------------
# task 6: stablehlo_of


@wrong(
    "stablehlo_of",
    why=(
        "@main takes one tensor per argument with its dtype; marking Python-scalar arguments "
        "static bakes them in: wrong on stablehlo_of(lambda x, s: x * s, f32[3], 2.0) (@main "
        "has no tensor<f32> for s)"
    ),
)
def _rt3_stablehlo_of_python_scalars_static(f, *args) -> str:
    static = [i for i, a in enumerate(args) if isinstance(a, (bool, int, float))]
    return jax.jit(f, static_argnums=static, keep_unused=True).lower(*args).as_text()


@wrong(
    "stablehlo_of",
    why=(
        "arguments keep their dtypes; converting Python numbers to float32 arrays first turns "
        "a Python int or bool into a float tensor: wrong on stablehlo_of(lambda x, n: x + n, "
        "i32[3], 3) (@main's second argument is tensor<f32>, not tensor<i32>)"
    ),
)
def _rt3_stablehlo_of_numbers_as_f32(f, *args) -> str:
    args = tuple(
        np.asarray(a, np.float32) if isinstance(a, (bool, int, float)) else a for a in args
    )
    return jax.jit(f, keep_unused=True).lower(*args).as_text()


# ----------------------------------------------------------------------------------------------
# task 7: closure_consts


@wrong(
    "closure_consts",
    why=(
        "every constvar's value, in order; keeping only the NumPy ones drops a closed-over jax "
        "Array: wrong on make_jaxpr(lambda v: v + A)(f32[3]) with A = jnp.arange(3.0) (gives "
        "[], not [A]; the jaxpr cannot run with it)"
    ),
)
def _rt3_closure_consts_numpy_only(jaxpr) -> list[np.ndarray]:
    return [np.asarray(c) for c in jaxpr.consts if isinstance(c, np.ndarray)]


@wrong(
    "closure_consts",
    why=(
        "every constvar's value; a 0-d *jax* Array closed over is a constvar (only Python "
        "scalars and 0-d NumPy arrays are inlined), but this answer drops 0-d consts: wrong on "
        "make_jaxpr(lambda v: v * c)(f32[3]) with c = jnp.float32(2.0) (gives [], not [2.0])"
    ),
)
def _rt3_closure_consts_skip_scalars(jaxpr) -> list[np.ndarray]:
    return [np.asarray(c) for c in jaxpr.consts if np.ndim(c) > 0]


@wrong(
    "closure_consts",
    why=(
        "each const with its own dtype; a bfloat16 jax Array is widened to float32 on the way "
        "to NumPy: wrong on make_jaxpr(lambda v: v * H)(bf16[3]) with H = jnp.ones(3, "
        "jnp.bfloat16) (gives a float32 array, not bfloat16)"
    ),
)
def _rt3_closure_consts_bf16_widened(jaxpr) -> list[np.ndarray]:
    out = []
    for c in jaxpr.consts:
        if isinstance(c, np.ndarray):
            out.append(np.asarray(c))
        elif c.dtype == jax.numpy.bfloat16:
            out.append(np.asarray(c, np.float32))  # NumPy has no bfloat16 of its own
        else:
            out.append(np.asarray(c))
    return out


# ----------------------------------------------------------------------------------------------
# task 8: promoted_dtype


def _rt3_strong(kind: str) -> str:
    return {"int": "int32", "float": "float32"}.get(kind, kind)


@wrong(
    "promoted_dtype",
    why=(
        "a Python scalar is weak wherever it stands; this answer treats it as weak only as the "
        "second operand: wrong on promoted_dtype('int', 'uint8') (gives 'int32', not 'uint8') "
        "and ('float', 'bfloat16') (gives 'float32', not 'bfloat16')"
    ),
)
def _rt3_promoted_dtype_weak_second_only(a: str, b: str) -> str:
    return _rt3_join(_rt3_strong(a), b)


@wrong(
    "promoted_dtype",
    why=(
        "the answer is a dtype name; the same-kind shortcut returns the kind itself: wrong on "
        "promoted_dtype('int', 'int') (gives 'int', not 'int32') and ('float', 'float')"
    ),
)
def _rt3_promoted_dtype_same_kind_shortcut(a: str, b: str) -> str:
    if a == b:
        return a
    return _rt3_join(a, b)


@wrong(
    "promoted_dtype",
    why=(
        "bool sits below the weak int in JAX's lattice; this answer lets a Python int give way "
        "to bool as it does to every integer dtype: wrong on promoted_dtype('bool', 'int') "
        "(gives 'bool', not 'int32') and ('int', 'bool')"
    ),
)
def _rt3_promoted_dtype_int_yields_to_bool(a: str, b: str) -> str:
    if "int" in (a, b) and "bool" in (a, b):
        return "bool"
    return _rt3_join(a, b)


# ----------------------------------------------------------------------------------------------
# task 9: mlp_avals


def _rt3_no_relu_promotion(p: str, x: str) -> str:
    return _rt3_join(_rt3_join(x, p), p)


@wrong(
    "mlp_avals",
    why=(
        "relu is jnp.maximum(v, 0) with a Python 0, which lifts bool to int32; this answer "
        "lets relu keep its input dtype: wrong on mlp_avals(..., 'bool', 'bool') (output "
        "'bool', not 'int32')"
    ),
)
def _rt3_mlp_avals_relu_keeps_dtype(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[_rt3_Avals, _rt3_Avals]:
    ins = _rt3_mlp_in_avals(batch, in_dim, hidden, out_dim, param_dtype, x_dtype)
    return ins, [((batch, out_dim), _rt3_no_relu_promotion(param_dtype, x_dtype))]


def _rt3_signed_wins(a: str, b: str) -> str:
    if a in _rt3_INT_BITS and b in _rt3_INT_BITS and a.startswith("u") != b.startswith("u"):
        signed, unsigned = (b, a) if a.startswith("u") else (a, b)
        return (
            signed
            if _rt3_INT_BITS[signed] >= _rt3_INT_BITS[unsigned]
            else f"int{_rt3_INT_BITS[unsigned]}"
        )
    return _rt3_join(a, b)


@wrong(
    "mlp_avals",
    why=(
        "uint8 with int8 meets at int16 (the lattice widens to hold both); this answer lets "
        "the signed type of the same width win: wrong on mlp_avals(..., 'uint8', 'int8') "
        "(output 'int8', not 'int16'); likewise uint16 with int8/int16 (gives int16, not int32)"
    ),
)
def _rt3_mlp_avals_signed_wins(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[_rt3_Avals, _rt3_Avals]:
    ins = _rt3_mlp_in_avals(batch, in_dim, hidden, out_dim, param_dtype, x_dtype)
    return ins, [((batch, out_dim), _rt3_mlp_out_dtype(param_dtype, x_dtype, _rt3_signed_wins))]


_rt3_NARROW_INTS = ("bool", "uint8", "uint16", "int8", "int16")


@wrong(
    "mlp_avals",
    why=(
        "x @ w1 of narrow integers stays in their promoted dtype in the jaxpr (no "
        "preferred_element_type widening at the jnp level); this answer accumulates them in "
        "int32: wrong on mlp_avals(..., 'int8', 'int8') (output 'int8', not 'int32'), and "
        "uint8/int16/uint16 pairs"
    ),
)
def _rt3_mlp_avals_int_matmul_accumulates(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[_rt3_Avals, _rt3_Avals]:
    ins = _rt3_mlp_in_avals(batch, in_dim, hidden, out_dim, param_dtype, x_dtype)
    out = _rt3_mlp_out_dtype(param_dtype, x_dtype)
    if param_dtype in _rt3_NARROW_INTS and x_dtype in _rt3_NARROW_INTS:
        out = "int32"  # integer matmuls accumulate in 32 bits
    return ins, [((batch, out_dim), out)]
