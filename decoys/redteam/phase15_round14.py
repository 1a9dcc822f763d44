"""Red team, phase 15, round 14: wrong answers of kinds earlier rounds did not write (multi-result
dispatch ops, a name split on '_', a while's cond, verdict order export vs sdy, eigh/cho solves,
exactly-n CG, and more)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---- iree_run ---------------------------------------------------------------------------------


@wrong(
    "iree_run",
    why="'compile its StableHLO for IREE's llvm-cpu backend ... load the result with the "
    "local-task driver': compiles for IREE's portable vmvx backend and runs it on local-sync "
    "('IREE's reference backend, no LLVM or CPU flags to get right'); the values are IREE's "
    "but not those of the llvm-cpu build the contract asks for: on programs.mlp with "
    "default_rng(0) standard-normal inputs vmvx differs from llvm-cpu (generic) by 3e-5",
)
def _rt14_iree_run_vmvx(f, *args):
    import iree.compiler as ireec
    import iree.runtime as ireert

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = ireec.compile_str(
        exported.mlir_module(), target_backends=["vmvx"], input_type="stablehlo"
    )
    module = ireert.load_vm_flatbuffer(vmfb, driver="local-sync")
    result = module.main(*[np.asarray(a) for a in args])
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    outs = [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in outs]
    return [
        np.asarray(o, dtype=aval.dtype).reshape(aval.shape)
        for o, aval in zip(outs, exported.out_avals, strict=True)
    ]


# ---- matmul_flops -----------------------------------------------------------------------------

_rt14_KINDS = {"matmul": 3, "batch_matmul": 4, "matvec": 2, "vecmat": 2}


def _rt14_flops_of(kind: str, dims: str) -> int:
    if kind not in _rt14_KINDS or "D" in dims:
        return 0
    sizes = [int(s) for s in dims.split("x")]
    if len(sizes) != _rt14_KINDS[kind]:
        return 0
    total = 2
    for s in sizes:
        total *= s
    return total


def _rt14_export_flops(flow_text: str) -> dict[str, int]:
    out = {}
    for name in re.findall(r"flow\.executable\.export\s+public\s+@(\w+)", flow_text):
        m = re.match(r"\w+?_dispatch_\d+_(\w+?)_((?:\d+|D)(?:x(?:\d+|D))*)_", name)
        out[name] = _rt14_flops_of(m.group(1), m.group(2)) if m else 0
    return out


@wrong(
    "matmul_flops",
    why="'An export counts once for every flow.dispatch op that runs it': finds the dispatch "
    "ops with the regex '%\\d+ = flow.dispatch @...', which misses a dispatch op with several "
    "results, printed '%6:4 = flow.dispatch ...'; on recorded/train_step.mlir the first matmul "
    "(32x128x64, whose dispatch returns 4 results) counts 0 times, 524288 flops short",
)
def _rt14_matmul_flops_single_result_ops(flow_text: str) -> int:
    flops = _rt14_export_flops(flow_text)
    total = 0
    for export in re.findall(r"%\d+ = flow\.dispatch @[\w.]+::@(\w+)", flow_text):
        total += flops.get(export, 0)
    return total


@wrong(
    "matmul_flops",
    why="'the kind (the name's part after _dispatch_<i>_)': splits the export name on '_' and "
    "takes parts[3] as the kind and parts[4] as the dims, so 'batch_matmul' reads as kind "
    "'batch' (0 flops); wrong on recorded/attention.mlir (two 4x16x24x32 batch_matmuls: "
    "this gives 0)",
)
def _rt14_matmul_flops_split_underscore(flow_text: str) -> int:
    total = 0
    for export in re.findall(r"flow\.dispatch @[\w.]+::@(\w+)", flow_text):
        parts = export.split("_")
        if len(parts) < 5:
            continue
        total += _rt14_flops_of(parts[3], parts[4])
    return total


# ---- iree_verdict -----------------------------------------------------------------------------

_rt14_EXPORT = {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr", "geqp3"}
_rt14_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "eig",
    "svd",
    "qr",
    "householder_product",
    "triangular_solve",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
}


def _rt14_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _rt14_subjaxprs(v)


def _rt14_eqns(jaxpr, skip=()):
    for eqn in jaxpr.eqns:
        yield eqn
        for key, v in eqn.params.items():
            if key in skip:
                continue
            for sub in _rt14_subjaxprs(v):
                yield from _rt14_eqns(sub, skip)


def _rt14_is_key(aval) -> bool:
    return str(getattr(aval, "dtype", "")).startswith("key<")


def _rt14_verdict(jaxpr, *, skip=(), sdy_first=False) -> str:
    names, pivoted, constraint = set(), False, False
    for eqn in _rt14_eqns(jaxpr.jaxpr, skip):
        name = eqn.primitive.name
        names.add(name)
        if name == "qr" and eqn.params.get("pivoting"):
            pivoted = True
        if name == "sharding_constraint":
            constraint = True
    export = bool(names & _rt14_EXPORT) or pivoted
    sdy = constraint or any(_rt14_is_key(a) for a in [*jaxpr.in_avals, *jaxpr.out_avals])
    if sdy_first and sdy:
        return "sdy"
    if export:
        return "export"
    if sdy:
        return "sdy"
    if names & _rt14_LAPACK:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'Operations inside called jaxprs (... while ...) count': follows a while_loop's "
    "body_jaxpr but not its cond_jaxpr ('the condition only compares'), so lambda x: "
    "lax.while_loop(lambda c: jnp.linalg.cholesky(c).sum() < 1e3, lambda c: c * 2.0, x) on an "
    "SPD x is 'lapack' and this says 'runs'; a pure_callback in the condition likewise is "
    "'export', this says 'runs'",
)
def _rt14_iree_verdict_while_body_only(jaxpr) -> str:
    return _rt14_verdict(jaxpr, skip=("cond_jaxpr",))


@wrong(
    "iree_verdict",
    why='\'"export" when jax.export refuses it ..., else "sdy"\': checks for Shardy first '
    "('IREE's parser fails before anything else'), but jax.export refuses first, before IREE "
    "sees any module; wrong on lambda k, x: (jax.debug.print('{}', x), jax.random.normal(k, "
    "x.shape) + x)[1] with a typed key k (is 'export', this says 'sdy')",
)
def _rt14_iree_verdict_sdy_before_export(jaxpr) -> str:
    return _rt14_verdict(jaxpr, sdy_first=True)


# ---- portable_solve ---------------------------------------------------------------------------


@wrong(
    "portable_solve",
    why="'its export holds no custom call': solves through the eigendecomposition, v @ "
    "diag(1/w) @ v.T @ b ('no solve, only matmuls and a divide'), but jnp.linalg.eigh is "
    "LAPACK's syevd on CPU: the export holds a custom_call and IREE refuses it; wrong on every "
    "input (e.g. programs.spd_system(rng, 8, None))",
)
def _rt14_portable_solve_eigh(a, b):
    w, v = jnp.linalg.eigh(a)
    x = v @ ((v.T @ b.reshape(b.shape[0], -1)) / w[:, None])
    return x.reshape(b.shape).astype(b.dtype)


def _rt14_cg(a, b, steps):
    n = a.shape[0]
    bm = b.reshape(n, -1)
    sa = jnp.max(jnp.abs(a))
    sb = jnp.max(jnp.abs(bm), axis=0, keepdims=True)
    sb = jnp.where(sb > 0, sb, 1.0)
    a1 = a / sa
    b1 = bm / sb
    x = jnp.zeros_like(b1)
    r = b1
    p = r
    rr = jnp.sum(r * r, axis=0)
    for _ in range(steps):
        ap = a1 @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rr / jnp.where(pap > 0, pap, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rr > 0, rr_new / jnp.where(rr > 0, rr, 1.0), 0.0)
        p = r + beta * p
        rr = rr_new
    x = x * sb / sa
    return x.reshape(b.shape).astype(b.dtype)


@wrong(
    "portable_solve",
    why="'relative error of at most 1e-3' with condition number up to 100: scaled CG run for "
    "exactly n steps ('CG is exact in n steps'), which float32 rounding breaks when the "
    "eigenvalues are spread geometrically: a = q diag(geomspace(1, 100, 8)) q.T with q the Q of "
    "default_rng(1).standard_normal((8, 8)), b = default_rng(1).standard_normal(8) (after q) "
    "gives a relative error of 3e-2 (> 1e-3); 2n + 10 steps give 5e-7",
)
def _rt14_portable_solve_exactly_n_steps(a, b):
    return _rt14_cg(a, b, a.shape[0])


def _rt14_cg_vector(a, b):
    return _rt14_cg(a, b, 2 * a.shape[0] + 10)


@wrong(
    "portable_solve",
    why="'The result has b's shape': solves a vector b with scaled CG and a matrix b by "
    "jax.vmap(solve, in_axes=(None, 1)) over its columns, leaving out_axes at 0, so an (n, k) "
    "b gets the (k, n) stack of column solutions; wrong on any b of shape (n, k), e.g. "
    "programs.spd_system(rng, 8, 3) (shape (3, 8) returned; with n == k the transpose)",
)
def _rt14_portable_solve_vmap_columns(a, b):
    if b.ndim == 1:
        return _rt14_cg_vector(a, b)
    return jax.vmap(_rt14_cg_vector, in_axes=(None, 1))(a, b)


_rt14_LAPACK_WORDS = (
    "lu",
    "cholesky",
    "eig",
    "svd",
    "qr",
    "householder",
    "triangular_solve",
    "schur",
    "hessenberg",
    "tridiagonal",
)


@wrong(
    "iree_verdict",
    why="'\"lapack\" when it holds a LAPACK custom call': matches primitive names by substring "
    "against LAPACK words ('lu', 'eig', 'qr', ...), so lu_pivots_to_permutation (written as "
    "plain StableHLO, no LAPACK) counts as 'lu'; wrong on the linalg_without_lapack family "
    "(is 'runs', this says 'lapack')",
)
def _rt14_iree_verdict_lapack_substring(jaxpr) -> str:
    verdict = _rt14_verdict(jaxpr)
    if verdict != "runs":
        return verdict
    names = {eqn.primitive.name for eqn in _rt14_eqns(jaxpr.jaxpr)}
    if any(word in name for name in names for word in _rt14_LAPACK_WORDS):
        return "lapack"
    return "runs"


# ---- agreement_rtol ---------------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="'must not exceed it on any fresh draw' in bfloat16 too: argues IREE widens bfloat16 "
    "work to float32 inside its dispatches, so a bf16 output differs from JAX's by at most its "
    "final rounding (1 bf16 eps = 0.0078), while float32 gets 16 eps for reorderings; measured "
    "here, layernorm_softmax in bfloat16 on standard-normal draws default_rng(0..19) reaches "
    "max|iree - jax| / max|jax| = 0.024 (about 3.1 bf16 eps), above 0.0078",
)
def _rt14_agreement_rtol_bf16_final_rounding_only(dtype: str) -> float:
    eps = float(jnp.finfo(jnp.dtype(dtype)).eps)
    return eps if dtype == "bfloat16" else 16 * eps
