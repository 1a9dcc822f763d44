"""Red team, phase 15, round 16: an IREE module cache keyed by f's code object, a tolerance
measured on three draws, a batch
export that vmaps f over single rows, an SPD solve scaled by the trace (overflows), GMRES as the
"custom-call free" solver (it calls potrf/trsm), BiCGSTAB unscaled, svd filed with the unguaranteed
LAPACK calls, typed keys spotted with isinstance(dtype, prng_key), the sharding constraint looked
up by its API name, Gauss-Seidel for 2n sweeps, and "only IREE's matmul kernels hold" read as
"held by no other IREE dispatch"."""

from __future__ import annotations

import re

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

_rt16_MATMUL_KINDS = ("matmul", "batch_matmul", "matvec", "vecmat")


# ---------------------------------------------------------------- shared helpers


def _rt16_compile(f, arrays):
    import iree.compiler as ireec
    import iree.runtime as ireert

    exported = jax.export.export(jax.jit(f))(*arrays)
    vmfb = ireec.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    return exported, ireert.load_vm_flatbuffer(vmfb, driver="local-task")


def _rt16_host(o):
    return np.asarray(o.to_host() if hasattr(o, "to_host") else o)


def _rt16_last(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _rt16_op_names(instruction) -> set[str]:
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    if not m:
        return set()
    return {_rt16_last(part) for part in m.group(1).split(";") if part}


def _rt16_called(module, names):
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


def _rt16_xla_kernels(hlo_text: str):
    """(names per ENTRY kernel, is it a matmul kernel) for every ENTRY instruction."""
    module = parse_hlo(hlo_text)
    out = []
    for ins in module.entry.instructions:
        inside = [i for c in _rt16_called(module, ins.called_computations) for i in c.instructions]
        names: set[str] = set()
        for i in (ins, *inside):
            names |= _rt16_op_names(i)
        is_dot = ins.opcode == "dot" or any(i.opcode == "dot" for i in inside)
        out.append((names, is_dot))
    return out


def _rt16_walk(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    yield from _rt16_walk(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    yield from _rt16_walk(sub)


_rt16_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "debug_print"})
_rt16_LAPACK = frozenset(
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


def _rt16_verdict(
    jaxpr, *, unguaranteed=frozenset({"ormqr"}), is_key=None, constraint="sharding_constraint"
) -> str:
    inner = jaxpr.jaxpr
    eqns = list(_rt16_walk(inner))
    names = {e.primitive.name for e in eqns}
    pivoted = any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns)
    if names & (_rt16_CALLBACKS | unguaranteed) or pivoted:
        return "export"
    if is_key is None:

        def is_key(v):
            dt = getattr(getattr(v, "aval", None), "dtype", None)
            return dt is not None and jax.dtypes.issubdtype(dt, jax.dtypes.prng_key)

    keys = any(is_key(v) for v in list(inner.invars) + list(inner.outvars))
    if constraint in names or keys:
        return "sdy"
    if names & _rt16_LAPACK:
        return "lapack"
    return "runs"


# ---------------------------------------------------------------- task 1: iree_run


_rt16_MODULES: dict = {}


@wrong(
    "iree_run",
    why="Clause 'Run f on args ... in IREE' (each call): caches the compiled module by "
    "(f.__code__, argument shapes and dtypes) so that re-created lambdas hit the cache, but two "
    "closures from one factory share their code and differ only in what they capture; wrong on "
    "scale = lambda w: (lambda x: x * w); iree_run(scale(2.0), x) then iree_run(scale(3.0), x) "
    "with x f32[4]: the second call returns 2x, not 3x.",
)
def _rt16_iree_run_cache_by_code(f, *args) -> list[np.ndarray]:
    arrays = [np.asarray(a) for a in args]
    code = getattr(f, "__code__", None)
    key = (code if code is not None else id(f), tuple((a.shape, str(a.dtype)) for a in arrays))
    hit = _rt16_MODULES.get(key)
    if hit is None:
        exported, module = _rt16_compile(f, arrays)
        hit = (module, [(tuple(v.shape), v.dtype) for v in exported.out_avals])
        _rt16_MODULES[key] = hit
    module, avals = hit
    result = module.main(*arrays)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    return [_rt16_host(o).astype(dt).reshape(shape) for o, (shape, dt) in zip(outs, avals)]


# ---------------------------------------------------------------- task 2: agreement_rtol

_rt16_MEASURED: dict = {}


@wrong(
    "agreement_rtol",
    why="Clause 'must not exceed it on any fresh draw': measures instead of bounding: runs both "
    "ROUND_TRIPS programs through IREE and JAX on seeds 0-2 and returns 1.5x the worst ratio "
    "seen (capped at 32 eps); three draws do not see the tail: for float32 it returns 1.01e-6, "
    "and layernorm_softmax on standard-normal draws from np.random.default_rng(14) "
    "(x, g, b drawn in turn) reaches 1.17e-6 (4 of seeds 3-79 exceed it).",
)
def _rt16_agreement_rtol_measured_three_draws(dtype: str) -> float:
    if dtype in _rt16_MEASURED:
        return _rt16_MEASURED[dtype]
    from katas.phase15 import programs

    worst = 0.0
    for flow in programs.ROUND_TRIPS.values():
        zeros = [np.zeros(shape, jnp.dtype(dtype)) for shape, _ in flow.shapes]
        _, module = _rt16_compile(flow.fn, zeros)
        for seed in range(3):
            rng = np.random.default_rng(seed)
            args = [rng.standard_normal(shape).astype(jnp.dtype(dtype)) for shape, _ in flow.shapes]
            got = module.main(*args)
            got = list(got) if isinstance(got, (tuple, list)) else [got]
            want = jax.tree.leaves(jax.jit(flow.fn)(*args))
            for g, w in zip(got, want):
                g64 = _rt16_host(g).astype(np.float64)
                w64 = np.asarray(w, np.float64)
                worst = max(worst, float(np.max(np.abs(g64 - w64)) / np.max(np.abs(w64))))
    value = min(1.5 * worst, 32 * float(jnp.finfo(dtype).eps))
    _rt16_MEASURED[dtype] = value
    return value


# ---------------------------------------------------------------- task 7: batch_polymorphic


@wrong(
    "batch_polymorphic",
    why="Clause 'f takes one array whose leading axis is a batch ... and maps each row "
    "independently': reads f as a per-row function and exports jax.jit(jax.vmap(f)) with the "
    "symbolic batch, so f sees one row with the batch axis gone; equal for elementwise or x @ w, "
    "but wrong for f = lambda x: x.reshape(x.shape[0], -1) * 2 on example f32[4, 3, 5] (the "
    "export's output is (b, 3, 5), JAX's f gives (b, 15)).",
)
def _rt16_batch_polymorphic_vmap_rows(f, example: jax.Array) -> jax.export.Exported:
    rest = ", ".join(str(d) for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"b, {rest}" if rest else "b")
    spec = jax.ShapeDtypeStruct(shape, example.dtype)
    return jax.export.export(jax.jit(jax.vmap(f)))(spec)


# ---------------------------------------------------------------- task 8: portable_solve


def _rt16_cg(a, b, steps):
    def body(_, state):
        x, r, p, rs = state
        ap = a @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rs / jnp.where(pap > 0, pap, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rs > 0, rs_new / jnp.where(rs > 0, rs, 1.0), 0.0)
        return x, r, r + beta * p, rs_new

    state = (jnp.zeros_like(b), b, b, jnp.sum(b * b, axis=0))
    return jax.lax.fori_loop(0, steps, body, state)[0]


@wrong(
    "portable_solve",
    why="Clause 'the size of their entries is not bounded' (a's too): scales a by its mean "
    "eigenvalue trace(a)/n and b by max|b| before 3n CG steps; the float32 trace of an a with "
    "entries near 1e37 is inf, so a becomes 0 and x comes out 0: wrong on "
    "a = 1e36 * spd_system(rng, 16, None)[0], b = a @ (1e-10 * randn(16)) (x norm ~4e-10, in range).",
)
def _rt16_portable_solve_trace_scale(a: jax.Array, b: jax.Array) -> jax.Array:
    n = a.shape[0]
    sa = jnp.trace(a) / n
    sb = jnp.max(jnp.abs(b))
    sb = jnp.where(sb > 0, sb, 1.0)
    x = _rt16_cg(a / sa, b / sb, 3 * n + 10)
    return (x * (sb / sa)).astype(b.dtype)


@wrong(
    "portable_solve",
    why="Clause 'written so that its export holds no custom call': uses "
    "jax.scipy.sparse.linalg.gmres ('an iterative Krylov solver, only matvecs'), but its "
    "restart step solves the small least-squares system with a Cholesky and triangular solves, "
    "so the export holds lapack_spotrf_ffi and lapack_strsm_ffi custom calls that IREE "
    "refuses; wrong on every input, e.g. programs.spd_system(rng, 8, None).",
)
def _rt16_portable_solve_gmres(a: jax.Array, b: jax.Array) -> jax.Array:
    n = a.shape[0]
    scale = jnp.max(jnp.abs(b))
    scale = jnp.where(scale > 0, scale, 1.0)
    sa = jnp.max(jnp.abs(a))
    x, _ = jax.scipy.sparse.linalg.gmres(
        lambda v: (a / sa) @ v, b / scale, tol=1e-7, restart=n, maxiter=4
    )
    return (x * (scale / sa)).astype(b.dtype)


@wrong(
    "portable_solve",
    why="Clause 'a b of norm 1e-25 or 1e25, whose square float32 cannot hold, is as valid': calls "
    "jax.scipy.sparse.linalg.bicgstab(a @ ., b, tol=1e-6) unscaled; its stopping test squares "
    "|b| (inf for b = 1e25 * randn(n), 0 for 1e-25 * randn(n)), so the loop never starts and x "
    "stays 0: wrong on programs.spd_system(rng, 8, None) with b multiplied by 1e25.",
)
def _rt16_portable_solve_bicgstab(a: jax.Array, b: jax.Array) -> jax.Array:
    x, _ = jax.scipy.sparse.linalg.bicgstab(lambda v: a @ v, b, tol=1e-6, maxiter=10 * a.shape[0])
    return x.astype(b.dtype)


# ---------------------------------------------------------------- task 5: iree_verdict


@wrong(
    "iree_verdict",
    why="Clause 'a custom call jax gives no compatibility guarantee: LAPACK's geqp3 ... and "
    "ormqr': also files svd (gesdd, 'the divide-and-conquer SVD is not in the stable list') "
    "under 'export', but jax.export accepts it and IREE fails on the LAPACK call: wrong on "
    "BANK 'svd' (answers 'export', the verdict is 'lapack').",
)
def _rt16_iree_verdict_svd_unguaranteed(jaxpr) -> str:
    return _rt16_verdict(jaxpr, unguaranteed=frozenset({"ormqr", "svd"}))


@wrong(
    "iree_verdict",
    why="Clause 'a typed PRNG key among the arguments or results' -> 'sdy': recognises a key "
    "with isinstance(aval.dtype, jax.dtypes.prng_key), but a key's dtype is a KeyTy instance "
    "whose .type is prng_key (isinstance is False; jax.dtypes.issubdtype is the test), so no "
    "key is ever found: wrong on BANK 'typed_key' and 'key_result' (answers 'runs', not 'sdy').",
)
def _rt16_iree_verdict_isinstance_key(jaxpr) -> str:
    def is_key(v):
        dt = getattr(getattr(v, "aval", None), "dtype", None)
        return isinstance(dt, jax.dtypes.prng_key)

    return _rt16_verdict(jaxpr, is_key=is_key)


@wrong(
    "iree_verdict",
    why="Clause '\"sdy\" when the export holds Shardy operations (... for a sharding constraint)': "
    "looks for the primitive by the API's name 'with_sharding_constraint', but the jaxpr "
    "equation jax.lax.with_sharding_constraint binds is named 'sharding_constraint', so the "
    "constraint is never seen: wrong on BANK 'sharding_constraint' (answers 'runs', not 'sdy').",
)
def _rt16_iree_verdict_api_name_constraint(jaxpr) -> str:
    return _rt16_verdict(jaxpr, constraint="with_sharding_constraint")


# ---------------------------------------------------------------- task 4: merged_by_iree


def _rt16_iree_sets(flow_text: str):
    inside, outside = set(), set()
    for d in iree.read_flow(flow_text):
        (inside if d.kind in _rt16_MATMUL_KINDS else outside).update(d.sources)
    return inside, outside


@wrong(
    "merged_by_iree",
    why="Clause 'the names only IREE's matmul kernels hold': reads 'only' as 'held by IREE's "
    "matmul kernels and by no other IREE dispatch', so a name IREE also computes elsewhere is "
    "dropped before comparing with XLA; wrong on programs.attention, whose batch_matmul dispatch "
    "holds the 1/sqrt(d) 'div' that the softmax dispatch holds too ('div' is lost from IREE's set).",
)
def _rt16_merged_by_iree_exclusive_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    inside, outside = _rt16_iree_sets(flow_text)
    iree_names = inside - outside
    xla_names: set[str] = set()
    for names, is_dot in _rt16_xla_kernels(hlo_text):
        if is_dot:
            xla_names |= names
    iree_names.discard("dot_general")
    xla_names.discard("dot_general")
    return iree_names - xla_names, xla_names - iree_names


@wrong(
    "portable_solve",
    why="Clause 'relative error of at most 1e-3' for condition number up to 100: Gauss-Seidel "
    "sweeps ('converges for every SPD matrix, faster than Jacobi'), 2n sweeps of the scaled system "
    "as if it finished like CG; its rate is set by the condition number, not n, so on "
    "programs.spd_system(np.random.default_rng(0), 8, None) the relative error is about 0.45 "
    "(and 2.9e-3 for n = 64, seed 2).",
)
def _rt16_portable_solve_gauss_seidel(a: jax.Array, b: jax.Array) -> jax.Array:
    n = a.shape[0]
    sa = jnp.max(jnp.abs(a))
    sb = jnp.max(jnp.abs(b))
    sb = jnp.where(sb > 0, sb, 1.0)
    an, bn = a / sa, b / sb
    diag = jnp.diagonal(an)

    def row(i, x):
        xi = (bn[i] - an[i] @ x + diag[i] * x[i]) / diag[i]
        return x.at[i].set(xi)

    def sweep(_, x):
        return jax.lax.fori_loop(0, n, row, x)

    x = jax.lax.fori_loop(0, 2 * n, sweep, jnp.zeros_like(bn))
    return (x * (sb / sa)).astype(b.dtype)
