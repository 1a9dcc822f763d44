"""Round 8 red team, phase 8: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


@wrong(
    "op_census",
    why="'Count every operation nested anywhere ... every function': guards against counting a "
    "function twice by skipping any op whose printed text was already seen; ops that print the "
    "same (the func.return of two functions returning %0, the identical add + return bodies of "
    "two reduces, two equal constants) are counted once; wrong on lambda x: (x.sum(0), x.sum(1)) "
    "(one stablehlo.add and one stablehlo.return instead of two each)",
)
def _rt8_op_census_dedup_by_text(lowered) -> Counter:
    counts: Counter = Counter()
    seen: set[str] = set()

    def visit(operation):
        for region in operation.regions:
            for block in region.blocks:
                for op in block.operations:
                    text = str(op.operation)
                    if text in seen:
                        continue
                    seen.add(text)
                    counts[op.operation.name] += 1
                    visit(op.operation)

    visit(lowered.compiler_ir("stablehlo").operation)
    return counts


@wrong(
    "op_census",
    why="'every operation nested anywhere': descends only into the FIRST region of an op "
    "(thinking a region list is [body] everywhere, as for reduce, sort, func); a while's body "
    "(its 2nd region) and a case's 2nd+ branches are skipped; wrong on "
    "lax.while_loop(lambda c: c.sum() < 100., lambda c: c * 2, x) (no stablehlo.multiply)",
)
def _rt8_op_census_first_region_only(lowered) -> Counter:
    counts: Counter = Counter()

    def visit(operation):
        regions = list(operation.regions)
        for region in regions[:1]:
            for block in region.blocks:
                for op in block.operations:
                    counts[op.operation.name] += 1
                    visit(op.operation)

    visit(lowered.compiler_ir("stablehlo").operation)
    return counts


# ---------------------------------------------------------------- hlo_opcode


@wrong(
    "hlo_opcode",
    why="'a few renamed ops, then one spelling rule': generalises the two renames dot_general -> "
    "dot and broadcast_in_dim -> broadcast into a rule 'HLO drops a trailing qualifier "
    "(_general, _in_dim, _convert, _generator)', so stablehlo.bitcast_convert -> 'bitcast' and "
    "stablehlo.rng_bit_generator -> 'rng-bit' (XLA: bitcast-convert, rng-bit-generator)",
)
def _rt8_hlo_opcode_drop_qualifier(stablehlo_op: str) -> str:
    renamed = {
        "case": "conditional",
        "if": "conditional",
        "optimization_barrier": "opt-barrier",
        "create_token": "after-all",
        "composite": "call",
    }
    name = stablehlo_op.split(".", 1)[-1]
    if name in renamed:
        return renamed[name]
    for suffix in ("_general", "_in_dim", "_convert", "_generator"):
        if name.endswith(suffix) and name != suffix.lstrip("_"):
            name = name[: -len(suffix)]
            break
    return name.replace("_", "-")


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'whose in_avals are the specs (any shapes)': lifts 0-d specs to shape (1,) ('export "
    "needs at least one dimension per input') and squeezes the result back; in_avals show "
    "f32[1] for a jax.ShapeDtypeStruct((), float32) spec, and the deserialized call rejects a "
    "0-d argument",
)
def _rt8_export_bytes_scalars_as_vectors(f, *specs) -> bytes:
    lifted = tuple(jax.ShapeDtypeStruct((1,), s.dtype) if len(s.shape) == 0 else s for s in specs)
    scalar = tuple(len(s.shape) == 0 for s in specs)

    def g(*args):
        return f(*(a.reshape(()) if sc else a for a, sc in zip(args, scalar)))

    return jax.export.export(jax.jit(g))(*lifted).serialize()


@wrong(
    "export_bytes",
    why="'in_avals are the specs (any shapes and dtypes)': exports every boolean spec as int8 "
    "('pred is not a portable StableHLO element type'), casting back inside; in_avals show "
    "int8 for a bool spec, and calling with a bool array is rejected (wrong on "
    "f=lambda m, x: jnp.where(m, x, 0.), specs (bool[4], f32[4]))",
)
def _rt8_export_bytes_bool_as_int8(f, *specs) -> bytes:
    import numpy as np

    is_bool = tuple(np.dtype(s.dtype) == np.bool_ for s in specs)
    new = tuple(jax.ShapeDtypeStruct(s.shape, jnp.int8) if b else s for s, b in zip(specs, is_bool))

    def g(*args):
        return f(*(a.astype(jnp.bool_) if b else a for a, b in zip(args, is_bool)))

    return jax.export.export(jax.jit(g))(*new).serialize()


# ---------------------------------------------------------------- export_any_batch


@wrong(
    "export_any_batch",
    why="'x float32 of shape (b, features)': when features == 1 exports x as (b,) (a column is "
    "'just a vector', reshaped inside); in_avals show x as (b,) not (b, 1), and a call with "
    "f32[5,1] is rejected (wrong on features=1)",
)
def _rt8_export_any_batch_unit_features_squeezed(f, features: int, *rest) -> bytes:
    if features == 1:
        (b,) = jax.export.symbolic_shape("b")
        x = jax.ShapeDtypeStruct((b,), jnp.float32)
        g = lambda x, *r: f(x.reshape(-1, 1), *r)  # noqa: E731
    else:
        x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
        g = f
    return jax.export.export(jax.jit(g))(x, *rest).serialize()


# ---------------------------------------------------------------- predict_accepts

_RT8_EXACT = {"float32", "float64"}  # x64 off: a float64 argument arrives as float32


def _rt8_parse(term: str):
    """coef*sym + offset, the way the learner parses it."""
    term = term.strip()
    if term.isdigit():
        return None, 0, int(term)
    m = re.fullmatch(r"(?:(\d+)\s*\*\s*)?([a-z_]\w*)\s*(?:[+-]\s*(\d+))?", term)
    if not m:
        return None, 0, -1
    coef = int(m.group(1) or 1)
    off = int(m.group(3) or 0)  # the sign is dropped: b - 1 read as b + 1
    return m.group(2), coef, off


def _rt8_accepts(shape_str, dtype, shape, parse) -> bool:
    import numpy as np

    if np.dtype(dtype).name not in _RT8_EXACT:
        return False
    terms = [t for t in shape_str.split(",")]
    if len(terms) != len(shape):
        return False
    values: dict[str, int] = {}
    for term, n in zip(terms, shape):
        sym, coef, off = parse(term)
        if sym is None:
            if off != n:
                return False
            continue
        if (n - off) % coef:
            return False
        v = (n - off) // coef
        if v < 1 or values.setdefault(sym, v) != v:
            return False
    return True


@wrong(
    "predict_accepts",
    why="'the symbolic ones must have a solution ... also inside an expression': parses "
    "k*b +/- c with a regex that keeps the digits of the offset but drops its sign, so "
    "(b - 1, 4) called with f32[1,4] (b = 2, runs) is predicted rejected (it solves b + 1 = 1, "
    "b = 0); right on every EXPORTED_CALLS entry, which has only '+' offsets",
)
def _rt8_predict_accepts_offset_sign_dropped(calls) -> dict[str, bool]:
    return {name: _rt8_accepts(s, d, sh, _rt8_parse) for name, (s, d, sh) in calls.items()}


def _rt8_parse_coef_after(term: str):
    term = term.strip()
    if term.isdigit():
        return None, 0, int(term)
    m = re.fullmatch(r"(?:(\d+)\s*\*\s*)?([a-z_]\w*)(?:\s*\*\s*\d+)?\s*(?:\+\s*(\d+))?", term)
    if not m:
        return None, 0, -1
    return m.group(2), int(m.group(1) or 1), int(m.group(3) or 0)


@wrong(
    "predict_accepts",
    why="'the same solution wherever a symbol appears, also inside an expression such as 2*b': "
    "reads the coefficient only when it is written before the symbol; 'b*2' is taken for a "
    "bare b, so (b*2, 4) called with f32[5,4] (no integer b) is predicted to run and "
    "(b, b*2) with f32[3,6] to be rejected; right on EXPORTED_CALLS, which writes 2*b",
)
def _rt8_predict_accepts_coef_after_symbol_ignored(calls) -> dict[str, bool]:
    return {
        name: _rt8_accepts(s, d, sh, _rt8_parse_coef_after) for name, (s, d, sh) in calls.items()
    }


# ---------------------------------------------------------------- predict_lowering

_H = "stablehlo."


def _rt8_c(**ops):
    return {_H + k: v for k, v in ops.items()}


_RT8_REDUCE = {_H + "return": 1, _H + "reduce": 1}
_RT8_TRUTH = {
    "jnp.sin(x) * jnp.cos(x)": _rt8_c(sine=1, cosine=1, multiply=1),
    "jnp.exp(x) - 1": _rt8_c(exponential=1, constant=1, broadcast_in_dim=1, subtract=1),
    "jnp.tanh(x)": _rt8_c(tanh=1),
    "x * 2.0": _rt8_c(constant=1, broadcast_in_dim=1, multiply=1),
    "x ** 2": _rt8_c(multiply=1),
    "x / y": _rt8_c(divide=1),
    "x + i, i int32": _rt8_c(convert=1, add=1),
    "jax.nn.relu(x)": _rt8_c(constant=1, broadcast_in_dim=1, maximum=1),
    "jnp.where(x > 0, x, y)": _rt8_c(constant=1, broadcast_in_dim=1, compare=1, select=1),
    "x.sum(axis=0)": {**_rt8_c(constant=1, add=1), **_RT8_REDUCE},
    "x.max(axis=1)": {**_rt8_c(constant=1, maximum=1), **_RT8_REDUCE},
    "x.mean()": {**_rt8_c(constant=2, add=1, divide=1), **_RT8_REDUCE},
    "x @ w": _rt8_c(dot_general=1),
    "x.T": _rt8_c(transpose=1),
    "x[0]": _rt8_c(slice=1, reshape=1),
    "x[::-1]": _rt8_c(reverse=1),
}


def _rt8_copy():
    return {k: dict(v) for k, v in _RT8_TRUTH.items()}


@wrong(
    "predict_lowering",
    why="'A reduction is one stablehlo.reduce whose starting value is a constant': pictures "
    "the max's starting value -inf as built from +inf by a stablehlo.negate (as jnp writes "
    "-jnp.inf); wrong on 'x.max(axis=1)' (adds stablehlo.negate: 1; -inf is one constant)",
)
def _rt8_predict_lowering_neg_inf_negated() -> dict[str, dict[str, int]]:
    out = _rt8_copy()
    out["x.max(axis=1)"][_H + "negate"] = 1
    return out


@wrong(
    "predict_lowering",
    why="'mixing int32 with float32 adds a convert' applied to the mean's element count: "
    "pictures x.size (a Python int, 12) as an int32 constant converted to float32 before the "
    "divide; wrong on 'x.mean()' (adds stablehlo.convert: 1; the 12.0 is a float constant)",
)
def _rt8_predict_lowering_mean_count_converted() -> dict[str, dict[str, int]]:
    out = _rt8_copy()
    out["x.mean()"][_H + "convert"] = 1
    return out


@wrong(
    "predict_lowering",
    why="'some ops come from other dialects (chlo.erf)' over-applied: believes jnp.tanh lowers "
    "to chlo.tanh like the other transcendental helpers, so the stablehlo census of "
    "'jnp.tanh(x)' is empty; StableHLO has its own stablehlo.tanh (count 1)",
)
def _rt8_predict_lowering_tanh_is_chlo() -> dict[str, dict[str, int]]:
    out = _rt8_copy()
    out["jnp.tanh(x)"] = {}
    return out
