"""Red-team wrong answers for phase 15, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------- helpers (not answers)


def _rt5_iree_call(f, args, cpu="generic", arg_dtype=None):
    import iree.compiler as ireec
    import iree.runtime as ireert

    specs = [jax.ShapeDtypeStruct(np.shape(a), arg_dtype or np.asarray(a).dtype) for a in args]
    exported = jax.export.export(jax.jit(f))(*specs)
    vmfb = ireec.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=[f"--iree-llvmcpu-target-cpu={cpu}"],
    )
    module = ireert.load_vm_flatbuffer(vmfb, driver="local-task")
    call_args = [np.asarray(a, arg_dtype) if arg_dtype else np.asarray(a) for a in args]
    result = module.main(*call_args)
    if not isinstance(result, (tuple, list)):
        result = (result,)
    return [np.asarray(r.to_host()) for r in result], exported


# ---------------------------------------------------------------- iree_run


@wrong(
    "iree_run",
    why="the export must be for the arguments' own dtypes; exporting every argument as float32 "
    "changes the program: wrong on FLOWS['int_matmul'] (int32 a @ b + 1 returns float32, and "
    "large int32 products round) and on bf16 arguments",
)
def _rt5_iree_run_all_float32(f, *args):
    outs, _ = _rt5_iree_call(f, args, arg_dtype=np.float32)
    return outs


@wrong(
    "iree_run",
    why="outputs must have JAX's dtype; converting every output to float32 (to make the "
    "comparison 'safe') is wrong on int32 outputs (FLOWS['int_matmul']) and bfloat16 outputs "
    "(f(x)=x*2 on a bf16 x) and on a bool output",
)
def _rt5_iree_run_outputs_as_float32(f, *args):
    outs, _ = _rt5_iree_call(f, args)
    return [o.astype(np.float32) for o in outs]


@wrong(
    "iree_run",
    why="every output in jax.tree.leaves order, with JAX's shape: flattening 0-d outputs to "
    "shape (1,) (np.atleast_1d 'so it is an array') is wrong on a scalar output such as "
    "lambda x: (x * 2, x.sum())",
)
def _rt5_iree_run_atleast_1d(f, *args):
    outs, _ = _rt5_iree_call(f, args)
    return [np.atleast_1d(o) for o in outs]


# ---------------------------------------------------------------- agreement_rtol


@wrong(
    "agreement_rtol",
    why="the tolerance is per dtype; 32 float32 epsilons (3.8e-6) for every dtype is far too "
    "tight for bfloat16, whose recorded worst is 0.0244: wrong on agreement_rtol('bfloat16')",
)
def _rt5_agreement_rtol_f32_eps_everywhere(dtype):
    return float(32 * jnp.finfo(jnp.float32).eps)


@wrong(
    "agreement_rtol",
    why="must not be exceeded on any fresh draw; 4 eps of float32 is 4.8e-7, below the "
    "recorded float32 worst 9.59e-7 (layernorm_softmax): wrong on agreement_rtol('float32')",
)
def _rt5_agreement_rtol_four_eps(dtype):
    return float(4 * jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="must be no looser than 32 eps of the dtype; 64 eps (a 'safety factor of two') breaks "
    "that bound for both float32 (7.6e-6 > 3.8e-6) and bfloat16 (0.5 > 0.25)",
)
def _rt5_agreement_rtol_64_eps(dtype):
    return float(64 * jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="a bfloat16 tolerance of a fixed 1e-2 ('two decimal digits') is below bfloat16's "
    "recorded worst 0.0244 (layernorm_softmax): wrong on agreement_rtol('bfloat16')",
)
def _rt5_agreement_rtol_decimal_digits(dtype):
    return 1e-5 if dtype == "float32" else 1e-2


# ---------------------------------------------------------------- matmul_flops

_rt5_KINDS = {"matmul", "batch_matmul", "matvec", "vecmat"}


def _rt5_flops_of(kind, sizes, dynamic_as=None):
    dims = []
    for s in sizes:
        if s is None:
            if dynamic_as is None:
                return 0
            s = dynamic_as
        dims.append(s)
    if kind == "matmul" and len(dims) == 3:
        m, n, k = dims
        return 2 * m * n * k
    if kind == "batch_matmul" and len(dims) == 4:
        b, m, n, k = dims
        return 2 * b * m * n * k
    if kind in ("matvec", "vecmat") and len(dims) == 2:
        return 2 * dims[0] * dims[1]
    return 0


def _rt5_dispatch_counts(flow_text):
    counts = {}
    for m in re.finditer(r"flow\.dispatch\s+@[\w$.-]+::@([\w$.-]+)", flow_text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


@wrong(
    "matmul_flops",
    why="a dispatch whose dims hold a dynamic size (D) counts 0; reading D as 1 counts "
    "2*M*N for a matmul named matmul_Dx128x64_f32 (a batch-polymorphic export of mlp)",
)
def _rt5_matmul_flops_dynamic_as_one(flow_text):
    counts = _rt5_dispatch_counts(flow_text)
    total = 0
    for d in iree.read_flow(flow_text):
        total += counts.get(d.name, 0) * _rt5_flops_of(d.kind, d.sizes, dynamic_as=1)
    return total


@wrong(
    "matmul_flops",
    why="kinds IREE names otherwise (matvec_like, matmul_like, batch_matmul_transpose_b...) "
    "count 0; matching the kind by prefix counts them: wrong on a listing with a "
    "`matvec_like_64x32_f32` dispatch",
)
def _rt5_matmul_flops_kind_prefix(flow_text):
    counts = _rt5_dispatch_counts(flow_text)
    total = 0
    for d in iree.read_flow(flow_text):
        base = next(
            (k for k in ("batch_matmul", "matmul", "matvec", "vecmat") if d.kind.startswith(k)),
            None,
        )
        if base is not None:
            total += counts.get(d.name, 0) * _rt5_flops_of(base, d.sizes)
    return total


@wrong(
    "matmul_flops",
    why="every flow.dispatch op counts, wherever it is; counting only lines of the form "
    "`    %5 = flow.dispatch` (4-space indent, main's top level) misses "
    "dispatches nested in scf.if / scf.while regions "
    "(a lax.cond or while_loop around a matmul)",
)
def _rt5_matmul_flops_top_level_lines(flow_text):
    counts = {}
    for m in re.finditer(
        r"(?m)^    %\d+(?::\d+)? = flow\.dispatch @[\w$.-]+::@([\w$.-]+)\(", flow_text
    ):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    total = 0
    for d in iree.read_flow(flow_text):
        total += counts.get(d.name, 0) * _rt5_flops_of(d.kind, d.sizes)
    return total


# ---------------------------------------------------------------- merged_by_iree

_rt5_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


def _rt5_names_of(instruction, split_semicolons=True):
    meta = instruction.attribute("metadata")
    if not meta:
        return set()
    m = _rt5_OP_NAME.search(meta)
    if not m:
        return set()
    parts = m.group(1).split(";") if split_semicolons else [m.group(1)]
    return {p.strip().split("/")[-1] for p in parts if p.strip()}


def _rt5_called(module, names, nested=True):
    out = []
    seen = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen or name not in module:
            continue
        seen.add(name)
        comp = module[name]
        out.append(comp)
        if nested:
            for ins in comp:
                stack.extend(ins.called_computations)
    return out


def _rt5_xla_side(hlo_text, split_semicolons=True, nested=True):
    module = parse_hlo(hlo_text)
    names = set()
    for ins in module.entry:
        comps = _rt5_called(module, ins.called_computations, nested=nested)
        has_dot = ins.opcode == "dot" or any(i.opcode == "dot" for c in comps for i in c)
        if not has_dot:
            continue
        if ins.opcode == "dot":
            names |= _rt5_names_of(ins, split_semicolons)
        for c in comps:
            for i in c:
                names |= _rt5_names_of(i, split_semicolons)
    return names


def _rt5_iree_side(flow_text, kinds=frozenset(_rt5_KINDS)):
    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in kinds:
            names |= set(d.sources)
    return names


def _rt5_answer(iree_names, xla_names):
    iree_names = set(iree_names) - {"dot_general"}
    xla_names = set(xla_names) - {"dot_general"}
    return iree_names - xla_names, xla_names - iree_names


@wrong(
    "merged_by_iree",
    why="XLA may join several names in one op_name with `;`, each counts; taking the last "
    "`/` part of the whole op_name keeps only the last joined name: wrong on an HLO fusion "
    'with op_name="jit(mlp)/dot_general;jit(mlp)/add" (the add is lost)',
)
def _rt5_merged_by_iree_no_semicolon_split(hlo_text, flow_text):
    return _rt5_answer(_rt5_iree_side(flow_text), _rt5_xla_side(hlo_text, split_semicolons=False))


@wrong(
    "merged_by_iree",
    why="a kernel's called computations include nested fusions; looking only at the fusion's "
    "own computation misses a dot (and its neighbours' names) inside a nested fusion or a "
    "call inside the fused computation, e.g. an HLO where the dot sits in a fusion called "
    "from another fusion's computation",
)
def _rt5_merged_by_iree_one_level(hlo_text, flow_text):
    return _rt5_answer(_rt5_iree_side(flow_text), _rt5_xla_side(hlo_text, nested=False))


@wrong(
    "merged_by_iree",
    why="IREE's matmul kernels include matvec and vecmat dispatches; only matmul and "
    "batch_matmul misses a matvec that IREE fused with an add: wrong on FLOWS['projections'] "
    "style programs (m @ v + c) whose matvec dispatch holds the add",
)
def _rt5_merged_by_iree_no_matvec(hlo_text, flow_text):
    return _rt5_answer(
        _rt5_iree_side(flow_text, kinds=frozenset({"matmul", "batch_matmul"})),
        _rt5_xla_side(hlo_text),
    )


# ---------------------------------------------------------------- iree_verdict

_rt5_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_rt5_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "triangular_solve",
    "qr",
    "geqrf",
    "svd",
    "eig",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
    "householder_product",
}


def _rt5_subjaxprs(params):
    for value in params.values():
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, (tuple, list)):
                stack.extend(v)
            elif hasattr(v, "jaxpr") and hasattr(v, "consts"):
                yield v.jaxpr
            elif hasattr(v, "eqns"):
                yield v


def _rt5_eqns(jaxpr):
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    for e in inner.eqns:
        yield e
        for sub in _rt5_subjaxprs(e.params):
            yield from _rt5_eqns(sub)


def _rt5_is_key(aval):
    return "key<" in str(getattr(aval, "dtype", ""))


def _rt5_verdict(
    jaxpr, *, seed_is_sdy=False, all_linalg=False, trivial_mesh_ok=False, callback_by_name=False
):
    eqns = list(_rt5_eqns(jaxpr))
    names = [e.primitive.name for e in eqns]
    if callback_by_name:
        if any("callback" in n for n in names):
            return "export"
    elif any(n in _rt5_CALLBACKS for n in names):
        return "export"
    for e in eqns:
        if e.primitive.name == "qr" and e.params.get("pivoting"):
            return "export"
        if e.primitive.name in ("ormqr",):
            return "export"
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    avals = [v.aval for v in inner.invars] + [v.aval for v in inner.outvars]
    if any(_rt5_is_key(a) for a in avals):
        return "sdy"
    if seed_is_sdy and any(n in ("random_seed", "random_wrap") for n in names):
        return "sdy"
    for e in eqns:
        if e.primitive.name == "sharding_constraint":
            if trivial_mesh_ok:
                sharding = e.params.get("sharding")
                mesh = getattr(sharding, "mesh", None)
                if mesh is not None and getattr(mesh, "size", 2) == 1:
                    continue
            return "sdy"
    lapack = set(_rt5_LAPACK)
    if all_linalg:
        lapack |= {"symmetric_product", "lu_pivots_to_permutation"}
    if any(n in lapack for n in names):
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'sdy' is for a typed key among the arguments or results; a key made and consumed "
    "inside (random_seed of an int seed) leaves no Shardy op: wrong on BANK['int_seed'] "
    "(runs, predicted sdy)",
)
def _rt5_iree_verdict_seed_means_sdy(jaxpr):
    return _rt5_verdict(jaxpr, seed_is_sdy=True)


@wrong(
    "iree_verdict",
    why="only LAPACK custom calls are 'lapack'; symmetric_product and "
    "lu_pivots_to_permutation are jax.lax.linalg primitives XLA:CPU writes as plain StableHLO: "
    "wrong on BANK['linalg_without_lapack'] (runs, predicted lapack)",
)
def _rt5_iree_verdict_every_linalg_primitive(jaxpr):
    return _rt5_verdict(jaxpr, all_linalg=True)


@wrong(
    "iree_verdict",
    why="a sharding constraint is written as sdy.sharding_constraint whatever the mesh size; "
    "skipping a one-device mesh ('nothing to shard') is wrong on BANK['sharding_constraint'] "
    "(mesh of 1 device: sdy, predicted runs)",
)
def _rt5_iree_verdict_trivial_mesh_dropped(jaxpr):
    return _rt5_verdict(jaxpr, trivial_mesh_ok=True)


@wrong(
    "iree_verdict",
    why="jax.debug.print is a host callback export refuses, but its primitive is named "
    "debug_print, not *callback*: matching 'callback' in the primitive name is wrong on "
    "BANK['debug_print'] (export, predicted runs)",
)
def _rt5_iree_verdict_callback_in_name(jaxpr):
    return _rt5_verdict(jaxpr, callback_by_name=True)


# ---------------------------------------------------------------- export_facts


@wrong(
    "export_facts",
    why="the version is the one the blob's bytecode was written for; a fixed slice of the "
    "producer string (bytes 16..22, six characters as in 'v1.18.0') is wrong on a blob written "
    "for a version of another length, e.g. 1.9.3 (older jax) or 1.18.10",
)
def _rt5_export_facts_fixed_slice(blob):
    exp = jax.export.deserialize(blob)
    raw = exp.mlir_module_serialized
    version = raw[16:22].decode("ascii", "replace")
    return version, int(exp.calling_convention_version), tuple(p.lower() for p in exp.platforms)


@wrong(
    "export_facts",
    why="the version must be read from the artifact; the installed StableHLO's current "
    "version (1.22.0 here) is not what jax.export writes for (1.18.0, a compatibility window "
    "back): wrong on every blob, including one from jax.export.export(jax.jit(jnp.sin))",
)
def _rt5_export_facts_current_version(blob):
    from jax._src.lib.mlir.dialects import hlo

    exp = jax.export.deserialize(blob)
    return (
        str(hlo.get_current_version()),
        int(exp.calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


@wrong(
    "export_facts",
    why="platforms in the order given at export; sorting them is wrong on an export with "
    "platforms=('tpu', 'cpu') (returns ('cpu', 'tpu'))",
)
def _rt5_export_facts_sorted_platforms(blob):
    exp = jax.export.deserialize(blob)
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exp.mlir_module_serialized)
    version = m.group(1).decode() if m else ""
    return (
        version,
        int(exp.calling_convention_version),
        tuple(sorted(p.lower() for p in exp.platforms)),
    )


@wrong(
    "export_facts",
    why="the calling-convention version is the blob's own; reporting the newest this jax "
    "supports is wrong on a blob exported with an older one "
    "(jax_export_calling_convention_version=9)",
)
def _rt5_export_facts_max_cc(blob):
    exp = jax.export.deserialize(blob)
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exp.mlir_module_serialized)
    version = m.group(1).decode() if m else ""
    return (
        version,
        int(jax.export.maximum_supported_calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


# ---------------------------------------------------------------- batch_polymorphic


@wrong(
    "batch_polymorphic",
    why="every dimension but the leading one stays the example's; making them all symbolic "
    "(one symbol per axis) is wrong on any example of rank >= 2, e.g. f32[8, 64]",
)
def _rt5_batch_polymorphic_all_symbolic(f, example):
    names = ", ".join(f"d{i}" for i in range(example.ndim))
    shape = jax.export.symbolic_shape(names)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="the dtype stays the example's; hard-coding float32 is wrong on a bfloat16 or int32 "
    "example (e.g. a bf16[4, 16] batch)",
)
def _rt5_batch_polymorphic_float32(f, example):
    rest = ", ".join(str(d) for d in example.shape[1:])
    spec = "b" + (", " + rest if rest else "")
    shape = jax.export.symbolic_shape(spec)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, jnp.float32))


@wrong(
    "batch_polymorphic",
    why="every other dimension stays; the hint's 'b, 64' built as f'b, {shape[-1]}' drops the "
    "middle axes of a rank-3 example (f32[2, 8, 16] exports f32[b, 16]) and adds one to a "
    "rank-1 example",
)
def _rt5_batch_polymorphic_last_dim_only(f, example):
    shape = jax.export.symbolic_shape(f"b, {example.shape[-1]}")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="the leading dimension must be symbolic whatever the example's batch; keeping a batch "
    "of 1 concrete (a size-1 axis 'broadcasts anyway') gives a module for batch 1 only: wrong "
    "on an example of shape (1, 64)",
)
def _rt5_batch_polymorphic_unit_batch_concrete(f, example):
    if example.shape[0] == 1:
        return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(example.shape, example.dtype))
    spec = ", ".join(["b", *(str(d) for d in example.shape[1:])])
    shape = jax.export.symbolic_shape(spec)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


# ---------------------------------------------------------------- portable_solve


def _rt5_cg(a, b, steps, guard=True):
    x = jnp.zeros_like(b)
    r = b - a @ x
    p = r
    rr = jnp.sum(r * r, axis=0)

    def body(_, state):
        x, r, p, rr = state
        ap = a @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rr / jnp.where(pap > 0, pap, 1.0), 0.0) if guard else rr / pap
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rr > 0, rr_new / jnp.where(rr > 0, rr, 1.0), 0.0) if guard else rr_new / rr
        p = r + beta * p
        return x, r, p, rr_new

    x, *_ = jax.lax.fori_loop(0, steps, body, (x, r, p, rr))
    return x


@wrong(
    "portable_solve",
    why="relative error 1e-3 for condition numbers up to 100 and n up to 64; a fixed "
    "2*sqrt(cond)=20 CG steps is not enough when the spectrum spreads over [1, 100]: wrong on "
    "spd_system(rng, 64, None)",
)
def _rt5_portable_solve_cg_20_steps(a, b):
    return _rt5_cg(a, b, 20)


@wrong(
    "portable_solve",
    why="a relative error of 1e-3 needs a relative residual well below 1e-3; stopping when "
    "|r|^2 <= 1e-3 |b|^2 (a squared-norm test with an unsquared tolerance: relative residual "
    "0.03) leaves errors of ~1e-2: wrong on "
    "spd_system(rng, 64, 3)",
)
def _rt5_portable_solve_residual_stop(a, b):
    b2 = b.reshape(b.shape[0], -1)
    bnorm = jnp.sqrt(jnp.sum(b2 * b2, axis=0))

    def cond(state):
        i, x, r, p, rr = state
        return jnp.logical_and(i < 4 * a.shape[0] + 8, jnp.any(rr > 1e-3 * bnorm * bnorm))

    def body(state):
        i, x, r, p, rr = state
        ap = a @ p
        alpha = rr / jnp.sum(p * ap, axis=0)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r, axis=0)
        p = r + (rr_new / rr) * p
        return i + 1, x, r, p, rr_new

    x0 = jnp.zeros_like(b2)
    rr0 = jnp.sum(b2 * b2, axis=0)
    _, x, *_ = jax.lax.while_loop(cond, body, (0, x0, b2, b2, rr0))
    return x.reshape(b.shape)


@wrong(
    "portable_solve",
    why="the result has b's shape; reshaping b to (n, k) and squeezing the answer loses the "
    "axis of a one-column b (n, 1) and the only axis of n=1 with b of shape (1,) (returns a "
    "scalar)",
)
def _rt5_portable_solve_squeeze(a, b):
    b2 = b.reshape(b.shape[0], -1)
    return jnp.squeeze(_rt5_cg(a, b2, 2 * a.shape[0] + 32))


@wrong(
    "portable_solve",
    why="Newton-Schulz inversion X <- X(2I - AX) from X0 = A/(|A|_1 |A|_inf) needs about "
    "log2(cond^2) + 5 ~ 19 steps at condition number 100; 12 steps is enough only for "
    "well-conditioned a: wrong on spd_system(rng, 8, None) (condition number 100)",
)
def _rt5_portable_solve_newton_schulz_12(a, b):
    n = a.shape[0]
    x = a.T / (jnp.max(jnp.sum(jnp.abs(a), 0)) * jnp.max(jnp.sum(jnp.abs(a), 1)))
    eye = jnp.eye(n, dtype=a.dtype)
    for _ in range(12):
        x = x @ (2 * eye - a @ x)
    return x @ b
