"""Red-team wrong answers for phase 12, written from the contract only."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt6_COLL = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")


# ---- shared helpers (each decoy below bends exactly one thing) --------------------------------


def _rt6_config(ins):
    text = ins.attribute("backend_config")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _rt6_label(ins, keys=("fusion_config", "fusion_backend_config"), bracket_kinds=None):
    kind = ins.attribute("kind") or "?"
    cfg = _rt6_config(ins)
    for key in keys:
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            if bracket_kinds is None or kind in bracket_kinds:
                return f"{kind}({sub['kind']})"
    return kind


def _rt6_fused_names(module):
    names = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                names.update(ins.called_computations)
    return names


def _rt6_dims(shape_text):
    m = re.match(r"\s*\(?\s*\w+\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(d.strip().lstrip("<=")) for d in m.group(1).split(",")]


def _rt6_ints(text):
    return [int(v) for v in re.findall(r"\d+", text or "")]


# ---- task 1: fusion_kinds ---------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="custom kinds only read from `fusion_backend_config` (GPU spelling); "
    "a `fusion_config` kind (CPU/TPU text, and the GPU modules that print only fusion_config) "
    "is counted as the bare printed kind; wrong on a TPU/CPU module whose kCustom fusion names "
    "its kind in fusion_config",
)
def _rt6_fusion_kinds_gpu_key_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts = Counter()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                counts[_rt6_label(ins, keys=("fusion_backend_config",))] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="walks ENTRY and what ENTRY calls via while/conditional/call but never "
    "goes into fused computations, so fusions nested in fusions (Triton nested GEMM fusions' "
    "operand fusions) are missed; wrong on block_gpu_h100-like text with a "
    "__triton_nested_gemm_fusion whose fused computation holds fusions",
)
def _rt6_fusion_kinds_no_nested(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused = _rt6_fused_names(module)
    counts = Counter()
    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                counts[_rt6_label(ins)] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="brackets the backend_config kind only for kCustom fusions, so a kLoop "
    "fusion marked __dynamic_memcpy is counted as plain `kLoop`; wrong on a GPU module with a "
    "dynamic-slice copy inside a scan (kLoop(__dynamic_memcpy))",
)
def _rt6_fusion_kinds_custom_only_bracket(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts = Counter()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                counts[_rt6_label(ins, bracket_kinds=("kCustom",))] += 1
    return dict(counts)


# ---- task 2: reduction_kinds ------------------------------------------------------------------


def _rt6_reduce_places(
    module, innermost=False, dedupe_comp=False, opcode_ok=None, skip_unfused_nonentry=False
):
    opcode_ok = opcode_ok or (lambda op: op == "reduce")
    by_name = {c.name: c for c in module.computations}
    fused = _rt6_fused_names(module)
    counts = Counter()
    in_kernel = set()
    seen_comp = set()

    def reach(comp_name, outer_label, seen):
        if comp_name in seen or comp_name not in by_name:
            return
        seen.add(comp_name)
        for ins in by_name[comp_name].instructions:
            if opcode_ok(ins.opcode):
                if dedupe_comp and comp_name in seen_comp:
                    continue
                counts[outer_label] += 1
            if ins.opcode == "fusion":
                label = _rt6_label(ins) if innermost else outer_label
                for c in ins.called_computations:
                    reach(c, label, seen if not innermost else set())
        seen_comp.add(comp_name)

    for comp in module.computations:
        if comp.name in fused:
            continue
        if skip_unfused_nonentry and not comp.is_entry:
            continue
        for ins in comp.instructions:
            if opcode_ok(ins.opcode):
                counts["unfused"] += 1
            if ins.opcode == "fusion":
                seen = set()
                for c in ins.called_computations:
                    reach(c, _rt6_label(ins), seen)
                in_kernel.update(seen)
    # reducers: to_apply computations hold no reduce opcode, nothing to drop
    return {k: v for k, v in counts.items() if v}


@wrong(
    "reduction_kinds",
    why="a reduce is counted under the kind of the fusion that calls its "
    "fused computation directly (innermost), not the outermost fusion's; wrong on a Triton "
    "fusion (kCustom(__triton...)) whose nested kLoop/kInput fusion holds the reduce",
)
def _rt6_reduction_kinds_innermost(hlo_text: str) -> dict[str, int]:
    return _rt6_reduce_places(parse_hlo(hlo_text), innermost=True)


@wrong(
    "reduction_kinds",
    why="counts each fused computation's reduces once however many outermost "
    "fusions call it; contract: once per kernel (per outermost fusion) reaching it; wrong on a "
    "module where two kInput fusions share one fused computation (the same softmax applied "
    "twice, deduplicated by XLA)",
)
def _rt6_reduction_kinds_once_per_comp(hlo_text: str) -> dict[str, int]:
    return _rt6_reduce_places(parse_hlo(hlo_text), dedupe_comp=True)


@wrong(
    "reduction_kinds",
    why="opcode test `startswith('reduce')` also counts reduce-window and "
    "reduce-scatter (and reduce-precision); wrong on a cumsum/max-pool module (reduce-window) "
    "or a reduce-precision in a fusion",
)
def _rt6_reduction_kinds_prefix(hlo_text: str) -> dict[str, int]:
    return _rt6_reduce_places(parse_hlo(hlo_text), opcode_ok=lambda op: op.startswith("reduce"))


@wrong(
    "reduction_kinds",
    why="'unfused' counted in ENTRY only: an unfused reduce in a while body or "
    "conditional branch (CPU text, or a GPU while loop kept unfused) is dropped; wrong on CPU "
    "text of programs.scanned_softmax",
)
def _rt6_reduction_kinds_entry_unfused(hlo_text: str) -> dict[str, int]:
    return _rt6_reduce_places(parse_hlo(hlo_text), skip_unfused_nonentry=True)


# ---- task 3: library_epilogues ----------------------------------------------------------------


def _rt6_epilogues(hlo_text, lib=None, entry_only=False):
    module = parse_hlo(hlo_text)
    out = {}
    comps = [module.entry] if entry_only else module.computations
    for comp in comps:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            target = (ins.attribute("custom_call_target") or "").strip('"')
            cfg = _rt6_config(ins)
            kind = (
                lib(target)
                if lib
                else (
                    "gemm"
                    if target.startswith("__cublas$")
                    else "conv"
                    if target.startswith("__cudnn$")
                    else None
                )
            )
            if kind == "gemm":
                out[ins.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif kind == "conv":
                out[ins.name] = cfg.get("cudnn_conv_backend_config", {}).get(
                    "activation_mode", "kNone"
                )
    return out


@wrong(
    "library_epilogues",
    why="library test `target.startswith('__cub')` also takes cub's "
    "`__cub$DeviceRadixSort` (not a library GEMM) and reports DEFAULT for it; wrong on a GPU "
    "module with a jnp.sort next to a dense layer",
)
def _rt6_library_epilogues_cub_prefix(hlo_text: str) -> dict[str, str]:
    return _rt6_epilogues(
        hlo_text,
        lib=lambda t: (
            "gemm" if t.startswith("__cub") else "conv" if t.startswith("__cudnn$") else None
        ),
    )


@wrong(
    "library_epilogues",
    why="only ENTRY's custom calls: a cuBLAS call in a conditional branch or "
    "while body (branches_cublas_h100, scan_cublas_h100: programs.branches/scanned_softmax with "
    "CUBLAS) is missing",
)
def _rt6_library_epilogues_entry_only(hlo_text: str) -> dict[str, str]:
    return _rt6_epilogues(hlo_text, entry_only=True)


@wrong(
    "library_epilogues",
    why="only `__cublas$lt$matmul` is a GEMM and only conv targets "
    "(`__cudnn$conv...`) are cuDNN; the legacy `__cublas$gemm` call (f64 GEMM, or cublasLt off) "
    "and cuDNN's other calls (`__cudnn$fmha...`, norm) are dropped; wrong on an f64 x @ w",
)
def _rt6_library_epilogues_lt_only(hlo_text: str) -> dict[str, str]:
    return _rt6_epilogues(
        hlo_text,
        lib=lambda t: (
            "gemm"
            if t == "__cublas$lt$matmul"
            else "conv"
            if t.startswith("__cudnn$conv")
            else None
        ),
    )


# ---- task 4: gemm_flops -----------------------------------------------------------------------


def _rt6_gemms(module, comps):
    for comp in comps:
        for ins in comp.instructions:
            if ins.opcode == "dot":
                lhs = comp.instruction(ins.operands[0]) if ins.operands else None
                lhs_shape = lhs.shape if lhs is not None else ""
                if not lhs_shape:
                    m = re.search(r"(\w+\[[^\]]*\])", ins.operands[0]) if ins.operands else None
                    lhs_shape = m.group(1) if m else ""
                yield (
                    _rt6_dims(ins.shape),
                    _rt6_dims(lhs_shape),
                    _rt6_ints(ins.attribute("lhs_contracting_dims")),
                )
            elif ins.opcode == "custom-call":
                target = (ins.attribute("custom_call_target") or "").strip('"')
                if not target.startswith("__cublas$"):
                    continue
                dn = (
                    _rt6_config(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                )
                lhs = comp.instruction(ins.operands[0])
                out = ins.shape_info.elements[0].text if ins.shape_info.is_tuple else ins.shape
                yield (
                    _rt6_dims(out),
                    _rt6_dims(lhs.shape if lhs is not None else ""),
                    [int(v) for v in dn.get("lhs_contracting_dimensions", [])],
                )


def _rt6_flops(gemms, first_only=False, floaty=False):
    total = 0
    for out, lhs, cdims in gemms:
        if first_only:
            cdims = cdims[:1]
        k = 1
        for d in cdims:
            if d < len(lhs):
                k *= lhs[d]
        if floaty:
            total += int(2.0 * float(math.prod(out)) * float(k))
        else:
            total += 2 * math.prod(out) * k
    return int(total)


@wrong(
    "gemm_flops",
    why="float arithmetic (2.0 * float(out) * float(k)) rounds above 2**53; "
    "contract says exact for shapes of any size; wrong on a pre-optimization dot "
    "f32[1000003,1000003] x f32[1000003,1000003] (odd sizes: 2*n**3 not a float)",
)
def _rt6_gemm_flops_float(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return _rt6_flops(_rt6_gemms(module, module.computations), floaty=True)


@wrong(
    "gemm_flops",
    why="uses only the first lhs contracting dimension; a pre-optimization dot "
    "contracting several dims at once (einsum 'abk,bkn->an': lhs_contracting_dims={1,2}) "
    "undercounts",
)
def _rt6_gemm_flops_first_contracting(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return _rt6_flops(_rt6_gemms(module, module.computations), first_only=True)


@wrong(
    "gemm_flops",
    why="walks ENTRY and the computations fusions call (recursively), not while "
    "bodies or conditional branches; a GEMM in a scan body (programs.scanned_softmax, "
    "scan_cublas_h100) or a cond branch is missed",
)
def _rt6_gemm_flops_fusion_walk(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    by_name = {c.name: c for c in module.computations}
    comps, todo, seen = [], [module.entry], set()
    while todo:
        comp = todo.pop()
        if comp.name in seen:
            continue
        seen.add(comp.name)
        comps.append(comp)
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                todo.extend(by_name[c] for c in ins.called_computations if c in by_name)
    return _rt6_flops(_rt6_gemms(module, comps))


# ---- task 5: collective_overlap ---------------------------------------------------------------


def _rt6_base_op(ins, by_name):
    op = ins.opcode
    for c in _rt6_COLL:
        if op in (c, c + "-start", c + "-done", c + "-update"):
            return c, op[len(c) :]
    if op in ("async-start", "async-update", "async-done"):
        return None, op[5:]
    return None, None


def _rt6_overlap(
    hlo_text,
    pair_by_order=False,
    keep_updates=False,
    contains=False,
    any_async=False,
    entry_only=False,
):
    module = parse_hlo(hlo_text)
    by_name = {c.name: c for c in module.computations}
    fused = _rt6_fused_names(module)
    wrapped = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                wrapped.update(ins.called_computations)

    def coll_of(op):
        if contains:
            return next((c for c in _rt6_COLL if c in op), None)
        for c in _rt6_COLL:
            if op in (c, c + "-start", c + "-done", c + "-update"):
                return c
        return None

    def wraps_coll(ins):
        if any_async:
            return True
        for c in ins.called_computations:
            if c in by_name and any(
                coll_of(i.opcode) and not i.opcode.endswith(("-start", "-done"))
                for i in by_name[c].instructions
            ):
                return True
        return False

    out = {}
    comps = (
        [module.entry]
        if entry_only
        else [c for c in module.computations if c.name not in fused and c.name not in wrapped]
    )
    for comp in comps:
        instrs = list(comp.instructions)
        pending_by_order = []
        for i, ins in enumerate(instrs):
            op = ins.opcode
            c = coll_of(op)
            is_start = (c and op.endswith("-start")) or (op == "async-start" and wraps_coll(ins))
            if c and not op.endswith(("-start", "-done", "-update")):
                out[ins.name] = []
                continue
            if not is_start:
                continue
            if pair_by_order:
                pending_by_order.append(ins)
                continue
            chain = {ins.name}
            between = []
            for later in instrs[i + 1 :]:
                reads = any(o.split()[-1].lstrip("%") in chain for o in later.operands)
                if reads and later.opcode.endswith("-update"):
                    chain.add(later.name)
                    if keep_updates:
                        between.append(later.opcode)
                    continue
                if reads and later.opcode.endswith("-done"):
                    break
                between.append(later.opcode)
            out[ins.name] = between
        if pair_by_order:
            dones = [j for j, x in enumerate(instrs) if x.opcode.endswith("-done")]
            for start, j in zip(pending_by_order, dones):
                s = instrs.index(start)
                out[start.name] = [
                    x.opcode for x in instrs[s + 1 : j] if not x.opcode.endswith("-update")
                ]
    return out


@wrong(
    "collective_overlap",
    why="pairs the n-th start with the n-th done of the computation "
    "(printed order) instead of the done that reads it; wrong when two gathers are in flight "
    "and the second's done is printed before the first's (FSDP with a raised overlap limit)",
)
def _rt6_collective_overlap_by_order(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, pair_by_order=True)


@wrong(
    "collective_overlap",
    why="the -update steps (start -> update -> done) are listed as if "
    "scheduled work; contract: they are the collective's own steps, not in its list; wrong on "
    "an async-start/async-update/async-done all-reduce",
)
def _rt6_collective_overlap_keeps_updates(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, keep_updates=True)


@wrong(
    "collective_overlap",
    why="collective test by substring (`'all-to-all' in opcode`) also takes "
    "`ragged-all-to-all` (not one of the five) and maps it to []; wrong on a module with a "
    "ragged_all_to_all",
)
def _rt6_collective_overlap_substring(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, contains=True)


@wrong(
    "collective_overlap",
    why="every async-start is taken as a collective start; an async-start "
    "wrapping a fusion (or a host offload / copy) is no collective; wrong on a GPU module with "
    "an async fusion (xla_gpu_enable_pipelined... / async compute) ",
)
def _rt6_collective_overlap_any_async(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, any_async=True)


# ---- task 6: overlap_options (decide) ---------------------------------------------------------


@wrong(
    "overlap_options",
    why="combine threshold tuned to the listed cases (8 KiB: a 64x64 bf16 "
    "weight is 8192 bytes, so nothing combines at 64 and 128 wide); 32-wide weights (2 KiB, in "
    "FSDP_DOMAIN) still combine four per gather: fewer gathers than weights at width 32",
)
def _rt6_overlap_options_sized_threshold() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 8192,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }


@wrong(
    "overlap_options",
    why="only stops the combining; the scheduler still lets one collective "
    "be in flight, so the gathers issued ahead of their GEMMs stay serialized / synchronous; "
    "fails 'every gather but the first async with a GEMM inside' for 6 layers of 128",
)
def _rt6_overlap_options_no_combine_only() -> dict[str, bool | int | str]:
    return {"xla_gpu_all_gather_combine_threshold_bytes": 0}


@wrong(
    "overlap_options",
    why="`xla_gpu_enable_async_all_gather` is a retired flag today's XLA no "
    "longer knows: XLA refuses the compile (every case)",
)
def _rt6_overlap_options_retired_flag() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_enable_async_all_gather": True,
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_enable_latency_hiding_scheduler": True,
    }


# ---- task 7: gather_free_specs (decide) -------------------------------------------------------


@wrong(
    "gather_free_specs",
    why="w replicated: no collective, but one device then holds x/2 + all "
    "of w, more than half of x+w replicated for every SPEC_CASE (w at least as big as x)",
)
def _rt6_gather_free_specs_replicated_w() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec(None, None)


@wrong(
    "gather_free_specs",
    why="x's rows split over 'model' and w's columns over 'data' (axes "
    "swapped): the output block (data, model) needs rows the device lacks, so XLA adds a "
    "collective-permute/all-to-all; wrong on every case",
)
def _rt6_gather_free_specs_swapped_axes() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("model", None), PartitionSpec(None, "data")


@wrong(
    "gather_free_specs",
    why="splits K too (x P('data','model'), w P(None,'model')): each device "
    "holds only half its K, so XLA all-gathers x over 'model'; a collective on every case",
)
def _rt6_gather_free_specs_k_split() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", "model"), PartitionSpec(None, "model")


# ---- task 8: fused_dense (decide) -------------------------------------------------------------


@wrong(
    "fused_dense",
    why="exact (erf) gelu: values differ from the tanh approximation, and "
    "cuBLAS-Lt's epilogue is the tanh form, so the erf stays a separate kernel",
)
def _rt6_fused_dense_exact_gelu(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w + b, approximate=False)


@wrong(
    "fused_dense",
    why="flattens x to 2-D for cuBLAS and never restores the leading dims: a rank-3 "
    "x [a, m, k] returns [a*m, n] instead of [a, m, n]",
)
def _rt6_fused_dense_flat(x, w, b) -> jax.Array:
    h = x.reshape(-1, x.shape[-1]) @ w + b
    return jax.nn.gelu(h, approximate=True)


@wrong(
    "fused_dense",
    why="fuses only the rank-2 case (the einsum 'mk,kn->mn' path with "
    "jax.nn.gelu(approximate=True)); for a batch of sequences x [a, m, k] it falls back to the "
    "hand-written tanh formula, which cuBLAS does not fuse: not fewer kernels on a rank-3 x",
)
def _rt6_fused_dense_rank2_only(x, w, b) -> jax.Array:
    if x.ndim == 2:
        return jax.nn.gelu(jnp.einsum("mk,kn->mn", x, w) + b, approximate=True)
    h = x @ w + b
    return 0.5 * h * (1.0 + jnp.tanh(0.7978845608 * (h + 0.044715 * h**3)))


# ---- task 9: allreduce_elements (predict) -----------------------------------------------------

_rt6_HLO = {"float32": "f32", "bfloat16": "bf16"}


@wrong(
    "allreduce_elements",
    why="dtype names mapped for float32/bfloat16 only: float16 params are "
    "reported under 'float16' instead of HLO 'f16'; wrong on an f16 parameter",
)
def _rt6_allreduce_elements_missing_f16(params) -> dict[str, int]:
    out = Counter()
    for leaf in jax.tree.leaves(params):
        name = jnp.dtype(leaf.dtype).name
        out[_rt6_HLO.get(name, name)] += math.prod(leaf.shape)
    return dict(out)


@wrong(
    "allreduce_elements",
    why="one flat all-reduce assumed for everything, keyed by the first "
    "leaf's dtype; one all-reduce cannot hold two dtypes: wrong on a mixed f32/bf16 pytree "
    "(two_towers)",
)
def _rt6_allreduce_elements_one_dtype(params) -> dict[str, int]:
    leaves = jax.tree.leaves(params)
    if not leaves:
        return {}
    name = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[jnp.dtype(leaves[0].dtype).name]
    return {name: sum(math.prod(l.shape) for l in leaves)}


@wrong(
    "allreduce_elements",
    why="walks the top-level dict only (`params.values()` with a .shape); "
    "a nested pytree ({'layer1': {'w': ...}} or a list of layers) loses its inner leaves",
)
def _rt6_allreduce_elements_flat_dict(params) -> dict[str, int]:
    out = Counter()
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    values = params.values() if isinstance(params, dict) else params
    for v in values:
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            out[names[jnp.dtype(v.dtype).name]] += math.prod(v.shape)
    return dict(out)
