"""Plausible wrong answers for phase 12, and correct answers spelled differently."""

import json
import math
import re
from collections import Counter

import jax
import numpy as np
from jax.sharding import PartitionSpec

from kata_harness.decoys import accepted, decoy
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions

_GPU_KIND = re.compile(r'"fusion_backend_config":\{[^{}]*?"kind":"([^"]+)"')


@decoy(
    "fusion_kinds",
    caught_by=["test_fusion_kinds", "test_fusion_kinds_differ_per_target"],
    why="counts kind= only: every Triton, cuDNN-free custom fusion reads as plain kCustom",
)
def fusion_kinds_without_custom_kind(hlo_text):
    module = parse_hlo(hlo_text)
    return dict(
        Counter(
            i.attribute("kind") or ""
            for c in module.computations
            for i in c
            if i.opcode == "fusion"
        )
    )


@decoy(
    "fusion_kinds",
    caught_by=["test_fusion_kinds"],
    why="reads the GPU spelling fusion_backend_config only, so CPU's YNN fusions lose their kind",
)
def fusion_kinds_gpu_spelling_only(hlo_text):
    module = parse_hlo(hlo_text)
    counts: Counter[str] = Counter()
    for computation in module.computations:
        for i in computation:
            if i.opcode == "fusion":
                custom = _GPU_KIND.search(i.attribute("backend_config") or "")
                kind = i.attribute("kind") or ""
                counts[f"{kind}({custom.group(1)})" if custom else kind] += 1
    return dict(counts)


@accepted("fusion_kinds", why="xla_inspect.query.fusions already reads both spellings")
def fusion_kinds_from_query(hlo_text):
    return dict(Counter(f.label for f in fusions(parse_hlo(hlo_text))))


@decoy(
    "reduction_kinds",
    caught_by=["test_reduction_kinds", "test_reduction_kinds_a_gpu_reduce_is_not_always_kinput"],
    why="counts fusions named *reduce* by kind: misses Triton softmax fusions, counts a fusion "
    "with two reduces once",
)
def reduction_kinds_by_fusion_name(hlo_text):
    return dict(Counter(f.label for f in fusions(parse_hlo(hlo_text)) if "reduce" in f.name))


@decoy(
    "reduction_kinds",
    caught_by=["test_reduction_kinds", "test_reduction_kinds_a_gpu_reduce_is_not_always_kinput"],
    why="believes the lesson's headline: every GPU reduction is a kInput fusion",
)
def reduction_kinds_all_kinput(hlo_text):
    module = parse_hlo(hlo_text)
    n = sum(i.opcode == "reduce" for c in module.computations for i in c)
    return {"kInput": n} if n else {}


def _config(instruction):
    raw = instruction.attribute("backend_config")
    return json.loads(raw) if raw and raw.startswith("{") else {}


@decoy(
    "library_epilogues",
    caught_by=["test_library_epilogues"],
    why="reads cuBLAS epilogues only: the cuDNN convolutions' fused activations are missing",
)
def library_epilogues_cublas_only(hlo_text):
    found = {}
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            config = _config(i) if i.opcode == "custom-call" else {}
            if "gemm_backend_config" in config:
                found[i.name] = config["gemm_backend_config"]["epilogue"]
    return found


@decoy(
    "library_epilogues",
    caught_by=["test_library_epilogues", "test_library_epilogues_follow_the_activation"],
    why="keys by custom_call_target: calls to the same library collapse into one entry",
)
def library_epilogues_by_target(hlo_text):
    found = {}
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            config = _config(i) if i.opcode == "custom-call" else {}
            target = (i.attribute("custom_call_target") or "").strip('"')
            if "gemm_backend_config" in config:
                found[target] = config["gemm_backend_config"]["epilogue"]
            elif "cudnn_conv_backend_config" in config:
                found[target] = config["cudnn_conv_backend_config"]["activation_mode"]
    return found


def _dims(shape_text):
    first = shape_text.strip("(").split("{")[0]
    inner = first[first.index("[") + 1 : first.index("]")]
    return [int(d) for d in inner.split(",")] if inner else []


def _dot_flops(hlo_text, factor):
    total = 0
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            if i.opcode != "dot":
                continue
            contracting = [
                int(d) for d in re.findall(r"\d+", i.attribute("lhs_contracting_dims") or "")
            ]
            lhs = computation.instruction(i.operands[0])
            assert lhs is not None
            k = math.prod(_dims(lhs.shape)[d] for d in contracting)
            total += factor * math.prod(_dims(i.shape)) * k
    return total


@decoy(
    "gemm_flops",
    caught_by=["test_gemm_flops", "test_gemm_flops_do_not_depend_on_the_lowering"],
    why="counts dot instructions only: with Triton off the GEMMs are cuBLAS custom calls",
)
def gemm_flops_dots_only(hlo_text):
    return _dot_flops(hlo_text, 2)


@decoy(
    "gemm_flops",
    caught_by=["test_gemm_flops"],
    why="counts multiply-adds, not flops (a multiply-add is two)",
)
def gemm_flops_macs(hlo_text):
    total = _dot_flops(hlo_text, 1)
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            config = _config(i) if i.opcode == "custom-call" else {}
            if "gemm_backend_config" in config:
                numbers = config["gemm_backend_config"]["dot_dimension_numbers"]
                lhs = computation.instruction(i.operands[0])
                assert lhs is not None
                k = math.prod(
                    _dims(lhs.shape)[int(d)] for d in numbers["lhs_contracting_dimensions"]
                )
                total += math.prod(_dims(i.shape)) * k
    return total


