"""Red team round 12, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import math
import re

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt12_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt12_config(ins) -> dict:
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


def _rt12_label(ins) -> str:
    kind = str(ins.attributes.get("kind", ""))
    cfg = _rt12_config(ins)
    for key in ("fusion_backend_config", "fusion_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            return f"{kind}({sub['kind']})"
    return kind


def _rt12_fused_names(module) -> set[str]:
    """Computations called by fusion instructions (transitively: nested fusions too)."""
    fused: set[str] = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                fused.update(ins.called_computations)
    return fused


def _rt12_ints(text) -> list[int]:
    if text is None:
        return []
    if isinstance(text, (list, tuple)):
        return [int(v) for v in text]
    return [int(v) for v in re.findall(r"-?\d+", str(text))]


def _rt12_dims(shape_text: str) -> list[int]:
    m = re.search(r"\[([^\]]*)\]", shape_text)
    if not m or not m.group(1).strip():
        return []
    return [int(v) for v in m.group(1).split(",")]


def _rt12_first_array(shape_text: str) -> str:
    m = re.search(r"[a-z0-9]+\[[^\]]*\]", shape_text)
    return m.group(0) if m else shape_text


def _rt12_reduction_counts(hlo_text: str, is_reduce) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused = _rt12_fused_names(module)
    counts: dict[str, int] = {}

    def reach(name, seen):
        if name in seen or name not in comps:
            return 0
        seen.add(name)
        n = 0
        for ins in comps[name].instructions:
            if is_reduce(ins.opcode):
                n += 1
            if ins.opcode == "fusion":
                for callee in ins.called_computations:
                    n += reach(callee, seen)
        return n

    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                seen: set[str] = set()
                n = sum(reach(c, seen) for c in ins.called_computations)
                if n:
                    lab = _rt12_label(ins)
                    counts[lab] = counts.get(lab, 0) + n
            elif is_reduce(ins.opcode):
                counts["unfused"] = counts.get("unfused", 0) + 1
    return counts


# ---- task 2: reduction_kinds ---------------------------------------------------------------------


@wrong(
    "reduction_kinds",
    why="'the module's reduce instructions (opcode reduce: an all-reduce, reduce-scatter or "
    "reduce-window is not one)' broken: takes every opcode starting with 'reduce' except the two "
    "the docstring excludes by name, so a `reduce-precision` (jax.lax.reduce_precision, or XLA's "
    "own float-normalization) is counted as a reduce: a kLoop fusion holding one reduce-precision "
    "and no reduce gives {'kLoop': 1} instead of {}.",
)
def _rt12_reduction_kinds_counts_reduce_precision(hlo_text: str) -> dict[str, int]:
    return _rt12_reduction_counts(
        hlo_text,
        lambda op: op.startswith("reduce") and op not in ("reduce-scatter", "reduce-window"),
    )


# ---- task 4: gemm_flops ------------------------------------------------------------------------


def _rt12_gemm_flops(hlo_text: str, skip_comp) -> int:
    module = parse_hlo(hlo_text)
    shapes = {}
    for comp in module.computations:
        for ins in comp.instructions:
            shapes[(comp.name, ins.name)] = str(
                ins.shape.text if hasattr(ins.shape, "text") else ins.shape
            )
    total = 0
    for comp in module.computations:
        if skip_comp(module, comp):
            continue
        for ins in comp.instructions:
            out = str(ins.shape.text if hasattr(ins.shape, "text") else ins.shape)
            if ins.opcode == "dot":
                lhs = shapes.get((comp.name, ins.operands[0]), "")
                lhs_dims = _rt12_dims(lhs)
                k = math.prod(
                    lhs_dims[d] for d in _rt12_ints(ins.attributes.get("lhs_contracting_dims"))
                )
                total += 2 * math.prod(_rt12_dims(out)) * k
            elif ins.opcode == "custom-call" and str(
                ins.attributes.get("custom_call_target", "")
            ).strip('"').startswith("__cublas$"):
                gcfg = _rt12_config(ins).get("gemm_backend_config", {})
                dn = gcfg.get("dot_dimension_numbers", {})
                lhs = shapes.get((comp.name, ins.operands[0]), "")
                lhs_dims = _rt12_dims(lhs)
                k = math.prod(lhs_dims[int(d)] for d in dn.get("lhs_contracting_dimensions", []))
                total += 2 * math.prod(_rt12_dims(_rt12_first_array(out))) * k
    return total


def _rt12_async_wrapped(module) -> set[str]:
    names: set[str] = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                names.update(ins.called_computations)
    # and what those wrapped computations call (the fused computation of a fusion-start)
    comps = {c.name: c for c in module.computations}
    todo = list(names)
    while todo:
        n = todo.pop()
        for ins in comps[n].instructions if n in comps else ():
            for callee in ins.called_computations:
                if callee not in names:
                    names.add(callee)
                    todo.append(callee)
    return names


@wrong(
    "gemm_flops",
    why="'A GEMM is a dot (wherever it sits ...)' broken: leaves out every computation an "
    "async-start wraps, and what they call ('async-start wraps collectives, whose work is "
    "communication, not flops'), so a Triton GEMM fusion XLA runs asynchronously (printed "
    "fusion-start ... calls=%gemm_fusion ... fusion-done) counts 0 instead of 2*M*N*K.",
)
def _rt12_gemm_flops_skips_async_wrapped(hlo_text: str) -> int:
    cache: dict[int, set[str]] = {}

    def skip(module, comp):
        key = id(module)
        if key not in cache:
            cache[key] = _rt12_async_wrapped(module)
        return comp.name in cache[key]

    return _rt12_gemm_flops(hlo_text, skip)


# ---- task 5: collective_overlap ----------------------------------------------------------------

_rt12_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([^\s=]+)\s*=\s*.*?\s([a-z][a-z0-9\-]*)\(")


def _rt12_printed_opcodes(hlo_text: str) -> dict[str, str]:
    """instruction name -> the opcode as the text spells it (fusion-start, reduce-scatter-start)."""
    joined = hlo_text.replace("\\\n", " ")
    out: dict[str, str] = {}
    for line in joined.splitlines():
        m = _rt12_LINE.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def _rt12_collective_overlap(hlo_text: str, spell) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused = _rt12_fused_names(module)

    def holds_collective(names) -> bool:
        return any(
            ins.opcode in _rt12_COLLECTIVES
            for n in names
            if n in comps
            for ins in comps[n].instructions
        )

    wrapped_coll: set[str] = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start" and holds_collective(ins.called_computations):
                wrapped_coll.update(ins.called_computations)

    result: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name in wrapped_coll:
            continue
        seq = list(comp.instructions)
        for idx, ins in enumerate(seq):
            op = ins.opcode
            if op in _rt12_COLLECTIVES:
                result[ins.name] = []
                continue
            is_start = (op.endswith("-start") and op[: -len("-start")] in _rt12_COLLECTIVES) or (
                op == "async-start" and holds_collective(ins.called_computations)
            )
            if not is_start:
                continue
            chain = {ins.name}
            listed: list[str] = []
            for later in seq[idx + 1 :]:
                if (
                    later.operands
                    and later.operands[0] in chain
                    and (later.opcode.endswith("-update") or later.opcode.endswith("-done"))
                ):
                    if later.opcode.endswith("-done"):
                        break
                    chain.add(later.name)
                    continue
                listed.append(spell(later))
            result[ins.name] = listed
    return result


@wrong(
    "collective_overlap",
    why="'an in-flight async op wrapping another op is async-start / async-update / async-done "
    "however the text spells it' broken: lists each in-flight instruction by the opcode the text "
    "prints (read off its line), so an asynchronous fusion or reduce-scatter in flight under an "
    "all-gather is listed as 'fusion-start'/'reduce-scatter-start' ... 'fusion-done' instead of "
    "'async-start' ... 'async-done' (right for every module where nothing async-wrapped runs "
    "inside another collective's window).",
)
def _rt12_collective_overlap_printed_spelling(hlo_text: str) -> dict[str, list[str]]:
    printed = _rt12_printed_opcodes(hlo_text)
    return _rt12_collective_overlap(hlo_text, lambda ins: printed.get(ins.name, ins.opcode))


# ---- task 3: library_epilogues -----------------------------------------------------------------


def _rt12_custom_calls(hlo_text: str):
    module = parse_hlo(hlo_text)
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "custom-call":
                target = str(ins.attributes.get("custom_call_target", "")).strip('"')
                yield ins, target


@wrong(
    "library_epilogues",
    why="'for a cuDNN one (__cudnn$...) the activation_mode of its cudnn_conv_backend_config' "
    "broken by a name instead of the fact: answers from the target's name (convForward -> "
    "'kNone', convBiasActivationForward -> the config's activation_mode), so a "
    "`__cudnn$convForward` whose cudnn_conv_backend_config says activation_mode 'kRelu' is "
    "reported 'kNone'.",
)
def _rt12_library_epilogues_conv_forward_by_name(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for ins, target in _rt12_custom_calls(hlo_text):
        cfg = _rt12_config(ins)
        if target.startswith("__cublas$"):
            out[ins.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
        elif target.startswith("__cudnn$"):
            if target == "__cudnn$convForward":
                out[ins.name] = "kNone"
            else:
                out[ins.name] = cfg.get("cudnn_conv_backend_config", {}).get(
                    "activation_mode", "kNone"
                )
    return out


@wrong(
    "library_epilogues",
    why="'for a cuBLAS custom call ... the epilogue of its gemm_backend_config' broken: a "
    "cuBLAS-Lt call whose JSON omits the `epilogue` field (proto3 JSON leaves a default out; "
    "the field's default is DEFAULT) is left out of the dict ('no epilogue recorded, nothing "
    "fused'), so {'cublas-gemm.1': 'DEFAULT'} becomes {} for such a call.",
)
def _rt12_library_epilogues_missing_field_dropped(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for ins, target in _rt12_custom_calls(hlo_text):
        cfg = _rt12_config(ins)
        if target.startswith("__cublas$"):
            ep = cfg.get("gemm_backend_config", {}).get("epilogue")
            if ep is not None:
                out[ins.name] = ep
        elif target.startswith("__cudnn$"):
            am = cfg.get("cudnn_conv_backend_config", {}).get("activation_mode")
            if am is not None:
                out[ins.name] = am
    return out


# ---- task 9: allreduce_elements ----------------------------------------------------------------

_rt12_HLO_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}


@wrong(
    "allreduce_elements",
    why="'without x64 enabled, a NumPy float64 array ... is f32' applied to NumPy arrays only: "
    "a ShapeDtypeStruct((512, 512), jnp.float64) (or np.float64) parameter, which JAX lowers "
    "as f32 just the same, is keyed 'f64': {'f64': 262144} instead of {'f32': 262144}.",
)
def _rt12_allreduce_elements_sds_float64(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        if isinstance(leaf, np.ndarray) and leaf.dtype == np.float64:
            name = "f32"
        else:
            name = _rt12_HLO_NAMES.get(np.dtype(leaf.dtype).name, np.dtype(leaf.dtype).name)
        n = math.prod(leaf.shape)
        if n:
            out[name] = out.get(name, 0) + n
    return out


@wrong(
    "allreduce_elements",
    why="'elements all-reduced in that dtype' counted in a fixed-width NumPy int32 accumulator "
    "('element counts fit int32, XLA's own shape sizes are int64 only past 2**31'): "
    "a ShapeDtypeStruct((65536, 32768), bf16) has 2**31 elements and comes back "
    "{'bf16': -2147483648} instead of 2147483648.",
)
def _rt12_allreduce_elements_int32_total(params) -> dict[str, int]:
    totals: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        dt = jax.dtypes.canonicalize_dtype(leaf.dtype)
        name = _rt12_HLO_NAMES.get(np.dtype(dt).name, np.dtype(dt).name)
        n = np.prod(leaf.shape, dtype=np.int32)
        if n:
            totals[name] = np.int32(totals.get(name, 0)) + n
    return {k: int(v) for k, v in totals.items()}


@wrong(
    "collective_overlap",
    why="'The collectives are these five opcodes only' replaced by a fact that looks stronger: "
    "a collective is an instruction with a channel_id (cross-device traffic), async when a later "
    "`<op>-done` reads it. XLA:GPU's collective-permute decomposer turns a pipelined permute into "
    "send/recv with channel_ids, so `send`/`recv` (and their send-done/recv-done) become keys: a "
    "module with %recv = recv(...), channel_id=5 ... %recv-done = recv-done(%recv) gets an extra "
    "key 'recv' the contract does not list.",
)
def _rt12_collective_overlap_channel_id(hlo_text: str) -> dict[str, list[str]]:
    result = _rt12_collective_overlap(hlo_text, lambda ins: ins.opcode)
    module = parse_hlo(hlo_text)
    fused = _rt12_fused_names(module)
    for comp in module.computations:
        if comp.name in fused:
            continue
        seq = list(comp.instructions)
        for idx, ins in enumerate(seq):
            if ins.name in result or "channel_id" not in ins.attributes:
                continue
            if ins.opcode.endswith("-done") or ins.opcode.endswith("-update"):
                continue
            listed: list[str] = []
            for later in seq[idx + 1 :]:
                if (
                    later.opcode.endswith("-done")
                    and later.operands
                    and later.operands[0] == ins.name
                ):
                    break
                listed.append(later.opcode)
            else:
                listed = []
            result[ins.name] = listed
    return result


# ---- task 1: fusion_kinds ----------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="'Fusion instructions of every computation' read as 'of every computation that runs': "
    "walks the call graph from ENTRY (calls=, to_apply=, bodies, branches, async wrappers) and "
    "counts the fusions it meets, so a computation nothing calls is skipped: a module whose "
    "only kInput fusion sits in a computation no instruction names loses {'kInput': 1}.",
)
def _rt12_fusion_kinds_reachable_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    entry = next((c for c in module.computations if c.is_entry), module.computations[-1])
    seen: set[str] = set()
    todo = [entry.name]
    counts: dict[str, int] = {}
    while todo:
        name = todo.pop()
        if name in seen or name not in comps:
            continue
        seen.add(name)
        for ins in comps[name].instructions:
            if ins.opcode == "fusion":
                lab = _rt12_label(ins)
                counts[lab] = counts.get(lab, 0) + 1
            todo.extend(ins.called_computations)
    return counts


# ---- task 2 again: reduction_kinds -------------------------------------------------------------


@wrong(
    "reduction_kinds",
    why="'each reduce counted under the kind of the outermost fusion whose fused computation "
    "reaches it ... once per such fusion' broken by an owner map: every fused computation gets "
    "ONE owning kernel label (the first outermost fusion met in printed order) and all its "
    "kernels' reduces are counted under that label. Right while a deduplicated fused computation "
    "is only shared by fusions of one kind; when a kLoop fusion and a kInput fusion both call "
    "the fused computation holding a reduce it gives {'kLoop': 2} instead of "
    "{'kLoop': 1, 'kInput': 1}.",
)
def _rt12_reduction_kinds_one_owner_label(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module.computations}
    fused = _rt12_fused_names(module)
    owner: dict[str, str] = {}
    hits: dict[str, int] = {}  # fused computation -> number of outermost fusions reaching it
    counts: dict[str, int] = {}

    def reachable(names):
        seen: set[str] = set()
        todo = list(names)
        while todo:
            n = todo.pop()
            if n in seen or n not in comps:
                continue
            seen.add(n)
            for ins in comps[n].instructions:
                if ins.opcode == "fusion":
                    todo.extend(ins.called_computations)
        return seen

    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                lab = _rt12_label(ins)
                for n in reachable(ins.called_computations):
                    owner.setdefault(n, lab)
                    hits[n] = hits.get(n, 0) + 1
            elif ins.opcode == "reduce":
                counts["unfused"] = counts.get("unfused", 0) + 1
    for n, k in hits.items():
        r = sum(1 for ins in comps[n].instructions if ins.opcode == "reduce")
        if r:
            counts[owner[n]] = counts.get(owner[n], 0) + r * k
    return counts
