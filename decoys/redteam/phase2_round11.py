"""Round 11 red team, phase 2: wrong answers of kinds earlier rounds did not write.

Another library's rule scaled to 32 bits (uint32 meets a signed int at float32), the last layer's
weights deciding the MLP's output dtype, a literal test that knows NumPy values but not JAX's
float-subclass literals, jax.export's module instead of jit's, consts round-tripped through
Python lists, equal avals merged, the printer's `_` trusted for dead code, and nested counts
merged by dict overwrite.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt11_is_literal(v):
    return isinstance(v, jax.extend.core.Literal)


# JAX's lattice, weak Python kinds "int" and "float"; 32-bit mode renames the 64-bit nodes.
_rt11_EDGES = {
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
_rt11_X32 = {
    "int64": "int32",
    "uint64": "uint32",
    "float64": "float32",
    "int": "int32",
    "float": "float32",
}


def _rt11_ups(node):
    seen, todo = {node}, [node]
    while todo:
        for n in _rt11_EDGES[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def _rt11_join(a, b):
    common = _rt11_ups(a) & _rt11_ups(b)
    lowest = [n for n in common if all(n in _rt11_ups(m) for m in common)]
    return _rt11_X32.get(lowest[0], lowest[0])


# ---------------------------------------------------------------- promoted_dtype


@wrong(
    "promoted_dtype",
    why="'where do a and b meet in JAX's lattice': uint32 and a signed int meet at int64, which "
    "32-bit mode renames int32; this follows NumPy's uint64+int64 -> float64 scaled down to the "
    "32-bit world ('no signed int is wide enough, so go to float'), answering float32 for "
    "('uint32', 'int8'), ('uint32', 'int32') and ('int16', 'uint32'): JAX says int32",
)
def _rt11_promoted_dtype_u32_signed_to_float(a: str, b: str) -> str:
    signed = {"int8", "int16", "int32"}
    if (a == "uint32" and b in signed) or (b == "uint32" and a in signed):
        return "float32"
    return _rt11_join(a, b)


# ---------------------------------------------------------------- mlp_avals


@wrong(
    "mlp_avals",
    why="'What dtype comes out of mixed inputs?': x @ w1 promotes x with the params and the "
    "second layer keeps that join; this says the output layer's weights decide the output "
    "dtype (param_dtype), wrong whenever x is above the params in the lattice: param_dtype "
    "'bfloat16', x_dtype 'float32' gives float32 outputs, not bfloat16 (and int8 params with "
    "uint8 x give int16)",
)
def _rt11_mlp_avals_last_layer_decides(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    inputs = [
        ((hidden,), param_dtype),
        ((out_dim,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    out = param_dtype if param_dtype != "bool" else _rt11_join("bool", "int")
    return inputs, [((batch, out_dim), out)]


# ---------------------------------------------------------------- literal_operands


@wrong(
    "literal_operands",
    why="'whatever the literal's dtype' / 'only literals': this recognises a literal by its value "
    "being a NumPy array or scalar (np.ndarray / np.generic), as printed NumPy constants are; "
    "JAX 0.12 keeps a Python float literal as a float subclass (TypedFloat), so for "
    "`lambda x: x * 2.0` and 'mul' it answers [] instead of [2.0]",
)
def _rt11_literal_operands_numpy_values_only(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            val = getattr(v, "val", None)
            if isinstance(val, (np.ndarray, np.generic)):
                out.append(float(val))
    return out


@wrong(
    "literal_operands",
    why="'operand order within an equation, repeats kept': this reads "
    "the literal values but de-duplicates per equation (a set of an equation's literal operands, "
    "sorted), so an equation with two equal literal operands reports one, and their order is "
    "lost: `lambda x: jax.lax.clamp(1.0, x, 1.0)` and 'clamp' gives [1.0], not [1.0, 1.0]; "
    "`lambda x: jax.lax.clamp(2.0, x, 1.0)` gives [1.0, 2.0], not [2.0, 1.0]",
)
def _rt11_literal_operands_set_per_equation(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != primitive:
            continue
        vals = {float(v.val) for v in eqn.invars if _rt11_is_literal(v)}
        out.extend(sorted(vals))
    return out


# ---------------------------------------------------------------- stablehlo_of


@wrong(
    "stablehlo_of",
    why="'as jax.jit lowers it by default ... the module's attributes': this serializes through "
    "jax.export (the 'portable StableHLO' path) and returns Exported.mlir_module(): another "
    "module, with the extra attribute jax.uses_shape_polymorphism and named argument locations, "
    "for any f, e.g. lambda w, s: w * s with a bf16 w and 2.5",
)
def _rt11_stablehlo_of_via_export(f, *args) -> str:
    return jax.export.export(jax.jit(f))(*args).mlir_module()


# ---------------------------------------------------------------- closure_consts


@wrong(
    "closure_consts",
    why="'Plain NumPy arrays, each with its own dtype': this makes them plain by a Python-list "
    "round trip, np.array(c.tolist()), which re-infers the dtype: an int8 or uint16 const "
    "becomes int64, a bfloat16 or float32 one float64, e.g. lambda x: x + c for "
    "c = np.arange(3, dtype=np.int8)",
)
def _rt11_closure_consts_tolist_roundtrip(jaxpr) -> list[np.ndarray]:
    return [np.array(np.asarray(c).tolist()) for c in jaxpr.consts]


# ---------------------------------------------------------------- io_avals


@wrong(
    "io_avals",
    why="'One entry per input ... in order, repeats kept': this collects avals through "
    "dict.fromkeys on (shape, dtype), so two inputs (or outputs) with equal avals collapse "
    "into one: lambda x, y: (x + y, x - y) on two f32[3] gives ([((3,), 'float32')], "
    "[((3,), 'float32')]) instead of two entries each",
)
def _rt11_io_avals_merge_equal_avals(jaxpr):
    ins = [(tuple(a.shape), np.dtype(a.dtype).name) for a in jaxpr.in_avals]
    outs = [(tuple(a.shape), np.dtype(a.dtype).name) for a in jaxpr.out_avals]
    return list(dict.fromkeys(ins)), list(dict.fromkeys(outs))


# ---------------------------------------------------------------- unused_equations


@wrong(
    "unused_equations",
    why="'The printer shows a result nobody reads as `_`, but only for the last link of a dead "
    "chain': this trusts the printer, reporting equations whose results are all dropped "
    "(printed `_` in str(jaxpr)); for a chain sin -> mul -> unused cos it "
    "reports ['cos'] instead of ['sin', 'mul', 'cos']",
)
def _rt11_unused_equations_dropvar_only(jaxpr) -> list[str]:
    out = []
    for line in str(jaxpr).splitlines():
        if not line.startswith("    ") or line.startswith("     ") or "=" not in line:
            continue
        lhs, _, rhs = line.partition(" = ")
        names = [t.split(":")[0] for t in lhs.split()]
        if rhs and names and all(n == "_" for n in names):
            out.append(rhs.split()[0].split("[")[0])
    return out


# ---------------------------------------------------------------- primitive_census


def _rt11_nested(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt11_nested(v)
    elif isinstance(value, jax.extend.core.ClosedJaxpr):
        yield value
    elif hasattr(value, "eqns"):
        yield value


@wrong(
    "primitive_census",
    why="'collections.Counter adds with +': this builds a plain dict and merges each nested "
    "jaxpr's counts with dict.update, so a nested count *replaces* the outer one: "
    "lambda x: jax.jit(jnp.sin)(jnp.sin(x)) gives sin: 1, not 2 (right when the nesting "
    "equation comes first and nothing repeats)",
)
def _rt11_primitive_census_dict_update(jaxpr) -> Counter:
    counts: dict[str, int] = {}
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        counts[name] = counts.get(name, 0) + 1
        for value in eqn.params.values():
            for sub in _rt11_nested(value):
                counts.update(_rt11_primitive_census_dict_update(sub))
    return Counter(counts)


@wrong(
    "mlp_avals",
    why="'mlp's relu is jnp.maximum(v, 0), a Python 0': this models relu as max(v, 0.0), a "
    "Python float zero (the way relu is usually written), so an integer or bool hidden value "
    "is promoted to float32: param_dtype 'int8', x_dtype 'int8' gives float32 outputs, "
    "JAX says int8",
)
def _rt11_mlp_avals_relu_float_zero(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
):
    h = _rt11_join(_rt11_join(x_dtype, param_dtype), "float")
    out = _rt11_join(h, param_dtype)
    inputs = [
        ((hidden,), param_dtype),
        ((out_dim,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    return inputs, [((batch, out_dim), out)]
