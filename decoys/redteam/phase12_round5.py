"""Red-team wrong answers for phase 12, written from the contract only.

Round 5: each answer agrees with a careful reading on the recordings but breaks on a valid
input the recordings lack (another nesting place, another element type, a scalar, two of a
kind, instructions in another order, a size the listed cases lack).
"""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------------------------------------
# shared helpers (plain functions, not answers)


def _rt5_config(ins):
    text = ins.attribute("backend_config")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _rt5_fusion_label(ins, keys=("fusion_backend_config", "fusion_config"), bracket_kinds=None):
    kind = ins.attribute("kind", "")
    cfg = _rt5_config(ins)
    for key in keys:
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            if bracket_kinds is None or kind in bracket_kinds:
                return f"{kind}({sub['kind']})"
    return kind


def _rt5_fused_names(module):
    """Computations called by a fusion's calls=."""
    names = set()
    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                names.update(ins.called_computations)
    return names


def _rt5_dims(shape_text):
    from xla_inspect.hlo.model import Shape

    s = Shape(shape_text)
    if s.is_tuple:
        s = s.elements[0]
    return tuple(int(d) for d in s.dims)


def _rt5_ints(text):
    if not text:
        return []
    return [int(t) for t in text.strip("{}").split(",") if t.strip()]


# ---------------------------------------------------------------------------------------------
# task 1: fusion_kinds


