"""Plausible wrong answers for phase 12, and correct answers spelled differently."""

import json
import math
import re
from collections import Counter

import jax
import numpy as np
from jax.core import Tracer
from jax.experimental import io_callback
from jax.sharding import PartitionSpec

from kata_harness.decoys import accepted, decoy
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fused_computation_names, fusions

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


def _reduce_counts(hlo_text, is_reduce, outermost):
    module = parse_hlo(hlo_text)
    caller = {}
    for computation in module.computations:
        for i in computation:
            if i.opcode == "fusion":
                for name in i.called_computations:
                    caller[name] = (computation.name, i)
    counts: Counter[str] = Counter()
    for computation in module.computations:
        for i in computation:
            if not is_reduce(i.opcode):
                continue
            name, holder = computation.name, None
            while name in caller:
                name, holder = caller[name]
                if not outermost:
                    break
            counts["unfused" if holder is None else _fusion_label(holder)] += 1
    return dict(counts)


def _fusion_label(instruction):
    raw = instruction.attribute("backend_config") or ""
    custom = re.search(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"', raw)
    kind = instruction.attribute("kind") or ""
    return f"{kind}({custom.group(1)})" if custom else kind


@decoy(
    "reduction_kinds",
    caught_by=["test_reduction_kinds_outermost_fusion_and_only_reduce"],
    why="counts a reduce under the fusion that calls its computation directly: a kLoop fusion "
    "nested in a kInput or Triton fusion is not the kernel that runs it",
)
def reduction_kinds_innermost_fusion(hlo_text):
    return _reduce_counts(hlo_text, lambda op: op == "reduce", outermost=False)


@decoy(
    "reduction_kinds",
    caught_by=["test_reduction_kinds", "test_reduction_kinds_outermost_fusion_and_only_reduce"],
    why="any opcode containing 'reduce' counts: all-reduce, reduce-scatter, reduce-window and "
    "reduce-precision are not reduces",
)
def reduction_kinds_any_reduce_opcode(hlo_text):
    return _reduce_counts(hlo_text, lambda op: "reduce" in op, outermost=True)


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


@decoy(
    "library_epilogues",
    caught_by=["test_library_epilogues", "test_library_epilogues_follow_the_activation"],
    why="finds library calls by the names XLA gave them (cublas-lt-matmul*, cudnn-conv*), not "
    "by custom_call_target: renamed, the module has none",
)
def library_epilogues_by_instruction_name(hlo_text):
    found = {}
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            config = _config(i) if i.opcode == "custom-call" else {}
            if i.name.startswith("cublas"):
                found[i.name] = config["gemm_backend_config"]["epilogue"]
            elif i.name.startswith("cudnn"):
                found[i.name] = config["cudnn_conv_backend_config"]["activation_mode"]
    return found


@decoy(
    "library_epilogues",
    caught_by=["test_library_epilogues_legacy_cublas_gemm"],
    why="takes only cuBLAS-Lt targets (__cublas$lt$...) for cuBLAS: the legacy __cublas$gemm "
    "call (f64, or cuBLAS-Lt off) is left out",
)
def library_epilogues_lt_only(hlo_text):
    found = {}
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            target = (i.attribute("custom_call_target") or "").strip('"')
            config = _config(i) if i.opcode == "custom-call" else {}
            if target.startswith("__cublas$lt$"):
                found[i.name] = config["gemm_backend_config"]["epilogue"]
            elif target.startswith("__cudnn$"):
                found[i.name] = config["cudnn_conv_backend_config"]["activation_mode"]
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


def _library_gemm_flops(hlo_text, last_dim):
    total = 0
    for computation in parse_hlo(hlo_text).computations:
        for i in computation:
            config = _config(i) if i.opcode == "custom-call" else {}
            if "gemm_backend_config" not in config:
                continue
            lhs = computation.instruction(i.operands[0])
            assert lhs is not None
            numbers = config["gemm_backend_config"]["dot_dimension_numbers"]
            contracting = [-1] if last_dim else numbers["lhs_contracting_dimensions"]
            k = math.prod(_dims(lhs.shape)[int(d)] for d in contracting)
            total += 2 * math.prod(_dims(i.shape)) * k
    return total


@decoy(
    "gemm_flops",
    caught_by=["test_gemm_flops_legacy_cublas_entry_and_loop_dots"],
    why="takes K as the lhs's last dimension for a cuBLAS call (row-major thinking), not its "
    "lhs_contracting_dimensions: every recording contracts the last",
)
def gemm_flops_cublas_last_dim(hlo_text):
    return _dot_flops(hlo_text, 2) + _library_gemm_flops(hlo_text, last_dim=True)


@decoy(
    "gemm_flops",
    caught_by=["test_gemm_flops_legacy_cublas_entry_and_loop_dots"],
    why="counts dots inside fused computations only (where XLA:GPU puts them): a dot in ENTRY "
    "or a while body is missed",
)
def gemm_flops_fused_dots_only(hlo_text):
    module = parse_hlo(hlo_text)
    inside = fused_computation_names(module)
    total = _library_gemm_flops(hlo_text, last_dim=False)
    for computation in module.computations:
        if computation.name not in inside:
            continue
        for i in computation:
            if i.opcode == "dot":
                contracting = re.findall(r"\d+", i.attribute("lhs_contracting_dims") or "")
                lhs = computation.instruction(i.operands[0])
                assert lhs is not None
                k = math.prod(_dims(lhs.shape)[int(d)] for d in contracting)
                total += 2 * math.prod(_dims(i.shape)) * k
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


def _sync_and_starts(computation):
    order = list(computation)
    found = {i.name: [] for i in order if i.opcode in _PLAIN}
    starts = [
        (k, i)
        for k, i in enumerate(order)
        if i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in _PLAIN
    ]
    return order, found, starts


@decoy(
    "collective_overlap",
    caught_by=["test_collective_overlap_out_of_order_and_outside_entry"],
    why="reads ENTRY only: collectives in a while body or a called computation are missing",
)
def collective_overlap_entry_only(hlo_text):
    order, found, starts = _sync_and_starts(parse_hlo(hlo_text).entry)
    for k, start in starts:
        end = next(e for e in range(k + 1, len(order)) if start.name in order[e].operands)
        found[start.name] = [j.opcode for j in order[k + 1 : end]]
    return found


@decoy(
    "collective_overlap",
    caught_by=["test_collective_overlap_out_of_order_and_outside_entry"],
    why="pairs each start with the next done of its kind: two gathers in flight that finish in "
    "the other order swap their lists",
)
def collective_overlap_next_done(hlo_text):
    found = {}
    module = parse_hlo(hlo_text)
    inside = fused_computation_names(module)
    for computation in module.computations:
        if computation.name in inside:
            continue
        order, sync, starts = _sync_and_starts(computation)
        found |= sync
        for k, start in starts:
            done = start.opcode.replace("-start", "-done")
            end = next(e for e in range(k + 1, len(order)) if order[e].opcode == done)
            found[start.name] = [j.opcode for j in order[k + 1 : end]]
    return found


@decoy(
    "collective_overlap",
    caught_by=["test_collective_overlap_async_start_wrapping_a_collective"],
    why="recognises only <collective>-start opcodes: a generic async-start wrapping a "
    "reduce-scatter or all-reduce is missed, and its wrapped collective reads as synchronous",
)
def collective_overlap_suffix_starts_only(hlo_text):
    found = {}
    module = parse_hlo(hlo_text)
    inside = fused_computation_names(module)
    for computation in module.computations:
        if computation.name in inside:
            continue
        order, sync, starts = _sync_and_starts(computation)
        found |= sync
        for k, start in starts:
            end = next(e for e in range(k + 1, len(order)) if start.name in order[e].operands)
            found[start.name] = [j.opcode for j in order[k + 1 : end]]
    return found


@decoy(
    "collective_overlap",
    caught_by=["test_collective_overlap", "test_collective_overlap_sync_and_async_side_by_side"],
    why="pairs a start with the done of the same name (all-gather-start.1, all-gather-done.1): "
    "names are XLA's choice; the done that reads the start is its pair",
)
def collective_overlap_done_by_name(hlo_text):
    found = {}
    module = parse_hlo(hlo_text)
    inside = fused_computation_names(module)
    for computation in module.computations:
        if computation.name in inside:
            continue
        order, sync, starts = _sync_and_starts(computation)
        found |= sync
        for k, start in starts:
            name = start.name.replace("-start", "-done")
            end = next((e for e in range(k + 1, len(order)) if order[e].name == name), k + 1)
            found[start.name] = [j.opcode for j in order[k + 1 : end]]
    return found


@decoy(
    "overlap_options",
    caught_by=["test_overlap_options_overlap_the_gathers"],
    why="turns on the latency-hiding scheduler: the gathers stay combined into one synchronous op",
)
def overlap_options_latency_hiding():
    return {"xla_gpu_enable_latency_hiding_scheduler": True}


@decoy(
    "overlap_options",
    caught_by=[
        "test_overlap_options_overlap_the_gathers",
        "test_overlap_options_are_flags_xla_accepts",
    ],
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


@decoy(
    "overlap_options",
    caught_by=["test_overlap_options_are_flags_xla_accepts"],
    why="xla_gpu_enable_async_all_gather was an XLA flag once; today's XLA has no such option "
    "(and refuses the compile), whatever the guides of older releases say",
)
def overlap_options_removed_flag():
    return {
        "xla_gpu_enable_async_all_gather": True,
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
    }


@accepted(
    "overlap_options",
    why="a threshold below the smallest weight's bytes (2 KiB) stops the combining too, and a "
    "limit above the deepest stack's 15 overlappable gathers keeps them all in flight",
)
def overlap_options_tiny_threshold():
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 1024,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 20,
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


@decoy(
    "fused_dense",
    caught_by=["test_fused_dense_keeps_the_gemm_in_the_program"],
    why="computes the layer in NumPy through jax.io_callback: the right values, but no GEMM "
    "left in the program for cuBLAS (and no GPU compile without a GPU)",
)
def fused_dense_on_host(x, w, b):
    def on_host(xv, wv, bv):
        h = np.asarray(xv, np.float32) @ np.asarray(wv, np.float32) + np.asarray(bv, np.float32)
        gelu = 0.5 * h * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (h + 0.044715 * h**3)))
        return gelu.astype(np.result_type(xv, wv, bv))

    shape = jax.ShapeDtypeStruct((x.shape[0], w.shape[1]), jax.numpy.result_type(x, w, b))
    return io_callback(on_host, shape, x, w, b)


