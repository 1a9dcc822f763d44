"""Red-team wrong answers for phase 8, written from the contract only.

Round 5: each answer agrees with a correct one on the programs and banks in programs.py, or on
most of them, and is wrong on a valid input that `why` names (another nesting place, another
dtype, a second output kind, an op of the dialect no bank uses, an extreme batch, a call shape
the bank lacks).
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------------------------------------
# shared pieces (correct ones, so each answer below is wrong in one place only)


def _rt5_walk(op, counts: Counter) -> None:
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                counts[child.operation.name] += 1
                _rt5_walk(child.operation, counts)


_rt5_RENAMED = {
    "stablehlo.dot_general": "dot",
    "stablehlo.broadcast_in_dim": "broadcast",
    "stablehlo.case": "conditional",
    "stablehlo.optimization_barrier": "opt-barrier",
    "stablehlo.if": "conditional",
    "stablehlo.create_token": "after-all",
    "stablehlo.composite": "call",
}


def _rt5_respell(op: str) -> str:
    return op.removeprefix("stablehlo.").replace("_", "-")


# ---------------------------------------------------------------------------------------------
# task 1: op_census


@wrong(
    "op_census",
    why="'count every function including the private ones' and 'do not count the outer module': "
    "walks only the module's func.func ops, so top-level ops of other dialects are skipped; "
    "wrong on a program with a lax.with_sharding_constraint (NamedSharding on a 1-device mesh "
    "with an Auto axis): its `sdy.mesh` sits next to main and is not counted",
)
def _rt5_op_census_functions_only(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    counts: Counter = Counter()
    for top in module.body.operations:
        if top.operation.name != "func.func":  # "only functions live at the top"
            continue
        counts["func.func"] += 1
        _rt5_walk(top.operation, counts)
    return counts


@wrong(
    "op_census",
    why="'count every function ... every operation once': starts at main and follows each "
    "func.call into its callee, so a private function called from two places is counted twice "
    "and one never called is not counted; wrong on CENSUS_PROGRAMS['nested_calls'] (inner is "
    "called from main and from the nested lambda: its sine, multiply and return come out twice)",
)
def _rt5_op_census_follows_calls(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    funcs = {}
    for top in module.body.operations:
        if top.operation.name == "func.func":
            funcs[top.operation.attributes["sym_name"].value] = top.operation
    counts: Counter = Counter()

    def visit(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    name = child.operation.name
                    counts[name] += 1
                    if name == "func.call":
                        callee = child.operation.attributes["callee"].value
                        if callee in funcs:
                            counts["func.func"] += 1
                            visit(funcs[callee])
                    visit(child.operation)

    for top in module.body.operations:
        if top.operation.name != "func.func":
            counts[top.operation.name] += 1
            visit(top.operation)
    counts["func.func"] += 1
    visit(funcs["main"])
    return counts


@wrong(
    "op_census",
    why="'count operations by name (`func.func`, ...)': keys by `op.name`, which on an OpView "
    'of func.func is its symbol (StringAttr "main"), not the op name, so func.func is never '
    "counted and the keys are not even strings; wrong on every program, e.g. "
    "CENSUS_PROGRAMS['dot_general'] (func.func 1 missing, a StringAttr key instead)",
)
def _rt5_op_census_opview_name(lowered) -> Counter:
    counts: Counter = Counter()

    def visit(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    counts[child.name] += 1  # OpView.name: fine for stablehlo ops
                    visit(child.operation)

    visit(lowered.compiler_ir("stablehlo").operation)
    return counts


# ---------------------------------------------------------------------------------------------
# task 2: hlo_opcode


@wrong(
    "hlo_opcode",
    why="'any op of the dialect': renames by substring (a name that mentions broadcast becomes "
    "broadcast, one that mentions dot becomes dot); wrong on stablehlo.collective_broadcast, "
    "which XLA converts to collective-broadcast (no bank program uses it)",
)
def _rt5_hlo_opcode_substring_renames(stablehlo_op: str) -> str:
    for word, opcode in (
        ("broadcast", "broadcast"),
        ("dot", "dot"),
        ("case", "conditional"),
        ("barrier", "opt-barrier"),
        ("composite", "call"),
        ("create_token", "after-all"),
    ):
        if word in stablehlo_op:
            return opcode
    if stablehlo_op == "stablehlo.if":
        return "conditional"
    return _rt5_respell(stablehlo_op)


# every op name the banks of programs.py use, with the opcode XLA gives it: what a learner who
# lowered all of them and wrote the table down has
_rt5_PRACTISED = {
    **_rt5_RENAMED,
    **{
        f"stablehlo.{n}": n.replace("_", "-")
        for n in (
            "dynamic_slice dynamic_update_slice exponential_minus_one count_leading_zeros "
            "round_nearest_afz round_nearest_even log_plus_one is_finite shift_left "
            "shift_right_logical shift_right_arithmetic bitcast_convert reduce_window "
            "reduce_precision rng_bit_generator custom_call select_and_scatter after_all "
            "partition_id replica_id batch_norm_inference all_reduce"
        ).split()
    },
}


@wrong(
    "hlo_opcode",
    why="'any op of the dialect, not a fixed list': a table of every op the banks practise, and "
    "for any other op the bare name with its underscores kept; wrong on "
    "stablehlo.get_tuple_element (XLA: get-tuple-element), stablehlo.batch_norm_training, "
    "stablehlo.all_gather, stablehlo.reduce_scatter, stablehlo.triangular_solve",
)
def _rt5_hlo_opcode_practised_table(stablehlo_op: str) -> str:
    if stablehlo_op in _rt5_PRACTISED:
        return _rt5_PRACTISED[stablehlo_op]
    return stablehlo_op.removeprefix("stablehlo.")


@wrong(
    "hlo_opcode",
    why="'the HLO opcode XLA's conversion gives', not the optimized GPU HLO: names the async "
    "collective pairs a GPU dump shows (all-gather-start, collective-permute-start, "
    "all-to-all... ) for the collectives the banks do not practise; wrong on "
    "stablehlo.all_gather (XLA converts it to all-gather) and stablehlo.collective_permute",
)
def _rt5_hlo_opcode_async_collectives(stablehlo_op: str) -> str:
    if stablehlo_op in _rt5_RENAMED:
        return _rt5_RENAMED[stablehlo_op]
    if stablehlo_op in ("stablehlo.all_gather", "stablehlo.collective_permute"):
        return _rt5_respell(stablehlo_op) + "-start"
    return _rt5_respell(stablehlo_op)


# ---------------------------------------------------------------------------------------------
# task 3: export_bytes


@wrong(
    "export_bytes",
    why="'whose call returns f's own pytree (out_tree)': turns a list result into a tuple "
    '("a tuple is the canonical multi-output"); wrong on programs.sum_and_difference, whose '
    "call must return a list [x + y, x - y], not a tuple",
)
def _rt5_export_bytes_list_as_tuple(f, *specs) -> bytes:
    def g(*args):
        out = f(*args)
        return tuple(out) if isinstance(out, list) else out

    return jax.export.export(jax.jit(g))(*specs).serialize()


@wrong(
    "export_bytes",
    why="'in_avals are the specs (any dtypes)': widens half-precision float specs to float32 "
    'before exporting ("CPU has no fast f16"); wrong on a spec of bfloat16 or float16, e.g. '
    "programs.scale_shift with x bf16[8,4]: in_avals show f32[8,4] and the call then rejects "
    "a bf16 argument",
)
def _rt5_export_bytes_widen_half(f, *specs) -> bytes:
    def widen(s):
        dtype = (
            jnp.float32
            if jnp.dtype(s.dtype) in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
            else s.dtype
        )
        return jax.ShapeDtypeStruct(s.shape, dtype)

    return jax.export.export(jax.jit(f))(*(widen(s) for s in specs)).serialize()


@wrong(
    "export_bytes",
    why="'a spec's shape may have a symbolic dimension: export from the specs themselves': "
    "re-reads each spec's shape through its own jax.export.symbolic_shape call, giving every "
    "spec a scope of its own; wrong on two specs sharing one symbol, e.g. programs.pair with x "
    "and y both f32[b, 4] from one symbolic_shape('b, 4'): export fails on mixed scopes",
)
def _rt5_export_bytes_reparse_shapes(f, *specs) -> bytes:
    def again(s):
        text = ", ".join(str(d) for d in s.shape)
        return jax.ShapeDtypeStruct(jax.export.symbolic_shape(text) if text else (), s.dtype)

    return jax.export.export(jax.jit(f))(*(again(s) for s in specs)).serialize()


# ---------------------------------------------------------------------------------------------
# task 4: call_exported


@wrong(
    "call_exported",
    why="'return the same pytree (array, tuple, list, dict)': returns a non-array result as a "
    "tuple; wrong on a blob of programs.pair (a dict {'sum', 'max'} comes back as the tuple of "
    "its keys) and of programs.sum_and_difference (a list comes back as a tuple)",
)
def _rt5_call_exported_as_tuple(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    return out if isinstance(out, jax.Array) else tuple(out)


@wrong(
    "call_exported",
    why="'a call it rejects (a wrong dtype or shape) raises its error': swallows the rejection "
    "and returns None; wrong on the blob of column_sums exported for f32[b, 4] called with an "
    "int32[3, 4] or an f32[0, 4] array (must raise)",
)
def _rt5_call_exported_swallow(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    try:
        return exported.call(*args)
    except (TypeError, ValueError):
        return None


@wrong(
    "call_exported",
    why="'return ... jax.Arrays': fetches the result to the host with jax.device_get, so every "
    "leaf is a numpy.ndarray (same values, same dtypes); wrong on every blob, e.g. programs.mlp "
    "at batch 8",
)
def _rt5_call_exported_host(blob: bytes, *args):
    return jax.device_get(jax.export.deserialize(blob).call(*args))


# ---------------------------------------------------------------------------------------------
# task 5: export_any_batch


@wrong(
    "export_any_batch",
    why="'rest ... fixed shapes and dtypes, kept as given': rebuilds every rest spec as float32 "
    "(the mlp's weights are all float32, so nothing changes there); wrong on rest holding a "
    "bf16 or int32 spec, e.g. f(x, w) = x @ w.astype(jnp.float32) with w bf16[16, 8]: in_avals "
    "show w as f32[16, 8] and a bf16 w is rejected at call time",
)
def _rt5_export_any_batch_rest_f32(f, features: int, *rest) -> bytes:
    (b,) = jax.export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, features), jnp.float32)
    rest = tuple(jax.ShapeDtypeStruct(r.shape, jnp.float32) for r in rest)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@wrong(
    "export_any_batch",
    why="'x float32 of shape (b, features)': gives x the dtype of the first rest spec (\"x "
    'matches the weights"), float32 only when there is none; wrong on f(x, w) = x @ '
    "w.astype(x.dtype) with w bf16[16, 8]: x is exported as bf16 and a float32 batch is rejected",
)
def _rt5_export_any_batch_x_like_weights(f, features: int, *rest) -> bytes:
    dtype = rest[0].dtype if rest else jnp.float32
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), dtype)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@wrong(
    "export_any_batch",
    why="'with any batch b': bounds the batch symbol for serving (b <= 1024); wrong on a call "
    "with batch 2048 (or any b > 1024) of programs.mlp: the exported function rejects it",
)
def _rt5_export_any_batch_bounded(f, features: int, *rest) -> bytes:
    shape = jax.export.symbolic_shape(f"b, {features}", constraints=("b <= 1024",))
    x = jax.ShapeDtypeStruct(shape, jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---------------------------------------------------------------------------------------------
# task 6: predict_accepts (rule-based: each reads the calls it is given, so a bank with other
# calls is judged by the same rule)

_rt5_DIM = re.compile(r"^(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)(?:\s*\*\s*(\d+))?(?:\s*\+\s*(\d+))?$")


def _rt5_accepts(spec: str, dtype, shape, *, dtype_ok, min_value, consistent_exprs) -> bool:
    dims = [d.strip() for d in spec.split(",")]
    if len(dims) != len(shape) or not dtype_ok(dtype):
        return False
    values: dict[str, int] = {}
    for dim, size in zip(dims, shape):
        if dim.isdigit():
            if int(dim) != size:
                return False
            continue
        m = _rt5_DIM.match(dim)
        if not m:
            return False
        k = int(m.group(1) or m.group(3) or 1)
        c = int(m.group(4) or 0)
        name = m.group(2)
        rest = size - c
        if rest % k:
            return False
        value = rest // k
        if value < min_value(k, c):
            return False
        if k == 1 and c == 0 or consistent_exprs:
            if values.setdefault(name, value) != value:
                return False
    return True


@wrong(
    "predict_accepts",
    why="'the exported function checks the rank, the dtype (no conversion)': squeezes trailing "
    "unit dimensions of the call's shape and rejects only int32 as a wrong dtype; wrong on "
    "'(b, 4) called with f32[3,4,1]' (rank 3: rejected) and on a call '(b, 4) called with "
    "f16[3,4]' (or bf16, int8): the export takes float32 only",
)
def _rt5_predict_accepts_only_int_is_wrong(calls) -> dict[str, bool]:
    def squeezed(shape):  # "a trailing unit dimension is squeezed like jnp does"
        shape = tuple(shape)
        while len(shape) > 1 and shape[-1] == 1:
            shape = shape[:-1]
        return shape

    return {
        name: _rt5_accepts(
            spec,
            dtype,
            squeezed(shape),
            dtype_ok=lambda d: np.dtype(d) != np.dtype(np.int32),
            min_value=lambda k, c: 1,
            consistent_exprs=True,
        )
        for name, (spec, dtype, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'what a symbolic dimension may stand for (every symbol >= 1)': applies b >= 1 to a bare "
    "b only and lets the b inside an expression (2*b, b + 1) be 0; wrong on '(b + 1, 4) called "
    "with f32[1,4]' (needs b = 0: rejected) and '(2*b, 4) called with f32[0,4]'",
)
def _rt5_predict_accepts_multiple_may_be_zero(calls) -> dict[str, bool]:
    return {
        name: _rt5_accepts(
            spec,
            dtype,
            shape,
            dtype_ok=lambda d: np.dtype(d) == np.dtype(np.float32),
            min_value=lambda k, c: 1 if (k, c) == (1, 0) else 0,
            consistent_exprs=True,
        )
        for name, (spec, dtype, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'the same solution wherever a symbol appears, also inside an expression such as 2*b': "
    "checks agreement only between bare occurrences of a symbol; wrong on '(b, 2*b) called with "
    "f32[3,4]' (b = 3 and b = 2: rejected) and '(b + 1, b)' with f32[3,3]",
)
def _rt5_predict_accepts_bare_symbols_only(calls) -> dict[str, bool]:
    return {
        name: _rt5_accepts(
            spec,
            dtype,
            shape,
            dtype_ok=lambda d: np.dtype(d) == np.dtype(np.float32),
            min_value=lambda k, c: 1,
            consistent_exprs=False,
        )
        for name, (spec, dtype, shape) in calls.items()
    }


# ---------------------------------------------------------------------------------------------
# task 7: predict_lowering

_rt5_LOWERED = {
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


def _rt5_lowered(**changed) -> dict[str, dict[str, int]]:
    table = {name: dict(ops) for name, ops in _rt5_LOWERED.items()}
    table.update(changed)
    return table


@wrong(
    "predict_lowering",
    why="'one StableHLO op per jnp operation': thinks a negative-stride slice stays a slice "
    "(stablehlo.slice has strides); wrong on 'x[::-1]', which lowers to stablehlo.reverse",
)
def _rt5_predict_lowering_reverse_as_slice() -> dict[str, dict[str, int]]:
    return _rt5_lowered(**{"x[::-1]": {"stablehlo.slice": 1}})


@wrong(
    "predict_lowering",
    why="'indexing one row slices and then reshapes the unit dimension away': predicts the "
    "gather-style dynamic_slice with a constant start index jnp uses for traced indices; wrong "
    "on 'x[0]' (static index: stablehlo.slice + stablehlo.reshape, no constant)",
)
def _rt5_predict_lowering_index_dynamic() -> dict[str, dict[str, int]]:
    return _rt5_lowered(
        **{
            "x[0]": {
                "stablehlo.constant": 1,
                "stablehlo.dynamic_slice": 1,
                "stablehlo.reshape": 1,
            }
        }
    )


@wrong(
    "predict_lowering",
    why="'StableHLO is what your program asked for before the compiler changed anything': "
    "predicts the rewrite XLA's simplifier makes (exp(x) - 1 -> expm1, x * 2.0 without a "
    "broadcast of the scalar); wrong on 'jnp.exp(x) - 1' (exponential, constant, "
    "broadcast_in_dim, subtract) and 'x * 2.0'",
)
def _rt5_predict_lowering_simplified() -> dict[str, dict[str, int]]:
    return _rt5_lowered(
        **{
            "jnp.exp(x) - 1": {"stablehlo.exponential_minus_one": 1},
            "x * 2.0": {"stablehlo.constant": 1, "stablehlo.multiply": 1},
        }
    )
