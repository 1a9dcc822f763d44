"""Round 11 red team, phase 8: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


@wrong(
    "op_census",
    why="'of every dialect (func, stablehlo, chlo, ...)': keys every non-func op under the "
    "stablehlo dialect ('stablehlo.' + the op's short name), believing chlo ops are stablehlo "
    "ops in a namespace of their own; wrong on (lax.erf(x), lax.top_k(x, 2)[1]): reports "
    "stablehlo.erf / stablehlo.top_k where the module holds chlo.erf and chlo.top_k",
)
def _rt11_op_census_everything_stablehlo(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    name = child.operation.name
                    dialect, _, short = name.partition(".")
                    if dialect not in ("func", "builtin", "sdy"):
                        name = "stablehlo." + short
                    counts[name] += 1
                    visit(child.operation)

    visit(module.operation)
    return counts


@wrong(
    "op_census",
    why="'every function including the private ones nested jit calls become': drops the "
    "func.return of private functions, reasoning that a nested jit is inlined into main and only "
    "main's return is a real return; wrong on nested_calls (3 func.func, 3 func.return; this "
    "counts 1) and on jnp.where / jax.nn.relu programs (private helpers)",
)
def _rt11_op_census_main_return_only(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()

    def visit(op, fname):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    o = child.operation
                    name = o.name
                    inner = fname
                    if name == "func.func":
                        inner = str(o.attributes["sym_name"]).strip('"')
                    if name == "func.return" and fname != "main":
                        continue
                    counts[name] += 1
                    visit(o, inner)

    visit(module.operation, None)
    return counts


# ---------------------------------------------------------------- hlo_opcode

_RT11_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "if": "conditional",
    "optimization_barrier": "opt-barrier",
    "create_token": "after-all",
    "composite": "call",
    "cross-replica-sum": "all-reduce",
}


@wrong(
    "hlo_opcode",
    why="'any op of the dialect, not a fixed list': reads the 'dynamic_' prefix as a "
    "StableHLO-only qualifier (HLO has no dynamic shapes, so 'dynamic ops become their static "
    "twin'), dropping it before spelling; wrong on stablehlo.dynamic_slice ('slice', XLA: "
    "'dynamic-slice') and stablehlo.dynamic_update_slice ('update-slice', XLA: "
    "'dynamic-update-slice')",
)
def _rt11_hlo_opcode_dynamic_is_static(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    if name in _RT11_RENAMES:
        return _RT11_RENAMES[name]
    if name.startswith("dynamic_"):
        name = name[len("dynamic_") :]
    return name.replace("_", "-")


@wrong(
    "hlo_opcode",
    why="'ops JAX never emits ... four of them are renamed as well': the learner found the "
    "renames among ops JAX emits, but for the never-emitted ones guessed from the spelling rule "
    "that create_token is 'create-token' and composite is 'composite' (only if and "
    "cross-replica-sum recognized); XLA: stablehlo.create_token -> 'after-all', "
    "stablehlo.composite -> 'call'",
)
def _rt11_hlo_opcode_token_composite_spelled(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    renames = {
        "dot_general": "dot",
        "broadcast_in_dim": "broadcast",
        "case": "conditional",
        "if": "conditional",
        "optimization_barrier": "opt-barrier",
        "cross-replica-sum": "all-reduce",
    }
    return renames.get(name, name.replace("_", "-"))


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'the bytes deserialize to an Exported ... whose call returns f's own pytree': exports "
    "for the accelerator the model will be served on (platforms=('tpu',)), so the Exported "
    "refuses to run on the CPU the tests call it on; wrong on every f, e.g. mlp with "
    "mlp_specs(): exp.call(*mlp_values(8)) raises 'not compiled for cpu'",
)
def _rt11_export_bytes_for_tpu(f, *specs) -> bytes:
    exported = jax.export.export(jax.jit(f), platforms=("tpu",))(*specs)
    return exported.serialize()


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'a call it rejects (a wrong dtype or shape) raises its error': on rejection retries "
    "with each argument cast to the exported in_aval dtype ('be forgiving like jit'); an "
    "export of column_sums for f32[b,4] called with np.ones((3,4), np.int32) returns a result "
    "instead of raising",
)
def _rt11_call_exported_retry_cast(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    try:
        return exported.call(*args)
    except Exception:
        flat = [np.asarray(a).astype(aval.dtype) for a, aval in zip(args, exported.in_avals)]
        return exported.call(*flat)


# ---------------------------------------------------------------- export_any_batch


@wrong(
    "export_any_batch",
    why="'f(x, *rest)': builds the specs in signature order of a model's forward pass "
    "f(params..., x), passing the fixed-shape rest first and x last; the exported in_avals "
    "start with the rest and f receives a weight where it expects x; wrong on mlp with "
    "mlp_rest_specs() (exporting tanh(w1 @ w2) @ x fails or gives in_avals (f32[16,8], "
    "f32[8,OUT], f32[b,16]))",
)
def _rt11_export_any_batch_x_last(f, features: int, *rest) -> bytes:
    (b,) = jax.export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, features), np.float32)
    exported = jax.export.export(jax.jit(lambda *a: f(a[-1], *a[:-1])))(*rest, x)
    return exported.serialize()


# ---------------------------------------------------------------- predict_accepts


def _rt11_dtype_ok(dtype) -> bool:
    try:
        return jax.dtypes.canonicalize_dtype(np.dtype(dtype)) == np.dtype(np.float32)
    except Exception:
        return False


def _rt11_solve(terms, shape, parse) -> bool:
    if len(terms) != len(shape):
        return False
    values: dict[str, int] = {}
    for term, n in zip(terms, shape):
        p = parse(term)
        if p is None:
            return False
        sym, coef, off = p
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


def _rt11_parse_one_letter(term: str):
    t = term.replace(" ", "")
    if re.fullmatch(r"\d+", t):
        return None, 0, int(t)
    m = re.fullmatch(r"(?:(\d+)\*)?([a-z])(?:\*(\d+))?(?:([+-])(\d+))?", t)
    if m is None:
        return None
    coef = int(m.group(1) or m.group(3) or 1)
    off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
    return m.group(2), coef, off


@wrong(
    "predict_accepts",
    why="'a symbol of any name (b, batch, n)': parses a symbol as ONE letter (every symbol of "
    "EXPORTED_CALLS is a or b), so a term naming 'batch' or 'n2' does not parse and the call is "
    "predicted rejected; wrong on ('batch, 4', f32, (3, 4)) and ('2*batch + 1, 3', f32, (7, 3)), "
    "both run",
)
def _rt11_predict_accepts_one_letter_symbols(calls):
    out = {}
    for name, (shape_str, dtype, shape) in calls.items():
        terms = [t for t in shape_str.split(",") if t.strip()]
        out[name] = _rt11_dtype_ok(dtype) and _rt11_solve(
            terms, tuple(shape), _rt11_parse_one_letter
        )
    return out


def _rt11_parse_tight_star(term: str):
    t = term.strip()
    # spaces are allowed around + and -, but '*' is read as written in EXPORTED_CALLS (no spaces)
    t = re.sub(r"\s*([+-])\s*", r"\1", t)
    if re.fullmatch(r"\d+", t):
        return None, 0, int(t)
    m = re.fullmatch(r"(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?(?:([+-])(\d+))?", t)
    if m is None:
        return None
    coef = int(m.group(1) or m.group(3) or 1)
    off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
    return m.group(2), coef, off


@wrong(
    "predict_accepts",
    why="'a coefficient written on either side (12*b, b * 2)': tolerates spaces around + and - "
    "but not around '*' (EXPORTED_CALLS writes 2*b and b*2 tight), so 'b * 2' and '3 * n + 1' "
    "do not parse and are predicted rejected; wrong on ('b * 2, 4', f32, (6, 4)), which runs "
    "with b = 3",
)
def _rt11_predict_accepts_tight_star_only(calls):
    out = {}
    for name, (shape_str, dtype, shape) in calls.items():
        terms = [t for t in shape_str.split(",") if t.strip()]
        out[name] = _rt11_dtype_ok(dtype) and _rt11_solve(
            terms, tuple(shape), _rt11_parse_tight_star
        )
    return out


def _rt11_parse_full(term: str):
    t = term.replace(" ", "")
    if re.fullmatch(r"\d+", t):
        return None, 0, int(t)
    m = re.fullmatch(r"(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?(?:([+-])(\d+))?", t)
    if m is None:
        return None
    coef = int(m.group(1) or m.group(3) or 1)
    off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
    return m.group(2), coef, off


@wrong(
    "predict_accepts",
    why="'arrays of any NumPy dtype (bool, complex, unsigned ...)': decides the dtype by "
    "whether NumPy can cast it to float32 safely ('the exported function takes what fits in "
    "f32'): bool, uint8/int8/uint16/int16 and float16 fit, so e.g. ('b, 4', np.uint8, (3, 4)) "
    "and ('b, 4', bool, (2, 4)) are predicted to run; the Exported rejects any dtype but "
    "float32 after canonicalization (float16 is not admitted, so EXPORTED_CALLS are all right)",
)
def _rt11_predict_accepts_safe_cast(calls):
    out = {}
    for name, (shape_str, dtype, shape) in calls.items():
        try:
            dt = np.dtype(dtype)
            canon = jax.dtypes.canonicalize_dtype(dt)
        except Exception:
            out[name] = False
            continue
        ok = canon == np.dtype(np.float32) or (
            dt.kind in "biu" and np.can_cast(dt, np.float32, "safe")
        )
        terms = [t for t in shape_str.split(",") if t.strip()]
        out[name] = bool(ok) and _rt11_solve(terms, tuple(shape), _rt11_parse_full)
    return out


# ---------------------------------------------------------------- predict_lowering

_RT11_TRUTH = {
    "jnp.sin(x) * jnp.cos(x)": {
        "stablehlo.sine": 1,
        "stablehlo.cosine": 1,
        "stablehlo.multiply": 1,
    },
    "jnp.exp(x) - 1": {
        "stablehlo.exponential": 1,
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.subtract": 1,
    },
    "jnp.tanh(x)": {"stablehlo.tanh": 1},
    "x * 2.0": {"stablehlo.constant": 1, "stablehlo.broadcast_in_dim": 1, "stablehlo.multiply": 1},
    "x ** 2": {"stablehlo.multiply": 1},
    "x / y": {"stablehlo.divide": 1},
    "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
    "jax.nn.relu(x)": {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.maximum": 1,
    },
    "jnp.where(x > 0, x, y)": {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.compare": 1,
        "stablehlo.select": 1,
    },
    "x.sum(axis=0)": {
        "stablehlo.constant": 1,
        "stablehlo.reduce": 1,
        "stablehlo.add": 1,
        "stablehlo.return": 1,
    },
    "x.max(axis=1)": {
        "stablehlo.constant": 1,
        "stablehlo.reduce": 1,
        "stablehlo.maximum": 1,
        "stablehlo.return": 1,
    },
    "x.mean()": {
        "stablehlo.constant": 2,
        "stablehlo.reduce": 1,
        "stablehlo.add": 1,
        "stablehlo.return": 1,
        "stablehlo.divide": 1,
    },
    "x @ w": {"stablehlo.dot_general": 1},
    "x.T": {"stablehlo.transpose": 1},
    "x[0]": {"stablehlo.slice": 1, "stablehlo.reshape": 1},
    "x[::-1]": {"stablehlo.reverse": 1},
}


@wrong(
    "predict_lowering",
    why="'ops nested in regions too': predicts reductions from the PRINTED form "
    "('stablehlo.reduce(...) applies stablehlo.add'), which shows the combining op but hides "
    "the body's terminator, so no stablehlo.return is counted; wrong on x.sum(axis=0), "
    "x.max(axis=1) and x.mean() (each has 1 stablehlo.return in its reduce body)",
)
def _rt11_predict_lowering_printed_reduce():
    table = {k: dict(v) for k, v in _RT11_TRUTH.items()}
    for k in ("x.sum(axis=0)", "x.max(axis=1)", "x.mean()"):
        del table[k]["stablehlo.return"]
    return table


@wrong(
    "predict_lowering",
    why="'indexing one row slices and then reshapes the unit dimension away': reads x[0] as "
    "NumPy basic indexing that drops the axis inside the slice itself and predicts one "
    "stablehlo.slice and nothing else; the lowering is slice to (1, 3) then stablehlo.reshape "
    "to (3,): 'x[0]' has 1 reshape",
)
def _rt11_predict_lowering_index_no_reshape():
    table = {k: dict(v) for k, v in _RT11_TRUTH.items()}
    table["x[0]"] = {"stablehlo.slice": 1}
    return table
