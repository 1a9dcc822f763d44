"""Red-team (round 2) wrong answers for phase 8, written from the contract only."""

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _walk(op, counts, names=None):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                name = inner.operation.name
                if names is None or name.split(".")[0] in names:
                    counts[name] += 1
                _walk(inner.operation, counts, names)


@wrong(
    "op_census",
    why="'of every dialect (func, stablehlo, chlo, ...)': counts only func.* and stablehlo.* "
    "ops (the two dialects of the first examples); wrong on (lax.erf(x), lax.top_k(x, 2)[1]) "
    "(chlo.erf and chlo.top_k are missing)",
)
def r2_op_census_two_dialects(lowered) -> Counter:
    counts = Counter()
    _walk(lowered.compiler_ir("stablehlo").operation, counts, names=("func", "stablehlo"))
    return counts


@wrong(
    "op_census",
    why="'every function including the private ones nested jit calls become', each counted "
    "once: starts at @main and, at each func.call, counts the callee's body again (inlining), "
    "never counting a private func.func itself; wrong on inner(x) + jit(lambda v: "
    "inner(v).sum())(x) (private func.func missing, their bodies counted per call)",
)
def r2_op_census_follows_calls(lowered) -> Counter:
    module = lowered.compiler_ir("stablehlo")
    functions = {}
    for op in module.body.operations:
        sym = op.operation.attributes["sym_name"]
        functions[str(sym).strip('"')] = op.operation
    counts = Counter()

    def body(fn):
        for region in fn.regions:
            for block in region.blocks:
                for inner in block.operations:
                    counts[inner.operation.name] += 1
                    if inner.operation.name == "func.call":
                        callee = str(inner.operation.attributes["callee"]).lstrip("@")
                        if callee in functions:
                            body(functions[callee])
                    else:
                        body(inner.operation)

    main = functions.get("main") or next(iter(functions.values()))
    counts["func.func"] += 1
    body(main)
    return counts


_JAX_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
}


