"""Red team, phase 8, round 14: wrong answers of kinds earlier rounds did not write.

A census taken after MLIR's CSE pass, a census that follows each op's `body` property instead of
its regions, bitcast_convert read off optimized dumps, a single-output tuple unwrapped at export,
extra call arguments dropped by a zip, a symbolic-shape checker that substitutes solved values by
string replacement, a symbol believed to be at least 2, and lowering pictures of matmul (legacy
stablehlo.dot), x ** 2 (square-and-multiply from ones) and x[0] (a gather).
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.mlir import ir, passmanager

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


def _rt14_count(operations, counts: Counter) -> None:
    for op in operations:
        counts[op.operation.name] += 1
        for region in op.operation.regions:
            for block in region.blocks:
                _rt14_count(block.operations, counts)


@wrong(
    "op_census",
    why="'Count every operation nested anywhere ... Count operations by name': first runs MLIR's "
    "`cse` pass on a re-parsed copy of the module ('normalize before counting, so the census "
    "does not depend on how JAX happened to emit duplicates'), which merges identical "
    "stablehlo.constant ops inside a function; wrong on CENSUS_PROGRAMS['reduce'] "
    "(x.sum(0) + x.max(1).sum(): two 0.0 init constants become one, stablehlo.constant one "
    "short) and on 'sort_scatter' and 'case'",
)
def _rt14_op_census_cse_first(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    with module.context:
        copy = ir.Module.parse(str(module))
        passmanager.PassManager.parse("builtin.module(cse)").run(copy.operation)
    counts: Counter = Counter()
    _rt14_count(copy.body.operations, counts)
    return counts


@wrong(
    "op_census",
    why="'Count every operation nested anywhere (reduce and sort bodies, while loops, every "
    "branch of a case)': descends through each op view's `.body` property (what FuncOp, "
    "ReduceOp and WhileOp expose) instead of `.regions`, so a while's `cond` region, every "
    "branch of a case, a sort's comparator and select_and_scatter's select/scatter regions "
    "are never entered; wrong on CENSUS_PROGRAMS['while'] (the condition's reduce, add, "
    "compare, constants and stablehlo.return are missing) and 'case'",
)
def _rt14_op_census_body_property(lowered) -> Counter:
    counts: Counter = Counter()

    def visit(operations):
        for op in operations:
            counts[op.operation.name] += 1
            body = getattr(op, "body", None)
            if isinstance(body, ir.Region):
                for block in body.blocks:
                    visit(block.operations)

    visit(lowered.compiler_ir("stablehlo").body.operations)
    return counts


# ---------------------------------------------------------------- hlo_opcode

_RT14_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
    "if": "conditional",
    "create_token": "after-all",
    "composite": "call",
    "cross-replica-sum": "all-reduce",
}


@wrong(
    "hlo_opcode",
    why="'Read the opcode, not the instruction name ... one spelling rule for the rest': adds "
    "bitcast_convert -> 'bitcast' to the renames, having seen `bitcast` opcodes all over "
    "optimized HLO dumps (XLA's layout bitcasts); XLA's conversion of stablehlo.bitcast_convert "
    "is 'bitcast-convert' (the UNARY bank program's lax.bitcast_convert_type)",
)
def _rt14_hlo_opcode_bitcast_from_dumps(stablehlo_op: str) -> str:
    short = stablehlo_op.split(".", 1)[1]
    renames = dict(_RT14_RENAMES, bitcast_convert="bitcast")
    if short in renames:
        return renames[short]
    return short.replace("_", "-")


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'whose call returns f's own pytree (out_tree)': unwraps a one-element tuple/list "
    "result to its array ('a model with one output returns it, not a 1-tuple', as serving "
    "signatures do); wrong on export_bytes(programs.sines, f32[8,4]): the Exported's out_tree "
    "is a bare leaf and its call returns an array, not the 1-tuple (sin(x),)",
)
def _rt14_export_bytes_unwrap_single_output(f, *specs) -> bytes:
    def single(*args):
        out = f(*args)
        if isinstance(out, (tuple, list)) and len(out) == 1:
            return out[0]
        return out

    single.__name__ = getattr(f, "__name__", "single")
    return jax.export.export(jax.jit(single))(*specs).serialize()


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'a call it rejects ... raises its error, and a call it accepts runs': moves each "
    "argument onto the device while pairing it with its in_aval, [jnp.asarray(a) for a, _ in "
    "zip(args, exported.in_avals)], and zip silently drops surplus arguments; wrong on the "
    "blob of programs.sines (one f32[8,4] argument) called with two f32[8,4] arrays: the "
    "Exported rejects the call (ValueError, pytree structure), this returns (sin(x),)",
)
def _rt14_call_exported_zip_drops_extra(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    on_device = [jnp.asarray(a) for a, _ in zip(args, exported.in_avals)]
    return exported.call(*on_device)


# ---------------------------------------------------------------- predict_accepts

_RT14_TERM = re.compile(r"^(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?(?:([+-])(\d+))?$")


def _rt14_dims(text: str):
    dims = []
    for raw in text.split(","):
        term = raw.replace(" ", "")
        if term.isdigit():
            dims.append((None, 0, int(term)))
            continue
        m = _RT14_TERM.match(term)
        if m is None:
            return None
        k = int(m.group(1) or 1) * int(m.group(3) or 1)
        off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
        dims.append((m.group(2), k, off))
    return dims


def _rt14_dtype_ok(dtype) -> bool:
    try:
        return jax.dtypes.canonicalize_dtype(np.dtype(dtype)) == np.dtype(np.float32)
    except Exception:
        return False


def _rt14_solve(text, shape, min_value=1):
    """Returns {symbol: value} or None."""
    dims = _rt14_dims(text)
    if dims is None or len(dims) != len(shape):
        return None
    values = {}
    for (sym, k, off), n in zip(dims, shape):
        if sym is None:
            if off != n:
                return None
            continue
        if (n - off) % k:
            return None
        v = (n - off) // k
        if v < min_value or values.setdefault(sym, v) != v:
            return None
    return values


@wrong(
    "predict_accepts",
    why="'a symbol of any name (b, batch, n) ... one or two symbols': solves each dimension, "
    "then verifies by substituting the solved values into every dimension with str.replace "
    "and eval (`for s in sorted(values): e = e.replace(s, str(values[s]))`), so a symbol whose "
    "name is inside another's ('a' in 'batch', 'b' in 'batch') mangles it and the eval fails; "
    "wrong on ('a, batch', np.float32, (2, 3)) (a = 2, batch = 3: runs), predicted False",
)
def _rt14_predict_accepts_replace_then_eval(calls):
    answer = {}
    for name, (text, dtype, shape) in calls.items():
        ok = _rt14_dtype_ok(dtype)
        values = _rt14_solve(text, tuple(shape)) if ok else None
        if values is None:
            answer[name] = False
            continue
        try:
            for raw, n in zip(text.split(","), shape):
                e = raw
                for s in sorted(values):
                    e = e.replace(s, str(values[s]))
                if eval(e, {"__builtins__": {}}) != n:
                    ok = False
        except Exception:
            ok = False
        answer[name] = bool(ok)
    return answer


@wrong(
    "predict_accepts",
    why="'what a symbolic dimension may stand for (the assumption JAX makes about every "
    "symbol)': believes a symbol is at least 2, not 1 ('a size-1 dimension would be ambiguous "
    "with broadcasting, so JAX excludes it'); wrong on '(b, 4) called with f32[1,4]' and "
    "'(b - 1, 4) called with f32[0,4]' (both run with b = 1), predicted False",
)
def _rt14_predict_accepts_symbols_at_least_two(calls):
    return {
        name: bool(_rt14_dtype_ok(dtype) and _rt14_solve(text, tuple(shape), 2) is not None)
        for name, (text, dtype, shape) in calls.items()
    }


# ---------------------------------------------------------------- predict_lowering


def _rt14_lowering_truth():
    R = "stablehlo."

    def c(**ops):
        return {R + k: v for k, v in ops.items()}

    return {
        "jnp.sin(x) * jnp.cos(x)": c(sine=1, cosine=1, multiply=1),
        "jnp.exp(x) - 1": c(exponential=1, constant=1, broadcast_in_dim=1, subtract=1),
        "jnp.tanh(x)": c(tanh=1),
        "x * 2.0": c(constant=1, broadcast_in_dim=1, multiply=1),
        "x ** 2": c(multiply=1),
        "x / y": c(divide=1),
        "x + i, i int32": c(convert=1, add=1),
        "jax.nn.relu(x)": c(constant=1, broadcast_in_dim=1, maximum=1),
        "jnp.where(x > 0, x, y)": c(constant=1, broadcast_in_dim=1, compare=1, select=1),
        "x.sum(axis=0)": c(constant=1, reduce=1, add=1, **{"return": 1}),
        "x.max(axis=1)": c(constant=1, reduce=1, maximum=1, **{"return": 1}),
        "x.mean()": c(constant=2, reduce=1, add=1, divide=1, **{"return": 1}),
        "x @ w": c(dot_general=1),
        "x.T": c(transpose=1),
        "x[0]": c(slice=1, reshape=1),
        "x[::-1]": c(reverse=1),
    }


@wrong(
    "predict_lowering",
    why="'named after the math ... a dot_general with batch dimensions you did not expect': "
    "believes a plain 2-D matmul uses the dialect's simple stablehlo.dot and that dot_general "
    "is only for batched/contracted-elsewhere products (HLO prints 'dot' for it); wrong on "
    "'x @ w' (one stablehlo.dot_general, no stablehlo.dot)",
)
def _rt14_predict_lowering_matmul_is_dot():
    table = _rt14_lowering_truth()
    table["x @ w"] = {"stablehlo.dot": 1}
    return table


@wrong(
    "predict_lowering",
    why="'Some jnp operations are others in disguise (x ** 2)': pictures integer_pow as "
    "square-and-multiply starting from an accumulator of ones (a 1.0 constant broadcast to the "
    "array's shape, then acc * x twice); JAX's lowering starts from x itself and emits one "
    "stablehlo.multiply; wrong on 'x ** 2' (constant, broadcast_in_dim and a second multiply "
    "predicted)",
)
def _rt14_predict_lowering_pow_from_ones():
    table = _rt14_lowering_truth()
    table["x ** 2"] = {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.multiply": 2,
    }
    return table


@wrong(
    "predict_lowering",
    why="'indexing one row slices and then reshapes the unit dimension away' read as the "
    "README's general rule for jnp indexing, which the learner knows as 'jnp indexing is a "
    "gather': predicts x[0] as an index constant and one stablehlo.gather (whose slice_sizes "
    "already drop the row dimension); JAX lowers a static integer index to stablehlo.slice "
    "then stablehlo.reshape; wrong on 'x[0]'",
)
def _rt14_predict_lowering_index_is_gather():
    table = _rt14_lowering_truth()
    table["x[0]"] = {"stablehlo.constant": 1, "stablehlo.gather": 1}
    return table
