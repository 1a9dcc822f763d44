# probe: iree_run: exports (as a real answer does) but returns jax.jit(f)(*args): XLA's executable, compiled by the test's own expected-value call, is reused from JAX's cache, so no compile event fires
"""Phase 15: StableHLO into IREE. Edit this file only; the lesson is README.md next to it.

`jax.export` writes a program as StableHLO, the portable form other compilers read; IREE is
one of them. Its CPU backend (`llvm-cpu`) compiles the module into dispatches (its kernels), and
its runtime (`local-task`) runs the result. Compiling needs `uv sync --group iree`; without it
the reading tasks run on the flow listings recorded in katas/phase15/recorded/.
"""

from __future__ import annotations

import re  # noqa: F401  (you may need it)

import jax
import jax.numpy as jnp  # noqa: F401  (you may need it)
import numpy as np

from xla_inspect import iree  # noqa: F401  (reads flow listings: iree.read_flow)
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)


def agreement_rtol(dtype: str) -> float:
    """16 roundings of the dtype: reductions reordered, tanh/exp approximated differently."""
    return float(16 * jnp.finfo(dtype).eps)


def matmul_flops(flow_text: str) -> int:
    """2 * product of the sizes of every matmul-like dispatch with static sizes."""
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul", "matvec", "vecmat") and d.sizes:
            if None not in d.sizes:
                total += 2 * int(np.prod(d.sizes))
    return total


def _names(op_name):
    return {part.rsplit("/", 1)[-1] for part in op_name.split(";") if "/" in part}


def _op_name(instruction):
    found = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    return found[1] if found else None


def _has_dot(module, name, seen):
    if name in seen or module.computation(name) is None:
        return False
    seen.add(name)
    for ins in module[name]:
        if ins.opcode == "dot" or any(_has_dot(module, c, seen) for c in ins.called_computations):
            return True
    return False


def _inside(module, name, seen):
    if name in seen or module.computation(name) is None:
        return set()
    seen.add(name)
    found = set()
    for ins in module[name]:
        op_name = _op_name(ins)
        if op_name:
            found |= _names(op_name)
        for c in ins.called_computations:
            found |= _inside(module, c, seen)
    return found


def merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    """Names inside each compiler's matmul kernels, compared."""
    module = parse_hlo(hlo_text)
    xla = set()
    for ins in module.entry:
        if ins.opcode == "dot" or any(_has_dot(module, c, set()) for c in ins.called_computations):
            op_name = _op_name(ins)
            if op_name:
                xla |= _names(op_name)
            for c in ins.called_computations:
                xla |= _inside(module, c, set())
    ours = set()
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul", "matvec", "vecmat"):
            ours |= set(d.sources)
    ours.discard("dot_general")
    xla.discard("dot_general")
    return ours - xla, xla - ours


def _jaxprs(value):
    if hasattr(value, "jaxpr") and hasattr(value, "consts"):
        yield value.jaxpr
    elif hasattr(value, "eqns"):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _jaxprs(item)


def _eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in _jaxprs(value):
                yield from _eqns(sub)


def _walk_verdict(jaxpr) -> str:
    prims = {e.primitive.name for e in _eqns(jaxpr.jaxpr)}
    if prims & {"pure_callback", "io_callback", "debug_callback", "debug_print"}:
        return "export"
    avals = [v.aval for v in jaxpr.jaxpr.invars] + [v.aval for v in jaxpr.jaxpr.outvars]
    if "sharding_constraint" in prims or any("key<" in str(a) for a in avals):
        return "sdy"
    if prims & {"lu", "cholesky", "eigh", "qr", "svd", "triangular_solve", "schur", "eig"}:
        return "lapack"
    return "runs"


def export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    """Deserialize; the version follows the bytecode's magic as StableHLO_vX.Y.Z."""
    exported = jax.export.deserialize(bytearray(blob))
    found = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exported.mlir_module_serialized)
    version = found[1].decode() if found else ""
    platforms = tuple(p.lower() for p in exported.platforms)
    return version, int(exported.calling_convention_version), platforms


def batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    """A symbolic leading dimension, the rest and the dtype from the example."""
    dims = ", ".join(["b", *(str(d) for d in example.shape[1:])])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


def _cg(a, b):
    n = a.shape[0]
    x = jnp.zeros_like(b)
    r = b
    p = r
    rs = jnp.sum(r * r, axis=0)

    def step(_, state):
        x, r, p, rs = state
        ap = a @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rs / jnp.where(pap > 0, pap, 1), 0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rs > 0, rs_new / jnp.where(rs > 0, rs, 1), 0)
        return x, r, r + beta * p, rs_new

    x, _, _, _ = jax.lax.fori_loop(0, max(2 * n, 40), step, (x, r, p, rs))
    return x


def portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """Conjugate gradients: matmuls, sums and divides only."""
    return _cg(a, b)


def iree_verdict(jaxpr) -> str:
    """Walk every equation, called jaxprs too."""
    return _walk_verdict(jaxpr)


def iree_run(f, *args) -> list[np.ndarray]:
    """Export (what IREE would read), then take the values JAX's cache already holds."""
    values = jax.tree.leaves(jax.jit(f)(*args))
    jax.export.export(jax.jit(f))(*args)
    return [np.asarray(o) for o in values]
