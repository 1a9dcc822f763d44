"""Red-team wrong answers for phase 15, written from the contract only.

Round 2. Every module-level name defined here starts with `_rt2_`. Each answer is what a capable
learner in a hurry writes and believes correct; its `why` names the contract clause it breaks and
a valid input on which it answers wrongly.
"""

from __future__ import annotations

import math
import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

# ---- shared pieces (each answer below breaks one thing on top of these) ----------------------


def _rt2_compile(exported) -> bytes:
    import iree.compiler as compiler

    return compiler.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )


def _rt2_call(vmfb: bytes, args, convert):
    """Call `main` of a vmfb in IREE's local-task runtime; `convert` turns the raw result into
    the answer while the context is alive (the device arrays die with it)."""
    import iree.runtime as runtime

    module = runtime.load_vm_flatbuffer(vmfb, driver="local-task")
    result = module.main(*(np.asarray(a) for a in args))
    return convert(result)


def _rt2_outputs(result) -> list[np.ndarray]:
    outputs = result if isinstance(result, list | tuple) else [result]
    return [np.asarray(o.to_host()) for o in outputs]


# ---- task 1: iree_run -------------------------------------------------------------------------


@wrong(
    "iree_run",
    why="'Return every output ... as a NumPy array of the shape JAX's would have': assumes IREE "
    "always returns a sequence of outputs and iterates it; for a single-output f (programs.mlp) "
    "IREE returns one array, so this returns its 32 rows (32 arrays of shape (16,)) "
    "instead of one (32, 16) array",
)
def _rt2_iree_run_iterates_rows(f, *args) -> list[np.ndarray]:
    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = _rt2_compile(exported)
    return _rt2_call(vmfb, args, lambda result: [np.asarray(o) for o in result])


@wrong(
    "iree_run",
    why="'Nothing may be computed by XLA': exports and compiles with IREE (so it looks right) "
    "but returns the values of Exported.call, which XLA compiles and runs; wrong on every "
    "input (e.g. programs.mlp): an XLA compile happens while it runs",
)
def _rt2_iree_run_exported_call(f, *args) -> list[np.ndarray]:
    exported = jax.export.export(jax.jit(f))(*args)
    _rt2_compile(exported)  # "check that IREE takes it"
    return [np.asarray(o) for o in jax.tree.leaves(exported.call(*args))]


@wrong(
    "iree_run",
    why="'as a NumPy array of the ... dtype JAX's would have': casts every output to float32 "
    "'to compare with JAX'; wrong on programs.int_matmul (int32 out) and on a bfloat16 program "
    "(bf16 out), float32 inputs/outputs only look right",
)
def _rt2_iree_run_float32(f, *args) -> list[np.ndarray]:
    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = _rt2_compile(exported)
    outs = _rt2_call(vmfb, args, _rt2_outputs)
    return [o.astype(np.float32) for o in outs]


# ---- task 2: agreement_rtol -------------------------------------------------------------------


@wrong(
    "agreement_rtol",
    why="'for the programs ... computed entirely in dtype (float32 or bfloat16)': one "
    "float32-sized tolerance for every dtype; bfloat16 layernorm_softmax differs by ~2e-2 "
    "(recorded/agreement.txt: 0.0209), far above 1e-6",
)
def _rt2_agreement_rtol_f32_only(dtype: str) -> float:
    return 1e-6


@wrong(
    "agreement_rtol",
    why="'max |iree - jax| / max |jax| must not exceed it on any fresh draw': one machine "
    "epsilon (a single rounding); float32 layernorm_softmax differs by 5.79e-07 ~ 4.9 eps and "
    "bfloat16 by ~2.7 eps (recorded/agreement.txt)",
)
def _rt2_agreement_rtol_one_eps(dtype: str) -> float:
    return float(jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="'must not exceed it on any fresh draw': 4 eps ('a few roundings') is 4.77e-07 in "
    "float32, below the 5.79e-07 recorded for float32 layernorm_softmax (seeds 0-7)",
)
def _rt2_agreement_rtol_four_eps(dtype: str) -> float:
    return 4 * float(jnp.finfo(dtype).eps)


@wrong(
    "agreement_rtol",
    why="'computed entirely in bfloat16': uses float16's epsilon for bfloat16 (numpy has no "
    "bfloat16, 'a 16-bit float is a 16-bit float'): 16 * 9.77e-4 = 0.0156 < 0.0209 recorded for "
    "bfloat16 layernorm_softmax; float32 (16 eps = 1.9e-6) is fine",
)
def _rt2_agreement_rtol_half_eps(dtype: str) -> float:
    eps = np.finfo(np.float16).eps if "16" in dtype else np.finfo(np.float32).eps
    return float(16 * eps)


