"""Red team, phase 12, round 15: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt15_HLO = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


@wrong(
    "allreduce_elements",
    why="Clause 'a float64 parameter, a NumPy array ... is f32': a dtype missing from the table is dropped instead of canonicalized; {'a': np.zeros((4, 4))} gives {} instead of {'f32': 16}.",
)
def _rt15_allreduce_elements_unknown_dtype_dropped(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        name = _rt15_HLO.get(np.dtype(leaf.dtype).name)
        n = math.prod(int(d) for d in leaf.shape)
        if name is None or n == 0:
            continue
        out[name] = out.get(name, 0) + n
    return out


@wrong(
    "allreduce_elements",
    why="Clause 'a pytree of arrays or ShapeDtypeStructs ... a NumPy array': only jax.Array and ShapeDtypeStruct leaves are taken as parameters, NumPy arrays skipped; {'a': np.zeros((4, 4), np.float32)} gives {} instead of {'f32': 16}.",
)
def _rt15_allreduce_elements_jax_leaves_only(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        if not isinstance(leaf, (jax.Array, jax.ShapeDtypeStruct)):
            continue
        dt = np.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype))
        n = math.prod(int(d) for d in leaf.shape)
        if n:
            key = _rt15_HLO.get(dt.name, dt.name)
            out[key] = out.get(key, 0) + n
    return out


@wrong(
    "allreduce_elements",
    why="Clause 'HLO dtype name (f32, bf16, f16)': the name is built as kind letter + bit width, so bfloat16 becomes 'b16' (kind 'V'->name[0]) instead of 'bf16'; {'w': sds((8,), bf16)} gives {'b16': 8} instead of {'bf16': 8}.",
)
def _rt15_allreduce_elements_kind_plus_bits(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        dt = np.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype))
        key = f"{dt.name[0]}{dt.itemsize * 8}"
        n = math.prod(int(d) for d in leaf.shape)
        if n:
            out[key] = out.get(key, 0) + n
    return out


@wrong(
    "fused_dense",
    why="Clause 'the same values as handwritten_gelu_dense': uses the sigmoid ('quick') approximation h*sigmoid(1.702h), which cuBLAS does not fuse and differs from tanh-gelu by ~1e-2; f32 x=ones((2,4)), w=ones((4,3))/4, b=0 gives 0.8458 instead of 0.8412.",
)
def _rt15_fused_dense_quick_gelu(x, w, b) -> jax.Array:
    h = x @ w + b
    return (h * jax.nn.sigmoid(1.702 * h)).astype(h.dtype)


@wrong(
    "fused_dense",
    why="Clause 'the same values as handwritten_gelu_dense(x, w, b)': the bias is added after the activation (GELU epilogue then bias), gelu(x@w)+b; any nonzero b, e.g. f32 x=ones((2,4)), w=ones((4,3))/4, b=-1 gives -0.159 instead of 0.",
)
def _rt15_fused_dense_bias_after_gelu(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w, approximate=True) + b


@wrong(
    "fusion_kinds",
    why="Clause 'kCustom(__triton_nested_gemm_fusion) ... as Fusion.label spells it': the leading underscores of the backend kind are stripped (read as markup), giving kCustom(triton_nested_gemm_fusion) and kCustom(triton); block_gpu_h100.hlo gives those keys instead of kCustom(__triton_nested_gemm_fusion), kCustom(__triton).",
)
def _rt15_fusion_kinds_strip_underscores(hlo_text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for comp in parse_hlo(hlo_text):
        for ins in comp:
            if ins.opcode != "fusion":
                continue
            label = ins.attribute("kind", "")
            try:
                cfg = json.loads(ins.attribute("backend_config") or "{}")
            except ValueError:
                cfg = {}
            if isinstance(cfg, dict):
                for key in ("fusion_config", "fusion_backend_config"):
                    sub = cfg.get(key)
                    if isinstance(sub, dict) and sub.get("kind"):
                        label = f"{label}({str(sub['kind']).lstrip('_')})"
                        break
            out[label] = out.get(label, 0) + 1
    return out


def _rt15_custom_calls(hlo_text: str):
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*?\bcustom-call\((.*?)\),", line)
        if not m:
            continue
        t = re.search(r'custom_call_target="([^"]+)"', line)
        yield m.group(1), (t.group(1) if t else ""), m.group(2), line


@wrong(
    "library_epilogues",
    why="Clause 'the epilogue of its gemm_backend_config': infers the epilogue from the call's operands (3 operands = BIAS, else DEFAULT) instead of reading the config; a RELU or GELU epilogue (dense_cublas_h100.hlo, BIAS_RELU layers) gets BIAS/DEFAULT.",
)
def _rt15_library_epilogues_by_operand_count(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, target, operands, _line in _rt15_custom_calls(hlo_text):
        if target.startswith("__cublas$"):
            n = (
                len([o for o in operands.split(",") if o.strip()])
                if "{" not in operands
                else operands.count("%")
            )
            out[name] = "BIAS" if n >= 3 else "DEFAULT"
        elif target.startswith("__cudnn$"):
            m = re.search(r'"activation_mode"\s*:\s*"(\w+)"', _line)
            out[name] = m.group(1) if m else "kNone"
    return out


@wrong(
    "library_epilogues",
    why="Clause 'read from the config whatever the target's name': the epilogue is found by a regex for the first '\"epilogue\":\"...\"' / activation_mode string in the line, and a cuBLAS call whose epilogue is omitted (proto3 default) gets the previous call's epilogue carried over instead of DEFAULT; a module with a BIAS_RELU call followed by a default one labels the second wrongly: dense_cublas_h100.hlo with custom-call.7's '\"epilogue\":\"DEFAULT\"' left out gives it BIAS_GELU (the call before it) instead of DEFAULT.",
)
def _rt15_library_epilogues_carries_last(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    last = "DEFAULT"
    for name, target, _ops, line in _rt15_custom_calls(hlo_text):
        if target.startswith("__cublas$"):
            m = re.search(r'\\?"epilogue\\?"\s*:\s*\\?"(\w+)', line)
            if m:
                last = m.group(1)
            out[name] = last
        elif target.startswith("__cudnn$"):
            m = re.search(r'\\?"activation_mode\\?"\s*:\s*\\?"(\w+)', line)
            out[name] = m.group(1) if m else "kNone"
    return out


@wrong(
    "allreduce_elements",
    why="Clause 'HLO dtype name (f32, bf16, f16)': float parameters are picked with np.issubdtype(dtype, np.floating), which is False for ml_dtypes' bfloat16, so bf16 gradients vanish; {'w': sds((64, 128), bf16)} gives {} instead of {'bf16': 8192}.",
)
def _rt15_allreduce_elements_numpy_floating_filter(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        dt = np.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype))
        if not np.issubdtype(dt, np.floating):
            continue
        n = math.prod(int(d) for d in leaf.shape)
        if n:
            key = _rt15_HLO.get(dt.name, dt.name)
            out[key] = out.get(key, 0) + n
    return out


def _rt15_dims(shape_text: str) -> list[int]:
    m = re.search(r"\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(v) for v in m.group(1).split(",")]


_rt15_FLOAT_TYPES = ("f16", "bf16", "f32", "f64", "f8")


@wrong(
    "gemm_flops",
    why="Clause 'whatever its element types (an integer GEMM, s8 x s8 -> s32, does its multiply-adds too)': only GEMMs whose output is a float type are counted (an s32 output is taken for an index computation); the unoptimized HLO of jax.lax.dot(s8[4,8], s8[8,16], preferred_element_type=int32) gives 0 instead of 1024.",
)
def _rt15_gemm_flops_float_outputs_only(hlo_text: str) -> int:
    mod = parse_hlo(hlo_text)
    shapes = {}
    for comp in mod:
        for ins in comp:
            shapes[(comp.name, ins.name)] = ins.shape
    total = 0
    for comp in mod:
        for ins in comp:
            if ins.opcode == "dot":
                out_shape = ins.shape
                lhs = shapes.get((comp.name, ins.operands[0].lstrip("%")), "")
                contracting = [
                    int(v)
                    for v in re.findall(r"\d+", ins.attribute("lhs_contracting_dims", "") or "")
                ]
            elif ins.opcode == "custom-call" and (
                ins.attribute("custom_call_target", "") or ""
            ).strip('"').startswith("__cublas$"):
                m = re.search(r"[a-z0-9]+\[[^\]]*\]", ins.shape)
                out_shape = m.group(0) if m else ins.shape
                lhs = shapes.get((comp.name, ins.operands[0].lstrip("%")), "")
                try:
                    cfg = json.loads(ins.attribute("backend_config") or "{}")
                except ValueError:
                    cfg = {}
                dn = cfg.get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                contracting = [int(v) for v in dn.get("lhs_contracting_dimensions", [])]
            else:
                continue
            if not out_shape.lstrip("(").startswith(_rt15_FLOAT_TYPES):
                continue
            ld = _rt15_dims(lhs)
            k = math.prod(ld[d] for d in contracting)
            total += 2 * math.prod(_rt15_dims(out_shape)) * k
    return total
