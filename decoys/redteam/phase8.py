"""Red-team wrong answers for phase 8, written from the contract only."""

from collections import Counter

from kata_harness.decoys import wrong

# ---- op_census ---------------------------------------------------------------------------------


def _module_op(lowered):
    module = lowered.compiler_ir("stablehlo")
    return module.operation


@wrong(
    "op_census",
    why="'Count every operation nested anywhere (reduce and sort bodies, while loops, every "
    "branch of a case)': walks functions but not the regions of ops inside them; x.sum(0) on "
    "f32[8,4] misses the stablehlo.add and stablehlo.return of the reduce body",
)
def op_census_function_bodies_only(lowered):
    """module -> func.func -> its body's ops, and stops there."""
    counts = Counter()
    for block in _module_op(lowered).regions[0].blocks:
        for func in block.operations:
            counts[func.operation.name] += 1
            for region in func.operation.regions:
                for inner in region.blocks:
                    for op in inner.operations:
                        counts[op.operation.name] += 1
    return counts


@wrong(
    "op_census",
    why="'every branch of a case ... while loops': follows only regions[0].blocks[0] of each "
    "op (the usual first-region idiom); CENSUS_PROGRAMS['case'] (a 3-way switch) counts only "
    "the first branch, CENSUS_PROGRAMS['while'] only the loop condition",
)
def op_census_first_region_only(lowered):
    counts = Counter()

    def walk(op):
        for inner in op.operation.regions[0].blocks[0].operations if op.operation.regions else ():
            counts[inner.operation.name] += 1
            walk(inner)

    walk(_module_op(lowered))
    return counts


@wrong(
    "op_census",
    why="'every function including the private ones nested jit calls become': walks only "
    "@main; CENSUS_PROGRAMS['nested_calls'] misses the private func.func bodies (sine, "
    "multiply, reduce ...) of the nested jits",
)
def op_census_main_only(lowered):
    counts = Counter()

    def walk(op):
        counts[op.operation.name] += 1
        for region in op.operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner)

    for func in _module_op(lowered).regions[0].blocks[0].operations:
        if str(func.operation.attributes["sym_name"]).strip('"') == "main":
            walk(func)
    return counts


@wrong(
    "op_census",
    why="'do not count the outer module': includes builtin.module once; any program, e.g. "
    "CENSUS_PROGRAMS['while'], has an extra {'builtin.module': 1}",
)
def op_census_counts_module(lowered):
    counts = Counter()

    def walk(op):
        counts[op.operation.name] += 1
        for region in op.operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner)

    walk(_module_op(lowered))
    return counts


# ---- hlo_opcode (predict) ----------------------------------------------------------------------

_JAX_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
}
_HAND_RENAMES = {"if": "conditional", "create_token": "after-all", "composite": "call"}


@wrong(
    "hlo_opcode",
    why="'including ops JAX never emits (the README names the renamed ones)': knows only the "
    "renames seen in JAX programs; stablehlo.if gives 'if' (HLO: conditional), "
    "stablehlo.create_token 'create-token' (after-all), stablehlo.composite 'composite' (call)",
)
def hlo_opcode_jax_renames_only(stablehlo_op):
    op = stablehlo_op.removeprefix("stablehlo.")
    return _JAX_RENAMES.get(op, op.replace("_", "-"))


@wrong(
    "hlo_opcode",
    why="'one more [rename] that jax.checkpoint leaves in every rematerialized gradient': "
    "spells it by the rule; stablehlo.optimization_barrier gives 'optimization-barrier', HLO "
    "says 'opt-barrier'",
)
def hlo_opcode_barrier_by_rule(stablehlo_op):
    op = stablehlo_op.removeprefix("stablehlo.")
    renames = {**_JAX_RENAMES, **_HAND_RENAMES}
    renames.pop("optimization_barrier")
    return renames.get(op, op.replace("_", "-"))


@wrong(
    "hlo_opcode",
    why="'any op of the dialect, not a fixed list': the renames plus a table of the "
    "multi-word ops seen while practising, else the name unchanged; stablehlo.all_gather "
    "gives 'all_gather' (HLO: all-gather), stablehlo.get_tuple_element 'get_tuple_element'",
)
def hlo_opcode_seen_table(stablehlo_op):
    op = stablehlo_op.removeprefix("stablehlo.")
    seen = {
        name: name.replace("_", "-")
        for name in (
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
            "partition_id",
            "replica_id",
            "batch_norm_inference",
            "all_reduce",
        )
    }
    return {**_JAX_RENAMES, **_HAND_RENAMES, **seen}.get(op, op)


@wrong(
    "hlo_opcode",
    why="'one spelling rule for the rest': hyphenates only the first underscore "
    "(str.replace(..., 1)); stablehlo.dynamic_update_slice gives 'dynamic-update_slice', "
    "HLO says 'dynamic-update-slice'",
)
def hlo_opcode_first_underscore(stablehlo_op):
    op = stablehlo_op.removeprefix("stablehlo.")
    renames = {**_JAX_RENAMES, **_HAND_RENAMES}
    return renames.get(op, op.replace("_", "-", 1))


