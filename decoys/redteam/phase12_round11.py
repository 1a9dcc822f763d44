"""Red team round 11, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt11_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt11_config(ins) -> dict:
    raw = ins.attributes.get("backend_config")
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(str(raw))
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _rt11_label(ins, prefer_custom_name: bool = False) -> str:
    kind = str(ins.attributes.get("kind", "")).strip()
    cfg = _rt11_config(ins)
    sub = cfg.get("fusion_backend_config") or cfg.get("fusion_config") or {}
    inner = sub.get("kind") if isinstance(sub, dict) else None
    if prefer_custom_name and isinstance(sub, dict):
        name = (sub.get("custom_fusion_config") or {}).get("name")
        if name:
            inner = name
    return f"{kind}({inner})" if inner else kind


def _rt11_comps(module) -> dict:
    return {c.name.lstrip("%"): c for c in module.computations}


def _rt11_fused_names(module) -> set[str]:
    out = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                out.update(c.lstrip("%") for c in ins.called_computations)
    return out


# ---- fusion_kinds --------------------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="'counted as its printed kind with that kind in brackets' (the backend_config's `kind`) "
    "broken: a custom fusion that also carries a `custom_fusion_config` is labelled with that "
    "config's more specific `name` instead of its kind, so scan_cublas_h100.hlo's dynamic-slice "
    "fusion counts as kCustom(dynamic_slice_fusion) instead of kCustom(__custom_fusion)",
)
def _rt11_fusion_kinds_custom_fusion_name(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                k = _rt11_label(ins, prefer_custom_name=True)
                counts[k] = counts.get(k, 0) + 1
    return dict(counts)


# ---- reduction_kinds -----------------------------------------------------------------------------


def _rt11_reduction_kinds(hlo_text: str, only_root: bool) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = _rt11_comps(module)
    fused = _rt11_fused_names(module)

    def reduces_in(name, seen):
        # reduces reachable from a fused computation, once per computation per kernel
        if name in seen or name not in comps:
            return 0
        seen.add(name)
        comp = comps[name]
        n = 0
        for ins in comp.instructions:
            if ins.opcode == "reduce" and (not only_root or ins.is_root):
                n += 1
            if ins.opcode == "fusion":
                for c in ins.called_computations:
                    n += reduces_in(c.lstrip("%"), seen)
        return n

    counts: dict[str, int] = {}
    for comp in module.computations:
        if comp.name.lstrip("%") in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                seen: set = set()
                n = sum(reduces_in(c.lstrip("%"), seen) for c in ins.called_computations)
                if n:
                    k = _rt11_label(ins)
                    counts[k] = counts.get(k, 0) + n
            elif ins.opcode == "reduce":
                counts["unfused"] = counts.get("unfused", 0) + 1
    return dict(counts)


@wrong(
    "reduction_kinds",
    why="'each reduce counted under the kind of the outermost fusion whose fused computation "
    "reaches it' broken by the README's 'a kInput fusion's root is a reduce': counts a fused "
    "computation's reduces only when the reduce is its ROOT, so a Triton softmax (reduces inside, "
    "a divide at the root) and a multi-output reduction fusion (tuple root) count nothing: "
    "reductions_h100.hlo loses its kCustom(__triton) reduces",
)
def _rt11_reduction_kinds_root_reduce_only(hlo_text: str) -> dict[str, int]:
    return _rt11_reduction_kinds(hlo_text, only_root=True)


# ---- gemm_flops ----------------------------------------------------------------------------------


def _rt11_dims(shape_text: str) -> list[int]:
    m = re.search(r"[a-z0-9]+\[([\d,]*)\]", str(shape_text))
    if not m or not m.group(1):
        return []
    return [int(d) for d in m.group(1).split(",")]


def _rt11_ints(value) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", str(value or ""))]


def _rt11_gemm_flops(hlo_text: str, skip_to_apply: bool) -> int:
    module = parse_hlo(hlo_text)
    shapes = {}
    for comp in module.computations:
        for ins in comp.instructions:
            shapes[ins.name.lstrip("%")] = str(ins.shape)
    skipped = set()
    if skip_to_apply:
        for comp in module.computations:
            for ins in comp.instructions:
                if "to_apply" in ins.attributes:
                    skipped.update(_rt11_names(ins.attributes["to_apply"]))
    total = 0
    for comp in module.computations:
        if comp.name.lstrip("%") in skipped:
            continue
        for ins in comp.instructions:
            if ins.opcode == "dot":
                out = _rt11_dims(ins.shape)
                lhs = _rt11_dims(shapes.get(ins.operands[0].lstrip("%"), ""))
                k = math.prod(
                    lhs[d] for d in _rt11_ints(ins.attributes.get("lhs_contracting_dims"))
                )
                total += 2 * math.prod(out) * k
            elif ins.opcode == "custom-call":
                target = str(ins.attributes.get("custom_call_target", "")).strip('"')
                if not target.startswith("__cublas$"):
                    continue
                cfg = _rt11_config(ins).get("gemm_backend_config", {})
                dn = cfg.get("dot_dimension_numbers", {})
                lhs = _rt11_dims(shapes.get(ins.operands[0].lstrip("%"), ""))
                k = math.prod(lhs[int(d)] for d in dn.get("lhs_contracting_dimensions", []))
                total += 2 * math.prod(_rt11_dims(ins.shape)) * k
    return total


def _rt11_names(value) -> list[str]:
    return [n.lstrip("%") for n in re.findall(r"%?[\w.\-]+", str(value))]


@wrong(
    "gemm_flops",
    why="'A GEMM is a dot (wherever it sits ...)' broken: skips every computation named by a "
    "`to_apply=` as a reducer/comparator ('reducers hold no GEMMs'), but a module before "
    "optimization spells a nested jax.jit as `call(...), to_apply=%inner`: "
    "jax.jit(lambda a, b: jnp.tanh(jax.jit(jnp.matmul)(a, b))) lowered for f32[8,16] @ f32[16,4] "
    "gives 0 instead of 2*32*16 = 1024",
)
def _rt11_gemm_flops_skips_to_apply(hlo_text: str) -> int:
    return _rt11_gemm_flops(hlo_text, skip_to_apply=True)


# ---- collective_overlap --------------------------------------------------------------------------


def _rt11_overlap(hlo_text: str, is_collective) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    comps = _rt11_comps(module)
    fused = _rt11_fused_names(module)

    def wraps_collective(ins) -> bool:
        for c in ins.called_computations:
            comp = comps.get(c.lstrip("%"))
            if comp is not None and any(is_collective(i.opcode) for i in comp.instructions):
                return True
        return False

    wrapped = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                wrapped.update(c.lstrip("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name.lstrip("%") in fused or comp.name.lstrip("%") in wrapped:
            continue
        instrs = list(comp.instructions)
        for idx, ins in enumerate(instrs):
            op = ins.opcode
            if is_collective(op):
                out[ins.name] = []
                continue
            start = (op.endswith("-start") and is_collective(op[: -len("-start")])) or (
                op == "async-start" and wraps_collective(ins)
            )
            if not start:
                continue
            chain = {ins.name}
            flight = []
            for later in instrs[idx + 1 :]:
                reads = set(o.lstrip("%") for o in later.operands) & chain
                if reads and later.opcode.endswith("-update"):
                    chain.add(later.name)
                    continue
                if reads and later.opcode.endswith("-done"):
                    break
                flight.append(later.opcode)
            out[ins.name] = flight
    return out


@wrong(
    "collective_overlap",
    why="'The collectives are these five opcodes only ... a collective-broadcast is none of "
    "them' broken: recognises collectives as the `all-*` opcodes, reduce-scatter and anything "
    "named `collective-*` (to catch collective-permute), so a `collective-broadcast` (and a "
    "collective-broadcast-start/-done pair) gets a key of its own, e.g. a module whose ENTRY "
    "holds `%cb = f32[8] collective-broadcast(%p)` gives {'cb': []} instead of {}",
)
def _rt11_collective_overlap_collective_prefix(hlo_text: str) -> dict[str, list[str]]:
    def is_collective(op: str) -> bool:
        return op in ("all-gather", "all-reduce", "all-to-all", "reduce-scatter") or (
            op.startswith("collective-") and not op.endswith(("-start", "-done", "-update"))
        )

    return _rt11_overlap(hlo_text, is_collective)


# ---- allreduce_elements --------------------------------------------------------------------------

_rt11_HLO_NAMES = {"float64": "f64", "float32": "f32", "bfloat16": "bf16", "float16": "f16"}


@wrong(
    "allreduce_elements",
    why="'A dtype XLA all-reduces nothing in (its only parameters are empty, a dimension of size "
    "0)' read as 'skip the parameters with no dimensions': `if not leaf.shape or 0 in "
    "leaf.shape: continue`, so a scalar parameter (a learned temperature, shape ()) - one "
    "element, all-reduced like any other - is dropped: {'w': f32[4,4], 't': f32[]} gives "
    "{'f32': 16} instead of {'f32': 17}, and {'t': f32[]} gives {} instead of {'f32': 1}",
)
def _rt11_allreduce_elements_skips_scalars(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        shape = tuple(leaf.shape)
        if not shape or 0 in shape:
            continue
        name = _rt11_HLO_NAMES[jnp.dtype(leaf.dtype).name]
        out[name] = out.get(name, 0) + math.prod(shape)
    return out


@wrong(
    "allreduce_elements",
    why="'HLO dtype name (f32, bf16, f16) -> elements all-reduced in that dtype' broken: names "
    "the parameter's numpy dtype as given, so a numpy float64 parameter (np.zeros((4, 4)), "
    "numpy's default dtype) is filed under 'f64'; JAX without x64 runs it, its gradient and "
    "its all-reduce in f32: {'w': np.zeros((4, 4))} gives {'f64': 16} instead of {'f32': 16}",
)
def _rt11_allreduce_elements_numpy_f64(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        n = math.prod(leaf.shape)
        if n == 0:
            continue
        name = _rt11_HLO_NAMES[np.dtype(leaf.dtype).name]
        out[name] = out.get(name, 0) + n
    return out


# ---- library_epilogues ---------------------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="'the `epilogue` of its gemm_backend_config (DEFAULT, BIAS, RELU, BIAS_RELU, BIAS_GELU, "
    "...)' broken: normalises the epilogue to the six names the lesson lists by dropping an "
    "`_AUX` suffix ('aux is only the saved pre-activation'), so a training forward GEMM whose "
    'cuBLAS call keeps the pre-activation for the backward pass (`"epilogue":"GELU_AUX"`, '
    "`BIAS_GELU_AUX`) is reported as GELU / BIAS_GELU: a different epilogue, with another output",
)
def _rt11_library_epilogues_drops_aux(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            target = str(ins.attributes.get("custom_call_target", "")).strip('"')
            if target.startswith("__cublas$"):
                cfg = _rt11_config(ins).get("gemm_backend_config", {})
                epi = str(cfg.get("epilogue", "DEFAULT"))
                out[ins.name] = epi.removesuffix("_AUX")
            elif target.startswith("__cudnn$"):
                cfg = _rt11_config(ins).get("cudnn_conv_backend_config", {})
                out[ins.name] = str(cfg.get("activation_mode", "kNone"))
    return out


@wrong(
    "gemm_flops",
    why="'Multiply-add flops ... 2 * (elements of the GEMM's output) * K' broken: adds the "
    "epilogue's work for a cuBLAS call whose epilogue holds a BIAS (one add per output "
    "element: 'the bias is fused into the GEMM, so its flops are the GEMM's'): "
    "dense_cublas_h100.hlo's BIAS, BIAS_RELU and BIAS_GELU calls each count their product's "
    "elements once more",
)
def _rt11_gemm_flops_counts_bias(hlo_text: str) -> int:
    total = _rt11_gemm_flops(hlo_text, skip_to_apply=False)
    module = parse_hlo(hlo_text)
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            target = str(ins.attributes.get("custom_call_target", "")).strip('"')
            if target.startswith("__cublas$"):
                epi = str(_rt11_config(ins).get("gemm_backend_config", {}).get("epilogue", ""))
                if "BIAS" in epi:
                    total += math.prod(_rt11_dims(ins.shape))
    return total


# ---- fused_dense ---------------------------------------------------------------------------------


@wrong(
    "fused_dense",
    why="'written so that XLA:GPU with Triton GEMMs off runs it in fewer kernels: the activation "
    "fused into the cuBLAS call's epilogue' broken: rewrites the tanh gelu through the exact "
    "identity 0.5*(1 + tanh(z)) = sigmoid(2z) (h * sigmoid(1.5957691216 * (h + 0.044715 h^3)): "
    "one op fewer, same values to one bf16 ulp), but the GEMM rewriter matches a pattern of ops, "
    "not the math: every DENSE_CASES compile still gives epilogue BIAS and a kLoop fusion after "
    "it (2 kernels, as handwritten_gelu_dense), never BIAS_GELU",
)
def _rt11_fused_dense_sigmoid_identity(x, w, b) -> jax.Array:
    h = x @ w + b
    return h * jax.nn.sigmoid(1.5957691216 * (h + 0.044715 * h**3))


# ---- overlap_options -----------------------------------------------------------------------------


@wrong(
    "overlap_options",
    why="'one all-gather per weight' broken: reads `xla_gpu_enable_all_gather_combine_by_dim` "
    "as the switch of the all-gather combiner and turns it off (and raises the in-flight limit "
    "to 16), but that flag only stops the combiner from grouping by gather dimension; the "
    "byte threshold still merges every weight: on gpu-h100 each FSDP case (6 layers of 128 "
    "with 256 rows, 16 of 32 with 64 rows, ...) still compiles to ONE synchronous tuple "
    "all-gather, 0 async pairs instead of layers - 1",
)
def _rt11_overlap_options_combine_by_dim_off() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_enable_all_gather_combine_by_dim": False,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }


@wrong(
    "collective_overlap",
    why="'A generic async-start whose wrapped computation (its calls=) holds the collective is "
    "that collective's start ... An async-start wrapping anything else (a fusion, ...) is no "
    "collective' broken: 'holds' is read transitively, through the fusions of the wrapped "
    "computation, so an asynchronous FUSION whose fused computation holds an all-reduce is "
    "taken for an async all-reduce. XLA:GPU makes exactly that by default for small gradient "
    "all-reduces: the data-parallel gradient of {'w': bf16[64,32], 'b': f32[32]} (x bf16[8,64] "
    "split over gpu-h100's 4 devices, loss mean((relu(x@w)+b)^2)) prints `fusion-start(...), "
    "kind=kCustom, calls=%fused_all-reduce...`; the answer is {} (the all-reduces sit in fused "
    "computations), this gives {'fusion-start': ['fusion', 'async-start', 'async-done'], "
    "'fusion-start.1': []}",
)
def _rt11_collective_overlap_holds_through_fusion(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    comps = _rt11_comps(module)

    def holds(name, seen=None) -> bool:
        seen = set() if seen is None else seen
        if name in seen or name not in comps:
            return False
        seen.add(name)
        for i in comps[name].instructions:
            if i.opcode in _rt11_COLLECTIVES:
                return True
            if i.opcode == "fusion" and any(
                holds(c.lstrip("%"), seen) for c in i.called_computations
            ):
                return True
        return False

    fused = _rt11_fused_names(module)
    wrapped = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                wrapped.update(c.lstrip("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name.lstrip("%") in fused or comp.name.lstrip("%") in wrapped:
            continue
        instrs = list(comp.instructions)
        for idx, ins in enumerate(instrs):
            op = ins.opcode
            if op in _rt11_COLLECTIVES:
                out[ins.name] = []
                continue
            start = (op.endswith("-start") and op[: -len("-start")] in _rt11_COLLECTIVES) or (
                op == "async-start" and any(holds(c.lstrip("%")) for c in ins.called_computations)
            )
            if not start:
                continue
            chain = {ins.name}
            flight = []
            for later in instrs[idx + 1 :]:
                reads = set(o.lstrip("%") for o in later.operands) & chain
                if reads and later.opcode.endswith("-update"):
                    chain.add(later.name)
                    continue
                if reads and later.opcode.endswith("-done"):
                    break
                flight.append(later.opcode)
            out[ins.name] = flight
    return out
