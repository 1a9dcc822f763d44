"""Red-team (round 2) wrong answers for phase 12, written from the contract only."""

import json
import math
import re

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo
from xla_inspect.query import reachable

_R2_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")


def _r2_config(ins):
    raw = ins.attribute("backend_config")
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def _r2_fused_names(module):
    roots = tuple(
        n
        for c in module.computations
        for i in c
        if i.opcode == "fusion"
        for n in i.called_computations
    )
    return {c.name for c in reachable(module, roots)}


@wrong(
    "fusion_kinds",
    why='\'a fusion whose backend_config names a "kind" in its fusion_config or '
    "fusion_backend_config': reads only GPU's fusion_backend_config, so CPU's "
    '"fusion_config":{"kind":"__ynn_fusion"} counts as plain kCustom; wrong on '
    "block(x, w, b, g) compiled for this host's CPU",
)
def r2_kinds_gpu_config_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: dict[str, int] = {}
    for c in module.computations:
        for ins in c:
            if ins.opcode != "fusion":
                continue
            label = ins.attribute("kind") or ""
            custom = _r2_config(ins).get("fusion_backend_config", {}).get("kind")
            if custom:
                label = f"{label}({custom})"
            out[label] = out.get(label, 0) + 1
    return out


@wrong(
    "reduction_kinds",
    why="'counted under the kind of the outermost fusion whose fused computation reaches it': "
    "counts under the innermost fusion (the one whose calls= names the reduce's computation); "
    "wrong on a kLoop fusion nested in a kInput fusion (NESTED_REDUCTIONS: kLoop instead of "
    "kInput)",
)
def r2_reduction_innermost(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    caller = {}
    for c in module.computations:
        for ins in c:
            if ins.opcode == "fusion":
                label = ins.attribute("kind") or ""
                custom = _r2_config(ins).get("fusion_backend_config", {}).get("kind") or _r2_config(
                    ins
                ).get("fusion_config", {}).get("kind")
                if custom:
                    label = f"{label}({custom})"
                for name in ins.called_computations:
                    caller[name] = label
    out: dict[str, int] = {}
    for c in module.computations:
        for ins in c:
            if ins.opcode == "reduce":
                label = caller.get(c.name, "unfused")
                out[label] = out.get(label, 0) + 1
    return out


@wrong(
    "library_epilogues",
    why="'custom_call_target starting __cublas$': keeps only cuBLAS-Lt (__cublas$lt$...), so a "
    "legacy __cublas$gemm call (f64 GEMMs, or with cublasLt off) is left out; wrong on a module "
    "with custom_call_target=\"__cublas$gemm\" (answers {} instead of {name: 'DEFAULT'})",
)
def r2_epilogues_lt_only(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for c in module.computations:
        for ins in c:
            if ins.opcode != "custom-call":
                continue
            target = (ins.attribute("custom_call_target") or "").strip('"')
            config = _r2_config(ins)
            if target.startswith("__cublas$lt$"):
                out[ins.name] = config.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$"):
                out[ins.name] = config.get("cudnn_conv_backend_config", {}).get(
                    "activation_mode", "kNone"
                )
    return out


def _r2_dot_flops(module, dots_in):
    total = 0
    for c in module.computations:
        if dots_in is not None and c.name not in dots_in:
            continue
        for ins in c:
            if ins.opcode == "dot":
                lhs = c.instruction(ins.operands[0]).shape_info
                contract = [
                    int(v) for v in re.findall(r"\d+", ins.attribute("lhs_contracting_dims") or "")
                ]
                total += (
                    2 * math.prod(ins.shape_info.dims) * math.prod(lhs.dims[d] for d in contract)
                )
    return total


@wrong(
    "gemm_flops",
    why="'a cuBLAS custom call, whose dimension numbers are in its backend_config': takes K as "
    "the lhs's last dimension (row-major GEMM thinking) instead of its lhs_contracting_dimensions; "
    "right on every recording, wrong on a cuBLAS call contracting lhs dimension 0 "
    "(f32[64,32]^T @ f32[64,16]: 32768 instead of 65536)",
)
def r2_gemm_cublas_last_dim(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = _r2_dot_flops(module, None)
    for c in module.computations:
        for ins in c:
            if ins.opcode == "custom-call" and "__cublas$" in (
                ins.attribute("custom_call_target") or ""
            ):
                out = ins.shape_info.elements[0] if ins.shape_info.is_tuple else ins.shape_info
                lhs = c.instruction(ins.operands[0]).shape_info
                total += 2 * math.prod(out.dims) * lhs.dims[-1]
    return total


@wrong(
    "gemm_flops",
    why="'A GEMM is a dot (wherever it sits ...)': counts only the dots inside fused "
    "computations (where GPU puts them) and cuBLAS calls; wrong on a dot in ENTRY or a while body "
    "(CPU text, a hand-written module): 0 for f32[64,32] @ f32[32,16] in ENTRY instead of 65536",
)
def r2_gemm_fused_only(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = _r2_dot_flops(module, _r2_fused_names(module))
    for c in module.computations:
        for ins in c:
            if ins.opcode == "custom-call" and "__cublas$" in (
                ins.attribute("custom_call_target") or ""
            ):
                out = ins.shape_info.elements[0] if ins.shape_info.is_tuple else ins.shape_info
                lhs = c.instruction(ins.operands[0]).shape_info
                gemm = _r2_config(ins).get("gemm_backend_config", {})
                dims = gemm.get("dot_dimension_numbers", {}).get("lhs_contracting_dimensions", [])
                total += 2 * math.prod(out.dims) * math.prod(lhs.dims[int(d)] for d in dims)
    return total


def _r2_overlap(hlo_text, drop):
    module = parse_hlo(hlo_text)
    fused = _r2_fused_names(module)
    out = {}
    for c in module.computations:
        if c.name in fused:
            continue
        instructions = list(c)
        for k, ins in enumerate(instructions):
            if ins.opcode in _R2_KINDS:
                out[ins.name] = []
            elif ins.opcode.endswith("-start") and ins.opcode.removesuffix("-start") in _R2_KINDS:
                for j in range(k + 1, len(instructions)):
                    if (
                        instructions[j].opcode.endswith("-done")
                        and ins.name in instructions[j].operands
                    ):
                        out[ins.name] = [
                            i.opcode for i in instructions[k + 1 : j] if i.opcode not in drop
                        ]
                        break
    return out


@wrong(
    "collective_overlap",
    why="'An asynchronous collective is a <op>-start / <op>-done pair': recognises only opcodes "
    "spelled <collective>-start, so XLA's reduce-scatter-start / all-to-all-start (async-start "
    "wrapping the collective once parsed) are missed and their wrapped collective is keyed as "
    "synchronous []; wrong on a module with an async reduce-scatter",
)
def r2_overlap_suffix_only(hlo_text: str) -> dict[str, list[str]]:
    return _r2_overlap(hlo_text, ())


@wrong(
    "collective_overlap",
    why="'the opcodes scheduled while it is in flight ... the instructions printed between the "
    "start and its done': leaves out parameter/constant/tuple/get-tuple-element/bitcast as in "
    "phase 11; wrong on NESTED_COLLECTIVES (the parameter %y scheduled inside first-start's "
    "window)",
)
def r2_overlap_drops_plumbing(hlo_text: str) -> dict[str, list[str]]:
    return _r2_overlap(hlo_text, ("parameter", "constant", "tuple", "get-tuple-element", "bitcast"))


@wrong(
    "allreduce_elements",
    why="'HLO dtype name (f32, bf16, f16)': a two-entry table of the recordings' dtypes, "
    "anything else counted as f32; wrong on {'w': f16[4,4]} ({'f32': 16} instead of {'f16': 16})",
)
def r2_allreduce_f16_as_f32(params) -> dict[str, int]:
    names = {"float32": "f32", "bfloat16": "bf16"}
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        name = names.get(jnp.dtype(leaf.dtype).name, "f32")
        out[name] = out.get(name, 0) + math.prod(leaf.shape)
    return out


@wrong(
    "gather_free_specs",
    why="'the bytes of x and w one device holds at most half of what they take replicated': "
    "replicating w removes every collective but holds the whole w per device "
    "(1024x2048 @ 2048x4096 bf16: 2 MiB + 16 MiB > 10 MiB)",
)
def r2_specs_w_replicated() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec()


@wrong(
    "fused_dense",
    why="'written so that XLA:GPU with Triton GEMMs off runs it in fewer kernels: the activation "
    "fused into the cuBLAS call's epilogue': the same values by the hand-written tanh formula, "
    "which the GEMM rewriter does not match (epilogue BIAS plus a kLoop fusion)",
)
def r2_fused_dense_by_hand(x, w, b):
    h = jnp.dot(x, w) + b
    c = jnp.asarray(0.7978845608, h.dtype)
    return 0.5 * h * (1.0 + jnp.tanh(c * (h + 0.044715 * h * h * h)))
