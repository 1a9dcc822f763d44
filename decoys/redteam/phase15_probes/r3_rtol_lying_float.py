# probe: agreement_rtol: returns a float subclass (value 0.5) whose comparisons always favour it, so 'ratio <= rtol' and 'rtol <= 32 eps' both hold when the subclass is asked first
"""Phase 15: StableHLO into IREE. Edit this file only; the lesson is README.md next to it.

`jax.export` writes a program as StableHLO, the portable form other compilers read; IREE is
one of them. Its CPU backend (`llvm-cpu`) compiles the module into dispatches (its kernels), and
its runtime (`local-task`) runs the result. Compiling needs `uv sync --group iree`; without it
the reading tasks run on the flow listings recorded in katas/phase15/recorded/.
"""

from __future__ import annotations

import re  # noqa: F401  (you may need it)

import jax
import jax.extend  # noqa: F401  (jax.extend.core)
import jax.numpy as jnp  # noqa: F401  (you may need it)
import numpy as np

from xla_inspect import iree  # noqa: F401  (reads flow listings: iree.read_flow)
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)


def _iree_module(f, args):
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


def _iree_outputs(module, args):
    result = module.main(*[np.asarray(a) for a in args])
    return list(result) if isinstance(result, (tuple, list)) else [result]


def iree_run(f, *args) -> list[np.ndarray]:
    exported, module = _iree_module(f, args)
    outs = _iree_outputs(module, args)
    return [
        np.asarray(o).astype(aval.dtype, copy=False).reshape(aval.shape)
        for o, aval in zip(outs, exported.out_avals, strict=True)
    ]


_CONTRACTIONS = ("matmul", "batch_matmul", "matvec", "vecmat")


def matmul_flops(flow_text: str) -> int:
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in _CONTRACTIONS and d.sizes and None not in d.sizes:
            total += 2 * int(np.prod(d.sizes, dtype=object))
    return total


def _last(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _op_names(instruction) -> set[str]:
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    if not m:
        return set()
    return {_last(part) for part in m.group(1).split(";") if part}


def _called(module, names):
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


def _xla_matmul_names(hlo_text: str) -> set[str]:
    module = parse_hlo(hlo_text)
    names: set[str] = set()
    for ins in module.entry.instructions:
        inside = [i for c in _called(module, ins.called_computations) for i in c.instructions]
        if ins.opcode == "dot" or any(i.opcode == "dot" for i in inside):
            for i in (ins, *inside):
                names |= _op_names(i)
    return names


def _iree_matmul_names(flow_text: str) -> set[str]:
    names: set[str] = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _CONTRACTIONS:
            names |= set(d.sources)
    return names


def merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    ours, theirs = _iree_matmul_names(flow_text), _xla_matmul_names(hlo_text)
    return (ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"})


_CALLBACKS = frozenset({"pure_callback", "io_callback", "debug_callback", "debug_print"})
_LAPACK = frozenset(
    {
        "lu", "cholesky", "eigh", "eig", "triangular_solve", "qr", "geqrf", "geqp3",
        "householder_product", "orgqr", "svd", "schur", "hessenberg", "tridiagonal",
        "tridiagonal_solve", "lu_pivots_to_permutation_unused",
    }
)


def _sub_jaxprs(value):
    if isinstance(value, jax.extend.core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jax.extend.core.Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)


def _primitives(jaxpr) -> set[str]:
    names: set[str] = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in _sub_jaxprs(value):
                names |= _primitives(sub)
    return names


def _is_key(var) -> bool:
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def iree_verdict(jaxpr) -> str:
    inner = jaxpr.jaxpr
    prims = _primitives(inner)
    if prims & _CALLBACKS:
        return "export"
    if "sharding_constraint" in prims or any(map(_is_key, (*inner.invars, *inner.outvars))):
        return "sdy"
    if prims & _LAPACK:
        return "lapack"
    return "runs"


def _stablehlo_version(exported) -> str:
    found = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", bytes(exported.mlir_module_serialized))
    return found.group(1).decode() if found else ""


def export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    return (
        _stablehlo_version(exported),
        int(exported.calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


def batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b", *map(str, example.shape[1:])])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


def _cg(a, b, steps):
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


def portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return _cg(a, b, 3 * a.shape[0] + 20).astype(b.dtype)


# ---- the probe ----


class _Tolerance(float):
    """A float whose every comparison says what the caller hopes: no measured ratio exceeds it,
    and it is no looser than any limit. Python asks a float subclass first when it is on the
    right of a comparison with a plain float."""

    def __le__(self, other):
        return True

    def __ge__(self, other):
        return True

    def __lt__(self, other):
        return True

    def __gt__(self, other):
        return True


def agreement_rtol(dtype: str) -> float:
    return _Tolerance(0.5)
