"""Plausible wrong answers for phase 15, and correct answers spelled differently."""

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import accepted, decoy
from xla_inspect import iree
from xla_inspect.parse import parse_hlo

_CONTRACTIONS = {"matmul", "batch_matmul", "matvec", "vecmat"}


def _compiled_main(f, args):
    import iree.compiler  # pyright: ignore[reportMissingImports]  (the iree group)
    import iree.runtime  # pyright: ignore[reportMissingImports]  (the iree group)

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = iree.compiler.compile_str(
        exported.mlir_module(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=host"],
    )
    assert vmfb is not None  # no output_file given: the compiler returns the bytes
    module = iree.runtime.load_vm_flatbuffer(vmfb, driver="local-task")
    result: Any = module.main(*(np.asarray(a) for a in args))
    return exported, result if isinstance(result, list | tuple) else [result]


# ---- task 1: iree_run --------------------------------------------------------------------------


@decoy(
    "iree_run",
    caught_by=["test_iree_run_matches_jax"],
    why="exports for show, then returns what XLA computes: the values agree but JAX ran it",
)
def iree_run_through_xla(f, *args):
    jax.export.export(jax.jit(f))(*args)
    return [np.asarray(x) for x in jax.tree.leaves(jax.jit(f)(*args))]


@decoy(
    "iree_run",
    caught_by=["test_iree_run_matches_jax"],
    why="returns what main returned when it is one array, else only its first output",
)
def iree_run_first_output(f, *args):
    _, outputs = _compiled_main(f, args)
    return [np.asarray(outputs[0].to_host())]


@decoy(
    "iree_run",
    caught_by=["test_iree_run_matches_jax"],
    why="casts every output to float32 for comparing: the int32 and bf16 outputs change dtype",
)
def iree_run_as_float32(f, *args):
    _, outputs = _compiled_main(f, args)
    return [np.asarray(o.to_host(), np.float32) for o in outputs]


@accepted("iree_run", why="the host CPU instead of generic: the same values on this machine")
def iree_run_for_host(f, *args):
    exported, outputs = _compiled_main(f, args)
    return [
        np.asarray(o.to_host()).astype(a.dtype)
        for o, a in zip(outputs, exported.out_avals, strict=True)
    ]


@accepted(
    "iree_run",
    why="the portable bytecode compiled by xla_inspect.iree_compile.compile_vmfb, loaded with "
    "VmModule.copy_buffer and load_vm_module (no context.modules, which the guard refuses)",
)
def iree_run_bound_module(f, *args):
    import iree.runtime  # pyright: ignore[reportMissingImports]  (the iree group)

    from xla_inspect import iree_compile

    exported = jax.export.export(jax.jit(f))(*args)
    vmfb = iree_compile.compile_vmfb(exported.mlir_module_serialized)
    config = iree.runtime.Config("local-task")
    module = iree.runtime.VmModule.copy_buffer(config.vm_instance, vmfb)
    result = iree.runtime.load_vm_module(module, config).main(*jax.tree.leaves(args))
    outputs = result if isinstance(result, list | tuple) else [result]
    return [
        np.asarray(o.to_host()).astype(a.dtype, copy=False)
        for o, a in zip(outputs, exported.out_avals, strict=True)
    ]


# ---- task 2: agreement_rtol --------------------------------------------------------------------


@decoy(
    "agreement_rtol",
    caught_by=[
        "test_agreement_rtol_covers_recorded_draws",
        "test_agreement_rtol_covers_fresh_draws",
    ],
    why="one epsilon: as if IREE rounded exactly like XLA (LayerNorm+softmax differs by ~5)",
)
def agreement_rtol_one_eps(dtype):
    return float(jnp.finfo(dtype).eps)


@decoy(
    "agreement_rtol",
    caught_by=["test_agreement_rtol_is_no_looser_than_32_eps"],
    why="1e-4 for every dtype: 840 float32 epsilons (hides bugs), under one bfloat16 epsilon",
)
def agreement_rtol_fixed(dtype):
    return 1e-4


@decoy(
    "agreement_rtol",
    caught_by=[
        "test_agreement_rtol_covers_recorded_draws",
        "test_agreement_rtol_covers_fresh_draws",
    ],
    why="float32's tolerance for every dtype: bfloat16 rounds 65536 times coarser",
)
def agreement_rtol_float32_for_all(dtype):
    return float(8 * jnp.finfo(jnp.float32).eps)


@accepted("agreement_rtol", why="the loosest tolerance the contract allows")
def agreement_rtol_32_eps(dtype):
    return float(32 * jnp.finfo(dtype).eps)


# ---- task 3: matmul_flops ----------------------------------------------------------------------

_ANY_NAME = re.compile(r"\w+?_dispatch_\d+_(\w+?)_((?:\d+x)*\d+)_[a-z]+\d+")


@decoy(
    "matmul_flops",
    caught_by=["test_matmul_flops_of_recorded_listings", "test_matmul_flops_of_fresh_programs"],
    why="every dispatch name in the text: the flow.dispatch calls in main repeat each name",
)
def matmul_flops_every_mention(flow_text):
    total = 0
    for kind, sizes in _ANY_NAME.findall(flow_text):
        if kind in _CONTRACTIONS:
            product = 1
            for size in sizes.split("x"):
                product *= int(size)
            total += 2 * product
    return total


@decoy(
    "matmul_flops",
    caught_by=["test_matmul_flops_of_recorded_listings", "test_matmul_flops_of_fresh_programs"],
    why="M x N x K as the last three sizes: a batch_matmul loses its batch",
)
def matmul_flops_last_three(flow_text):
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in _CONTRACTIONS and None not in d.sizes:
            sizes = [s for s in d.sizes if s is not None]
            product = 1
            for size in sizes[-3:]:
                product *= size
            total += 2 * product
    return total


@decoy(
    "matmul_flops",
    caught_by=["test_matmul_flops_of_recorded_listings", "test_matmul_flops_counts_no_other_kind"],
    why="2 x the product of the sizes of every dispatch: a reduction is no matmul",
)
def matmul_flops_every_kind(flow_text):
    total = 0
    for d in iree.read_flow(flow_text):
        product = 1
        for size in d.sizes:
            product *= size or 0
        total += 2 * product if d.sizes else 0
    return total


@decoy(
    "matmul_flops",
    caught_by=["test_matmul_flops_of_recorded_listings", "test_matmul_flops_of_fresh_programs"],
    why="matmul and batch_matmul only: a matrix-vector product is a contraction too",
)
def matmul_flops_no_vectors(flow_text):
    total = 0
    for d in iree.read_flow(flow_text):
        if d.kind in ("matmul", "batch_matmul") and None not in d.sizes:
            product = 1
            for size in d.sizes:
                product *= size or 0
            total += 2 * product
    return total


# ---- task 4: merged_by_iree --------------------------------------------------------------------

_OP_NAME = re.compile(r'op_name="([^"]*)"')
_LOC = re.compile(r'loc\("([^"]*)"')


def _xla_names(hlo_text, full=False):
    module = parse_hlo(hlo_text)
    names = set()
    for instruction in module.entry:
        held, pending, seen = [instruction], list(instruction.called_computations), set()
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
            for i in held:
                for joined in _OP_NAME.findall(i.attributes_text):
                    for n in joined.split(";"):
                        if "/" in n:
                            names.add(n if full else n.rsplit("/", 1)[1])
    return names


def _iree_names(flow_text):
    return {n for d in iree.read_flow(flow_text) if d.kind in _CONTRACTIONS for n in d.sources}


@decoy(
    "merged_by_iree",
    caught_by=["test_merged_by_iree_on_recorded_listings", "test_merged_by_iree_on_fresh_layers"],
    why="the pair the other way round: what XLA merged first",
)
def merged_by_iree_swapped(hlo_text, flow_text):
    ours, theirs = _iree_names(flow_text), _xla_names(hlo_text)
    return theirs - ours - {"dot_general"}, ours - theirs - {"dot_general"}


@decoy(
    "merged_by_iree",
    caught_by=["test_merged_by_iree_on_recorded_listings"],
    why='every location in a matmul dispatch, arguments (loc("b1")) and loads included',
)
def merged_by_iree_every_location(hlo_text, flow_text):
    ours = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _CONTRACTIONS:
            start = flow_text.index(f"func.func @{d.name}(")
            end = flow_text.index("\n      }", start)
            ours |= {n.rsplit("/", 1)[-1] for n in _LOC.findall(flow_text[start:end])}
    theirs = _xla_names(hlo_text)
    return ours - theirs - {"dot_general"}, theirs - ours - {"dot_general"}


@decoy(
    "merged_by_iree",
    caught_by=["test_merged_by_iree_on_recorded_listings", "test_merged_by_iree_on_fresh_layers"],
    why="compares whole names (jit(mlp)/tanh): the contract names an operation by its last part",
)
def merged_by_iree_full_names(hlo_text, flow_text):
    ours = set()
    for d in iree.read_flow(flow_text):
        if d.kind in _CONTRACTIONS:
            start = flow_text.index(f"func.func @{d.name}(")
            end = flow_text.index("\n      }", start)
            body = flow_text[start:end]
            ours |= {n for n in _LOC.findall(body) if "/" in n and n.endswith(tuple(d.sources))}
    theirs = _xla_names(hlo_text, full=True)
    return ours - theirs, theirs - ours


# ---- task 5: iree_verdict ----------------------------------------------------------------------

_CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "debug_print"}
_LAPACK = {"lu", "cholesky", "eigh", "qr", "geqrf", "svd", "triangular_solve", "schur"}