# ---- predict_accepts (predict) -----------------------------------------------------------------

_ACCEPTS = {
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
    why="'what a symbolic dimension may stand for' (JAX assumes every symbol >= 1): lets a "
    "symbol be 0; '(b, 4) called with f32[0,4]' and '(b + 1, 4) called with f32[1,4]' are "
    "rejected, this says True",
)
def predict_accepts_zero_batch(calls):
    return {
        **_ACCEPTS,
        "(b, 4) called with f32[0,4]": True,
        "(b + 1, 4) called with f32[1,4]": True,
    }


@wrong(
    "predict_accepts",
    why="'Calling an Exported checks ... the dtype (no conversion, unlike a jitted function)': "
    "expects jit-like conversion; '(b, 4) called with i32[3,4]' is rejected, this says True",
)
def predict_accepts_converts_dtype(calls):
    return {**_ACCEPTS, "(b, 4) called with i32[3,4]": True}


@wrong(
    "predict_accepts",
    why="'the same solution wherever a symbol appears, also inside 2*b': checks each "
    "dimension on its own; '(b, b) called with f32[3,4]' and '(2*b, 4) called with f32[5,4]' "
    "are rejected, this says True",
)
def predict_accepts_dims_independent(calls):
    return {
        **_ACCEPTS,
        "(b, b) called with f32[3,4]": True,
        "(2*b, 4) called with f32[5,4]": True,
    }


# ---- predict_lowering (predict) ----------------------------------------------------------------

_H = "stablehlo."


def _c(**ops):
    return {_H + k: v for k, v in ops.items()}


_LOWERING = {
    "jnp.sin(x) * jnp.cos(x)": _c(sine=1, cosine=1, multiply=1),
    "jnp.exp(x) - 1": _c(exponential=1, constant=1, broadcast_in_dim=1, subtract=1),
    "jnp.tanh(x)": _c(tanh=1),
    "x * 2.0": _c(constant=1, broadcast_in_dim=1, multiply=1),
    "x ** 2": _c(multiply=1),
    "x / y": _c(divide=1),
    "x + i, i int32": _c(convert=1, add=1),
    "jax.nn.relu(x)": _c(constant=1, broadcast_in_dim=1, maximum=1),
    "jnp.where(x > 0, x, y)": _c(constant=1, broadcast_in_dim=1, compare=1, select=1),
    "x.sum(axis=0)": {**_c(constant=1, reduce=1, add=1), _H + "return": 1},
    "x.max(axis=1)": {**_c(constant=1, reduce=1, maximum=1), _H + "return": 1},
    "x.mean()": {**_c(constant=2, reduce=1, add=1, divide=1), _H + "return": 1},
    "x @ w": _c(dot_general=1),
    "x.T": _c(transpose=1),
    "x[0]": _c(slice=1, reshape=1),
    "x[::-1]": _c(reverse=1),
}


@wrong(
    "predict_lowering",
    why="'Some jnp operations are others in disguise (x ** 2)': lowers x ** 2 as a power of "
    "a broadcast constant; JAX emits one stablehlo.multiply, this predicts "
    "{power: 1, constant: 1, broadcast_in_dim: 1}",
)
def predict_lowering_pow_is_power():
    return {**_LOWERING, "x ** 2": _c(constant=1, broadcast_in_dim=1, power=1)}


@wrong(
    "predict_lowering",
    why="'A reduction ... whose body region runs the combining op and a stablehlo.return': "
    "forgets the body's return; 'x.sum(axis=0)', 'x.max(axis=1)', 'x.mean()' each lack "
    "{'stablehlo.return': 1}",
)
def predict_lowering_no_return():
    out = dict(_LOWERING)
    for name in ("x.sum(axis=0)", "x.max(axis=1)", "x.mean()"):
        out[name] = {k: v for k, v in out[name].items() if k != _H + "return"}
    return out


@wrong(
    "predict_lowering",
    why="'a Python scalar is a scalar constant broadcast to the array's shape' applied where "
    "the operand is already a scalar: x.mean() divides the f32[] sum by a scalar constant, no "
    "broadcast; this adds broadcast_in_dim: 1; and relu as compare + select",
)
def predict_lowering_broadcast_every_scalar():
    return {
        **_LOWERING,
        "x.mean()": {**_LOWERING["x.mean()"], _H + "broadcast_in_dim": 1},
        "jax.nn.relu(x)": _c(constant=1, broadcast_in_dim=1, compare=1, select=1),
    }


@wrong(
    "predict_lowering",
    why="'indexing one row slices and then reshapes the unit dimension away': predicts a "
    "slice alone for x[0]; the module also holds a stablehlo.reshape",
)
def predict_lowering_index_no_reshape():
    return {**_LOWERING, "x[0]": _c(slice=1)}
