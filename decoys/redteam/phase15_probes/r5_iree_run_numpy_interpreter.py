# probe: iree_run: interprets the traced jaxpr in NumPy (float64 rounded to JAX's dtype): close to JAX, never bit-equal to XLA, no XLA compile and no IREE at all
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




def _iree_main(f, args):
    import iree.compiler as ireec
    import iree.runtime as ireert

    specs = [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args]
    exported = jax.export.export(jax.jit(f))(*specs)
    vmfb = ireec.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    module = ireert.load_vm_flatbuffer(vmfb, driver="local-task")
    result = module.main(*[np.asarray(a) for a in args])
    if not isinstance(result, (tuple, list)):
        result = (result,)
    return [np.asarray(r.to_host()) for r in result]


def iree_run(f, *args) -> list[np.ndarray]:
    """See the stub."""
    return _iree_main(f, args)


def agreement_rtol(dtype: str) -> float:
    """See the stub."""
    return float(16 * jnp.finfo(dtype).eps)


_MM = {"matmul": 3, "batch_matmul": 4, "matvec": 2, "vecmat": 2}


def matmul_flops(flow_text: str) -> int:
    """See the stub."""
    counts: dict[str, int] = {}
    for m in re.finditer(r"flow\.dispatch\s+@[\w$.-]+::@([\w$.-]+)", flow_text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in _MM and len(d.sizes) == _MM[d.kind] and None not in d.sizes:
            total += 2 * int(np.prod(d.sizes)) * counts.get(d.name, 0)
    return total


def _op_names(ins) -> set[str]:
    meta = ins.attribute("metadata") or ""
    m = re.search(r'op_name="((?:[^"\\]|\\.)*)"', meta)
    if not m:
        return set()
    return {p.split("/")[-1] for p in m.group(1).split(";") if p}


def merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    """See the stub."""
    module = parse_hlo(hlo_text)
    xla: set[str] = set()
    for ins in module.entry:
        comps, stack, seen = [], list(ins.called_computations), set()
        while stack:
            name = stack.pop()
            if name in seen or name not in module:
                continue
            seen.add(name)
            comps.append(module[name])
            for inner in module[name]:
                stack.extend(inner.called_computations)
        if ins.opcode == "dot" or any(i.opcode == "dot" for c in comps for i in c):
            xla |= _op_names(ins) if ins.opcode == "dot" else set()
            for c in comps:
                for i in c:
                    xla |= _op_names(i)
    ir: set[str] = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _MM:
            ir |= set(d.sources)
    ir.discard("dot_general")
    xla.discard("dot_general")
    return ir - xla, xla - ir


def iree_verdict(jaxpr) -> str:
    """See the stub."""
    return "runs"


def export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    """See the stub."""
    exp = jax.export.deserialize(blob)
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exp.mlir_module_serialized)
    return (
        m.group(1).decode() if m else "",
        int(exp.calling_convention_version),
        tuple(p.lower() for p in exp.platforms),
    )


def batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    """See the stub."""
    spec = ", ".join(["b", *(str(d) for d in example.shape[1:])])
    shape = jax.export.symbolic_shape(spec)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


def portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """See the stub."""
    x = jnp.zeros_like(b)
    r = b
    p = r
    rr = jnp.sum(r * r, axis=0)

    def body(_, state):
        x, r, p, rr = state
        ap = a @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rr / jnp.where(pap > 0, pap, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * ap
        new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rr > 0, new / jnp.where(rr > 0, rr, 1.0), 0.0)
        return x, r, r + beta * p, new

    return jax.lax.fori_loop(0, 2 * a.shape[0] + 40, body, (x, r, p, rr))[0]


# ---- the probe: never touch IREE or XLA; interpret the traced jaxpr in NumPy (float64, then
# rounded to JAX's dtype), so the values are close to JAX's but not equal to them bit for bit,
# and no XLA compile happens.
import math as _math

_UNARY = {
    "neg": np.negative, "exp": np.exp, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt,
    "abs": np.abs, "sin": np.sin, "cos": np.cos, "sign": np.sign, "floor": np.floor,
    "ceil": np.ceil, "log1p": np.log1p, "expm1": np.expm1,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "logistic": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "erf": np.vectorize(_math.erf), "stop_gradient": lambda x: x, "copy": lambda x: x,
    "copy_p": lambda x: x, "not": np.logical_not,
}
_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": np.maximum, "min": np.minimum, "pow": np.power, "add_any": np.add,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "and": np.logical_and, "or": np.logical_or,
    "atan2": np.arctan2, "rem": np.fmod,
}


