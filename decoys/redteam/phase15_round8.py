"""Red team, phase 15, round 8: plausible wrong answers (see /work/notes/redteam.md)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree

_RT8_MM_KINDS = ("matmul", "batch_matmul", "matvec", "vecmat")

# ---------------------------------------------------------------- matmul_flops

_RT8_MAIN_EXPORT = re.compile(
    r"flow\.executable\.export\s+public\s+@(main_dispatch_(\d+)_([a-z_]+?)_((?:\d+|D)(?:x(?:\d+|D))*)_([a-z]+\d+))\b"
)


@wrong(
    "matmul_flops",
    why="'each flow.executable.export is named <function>_dispatch_<index>_...': hard-codes the "
    "function as `main` (what jax.export always writes), so a listing whose function is another "
    "name (e.g. `forward_dispatch_0_matmul_32x128x64_f32`, dispatched as "
    "`flow.dispatch @forward_dispatch_0::@forward_dispatch_0_matmul_32x128x64_f32`) counts 0 "
    "instead of 2*32*128*64",
)
def _rt8_matmul_flops_main_hardcoded(flow_text):
    total = 0
    for m in _RT8_MAIN_EXPORT.finditer(flow_text):
        name, kind, dims = m.group(1), m.group(3), m.group(4)
        if kind not in _RT8_MM_KINDS or "D" in dims.split("x"):
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
    why="'a batch_matmul BxMxNxK does 2*B*M*N*K': reads every contraction from its LAST dims "
    "(M, N, K are always the trailing three; a matvec/vecmat its two), so the batch B is "
    "dropped: recorded/attention.mlir's two batch_matmul_4x16x24x32 / 4x16x32x24 dispatches "
    "give 2*16*24*32 each (49152 in all) instead of 4x that (196608)",
)
def _rt8_matmul_flops_last_three_dims(flow_text):
    main = flow_text[flow_text.rfind("util.func") :]
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind not in _RT8_MM_KINDS or not d.sizes or any(s is None for s in d.sizes):
            continue
        dims = d.sizes[-3:] if d.kind in ("matmul", "batch_matmul") else d.sizes[-2:]
        runs = len(re.findall(r"flow\.dispatch\s+@" + re.escape(d.executable) + r"::", main))
        total += 2 * int(np.prod(dims)) * runs
    return total


# ---------------------------------------------------------------- merged_by_iree


def _rt8_last(name):
    return name.rsplit("/", 1)[-1]


def _rt8_op_names(text):
    out = set()
    for m in re.finditer(r'op_name="([^"]*)"', text):
        for part in m.group(1).split(";"):
            part = part.strip()
            if part:
                out.add(_rt8_last(part))
    return out


def _rt8_bodies(hlo_text):
    bodies = {}
    for m in re.finditer(
        r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*?\{\s*$(.*?)^\}", hlo_text, re.M | re.S
    ):
        bodies[m.group(1)] = m.group(2)
    return bodies


def _rt8_called(line, bodies, seen):
    text = ""
    for m in re.finditer(r"(?:calls|to_apply|called_computations)=\{?%?([\w.\-]+)", line):
        c = m.group(1)
        if c in seen or c not in bodies:
            continue
        seen.add(c)
        text += bodies[c] + "\n"
        for inner in bodies[c].splitlines():
            text += _rt8_called(inner, bodies, seen)
    return text


def _rt8_xla_side(hlo_text):
    bodies = _rt8_bodies(hlo_text)
    entry = re.search(r"^ENTRY\s+%?([\w.\-]+)", hlo_text, re.M).group(1)
    found = set()
    for line in bodies[entry].splitlines():
        if "=" not in line or " parameter(" in line:
            continue
        inner = _rt8_called(line, bodies, set())
        if re.search(r"\sdot\(", line) or re.search(r"\sdot\(", inner):
            found |= _rt8_op_names(line) | _rt8_op_names(inner)
    return found


_RT8_CALLSITE = re.compile(r'loc\(callsite\("[^"]*"\s+at\s+([^\n]*?)\)+(?:\s|$)')


@wrong(
    "merged_by_iree",
    why='\'for an operation inside a called jit the callee of loc(callsite("div" at '
    '"jit(f)/jit(silu)")) (what it is called from is not an operation)\': also adds the '
    "caller's last part, so a program whose matmul epilogue is a nested jit (x @ w then "
    "jax.jit(jax.nn.silu)) reports 'jit(silu)' among the names only IREE's matmul kernels hold",
)
def _rt8_merged_by_iree_callsite_callers(hlo_text, flow_text):
    ir = set()
    dispatches = iree.read_flow(flow_text)
    chunks = re.split(r"(?=flow\.executable private @)", flow_text)
    for d in dispatches:
        if d.kind not in _RT8_MM_KINDS:
            continue
        ir |= set(d.sources)
        for chunk in chunks:
            if chunk.startswith(f"flow.executable private @{d.executable} "):
                for m in _RT8_CALLSITE.finditer(chunk):
                    for caller in re.findall(r'"([^"]*)"', m.group(1)):
                        if "/" in caller:
                            ir.add(_rt8_last(caller))
    xla = _rt8_xla_side(hlo_text)
    ir.discard("dot_general")
    xla.discard("dot_general")
    return ir - xla, xla - ir


# ---------------------------------------------------------------- iree_verdict


def _rt8_subjaxprs(eqn):
    for v in eqn.params.values():
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if hasattr(x, "eqns"):
                yield x
            elif hasattr(x, "jaxpr") and hasattr(x.jaxpr, "eqns"):
                yield x.jaxpr


def _rt8_eqns(jaxpr):
    for e in jaxpr.eqns:
        yield e
        for sub in _rt8_subjaxprs(e):
            yield from _rt8_eqns(sub)


def _rt8_is_key(aval):
    try:
        return jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)
    except Exception:
        return False


@wrong(
    "iree_verdict",
    why="'lapack' for 'linalg solves, factorizations and decompositions on CPU': the LAPACK set "
    "is the operations the README names (solve->lu, cholesky, eigh, schur) plus the usual qr, "
    "svd, eig, triangular_solve; hessenberg (gehrd), tridiagonal (sytrd), tridiagonal_solve "
    "(gtsv) and householder_product (orgqr) are LAPACK calls too, so "
    "jax.scipy.linalg.hessenberg(a, calc_q=False) * 2.0 is answered 'runs' instead of 'lapack'",
)
def _rt8_iree_verdict_readme_lapack_only(jaxpr):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    eqns = list(_rt8_eqns(inner))
    names = {e.primitive.name for e in eqns}
    if names & {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr"} or any(
        e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns
    ):
        return "export"
    avals = [v.aval for v in inner.invars] + [v.aval for v in inner.outvars]
    if "sharding_constraint" in names or any(_rt8_is_key(a) for a in avals):
        return "sdy"
    if names & {"lu", "cholesky", "eigh", "schur", "qr", "svd", "eig", "triangular_solve"}:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'for a typed PRNG key among the arguments or results' (a key TYPE): counts an "
    "argument that feeds random_seed/random_wrap as a key argument, since 'it is the key'; "
    "the int_seed family (s -> jax.random.normal(jax.random.key(s), x.shape) + x, an int32 "
    "seed argument, no key among the arguments or results) is 'runs', answered 'sdy'",
)
def _rt8_iree_verdict_seed_arg_is_key(jaxpr):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    eqns = list(_rt8_eqns(inner))
    names = {e.primitive.name for e in eqns}
    if names & {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr"} or any(
        e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns
    ):
        return "export"
    seeded_args = {
        id(v)
        for e in inner.eqns
        if e.primitive.name in ("random_seed", "random_wrap")
        for v in e.invars
        if v in inner.invars
    }
    keyish = any(str(a).startswith("key<") for a in jaxpr.in_avals + jaxpr.out_avals)
    if "sharding_constraint" in names or keyish or seeded_args:
        return "sdy"
    lapack = {
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
    }
    if names & lapack:
        return "lapack"
    return "runs"


# ---------------------------------------------------------------- export_facts


@wrong(
    "export_facts",
    why="'the StableHLO version its module's bytecode was written for': takes the first "
    "MAJOR.MINOR.PATCH in the serialized blob without deserializing; the flatbuffer records "
    "the jax version first, so an export from jax 0.12.0.1 answers '0.12.0' instead of the "
    "bytecode's '1.18.0' (StableHLO_v1.18.0)",
)
def _rt8_export_facts_first_version_in_blob(blob):
    m = re.search(rb"(\d+)\.(\d+)\.(\d+)", bytes(blob))
    version = ".".join(g.decode() for g in m.groups())
    exp = jax.export.deserialize(bytearray(blob))
    return version, int(exp.calling_convention_version), tuple(p.lower() for p in exp.platforms)


# ---------------------------------------------------------------- agreement_rtol


@wrong(
    "agreement_rtol",
    why="'must not exceed it on any fresh draw': per-dtype rounding count, 16 eps for float32 "
    "(long f32 reductions, tanh/exp approximations) but only 2 eps for bfloat16 ('the math runs "
    "in f32 inside, only the input and output roundings are bf16'): 2 * 2^-7 = 0.0156 is below "
    "the 0.0244 recorded for bfloat16 layernorm_softmax (recorded/agreement.txt)",
)
def _rt8_agreement_rtol_bf16_two_roundings(dtype):
    eps = float(jnp.finfo(dtype).eps)
    return (2.0 if jnp.dtype(dtype) == jnp.bfloat16 else 16.0) * eps


# ---------------------------------------------------------------- portable_solve


@wrong(
    "portable_solve",
    why="relative error <= 1e-3 for condition number up to 100 and n up to 64: Richardson "
    "iteration (gradient descent, x += w (b - a x)) with the safe step w = 1/||a||_F and 400 "
    "steps; ||a||_F is about sqrt(n) times larger than lambda_max, so for n = 64, eigenvalues "
    "1..100 the slowest mode contracts by only (1 - 1/||a||_F)^400: relative error ~0.2 "
    "(programs.spd_system(rng, 64, 3)); even n = 4 leaves ~0.05",
)
def _rt8_portable_solve_richardson(a, b):
    w = 1.0 / jnp.sqrt(jnp.sum(a * a))

    def body(_, x):
        return x + w * (b - a @ x)

    return jax.lax.fori_loop(0, 400, body, jnp.zeros_like(b))


@wrong(
    "portable_solve",
    why="'condition number at most 100' is a ratio, not eigenvalues in [1, 100]: Chebyshev "
    "iteration with bounds fixed at [1, 100] (what programs.spd_system draws) and 120 steps; "
    "for the same system scaled a' = 1e-3 * a (valid: condition 100, entries unbounded) "
    "the iteration polynomial is evaluated outside its interval and x is far off (relative "
    "error ~ 1)",
)
def _rt8_portable_solve_chebyshev_fixed_bounds(a, b):
    lo, hi = 1.0, 100.0
    theta, delta = (hi + lo) / 2.0, (hi - lo) / 2.0
    sigma = theta / delta
    rho = 1.0 / sigma
    x = jnp.zeros_like(b)
    r = b
    d = r / theta
    for _ in range(120):
        x = x + d
        r = r - a @ d
        rho_new = 1.0 / (2.0 * sigma - rho)
        d = rho_new * rho * d + (2.0 * rho_new / delta) * r
        rho = rho_new
    return x


@wrong(
    "portable_solve",
    why="relative error <= 1e-3 for every n from 1 to 64 with condition number <= 100: steepest "
    "descent with exact line search (only matmuls, dots and divides) run for 10*n steps 'like "
    "CG needs n'; its error falls by (k-1)/(k+1) = 0.98 a step, so for n = 4 (40 steps, "
    "programs.spd_system(rng, 4, None)) the error is still far above 1e-3",
)
def _rt8_portable_solve_steepest_descent_10n(a, b):
    n = a.shape[0]
    vec = b.ndim == 1
    B = b[:, None] if vec else b

    def body(_, x):
        r = B - a @ x
        ar = a @ r
        alpha = jnp.sum(r * r, 0) / jnp.maximum(jnp.sum(r * ar, 0), jnp.finfo(b.dtype).tiny)
        return x + alpha * r

    X = jax.lax.fori_loop(0, 10 * n, body, jnp.zeros_like(B))
    return X[:, 0] if vec else X
