"""Round 12 red team, phase 8: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re

import jax
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- shared: the true lowering table

_RT12_TRUTH = {
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


def _rt12_table():
    return {k: dict(v) for k, v in _RT12_TRUTH.items()}


# ---------------------------------------------------------------- predict_lowering


@wrong(
    "predict_lowering",
    why="'one StableHLO op per jnp operation ... a Python scalar is a scalar constant broadcast': "
    "believes the lowering fuses exp(x) - 1 into the dedicated StableHLO op "
    "stablehlo.exponential_minus_one (the dialect has one, XLA has expm1); JAX lowers jnp.exp "
    "then subtracts a broadcast 1: 'jnp.exp(x) - 1' is exponential, constant, broadcast_in_dim, "
    "subtract, not {exponential_minus_one: 1}",
)
def _rt12_predict_lowering_expm1_fused():
    table = _rt12_table()
    table["jnp.exp(x) - 1"] = {"stablehlo.exponential_minus_one": 1}
    return table


@wrong(
    "predict_lowering",
    why="'a Python scalar is a scalar constant broadcast to the array's shape': pictures the "
    "2.0 of x * 2.0 as one splat constant of the array's shape (dense<2.0> : tensor<4x3xf32>), "
    "so no broadcast_in_dim; wrong on 'x * 2.0' and 'jnp.exp(x) - 1' (each has 1 "
    "stablehlo.broadcast_in_dim of a 0-d constant)",
)
def _rt12_predict_lowering_scalar_as_splat():
    table = _rt12_table()
    for k in ("x * 2.0", "jnp.exp(x) - 1"):
        table[k].pop("stablehlo.broadcast_in_dim", None)
    return table


@wrong(
    "predict_lowering",
    why="'one StableHLO op per jnp operation': reasons from NumPy that x.T and x[::-1] are "
    "views (strides only, no copy), so they lower to no op at all and the function just returns "
    "its argument; wrong on 'x.T' (1 stablehlo.transpose) and 'x[::-1]' (1 stablehlo.reverse)",
)
def _rt12_predict_lowering_views_are_free():
    table = _rt12_table()
    table["x.T"] = {}
    table["x[::-1]"] = {}
    return table


@wrong(
    "predict_lowering",
    why="'named after the math rather than after jnp (jnp.sin -> stablehlo.sine)': applies that "
    "to sine/cosine/exponential but takes the int32 + float32 promotion to be a property of "
    "the add (StableHLO add of mixed dtypes), no convert; wrong on 'x + i, i int32' "
    "(1 stablehlo.convert of i to f32 before the add)",
)
def _rt12_predict_lowering_mixed_add_no_convert():
    table = _rt12_table()
    table["x + i, i int32"] = {"stablehlo.add": 1}
    return table


# ---------------------------------------------------------------- hlo_opcode


_RT12_RENAMES = {
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
    why="'it must work for any op of the dialect, not a fixed list': generalizes "
    "cross-replica-sum -> all-reduce (of an add) to 'every collective with a reduction body "
    "becomes an all-reduce', so stablehlo.reduce_scatter -> 'all-reduce'; XLA keeps it as "
    "'reduce-scatter'",
)
def _rt12_hlo_opcode_reducing_collectives_all_reduce(stablehlo_op: str) -> str:
    short = stablehlo_op.split(".", 1)[1]
    if short in _RT12_RENAMES:
        return _RT12_RENAMES[short]
    if short in ("all_reduce", "reduce_scatter"):
        return "all-reduce"
    return short.replace("_", "-")


@wrong(
    "hlo_opcode",
    why="'HLO writes multi-word names with hyphens': believes HLO's naming keeps the "
    "StableHLO spelling for the compound math names it saw as single HLO words "
    "(exponential-minus-one, log-plus-one) and shortens them as XLA's C++ enum does "
    "(kExpm1, kLog1p): stablehlo.exponential_minus_one -> 'expm1' and stablehlo.log_plus_one "
    "-> 'log1p'; the HLO opcodes are 'exponential-minus-one' and 'log-plus-one'",
)
def _rt12_hlo_opcode_enum_short_names(stablehlo_op: str) -> str:
    short = stablehlo_op.split(".", 1)[1]
    if short in _RT12_RENAMES:
        return _RT12_RENAMES[short]
    enum = {"exponential_minus_one": "expm1", "log_plus_one": "log1p"}
    if short in enum:
        return enum[short]
    return short.replace("_", "-")


# ---------------------------------------------------------------- predict_accepts


_RT12_TERM = re.compile(
    r"^\s*(?:(?P<c1>\d+)\s*\*\s*)?(?P<sym>[A-Za-z_]\w*)(?:\s*\*\s*(?P<c2>\d+))?"
    r"(?:\s*(?P<sign>[+-])\s*(?P<off>\d+))?\s*$"
)


def _rt12_parse(text: str):
    dims = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if re.fullmatch(r"\d+", part):
            dims.append((None, 0, int(part)))
            continue
        m = _RT12_TERM.match(part)
        coef = int(m.group("c1") or m.group("c2") or 1)
        off = int(m.group("off") or 0) * (-1 if m.group("sign") == "-" else 1)
        dims.append((m.group("sym"), coef, off))
    return dims


def _rt12_dtype_ok(dtype) -> bool:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return False
    return dt in (np.dtype(np.float32), np.dtype(np.float64))


def _rt12_shape_ok(dims, shape, check_rank=True, nonempty=False) -> bool:
    if check_rank and len(dims) != len(shape):
        return False
    if nonempty and any(n == 0 for n in shape):
        return False
    env: dict = {}
    for (sym, coef, off), n in zip(dims, shape):
        if sym is None:
            if n != off:
                return False
            continue
        if (n - off) % coef:
            return False
        v = (n - off) // coef
        if v < 1 or env.setdefault(sym, v) != v:
            return False
    return True


@wrong(
    "predict_accepts",
    why="'the exported function checks ... the rank': pairs dimensions with zip(), which stops "
    "at the shorter of the two, so an array with an extra (or a missing) trailing dimension "
    "passes: '(b, 4) called with f32[3,4,1]' is predicted True (rejected: rank 3 vs 2), and "
    "('b, 4', f32, (3,)) is predicted True",
)
def _rt12_predict_accepts_zip_truncates(calls):
    return {
        name: _rt12_dtype_ok(dt) and _rt12_shape_ok(_rt12_parse(sym), shape, check_rank=False)
        for name, (sym, dt, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'what a symbolic dimension may stand for' (each symbol >= 1): turns 'b >= 1' into "
    "'the array may not be empty', rejecting every call with a 0-size dimension; but b - 1 = 0 "
    "has the solution b = 1: '(b - 1, 4) called with f32[0,4]' runs, predicted False",
)
def _rt12_predict_accepts_no_empty_arrays(calls):
    return {
        name: _rt12_dtype_ok(dt) and _rt12_shape_ok(_rt12_parse(sym), shape, nonempty=True)
        for name, (sym, dt, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'the dtype is written any way NumPy takes one (a type code, a Python type)': compares "
    "the dtype as written with a list of spellings (np.float32, np.float64, 'float32', "
    "'float64') instead of normalizing it with np.dtype; wrong on a call whose dtype is 'f4', "
    "'f8', 'd' or Python float (all run: f32, or f64 canonicalized to f32), predicted False",
)
def _rt12_predict_accepts_dtype_by_spelling(calls):
    names = (np.float32, np.float64, "float32", "float64", np.dtype("float32"), np.dtype("float64"))
    out = {}
    for name, (sym, dt, shape) in calls.items():
        ok = any(dt is n or (isinstance(dt, str) and isinstance(n, str) and dt == n) for n in names)
        out[name] = ok and _rt12_shape_ok(_rt12_parse(sym), shape)
    return out


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'its shape may have a symbolic dimension ... so export from the specs themselves': "
    "replaces every symbolic dimension by 1 before exporting (a 'representative' size, as one "
    "does for jax.eval_shape), so the in_avals are concrete; wrong on a spec "
    "ShapeDtypeStruct(symbolic_shape('b, 4'), f32): in_avals shows (1, 4), not (b, 4)",
)
def _rt12_export_bytes_symbols_as_one(f, *specs) -> bytes:
    def concrete(s):
        shape = tuple(d if isinstance(d, int) else 1 for d in s.shape)
        return jax.ShapeDtypeStruct(shape, s.dtype)

    return jax.export.export(jax.jit(f))(*(concrete(s) for s in specs)).serialize()
