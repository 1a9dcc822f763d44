"""Red team, phase 15, round 17: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt17_compile_and_load(f, args):
    import iree.compiler
    import iree.runtime

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = iree.compiler.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    return iree.runtime.load_vm_flatbuffer(vmfb, driver="local-task")


@wrong(
    "iree_run",
    why="Clause 'Return every output ... as a NumPy array': iterating over main's result as if it were always a tuple; for a single-output f (programs.mlp, f32[32,16]) IREE returns one DeviceArray and this returns its 32 rows instead of one (32,16) array.",
)
def _rt17_iree_run_always_iterate(f, *args) -> list[np.ndarray]:
    module = _rt17_compile_and_load(f, args)
    result = module.main(*args)
    return [np.asarray(r) for r in result]


@wrong(
    "iree_run",
    why="Clause 'Nothing may be computed by XLA ... values equal to XLA's to the last bit ... fail': compiling and running in IREE only as a check, then returning jax's own outputs (thought to be 'the shape and dtype JAX's would have'); on programs.mlp the values are XLA's bit for bit and XLA compiles f.",
)
def _rt17_iree_run_return_jax(f, *args) -> list[np.ndarray]:
    module = _rt17_compile_and_load(f, args)
    module.main(*args)
    return [np.asarray(leaf) for leaf in jax.tree.leaves(f(*args))]


@wrong(
    "agreement_rtol",
    why="Clause 'must not exceed it on any fresh draw': 4 roundings ('a reduction and a tanh cost a few ulps'); float32 gives 4.8e-7 but IREE vs JAX on layernorm_softmax reach 9.6e-7 (recorded/agreement.txt).",
)
def _rt17_agreement_rtol_four_ulps(dtype: str) -> float:
    return float(4 * jnp.finfo(jnp.dtype(dtype)).eps)


@wrong(
    "agreement_rtol",
    why="Clause 'no looser than 32 units of that dtype's machine epsilon': the customary 1e-5 / 1e-2 (assert_allclose habits); float32 1e-5 is looser than 32*eps = 3.8e-6, and bfloat16 1e-2 is below mlp's 0.0131 recorded error.",
)
def _rt17_agreement_rtol_customary(dtype: str) -> float:
    return 1e-5 if dtype == "float32" else 1e-2


@wrong(
    "agreement_rtol",
    why="Clause 'computed entirely in dtype': one tolerance for both dtypes, sized for float32 (16 eps of f32 = 1.9e-6); bfloat16 outputs differ by 0.0244 on layernorm_softmax.",
)
def _rt17_agreement_rtol_f32_only(dtype: str) -> float:
    return float(16 * jnp.finfo(jnp.float32).eps)


_rt17_FLOP_KINDS = {"matmul": 3, "batch_matmul": 4, "matvec": 2, "vecmat": 2}


def _rt17_export_names(flow_text):
    return re.findall(r"flow\.executable\.export\s+(?:public\s+)?@(\w+)", flow_text)


def _rt17_flops_of(kind, dims):
    if kind not in _rt17_FLOP_KINDS or len(dims) != _rt17_FLOP_KINDS[kind]:
        return 0
    return 2 * int(np.prod(dims))


@wrong(
    "matmul_flops",
    why="Clause 'An export counts once for every flow.dispatch op that runs it': counting each export once; (x @ wq, x @ wk) of the same shapes runs one matmul export twice and this counts half the flops.",
)
def _rt17_matmul_flops_once_per_export(flow_text: str) -> int:
    total = 0
    for name in _rt17_export_names(flow_text):
        m = re.match(r".*?_dispatch_\d+_(batch_matmul|matmul|matvec|vecmat)_((?:\d+x)*\d+)_", name)
        if m:
            total += _rt17_flops_of(m.group(1), [int(d) for d in m.group(2).split("x")])
    return total


@wrong(
    "matmul_flops",
    why="Clause 'the index a number of any width (main_dispatch_12_...)': a one-digit index pattern _dispatch_(\\d)_ never matches main_dispatch_12_matmul_..., so a listing with more than ten dispatches loses every matmul from index 10 on.",
)
def _rt17_matmul_flops_one_digit(flow_text: str) -> int:
    total = 0
    for name in re.findall(r"flow\.dispatch @\w+::@(\w+)", flow_text):
        m = re.match(r".*_dispatch_\d_(batch_matmul|matmul|matvec|vecmat)_((?:\d+x)*\d+)_", name)
        if m:
            total += _rt17_flops_of(m.group(1), [int(d) for d in m.group(2).split("x")])
    return total


@wrong(
    "matmul_flops",
    why="Clause 'contractions IREE names otherwise, such as matvec_like ... count 0': matching the kind by prefix (startswith matvec / matmul) counts a main_dispatch_0_matvec_like_48x40_f32 as a 48x40 matvec (3840 flops instead of 0).",
)
def _rt17_matmul_flops_prefix_kind(flow_text: str) -> int:
    total = 0
    for name in re.findall(r"flow\.dispatch @\w+::@(\w+)", flow_text):
        m = re.match(r".*?_dispatch_\d+_([a-z_]+?)_((?:\d+x)*\d+)_", name)
        if not m:
            continue
        kind, dims = m.group(1), [int(d) for d in m.group(2).split("x")]
        for k in ("batch_matmul", "matmul", "matvec", "vecmat"):
            if kind.startswith(k):
                total += 2 * int(np.prod(dims)) if len(dims) == _rt17_FLOP_KINDS[k] else 0
                break
    return total


@wrong(
    "matmul_flops",
    why="Clause 'counts once for every flow.dispatch op': counting text.count(export name), which also counts the flow.executable.export line; recorded/mlp.mlir (one dispatch op per export) gives twice the flops.",
)
def _rt17_matmul_flops_count_mentions(flow_text: str) -> int:
    total = 0
    for name in set(_rt17_export_names(flow_text)):
        m = re.match(r".*?_dispatch_\d+_(batch_matmul|matmul|matvec|vecmat)_((?:\d+x)*\d+)_", name)
        if m:
            total += flow_text.count("@" + name) * _rt17_flops_of(
                m.group(1), [int(d) for d in m.group(2).split("x")]
            )
    return total


_rt17_MATMUL_KINDS = {"matmul", "batch_matmul", "matvec", "vecmat"}


def _rt17_op_names(instruction):
    m = re.search(r'op_name="([^"]*)"', instruction.attributes_text)
    if not m:
        return set()
    return {part.rsplit("/", 1)[-1] for part in m.group(1).split(";") if "/" in part}


def _rt17_xla_side(hlo_text, split=True, nested=True, plain_dots=True):
    from xla_inspect.parse import parse_hlo
    from xla_inspect.query import reachable

    module = parse_hlo(hlo_text)
    names = set()
    for ins in module.entry.instructions:
        called = tuple(ins.called_computations)
        comps = (
            reachable(module, called)
            if nested
            else [c for c in map(module.computation, called) if c]
        )
        inner = [i for c in comps for i in c.instructions]
        if ins.opcode == "dot" and plain_dots or any(i.opcode == "dot" for i in inner):
            for i in [ins, *inner]:
                if split:
                    names |= _rt17_op_names(i)
                else:
                    m = re.search(r'op_name="([^"]*)"', i.attributes_text)
                    if m and "/" in m.group(1):
                        names.add(m.group(1).rsplit("/", 1)[-1])
    return names


def _rt17_iree_side(flow_text, kinds=_rt17_MATMUL_KINDS):
    from xla_inspect import iree

    return set().union(
        *[d.sources for d in iree.read_flow(flow_text) if kinds is None or d.kind in kinds]
    )


@wrong(
    "merged_by_iree",
    why="Clause 'IREE's matmul kernels are the dispatches whose kind is matmul, batch_matmul, matvec or vecmat': taking every dispatch's sources; on train_step the reduction and elementwise dispatches' reduce_sum etc. show up as merged by IREE.",
)
def _rt17_merged_by_iree_all_dispatches(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    i, x = _rt17_iree_side(flow_text, kinds=None), _rt17_xla_side(hlo_text)
    return (i - x) - {"dot_general"}, (x - i) - {"dot_general"}


@wrong(
    "merged_by_iree",
    why="Clause 'XLA's matmul kernels are the instructions of the ENTRY computation that are a dot or whose called computations hold one': only fusions are looked into, a plain ENTRY dot is skipped; a program whose dot XLA leaves unfused (a matmul with a transpose fused beside it, or a dot_general with metadata 'jit(f)/dot_general;mul') loses its names on the XLA side.",
)
def _rt17_merged_by_iree_fusions_only(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    i, x = _rt17_iree_side(flow_text), _rt17_xla_side(hlo_text, plain_dots=False)
    return (i - x) - {"dot_general"}, (x - i) - {"dot_general"}


@wrong(
    "merged_by_iree",
    why="Clause 'XLA may join several names in one op_name with ;, each of which counts': taking the last '/' part of the whole op_name; 'jit(f)/add;jit(f)/mul' yields only 'mul', so 'add' goes missing from XLA's side.",
)
def _rt17_merged_by_iree_no_split(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    i, x = _rt17_iree_side(flow_text), _rt17_xla_side(hlo_text, split=False)
    return (i - x) - {"dot_general"}, (x - i) - {"dot_general"}


_rt17_EXPORT_PRIMS = {"pure_callback", "io_callback", "debug_callback", "debug_print", "ormqr"}
_rt17_LAPACK_PRIMS = {
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
}


def _rt17_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt17_subjaxprs(v)


def _rt17_eqns(jaxpr, deep=True):
    for eqn in jaxpr.eqns:
        yield eqn
        if deep:
            for v in eqn.params.values():
                for sub in _rt17_subjaxprs(v):
                    yield from _rt17_eqns(sub)


def _rt17_is_key(aval):
    return (
        jax.dtypes.issubdtype(getattr(aval, "dtype", None), jax.dtypes.prng_key)
        if hasattr(aval, "dtype")
        else False
    )


def _rt17_verdict(
    jaxpr,
    deep=True,
    key_outs=True,
    pivot_export=True,
    key_prims_sdy=False,
    export_prims=_rt17_EXPORT_PRIMS,
):
    eqns = list(_rt17_eqns(jaxpr.jaxpr, deep))
    names = [e.primitive.name for e in eqns]
    for e in eqns:
        if e.primitive.name in export_prims:
            return "export"
        if pivot_export and e.primitive.name == "qr" and e.params.get("pivoting"):
            return "export"
    avals = list(jaxpr.in_avals) + (list(jaxpr.out_avals) if key_outs else [])
    if "sharding_constraint" in names or any(_rt17_is_key(a) for a in avals):
        return "sdy"
    if key_prims_sdy and any(n.startswith("random_") for n in names):
        return "sdy"
    if any(n in _rt17_LAPACK_PRIMS for n in names):
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="Clause 'Operations inside called jaxprs (jit, cond, ...) count as well': looking at top-level equations only; jnp.linalg.solve's lu sits inside a jit equation, so the solve family is answered 'runs' instead of 'lapack'.",
)
def _rt17_iree_verdict_top_level(jaxpr) -> str:
    return _rt17_verdict(jaxpr, deep=False)


@wrong(
    "iree_verdict",
    why="Clause 'a typed PRNG key among the arguments or results': checking only the input avals for key<...> dtypes; the key_result family (keys split from an int32 seed returned as a result) is answered 'runs' instead of 'sdy'.",
)
def _rt17_iree_verdict_key_inputs_only(jaxpr) -> str:
    return _rt17_verdict(jaxpr, key_outs=False)


@wrong(
    "iree_verdict",
    why="Clause 'geqp3, which a qr with pivoting=True lowers to' -> 'export': treating every qr as a LAPACK factorization; the pivoted_qr family is answered 'lapack' instead of 'export'.",
)
def _rt17_iree_verdict_qr_is_lapack(jaxpr) -> str:
    return _rt17_verdict(jaxpr, pivot_export=False)


@wrong(
    "iree_verdict",
    why="Clause 'JAX writes them ... for a typed PRNG key among the arguments or results': any random_seed/random_wrap/random_bits equation taken as a key, hence Shardy; the int_seed family (key made inside from an int32 seed) is answered 'sdy' instead of 'runs'.",
)
def _rt17_iree_verdict_any_key_op(jaxpr) -> str:
    return _rt17_verdict(jaxpr, key_prims_sdy=True)


@wrong(
    "iree_verdict",
    why="Clause 'a host callback: pure_callback, io_callback, debug print': matching primitive names that contain 'callback'; jax.debug.print traces to a debug_print equation, so the debug_print family is answered 'runs' instead of 'export'.",
)
def _rt17_iree_verdict_callback_substring(jaxpr) -> str:
    names = [e.primitive.name for e in _rt17_eqns(jaxpr.jaxpr)]
    if any("callback" in n for n in names):
        return "export"
    return _rt17_verdict(jaxpr, export_prims=set())


@wrong(
    "export_facts",
    why="Clause 'the StableHLO version its module's bytecode was written for': reporting the running jax's current StableHLO version instead of reading the blob; jax 0.12 writes its exports for StableHLO 1.18.0 (a compatibility window back) while the library's current version is 1.22.0; any blob, e.g. export of jit(lambda x: x * 2) on f32[3], answers '1.22.0' instead of '1.18.0'.",
)
def _rt17_export_facts_library_version(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    from jaxlib.mlir.dialects import stablehlo

    exp = jax.export.deserialize(blob)
    version = stablehlo.get_current_version()
    return version, exp.calling_convention_version, tuple(p.lower() for p in exp.platforms)


@wrong(
    "export_facts",
    why="Clause 'the platforms ... in the order given at export': sorting the platforms; an export for platforms=('tpu', 'cpu') is answered ('cpu', 'tpu').",
)
def _rt17_export_facts_sorted_platforms(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exp = jax.export.deserialize(blob)
    data = bytes(exp.mlir_module_serialized)
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", data)
    return (
        m.group(1).decode(),
        exp.calling_convention_version,
        tuple(sorted(p.lower() for p in exp.platforms)),
    )


@wrong(
    "export_facts",
    why="Clause 'its calling-convention version': answering jax.export's maximum supported calling convention instead of the blob's; a blob exported under jax_export_calling_convention_version=9 answers 10.",
)
def _rt17_export_facts_max_ccv(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exp = jax.export.deserialize(blob)
    data = bytes(exp.mlir_module_serialized)
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", data)
    return (
        m.group(1).decode(),
        jax.export.maximum_supported_calling_convention_version,
        tuple(exp.platforms),
    )


@wrong(
    "batch_polymorphic",
    why="Clause 'every other dimension and the dtype stay those of example': making every dimension symbolic ('b, d1, ...'); example f32[8,64] exports as f32[b,d1] instead of f32[b,64].",
)
def _rt17_batch_polymorphic_all_symbolic(f, example: jax.Array) -> jax.export.Exported:
    names = ["b"] + [f"d{i}" for i in range(1, example.ndim)]
    shape = jax.export.symbolic_shape(", ".join(names))
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="Clause 'every other dimension and the dtype stay those of example': assuming a rank-2 example, 'b, {example.shape[-1]}'; a rank-3 example f32[4,8,16] exports a rank-2 input f32[b,16].",
)
def _rt17_batch_polymorphic_rank2(f, example: jax.Array) -> jax.export.Exported:
    shape = jax.export.symbolic_shape(f"b, {example.shape[-1]}")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@wrong(
    "batch_polymorphic",
    why="Clause 'the dtype stay those of example': a float32 ShapeDtypeStruct whatever the example; a bf16 example exports an f32 input.",
)
def _rt17_batch_polymorphic_f32(f, example: jax.Array) -> jax.export.Exported:
    rest = ", ".join(str(d) for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"b, {rest}" if rest else "b")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, jnp.float32))


def _rt17_cg(a, b, steps, scale_b=True, scale_a=True):
    x_shape = b.shape
    b2 = b.reshape(b.shape[0], -1)
    sa = jnp.max(jnp.abs(a)) if scale_a else jnp.float32(1.0)
    sb = (
        jnp.max(jnp.abs(b2), axis=0, keepdims=True)
        if scale_b
        else jnp.ones((1, b2.shape[1]), b.dtype)
    )
    sb = jnp.where(sb == 0, 1.0, sb)
    a_ = a / sa
    r = b2 / sb
    x = jnp.zeros_like(r)
    p = r
    rr = jnp.sum(r * r, axis=0)
    for _ in range(steps):
        ap = a_ @ p
        pap = jnp.sum(p * ap, axis=0)
        alpha = jnp.where(pap > 0, rr / jnp.where(pap > 0, pap, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r, axis=0)
        beta = jnp.where(rr > 0, rr_new / jnp.where(rr > 0, rr, 1.0), 0.0)
        p = r + beta * p
        rr = rr_new
    return (x * sb / sa).reshape(x_shape)


@wrong(
    "portable_solve",
    why="Clause 'a b of norm 1e-25 or 1e25, whose square float32 cannot hold, is as valid': textbook conjugate gradient with no rescaling, 2n steps; b of norm 1e25 makes r.r overflow to inf and the result NaN.",
)
def _rt17_portable_solve_unscaled_cg(a: jax.Array, b: jax.Array) -> jax.Array:
    return _rt17_cg(a, b, 2 * a.shape[0] + 10, scale_b=False, scale_a=False)


@wrong(
    "portable_solve",
    why="Clause 'a's largest entry is at most 2**126': CG that rescales b but not a; a = 2**126 * (I + ones)/2 with n = 64 (condition number 65) and b = 1e10 * standard normal (x of norm about 1e-28) makes a @ p overflow to inf and the result NaN.",
)
def _rt17_portable_solve_scale_b_only(a: jax.Array, b: jax.Array) -> jax.Array:
    return _rt17_cg(a, b, 2 * a.shape[0] + 10, scale_b=True, scale_a=False)


@wrong(
    "portable_solve",
    why="Clause 'its export holds no custom call': jax.scipy.linalg.cho_factor/cho_solve 'because a is SPD, no LU' still calls LAPACK potrf/trsm on CPU; the export of any system holds a custom_call.",
)
def _rt17_portable_solve_cholesky(a: jax.Array, b: jax.Array) -> jax.Array:
    c = jax.scipy.linalg.cho_factor(a)
    return jax.scipy.linalg.cho_solve(c, b)


@wrong(
    "portable_solve",
    why="Clause 'a relative error of at most 1e-3' with condition number up to 100 and n up to 64: CG capped at 20 steps ('it converges fast'); a 64x64 spd_system (eigenvalues spread over 1..100) is left with a relative error above 1e-3.",
)
def _rt17_portable_solve_capped_steps(a: jax.Array, b: jax.Array) -> jax.Array:
    return _rt17_cg(a, b, min(a.shape[0], 20))
