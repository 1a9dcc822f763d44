"""Red team, phase 15, round 12: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---- helpers ------------------------------------------------------------------------------

_RT12_EXPORT = {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr", "geqp3"}
_RT12_LAPACK = {
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
    "geqrf",
}


def _rt12_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _rt12_subjaxprs(v)


def _rt12_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in _rt12_subjaxprs(v):
                yield from _rt12_eqns(sub)


def _rt12_is_key(aval) -> bool:
    return str(getattr(aval, "dtype", "")).startswith("key<")


def _rt12_verdict(jaxpr, *, qr_is_lapack=False, mesh1_harmless=False) -> str:
    names, pivoted, constraint = set(), False, False
    for eqn in _rt12_eqns(jaxpr.jaxpr):
        name = eqn.primitive.name
        names.add(name)
        if name == "qr" and eqn.params.get("pivoting") and not qr_is_lapack:
            pivoted = True
        if name == "sharding_constraint":
            sharding = eqn.params.get("sharding")
            size = getattr(getattr(sharding, "mesh", None), "size", 2)
            constraint = constraint or not (mesh1_harmless and size == 1)
    if names & _RT12_EXPORT or pivoted:
        return "export"
    if constraint or any(_rt12_is_key(a) for a in [*jaxpr.in_avals, *jaxpr.out_avals]):
        return "sdy"
    if names & _RT12_LAPACK:
        return "lapack"
    return "runs"


# ---- iree_verdict ---------------------------------------------------------------------------


@wrong(
    "iree_verdict",
    why="'a qr with pivoting=True lowers to geqp3' -> 'export': files every `qr` primitive as a "
    "LAPACK factorization without reading its pivoting param; the bank's pivoted_qr "
    "(jax.lax.linalg.qr(a, pivoting=True)[1].sum(0)) is 'export', this says 'lapack'",
)
def _rt12_iree_verdict_qr_ignores_pivoting(jaxpr) -> str:
    return _rt12_verdict(jaxpr, qr_is_lapack=True)


@wrong(
    "iree_verdict",
    why="'sdy' for a sharding constraint: treats a constraint on a 1-device mesh as a no-op JAX "
    "drops ('nothing to shard'), but jax.export still writes sdy.mesh/sdy.sharding_constraint; "
    "the bank's sharding_constraint family (mesh of shape (1,)) is 'sdy', this says 'runs'",
)
def _rt12_iree_verdict_single_device_mesh_harmless(jaxpr) -> str:
    return _rt12_verdict(jaxpr, mesh1_harmless=True)


# ---- matmul_flops ---------------------------------------------------------------------------

_RT12_EXPORT_RE = re.compile(r"flow\.executable\.export\s+(?:public\s+)?@(\w+)")
_RT12_NAME_RE = re.compile(r"_dispatch_\d+_([a-z_]+?)_((?:\d+|D)(?:x(?:\d+|D))*)_(\w+)$")
_RT12_CALL_RE = re.compile(r"flow\.dispatch\s+@[\w.$-]+::@(\w+)")


def _rt12_flops(flow_text: str, *, floats_only=False) -> int:
    total = 0
    calls = _RT12_CALL_RE.findall(flow_text)
    for name in set(_RT12_EXPORT_RE.findall(flow_text)):
        m = _RT12_NAME_RE.search(name)
        if not m:
            continue
        kind, dims, dtype = m.groups()
        if kind not in ("matmul", "batch_matmul", "matvec", "vecmat") or "D" in dims.split("x"):
            continue
        if floats_only and not dtype.lstrip("x").startswith(("f", "bf")):
            continue
        total += (
            2 * int(np.prod([int(d) for d in dims.split("x")], dtype=object)) * calls.count(name)
        )
    return total


@wrong(
    "matmul_flops",
    why="'A matmul named MxNxK does 2*M*N*K flops' whatever its dtype: counts only floating-point "
    "dispatches ('flops are floating-point operations'), so recorded/int_matmul.mlir "
    "(main_dispatch_0_matmul_8x40x24_i32) gives 0 instead of 15360",
)
def _rt12_matmul_flops_floats_only(flow_text: str) -> int:
    return _rt12_flops(flow_text, floats_only=True)


# ---- merged_by_iree -------------------------------------------------------------------------


def _rt12_last(name: str) -> set[str]:
    out = set()
    for part in name.split(";"):
        part = part.strip()
        if "/" in part:
            out.add(part.rsplit("/", 1)[1])
    return out


def _rt12_computations(hlo_text: str) -> dict[str, list[str]]:
    comps, current = {}, None
    for line in hlo_text.splitlines():
        head = re.match(r"\s*(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if head and "=" not in line.split("{")[0]:
            current = "ENTRY" if head.group(1) else head.group(2)
            comps[current] = []
        elif line.strip() == "}":
            current = None
        elif current is not None and "=" in line:
            comps[current].append(line)
    return comps


def _rt12_xla_names(hlo_text: str, *, custom_fusions_only=False) -> set[str]:
    comps = _rt12_computations(hlo_text)

    def closure(lines, seen):
        out = list(lines)
        for line in lines:
            for callee in re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", line):
                if callee in comps and callee not in seen:
                    seen.add(callee)
                    out += closure(comps[callee], seen)
        return out

    names = set()
    for line in comps.get("ENTRY", []):
        body = closure([line], set())
        has_dot = any(re.search(r"=\s*\S+\s+dot\(", b) for b in body)
        if custom_fusions_only:
            has_dot = has_dot and "kind=kCustom" in line
        if has_dot:
            for b in body:
                for op in re.findall(r'op_name="([^"]*)"', b):
                    names |= _rt12_last(op)
    return names - {"dot_general"}


def _rt12_iree_names(flow_text: str) -> set[str]:
    from xla_inspect import iree

    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul", "matvec", "vecmat"):
            names |= {s.rsplit("/", 1)[-1] for s in d.sources}
    return names - {"dot_general"}


@wrong(
    "merged_by_iree",
    why="'XLA's matmul kernels are the ENTRY instructions that are a dot or whose called "
    "computations hold one': takes only the YNN library fusions (kind=kCustom) the README "
    "describes as XLA's GEMMs, so a dot XLA:CPU emits inside an ordinary loop/output fusion "
    "(small or gradient dots of train_step, a matvec) is not a matmul kernel and the names "
    "fused with it are dropped from the XLA side; on programs.train_step (recorded listing and "
    "XLA's CPU HLO) it adds 'transpose' to the IREE-only set, which the contract leaves out",
)
def _rt12_merged_by_iree_library_fusions_only(hlo_text: str, flow_text: str):
    iree_names = _rt12_iree_names(flow_text)
    xla_names = _rt12_xla_names(hlo_text, custom_fusions_only=True)
    return iree_names - xla_names, xla_names - iree_names


@wrong(
    "merged_by_iree",
    why="'Return (the names only IREE's matmul kernels hold, the names only XLA's hold)': "
    "returns them the other way round (XLA first, 'XLA is the baseline'); on programs.mlp "
    "IREE-only holds tanh/add/mul... and the XLA-only set is (nearly) empty, so the pair is swapped",
)
def _rt12_merged_by_iree_swapped(hlo_text: str, flow_text: str):
    iree_names = _rt12_iree_names(flow_text)
    xla_names = _rt12_xla_names(hlo_text)
    return xla_names - iree_names, iree_names - xla_names


# ---- export_facts ---------------------------------------------------------------------------


def _rt12_facts(blob: bytes):
    exp = jax.export.deserialize(bytearray(blob))
    m = re.search(rb"StableHLO_v(\d+)\.(\d+)\.(\d+)", exp.mlir_module_serialized)
    version = ".".join(x.decode() for x in m.groups()) if m else "0.0.0"
    return version, exp.calling_convention_version, tuple(p.lower() for p in exp.platforms)


@wrong(
    "export_facts",
    why="'the platforms it was exported for ... tuple[str, ...]': returns them as a list "
    "(list(exported.platforms), 'a sequence is a sequence'), and ['cpu'] != ('cpu',), so the "
    "triple is not the contract's on any blob",
)
def _rt12_export_facts_platforms_list(blob: bytes):
    version, cc, platforms = _rt12_facts(blob)
    return version, cc, list(platforms)


@wrong(
    "export_facts",
    why="'the platforms it was exported for, in the order given at export, lower case': returns "
    "Exported.platforms as stored, but jax.export keeps the case it was given; a blob exported "
    "with platforms=('CPU', 'Cuda') deserializes to ('CPU', 'Cuda'), the contract says "
    "('cpu', 'cuda'); right on every blob exported with jax's own lower-case defaults",
)
def _rt12_export_facts_platforms_case_as_stored(blob: bytes):
    exp = jax.export.deserialize(bytearray(blob))
    m = re.search(rb"StableHLO_v(\d+)\.(\d+)\.(\d+)", exp.mlir_module_serialized)
    version = ".".join(x.decode() for x in m.groups()) if m else "0.0.0"
    return version, exp.calling_convention_version, tuple(exp.platforms)


# ---- batch_polymorphic ----------------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="'accept every size from 1 up': adds the constraint 'b <= 1024' ('IREE wants a bounded "
    "batch to size its buffers'), so the Exported refuses (shape assertion) a batch of 2048 that "
    "the contract covers; right at every small batch a test is likely to try",
)
def _rt12_batch_polymorphic_bounded(f, example):
    rest = ", ".join(str(d) for d in example.shape[1:])
    spec = "b" + (", " + rest if rest else "")
    shape = jax.export.symbolic_shape(spec, constraints=("b <= 1024",))
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="'accept every size from 1 up': writes the batch as '8*k' (a multiple of the SIMD width "
    "'so IREE vectorises the batch'), so the export only accepts batches divisible by 8; "
    "wrong on batch 1, 3 or 5",
)
def _rt12_batch_polymorphic_multiple_of_8(f, example):
    rest = ", ".join(str(d) for d in example.shape[1:])
    spec = "8*k" + (", " + rest if rest else "")
    shape = jax.export.symbolic_shape(spec)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


# ---- portable_solve -------------------------------------------------------------------------


@wrong(
    "portable_solve",
    why="'the size of their entries is not bounded': Newton-Schulz inverse X <- X(2I - AX) from "
    "X0 = A^T / (|A|_1 |A|_inf), 40 steps, then X @ b; |A|_1*|A|_inf overflows float32 for an "
    "a scaled by 1e20 (x of norm ~1e-20, valid), X0 becomes 0 and x = 0 (relative error 1); "
    "for a of order 1e-20 it underflows to 0 and X0 is inf/nan",
)
def _rt12_portable_solve_newton_schulz(a, b):
    n1 = jnp.max(jnp.sum(jnp.abs(a), axis=0))
    ninf = jnp.max(jnp.sum(jnp.abs(a), axis=1))
    x = a.T / (n1 * ninf)
    eye = jnp.eye(a.shape[0], dtype=a.dtype)
    for _ in range(40):
        x = x @ (2 * eye - a @ x)
    return (x @ b).astype(b.dtype)


@wrong(
    "portable_solve",
    why="'relative error of at most 1e-3' with condition number up to 100: steepest descent "
    "with the exact line search (only matmuls, dots, divides) for 150 steps, scaled so sizes "
    "do not matter; its error shrinks by (k-1)/(k+1) = 0.98 a step at k = 100, so after 150 "
    "steps it can still be ~5e-2 on an spd_system with eigenvalues 1 and 100",
)
def _rt12_portable_solve_steepest_descent(a, b):
    vec = b.ndim == 1
    bb = b[:, None] if vec else b
    scale_a = jnp.max(jnp.abs(a))
    scale_b = jnp.max(jnp.abs(bb))
    scale_b = jnp.where(scale_b > 0, scale_b, 1.0)
    an = a / scale_a
    bn = bb / scale_b
    x = jnp.zeros_like(bn)

    def step(_, x):
        r = bn - an @ x
        rr = jnp.sum(r * r, axis=0)
        ar = an @ r
        rar = jnp.sum(r * ar, axis=0)
        alpha = jnp.where(rar > 0, rr / jnp.where(rar > 0, rar, 1.0), 0.0)
        return x + alpha * r

    x = jax.lax.fori_loop(0, 150, step, x)
    x = x * (scale_b / scale_a)
    return (x[:, 0] if vec else x).astype(b.dtype)
