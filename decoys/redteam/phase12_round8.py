"""Red team round 8, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt8_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt8_dims(shape_text: str) -> list[int]:
    m = re.search(r"\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(d.strip().lstrip("<=")) for d in m.group(1).split(",")]


def _rt8_first_shape(shape_text: str) -> str:
    s = shape_text.strip()
    if s.startswith("("):
        s = s[1:]
    return re.match(r"[a-z0-9]+\[[^\]]*\]", s).group(0)


def _rt8_fused_names(module) -> set[str]:
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


# ---- fusion_kinds -------------------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="'as xla_inspect's Fusion.label spells it' broken: reads the backend_config kind with the "
    'regex "kind":"(\\w+)" (identifier characters only), so a kind holding a \'$\' is cut: a '
    'cuDNN GEMM fusion ("kind":"__cudnn$fusion") is counted as kCustom(__cudnn) instead of '
    "kCustom(__cudnn$fusion)",
)
def _rt8_fusion_kinds_word_chars_kind(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: Counter[str] = Counter()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "fusion":
                continue
            kind = ins.attribute("kind") or ""
            cfg = ins.attribute("backend_config") or ""
            m = re.search(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"(\w+)', cfg)
            counts[f"{kind}({m.group(1)})" if m else kind] += 1
    return dict(counts)


# ---- reduction_kinds ----------------------------------------------------------------------------


@wrong(
    "reduction_kinds",
    why="'counted ... under \"unfused\" when no fusion holds it' broken: counts only the reduces "
    "that run in a kernel (a reduce outside every fusion is 'not a GPU reduction kernel' and left "
    "out), so a module with a reduce outside every fusion (a reduce in ENTRY, or in a computation "
    "a call/while reaches; e.g. a CPU module or one a hand-written test builds) has no "
    "'unfused' entry; right on every recording (all their reduces are fused)",
)
def _rt8_reduction_kinds_drop_unfused(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused = _rt8_fused_names(module)

    def reached(name: str, seen: set[str]) -> set[str]:
        if name in seen or module.computation(name) is None:
            return seen
        seen.add(name)
        for ins in module.computation(name).instructions:
            for c in ins.called_computations:
                reached(c.lstrip("%"), seen)
        return seen

    counts: Counter[str] = Counter()
    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode != "fusion":
                continue
            kind = ins.attribute("kind") or ""
            cfg = ins.attribute("backend_config") or ""
            m = re.search(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"', cfg)
            label = f"{kind}({m.group(1)})" if m else kind
            for c in reached(ins.attribute("calls").lstrip("%"), set()):
                n = sum(i.opcode == "reduce" for i in module.computation(c).instructions)
                if n:
                    counts[label] += n
    return dict(counts)


# ---- library_epilogues --------------------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="'for a cuDNN one (__cudnn$...) the activation_mode' broken: only "
    "__cudnn$convBiasActivationForward is read (a plain __cudnn$convForward 'cannot fuse "
    "anything' and is left out), so conv_h100's convolution without bias (a "
    "__cudnn$convForward, activation_mode kNone) has no entry",
)
def _rt8_library_epilogues_conv_forward_skipped(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            target = (ins.attribute("custom_call_target") or "").strip('"')
            if target.startswith("__cublas$"):
                cfg = json.loads(ins.attribute("backend_config"))
                out[ins.name] = cfg["gemm_backend_config"].get("epilogue", "DEFAULT")
            elif target == "__cudnn$convBiasActivationForward":
                cfg = json.loads(ins.attribute("backend_config"))
                out[ins.name] = cfg["cudnn_conv_backend_config"].get("activation_mode", "kNone")
    return out


# ---- gemm_flops ---------------------------------------------------------------------------------


def _rt8_gemm_terms(module):
    """(lhs dims, rhs dims, lhs contracting, rhs contracting, out dims) of every GEMM."""
    for comp in module.computations:
        by_name = {i.name: i for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode == "dot":
                lhs = _rt8_dims(_rt8_first_shape(by_name[ins.operands[0].lstrip("%")].shape))
                rhs = _rt8_dims(_rt8_first_shape(by_name[ins.operands[1].lstrip("%")].shape))
                lc = [
                    int(v) for v in re.findall(r"\d+", ins.attribute("lhs_contracting_dims") or "")
                ]
                rc = [
                    int(v) for v in re.findall(r"\d+", ins.attribute("rhs_contracting_dims") or "")
                ]
                yield lhs, rhs, lc, rc, _rt8_dims(_rt8_first_shape(ins.shape))
            elif ins.opcode == "custom-call":
                target = (ins.attribute("custom_call_target") or "").strip('"')
                if not target.startswith("__cublas$"):
                    continue
                dn = json.loads(ins.attribute("backend_config"))["gemm_backend_config"][
                    "dot_dimension_numbers"
                ]
                lhs = _rt8_dims(_rt8_first_shape(by_name[ins.operands[0].lstrip("%")].shape))
                rhs = _rt8_dims(_rt8_first_shape(by_name[ins.operands[1].lstrip("%")].shape))
                lc = [int(v) for v in dn.get("lhs_contracting_dimensions", [])]
                rc = [int(v) for v in dn.get("rhs_contracting_dimensions", [])]
                yield lhs, rhs, lc, rc, _rt8_dims(_rt8_first_shape(ins.shape))


@wrong(
    "gemm_flops",
    why="'2 * (elements of the GEMM's output) * K' broken: the output's elements are computed from "
    "the operands (M = lhs elements / K, N = rhs elements / K: the textbook 2*M*N*K), so batch "
    "dimensions are counted twice, once in M and once in N: batched_triton.hlo's batched dot "
    "f32[6,40,56] (lhs_batch_dims={0}) is counted 6 times too high (total 12257280 instead of "
    "2580480); right for every plain x @ w",
)
def _rt8_gemm_flops_mn_from_operands(hlo_text: str) -> int:
    total = 0
    for lhs, rhs, lc, _rc, _out in _rt8_gemm_terms(parse_hlo(hlo_text)):
        k = math.prod(lhs[d] for d in lc)
        m = math.prod(lhs) // k if k else 0
        n = math.prod(rhs) // k if k else 0
        total += 2 * m * n * k
    return total


@wrong(
    "gemm_flops",
    why="'A GEMM is a dot ... or a cuBLAS custom call' broken: a GEMM whose output holds no "
    "more than one row or column (a matrix-vector product, dims of size 1 or rank-1 output) is "
    "skipped as 'a GEMV, not a GEMM'; jnp.dot(x f32[64,128], v f32[128]) -> f32[64] is 16384 "
    "flops, counted as 0",
)
def _rt8_gemm_flops_skip_gemv(hlo_text: str) -> int:
    total = 0
    for lhs, _rhs, lc, _rc, out in _rt8_gemm_terms(parse_hlo(hlo_text)):
        if len(out) < 2 or min(out[-2:]) <= 1:
            continue
        total += 2 * math.prod(out) * math.prod(lhs[d] for d in lc)
    return total


# ---- collective_overlap -------------------------------------------------------------------------


def _rt8_base(opcode: str) -> str | None:
    for suffix in ("-start", "-done"):
        if opcode.endswith(suffix) and opcode[: -len(suffix)] in _rt8_COLLECTIVES:
            return opcode[: -len(suffix)]
    return None


@wrong(
    "collective_overlap",
    why="'pair every -start with the done that reads it' broken: pairs like brackets (a done "
    "closes the most recent open start of its kind, a stack), true when pairs nest but wrong "
    "when they cross: start A, start B, done A, done B. The FSDP stack 6 layers of 64 (x 128 "
    "rows) compiled for gpu-h100 with the combiner off and an overlap limit of 8 prints "
    "all-gather-start.1..5 then all-gather-done.1..5: start.5 is paired with done.1 and its "
    "list loses the GEMMs and dones up to done.5",
)
def _rt8_collective_overlap_bracket_pairing(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt8_fused_names(module)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused:
            continue
        ins_list = list(comp.instructions)
        stacks: dict[str, list[int]] = {}
        for idx, ins in enumerate(ins_list):
            if ins.opcode in _rt8_COLLECTIVES:
                out[ins.name] = []
                continue
            base = _rt8_base(ins.opcode)
            if base is None:
                continue
            if ins.opcode.endswith("-start"):
                stacks.setdefault(base, []).append(idx)
            elif stacks.get(base):
                s = stacks[base].pop()
                out[ins_list[s].name] = [
                    i.opcode for i in ins_list[s + 1 : idx] if not i.opcode.endswith("-update")
                ]
    return out


@wrong(
    "collective_overlap",
    why="'A synchronous collective (a plain all-gather, ...) maps to []' read as 'only a plain "
    'collective marked "is_sync":true is synchronous\': an all-reduce printed with no '
    "collective_backend_config (or is_sync false / absent, e.g. a hand-written or CPU/TPU "
    "module, or one compiled with xla_gpu_disable_async_collectives) is left out of the dict",
)
def _rt8_collective_overlap_sync_needs_flag(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt8_fused_names(module)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused:
            continue
        ins_list = list(comp.instructions)
        for idx, ins in enumerate(ins_list):
            if ins.opcode in _rt8_COLLECTIVES:
                if '"is_sync":true' in (ins.attribute("backend_config") or ""):
                    out[ins.name] = []
                continue
            base = _rt8_base(ins.opcode)
            if base is None or not ins.opcode.endswith("-start"):
                continue
            current = ins.name
            window = []
            for later in ins_list[idx + 1 :]:
                if later.opcode.endswith("-update") and current in [
                    o.lstrip("%") for o in later.operands
                ]:
                    current = later.name
                    continue
                if later.opcode == f"{base}-done" and current in [
                    o.lstrip("%") for o in later.operands
                ]:
                    break
                window.append(later.opcode)
            out[ins.name] = window
    return out


# ---- allreduce_elements -------------------------------------------------------------------------

_rt8_HLO_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}


@wrong(
    "allreduce_elements",
    why="'A dtype XLA all-reduces nothing in (its ONLY parameters are empty ...)' read as 'a dtype "
    "with an empty parameter': as soon as one parameter of a dtype has a size-0 dimension the "
    "whole dtype is dropped; {'w': f32[4,4], 'e': f32[0,3]} -> {} instead of {'f32': 16}",
)
def _rt8_allreduce_elements_empty_poisons_dtype(params) -> dict[str, int]:
    totals: dict[str, int] = {}
    poisoned: set[str] = set()
    for leaf in jax.tree_util.tree_leaves(params):
        name = _rt8_HLO_NAMES[jnp.dtype(leaf.dtype).name]
        size = math.prod(leaf.shape)
        if size == 0:
            poisoned.add(name)
        totals[name] = totals.get(name, 0) + size
    return {k: v for k, v in totals.items() if k not in poisoned and v}


@wrong(
    "allreduce_elements",
    why="'elements all-reduced in that dtype' broken: XLA:GPU's flat all-reduce is taken to be "
    'padded to a multiple of 16 elements per dtype ("32-byte aligned for bf16"), so the total '
    "is rounded up: {'w': bf16[3,5]} -> {'bf16': 16} instead of 15; right whenever the "
    "parameters add up to a multiple of 16 (all three gradient recordings: 12448, 2880, 3920)",
)
def _rt8_allreduce_elements_padded(params) -> dict[str, int]:
    totals: dict[str, int] = {}
    for leaf in jax.tree_util.tree_leaves(params):
        name = _rt8_HLO_NAMES[jnp.dtype(leaf.dtype).name]
        totals[name] = totals.get(name, 0) + math.prod(leaf.shape)
    return {k: -(-v // 16) * 16 for k, v in totals.items() if v}


# ---- fused_dense --------------------------------------------------------------------------------


@wrong(
    "fused_dense",
    why="'the same values as handwritten_gelu_dense(x, w, b)' broken: the bias is put after the "
    "activation (gelu(x @ w) + b, read off cuBLAS-Lt's 'GELU_BIAS'-style epilogue names as "
    "activation then bias): every case with a nonzero b, e.g. bf16 64x128 @ 128x256, differs",
)
def _rt8_fused_dense_bias_after_gelu(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w, approximate=True) + b


@wrong(
    "fused_dense",
    why="'the same values as handwritten_gelu_dense(x, w, b)' broken for bf16: the bias is added "
    "in f32 'for accuracy' (b.astype(float32)), which promotes the whole layer to f32: a bf16 "
    "64x128 @ 128x256 call returns float32 (not bf16, as handwritten_gelu_dense does) with "
    "values rounded differently, and the convert between GEMM and bias breaks the BIAS_GELU match",
)
def _rt8_fused_dense_f32_bias(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w + b.astype(jnp.float32), approximate=True)


@wrong(
    "overlap_options",
    why="'every one of them but the first layer's an async pair with a GEMM between: 5 of 6' "
    "broken: FSDP-style prefetch of one layer ahead (combiner off, two collectives in flight: "
    "the one being used and the next), as PyTorch FSDP does; on gpu-h100 small weights are all "
    "started at once, so 6 layers of 64 (x 128 rows, a FSDP_CASES stack) keeps only 2 of 6 "
    "gathers overlapped (checked: 5 of 6 only for the 128-wide cases)",
)
def _rt8_overlap_options_prefetch_two() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 2,
    }
