"""Round 10 red team, phase 8: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


@wrong(
    "op_census",
    why="'Count every operation nested anywhere (reduce and sort bodies ... every function)': "
    "guards the recursion against func.call cycles by descending into the regions of each op "
    "NAME only once (a set of names already entered); the second and later reduce bodies, the "
    "second private function, the second case are counted as ops but their contents are not; "
    "wrong on x.sum(0) + x.max(1).sum() (3 reduces, only the first body's add/return counted) "
    "and on nested_calls (second func.func's body missed)",
)
def _rt10_op_census_enter_each_name_once(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()
    entered: set[str] = set()

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    name = child.operation.name
                    counts[name] += 1
                    if name not in entered:
                        entered.add(name)
                        visit(child.operation)

    visit(module.operation)
    return counts


@wrong(
    "op_census",
    why="'Count every operation': counts an op once per value it defines (walking the SSA "
    "results, ops with no result once), so a multi-result op is counted several times; wrong "
    "on lax.top_k(x, 2) (chlo.top_k has 2 results: counted 2, truth 1) and on a while loop "
    "carrying a tuple (stablehlo.while with n results counted n times)",
)
def _rt10_op_census_per_result(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    o = child.operation
                    counts[o.name] += max(1, len(o.results))
                    visit(o)

    visit(module.operation)
    return counts


# ---------------------------------------------------------------- hlo_opcode

_RT10_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "if": "conditional",
    "optimization_barrier": "opt-barrier",
    "create_token": "after-all",
    "composite": "call",
}


@wrong(
    "hlo_opcode",
    why="'any op of the dialect, including ops JAX never emits (the README names the renamed "
    "ones)': treats a name already written with hyphens as already an HLO opcode and returns it "
    "unchanged; the legacy stablehlo.cross-replica-sum becomes 'cross-replica-sum', XLA makes "
    "it 'all-reduce'",
)
def _rt10_hlo_opcode_hyphenated_passthrough(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    if "-" in name:
        return name
    return _RT10_RENAMES.get(name, name.replace("_", "-"))


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'the bytes deserialize to an Exported ... whose call returns f's own pytree': exports "
    "a wrapper taking the specs as ONE tuple argument (jax.jit(lambda args: f(*args))(specs)); "
    "in_avals flatten to the same list, but in_tree is ((x, y),) not (x, y), so calling the "
    "deserialized Exported with the arguments as f takes them (exp.call(x, y)) raises; wrong on "
    "every f, e.g. pair(x, y) with two f32[3] specs",
)
def _rt10_export_bytes_specs_as_one_tuple(f, *specs) -> bytes:
    exported = jax.export.export(jax.jit(lambda args: f(*args)))(tuple(specs))
    return exported.serialize()


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'call it on args as given': makes every argument at least 1-D first (jnp.atleast_1d, "
    "'exported functions take arrays'), so a 0-d argument arrives as shape (1,) and the "
    "Exported rejects a call it accepts; wrong on an export of lambda x, s: x * s with s "
    "f32[] called with (np.ones(3, f32), np.float32(2.0))",
)
def _rt10_call_exported_atleast_1d(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    return exported.call(*[jax.numpy.atleast_1d(a) for a in args])


# ---------------------------------------------------------------- predict_accepts


def _rt10_parse(term: str):
    t = term.replace(" ", "")
    if re.fullmatch(r"\d+", t):
        return None, 0, int(t)
    m = re.fullmatch(r"(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?(?:([+-])(\d+))?", t)
    coef = int(m.group(1) or m.group(3) or 1)
    off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
    return m.group(2), coef, off


def _rt10_dtype_ok(dtype) -> bool:
    return jax.dtypes.canonicalize_dtype(np.dtype(dtype)) == np.dtype(np.float32)


def _rt10_solve(shape_str: str, shape, candidates) -> bool:
    terms = [t for t in shape_str.split(",") if t.strip()]
    if len(terms) != len(shape):
        return False
    parsed = [_rt10_parse(t) for t in terms]
    syms = sorted({p[0] for p in parsed if p[0] is not None})
    for (sym, coef, off), n in zip(parsed, shape):  # noqa: B007
        if sym is None and off != n:
            return False

    def ok(env):
        return all(
            sym is None or coef * env[sym] + off == n for (sym, coef, off), n in zip(parsed, shape)
        )

    def search(i, env):
        if i == len(syms):
            return ok(env)
        return any(search(i + 1, {**env, syms[i]: v}) for v in candidates)

    return search(0, {})


@wrong(
    "predict_accepts",
    why="'what a symbolic dimension may stand for' (any b >= 1): solves by brute force over "
    "b in 1..max(shape), believing a symbol can never exceed the largest dimension; with a "
    "negative offset it must: ('b - 3, 2', f32, (1, 2)) runs with b = 4 but is predicted "
    "False (all EXPORTED_CALLS are still answered right)",
)
def _rt10_predict_accepts_search_up_to_max_dim(calls):
    out = {}
    for name, (shape_str, dtype, shape) in calls.items():
        if not _rt10_dtype_ok(dtype):
            out[name] = False
            continue
        out[name] = _rt10_solve(shape_str, tuple(shape), range(1, max(shape, default=0) + 1))
    return out


def _rt10_exact(shape_str, shape) -> bool:
    terms = [t for t in shape_str.split(",") if t.strip()]
    if len(terms) != len(shape):
        return False
    values: dict[str, int] = {}
    for term, n in zip(terms, shape):
        sym, coef, off = _rt10_parse(term)
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
    why="'one to three dimensions': the rank check is hard-wired to the matrices of "
    "EXPORTED_CALLS (x must be 2-D), so any rank-1 or rank-3 export is predicted rejected even "
    "when the call matches; wrong on ('b', f32, (3,)) and ('b, 2, 3', f32, (5, 2, 3)), both run",
)
def _rt10_predict_accepts_matrices_only(calls):
    out = {}
    for name, (shape_str, dtype, shape) in calls.items():
        out[name] = (
            _rt10_dtype_ok(dtype) and len(shape) == 2 and _rt10_exact(shape_str, tuple(shape))
        )
    return out


@wrong(
    "predict_accepts",
    why="'arrays of any NumPy dtype': decides the dtype by kind and width (a float of at least "
    "32 bits is narrowed to float32 with x64 off) instead of by JAX's canonicalization; "
    "np.longdouble (float128) is not a JAX type at all and the call raises TypeError, predicted "
    "True: ('b, 4', np.longdouble, (3, 4)) and ('b, 4', 'g', (2, 4))",
)
def _rt10_predict_accepts_wide_floats_narrowed(calls):
    out = {}
    for name, (shape_str, dtype, shape) in calls.items():
        dt = np.dtype(dtype)
        ok = dt.kind == "f" and dt.itemsize >= 4
        out[name] = ok and _rt10_exact(shape_str, tuple(shape))
    return out


# ---------------------------------------------------------------- predict_lowering

_RT10_MAIN_ONLY = {
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
    # jax.nn.relu is itself jitted: main only calls a private function; read as if nothing
    # but the call happened in main
    "jax.nn.relu(x)": {},
    # jnp.where's select sits in a private function too
    "jnp.where(x > 0, x, y)": {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.compare": 1,
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
    why="'counting ... the way op_census walks it (ops nested in regions too)': counts only the "
    "ops in main's body (and its regions), not those of the private functions main calls; "
    "jax.nn.relu and jnp.where are jitted helpers, so relu is predicted {} (truth: constant, "
    "broadcast_in_dim, maximum, 1 each) and where misses its stablehlo.select",
)
def _rt10_predict_lowering_main_body_only():
    return {k: dict(v) for k, v in _RT10_MAIN_ONLY.items()}


@wrong(
    "predict_lowering",
    why="'Decide from the jnp code': reads jnp.where as NumPy-style broadcasting of all three "
    "operands to a common shape and predicts a stablehlo.broadcast_in_dim for x and y as well "
    "as for the scalar 0 (3 in all); JAX emits no broadcast for operands already of the result "
    "shape: 'jnp.where(x > 0, x, y)' has exactly 1 broadcast_in_dim (for the 0)",
)
def _rt10_predict_lowering_where_broadcasts_all():
    table = {k: dict(v) for k, v in _RT10_MAIN_ONLY.items()}
    table["jax.nn.relu(x)"] = {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.maximum": 1,
    }
    table["jnp.where(x > 0, x, y)"] = {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 3,
        "stablehlo.compare": 1,
        "stablehlo.select": 1,
    }
    return table
