"""Red team round 9, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt9_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt9_dims(shape_text: str) -> list[int]:
    m = re.search(r"\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(d.strip().lstrip("<=")) for d in m.group(1).split(",")]


def _rt9_first_shape(shape_text: str) -> str:
    s = shape_text.strip().lstrip("(")
    return re.match(r"[a-z0-9]+\[[^\]]*\]", s).group(0)


def _rt9_set(text: str) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", text or "")]


def _rt9_fused_names(module) -> set[str]:
    fused: set[str] = set()
    todo = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion" and ins.attribute("calls"):
                todo.append(ins.attribute("calls").lstrip("%"))
    while todo:
        name = todo.pop()
        if name in fused:
            continue
        fused.add(name)
        comp = module.computation(name)
        if comp is None:
            continue
        for ins in comp.instructions:
            todo.extend(c.lstrip("%") for c in ins.called_computations)
    return fused


def _rt9_gemm_flops_impl(hlo_text: str, keep) -> int:
    module = parse_hlo(hlo_text)
    total = 0
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode == "dot":
                lhs = _rt9_dims(_rt9_first_shape(shapes[ins.operands[0].lstrip("%")]))
                k_dims = _rt9_set(ins.attribute("lhs_contracting_dims"))
                out = math.prod(_rt9_dims(_rt9_first_shape(ins.shape)))
            elif ins.opcode == "custom-call" and (ins.attribute("custom_call_target") or "").strip(
                '"'
            ).startswith("__cublas$"):
                cfg = json.loads(ins.attribute("backend_config"))
                dn = cfg["gemm_backend_config"]["dot_dimension_numbers"]
                lhs = _rt9_dims(_rt9_first_shape(shapes[ins.operands[0].lstrip("%")]))
                k_dims = [int(d) for d in dn.get("lhs_contracting_dimensions", [])]
                out = math.prod(_rt9_dims(_rt9_first_shape(ins.shape)))
            else:
                continue
            if not keep(ins, k_dims, lhs):
                continue
            total += 2 * out * math.prod(lhs[d] for d in k_dims)
    return total


# ---- fusion_kinds -------------------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="'Fusion instructions of every computation' broken by a line regex whose shape token is "
    "\\S+ (`%name = SHAPE fusion(`): a multi-output fusion's tuple shape `(f32[..], f32[..])` "
    "holds a space, so the line does not match and the fusion is not counted (reductions_h100, "
    "reduce_places_h100, grad_mlp_bf16 have tuple-shaped fusions)",
)
def _rt9_fusion_kinds_line_regex(hlo_text: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?\S+\s*=\s*\S+\s+fusion\(.*kind=(k\w+)", line)
        if not m:
            continue
        k = re.search(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"', line)
        counts[f"{m.group(1)}({k.group(1)})" if k else m.group(1)] += 1
    return dict(counts)


# ---- reduction_kinds ----------------------------------------------------------------------------


def _rt9_label(ins) -> str:
    kind = ins.attribute("kind") or ""
    cfg = ins.attribute("backend_config") or ""
    k = re.search(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"', cfg)
    return f"{kind}({k.group(1)})" if k else kind


@wrong(
    "reduction_kinds",
    why="'A variadic reduce (tuple-shaped ...) is one reduce' broken: reduces are found in each "
    "computation's lines with the regex `= \\S+ reduce\\(`, so a variadic reduce, whose tuple "
    "shape `(f32[256]{0}, s32[256]{0})` holds a space, is not found at all: an argmax "
    "(reduce_places_h100's two tuple-shaped reduces) is missing from the counts",
)
def _rt9_reduction_kinds_shape_token(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused = _rt9_fused_names(module)
    # count regex hits per computation from the raw text
    per_comp: Counter[str] = Counter()
    current = None
    for line in hlo_text.splitlines():
        h = re.match(r"\s*(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$", line)
        if h and "=" not in line.split("(")[0]:
            current = h.group(1)
            continue
        if current and re.search(r"=\s*\S+\s+reduce\(", line):
            per_comp[current] += 1

    def reach(name, seen):
        if name in seen:
            return set()
        seen.add(name)
        comp = module.computation(name)
        out = {name}
        if comp is not None:
            for ins in comp.instructions:
                for c in ins.called_computations:
                    out |= reach(c.lstrip("%"), seen)
        return out

    counts: Counter[str] = Counter()
    held: set[str] = set()
    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                comps = reach(ins.attribute("calls").lstrip("%"), set())
                held |= comps
                n = sum(per_comp[c] for c in comps)
                if n:
                    counts[_rt9_label(ins)] += n
    for comp in module.computations:
        if comp.name not in held and per_comp[comp.name]:
            counts["unfused"] += per_comp[comp.name]
    return dict(counts)


# ---- library_epilogues --------------------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="'what each library call fused after its product ... the epilogue (DEFAULT, BIAS, "
    "BIAS_RELU, BIAS_GELU ...)' read as 'which activation': the bias part is dropped, BIAS "
    "reported as DEFAULT and BIAS_RELU as RELU (dense_cublas_h100's first three layers)",
)
def _rt9_library_epilogues_activation_only(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            target = (ins.attribute("custom_call_target") or "").strip('"')
            if target.startswith("__cublas$"):
                ep = json.loads(ins.attribute("backend_config"))["gemm_backend_config"].get(
                    "epilogue", "DEFAULT"
                )
                ep = ep.removeprefix("BIAS_") if ep != "BIAS" else "DEFAULT"
                out[ins.name] = ep
            elif target.startswith("__cudnn$"):
                cfg = json.loads(ins.attribute("backend_config"))
                out[ins.name] = cfg["cudnn_conv_backend_config"].get("activation_mode", "kNone")
    return out


# ---- gemm_flops ---------------------------------------------------------------------------------


@wrong(
    "gemm_flops",
    why="'A GEMM is a dot': a dot that contracts nothing (lhs_contracting_dims={}, an outer "
    "product / batched outer product written with lax.dot_general, e.g. f32[64] x f32[32] -> "
    "f32[64,32], 2*2048*1 = 4096 flops) is skipped as 'no GEMM', so that module counts 0",
)
def _rt9_gemm_flops_skip_outer(hlo_text: str) -> int:
    return _rt9_gemm_flops_impl(hlo_text, lambda ins, k, lhs: bool(k))


@wrong(
    "gemm_flops",
    why="'Multiply-add flops of every GEMM' read as floating-point only: a dot whose operands "
    "are integers (s8 x s8 -> s32, an int8-quantized matmul; jnp.matmul of int8[64,128] and "
    "int8[128,32] with preferred_element_type int32: 2*64*32*128 = 524288) is left out",
)
def _rt9_gemm_flops_float_only(hlo_text: str) -> int:
    return _rt9_gemm_flops_impl(
        hlo_text, lambda ins, k, lhs: not re.match(r"\(?[su]\d+\[", ins.shape.strip())
    )


# ---- collective_overlap -------------------------------------------------------------------------


@wrong(
    "collective_overlap",
    why="'The collectives are these five opcodes only' broken: any `<op>-start`/`<op>-done` pair "
    "but fusion-start is taken for an async collective, so a copy-start (an asynchronous copy, "
    "block_tpu_v5e.hlo has two; send/recv pairs likewise) gets a key of its own",
)
def _rt9_collective_overlap_any_start(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt9_fused_names(module)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused:
            continue
        instrs = list(comp.instructions)
        for i, ins in enumerate(instrs):
            op = ins.opcode
            if op in _rt9_COLLECTIVES:
                out[ins.name] = []
            elif op.endswith("-start") and op not in ("fusion-start", "async-start"):
                chain = {ins.name}
                window: list[str] = []
                for later in instrs[i + 1 :]:
                    reads = any(o.lstrip("%") in chain for o in later.operands)
                    if reads and later.opcode.endswith("-update"):
                        chain.add(later.name)
                        continue
                    if reads and later.opcode.endswith("-done"):
                        break
                    window.append(later.opcode)
                out[ins.name] = window
    return out


# ---- allreduce_elements -------------------------------------------------------------------------


@wrong(
    "allreduce_elements",
    why="'elements all-reduced in that dtype' broken: parameters are grouped through a set of "
    "(shape, dtype) pairs, so two parameters of the same shape and dtype count once: an MLP "
    "with two f32[128,128] weights and two f32[128] biases gives f32 -> 16512 instead of 33024",
)
def _rt9_allreduce_elements_set_of_shapes(params) -> dict[str, int]:
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}
    kinds = {(tuple(l.shape), jnp.dtype(l.dtype).name) for l in jax.tree_util.tree_leaves(params)}
    out: dict[str, int] = {}
    for shape, dt in kinds:
        n = math.prod(shape)
        if n:
            out[names[dt]] = out.get(names[dt], 0) + n
    return out


@wrong(
    "allreduce_elements",
    why="'HLO dtype name (f32, bf16, f16)' derived by a generic rule, numpy kind letter + bits: "
    "float32 -> f32 and float16 -> f16 are right, but bfloat16 (an ml_dtypes type, kind 'V') "
    "becomes 'V16': a bf16 MLP (grad_mlp_bf16's params) is keyed 'V16' instead of 'bf16'",
)
def _rt9_allreduce_elements_kind_bits(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree_util.tree_leaves(params):
        dt = np.dtype(leaf.dtype)
        n = math.prod(leaf.shape)
        if n:
            key = f"{dt.kind}{dt.itemsize * 8}"
            out[key] = out.get(key, 0) + n
    return out


# ---- fused_dense --------------------------------------------------------------------------------


@wrong(
    "fused_dense",
    why="'the same values as programs.handwritten_gelu_dense' broken: uses the sigmoid "
    "('quick') gelu h * sigmoid(1.702 h), which cuBLAS-Lt is thought to fuse as well; it "
    "differs from the tanh approximation by up to ~0.02 (0.0207 on DENSE_CASES' f32-like "
    "3x40x72 @ 72x48 inputs; at h = -2: -0.0644 against -0.0454)",
)
def _rt9_fused_dense_quick_gelu(x, w, b) -> jax.Array:
    h = jnp.matmul(x, w) + b
    return h * jax.nn.sigmoid(1.702 * h)


# ---- overlap_options ----------------------------------------------------------------------------


@wrong(
    "overlap_options",
    why="'every one of them but the first layer's an async pair with a GEMM between its start "
    "and its done' broken: the combiner is off and the overlap limit raised, but the option "
    "xla_gpu_disable_async_collectives is set to ALLGATHER (the SYNC_ALL_REDUCE recipe of "
    "programs.py read in the wrong sense, as 'enable async for'), which makes every all-gather "
    "synchronous: 0 of 5 overlapped on 6 layers of 128",
)
def _rt9_overlap_options_disable_sense() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
        "xla_gpu_disable_async_collectives": "ALLGATHER",
    }


# ---- gather_free_specs --------------------------------------------------------------------------


@wrong(
    "gather_free_specs",
    why="'needs no collective at all' broken while chasing the memory budget: x's rows split over "
    "the whole mesh (P(('data', 'model'), None)) and w's columns over 'model': one device holds a "
    "quarter of x's rows, but its output block P('data', 'model') needs half of them, so XLA "
    "all-gathers x over 'model' (1024x2048 @ 2048x4096 on gpu-h100: one all-gather)",
)
def _rt9_gather_free_specs_rows_over_mesh():
    from jax.sharding import PartitionSpec

    return PartitionSpec(("data", "model"), None), PartitionSpec(None, "model")


# ---- collective_overlap (2) ---------------------------------------------------------------------


@wrong(
    "collective_overlap",
    why="'the opcodes of the instructions printed BETWEEN the start and its done' broken by an "
    "inclusive slice (instrs[start + 1 : done + 1]): the done's own opcode ends every list, "
    "e.g. matmul_2x2_a100's all-gather-start.1 -> [..., 'bitcast', 'all-gather-done']",
)
def _rt9_collective_overlap_inclusive_done(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt9_fused_names(module)
    wrapped: set[str] = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                wrapped.update(c.lstrip("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name in wrapped:
            continue
        instrs = list(comp.instructions)
        for i, ins in enumerate(instrs):
            op = ins.opcode
            is_start = op in tuple(f"{c}-start" for c in _rt9_COLLECTIVES)
            if op == "async-start":
                inner = [
                    j.opcode
                    for c in ins.called_computations
                    for j in (module.computation(c.lstrip("%")).instructions)
                ]
                is_start = any(o in _rt9_COLLECTIVES for o in inner)
            if op in _rt9_COLLECTIVES:
                out[ins.name] = []
            elif is_start:
                chain = {ins.name}
                for j in range(i + 1, len(instrs)):
                    later = instrs[j]
                    reads = any(o.lstrip("%") in chain for o in later.operands)
                    if reads and later.opcode.endswith("-update"):
                        chain.add(later.name)
                    elif reads and later.opcode.endswith("-done"):
                        out[ins.name] = [
                            x.opcode
                            for x in instrs[i + 1 : j + 1]
                            if x.name not in chain - {ins.name}
                        ]
                        break
    return out
