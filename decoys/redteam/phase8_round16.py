"""Red team, phase 8, round 16: plausible wrong answers written from the contract only."""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong

_rt16_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
    "if": "conditional",
    "create_token": "after-all",
    "composite": "call",
    "cross-replica-sum": "all-reduce",
}


# ---------------------------------------------------------------- op_census
@wrong(
    "op_census",
    why="Clause 'Count every operation nested anywhere (reduce and sort bodies, while loops, every branch of a case...)': walks only the function bodies one level deep, so the case branches and reduce bodies are missed; on CENSUS_PROGRAMS['case'] it finds 1 stablehlo.return instead of 6.",
)
def _rt16_op_census_function_bodies_only(lowered) -> Counter:
    c = Counter()
    for fn in lowered.compiler_ir("stablehlo").body.operations:
        c[fn.operation.name] += 1
        for region in fn.regions:
            for block in region.blocks:
                for op in block.operations:
                    c[op.operation.name] += 1
    return c


@wrong(
    "op_census",
    why="Clause 'every branch of a case': recurses only into regions[0] of each op (the first branch / the while cond), so on CENSUS_PROGRAMS['case'] cosine, tanh, exponential and the inner case's second branch are missing.",
)
def _rt16_op_census_first_region(lowered) -> Counter:
    c = Counter()

    def walk(op):
        c[op.operation.name] += 1
        regions = list(op.regions)
        if regions:
            for block in regions[0].blocks:
                for o in block.operations:
                    walk(o)

    for o in lowered.compiler_ir("stablehlo").body.operations:
        walk(o)
    return c


@wrong(
    "op_census",
    why="Clause 'every function including the private ones nested jit calls become': walks only the public @main function, so CENSUS_PROGRAMS['nested_calls'] gives func.func 1 (not 3) and misses stablehlo.sine.",
)
def _rt16_op_census_main_only(lowered) -> Counter:
    c = Counter()

    def walk(op):
        c[op.operation.name] += 1
        for r in op.regions:
            for b in r.blocks:
                for o in b.operations:
                    walk(o)

    for fn in lowered.compiler_ir("stablehlo").body.operations:
        if (
            fn.operation.name == "func.func"
            and str(fn.operation.attributes["sym_name"]) == '"main"'
        ):
            walk(fn)
    return c


@wrong(
    "op_census",
    why="Clause 'do not count the outer module': uses Operation.walk from module.operation, which also visits the module itself, so every census has an extra 'builtin.module': 1 (e.g. CENSUS_PROGRAMS['dot_general']).",
)
def _rt16_op_census_walk_counts_module(lowered) -> Counter:
    from jax._src.lib.mlir import ir

    c = Counter()

    def cb(op):
        c[op.name] += 1
        return ir.WalkResult.ADVANCE

    lowered.compiler_ir("stablehlo").operation.walk(cb)
    return c


@wrong(
    "op_census",
    why="Clause 'of every dialect (func, stablehlo, chlo, ...)' and README 'a sharding constraint adds ops of the sdy dialect, one of them next to main': only descends into func.func ops at module level, so a module with a with_sharding_constraint misses the module-level sdy.mesh op.",
)
def _rt16_op_census_funcs_only(lowered) -> Counter:
    c = Counter()

    def walk(op):
        c[op.operation.name] += 1
        for r in op.regions:
            for b in r.blocks:
                for o in b.operations:
                    walk(o)

    for o in lowered.compiler_ir("stablehlo").body.operations:
        if o.operation.name == "func.func":
            walk(o)
    return c


# ---------------------------------------------------------------- hlo_opcode
@wrong(
    "hlo_opcode",
    why="README 'one more that jax.checkpoint leaves in every rematerialized gradient': forgets optimization_barrier -> opt-barrier; answers 'optimization-barrier' for 'stablehlo.optimization_barrier'.",
)
def _rt16_hlo_opcode_no_opt_barrier(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".", 1)[1]
    renames = {
        "dot_general": "dot",
        "broadcast_in_dim": "broadcast",
        "case": "conditional",
        "if": "conditional",
        "create_token": "after-all",
        "composite": "call",
        "cross-replica-sum": "all-reduce",
    }
    return renames.get(name, name.replace("_", "-"))


