"""Red-team wrong answers for phase 8, written from the contract only.

Round 3: each answer agrees with a correct one on the programs and banks shipped in
programs.py where it can, and is wrong on a valid input they lack (named in `why`).
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong

# ---------------------------------------------------------------- task 1: op_census


def _rt3_stablehlo_module(lowered):
    return lowered.compiler_ir("stablehlo")


@wrong(
    "op_census",
    why="counts only what sits inside the module's func.func ops (walks each function body) "
    "and skips other top-level operations of the module; wrong on a program with a sharding "
    "constraint, e.g. lax.with_sharding_constraint(jnp.sin(x), NamedSharding(mesh1, P('x'))) "
    "on an Auto-axis 1-device mesh: the module holds an sdy.mesh op next to main, not counted",
)
def _rt3_op_census_functions_only(lowered) -> Counter:
    counts: Counter = Counter()

    def walk(op):
        counts[op.operation.name] += 1
        for region in op.operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner)

    for top in _rt3_stablehlo_module(lowered).body.operations:
        if top.operation.name == "func.func":  # "every function": the module holds functions
            walk(top)
    return counts


@wrong(
    "op_census",
    why="keeps only the dialects seen in the shipped programs (func, stablehlo, chlo); the "
    "contract says every dialect; wrong on lax.with_sharding_constraint(jnp.sin(x), "
    "NamedSharding(mesh, P('x'))): sdy.mesh and sdy.sharding_constraint are dropped",
)
def _rt3_op_census_known_dialects(lowered) -> Counter:
    counts: Counter = Counter()

    def walk(block):
        for op in block.operations:
            name = op.operation.name
            if name.split(".")[0] in ("func", "stablehlo", "chlo"):
                counts[name] += 1
            for region in op.operation.regions:
                for inner in region.blocks:
                    walk(inner)

    walk(_rt3_stablehlo_module(lowered).body)
    return counts


_rt3_REGION_OPS = frozenset(
    {
        "func.func",
        "stablehlo.reduce",
        "stablehlo.while",
        "stablehlo.case",
        "stablehlo.if",
        "stablehlo.sort",
        "stablehlo.scatter",
        "stablehlo.select_and_scatter",
    }
)


@wrong(
    "op_census",
    why="descends only into the region-holding ops named in the README and the census programs "
    "(reduce, sort, while, case, scatter, select_and_scatter, functions); misses the body of any "
    "other op with a region; wrong on lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "
    "'VALID') (its add and stablehlo.return are not counted) and on shard_map psum's all_reduce",
)
def _rt3_op_census_known_region_ops(lowered) -> Counter:
    counts: Counter = Counter()

    def walk(block):
        for op in block.operations:
            name = op.operation.name
            counts[name] += 1
            if name in _rt3_REGION_OPS:
                for region in op.operation.regions:
                    for inner in region.blocks:
                        walk(inner)

    walk(_rt3_stablehlo_module(lowered).body)
    return counts


@wrong(
    "op_census",
    why="walks a fixed depth (functions, then four levels of nested regions, as deep as the "
    "census programs and the hint's while-holding-a-cond go) instead of recursing; wrong on "
    "lax.cond(p, lambda v: lax.while_loop(c, lambda u: lax.cond(q, lambda w: w + w.sum(), "
    "jnp.sin, u), v), jnp.cos, x): the reduce body five regions down is not counted",
)
def _rt3_op_census_fixed_depth(lowered) -> Counter:
    counts: Counter = Counter()
    level = list(_rt3_stablehlo_module(lowered).body.operations)
    for _ in range(5):  # the module's ops and four levels of regions below them
        nested = []
        for op in level:
            counts[op.operation.name] += 1
            for region in op.operation.regions:
                for block in region.blocks:
                    nested.extend(block.operations)
        level = nested
    return counts


# ---------------------------------------------------------------- task 2: hlo_opcode

_rt3_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
    "if": "conditional",
    "create_token": "after-all",
    "composite": "call",
}


def _rt3_short(op: str) -> str:
    return op.split(".", 1)[1] if "." in op else op


@wrong(
    "hlo_opcode",
    why="believes the linear-algebra ops become LAPACK custom calls (what jnp.linalg.cholesky "
    "lowers to on CPU, the bank's custom_call program); XLA converts stablehlo.cholesky to "
    "cholesky and stablehlo.triangular_solve to triangular-solve; wrong on both",
)
def _rt3_hlo_opcode_linalg_custom_call(stablehlo_op: str) -> str:
    name = _rt3_short(stablehlo_op)
    if name in ("cholesky", "triangular_solve"):
        return "custom-call"
    return _rt3_RENAMES.get(name) or name.replace("_", "-")


@wrong(
    "hlo_opcode",
    why="answers the async form a GPU profile shows for collectives (all-reduce-start, "
    "all-gather-start, collective-permute-start); XLA's conversion emits the synchronous "
    "opcode; wrong on stablehlo.all_reduce (all-reduce), stablehlo.all_gather, "
    "stablehlo.collective_permute",
)
def _rt3_hlo_opcode_async_collectives(stablehlo_op: str) -> str:
    name = _rt3_short(stablehlo_op)
    if name in ("all_reduce", "all_gather", "collective_permute"):
        return name.replace("_", "-") + "-start"
    return _rt3_RENAMES.get(name) or name.replace("_", "-")


_rt3_PRACTISED = {  # every op of programs.py's bank, with the hyphens read off the HLO dumps
    **{
        op: op.replace("_", "-")
        for op in (
            "dynamic_slice dynamic_update_slice exponential_minus_one count_leading_zeros "
            "round_nearest_afz round_nearest_even log_plus_one is_finite shift_left "
            "shift_right_logical shift_right_arithmetic bitcast_convert reduce_window "
            "reduce_precision rng_bit_generator custom_call select_and_scatter after_all "
            "get_dimension_size get_tuple_element"
        ).split()
    },
    **_rt3_RENAMES,
}


@wrong(
    "hlo_opcode",
    why="hyphenates only the multi-word ops met in the bank and the README (a table); any other "
    "op keeps its StableHLO spelling; the contract says any op of the dialect; wrong on "
    "stablehlo.batch_norm_inference (batch-norm-inference), stablehlo.all_reduce, "
    "stablehlo.triangular_solve, stablehlo.collective_permute",
)
def _rt3_hlo_opcode_practised_table(stablehlo_op: str) -> str:
    name = _rt3_short(stablehlo_op)
    return _rt3_PRACTISED.get(name, name)


# ---------------------------------------------------------------- task 3: export_bytes


@wrong(
    "export_bytes",
    why="flattens a non-array result to a tuple of its leaves (thinking export wants flat "
    "outputs); out_avals agree but the Exported's output pytree is not f's; wrong on "
    "pair(x, y), which returns a dict: the deserialized function returns a tuple",
)
def _rt3_export_bytes_flat_outputs(f, *specs) -> bytes:
    def flat(*args):
        out = f(*args)
        if isinstance(out, jax.Array):
            return out
        return tuple(jax.tree.leaves(out))

    return jax.export.export(jax.jit(flat))(*specs).serialize()


_rt3_EXPORT_CACHE: dict = {}


@wrong(
    "export_bytes",
    why="memoizes exports by (function, argument shapes), leaving dtypes out of the key; wrong "
    "on the second of two exports of one function with the same shapes and other dtypes, e.g. "
    "scale_shift for f32[8,4], f32[8,4] then for bf16[8,4], f32[8,4]: the f32 bytes come back",
)
def _rt3_export_bytes_cached_by_shape(f, *specs) -> bytes:
    key = (f, tuple(tuple(s.shape) for s in specs))
    if key not in _rt3_EXPORT_CACHE:
        _rt3_EXPORT_CACHE[key] = jax.export.export(jax.jit(f))(*specs).serialize()
    return _rt3_EXPORT_CACHE[key]


@wrong(
    "export_bytes",
    why="makes every output at least 1-d (jnp.atleast_1d over the result pytree, 'scalars do not "
    "serialize'); out_avals are no longer what f returns; wrong on scalar_mean(x) (f32[] "
    "becomes f32[1]) and scale_shift's (y + 1).sum()",
)
def _rt3_export_bytes_atleast_1d(f, *specs) -> bytes:
    def shaped(*args):
        return jax.tree.map(jnp.atleast_1d, f(*args))

    return jax.export.export(jax.jit(shaped))(*specs).serialize()


# ---------------------------------------------------------------- task 4: call_exported


@wrong(
    "call_exported",
    why="unwraps a one-element tuple or list result (believing the exported call always wraps "
    "outputs in a tuple); the contract says the same pytree; wrong on f = lambda x: "
    "(jnp.sin(x),), which must come back as a 1-tuple",
)
def _rt3_call_exported_unwrap_single(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    if isinstance(out, (tuple, list)) and len(out) == 1:
        return out[0]
    return out


@wrong(
    "call_exported",
    why="normalizes sequence results to tuples; the contract says the same pytree; wrong on "
    "f = lambda x, y: [x + y, x - y], whose list result comes back as a tuple",
)
def _rt3_call_exported_list_as_tuple(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    if isinstance(out, list):
        return tuple(out)
    return out


@wrong(
    "call_exported",
    why="casts each argument to the exported in_aval dtype before calling (as jit would "
    "convert); the exported function must reject a wrong dtype, not convert it; wrong on a "
    "column_sums export for f32[3,4] called with an int32[3,4] array: it runs instead of "
    "raising",
)
def _rt3_call_exported_cast_args(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    cast = [jnp.asarray(a, dtype=aval.dtype) for a, aval in zip(args, exported.in_avals)]
    return exported.call(*cast)


# ---------------------------------------------------------------- task 5: export_any_batch


@wrong(
    "export_any_batch",
    why="bounds the symbolic batch (constraint b <= 1024, 'a serving batch limit'); the "
    "contract says any batch b; wrong on calling the export with x f32[2048, features]: the "
    "shape assertion rejects it",
)
def _rt3_export_any_batch_bounded(f, features: int, *rest) -> bytes:
    shape = jax.export.symbolic_shape(f"b, {features}", constraints=("b <= 1024",))
    x = jax.ShapeDtypeStruct(shape, jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@wrong(
    "export_any_batch",
    why="takes x's dtype from the other arguments (float32 only when there are none); the "
    "contract says x is float32; wrong on f(x, w) with w int32[features, 4] or bf16: x is "
    "exported as int32/bf16",
)
def _rt3_export_any_batch_dtype_from_rest(f, features: int, *rest) -> bytes:
    dtype = rest[0].dtype if rest else jnp.float32
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), dtype)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


_rt3_ANY_BATCH_CACHE: dict = {}


@wrong(
    "export_any_batch",
    why="memoizes by (f, features) and forgets `rest` in the key; wrong on the second of two "
    "exports of mlp with features 16 and rest specs of other dtypes or shapes (f32 weights, "
    "then bf16 weights, or w2 f32[8,4] then f32[8,2]): the first export's bytes come back",
)
def _rt3_export_any_batch_cached(f, features: int, *rest) -> bytes:
    key = (f, features)
    if key not in _rt3_ANY_BATCH_CACHE:
        x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
        _rt3_ANY_BATCH_CACHE[key] = jax.export.export(jax.jit(f))(x, *rest).serialize()
    return _rt3_ANY_BATCH_CACHE[key]


# ---------------------------------------------------------------- task 6: predict_accepts

_rt3_ACCEPTS = {
    "(b, 4) called with f32[3,4]": True,
    "(b, 4) called with f32[1,4]": True,
    "(b, 4) called with f32[0,4]": False,
    "(b, 4) called with f32[3,5]": False,
    "(b, 4) called with f32[3,4,1]": False,
    "(b, 4) called with i32[3,4]": False,
    "(2*b, 4) called with f32[6,4]": True,
    "(2*b, 4) called with f32[5,4]": False,
    "(b, b) called with f32[3,3]": True,
    "(b, b) called with f32[3,4]": False,
    "(b + 1, 4) called with f32[1,4]": False,
    "(b + 1, 4) called with f32[2,4]": True,
    "(a, b) called with f32[2,7]": True,
    "(b, 2*b) called with f32[3,6]": True,
    "(b + 1, b) called with f32[3,3]": False,
    "(2*b, b + 1) called with f32[4,4]": False,
}


@wrong(
    "predict_accepts",
    why="treats size 1 as special (a broadcasting dimension, so a symbol cannot be 1): JAX "
    "assumes only b >= 1; wrong on '(b, 4) called with f32[1,4]' (runs) and "
    "'(b + 1, 4) called with f32[2,4]' (b = 1, runs)",
)
def _rt3_predict_accepts_no_unit_dims(calls) -> dict[str, bool]:
    answer = dict(_rt3_ACCEPTS)
    answer["(b, 4) called with f32[1,4]"] = False
    answer["(b + 1, 4) called with f32[2,4]"] = False
    return answer


@wrong(
    "predict_accepts",
    why="believes a dimension can only be solved when it is a bare symbol (2*b and b + 1 "
    "are 'not invertible', so those calls are rejected); JAX solves linear dimension "
    "expressions; wrong on '(2*b, 4) called with f32[6,4]' and '(b + 1, 4) called with "
    "f32[2,4]', which run",
)
def _rt3_predict_accepts_bare_symbols_only(calls) -> dict[str, bool]:
    answer = dict(_rt3_ACCEPTS)
    answer["(2*b, 4) called with f32[6,4]"] = False
    answer["(b + 1, 4) called with f32[2,4]"] = False
    return answer


@wrong(
    "predict_accepts",
    why="pictures the rank check as NumPy broadcasting (a trailing unit dimension is squeezed "
    "away, as np.squeeze or a reshape would); the exported function checks the rank exactly; "
    "wrong on '(b, 4) called with f32[3,4,1]', which is rejected",
)
def _rt3_predict_accepts_squeezes_unit_dims(calls) -> dict[str, bool]:
    answer = dict(_rt3_ACCEPTS)
    answer["(b, 4) called with f32[3,4,1]"] = True
    return answer


# ---------------------------------------------------------------- task 7: predict_lowering

_rt3_LOWERING = {
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


def _rt3_lowering_copy() -> dict[str, dict[str, int]]:
    return {name: dict(ops) for name, ops in _rt3_LOWERING.items()}


@wrong(
    "predict_lowering",
    why="a Python int mixed with a float32 array is pictured as int32 converted to float32 (as "
    "'x + i, i int32' is): JAX makes the weak-typed 1 a float32 constant directly; wrong on "
    "'jnp.exp(x) - 1', which has no stablehlo.convert",
)
def _rt3_predict_lowering_int_literal_convert() -> dict[str, dict[str, int]]:
    answer = _rt3_lowering_copy()
    answer["jnp.exp(x) - 1"]["stablehlo.convert"] = 1
    return answer


@wrong(
    "predict_lowering",
    why="applies 'a Python scalar is a constant broadcast to the array's shape' to the mean's "
    "divisor too; after the full reduce both operands are scalars, so nothing is broadcast; "
    "wrong on 'x.mean()' (no stablehlo.broadcast_in_dim)",
)
def _rt3_predict_lowering_mean_broadcast() -> dict[str, dict[str, int]]:
    answer = _rt3_lowering_copy()
    answer["x.mean()"]["stablehlo.broadcast_in_dim"] = 1
    return answer


@wrong(
    "predict_lowering",
    why="reads x[::-1] as a slice with stride -1 (NumPy's view); StableHLO slices take positive "
    "strides only, so JAX emits stablehlo.reverse; wrong on 'x[::-1]'",
)
def _rt3_predict_lowering_negative_stride_slice() -> dict[str, dict[str, int]]:
    answer = _rt3_lowering_copy()
    answer["x[::-1]"] = {"stablehlo.slice": 1}
    return answer
