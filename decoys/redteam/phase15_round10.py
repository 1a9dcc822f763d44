"""Red-team round 10 wrong answers for phase 15, written from the contract only.

The `_rt10_ok_*` helpers are a correct answer the wrong ones start from (not registered: only
functions decorated with `wrong` are answers).
"""

from __future__ import annotations

import re

import jax
import jax.extend  # noqa: F401
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

# ---- a correct base ---------------------------------------------------------------------------

_rt10_CONTRACTIONS = ("matmul", "batch_matmul", "matvec", "vecmat")


def _rt10_iree_module(f, args):
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


def _rt10_outputs(module, args):
    result = module.main(*[np.asarray(a) for a in args])
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _rt10_last(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _rt10_op_names(instruction) -> set[str]:
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    if not m:
        return set()
    return {_rt10_last(part) for part in m.group(1).split(";") if part}


def _rt10_called(module, names):
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


def _rt10_xla_matmul_names(hlo_text: str) -> set[str]:
    module = parse_hlo(hlo_text)
    names: set[str] = set()
    for ins in module.entry.instructions:
        inside = [i for c in _rt10_called(module, ins.called_computations) for i in c.instructions]
        if ins.opcode == "dot" or any(i.opcode == "dot" for i in inside):
            for i in (ins, *inside):
                names |= _rt10_op_names(i)
    return names


def _rt10_iree_names(flow_text: str, kinds=_rt10_CONTRACTIONS) -> set[str]:
    names: set[str] = set()
    for d in iree.read_flow(flow_text):
        if kinds is None or d.kind in kinds:
            names |= set(d.sources)
    return names


_rt10_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "debug_print"})
_rt10_LAPACK = frozenset(
    {
        "lu",
        "cholesky",
        "eigh",
        "eig",
        "triangular_solve",
        "qr",
        "geqrf",
        "householder_product",
        "svd",
        "schur",
        "hessenberg",
        "tridiagonal",
        "tridiagonal_solve",
    }
)


def _rt10_subjaxprs(value):
    if isinstance(value, jax.extend.core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax.extend.core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt10_subjaxprs(v)


def _rt10_eqns(jaxpr, params=None):
    for eqn in jaxpr.eqns:
        yield eqn
        for key, value in eqn.params.items():
            if params is not None and key not in params:
                continue
            for sub in _rt10_subjaxprs(value):
                yield from _rt10_eqns(sub, params)


def _rt10_is_key(var) -> bool:
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _rt10_verdict(closed, params=None, export_check=None) -> str:
    inner = closed.jaxpr
    eqns = list(_rt10_eqns(inner, params))
    prims = {e.primitive.name for e in eqns}
    pivoted = any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns)
    if export_check is not None:
        if export_check(closed, eqns):
            return "export"
    elif prims & _rt10_CALLBACKS or pivoted or "ormqr" in prims or "geqp3" in prims:
        return "export"
    if "sharding_constraint" in prims or any(map(_rt10_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    if prims & _rt10_LAPACK:
        return "lapack"
    return "runs"


def _rt10_cg(a, b, steps):
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


# ---- iree_verdict -----------------------------------------------------------------------------


@wrong(
    "iree_verdict",
    why="'Operations inside called jaxprs (jit, cond, scan, while, custom_jvp, remat, ...) count "
    "as well': walks the sub-jaxprs of jit/pjit ('jaxpr'), cond ('branches') and while "
    "('cond_jaxpr', 'body_jaxpr') but not custom_jvp/custom_vjp ('call_jaxpr'): jnp.linalg.det "
    "of a 4x4+ matrix (BANK 'determinant') hides its `lu` inside custom_jvp_call.call_jaxpr "
    "and is answered 'runs' instead of 'lapack'",
)
def _rt10_iree_verdict_custom_jvp_opaque(jaxpr) -> str:
    return _rt10_verdict(jaxpr, params=("jaxpr", "branches", "cond_jaxpr", "body_jaxpr"))


def _rt10_effects_export(closed, eqns) -> bool:
    pivoted = any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns)
    ormqr = any(e.primitive.name in ("ormqr", "geqp3") for e in eqns)
    return bool(closed.effects) or bool(closed.jaxpr.effects) or pivoted or ormqr


@wrong(
    "iree_verdict",
    why="'export' for a host callback, pure_callback included: spots callbacks by the jaxpr's "
    "effects ('a host callback is a side effect'), which catches io_callback and debug.print "
    "(ordered/debug effects) but not jax.pure_callback, which carries no effect: BANK "
    "'host_callback' (pure_callback(np.sin, ...) + x) is answered 'runs' instead of 'export'",
)
def _rt10_iree_verdict_callbacks_by_effects(jaxpr) -> str:
    return _rt10_verdict(jaxpr, export_check=_rt10_effects_export)


# ---- portable_solve ---------------------------------------------------------------------------


@wrong(
    "portable_solve",
    why="'any a and b whose x has a norm from 1e-30 to 1e30' is valid: rescales b by its largest "
    "entry (so b of 1e25 or 1e-25 is safe) but never a; with a = 1e-37 * programs.spd_system(n=16) "
    "(condition 100) and b = 1e-8 * standard normal (|x| ~ 7e28, inside the range), the products "
    "in a @ p fall into float32's subnormal range, which XLA:CPU flushes to zero: relative error "
    "0.11 (measured), against 1e-3 allowed",
)
def _rt10_portable_solve_scale_b_only(a, b):
    s = jnp.max(jnp.abs(b))
    s = jnp.where(s > 0, s, 1.0)
    return (_rt10_cg(a, b / s, 3 * a.shape[0] + 20) * s).astype(b.dtype)


@wrong(
    "portable_solve",
    why="'the size of their entries is not bounded: a b of norm 1e25 ... is as valid': calls "
    "jax.scipy.sparse.linalg.cg(a, b) with its defaults (tol=1e-5, maxiter=10n, a while loop: no "
    "custom call, IREE compiles it), whose stopping test squares |r| and |b| in float32: with "
    "programs.spd_system(n=16) and b = 1e25 * randn or 1e-25 * randn the relative error is 1.0 "
    "(measured: the squares overflow / underflow and the loop stops with x = 0), and with "
    "a = 1e-34 * spd, b = 1e-5 * randn (|x| ~ 4e28) x comes back inf",
)
def _rt10_portable_solve_library_cg(a, b):
    x, _ = jax.scipy.sparse.linalg.cg(lambda v: a @ v, b)
    return x.astype(b.dtype)


# ---- merged_by_iree ---------------------------------------------------------------------------


@wrong(
    "merged_by_iree",
    why="'the names only XLA's hold' compares XLA's matmul kernels with IREE's matmul kernels: "
    "this subtracts the names of EVERY IREE dispatch (matmul or not) from XLA's matmul-kernel "
    "names ('IREE computes it somewhere, so it is not XLA-only'), while the IREE side is right; "
    "right on every FLOWS program (their XLA-only sets are empty) but wrong on "
    "jnp.tanh(x @ w).sum(0) with f32[32,64] x, f32[64,128] w: XLA's YNN dot fusion holds tanh and "
    "reduce_sum, IREE puts them in its reduction dispatch, so the answer is (set(), {'tanh', "
    "'reduce_sum'}) and this returns (set(), set())",
)
def _rt10_merged_by_iree_xla_side_whole_listing(hlo_text: str, flow_text: str):
    ours = _rt10_iree_names(flow_text)
    theirs = _rt10_xla_matmul_names(hlo_text)
    everywhere = _rt10_iree_names(flow_text, kinds=None)
    return (ours - theirs - {"dot_general"}, theirs - everywhere - {"dot_general"})


# ---- batch_polymorphic ------------------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="'every other dimension ... stay[s] that of example': writes the shape spec by replacing "
    "the batch size with 'b' in str(example.shape), so every trailing dim that happens to equal "
    "the batch becomes symbolic too: example f32[8,8] (row-wise softmax) exports as (b, b), which "
    "refuses a batch of 3 rows of 8 (ValueError: inconsistency between args[0].shape[1] = 8 and "
    "'b' = 3, measured with Exported.call); right whenever the batch differs from every other dim",
)
def _rt10_batch_polymorphic_replace_batch_value(f, example: jax.Array) -> jax.export.Exported:
    n = example.shape[0]
    dims = ", ".join("b" if d == n else str(d) for d in example.shape)
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