@wrong(
    "hlo_opcode",
    why="Clause 'including ops JAX never emits (the README names the renamed ones)': a table learned only from JAX programs; 'stablehlo.create_token' gives 'create-token' instead of 'after-all' (also if, composite, cross-replica-sum).",
)
def _rt16_hlo_opcode_jax_only_renames(stablehlo_op: str) -> str:
    name = stablehlo_op.removeprefix("stablehlo.")
    renames = {
        "dot_general": "dot",
        "broadcast_in_dim": "broadcast",
        "case": "conditional",
        "optimization_barrier": "opt-barrier",
    }
    return renames.get(name, name.replace("_", "-"))


@wrong(
    "hlo_opcode",
    why="Spelling rule applied to the first underscore only (str.replace count 1): 'stablehlo.exponential_minus_one' gives 'exponential-minus_one' instead of 'exponential-minus-one' (also shift_right_logical).",
)
def _rt16_hlo_opcode_first_underscore(stablehlo_op: str) -> str:
    name = stablehlo_op.split(".")[-1]
    if name in _rt16_RENAMES:
        return _rt16_RENAMES[name]
    return name.replace("_", "-", 1)


# ---------------------------------------------------------------- export_bytes
@wrong(
    "export_bytes",
    why="Clause 'in_avals are the specs (any shapes and dtypes)': rebuilds every spec as float32, so export_bytes(f, ShapeDtypeStruct((8,4), int32)) deserializes with in_avals float32[8,4] (and bf16/f16 specs too).",
)
def _rt16_export_bytes_float32_specs(f, *specs) -> bytes:
    specs = [jax.ShapeDtypeStruct(s.shape, np.float32) for s in specs]
    return jax.export.export(jax.jit(f))(*specs).serialize()


@wrong(
    "export_bytes",
    why="Clause 'whose call returns f's own pytree (out_tree)': flattens the outputs to a list of leaves before exporting, so programs.pair (a dict) comes back as a list and out_tree is a list, not {'max','sum'}.",
)
def _rt16_export_bytes_flat_outputs(f, *specs) -> bytes:
    def flat(*a):
        return jax.tree_util.tree_leaves(f(*a))

    return jax.export.export(jax.jit(flat))(*specs).serialize()


@wrong(
    "export_bytes",
    why="Clause 'export from the specs themselves': traces on zero arrays built from the specs; fine for mlp_specs() but a spec with a symbolic dimension (symbolic_shape('b, 16')) or a huge shape cannot be allocated (raises / exhausts memory) instead of exporting.",
)
def _rt16_export_bytes_concrete_zeros(f, *specs) -> bytes:
    import jax.numpy as jnp

    args = [jnp.zeros(s.shape, s.dtype) for s in specs]
    return jax.export.export(jax.jit(f))(*args).serialize()