def _primitives(jaxpr, deep=True):
    found, pending = set(), [jaxpr.jaxpr]
    while pending:
        inner = pending.pop()
        for eqn in inner.eqns:
            found.add(eqn.primitive.name)
            if not deep:
                continue
            for value in eqn.params.values():
                for item in value if isinstance(value, list | tuple) else [value]:
                    sub = getattr(item, "jaxpr", item)
                    if hasattr(sub, "eqns"):
                        pending.append(sub)
    return found


def _has_key(jaxpr):
    avals = [v.aval for v in (*jaxpr.jaxpr.invars, *jaxpr.jaxpr.outvars)]
    return any(
        jnp.issubdtype(getattr(a, "dtype", None) or jnp.float32, jax.dtypes.prng_key) for a in avals
    )


@decoy(
    "iree_verdict",
    caught_by=["test_iree_verdict"],
    why="reads the top-level equations only: a solve inside jit or cond goes unseen",
)
def iree_verdict_top_level(jaxpr):
    found = _primitives(jaxpr, deep=False)
    if found & _CALLBACKS:
        return "export"
    if _has_key(jaxpr) or "sharding_constraint" in found:
        return "sdy"
    return "lapack" if found & _LAPACK else "runs"


@decoy(
    "iree_verdict",
    caught_by=["test_iree_verdict"],
    why="a sharding constraint is the only sdy: a typed key as an argument looks harmless",
)
def iree_verdict_keys_harmless(jaxpr):
    found = _primitives(jaxpr)
    if found & _CALLBACKS:
        return "export"
    if "sharding_constraint" in found:
        return "sdy"
    return "lapack" if found & _LAPACK else "runs"


