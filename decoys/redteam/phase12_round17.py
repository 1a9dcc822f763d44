"""Red team, phase 12, round 17: a config flag trusted over the schedule (is_sync on a start),
an async GEMM fusion counted twice, a half-fixed spec, a rank-3-only reshape, library calls
without a backend_config dropped, a JSON-like pytree walk, an off-by-two overlap limit."""

from __future__ import annotations

import json
import math
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt17_FIVE = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")
_rt17_HLO = {"float32": "f32", "float64": "f32", "bfloat16": "bf16", "float16": "f16"}


def _rt17_json(ins):
    try:
        return json.loads(ins.attribute("backend_config") or "")
    except (ValueError, TypeError):
        return {}


def _rt17_target(ins) -> str:
    return (ins.attribute("custom_call_target") or "").strip('"')


def _rt17_dims(ins) -> tuple[int, ...]:
    return tuple(int(d) for d in ins.shape_info.dims)


@wrong(
    "collective_overlap",
    why="Clause 'the list holds the opcodes of the instructions printed between the start and its "
    "done': trusts the start's collective_backend_config instead of the schedule: an "
    'all-gather-start marked "is_sync":true (README: a synchronous collective carries is_sync) '
    "is taken as synchronous and mapped to []; a module with `%ag = all-gather-start(%p), ..., "
    'backend_config={"collective_backend_config":{"is_sync":true}}` then `%n = negate(%q)` then '
    "`all-gather-done(%ag)` gives {'ag': []} instead of {'ag': ['negate']}.",
)
def _rt17_collective_overlap_is_sync_start(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused: set[str] = set()
    wrapped: set[str] = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                fused.update(c.removeprefix("%") for c in ins.called_computations)
            if ins.opcode == "async-start":
                wrapped.update(c.removeprefix("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name in wrapped:
            continue
        ops = list(comp.instructions)
        for k, ins in enumerate(ops):
            if ins.opcode in _rt17_FIVE:
                out[ins.name] = []
                continue
            if ins.opcode == "async-start":
                called = [c.removeprefix("%") for c in ins.called_computations]
                inner = module.computation(called[0]) if called else None
                if inner is None or not any(i.opcode in _rt17_FIVE for i in inner.instructions):
                    continue
            elif not (ins.opcode.endswith("-start") and ins.opcode[: -len("-start")] in _rt17_FIVE):
                continue
            cfg = _rt17_json(ins).get("collective_backend_config", {})
            if cfg.get("is_sync"):
                out[ins.name] = []
                continue
            cur = ins.name
            between: list[str] = []
            for later in ops[k + 1 :]:
                if cur in later.operands and later.opcode.endswith("-update"):
                    cur = later.name
                    continue
                if cur in later.operands and later.opcode.endswith("-done"):
                    break
                between.append(later.opcode)
            out[ins.name] = between
    return out


@wrong(
    "gemm_flops",
    why="Clause 'a fusion started asynchronously (fusion-start or an async-start wrapping it) is a "
    "GEMM's kernel all the same' read as 'count its GEMM as well': the dots of every computation "
    "are counted, and for each async-start the dots its wrapped fusion reaches are added again, so "
    "a GEMM run by fusion-start is counted twice; a module whose ENTRY runs `fusion-start(...), "
    "kind=kCustom, calls=%gemm` (f32[8,16] x f32[16,32] dot) gives 16384 instead of 8192.",
)
def _rt17_gemm_flops_async_counted_twice(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)

    def dots_of(comp, seen):
        total = 0
        if comp is None or comp.name in seen:
            return 0
        seen.add(comp.name)
        for ins in comp.instructions:
            if ins.opcode == "dot":
                lhs = _rt17_dims(comp.instruction(ins.operands[0]))
                cd = ins.attribute("lhs_contracting_dims") or "{}"
                ks = [int(c) for c in cd.strip("{}").split(",") if c.strip()]
                total += 2 * math.prod(_rt17_dims(ins)) * math.prod(lhs[c] for c in ks)
            for c in ins.called_computations:
                total += dots_of(module.computation(c.removeprefix("%")), seen)
        return total

    total = 0
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "dot":
                lhs = _rt17_dims(comp.instruction(ins.operands[0]))
                cd = ins.attribute("lhs_contracting_dims") or "{}"
                ks = [int(c) for c in cd.strip("{}").split(",") if c.strip()]
                total += 2 * math.prod(_rt17_dims(ins)) * math.prod(lhs[c] for c in ks)
            elif ins.opcode == "custom-call" and _rt17_target(ins).startswith("__cublas$"):
                dn = _rt17_json(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                lhs = _rt17_dims(comp.instruction(ins.operands[0]))
                k = math.prod(lhs[int(c)] for c in dn.get("lhs_contracting_dimensions", []))
                first = ins.shape_info.elements[0] if ins.shape_info.is_tuple else ins.shape_info
                total += 2 * math.prod(int(d) for d in first.dims) * k
            elif ins.opcode == "async-start":
                for c in ins.called_computations:
                    total += dots_of(module.computation(c.removeprefix("%")), set())
    return total


@wrong(
    "gather_free_specs",
    why="Clause 'needs no collective at all': fixes only x (each device needs whole rows of x: "
    "P('data', None)) and keeps w as the original P('data', 'model'), taking the 'data' split of "
    "w's rows for a harmless batch split; w's rows are K, so every device must all-gather its "
    "column block over 'data' (1024x2048 @ 2048x4096 on gpu-h100 compiles an all-gather), though "
    "the memory budget is met.",
)
def _rt17_gather_free_specs_only_x_fixed() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec("data", "model")


@wrong(
    "fused_dense",
    why="Clause 'x may have any rank from 2 ... the result keeps x's leading dimensions': "
    "flattens to 2-D for the cuBLAS GEMM and restores a batch of sequences [a, m, n] as "
    "reshape(x.shape[0], -1, n), right for rank 2 and 3 only; a rank-4 x bf16[2,3,40,72] with "
    "w [72,48] returns shape (2, 120, 48) instead of (2, 3, 40, 48).",
)
def _rt17_fused_dense_rank3_restore(x, w, b) -> jax.Array:
    k, n = w.shape
    h = jnp.matmul(x.reshape(-1, k), w) + b
    y = jax.nn.gelu(h, approximate=True)
    if x.ndim == 2:
        return y
    return y.reshape(x.shape[0], -1, n)


@wrong(
    "library_epilogues",
    why="Clause 'every __cudnn$ call that is no convolution (... or no backend_config at all): "
    "kNone': skips any custom call printed without a backend_config before looking at its target "
    '(nothing to read), so a `custom-call(...), custom_call_target="__cudnn$norm"` with no '
    "backend_config is missing instead of mapped to kNone.",
)
def _rt17_library_epilogues_needs_config(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode != "custom-call" or not ins.attribute("backend_config"):
                continue
            target = _rt17_target(ins)
            if target.startswith("__cublas$"):
                cfg = _rt17_json(ins).get("gemm_backend_config", {})
                out[ins.name] = cfg.get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$"):
                cfg = _rt17_json(ins).get("cudnn_conv_backend_config", {})
                out[ins.name] = cfg.get("activation_mode", "kNone")
    return out


def _rt17_walk(node, leaves):
    if isinstance(node, dict):
        for v in node.values():
            _rt17_walk(v, leaves)
    elif isinstance(node, list):
        for v in node:
            _rt17_walk(v, leaves)
    elif hasattr(node, "shape") and hasattr(node, "dtype"):
        leaves.append(node)


@wrong(
    "allreduce_elements",
    why="Clause 'A pytree is JAX's (jax.tree ...)': walks params as nested dicts and lists "
    "(JSON-like, as optax/flax state dicts print) and takes anything with shape and dtype as a "
    "leaf, so a tuple node holds nothing; {'layer': (sds((4, 4), f32), sds((4,), f32))} gives {} "
    "instead of {'f32': 20}.",
)
def _rt17_allreduce_elements_dict_list_walk(params) -> dict[str, int]:
    leaves: list = []
    _rt17_walk(params, leaves)
    out: Counter[str] = Counter()
    for leaf in leaves:
        dt = np.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype))
        n = math.prod(int(d) for d in leaf.shape)
        if n:
            out[_rt17_HLO.get(dt.name, dt.name)] += n
    return dict(out)


@wrong(
    "overlap_options",
    why="Clause 'every one of them but the first layer's an async pair ... for every stack of "
    "FSDP_DOMAIN (2 to 16 layers)': combiner off and an in-flight limit of 14, reasoning that in "
    "a 16-layer stack neither the first gather (nothing before it) nor the last (nothing after "
    "its GEMM) needs a slot; on gpu-h100 a 16-layer stack of 64-wide weights (x 128 rows) keeps "
    "only 14 of its 16 gathers overlapped instead of 15.",
)
def _rt17_overlap_options_limit_14() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 14,
    }


def _rt17_label(ins) -> str:
    kind = ins.attribute("kind") or ""
    cfg = _rt17_json(ins)
    sub = cfg.get("fusion_backend_config") or cfg.get("fusion_config") or {}
    custom = sub.get("kind") if isinstance(sub, dict) else None
    return f"{kind}({custom})" if custom else kind


@wrong(
    "reduction_kinds",
    why="Clause 'Leave out kinds with no reduce': starts the count from {'unfused': 0} (so that "
    "'unfused' is always there to read) and fills the fusion kinds as found, so a module whose "
    "reduces are all fused keeps 'unfused': 0; a module with one kInput fusion holding one reduce "
    "and nothing else gives {'unfused': 0, 'kInput': 1} instead of {'kInput': 1}.",
)
def _rt17_reduction_kinds_unfused_zero(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused: set[str] = set()

    def reach(name: str, seen: set[str]) -> None:
        if name in seen:
            return
        seen.add(name)
        comp = module.computation(name)
        if comp is None:
            return
        for ins in comp.instructions:
            for c in ins.called_computations:
                reach(c.removeprefix("%"), seen)

    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                for c in ins.called_computations:
                    reach(c.removeprefix("%"), fused)
    out: dict[str, int] = {"unfused": 0}
    for comp in module.computations:
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "reduce":
                out["unfused"] += 1
            elif ins.opcode == "fusion":
                seen: set[str] = set()
                for c in ins.called_computations:
                    reach(c.removeprefix("%"), seen)
                n = sum(
                    1
                    for name in seen
                    for i in (
                        module.computation(name).instructions if module.computation(name) else ()
                    )
                    if i.opcode == "reduce"
                )
                if n:
                    label = _rt17_label(ins)
                    out[label] = out.get(label, 0) + n
    return out


@wrong(
    "collective_overlap",
    why="Clause 'those updates are the collective's own steps, not in its list': drops every "
    "`-update` (async-update) from every list, not only the collective's own; with two generic "
    "async collectives in flight together (%rs_start = async-start calls=%wrapped_reduce_scatter, "
    "%ar_start = async-start calls=%wrapped_all_reduce, %rs_update = async-update(%rs_start), "
    "%ar_done = async-done(%ar_start), %rs_done = async-done(%rs_update)), rs_start's update runs "
    "while ar_start is in flight: ar_start gets [] instead of ['async-update'].",
)
def _rt17_collective_overlap_drops_all_updates(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused: set[str] = set()
    wrapped: set[str] = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "fusion":
                fused.update(c.removeprefix("%") for c in ins.called_computations)
            if ins.opcode == "async-start":
                wrapped.update(c.removeprefix("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for comp in module.computations:
        if comp.name in fused or comp.name in wrapped:
            continue
        ops = list(comp.instructions)
        for k, ins in enumerate(ops):
            if ins.opcode in _rt17_FIVE:
                out[ins.name] = []
                continue
            if ins.opcode == "async-start":
                called = [c.removeprefix("%") for c in ins.called_computations]
                inner = module.computation(called[0]) if called else None
                if inner is None or not any(i.opcode in _rt17_FIVE for i in inner.instructions):
                    continue
            elif not (ins.opcode.endswith("-start") and ins.opcode[: -len("-start")] in _rt17_FIVE):
                continue
            cur = ins.name
            between: list[str] = []
            for later in ops[k + 1 :]:
                if later.opcode.endswith("-update"):
                    if cur in later.operands:
                        cur = later.name
                    continue
                if cur in later.operands and later.opcode.endswith("-done"):
                    break
                between.append(later.opcode)
            out[ins.name] = between
    return out


@wrong(
    "fused_dense",
    why="Clause 'the same values as programs.handwritten_gelu_dense(x, w, b)': mimics the cuBLAS "
    "epilogue (product kept in f32, bias added in f32, one rounding to bf16 before the gelu), "
    "while the hand-written layer rounds x @ w to bf16 before adding b; bf16 x = [[256, 1]], "
    "w = [[1], [1]], b = [-256]: x @ w = 257 rounds to 256 in bf16, so the reference is "
    "gelu(0) = 0, this answer gelu(1) = 0.84.",
)
def _rt17_fused_dense_bias_in_f32(x, w, b) -> jax.Array:
    h = jnp.matmul(x, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)
    return jax.nn.gelu(h.astype(x.dtype), approximate=True)