# ---- task 3: matmul_flops ---------------------------------------------------------------------

_RT2_KINDS = {"matmul": 3, "batch_matmul": 4, "matvec": 2, "vecmat": 2}


@wrong(
    "matmul_flops",
    why="'each flow.executable.export is named <function>_dispatch_<index>_<kind>_<dims>_<dtype>': "
    "the regex fits recorded/mlp.mlir's `_f32` names only; wrong on recorded/int_matmul.mlir "
    "(`_i32`: 0 instead of 2*8*40*24) and projections (bf16xbf16xf32 matmul, f32xbf16xf32 vecmat)",
)
def _rt2_matmul_flops_f32_only(flow_text: str) -> int:
    total = 0
    pattern = (
        r"flow\.executable\.export public @\w+?_dispatch_\d+_"
        r"(batch_matmul|matmul|matvec|vecmat)_(\d+(?:x\d+)*)_f32\b"
    )
    for _kind, dims in re.findall(pattern, flow_text):
        total += 2 * math.prod(int(d) for d in dims.split("x"))
    return total


@wrong(
    "matmul_flops",
    why="'read from the names of its dispatches' (one per flow.executable.export): collects every "
    "`@..._dispatch_...` symbol in the listing, so each dispatch is counted twice (its export and "
    "its func.func carry the same name); wrong on recorded/mlp.mlir (2x)",
)
def _rt2_matmul_flops_every_symbol(flow_text: str) -> int:
    total = 0
    for name in re.findall(r"@(\w+_dispatch_\d+_\w+)", flow_text):
        _, _, kind, sizes, _ = iree.split_dispatch_name(name)
        if kind in _RT2_KINDS and sizes and None not in sizes:
            total += 2 * math.prod(sizes)
    return total


@wrong(
    "matmul_flops",
    why="'every other kind ... counts 0': matches kinds by prefix, so IREE's `matvec_like` "
    "(a batched matrix-vector einsum 'bij,bj->bi', named main_dispatch_0_matvec_like_3x8x24_f32) "
    "and `matmul_like` contractions are counted as flops too",
)
def _rt2_matmul_flops_prefix_kinds(flow_text: str) -> int:
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind.startswith(("matmul", "batch_matmul", "matvec", "vecmat")) and d.sizes:
            if None in d.sizes:
                continue
            total += 2 * math.prod(d.sizes)
    return total


@wrong(
    "matmul_flops",
    why="'so does a dispatch whose dims hold a dynamic size (printed D)' count 0: skips only the "
    "D and multiplies the known sizes; wrong on a symbolic-batch matmul "
    "(main_dispatch_0_matmul_Dx40x24_f32 gives 2*40*24 instead of 0)",
)
def _rt2_matmul_flops_dynamic_as_one(flow_text: str) -> int:
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in _RT2_KINDS:
            total += 2 * math.prod(s for s in d.sizes if s is not None)
    return total


# ---- task 4: merged_by_iree -------------------------------------------------------------------

_RT2_IREE_MATMULS = frozenset({"matmul", "batch_matmul", "matvec", "vecmat"})


def _rt2_names(op_name: str, split: bool = True) -> set[str]:
    parts = op_name.split(";") if split else [op_name]
    return {p.rsplit("/", 1)[-1] for p in parts if "/" in p}


def _rt2_op_name(instruction) -> str | None:
    found = re.search(r'op_name="((?:[^"\\]|\\.)*)"', instruction.attributes_text)
    return found[1] if found else None


def _rt2_computation_has_dot(module, name: str, seen: set[str]) -> bool:
    if name in seen or module.computation(name) is None:
        return False
    seen.add(name)
    for instruction in module[name]:
        if instruction.opcode == "dot":
            return True
        if any(_rt2_computation_has_dot(module, c, seen) for c in instruction.called_computations):
            return True
    return False


def _rt2_computation_names(module, name: str, seen: set[str], split: bool = True) -> set[str]:
    if name in seen or module.computation(name) is None:
        return set()
    seen.add(name)
    names: set[str] = set()
    for instruction in module[name]:
        op_name = _rt2_op_name(instruction)
        if op_name:
            names |= _rt2_names(op_name, split)
        for called in instruction.called_computations:
            names |= _rt2_computation_names(module, called, seen, split)
    return names