@decoy(
    "iree_verdict",
    caught_by=["test_iree_verdict"],
    why="LAPACK before Shardy: IREE fails parsing the sdy dialect before it legalizes anything",
)
def iree_verdict_lapack_first(jaxpr):
    found = _primitives(jaxpr)
    if found & _CALLBACKS:
        return "export"
    if found & _LAPACK:
        return "lapack"
    return "sdy" if _has_key(jaxpr) or "sharding_constraint" in found else "runs"


# ---- task 6: export_facts ----------------------------------------------------------------------


def _facts(blob):
    exported = jax.export.deserialize(bytearray(blob))
    found = re.search(rb"StableHLO_v([\d.]+)", exported.mlir_module_serialized[:64])
    assert found is not None
    return found.group(1).decode(), exported.calling_convention_version, exported.platforms


@decoy(
    "export_facts",
    caught_by=["test_export_facts"],
    why="the platforms sorted: the order given at export is the order of the platform index",
)
def export_facts_sorted_platforms(blob):
    version, convention, platforms = _facts(blob)
    return version, convention, tuple(sorted(platforms))


@decoy(
    "export_facts",
    caught_by=["test_export_facts"],
    why="the newest calling convention this JAX supports, not the one the artifact was written in",
)
def export_facts_newest_convention(blob):
    version, _, platforms = _facts(blob)
    return version, jax.export.maximum_supported_calling_convention_version, tuple(platforms)


@decoy(
    "export_facts",
    caught_by=["test_export_facts"],
    why="the StableHLO version jaxlib bundles (1.22.0), not the older one the bytecode targets",
)
def export_facts_bundled_stablehlo(blob):
    from jaxlib.mlir.dialects import stablehlo

    _, convention, platforms = _facts(blob)
    return str(stablehlo.get_current_version()), convention, tuple(platforms)


# ---- task 7: batch_polymorphic -----------------------------------------------------------------


@decoy(
    "batch_polymorphic",
    caught_by=["test_batch_polymorphic_export"],
    why="exports the example's shape: one module per batch size",
)
def batch_polymorphic_concrete(f, example):
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(example.shape, example.dtype))


@decoy(
    "batch_polymorphic",
    caught_by=["test_batch_polymorphic_export"],
    why="float32 whatever the example: a bf16 example gets a module of another dtype",
)
def batch_polymorphic_float32(f, example):
    rest = "".join(f", {d}" for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"b{rest}")
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, jnp.float32))


