"""Red-team wrong answers for phase 8, round 6, written from the contract only.

Kinds not used by earlier rounds: library semantics (Counter's `|` is a max, Python object ids
are reused), an order-of-operations bug, instruction names read as opcodes, answers that are
right on the bank but wrong on a float64 call or on equal sizes of two symbols, a caller-side
pre-check stricter than the Exported's own, a serving-style batch multiple, a too-general export,
a prediction table with explicit zeros, and "names instead of facts" on the lowering bank.
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---------------------------------------------------------------------------------------------
# task 1: op_census


def _rt6_walk(op, counts: Counter) -> None:
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                counts[child.operation.name] += 1
                _rt6_walk(child.operation, counts)


@wrong(
    "op_census",
    why="'count every operation ... every function': builds one Counter per top-level op and "
    "merges them with `total |= per_function` (Counter's | is an element-wise MAX, not a sum), "
    "so a name used in several functions is counted once per the largest function; right on "
    "any one-function module, wrong on CENSUS_PROGRAMS['nested_calls'] (three func.func and "
    "three func.return, reported 1 each) and on jax.nn.relu (two functions)",
)
def _rt6_op_census_counter_union(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    total: Counter = Counter()
    for top in module.body.operations:
        per_function: Counter = Counter({top.operation.name: 1})
        _rt6_walk(top.operation, per_function)
        total |= per_function  # "union of the censuses"
    return total


@wrong(
    "op_census",
    why="'count every operation nested anywhere ... every operation once': guards the walk "
    "against revisiting an op with a set of id(op); the MLIR Python bindings make a fresh "
    "wrapper per access, freed on the next loop step, so ids are reused and most ops are "
    "skipped as 'seen'; wrong on CENSUS_PROGRAMS['case'] (23 ops, about 7 reported) and every "
    "program with more than a handful of ops",
)
def _rt6_op_census_seen_by_id(lowered) -> Counter:
    counts: Counter = Counter()
    seen: set[int] = set()

    def visit(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    if id(child) in seen:  # "never count an op twice"
                        continue
                    seen.add(id(child))
                    counts[child.operation.name] += 1
                    visit(child.operation)

    visit(lowered.compiler_ir("stablehlo").operation)
    return counts


# ---------------------------------------------------------------------------------------------
# task 2: hlo_opcode

_rt6_RENAMED = {
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
    why="'a few renamed ops, then one spelling rule': applies the spelling rule first and looks "
    "the result up in a rename table keyed by the StableHLO spelling, so only one-word renames "
    "(case, if, composite) still hit; wrong on stablehlo.dot_general (dot-general, XLA: dot), "
    "stablehlo.broadcast_in_dim, stablehlo.optimization_barrier and stablehlo.create_token",
)
def _rt6_hlo_opcode_respell_before_rename(stablehlo_op: str) -> str:
    name = stablehlo_op.removeprefix("stablehlo.").replace("_", "-")
    return _rt6_RENAMED.get(name, name)


_rt6_INSTRUCTION_NAMES = {  # what JAX calls the HLO instructions (after the jax primitive)
    "sine": "sin",
    "cosine": "cos",
    "exponential": "exp",
    "exponential_minus_one": "expm1",
    "log_plus_one": "log1p",
    "negate": "neg",
    "remainder": "rem",
    "maximum": "max",
    "minimum": "min",
    "logistic": "logistic",
}


@wrong(
    "hlo_opcode",
    why="'Read the opcode, not the instruction name': takes JAX's instruction names from the "
    "HLO dump (sin.0, exp.1, neg.2, max.3) as the opcodes of the math ops and respells the "
    "rest; wrong on stablehlo.sine (XLA: sine, not sin), stablehlo.cosine, "
    "stablehlo.exponential, stablehlo.negate, stablehlo.maximum",
)
def _rt6_hlo_opcode_instruction_names(stablehlo_op: str) -> str:
    name = stablehlo_op.removeprefix("stablehlo.")
    if name in _rt6_RENAMED:
        return _rt6_RENAMED[name]
    if name in _rt6_INSTRUCTION_NAMES:
        return _rt6_INSTRUCTION_NAMES[name]
    return name.replace("_", "-")


# ---------------------------------------------------------------------------------------------
# task 3: export_bytes


@wrong(
    "export_bytes",
    why="'the bytes deserialize to an Exported whose in_avals are the specs': makes the first "
    "spec's leading dimension a symbolic batch ('one export serves every batch'), falling back "
    "to the specs as given when f does not trace that way; wrong on programs.mlp with "
    "mlp_specs() (in_avals show x as f32[b, 16], not f32[8, 16], and a batch-3 call runs "
    "where the Exported for f32[8,16] must reject it)",
)
def _rt6_export_bytes_always_polymorphic(f, *specs) -> bytes:
    exporter = jax.export.export(jax.jit(f))
    if specs and len(specs[0].shape) >= 1 and isinstance(specs[0].shape[0], int):
        rest_dims = ", ".join(str(d) for d in specs[0].shape[1:])
        text = f"b, {rest_dims}" if rest_dims else "b"
        first = jax.ShapeDtypeStruct(jax.export.symbolic_shape(text), specs[0].dtype)
        try:
            return exporter(first, *specs[1:]).serialize()
        except Exception:  # noqa: BLE001  (f needs the concrete batch)
            pass
    return exporter(*specs).serialize()


# ---------------------------------------------------------------------------------------------
# task 4: call_exported


@wrong(
    "call_exported",
    why="'call it on args as given ... The exported function checks the arguments itself': "
    "pre-checks every argument's dtype against in_avals with exact equality and raises its own "
    "TypeError; stricter than the Exported, which accepts a float64 NumPy array for a float32 "
    "aval (x64 off: JAX canonicalizes it); wrong on the blob of programs.column_sums for "
    "f32[b, 4] called with np.ones((3, 4), np.float64): must run and return f32[4]",
)
def _rt6_call_exported_strict_precheck(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    for i, (arg, aval) in enumerate(zip(args, exported.in_avals)):
        if np.dtype(arg.dtype) != np.dtype(aval.dtype):
            raise TypeError(f"args[{i}]: expected {aval.dtype}, got {arg.dtype}")
    return exported.call(*args)


@wrong(
    "call_exported",
    why="'return ... the same pytree of jax.Arrays, dtypes unchanged': hands a 0-d result back "
    "as a Python number (.item(), 'a scalar is a scalar'); wrong on a blob of "
    "programs.scalar_mean (a float, not a 0-d float32 jax.Array) and on the 0-d second output "
    "of programs.scale_shift",
)
def _rt6_call_exported_scalars_as_python(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    return jax.tree.map(lambda a: a.item() if a.ndim == 0 else a, out)


# ---------------------------------------------------------------------------------------------
# task 5: export_any_batch


@wrong(
    "export_any_batch",
    why="'for x float32 of shape (b, features) with any batch b': exports the batch as 8*b "
    "('accelerators want batches in multiples of 8'); in_avals show 8*b and a batch that is "
    "not a multiple of 8 is rejected; wrong on programs.mlp called with batch 3 (or 1, 5, 12)",
)
def _rt6_export_any_batch_multiple_of_8(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"8*b, {features}"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---------------------------------------------------------------------------------------------
# task 6: predict_accepts (rule-based, reading the calls it is given so a bank with other calls
# is judged by the same rule; right on every call of the shipped bank)

_rt6_DIM = re.compile(r"^(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)(?:\s*\+\s*(\d+))?$")


def _rt6_accepts(spec, dtype, shape, *, dtype_ok, distinct=False, offset_sign=1) -> bool:
    dims = [d.strip() for d in spec.split(",")]
    if len(dims) != len(shape) or not dtype_ok(dtype):
        return False
    values: dict[str, int] = {}
    for dim, size in zip(dims, shape):
        if dim.isdigit():
            if int(dim) != size:
                return False
            continue
        m = _rt6_DIM.match(dim)
        if m is None:
            return False
        k, name, c = int(m.group(1) or 1), m.group(2), int(m.group(3) or 0)
        rest = size - offset_sign * c
        if rest % k:
            return False
        value = rest // k
        if value < 1 or values.setdefault(name, value) != value:
            return False
    if distinct and len(set(values.values())) != len(values):
        return False
    return True


@wrong(
    "predict_accepts",
    why="'the dtype (no conversion)' read as 'the array's dtype must equal float32 exactly': "
    "right on the shipped bank, wrong on a float64 NumPy call such as '(b, 4) called with "
    "f64[3,4]' or '(2*b, 4) called with f64[6,4]': with x64 off (the default) JAX "
    "canonicalizes a float64 NumPy array to float32 before the Exported's check, and the "
    "call runs (this says False)",
)
def _rt6_predict_accepts_exact_float32(calls) -> dict[str, bool]:
    return {
        name: _rt6_accepts(
            spec, dtype, shape, dtype_ok=lambda d: np.dtype(d) == np.dtype(np.float32)
        )
        for name, (spec, dtype, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'what a symbolic dimension may stand for': believes two different symbols stand for "
    "two different sizes (a != b), so a call giving them one value is rejected; right on the "
    "shipped '(a, b) called with f32[2,7]', wrong on '(a, b) called with f32[3,3]' (or "
    "f32[1,1]), which runs",
)
def _rt6_predict_accepts_distinct_symbols(calls) -> dict[str, bool]:
    float_ok = {np.dtype(np.float32), np.dtype(np.float64)}
    return {
        name: _rt6_accepts(
            spec, dtype, shape, dtype_ok=lambda d: np.dtype(d) in float_ok, distinct=True
        )
        for name, (spec, dtype, shape) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="'the same solution wherever a symbol appears, also inside an expression': solves "
    "b + 1 = size as b = size + 1 (sign slip moving the constant across), so the >= 1 check "
    "never fires for b + 1; wrong on '(b + 1, 4) called with f32[1,4]' (needs b = 0: "
    "rejected, this says True)",
)
def _rt6_predict_accepts_offset_sign_slip(calls) -> dict[str, bool]:
    float_ok = {np.dtype(np.float32), np.dtype(np.float64)}
    return {
        name: _rt6_accepts(
            spec, dtype, shape, dtype_ok=lambda d: np.dtype(d) in float_ok, offset_sign=-1
        )
        for name, (spec, dtype, shape) in calls.items()
    }


# ---------------------------------------------------------------------------------------------
# task 7: predict_lowering (the census of each LOWERING_BANK program, with one wrong belief)

_rt6_SCALAR = {"stablehlo.constant": 1, "stablehlo.broadcast_in_dim": 1}
_rt6_REDUCE = {"stablehlo.constant": 1, "stablehlo.reduce": 1, "stablehlo.return": 1}

_rt6_LOWERED = {
    "jnp.sin(x) * jnp.cos(x)": {
        "stablehlo.sine": 1,
        "stablehlo.cosine": 1,
        "stablehlo.multiply": 1,
    },
    "jnp.exp(x) - 1": {"stablehlo.exponential": 1, **_rt6_SCALAR, "stablehlo.subtract": 1},
    "jnp.tanh(x)": {"stablehlo.tanh": 1},
    "x * 2.0": {**_rt6_SCALAR, "stablehlo.multiply": 1},
    "x ** 2": {"stablehlo.multiply": 1},
    "x / y": {"stablehlo.divide": 1},
    "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
    "jax.nn.relu(x)": {**_rt6_SCALAR, "stablehlo.maximum": 1},
    "jnp.where(x > 0, x, y)": {**_rt6_SCALAR, "stablehlo.compare": 1, "stablehlo.select": 1},
    "x.sum(axis=0)": {**_rt6_REDUCE, "stablehlo.add": 1},
    "x.max(axis=1)": {**_rt6_REDUCE, "stablehlo.maximum": 1},
    "x.mean()": {**_rt6_REDUCE, "stablehlo.add": 1, "stablehlo.constant": 2, "stablehlo.divide": 1},
    "x @ w": {"stablehlo.dot_general": 1},
    "x.T": {"stablehlo.transpose": 1},
    "x[0]": {"stablehlo.slice": 1, "stablehlo.reshape": 1},
    "x[::-1]": {"stablehlo.reverse": 1},
}

# programs whose lowering holds more than one func.func (a jitted jnp helper is a private
# function reached by func.call)
_rt6_FUNCTIONS = {"jax.nn.relu(x)": 2, "jnp.where(x > 0, x, y)": 2}


def _rt6_lowered(**changed) -> dict[str, dict[str, int]]:
    table = {name: dict(ops) for name, ops in _rt6_LOWERED.items()}
    table.update(changed)
    return table


_rt6_ALL_OPS = sorted({op for ops in _rt6_LOWERED.values() for op in ops})


@wrong(
    "predict_lowering",
    why="'leave out ... ops that do not occur': every census is a full row over all the ops "
    "the bank uses, with 0 where an op is absent (a table template filled in); wrong on every "
    "name, e.g. 'x.T' gives {'stablehlo.add': 0, ..., 'stablehlo.transpose': 1} (equal only if "
    "compared as Counters)",
)
def _rt6_predict_lowering_zero_rows() -> dict[str, dict[str, int]]:
    return {name: {op: ops.get(op, 0) for op in _rt6_ALL_OPS} for name, ops in _rt6_LOWERED.items()}


@wrong(
    "predict_lowering",
    why="'`return` is `func.return`': reads the bare `return` ending each function in "
    "lowered.as_text() as stablehlo.return and counts one per function; wrong on every name, "
    "e.g. 'x.T' (no stablehlo.return) and 'jax.nn.relu(x)' (two functions: predicts 2)",
)
def _rt6_predict_lowering_function_return() -> dict[str, dict[str, int]]:
    table = _rt6_lowered()
    for name, ops in table.items():
        ops["stablehlo.return"] = ops.get("stablehlo.return", 0) + _rt6_FUNCTIONS.get(name, 1)
    return table


@wrong(
    "predict_lowering",
    why="'named after the math rather than after jnp' taken the other way (names instead of "
    "facts): pictures relu as where(x > 0, x, 0), a compare and a select with a broadcast "
    "zero; wrong on 'jax.nn.relu(x)', which lowers to constant, broadcast_in_dim and maximum",
)
def _rt6_predict_lowering_relu_as_select() -> dict[str, dict[str, int]]:
    return _rt6_lowered(
        **{
            "jax.nn.relu(x)": {
                "stablehlo.constant": 1,
                "stablehlo.broadcast_in_dim": 1,
                "stablehlo.compare": 1,
                "stablehlo.select": 1,
            }
        }
    )


@wrong(
    "predict_lowering",
    why="'StableHLO is what your program asked for': pictures the mean as the sum times the "
    "reciprocal of the count (a multiply, as compilers strength-reduce a division by a "
    "constant); wrong on 'x.mean()', which divides (stablehlo.divide 1, no multiply)",
)
def _rt6_predict_lowering_mean_reciprocal() -> dict[str, dict[str, int]]:
    return _rt6_lowered(
        **{
            "x.mean()": {
                **_rt6_REDUCE,
                "stablehlo.add": 1,
                "stablehlo.constant": 2,
                "stablehlo.multiply": 1,
            }
        }
    )


@wrong(
    "predict_lowering",
    why="'A reduction is one stablehlo.reduce whose starting value is a constant': believes a "
    "max-reduction starts from the first element (there is no identity to write for max), so "
    "no constant; wrong on 'x.max(axis=1)' (its init is a -inf constant: constant 1)",
)
def _rt6_predict_lowering_max_no_init() -> dict[str, dict[str, int]]:
    return _rt6_lowered(
        **{
            "x.max(axis=1)": {
                "stablehlo.reduce": 1,
                "stablehlo.maximum": 1,
                "stablehlo.return": 1,
            }
        }
    )