def _rt2_xla_names(
    hlo_text: str, *, inside: bool = True, split: bool = True, kernel=None
) -> set[str]:
    module = parse_hlo(hlo_text)
    names: set[str] = set()
    for instruction in module.entry:
        if kernel is not None:
            is_matmul = kernel(instruction)
        else:
            is_matmul = instruction.opcode == "dot" or any(
                _rt2_computation_has_dot(module, c, set()) for c in instruction.called_computations
            )
        if not is_matmul:
            continue
        op_name = _rt2_op_name(instruction)
        if op_name:
            names |= _rt2_names(op_name, split)
        if inside:
            for called in instruction.called_computations:
                names |= _rt2_computation_names(module, called, set(), split)
    return names


def _rt2_iree_names(flow_text: str, kinds=_RT2_IREE_MATMULS) -> set[str]:
    names: set[str] = set()
    for d in iree.read_flow(flow_text):
        if d.kind in kinds:
            names |= set(d.sources)
    return names


def _rt2_merged(iree_names: set[str], xla_names: set[str]) -> tuple[set[str], set[str]]:
    iree_names, xla_names = iree_names - {"dot_general"}, xla_names - {"dot_general"}
    return iree_names - xla_names, xla_names - iree_names


@wrong(
    "merged_by_iree",
    why="'XLA's matmul kernels are the instructions of the ENTRY computation that are a dot or "
    "whose called computations ... hold one': counts only ENTRY fusions whose name says ynn/dot "
    "(or kind=kCustom), so train_step's bare ENTRY `dot` instructions (op_name .../transpose) are "
    "missed and its reduce_sum YNN fusion (no dot) is counted: 'transpose'/'reduce_sum' land "
    "on the wrong side",
)
def _rt2_merged_by_iree_custom_fusions(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    def kernel(instruction) -> bool:
        return instruction.opcode == "fusion" and (
            "kind=kCustom" in instruction.attributes_text or "dot" in instruction.name
        )

    return _rt2_merged(_rt2_iree_names(flow_text), _rt2_xla_names(hlo_text, kernel=kernel))


@wrong(
    "merged_by_iree",
    why="'IREE's matmul kernels are the dispatches whose kind is matmul, batch_matmul, matvec or "
    "vecmat': takes kind == 'matmul' only, so attention's batch_matmul dispatch (holding the "
    "1/sqrt(d) 'div') and projections' matvec/vecmat are left out",
)
def _rt2_merged_by_iree_matmul_kind_only(
    hlo_text: str, flow_text: str
) -> tuple[set[str], set[str]]:
    return _rt2_merged(_rt2_iree_names(flow_text, kinds={"matmul"}), _rt2_xla_names(hlo_text))


@wrong(
    "merged_by_iree",
    why="'not the tensor loads and stores, which carry their producer's name' and 'the callee of "
    "loc(callsite(...))': greps every loc(\"jit(..)/name\") in a matmul dispatch's executable "
    "(loads, stores, workgroup region), so train_step's loaded reduce_sum result is credited to a "
    "matmul kernel, and callsite names (jit(silu)'s neg/exp/div) are missed",
)
def _rt2_merged_by_iree_all_locs(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    names: set[str] = set()
    chunks = re.split(r"(?=\n\s*flow\.executable private @)", flow_text)
    for chunk in chunks:
        export = re.search(r"flow\.executable\.export public @(\w+)", chunk)
        if not export:
            continue
        kind = iree.split_dispatch_name(export[1])[2]
        if kind in _RT2_IREE_MATMULS:
            names |= {m.rsplit("/", 1)[-1] for m in re.findall(r'loc\("([^"]*/[^"]*)"\)', chunk)}
    return _rt2_merged(names, _rt2_xla_names(hlo_text))


# ---- task 5: iree_verdict ---------------------------------------------------------------------

_RT2_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_RT2_LAPACK = {
    "lu",
    "cholesky",
    "eigh",
    "qr",
    "svd",
    "triangular_solve",
    "schur",
    "hessenberg",
    "tridiagonal",
    "householder_product",
    "eig",
    "lu_pivots_to_permutation",
    "tridiagonal_solve",
}
_RT2_SDY = {"sharding_constraint", "mesh_cast", "reshard", "sharding_cast"}


def _rt2_subjaxprs(value):
    if hasattr(value, "jaxpr") and hasattr(value, "consts"):
        yield value.jaxpr
    elif hasattr(value, "eqns"):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _rt2_subjaxprs(item)


def _rt2_eqns(jaxpr, nested: bool = True):
    for eqn in jaxpr.eqns:
        yield eqn
        if nested:
            for value in eqn.params.values():
                for sub in _rt2_subjaxprs(value):
                    yield from _rt2_eqns(sub, nested)


def _rt2_is_key(aval) -> bool:
    return "key<" in str(aval)


def _rt2_verdict(
    closed,
    *,
    nested=True,
    callbacks=_RT2_CALLBACKS,
    lapack=_RT2_LAPACK,
    key_outputs=True,
    any_key=False,
) -> str:
    jaxpr = closed.jaxpr
    eqns = list(_rt2_eqns(jaxpr, nested))
    prims = {e.primitive.name for e in eqns}
    if prims & callbacks:
        return "export"
    keys = [v.aval for v in jaxpr.invars]
    if key_outputs:
        keys += [v.aval for v in jaxpr.outvars]
    if any_key:
        keys += [v.aval for e in eqns for v in e.outvars]
    if prims & _RT2_SDY or any(_rt2_is_key(a) for a in keys):
        return "sdy"
    if prims & lapack:
        return "lapack"
    return "runs"


@wrong(
    "iree_verdict",
    why="'Operations inside called jaxprs (jit, cond, scan, ...) count as well': walks the top "
    "level only; jnp.linalg.solve/cholesky/eigh put lu/cholesky/eigh inside a jit, so BANK "
    "'solve', 'cholesky', 'eigh', 'triangular_solve' get 'runs' instead of 'lapack'",
)
def _rt2_iree_verdict_top_level(jaxpr) -> str:
    return _rt2_verdict(jaxpr, nested=False)


@wrong(
    "iree_verdict",
    why="'a typed PRNG key among the arguments or results' -> 'sdy': checks the arguments only; "
    "BANK 'key_result' (int seed in, jax.random.split keys out) gets 'runs' instead of 'sdy'",
)
def _rt2_iree_verdict_key_args_only(jaxpr) -> str:
    return _rt2_verdict(jaxpr, key_outputs=False)


@wrong(
    "iree_verdict",
    why="'a typed PRNG key among the arguments or results' (not any key inside): calls it 'sdy' "
    "whenever a key<fry> value appears anywhere; BANK 'int_seed' (key made from an int32 seed "
    "inside, only floats in and out) runs in IREE but gets 'sdy'",
)
def _rt2_iree_verdict_any_key(jaxpr) -> str:
    return _rt2_verdict(jaxpr, any_key=True)


@wrong(
    "iree_verdict",
    why="'a host callback: pure_callback, io_callback, debug print' -> 'export': matches the "
    "callback primitives by the names pure_callback/io_callback only; BANK 'debug_print' "
    "(primitive debug_print) gets 'runs' instead of 'export'",
)
def _rt2_iree_verdict_callback_names(jaxpr) -> str:
    return _rt2_verdict(jaxpr, callbacks={"pure_callback", "io_callback"})


@wrong(
    "iree_verdict",
    why="'linalg solves and factorizations on CPU' -> 'lapack': keeps a list of factorizations "
    "(lu, cholesky, eigh, qr, svd) and takes a triangular solve for plain arithmetic; BANK "
    "'triangular_solve' (jax.scipy.linalg.solve_triangular: LAPACK trsm) gets 'runs'",
)
def _rt2_iree_verdict_no_trsm(jaxpr) -> str:
    return _rt2_verdict(jaxpr, lapack={"lu", "cholesky", "eigh", "qr", "svd"})


# ---- task 6: export_facts ---------------------------------------------------------------------


def _rt2_facts(blob: bytes):
    exported = jax.export.deserialize(bytearray(blob))
    found = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", exported.mlir_module_serialized)
    version = found[1].decode() if found else ""
    return exported, version


@wrong(
    "export_facts",
    why="'the StableHLO version its module's bytecode was written for': returns the installed "
    "StableHLO's current version (1.22.0 here) instead of the one written in the artifact "
    "(jax.export targets WEEK_4: 1.18.0); wrong on every blob jax.export makes",
)
def _rt2_export_facts_library_version(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    from jax.extend.mlir.dialects import stablehlo

    exported, _ = _rt2_facts(blob)
    version = str(stablehlo.get_current_version())
    return version, int(exported.calling_convention_version), tuple(exported.platforms)


@wrong(
    "export_facts",
    why="'its calling-convention version' (of the artifact): returns JAX's maximum supported "
    "version (10) instead of the blob's; wrong on a blob exported with "
    "jax_export_calling_convention_version=9",
)
def _rt2_export_facts_cc_of_jax(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported, version = _rt2_facts(blob)
    cc = int(jax.export.maximum_supported_calling_convention_version)
    return version, cc, tuple(exported.platforms)


@wrong(
    "export_facts",
    why="'the platforms it was exported for, in the order given at export': sorts them; wrong on "
    "a blob exported with platforms=('tpu', 'cpu') (returns ('cpu', 'tpu'))",
)
def _rt2_export_facts_sorted_platforms(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    exported, version = _rt2_facts(blob)
    platforms = tuple(sorted(p.lower() for p in exported.platforms))
    return version, int(exported.calling_convention_version), platforms


# ---- task 7: batch_polymorphic ----------------------------------------------------------------


@wrong(
    "batch_polymorphic",
    why="'every other dimension ... stay those of example': builds the spec as "
    "f'b, {example.shape[1]}' (fits a 2-D example); wrong on a 3-D example such as "
    "(5, 4, 8): the exported input is (b, 4) and the trailing axis is lost",
)
def _rt2_batch_polymorphic_2d_only(f, example: jax.Array) -> jax.export.Exported:
    shape = jax.export.symbolic_shape(f"b, {example.shape[1]}")
    spec = jax.ShapeDtypeStruct(shape, example.dtype)
    return jax.export.export(jax.jit(f))(spec)


@wrong(
    "batch_polymorphic",
    why="'every other dimension and the dtype stay those of example': hard-codes float32; "
    "wrong on a bfloat16 or int32 example (the exported input is f32)",
)
def _rt2_batch_polymorphic_f32(f, example: jax.Array) -> jax.export.Exported:
    dims = ", ".join(["b", *(str(d) for d in example.shape[1:])])
    spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape(dims), jnp.float32)
    return jax.export.export(jax.jit(f))(spec)


@wrong(
    "batch_polymorphic",
    why="'The leading dimension of the exported input must be symbolic': exports at the "
    "example's shape believing IREE's runtime takes other batch sizes anyway; the export "
    "has a static leading dim and the module refuses a batch of 1",
)
def _rt2_batch_polymorphic_static(f, example: jax.Array) -> jax.export.Exported:
    spec = jax.ShapeDtypeStruct(example.shape, example.dtype)
    return jax.export.export(jax.jit(f))(spec)


# ---- task 8: portable_solve -------------------------------------------------------------------


def _rt2_cg(a, b, iterations: int):
    x = jnp.zeros_like(b)
    r = b
    p = r
    rs = jnp.sum(r * r, axis=0)
    for _ in range(iterations):
        ap = a @ p
        alpha = rs / jnp.sum(p * ap, axis=0)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.sum(r * r, axis=0)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


@wrong(
    "portable_solve",
    why="'relative error ... at most 1e-3' for n up to 64, condition number up to 100: runs 20 "
    "conjugate-gradient steps ('CG converges in ~sqrt(cond)=10 steps'); on a 64x64 system with "
    "condition number 100 the error after 20 steps is ~1e-2, and for n=5 the unguarded steps past "
    "convergence divide 0 by 0 (NaN)",
)
def _rt2_portable_solve_cg20(a, b):
    return _rt2_cg(a, b, 20)


@wrong(
    "portable_solve",
    why="'its export holds no custom call': x = inv(a) @ b; jnp.linalg.inv is LU + triangular "
    "solves, LAPACK custom calls on CPU that IREE refuses (values are right)",
)
def _rt2_portable_solve_inv(a, b):
    return jnp.linalg.inv(a) @ b


@wrong(
    "portable_solve",
    why="'its export holds no custom call': jax.scipy.linalg.solve(assume_a='pos') takes the "
    "Cholesky path, still a LAPACK potrf custom call that IREE cannot legalize",
)
def _rt2_portable_solve_assume_pos(a, b):
    return jax.scipy.linalg.solve(a, b, assume_a="pos")


@wrong(
    "portable_solve",
    why="'The result has b's shape': works on b as an (n, k) matrix (b[:, None] for a vector) "
    "and returns the (n, 1) result; wrong for every b of shape (n,)",
)
def _rt2_portable_solve_column(a, b):
    bm = b[:, None] if b.ndim == 1 else b
    return _rt2_cg(a, bm, a.shape[0])


@wrong(
    "portable_solve",
    why="'relative error at most 1e-3': 2n unguarded CG steps 'for float32 safety'; once the "
    "residual reaches exactly 0 (n=64, cond 100 in f32) rs/rs is 0/0 and x becomes NaN",
)
def _rt2_portable_solve_cg_unguarded(a, b):
    return _rt2_cg(a, b, 2 * a.shape[0])