@decoy(
    "fused_dense",
    caught_by=["test_fused_dense_values"],
    why="a GEMM accumulated and returned in float32: the tanh gelu fuses, but a bf16 layer "
    "gives a float32 result, not the hand-written layer's bf16",
)
def fused_dense_float32_result(x, w, b):
    h = jax.numpy.matmul(x, w, preferred_element_type=jax.numpy.float32)
    return jax.nn.gelu(h + b.astype(jax.numpy.float32), approximate=True)


@decoy(
    "fused_dense",
    caught_by=["test_fused_dense_values"],
    why="the tanh gelu when traced (jit, export), the exact erf gelu when called directly on "
    "arrays: the layer's values hold under jax.jit only",
)
def fused_dense_traced_only(x, w, b):
    approximate = isinstance(x, Tracer)
    return jax.nn.gelu(x @ w + b, approximate=approximate)


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


_HLO = {"float64": "f32", "float32": "f32", "bfloat16": "bf16", "float16": "f16"}


@decoy(
    "allreduce_elements",
    caught_by=["test_allreduce_elements_of_random_pytrees"],
    why="walks a flat dict's (or list's) values only: the leaves of nested dicts, lists and "
    "tuples are lost",
)
def allreduce_elements_top_level_only(params):
    counts: Counter[str] = Counter()
    for leaf in params.values() if isinstance(params, dict) else params:
        if hasattr(leaf, "shape"):
            counts[_HLO[np.dtype(leaf.dtype).name]] += math.prod(leaf.shape)
    return dict(counts)


