"""Round 10 red team, phase 2: wrong answers of kinds earlier rounds did not write.

Printed text read for counts, names compared instead of equations, a prefix match on
primitive names, inputs found from their uses, consts grouped by kind, and promotion rules that are
right on the README's examples but wrong at other lattice edges.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt10_mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt10_is_literal(v):
    return isinstance(v, jax.extend.core.Literal)


# JAX's type promotion lattice (docs: type_promotion), weak Python kinds "int" and "float".
_rt10_EDGES = {
    "bool": ["int"],
    "int": ["uint8", "int8", "float"],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["uint64", "int64"],
    "uint64": ["float"],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": ["float"],
    "float": ["bfloat16", "float16"],
    "bfloat16": ["float32"],
    "float16": ["float32"],
    "float32": ["float64"],
    "float64": [],
}
_rt10_X32 = {
    "int64": "int32",
    "uint64": "uint32",
    "float64": "float32",
    "int": "int32",
    "float": "float32",
}


def _rt10_ups(node):
    seen, todo = {node}, [node]
    while todo:
        for n in _rt10_EDGES[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _rt10_join(a, b):
    common = _rt10_ups(a) & _rt10_ups(b)
    for n in common:
        if _rt10_ups(n) == common:
            return n
    raise ValueError((a, b))


def _rt10_x32(n):
    return _rt10_X32.get(n, n)


# ---------------------------------------------------------------- primitive_census


@wrong(
    "primitive_census",
    why="'Count per equation: a jitted function called twice ... its contents count twice' and "
    "every equation counts: this counts `name = prim` occurrences in str(jaxpr), but the "
    "printer shows a shared jaxpr once (a `let g = {...}` header, then `jit[jaxpr=g]`) and an "
    "equation with no results (debug_print) without `=`; on jit(sin) called twice it gives "
    "sin: 1 (contract 2), and jax.debug.print's debug_print is never counted.",
)
def _rt10_primitive_census_printed_text(jaxpr) -> Counter:
    import re

    text = str(jaxpr)
    return Counter(re.findall(r"\]\s+=\s+([A-Za-z_][\w-]*)", text))


# ---------------------------------------------------------------- io_avals


@wrong(
    "io_avals",
    why="'One entry per input (not the constvars) ... in order': this finds the inputs as the "
    "variables equations and outputs read that no equation defines (minus constvars), in order "
    "of first use, so an input nobody reads is missing and inputs read out of order are "
    "swapped: f(x, y) = y * 2.0 + x with x f32[3], y f32[] lists ((), 'float32') first, and "
    "f(x, y) = x lists one input, not two.",
)
def _rt10_io_avals_inputs_by_first_use(jaxpr):
    inner = jaxpr.jaxpr
    defined = {id(v) for e in inner.eqns for v in e.outvars}
    consts = {id(v) for v in inner.constvars}
    seen, ins = set(), []
    reads = [v for e in inner.eqns for v in e.invars] + list(inner.outvars)
    for v in reads:
        if _rt10_is_literal(v) or id(v) in defined or id(v) in consts or id(v) in seen:
            continue
        seen.add(id(v))
        ins.append((tuple(int(d) for d in v.aval.shape), np.dtype(v.aval.dtype).name))
    outs = [(tuple(int(d) for d in a.shape), np.dtype(a.dtype).name) for a in jaxpr.out_avals]
    return ins, outs


# ---------------------------------------------------------------- literal_operands


@wrong(
    "literal_operands",
    why="'Only equations of that primitive count, by its whole name': this matches "
    "name.startswith(primitive), right for the README's cases (`or` vs `xor`, `add` vs "
    "`scatter-add`) but it takes `atan2` for `atan` and `add_any` for `add`: on "
    "f(x) = jnp.arctan(x) + jnp.arctan2(x, 1.0), literal_operands(j, 'atan') gives [1.0], not [].",
)
def _rt10_literal_operands_prefix_match(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name.startswith(primitive):
            out.extend(float(v.val) for v in eqn.invars if _rt10_is_literal(v))
    return out


# ---------------------------------------------------------------- unused_equations


@wrong(
    "unused_equations",
    why="'Primitive names of top-level equations whose results nothing reads ... Repeats are "
    "kept': liveness is computed right, but the report filters equations by *name* (a name "
    "with any live equation is live), so a dead sin beside a live sin vanishes: "
    "f(x) = (jnp.sin(jnp.cos(x)), jnp.sin(x))[1] gives ['cos'] (contract ['cos', 'sin']).",
)
def _rt10_unused_equations_by_name(jaxpr) -> list[str]:
    inner = jaxpr.jaxpr
    read = {id(v) for v in inner.outvars if not _rt10_is_literal(v)}
    live_names = set()
    dead = []
    for eqn in reversed(inner.eqns):
        if any(id(v) in read for v in eqn.outvars):
            live_names.add(eqn.primitive.name)
            read.update(id(v) for v in eqn.invars if not _rt10_is_literal(v))
        else:
            dead.append(eqn)
    return [
        e.primitive.name for e in inner.eqns if e in dead and e.primitive.name not in live_names
    ]


# ---------------------------------------------------------------- promoted_dtype


@wrong(
    "promoted_dtype",
    why="a Python int is the weak node i* just above bool and below uint8 (the lattice edge "
    "i* -> u8): this treats it as a small *signed* int, so it meets an unsigned array at the "
    "next signed type: ('int', 'uint8') gives int16 (JAX: uint8), ('uint16', 'int') int32 "
    "(JAX: uint16); all other pairs follow the lattice.",
)
def _rt10_promoted_dtype_weak_int_signed(a: str, b: str) -> str:
    pair = {a, b}
    if "int" in pair:
        other = b if a == "int" else a
        if other.startswith("uint"):
            return {"uint8": "int16", "uint16": "int32", "uint32": "int32"}[other]
    return _rt10_x32(_rt10_join(a, b))


@wrong(
    "promoted_dtype",
    why="unsigned meets signed at the lowest signed node above both (u8 -> i16): this rule "
    "'mixed signedness goes to a signed int twice the wider width' is right for uint8+int8, "
    "uint16+int16, uint32+int32 but over-widens ('uint8', 'int16') to int32 (JAX: int16) and "
    "('int16', 'uint8') likewise.",
)
def _rt10_promoted_dtype_mixed_sign_doubles(a: str, b: str) -> str:
    import re

    sized = ("uint8", "uint16", "uint32", "int8", "int16", "int32")
    if a in sized and b in sized and a.startswith("u") != b.startswith("u"):
        width = max(int(re.sub(r"\D", "", a)), int(re.sub(r"\D", "", b)))
        return f"int{min(2 * width, 32)}"
    return _rt10_x32(_rt10_join(a, b))


@wrong(
    "promoted_dtype",
    why="JAX's add of two bool arrays stays bool (the join of bool with itself; `x + y` "
    "traces to `or`): this follows Python (True + True == 2) and answers int32 for "
    "('bool', 'bool'); the other pairs follow the lattice.",
)
def _rt10_promoted_dtype_bool_sum_int(a: str, b: str) -> str:
    if a == b == "bool":
        return "int32"
    return _rt10_x32(_rt10_join(a, b))


@wrong(
    "promoted_dtype",
    why="a Python float is the weak node f*, and an integer array meets it at f*, which 32-bit "
    "JAX makes float32 (weak): this keeps 'the array's width' and gives the float of the "
    "integer's width, right for int32/uint32 (float32) but wrong for ('int8', 'float') and "
    "('uint16', 'float'): float16 (JAX: float32). bool + float stays float32.",
)
def _rt10_promoted_dtype_weak_float_int_width(a: str, b: str) -> str:
    pair = (a, b)
    if "float" in pair:
        other = b if a == "float" else a
        if other in ("uint8", "uint16", "int8", "int16"):
            return "float16"
    return _rt10_x32(_rt10_join(a, b))


# ---------------------------------------------------------------- mlp_avals


@wrong(
    "mlp_avals",
    why="relu's Python 0 is the weak int i*, which gives way to an unsigned hidden value "
    "(i* -> u8): this treats it as signed, so an unsigned hidden layer becomes the next signed "
    "type after relu and the output follows: param_dtype='uint8', x_dtype='uint8' gives "
    "output int16 (traced: uint8); uint16 params with bool x gives int32 (traced: uint16).",
)
def _rt10_mlp_avals_relu_zero_signed(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    h = _rt10_x32(_rt10_join(x_dtype, param_dtype))
    h = _rt10_x32(_rt10_join(h, param_dtype))
    if h.startswith("uint"):
        h = {"uint8": "int16", "uint16": "int32", "uint32": "int32"}[h]
    else:
        h = _rt10_x32(_rt10_join(h, "int"))
    o = _rt10_x32(_rt10_join(h, param_dtype))
    o = _rt10_x32(_rt10_join(o, param_dtype))
    p = param_dtype
    ins = [
        ((hidden,), p),
        ((out_dim,), p),
        ((in_dim, hidden), p),
        ((hidden, out_dim), p),
        ((batch, in_dim), x_dtype),
    ]
    return ins, [((batch, out_dim), o)]


# ---------------------------------------------------------------- closure_consts


@wrong(
    "closure_consts",
    why="'in the order of the constvars (running the jaxpr with them must reproduce the "
    "function)': this converts the two kinds of const separately (jax Arrays through "
    "jax.device_get, then NumPy arrays as they are) and concatenates the lists, so a NumPy "
    "const closed over before a jax Array comes last: for c1 = np.arange(3.0), "
    "c2 = jnp.ones(3) * 5, f(x) = x * c1 + c2, it returns [c2, c1] where the constvars hold "
    "[c1, c2] (same shape and dtype, so eval_jaxpr runs, but at x = 2 gives x * c2 + c1 = "
    "[10, 11, 12], not [5, 7, 9]).",
)
def _rt10_closure_consts_grouped_by_kind(jaxpr) -> list:
    consts = list(jaxpr.consts)
    from_jax = [np.asarray(jax.device_get(c)) for c in consts if isinstance(c, jax.Array)]
    from_np = [np.asarray(c) for c in consts if not isinstance(c, jax.Array)]
    return from_jax + from_np
