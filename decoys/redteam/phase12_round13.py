"""Red team round 13, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re

import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt13_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt13_config(ins) -> dict:
    raw = ins.attributes.get("backend_config")
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        val = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return val if isinstance(val, dict) else {}


def _rt13_backend_kind(ins):
    cfg = _rt13_config(ins)
    for key in ("fusion_backend_config", "fusion_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            return str(sub["kind"])
    return None


def _rt13_label(ins) -> str:
    kind = str(ins.attributes.get("kind", ""))
    bk = _rt13_backend_kind(ins)
    return f"{kind}({bk})" if bk else kind


def _rt13_shape_text(ins) -> str:
    return str(ins.shape.text if hasattr(ins.shape, "text") else ins.shape)


def _rt13_dims(shape_text: str) -> list[int]:
    m = re.search(r"\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(v) for v in m.group(1).split(",")]


def _rt13_first_array(shape_text: str) -> str:
    m = re.search(r"[a-z0-9]+\[[^\]]*\]", shape_text)
    return m.group(0) if m else shape_text


def _rt13_ints(text) -> list[int]:
    if text is None:
        return []
    if isinstance(text, (list, tuple)):
        return [int(v) for v in text]
    return [int(v) for v in re.findall(r"-?\d+", str(text))]


def _rt13_target(ins) -> str:
    return str(ins.attributes.get("custom_call_target", "")).strip('"')


# ---- task 1: fusion_kinds --------------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="'counted as its printed kind with that kind in brackets' broken: a fusion whose "
    "backend_config names a kind is counted under that kind alone ('the backend kind is the more "
    "specific name'), so block_gpu_h100.hlo's Triton softmax counts as '__triton' instead of "
    "'kCustom(__triton)' (printed-kind-only fusions stay right: CPU text is unaffected)",
)
def _rt13_fusion_kinds_backend_kind_alone(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: dict[str, int] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                lab = _rt13_backend_kind(ins) or str(ins.attributes.get("kind", ""))
                out[lab] = out.get(lab, 0) + 1
    return out


@wrong(
    "fusion_kinds",
    why="'Fusion instructions of every computation ... counted by kind' broken: counts fused "
    "computations instead of fusion instructions (one per distinct calls=), so two fusions "
    "XLA made call one deduplicated fused computation (two identical elementwise kLoop "
    "fusions, `%f1 = fusion(%a), kind=kLoop, calls=%fused_add` and `%f2 = fusion(%b), "
    "kind=kLoop, calls=%fused_add`) give {'kLoop': 1} instead of {'kLoop': 2}",
)
def _rt13_fusion_kinds_per_called_computation(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    seen: set = set()
    out: dict[str, int] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                key = tuple(ins.called_computations)
                if key in seen:
                    continue
                seen.add(key)
                lab = _rt13_label(ins)
                out[lab] = out.get(lab, 0) + 1
    return out


# ---- task 2: reduction_kinds -------------------------------------------------------------------------


@wrong(
    "reduction_kinds",
    why="'a fused computation that several outermost fusions reach runs in each of their kernels "
    "(once per such fusion)' broken the other way from dedup: counts once per fusion *call "
    "site anywhere*, nested ones included, so a reduce in %inner called by a nested fusion "
    "inside %outer is counted once for the outer kernel and once more for the nested fusion "
    "instruction (under the outer's kind): a kInput fusion holding a kLoop fusion with a reduce "
    "gives {'kInput': 2} instead of {'kInput': 1}",
)
def _rt13_reduction_kinds_per_call_site(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused: set[str] = set()
    for c in module.computations:
        for ins in c.instructions:
            if ins.opcode == "fusion":
                fused.update(ins.called_computations)
    out: dict[str, int] = {}

    def reach(name, seen):
        # reduces a fused computation reaches (itself and its nested fusions), each once
        if name in seen or name not in comps:
            return 0
        seen.add(name)
        n = 0
        for ins in comps[name].instructions:
            if ins.opcode == "reduce":
                n += 1
            if ins.opcode == "fusion":
                for callee in ins.called_computations:
                    n += reach(callee, seen)
        return n

    def fusions_under(name, seen):
        # every fusion instruction of the kernel tree below a fused computation
        if name in seen or name not in comps:
            return []
        seen.add(name)
        found = []
        for ins in comps[name].instructions:
            if ins.opcode == "fusion":
                found.append(ins)
                for callee in ins.called_computations:
                    found.extend(fusions_under(callee, seen))
        return found

    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                lab = _rt13_label(ins)
                members = [ins]
                for callee in ins.called_computations:
                    members.extend(fusions_under(callee, set()))
                n = sum(reach(c, set()) for m in members for c in m.called_computations)
                if n:
                    out[lab] = out.get(lab, 0) + n
            elif ins.opcode == "reduce":
                out["unfused"] = out.get("unfused", 0) + 1
    return out


# ---- task 3: library_epilogues -----------------------------------------------------------------------


@wrong(
    "library_epilogues",
    why="'for a cuDNN one (__cudnn$...) the activation_mode ... A field the JSON leaves out has "
    "its proto default: kNone; the call is still in the dict' broken: a cuDNN call whose "
    "backend_config has no cudnn_conv_backend_config at all ('not a convolution, so no "
    "epilogue') is left out, e.g. a `__cudnn$fmhaSoftmax` or `__cudnn$norm` call with "
    'backend_config={"cudnn_fmha_backend_config":{...}} is missing instead of mapping to '
    "'kNone'; likewise a __cudnn$ call with backend_config={}",
)
def _rt13_library_epilogues_skips_non_conv_cudnn(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            tgt = _rt13_target(ins)
            if tgt.startswith("__cublas$"):
                g = _rt13_config(ins).get("gemm_backend_config", {}) or {}
                out[ins.name] = str(g.get("epilogue", "DEFAULT"))
            elif tgt.startswith("__cudnn$"):
                cfg = _rt13_config(ins)
                if "cudnn_conv_backend_config" not in cfg:
                    continue
                c = cfg["cudnn_conv_backend_config"] or {}
                out[ins.name] = str(c.get("activation_mode", "kNone"))
    return out


# ---- task 4: gemm_flops ----------------------------------------------------------------------------


def _rt13_gemm_flops(hlo_text: str, k_index_key: str, reachable_only: bool) -> int:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    keep = set(comps)
    if reachable_only:
        entry = module.computations[-1].name
        for c in module.computations:
            if getattr(c, "is_entry", False):
                entry = c.name
        keep = set()
        todo = [entry]
        while todo:
            n = todo.pop()
            if n in keep or n not in comps:
                continue
            keep.add(n)
            for ins in comps[n].instructions:
                todo.extend(ins.called_computations)
    total = 0
    for comp in module.computations:
        if comp.name not in keep:
            continue
        shapes = {i.name: _rt13_shape_text(i) for i in comp.instructions}
        for ins in comp.instructions:
            out = _rt13_shape_text(ins)
            if ins.opcode == "dot":
                lhs = _rt13_dims(shapes.get(ins.operands[0], ""))
                idx = _rt13_ints(ins.attributes.get(k_index_key))
                k = math.prod(lhs[d] for d in idx if d < len(lhs))
                total += 2 * math.prod(_rt13_dims(out)) * k
            elif ins.opcode == "custom-call" and _rt13_target(ins).startswith("__cublas$"):
                dn = (_rt13_config(ins).get("gemm_backend_config", {}) or {}).get(
                    "dot_dimension_numbers", {}
                )
                key = k_index_key.replace("_dims", "_dimensions")
                lhs = _rt13_dims(shapes.get(ins.operands[0], ""))
                k = math.prod(lhs[int(d)] for d in dn.get(key, []) if int(d) < len(lhs))
                total += 2 * math.prod(_rt13_dims(_rt13_first_array(out))) * k
    return total


@wrong(
    "gemm_flops",
    why="'(product of the lhs's contracting dimensions' sizes)' broken: indexes the lhs shape with "
    "the rhs's contracting dimension numbers (copy-paste from the rhs side), right whenever both "
    "sides contract the same index (a batched x @ w.T, [b,m,k]x[b,n,k]) or M == K, wrong for an "
    "ordinary f32[64,128] @ f32[128,256]: lhs dims [64,128] at rhs index 0 gives K=64, "
    "2*64*256*64 instead of 2*64*256*128",
)
def _rt13_gemm_flops_rhs_index_on_lhs(hlo_text: str) -> int:
    return _rt13_gemm_flops(hlo_text, "rhs_contracting_dims", reachable_only=False)


@wrong(
    "gemm_flops",
    why="'Multiply-add flops of every GEMM in the module' broken: counts only GEMMs in "
    "computations reachable from ENTRY through called computations, so a dot in a computation "
    "the module holds but nothing calls (a module of a jitted function plus an unused helper "
    "computation, or a hand-written module with two dot computations and ENTRY using one) is "
    "dropped: gives the ENTRY's flops only",
)
def _rt13_gemm_flops_reachable_only(hlo_text: str) -> int:
    return _rt13_gemm_flops(hlo_text, "lhs_contracting_dims", reachable_only=True)


# ---- task 5: collective_overlap ---------------------------------------------------------------------


def _rt13_overlap(hlo_text: str, spell, key_done: bool) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused: set[str] = set()
    for c in module.computations:
        for ins in c.instructions:
            if ins.opcode == "fusion":
                fused.update(ins.called_computations)

    def holds(names):
        return any(
            i.opcode in _rt13_COLLECTIVES
            for n in names
            if n in comps
            for i in comps[n].instructions
        )

    wrapped: set[str] = set()
    for c in module.computations:
        for ins in c.instructions:
            if ins.opcode == "async-start" and holds(ins.called_computations):
                wrapped.update(ins.called_computations)
    result: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name in wrapped:
            continue
        seq = list(comp.instructions)
        for idx, ins in enumerate(seq):
            op = ins.opcode
            if op in _rt13_COLLECTIVES:
                result[ins.name] = []
                continue
            is_start = (op.endswith("-start") and op[: -len("-start")] in _rt13_COLLECTIVES) or (
                op == "async-start" and holds(ins.called_computations)
            )
            if not is_start:
                continue
            chain = {ins.name}
            listed: list[str] = []
            done_name = ins.name
            for later in seq[idx + 1 :]:
                if (
                    later.operands
                    and later.operands[0] in chain
                    and (later.opcode.endswith("-update") or later.opcode.endswith("-done"))
                ):
                    if later.opcode.endswith("-done"):
                        done_name = later.name
                        break
                    chain.add(later.name)
                    continue
                listed.extend(spell(later, comps))
            result[done_name if key_done else ins.name] = listed
    return result


def _rt13_all_async(ins, comps) -> list[str]:
    op = ins.opcode
    for suffix in ("-start", "-update", "-done"):
        if op.endswith(suffix):
            return ["async" + suffix]
    return [op]


@wrong(
    "collective_overlap",
    why="'ops asynchronous in their own right (all-gather-start, copy-start, ...) keep their "
    "opcode' broken: every *-start/-update/-done in flight is normalised to async-start/"
    "-update/-done ('however the text spells it'), so a copy-start/copy-done or another "
    "all-gather-start scheduled inside a gather's window is listed as async-start/async-done: "
    "an all-gather-start window holding `copy-start`, `fusion`, `copy-done` gives "
    "['async-start','fusion','async-done'] instead of ['copy-start','fusion','copy-done']",
)
def _rt13_collective_overlap_all_async(hlo_text: str) -> dict[str, list[str]]:
    return _rt13_overlap(hlo_text, _rt13_all_async, key_done=False)


@wrong(
    "collective_overlap",
    why="'An asynchronous collective is a <op>-start / <op>-done pair: key the start's name' "
    "broken: keys the done's name ('the done is where the collective's value exists'); every "
    "async pair is keyed wrongly, e.g. matmul_2x2_h100.hlo-like `%ags = all-gather-start(..)`, "
    "`%agd = all-gather-done(%ags)` gives {'agd': [...]} instead of {'ags': [...]} (sync "
    "collectives, keyed by their own name, stay right)",
)
def _rt13_collective_overlap_keys_done(hlo_text: str) -> dict[str, list[str]]:
    return _rt13_overlap(hlo_text, lambda ins, comps: [ins.opcode], key_done=True)


# ---- task 9: allreduce_elements ------------------------------------------------------------------


_RT13_HLO = {"float32": "f32", "float64": "f32", "bfloat16": "bf16", "float16": "f16"}


@wrong(
    "allreduce_elements",
    why="'A pytree is JAX's (jax.tree: ... a registered node class such as a flax or equinox "
    "module holds children)' broken: walks the pytree by hand (dict, list, tuple; anything with "
    "a shape is a leaf) and skips every other object, so a registered dataclass node "
    "(jax.tree_util.register_dataclass / an equinox Module) holding w f32[8,8] contributes "
    "nothing: {'layer': Dense(w=f32[8,8])} gives {} instead of {'f32': 64}",
)
def _rt13_allreduce_elements_hand_walk(params) -> dict[str, int]:
    out: dict[str, int] = {}

    def walk(node):
        if node is None:
            return
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
            return
        if isinstance(node, (list, tuple)):
            for v in node:
                walk(v)
            return
        if hasattr(node, "shape") and hasattr(node, "dtype"):
            n = math.prod(int(d) for d in node.shape)
            if n == 0:
                return
            name = _RT13_HLO.get(np.dtype(node.dtype).name, np.dtype(node.dtype).name)
            out[name] = out.get(name, 0) + n

    walk(params)
    return out


@wrong(
    "collective_overlap",
    why="'the list holds the opcodes of the instructions printed between the start and its done "
    "... each by its opcode' broken: a `call` scheduled in the window is replaced by the opcodes "
    "of the computation it calls ('what actually runs'), so a window holding "
    "`%c = f32[8] call(%x), to_apply=%body` (%body: parameter, add, multiply) gives "
    "['parameter','add','multiply'] instead of ['call'] (no recording has a call in a window)",
)
def _rt13_collective_overlap_expands_calls(hlo_text: str) -> dict[str, list[str]]:
    def spell(ins, comps):
        if ins.opcode == "call" and ins.called_computations:
            return [
                i.opcode
                for c in ins.called_computations
                if c in comps
                for i in comps[c].instructions
            ]
        return [ins.opcode]

    return _rt13_overlap(hlo_text, spell, key_done=False)


# ---- task 6: overlap_options -------------------------------------------------------------------


@wrong(
    "overlap_options",
    why="'one all-gather per weight ... 5 of 6 for six layers' broken: un-combines the gathers by "
    "disabling the combiner pass by a guessed name (xla_disable_hlo_passes='all-gather-combiner', "
    "a valid string flag) instead of through its threshold flag, and raises the in-flight limit; "
    "XLA:GPU's combiner is not the pass so named, so every stack keeps one combined synchronous "
    "all-gather: 6 layers of 128 x 128 rows gives 1 sync gather and 0 async pairs (also 16x256, "
    "2x32 on gpu-h100)",
)
def _rt13_overlap_options_disable_pass_by_name() -> dict[str, bool | int | str]:
    return {
        "xla_disable_hlo_passes": "all-gather-combiner",
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }
