"""Red team, phase 8, round 7: wrong answers of kinds not tried in earlier rounds."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong


def _rt7_children(operation):
    for region in operation.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation


# ---------------------------------------------------------------- op_census


@wrong(
    "op_census",
    why="'Count every operation nested anywhere ... every function': counts only the leaf ops "
    "(those without regions), taking func.func, stablehlo.reduce, while and case for "
    "containers rather than work; wrong on any program, e.g. x.sum(0) on f32[8,4] lacks "
    "{'func.func': 1, 'stablehlo.reduce': 1}",
)
def _rt7_op_census_leaves_only(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()

    def visit(operation):
        children = list(_rt7_children(operation))
        has_regions = len(operation.regions) > 0
        if not has_regions:
            counts[operation.name] += 1
        for child in children:
            visit(child)

    for op in module.body.operations:
        visit(op.operation)
    return counts


@wrong(
    "op_census",
    why="'Count every operation nested anywhere (reduce and sort bodies ...)': treats a "
    "region's stablehlo.return as syntax (the printed form hides it) and skips it, keeping "
    "func.return; wrong on x.sum(0) on f32[8,4] (stablehlo.return: 1 missing) and on any "
    "sort, while or case",
)
def _rt7_op_census_skip_region_returns(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()

    def visit(operation):
        if operation.name != "stablehlo.return":
            counts[operation.name] += 1
        for child in _rt7_children(operation):
            visit(child)

    for op in module.body.operations:
        visit(op.operation)
    return counts


# ---------------------------------------------------------------- hlo_opcode

_RT7_RENAMES = {
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
    why="'one spelling rule for the rest': respells with re.sub(r'[^a-z]+', '-', ...) "
    "(anything that is not a letter becomes a hyphen), which also eats digits; wrong on "
    "'stablehlo.atan2' (gives 'atan-', XLA says 'atan2')",
)
def _rt7_hlo_opcode_nonletters_to_hyphen(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    if name in _RT7_RENAMES:
        return _RT7_RENAMES[name]
    return re.sub(r"[^a-z]+", "-", name)


@wrong(
    "hlo_opcode",
    why="'the HLO opcode of any StableHLO op follows from its name': drops the dialect with "
    "str.lstrip('stablehlo.'), which strips a character set, not a prefix; wrong on every op "
    "whose name starts with one of s,t,a,b,l,e,h,o: 'stablehlo.add' gives 'dd', "
    "'stablehlo.abs' gives '', 'stablehlo.atan2' gives 'n2'",
)
def _rt7_hlo_opcode_lstrip_prefix(stablehlo_op: str) -> str:
    name = stablehlo_op.lstrip("stablehlo.")  # noqa: B005 (the wrong answer)
    if name in _RT7_RENAMES:
        return _RT7_RENAMES[name]
    return name.replace("_", "-")


# ---------------------------------------------------------------- predict_accepts

_RT7_TRUTH = {
    "(b, 4) called with f32[3,4]": True,
    "(b, 4) called with f32[1,4]": True,
    "(b, 4) called with f32[0,4]": False,
    "(b, 4) called with f32[3,5]": False,
    "(b, 4) called with f32[3,4,1]": False,
    "(b, 4) called with i32[3,4]": False,
    "(b, 4) called with f64[3,4]": True,
    "(b, 4) called with f16[3,4]": False,
    "(b, 4) called with i64[3,4]": False,
    "(2*b, 4) called with f32[6,4]": True,
    "(2*b, 4) called with f32[5,4]": False,
    "(b, b) called with f32[3,3]": True,
    "(b, b) called with f32[3,4]": False,
    "(b + 1, 4) called with f32[1,4]": False,
    "(b + 1, 4) called with f32[2,4]": True,
    "(a, b) called with f32[2,7]": True,
    "(a, b) called with f32[3,3]": True,
    "(b, 2*b) called with f32[3,6]": True,
    "(b + 1, b) called with f32[3,3]": False,
    "(2*b, b + 1) called with f32[4,4]": False,
}


@wrong(
    "predict_accepts",
    why="'Constant dimensions must match': believes the shape assertions guard only the "
    "symbolic dimensions (what the wrapper reads with get_dimension_size) and that a constant "
    "dimension is not checked at call time; wrong on '(b, 4) called with f32[3,5]' (rejected, "
    "this says True)",
)
def _rt7_predict_accepts_constant_dims_unchecked(calls) -> dict[str, bool]:
    answer = dict(_RT7_TRUTH)
    answer["(b, 4) called with f32[3,5]"] = True
    return answer


@wrong(
    "predict_accepts",
    why="'the symbolic ones must have a solution': solves 2*b = n with integer (floor) "
    "division and checks nothing after, so an odd size gets b = n // 2; wrong on "
    "'(2*b, 4) called with f32[5,4]' (rejected: no integer b with 2*b = 5; this says True)",
)
def _rt7_predict_accepts_floor_division(calls) -> dict[str, bool]:
    answer = dict(_RT7_TRUTH)
    answer["(2*b, 4) called with f32[5,4]"] = True
    return answer


# ---------------------------------------------------------------- predict_lowering

_RT7_LOWERING = {
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


def _rt7_copy():
    return {name: dict(ops) for name, ops in _RT7_LOWERING.items()}


@wrong(
    "predict_lowering",
    why="'Some jnp operations are others in disguise': takes x.T on a 2-d array for a "
    "reshape (the shape (4, 3) -> (3, 4) is all that changes, as NumPy's .T is a view); JAX "
    "emits stablehlo.transpose; wrong on 'x.T' ({'stablehlo.reshape': 1})",
)
def _rt7_predict_lowering_transpose_as_reshape() -> dict[str, dict[str, int]]:
    answer = _rt7_copy()
    answer["x.T"] = {"stablehlo.reshape": 1}
    return answer


@wrong(
    "predict_lowering",
    why="'StableHLO ops take operands of one shape': believes a comparison with a Python "
    "scalar compares against the scalar constant directly (compare yields a mask, so no "
    "broadcast is needed, unlike arithmetic); wrong on 'jnp.where(x > 0, x, y)' (the 0 is "
    "broadcast: stablehlo.broadcast_in_dim: 1 missing)",
)
def _rt7_predict_lowering_compare_scalar_unbroadcast() -> dict[str, dict[str, int]]:
    answer = _rt7_copy()
    del answer["jnp.where(x > 0, x, y)"]["stablehlo.broadcast_in_dim"]
    return answer


@wrong(
    "predict_lowering",
    why="'close to one StableHLO op per jnp operation': believes x @ w first transposes w so that its "
    "contracting dimension is last (as a BLAS NT call wants), then one "
    "dot_general; wrong on 'x @ w' (JAX emits dot_general alone, "
    "no stablehlo.transpose)",
)
def _rt7_predict_lowering_matmul_transposes_w() -> dict[str, dict[str, int]]:
    answer = _rt7_copy()
    answer["x @ w"] = {"stablehlo.transpose": 1, "stablehlo.dot_general": 1}
    return answer


# ---------------------------------------------------------------- export_any_batch


@wrong(
    "export_any_batch",
    why="'Export f(x, *rest) ... for x of shape (b, features)': exports f per example and "
    "vmaps it over the batch (jax.vmap of f on one row x[None]), so in_avals look right but "
    "any f that mixes rows computes something else; wrong on f = lambda x: x.sum(axis=0) "
    "(column sums f32[features]) which comes back as f32[b] (the first column)",
)
def _rt7_export_any_batch_vmap_rows(f, features: int, *rest) -> bytes:
    (b,) = jax.export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, features), jnp.float32)

    def per_row(row, *others):
        out = f(row[None], *others)
        return jax.tree_util.tree_map(lambda leaf: leaf[0] if leaf.ndim else leaf, out)

    batched = jax.vmap(per_row, in_axes=(0,) + (None,) * len(rest))
    return jax.export.export(jax.jit(batched))(x, *rest).serialize()


# ---------------------------------------------------------------- export_bytes


@wrong(
    "export_bytes",
    why="'whose in_avals are the specs (any shapes and dtypes)': normalizes every integer "
    "spec to int32 ('the portable integer type, what JAX uses with x64 off'); float specs are "
    "kept; wrong on f = lambda x: x + 1 with x uint8[8] or int8[8] (in_avals say int32, out "
    "too)",
)
def _rt7_export_bytes_ints_as_int32(f, *specs) -> bytes:
    def portable(spec):
        dtype = jnp.dtype(spec.dtype)
        if jnp.issubdtype(dtype, jnp.integer):
            dtype = jnp.dtype(jnp.int32)
        return jax.ShapeDtypeStruct(spec.shape, dtype)

    return jax.export.export(jax.jit(f))(*[portable(s) for s in specs]).serialize()


# ---------------------------------------------------------------- call_exported


@wrong(
    "call_exported",
    why="'the same pytree ... of jax.Arrays, dtypes unchanged': widens half-precision outputs "
    "to float32 ('NumPy cannot hold bfloat16, callers compare with np.testing'); wrong on "
    "scale_shift exported for x bf16[8,4], y f32[8,4]: the first output must be bf16",
)
def _rt7_call_exported_widen_half_outputs(blob: bytes, *args):
    out = jax.export.deserialize(bytearray(blob)).call(*args)

    def widen(leaf):
        if jnp.issubdtype(leaf.dtype, jnp.floating) and jnp.dtype(leaf.dtype).itemsize < 4:
            return leaf.astype(jnp.float32)
        return leaf

    return jax.tree_util.tree_map(widen, out)
