"""Red team round 14, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt14_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt14_config(ins) -> dict:
    raw = ins.attributes.get("backend_config")
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        val = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return val if isinstance(val, dict) else {}


def _rt14_backend_kind(ins):
    cfg = _rt14_config(ins)
    for key in ("fusion_backend_config", "fusion_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            return str(sub["kind"])
    return None


def _rt14_label(ins) -> str:
    kind = str(ins.attributes.get("kind", ""))
    bk = _rt14_backend_kind(ins)
    return f"{kind}({bk})" if bk else kind


def _rt14_shape_text(ins) -> str:
    return str(ins.shape.text if hasattr(ins.shape, "text") else ins.shape)


def _rt14_dims(shape_text: str) -> list[int]:
    m = re.search(r"\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(v) for v in m.group(1).split(",")]


def _rt14_first_array(shape_text: str) -> str:
    m = re.search(r"[a-z0-9]+\[[^\]]*\]", shape_text)
    return m.group(0) if m else shape_text


def _rt14_ints(text) -> list[int]:
    if text is None:
        return []
    if isinstance(text, (list, tuple)):
        return [int(v) for v in text]
    return [int(v) for v in re.findall(r"-?\d+", str(text))]


def _rt14_target(ins) -> str:
    return str(ins.attributes.get("custom_call_target", "")).strip('"')


# ---- task 1: fusion_kinds --------------------------------------------------------------------------
def _rt14_fused_names(module) -> set[str]:
    fused: set[str] = set()
    for c in module.computations:
        for ins in c.instructions:
            if ins.opcode == "fusion":
                fused.update(ins.called_computations)
    return fused


def _rt14_entry_name(module) -> str:
    entry = module.computations[-1].name
    for c in module.computations:
        if getattr(c, "is_entry", False):
            entry = c.name
    return entry


def _rt14_dot_k(ins, shapes, key="lhs_contracting_dims") -> int:
    lhs = _rt14_dims(shapes.get(ins.operands[0], ""))
    return math.prod(lhs[d] for d in _rt14_ints(ins.attributes.get(key)) if d < len(lhs))


def _rt14_cublas_k(ins, shapes, keys=("lhs_contracting_dimensions",)) -> int:
    dn = (_rt14_config(ins).get("gemm_backend_config", {}) or {}).get("dot_dimension_numbers", {})
    lhs = _rt14_dims(shapes.get(ins.operands[0], ""))
    k = 1
    for key in keys:
        k *= math.prod(lhs[int(d)] for d in dn.get(key, []) if int(d) < len(lhs))
    return k


def _rt14_tuple_arrays(shape_text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+\[[^\]]*\]", shape_text)


def _rt14_flops(
    hlo_text: str, out_array, dot_keys=("lhs_contracting_dims",), per_kernel=False
) -> int:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused = _rt14_fused_names(module)

    def comp_flops(comp) -> int:
        shapes = {i.name: _rt14_shape_text(i) for i in comp.instructions}
        total = 0
        for ins in comp.instructions:
            out = _rt14_shape_text(ins)
            if ins.opcode == "dot":
                k = 1
                for key in dot_keys:
                    k *= _rt14_dot_k(ins, shapes, key)
                total += 2 * math.prod(_rt14_dims(out)) * k
            elif ins.opcode == "custom-call" and _rt14_target(ins).startswith("__cublas$"):
                keys = tuple(k.replace("_dims", "_dimensions") for k in dot_keys)
                total += (
                    2 * math.prod(_rt14_dims(out_array(out))) * _rt14_cublas_k(ins, shapes, keys)
                )
        return total

    if not per_kernel:
        return sum(comp_flops(c) for c in module.computations)

    # per kernel: every fusion instruction runs its fused computation (and what it nests)
    def tree(name, seen) -> int:
        if name in seen or name not in comps:
            return 0
        seen.add(name)
        n = comp_flops(comps[name])
        for ins in comps[name].instructions:
            if ins.opcode == "fusion":
                for callee in ins.called_computations:
                    n += tree(callee, seen)
        return n

    total = 0
    for comp in module.computations:
        if comp.name in fused:
            continue
        total += comp_flops(comp)
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                for callee in ins.called_computations:
                    total += tree(callee, set())
    return total


# ---- task 4: gemm_flops --------------------------------------------------------------------------


@wrong(
    "gemm_flops",
    why="'every computation it holds ... each instruction counted once' broken: counts a GEMM per "
    "kernel that runs it (walks each fusion instruction into its fused computation), so when XLA "
    "deduplicates two identical Triton GEMM fusions into one fused computation called by two "
    "fusion instructions, that computation's dot is counted twice (two dots x@w1, x@w2 of equal "
    "shapes: one fused_computation, two fusion calls -> 2x the flops of the one dot instruction)",
)
def _rt14_gemm_flops_per_kernel(hlo_text: str) -> int:
    return _rt14_flops(hlo_text, _rt14_first_array, per_kernel=True)


def _rt14_largest_array(shape_text: str) -> str:
    arrays = _rt14_tuple_arrays(shape_text)
    if not arrays:
        return shape_text
    return max(arrays, key=lambda a: math.prod(_rt14_dims(a)) if _rt14_dims(a) else 1)


@wrong(
    "gemm_flops",
    why="'a cuBLAS custom call ... whose output is the first element of its tuple' broken: takes "
    "the tuple's largest array as the product ('the workspace is small scratch'), but the s8 "
    "workspace is often larger than a small product: (f32[8,16], s8[4194304]) counts "
    "2*4194304*K instead of 2*128*K",
)
def _rt14_gemm_flops_largest_tuple_element(hlo_text: str) -> int:
    return _rt14_flops(hlo_text, _rt14_largest_array)


@wrong(
    "gemm_flops",
    why="'2 * (elements of the GEMM's output) * (product of the lhs's contracting dimensions' "
    "sizes)' broken: multiplies the lhs batch dimensions into K too ('batch and contracting "
    "dims are the ones matched between the operands'), so a batched dot "
    "f32[8,32,64] x f32[8,64,16] -> f32[8,32,16] counts 2*4096*64*8 instead of 2*4096*64",
)
def _rt14_gemm_flops_batch_as_contracting(hlo_text: str) -> int:
    return _rt14_flops(
        hlo_text, _rt14_first_array, dot_keys=("lhs_contracting_dims", "lhs_batch_dims")
    )


# ---- task 2: reduction_kinds -----------------------------------------------------------------------


@wrong(
    "reduction_kinds",
    why="'Where the module's reduce instructions run' broken: walks from ENTRY through the "
    "computations it calls (fusions, while, conditional, call, async) and never visits a "
    "computation nothing calls, so a module holding an uncalled computation with a reduce "
    "(or a kInput fusion of one) leaves those reduces out; e.g. an extra unreferenced "
    "computation '%spare { ... reduce(...) }' answers {} for its {'unfused': 1}",
)
def _rt14_reduction_kinds_reachable_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused = _rt14_fused_names(module)
    reach: set[str] = set()
    todo = [_rt14_entry_name(module)]
    while todo:
        n = todo.pop()
        if n in reach or n not in comps:
            continue
        reach.add(n)
        for ins in comps[n].instructions:
            todo.extend(ins.called_computations)

    def reduces(name, seen) -> int:
        if name in seen or name not in comps:
            return 0
        seen.add(name)
        n = 0
        for ins in comps[name].instructions:
            if ins.opcode == "reduce":
                n += 1
            elif ins.opcode == "fusion":
                for callee in ins.called_computations:
                    n += reduces(callee, seen)
        return n

    out: dict[str, int] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name not in reach:
            continue
        for ins in comp.instructions:
            if ins.opcode == "reduce":
                out["unfused"] = out.get("unfused", 0) + 1
            elif ins.opcode == "fusion":
                seen: set[str] = set()
                n = sum(reduces(c, seen) for c in ins.called_computations)
                if n:
                    lab = _rt14_label(ins)
                    out[lab] = out.get(lab, 0) + n
    return out


# ---- task 3: library_epilogues ---------------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="'What each library call fused, by the call's instruction name' broken: skips fused "
    "computations ('library calls are kernels of their own, never inside a fusion'), so a cuBLAS "
    "call inside a kCustom __custom_fusion (a scan's dynamic-slice fusion, scan_cublas_h100.hlo) "
    "is missing from the dict",
)
def _rt14_library_epilogues_skips_fused_computations(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    fused = _rt14_fused_names(module)
    out: dict[str, str] = {}
    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            tgt = _rt14_target(ins)
            if tgt.startswith("__cublas$"):
                g = _rt14_config(ins).get("gemm_backend_config", {}) or {}
                out[ins.name] = str(g.get("epilogue", "DEFAULT"))
            elif tgt.startswith("__cudnn$"):
                c = _rt14_config(ins).get("cudnn_conv_backend_config", {}) or {}
                out[ins.name] = str(c.get("activation_mode", "kNone"))
    return out


# ---- task 5: collective_overlap ----------------------------------------------------------------------


def _rt14_collective_overlap_impl(hlo_text: str, stop_at_next: bool) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused = _rt14_fused_names(module)

    def holds(names):
        return any(
            i.opcode in _rt14_COLLECTIVES
            for n in names
            if n in comps
            for i in comps[n].instructions
        )

    wrapped: set[str] = set()
    for c in module.computations:
        for ins in c.instructions:
            if ins.opcode == "async-start" and holds(ins.called_computations):
                wrapped.update(ins.called_computations)

    def is_coll_start(ins) -> bool:
        op = ins.opcode
        return (op.endswith("-start") and op[: -len("-start")] in _rt14_COLLECTIVES) or (
            op == "async-start" and holds(ins.called_computations)
        )

    result: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name in wrapped:
            continue
        seq = list(comp.instructions)
        for idx, ins in enumerate(seq):
            if ins.opcode in _rt14_COLLECTIVES:
                result[ins.name] = []
                continue
            if not is_coll_start(ins):
                continue
            chain = {ins.name}
            listed: list[str] = []
            stopped = False
            for later in seq[idx + 1 :]:
                if (
                    later.operands
                    and later.operands[0] in chain
                    and (later.opcode.endswith("-update") or later.opcode.endswith("-done"))
                ):
                    if later.opcode.endswith("-done"):
                        break
                    chain.add(later.name)
                    continue
                if stop_at_next and is_coll_start(later):
                    stopped = True  # 'only one collective is in flight at a time'
                if not stopped:
                    listed.append(later.opcode)
            result[ins.name] = listed
    return result


@wrong(
    "collective_overlap",
    why="'the list holds the opcodes of the instructions printed between the start and its done' "
    "broken: stops listing at the next collective's start ('the scheduler keeps one collective in "
    "flight, so the next start means this one is done'). Wrong when gathers overlap each other: "
    "programs.fsdp_lowering(6, 256, 128) on gpu-h100 compiled with "
    "xla_gpu_all_gather_combine_threshold_bytes=0 and an overlap limit of 16 gives "
    "all-gather-start.1 -> ['parameter'] instead of ['parameter', 'all-gather-start', "
    "'all-gather', 'bitcast', ..., 'fusion'] (10 opcodes)",
)
def _rt14_collective_overlap_stops_at_next_start(hlo_text: str) -> dict[str, list[str]]:
    return _rt14_collective_overlap_impl(hlo_text, stop_at_next=True)


# ---- task 4 (more): gemm_flops ----------------------------------------------------------------------


def _rt14_gemm_terms(hlo_text: str):
    module = parse_hlo(hlo_text)
    for comp in module.computations:
        shapes = {i.name: _rt14_shape_text(i) for i in comp.instructions}
        for ins in comp.instructions:
            out = _rt14_shape_text(ins)
            if ins.opcode == "dot":
                k = _rt14_dot_k(ins, shapes)
                yield ins, comp, _rt14_first_array(out), shapes.get(ins.operands[0], ""), k
            elif ins.opcode == "custom-call" and _rt14_target(ins).startswith("__cublas$"):
                k = _rt14_cublas_k(ins, shapes)
                yield ins, comp, _rt14_first_array(out), shapes.get(ins.operands[0], ""), k


@wrong(
    "gemm_flops",
    why="'each instruction counted once' read as 'each distinct GEMM once' (XLA deduplicates "
    "identical computations, so equal GEMMs are one): dedupes dots by (output shape, lhs "
    "shape, K), so two dot instructions of the same shapes (x @ w1 + x @ w2 with w1, w2 both "
    "f32[128,256], x f32[64,128], before optimization) count 2*64*256*128 instead of twice that",
)
def _rt14_gemm_flops_dedupes_identical(hlo_text: str) -> int:
    seen = set()
    total = 0
    for ins, comp, out, lhs, k in _rt14_gemm_terms(hlo_text):  # noqa: B007
        key = (ins.opcode, out, lhs, k)
        if key in seen:
            continue
        seen.add(key)
        total += 2 * math.prod(_rt14_dims(out)) * k
    return total


@wrong(
    "gemm_flops",
    why="'whatever its element types (an integer GEMM, s8 x s8 -> s32, does its multiply-adds "
    "too)' broken: counts an integer GEMM as one op per multiply-add (int8 'TOPS' counted per "
    "MAC, only floating point gets the factor 2), so jnp.dot(s8[64,128], s8[128,256], "
    "preferred_element_type=s32) counts 64*256*128 instead of 2*64*256*128",
)
def _rt14_gemm_flops_int_macs_once(hlo_text: str) -> int:
    total = 0
    for ins, comp, out, lhs, k in _rt14_gemm_terms(hlo_text):  # noqa: B007
        factor = 1 if re.match(r"[su]\d+\[", out) else 2
        total += factor * math.prod(_rt14_dims(out)) * k
    return total


# ---- task 3 (more): library_epilogues ---------------------------------------------------------------

_RT14_LIBRARY = {
    "__cublas$gemm": "gemm",
    "__cublas$lt$matmul": "gemm",
    "__cudnn$convForward": "conv",
    "__cudnn$convBiasActivationForward": "conv",
    "__cudnn$convBackwardInput": "conv",
    "__cudnn$convBackwardFilter": "conv",
}


@wrong(
    "library_epilogues",
    why="'a cuBLAS custom call (custom_call_target starting __cublas$)' broken: recognises library "
    "calls from a table of the targets the lesson's GEMM and conv recordings print, so an FP8 "
    "GEMM (`__cublas$lt$matmul$f8`, fp8_h100.hlo) and any other __cublas$/__cudnn$ target "
    "(a __cudnn$norm) are left out: {} instead of {'cublas-lt-matmul...': 'DEFAULT'}",
)
def _rt14_library_epilogues_known_target_table(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            kind = _RT14_LIBRARY.get(_rt14_target(ins))
            if kind == "gemm":
                g = _rt14_config(ins).get("gemm_backend_config", {}) or {}
                out[ins.name] = str(g.get("epilogue", "DEFAULT"))
            elif kind == "conv":
                c = _rt14_config(ins).get("cudnn_conv_backend_config", {}) or {}
                out[ins.name] = str(c.get("activation_mode", "kNone"))
    return out


# ---- task 9: allreduce_elements ------------------------------------------------------------------

_RT14_HLO = {"float32": "f32", "float64": "f32", "bfloat16": "bf16", "float16": "f16"}


@wrong(
    "allreduce_elements",
    why="'HLO dtype name -> elements all-reduced in that dtype' broken by reading XLA's flat "
    "concatenate as jnp.concatenate (which promotes): mixed gradients are all filed under the "
    "promoted dtype, {'a': f32[4,4], 'b': bf16[8]} gives {'f32': 24} instead of "
    "{'f32': 16, 'bf16': 8}; bf16 with f16 promotes to f32: {'f32': n} for {'bf16': .., 'f16': ..}",
)
def _rt14_allreduce_elements_promoted_concat(params) -> dict[str, int]:
    leaves = [l for l in jax.tree.leaves(params) if math.prod(int(d) for d in l.shape) > 0]
    if not leaves:
        return {}
    dt = None
    for l in leaves:
        d = jax.dtypes.canonicalize_dtype(l.dtype)
        dt = d if dt is None else jnp.promote_types(dt, d)
    name = _RT14_HLO.get(np.dtype(dt).name, np.dtype(dt).name)
    return {name: sum(math.prod(int(d) for d in l.shape) for l in leaves)}
