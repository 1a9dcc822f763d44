"""Red-team wrong answers for phase 15, written from the contract only.

Helpers carry an `_rt15_` prefix so that, rebound into a copy of the reference module, they
never resolve to one of the reference's own names.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

_RT15_FLAGS = ["--iree-llvmcpu-target-cpu=generic"]


def _rt15_vmfb(f, args):
    import iree.compiler as ireec

    exported = jax.export.export(jax.jit(f))(*args)
    return ireec.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=list(_RT15_FLAGS),
    )


def _rt15_call(vmfb, args):
    import iree.runtime as rt

    context = rt.SystemContext(config=rt.Config("local-task"))
    module = rt.VmModule.copy_buffer(context.instance, vmfb)
    context.add_vm_module(module)
    return context.modules[module.name]["main"](*(np.asarray(a) for a in args))


# ---- task 1: iree_run -------------------------------------------------------------------------


@wrong(
    "iree_run",
    why="every output in the order of jax.tree.leaves(f(*args)): turns the call's result into a "
    "list with list(result), which for a single-output f iterates the rows of the one array; "
    "wrong on programs.mlp (one f32[32,16] output -> 32 arrays of shape (16,))",
)
def iree_run_list_of_result(f, *args):
    result = _rt15_call(_rt15_vmfb(f, args), args)
    return [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in list(result)]


@wrong(
    "iree_run",
    why="the dtype JAX's would have: casts every argument to float32 before exporting, so an "
    "int32 program comes back as float32; wrong on programs.int_matmul (int32 a @ b + 1) and on "
    "the bf16 arguments of programs.projections",
)
def iree_run_float32_args(f, *args):
    args32 = [np.asarray(a, np.float32) for a in args]
    result = _rt15_call(_rt15_vmfb(f, args32), args32)
    outputs = result if isinstance(result, (list, tuple)) else [result]
    return [np.asarray(o.to_host()) for o in outputs]


@wrong(
    "iree_run",
    why="'Nothing may be computed by XLA': calls f(*args) eagerly to learn the output tree and "
    "dtypes and casts IREE's outputs to them, so XLA compiles and runs f; wrong on every input "
    "(e.g. programs.mlp), the values look right",
)
def iree_run_shapes_from_jax(f, *args):
    want = jax.tree.leaves(f(*args))
    result = _rt15_call(_rt15_vmfb(f, args), args)
    outputs = result if isinstance(result, (list, tuple)) else [result]
    return [
        np.asarray(o.to_host()).astype(w.dtype).reshape(w.shape)
        for o, w in zip(outputs, want, strict=True)
    ]


# ---- task 2: agreement_rtol -------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="max|iree-jax|/max|jax| must not exceed it on any draw: one machine epsilon allows one "
    "rounding, but a reordered reduction and another tanh/exp cost several; wrong on float32 "
    "layernorm_softmax (measured 5.79e-07 > eps 1.19e-07)",
)
def agreement_rtol_one_eps(dtype):
    return float(jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="must hold on any draw: 4 eps ('a few roundings') is under what was measured in float32; "
    "wrong on float32 layernorm_softmax (5.79e-07 > 4 * 1.19e-07 = 4.77e-07)",
)
def agreement_rtol_four_eps(dtype):
    return float(4 * jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="must hold on any draw: the rule-of-thumb table {float32: 1e-6, bfloat16: 1e-2} ignores "
    "that bfloat16's epsilon is 2**-7; wrong on bfloat16 layernorm_softmax (0.0209 > 0.01)",
)
def agreement_rtol_decimal_table(dtype):
    return 1e-6 if dtype == "float32" else 1e-2


@wrong(
    "agreement_rtol",
    why="no looser than 32 * eps: 64 eps 'to be safe' is twice the allowed bound; wrong on "
    "float32 (64 * 1.19e-07 = 7.6e-06 > 3.8e-06) and bfloat16 (0.5 > 0.25)",
)
def agreement_rtol_too_loose(dtype):
    return float(64 * jnp.finfo(dtype).eps)


# ---- task 3: matmul_flops ---------------------------------------------------------------------

_RT15_EXPORT = re.compile(r"flow\.executable\.export\s+(?:public\s+|private\s+)?@([\w$.-]+)")


def _rt15_exports(text):
    return _RT15_EXPORT.findall(text)


@wrong(
    "matmul_flops",
    why="a batch_matmul BxMxNxK, matvec MxK and vecmat NxK count too: counts only kind "
    "'matmul'; wrong on recorded/attention.mlir (two batch_matmuls, 0 counted) and "
    "recorded/projections.mlir (matvec and vecmat missed)",
)
def matmul_flops_matmul_only(flow_text):
    total = 0
    for name in _rt15_exports(flow_text):
        m = re.search(r"_dispatch_\d+_matmul_(\d+)x(\d+)x(\d+)_", name)
        if m:
            total += 2 * int(m[1]) * int(m[2]) * int(m[3])
    return total


@wrong(
    "matmul_flops",
    why="a batch_matmul BxMxNxK does 2*B*M*N*K: takes the last three sizes of every contraction "
    "name as M, N, K and drops the batch; wrong on recorded/attention.mlir (4x too few for both "
    "batch_matmuls)",
)
def matmul_flops_drops_batch(flow_text):
    total = 0
    for d in iree.read_flow(flow_text):
        if None in d.sizes:
            continue
        if d.kind in ("matmul", "batch_matmul"):
            m, n, k = d.sizes[-3:]
            total += 2 * m * n * k
        elif d.kind in ("matvec", "vecmat"):
            total += 2 * d.sizes[0] * d.sizes[1]
    return total


@wrong(
    "matmul_flops",
    why="a dispatch whose dims hold a dynamic size (D) counts 0: reads the sizes with \\d+ and "
    "multiplies the static ones, so matmul_Dx128x64 counts 2*128*64; wrong on the flow listing "
    "of a batch-polymorphic dense layer (x: f32[b,64] @ w: f32[64,128])",
)
def matmul_flops_skips_dynamic_dims(flow_text):
    total = 0
    for name in _rt15_exports(flow_text):
        m = re.search(
            r"_dispatch_\d+_(batch_matmul|matmul|matvec|vecmat)_((?:\d+|D)(?:x(?:\d+|D))*)", name
        )
        if not m:
            continue
        product = 1
        for part in m[2].split("x"):
            if part != "D":
                product *= int(part)
        total += 2 * product
    return total


@wrong(
    "matmul_flops",
    why="flops from the dispatches' names, each dispatch once: findall over the whole text finds "
    "each name three times (export, func.func, flow.dispatch call); wrong on recorded/mlp.mlir "
    "(3x the flops)",
)
def matmul_flops_counts_every_mention(flow_text):
    total = 0
    pattern = r"_dispatch_\d+_(batch_matmul|matmul|matvec|vecmat)_(\d+(?:x\d+)+)_"
    for _, dims in re.findall(pattern, flow_text):
        product = 1
        for part in dims.split("x"):
            product *= int(part)
        total += 2 * product
    return total


# ---- task 4: merged_by_iree -------------------------------------------------------------------

_RT15_MATMUL_KINDS = ("matmul", "batch_matmul", "matvec", "vecmat")
_RT15_OP_NAME = re.compile(r'op_name="([^"]*)"')


def _rt15_names_of(instruction):
    found = set()
    for op_name in _RT15_OP_NAME.findall(instruction.attributes_text):
        for part in op_name.split(";"):
            if part:
                found.add(part.rsplit("/", 1)[-1])
    return found


def _rt15_reach(module, roots, nested=True):
    seen, pending, out = set(), list(roots), []
    while pending:
        name = pending.pop()
        comp = module.computation(name)
        if comp is None or comp.name in seen:
            continue
        seen.add(comp.name)
        out.append(comp)
        if nested:
            pending.extend(comp.calls)
    return out


def _rt15_xla_names(hlo_text, *, nested=True, entry_dots=True, fusions=True, split=True):
    module = parse_hlo(hlo_text)
    names = set()
    for instruction in module.entry.instructions:
        comps = _rt15_reach(module, instruction.called_computations, nested)
        holds_dot = instruction.opcode == "dot" or any(
            i.opcode == "dot" for c in comps for i in c.instructions
        )
        if not holds_dot:
            continue
        if instruction.opcode == "dot" and not entry_dots:
            continue
        if instruction.opcode != "dot" and not fusions:
            continue
        group = [instruction] if instruction.opcode == "dot" else []
        group += [i for c in comps for i in c.instructions]
        for i in group:
            if split:
                names |= _rt15_names_of(i)
            else:
                for op_name in _RT15_OP_NAME.findall(i.attributes_text):
                    names.add(op_name.rsplit("/", 1)[-1])
    return names


def _rt15_iree_names(flow_text, kinds=_RT15_MATMUL_KINDS):
    names = set()
    for d in iree.read_flow(flow_text):
        if kinds is None or d.kind in kinds:
            names |= set(d.sources)
    return names


def _rt15_answer(iree_names, xla_names):
    iree_names = set(iree_names) - {"dot_general"}
    xla_names = set(xla_names) - {"dot_general"}
    return iree_names - xla_names, xla_names - iree_names


@wrong(
    "merged_by_iree",
    why="IREE's matmul kernels are only the dispatches of kind matmul/batch_matmul/matvec/vecmat: "
    "takes the names of every dispatch; wrong on layernorm_softmax (no matmul at all, yet "
    "reduction/softmax names appear) and on attention (the softmax dispatch's exp, reduce_max)",
)
def merged_by_iree_every_dispatch(hlo_text, flow_text):
    return _rt15_answer(_rt15_iree_names(flow_text, None), _rt15_xla_names(hlo_text))


@wrong(
    "merged_by_iree",
    why="matmul kernels include batch_matmul, matvec and vecmat: keeps only kind == 'matmul'; "
    "wrong on attention (the batch_matmul holding the 1/sqrt(d) div is missed, IREE side empty)",
)
def merged_by_iree_matmul_kind_only(hlo_text, flow_text):
    return _rt15_answer(_rt15_iree_names(flow_text, ("matmul",)), _rt15_xla_names(hlo_text))


@wrong(
    "merged_by_iree",
    why="XLA's matmul kernels are the ENTRY instructions that are a dot or whose called "
    "computations hold one: keeps only the fusions and skips a plain ENTRY dot; wrong on "
    "train_step (ENTRY dot.1 / dot named 'transpose' is dropped from XLA's side)",
)
def merged_by_iree_fusions_only(hlo_text, flow_text):
    return _rt15_answer(_rt15_iree_names(flow_text), _rt15_xla_names(hlo_text, entry_dots=False))


@wrong(
    "merged_by_iree",
    why="an operation is named by the LAST '/'-separated part of its op_name: keeps XLA's whole "
    "op_name ('jit(mlp)/dot_general'), so nothing matches IREE's short names and dot_general is "
    "not left out; wrong on programs.mlp (XLA side {'jit(mlp)/dot_general'} instead of empty)",
)
def merged_by_iree_full_op_names(hlo_text, flow_text):
    module = parse_hlo(hlo_text)
    xla = set()
    for instruction in module.entry.instructions:
        comps = _rt15_reach(module, instruction.called_computations)
        group = [instruction] if instruction.opcode == "dot" else []
        if instruction.opcode == "dot" or any(
            i.opcode == "dot" for c in comps for i in c.instructions
        ):
            group += [i for c in comps for i in c.instructions]
        for i in group:
            for op_name in _RT15_OP_NAME.findall(i.attributes_text):
                xla |= {part for part in op_name.split(";") if part}
    return _rt15_answer(_rt15_iree_names(flow_text), xla)


# ---- task 5: iree_verdict ---------------------------------------------------------------------

_RT15_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_RT15_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "triangular_solve",
    "qr",
    "householder_product",
    "geqrf",
    "svd",
    "eig",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
}


def _rt15_subjaxprs(params):
    for value in params.values():
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if hasattr(item, "jaxpr") and hasattr(item, "consts"):  # ClosedJaxpr
                yield item.jaxpr
            elif hasattr(item, "eqns"):  # Jaxpr
                yield item


def _rt15_prims(jaxpr, nested=True):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "consts") else jaxpr
    found = set()
    for eqn in inner.eqns:
        found.add(eqn.primitive.name)
        if nested:
            for sub in _rt15_subjaxprs(eqn.params):
                found |= _rt15_prims(sub, True)
    return found


def _rt15_is_key(var):
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _rt15_verdict(
    jaxpr,
    *,
    nested=True,
    callbacks=_RT15_CALLBACKS,
    lapack=_RT15_LAPACK,
    key_in=True,
    key_out=True,
    key_prims=False,
    order=("export", "sdy", "lapack"),
):
    inner = jaxpr.jaxpr
    prims = _rt15_prims(jaxpr, nested)
    checks = {
        "export": bool(prims & callbacks),
        "sdy": "sharding_constraint" in prims
        or (key_in and any(_rt15_is_key(v) for v in inner.invars))
        or (key_out and any(_rt15_is_key(v) for v in inner.outvars))
        or (key_prims and bool(prims & {"random_seed", "random_wrap", "random_bits"})),
        "lapack": bool(prims & lapack),
    }
    for verdict in order:
        if checks[verdict]:
            return verdict
    return "runs"


@wrong(
    "iree_verdict",
    why="operations inside called jaxprs count: walks the top-level equations only; wrong on "
    "BANK 'solve' (lu sits inside the pjit/custom_linear_solve of jnp.linalg.solve: says 'runs', "
    "IREE says 'lapack')",
)
def iree_verdict_top_level_only(jaxpr):
    return _rt15_verdict(jaxpr, nested=False)


@wrong(
    "iree_verdict",
    why="'sdy' is for a typed key among the arguments or results, not a key made inside: flags "
    "any random_seed/random_wrap/random_bits primitive; wrong on BANK 'int_seed' (key from an int "
    "seed inside the function: 'runs')",
)
def iree_verdict_any_key_primitive(jaxpr):
    return _rt15_verdict(jaxpr, key_prims=True)


@wrong(
    "iree_verdict",
    why="a debug print is a host callback jax.export refuses: only pure_callback/io_callback are "
    "matched, so jax.debug.print falls through to 'runs'; wrong on BANK 'debug_print'",
)
def iree_verdict_misses_debug_print(jaxpr):
    return _rt15_verdict(jaxpr, callbacks={"pure_callback", "io_callback"})


@wrong(
    "iree_verdict",
    why="linalg solves on CPU call LAPACK, triangular solves (trsm) too: the LAPACK list holds "
    "only factorizations (lu, cholesky, eigh, qr, svd); wrong on BANK 'triangular_solve'",
)
def iree_verdict_no_triangular(jaxpr):
    return _rt15_verdict(jaxpr, lapack=_RT15_LAPACK - {"triangular_solve"})


@wrong(
    "iree_verdict",
    why="a typed PRNG key among the results makes 'sdy' too: checks the arguments only; wrong on "
    "f = lambda s: jax.random.split(jax.random.key(s)) (returns typed keys)",
)
def iree_verdict_key_args_only(jaxpr):
    return _rt15_verdict(jaxpr, key_out=False)


@wrong(
    "iree_verdict",
    why="the verdicts are ordered export, then sdy, then lapack: checks lapack first; wrong on "
    "f(x) = jnp.linalg.solve(x, x) + jax.pure_callback(np.sin, ...) ('export' expected)",
)
def iree_verdict_lapack_first(jaxpr):
    return _rt15_verdict(jaxpr, order=("lapack", "export", "sdy"))


# ---- task 6: export_facts ---------------------------------------------------------------------


def _rt15_module_version(exported):
    found = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", bytes(exported.mlir_module_serialized))
    return found[1].decode() if found else ""


@wrong(
    "export_facts",
    why="the StableHLO version of the module's bytecode: takes the first MAJOR.MINOR.PATCH in "
    "the whole serialized blob, which is the jax version the blob records ('0.12.0' of "
    "0.12.0.1); wrong on every blob here (the module says 1.18.0)",
)
def export_facts_first_version_in_blob(blob):
    exported = jax.export.deserialize(blob)
    found = re.search(rb"(\d+\.\d+\.\d+)", bytes(blob))
    return (
        found[1].decode() if found else "",
        int(exported.calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


@wrong(
    "export_facts",
    why="platforms in the order given at export: sorts them; wrong on a blob exported with "
    "platforms=('tpu', 'cpu') (gives ('cpu', 'tpu'))",
)
def export_facts_sorted_platforms(blob):
    exported = jax.export.deserialize(blob)
    return (
        _rt15_module_version(exported),
        int(exported.calling_convention_version),
        tuple(sorted(p.lower() for p in exported.platforms)),
    )


@wrong(
    "export_facts",
    why="its (the blob's) calling-convention version: returns the newest this jax supports "
    "(jax.export.maximum_supported_calling_convention_version); wrong on a blob exported with "
    "jax_export_calling_convention_version=9 (answers 10)",
)
def export_facts_supported_convention(blob):
    exported = jax.export.deserialize(blob)
    return (
        _rt15_module_version(exported),
        int(jax.export.maximum_supported_calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


# ---- task 7: batch_polymorphic ----------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="every other dimension stays that of example: hard-codes the hint's 'b, 64'; wrong on an "
    "example of shape (5, 32) or (3, 4, 8) (export fails to match or the shape is wrong)",
)
def batch_polymorphic_hardcoded_64(f, example):
    (b,) = jax.export.symbolic_shape("b")
    spec = jax.ShapeDtypeStruct((b, 64), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


@wrong(
    "batch_polymorphic",
    why="only the leading dimension is symbolic, the others stay example's: makes every "
    "dimension symbolic; wrong on any example, e.g. f = jnp.tanh on f32[8, 64] (in_avals "
    "(b, d1) instead of (b, 64))",
)
def batch_polymorphic_all_symbolic(f, example):
    names = ", ".join(["b"] + [f"d{i}" for i in range(1, example.ndim)])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(names), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


@wrong(
    "batch_polymorphic",
    why="the dtype stays that of example: builds the ShapeDtypeStruct with float32; wrong on a "
    "bfloat16 or int32 example (exported in_avals say float32)",
)
def batch_polymorphic_float32(f, example):
    dims = ", ".join(["b"] + [str(d) for d in example.shape[1:]])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), jnp.float32)
    return jax.export.export(jax.jit(f))(spec)


# ---- task 8: portable_solve -------------------------------------------------------------------


def _rt15_cg(a, b, steps):
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    x = jnp.zeros_like(rhs)
    r = rhs
    p = r
    rs = jnp.sum(r * r, axis=0)
    for _ in range(steps):
        ap = a @ p
        alpha = rs / jnp.maximum(jnp.sum(p * ap, axis=0), 1e-30)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r, axis=0)
        p = r + (rs_new / jnp.maximum(rs, 1e-30)) * p
        rs = rs_new
    return x, vector


@wrong(
    "portable_solve",
    why="relative error at most 1e-3 for condition number up to 100 and n up to 64: stops "
    "conjugate gradients after a fixed 10 steps; wrong on spd_system(rng, 64, None) (error ~0.2)",
)
def portable_solve_ten_steps(a, b):
    x, vector = _rt15_cg(a, b, 10)
    return x[:, 0] if vector else x


@wrong(
    "portable_solve",
    why="the export holds no custom call: inv(a) @ b avoids jnp.linalg.solve but inv is an LU "
    "(lapack getrf) custom call on CPU, which IREE refuses; wrong on every input",
)
def portable_solve_inverse(a, b):
    return jnp.linalg.inv(a) @ b


@wrong(
    "portable_solve",
    why="the result has b's shape: works on b as (n, k) and returns (n, 1) for a vector b; wrong "
    "on spd_system(rng, 8, None) (shape (8, 1), not (8,))",
)
def portable_solve_column_shape(a, b):
    x, _ = _rt15_cg(a, b, 2 * a.shape[0])
    return x


@wrong(
    "portable_solve",
    why="relative error of x at most 1e-3: stops CG when the relative residual is below 1e-3, "
    "but the error can be up to cond(a) times larger; wrong on spd_system(default_rng(s), 64, "
    "None) for some seed in 0..4 (error 2.4e-3)",
)
def portable_solve_residual_tolerance(a, b):
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    bnorm = jnp.sqrt(jnp.sum(rhs * rhs, axis=0))

    def cond(state):
        i, _, r, _, _ = state
        return (i < 500) & (jnp.max(jnp.sqrt(jnp.sum(r * r, axis=0)) / bnorm) >= 1e-3)

    def body(state):
        i, x, r, p, rs = state
        ap = a @ p
        alpha = rs / jnp.maximum(jnp.sum(p * ap, axis=0), 1e-30)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r, axis=0)
        p = r + (rs_new / jnp.maximum(rs, 1e-30)) * p
        return i + 1, x, r, p, rs_new

    zero = jnp.zeros_like(rhs)
    state = (0, zero, rhs, rhs, jnp.sum(rhs * rhs, axis=0))
    x = jax.lax.while_loop(cond, body, state)[1]
    return x[:, 0] if vector else x


@wrong(
    "portable_solve",
    why="n from 1 up: n - 1 CG steps (off by one, 'the last step is exact anyway'); wrong on n = 1 "
    "(no step: x = 0, relative error 1) and n = 2",
)
def portable_solve_n_minus_one(a, b):
    x, vector = _rt15_cg(a, b, a.shape[0] - 1)
    return x[:, 0] if vector else x
