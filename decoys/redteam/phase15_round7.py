"""Red team, phase 15, round 7: plausible wrong answers (see /work/notes/redteam.md)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo  # noqa: F401

_RT7_CACHE: dict = {}


@wrong(
    "iree_run",
    why="'Run f on args ... in IREE' for every f: caches the compiled vmfb keyed on "
    "(f.__name__, argument shapes and dtypes) because IREE keeps no compile cache; two different "
    "lambdas (both named '<lambda>') on the same f32[4] argument, e.g. lambda x: x * 2 then "
    "lambda x: x + 1, return the first one's values for the second",
)
def _rt7_iree_run_cache_by_name(f, *args):
    from iree import compiler, runtime

    arrays = [np.asarray(a) for a in args]
    key = (getattr(f, "__name__", "f"), tuple((a.shape, str(a.dtype)) for a in arrays))
    if key not in _RT7_CACHE:
        exported = jax.export.export(jax.jit(f))(
            *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        )
        vmfb = compiler.compile_str(
            exported.mlir_module(),
            target_backends=["llvm-cpu"],
            input_type="stablehlo",
            extra_args=["--iree-llvmcpu-target-cpu=generic"],
        )
        _RT7_CACHE[key] = (vmfb, exported.out_avals)
    vmfb, out_avals = _RT7_CACHE[key]
    module = runtime.load_vm_flatbuffer(vmfb, driver="local-task")
    result = module.main(*arrays)
    if not isinstance(result, (tuple, list)):
        result = [result]
    return [
        np.asarray(r.to_host() if hasattr(r, "to_host") else r).astype(av.dtype).reshape(av.shape)
        for r, av in zip(result, out_avals, strict=True)
    ]


_RT7_EXPORT_1DIGIT = re.compile(
    r"flow\.executable\.export\s+public\s+@((\w+?)_dispatch_\d_([a-z_]+?)_"
    r"((?:\d+|D)(?:x(?:\d+|D))*)_[a-z0-9x]+)\b"
)


@wrong(
    "matmul_flops",
    why="'<function>_dispatch_<index>_...': the export regex reads the index as ONE digit "
    "(_dispatch_\\d_), right on every listing with at most 10 dispatches (all recordings) but a "
    "matmul in dispatch 10 or later (e.g. a 4-layer MLP train step, main_dispatch_12_matmul_...) "
    "is never matched and counts 0",
)
def _rt7_matmul_flops_single_digit_index(flow_text):
    total = 0
    for m in _RT7_EXPORT_1DIGIT.finditer(flow_text):
        name, kind, dims = m.group(1), m.group(3), m.group(4)
        if kind not in ("matmul", "batch_matmul", "matvec", "vecmat") or "D" in dims:
            continue
        flops = 2
        for d in dims.split("x"):
            flops *= int(d)
        runs = len(
            re.findall(r"flow\.dispatch\s+@[\w$.-]+::@" + re.escape(name) + r"\b", flow_text)
        )
        total += flops * runs
    return total


@wrong(
    "matmul_flops",
    why="'An export counts once for every flow.dispatch op that runs it': counts the "
    "flow.dispatch ops of the executable by the textual `@<executable>::` prefix but looks it up "
    "as `@main_dispatch_1` without the `::`, so dispatch 1's count also takes the dispatches of "
    "executables 10-19 (`@main_dispatch_1` is a prefix of `@main_dispatch_12::`); wrong on any "
    "listing with 11+ dispatches where dispatch 1 is a matmul",
)
def _rt7_matmul_flops_prefix_count(flow_text):
    total = 0
    main = flow_text[flow_text.rfind("util.func") :] if "util.func" in flow_text else flow_text
    for d in iree.read_flow(flow_text):
        if d.kind not in ("matmul", "batch_matmul", "matvec", "vecmat"):
            continue
        if not d.sizes or any(s is None for s in d.sizes):
            continue
        runs = len(re.findall(r"flow\.dispatch\s+@" + re.escape(d.executable), main))
        total += 2 * int(np.prod(d.sizes)) * runs
    return total


def _rt7_last(name):
    return name.rsplit("/", 1)[-1]


def _rt7_xla_names_by(hlo_text, is_matmul_kernel, names_of_kernel):
    module = hlo_text
    entry_at = module.index("\nENTRY") if "\nENTRY" in module else module.index("ENTRY")
    bodies = {}
    for m in re.finditer(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*?\{\s*$(.*?)^\}", module, re.M | re.S):
        bodies[m.group(1)] = m.group(2)
    entry_text = module[entry_at:]
    entry_body = entry_text[: entry_text.index("\n}")]
    found = set()
    for line in entry_body.splitlines():
        if "=" not in line or " parameter(" in line:
            continue
        if is_matmul_kernel(line, bodies):
            found |= names_of_kernel(line, bodies)
    return found


def _rt7_op_names(text):
    out = set()
    for m in re.finditer(r'op_name="([^"]*)"', text):
        for part in m.group(1).split(";"):
            part = part.strip()
            if part:
                out.add(_rt7_last(part))
    return out


def _rt7_called(line, bodies, seen=None):
    seen = set() if seen is None else seen
    text = ""
    for m in re.finditer(r"(?:calls|to_apply)=%?([\w.\-]+)", line):
        c = m.group(1)
        if c in seen or c not in bodies:
            continue
        seen.add(c)
        text += bodies[c] + "\n"
        for inner in bodies[c].splitlines():
            text += _rt7_called(inner, bodies, seen)
    return text


def _rt7_iree_side(flow_text):
    out = set()
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul", "matvec", "vecmat"):
            out |= set(d.sources)
    return out


@wrong(
    "merged_by_iree",
    why="'XLA's matmul kernels are the instructions ... that are a dot or whose called "
    "computations hold one' (a fact about opcodes): recognises them by the instruction's NAME "
    "(dot/ynn/gemm/matmul); XLA:CPU also names a YNN library fusion that holds no dot "
    "'ynn_fusion': in train_step the b1 gradient (a reduce_sum) is %ynn_fusion, so its names "
    "land on XLA's side and the IREE-only set loses them",
)
def _rt7_merged_xla_kernels_by_name(hlo_text, flow_text):
    def is_mm(line, bodies):
        name = line.split("=", 1)[0].strip().removeprefix("ROOT").strip().lstrip("%")
        return bool(re.search(r"dot|ynn|gemm|matmul|onednn", name))

    def names(line, bodies):
        return _rt7_op_names(line) | _rt7_op_names(_rt7_called(line, bodies))

    xla = _rt7_xla_names_by(hlo_text, is_mm, names)
    ir = _rt7_iree_side(flow_text)
    xla.discard("dot_general")
    ir.discard("dot_general")
    return ir - xla, xla - ir


_RT7_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "eig",
    "svd",
    "qr",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
    "triangular_solve",
    "householder_product",
    "geqrf",
}
_RT7_CALLBACK = {"pure_callback", "io_callback", "debug_callback", "debug_print"}


def _rt7_subjaxprs(eqn):
    for v in eqn.params.values():
        vals = v if isinstance(v, (tuple, list)) else (v,)
        for x in vals:
            if hasattr(x, "eqns"):
                yield x
            elif hasattr(x, "jaxpr") and hasattr(x.jaxpr, "eqns"):
                yield x.jaxpr


def _rt7_prims(jaxpr):
    for e in jaxpr.eqns:
        yield e
        for sub in _rt7_subjaxprs(e):
            yield from _rt7_prims(sub)


def _rt7_is_key(aval):
    try:
        return jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)
    except Exception:
        return False


def _rt7_verdict(jaxpr, export_prims, lapack_prims):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    eqns = list(_rt7_prims(inner))
    names = {e.primitive.name for e in eqns}
    if names & export_prims or any(
        e.primitive.name == "qr" and e.params.get("pivoting") and "qr" in export_prims for e in eqns
    ):
        return "export"
    avals = [v.aval for v in inner.invars] + [v.aval for v in inner.outvars]
    if "sharding_constraint" in names or any(_rt7_is_key(a) for a in avals):
        return "sdy"
    if names & lapack_prims:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'a qr with pivoting=True lowers to geqp3' -> 'export': decides by primitive names "
    "only, and the docstring's names (geqp3, ormqr) are not primitives: jax.lax.linalg.qr(a, "
    "pivoting=True) is the primitive `qr` with param pivoting=True, so the pivoted-QR family "
    "gets 'lapack' instead of 'export'",
)
def _rt7_verdict_pivoting_by_name(jaxpr):
    return _rt7_verdict(jaxpr, _RT7_CALLBACK | {"geqp3", "ormqr"}, _RT7_LAPACK)


@wrong(
    "iree_verdict",
    why="only geqp3 and ormqr are custom calls without a compatibility guarantee; this groups "
    "householder_product (orgqr, 'the other Householder product') with ormqr as 'export', so "
    "jax.lax.linalg.householder_product(a, taus) (a LAPACK call IREE refuses: 'lapack') is "
    "answered 'export'",
)
def _rt7_verdict_householder_as_export(jaxpr):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    eqns = list(_rt7_prims(inner))
    if any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns):
        return "export"
    return _rt7_verdict(
        jaxpr,
        _RT7_CALLBACK | {"ormqr", "householder_product"},
        _RT7_LAPACK - {"householder_product"},
    )


@wrong(
    "batch_polymorphic",
    why="'accept every size from 1 up': bounds the batch with constraints=['b <= 1024'] "
    "('IREE needs an upper bound to size its buffers'); the export refuses a batch of 2048 "
    "(shape assertion), although every batch must be served",
)
def _rt7_batch_upper_bound(f, example):
    rest = ", ".join(str(d) for d in example.shape[1:])
    spec = f"b, {rest}" if rest else "b"
    (b, *others) = jax.export.symbolic_shape(spec, constraints=["b <= 1024"])
    arg = jax.ShapeDtypeStruct((b, *others), example.dtype)
    return jax.export.export(jax.jit(f))(arg)


@wrong(
    "portable_solve",
    why="'a is symmetric positive definite with condition number <= 100' (not diagonally "
    "dominant): Jacobi iteration (only adds and divides, 300 sweeps) converges only when the "
    "spectral radius of I - D^-1 a is < 1; for a = Q diag(1..100) Q^T with n = 16 it is > 1 "
    "and x diverges (relative error >> 1e-3)",
)
def _rt7_solve_jacobi(a, b):
    d = jnp.diagonal(a)
    dd = d[:, None] if b.ndim == 2 else d

    def body(_, x):
        return x + (b - a @ x) / dd

    return jax.lax.fori_loop(0, 300, body, jnp.zeros_like(b))


@wrong(
    "portable_solve",
    why="relative error <= 1e-3 whatever the scale of b: conjugate gradients stopped by an "
    "ABSOLUTE test r.r < 1e-12; for b of norm 1e-7 (a valid f32 b) the test holds before the "
    "first step and x = 0 is returned (relative error 1)",
)
def _rt7_solve_cg_absolute_tol(a, b):
    vec = b.ndim == 1
    B = b[:, None] if vec else b

    def solve_col(bc):
        x0 = jnp.zeros_like(bc)
        r0 = bc
        state = (0, x0, r0, r0, r0 @ r0)

        def cond(s):
            i, _, _, _, rs = s
            return (i < 4 * bc.shape[0] + 10) & (rs >= 1e-12)

        def body(s):
            i, x, r, p, rs = s
            ap = a @ p
            alpha = rs / (p @ ap)
            x = x + alpha * p
            r = r - alpha * ap
            rs_new = r @ r
            p = r + (rs_new / rs) * p
            return i + 1, x, r, p, rs_new

        return jax.lax.while_loop(cond, body, state)[1]

    X = jax.vmap(solve_col, in_axes=1, out_axes=1)(B)
    return X[:, 0] if vec else X


@wrong(
    "portable_solve",
    why="'relative error <= 1e-3' for condition number up to 100 and n up to 64: conjugate "
    "gradients on the normal equations a^T a x = a^T b (CGNR, 'safe for any matrix') run for n "
    "steps; the normal equations square the condition number (1e4), so in float32 n steps do "
    "not reach 1e-3 on a = Q diag(geomspace(1, 100, 64)) Q^T, n = 64",
)
def _rt7_solve_cgnr(a, b):
    n = a.shape[0]
    vec = b.ndim == 1
    B = b[:, None] if vec else b
    at = a.T
    rhs = at @ B

    def solve_col(c):
        x = jnp.zeros_like(c)
        r = c
        p = r
        rs = r @ r

        def body(_, s):
            x, r, p, rs = s
            ap = at @ (a @ p)
            alpha = rs / jnp.maximum(p @ ap, 1e-30)
            x = x + alpha * p
            r = r - alpha * ap
            rs_new = r @ r
            p = r + (rs_new / jnp.maximum(rs, 1e-30)) * p
            return x, r, p, rs_new

        return jax.lax.fori_loop(0, n, body, (x, r, p, rs))[0]

    X = jax.vmap(solve_col, in_axes=1, out_axes=1)(rhs)
    return X[:, 0] if vec else X


@wrong(
    "agreement_rtol",
    why="'must not exceed it on any fresh draw': a textbook pairwise-summation bound, "
    "log2(256) = 8 roundings for the 256-long rows of layernorm_softmax, gives 8 eps = 9.54e-07 "
    "in float32, just under the 9.59e-07 recorded for layernorm_softmax (recorded/agreement.txt, "
    "worst of seeds 0-63): the tanh/exp approximations add roundings the summation bound omits",
)
def _rt7_rtol_pairwise_log2(dtype):
    longest_row = 256  # layernorm_softmax's rows; the mlp contracts over 64 and 128
    return float(np.log2(longest_row) * jnp.finfo(dtype).eps)
