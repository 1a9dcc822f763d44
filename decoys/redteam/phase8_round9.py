"""Round 9 red team, phase 8: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


@wrong(
    "op_census",
    why="'Count every operation nested anywhere ... of every dialect': counts op names in the "
    "generic form (print_generic_op_form) with a regex for '= \"dialect.op\"(', i.e. only ops "
    "that define a result; func.func, func.return, stablehlo.return (reduce bodies) and sdy.mesh "
    "have no result and are missed; wrong on x.sum(0) (no func.func, func.return, "
    "stablehlo.return)",
)
def _rt9_op_census_generic_results_only(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    text = module.operation.get_asm(print_generic_op_form=True)
    return Counter(re.findall(r'= "([A-Za-z_]\w*\.[\w.]+)"\(', text))


@wrong(
    "op_census",
    why="'do not count the outer module': uses MLIR's Operation.walk and drops the first op the "
    "callback sees, believing the walk starts at the module; the default walk order is "
    "POST_ORDER, so the first leaf (e.g. the first stablehlo.constant or op of main) is dropped "
    "and builtin.module is counted; wrong on every program, e.g. lambda x: jnp.sin(x)",
)
def _rt9_op_census_walk_skip_first(lowered) -> Counter:
    from jax._src.lib.mlir import ir  # noqa: PLC0415

    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()
    first = [True]

    def cb(op):
        if first[0]:
            first[0] = False
        else:
            counts[op.name] += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb)
    return counts


# ---------------------------------------------------------------- hlo_opcode

_RT9_RENAMES = [
    ("dot_general", "dot"),
    ("broadcast_in_dim", "broadcast"),
    ("optimization_barrier", "opt-barrier"),
    ("create_token", "after-all"),
    ("composite", "call"),
    ("case", "conditional"),
    ("if", "conditional"),
]


@wrong(
    "hlo_opcode",
    why="'any op of the dialect': applies the renames with str.replace over the whole name "
    "before respelling, so a rename key that is a substring of another name fires inside it: "
    "'if' in shift_left / shift_right_logical / uniform_quantize; stablehlo.shift_left -> "
    "'shconditionalt-left' (XLA: shift-left)",
)
def _rt9_hlo_opcode_replace_loop(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[-1]
    for old, new in _RT9_RENAMES:
        name = name.replace(old, new)
    return name.replace("_", "-")


# ---------------------------------------------------------------- export_any_batch


@wrong(
    "export_any_batch",
    why="'in_avals show x as (symbolic batch, features)': writes symbolic_shape('b, features') "
    "without the f-string, so features becomes a second symbol named 'features'; in_avals "
    "show (b, features) with no concrete feature count, and a call with f32[3, features+1] "
    "is accepted instead of rejected (wrong for every features)",
)
def _rt9_export_any_batch_features_symbol(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, features"), np.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'a call it rejects (a wrong shape) raises its error': reshapes every argument whose "
    "size matches a fully constant in_aval to that shape ('clients send flat buffers'), so an "
    "export for f32[2,3] called with f32[6] or f32[3,2] runs instead of raising",
)
def _rt9_call_exported_reshape_to_avals(blob: bytes, *args):
    exp = jax.export.deserialize(blob)
    fixed = []
    for a, aval in zip(args, exp.in_avals):
        shape = aval.shape
        if all(isinstance(d, int) for d in shape) and hasattr(a, "shape"):
            if tuple(a.shape) != tuple(shape) and int(np.prod(a.shape)) == int(np.prod(shape)):
                a = a.reshape(shape)
        fixed.append(a)
    return exp.call(*fixed)


# ---------------------------------------------------------------- predict_accepts


def _rt9_parse(term: str):
    t = term.replace(" ", "")
    if re.fullmatch(r"\d+", t):
        return None, 0, int(t)
    m = re.fullmatch(r"(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?(?:([+-])(\d+))?", t)
    coef = int(m.group(1) or m.group(3) or 1)
    off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
    return m.group(2), coef, off


def _rt9_accepts(shape_str, dtype, shape, dtype_ok) -> bool:
    if not dtype_ok(dtype):
        return False
    terms = [t for t in shape_str.split(",") if t.strip()]
    if len(terms) != len(shape):
        return False
    values: dict[str, int] = {}
    for term, n in zip(terms, shape):
        sym, coef, off = _rt9_parse(term)
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
    why="'arrays of any NumPy dtype': decides the dtype with `dtype in (np.float32, np.float64)`, "
    "comparing the table's dtype object with NumPy's scalar types instead of np.dtype(dtype); "
    "a dtype spelled 'float32', 'f8' or Python float (all arriving as float32) is predicted "
    "rejected though the call runs",
)
def _rt9_predict_accepts_dtype_by_identity(calls) -> dict[str, bool]:
    ok = lambda d: d in (np.float32, np.float64)  # noqa: E731
    return {n: _rt9_accepts(s, d, sh, ok) for n, (s, d, sh) in calls.items()}


# ---------------------------------------------------------------- predict_lowering

_RT9_H = "stablehlo."


def _rt9_c(**ops):
    return {_RT9_H + k: v for k, v in ops.items()}


_RT9_TRUTH = {
    "jnp.sin(x) * jnp.cos(x)": _rt9_c(sine=1, cosine=1, multiply=1),
    "jnp.exp(x) - 1": _rt9_c(exponential=1, constant=1, broadcast_in_dim=1, subtract=1),
    "jnp.tanh(x)": _rt9_c(tanh=1),
    "x * 2.0": _rt9_c(constant=1, broadcast_in_dim=1, multiply=1),
    "x ** 2": _rt9_c(multiply=1),
    "x / y": _rt9_c(divide=1),
    "x + i, i int32": _rt9_c(convert=1, add=1),
    "jax.nn.relu(x)": _rt9_c(constant=1, broadcast_in_dim=1, maximum=1),
    "jnp.where(x > 0, x, y)": _rt9_c(constant=1, broadcast_in_dim=1, compare=1, select=1),
    "x.sum(axis=0)": _rt9_c(constant=1, reduce=1, add=1, **{"return": 1}),
    "x.max(axis=1)": _rt9_c(constant=1, reduce=1, maximum=1, **{"return": 1}),
    "x.mean()": _rt9_c(constant=2, reduce=1, add=1, divide=1, **{"return": 1}),
    "x @ w": _rt9_c(dot_general=1),
    "x.T": _rt9_c(transpose=1),
    "x[0]": _rt9_c(slice=1, reshape=1),
    "x[::-1]": _rt9_c(reverse=1),
}


def _rt9_copy():
    return {k: dict(v) for k, v in _RT9_TRUTH.items()}


_RT9_ELEMENTWISE = (
    "sine",
    "cosine",
    "multiply",
    "exponential",
    "subtract",
    "tanh",
    "divide",
    "convert",
    "add",
    "maximum",
    "compare",
    "select",
    "broadcast_in_dim",
)


@wrong(
    "predict_lowering",
    why="'leave out ... ops that do not occur': lists the element-wise ops it considered for "
    "every program with a count of 0 ('a full table is easier to diff'); every entry carries "
    "extra keys such as 'stablehlo.convert': 0 (dict != the census; equal only to a Counter)",
)
def _rt9_predict_lowering_zero_entries() -> dict[str, dict[str, int]]:
    answer = _rt9_copy()
    for ops in answer.values():
        for op in _RT9_ELEMENTWISE:
            ops.setdefault(_RT9_H + op, 0)
    return answer


@wrong(
    "predict_lowering",
    why="'A reduction is one stablehlo.reduce': believes a reduction over all axes is one "
    "reduce per axis (sum rows, then the column), each with its own init constant, add and "
    "return; wrong on 'x.mean()' (reduce: 2, add: 2, return: 2, constant: 3 instead of 1/1/1/2)",
)
def _rt9_predict_lowering_reduce_per_axis() -> dict[str, dict[str, int]]:
    answer = _rt9_copy()
    answer["x.mean()"] = _rt9_c(constant=3, reduce=2, add=2, divide=1, **{"return": 2})
    return answer


@wrong(
    "predict_lowering",
    why="'what jnp does implicitly becomes ops of its own': believes x / y (true_divide) "
    "converts both operands to the result float type first, as NumPy's true_divide does for "
    "ints; for two float32 operands JAX emits only stablehlo.divide; wrong on 'x / y' "
    "(predicts convert: 2)",
)
def _rt9_predict_lowering_true_divide_converts() -> dict[str, dict[str, int]]:
    answer = _rt9_copy()
    answer["x / y"] = _rt9_c(convert=2, divide=1)
    return answer


_RT9_MEMO: dict[str, bool] = {}


@wrong(
    "predict_accepts",
    why="'the tests pass ... calls of their own, different ones at each call of your function "
    "(answer for the calls you are given)': memoizes the whole answer on the first call ('the "
    "table is a constant'); a later call given other calls returns the first table, missing the "
    "new names",
)
def _rt9_predict_accepts_memoized_table(calls) -> dict[str, bool]:
    if not _RT9_MEMO:
        ok = lambda d: np.dtype(d) in (np.dtype(np.float32), np.dtype(np.float64))  # noqa: E731
        _RT9_MEMO.update({n: _rt9_accepts(s, d, sh, ok) for n, (s, d, sh) in calls.items()})
    return dict(_RT9_MEMO)