@wrong(
    "portable_solve",
    why="'the size of their entries is not bounded: a b of norm 1e25 or 1e-25, whose square "
    "float32 cannot hold, is as valid': rescales a and b before CG, but by their 2-norms "
    "(jnp.linalg.norm squares the entries): b = 1e25 * randn(n) gives |b| = inf, b / |b| = 0 and "
    "x = 0 (relative error 1); b = 1e-25 * randn gives |b| = 0 and NaN",
)
def _rt10_portable_solve_norm_scaled(a, b):
    sa = jnp.linalg.norm(a)
    sb = jnp.linalg.norm(b)
    sb = jnp.where(sb > 0, sb, 1.0)
    x = _rt10_cg(a / sa, b / sb, 3 * a.shape[0] + 20)
    return (x * (sb / sa)).astype(b.dtype)


# ---- iree_run ---------------------------------------------------------------------------------


@wrong(
    "iree_run",
    why="'Return every output ... as a NumPy array': runs in IREE correctly but hands each output "
    "back through jnp.asarray (a jax.Array on XLA's CPU device, 'the same as JAX returns'), not "
    "a numpy.ndarray: wrong on any f, e.g. FLOWS['mlp'] (isinstance(out, np.ndarray) is False)",
)
def _rt10_iree_run_jax_arrays(f, *args):
    exported, module = _rt10_iree_module(f, args)
    outs = _rt10_outputs(module, args)
    return [
        jnp.asarray(np.asarray(o).astype(aval.dtype, copy=False).reshape(aval.shape))
        for o, aval in zip(outs, exported.out_avals, strict=True)
    ]


# ---- agreement_rtol ---------------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="'no looser than 32 * finfo(dtype).eps': 16 times finfo.resolution ('16 roundings of the "
    "dtype's decimal resolution') is 0.16 for bfloat16 (inside 32 eps = 0.25) but 1.6e-5 for "
    "float32, over four times looser than 32 * 1.19e-7 = 3.8e-6: wrong for 'float32'",
)
def _rt10_agreement_rtol_sixteen_resolutions(dtype: str) -> float:
    return 16 * float(jnp.finfo(dtype).resolution)


@wrong(
    "iree_verdict",
    why="'lapack' for 'linalg solves ... on CPU': files jax.lax.linalg.tridiagonal_solve with the "
    "'plain StableHLO' linalg ops (like lu_pivots_to_permutation and symmetric_product: JAX used "
    "to solve tridiagonal systems on CPU with a scan of the Thomas algorithm), but jax 0.12 lowers "
    "it on CPU to LAPACK's gtsv custom call: BANK 'tridiagonal_solve' is answered 'runs' instead "
    "of 'lapack'",
)
def _rt10_iree_verdict_tridiagonal_solve_as_scan(jaxpr) -> str:
    verdict = _rt10_verdict(jaxpr)
    if verdict != "lapack":
        return verdict
    prims = {e.primitive.name for e in _rt10_eqns(jaxpr.jaxpr)}
    if prims & _rt10_LAPACK == {"tridiagonal_solve"}:
        return "runs"
    return verdict
