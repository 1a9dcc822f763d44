"""Red team phase 15, round 9: wrong answers of kinds not tried before."""

from __future__ import annotations

import re

import jax
import jax.extend  # noqa: F401  (jax.extend.core.Jaxpr / ClosedJaxpr)
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree

_rt9_CONTRACTIONS = ("matmul", "batch_matmul", "matvec", "vecmat")


@wrong(
    "matmul_flops",
    why="'an export counts once for every flow.dispatch op that runs it': counts the dispatch ops "
    "of executable E with text.count('flow.dispatch @' + E), a prefix match, so in a listing of "
    "more than ten dispatches main_dispatch_1's matmul is also counted for every dispatch of "
    "main_dispatch_10..19",
)
def _rt9_matmul_flops_prefix_count(flow_text: str) -> int:
    total = 0
    pat = re.compile(r"flow\.executable\.export\s+(?:public\s+)?@((\w+?)_dispatch_(\d+)_(\w+))")
    for _name, fn, idx, rest in pat.findall(flow_text):
        m = re.fullmatch(r"(\w+?)_((?:\d+|D)(?:x(?:\d+|D))*)_(\w+)", rest)
        if not m or m.group(1) not in _rt9_CONTRACTIONS or "D" in m.group(2).split("x"):
            continue
        flops = 2 * int(np.prod([int(s) for s in m.group(2).split("x")], dtype=object))
        executable = f"{fn}_dispatch_{idx}"
        total += flops * flow_text.count(f"flow.dispatch @{executable}")
    return total


_rt9_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "triangular_solve",
    "qr",
    "svd",
    "eig",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
    "householder_product",
    "geqrf",
}
_rt9_CALLBACK = {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr", "geqp3"}


def _rt9_walk(jaxpr, follow):
    for e in jaxpr.eqns:
        yield e
        for sub in follow(e):
            yield from _rt9_walk(sub, follow)


def _rt9_is_key(aval):
    return jax.dtypes.issubdtype(getattr(aval, "dtype", None), jax.dtypes.prng_key)


def _rt9_verdict(jaxpr, follow, key_outs, pivot_aware=True):
    eqns = list(_rt9_walk(jaxpr.jaxpr, follow))
    names = [e.primitive.name for e in eqns]
    if any(n in _rt9_CALLBACK for n in names) or (
        pivot_aware and any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns)
    ):
        return "export"
    if (
        "sharding_constraint" in names
        or any(_rt9_is_key(a) for a in jaxpr.in_avals)
        or any(_rt9_is_key(a) for a in key_outs(jaxpr))
    ):
        return "sdy"
    if any(n in _rt9_LAPACK for n in names):
        return "lapack"
    return "runs"


def _rt9_sub_all(eqn):
    for v in eqn.params.values():
        items = v if isinstance(v, (tuple, list)) else (v,)
        for it in items:
            if isinstance(it, jax.extend.core.ClosedJaxpr):
                yield it.jaxpr
            elif isinstance(it, jax.extend.core.Jaxpr):
                yield it


_rt9_DEFAULT_KEY = jax.random.key(0).dtype


@wrong(
    "iree_verdict",
    why="'a typed PRNG key among the arguments or results' -> 'sdy': recognises a key by equality "
    "with the default key's dtype (jax.random.key(0).dtype, key<fry>), so a typed key of another "
    "impl (lambda k: jax.random.normal(k, (3,)) on jax.random.key(0, impl='rbg')) is called 'runs'",
)
def _rt9_iree_verdict_default_key_dtype(jaxpr) -> str:
    eqns = list(_rt9_walk(jaxpr.jaxpr, _rt9_sub_all))
    names = [e.primitive.name for e in eqns]
    if any(n in _rt9_CALLBACK for n in names) or any(
        e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns
    ):
        return "export"
    avals = list(jaxpr.in_avals) + list(jaxpr.out_avals)
    if "sharding_constraint" in names or any(
        getattr(a, "dtype", None) == _rt9_DEFAULT_KEY for a in avals
    ):
        return "sdy"
    if any(n in _rt9_LAPACK for n in names):
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'a typed PRNG key among the ... results' -> 'sdy': looks only at the first result's aval, "
    "so lambda s, x: (x * 2, jax.random.split(jax.random.key(s))) (key is the second result) is "
    "called 'runs'",
)
def _rt9_iree_verdict_first_output(jaxpr) -> str:
    return _rt9_verdict(jaxpr, _rt9_sub_all, lambda j: j.out_avals[:1])