@wrong(
    "hlo_opcode",
    why="'including ops JAX never emits (the README names the renamed ones)': knows the four "
    "renames JAX programs show and the hyphen rule, but not if -> conditional, create_token -> "
    "after-all, composite -> call; wrong on 'stablehlo.if' (says 'if')",
)
def r2_hlo_opcode_jax_renames_only(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    return _JAX_RENAMES.get(name, name.replace("_", "-"))


_ALL_RENAMES = dict(
    _JAX_RENAMES, **{"if": "conditional", "create_token": "after-all", "composite": "call"}
)


@wrong(
    "hlo_opcode",
    why="'a few are renamed; for the rest, compare how multi-word names are written': also "
    "shortens the names HLO writers usually abbreviate (count_leading_zeros -> clz, "
    "population count stays popcnt); wrong on 'stablehlo.count_leading_zeros' (XLA says "
    "count-leading-zeros)",
)
def r2_hlo_opcode_clz(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    if name == "count_leading_zeros":
        return "clz"
    return _ALL_RENAMES.get(name, name.replace("_", "-"))


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
    why="'what a symbolic dimension may stand for' (JAX assumes every symbol >= 1): this "
    "lets a symbol be 0 (an empty batch); wrong on '(b, 4) called with f32[0,4]' and "
    "'(b + 1, 4) called with f32[1,4]' (both rejected by the shape assertion)",
)
def r2_predict_accepts_empty_batch(calls) -> dict:
    answer = dict(_ACCEPTS)
    answer["(b, 4) called with f32[0,4]"] = True
    answer["(b + 1, 4) called with f32[1,4]"] = True
    return answer


@wrong(
    "predict_accepts",
    why="'Calling an Exported checks ... the dtype (no conversion, unlike a jitted function)': "
    "assumes the int32 array is converted as jit would; wrong on '(b, 4) called with i32[3,4]'",
)
def r2_predict_accepts_converts_dtype(calls) -> dict:
    answer = dict(_ACCEPTS)
    answer["(b, 4) called with i32[3,4]"] = True
    return answer


_LOWERING = {
    "jnp.sin(x) * jnp.cos(x)": {
        "stablehlo.cosine": 1,
        "stablehlo.multiply": 1,
        "stablehlo.sine": 1,
    },
    "jnp.exp(x) - 1": {
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.constant": 1,
        "stablehlo.exponential": 1,
        "stablehlo.subtract": 1,
    },
    "jnp.tanh(x)": {"stablehlo.tanh": 1},
    "x * 2.0": {"stablehlo.broadcast_in_dim": 1, "stablehlo.constant": 1, "stablehlo.multiply": 1},
    "x ** 2": {"stablehlo.multiply": 1},
    "x / y": {"stablehlo.divide": 1},
    "x + i, i int32": {"stablehlo.add": 1, "stablehlo.convert": 1},
    "jax.nn.relu(x)": {
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.constant": 1,
        "stablehlo.maximum": 1,
    },
    "jnp.where(x > 0, x, y)": {
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.compare": 1,
        "stablehlo.constant": 1,
        "stablehlo.select": 1,
    },
    "x.sum(axis=0)": {
        "stablehlo.add": 1,
        "stablehlo.constant": 1,
        "stablehlo.reduce": 1,
        "stablehlo.return": 1,
    },
    "x.max(axis=1)": {
        "stablehlo.constant": 1,
        "stablehlo.maximum": 1,
        "stablehlo.reduce": 1,
        "stablehlo.return": 1,
    },
    "x.mean()": {
        "stablehlo.add": 1,
        "stablehlo.constant": 2,
        "stablehlo.divide": 1,
        "stablehlo.reduce": 1,
        "stablehlo.return": 1,
    },
    "x @ w": {"stablehlo.dot_general": 1},
    "x.T": {"stablehlo.transpose": 1},
    "x[0]": {"stablehlo.reshape": 1, "stablehlo.slice": 1},
    "x[::-1]": {"stablehlo.reverse": 1},
}


@wrong(
    "predict_lowering",
    why="'counting ... the way op_census walks it (ops nested in regions too)': counted from "
    "the printed text, where a reduce prints 'applies stablehlo.add' and hides its "
    "stablehlo.return; wrong on 'x.sum(axis=0)', 'x.max(axis=1)' and 'x.mean()' (no return)",
)
def r2_predict_lowering_from_text() -> dict:
    answer = {name: dict(ops) for name, ops in _LOWERING.items()}
    for ops in answer.values():
        ops.pop("stablehlo.return", None)
    return answer


@wrong(
    "predict_lowering",
    why="'a Python scalar is a scalar constant broadcast to the array's shape': predicts a "
    "splat constant of the array's shape (no broadcast_in_dim); wrong on 'x * 2.0', "
    "'jnp.exp(x) - 1', 'jax.nn.relu(x)' and the where",
)
def r2_predict_lowering_splat_constants() -> dict:
    answer = {name: dict(ops) for name, ops in _LOWERING.items()}
    for ops in answer.values():
        ops.pop("stablehlo.broadcast_in_dim", None)
    return answer


@wrong(
    "predict_lowering",
    why="'Some jnp operations are others in disguise (x ** 2)': predicts stablehlo.power with "
    "a broadcast constant exponent for x ** 2 (it is one multiply)",
)
def r2_predict_lowering_power() -> dict:
    answer = {name: dict(ops) for name, ops in _LOWERING.items()}
    answer["x ** 2"] = {
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.constant": 1,
        "stablehlo.power": 1,
    }
    return answer


@wrong(
    "call_exported",
    why="'the same pytree (array, tuple, dict) of jax.Arrays': fetches the results to the host "
    "(jax.device_get gives NumPy arrays; values and dtypes right); wrong on every call, e.g. "
    "mlp at batch 8 returns an np.ndarray",
)
def r2_call_exported_on_host(blob: bytes, *args):
    exported = jax.export.deserialize(blob)
    return jax.device_get(exported.call(*args))


@wrong(
    "export_any_batch",
    why="'rest are jax.ShapeDtypeStructs ... (fixed shapes and dtypes, kept as given)': the "
    "extra arguments are exported as float32 ('like x'); right for the MLP's f32 weights, wrong "
    "for a bf16 or int32 rest spec (in_avals say float32)",
)
def r2_export_any_batch_rest_f32(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    others = [jax.ShapeDtypeStruct(r.shape, jnp.float32) for r in rest]
    return jax.export.export(jax.jit(f))(x, *others).serialize()


@wrong(
    "export_bytes",
    why="'whose in_avals are the specs' (any dtype): widens half-precision specs to float32 "
    "before exporting ('bf16 is not portable'); wrong on scale_shift with x bf16 (in_avals "
    "say float32)",
)
def r2_export_bytes_widen_half(f, *specs) -> bytes:
    widened = [
        jax.ShapeDtypeStruct(s.shape, jnp.float32)
        if np.dtype(s.dtype) in (np.dtype(jnp.bfloat16), np.dtype(np.float16))
        else s
        for s in specs
    ]
    return jax.export.export(jax.jit(f))(*widened).serialize()
