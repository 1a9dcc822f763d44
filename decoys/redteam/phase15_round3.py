"""Red-team wrong answers for phase 15, written from the contract only.

Each answer below is what a capable learner in a hurry might write: it agrees with a correct
answer on the recorded listings, the bank and the README's programs, and is wrong on a valid
input those lack (named in its `why`). The `_ok_*` helpers are a correct answer the wrong ones
start from (not registered: only functions decorated with `wrong` are answers).
"""

from __future__ import annotations

import re

import jax
import jax.extend  # noqa: F401  (jax.extend.core.Jaxpr / ClosedJaxpr)
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------------------------------------
# A correct answer, the base of the wrong ones.
# ---------------------------------------------------------------------------------------------


def _rt3_iree_module(f, args):
    import iree.compiler as ireec
    import iree.runtime as ireert

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = ireec.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    return exported, ireert.load_vm_flatbuffer(vmfb, driver="local-task")


def _rt3_iree_outputs(module, args):
    result = module.main(*[np.asarray(a) for a in args])
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _rt3_ok_iree_run(f, *args) -> list[np.ndarray]:
    exported, module = _rt3_iree_module(f, args)
    outs = _rt3_iree_outputs(module, args)
    return [
        np.asarray(o).astype(aval.dtype, copy=False).reshape(aval.shape)
        for o, aval in zip(outs, exported.out_avals, strict=True)
    ]


def _rt3_ok_agreement_rtol(dtype: str) -> float:
    return 16 * float(jnp.finfo(dtype).eps)


_rt3_CONTRACTIONS = ("matmul", "batch_matmul", "matvec", "vecmat")


def _rt3_ok_matmul_flops(flow_text: str) -> int:
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in _rt3_CONTRACTIONS and d.sizes and None not in d.sizes:
            total += 2 * int(np.prod(d.sizes, dtype=object))
    return total


def _rt3_last(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _rt3_op_names(instruction) -> set[str]:
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    if not m:
        return set()
    return {_rt3_last(part) for part in m.group(1).split(";") if part}


def _rt3_called(module, names):
    seen, pending, found = set(), list(names), []
    while pending:
        name = pending.pop().removeprefix("%")
        if name in seen:
            continue
        seen.add(name)
        comp = module.computation(name)
        if comp is None:
            continue
        found.append(comp)
        for ins in comp.instructions:
            pending.extend(ins.called_computations)
    return found


def _rt3_xla_matmul_names(hlo_text: str) -> set[str]:
    module = parse_hlo(hlo_text)
    names: set[str] = set()
    for ins in module.entry.instructions:
        inside = [i for c in _rt3_called(module, ins.called_computations) for i in c.instructions]
        if ins.opcode == "dot" or any(i.opcode == "dot" for i in inside):
            for i in (ins, *inside):
                names |= _rt3_op_names(i)
    return names


def _rt3_iree_matmul_names(flow_text: str) -> set[str]:
    names: set[str] = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _rt3_CONTRACTIONS:
            names |= set(d.sources)
    return names


def _rt3_ok_merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    ours, theirs = _rt3_iree_matmul_names(flow_text), _rt3_xla_matmul_names(hlo_text)
    return (ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"})


_rt3_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "debug_print"})
_rt3_LAPACK = frozenset(
    {
        "lu",
        "cholesky",
        "eigh",
        "eig",
        "triangular_solve",
        "qr",
        "geqrf",
        "geqp3",
        "householder_product",
        "orgqr",
        "svd",
        "schur",
        "hessenberg",
        "tridiagonal",
        "tridiagonal_solve",
        "lu_pivots_to_permutation_unused",
    }
)


