"""Phase 15 reference: StableHLO exported from JAX, compiled and run by IREE."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from xla_inspect import iree
from xla_inspect.parse import parse_hlo

_CONTRACTIONS = {"matmul", "batch_matmul", "matvec", "vecmat"}
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_HOST_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print", "callback"}
# LAPACK calls that jax.export gives no compatibility guarantee, so it refuses to serialize them:
# ormqr, and geqp3, which a `qr` with pivoting=True lowers to.
_NO_GUARANTEE = {"geqp3", "ormqr", "pivoted qr"}
_SHARDY = {"sharding_constraint"}
_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "eig",
    "qr",
    "geqrf",
    "householder_product",
    "svd",
    "triangular_solve",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
}


def iree_run(f, *args) -> list[np.ndarray]:
    import iree.compiler  # pyright: ignore[reportMissingImports]  (the iree group)
    import iree.runtime  # pyright: ignore[reportMissingImports]  (the iree group)

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = iree.compiler.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    assert vmfb is not None  # no output_file given: the compiler returns the bytes
    module = iree.runtime.load_vm_flatbuffer(vmfb, driver="local-task")
    result: Any = module.main(*(np.asarray(a) for a in jax.tree.leaves(args)))
    outputs = result if isinstance(result, list | tuple) else [result]
    # IREE hands back device arrays; the exported avals say what JAX's outputs would be.
    return [
        np.asarray(out.to_host()).astype(aval.dtype, copy=False)
        for out, aval in zip(outputs, exported.out_avals, strict=True)
    ]


def agreement_rtol(dtype: str) -> float:
    # Two correct compilers differ by reduction order and by their tanh/exp/rsqrt
    # approximations: a few roundings of the output's dtype (measured here over 64 draws: up
    # to 8 eps in float32, 3 in bfloat16). 16 eps covers that with room and still catches real
    # bugs.
    return float(16 * jnp.finfo(jnp.dtype(dtype)).eps)


def _contraction_flops(kind: str, sizes: tuple[int | None, ...]) -> int:
    if kind not in _CONTRACTIONS or any(s is None for s in sizes):
        return 0
    product = 1
    for size in sizes:
        assert size is not None
        product *= size
    return 2 * product  # each kind's sizes are exactly the dims of its multiply-adds


_DISPATCH_CALL = re.compile(r"\bflow\.dispatch\s+@[\w$.-]+::@([\w$.-]+)")


def matmul_flops(flow_text: str) -> int:
    # IREE keeps one executable for identical dispatches (x @ wq, x @ wk, x @ wv of one shape)
    # and runs it once per flow.dispatch op that names its export.
    calls = Counter(_DISPATCH_CALL.findall(flow_text))
    return sum(
        calls[d.name] * _contraction_flops(d.kind, d.sizes) for d in iree.read_flow(flow_text)
    )


def _names(op_names: list[str]) -> set[str]:
    found = set()
    for joined in op_names:
        for name in joined.split(";"):
            if "/" in name:
                found.add(name.rsplit("/", 1)[1])
    return found


def merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    iree_names: set[str] = set()
    for dispatch in iree.read_flow(flow_text):
        if dispatch.kind in _CONTRACTIONS:
            iree_names |= dispatch.sources
    module = parse_hlo(hlo_text)
    xla_names: set[str] = set()
    for instruction in module.entry:
        pending, seen, held = list(instruction.called_computations), set(), [instruction]
        while pending:
            name = pending.pop()
            computation = module.computation(name)
            if name in seen or computation is None:
                continue
            seen.add(name)
            for inner in computation:
                held.append(inner)
                pending.extend(inner.called_computations)
        if any(i.opcode == "dot" for i in held):
            xla_names |= _names([m for i in held for m in _OP_NAME.findall(i.attributes_text)])
    iree_names.discard("dot_general")
    xla_names.discard("dot_general")
    return iree_names - xla_names, xla_names - iree_names


def _subjaxprs(value):
    """The jaxprs a parameter holds: a ClosedJaxpr's, a Jaxpr, or those in a list or tuple
    (cond's branches)."""
    if isinstance(value, list | tuple):
        for item in value:
            yield from _subjaxprs(item)
        return
    inner = getattr(value, "jaxpr", value)
    if hasattr(inner, "eqns"):
        yield inner


def _is_key(aval) -> bool:
    dtype = getattr(aval, "dtype", None)
    return dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)


def iree_verdict(jaxpr) -> str:
    primitives: set[str] = set()
    pending = [jaxpr.jaxpr]
    while pending:
        inner = pending.pop()
        for eqn in inner.eqns:
            primitives.add(eqn.primitive.name)
            if eqn.primitive.name == "qr" and eqn.params.get("pivoting"):
                primitives.add("pivoted qr")
            for param in eqn.params.values():
                pending.extend(_subjaxprs(param))
    outer = jaxpr.jaxpr
    if primitives & (_HOST_CALLBACKS | _NO_GUARANTEE):
        return "export"
    keys = any(_is_key(v.aval) for v in (*outer.invars, *outer.outvars))
    if keys or primitives & _SHARDY:
        return "sdy"
    if primitives & _LAPACK:
        return "lapack"
    return "runs"


def export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    header = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exported.mlir_module_serialized[:64])
    if header is None:
        raise ValueError("the module's bytecode names no StableHLO version")
    platforms = tuple(p.lower() for p in exported.platforms)
    return header.group(1).decode(), exported.calling_convention_version, platforms


def batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    rest = ", ".join(str(d) for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"batch, {rest}" if rest else "batch")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


def portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    # Conjugate gradients: only a @ p, dot products and divides. Exact after n steps in exact
    # arithmetic; float32 with a condition number of 100 needs a few more, so 2n + 10.
    # r.r of a b with entries of 1e20 (or 1e-20) leaves float32's range: solve for a and each
    # column of b scaled to a largest entry of 1, and scale x back.
    a = jnp.asarray(a, jnp.float32)
    b = jnp.asarray(b, jnp.float32)
    matrix_b = b if b.ndim == 2 else b[:, None]
    tiny = jnp.finfo(jnp.float32).tiny
    a_scale = jnp.maximum(jnp.max(jnp.abs(a)), tiny)
    b_scale = jnp.maximum(jnp.max(jnp.abs(matrix_b), axis=0), tiny)
    a = a / a_scale
    matrix_b = matrix_b / b_scale

    def step(_, state):
        x, r, p, rr = state
        ap = a @ p
        alpha = rr / jnp.maximum(jnp.sum(p * ap, axis=0), tiny)
        x = x + alpha * p
        r = r - alpha * ap
        rr_next = jnp.sum(r * r, axis=0)
        p = r + (rr_next / jnp.maximum(rr, tiny)) * p
        return x, r, p, rr_next

    start = (jnp.zeros_like(matrix_b), matrix_b, matrix_b, jnp.sum(matrix_b * matrix_b, axis=0))
    x = jax.lax.fori_loop(0, 2 * a.shape[0] + 10, step, start)[0] * (b_scale / a_scale)
    return x if b.ndim == 2 else x[:, 0]
