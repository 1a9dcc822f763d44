"""Red team, phase 8, round 13: wrong answers of kinds earlier rounds did not write.

Symbol names on FuncOp views, 'only one branch runs', region terminators taken for syntax,
substring renames and spelled-out abbreviations, regex and algebra slips in the symbolic-shape
solver, lowering pictures of max and mean, and NumPy scalars unwrapped before an exported call.
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


def _rt13_walk_ops(operations, counts, skip_region_terminators=False, depth=0):
    for op in operations:
        name = op.operation.name
        if not (skip_region_terminators and depth > 1 and name == "stablehlo.return"):
            counts[name] += 1
        for region in op.operation.regions:
            for block in region.blocks:
                _rt13_walk_ops(block.operations, counts, skip_region_terminators, depth + 1)


@wrong(
    "op_census",
    why="'Count operations by name (stablehlo.add, func.func, ...)': reads each op's name as "
    "op.name, which the MLIR views give for every stablehlo/chlo op but which on a FuncOp view "
    "is the function's symbol name (a StringAttr '\"main\"'), so func.func is never counted and "
    "'\"main\"' (and each private function's name) appear instead; wrong on every program, e.g. "
    "the 'reduce' census program (func.func: 1 expected, 0 here)",
)
def _rt13_op_census_op_dot_name(lowered) -> Counter:
    counts: Counter = Counter()

    def visit(ops):
        for op in ops:
            counts[str(op.name)] += 1
            for region in op.regions:
                for block in region.blocks:
                    visit(block.operations)

    visit(lowered.compiler_ir("stablehlo").body.operations)
    return counts


@wrong(
    "op_census",
    why="'every branch of a case': reasons that only one branch of a stablehlo.case/if runs, "
    "so it counts the branch with the most operations (the cost of the worst case) and skips "
    "the others; wrong on the 'case' census program (switch of sin / cos / cond): the sine "
    "branch and the cos branch are not both counted (stablehlo.sine 1 and stablehlo.cosine 1 "
    "expected)",
)
def _rt13_op_census_heaviest_branch(lowered) -> Counter:
    counts: Counter = Counter()

    def visit(ops, into):
        for op in ops:
            into[op.operation.name] += 1
            regions = list(op.operation.regions)
            if op.operation.name in ("stablehlo.case", "stablehlo.if") and regions:
                best = None
                for region in regions:
                    c: Counter = Counter()
                    for block in region.blocks:
                        visit(block.operations, c)
                    if best is None or sum(c.values()) > sum(best.values()):
                        best = c
                into.update(best)
                continue
            for region in regions:
                for block in region.blocks:
                    visit(block.operations, into)

    visit(lowered.compiler_ir("stablehlo").body.operations, counts)
    return counts


@wrong(
    "op_census",
    why="'Count every operation nested anywhere ... do not count the outer module': treats the "
    "stablehlo.return that ends a reduce/sort/while/case region as syntax (a block terminator, "
    "like a closing brace) and keeps only func.return, which the README names; wrong on the "
    "'reduce' census program (3 reduce bodies: stablehlo.return 3 expected, 0 here)",
)
def _rt13_op_census_region_terminators_are_syntax(lowered) -> Counter:
    counts: Counter = Counter()
    _rt13_walk_ops(
        lowered.compiler_ir("stablehlo").body.operations, counts, skip_region_terminators=True
    )
    return counts


# ---------------------------------------------------------------- hlo_opcode

_rt13_RENAMES = {
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
    why="'a few are renamed ... stablehlo.composite -> call (of its decomposition)': generalizes "
    "to 'every op that calls something becomes an HLO call' by suffix, so stablehlo.custom_call "
    "-> 'call'; XLA converts it to 'custom-call'",
)
def _rt13_hlo_opcode_calls_are_call(stablehlo_op: str) -> str:
    short = stablehlo_op.split(".", 1)[1]
    if short in _rt13_RENAMES:
        return _rt13_RENAMES[short]
    if short.endswith("call"):
        return "call"
    return short.replace("_", "-")


@wrong(
    "hlo_opcode",
    why="'HLO writes multi-word names with hyphens': having seen count_leading_zeros stay spelled "
    "out (count-leading-zeros), believes HLO spells out every abbreviation the same way, so "
    "stablehlo.popcnt -> 'population-count' (lax.population_count's name); XLA's opcode is "
    "'popcnt' (the integer program of the bank shows it)",
)
def _rt13_hlo_opcode_spelled_out(stablehlo_op: str) -> str:
    short = stablehlo_op.split(".", 1)[1]
    if short in _rt13_RENAMES:
        return _rt13_RENAMES[short]
    short = {"popcnt": "population_count"}.get(short, short)
    return short.replace("_", "-")


# ---------------------------------------------------------------- predict_accepts


def _rt13_dtype_ok(dtype) -> bool:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return False
    return dt in (np.dtype(np.float32), np.dtype(np.float64))


def _rt13_solve(dims, shape, sign_slip=False) -> bool:
    if len(dims) != len(shape):
        return False
    env: dict = {}
    for dim, n in zip(dims, shape):
        if dim is None:
            return False
        sym, coef, off = dim
        if sym is None:
            if n != off:
                return False
            continue
        rhs = n + off if sign_slip else n - off
        if rhs % coef:
            return False
        v = rhs // coef
        if v < 1 or env.setdefault(sym, v) != v:
            return False
    return True


def _rt13_parse(text: str, term_re):
    dims = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if re.fullmatch(r"\d+", part):
            dims.append((None, 0, int(part)))
            continue
        m = term_re.match(part)
        if m is None:
            dims.append(None)  # a dimension it cannot read: it cannot match
            continue
        coef = int(m.group("c1") or m.group("c2") or 1)
        off = int(m.group("off") or 0) * (-1 if m.group("sign") == "-" else 1)
        dims.append((m.group("sym"), coef, off))
    return dims


_rt13_TERM = re.compile(
    r"^\s*(?:(?P<c1>\d+)\s*\*\s*)?(?P<sym>[A-Za-z_]\w*)(?:\s*\*\s*(?P<c2>\d+))?"
    r"(?:\s*(?P<sign>[+-])\s*(?P<off>\d+))?\s*$"
)
# the slip: \d instead of \d+ for the coefficient (the examples only have 2*b, b*2, 3*b)
_rt13_TERM_ONE_DIGIT = re.compile(
    r"^\s*(?:(?P<c1>\d)\s*\*\s*)?(?P<sym>[A-Za-z_]\w*)(?:\s*\*\s*(?P<c2>\d))?"
    r"(?:\s*(?P<sign>[+-])\s*(?P<off>\d+))?\s*$"
)


@wrong(
    "predict_accepts",
    why="'each a constant or a symbol of any name times a coefficient (12*b, b * 2)': the term "
    "regex reads the coefficient as ONE digit (\\d, enough for 2*b, b*2, 3*b of "
    "EXPORTED_CALLS), so '12*b' or 'b * 10' does not parse and the call is predicted rejected; "
    "wrong on ('12*b, 4', float32, (24, 4)) (b = 2: runs)",
)
def _rt13_predict_accepts_one_digit_coefficient(calls):
    return {
        name: _rt13_dtype_ok(dt) and _rt13_solve(_rt13_parse(sym, _rt13_TERM_ONE_DIGIT), shape)
        for name, (sym, dt, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'the same solution wherever a symbol appears, also inside b - 1 or 3*b + 2': solves "
    "k*b + c = n with the sign of the offset not flipped (b = (n + c) / k), an algebra slip; "
    "wrong on '(b + 1, 4) called with f32[1,4]' (b would be 0: rejected; predicted b = 2, "
    "True) and '(b - 1, 4) called with f32[0,4]' (b = 1 runs; predicted b = -1, False)",
)
def _rt13_predict_accepts_offset_sign_slip(calls):
    return {
        name: _rt13_dtype_ok(dt)
        and _rt13_solve(_rt13_parse(sym, _rt13_TERM), shape, sign_slip=True)
        for name, (sym, dt, shape) in calls.items()
    }


# ---------------------------------------------------------------- predict_lowering

_rt13_TRUTH = {
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


def _rt13_table():
    return {k: dict(v) for k, v in _rt13_TRUTH.items()}


@wrong(
    "predict_lowering",
    why="'A reduction is one stablehlo.reduce whose body region runs the combining op': "
    "pictures the max's combining body as a compare and a select (how a NaN-aware max or an "
    "argmax is written), not stablehlo.maximum; wrong on 'x.max(axis=1)' (body: 1 "
    "stablehlo.maximum, no compare or select)",
)
def _rt13_predict_lowering_max_body_compare_select():
    table = _rt13_table()
    row = table["x.max(axis=1)"]
    del row["stablehlo.maximum"]
    row["stablehlo.compare"] = 1
    row["stablehlo.select"] = 1
    return table


@wrong(
    "predict_lowering",
    why="'A reduction is one stablehlo.reduce': pictures a full reduction as NumPy's ravel then "
    "sum (x.reshape(-1) first, then a reduce over the one axis), so x.mean() gets a "
    "stablehlo.reshape; JAX's reduce takes both dimensions at once; wrong on 'x.mean()' (no "
    "reshape)",
)
def _rt13_predict_lowering_mean_ravels_first():
    table = _rt13_table()
    table["x.mean()"]["stablehlo.reshape"] = 1
    return table


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'call it on args as given (a 0-d argument, a NumPy scalar or 0-d array, stays 0-d)': "
    "unwraps each NumPy scalar / 0-d array to a Python number with .item() ('JAX takes Python "
    "scalars'), which keeps it 0-d but re-types it as a weak float32/int32: wrong on a blob "
    "exported for a float16[] spec called with np.float16(1.0) (runs: 2.0 for x * 2; here the "
    "Exported rejects float32 and raises)",
)
def _rt13_call_exported_item_scalars(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    args = tuple(
        a.item() if isinstance(a, (np.generic, np.ndarray)) and np.ndim(a) == 0 else a for a in args
    )
    return exported.call(*args)


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'in_avals are the specs (any shapes)': gives a 0-d spec the shape (1,) before exporting "
    "('an exported argument is a tensor, a scalar becomes a one-element vector'), so the "
    "Exported's in_avals show f32[1] where the spec is f32[]; wrong on "
    "export_bytes(scalar_mean, ShapeDtypeStruct((), float32)) and on any program with a 0-d "
    "index argument",
)
def _rt13_export_bytes_scalars_as_vectors(f, *specs) -> bytes:
    fixed = tuple(jax.ShapeDtypeStruct((1,), s.dtype) if len(s.shape) == 0 else s for s in specs)
    return jax.export.export(jax.jit(f))(*fixed).serialize()


# ---------------------------------------------------------------- export_any_batch


@wrong(
    "export_any_batch",
    why="'x float32 of shape (b, features) with any batch b': exports the batch as 8*b (batches "
    "padded to a multiple of 8, 'what accelerators like'), a symbolic batch that only admits "
    "multiples of 8; the in_avals show (8*b, features) and a call with batch 3 (e.g. mlp with "
    "x f32[3,16]) is rejected though any batch must run",
)
def _rt13_export_any_batch_multiple_of_eight(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"8*b, {features}"), np.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()
