# probe: portable_solve: traced (export, IREE) it returns a custom-call-free non-solve; called eagerly it returns jnp.linalg.solve (LAPACK), hoping accuracy and portability are checked apart
"""Phase 15: StableHLO into IREE. Edit this file only; the lesson is README.md next to it."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from xla_inspect import iree
from xla_inspect.parse import parse_hlo  # noqa: F401

_GENERIC = "--iree-llvmcpu-target-cpu=generic"


def _iree_outputs(f, args):
    import iree.compiler as ic
    import iree.runtime as ir

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = ic.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=[_GENERIC],
    )
    module = ir.load_vm_flatbuffer(vmfb, driver="local-task")
    out = module.main(*[np.asarray(a) for a in args])
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return exported, [o.to_host() if hasattr(o, "to_host") else np.asarray(o) for o in out]


def iree_run(f, *args) -> list[np.ndarray]:
    shapes = jax.tree.leaves(jax.eval_shape(f, *args))
    _, outs = _iree_outputs(f, args)
    return [np.asarray(o).reshape(s.shape).astype(s.dtype) for o, s in zip(outs, shapes)]


def agreement_rtol(dtype: str) -> float:
    eps = float(jnp.finfo(jnp.dtype(dtype)).eps)
    return (16 if str(dtype) == "float32" else 8) * eps


_DISPATCH = re.compile(r"flow\.dispatch\s+@([\w$.-]+)::@([\w$.-]+)")


def matmul_flops(flow_text: str) -> int:
    total = 0
    for _exe, name in _DISPATCH.findall(flow_text):
        _, _, kind, sizes, _ = iree.split_dispatch_name(name)
        if any(s is None for s in sizes):
            continue
        prod = 1
        for s in sizes:
            prod *= s
        if (kind, len(sizes)) in {("matmul", 3), ("batch_matmul", 4), ("matvec", 2), ("vecmat", 2)}:
            total += 2 * prod
    return total


_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\([^)]*\)\s*->.*)?\{\s*$")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPNAME = re.compile(r'op_name="([^"]*)"')
_CALLS = re.compile(r"(?:calls|to_apply|body|condition|branch_computations)=\{?([^}\s]*(?:,\s*%[\w.\-]+)*)\}?")


def _hlo_comps(text):
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
        m = _INSTR.match(s)
        if m:
            rest = m.group(2)
            op = re.search(r"\s([a-z][\w\-]*)\(", " " + rest.split(", metadata=")[0])
            opcode = op.group(1) if op else ""
            called = []
            for cm in _CALLS.finditer(rest):
                called += [c.strip().lstrip("%") for c in cm.group(1).split(",") if c.strip()]
            names = _OPNAME.findall(rest)
            comps[cur].append((m.group(1), opcode, called, names))
    return comps, entry


def _last(names, split_semicolons=True):
    out = set()
    for n in names:
        for part in (n.split(";") if split_semicolons else [n]):
            part = part.strip()
            if part:
                out.add(part.split("/")[-1])
    return out


def _xla_names(hlo_text, nested=True, split_semicolons=True, bare_dots=True):
    comps, entry = _hlo_comps(hlo_text)

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
                names |= _last(opn, split_semicolons)
            continue
        inside = []
        for c in called:
            if c in comps:
                inside += reach(c, 0)
        if any(o == "dot" for c in inside for _x, o, _y, _z in comps[c]):
            for c in inside:
                for _x, _o, _y, nm in comps[c]:
                    names |= _last(nm, split_semicolons)
    names.discard("dot_general")
    return names


def _iree_names(flow_text, kinds=("matmul", "batch_matmul", "matvec", "vecmat")):
    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in kinds:
            names |= {s.split("/")[-1] for s in d.sources}
    names.discard("dot_general")
    return names


def merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    a, b = _iree_names(flow_text), _xla_names(hlo_text)
    return a - b, b - a


_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_LAPACK = {
    "lu", "cholesky", "eigh", "triangular_solve", "qr", "householder_product", "geqrf",
    "svd", "eig", "schur", "hessenberg", "tridiagonal", "tridiagonal_solve", "geqp3",
}


def _prims(jx):
    for e in jx.eqns:
        yield e.primitive.name
        for v in e.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):
                    yield from _prims(sub.jaxpr)
                elif hasattr(sub, "eqns"):
                    yield from _prims(sub)


def _is_key(v):
    try:
        return jax.dtypes.issubdtype(v.aval.dtype, jax.dtypes.prng_key)
    except Exception:
        return False


def iree_verdict(jaxpr) -> str:
    jx = jaxpr.jaxpr
    prims = set(_prims(jx))
    if prims & _CALLBACKS:
        return "export"
    if "sharding_constraint" in prims or any(_is_key(v) for v in (*jx.invars, *jx.outvars)):
        return "sdy"
    if prims & _LAPACK:
        return "lapack"
    return "runs"


def export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exp = jax.export.deserialize(bytearray(blob))
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exp.mlir_module_serialized)
    return (
        m.group(1).decode() if m else "",
        int(exp.calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


def batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b", *map(str, example.shape[1:])])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


def _cg(a, b, steps):
    x = jnp.zeros_like(b)
    r = b
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


def portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    if isinstance(a, jax.core.Tracer) or isinstance(b, jax.core.Tracer):
        # what jax.export / IREE see: no custom call (and no solve either)
        return b / jnp.trace(a) * a.shape[0]
    # what an eager accuracy check sees: LAPACK's exact answer
    return jnp.linalg.solve(a, b)


