"""Red team, phase 15, round 15: contraction sizes read from operand types, IREE names taken
from every location in a matmul executable (loads included), XLA names from the ENTRY
instruction only, eig grouped with the unguaranteed LAPACK calls, debug print assumed dropped,
a tolerance of log2(256) = 8 epsilons, the StableHLO patch assumed 0, a solve scaled by b's
signed maximum, Jacobi sweeps for an SPD solve, and an IREE module cache keyed by id(f)."""

from __future__ import annotations

import re

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree

_rt15_MATMUL_KINDS = ("matmul", "batch_matmul", "matvec", "vecmat")


# ---------------------------------------------------------------- shared helpers


def _rt15_export_names(flow_text):
    return re.findall(r"flow\.executable\.export\s+(?:public\s+)?@(\w+)", flow_text)


def _rt15_uses(flow_text, name):
    return len(re.findall(r"flow\.dispatch\s+@\w+::@" + re.escape(name) + r"\b", flow_text))


def _rt15_hlo_computations(hlo_text):
    comps, entry, cur = {}, None, None
    for line in hlo_text.splitlines():
        head = re.match(r"\s*(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$", line)
        if head and "=" not in line.split("(")[0]:
            cur = head.group(2)
            comps[cur] = []
            if head.group(1):
                entry = cur
            continue
        if cur and re.match(r"\s*(ROOT\s+)?%[\w.\-]+\s*=", line):
            comps[cur].append(line)
    return comps, entry


def _rt15_instruction(line):
    op = re.search(r"=\s*\S+(?:\s*\{[^}]*\})?\s+([\w\-]+)\(", line)
    opcode = op.group(1) if op else ""
    called = []
    for group in re.findall(
        r"(?:calls|to_apply|body|condition|branch_computations)=\{?([^,}]+(?:,\s*%[\w.\-]+)*)\}?",
        line,
    ):
        called += [c.strip().lstrip("%") for c in group.split(",")]
    names = set()
    meta = re.search(r'op_name="([^"]*)"', line)
    if meta:
        names = {part.split("/")[-1] for part in meta.group(1).split(";")}
    return opcode, called, names


def _rt15_xla_kernel_names(hlo_text, entry_metadata_only=False):
    comps, entry = _rt15_hlo_computations(hlo_text)
    out = set()
    for line in comps[entry]:
        opcode, called, names = _rt15_instruction(line)
        seen, stack, lines = set(), list(called), []
        while stack:
            c = stack.pop()
            if c in seen or c not in comps:
                continue
            seen.add(c)
            lines += comps[c]
            for inner in comps[c]:
                stack += _rt15_instruction(inner)[1]
        if opcode == "dot" or any(_rt15_instruction(x)[0] == "dot" for x in lines):
            out |= names
            if not entry_metadata_only:
                for inner in lines:
                    out |= _rt15_instruction(inner)[2]
    out.discard("dot_general")
    return out


def _rt15_iree_kernel_names(flow_text):
    names = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _rt15_MATMUL_KINDS:
            names |= set(d.sources)
    names.discard("dot_general")
    return names


