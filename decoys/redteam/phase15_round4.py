"""Red-team wrong answers for phase 15, written from the contract only."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree

_rt4_GENERIC = "--iree-llvmcpu-target-cpu=generic"


def _rt4_iree_outputs(f, args):
    import iree.compiler as ic
    import iree.runtime as ir

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = ic.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=[_rt4_GENERIC],
    )
    module = ir.load_vm_flatbuffer(vmfb, driver="local-task")
    out = module.main(*[np.asarray(a) for a in args])
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return exported, [o.to_host() if hasattr(o, "to_host") else np.asarray(o) for o in out]


# ---- task 1: iree_run ------------------------------------------------------------------------


@wrong(
    "iree_run",
    why="outputs must keep JAX's dtype; casts every output to float32, wrong on "
    "programs.int_matmul (int32 outputs) or any bf16-output program",
)
def _rt4_iree_run_all_float32(f, *args):
    _, outs = _rt4_iree_outputs(f, args)
    return [np.asarray(o, dtype=np.float32) for o in outs]


@wrong(
    "iree_run",
    why="outputs must have JAX's shape; np.atleast_1d turns a scalar output into shape (1,), "
    "wrong on f = lambda x: (x @ x.T).sum() (a rank-0 result)",
)
def _rt4_iree_run_atleast_1d(f, *args):
    _, outs = _rt4_iree_outputs(f, args)
    return [np.atleast_1d(np.asarray(o)) for o in outs]


@wrong(
    "iree_run",
    why="nothing may be computed by XLA; it calls f(*args) eagerly to learn the output tree, "
    "which compiles with XLA, on every input (e.g. programs.mlp)",
)
def _rt4_iree_run_eager_structure(f, *args):
    leaves = jax.tree.leaves(f(*args))
    _, outs = _rt4_iree_outputs(f, args)
    return [np.asarray(o).reshape(np.shape(l)).astype(l.dtype) for o, l in zip(outs, leaves)]


# ---- task 2: agreement_rtol ------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="must not be exceeded on any fresh draw; 4 eps is 4.8e-7 for float32 while "
    "layernorm_softmax reaches 9.6e-7 (recorded/agreement.txt), wrong on 'float32'",
)
def _rt4_agreement_rtol_four_eps(dtype):
    return float(4 * jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="the tolerance is per dtype; uses float32's epsilon for both (32*eps_f32 = 3.8e-6), "
    "wrong on 'bfloat16' where mlp alone differs by 1.3e-2",
)
def _rt4_agreement_rtol_f32_eps_only(dtype):
    return float(32 * np.finfo(np.float32).eps)


@wrong(
    "agreement_rtol",
    why="must hold on ANY fresh draw; hard-codes the worst of recorded seeds 0-63 with no "
    "margin, so a fresh draw past seed 63 exceeds it (both dtypes)",
)
def _rt4_agreement_rtol_recorded_table(dtype):
    return {"float32": 9.59e-07, "bfloat16": 0.0244}[str(dtype)]


@wrong(
    "agreement_rtol",
    why="must be no looser than 32 eps; a 'safety factor' of 64 eps (7.6e-6 / 0.5) is too "
    "loose on both 'float32' and 'bfloat16'",
)
def _rt4_agreement_rtol_sixty_four_eps(dtype):
    return float(64 * jnp.finfo(jnp.dtype(dtype)).eps)


# ---- task 3: matmul_flops --------------------------------------------------------------------

_rt4_EXPORT = re.compile(r"flow\.executable\.export\s+(?:public\s+)?@([\w$.-]+)")
_rt4_DISPATCH = re.compile(r"flow\.dispatch\s+@([\w$.-]+)::@([\w$.-]+)")


def _rt4_flops(kind, sizes):
    if any(s is None for s in sizes):
        return 0
    prod = 1
    for s in sizes:
        prod *= s
    if kind == "batch_matmul" and len(sizes) == 4:
        return 2 * prod
    if kind == "matmul" and len(sizes) == 3:
        return 2 * prod
    if kind in ("matvec", "vecmat") and len(sizes) == 2:
        return 2 * prod
    return 0


@wrong(
    "matmul_flops",
    why="an export counts once per flow.dispatch that runs it; counts each export once, "
    "wrong on (x @ w1, y @ w2) with equal shapes (one matmul executable dispatched twice)",
)
def _rt4_matmul_flops_once_per_export(flow_text):
    total = 0
    for name in _rt4_EXPORT.findall(flow_text):
        _, _, kind, sizes, _ = iree.split_dispatch_name(name)
        total += _rt4_flops(kind, sizes)
    return total


@wrong(
    "matmul_flops",
    why="only the kinds matmul/batch_matmul/matvec/vecmat count; a substring test also "
    "counts matvec_like, wrong on jnp.einsum('bij,bj->bi', f32[4,8,16], f32[4,16]) "
    "(IREE names it matvec_like_4x8x16: 0 flops, says 1024)",
)
def _rt4_matmul_flops_substring_kind(flow_text):
    total = 0
    for _exe, name in _rt4_DISPATCH.findall(flow_text):
        _, _, kind, sizes, _ = iree.split_dispatch_name(name)
        if any(s is None for s in sizes):
            continue
        prod = 1
        for s in sizes:
            prod *= s
        if "matmul" in kind or "matvec" in kind or "vecmat" in kind:
            total += 2 * prod
    return total


@wrong(
    "matmul_flops",
    why="a dispatch whose dims hold D counts 0; reading the digits only drops D and counts "
    "the static dims, wrong on a listing of a batch-polymorphic x @ w (matmul_Dx128x64)",
)
def _rt4_matmul_flops_digits_only(flow_text):
    total = 0
    for _exe, name in _rt4_DISPATCH.findall(flow_text):
        parts = re.split(r"_dispatch_\d+_", name, maxsplit=1)[-1].split("_")
        kind = []
        for part in parts:
            if re.fullmatch(r"[\dD]+(?:x[\dD]+)*", part):
                break
            kind.append(part)
        else:
            continue
        if "_".join(kind) not in ("matmul", "batch_matmul", "matvec", "vecmat"):
            continue
        prod = 1
        for d in re.findall(r"\d+", part):
            prod *= int(d)
        total += 2 * prod
    return total


# ---- task 4: merged_by_iree ------------------------------------------------------------------

_rt4_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\([^)]*\)\s*->.*)?\{\s*$")
_rt4_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_rt4_OPNAME = re.compile(r'op_name="([^"]*)"')
_rt4_CALLS = re.compile(
    r"(?:calls|to_apply|body|condition|branch_computations)=\{?([^}\s]*(?:,\s*%[\w.\-]+)*)\}?"
)


def _rt4_hlo_comps(text):
    comps, entry, cur = {}, None, None
    for line in text.splitlines():
        s = line.strip()
        if cur is None:
            if s.endswith("{") and not s.startswith("HloModule"):
                head = s.split("(")[0].split()
                name = head[-1].lstrip("%") if head else ""
                if s.startswith("ENTRY"):
                    entry = name
                cur = name
                comps[cur] = []
            continue
        if s == "}":
            cur = None
            continue
        m = _rt4_INSTR.match(s)
        if m:
            rest = m.group(2)
            op = re.search(r"\s([a-z][\w\-]*)\(", " " + rest.split(", metadata=")[0])
            opcode = op.group(1) if op else ""
            called = []
            for cm in _rt4_CALLS.finditer(rest):
                called += [c.strip().lstrip("%") for c in cm.group(1).split(",") if c.strip()]
            names = _rt4_OPNAME.findall(rest)
            comps[cur].append((m.group(1), opcode, called, names))
    return comps, entry


def _rt4_last(names, split_semicolons=True):
    out = set()
    for n in names:
        for part in n.split(";") if split_semicolons else [n]:
            part = part.strip()
            if part:
                out.add(part.split("/")[-1])
    return out


def _rt4_xla_names(hlo_text, nested=True, split_semicolons=True, bare_dots=True):
    comps, entry = _rt4_hlo_comps(hlo_text)

    def reach(comp, depth):
        seen = [comp]
        if nested or depth == 0:
            for _n, _o, called, _ in comps.get(comp, []):
                for c in called:
                    if c in comps and nested:
                        seen += reach(c, depth + 1)
        return seen

    names = set()
    for _n, opcode, called, opn in comps.get(entry, []):
        if opcode == "dot":
            if bare_dots:
                names |= _rt4_last(opn, split_semicolons)
            continue
        inside = []
        for c in called:
            if c in comps:
                inside += reach(c, 0)
        if any(o == "dot" for c in inside for _x, o, _y, _z in comps[c]):
            for c in inside:
                for _x, _o, _y, nm in comps[c]:
                    names |= _rt4_last(nm, split_semicolons)
    names.discard("dot_general")
    return names


def _rt4_iree_names(flow_text, kinds=("matmul", "batch_matmul", "matvec", "vecmat")):
    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in kinds:
            names |= {s.split("/")[-1] for s in d.sources}
    names.discard("dot_general")
    return names


def _rt4_merged(hlo_text, flow_text, **kw):
    ikinds = kw.pop("kinds", ("matmul", "batch_matmul", "matvec", "vecmat"))
    a, b = _rt4_iree_names(flow_text, ikinds), _rt4_xla_names(hlo_text, **kw)
    return a - b, b - a


@wrong(
    "merged_by_iree",
    why="called computations count with the fusions nested in them; looks only at the "
    "computations an ENTRY instruction calls directly, wrong when the dot sits one fusion "
    "deeper, e.g. f(x, w, v) = relu(h @ v) + sin(x @ v), h = while_loop(3 x tanh(c @ w) * 2) "
    "on f32[16,32], f32[32,32], f32[32,8]: the ENTRY while's body holds the dot inside a "
    "fusion, so tanh/mul/add wrongly show as IREE-only and lt is lost from XLA's side",
)
def _rt4_merged_by_iree_one_level(hlo_text, flow_text):
    return _rt4_merged(hlo_text, flow_text, nested=False)


@wrong(
    "merged_by_iree",
    why="XLA may join several names with ';' and each counts; keeps 'a;b' as one name, wrong "
    "on an HLO whose fused op_name reads 'jit(f)/add;jit(f)/tanh'",
)
def _rt4_merged_by_iree_no_semicolon(hlo_text, flow_text):
    return _rt4_merged(hlo_text, flow_text, split_semicolons=False)


@wrong(
    "merged_by_iree",
    why="IREE's matmul kernels include matvec and vecmat; counts only matmul/batch_matmul, "
    "wrong on jnp.tanh(m @ v) + 1 with f32[48,40] m, f32[40] v (tanh and add sit in the "
    "matvec dispatch)",
)
def _rt4_merged_by_iree_no_matvec(hlo_text, flow_text):
    return _rt4_merged(hlo_text, flow_text, kinds=("matmul", "batch_matmul"))


@wrong(
    "merged_by_iree",
    why="an ENTRY instruction that is itself a dot is a kernel too; only fusions counted, "
    "wrong when XLA:CPU leaves a dot unfused in ENTRY (its names vanish from XLA's side)",
)
def _rt4_merged_by_iree_fusions_only(hlo_text, flow_text):
    return _rt4_merged(hlo_text, flow_text, bare_dots=False)


# ---- task 5: iree_verdict --------------------------------------------------------------------

_rt4_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_rt4_LAPACK = {
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
    "geqp3",
}


def _rt4_subjaxprs(eqn, keys=None):
    for k, v in eqn.params.items():
        if keys is not None and k not in keys:
            continue
        for sub in v if isinstance(v, (tuple, list)) else (v,):
            if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):
                yield sub.jaxpr
            elif hasattr(sub, "eqns"):
                yield sub


def _rt4_prims(jx, keys=None):
    for e in jx.eqns:
        yield e.primitive.name
        for sub in _rt4_subjaxprs(e, keys):
            yield from _rt4_prims(sub, keys)


def _rt4_is_key(v):
    try:
        return jax.dtypes.issubdtype(v.aval.dtype, jax.dtypes.prng_key)
    except Exception:
        return False


def _rt4_verdict(jaxpr, keys=None, lapack=_rt4_LAPACK):
    jx = jaxpr.jaxpr
    prims = set(_rt4_prims(jx, keys))
    if prims & _rt4_CALLBACKS:
        return "export"
    if "sharding_constraint" in prims or any(_rt4_is_key(v) for v in (*jx.invars, *jx.outvars)):
        return "sdy"
    if prims & lapack:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="operations inside cond and while count; recurses only into 'jaxpr'/'call_jaxpr' "
    "params, not 'branches', 'body_jaxpr'/'cond_jaxpr', wrong on "
    "lax.cond(p, lambda a: jnp.linalg.cholesky(a), lambda a: a, a) (lapack, says runs)",
)
def _rt4_iree_verdict_no_cond_while(jaxpr):
    return _rt4_verdict(jaxpr, keys=("jaxpr", "call_jaxpr", "fun_jaxpr"))


@wrong(
    "iree_verdict",
    why="'export' > 'sdy' > 'lapack' in that order; decides by the first such equation met, "
    "wrong on f(a) = jnp.linalg.cholesky(a).sum() + pure_callback(...) (export, says lapack)",
)
def _rt4_iree_verdict_first_hit(jaxpr):
    jx = jaxpr.jaxpr
    if any(_rt4_is_key(v) for v in jx.invars):
        return "sdy"
    for p in _rt4_prims(jx):
        if p in _rt4_CALLBACKS:
            return "export"
        if p == "sharding_constraint":
            return "sdy"
        if p in _rt4_LAPACK:
            return "lapack"
    if any(_rt4_is_key(v) for v in jx.outvars):
        return "sdy"
    return "runs"


@wrong(
    "iree_verdict",
    why="all LAPACK solves/factorizations count; the set is the bank's families only "
    "(lu, cholesky, eigh, triangular_solve, qr, svd, eig), wrong on jax.scipy.linalg.schur "
    "or hessenberg (lapack, says runs)",
)
def _rt4_iree_verdict_bank_lapack(jaxpr):
    return _rt4_verdict(
        jaxpr, lapack={"lu", "cholesky", "eigh", "triangular_solve", "qr", "svd", "eig"}
    )


# ---- task 6: export_facts --------------------------------------------------------------------


def _rt4_stablehlo_version(module_bytes):
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", module_bytes)
    return m.group(1).decode() if m else ""


@wrong(
    "export_facts",
    why="platforms in the order given at export; sorts them, wrong on a blob exported with "
    "platforms=('tpu', 'cpu') (says ('cpu', 'tpu'))",
)
def _rt4_export_facts_sorted_platforms(blob):
    exp = jax.export.deserialize(bytearray(blob))
    return (
        _rt4_stablehlo_version(exp.mlir_module_serialized),
        int(exp.calling_convention_version),
        tuple(sorted(p.lower() for p in exp.platforms)),
    )


@wrong(
    "export_facts",
    why="the calling-convention version is the blob's; returns this jax's default "
    "(jax.export.maximum_supported_calling_convention_version), wrong on a blob exported "
    "with an older one (e.g. 9 via jax_export_calling_convention_version)",
)
def _rt4_export_facts_default_calling_convention(blob):
    exp = jax.export.deserialize(bytearray(blob))
    return (
        _rt4_stablehlo_version(exp.mlir_module_serialized),
        int(jax.export.maximum_supported_calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


@wrong(
    "export_facts",
    why="the StableHLO version the bytecode was written for; returns this jaxlib's current "
    "StableHLO version (1.22.0 here) instead of the artifact's (1.18.0), wrong on any blob",
)
def _rt4_export_facts_current_stablehlo(blob):
    from jax._src.lib.mlir.dialects import hlo

    exp = jax.export.deserialize(bytearray(blob))
    return (
        str(hlo.get_current_version()),
        int(exp.calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


@wrong(
    "export_facts",
    why="the version the blob's bytecode was written for; returns the version THIS jax would "
    "target (get_version_from_compatibility_requirement(WEEK_4)), right only for blobs made "
    "by this jax: wrong on a blob serialized by an older/newer jax or with its module "
    "re-serialized for another target (e.g. a stored artifact whose header reads "
    "StableHLO_v1.9.0)",
)
def _rt4_export_facts_this_jax_target(blob):
    from jax._src.lib.mlir.dialects import hlo

    exp = jax.export.deserialize(bytearray(blob))
    target = hlo.get_version_from_compatibility_requirement(
        hlo.StablehloCompatibilityRequirement.WEEK_4
    )
    return (
        str(target),
        int(exp.calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


# ---- task 7: batch_polymorphic ---------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="only the leading dim is symbolic, the rest stay example's; builds 'b, <shape[1]>', "
    "wrong on a rank-3 example f32[4,8,16] (exports rank 2) and a rank-1 example",
)
def _rt4_batch_polymorphic_rank2_only(f, example):
    shape = jax.export.symbolic_shape(f"b, {example.shape[1] if example.ndim > 1 else 1}")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="the dtype stays example's; hard-codes float32, wrong on a bfloat16 or int32 example",
)
def _rt4_batch_polymorphic_float32(f, example):
    dims = ", ".join(["b", *map(str, example.shape[1:])])
    shape = jax.export.symbolic_shape(dims)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, jnp.float32))


@wrong(
    "batch_polymorphic",
    why="must accept every size from 1 up; constrains b >= 2 ('a batch of 1 would broadcast'), "
    "so the export refuses batch 1 on every input",
)
def _rt4_batch_polymorphic_b_at_least_2(f, example):
    dims = ", ".join(["b", *map(str, example.shape[1:])])
    shape = jax.export.symbolic_shape(dims, constraints=("b >= 2",))
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


# ---- task 8: portable_solve ------------------------------------------------------------------


def _rt4_cg(a, b, steps):
    x = jnp.zeros_like(b)
    r = b - a @ x
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
    return x


@wrong(
    "portable_solve",
    why="relative error <= 1e-3 for n up to 64 and condition 100; caps CG at min(n, 25) "
    "steps ('sqrt(cond) = 10, 2.5x that'), exact for n <= 25 but wrong on "
    "programs.spd_system(np.random.default_rng(0), 64, None) (error 1.4e-3)",
)
def _rt4_portable_solve_capped_steps(a, b):
    return _rt4_cg(a, b, min(a.shape[0], 25))


@wrong(
    "portable_solve",
    why="the result has b's shape; squeezes it, wrong on b of shape (n, 1) and on n = 1",
)
def _rt4_portable_solve_squeezed(a, b):
    return jnp.squeeze(_rt4_cg(a, b, a.shape[0] + 40))


@wrong(
    "portable_solve",
    why="the ERROR must be <= 1e-3; stops CG when |r|^2 <= 1e-3 |b|^2 (tolerance not squared: "
    "a residual of 3e-2, error up to cond * 3e-2), wrong on spd_system(rng, 64, None)",
)
def _rt4_portable_solve_residual_stop(a, b):
    bb = b if b.ndim == 2 else b[:, None]
    bnorm2 = jnp.sum(bb * bb)

    def cond(state):
        _x, _r, _p, rs, i = state
        return (rs > 1e-3 * bnorm2) & (i < 200)

    def body(state):
        x, r, p, rs, i = state
        ap = a @ p
        alpha = rs / jnp.maximum(jnp.sum(p * ap), 1e-30)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r)
        return x, r, r + rs_new / jnp.maximum(rs, 1e-30) * p, rs_new, i + 1

    x0 = jnp.zeros_like(bb)
    state = (x0, bb, bb, jnp.sum(bb * bb), jnp.int32(0))
    x = jax.lax.while_loop(cond, body, state)[0]
    return x.reshape(b.shape)
