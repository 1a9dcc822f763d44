"""Round 6 red-team wrong answers for phase 15 (StableHLO into IREE)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree

# ---------------------------------------------------------------- helpers


def _rt6_computations(hlo_text):
    comps, entry, cur, name = {}, None, None, None
    for line in hlo_text.splitlines():
        s = line.strip()
        m = re.match(r"(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$", s)
        if cur is None and m and " = " not in s.split("(")[0]:
            name, cur = m.group(2), []
            if m.group(1):
                entry = name
            continue
        if cur is not None:
            if s == "}":
                comps[name], cur = cur, None
            elif " = " in s:
                cur.append(s)
    return comps, entry


def _rt6_opcode(inst):
    rhs = inst.split(" = ", 1)[1]
    m = re.match(r"(\([^=]*?\)|\S+)\s+([\w\-]+)\(", rhs)
    return m.group(2) if m else ""


def _rt6_called(inst):
    out = []
    for m in re.finditer(r"(?:calls|to_apply|body|condition)=(\{[^}]*\}|%[\w.\-]+)", inst):
        out += re.findall(r"%([\w.\-]+)", m.group(1))
    return out


def _rt6_names(inst):
    m = re.search(r'op_name="([^"]*)"', inst)
    if not m:
        return set()
    return {part.rsplit("/", 1)[-1] for part in m.group(1).split(";")}


def _rt6_reach(comps, names):
    seen, todo = set(), list(names)
    while todo:
        c = todo.pop()
        if c in seen or c not in comps:
            continue
        seen.add(c)
        for inst in comps[c]:
            todo += _rt6_called(inst)
    return seen


def _rt6_xla_kernel_names(hlo_text, is_kernel):
    comps, entry = _rt6_computations(hlo_text)
    names = set()
    for inst in comps[entry]:
        reach = _rt6_reach(comps, _rt6_called(inst))
        if is_kernel(inst, reach, comps):
            names |= _rt6_names(inst)
            for c in reach:
                for i in comps[c]:
                    names |= _rt6_names(i)
    return names


def _rt6_holds_dot(inst, reach, comps):
    return _rt6_opcode(inst) == "dot" or any(
        _rt6_opcode(i) == "dot" for c in reach for i in comps[c]
    )


_RT6_MATMUL_KINDS = {"matmul", "batch_matmul", "matvec", "vecmat"}


def _rt6_iree_names(flow_text):
    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _RT6_MATMUL_KINDS:
            names |= set(d.sources)
    return names


# ---------------------------------------------------------------- matmul_flops


@wrong(
    "matmul_flops",
    why="'A matmul named MxNxK does 2*M*N*K flops' whatever its element type: the name regex "
    "accepts only float dtypes (f16/f32/f64/bf16), so recorded/int_matmul.mlir "
    "(main_dispatch_0_matmul_8x40x24_i32) gives 0 instead of 2*8*40*24 = 15360",
)
def _rt6_matmul_flops_float_only(flow_text: str) -> int:
    pat = re.compile(
        r"flow\.executable\.export\s+(?:public\s+)?@(\w+?_dispatch_\d+_"
        r"(matmul|batch_matmul|matvec|vecmat)_(\d+(?:x\d+)*)_b?f\d+(?:xb?f\d+)*)\b"
    )
    sizes = {}
    for m in pat.finditer(flow_text):
        sizes[m.group(1)] = [int(v) for v in m.group(3).split("x")]
    total = 0
    for m in re.finditer(r"flow\.dispatch\s+@[\w.]+::@(\w+)", flow_text):
        dims = sizes.get(m.group(1))
        if dims:
            total += 2 * int(np.prod(dims))
    return total


@wrong(
    "matmul_flops",
    why="'a matvec MxK 2*M*K and a vecmat NxK 2*N*K': counts a matrix-vector product as M*K "
    "('one multiply-add per matrix element', the factor 2 kept only for matrix-matrix kinds); "
    "recorded/projections.mlir gives 48*40 + 56*40 + 2*12*56*40 = 57920 instead of 62080",
)
def _rt6_matmul_flops_vector_half(flow_text: str) -> int:
    by_name = {d.name: d for d in iree.read_flow(flow_text)}
    total = 0
    for m in re.finditer(r"flow\.dispatch\s+@[\w.]+::@(\w+)", flow_text):
        d = by_name.get(m.group(1))
        if d is None or d.kind not in _RT6_MATMUL_KINDS:
            continue
        if any(not isinstance(s, int) for s in d.sizes):
            continue
        factor = 1 if d.kind in ("matvec", "vecmat") else 2
        total += factor * int(np.prod(d.sizes))
    return total


# ---------------------------------------------------------------- merged_by_iree


@wrong(
    "merged_by_iree",
    why="XLA's matmul kernels are the ENTRY instructions that are a `dot` or call one: this picks "
    "them by their op_name ending in `dot_general` (a name, not the opcode); train_step's "
    "weight-gradient dots are plain ENTRY dots named `.../transpose(jvp())/transpose`, so "
    "'transpose' wrongly lands among the IREE-only names",
)
def _rt6_merged_by_iree_dot_by_name(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    def by_name(inst, reach, comps):
        m = re.search(r'op_name="([^"]*)"', inst)
        return bool(m) and m.group(1).split(";")[0].endswith("/dot_general")

    xla = _rt6_xla_kernel_names(hlo_text, by_name) - {"dot_general"}
    ir = _rt6_iree_names(flow_text) - {"dot_general"}
    return ir - xla, xla - ir


@wrong(
    "merged_by_iree",
    why="'the names only IREE's matmul kernels hold' compares matmul kernel with matmul kernel: "
    "this subtracts every name anywhere in XLA's module (and every name anywhere in IREE's "
    "listing), so for mlp the gelu's tanh/mul/add (in XLA's loop fusion, in IREE's matmul "
    "dispatch) disappear and IREE-only comes out empty instead of {add, mul, tanh, integer_pow...}",
)
def _rt6_merged_by_iree_whole_module(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    xla_k = _rt6_xla_kernel_names(hlo_text, _rt6_holds_dot) - {"dot_general"}
    ir_k = _rt6_iree_names(flow_text) - {"dot_general"}
    xla_all = set()
    for m in re.finditer(r'op_name="([^"]*)"', hlo_text):
        xla_all |= {p.rsplit("/", 1)[-1] for p in m.group(1).split(";")}
    ir_all = set()
    for d in iree.read_flow(flow_text):
        ir_all |= set(d.sources)
    return ir_k - xla_all, xla_k - ir_all


@wrong(
    "merged_by_iree",
    why="XLA's matmul kernels are the ENTRY instructions that are a `dot` or whose called "
    "computations hold one: this takes every YNN library fusion (kind=kCustom, 'the README "
    "says the dots are YNN fusions') plus plain dots; in train_step XLA:CPU also runs the "
    "bias-gradient reduce_sum as a YNN fusion with no dot inside, so 'reduce_sum' wrongly "
    "appears among the XLA-only names",
)
def _rt6_merged_by_iree_ynn_is_matmul(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    def ynn_or_dot(inst, reach, comps):
        return "kind=kCustom" in inst or "__ynn_fusion" in inst or _rt6_opcode(inst) == "dot"

    xla = _rt6_xla_kernel_names(hlo_text, ynn_or_dot) - {"dot_general"}
    ir = _rt6_iree_names(flow_text) - {"dot_general"}
    return ir - xla, xla - ir


# ---------------------------------------------------------------- iree_verdict

_RT6_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_RT6_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "triangular_solve",
    "qr",
    "geqrf",
    "svd",
    "eig",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
    "householder_product",
}


def _rt6_subjaxprs(params):
    for v in params.values():
        for item in v if isinstance(v, (tuple, list)) else (v,):
            if hasattr(item, "jaxpr") and hasattr(item, "consts"):
                yield item.jaxpr
            elif hasattr(item, "eqns"):
                yield item


def _rt6_is_key(aval):
    try:
        return jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)
    except Exception:  # noqa: BLE001
        return False


def _rt6_verdict(closed, *, pivot_matters=True, ormqr_is_lapack=False):
    found = set()

    def walk(j):
        for e in j.eqns:
            name = e.primitive.name
            if name in _RT6_CALLBACKS:
                found.add("export")
            elif name == "qr" and e.params.get("pivoting") and pivot_matters:
                found.add("export")
            elif name == "ormqr":
                found.add("lapack" if ormqr_is_lapack else "export")
            elif name == "sharding_constraint":
                found.add("sdy")
            elif name in _RT6_LAPACK:
                found.add("lapack")
            for sub in _rt6_subjaxprs(e.params):
                walk(sub)

    walk(closed.jaxpr)
    if any(_rt6_is_key(a) for a in (*closed.in_avals, *closed.out_avals)):
        found.add("sdy")
    for v in ("export", "sdy", "lapack"):
        if v in found:
            return v
    return "runs"


@wrong(
    "iree_verdict",
    why="a qr with pivoting=True lowers to LAPACK's geqp3, which jax.export refuses ('export'): "
    "this looks for the primitive names only, and a pivoted QR traces to the same `qr` "
    "primitive as a plain one (pivoting is a param), so BANK 'pivoted_qr' "
    "(jax.lax.linalg.qr(a, pivoting=True)) gets 'lapack'",
)
def _rt6_iree_verdict_ignores_pivoting(jaxpr) -> str:
    return _rt6_verdict(jaxpr, pivot_matters=False)


@wrong(
    "iree_verdict",
    why="ormqr has no compatibility guarantee, so jax.export refuses it ('export'): this files "
    "ormqr with the LAPACK routines IREE cannot legalize (it is a LAPACK routine after all), "
    "so BANK 'ormqr' (jax.lax.linalg.ormqr(a, taus, a) + 1) gets 'lapack'",
)
def _rt6_iree_verdict_ormqr_as_lapack(jaxpr) -> str:
    return _rt6_verdict(jaxpr, ormqr_is_lapack=True)


# ---------------------------------------------------------------- batch_polymorphic


@wrong(
    "batch_polymorphic",
    why="'IREE compiles the export once and runs it at several batch sizes': exporting with "
    "platforms=('cpu', 'cuda') 'for portability' makes main take a leading i32 "
    "_platform_index argument, so IREE's main(x) fails with 'expected 2 arguments but passed "
    "1' (e.g. f = tanh(x @ w), example f32[4,5])",
)
def _rt6_batch_polymorphic_multi_platform(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b", *(str(d) for d in example.shape[1:])])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), example.dtype)
    return jax.export.export(jax.jit(f), platforms=("cpu", "cuda"))(spec)


# ---------------------------------------------------------------- portable_solve


def _rt6_cholesky_by_hand(a):
    n = a.shape[0]

    def col(j, l):
        v = a[:, j] - l @ l[j, :]
        d = jnp.sqrt(jnp.maximum(v[j], 1e-30))
        c = jnp.where(jnp.arange(n) >= j, v / d, 0.0)
        return l.at[:, j].set(c)

    return jax.lax.fori_loop(0, n, col, jnp.zeros_like(a))


@wrong(
    "portable_solve",
    why="'its export holds no custom call': the Cholesky factor is written by hand in a "
    "fori_loop (no potrf), but the two triangular solves use "
    "jax.scipy.linalg.solve_triangular, which on CPU is LAPACK's trsm custom call that IREE "
    "refuses; wrong on every input, e.g. n = 8, b of shape (8,)",
)
def _rt6_portable_solve_hand_cholesky_trsm(a: jax.Array, b: jax.Array) -> jax.Array:
    l = _rt6_cholesky_by_hand(a)
    y = jax.scipy.linalg.solve_triangular(l, b, lower=True)
    return jax.scipy.linalg.solve_triangular(l.T, y, lower=False)


@wrong(
    "portable_solve",
    why="relative error <= 1e-3 for any SPD a with condition number <= 100: 'not trusting "
    "symmetry', it runs n + 10 CG steps on the normal equations a^T a x = a^T b, whose "
    "condition number is 10^4; in float32 the error stays far above 1e-3 for n = 64 "
    "(programs.spd_system(rng, 64, None))",
)
def _rt6_portable_solve_normal_equations(a: jax.Array, b: jax.Array) -> jax.Array:
    ata = a.T @ a
    rhs = a.T @ b
    x = jnp.zeros_like(rhs)
    r = rhs - ata @ x
    p = r

    def step(_, state):
        x, r, p = state
        ap = ata @ p
        rr = jnp.sum(r * r, axis=0)
        alpha = rr / jnp.maximum(jnp.sum(p * ap, axis=0), 1e-30)
        x = x + alpha * p
        r2 = r - alpha * ap
        beta = jnp.sum(r2 * r2, axis=0) / jnp.maximum(rr, 1e-30)
        return x, r2, r2 + beta * p

    x, _, _ = jax.lax.fori_loop(0, a.shape[0] + 10, step, (x, r, p))
    return x


# ---------------------------------------------------------------- iree_run

_RT6_MODULES: dict = {}


@wrong(
    "iree_run",
    why="'Run f on args in IREE' for every call: IREE has no compile cache, so this keeps one of "
    "its own, keyed by f.__name__ and the argument shapes/dtypes (a name, not the program); "
    "a second lambda with the same argument shapes (iree_run(lambda x: x + 1, x) then "
    "iree_run(lambda x: x * 2, x)) reruns the first module and returns x + 1",
)
def _rt6_iree_run_cache_by_name(f, *args) -> list[np.ndarray]:
    import iree.compiler
    import iree.runtime

    key = (
        getattr(f, "__name__", "f"),
        tuple((np.shape(a), str(np.asarray(a).dtype)) for a in args),
    )
    exported = None
    if key not in _RT6_MODULES:
        specs = [jax.ShapeDtypeStruct(np.shape(a), jnp.asarray(a).dtype) for a in args]
        exported = jax.export.export(jax.jit(f))(*specs)
        vmfb = iree.compiler.compile_str(
            exported.mlir_module(),
            target_backends=["llvm-cpu"],
            input_type="stablehlo",
            extra_args=["--iree-llvmcpu-target-cpu=generic"],
        )
        module = iree.runtime.load_vm_flatbuffer(vmfb, driver="local-task")
        _RT6_MODULES[key] = (module, [(tuple(o.shape), o.dtype) for o in exported.out_avals])
    module, outs = _RT6_MODULES[key]
    result = module.main(*[np.asarray(a) for a in args])
    if not isinstance(result, (tuple, list)):
        result = (result,)
    return [
        np.asarray(r.to_host() if hasattr(r, "to_host") else r).astype(dt).reshape(shape)
        for r, (shape, dt) in zip(result, outs, strict=True)
    ]


# ---------------------------------------------------------------- export_facts


@wrong(
    "export_facts",
    why="the platforms are returned as a tuple[str, ...] in export order: this returns "
    "[p.lower() for p in exported.platforms], a list, which is not equal to ('cpu',) "
    "(list != tuple in Python), wrong on every blob",
)
def _rt6_export_facts_platform_list(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(bytearray(blob))
    head = bytes(exported.mlir_module_serialized[:64])
    m = re.search(rb"(\d+)\.(\d+)\.(\d+)", head)
    version = ".".join(g.decode() for g in m.groups()) if m else "0.0.0"
    return (
        version,
        int(exported.calling_convention_version),
        [p.lower() for p in exported.platforms],
    )
