"""Red-team wrong answers for phase 8, written from the contract only.

Round 4: the answers of the reading and export tasks agree with a correct one on the programs of
programs.py and are wrong on a valid input named in their `why`; the predict tasks have one valid
input each (their bank, which a kata file cannot import), so each is wrong on named bank entries.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---- task 1: op_census -------------------------------------------------------------------------


@wrong(
    "op_census",
    why="'count every operation nested anywhere': three hand-written nested loops reach ops three "
    "region levels below a function and stop there (enough for every census program: a switch "
    "branch holding a cond); wrong on lax.while_loop whose body holds a lax.cond whose branch "
    "does a .sum(): the reduce body's stablehlo.add/stablehlo.return (4 levels deep) are missed",
)
def _rt4_op_census_three_levels(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()
    for top in module.body.operations:
        counts[top.operation.name] += 1
        for r1 in top.operation.regions:  # function bodies
            for b1 in r1.blocks:
                for op1 in b1.operations:
                    counts[op1.operation.name] += 1
                    for r2 in op1.operation.regions:  # case branches, while, reduce bodies
                        for b2 in r2.blocks:
                            for op2 in b2.operations:
                                counts[op2.operation.name] += 1
                                for r3 in op2.operation.regions:  # a cond inside a branch
                                    for b3 in r3.blocks:
                                        for op3 in b3.operations:
                                            counts[op3.operation.name] += 1
    return counts


@wrong(
    "op_census",
    why="'every operation ... of every dialect, do not count the outer module': walks only the "
    "func.func ops at module level, so a top-level op of another dialect is dropped; wrong on "
    "jax.jit(lambda x: lax.with_sharding_constraint(jnp.sin(x), NamedSharding(mesh, P('x')))) "
    "with a 1-device Auto mesh: the module's sdy.mesh (next to main) is missing from the Counter",
)
def _rt4_op_census_functions_only(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()

    def walk(op) -> None:
        for region in op.operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    counts[inner.operation.name] += 1
                    walk(inner)

    for fn in module.body.operations:
        if fn.operation.name == "func.func":
            counts["func.func"] += 1
            walk(fn)
    return counts


@wrong(
    "op_census",
    why="'every function, including the private ones': starts at main and follows func.call "
    "(each callee once) instead of walking the module, which matches every census program since "
    "nested jits are all reached by func.call; wrong on jax.jit(lambda x: "
    "lax.composite(lambda v: jnp.sin(v) * 2.0, name='my.op')(x) + 1.0) on f32[4]: the "
    "decomposition function is reached by the composite's attribute, so its func.func, "
    "sine, constant, broadcast_in_dim, multiply and func.return are all missed",
)
def _rt4_op_census_follow_calls(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    functions = {}
    for top in module.body.operations:
        if top.operation.name == "func.func":
            name = str(top.operation.attributes["sym_name"]).strip('"')
            functions[name] = top
    counts: Counter = Counter()
    seen: set[str] = set()

    def visit_function(name: str) -> None:
        if name in seen or name not in functions:
            return
        seen.add(name)
        counts["func.func"] += 1
        walk(functions[name])

    def walk(op) -> None:
        for region in op.operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    counts[inner.operation.name] += 1
                    if inner.operation.name == "func.call":
                        callee = str(inner.operation.attributes["callee"]).lstrip("@").strip('"')
                        visit_function(callee)
                    walk(inner)

    visit_function("main")
    return counts


# ---- task 2: hlo_opcode -------------------------------------------------------------------------

_rt4_RT8_RENAMED = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
    "if": "conditional",
    "create_token": "after-all",
    "composite": "call",
}


@wrong(
    "hlo_opcode",
    why="'one spelling rule for the rest': replaces only the first underscore (str.replace(..., 1)), "
    "right for every two-word op; wrong on a three-word op such as stablehlo.get_tuple_element "
    "(returns 'get-tuple_element', XLA says 'get-tuple-element') or stablehlo.dynamic_update_slice",
)
def _rt4_hlo_opcode_first_underscore(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    if name in _rt4_RT8_RENAMED:
        return _rt4_RT8_RENAMED[name]
    return name.replace("_", "-", 1)


# the ops the learner met in programs.py and the README, hyphenated by hand
_rt4_RT8_PRACTISED = {
    "dynamic_slice",
    "dynamic_update_slice",
    "exponential_minus_one",
    "count_leading_zeros",
    "round_nearest_afz",
    "round_nearest_even",
    "log_plus_one",
    "is_finite",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "bitcast_convert",
    "reduce_window",
    "reduce_precision",
    "rng_bit_generator",
    "custom_call",
    "select_and_scatter",
    "after_all",
    "batch_norm_inference",
    "all_reduce",
    "get_dimension_size",
}


@wrong(
    "hlo_opcode",
    why="'any op of the dialect, not a fixed list': hyphenates only the multi-word ops met in "
    "programs.py and the README and returns other names unchanged; wrong on ops outside that "
    "table such as stablehlo.collective_permute, stablehlo.all_to_all, stablehlo.reduce_scatter, "
    "stablehlo.triangular_solve or stablehlo.get_tuple_element (underscores kept)",
)
def _rt4_hlo_opcode_practised_table(stablehlo_op: str) -> str:
    name = stablehlo_op.removeprefix("stablehlo.")
    if name in _rt4_RT8_RENAMED:
        return _rt4_RT8_RENAMED[name]
    if name in _rt4_RT8_PRACTISED:
        return name.replace("_", "-")
    return name


@wrong(
    "hlo_opcode",
    why="README: stablehlo.composite becomes a call of its decomposition; this guesses that a "
    "composite (a named custom op) becomes 'custom-call', wrong on stablehlo.composite",
)
def _rt4_hlo_opcode_composite_custom_call(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    renamed = {**_rt4_RT8_RENAMED, "composite": "custom-call"}
    if name in renamed:
        return renamed[name]
    return name.replace("_", "-")


# ---- task 3: export_bytes -----------------------------------------------------------------------


@wrong(
    "export_bytes",
    why="'argument specs, any shapes': exports with example arrays jnp.zeros(shape, dtype) "
    "instead of the specs, materialising every argument on the device; wrong on a large spec "
    "such as jax.ShapeDtypeStruct((65536, 65536), jnp.float32) (16 GiB: allocation fails, while "
    "exporting from the spec allocates nothing) and on a spec with a symbolic dimension",
)
def _rt4_export_bytes_zeros(f, *specs) -> bytes:
    args = [jnp.zeros(s.shape, s.dtype) for s in specs]
    return jax.export.export(jax.jit(f))(*args).serialize()


@wrong(
    "export_bytes",
    why="'in_avals are the specs, any dtypes': exports bfloat16 specs as float32 (believing bf16 is "
    "not portable), float32/int32 are kept; wrong on scale_shift with x bf16[4], y bf16[4]: "
    "in_avals say float32 and a call with bf16 arrays is rejected",
)
def _rt4_export_bytes_bf16_as_f32(f, *specs) -> bytes:
    fixed = [
        jax.ShapeDtypeStruct(s.shape, jnp.float32 if s.dtype == jnp.bfloat16 else s.dtype)
        for s in specs
    ]
    return jax.export.export(jax.jit(f))(*fixed).serialize()


@wrong(
    "export_bytes",
    why="'call returns f's own pytree (out_tree)': normalises a list output to a tuple before "
    "exporting; wrong on sum_and_difference (returns [x + y, x - y]): out_tree is a tuple",
)
def _rt4_export_bytes_list_as_tuple(f, *specs) -> bytes:
    def g(*args):
        out = f(*args)
        return tuple(out) if isinstance(out, list) else out

    return jax.export.export(jax.jit(g))(*specs).serialize()


# ---- task 4: call_exported ----------------------------------------------------------------------

_rt4_RT8_BY_LENGTH: dict[int, object] = {}


@wrong(
    "call_exported",
    why="'rebuild the exported function from blob': caches deserialized functions by len(blob); "
    "two different exports of the same length collide; wrong on column_sums exported for "
    "f32[3,4] then for f32[5,4] (both 1336 bytes): the second call runs the first export and "
    "rejects a f32[5,4] argument",
)
def _rt4_call_exported_cached_by_length(blob: bytes, *args):
    key = len(blob)
    if key not in _rt4_RT8_BY_LENGTH:
        _rt4_RT8_BY_LENGTH[key] = jax.export.deserialize(bytearray(blob))
    return _rt4_RT8_BY_LENGTH[key].call(*args)


@wrong(
    "call_exported",
    why="'return the same pytree': unwraps a one-element tuple/list result into its array; "
    "wrong on sines (returns (jnp.sin(x),)): a bare array comes back instead of a 1-tuple",
)
def _rt4_call_exported_unwrap_single(blob: bytes, *args):
    out = jax.export.deserialize(bytearray(blob)).call(*args)
    if isinstance(out, (tuple, list)) and len(out) == 1:
        return out[0]
    return out


@wrong(
    "call_exported",
    why="'call it on args as given; a call it rejects raises its error': casts every floating "
    "argument to the exported float dtype first (float-to-float only, ints untouched, so the "
    "int32 rejection still raises); wrong on a blob exported for f32[3,4] called with a float16 "
    "or bfloat16 array: it runs instead of raising the dtype mismatch",
)
def _rt4_call_exported_cast_floats(blob: bytes, *args):
    exported = jax.export.deserialize(bytearray(blob))
    fixed = []
    for a, aval in zip(args, exported.in_avals):
        dt = np.asarray(a).dtype if not hasattr(a, "dtype") else a.dtype
        if jnp.issubdtype(dt, jnp.floating) and jnp.issubdtype(aval.dtype, jnp.floating):
            a = jnp.asarray(a, aval.dtype)
        fixed.append(a)
    return exported.call(*fixed)


# ---- task 5: export_any_batch -------------------------------------------------------------------


@wrong(
    "export_any_batch",
    why="'x float32 of shape (b, features)': gives x the dtype of the first rest spec (the "
    "weights), float32 when there is none; wrong on mlp with rest bf16 w1/w2: x's in_aval "
    "becomes bfloat16",
)
def _rt4_export_any_batch_x_like_weights(f, features: int, *rest) -> bytes:
    dtype = rest[0].dtype if rest else jnp.float32
    (b,) = jax.export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, features), dtype)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@wrong(
    "export_any_batch",
    why="'rest ... kept as given': casts floating rest specs to float32 to match x (ints kept); "
    "wrong on mlp with rest specs bf16[16,8], bf16[8,4] (or float16): in_avals say float32",
)
def _rt4_export_any_batch_rest_f32(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    kept = [
        jax.ShapeDtypeStruct(
            r.shape, jnp.float32 if jnp.issubdtype(r.dtype, jnp.floating) else r.dtype
        )
        for r in rest
    ]
    return jax.export.export(jax.jit(f))(x, *kept).serialize()


@wrong(
    "export_any_batch",
    why="'exported serialized': returns exported.mlir_module_serialized (StableHLO bytecode) "
    "instead of exported.serialize(); wrong on every call: jax.export.deserialize cannot read it "
    "(e.g. mlp, features 16)",
)
def _rt4_export_any_batch_module_bytes(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    return bytes(jax.export.export(jax.jit(f))(x, *rest).mlir_module_serialized)


# ---- task 6: predict_accepts --------------------------------------------------------------------
# The learner's file may not import programs.py: a prediction is a table over EXPORTED_CALLS' names.

_rt4_RT8_ACCEPTS = {
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
    why="'checks the dtype (no conversion, unlike a jitted function)': reasons like jit, where an "
    "int32 array is promoted to the traced float32, and predicts the int32 call runs; every shape "
    "entry right; wrong on '(b, 4) called with i32[3,4]' (the Exported raises a dtype mismatch)",
)
def _rt4_predict_accepts_converts_like_jit(calls) -> dict[str, bool]:
    return {**_rt4_RT8_ACCEPTS, "(b, 4) called with i32[3,4]": True}


@wrong(
    "predict_accepts",
    why="'the same solution wherever a symbol appears, also inside 2*b': treats a dimension "
    "expression as a lower bound checked on its own (2*b >= 2, b + 1 >= 2) and every occurrence "
    "of a symbol as free; wrong on '(2*b, 4) called with f32[5,4]' (5 is odd) and '(b, b) called "
    "with f32[3,4]' (b cannot be 3 and 4): predicted True, both are rejected",
)
def _rt4_predict_accepts_expressions_as_bounds(calls) -> dict[str, bool]:
    return {
        **_rt4_RT8_ACCEPTS,
        "(2*b, 4) called with f32[5,4]": True,
        "(b, b) called with f32[3,4]": True,
    }


@wrong(
    "predict_accepts",
    why="'checks the rank' and 'the assumption JAX makes about every symbol' (each symbol >= 1): "
    "believes a trailing unit dimension is squeezed as NumPy would, and puts the >= 1 bound on "
    "each dimension instead of on the symbol; wrong on '(b, 4) called with f32[3,4,1]' (rank 3) "
    "and '(b + 1, 4) called with f32[1,4]' (needs b = 0): both predicted True, both rejected",
)
def _rt4_predict_accepts_squeeze_and_offset(calls) -> dict[str, bool]:
    return {
        **_rt4_RT8_ACCEPTS,
        "(b, 4) called with f32[3,4,1]": True,
        "(b + 1, 4) called with f32[1,4]": True,
    }


# ---- task 7: predict_lowering -------------------------------------------------------------------


def _rt4_rt8_lowering_truth() -> dict[str, dict[str, int]]:
    scalar = {"stablehlo.constant": 1, "stablehlo.broadcast_in_dim": 1}
    return {
        "jnp.sin(x) * jnp.cos(x)": {
            "stablehlo.sine": 1,
            "stablehlo.cosine": 1,
            "stablehlo.multiply": 1,
        },
        "jnp.exp(x) - 1": {"stablehlo.exponential": 1, **scalar, "stablehlo.subtract": 1},
        "jnp.tanh(x)": {"stablehlo.tanh": 1},
        "x * 2.0": {**scalar, "stablehlo.multiply": 1},
        "x ** 2": {"stablehlo.multiply": 1},
        "x / y": {"stablehlo.divide": 1},
        "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
        "jax.nn.relu(x)": {**scalar, "stablehlo.maximum": 1},
        "jnp.where(x > 0, x, y)": {**scalar, "stablehlo.compare": 1, "stablehlo.select": 1},
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


def _rt4_rt8_only_bank(table: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {name: dict(ops) for name, ops in table.items()}


@wrong(
    "predict_lowering",
    why="'a Python scalar is a scalar constant broadcast to the array's shape' applied also to a "
    "scalar result: predicts x.mean()'s divisor as constant + broadcast_in_dim; wrong on "
    "'x.mean()' (the sum is rank 0, so the 12.0 is divided in directly: no broadcast_in_dim)",
)
def _rt4_predict_lowering_mean_broadcast() -> dict[str, dict[str, int]]:
    table = _rt4_rt8_lowering_truth()
    table["x.mean()"] = {**table["x.mean()"], "stablehlo.broadcast_in_dim": 1}
    return _rt4_rt8_only_bank(table)


@wrong(
    "predict_lowering",
    why="'mixing int32 with float32 adds a convert' applied to a Python int literal: predicts "
    "jnp.exp(x) - 1 as an int32 constant converted then broadcast; wrong on 'jnp.exp(x) - 1' "
    "(a weakly typed Python int becomes a float32 constant: no stablehlo.convert)",
)
def _rt4_predict_lowering_int_literal_convert() -> dict[str, dict[str, int]]:
    table = _rt4_rt8_lowering_truth()
    table["jnp.exp(x) - 1"] = {**table["jnp.exp(x) - 1"], "stablehlo.convert": 1}
    return _rt4_rt8_only_bank(table)


@wrong(
    "predict_lowering",
    why="'count the stablehlo.* operations' of the StableHLO module: names the matmul by its "
    "HLO opcode (stablehlo.dot, the op the HLO text shows) instead of stablehlo.dot_general; "
    "wrong on 'x @ w'",
)
def _rt4_predict_lowering_dot_from_hlo() -> dict[str, dict[str, int]]:
    table = _rt4_rt8_lowering_truth()
    table["x @ w"] = {"stablehlo.dot": 1}
    return _rt4_rt8_only_bank(table)
