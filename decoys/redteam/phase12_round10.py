"""Red team round 10, phase 12: wrong answers of kinds earlier rounds did not try."""

from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt10_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt10_fused_names(module) -> set[str]:
    fused = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                fused.update(c.lstrip("%") for c in ins.called_computations)
    return fused


def _rt10_comp(module, name):
    for comp in module.computations:
        if comp.name.lstrip("%") == name.lstrip("%"):
            return comp
    return None


def _rt10_wrapped_collective(module, ins) -> bool:
    for c in ins.called_computations:
        comp = _rt10_comp(module, c)
        if comp is not None and any(i.opcode in _rt10_COLLECTIVES for i in comp.instructions):
            return True
    return False


def _rt10_scheduling_name(ins) -> str:
    meta = ins.attributes.get("metadata") or ""
    m = re.search(r'scheduling_name="([^"]*)"', str(meta))
    return m.group(1) if m else ins.name


def _rt10_overlap(hlo_text: str, key, normalise_async: bool = False) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = _rt10_fused_names(module)
    wrapped = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                wrapped.update(c.lstrip("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        name = comp.name.lstrip("%")
        if name in fused or name in wrapped:
            continue
        ins_list = list(comp.instructions)
        by_name = {i.name: i for i in ins_list}

        def label(i, by_name=by_name):
            if normalise_async and i.opcode.startswith("async-"):
                # XLA's reading: the wrapped root's opcode + -start/-update/-done
                start = i
                while start.opcode != "async-start" and start.operands:
                    start = by_name.get(start.operands[0], start)
                    if start.opcode not in ("async-start", "async-update"):
                        break
                for c in start.called_computations:
                    comp2 = _rt10_comp(module, c)
                    if comp2 is not None and comp2.root is not None:
                        root = comp2.root
                        if root.opcode == "tuple" and root.operands:
                            root = {j.name: j for j in comp2.instructions}.get(
                                root.operands[0], root
                            )
                        return root.opcode + i.opcode[len("async") :]
            return i.opcode

        for idx, ins in enumerate(ins_list):
            op = ins.opcode
            is_start = (op.endswith("-start") and op[: -len("-start")] in _rt10_COLLECTIVES) or (
                op == "async-start" and _rt10_wrapped_collective(module, ins)
            )
            if op in _rt10_COLLECTIVES:
                out[key(ins)] = []
                continue
            if not is_start:
                continue
            chain = {ins.name}
            flight: list[str] = []
            for later in ins_list[idx + 1 :]:
                reads = set(later.operands) & chain
                if reads and (later.opcode.endswith("-update")):
                    chain.add(later.name)
                    continue
                if reads and later.opcode.endswith("-done"):
                    break
                flight.append(label(later))
            out[key(ins)] = flight
    return out


@wrong(
    "collective_overlap",
    why="'its instruction name -> ...' broken: keys each collective by the scheduling_name in its "
    "metadata (what the profiler shows), falling back to the name only when there is no "
    "metadata. Wrong wherever the two differ: a renamed module (%n17 ...) keeps the metadata "
    "scheduling_name, and a pair XLA turned back into one synchronous collective keeps the "
    "start's scheduling_name: fsdp4_h100.hlo gives {'all-gather-start': []} for "
    "{'all-gather.7': []}, grad_mlp_bf16.hlo {'all-reduce-start': []} for {'all-reduce.8': []}",
)
def _rt10_collective_overlap_scheduling_name(hlo_text: str) -> dict[str, list[str]]:
    return _rt10_overlap(hlo_text, _rt10_scheduling_name)


@wrong(
    "collective_overlap",
    why="'the opcodes of the instructions printed between' broken: an in-flight generic "
    "async-start/-update/-done is listed as XLA reads it (the wrapped root's opcode: "
    "reduce-scatter-start, fusion-start, ...) as README says XLA prints it, not its printed "
    "opcode async-start. Wrong on a module where an all-gather-start ... all-gather-done pair "
    "has `%s = async-start(%y), calls=%wrapped_square` (a wrapped fusion) between them: gives "
    "['fusion-start', 'fusion-done'] for ['async-start', 'async-done']",
)
def _rt10_collective_overlap_reads_async_as_xla(hlo_text: str) -> dict[str, list[str]]:
    return _rt10_overlap(hlo_text, lambda i: i.name, normalise_async=True)


def _rt10_library(hlo_text: str, key) -> dict[str, str]:
    out: dict[str, str] = {}
    for comp in parse_hlo(hlo_text).computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call":
                continue
            target = str(ins.attributes.get("custom_call_target", "")).strip('"')
            if not (target.startswith("__cublas$") or target.startswith("__cudnn$")):
                continue
            cfg = json.loads(ins.attributes.get("backend_config") or "{}")
            if target.startswith("__cublas$"):
                out[key(ins)] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            else:
                out[key(ins)] = cfg.get("cudnn_conv_backend_config", {}).get(
                    "activation_mode", "kNone"
                )
    return out


@wrong(
    "library_epilogues",
    why="'by the call's instruction name' broken: keyed by the metadata's scheduling_name "
    "(XLA sets it to the instruction's name when it schedules), the name only when there is "
    "no metadata. Wrong when the module's names change but its metadata does not (a renamed "
    "dense_cublas_h100.hlo: keys 'cublas-lt-matmul.6' ... instead of the calls' new names), "
    "and for a call cloned after scheduling (the clone keeps the original's scheduling_name: "
    "two calls collapse to one key)",
)
def _rt10_library_epilogues_scheduling_name(hlo_text: str) -> dict[str, str]:
    return _rt10_library(hlo_text, _rt10_scheduling_name)


@wrong(
    "fused_dense",
    why="'x may have any rank from 2 ... the result keeps x's leading dimensions' broken: "
    "flattens x to 2-D for one cuBLAS GEMM and restores only the batch dimension "
    "(reshape(x.shape[0], -1, n)): right for rank 2 and 3, wrong for rank 4: "
    "x f32[2,3,24,64] gives shape (2, 72, 96) instead of (2, 3, 24, 96)",
)
def _rt10_fused_dense_restores_batch_only(x, w, b) -> jax.Array:
    h = x.reshape(-1, x.shape[-1]) @ w + b
    y = jax.nn.gelu(h, approximate=True)
    if x.ndim == 2:
        return y
    return y.reshape(x.shape[0], -1, w.shape[-1])


@wrong(
    "overlap_options",
    why="'The program and what it computes stay the same; only how XLA schedules its "
    "collectives changes' broken: besides un-combining the gathers and raising the in-flight "
    "limit it turns Triton GEMMs off (xla_gpu_enable_triton_gemm=False, 'cuBLAS calls are "
    "easier for the scheduler to overlap'): every GEMM becomes a cuBLAS custom call, a "
    "different program, on every stack of FSDP_DOMAIN (e.g. 6 layers of 128)",
)
def _rt10_overlap_options_also_cublas() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
        "xla_gpu_enable_triton_gemm": False,
    }


def _rt10_label(ins) -> str:
    kind = str(ins.attributes.get("kind", ""))
    cfg_text = ins.attributes.get("backend_config")
    inner = None
    if cfg_text:
        try:
            cfg = json.loads(cfg_text)
        except ValueError:
            cfg = {}
        for k in ("fusion_backend_config", "fusion_config"):
            if isinstance(cfg.get(k), dict) and cfg[k].get("kind"):
                inner = cfg[k]["kind"]
    return f"{kind}({inner})" if inner else kind


@wrong(
    "reduction_kinds",
    why="'the outermost fusion whose fused computation reaches it' broken: skips every "
    "computation an async-start wraps (as collective_overlap must), so a fusion run "
    "asynchronously (fusion-start: async-start calls=%wrapped holding `fusion(...), "
    "kind=kInput, calls=%fused_reduce`) is never seen and its reduce counts as 'unfused'; "
    "e.g. an async kInput row-sum fusion gives {'unfused': 1} for {'kInput': 1}",
)
def _rt10_reduction_kinds_skips_async_wrapped(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    wrapped = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "async-start":
                wrapped.update(c.lstrip("%") for c in ins.called_computations)
    callers: dict[str, list] = {}
    comp_of: dict[str, str] = {}
    for comp in module.computations:
        cname = comp.name.lstrip("%")
        if cname in wrapped:
            continue
        for ins in comp.instructions:
            comp_of[ins.name] = cname
            if ins.opcode == "fusion":
                for c in ins.called_computations:
                    callers.setdefault(c.lstrip("%"), []).append((cname, ins))

    def kernels(cname, seen=()):
        if cname in seen:
            return []
        if cname not in callers:
            return [None]
        found = []
        for parent, fusion in callers[cname]:
            outer = kernels(parent, seen + (cname,))
            found.extend(fusion if o is None else o for o in outer)
        return found

    out: dict[str, int] = {}
    for comp in module.computations:
        cname = comp.name.lstrip("%")
        reduces = [i for i in comp.instructions if i.opcode == "reduce"]
        if not reduces:
            continue
        ks = {id(k): k for k in kernels(cname)} if cname not in wrapped else {0: None}
        for k in ks.values():
            label = "unfused" if k is None else _rt10_label(k)
            out[label] = out.get(label, 0) + len(reduces)
    return out


@wrong(
    "fusion_kinds",
    why="'Fusion instructions of every computation' broken: an async fusion (an async-start "
    "whose calls= computation holds a fusion, XLA's fusion-start) is counted as a fusion "
    "itself, under the wrapped fusion's label, as well as the fusion it wraps: one kernel "
    "counted twice; e.g. `%s = async-start(%x), calls=%wrapped` with %wrapped holding "
    "`fusion(...), kind=kInput` gives {'kInput': 2} for {'kInput': 1} (scan_h100.hlo's "
    "async fusions, ASYNC_CHAINS' square-start)",
)
def _rt10_fusion_kinds_counts_fusion_start(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: dict[str, int] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            labels = []
            if ins.opcode == "fusion":
                labels.append(_rt10_label(ins))
            elif ins.opcode in ("async-start", "fusion-start"):
                for c in ins.called_computations:
                    wrapped = _rt10_comp(module, c)
                    if (
                        wrapped is not None
                        and wrapped.root is not None
                        and wrapped.root.opcode == "fusion"
                    ):
                        labels.append(_rt10_label(wrapped.root))
            for label in labels:
                out[label] = out.get(label, 0) + 1
    return out


_rt10_HLO_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


@wrong(
    "allreduce_elements",
    why="'the all-reduces XLA:GPU makes for the gradients of params (a pytree ...)' broken: "
    "a leaf that appears twice in the pytree (a tied weight: {'enc': w, 'dec': w} with the same "
    "ShapeDtypeStruct object) is counted once (deduplicated by id), but jax.grad makes one "
    "gradient per leaf and XLA concatenates and all-reduces both: {'enc': w, 'dec': w} with w "
    "f32[64,32] gives {'f32': 2048} for {'f32': 4096}",
)
def _rt10_allreduce_elements_tied_once(params) -> dict[str, int]:
    seen: set[int] = set()
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        if id(leaf) in seen:
            continue
        seen.add(id(leaf))
        n = 1
        for d in leaf.shape:
            n *= int(d)
        if n == 0:
            continue
        key = _rt10_HLO_NAMES[jnp.dtype(leaf.dtype).name]
        out[key] = out.get(key, 0) + n
    return out


@wrong(
    "overlap_options",
    why="'Every option must be one today's XLA knows, with a value of its type' broken: the "
    "values are the strings one writes in XLA_FLAGS ('0', '16') for an int64 threshold and an "
    "int limit; the options themselves are the right ones, their types are not (a str where "
    "XLA's flag is an int)",
)
def _rt10_overlap_options_flag_strings() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": "0",
        "xla_gpu_experimental_parallel_collective_overlap_limit": "16",
    }


@wrong(
    "gather_free_specs",
    why="'needs no collective at all' broken while saving more memory: x's rows are split over "
    "both mesh axes (P(('data','model'), None)) and w's columns over 'model': the output block "
    "of device (i, j) needs every row of data-block i, but the device holds only a quarter of "
    "x's rows, so XLA all-gathers x (or the output) over 'model'; wrong on every "
    "sharded_matmul, e.g. bf16 512x768 @ 768x1024 on gpu-h100",
)
def _rt10_gather_free_specs_rows_both_axes() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec(("data", "model"), None), PartitionSpec(None, "model")


def _rt10_dims(shape_text: str) -> list[int]:
    s = str(shape_text).strip().lstrip("(")
    m = re.match(r"[a-z0-9]+\[([^\]]*)\]", s)
    if not m or not m.group(1).strip():
        return []
    return [int(d.strip().lstrip("<=")) for d in m.group(1).split(",")]


def _rt10_ints(text) -> list[int]:
    return [int(v) for v in re.findall(r"\d+", str(text or ""))]


@wrong(
    "gemm_flops",
    why="'the count is exact for shapes of any size' broken: sizes multiplied with np.prod "
    "(int64, wraps silently) and the product taken as np.int64 too: right for every realistic "
    "GEMM, wrong once 2*out*K passes 2**63, e.g. `f32[4194304,4194304] dot(f32[4194304,1048576] "
    "a, f32[1048576,4194304] b)` (2**65): gives 0 instead of 36893488147419103232",
)
def _rt10_gemm_flops_int64(hlo_text: str) -> int:
    import numpy as np

    module = parse_hlo(hlo_text)
    total = np.int64(0)
    for comp in module.computations:
        shapes = {i.name: i.shape for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode == "dot":
                out = _rt10_dims(ins.shape)
                lhs = _rt10_dims(shapes.get(ins.operands[0], ""))
                dims = _rt10_ints(ins.attributes.get("lhs_contracting_dims"))
            elif ins.opcode == "custom-call" and str(
                ins.attributes.get("custom_call_target", "")
            ).strip('"').startswith("__cublas$"):
                cfg = json.loads(ins.attributes.get("backend_config") or "{}")
                dn = cfg.get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                out = _rt10_dims(ins.shape)
                lhs = _rt10_dims(shapes.get(ins.operands[0], ""))
                dims = [int(d) for d in dn.get("lhs_contracting_dimensions", [])]
            else:
                continue
            k = np.prod([lhs[d] for d in dims], dtype=np.int64)
            with np.errstate(over="ignore"):
                total = total + np.int64(2) * np.prod(out, dtype=np.int64) * k
    return int(total)
