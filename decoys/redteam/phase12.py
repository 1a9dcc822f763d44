"""Red-team wrong answers for phase 12, written from the contract only."""

from __future__ import annotations

import json
import math
from collections import Counter

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")


def _rt_kind(instruction) -> str | None:
    """kind= or kCustom(<backend_config kind>), reading both spellings."""
    kind = instruction.attribute("kind")
    text = instruction.attribute("backend_config")
    if text:
        try:
            config = json.loads(text)
        except ValueError:
            config = {}
        for key in ("fusion_config", "fusion_backend_config"):
            sub = config.get(key) if isinstance(config, dict) else None
            if isinstance(sub, dict) and sub.get("kind"):
                return f"kCustom({sub['kind']})"
    return kind


def _rt_ints(text: str | None) -> list[int]:
    text = (text or "").strip("{} ")
    return [int(x) for x in text.split(",") if x.strip()]


def _rt_target(instruction) -> str:
    text = instruction.attribute("custom_call_target") or '""'
    return text.strip('"')


# ---- fusion_kinds ---------------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="'fusions nested in fusions included' / 'every computation': counts only the ENTRY "
    "computation's fusions; wrong on block_tpu_v5e.hlo (TPU nests kLoop fusions: answers "
    "kLoop 6, not 8) and on any kInput fusion calling a computation that holds a kLoop fusion",
)
def fusion_kinds_entry_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: Counter = Counter()
    for instruction in module.entry:
        if instruction.opcode == "fusion":
            counts[_rt_kind(instruction)] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="'a fusion whose backend_config names a kind in its fusion_config or "
    "fusion_backend_config' and 'works on CPU, GPU and TPU text alike': reads only the GPU "
    "spelling fusion_backend_config; on this host's CPU text of programs.block the "
    "fusion_config kinds (__ynn_fusion) come out as plain kCustom",
)
def fusion_kinds_gpu_spelling_only(hlo_text: str) -> dict[str, int]:
    counts: Counter = Counter()
    for computation in parse_hlo(hlo_text):
        for instruction in computation:
            if instruction.opcode != "fusion":
                continue
            kind = instruction.attribute("kind")
            text = instruction.attribute("backend_config") or "{}"
            try:
                sub = json.loads(text).get("fusion_backend_config", {})
            except ValueError:
                sub = {}
            if sub.get("kind"):
                kind = f"kCustom({sub['kind']})"
            counts[kind] += 1
    return dict(counts)


# ---- reduction_kinds ------------------------------------------------------------------------