def _rt15_walk(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    yield from _rt15_walk(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    yield from _rt15_walk(sub)


def _rt15_is_key_var(v):
    aval = getattr(v, "aval", None)
    dtype = getattr(aval, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


_rt15_LAPACK_PRIMS = {
    "lu",
    "cholesky",
    "eigh",
    "triangular_solve",
    "qr",
    "geqrf",
    "householder_product",
    "svd",
    "eig",
    "schur",
    "hessenberg",
    "tridiagonal",
    "tridiagonal_solve",
}


def _rt15_verdict_core(jaxpr, export_prims, callback_prims, lapack_prims):
    inner = jaxpr.jaxpr
    eqns = list(_rt15_walk(inner))
    names = {e.primitive.name for e in eqns}
    pivoted = any(e.primitive.name == "qr" and e.params.get("pivoting") for e in eqns)
    if names & (callback_prims | export_prims) or pivoted:
        return "export"
    keys = any(_rt15_is_key_var(v) for v in list(inner.invars) + list(inner.outvars))
    if "sharding_constraint" in names or keys:
        return "sdy"
    if names & lapack_prims:
        return "lapack"
    return "runs"


def _rt15_scaled_cg_core(a, b, steps):
    def body(_, state):
        x, r, p, rs = state
        ap = a @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rs / jnp.where(pap > 0, pap, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rs > 0, rs_new / jnp.where(rs > 0, rs, 1.0), 0.0)
        return x, r, r + beta * p, rs_new

    x0 = jnp.zeros_like(b)
    state = (x0, b, b, jnp.sum(b * b, axis=0))
    return jax.lax.fori_loop(0, steps, body, state)[0]


# ---------------------------------------------------------------- task 3: matmul_flops


@wrong(
    "matmul_flops",
    why="Clause 'read from the names of its dispatches ... batch_matmul BxMxNxK': sizes are "
    "taken from the linalg op's operand types (M, K from the lhs, N as the rhs's last dim), "
    "which assumes an untransposed rhs; attention's q k^T batch_matmul loads 4x24x32 as rhs, "
    "so recorded/attention.mlir gives 2*4*16*32*32 for the first dispatch instead of "
    "2*4*16*24*32 (229376 total instead of 196608; train_step.mlir 1327104 instead of 1441792).",
)
def _rt15_matmul_flops_operand_types(flow_text: str) -> int:
    total = 0
    blocks = re.split(r"(?=flow\.executable\s+private\s+@)", flow_text)
    for block in blocks:
        export = re.search(r"flow\.executable\.export\s+(?:public\s+)?@(\w+)", block)
        if not export:
            continue
        name = export.group(1)
        kind = iree.split_dispatch_name(name)[2]
        if kind not in _rt15_MATMUL_KINDS:
            continue
        op = re.search(
            r"linalg\.(?:batch_matmul|matmul|matvec|vecmat)\b.*?ins\([^:]*:\s*tensor<([^>]*)>,\s*"
            r"tensor<([^>]*)>",
            block,
        )
        if not op or "?" in op.group(1) or "?" in op.group(2):
            continue
        lhs = [int(s) for s in op.group(1).split("x")[:-1]]
        rhs = [int(s) for s in op.group(2).split("x")[:-1]]
        if kind == "vecmat":
            flops = 2 * int(np.prod(rhs))
        elif len(rhs) == 1:
            flops = 2 * int(np.prod(lhs))
        else:
            flops = 2 * int(np.prod(lhs)) * rhs[-1]
        total += flops * _rt15_uses(flow_text, name)
    return total


# ---------------------------------------------------------------- task 4: merged_by_iree


@wrong(
    "merged_by_iree",
    why="Clause 'not the tensor loads and stores, which carry their producer's name': every "
    'loc("jit(f)/...") inside a matmul executable is taken, loads included, so the producer '
    "of a matmul operand looks merged; for f(x, w) = (tanh(x) * 3) @ w (f32[8,16], f32[16,4]) "
    "IREE keeps tanh*3 in an elementwise dispatch, but the matmul dispatch's load carries "
    "'mul', so the answer reports {'mul'} as IREE-only where the correct set is empty.",
)
def _rt15_merged_by_iree_every_loc_in_executable(
    hlo_text: str, flow_text: str
) -> tuple[set[str], set[str]]:
    iree_names = set()
    for block in re.split(r"(?=flow\.executable\s+private\s+@)", flow_text):
        export = re.search(r"flow\.executable\.export\s+(?:public\s+)?@(\w+)", block)
        if not export or iree.split_dispatch_name(export.group(1))[2] not in _rt15_MATMUL_KINDS:
            continue
        block = block.split("util.func")[0].split("func.func public @main")[0]
        for loc in re.findall(r'loc\("([^"]*)"\)', block):
            if "/" in loc:
                iree_names.add(loc.split("/")[-1])
    iree_names.discard("dot_general")
    xla_names = _rt15_xla_kernel_names(hlo_text)
    return iree_names - xla_names, xla_names - iree_names


@wrong(
    "merged_by_iree",
    why="Clause 'what one holds is the names of all instructions there' (called computations "
    "included): XLA's kernel is named only by the ENTRY instruction's own metadata; for "
    "f(c, w) = fori_loop(0, 3, lambda i, c: tanh(c @ w), c) (f32[8,16], f32[16,16]) XLA's "
    "dot kernel is the ENTRY while, whose body holds tanh, add, lt: the answer gives "
    "({'tanh'}, {'while'}) where the correct pair is (set(), {'while', 'add', 'lt'}).",
)
def _rt15_merged_by_iree_entry_metadata_only(
    hlo_text: str, flow_text: str
) -> tuple[set[str], set[str]]:
    xla_names = _rt15_xla_kernel_names(hlo_text, entry_metadata_only=True)
    iree_names = _rt15_iree_kernel_names(flow_text)
    return iree_names - xla_names, xla_names - iree_names


# ---------------------------------------------------------------- task 5: iree_verdict


@wrong(
    "iree_verdict",
    why="Clause 'a custom call jax gives no compatibility guarantee: geqp3 ... and ormqr', else "
    "'lapack': the nonsymmetric eigensolver (geev) is assumed to be as unguaranteed as geqp3, "
    "so the BANK's eig family (jnp.abs(jnp.linalg.eigvals(a))) is answered 'export' where "
    "jax.export writes it and IREE refuses it: 'lapack'.",
)
def _rt15_iree_verdict_eig_unguaranteed(jaxpr) -> str:
    return _rt15_verdict_core(
        jaxpr,
        {"ormqr", "geqp3", "eig"},
        {"pure_callback", "io_callback", "debug_callback", "debug_print"},
        _rt15_LAPACK_PRIMS - {"eig"},
    )


@wrong(
    "iree_verdict",
    why="Clause 'a host callback: pure_callback, io_callback, debug print': jax.debug.print is "
    "assumed to be dropped when exporting (it returns nothing the result depends on), so only "
    "pure_callback and io_callback count; the BANK's debug_print family (print then x * 2) is "
    "answered 'runs' where jax.export refuses it: 'export'.",
)
def _rt15_iree_verdict_debug_print_dropped(jaxpr) -> str:
    return _rt15_verdict_core(
        jaxpr, {"ormqr", "geqp3"}, {"pure_callback", "io_callback"}, _rt15_LAPACK_PRIMS
    )


# ---------------------------------------------------------------- task 2: agreement_rtol


@wrong(
    "agreement_rtol",
    why="Clause 'on any fresh draw': one rounding per level of a pairwise reduction over the "
    "longest row (256 = 2**8) gives 8 eps, 9.54e-7 in float32; layernorm_softmax's worst "
    "float32 ratio over seeds 0-63 is 9.59e-7 (recorded/agreement.txt), so such draws fail.",
)
def _rt15_agreement_rtol_log2_reduction(dtype: str) -> float:
    return float(np.log2(256) * jnp.finfo(dtype).eps)


# ---------------------------------------------------------------- task 6: export_facts


@wrong(
    "export_facts",
    why="Clause 'the StableHLO version its module's bytecode was written for, MAJOR.MINOR.PATCH': "
    "only MAJOR.MINOR is read from the producer string and PATCH is taken as 0 (true of "
    "today's 'StableHLO_v1.18.0'); a blob written for a patch release, e.g. one whose module "
    "names 'StableHLO_v1.16.3' (the 12-week compatibility target), is answered '1.16.0'.",
)
def _rt15_export_facts_patch_zero(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported = jax.export.deserialize(blob)
    found = re.search(rb"StableHLO_v(\d+)\.(\d+)", exported.mlir_module_serialized)
    version = f"{int(found.group(1))}.{int(found.group(2))}.0"
    return (
        version,
        int(exported.calling_convention_version),
        tuple(p.lower() for p in exported.platforms),
    )


# ---------------------------------------------------------------- task 8: portable_solve


@wrong(
    "portable_solve",
    why="Clause 'the size of their entries is not bounded': a and b are normalised by their "
    "largest entry, jnp.max (for an SPD a the largest entry is the positive diagonal one, but "
    "b's largest entry is not its largest magnitude); for a = I2, b = [-1, 0] (x = [-1, 0]) "
    "the scale is 0 and the answer is NaN.",
)
def _rt15_portable_solve_signed_max_scale(a: jax.Array, b: jax.Array) -> jax.Array:
    a = jnp.asarray(a, jnp.float32)
    b = jnp.asarray(b, jnp.float32)
    vec = b.ndim == 1
    bb = b[:, None] if vec else b
    sa = jnp.max(a)
    sb = jnp.max(bb)
    x = _rt15_scaled_cg_core(a / sa, bb / sb, 2 * a.shape[0] + 10) * (sb / sa)
    return (x[:, 0] if vec else x).astype(b.dtype)


@wrong(
    "portable_solve",
    why="Clause 'a is symmetric positive definite with condition number at most 100': Jacobi "
    "sweeps (x <- (b - (a - D) x) / diag(a)) converge only for diagonally dominant-like a, not "
    "every SPD one; a = [[1,.9,.9],[.9,1,.9],[.9,.9,1]] (eigenvalues 2.8, .1, .1, condition 28) "
    "makes the iteration matrix's spectral radius 1.8, so 200 sweeps diverge to inf/NaN.",
)
def _rt15_portable_solve_jacobi(a: jax.Array, b: jax.Array) -> jax.Array:
    a = jnp.asarray(a, jnp.float32)
    b = jnp.asarray(b, jnp.float32)
    d = jnp.diagonal(a)
    dd = d[:, None] if b.ndim == 2 else d
    off = a - jnp.diag(d)
    x = jax.lax.fori_loop(0, 200, lambda _, x: (b - off @ x) / dd, b / dd)
    return x.astype(b.dtype)


# ---------------------------------------------------------------- task 1: iree_run

_rt15_VMFB_CACHE: dict = {}


@wrong(
    "iree_run",
    why="Clause 'Return every output ... of f(*args)': since IREE keeps no compile cache, the "
    "compiled module is cached by (id(f), argument shapes and dtypes); CPython reuses the id of "
    "a function that was freed, so iree_run(lambda x: x * 2, x) followed by "
    "iree_run(lambda x: x + 1, x) (x f32[4]) runs the first module again and returns 2x, not x + 1.",
)
def _rt15_iree_run_cache_by_id(f, *args) -> list[np.ndarray]:
    import iree.compiler as ireec
    import iree.runtime as ireert

    arrays = [np.asarray(a) for a in args]
    key = (id(f), tuple((a.shape, str(a.dtype)) for a in arrays))
    cached = _rt15_VMFB_CACHE.get(key)
    if cached is None:
        exported = jax.export.export(jax.jit(f))(*arrays)
        vmfb = ireec.compile_str(
            exported.mlir_module(),
            target_backends=["llvm-cpu"],
            input_type="stablehlo",
            extra_args=["--iree-llvmcpu-target-cpu=generic"],
        )
        cached = (vmfb, [(tuple(v.shape), v.dtype) for v in exported.out_avals])
        _rt15_VMFB_CACHE[key] = cached
    vmfb, avals = cached
    module = ireert.load_vm_flatbuffer(vmfb, driver="local-task")
    result = module.main(*arrays)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    return [
        np.asarray(o.to_host() if hasattr(o, "to_host") else o).astype(dt).reshape(shape)
        for o, (shape, dt) in zip(outs, avals)
    ]
