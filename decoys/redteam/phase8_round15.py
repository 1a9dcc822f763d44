"""Red team, phase 8, round 15: wrong answers of kinds earlier rounds did not write.

A census that de-duplicates operations by their printed text, a census with a recursion depth
guard, hlo_opcode renames matched by substring and collectives read off optimized (async) dumps,
an export that flattens outputs to a list of leaves, a call that turns list results into tuples,
a symbolic batch capped at a serving maximum, x's dtype taken from the weights, constant
dimensions that admit 1 (broadcasting), big-endian float32 accepted, and lowering pictures of
x[::-1] (a strided slice) and relu (compare and select).
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- op_census


@wrong(
    "op_census",
    why="'Count every operation nested anywhere': keeps a set of the ops already seen, keyed "
    "by str(op) ('so an op reached twice is not counted twice'), but two distinct ops can print "
    "identically (the stablehlo.return and stablehlo.add of two reduce bodies, the returns of "
    "a case's branches); wrong on CENSUS_PROGRAMS['reduce'] (x.sum(0) + x.max(1).sum(): one "
    "stablehlo.add and two stablehlo.return short) and 'case', 'nested_calls', 'sort_scatter'",
)
def _rt15_op_census_dedupe_by_text(lowered) -> Counter:
    counts: Counter = Counter()
    seen: set[str] = set()

    def visit(operations):
        for op in operations:
            text = str(op.operation)
            if text not in seen:
                seen.add(text)
                counts[op.operation.name] += 1
            for region in op.operation.regions:
                for block in region.blocks:
                    visit(block.operations)

    visit(lowered.compiler_ir("stablehlo").body.operations)
    return counts


@wrong(
    "op_census",
    why="'Count every operation nested anywhere': a recursion guard stops the walk at three "
    "levels of op nesting (function > case/reduce > body, 'deep enough for any jnp program, and "
    "no runaway recursion'); ops nested deeper are lost; wrong on CENSUS_PROGRAMS['case'] "
    "(the cond inside the switch's third branch: its exponential, tanh and their "
    "stablehlo.return are at depth 4)",
)
def _rt15_op_census_depth_guard(lowered) -> Counter:
    counts: Counter = Counter()

    def visit(operations, depth):
        for op in operations:
            counts[op.operation.name] += 1
            if depth >= 3:
                continue
            for region in op.operation.regions:
                for block in region.blocks:
                    visit(block.operations, depth + 1)

    visit(lowered.compiler_ir("stablehlo").body.operations, 1)
    return counts


# ---------------------------------------------------------------- hlo_opcode

_RT15_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
    "if": "conditional",
    "create_token": "after-all",
    "composite": "call",
    "cross-replica-sum": "all-reduce",
}


def _rt15_opcode(stablehlo_op: str) -> str:
    short = stablehlo_op.split(".", 1)[1]
    if short in _RT15_RENAMES:
        return _RT15_RENAMES[short]
    return short.replace("_", "-")


@wrong(
    "hlo_opcode",
    why="'a few are renamed ... for the rest, compare how multi-word names are written': "
    "matches the renames by substring ('every broadcast op is HLO's broadcast', since "
    "broadcast_in_dim and broadcast both become broadcast), so stablehlo.collective_broadcast "
    "gives 'broadcast'; XLA converts it to 'collective-broadcast'",
)
def _rt15_hlo_opcode_broadcast_substring(stablehlo_op: str) -> str:
    if "broadcast" in stablehlo_op:
        return "broadcast"
    return _rt15_opcode(stablehlo_op)


@wrong(
    "hlo_opcode",
    why="'Read the opcode ... XLA's conversion': takes collectives from optimized GPU dumps, "
    "where XLA has split them into async pairs (all-reduce-start/-done, all-gather-start, "
    "collective-permute-start), and answers the -start opcode; the conversion itself gives "
    "the plain opcode: stablehlo.all_reduce -> 'all-reduce' (HAND_WRITTEN['stablehlo.all_reduce']), "
    "stablehlo.all_gather -> 'all-gather', stablehlo.collective_permute -> 'collective-permute'",
)
def _rt15_hlo_opcode_async_collectives(stablehlo_op: str) -> str:
    opcode = _rt15_opcode(stablehlo_op)
    if opcode in ("all-reduce", "all-gather", "collective-permute"):
        return opcode + "-start"
    return opcode


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'whose call returns f's own pytree (out_tree)': exports f with its outputs flattened "
    "to a list of leaves ('serving wants a flat list of output tensors', as TF signatures "
    "do); wrong on export_bytes(programs.pair, f32[8,4], f32[8,4]): the call returns "
    "[max, sum] (a list, leaves in key order) instead of {'sum': ..., 'max': ...}, and "
    "programs.sines gives [sin] instead of (sin,)",
)
def _rt15_export_bytes_flat_outputs(f, *specs) -> bytes:
    def flat(*args):
        return jax.tree_util.tree_leaves(f(*args))

    return jax.export.export(jax.jit(flat))(*specs).serialize()


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'return ... the same pytree (array, tuple, list, dict)': normalizes a sequence result "
    "to a tuple ('functions return tuples of outputs'); wrong on the blob of "
    "programs.sum_and_difference (it returns a list [x + y, x - y]; this returns a tuple)",
)
def _rt15_call_exported_tuple_results(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    if isinstance(out, list):
        return tuple(out)
    return out


# ---------------------------------------------------------------- export_any_batch


@wrong(
    "export_any_batch",
    why="'for x float32 of shape (b, features) with any batch b': adds a serving cap to the "
    "symbol (jax.export.symbolic_shape('b, F', constraints=('b <= 1024',))), 'so the module "
    "can size its buffers'; the exported function then rejects any batch above 1024: wrong "
    "on the mlp exported with FEATURES=16 and called with x f32[2048, 16] (shape assertion "
    "error instead of a result)",
)
def _rt15_export_any_batch_capped(f, features: int, *rest) -> bytes:
    (b,) = jax.export.symbolic_shape("b", constraints=("b <= 1024",))
    x = jax.ShapeDtypeStruct((b, features), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@wrong(
    "export_any_batch",
    why="'x float32 of shape (b, features)': gives x the dtype of the first other argument "
    "('inputs and weights share a dtype', float32 when there is none); right for the mlp's "
    "float32 weights, wrong when rest[0] is bfloat16 or int32, e.g. "
    "export_any_batch(lambda x, s: x * s.astype(x.dtype), 4, ShapeDtypeStruct((4,), bf16)): "
    "in_avals[0] is bf16[b,4], not f32[b,4]",
)
def _rt15_export_any_batch_dtype_from_rest(f, features: int, *rest) -> bytes:
    dtype = rest[0].dtype if rest else jnp.float32
    (b,) = jax.export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, features), dtype)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---------------------------------------------------------------- predict_accepts

_RT15_TERM = re.compile(r"^(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?(?:([+-])(\d+))?$")


def _rt15_dims(text: str):
    dims = []
    for raw in text.split(","):
        term = raw.replace(" ", "")
        if term.isdigit():
            dims.append((None, 0, int(term)))
            continue
        m = _RT15_TERM.match(term)
        if m is None:
            return None
        k = int(m.group(1) or 1) * int(m.group(3) or 1)
        off = int(m.group(5) or 0) * (-1 if m.group(4) == "-" else 1)
        dims.append((m.group(2), k, off))
    return dims


def _rt15_canonical(dtype):
    try:
        return jax.dtypes.canonicalize_dtype(np.dtype(dtype))
    except Exception:
        return None


def _rt15_accepts(text, dtype, shape, *, const_ok=None, dtype_ok=None) -> bool:
    const_ok = const_ok or (lambda want, n: want == n)
    dtype_ok = dtype_ok or (lambda d: _rt15_canonical(d) == np.dtype(np.float32))
    if not dtype_ok(dtype):
        return False
    dims = _rt15_dims(text)
    if dims is None or len(dims) != len(shape):
        return False
    values = {}
    for (sym, k, off), n in zip(dims, shape):
        if sym is None:
            if not const_ok(off, n):
                return False
            continue
        if (n - off) % k:
            return False
        v = (n - off) // k
        if v < 1 or values.setdefault(sym, v) != v:
            return False
    return True


@wrong(
    "predict_accepts",
    why="'Constant dimensions must match': lets a constant dimension also take size 1, as "
    "NumPy broadcasting would ('a size-1 axis stretches'); wrong on ('b, 4', np.float32, "
    "(3, 1)): the exported function rejects f32[3,1] for (b, 4), predicted True",
)
def _rt15_predict_accepts_broadcast_ones(calls):
    return {
        name: _rt15_accepts(t, d, s, const_ok=lambda want, n: n in (want, 1))
        for name, (t, d, s) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'arrays of any NumPy dtype ... (a type code)': compares the dtype's name and kind "
    "after canonicalization (kind 'f', itemsize 4), which ignores byte order; a big-endian "
    "float32 ('>f4') passes this test, but JAX keeps it as >f4 and the exported function "
    "rejects it (not float32); wrong on ('b, 4', '>f4', (3, 4)), predicted True",
)
def _rt15_predict_accepts_ignores_byte_order(calls):
    def dtype_ok(d):
        c = _rt15_canonical(d)
        return c is not None and c.kind == "f" and c.itemsize == 4

    return {name: _rt15_accepts(t, d, s, dtype_ok=dtype_ok) for name, (t, d, s) in calls.items()}


# ---------------------------------------------------------------- predict_lowering


def _rt15_table():
    c = "stablehlo.constant"
    bc = "stablehlo.broadcast_in_dim"
    r = "stablehlo.return"
    return {
        "jnp.sin(x) * jnp.cos(x)": {
            "stablehlo.sine": 1,
            "stablehlo.cosine": 1,
            "stablehlo.multiply": 1,
        },
        "jnp.exp(x) - 1": {"stablehlo.exponential": 1, c: 1, bc: 1, "stablehlo.subtract": 1},
        "jnp.tanh(x)": {"stablehlo.tanh": 1},
        "x * 2.0": {c: 1, bc: 1, "stablehlo.multiply": 1},
        "x ** 2": {"stablehlo.multiply": 1},
        "x / y": {"stablehlo.divide": 1},
        "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
        "jax.nn.relu(x)": {c: 1, bc: 1, "stablehlo.maximum": 1},
        "jnp.where(x > 0, x, y)": {c: 1, bc: 1, "stablehlo.compare": 1, "stablehlo.select": 1},
        "x.sum(axis=0)": {c: 1, "stablehlo.reduce": 1, "stablehlo.add": 1, r: 1},
        "x.max(axis=1)": {c: 1, "stablehlo.reduce": 1, "stablehlo.maximum": 1, r: 1},
        "x.mean()": {c: 2, "stablehlo.reduce": 1, "stablehlo.add": 1, r: 1, "stablehlo.divide": 1},
        "x @ w": {"stablehlo.dot_general": 1},
        "x.T": {"stablehlo.transpose": 1},
        "x[0]": {"stablehlo.slice": 1, "stablehlo.reshape": 1},
        "x[::-1]": {"stablehlo.reverse": 1},
    }


@wrong(
    "predict_lowering",
    why="'indexing one row slices': reads every basic-indexing expression as a slice, so "
    "x[::-1] becomes one stablehlo.slice with stride -1 (as x[1:5, ::2] is a strided slice); "
    "StableHLO slices take positive strides only and JAX emits stablehlo.reverse: wrong on "
    "'x[::-1]' ({slice: 1} vs {reverse: 1})",
)
def _rt15_predict_lowering_reverse_as_slice():
    table = _rt15_table()
    table["x[::-1]"] = {"stablehlo.slice": 1}
    return table


@wrong(
    "predict_lowering",
    why="'Some jnp operations are others in disguise': pictures jax.nn.relu as "
    "jnp.where(x > 0, x, 0) (compare against a broadcast 0.0, then select); JAX lowers relu as "
    "max(x, 0): 'jax.nn.relu(x)' is constant, broadcast_in_dim, maximum, not constant, "
    "broadcast_in_dim, compare, select",
)
def _rt15_predict_lowering_relu_as_where():
    table = _rt15_table()
    table["jax.nn.relu(x)"] = {
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.compare": 1,
        "stablehlo.select": 1,
    }
    return table