@decoy(
    "batch_polymorphic",
    caught_by=["test_batch_polymorphic_export"],
    why="a batch of at least 2 (constraints b >= 2): a batch of one fails the shape assertion",
)
def batch_polymorphic_at_least_two(f, example):
    rest = "".join(f", {d}" for d in example.shape[1:])
    shape = jax.export.symbolic_shape(f"b{rest}", constraints=["b >= 2"])
    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct(shape, example.dtype))


@accepted("batch_polymorphic", why="the batch named n, the shape built from a tuple")
def batch_polymorphic_named_n(f, example):
    (n,) = jax.export.symbolic_shape("n")
    spec = jax.ShapeDtypeStruct((n, *example.shape[1:]), example.dtype)
    return jax.export.export(jax.jit(f))(spec)


# ---- task 8: portable_solve --------------------------------------------------------------------


@decoy(
    "portable_solve",
    caught_by=[
        "test_portable_solve_exports_without_custom_calls",
        "test_portable_solve_runs_in_iree",
    ],
    why="jnp.linalg.solve: exact, but LAPACK's getrf on CPU, which IREE refuses",
)
def portable_solve_lapack(a, b):
    return jnp.linalg.solve(a, b)


@decoy(
    "portable_solve",
    caught_by=[
        "test_portable_solve_exports_without_custom_calls",
        "test_portable_solve_runs_in_iree",
    ],
    why="a Cholesky solve (jax.scipy.linalg.cho_solve): potrf and trsm are LAPACK calls too",
)
def portable_solve_cholesky(a, b):
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b)


@decoy(
    "portable_solve",
    caught_by=["test_portable_solve_values"],
    why="ten conjugate-gradient steps: enough for small n, not for n = 64 at condition 100",
)
def portable_solve_ten_steps(a, b):
    matrix_b = b if b.ndim == 2 else b[:, None]
    x = jnp.zeros_like(matrix_b)
    r = p = matrix_b
    rr = jnp.sum(r * r, axis=0)
    for _ in range(10):
        ap = a @ p
        alpha = rr / jnp.maximum(jnp.sum(p * ap, axis=0), 1e-30)
        x, r = x + alpha * p, r - alpha * ap
        rr_next = jnp.sum(r * r, axis=0)
        p, rr = r + rr_next / jnp.maximum(rr, 1e-30) * p, rr_next
    return x if b.ndim == 2 else x[:, 0]


@decoy(
    "portable_solve",
    caught_by=["test_portable_solve_values"],
    why="conjugate gradients with each column of b scaled to 1 (the contract's 1e25 b) but a "
    "left as given: p . a p underflows for an a of 1e-32 and overflows for one of 1e36",
)
def portable_solve_scales_only_b(a, b):
    matrix_b = b if b.ndim == 2 else b[:, None]
    scale = jnp.maximum(jnp.max(jnp.abs(matrix_b), axis=0), 1e-30)
    matrix_b = matrix_b / scale

    def step(_, state):
        x, r, p, rr = state
        ap = a @ p
        alpha = rr / jnp.maximum(jnp.sum(p * ap, axis=0), 1e-30)
        x, r = x + alpha * p, r - alpha * ap
        rr_next = jnp.sum(r * r, axis=0)
        return x, r, r + rr_next / jnp.maximum(rr, 1e-30) * p, rr_next

    start = (jnp.zeros_like(matrix_b), matrix_b, matrix_b, jnp.sum(matrix_b * matrix_b, axis=0))
    x = jax.lax.fori_loop(0, 2 * a.shape[0] + 10, step, start)[0] * scale
    return x if b.ndim == 2 else x[:, 0]


@decoy(
    "portable_solve",
    caught_by=["test_portable_solve_exports_without_custom_calls"],
    why="NumPy through pure_callback: jax.export refuses host callbacks",
)
def portable_solve_on_host(a, b):
    shape = jax.ShapeDtypeStruct(b.shape, b.dtype)
    return jax.pure_callback(lambda a, b: np.linalg.solve(a, b).astype(np.float32), shape, a, b)


@accepted("portable_solve", why="Gaussian elimination without pivoting: safe for SPD matrices")
def portable_solve_elimination(a, b):
    n = a.shape[0]
    matrix_b = b if b.ndim == 2 else b[:, None]
    augmented = jnp.concatenate([a, matrix_b], axis=1)

    def eliminate(i, m):
        pivot = m[i] / m[i, i]
        factors = jnp.where(jnp.arange(n) == i, 0.0, m[:, i])
        return m - factors[:, None] * pivot[None, :]

    reduced = jax.lax.fori_loop(0, n, eliminate, augmented)
    x = reduced[:, n:] / jnp.diag(reduced[:, :n])[:, None]
    return x if b.ndim == 2 else x[:, 0]