@wrong(
    "iree_verdict",
    why="'LAPACK's geqp3, which a qr with pivoting=True lowers to' -> 'export': treats every qr "
    "primitive as a LAPACK factorization by its name, so the pivoted_qr family "
    "(jax.lax.linalg.qr(a, pivoting=True)) is called 'lapack' instead of 'export'",
)
def _rt9_iree_verdict_qr_by_name(jaxpr) -> str:
    return _rt9_verdict(jaxpr, _rt9_sub_all, lambda j: j.out_avals, pivot_aware=False)


@wrong(
    "agreement_rtol",
    why="'for the programs in programs.ROUND_TRIPS ... on any fresh draw': budget measured on mlp "
    "alone (the dense program), 4e-7 float32 / 0.015 bfloat16, while layernorm_softmax reaches "
    "9.59e-7 / 0.0244 (recorded/agreement.txt)",
)
def _rt9_agreement_rtol_mlp_only(dtype: str) -> float:
    return {"float32": 4e-7, "bfloat16": 0.015}[str(jnp.dtype(dtype))]


@wrong(
    "batch_polymorphic",
    why="'f takes one array ... IREE compiles the export once and runs it': exports for "
    "platforms=('cpu', 'cuda', 'tpu') 'to be portable', so the module's main takes an extra "
    "platform-index argument and IREE's main(x) fails at any batch size",
)
def _rt9_batch_polymorphic_all_platforms(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b"] + [str(d) for d in example.shape[1:]])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f), platforms=("cpu", "cuda", "tpu"))(spec)


def _rt9_as_matrix(b):
    return (b[:, None], True) if b.ndim == 1 else (b, False)


@wrong(
    "portable_solve",
    why="'relative error at most 1e-3' for condition number up to 100: steepest descent with n + 1 "
    "steps ('like CG, n steps suffice') converges at (k-1)/(k+1) per step, not in n steps; wrong "
    "on n = 2 with eigenvalues 1 and 100 (error ~0.9) and on n = 64, cond 100",
)
def _rt9_portable_solve_steepest_descent(a, b):
    B, vec = _rt9_as_matrix(b)
    x = jnp.zeros_like(B)
    r = B
    for _ in range(a.shape[0] + 1):
        ar = a @ r
        alpha = jnp.sum(r * r, 0) / jnp.where(jnp.sum(r * ar, 0) == 0, 1, jnp.sum(r * ar, 0))
        x = x + alpha * r
        r = r - alpha * ar
    return (x[:, 0] if vec else x).astype(b.dtype)


@wrong(
    "portable_solve",
    why="'relative error at most 1e-3': CG on the normal equations (a.T a x = a.T b, 'works for any "
    "matrix') with n steps squares the condition number to 1e4, which float32 CG does not finish "
    "in n steps; wrong on n = 64 with condition number 100",
)
def _rt9_portable_solve_cgnr(a, b):
    B, vec = _rt9_as_matrix(b)
    m = a.T @ a
    rhs = a.T @ B
    x = jnp.zeros_like(B)
    r = rhs
    p = r
    rs = jnp.sum(r * r, 0)
    for _ in range(a.shape[0]):
        mp = m @ p
        den = jnp.sum(p * mp, 0)
        alpha = rs / jnp.where(den == 0, 1, den)
        x = x + alpha * p
        r = r - alpha * mp
        new = jnp.sum(r * r, 0)
        p = r + (new / jnp.where(rs == 0, 1, rs)) * p
        rs = new
    return (x[:, 0] if vec else x).astype(b.dtype)


def _rt9_hlo_computations(hlo_text):
    comps, cur, entry = {}, None, None
    for line in hlo_text.splitlines():
        s = line.strip()
        if s.endswith("{") and not s.startswith("HloModule") and "=" not in s.split("(")[0]:
            head = s.split("(")[0].split()
            cur = head[-1].lstrip("%")
            if s.startswith("ENTRY"):
                entry = cur
            comps[cur] = []
        elif s == "}":
            cur = None
        elif cur is not None and "=" in s:
            comps[cur].append(s)
    return comps, entry


def _rt9_called(line):
    names = re.findall(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)", line)
    for group in re.findall(r"(?:called_computations|branch_computations)=\{([^}]*)\}", line):
        names += [n.strip().lstrip("%") for n in group.split(",") if n.strip()]
    return names


def _rt9_op_names(line):
    out = set()
    for full in re.findall(r'op_name="([^"]*)"', line):
        for part in full.split(";"):
            out.add(part.strip().split("/")[-1])
    return out


@wrong(
    "merged_by_iree",
    why="'XLA's matmul kernels are the ENTRY instructions that are a dot or whose called "
    "computations hold one': tests the substring 'dot' in the instruction's and its computations' "
    "lines, which also matches an OPERAND named %dot / %dot.1, so train_step's "
    "multiply_subtract_fusion (the SGD update reading %dot.1, no dot in it) counts as a matmul "
    "kernel and 'sub', 'mul' drop out of the IREE-only names",
)
def _rt9_merged_by_iree_dot_substring(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    comps, entry = _rt9_hlo_computations(hlo_text)

    def closure(line, seen):
        lines = [line]
        for c in _rt9_called(line):
            if c in comps and c not in seen:
                seen.add(c)
                for inner in comps[c]:
                    lines += closure(inner, seen)
        return lines

    xla = set()
    for line in comps.get(entry, []):
        body = closure(line, set())
        if any("dot" in b for b in body):
            for b in body:
                xla |= _rt9_op_names(b)
    ir = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _rt9_CONTRACTIONS:
            ir |= set(d.sources)
    xla.discard("dot_general")
    ir.discard("dot_general")
    return ir - xla, xla - ir


@wrong(
    "batch_polymorphic",
    why="'must accept every size from 1 up': bounds the symbolic batch with the constraint "
    "'b <= 1024' ('a sane maximum batch'), so the export refuses a batch of 2048 (shape "
    "assertion), although nothing in the contract caps it",
)
def _rt9_batch_polymorphic_capped(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b"] + [str(d) for d in example.shape[1:]])
    shape = jax.export.symbolic_shape(dims, constraints=("b <= 1024",))
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "portable_solve",
    why="'the size of their entries is not bounded': textbook CG (2n steps, frozen once the "
    "residual is 0) on the raw b, so r.r = |b|^2 overflows float32 for |b| ~ 1e20 (entries 1e19) "
    "and the answer is NaN; scaling b to norm 1 first and back after would fix it",
)
def _rt9_portable_solve_unscaled_cg(a, b):
    B, vec = _rt9_as_matrix(b)
    x = jnp.zeros_like(B)
    r = B
    p = r
    rs = jnp.sum(r * r, 0)
    for _ in range(2 * a.shape[0]):
        ap = a @ p
        den = jnp.sum(p * ap, 0)
        alpha = jnp.where(den > 0, rs / jnp.where(den > 0, den, 1), 0)
        x = x + alpha * p
        r = r - alpha * ap
        new = jnp.sum(r * r, 0)
        p = r + jnp.where(rs > 0, new / jnp.where(rs > 0, rs, 1), 0) * p
        rs = new
    return (x[:, 0] if vec else x).astype(b.dtype)