@wrong(
    "fusion_kinds",
    why="'fusions nested in fusions included' broken: walks only computations no fusion calls "
    "(ENTRY, while bodies, branches), so a fusion inside a fused computation (a Triton GEMM "
    "fusion's nested kLoop/kInput fusion, programs.FUSIONS_ELSEWHERE-style text) is not "
    "counted; wrong on any module with a fusion nested in a fusion",
)
def _rt5_fusion_kinds_skips_fused_computations(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    out: dict[str, int] = {}
    for comp in module:
        if comp.name in fused:
            continue
        for ins in comp:
            if ins.opcode == "fusion":
                label = _rt5_fusion_label(ins)
                out[label] = out.get(label, 0) + 1
    return out


@wrong(
    "fusion_kinds",
    why="the bracketed kind is only read for kCustom fusions (the GPU recordings' only marked "
    'kind): a kLoop fusion marked `"kind":"__dynamic_memcpy"` is counted as plain kLoop, '
    "and a CPU kLoop/kOutput fusion marked `__ynn_fusion` likewise; wrong on a module with a "
    "dynamic-slice kLoop fusion marked __dynamic_memcpy (a scan over stacked weights on GPU)",
)
def _rt5_fusion_kinds_custom_only_bracket(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: dict[str, int] = {}
    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                label = _rt5_fusion_label(ins, bracket_kinds={"kCustom"})
                out[label] = out.get(label, 0) + 1
    return out


@wrong(
    "fusion_kinds",
    why="reads the kind only from `fusion_backend_config` (the GPU key): a CPU fusion whose "
    'backend_config names it in `fusion_config` (`{"fusion_config":{"kind":'
    '"__ynn_fusion"}}`) is counted under its bare kind; wrong on CPU text with a YNN fusion '
    "('works on CPU, GPU and TPU text alike')",
)
def _rt5_fusion_kinds_gpu_key_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: dict[str, int] = {}
    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                label = _rt5_fusion_label(ins, keys=("fusion_backend_config",))
                out[label] = out.get(label, 0) + 1
    return out


# ---------------------------------------------------------------------------------------------
# task 2: reduction_kinds


def _rt5_reduce_count_under(module, comp_name, seen=None, variadic_as_elements=False, dedupe=None):
    """Reduces reachable from computation comp_name (through every call, reducers excluded)."""
    comp = module.computation(comp_name)
    if comp is None:
        return 0
    total = 0
    for ins in comp:
        if ins.opcode == "reduce":
            if variadic_as_elements and ins.shape_info.is_tuple:
                total += len(ins.shape_info.elements)
            else:
                total += 1
        reducer = (ins.attribute("to_apply") or "").lstrip("%")
        for name in ins.called_computations:
            if name == reducer:
                continue
            if dedupe is not None:
                if name in dedupe:
                    continue
                dedupe.add(name)
            total += _rt5_reduce_count_under(module, name, seen, variadic_as_elements, dedupe)
    return total


def _rt5_reduction_kinds(hlo_text, inner_label=False, dedupe_shared=False, variadic=False):
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    out: dict[str, int] = {}
    dedupe = set() if dedupe_shared else None
    counted_in_fusions = 0
    for comp in module:
        if comp.name in fused:
            continue
        for ins in comp:
            if ins.opcode == "reduce":
                n = len(ins.shape_info.elements) if (variadic and ins.shape_info.is_tuple) else 1
                out["unfused"] = out.get("unfused", 0) + n
            if ins.opcode != "fusion":
                continue
            label = _rt5_fusion_label(ins)
            for name in ins.called_computations:
                if dedupe is not None:
                    if name in dedupe:
                        continue
                    dedupe.add(name)
                if inner_label:
                    # attribute each reduce to the fusion that directly calls its computation
                    for sub_label, n in _rt5_direct_labels(module, name, label):
                        if n:
                            out[sub_label] = out.get(sub_label, 0) + n
                else:
                    n = _rt5_reduce_count_under(module, name, None, variadic, dedupe)
                    if n:
                        out[label] = out.get(label, 0) + n
                        counted_in_fusions += n
    return out


def _rt5_direct_labels(module, comp_name, label):
    comp = module.computation(comp_name)
    if comp is None:
        return []
    rows = [(label, sum(1 for i in comp if i.opcode == "reduce"))]
    for ins in comp:
        if ins.opcode == "fusion":
            for name in ins.called_computations:
                rows.extend(_rt5_direct_labels(module, name, _rt5_fusion_label(ins)))
    return rows


@wrong(
    "reduction_kinds",
    why="counts a reduce under the kind of the fusion that directly calls its computation, not "
    "the OUTERMOST fusion reaching it: a reduce in a kInput fusion nested in a Triton "
    "kCustom fusion (programs.NESTED_REDUCTIONS-style) lands under kInput; wrong on any module "
    "with a reduce inside a nested fusion",
)
def _rt5_reduction_kinds_innermost(hlo_text: str) -> dict[str, int]:
    return _rt5_reduction_kinds(hlo_text, inner_label=True)


@wrong(
    "reduction_kinds",
    why="'a fused computation that several fusions call ... count once per outermost fusion' "
    "broken: each fused computation is visited once module-wide, so two fusions calling the "
    "same fused computation (XLA dedupes identical fusions in a while body and ENTRY, or two "
    "sibling kInput fusions sharing a reduce computation) count its reduce once; wrong on a "
    "module where two fusions call one fused computation holding a reduce",
)
def _rt5_reduction_kinds_dedupes_shared(hlo_text: str) -> dict[str, int]:
    return _rt5_reduction_kinds(hlo_text, dedupe_shared=True)


@wrong(
    "reduction_kinds",
    why="'a variadic reduce (tuple-shaped, e.g. an argmax's value and index) is one reduce' "
    "broken: counts a tuple-shaped reduce once per tuple element; wrong on any module with an "
    "argmax/argmin (jnp.argmax lowers to a 2-output reduce)",
)
def _rt5_reduction_kinds_variadic_per_element(hlo_text: str) -> dict[str, int]:
    return _rt5_reduction_kinds(hlo_text, variadic=True)


# ---------------------------------------------------------------------------------------------
# task 3: library_epilogues


def _rt5_library_epilogues(hlo_text, entry_only=False, lt_only=False, cudnn_key=None):
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    comps = [module.entry] if entry_only else list(module)
    for comp in comps:
        for ins in comp:
            if ins.opcode != "custom-call":
                continue
            target = ins.attribute("custom_call_target", "").strip('"')
            if target.startswith("__cublas$"):
                if lt_only and not target.startswith("__cublas$lt"):
                    continue
                cfg = _rt5_config(ins)
                out[ins.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$"):
                cfg = _rt5_config(ins)
                key = cudnn_key or "cudnn_conv_backend_config"
                out[ins.name] = cfg.get(key, {}).get("activation_mode", "kNone")
    return out


@wrong(
    "library_epilogues",
    why="reads only ENTRY: a cuBLAS call in a while body (a scanned dense layer, "
    "scan_cublas_h100-style) or in a conditional branch (branches_cublas_h100-style) is "
    "left out; wrong on any module whose library call sits outside ENTRY",
)
def _rt5_library_epilogues_entry_only(hlo_text: str) -> dict[str, str]:
    return _rt5_library_epilogues(hlo_text, entry_only=True)


@wrong(
    "library_epilogues",
    why="'custom_call_target starting `__cublas$`' read as cuBLAS-Lt only (`__cublas$lt$matmul`, "
    "the recordings' target): a legacy `__cublas$gemm` call (batched GEMMs, or a GEMM the Lt "
    "path does not take, e.g. programs.GEMMS_EVERYWHERE's) is left out; wrong on a module with "
    "a __cublas$gemm call",
)
def _rt5_library_epilogues_lt_only(hlo_text: str) -> dict[str, str]:
    return _rt5_library_epilogues(hlo_text, lt_only=True)


@wrong(
    "library_epilogues",
    why="a cuDNN call's activation is looked up under `cudnn_fusion_config` only when the "
    "target is `__cudnn$fusion`; for convolutions (`__cudnn$convForward`, "
    "`__cudnn$convBiasActivationForward`) the cudnn_conv_backend_config key is misspelled as "
    "`conv_backend_config`, so every conv reports kNone; wrong on conv_net's fused "
    "conv+bias+relu (activation_mode kRelu)",
)
def _rt5_library_epilogues_cudnn_key(hlo_text: str) -> dict[str, str]:
    return _rt5_library_epilogues(hlo_text, cudnn_key="conv_backend_config")


# ---------------------------------------------------------------------------------------------
# task 4: gemm_flops


def _rt5_gemm_flops(
    hlo_text, last_dim_contracting=False, entry_and_fusions_only=False, drop_batch=False
):
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    total = 0
    for comp in module:
        if entry_and_fusions_only and not (comp.is_entry or comp.name in fused):
            continue
        for ins in comp:
            if ins.opcode == "dot":
                lhs = None
                for c in module:
                    lhs = c.instruction(ins.operands[0])
                    if lhs is not None and c is comp:
                        break
                lhs = comp.instruction(ins.operands[0])
                lhs_dims = _rt5_dims(lhs.shape)
                contracting = _rt5_ints(ins.attribute("lhs_contracting_dims", "{}"))
                out_dims = _rt5_dims(ins.shape)
            elif ins.opcode == "custom-call" and ins.attribute("custom_call_target", "").strip(
                '"'
            ).startswith("__cublas$"):
                cfg = _rt5_config(ins).get("gemm_backend_config", {})
                dn = cfg.get("dot_dimension_numbers", {})
                contracting = [int(d) for d in dn.get("lhs_contracting_dimensions", [])]
                lhs = comp.instruction(ins.operands[0])
                lhs_dims = _rt5_dims(lhs.shape)
                out_dims = _rt5_dims(ins.shape)
                if drop_batch:
                    nb = len(dn.get("lhs_batch_dimensions", []))
                    out_dims = out_dims[nb:]
            else:
                continue
            if last_dim_contracting:
                contracting = [len(lhs_dims) - 1]
            k = math.prod(lhs_dims[d] for d in contracting)
            total += 2 * math.prod(out_dims) * k
    return total


@wrong(
    "gemm_flops",
    why="takes the lhs's LAST dimension as the contracting one (true of every x @ w in the "
    "recordings) instead of reading lhs_contracting_dims: wrong on a GEMM contracting the "
    "lhs's dimension 0 (x.T @ y, a weight gradient; GEMMS_EVERYWHERE's dot and __cublas$gemm) "
    "when its two dims differ in size",
)
def _rt5_gemm_flops_last_dim(hlo_text: str) -> int:
    return _rt5_gemm_flops(hlo_text, last_dim_contracting=True)


@wrong(
    "gemm_flops",
    why="'wherever it sits' broken: looks in ENTRY and fused computations only, so a GEMM in a "
    "while body (a jax.lax.scan of layers, scan_h100/scan_cublas_h100) or in a conditional "
    "branch or called computation is not counted; wrong on any scanned or branched GEMM",
)
def _rt5_gemm_flops_entry_and_fusions(hlo_text: str) -> int:
    return _rt5_gemm_flops(hlo_text, entry_and_fusions_only=True)


@wrong(
    "gemm_flops",
    why="for a cuBLAS call drops the output's batch dimensions (reads the output as the "
    "[m, n] matrix after the batch dims named in dot_dimension_numbers): wrong on a batched "
    "cuBLAS GEMM (batched_cublas: einsum 'bmk,bkn->bmn' with Triton off), b times too few",
)
def _rt5_gemm_flops_cublas_drops_batch(hlo_text: str) -> int:
    return _rt5_gemm_flops(hlo_text, drop_batch=True)


# ---------------------------------------------------------------------------------------------
# task 5: collective_overlap

_rt5_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt5_wrapped_collective(module, ins):
    for name in ins.called_computations:
        comp = module.computation(name)
        if comp is not None and any(i.opcode in _rt5_COLLECTIVES for i in comp):
            return True
    return False


def _rt5_collective_overlap(hlo_text, nth_pairing=False, no_generic=False, entry_only=False):
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    wrapped = set()
    for comp in module:
        for ins in comp:
            if ins.opcode == "async-start":
                wrapped.update(ins.called_computations)
    out: dict[str, list[str]] = {}
    comps = [module.entry] if entry_only else list(module)
    for comp in comps:
        if comp.name in fused or comp.name in wrapped:
            continue
        instrs = list(comp)
        starts = []  # (index, instruction, kind)
        for idx, ins in enumerate(instrs):
            op = ins.opcode
            if op in _rt5_COLLECTIVES:
                out[ins.name] = []
            elif op.endswith("-start") and op[: -len("-start")] in _rt5_COLLECTIVES:
                starts.append((idx, ins, op[: -len("-start")]))
            elif op == "async-start" and not no_generic and _rt5_wrapped_collective(module, ins):
                starts.append((idx, ins, "async"))
        done_ops = {k: (k + "-done") for k in _rt5_COLLECTIVES}
        done_ops["async"] = "async-done"
        if nth_pairing:
            by_kind: dict[str, list[int]] = {}
            for idx, ins in enumerate(instrs):
                for kind, d in done_ops.items():
                    if ins.opcode == d:
                        by_kind.setdefault(kind, []).append(idx)
            used: dict[str, int] = {}
            for idx, ins, kind in starts:
                n = used.get(kind, 0)
                used[kind] = n + 1
                dones = by_kind.get(kind, [])
                end = dones[n] if n < len(dones) else len(instrs)
                out[ins.name] = [i.opcode for i in instrs[idx + 1 : end]]
        else:
            for idx, ins, kind in starts:
                end = len(instrs)
                for j in range(idx + 1, len(instrs)):
                    if instrs[j].opcode == done_ops[kind] and ins.name in instrs[j].operands:
                        end = j
                        break
                out[ins.name] = [i.opcode for i in instrs[idx + 1 : end]]
    return out


@wrong(
    "collective_overlap",
    why="pairs the n-th <op>-start with the n-th <op>-done of the computation (true when "
    "starts and dones nest in order, as in the recordings) instead of the done that reads it: "
    "wrong when two gathers are in flight and the later start's done comes first (start a, "
    "start b, done b, done a)",
)
def _rt5_collective_overlap_nth_pairing(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_collective_overlap(hlo_text, nth_pairing=True)


@wrong(
    "collective_overlap",
    why="knows only `<op>-start` opcodes: a generic `async-start` whose calls= wraps a "
    "reduce-scatter/all-reduce (programs.ASYNC_COLLECTIVES; XLA's async reduce-scatter) is "
    "left out entirely, and its wrapped collective is not reported either; wrong on "
    "ASYNC_COLLECTIVES",
)
def _rt5_collective_overlap_no_generic_async(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_collective_overlap(hlo_text, no_generic=True)


@wrong(
    "collective_overlap",
    why="'every computation that is not a fused computation' read as ENTRY: a collective in a "
    "while body (a scanned FSDP layer's gather, programs.NESTED_COLLECTIVES) or in a called "
    "computation / conditional branch is missing; wrong on NESTED_COLLECTIVES",
)
def _rt5_collective_overlap_entry_only(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_collective_overlap(hlo_text, entry_only=True)


# ---------------------------------------------------------------------------------------------
# task 6: overlap_options


@wrong(
    "overlap_options",
    why="only stops the combiner (threshold 0 bytes): the gathers become separate but the "
    "scheduler keeps one collective in flight at a time, so with several gathers the later "
    "ones stay synchronous / get no GEMM between start and done; misses the 5-of-6 budget "
    "on 6 layers of 128 (and on 16-layer stacks)",
)
def _rt5_overlap_options_no_combine_only() -> dict[str, bool | int | str]:
    return {"xla_gpu_all_gather_combine_threshold_bytes": 0}


@wrong(
    "overlap_options",
    why="combine threshold sized for the listed widths (below a 64x64 bf16 gather, 8192 "
    "bytes, so 64- and 128-wide weights are not merged) instead of 0: on a FSDP_DOMAIN stack "
    "with 32-wide weights (2048-byte gathers, e.g. 8 layers of 32, rows 64) the gathers are "
    "combined again into one, far below 'one all-gather per weight'",
)
def _rt5_overlap_options_threshold_for_listed_widths() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 4096,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 2,
        "xla_gpu_enable_latency_hiding_scheduler": True,
    }


@wrong(
    "overlap_options",
    why="turns on the latency-hiding scheduler and raises the overlap limit but leaves the "
    "all-gather combiner at its default: the weights' gathers are still merged into one "
    "combined all-gather (fsdp4_h100.hlo's single gather), so there is not one all-gather per "
    "weight; wrong on every FSDP case",
)
def _rt5_overlap_options_scheduler_only() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_enable_latency_hiding_scheduler": True,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 4,
    }


# ---------------------------------------------------------------------------------------------
# task 7: gather_free_specs


@wrong(
    "gather_free_specs",
    why="x replicated and w split by columns: no collective, but one device holds all of x and "
    "half of w, more than half of x+w replicated (1024x2048 @ 2048x4096: 6M of 10M elements; "
    "256x512 @ 512x256: 192K of 256K); breaks the memory budget on every SPEC_CASE",
)
def _rt5_gather_free_specs_x_replicated() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec(None, None), PartitionSpec(None, "model")


@wrong(
    "gather_free_specs",
    why="w split on its rows by 'model' (P('model', None)) as if the contraction were split: "
    "each device then holds only half of K for its output block, so XLA must all-reduce (or "
    "gather w); a collective remains; wrong on every SPEC_CASE",
)
def _rt5_gather_free_specs_w_rows() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec("model", None)


@wrong(
    "gather_free_specs",
    why="keeps x as the original P('data', 'model') and only fixes w to P(None, 'model'): x's "
    "K dimension is still split, so each device needs the other half of its rows of x -> an "
    "all-gather of x (or a partial-sum all-reduce); a collective remains on every SPEC_CASE",
)
def _rt5_gather_free_specs_x_still_split() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", "model"), PartitionSpec(None, "model")


# ---------------------------------------------------------------------------------------------
# task 8: fused_dense


@wrong(
    "fused_dense",
    why="flattens x to 2-D for the GEMM and never reshapes back: 'the result keeps x's leading "
    "dimensions' broken; right on the 2-D DENSE_CASES, wrong shape on a batch of sequences "
    "x[a, m, k] (returns [a*m, n])",
)
def _rt5_fused_dense_flattens(x, w, b) -> jax.Array:
    h = x.reshape(-1, x.shape[-1]) @ w + b
    return jax.nn.gelu(h, approximate=True)


@wrong(
    "fused_dense",
    why="uses jax.nn.gelu's default (approximate=True) but through the erf form "
    "(approximate=False), which cuBLAS-Lt has no epilogue for (its GELU epilogue is the tanh "
    "form): the erf runs as a separate kernel, no fewer kernels, and the values differ from "
    "the tanh approximation by up to ~1e-3, beyond bf16/f32 tolerance on large |h|; wrong on "
    "the f32 96x160 case",
)
def _rt5_fused_dense_erf_gelu(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w + b, approximate=False)


@wrong(
    "fused_dense",
    why="computes the GEMM in f32 and casts back (x.astype(f32) @ w.astype(f32)) 'for "
    "accuracy': for bf16 inputs the GEMM's operands are converted by a separate fusion and "
    "the result converted after the epilogue, so the cuBLAS call is f32 and extra convert "
    "kernels run: more kernels than the bf16 answer; wrong on 'bf16 64x128 @ 128x256'",
)
def _rt5_fused_dense_upcast(x, w, b) -> jax.Array:
    h = jnp.matmul(x.astype(jnp.float32), w.astype(jnp.float32)) + b.astype(jnp.float32)
    return jax.nn.gelu(h, approximate=True).astype(x.dtype)


# ---------------------------------------------------------------------------------------------
# task 9: allreduce_elements (predict)

_rt5_HLO_DTYPE = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}


@wrong(
    "allreduce_elements",
    why="computes each leaf's elements as shape[0] * shape[-1] (right for every matrix and "
    "vector the recordings hold) instead of the product of all dims: wrong on a 3-D or 4-D "
    "parameter (a conv kernel HWIO, a stacked [L, d, d] weight) and on a scalar parameter "
    "(shape (), e.g. a learned temperature)",
)
def _rt5_allreduce_elements_matrix_only(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree_util.tree_leaves(params):
        shape = tuple(leaf.shape)
        n = 1 if not shape else (shape[0] * shape[-1] if len(shape) > 1 else shape[0])
        if not shape:
            n = 0
        name = _rt5_HLO_DTYPE.get(jnp.dtype(leaf.dtype).name, jnp.dtype(leaf.dtype).name)
        out[name] = out.get(name, 0) + n
    return out


@wrong(
    "allreduce_elements",
    why="maps dtypes to HLO names with a table of the recordings' two (float32, bfloat16) and "
    "falls back to numpy's name: an f16 parameter is keyed `float16`, not the HLO name `f16`; "
    "wrong on a pytree holding f16 parameters",
)
def _rt5_allreduce_elements_no_f16(params) -> dict[str, int]:
    table = {"float32": "f32", "bfloat16": "bf16"}
    out: dict[str, int] = {}
    for leaf in jax.tree_util.tree_leaves(params):
        name = jnp.dtype(leaf.dtype).name
        key = table.get(name, name)
        out[key] = out.get(key, 0) + math.prod(leaf.shape)
    return out


@wrong(
    "allreduce_elements",
    why="assumes one flat all-reduce in the dtype of the first parameter (grad_mlp_bf16: all "
    "bf16) and puts every leaf's elements under it: 'can one all-reduce hold two dtypes?' "
    "no; wrong on mixed pytrees (grad_towers_mixed: f32 and bf16 towers)",
)
def _rt5_allreduce_elements_first_dtype(params) -> dict[str, int]:
    leaves = jax.tree_util.tree_leaves(params)
    if not leaves:
        return {}
    name = jnp.dtype(leaves[0].dtype).name
    key = _rt5_HLO_DTYPE.get(name, name)
    return {key: sum(math.prod(leaf.shape) for leaf in leaves)}


# ---------------------------------------------------------------------------------------------
# round-5 additions: other nesting places (async-wrapped fusions, `call`ed computations),
# target names spelled like a library, two contracting dimensions, overlap limits sized for the
# listed stacks, transposed mesh axes.


def _rt5_async_wrapped_names(module):
    names = set()
    for comp in module:
        for ins in comp:
            if ins.opcode in ("async-start", "async-update", "async-done"):
                names.update(ins.called_computations)
    return names


def _rt5_reachable_without_to_apply(module):
    """Computations reached from ENTRY through every call attribute but to_apply= (a learner
    who skips reducers by skipping every to_apply)."""
    seen = {module.entry.name}
    stack = [module.entry]
    while stack:
        comp = stack.pop()
        for ins in comp:
            reducer = (ins.attribute("to_apply") or "").lstrip("%")
            for name in ins.called_computations:
                if name == reducer or name in seen:
                    continue
                seen.add(name)
                sub = module.computation(name)
                if sub is not None:
                    stack.append(sub)
    return seen


def _rt5_count_fusions(module, comps):
    out: dict[str, int] = {}
    for comp in comps:
        for ins in comp:
            if ins.opcode == "fusion":
                label = _rt5_fusion_label(ins)
                out[label] = out.get(label, 0) + 1
    return out


@wrong(
    "fusion_kinds",
    why="'every computation' walked as the computations a shared 'kernel computations' helper "
    "keeps, which drops the computations async-start wraps (right for collectives: 'the "
    "wrapped computation is part of it'): a fusion run asynchronously, printed as a "
    "`fusion-start`/`fusion-done` pair (read back as async-start wrapping the fusion), is not "
    "counted; wrong on any module with a fusion-start",
)
def _rt5_fusion_kinds_skips_async_wrapped(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    wrapped = _rt5_async_wrapped_names(module)
    return _rt5_count_fusions(module, [c for c in module if c.name not in wrapped])


@wrong(
    "fusion_kinds",
    why="walks computations reachable from ENTRY and skips every to_apply= target as a "
    "reducer: a computation run by a `call` instruction (to_apply=%f; XLA:GPU's command-buffer "
    "calls, a non-inlined call) holds fusions that are not counted; wrong on a module whose "
    "fusions sit in a call'ed computation",
)
def _rt5_fusion_kinds_skips_called(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    keep = _rt5_reachable_without_to_apply(module)
    return _rt5_count_fusions(module, [c for c in module if c.name in keep])


@wrong(
    "fusion_kinds",
    why="counts the kinds of fused computations (one entry per computation some fusion "
    "calls, labelled by the last fusion calling it) instead of fusion instructions: two fusions "
    "calling one deduplicated fused computation ('each is a kernel of its own') count once; "
    "wrong on a module where XLA deduplicated two identical fusions",
)
def _rt5_fusion_kinds_per_computation(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    label_of: dict[str, str] = {}
    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                for name in ins.called_computations:
                    label_of[name] = _rt5_fusion_label(ins)
    out: dict[str, int] = {}
    for label in label_of.values():
        out[label] = out.get(label, 0) + 1
    return out


def _rt5_reduction_kinds_over(module, comps):
    fused = _rt5_fused_names(module)
    out: dict[str, int] = {}
    for comp in comps:
        if comp.name in fused:
            continue
        for ins in comp:
            if ins.opcode == "reduce":
                out["unfused"] = out.get("unfused", 0) + 1
            elif ins.opcode == "fusion":
                label = _rt5_fusion_label(ins)
                n = sum(_rt5_reduce_count_under(module, name) for name in ins.called_computations)
                if n:
                    out[label] = out.get(label, 0) + n
    return out


@wrong(
    "reduction_kinds",
    why="looks for kernels only in computations that are not async-wrapped (as for "
    "collectives): a kInput fusion run as a fusion-start/fusion-done pair is never found, so "
    "its reduce is counted nowhere (not even 'unfused'); wrong on a module with an async "
    "reduction fusion",
)
def _rt5_reduction_kinds_skips_async_wrapped(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    wrapped = _rt5_async_wrapped_names(module)
    return _rt5_reduction_kinds_over(module, [c for c in module if c.name not in wrapped])


@wrong(
    "reduction_kinds",
    why="reaches computations from ENTRY but skips every to_apply= as a reducer: a reduce (or "
    "a fusion holding one) in a computation run by a `call` instruction (to_apply=%f, e.g. a "
    "command-buffer call) is lost; wrong on a module with a reduction inside a call'ed "
    "computation",
)
def _rt5_reduction_kinds_skips_called(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    keep = _rt5_reachable_without_to_apply(module)
    return _rt5_reduction_kinds_over(module, [c for c in module if c.name in keep])


@wrong(
    "library_epilogues",
    why='recognises library calls by `"cudnn" in target` / `"cublas" in target` instead of '
    "the prefixes `__cudnn$`/`__cublas$`: a jaxlib FFI call named after its library "
    "(`cudnn_rnn_ffi`, jax.experimental.rnn on GPU) is reported as a cuDNN call with kNone; "
    "wrong on a module holding cudnn_rnn_ffi",
)
def _rt5_library_epilogues_substring_target(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module:
        for ins in comp:
            if ins.opcode != "custom-call":
                continue
            target = ins.attribute("custom_call_target", "").strip('"').lower()
            if "cublas" in target:
                out[ins.name] = (
                    _rt5_config(ins).get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
                )
            elif "cudnn" in target:
                out[ins.name] = (
                    _rt5_config(ins)
                    .get("cudnn_conv_backend_config", {})
                    .get("activation_mode", "kNone")
                )
    return out


@wrong(
    "gemm_flops",
    why="'product of the lhs's contracting dimensions' sizes' read as the size of the first "
    "one (every recorded GEMM contracts one dimension): wrong on a dot contracting two "
    "dimensions (einsum 'ijk,jkn->in' left as one dot, lhs_contracting_dims={1,2}), off by "
    "the second dimension's size",
)
def _rt5_gemm_flops_first_contracting_only(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = 0
    for comp in module:
        for ins in comp:
            if ins.opcode == "dot":
                lhs = _rt5_dims(comp.instruction(ins.operands[0]).shape)
                contracting = _rt5_ints(ins.attribute("lhs_contracting_dims", "{}"))[:1]
                out_dims = _rt5_dims(ins.shape)
            elif ins.opcode == "custom-call" and ins.attribute("custom_call_target", "").strip(
                '"'
            ).startswith("__cublas$"):
                dn = (
                    _rt5_config(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                )
                contracting = [int(d) for d in dn.get("lhs_contracting_dimensions", [])][:1]
                lhs = _rt5_dims(comp.instruction(ins.operands[0]).shape)
                out_dims = _rt5_dims(ins.shape)
            else:
                continue
            total += 2 * math.prod(out_dims) * math.prod(lhs[d] for d in contracting)
    return total


@wrong(
    "collective_overlap",
    why="takes every generic async-start for a collective start without looking into its "
    "wrapped computation: an asynchronous fusion (fusion-start/fusion-done, read back as "
    "async-start wrapping a fusion) gets an entry of its own; wrong on a module with an "
    "async fusion or any other async-wrapped non-collective op",
)
def _rt5_collective_overlap_any_async(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    wrapped = _rt5_async_wrapped_names(module)
    out: dict[str, list[str]] = {}
    for comp in module:
        if comp.name in fused or comp.name in wrapped:
            continue
        instrs = list(comp)
        for idx, ins in enumerate(instrs):
            op = ins.opcode
            if op in _rt5_COLLECTIVES:
                out[ins.name] = []
                continue
            if op == "async-start":
                done = "async-done"
            elif op.endswith("-start") and op[: -len("-start")] in _rt5_COLLECTIVES:
                done = op[: -len("-start")] + "-done"
            else:
                continue
            end = len(instrs)
            for j in range(idx + 1, len(instrs)):
                if instrs[j].opcode == done and ins.name in instrs[j].operands:
                    end = j
                    break
            out[ins.name] = [i.opcode for i in instrs[idx + 1 : end]]
    return out


@wrong(
    "overlap_options",
    why="combiner off and an overlap limit of 8 (comfortably above the listed stacks' 6 "
    "gathers): per the lesson a limit of 8 keeps only 8 of 16 gathers overlapped on a "
    "16-layer stack of 64-wide weights (x of 128 rows), which FSDP_DOMAIN holds; the budget "
    "needs 15 of 16",
)
def _rt5_overlap_options_limit_for_listed() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 8,
    }


@wrong(
    "gather_free_specs",
    why="mesh axes swapped (x's rows over 'model', w's columns over 'data'): no gather of the "
    "operands, but each device computes the block P('model', 'data') of the output, not the "
    "required P('data', 'model'), so XLA must move blocks between devices (a "
    "collective-permute / all-to-all) to lay the output out; wrong on every SPEC_CASE",
)
def _rt5_gather_free_specs_axes_swapped() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("model", None), PartitionSpec(None, "data")


# ---------------------------------------------------------------------------------------------
# more round-5 answers: spellings inside JSON, per-path counting, int32 element counts,
# async-update chains, opcode substrings, collectives in fused computations


@wrong(
    "fusion_kinds",
    why='reads the bracketed kind with the regex `"kind":"(\\w+)"` over the backend_config '
    "text: a kind holding a `$` (`__cudnn$fusion`, a cuDNN GEMM fusion) is cut at the `$` and "
    "counted as `kCustom(__cudnn)`; right on every recording (their kinds are all \\w), wrong "
    "on a module with a cuDNN fusion",
)
def _rt5_fusion_kinds_regex_word(hlo_text: str) -> dict[str, int]:
    import re

    module = parse_hlo(hlo_text)
    out: dict[str, int] = {}
    for comp in module:
        for ins in comp:
            if ins.opcode != "fusion":
                continue
            kind = ins.attribute("kind", "")
            found = re.search(r'"kind":"(\w+)', ins.attribute("backend_config") or "")
            label = f"{kind}({found.group(1)})" if found else kind
            out[label] = out.get(label, 0) + 1
    return out


@wrong(
    "reduction_kinds",
    why="counts a reduce once per PATH from the outermost fusion (plain recursion through "
    "every nested fusion instruction) instead of 'once per outermost fusion reaching' it: "
    "when one outermost fusion's computation holds two nested fusions calling the same "
    "deduplicated computation with a reduce, it is counted twice; wrong on such a module",
)
def _rt5_reduction_kinds_per_path(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    return _rt5_reduction_kinds_over(module, list(module))


@wrong(
    "library_epilogues",
    why="looks for library calls only in computations no fusion calls (kernels are launched "
    "from there): a cuBLAS call inside a kCustom dynamic-slice fusion (`__custom_fusion`, a "
    "scanned dense layer with Triton off, scan_cublas_h100) is left out; wrong on any module "
    "whose library call sits in a fused computation",
)
def _rt5_library_epilogues_skips_fused(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    full = _rt5_library_epilogues(hlo_text)
    keep = {i.name for c in module if c.name not in fused for i in c}
    return {k: v for k, v in full.items() if k in keep}


@wrong(
    "gemm_flops",
    why="counts elements with jnp.prod over the dims (int32 without x64) and multiplies in "
    "Python: the flops are right for every recording, but a GEMM whose output holds 2**31 "
    "elements or more (bf16[65536,32768], an LM head over a long batch) wraps around; wrong "
    "on such a module (extreme size, still a valid GEMM)",
)
def _rt5_gemm_flops_int32_elements(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = 0
    for comp in module:
        for ins in comp:
            if ins.opcode == "dot":
                lhs = _rt5_dims(comp.instruction(ins.operands[0]).shape)
                contracting = _rt5_ints(ins.attribute("lhs_contracting_dims", "{}"))
                out_dims = _rt5_dims(ins.shape)
            elif ins.opcode == "custom-call" and ins.attribute("custom_call_target", "").strip(
                '"'
            ).startswith("__cublas$"):
                dn = (
                    _rt5_config(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                )
                contracting = [int(d) for d in dn.get("lhs_contracting_dimensions", [])]
                lhs = _rt5_dims(comp.instruction(ins.operands[0]).shape)
                out_dims = _rt5_dims(ins.shape)
            else:
                continue
            elements = int(jnp.prod(jnp.asarray(out_dims, dtype=jnp.int32)))
            total += 2 * elements * math.prod(lhs[d] for d in contracting)
    return total


@wrong(
    "collective_overlap",
    why="ends a generic async-start's window at the first async-done that reads the start "
    "itself: with an `async-update` between (start -> update -> done, the done reads the "
    "update) no done is found and the window runs to the end of the computation; wrong on an "
    "async collective with an async-update in its chain",
)
def _rt5_collective_overlap_no_update_chain(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_collective_overlap(hlo_text)


@wrong(
    "collective_overlap",
    why="recognises collectives by substring (`any(k in opcode for k in (...))`): "
    "`ragged-all-to-all` (and its start) is taken for an all-to-all, which the contract's "
    "five kinds do not include; wrong on a module with a ragged-all-to-all (MoE token "
    "dispatch)",
)
def _rt5_collective_overlap_substring(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt5_fused_names(module)
    wrapped = _rt5_async_wrapped_names(module)
    out = _rt5_collective_overlap(hlo_text)
    for comp in module:
        if comp.name in fused or comp.name in wrapped:
            continue
        for ins in comp:
            if (
                ins.name not in out
                and any(k in ins.opcode for k in _rt5_COLLECTIVES)
                and not (ins.opcode.endswith("-done"))
            ):
                out[ins.name] = []
    return out


@wrong(
    "collective_overlap",
    why="'every computation that is not a fused computation' ignored: walks all "
    "computations but the async-wrapped ones, so a collective inside a fused computation (a "
    "reduce-scatter in XLA:GPU's dynamic-slice fusion) is reported as a synchronous "
    "collective; wrong on a module with a collective in a fused computation",
)
def _rt5_collective_overlap_includes_fused(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    wrapped = _rt5_async_wrapped_names(module)
    out = _rt5_collective_overlap(hlo_text)
    for comp in module:
        if comp.name in wrapped:
            continue
        for ins in comp:
            if ins.opcode in _rt5_COLLECTIVES and ins.name not in out:
                out[ins.name] = []
    return out
