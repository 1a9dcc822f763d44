"""Phase 12 reference: reading the HLO XLA makes for NVIDIA GPUs."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import jax
from jax.sharding import PartitionSpec

from xla_inspect.parse import parse_hlo
from xla_inspect.query import fused_computation_names, fusions

_CUSTOM_KIND = re.compile(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"')
_COLLECTIVES = {"all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all"}
_LIBRARIES = ("__cublas$", "__cudnn$")


def _label(instruction) -> str:
    kind = instruction.attribute("kind") or ""
    custom = _CUSTOM_KIND.search(instruction.attribute("backend_config") or "")
    return f"{kind}({custom.group(1)})" if custom else kind


def fusion_kinds(hlo_text: str) -> dict[str, int]:
    # Every fusion, nested ones too: a Triton GEMM fusion holds fusions of its own operands.
    module = parse_hlo(hlo_text)
    return dict(Counter(_label(i) for c in module.computations for i in c if i.opcode == "fusion"))


def reduction_kinds(hlo_text: str) -> dict[str, int]:
    # A reduce belongs to the kernel that runs it: the outermost fusion whose body reaches it.
    module = parse_hlo(hlo_text)
    inside = fused_computation_names(module)
    counts: Counter[str] = Counter()
    for fusion in fusions(module):
        if fusion.computation not in inside:
            counts[_label_of(module, fusion)] += fusion.opcodes.get("reduce", 0)
    for computation in module.computations:
        if computation.name not in inside:
            counts["unfused"] += sum(i.opcode == "reduce" for i in computation)
    return {label: n for label, n in counts.items() if n}


def _label_of(module, fusion) -> str:
    holder = module.computation(fusion.computation)
    assert holder is not None
    instruction = holder.instruction(fusion.name)
    assert instruction is not None
    return _label(instruction)


def _config(instruction) -> dict:
    # A library call's backend_config is JSON; a typed-FFI custom call (cuSOLVER, __gpu$TopK)
    # prints an MLIR dictionary ({lower = true}) instead.
    try:
        value = json.loads(instruction.attribute("backend_config") or "")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def library_epilogues(hlo_text: str) -> dict[str, str]:
    # cuBLAS-Lt records its fused epilogue, cuDNN its fused activation, in the backend_config.
    found = {}
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            target = (i.attribute("custom_call_target") or "").strip('"')
            if i.opcode != "custom-call" or not target.startswith(_LIBRARIES):
                continue
            config = _config(i)
            # proto3 JSON may leave a default out: DEFAULT, kNone
            if target.startswith("__cublas$"):
                found[i.name] = config.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            else:
                conv = config.get("cudnn_conv_backend_config", {})
                found[i.name] = conv.get("activation_mode", "kNone")
    return found


def _dims(shape_text: str) -> list[int]:
    first = shape_text.strip("(").split("{")[0]
    inner = first[first.index("[") + 1 : first.index("]")]
    return [int(d) for d in inner.split(",")] if inner else []


def gemm_flops(hlo_text: str) -> int:
    # 2 * (output elements) * (contracted size) per GEMM, be it a dot in a Triton fusion or a
    # cuBLAS call (whose dimension numbers live in its backend_config): cost_analysis is None.
    total = 0
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            if i.opcode == "dot":
                contracting = [
                    int(d) for d in re.findall(r"\d+", i.attribute("lhs_contracting_dims") or "")
                ]
            elif i.opcode == "custom-call" and "gemm_backend_config" in _config(i):
                numbers = _config(i)["gemm_backend_config"]["dot_dimension_numbers"]
                contracting = [int(d) for d in numbers["lhs_contracting_dimensions"]]
            else:
                continue
            lhs = computation.instruction(i.operands[0])
            assert lhs is not None
            lhs_dims = _dims(lhs.shape)
            k = math.prod(lhs_dims[d] for d in contracting)
            total += 2 * math.prod(_dims(i.shape)) * k
    return total


def collective_overlap(hlo_text: str) -> dict[str, list[str]]:
    # In a scheduled module the printed order is the execution order: what sits between a
    # start and its done runs while the collective is in flight; a synchronous one has nothing.
    # An async-start whose wrapped computation holds a collective is that collective's start
    # (XLA prints it as reduce-scatter-start, ...); the wrapped computation is part of it.
    module = parse_hlo(hlo_text)
    wrapped = {
        name
        for c in module.computations
        for i in c
        if i.opcode == "async-start"
        for name in i.called_computations
    }
    inside = fused_computation_names(module) | wrapped
    found: dict[str, list[str]] = {}
    for computation in module.computations:
        if computation.name in inside:
            continue
        order = list(computation)
        for position, i in enumerate(order):
            if i.opcode in _COLLECTIVES:
                found[i.name] = []
            elif (
                i.opcode.removesuffix("-start") in _COLLECTIVES and i.opcode.endswith("-start")
            ) or _wraps_collective(module, i):
                found[i.name] = _in_flight(order, position)
    return found


def _in_flight(order, position: int) -> list[str]:
    # The done reads the start, or the last of its async-updates (start -> update -> done):
    # the updates are steps of the same collective, not work scheduled beside it.
    chain, between = {order[position].name}, []
    for j in order[position + 1 :]:
        if chain.intersection(j.operands) and j.opcode.endswith(("-update", "-done")):
            if j.opcode.endswith("-done"):
                return between
            chain.add(j.name)
        else:
            between.append(j.opcode)
    raise ValueError(f"{order[position].name}: no done reads it")


def _wraps_collective(module, instruction) -> bool:
    if instruction.opcode != "async-start":
        return False
    called = (module.computation(name) for name in instruction.called_computations)
    return any(c is not None and any(j.opcode in _COLLECTIVES for j in c) for c in called)


def overlap_options() -> dict[str, bool | int | str]:
    # The GPU combiner merges every weight's all-gather into one, which nothing can overlap;
    # uncombined, each later layer's gather can run while an earlier layer's GEMM computes, once
    # the scheduler may keep more than one collective in flight (its default limit is 1). Small
    # weights' gathers all start at once, so a stack of 16 layers needs 15 in flight.
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }


def gather_free_specs() -> tuple[PartitionSpec, PartitionSpec]:
    # Output block (i, j) needs rows i of x and columns j of w, all of K: split x by rows over
    # "data" and w by columns over "model" and every device already holds them.
    return PartitionSpec("data", None), PartitionSpec(None, "model")


def fused_dense(x, w, b) -> jax.Array:
    # cuBLAS-Lt has a GELU epilogue for the tanh approximation only; jax.nn.gelu spells it so
    # that XLA's GEMM rewriter recognises it.
    return jax.nn.gelu(x @ w + b, approximate=True)


def allreduce_elements(params) -> dict[str, int]:
    # Data-parallel gradients of one dtype are concatenated into one flat all-reduce.
    counts: Counter[str] = Counter()
    for leaf in jax.tree_util.tree_leaves(params):
        # the dtype JAX runs it in: without x64, a NumPy float64 array is f32
        name = jax.dtypes.canonicalize_dtype(leaf.dtype).name
        counts[_HLO_DTYPES[name]] += math.prod(leaf.shape)
    # An empty gradient has nothing to all-reduce: a dtype holding only those gets no all-reduce.
    return {dtype: count for dtype, count in counts.items() if count}


_HLO_DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}
