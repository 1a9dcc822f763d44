"""Red-team wrong answers for phase 12, round 7, written from the contract only."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt7_COLL = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")


# ---- shared helpers (correct except where a decoy passes a switch) ----------------------------


def _rt7_config(ins):
    text = ins.attribute("backend_config")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _rt7_json_or_none(ins):
    text = ins.attribute("backend_config")
    if not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _rt7_label(ins, always_custom=False):
    kind = ins.attribute("kind") or "?"
    cfg = _rt7_config(ins)
    for key in ("fusion_config", "fusion_backend_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            if always_custom:
                return f"kCustom({sub['kind']})"
            return f"{kind}({sub['kind']})"
    return kind


def _rt7_fused_names(module):
    names = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                names.update(ins.called_computations)
    return names


def _rt7_wrapped_names(module):
    names = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                names.update(ins.called_computations)
    return names


def _rt7_dims(shape_text):
    m = re.match(r"\s*\(?\s*\w+\[([^\]]*)\]", shape_text or "")
    if not m or not m.group(1).strip():
        return []
    return [int(d.strip().lstrip("<=")) for d in m.group(1).split(",")]


def _rt7_all_array_dims(shape_text):
    """Every array of a (possibly tuple) shape, as a list of dims lists."""
    out = []
    for m in re.finditer(r"\b[a-z][a-z0-9]*\[([^\]]*)\]", shape_text or ""):
        body = m.group(1).strip()
        out.append([int(d.strip().lstrip("<=")) for d in body.split(",")] if body else [])
    return out


def _rt7_ints(text):
    return [int(v) for v in re.findall(r"\d+", text or "")]


def _rt7_operand_name(text):
    return text.split()[-1].lstrip("%")


# ---- task 1: fusion_kinds ---------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="any fusion whose backend_config names a kind is labelled kCustom(<kind>), the printed "
    "kind= is not read for them ('a kind in the backend_config means a custom fusion'); the "
    "contract keeps the printed kind: wrong on handwritten FUSION_SPELLINGS / a scan's "
    "dynamic-memcpy fusion, where kind=kLoop with __dynamic_memcpy must be "
    "kLoop(__dynamic_memcpy), not kCustom(__dynamic_memcpy)",
)
def _rt7_fusion_kinds_backend_means_custom(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts = Counter()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                counts[_rt7_label(ins, always_custom=True)] += 1
    return dict(counts)


# ---- task 2: reduction_kinds ------------------------------------------------------------------


def _rt7_reduction_counts(module, keep_zero_kinds=False):
    by_name = {c.name: c for c in module.computations}
    fused = _rt7_fused_names(module)
    counts = Counter()
    kinds_seen = set()

    def reduces_under(comp_name, seen):
        if comp_name in seen or comp_name not in by_name:
            return 0
        seen.add(comp_name)
        n = 0
        for ins in by_name[comp_name].instructions:
            if ins.opcode == "reduce":
                n += 1
            elif ins.opcode == "fusion":
                for c in ins.called_computations:
                    n += reduces_under(c, seen)
        return n

    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "reduce":
                counts["unfused"] += 1
            elif ins.opcode == "fusion":
                label = _rt7_label(ins)
                kinds_seen.add(label)
                seen = set()
                for c in ins.called_computations:
                    counts[label] += reduces_under(c, seen)
    result = {k: v for k, v in counts.items() if v}
    if keep_zero_kinds:
        for label in kinds_seen:
            result.setdefault(label, 0)
    return result


@wrong(
    "reduction_kinds",
    why="starts from every fusion kind the module's kernels have (a Counter filled per outermost "
    "fusion, += 0 for those without a reduce) and returns them all: breaks 'Leave out kinds with "
    "no reduce'; wrong on block_gpu_h100 / reductions_h100, where the Triton GEMM fusion "
    "(kCustom(__triton_nested_gemm_fusion)) holds no reduce yet appears with 0",
)
def _rt7_reduction_kinds_keeps_zero(hlo_text: str) -> dict[str, int]:
    return _rt7_reduction_counts(parse_hlo(hlo_text), keep_zero_kinds=True)


# ---- task 3: library_epilogues ----------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="takes every custom call whose backend_config parses as JSON for a library call (the "
    "typed-FFI ones print MLIR, so 'JSON means cuBLAS/cuDNN'), reporting its epilogue, "
    "activation_mode or DEFAULT; the contract's library calls are the __cublas$/__cudnn$ targets "
    "only: wrong on handwritten ODD_GEMMS (cub's __cub$DeviceRadixSort has "
    'backend_config={"descending":false}, jaxlib\'s cublas_geqrf_batched_ffi prints {}: both '
    "reported as DEFAULT library calls)",
)
def _rt7_library_epilogues_json_means_library(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            cfg = _rt7_json_or_none(ins)
            if cfg is None:
                continue
            if "gemm_backend_config" in cfg:
                out[ins.name] = cfg["gemm_backend_config"].get("epilogue", "DEFAULT")
            elif "cudnn_conv_backend_config" in cfg:
                out[ins.name] = cfg["cudnn_conv_backend_config"].get("activation_mode", "kNone")
            else:
                out[ins.name] = "DEFAULT"
    return out


# ---- task 4: gemm_flops -----------------------------------------------------------------------


def _rt7_gemms(module, tuple_total=False):
    """(computation, output elements, K) of every dot and cuBLAS call."""
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "dot":
                lhs = comp.instruction(ins.operands[0]) if ins.operands else None
                lhs_shape = lhs.shape if lhs is not None else ""
                if not lhs_shape:
                    m = re.search(r"(\w+\[[^\]]*\])", ins.operands[0]) if ins.operands else None
                    lhs_shape = m.group(1) if m else ""
                lhs_dims = _rt7_dims(lhs_shape)
                k = 1
                for d in _rt7_ints(ins.attribute("lhs_contracting_dims")):
                    k *= lhs_dims[d]
                yield comp, math.prod(_rt7_dims(ins.shape)), k
            elif ins.opcode == "custom-call":
                target = (ins.attribute("custom_call_target") or "").strip('"')
                if not target.startswith("__cublas$"):
                    continue
                dn = (
                    _rt7_config(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                )
                lhs = comp.instruction(ins.operands[0])
                lhs_dims = _rt7_dims(lhs.shape if lhs is not None else "")
                k = 1
                for d in dn.get("lhs_contracting_dimensions", []):
                    k *= lhs_dims[int(d)]
                if tuple_total:
                    elements = sum(math.prod(d) for d in _rt7_all_array_dims(ins.shape))
                else:
                    out = ins.shape_info.elements[0].text if ins.shape_info.is_tuple else ins.shape
                    elements = math.prod(_rt7_dims(out))
                yield comp, elements, k


@wrong(
    "gemm_flops",
    why="counts what runs, not what the module holds: a GEMM in a while body is multiplied by "
    'the loop\'s known_trip_count (backend_config {"known_trip_count":{"n":"6"}}); the '
    "contract sums 2*out*K once per GEMM of the module: wrong on scan_h100 / scan_cublas_h100 "
    "(6x the scanned GEMM)",
)
def _rt7_gemm_flops_times_trip_count(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    trips = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "while":
                n = _rt7_config(ins).get("known_trip_count", {}).get("n")
                body = ins.attribute("body")
                if n is not None and body:
                    trips[body.lstrip("%")] = int(n)
    # a fused computation's GEMM runs as often as the body its fusion sits in
    owner = {}
    for comp in module.computations:
        for ins in comp.instructions:
            for c in ins.called_computations:
                owner.setdefault(c, comp.name)

    def times(name, depth=0):
        t = trips.get(name, 1)
        if name in owner and depth < 50:
            t *= times(owner[name], depth + 1)
        return t

    return sum(2 * out * k * times(comp.name) for comp, out, k in _rt7_gemms(module))


@wrong(
    "gemm_flops",
    why="output elements of a cuBLAS call taken over its whole tuple shape (a shape-size helper "
    "that sums every array), so the s8 workspace counts as product elements; contract: the "
    "output is the first element of the tuple: wrong on mlp_cublas / dense_cublas_h100 "
    "(s8[...] workspace of millions of bytes added to each 64x256 product)",
)
def _rt7_gemm_flops_tuple_total(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return sum(2 * out * k for _, out, k in _rt7_gemms(module, tuple_total=True))


@wrong(
    "gemm_flops",
    why="counts cuDNN convolutions as GEMMs too (implicit GEMM: 2 * output elements * "
    "kernel window * input features); the contract's GEMMs are dots and cuBLAS calls only: wrong "
    "on conv_h100 (three __cudnn$conv... calls, no GEMM: the answer there is 0)",
)
def _rt7_gemm_flops_counts_convs(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = sum(2 * out * k for _, out, k in _rt7_gemms(module))
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode not in ("custom-call", "convolution"):
                continue
            target = (ins.attribute("custom_call_target") or "").strip('"')
            if ins.opcode == "custom-call" and not target.startswith("__cudnn$conv"):
                continue
            labels = ins.attribute("dim_labels") or ""
            kernel_labels = labels.split("_")[1].split("->")[0] if "_" in labels else ""
            if len(ins.operands) < 2:
                continue
            kernel = comp.instruction(_rt7_operand_name(ins.operands[1]))
            kdims = _rt7_dims(kernel.shape if kernel is not None else "")
            arrays = _rt7_all_array_dims(ins.shape)
            if not kdims or not arrays:
                continue
            out_features = kdims[kernel_labels.index("o")] if "o" in kernel_labels else kdims[-1]
            total += 2 * math.prod(arrays[0]) * (math.prod(kdims) // max(out_features, 1))
    return total


# ---- task 5: collective_overlap ---------------------------------------------------------------


def _rt7_coll(op):
    for c in _rt7_COLL:
        if op in (c, c + "-start", c + "-done", c + "-update"):
            return c
    return None


def _rt7_overlap(hlo_text, by_name_pairing=False, sorted_unique=False):
    module = parse_hlo(hlo_text)
    comps_by_name = {c.name: c for c in module.computations}
    skip = _rt7_fused_names(module) | _rt7_wrapped_names(module)

    def wraps_collective(ins):
        for c in ins.called_computations:
            comp = comps_by_name.get(c)
            if comp is not None and any(
                _rt7_coll(i.opcode) and not i.opcode.endswith(("-start", "-done", "-update"))
                for i in comp.instructions
            ):
                return True
        return False

    out = {}
    for comp in module.computations:
        if comp.name in skip:
            continue
        instrs = list(comp.instructions)
        names = {ins.name: i for i, ins in enumerate(instrs)}
        for i, ins in enumerate(instrs):
            op = ins.opcode
            c = _rt7_coll(op)
            if c and not op.endswith(("-start", "-done", "-update")):
                out[ins.name] = []
                continue
            is_start = (c and op.endswith("-start")) or (
                op == "async-start" and wraps_collective(ins)
            )
            if not is_start:
                continue
            between = []
            if by_name_pairing:
                done_name = ins.name.replace("start", "done")
                end = names.get(done_name, len(instrs))
                for later in instrs[i + 1 : end]:
                    if later.opcode.endswith("-update") and "update" in later.name:
                        continue
                    between.append(later.opcode)
            else:
                chain = {ins.name}
                for later in instrs[i + 1 :]:
                    reads = any(_rt7_operand_name(o) in chain for o in later.operands)
                    if reads and later.opcode.endswith("-update"):
                        chain.add(later.name)
                        continue
                    if reads and later.opcode.endswith("-done"):
                        break
                    between.append(later.opcode)
            if sorted_unique:
                between = sorted(set(between))
            out[ins.name] = between
    return out


@wrong(
    "collective_overlap",
    why="finds a start's done by its name (all-gather-start.1 -> all-gather-done.1, "
    "first-start -> first-done), running to the end of the computation when no such name "
    "exists; contract: the done is the one that reads the start (or its last update). Right on "
    "XLA's own names, wrong on every module renamed to meaningless labels (%n17) and on a start "
    "whose done XLA named otherwise",
)
def _rt7_collective_overlap_pairs_by_name(hlo_text: str) -> dict[str, list[str]]:
    return _rt7_overlap(hlo_text, by_name_pairing=True)


@wrong(
    "collective_overlap",
    why="returns the distinct opcodes in flight, sorted (sorted(set(...))), not 'the opcodes "
    "scheduled while it is in flight, in order': wrong on handwritten NESTED_COLLECTIVES "
    "(first-start has parameter, all-gather-start, negate, all-gather-done, exponential "
    "between) and on any overlap with two fusions in flight (one 'fusion' listed)",
)
def _rt7_collective_overlap_sorted_unique(hlo_text: str) -> dict[str, list[str]]:
    return _rt7_overlap(hlo_text, sorted_unique=True)


# ---- task 9: allreduce_elements ---------------------------------------------------------------

_rt7_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}


@wrong(
    "allreduce_elements",
    why="a defaultdict filled per leaf keeps a dtype whose only parameters are empty (size 0) "
    "with 0 elements; XLA all-reduces nothing in that dtype (checked: grad of {w: f32[16,8], "
    "b: f32[8], s: f32[], e: bf16[0]} compiles to one f32[137] all-reduce and no bf16 one), so "
    "the prediction {'f32': 137, 'bf16': 0} names an all-reduce XLA never makes",
)
def _rt7_allreduce_elements_keeps_empty_dtype(params) -> dict[str, int]:
    out = defaultdict(int)
    for leaf in jax.tree.leaves(params):
        name = _rt7_NAMES.get(jnp.dtype(leaf.dtype).name, jnp.dtype(leaf.dtype).name)
        out[name] += math.prod(leaf.shape)
    return dict(out)


# ---- task 8: fused_dense (decide) -------------------------------------------------------------
# Checked live (gpu-h100, programs.CUBLAS, every DENSE_CASE): jax.nn.gelu(x @ w + b) gets the
# BIAS_GELU epilogue; both spellings below keep epilogue BIAS and a separate gelu kernel, as the
# hand-written baseline does.

_rt7_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@wrong(
    "fused_dense",
    why="the hand-written tanh gelu with the 'right' constant (math.sqrt(2/pi) instead of "
    "0.7978845608) and the cube as h*h*h: same values, but XLA's GEMM rewriter does not match "
    "this spelling, so the GEMM keeps epilogue BIAS and the gelu stays a kLoop kernel: not "
    "'fewer kernels' (checked on every DENSE_CASE, e.g. bf16 64x128 @ 128x256)",
)
def _rt7_fused_dense_cube_as_products(x, w, b) -> jax.Array:
    h = x @ w + b
    return 0.5 * h * (1.0 + jnp.tanh(_rt7_SQRT_2_OVER_PI * (h + 0.044715 * h * h * h)))


@wrong(
    "fused_dense",
    why="the tanh argument factored (sqrt(2/pi) * h * (1 + 0.044715 h^2), one multiply fewer): "
    "the same values, but not the pattern the GEMM rewriter knows, so the cuBLAS call keeps "
    "epilogue BIAS and the gelu runs in its own kernel (checked on every DENSE_CASE, e.g. "
    "f32 96x160 @ 160x224)",
)
def _rt7_fused_dense_factored_tanh_arg(x, w, b) -> jax.Array:
    h = x @ w + b
    return 0.5 * h * (1.0 + jnp.tanh(_rt7_SQRT_2_OVER_PI * h * (1.0 + 0.044715 * h * h)))


@wrong(
    "fusion_kinds",
    why="walks the call graph from ENTRY without remembering what it visited and counts the "
    "fusions of a computation each time a call reaches it: a fused computation holding nested "
    "fusions that two fusion instructions share (XLA deduplicates identical fused computations, "
    "e.g. two identical Triton GEMMs whose nested gemm computation holds its operand fusions) "
    "has its nested fusion instructions counted twice, though each instruction is one fusion; "
    "also double-counts a computation two call sites call",
)
def _rt7_fusion_kinds_counts_per_path(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    by_name = {c.name: c for c in module.computations}
    counts = Counter()

    def walk(comp, depth):
        if depth > 64:
            return
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                counts[_rt7_label(ins)] += 1
            for callee in ins.called_computations:
                if callee in by_name:
                    walk(by_name[callee], depth + 1)
            for attr in (
                "body",
                "condition",
                "to_apply",
                "true_computation",
                "false_computation",
                "branch_computations",
            ):
                value = ins.attribute(attr)
                if value and attr not in ("to_apply",):
                    for name in re.findall(r"%?([\w.\-]+)", value):
                        if name in by_name and name not in ins.called_computations:
                            walk(by_name[name], depth + 1)

    walk(module.entry, 0)
    return dict(counts)