@wrong(
    "reduction_kinds",
    why="'the module's reduce instructions': matches every opcode containing 'reduce', so an "
    "all-reduce (or reduce-scatter / reduce-window) counts; on grad_mlp_bf16.hlo it adds "
    "'unfused': 1 for all-reduce.8",
)
def reduction_kinds_substring_opcode(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    caller = {}
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                for name in instruction.called_computations:
                    caller[name] = (computation.name, instruction)
    counts: Counter = Counter()
    for computation in module:
        for instruction in computation:
            if "reduce" in instruction.opcode:
                name, outer = computation.name, None
                while name in caller:
                    name, outer = caller[name]
                counts[_rt_kind(outer) if outer is not None else "unfused"] += 1
    return dict(counts)


@wrong(
    "reduction_kinds",
    why="'the outermost fusion whose fused computation reaches it': uses the innermost fusion "
    "(the one that calls the reduce's computation directly); wrong when a reduce sits in a "
    "kLoop fusion nested in a kCustom(__triton) or kInput fusion (counts the inner kind)",
)
def reduction_kinds_innermost(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    caller = {}
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                for name in instruction.called_computations:
                    caller[name] = instruction
    counts: Counter = Counter()
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "reduce":
                fusion = caller.get(computation.name)
                counts[_rt_kind(fusion) if fusion is not None else "unfused"] += 1
    return dict(counts)


@wrong(
    "reduction_kinds",
    why="'a fusion's name says little; its kind and body do' (README): classifies each reduce "
    "by the name of the fusion that holds it (input_* -> kInput, loop_* -> kLoop, triton_* / "
    "gemm_* -> kCustom(...)); wrong on any fusion renamed or named otherwise, e.g. a kInput "
    "fusion named 'fusion.3' or 'wrapped_reduce' lands under 'unfused'",
)
def reduction_kinds_by_fusion_name(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    caller = {}
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                for name in instruction.called_computations:
                    caller[name] = (computation.name, instruction)
    counts: Counter = Counter()
    for computation in module:
        for instruction in computation:
            if instruction.opcode != "reduce":
                continue
            name, outer = computation.name, None
            while name in caller:
                name, outer = caller[name]
            if outer is None:
                counts["unfused"] += 1
            elif outer.name.startswith("input_"):
                counts["kInput"] += 1
            elif outer.name.startswith("loop_"):
                counts["kLoop"] += 1
            elif outer.name.startswith("triton_softmax"):
                counts["kCustom(__triton)"] += 1
            elif outer.name.startswith("gemm_fusion"):
                counts["kCustom(__triton_nested_gemm_fusion)"] += 1
            else:
                counts["unfused"] += 1
    return dict(counts)


# ---- library_epilogues ----------------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="'a cuBLAS custom call (custom_call_target starting __cublas$)': finds library calls by "
    "instruction name (cublas-lt-matmul*, cudnn-conv*) instead of by target; on "
    "dense_cublas_h100.hlo it misses custom-call.7 (the DEFAULT GEMM), on mlp_cublas.hlo all",
)
def library_epilogues_by_name(hlo_text: str) -> dict[str, str]:
    out = {}
    for computation in parse_hlo(hlo_text):
        for instruction in computation:
            if instruction.opcode != "custom-call":
                continue
            text = instruction.attribute("backend_config") or "{}"
            config = json.loads(text)
            if instruction.name.startswith("cublas-lt-matmul"):
                out[instruction.name] = config["gemm_backend_config"].get("epilogue", "DEFAULT")
            elif instruction.name.startswith("cudnn-conv"):
                conv = config["cudnn_conv_backend_config"]
                out[instruction.name] = conv.get("activation_mode", "kNone")
    return out


@wrong(
    "library_epilogues",
    why="'for a cuDNN one (__cudnn$...) the activation_mode': keeps only "
    "__cudnn$convBiasActivationForward calls (a plain convForward 'fused nothing'); on "
    "conv_h100.hlo it drops cudnn-conv.5 -> kNone",
)
def library_epilogues_fused_convs_only(hlo_text: str) -> dict[str, str]:
    out = {}
    for computation in parse_hlo(hlo_text):
        for instruction in computation:
            if instruction.opcode != "custom-call":
                continue
            target = _rt_target(instruction)
            config = json.loads(instruction.attribute("backend_config") or "{}")
            if target.startswith("__cublas$"):
                out[instruction.name] = config["gemm_backend_config"].get("epilogue", "DEFAULT")
            elif target == "__cudnn$convBiasActivationForward":
                out[instruction.name] = config["cudnn_conv_backend_config"]["activation_mode"]
    return out


# ---- gemm_flops -----------------------------------------------------------------------------


@wrong(
    "gemm_flops",
    why="'2 * (elements of the GEMM's output) * (product of the lhs's contracting dims)': uses "
    "2*M*N*K from the output's last two dims and the lhs's last dim, dropping batch and split-K "
    "dims; on mlp_triton.hlo (dot f32[8,192,96], split-K 8) it answers 1/8 of the first GEMM, "
    "and on batched_* it drops the batch of 6",
)
def gemm_flops_2d_only(hlo_text: str) -> int:
    total = 0
    for computation in parse_hlo(hlo_text):
        shapes = {i.name: i.shape_info for i in computation}
        for instruction in computation:
            if instruction.opcode == "dot":
                out = instruction.shape_info.dims
                lhs = shapes[instruction.operands[0]].dims
            elif instruction.opcode == "custom-call" and _rt_target(instruction).startswith(
                "__cublas$"
            ):
                out = instruction.shape_info.elements[0].dims
                lhs = shapes[instruction.operands[0]].dims
            else:
                continue
            m, n = (out[-2], out[-1]) if len(out) >= 2 else (1, out[-1])
            total += 2 * m * n * lhs[-1]
    return int(total)


@wrong(
    "gemm_flops",
    why="'the product of the lhs's contracting dimensions' sizes': for a cuBLAS call reads "
    "rhs_contracting_dimensions and indexes the lhs shape with them; on batched_cublas.hlo "
    "(lhs f32[6,40,72], lhs contracting {2}, rhs contracting {1}) K becomes 40 instead of 72",
)
def gemm_flops_rhs_contracting(hlo_text: str) -> int:
    total = 0
    for computation in parse_hlo(hlo_text):
        shapes = {i.name: i.shape_info for i in computation}
        for instruction in computation:
            if instruction.opcode == "dot":
                lhs = shapes[instruction.operands[0]].dims
                dims = _rt_ints(instruction.attribute("lhs_contracting_dims"))
                total += (
                    2 * math.prod(instruction.shape_info.dims) * math.prod(lhs[d] for d in dims)
                )
            elif instruction.opcode == "custom-call" and _rt_target(instruction).startswith(
                "__cublas$"
            ):
                config = json.loads(instruction.attribute("backend_config"))["gemm_backend_config"]
                numbers = config["dot_dimension_numbers"]
                dims = [int(d) for d in numbers["rhs_contracting_dimensions"]]
                lhs = shapes[instruction.operands[0]].dims
                out = instruction.shape_info.elements[0].dims
                total += 2 * math.prod(out) * math.prod(lhs[d] for d in dims)
    return int(total)


@wrong(
    "gemm_flops",
    why="'whose output is the first element of its tuple': counts the elements of the whole "
    "cuBLAS result tuple (the product and the s8 workspace); wrong on every cuBLAS text, e.g. "
    "mlp_cublas.hlo adds 2*4194304*K per call",
)
def gemm_flops_whole_tuple(hlo_text: str) -> int:
    total = 0
    for computation in parse_hlo(hlo_text):
        shapes = {i.name: i.shape_info for i in computation}
        for instruction in computation:
            if instruction.opcode == "dot":
                lhs = shapes[instruction.operands[0]].dims
                dims = _rt_ints(instruction.attribute("lhs_contracting_dims"))
                total += (
                    2 * math.prod(instruction.shape_info.dims) * math.prod(lhs[d] for d in dims)
                )
            elif instruction.opcode == "custom-call" and _rt_target(instruction).startswith(
                "__cublas$"
            ):
                config = json.loads(instruction.attribute("backend_config"))["gemm_backend_config"]
                dims = [
                    int(d) for d in config["dot_dimension_numbers"]["lhs_contracting_dimensions"]
                ]
                lhs = shapes[instruction.operands[0]].dims
                elements = sum(math.prod(e.dims) for e in instruction.shape_info.elements)
                total += 2 * elements * math.prod(lhs[d] for d in dims)
    return int(total)


# ---- collective_overlap ---------------------------------------------------------------------


def _rt_async_starts(computation):
    instructions = list(computation)
    for index, instruction in enumerate(instructions):
        if instruction.opcode.endswith("-start") and instruction.opcode[:-6] in _COLLECTIVES:
            yield index, instruction, instructions


@wrong(
    "collective_overlap",
    why="'the instructions printed between the start and its done': leaves out parameters "
    "(and constants) as 'not scheduled work'; on matmul_2x2_a100.hlo all-gather-start.1 maps "
    "to [fusion, bitcast] instead of [parameter, fusion, bitcast]",
)
def collective_overlap_skips_parameters(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = {n for c in module for i in c if i.opcode == "fusion" for n in i.called_computations}
    out: dict[str, list[str]] = {}
    for computation in module:
        if computation.name in fused:
            continue
        for instruction in computation:
            if instruction.opcode in _COLLECTIVES:
                out[instruction.name] = []
        for index, start, instructions in _rt_async_starts(computation):
            done = start.opcode[:-6] + "-done"
            for later in range(index + 1, len(instructions)):
                if (
                    instructions[later].opcode == done
                    and start.name in instructions[later].operands
                ):
                    out[start.name] = [
                        i.opcode
                        for i in instructions[index + 1 : later]
                        if i.opcode not in ("parameter", "constant")
                    ]
                    break
    return out


@wrong(
    "collective_overlap",
    why="'pair every *-start with the done that reads it': pairs the n-th start of a kind with "
    "the n-th done of that kind; wrong when two all-gathers are in flight and finish in the "
    "other order (start.a, start.b, done(b), done(a): a gets the list that belongs to b)",
)
def collective_overlap_nth_pairs(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = {n for c in module for i in c if i.opcode == "fusion" for n in i.called_computations}
    out: dict[str, list[str]] = {}
    for computation in module:
        if computation.name in fused:
            continue
        instructions = list(computation)
        for instruction in instructions:
            if instruction.opcode in _COLLECTIVES:
                out[instruction.name] = []
        for kind in _COLLECTIVES:
            starts = [k for k, i in enumerate(instructions) if i.opcode == kind + "-start"]
            dones = [k for k, i in enumerate(instructions) if i.opcode == kind + "-done"]
            for s, d in zip(starts, dones):
                out[instructions[s].name] = [i.opcode for i in instructions[s + 1 : d]]
    return out


@wrong(
    "collective_overlap",
    why="'of every computation that is not a fused computation': reads only ENTRY; misses "
    "collectives in a while body or a called computation (e.g. an all-reduce inside a "
    "scan's body, or an async all-gather pair in a call)",
)
def collective_overlap_entry_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out: dict[str, list[str]] = {}
    instructions = list(module.entry)
    for index, instruction in enumerate(instructions):
        if instruction.opcode in _COLLECTIVES:
            out[instruction.name] = []
        elif instruction.opcode.endswith("-start") and instruction.opcode[:-6] in _COLLECTIVES:
            done = instruction.opcode[:-6] + "-done"
            for later in range(index + 1, len(instructions)):
                if (
                    instructions[later].opcode == done
                    and instruction.name in instructions[later].operands
                ):
                    out[instruction.name] = [i.opcode for i in instructions[index + 1 : later]]
                    break
    return out


# ---- allreduce_elements (predict) -----------------------------------------------------------

_RT_NAMES = {"float32": "f32", "bfloat16": "bf16"}


@wrong(
    "allreduce_elements",
    why="'HLO dtype name (f32, bf16, f16)': a table of the two dtypes of the recordings with "
    "f32 as the fallback; float16 params are reported under 'f32' instead of 'f16'",
)
def allreduce_elements_two_dtypes(params) -> dict[str, int]:
    counts: Counter = Counter()
    for leaf in jax.tree.leaves(params):
        counts[_RT_NAMES.get(jnp.dtype(leaf.dtype).name, "f32")] += math.prod(leaf.shape)
    return dict(counts)


@wrong(
    "allreduce_elements",
    why="'a pytree of arrays or ShapeDtypeStructs': walks only a flat dict's values (the "
    "recordings' params are flat dicts); a nested pytree such as {'enc': {'w': f32[8,4]}, "
    "'b': f32[4]} loses the nested leaves (answers {'f32': 4}, not 36)",
)
def allreduce_elements_flat_dict(params) -> dict[str, int]:
    counts: Counter = Counter()
    values = params.values() if isinstance(params, dict) else params
    for leaf in values:
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            name = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[
                jnp.dtype(leaf.dtype).name
            ]
            counts[name] += math.prod(leaf.shape)
    return dict(counts)


@wrong(
    "allreduce_elements",
    why="'elements all-reduced in that dtype': counts rows x columns (shape[0] * shape[-1]), "
    "right for the 1-D and 2-D params of the recordings, wrong for a 3-D or 4-D param (a conv "
    "kernel f32[3,3,8,16] counts 48 instead of 1152)",
)
def allreduce_elements_matrix_only(params) -> dict[str, int]:
    counts: Counter = Counter()
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    for leaf in jax.tree.leaves(params):
        shape = tuple(leaf.shape)
        size = shape[0] * shape[-1] if len(shape) >= 2 else (shape[0] if shape else 1)
        counts[names.get(jnp.dtype(leaf.dtype).name, jnp.dtype(leaf.dtype).name)] += size
    return dict(counts)


# ---- decide tasks ---------------------------------------------------------------------------


@wrong(
    "gather_free_specs",
    why="'needs no collective at all' is met, but by replicating w on every device "
    "(P(None, None)): each device holds all of w (4x the memory of P(None, 'model')) where "
    "the README asks to check with memory_analysis what a spec costs",
)
def gather_free_specs_replicate_w() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec(None, None)


@wrong(
    "fused_dense",
    why="'the same values as handwritten_gelu_dense' (the tanh approximation): uses the exact "
    "erf gelu, which cuBLAS-Lt has no epilogue for and which differs by up to ~5e-4 (f32) "
    "from the tanh form, e.g. at h = -2.5",
)
def fused_dense_erf_gelu(x, w, b):
    return jax.nn.gelu(x @ w + b, approximate=False)