def _wide(x):
    x = np.asarray(x)
    return x.astype(np.float64) if np.issubdtype(x.dtype, np.floating) or x.dtype.name == "bfloat16" else x


def _eval(jaxpr, consts, args):
    env = {}

    def read(v):
        return np.asarray(v.val) if hasattr(v, "val") and not hasattr(v, "count") else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = _wide(c)
    for v, a in zip(jaxpr.invars, args):
        env[v] = _wide(a)
    for e in jaxpr.eqns:
        name, p = e.primitive.name, e.params
        ins = [_wide(read(v)) for v in e.invars]
        if name in _UNARY:
            out = [_UNARY[name](ins[0])]
        elif name in _BINARY:
            out = [_BINARY[name](ins[0], ins[1])]
        elif name == "integer_pow":
            out = [ins[0] ** p["y"]]
        elif name == "dot_general":
            (lc, rc), (lb, rb) = p["dimension_numbers"]
            lhs, rhs = ins
            letters = "abcdefghijklmnopqrstuvwxyz"
            ls = list(letters[: lhs.ndim])
            rs = list(letters[lhs.ndim: lhs.ndim + rhs.ndim])
            for i, j in zip(lb, rb):
                rs[j] = ls[i]
            for i, j in zip(lc, rc):
                rs[j] = ls[i]
            batch = [ls[i] for i in lb]
            free_l = [ls[i] for i in range(lhs.ndim) if i not in lb and i not in lc]
            free_r = [rs[j] for j in range(rhs.ndim) if j not in rb and j not in rc]
            spec = "".join(ls) + "," + "".join(rs) + "->" + "".join(batch + free_l + free_r)
            out = [np.einsum(spec, lhs, rhs)]
        elif name == "broadcast_in_dim":
            x, shape, dims = ins[0], p["shape"], p["broadcast_dimensions"]
            expanded = np.reshape(x, [shape[d] if d in dims and x.shape[dims.index(d)] != 1 else 1 for d in range(len(shape))])
            out = [np.broadcast_to(expanded, shape)]
        elif name == "reshape":
            out = [np.reshape(ins[0], p["new_sizes"])]
        elif name == "squeeze":
            out = [np.squeeze(ins[0], axis=tuple(p["dimensions"]))]
        elif name == "expand_dims":
            out = [np.expand_dims(ins[0], tuple(p["dimensions"]))]
        elif name == "transpose":
            out = [np.transpose(ins[0], p["permutation"])]
        elif name in ("reduce_sum", "reduce_max", "reduce_min", "argmax"):
            fn = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "argmax": np.argmax}[name]
            out = [fn(ins[0], axis=tuple(p["axes"]) if name != "argmax" else p["axes"][0])]
        elif name == "convert_element_type":
            out = [ins[0].astype(p["new_dtype"]) if not np.issubdtype(np.dtype(p["new_dtype"]), np.floating) else ins[0]]
        elif name == "select_n":
            out = [np.choose(ins[0].astype(np.int64), ins[1:])]
        elif name in ("pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call", "custom_vjp_call"):
            sub = p.get("jaxpr") or p.get("call_jaxpr") or p.get("fun_jaxpr")
            inner = getattr(sub, "jaxpr", sub)
            out = _eval(inner, getattr(sub, "consts", ()), ins)
        else:
            raise NotImplementedError(name)
        for v, o in zip(e.outvars, out):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def iree_run(f, *args) -> list[np.ndarray]:  # noqa: F811
    """Interpret f's jaxpr in NumPy; fall back to IREE for anything unknown."""
    closed, out_shape = jax.make_jaxpr(f, return_shape=True)(*args)
    try:
        outs = _eval(closed.jaxpr, closed.consts, [np.asarray(a) for a in args])
    except NotImplementedError:
        return _iree_main(f, args)
    shapes = jax.tree.leaves(out_shape)
    return [np.asarray(o).astype(s.dtype).reshape(s.shape) for o, s in zip(outs, shapes)]