def _rt3_sub_jaxprs(value):
    if isinstance(value, jax.extend.core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax.extend.core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt3_sub_jaxprs(v)


def _rt3_primitives(jaxpr) -> set[str]:
    names: set[str] = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in _rt3_sub_jaxprs(value):
                names |= _rt3_primitives(sub)
    return names


def _rt3_is_key(var) -> bool:
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _rt3_ok_iree_verdict(jaxpr) -> str:
    inner = jaxpr.jaxpr
    prims = _rt3_primitives(inner)
    if prims & _rt3_CALLBACKS:
        return "export"
    if "sharding_constraint" in prims or any(map(_rt3_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    if prims & _rt3_LAPACK:
        return "lapack"
    return "runs"


def _rt3_stablehlo_version(exported) -> str:
    found = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", bytes(exported.mlir_module_serialized))
    return found.group(1).decode() if found else ""


def _rt3_ok_export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    return (
        _rt3_stablehlo_version(exported),
        int(exported.calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


def _rt3_ok_batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b", *map(str, example.shape[1:])])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


def _rt3_cg(a, b, steps):
    def dot(u, v):
        return jnp.sum(u * v, axis=0)

    def step(_, state):
        x, r, p, rs = state
        ap = a @ p
        den = dot(p, ap)
        alpha = jnp.where(den > 0, rs / jnp.where(den > 0, den, 1), 0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = dot(r, r)
        beta = jnp.where(rs > 0, rs_new / jnp.where(rs > 0, rs, 1), 0)
        return x, r, r + beta * p, rs_new

    x0 = jnp.zeros_like(b)
    x, *_ = jax.lax.fori_loop(0, steps, step, (x0, b, b, dot(b, b)))
    return x


def _rt3_ok_portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return _rt3_cg(a, b, 3 * a.shape[0] + 20).astype(b.dtype)


# ---------------------------------------------------------------------------------------------
# Task 1: iree_run
# ---------------------------------------------------------------------------------------------


@wrong(
    "iree_run",
    why="every output must have the dtype JAX's would have; this casts each output to the first "
    "argument's dtype, which agrees on every FLOWS program (f32->f32, i32->i32, projections' first "
    "arg is f32) but is wrong on jnp.dot(x, w, preferred_element_type=jnp.float32) with bf16 x, w "
    "(a f32 result returned as bf16, rounded) and on a comparison such as lambda x: x > 0 (bool)",
)
def _rt3_iree_run_dtype_of_first_argument(f, *args) -> list[np.ndarray]:
    exported, module = _rt3_iree_module(f, args)
    outs = _rt3_iree_outputs(module, args)
    dtype = np.asarray(args[0]).dtype
    return [np.asarray(o).astype(dtype).reshape(a.shape) for o, a in zip(outs, exported.out_avals)]


@wrong(
    "iree_run",
    why="nothing may be computed by XLA while it runs; this calls f(*args) eagerly in JAX to learn "
    "the output order, shapes and dtypes (XLA compiles and runs every op) instead of reading the "
    "export's out_avals; wrong on any input, e.g. FLOWS['mlp'] with fresh shapes",
)
def _rt3_iree_run_structure_from_jax_call(f, *args) -> list[np.ndarray]:
    leaves = jax.tree.leaves(f(*args))  # XLA runs here
    _, module = _rt3_iree_module(f, args)
    outs = _rt3_iree_outputs(module, args)
    return [np.asarray(o).astype(l.dtype).reshape(l.shape) for o, l in zip(outs, leaves)]


@wrong(
    "iree_run",
    why="every output must be a NumPy array of JAX's dtype; this widens bfloat16 outputs to float32 "
    "('NumPy has no bfloat16'), right on every FLOWS program (their outputs are f32 or i32) but "
    "wrong on ROUND_TRIPS computed in bfloat16, e.g. mlp with all five arguments bf16",
)
def _rt3_iree_run_bf16_widened(f, *args) -> list[np.ndarray]:
    exported, module = _rt3_iree_module(f, args)
    outs = _rt3_iree_outputs(module, args)
    result = []
    for o, aval in zip(outs, exported.out_avals):
        array = np.asarray(o).reshape(aval.shape)
        if array.dtype == jnp.bfloat16:
            array = array.astype(np.float32)
        result.append(array)
    return result


# ---------------------------------------------------------------------------------------------
# Task 2: agreement_rtol
# ---------------------------------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="the tolerance must hold on every fresh draw; finfo.resolution (1e-6 f32, 0.01 bf16) is "
    "smaller than what bfloat16 layernorm_softmax reaches (recorded 0.0244, ~3 bf16 eps): wrong "
    "for 'bfloat16'",
)
def _rt3_agreement_rtol_resolution(dtype: str) -> float:
    return float(jnp.finfo(dtype).resolution)


@wrong(
    "agreement_rtol",
    why="the tolerance must hold on every fresh draw; 'a few roundings' = 4 eps is 4.8e-7 in float32, "
    "below the 9.59e-7 (~8 eps) layernorm_softmax reaches (two reductions and an exp): wrong "
    "for 'float32'",
)
def _rt3_agreement_rtol_four_eps(dtype: str) -> float:
    return 4 * float(jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="must be no looser than 32 eps and hold on every draw; the usual test table (1e-5 f32, 1e-2 "
    "bf16) is too loose for float32 (1e-5 > 32*1.19e-7 = 3.8e-6) and too tight for bfloat16 "
    "(0.01 < 0.0244 of layernorm_softmax)",
)
def _rt3_agreement_rtol_test_table(dtype: str) -> float:
    return {"float32": 1e-5, "bfloat16": 1e-2}[str(jnp.dtype(dtype))]


@wrong(
    "agreement_rtol",
    why="must be no looser than 32 eps; sqrt(eps) ('half the digits') is 3.5e-4 for float32, "
    "~90 times looser than allowed: wrong for 'float32' (right-looking for bfloat16: 0.088)",
)
def _rt3_agreement_rtol_sqrt_eps(dtype: str) -> float:
    return float(np.sqrt(float(jnp.finfo(dtype).eps)))


# ---------------------------------------------------------------------------------------------
# Task 3: matmul_flops
# ---------------------------------------------------------------------------------------------


@wrong(
    "matmul_flops",
    why="only the kinds matmul, batch_matmul, matvec, vecmat count; a prefix test also counts "
    "`matvec_like`, `matmul_like` and `matmul_transpose_b` dispatches, which must count 0: wrong on "
    "a listing with main_dispatch_0_matvec_like_64x32_f32",
)
def _rt3_matmul_flops_kind_prefix(flow_text: str) -> int:
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind.startswith(_rt3_CONTRACTIONS) and d.sizes and None not in d.sizes:
            total += 2 * int(np.prod(d.sizes, dtype=object))
    return total


@wrong(
    "matmul_flops",
    why="a dispatch whose dims hold a dynamic size (D) counts 0; this multiplies the known sizes "
    "only, so main_dispatch_0_matmul_Dx128x64_f32 (a symbolic batch) counts 2*128*64 instead of 0",
)
def _rt3_matmul_flops_dynamic_skipped_dim(flow_text: str) -> int:
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in _rt3_CONTRACTIONS and d.sizes:
            total += 2 * int(np.prod([s for s in d.sizes if s is not None], dtype=object))
    return total


@wrong(
    "matmul_flops",
    why="every dispatch counts; collecting (kind, sizes) in a set counts two contractions of the "
    "same shape once: wrong on a listing of x @ w1 and y @ w2 with equal shapes (two "
    "matmul_32x128x64_f32 dispatches: 2*2*32*128*64, not half of it)",
)
def _rt3_matmul_flops_deduplicated(flow_text: str) -> int:
    kinds = {
        (d.kind, d.sizes)
        for d in iree.read_flow(flow_text)
        if d.kind in _rt3_CONTRACTIONS and d.sizes and None not in d.sizes
    }
    return sum(2 * int(np.prod(sizes, dtype=object)) for _, sizes in kinds)


_rt3_MAIN_EXPORT = re.compile(
    r"flow\.executable\.export\s+public\s+@main_dispatch_\d+_"
    r"(matmul|batch_matmul|matvec|vecmat)_((?:\d+x)*\d+)_[a-z]"
)


@wrong(
    "matmul_flops",
    why="exports are named <function>_dispatch_<i>_...; this regex hard-codes `main` (what jax.export "
    "names it), so a listing compiled from a module whose function is not main (e.g. "
    "@predict_dispatch_0_matmul_32x128x64_f32) counts 0",
)
def _rt3_matmul_flops_main_only(flow_text: str) -> int:
    total = 0
    for _, dims in _rt3_MAIN_EXPORT.findall(flow_text):
        total += 2 * int(np.prod([int(s) for s in dims.split("x")], dtype=object))
    return total


# ---------------------------------------------------------------------------------------------
# Task 4: merged_by_iree
# ---------------------------------------------------------------------------------------------


def _rt3_xla_names_with(hlo_text: str, inside_of, holds_dot) -> set[str]:
    module = parse_hlo(hlo_text)
    names: set[str] = set()
    for ins in module.entry.instructions:
        inside = inside_of(module, ins)
        if holds_dot(ins, inside):
            for i in (ins, *inside):
                names |= _rt3_op_names(i)
    return names


def _rt3_one_level(module, ins):
    comps = [module.computation(n) for n in ins.called_computations]
    return [i for c in comps if c is not None for i in c.instructions]


def _rt3_all_levels(module, ins):
    return [i for c in _rt3_called(module, ins.called_computations) for i in c.instructions]


@wrong(
    "merged_by_iree",
    why="XLA's kernels include dots inside nested fusions; this looks one call deep, so an ENTRY "
    "fusion whose computation holds a nested fusion(..., calls=%dot_computation) is not a matmul "
    "kernel and its names (e.g. a fused tanh) are missed: wrong on such an HLO",
)
def _rt3_merged_by_iree_one_level(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    ours = _rt3_iree_matmul_names(flow_text)
    theirs = _rt3_xla_names_with(
        hlo_text,
        _rt3_one_level,
        lambda ins, inside: ins.opcode == "dot" or any(i.opcode == "dot" for i in inside),
    )
    return (ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"})


@wrong(
    "merged_by_iree",
    why="IREE's matmul kernels are the matmul, batch_matmul, matvec and vecmat dispatches; this "
    "takes matmul and batch_matmul only (right on every recorded listing: projections' matvec and "
    "vecmat hold nothing but the dot), wrong on tanh(m @ v + c) with f32[48,40] m, f32[40] v: "
    "IREE's matvec dispatch holds add and tanh, so the answer is ({'add', 'tanh'}, set()), not empty",
)
def _rt3_merged_by_iree_matmul_kinds_only(
    hlo_text: str, flow_text: str
) -> tuple[set[str], set[str]]:
    ours: set[str] = set()
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul"):
            ours |= set(d.sources)
    theirs = _rt3_xla_matmul_names(hlo_text)
    return (ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"})


def _rt3_op_names_unsplit(instruction) -> set[str]:
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    return {_rt3_last(m.group(1))} if m else set()


@wrong(
    "merged_by_iree",
    why="an op_name that joins several names with ';' names each of them; this keeps the last "
    "'/'-part of the whole string, so op_name=\"jit(f)/tanh;jit(f)/add\" gives only 'add' and "
    "tanh goes missing from XLA's set: wrong on an HLO with such a joined op_name",
)
def _rt3_merged_by_iree_joined_op_name(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    module = parse_hlo(hlo_text)
    theirs: set[str] = set()
    for ins in module.entry.instructions:
        inside = _rt3_all_levels(module, ins)
        if ins.opcode == "dot" or any(i.opcode == "dot" for i in inside):
            for i in (ins, *inside):
                theirs |= _rt3_op_names_unsplit(i)
    ours = _rt3_iree_matmul_names(flow_text)
    return (ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"})


@wrong(
    "merged_by_iree",
    why="an ENTRY instruction that is itself a dot is an XLA matmul kernel; this looks only at "
    "ENTRY fusions (XLA:CPU wraps forward f32 dots in YNN fusions), so the gradient's bare ENTRY "
    "dots of FLOWS['train_step'] (op_name jit(train_step)/transpose(jvp(...))) are missed and "
    "'transpose' lands in IREE's-only set",
)
def _rt3_merged_by_iree_fusions_only(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    theirs = _rt3_xla_names_with(
        hlo_text,
        _rt3_all_levels,
        lambda ins, inside: ins.opcode == "fusion" and any(i.opcode == "dot" for i in inside),
    )
    ours = _rt3_iree_matmul_names(flow_text)
    return (ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"})


# ---------------------------------------------------------------------------------------------
# Task 5: iree_verdict
# ---------------------------------------------------------------------------------------------


def _rt3_primitives_via(jaxpr, keys) -> set[str]:
    names: set[str] = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for key in keys:
            value = eqn.params.get(key)
            for sub in _rt3_sub_jaxprs(value):
                names |= _rt3_primitives_via(sub, keys)
    return names


@wrong(
    "iree_verdict",
    why="operations inside called jaxprs count, cond and while too; this follows only the "
    "`jaxpr`/`call_jaxpr` params (jit, scan, remat, custom_jvp), not cond's `branches` or while's "
    "`body_jaxpr`/`cond_jaxpr`: lambda p, a: lax.cond(p, jnp.linalg.cholesky, lambda a: a, a) is "
    "'lapack', not 'runs'",
)
def _rt3_iree_verdict_no_branches(jaxpr) -> str:
    inner = jaxpr.jaxpr
    prims = _rt3_primitives_via(inner, ("jaxpr", "call_jaxpr"))
    if prims & _rt3_CALLBACKS:
        return "export"
    if "sharding_constraint" in prims or any(map(_rt3_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    if prims & _rt3_LAPACK:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'sdy' comes before 'lapack' (IREE fails on parsing the sdy dialect before legalizing); this "
    "checks LAPACK first, so f(key, a) = jnp.linalg.solve(a, jax.random.normal(key, (n,))) with a "
    "typed key is 'sdy', not 'lapack'",
)
def _rt3_iree_verdict_lapack_first(jaxpr) -> str:
    inner = jaxpr.jaxpr
    prims = _rt3_primitives(inner)
    if prims & _rt3_CALLBACKS:
        return "export"
    if prims & _rt3_LAPACK:
        return "lapack"
    if "sharding_constraint" in prims or any(map(_rt3_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    return "runs"


@wrong(
    "iree_verdict",
    why="every LAPACK factorization and every host callback counts; this knows only the bank's "
    "primitives (lu, cholesky, eigh, triangular_solve; pure_callback, debug print), so "
    "jnp.linalg.qr or jnp.linalg.svd ('lapack') and an io_callback ('export') come out 'runs'",
)
def _rt3_iree_verdict_bank_primitives(jaxpr) -> str:
    inner = jaxpr.jaxpr
    prims = _rt3_primitives(inner)
    if prims & {"pure_callback", "debug_callback", "debug_print"}:
        return "export"
    if "sharding_constraint" in prims or any(map(_rt3_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    if prims & {"lu", "cholesky", "eigh", "triangular_solve"}:
        return "lapack"
    return "runs"


# ---------------------------------------------------------------------------------------------
# Task 6: export_facts
# ---------------------------------------------------------------------------------------------


def _rt3_week4_version() -> str:
    from jax._src.lib.mlir.dialects import hlo  # the version jax.export writes for

    return str(
        hlo.get_version_from_compatibility_requirement(hlo.StablehloCompatibilityRequirement.WEEK_4)
    )


@wrong(
    "export_facts",
    why="the StableHLO version is the one the blob's bytecode was written for; this returns the "
    "version this jax targets when it exports (4-week compatibility window), right on every blob "
    "this jax makes, wrong on a blob written by another jax release or for another target "
    "(e.g. an Exported whose mlir_module_serialized says StableHLO_v1.16.3)",
)
def _rt3_export_facts_library_version(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    return (
        _rt3_week4_version(),
        int(exported.calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


@wrong(
    "export_facts",
    why="the calling-convention version is the blob's; this reads this process's "
    "jax_export_calling_convention_version setting (10), wrong on a blob exported with version 9 "
    "(jax.config.update('jax_export_calling_convention_version', 9) before exporting)",
)
def _rt3_export_facts_config_convention(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    return (
        _rt3_stablehlo_version(exported),
        int(jax.config.jax_export_calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


@wrong(
    "export_facts",
    why="platforms come in the order given at export; this sorts them, so an export with "
    "platforms=('tpu', 'cpu') comes back ('cpu', 'tpu')",
)
def _rt3_export_facts_sorted_platforms(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    return (
        _rt3_stablehlo_version(exported),
        int(exported.calling_convention_version),
        tuple(sorted(p.lower() for p in exported.platforms)),
    )


# ---------------------------------------------------------------------------------------------
# Task 7: batch_polymorphic
# ---------------------------------------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="every other dimension stays the example's; this writes 'b, <last dim>', right for a "
    "rank-2 example (every README program) but wrong for a rank-3 example such as (4, 16, 32) "
    "(export fails or has rank 2) and a rank-1 example (8,) (exported as (b, 8))",
)
def _rt3_batch_polymorphic_last_dim(f, example: jax.Array) -> jax.export.Exported:
    shape = jax.export.symbolic_shape(f"b, {example.shape[-1]}")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="the dtype stays the example's; this exports a float32 input whatever the example is, "
    "wrong on a bfloat16 or int32 example (e.g. jnp.ones((8, 64), jnp.bfloat16))",
)
def _rt3_batch_polymorphic_float32(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b", *map(str, example.shape[1:])])
    shape = jax.export.symbolic_shape(dims)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, jnp.float32))


@wrong(
    "batch_polymorphic",
    why="only the leading dimension is symbolic; this makes symbolic every dimension whose size "
    "equals the example's batch size, so a square example (64, 64) exports as (b, b) and a "
    "batch of 3 rows of 64 is refused: wrong on any example with a row length equal to its batch",
)
def _rt3_batch_polymorphic_by_value(f, example: jax.Array) -> jax.export.Exported:
    batch = example.shape[0]
    dims = ", ".join("b" if d == batch else str(d) for d in example.shape)
    shape = jax.export.symbolic_shape(dims)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


# ---------------------------------------------------------------------------------------------
# Task 8: portable_solve
# ---------------------------------------------------------------------------------------------


@wrong(
    "portable_solve",
    why="the export must hold no custom call; jnp.linalg.inv is not a 'solve' but is LU-based "
    "(getrf/getri LAPACK custom calls on CPU), which IREE refuses: wrong on every input, e.g. "
    "programs.spd_system(np.random.default_rng(0), 8, None)",
)
def _rt3_portable_solve_inverse(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.linalg.inv(a) @ b


@wrong(
    "portable_solve",
    why="relative error <= 1e-3 for n up to 64 with condition 100; a fixed 20 conjugate-gradient "
    "steps is exact for n <= 20 and fine near n = 40, but leaves 8e-3 at n = 64: wrong on "
    "programs.spd_system(np.random.default_rng(0), 64, None)",
)
def _rt3_portable_solve_cg_20_steps(a: jax.Array, b: jax.Array) -> jax.Array:
    return _rt3_cg(a, b, 20).astype(b.dtype)


@wrong(
    "portable_solve",
    why="the bound is on the error, not the residual; stopping CG at a relative residual of 1e-3 "
    "(jax.scipy.sparse.linalg.cg(tol=1e-3)) allows an error up to cond * 1e-3 = 0.1: 5e-3 on "
    "programs.spd_system(np.random.default_rng(15), 64, None)",
)
def _rt3_portable_solve_residual_tolerance(a: jax.Array, b: jax.Array) -> jax.Array:
    x, _ = jax.scipy.sparse.linalg.cg(lambda v: a @ v, b, tol=1e-3)
    return x.astype(b.dtype)