_PLAIN = {"all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all"}


def _overlap(hlo_text, keep_sync, include_done):
    found = {}
    for computation in parse_hlo(hlo_text).computations:
        order = list(computation)
        for position, i in enumerate(order):
            if i.opcode in _PLAIN and keep_sync:
                found[i.name] = []
            elif i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in _PLAIN:
                end = next(
                    k for k in range(position + 1, len(order)) if i.name in order[k].operands
                )
                found[i.name] = [j.opcode for j in order[position + 1 : end + include_done]]
    return found


@decoy(
    "collective_overlap",
    caught_by=["test_collective_overlap", "test_collective_overlap_sync_and_async_side_by_side"],
    why="only start/done pairs count as collectives: the synchronous all-gathers are missing",
)
def collective_overlap_pairs_only(hlo_text):
    return _overlap(hlo_text, keep_sync=False, include_done=False)


@decoy(
    "collective_overlap",
    caught_by=["test_collective_overlap"],
    why="lists the done as if it ran while the collective was in flight",
)
def collective_overlap_with_done(hlo_text):
    return _overlap(hlo_text, keep_sync=True, include_done=True)


@decoy(
    "overlap_options",
    caught_by=["test_overlap_options_overlap_the_gathers"],
    why="turns on the latency-hiding scheduler: the gathers stay combined into one synchronous op",
)
def overlap_options_latency_hiding():
    return {"xla_gpu_enable_latency_hiding_scheduler": True}


@decoy(
    "overlap_options",
    caught_by=["test_overlap_options_overlap_the_gathers"],
    why="trusts the defaults to overlap collectives with compute",
)
def overlap_options_defaults():
    return {}


@decoy(
    "overlap_options",
    caught_by=["test_overlap_options_overlap_the_gathers"],
    why="stops the combining only: one collective in flight at a time, so most gathers stay "
    "synchronous (1 of 6 overlapped for 6 layers of 64)",
)
def overlap_options_uncombined_only():
    return {"xla_gpu_all_gather_combine_threshold_bytes": 0}


@decoy(
    "overlap_options",
    caught_by=["test_overlap_options_overlap_the_gathers"],
    why="allows many collectives in flight, but the combiner still makes one gather of them all",
)
def overlap_options_limit_only():
    return {"xla_gpu_experimental_parallel_collective_overlap_limit": 8}


@accepted("overlap_options", why="a threshold below one weight's bytes stops the combining too")
def overlap_options_tiny_threshold():
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 1024,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 6,
    }


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_need_no_collective"],
    why="splits both operands like the output: x's columns and w's rows must be gathered",
)
def gather_free_specs_like_the_output():
    return PartitionSpec("data", "model"), PartitionSpec("data", "model")


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_need_no_collective"],
    why="splits K over 'model' on both sides: no gather, but the partial products are summed "
    "by a reduce-scatter",
)
def gather_free_specs_split_k():
    return PartitionSpec("data", "model"), PartitionSpec("model", None)


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_memory_budget"],
    why="replicates both operands: no collective, but every device holds all of x and w",
)
def gather_free_specs_replicated():
    return PartitionSpec(), PartitionSpec()


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_memory_budget"],
    why="splits x by rows and replicates w: no collective, but every device holds all of w",
)
def gather_free_specs_whole_w():
    return PartitionSpec("data", None), PartitionSpec()


@accepted("gather_free_specs", why="a PartitionSpec may leave trailing dimensions out")
def gather_free_specs_short():
    return PartitionSpec("data"), PartitionSpec(None, "model")


@decoy(
    "fused_dense",
    caught_by=["test_fused_dense_needs_fewer_kernels"],
    why="exact (erf) gelu: close in value, but cuBLAS-Lt has no erf epilogue",
)
def fused_dense_erf(x, w, b):
    return jax.nn.gelu(x @ w + b, approximate=False)


@decoy(
    "fused_dense",
    caught_by=["test_fused_dense_values"],
    why="relu fuses as BIAS_RELU but is another function",
)
def fused_dense_relu(x, w, b):
    return jax.nn.relu(x @ w + b)


@accepted("fused_dense", why="jax.nn.gelu approximates with tanh by default")
def fused_dense_default_gelu(x, w, b):
    return jax.nn.gelu(b + x @ w)


@decoy(
    "allreduce_elements",
    caught_by=["test_allreduce_elements", "test_allreduce_elements_of_arrays"],
    why="predicts bytes, not elements",
)
def allreduce_elements_bytes(params):
    counts: Counter[str] = Counter()
    for leaf in jax.tree_util.tree_leaves(params):
        counts[{"float32": "f32", "bfloat16": "bf16"}[np.dtype(leaf.dtype).name]] += (
            math.prod(leaf.shape) * np.dtype(leaf.dtype).itemsize
        )
    return dict(counts)


@decoy(
    "allreduce_elements",
    caught_by=["test_allreduce_elements", "test_allreduce_elements_of_arrays"],
    why="keys by NumPy's dtype names (float32), not HLO's (f32)",
)
def allreduce_elements_numpy_names(params):
    counts: Counter[str] = Counter()
    for leaf in jax.tree_util.tree_leaves(params):
        counts[np.dtype(leaf.dtype).name] += math.prod(leaf.shape)
    return dict(counts)
