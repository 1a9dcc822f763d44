"""Red-team round 11 wrong answers for phase 15, written from the contract only.

The `_rt11_ok_*` helpers are a correct answer the wrong ones start from (not registered: only
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

_rt11_CONTRACTIONS = ("matmul", "batch_matmul", "matvec", "vecmat")


def _rt11_iree_module(f, args):
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


def _rt11_outputs(module, args):
    result = module.main(*[np.asarray(a) for a in args])
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _rt11_last(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _rt11_op_names(instruction) -> set[str]:
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    if not m:
        return set()
    return {_rt11_last(part) for part in m.group(1).split(";") if part}


def _rt11_called(module, names):
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


def _rt11_xla_matmul_names(hlo_text: str) -> set[str]:
    module = parse_hlo(hlo_text)
    names: set[str] = set()
    for ins in module.entry.instructions:
        inside = [i for c in _rt11_called(module, ins.called_computations) for i in c.instructions]
        if ins.opcode == "dot" or any(i.opcode == "dot" for i in inside):
            for i in (ins, *inside):
                names |= _rt11_op_names(i)
    return names


def _rt11_iree_names(flow_text: str, kinds=_rt11_CONTRACTIONS) -> set[str]:
    names: set[str] = set()
    for d in iree.read_flow(flow_text):
        if kinds is None or d.kind in kinds:
            names |= set(d.sources)
    return names


_rt11_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "debug_print"})
_rt11_LAPACK = frozenset(
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


def _rt11_subjaxprs(value):
    if isinstance(value, jax.extend.core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax.extend.core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt11_subjaxprs(v)


def _rt11_eqns(jaxpr, params=None):
    for eqn in jaxpr.eqns:
        yield eqn
        for key, value in eqn.params.items():
            if params is not None and key not in params:
                continue
            for sub in _rt11_subjaxprs(value):
                yield from _rt11_eqns(sub, params)


def _rt11_is_key(var) -> bool:
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _rt11_verdict(closed, params=None, export_check=None) -> str:
    inner = closed.jaxpr
    eqns = list(_rt11_eqns(inner, params))
    prims = {e.primitive.name for e in eqns}
    pivoted = any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns)
    if export_check is not None:
        if export_check(closed, eqns):
            return "export"
    elif prims & _rt11_CALLBACKS or pivoted or "ormqr" in prims or "geqp3" in prims:
        return "export"
    if "sharding_constraint" in prims or any(map(_rt11_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    if prims & _rt11_LAPACK:
        return "lapack"
    return "runs"


def _rt11_cg(a, b, steps):
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


_rt11_LAPACK_WRAPPERS = frozenset(
    {
        "solve",
        "det",
        "inv",
        "cholesky",
        "eigh",
        "eigvals",
        "eig",
        "qr",
        "svd",
        "lstsq",
        "slogdet",
        "solve_triangular",
        "schur",
        "hessenberg",
        "pinv",
    }
)


@wrong(
    "iree_verdict",
    why="'what decides is the operations the program traces to, not the function's name': files "
    "every call of a jitted jax.numpy/scipy linalg wrapper by its NAME (the jit equation's "
    "name param: det, solve, ...) as 'lapack'; wrong on the small_determinant family "
    "(jnp.linalg.det of a 2x2 or 3x3 matrix, a closed form with no lu): says 'lapack', IREE runs it",
)
def _rt11_iree_verdict_linalg_by_name(jaxpr) -> str:
    base = _rt11_verdict(jaxpr)
    if base != "runs":
        return base
    for e in _rt11_eqns(jaxpr.jaxpr):
        if str(e.params.get("name", "")) in _rt11_LAPACK_WRAPPERS:
            return "lapack"
    return base


@wrong(
    "iree_verdict",
    why="'else lapack when it holds a LAPACK custom call' whatever the size: overgeneralises the "
    "README's det remark ('2x2 and 3x3 are closed forms') to every LAPACK primitive and says "
    "'runs' when the factored matrix is at most 3x3; wrong on the cholesky family with a 3x3 "
    "draw (programs._square draws n from 3) and on a 3x3 eigh: says 'runs', the export holds "
    "a LAPACK potrf/syevd call IREE refuses",
)
def _rt11_iree_verdict_small_is_closed_form(jaxpr) -> str:
    base = _rt11_verdict(jaxpr)
    if base != "lapack":
        return base
    for e in _rt11_eqns(jaxpr.jaxpr):
        if e.primitive.name in _rt11_LAPACK:
            dims = [d for v in e.invars for d in getattr(v.aval, "shape", ())[-2:]]
            if max(dims, default=0) >= 4:
                return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'sdy' only for a sharding constraint or a typed key among arguments/results: treats ANY "
    "equation carrying a sharding parameter that is set (pjit's in_shardings/out_shardings, "
    "which hold UnspecifiedValue objects, not None) as a Shardy annotation; wrong on the "
    "int_seed family (jax.random.normal(jax.random.key(s), shape) + x, a jitted _normal inside): "
    "says 'sdy', IREE runs it",
)
def _rt11_iree_verdict_any_sharding_param(jaxpr) -> str:
    base = _rt11_verdict(jaxpr)
    if base == "export":
        return base
    for e in _rt11_eqns(jaxpr.jaxpr):
        for k, v in e.params.items():
            if (
                "sharding" in k
                and v is not None
                and not (isinstance(v, tuple) and all(x is None for x in v))
            ):
                return "sdy"
    return base


@wrong(
    "batch_polymorphic",
    why="'IREE compiles the export once and runs it': builds the symbolic ShapeDtypeStruct with "
    "sharding=example.sharding ('keep everything of the example but the batch'); jax.export then "
    "writes `sdy.mesh @empty_mesh` and sdy.sharding arguments, which IREE cannot parse (Dialect "
    "sdy not found); wrong on any example, e.g. jnp.ones((4, 8)) with f = tanh",
)
def _rt11_batch_polymorphic_keeps_example_sharding(f, example: jax.Array) -> jax.export.Exported:
    rest = ", ".join(str(d) for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"b, {rest}" if rest else "b")
    sharding = getattr(example, "sharding", None)
    spec = jax.ShapeDtypeStruct(shape, example.dtype, sharding=sharding)
    return jax.export.export(jax.jit(f))(spec)


def _rt11_flops(flow_text: str, size_dtype) -> int:
    counts: dict[str, int] = {}
    for m in re.finditer(r"flow\.dispatch @[\w$.-]+::@([\w$.-]+)", flow_text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    total = 0
    for m in re.finditer(r"flow\.executable\.export\s+(?:\w+\s+)?@([\w$.-]+)", flow_text):
        name = m.group(1)
        n = re.match(
            r"\w+?_dispatch_\d+_(matmul|batch_matmul|matvec|vecmat)_([0-9x]+)_[a-z0-9x]+$", name
        )
        if not n:
            continue
        dims = np.array([int(s) for s in n.group(2).split("x")], dtype=size_dtype)
        total += int(2 * np.prod(dims, dtype=size_dtype)) * counts.get(name, 0)
    return total


@wrong(
    "matmul_flops",
    why="'A matmul named MxNxK does 2*M*N*K flops': parses the sizes into an np.int32 array "
    "('sizes are small ints') and multiplies there, which wraps past 2**31; right on every "
    "recording, wrong on main_dispatch_0_matmul_2048x2048x1024_f32 dispatched once "
    "(2*2^32 = 8589934592 flops, returns 0)",
)
def _rt11_matmul_flops_int32_sizes(flow_text: str) -> int:
    return _rt11_flops(flow_text, np.int32)


@wrong(
    "portable_solve",
    why="'any a and b whose x has a norm from 1e-30 to 1e30' with relative error <= 1e-3: CG warm "
    "started at x0 = b ('b is a decent first guess'), n + 5 steps; when x is far smaller than "
    "b (a, b = programs.spd_system(rng(3), 16, None), a scaled by 1e6 so |x| ~ 1e-6) the "
    "starting error is 1e6 times |x| and float32 roundings of a@x0 swamp x: measured relative "
    "error 28 (and nan for a scaled by 1e20, where a@b overflows); right on unscaled systems",
)
def _rt11_portable_solve_warm_start_b(a, b):
    n = a.shape[0]
    vec = b.ndim == 1
    bb = b[:, None] if vec else b

    def dot(u, v):
        return jnp.sum(u * v, axis=0)

    x0 = bb
    r0 = bb - a @ x0

    def step(_, state):
        x, r, p, rs = state
        ap = a @ p
        den = dot(p, ap)
        alpha = jnp.where(den != 0, rs / jnp.where(den != 0, den, 1), 0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = dot(r, r)
        beta = jnp.where(rs != 0, rs_new / jnp.where(rs != 0, rs, 1), 0)
        return x, r, r + beta * p, rs_new

    x, *_ = jax.lax.fori_loop(0, n + 5, step, (x0, r0, r0, dot(r0, r0)))
    return (x[:, 0] if vec else x).astype(b.dtype)


@wrong(
    "batch_polymorphic",
    why="'IREE compiles the export once and runs it at several batch sizes': exports for "
    "platforms=('cpu', 'cuda') ('portable: one module for every batch AND every platform'); a "
    "multi-platform export gives main a leading i32 `_platform_index` argument, so IREE's "
    "main(x) fails (INVALID_ARGUMENT: expected 2 arguments but passed 1); wrong on any example, "
    "e.g. f32[4, 3] with f = tanh",
)
def _rt11_batch_polymorphic_every_platform(f, example: jax.Array) -> jax.export.Exported:
    rest = ", ".join(str(d) for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"b, {rest}" if rest else "b")
    spec = jax.ShapeDtypeStruct(shape, example.dtype)
    return jax.export.export(jax.jit(f), platforms=("cpu", "cuda"))(spec)


@wrong(
    "merged_by_iree",
    why="'dot_general left out of both': leaves it in and trusts the set difference to cancel "
    "it, which holds only when both compilers keep a dot_general name; XLA:CPU writes a "
    "matrix-vector product as an ENTRY `dot` with NO metadata (its dot_general name goes to a "
    "bitcast outside any dot kernel), IREE's matvec dispatch holds dot_general: on "
    "f = lambda m, v: jnp.tanh(m @ v) * 2.0 with f32[48,40], f32[40] this returns "
    "({'mul', 'tanh', 'dot_general'}, set()) instead of ({'mul', 'tanh'}, set())",
)
def _rt11_merged_by_iree_difference_cancels_dot(hlo_text: str, flow_text: str):
    xla = _rt11_xla_matmul_names(hlo_text)
    ir = _rt11_iree_names(flow_text)
    return ir - xla, xla - ir


@wrong(
    "portable_solve",
    why="'b of shape (n, k)' (x has b's shape, each column solved): vectorised CG that takes the "
    "residual norm over the WHOLE block (jnp.vdot(r, r)) but p.Ap per column, so for k > 1 "
    "every column's step alpha_j = |R|_F^2 / (p_j.Ap_j) is wrong; right for a vector b and for "
    "k = 1; measured relative error 342 on programs.spd_system(default_rng(3), 16, 3)",
)
def _rt11_portable_solve_block_residual(a, b):
    n = a.shape[0]
    vec = b.ndim == 1
    bb = b[:, None] if vec else b
    scale = jnp.max(jnp.abs(bb))
    scale = jnp.where(scale > 0, scale, 1)
    ascale = jnp.max(jnp.abs(a))
    bn, an = bb / scale, a / ascale

    def step(_, state):
        x, r, p, rs = state
        ap = an @ p
        den = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(den != 0, rs / jnp.where(den != 0, den, 1), 0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.vdot(r, r)
        beta = jnp.where(rs != 0, rs_new / jnp.where(rs != 0, rs, 1), 0)
        return x, r, r + beta * p, rs_new

    x, *_ = jax.lax.fori_loop(0, 2 * n + 10, step, (jnp.zeros_like(bn), bn, bn, jnp.vdot(bn, bn)))
    x = x * (scale / ascale)
    return (x[:, 0] if vec else x).astype(b.dtype)


@wrong(
    "portable_solve",
    why="'n from 1 to 64' with 'b of shape (n,) or (n, k)': takes the system size from "
    "b.shape[-1] ('the length of b') and runs that many + 5 CG steps (scaled, guarded); right "
    "for a vector b, but for b (n, k) it runs k + 5 steps: on programs.spd_system(rng, 64, 2) "
    "7 steps of CG at condition number up to 100 leave a relative error far above 1e-3",
)
def _rt11_portable_solve_steps_from_b_last_dim(a, b):
    steps = b.shape[-1] + 5
    vec = b.ndim == 1
    bb = b[:, None] if vec else b
    sb = jnp.max(jnp.abs(bb))
    sb = jnp.where(sb > 0, sb, 1)
    sa = jnp.max(jnp.abs(a))
    x = _rt11_cg(a / sa, bb / sb, steps) * (sb / sa)
    return (x[:, 0] if vec else x).astype(b.dtype)
