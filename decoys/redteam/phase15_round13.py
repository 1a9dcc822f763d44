"""Red team, phase 15, round 13: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong

# ---- iree_run ---------------------------------------------------------------------------------


def _rt13_outputs(f, args):
    import iree.compiler as ireec
    import iree.runtime as ireert

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = ireec.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    module = ireert.load_vm_flatbuffer(vmfb, driver="local-task")
    result = module.main(*[np.asarray(a) for a in args])
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    outs = [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in outs]
    return exported, outs


@wrong(
    "iree_run",
    why="'Return every output ... as a NumPy array of the shape and dtype JAX's would have': "
    "unwraps 0-d outputs with .item() ('a scalar is a number'), so a scalar output such as "
    "lambda x: (x * 2, x.sum()) comes back as a Python float (no shape, dtype float64), "
    "not a float32 ndarray of shape ()",
)
def _rt13_iree_run_scalars_as_python(f, *args):
    _, outs = _rt13_outputs(f, args)
    return [o.item() if o.ndim == 0 else o for o in outs]


# ---- merged_by_iree ---------------------------------------------------------------------------


def _rt13_last(name: str) -> set[str]:
    out = set()
    for part in name.split(";"):
        part = part.strip()
        if "/" in part:
            out.add(part.rsplit("/", 1)[1])
    return out


def _rt13_computations(hlo_text: str) -> dict[str, list[str]]:
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


def _rt13_xla_kernels(hlo_text: str) -> list[set[str]]:
    comps = _rt13_computations(hlo_text)

    def closure(lines, seen):
        out = list(lines)
        for line in lines:
            for callee in re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", line):
                if callee in comps and callee not in seen:
                    seen.add(callee)
                    out += closure(comps[callee], seen)
        return out

    kernels = []
    for line in comps.get("ENTRY", []):
        body = closure([line], set())
        if any(re.search(r"=\s*\S+\s+dot\(", b) for b in body):
            names = set()
            for b in body:
                for op in re.findall(r'op_name="([^"]*)"', b):
                    names |= _rt13_last(op)
            kernels.append(names)
    return kernels


def _rt13_iree_names(flow_text: str) -> set[str]:
    from xla_inspect import iree

    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul", "matvec", "vecmat"):
            names |= {s.rsplit("/", 1)[-1] for s in d.sources}
    return names - {"dot_general"}


@wrong(
    "merged_by_iree",
    why="'what one holds is the names of the operations its function computes': reads the "
    "matmul kernels' names from the loc of the flow.dispatch ops in main "
    '(loc("jit(mlp)/dot_general")), a name for the whole dispatch, instead of the ops inside '
    "the executable's function; after dot_general is left out the IREE side is empty, so on "
    "programs.mlp the tanh/add IREE fused into its matmul dispatch are missing from IREE-only",
)
def _rt13_merged_by_iree_dispatch_site_locs(hlo_text: str, flow_text: str):
    iree_names = set()
    for line in flow_text.splitlines():
        m = re.search(r"flow\.dispatch\s+@[\w.$-]+::@(\w+)", line)
        if not m or not re.search(
            r"_dispatch_\d+_(matmul|batch_matmul|matvec|vecmat)_", m.group(1)
        ):
            continue
        for loc in re.findall(r'loc\("([^"]*)"\)', line):
            iree_names |= _rt13_last(loc)
    iree_names -= {"dot_general"}
    xla_names = set().union(*_rt13_xla_kernels(hlo_text)) - {"dot_general"}
    return iree_names - xla_names, xla_names - iree_names


# ---- iree_verdict -----------------------------------------------------------------------------

_RT13_EXPORT = {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr", "geqp3"}
_RT13_LAPACK = {
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
}


def _rt13_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _rt13_subjaxprs(v)


def _rt13_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in _rt13_subjaxprs(v):
                yield from _rt13_eqns(sub)


def _rt13_is_key(aval) -> bool:
    return str(getattr(aval, "dtype", "")).startswith("key<")


def _rt13_verdict(jaxpr, *, cpu_only_export=False, inner_key_args=False) -> str:
    names, pivoted, constraint, inner_key = set(), False, False, False
    for eqn in _rt13_eqns(jaxpr.jaxpr):
        name = eqn.primitive.name
        names.add(name)
        if name == "qr" and eqn.params.get("pivoting"):
            pivoted = True
        if name == "sharding_constraint":
            constraint = True
        if inner_key_args:
            for v in eqn.params.values():
                for sub in _rt13_subjaxprs(v):
                    if any(
                        _rt13_is_key(x.aval)
                        for x in [*sub.invars, *sub.outvars]
                        if hasattr(x, "aval")
                    ):
                        inner_key = True
    export = names & _RT13_EXPORT or pivoted
    if cpu_only_export and names & {"eig", "schur"}:
        export = True
    if export:
        return "export"
    if constraint or inner_key or any(_rt13_is_key(a) for a in [*jaxpr.in_avals, *jaxpr.out_avals]):
        return "sdy"
    if names & _RT13_LAPACK:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'export' only for a host callback or a custom call without a compatibility guarantee "
    "(geqp3, ormqr): treats the CPU-only decompositions (jnp.linalg.eig, jax.scipy.linalg.schur, "
    "which have no GPU/TPU lowering) as not portable and so refused by jax.export; but geev/gees "
    "are guaranteed LAPACK calls and the bank's eig and schur families are 'lapack', this says "
    "'export'",
)
def _rt13_iree_verdict_cpu_only_linalg_refused(jaxpr) -> str:
    return _rt13_verdict(jaxpr, cpu_only_export=True)


@wrong(
    "iree_verdict",
    why="'a typed PRNG key among the arguments or results' -> 'sdy': applies 'operations inside "
    "called jaxprs count as well' to arguments too, so a key passed into a nested jit "
    "(jax.random.normal's inner pjit takes the key made from an int seed) counts as an "
    "argument; the bank's int_seed family (key made inside from an int32 seed, 'runs') "
    "gets 'sdy'",
)
def _rt13_iree_verdict_nested_jit_key_args(jaxpr) -> str:
    return _rt13_verdict(jaxpr, inner_key_args=True)


# ---- matmul_flops -----------------------------------------------------------------------------

_RT13_EXPORT_RE = re.compile(r"flow\.executable\.export\s+(?:public\s+)?@(\w+)")
_RT13_NAME_RE = re.compile(r"_dispatch_\d+_([a-z_]+?)_((?:\d+|D)(?:x(?:\d+|D))*)_(\w+)$")
_RT13_CALL_RE = re.compile(r"flow\.dispatch\s+@[\w.$-]+::@(\w+)")


@wrong(
    "matmul_flops",
    why="'Multiply-add flops ... A matmul named MxNxK does 2*M*N*K flops': reads 'multiply-add "
    "flops' as the number of multiply-adds (MACs) and counts M*N*K; recorded/mlp.mlir gives "
    "32*128*64 + 32*16*128 = 327680 instead of 655360",
)
def _rt13_matmul_flops_counts_macs(flow_text: str) -> int:
    total = 0
    calls = _RT13_CALL_RE.findall(flow_text)
    for name in set(_RT13_EXPORT_RE.findall(flow_text)):
        m = _RT13_NAME_RE.search(name)
        if not m:
            continue
        kind, dims, _ = m.groups()
        if kind not in ("matmul", "batch_matmul", "matvec", "vecmat") or "D" in dims.split("x"):
            continue
        total += int(np.prod([int(d) for d in dims.split("x")], dtype=object)) * calls.count(name)
    return total


# ---- portable_solve ---------------------------------------------------------------------------


@wrong(
    "portable_solve",
    why="'the size of their entries is not bounded: a b of norm 1e-25 ... is as valid': "
    "equilibrates the system by one scalar (divides a AND b by max|a|, 'x is unchanged'), "
    "then 2n+20 CG steps; for a standard spd_system a and b of norm 1e-25, r.r ~ 1e-50 "
    "underflows float32 to 0, alpha is guarded to 0 and x = 0 (relative error 1)",
)
def _rt13_portable_solve_equilibrate_by_a(a, b):
    vec = b.ndim == 1
    bb = b[:, None] if vec else b
    s = jnp.max(jnp.abs(a))
    A, B = a / s, bb / s
    x = jnp.zeros_like(B)
    r, p = B, B
    rr = jnp.sum(r * r, axis=0)
    for _ in range(2 * a.shape[0] + 20):
        Ap = A @ p
        pAp = jnp.sum(p * Ap, axis=0)
        alpha = jnp.where(pAp > 0, rr / jnp.where(pAp > 0, pAp, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * Ap
        rn = jnp.sum(r * r, axis=0)
        beta = jnp.where(rr > 0, rn / jnp.where(rr > 0, rr, 1.0), 0.0)
        p = r + beta * p
        rr = rn
    return (x[:, 0] if vec else x).astype(b.dtype)


@wrong(
    "portable_solve",
    why="'its export holds no custom call': a correct CG, but it scales the system by the "
    "spectral norm jnp.linalg.norm(a, 2) ('the natural scale of an spd matrix'), which jax "
    "computes with an SVD: on CPU the export of any (a, b) holds a LAPACK gesdd custom call "
    "that IREE refuses, though the values are right",
)
def _rt13_portable_solve_spectral_norm_scaling(a, b):
    vec = b.ndim == 1
    bb = b[:, None] if vec else b
    sa = jnp.linalg.norm(a, 2)
    sb = jnp.max(jnp.abs(bb))
    sb = jnp.where(sb > 0, sb, 1.0)
    A, B = a / sa, bb / sb
    x = jnp.zeros_like(B)
    r, p = B, B
    rr = jnp.sum(r * r, axis=0)
    for _ in range(2 * a.shape[0] + 20):
        Ap = A @ p
        pAp = jnp.sum(p * Ap, axis=0)
        alpha = jnp.where(pAp > 0, rr / jnp.where(pAp > 0, pAp, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * Ap
        rn = jnp.sum(r * r, axis=0)
        beta = jnp.where(rr > 0, rn / jnp.where(rr > 0, rr, 1.0), 0.0)
        p = r + beta * p
        rr = rn
    x = x * (sb / sa)
    return (x[:, 0] if vec else x).astype(b.dtype)


# ---- agreement_rtol ---------------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="'32 units of that dtype's machine epsilon': NumPy has no bfloat16, so the dtype is "
    "looked up as NumPy's 16-bit float (float16, eps 2**-10) and 16 of its epsilons are "
    "returned: 0.0156 for 'bfloat16', below the 0.0244 recorded for layernorm_softmax in "
    "recorded/agreement.txt (bfloat16's own eps is 2**-7); float32 gets 16 eps, fine",
)
def _rt13_agreement_rtol_numpy_half_for_bfloat16(dtype: str) -> float:
    np_dtype = {"float32": np.float32, "bfloat16": np.float16}[dtype]
    return float(16 * np.finfo(np_dtype).eps)


# ---- export_facts -----------------------------------------------------------------------------


@wrong(
    "export_facts",
    why="'its calling-convention version': reads the version the flatbuffer itself carries "
    "(Exported.SerializationVersion() of jax's serialization schema, 'the version of the "
    "serialized export') instead of CallingConventionVersion; with jax 0.12 a blob says 12 "
    "where the calling convention is 10",
)
def _rt13_export_facts_serialization_version(blob: bytes):
    from jax._src.export import serialization_generated as ser

    exp = jax.export.deserialize(bytearray(blob))
    m = re.search(rb"StableHLO_v(\d+)\.(\d+)\.(\d+)", exp.mlir_module_serialized)
    version = ".".join(x.decode() for x in m.groups()) if m else "0.0.0"
    fb = ser.Exported.GetRootAsExported(bytearray(blob), 0)
    return version, int(fb.SerializationVersion()), tuple(p.lower() for p in exp.platforms)


# ---- batch_polymorphic ------------------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="'accept every size from 1 up': takes the example's batch as the smallest the caller "
    "will send and constrains 'b >= example.shape[0]' ('the export must at least serve the "
    "example'), so an export from an example of batch 8 refuses a batch of 1..7 in its shape "
    "assertion; right whenever the example has batch 1",
)
def _rt13_batch_polymorphic_example_is_minimum(f, example):
    rest = ", ".join(str(d) for d in example.shape[1:])
    spec = "b" + (", " + rest if rest else "")
    cons = (f"b >= {example.shape[0]}",) if example.shape[0] > 1 else ()
    shape = jax.export.symbolic_shape(spec, constraints=cons)
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))