# ---------------------------------------------------------------- call_exported
@wrong(
    "call_exported",
    why="Clause 'the same pytree (array, tuple, list, dict)': normalizes sequences to tuples, so programs.sum_and_difference (returns a list) comes back as a tuple.",
)
def _rt16_call_exported_tuple(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    if isinstance(out, (list, tuple)):
        return tuple(out)
    return out


@wrong(
    "call_exported",
    why="Clause 'a call it rejects (a wrong dtype ...) raises its error': helpfully casts each argument to the in_aval dtype first, so an int32[3,4] argument for a float32 export runs instead of raising.",
)
def _rt16_call_exported_cast_args(blob: bytes, *args):
    import jax.numpy as jnp

    exp = jax.export.deserialize(blob)
    if len(args) == len(exp.in_avals):
        args = [jnp.asarray(a, dtype=av.dtype) for a, av in zip(args, exp.in_avals)]
    return exp.call(*args)


@wrong(
    "call_exported",
    why="Clause 'the same pytree': unwraps a one-element tuple, so programs.sines (returns (sin(x),)) comes back as a bare array instead of a 1-tuple.",
)
def _rt16_call_exported_unwrap_single(blob: bytes, *args):
    out = jax.export.deserialize(blob).call(*args)
    if isinstance(out, (tuple, list)) and len(out) == 1:
        return out[0]
    return out


# ---------------------------------------------------------------- export_any_batch
@wrong(
    "export_any_batch",
    why="Clause 'for x float32 of shape (b, features)': takes x's dtype from the first rest spec ('same dtype as the weights'), so with rest = (ShapeDtypeStruct((16, 8), bfloat16),) x is exported as bfloat16[b,16] instead of float32; same as correct for mlp's float32 weights.",
)
def _rt16_export_any_batch_dtype_from_weights(f, features: int, *rest) -> bytes:
    dtype = rest[0].dtype if rest else np.float32
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), dtype)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@wrong(
    "export_any_batch",
    why="Clause 'rest ... (fixed shapes and dtypes, kept as given)': rebuilds the rest specs as float32, so an int32 or bf16 extra argument is exported as float32 in in_avals.",
)
def _rt16_export_any_batch_rest_f32(f, features: int, *rest) -> bytes:
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), np.float32)
    rest = [jax.ShapeDtypeStruct(r.shape, np.float32) for r in rest]
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---------------------------------------------------------------- predict_accepts
def _rt16_parse(sym: str):
    import re

    dims = []
    for part in sym.split(","):
        p = part.replace(" ", "")
        if re.fullmatch(r"-?\d+", p):
            dims.append((None, 0, int(p)))
            continue
        m = re.fullmatch(r"(?:(\d+)\*)?([A-Za-z_]\w*)(?:\*(\d+))?([+-]\d+)?", p)
        coef = int(m.group(1) or m.group(3) or 1)
        dims.append((m.group(2), coef, int(m.group(4) or 0)))
    return dims


def _rt16_canon(dtype):
    dt = np.dtype(dtype)
    return {
        np.dtype("float64"): np.dtype("float32"),
        np.dtype("int64"): np.dtype("int32"),
        np.dtype("uint64"): np.dtype("uint32"),
        np.dtype("complex128"): np.dtype("complex64"),
    }.get(dt, dt)


def _rt16_solve(dims, shape, min_value=1, joint=True):
    if len(dims) != len(shape):
        return False
    env = {}
    for (sym, coef, off), n in zip(dims, shape):
        if sym is None:
            if n != off:
                return False
            continue
        if (n - off) % coef:
            return False
        v = (n - off) // coef
        if v < min_value:
            return False
        if joint:
            if env.setdefault(sym, v) != v:
                return False
    return True


@wrong(
    "predict_accepts",
    why="Clause 'what a symbolic dimension may stand for': lets a symbol be 0 (any size >= 0), so '(b, 4) called with f32[0,4]' is predicted True though the export rejects b = 0.",
)
def _rt16_predict_accepts_allow_zero(calls):
    return {
        k: _rt16_canon(d) == np.float32 and _rt16_solve(_rt16_parse(s), sh, min_value=0)
        for k, (s, d, sh) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="Clause 'the same solution wherever a symbol appears': checks each dimension alone, so '(b, b) called with f32[3,4]' is predicted True.",
)
def _rt16_predict_accepts_independent_dims(calls):
    return {
        k: _rt16_canon(d) == np.float32 and _rt16_solve(_rt16_parse(s), sh, joint=False)
        for k, (s, d, sh) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="Clause 'JAX's defaults: x64 off' / README canonicalization: compares the dtype with float32 exactly, so '(b, 4) called with f64[3,4]' (and dtype written float or 'f8') is predicted False though float64 arrives as float32 and runs.",
)
def _rt16_predict_accepts_no_canonicalization(calls):
    return {
        k: np.dtype(d) == np.float32 and _rt16_solve(_rt16_parse(s), sh)
        for k, (s, d, sh) in calls.items()
    }