def _walked(tree):
    """The leaves of dicts, lists and tuples, walked by hand."""
    if isinstance(tree, dict):
        return [leaf for child in tree.values() for leaf in _walked(child)]
    if isinstance(tree, (list, tuple)):
        return [leaf for child in tree for leaf in _walked(child)]
    return [tree]


@decoy(
    "allreduce_elements",
    caught_by=["test_allreduce_elements_of_random_pytrees"],
    why="walks dicts, lists and tuples by hand: a None (an empty subtree) and a registered "
    "pytree node (a flax or equinox module) are taken for parameters",
)
def allreduce_elements_hand_walked(params):
    counts: Counter[str] = Counter()
    for leaf in _walked(params):
        counts[_HLO[np.dtype(leaf.dtype).name]] += math.prod(leaf.shape)
    return {k: v for k, v in counts.items() if v}


@decoy(
    "allreduce_elements",
    caught_by=["test_allreduce_elements_of_random_pytrees"],
    why="counts rows times columns (first and last dimension): right for matrices, vectors "
    "and scalars, wrong for a 3-D or 4-D parameter such as a conv kernel",
)
def allreduce_elements_first_and_last_dims(params):
    counts: Counter[str] = Counter()
    for leaf in jax.tree_util.tree_leaves(params):
        shape = leaf.shape or (1,)
        counts[_HLO[np.dtype(leaf.dtype).name]] += shape[0] * shape[-1]
    return dict(counts)


@decoy(
    "allreduce_elements",
    caught_by=["test_allreduce_elements_of_random_pytrees"],
    why="knows f32 and bf16 (the recordings' dtypes) and files everything else under f32: "
    "float16 gradients are all-reduced in f16",
)
def allreduce_elements_f16_as_f32(params):
    counts: Counter[str] = Counter()
    for leaf in jax.tree_util.tree_leaves(params):
        name = {"bfloat16": "bf16"}.get(np.dtype(leaf.dtype).name, "f32")
        counts[name] += math.prod(leaf.shape)
    return dict(counts)
