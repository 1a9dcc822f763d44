"""Red team, phase 2, round 7: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- helpers


def _rt7_inner(value):
    """The nested jaxprs (open form with .eqns) in one param value."""
    if (
        value is None
        or callable(value)
        and not hasattr(value, "eqns")
        and not hasattr(value, "jaxpr")
    ):
        return []
    if hasattr(value, "eqns"):
        return [value]
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        return [value.jaxpr]
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_rt7_inner(v))
        return out
    return []


def _rt7_open(jaxpr):
    return jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr


def _rt7_census(jaxpr, skip) -> Counter:
    counts: Counter = Counter()
    for eqn in _rt7_open(jaxpr).eqns:
        counts[eqn.primitive.name] += 1
        for key, value in eqn.params.items():
            for inner in skip(eqn, key, value):
                counts += _rt7_census(inner, skip)
    return counts


def _rt7_is_literal(v) -> bool:
    return isinstance(v, jax.extend.core.Literal)


def _rt7_top_literals(jaxpr, primitive):
    out = []
    for eqn in _rt7_open(jaxpr).eqns:
        if eqn.primitive.name != primitive:
            continue
        out.append([float(np.asarray(v.val)) for v in eqn.invars if _rt7_is_literal(v)])
    return out


def _rt7_dead(jaxpr, reads_of) -> list[str]:
    j = _rt7_open(jaxpr)
    live = {v for v in j.outvars if not _rt7_is_literal(v)}
    dead = []
    for eqn in reversed(j.eqns):
        if any(v in live for v in eqn.outvars):
            live.update(v for v in reads_of(eqn) if not _rt7_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


# JAX's promotion lattice in 32-bit mode, written out by hand (weak kinds "int", "float").
_rt7_UP = {
    "bool": ["int"],
    "int": ["uint8", "int8"],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["int64"],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": ["float"],
    "float": ["float16", "bfloat16"],
    "float16": ["float32"],
    "bfloat16": ["float32"],
    "float32": [],
}


def _rt7_above(k):
    seen, todo = {k}, [k]
    while todo:
        for u in _rt7_UP[todo.pop()]:
            if u not in seen:
                seen.add(u)
                todo.append(u)
    return seen


def _rt7_join(a, b, tie=None):
    common = _rt7_above(a) & _rt7_above(b)
    lowest = [c for c in common if all(d in _rt7_above(c) for d in common)]
    node = lowest[0]
    return {"int": "int32", "float": "float32", "int64": "int32"}.get(node, node)


def _rt7_mlp_dtype(p, x, join=_rt7_join):
    h = join(x, p)
    h = join(h, "int")  # relu: jnp.maximum(v, 0), a weak Python 0
    return join(h, p)


# ---------------------------------------------------------------- primitive_census


@wrong(
    "primitive_census",
    why="'cond_jaxpr and body_jaxpr (while) ... every jaxpr nested in equation params': this "
    "skips a while loop's cond_jaxpr (treating it as bookkeeping, not work); on "
    "lax.while_loop(lambda c: c[0] < 10, body, ...) the `lt` of the condition goes uncounted.",
)
def _rt7_primitive_census_skips_while_cond(jaxpr) -> Counter:
    return _rt7_census(
        jaxpr, lambda eqn, key, value: [] if key == "cond_jaxpr" else _rt7_inner(value)
    )


@wrong(
    "primitive_census",
    why="'jaxprs (custom_linear_solve: a named tuple of four, some of them None)': this counts "
    "only the forward fields (matvec, solve) and skips vecmat/transpose_solve as 'only for "
    "gradients'; on custom_linear_solve(..., transpose_solve=lambda vm, b: b / 2) the transpose's "
    "`div` is missing.",
)
def _rt7_primitive_census_forward_solve_only(jaxpr) -> Counter:
    def pick(eqn, key, value):
        if hasattr(value, "_fields") and "transpose_solve" in value._fields:
            return _rt7_inner([value.matvec, value.solve])
        return _rt7_inner(value)

    return _rt7_census(jaxpr, pick)


# ---------------------------------------------------------------- literal_operands


@wrong(
    "literal_operands",
    why="'the literal operands of every top-level equation of primitive ... in equation order': "
    "an accumulation bug rebinds the result for each matching equation, so only the last "
    "equation's literals survive; on x*2*3 (two muls) it returns [3.0], truth [2.0, 3.0].",
)
def _rt7_literal_operands_last_equation_only(jaxpr, primitive: str) -> list[float]:
    result: list[float] = []
    for lits in _rt7_top_literals(jaxpr, primitive):
        result = lits
    return result


@wrong(
    "literal_operands",
    why="'repeats kept': this collects the distinct constants (first occurrence order), as if "
    "asking which constants Python folded; on x*2*2 (or x+1.0 then +1.0) it returns [2.0], "
    "truth [2.0, 2.0].",
)
def _rt7_literal_operands_distinct(jaxpr, primitive: str) -> list[float]:
    flat = [v for lits in _rt7_top_literals(jaxpr, primitive) for v in lits]
    return list(dict.fromkeys(flat))


# ---------------------------------------------------------------- unused_equations


@wrong(
    "unused_equations",
    why="'\"Reads\" means an output of the jaxpr or a live equation': a live jit equation reads "
    "all its operands; this does real DCE and looks inside the jit, keeping only operands its "
    "inner jaxpr uses; on y = sin(x); return jax.jit(lambda a, b: a * 2)(x, y) it reports "
    "['sin'], truth [] (the live jit reads y).",
)
def _rt7_unused_equations_dce_through_calls(jaxpr) -> list[str]:
    def reads(eqn):
        inner = eqn.params.get("jaxpr")
        inner = _rt7_inner(inner)
        if eqn.primitive.name in ("jit", "pjit", "closed_call") and len(inner) == 1:
            j = inner[0]
            used = set()
            for e in j.eqns:
                used.update(v for v in e.invars if not _rt7_is_literal(v))
            used.update(v for v in j.outvars if not _rt7_is_literal(v))
            return [o for o, i in zip(eqn.invars, j.invars) if i in used]
        return eqn.invars

    return _rt7_dead(jaxpr, reads)


@wrong(
    "unused_equations",
    why="'Repeats are kept': this reports each dead primitive name once (first-seen order), as "
    "a set of kinds of dead work; on a dead sin, sin, cos among live code it returns "
    "['sin', 'cos'], truth ['sin', 'sin', 'cos'].",
)
def _rt7_unused_equations_distinct_names(jaxpr) -> list[str]:
    return list(dict.fromkeys(_rt7_dead(jaxpr, lambda eqn: eqn.invars)))


# ---------------------------------------------------------------- closure_consts


@wrong(
    "closure_consts",
    why="'The values of the jaxpr's constvars ... in the order of the constvars': this gathers "
    "consts by walking the equations' operands (first read order) and so misses a constvar no "
    "equation reads, a closed-over array returned as it is; on c = np.arange(3.); "
    "lambda x: (x + 1, c) it returns [], truth [c].",
)
def _rt7_closure_consts_read_by_equations(jaxpr) -> list[np.ndarray]:
    j = _rt7_open(jaxpr)
    value_of = dict(zip(j.constvars, jaxpr.consts))
    seen: list = []
    for eqn in j.eqns:
        for v in eqn.invars:
            if not _rt7_is_literal(v) and v in value_of and v not in seen:
                seen.append(v)
    return [np.asarray(value_of[v]) for v in seen]


# ---------------------------------------------------------------- io_avals


@wrong(
    "io_avals",
    why="'a shape is a tuple of ints': this returns each shape as a list (list(aval.shape)), "
    "which compares unequal to the tuple; on jnp.sin of f32[3] it returns ([([3], 'float32')], "
    "...), truth ([((3,), 'float32')], ...). Only 0-d avals happen to be fine as ().",
)
def _rt7_io_avals_shape_lists(jaxpr):
    ins = [(list(a.shape) if a.shape else (), np.dtype(a.dtype).name) for a in jaxpr.in_avals]
    outs = [(list(a.shape) if a.shape else (), np.dtype(a.dtype).name) for a in jaxpr.out_avals]
    return ins, outs


# ---------------------------------------------------------------- promoted_dtype


@wrong(
    "promoted_dtype",
    why="'where do a and b meet in JAX's lattice': bfloat16 and float16 meet at float32; this "
    "walks the lattice right except that it treats two 16-bit floats as one node and keeps the "
    "first operand's; on ('bfloat16', 'float16') it says bfloat16, truth float32.",
)
def _rt7_promoted_dtype_half_floats_first_wins(a: str, b: str) -> str:
    if {a, b} == {"bfloat16", "float16"}:
        return a
    return _rt7_join(a, b)


# ---------------------------------------------------------------- mlp_avals


@wrong(
    "mlp_avals",
    why="x is '(batch, in_dim)': with batch 1 this answers as for one example (x (in_dim,), "
    "output (out_dim,)), mixing up mlp_jaxpr's rank-1 case; on (1, 3, 4, 2, 'float32', "
    "'float32') it gives x ((3,), 'float32'), truth ((1, 3), 'float32').",
)
def _rt7_mlp_avals_batch_one_squeezed(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    xs = (in_dim,) if batch == 1 else (batch, in_dim)
    os_ = (out_dim,) if batch == 1 else (batch, out_dim)
    ins = [
        ((hidden,), param_dtype),
        ((out_dim,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((hidden, out_dim), param_dtype),
        (xs, x_dtype),
    ]
    return ins, [(os_, _rt7_mlp_dtype(param_dtype, x_dtype))]


@wrong(
    "mlp_avals",
    why="'in which order does jax flatten a dict?' sorted keys: b1, b2, w1, w2; this sorts the "
    "keys by their number first (b1, w1, b2, w2: 'layer by layer'); on any shapes the second "
    "input is w1 (in_dim, hidden), truth b2 (out_dim,).",
)
def _rt7_mlp_avals_layer_order(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    ins = [
        ((hidden,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((out_dim,), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), _rt7_mlp_dtype(param_dtype, x_dtype))]


# ---------------------------------------------------------------- mlp_jaxpr


@wrong(
    "mlp_jaxpr",
    why="'x keeps ... its rank: the jaxpr's avals follow the arguments': for x of rank 3 or more "
    "this folds the leading axes into one batch before tracing (x.reshape(-1, in_dim)), as dense "
    "layers are usually fed; on x of shape (2, 3, in_dim) the jaxpr's x input is (6, in_dim) "
    "and its output (6, out_dim), truth (2, 3, in_dim) and (2, 3, out_dim).",
)
def _rt7_mlp_jaxpr_folds_leading_axes(params: dict, x):
    if np.ndim(x) > 2:
        x = np.asarray(x).reshape(-1, np.shape(x)[-1])
    return jax.make_jaxpr(_rt7_mlp)(params, x)


def _rt7_mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