@wrong(
    "predict_accepts",
    why="Rank check lost: pairs dimensions with zip, so '(b, 4) called with f32[3,4,1]' is predicted True though the rank differs.",
)
def _rt16_predict_accepts_zip_rank(calls):
    out = {}
    for k, (s, d, sh) in calls.items():
        dims = _rt16_parse(s)
        n = min(len(dims), len(sh))
        out[k] = _rt16_canon(d) == np.float32 and _rt16_solve(dims[:n], tuple(sh)[:n])
    return out


@wrong(
    "predict_accepts",
    why="Clause 'what a symbolic dimension may stand for' read as 'every symbolic dimension must be >= 1': '(b - 1, 4) called with f32[0,4]' (b = 1) is predicted False though it runs.",
)
def _rt16_predict_accepts_dim_positive(calls):
    out = {}
    for k, (s, d, sh) in calls.items():
        dims = _rt16_parse(s)
        ok = _rt16_canon(d) == np.float32 and _rt16_solve(dims, sh)
        if ok and any(sym is not None and n < 1 for (sym, _, _), n in zip(dims, sh)):
            ok = False
        out[k] = ok
    return out


@wrong(
    "predict_accepts",
    why="Dtype by kind: any floating dtype of at least 4 bytes is taken as float32 after canonicalization, so np.longdouble (float128) is predicted True though JAX rejects it.",
)
def _rt16_predict_accepts_float_kind(calls):
    def ok_dtype(d):
        dt = np.dtype(d)
        return dt.kind == "f" and dt.itemsize >= 4

    return {k: ok_dtype(d) and _rt16_solve(_rt16_parse(s), sh) for k, (s, d, sh) in calls.items()}


# ---------------------------------------------------------------- predict_lowering
_rt16_TRUE = {
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
    why="README 'Some jnp operations are others in disguise (x ** 2)': predicts 'x ** 2' as a power of a broadcast constant {power, constant, broadcast_in_dim} instead of one stablehlo.multiply.",
)
def _rt16_predict_lowering_power():
    d = {k: dict(v) for k, v in _rt16_TRUE.items()}
    d["x ** 2"] = {"stablehlo.power": 1, "stablehlo.constant": 1, "stablehlo.broadcast_in_dim": 1}
    return d


@wrong(
    "predict_lowering",
    why="Clause 'counting ... ops nested in regions too': counts reductions as printed text shows them (reduce + init constant), leaving out the body's add/maximum and stablehlo.return for x.sum(axis=0), x.max(axis=1), x.mean().",
)
def _rt16_predict_lowering_no_bodies():
    d = {k: dict(v) for k, v in _rt16_TRUE.items()}
    d["x.sum(axis=0)"] = {"stablehlo.constant": 1, "stablehlo.reduce": 1}
    d["x.max(axis=1)"] = {"stablehlo.constant": 1, "stablehlo.reduce": 1}
    d["x.mean()"] = {"stablehlo.constant": 2, "stablehlo.divide": 1, "stablehlo.reduce": 1}
    return d


@wrong(
    "predict_lowering",
    why="README 'indexing one row slices and then reshapes the unit dimension away' and mean's divisor: predicts x[0] as a lone slice (no reshape) and x.mean() with one constant plus broadcast, one op per jnp call assumed.",
)
def _rt16_predict_lowering_one_op_per_call():
    d = {k: dict(v) for k, v in _rt16_TRUE.items()}
    d["x[0]"] = {"stablehlo.slice": 1}
    d["x.mean()"] = {
        "stablehlo.add": 1,
        "stablehlo.constant": 1,
        "stablehlo.broadcast_in_dim": 1,
        "stablehlo.divide": 1,
        "stablehlo.reduce": 1,
        "stablehlo.return": 1,
    }
    return d
