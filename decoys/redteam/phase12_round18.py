"""Red team, phase 12, round 18: blind wrong answers (from README, stub, tasks.toml, programs.py)."""

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

_rt18_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


def _rt18_unquote(text):
    text = text or ""
    return text[1:-1] if len(text) >= 2 and text[0] == '"' and text[-1] == '"' else text


def _rt18_calls(inst):
    return (inst.attribute("calls") or "").removeprefix("%")


def _rt18_custom_kind(inst):
    raw = inst.attribute("backend_config")
    if not raw:
        return None
    try:
        cfg = json.loads(_rt18_unquote(raw) if raw.startswith('"') else raw)
    except ValueError:
        return None
    if not isinstance(cfg, dict):
        return None
    for key in ("fusion_backend_config", "fusion_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("kind"):
            return sub["kind"]
    return None


def _rt18_label(inst):
    kind = inst.attribute("kind") or ""
    custom = _rt18_custom_kind(inst)
    return f"{kind}({custom})" if custom else kind


def _rt18_reach(module, roots):
    seen, out, todo = set(), [], list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        comp = module.computation(name)
        if comp is None:
            continue
        out.append(comp)
        todo.extend(comp.calls)
    return out


def _rt18_fused_names(module):
    roots = [
        _rt18_calls(i) for c in module.computations for i in c.instructions if i.opcode == "fusion"
    ]
    return {c.name for c in _rt18_reach(module, roots)}


# ---- task 1: fusion_kinds ----------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="Clause 'those of a computation no instruction calls: every computation the text holds': walks the call graph from ENTRY; in programs.FUSIONS_ELSEWHERE the kInput fusion of %spare (called by nobody) is missed (kInput 1 instead of 2).",
)
def _rt18_fusion_kinds_from_entry(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: Counter[str] = Counter()
    for comp in _rt18_reach(module, [module.entry.name]):
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                counts[_rt18_label(inst)] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="Clause 'a fusion whose backend_config names a kind ... kLoop(__dynamic_memcpy) for a kLoop fusion so marked': reads the backend_config kind only on kCustom fusions; a kLoop fusion with fusion_backend_config kind __dynamic_memcpy is counted as plain kLoop.",
)
def _rt18_fusion_kinds_custom_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: Counter[str] = Counter()
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                kind = inst.attribute("kind") or ""
                custom = _rt18_custom_kind(inst) if kind == "kCustom" else None
                counts[f"{kind}({custom})" if custom else kind] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="Clause 'Works on CPU, GPU and TPU text alike' / CPU spells it fusion_config: reads only the GPU key fusion_backend_config; on the CPU module of programs.block a kCustom fusion with fusion_config kind (e.g. __ynn_fusion / dot fusion) is counted as bare kCustom.",
)
def _rt18_fusion_kinds_gpu_key(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: Counter[str] = Counter()
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode != "fusion":
                continue
            kind = inst.attribute("kind") or ""
            custom = None
            raw = inst.attribute("backend_config")
            if raw:
                try:
                    custom = json.loads(raw).get("fusion_backend_config", {}).get("kind")
                except (ValueError, AttributeError):
                    custom = None
            counts[f"{kind}({custom})" if custom else kind] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="Clause 'fusions nested in fusions included': counts only kernels, skipping fusion instructions inside fused computations; in programs.NESTED_REDUCTIONS the kLoop fusions nested in the kInput and Triton fusions are missed (kLoop 2 instead of 4).",
)
def _rt18_fusion_kinds_top_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused = _rt18_fused_names(module)
    counts: Counter[str] = Counter()
    for comp in module.computations:
        if comp.name in fused:
            continue
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                counts[_rt18_label(inst)] += 1
    return dict(counts)


# ---- task 2: reduction_kinds -------------------------------------------------------------------


def _rt18_reduction_kinds(
    hlo_text, *, innermost=False, dedupe=False, is_reduce=None, unfused_entry_only=False
):
    is_reduce = is_reduce or (lambda op: op == "reduce")
    module = parse_hlo(hlo_text)
    fused = _rt18_fused_names(module)
    counts: Counter[str] = Counter()
    done = set()
    for comp in module.computations:
        if comp.name in fused:
            continue
        for inst in comp.instructions:
            if inst.opcode != "fusion":
                continue
            for reached in _rt18_reach(module, [_rt18_calls(inst)]):
                if dedupe and reached.name in done:
                    continue
                done.add(reached.name)
                n = sum(is_reduce(i.opcode) for i in reached.instructions)
                if not n:
                    continue
                label = _rt18_label(inst)
                if innermost:
                    for c2 in _rt18_reach(module, [_rt18_calls(inst)]):
                        for i2 in c2.instructions:
                            if i2.opcode == "fusion" and _rt18_calls(i2) == reached.name:
                                label = _rt18_label(i2)
                counts[label] += n
    unfused_comps = (
        [module.entry]
        if unfused_entry_only
        else [c for c in module.computations if c.name not in fused]
    )
    for comp in unfused_comps:
        n = sum(is_reduce(i.opcode) for i in comp.instructions)
        if n:
            counts["unfused"] += n
    return dict(counts)


@wrong(
    "reduction_kinds",
    why="Clause 'the kind of the outermost fusion whose fused computation reaches it': counts a reduce under the fusion that directly calls its computation; in programs.NESTED_REDUCTIONS the reduce in %row_sums (kLoop nested in kInput) goes to kLoop, and %row_maxes (kLoop in the Triton fusion) too.",
)
def _rt18_reduction_kinds_innermost(hlo_text: str) -> dict[str, int]:
    return _rt18_reduction_kinds(hlo_text, innermost=True)


@wrong(
    "reduction_kinds",
    why="Clause 'opcode reduce: an all-reduce, reduce-scatter or reduce-window is not one': matches 'reduce' in the opcode; programs.NESTED_REDUCTIONS then counts reduce-window and reduce-precision under kLoop and the all-reduce/reduce-scatter as unfused.",
)
def _rt18_reduction_kinds_substring(hlo_text: str) -> dict[str, int]:
    return _rt18_reduction_kinds(hlo_text, is_reduce=lambda op: "reduce" in op)


@wrong(
    "reduction_kinds",
    why="Clause 'a fused computation that several outermost fusions reach runs in each of their kernels (once per such fusion)': counts each fused computation once; in programs.FUSIONS_ELSEWHERE %fused_column_sums (reached by a kLoop and a kInput fusion) counts only under the first.",
)
def _rt18_reduction_kinds_dedupe(hlo_text: str) -> dict[str, int]:
    return _rt18_reduction_kinds(hlo_text, dedupe=True)


@wrong(
    "reduction_kinds",
    why="Clause 'unfused when no fusion holds it' (any computation): counts unfused reduces in ENTRY only; misses the reduce in the called %helper of programs.NESTED_REDUCTIONS and the while-condition reduce of reduce_places_h100.hlo.",
)
def _rt18_reduction_kinds_entry_unfused(hlo_text: str) -> dict[str, int]:
    return _rt18_reduction_kinds(hlo_text, unfused_entry_only=True)


# ---- task 3: library_epilogues -----------------------------------------------------------------


def _rt18_config(inst):
    raw = inst.attribute("backend_config")
    if not raw:
        return None
    try:
        cfg = json.loads(_rt18_unquote(raw) if raw.startswith('"') else raw)
    except ValueError:
        return None
    return cfg if isinstance(cfg, dict) else None


@wrong(
    "library_epilogues",
    why="Clause 'A field the JSON leaves out ... has its proto default: DEFAULT, kNone; the call is still in the dict': skips a call whose config has no epilogue/activation_mode; a __cublas$lt$matmul whose gemm_backend_config omits epilogue (proto3 default) is missing instead of 'DEFAULT'.",
)
def _rt18_library_epilogues_skip_missing(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode != "custom-call":
                continue
            target = _rt18_unquote(inst.attribute("custom_call_target"))
            cfg = _rt18_config(inst) or {}
            if target.startswith("__cublas$"):
                epi = cfg.get("gemm_backend_config", {}).get("epilogue")
                if epi is not None:
                    out[inst.name] = epi
            elif target.startswith("__cudnn$"):
                act = cfg.get("cudnn_conv_backend_config", {}).get("activation_mode")
                if act is not None:
                    out[inst.name] = act
    return out


@wrong(
    "library_epilogues",
    why="Clause 'read from the config whatever the target's name': a __cudnn$convForward is taken as kNone without reading its config; a convForward whose cudnn_conv_backend_config says activation_mode kRelu is reported kNone.",
)
def _rt18_library_epilogues_by_target(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode != "custom-call":
                continue
            target = _rt18_unquote(inst.attribute("custom_call_target"))
            cfg = _rt18_config(inst) or {}
            if target.startswith("__cublas$"):
                out[inst.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif target == "__cudnn$convBiasActivationForward":
                out[inst.name] = cfg.get("cudnn_conv_backend_config", {}).get(
                    "activation_mode", "kNone"
                )
            elif target.startswith("__cudnn$"):
                out[inst.name] = "kNone"
    return out


@wrong(
    "library_epilogues",
    why="Clause 'So is every __cudnn$ call that is no convolution ... kNone': keeps only cuDNN calls that carry a cudnn_conv_backend_config; a __cudnn$norm (or fMHA) call is left out of the dict.",
)
def _rt18_library_epilogues_conv_only(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode != "custom-call":
                continue
            target = _rt18_unquote(inst.attribute("custom_call_target"))
            cfg = _rt18_config(inst) or {}
            if target.startswith("__cublas$"):
                out[inst.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$") and "cudnn_conv_backend_config" in cfg:
                out[inst.name] = cfg["cudnn_conv_backend_config"].get("activation_mode", "kNone")
    return out


@wrong(
    "library_epilogues",
    why="Clause 'XLA's library calls are the targets starting __cublas$ and __cudnn$': matches 'cublas'/'cudnn' anywhere in the target; a jaxlib FFI call cudnn_rnn_ffi is reported (as kNone) though it is no library call.",
)
def _rt18_library_epilogues_substring(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode != "custom-call":
                continue
            target = _rt18_unquote(inst.attribute("custom_call_target"))
            cfg = _rt18_config(inst) or {}
            if "cublas" in target:
                out[inst.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif "cudnn" in target:
                out[inst.name] = cfg.get("cudnn_conv_backend_config", {}).get(
                    "activation_mode", "kNone"
                )
    return out


# ---- task 4: gemm_flops ------------------------------------------------------------------------


def _rt18_dims(shape_text):
    from xla_inspect.model import Shape

    s = Shape(shape_text)
    if s.is_tuple:
        s = s.elements[0]
    return tuple(d or 0 for d in s.dims)


def _rt18_gemm_one(
    comp, inst, *, cublas=True, tuple_all=False, first_contract=False, prod=math.prod
):
    if inst.opcode == "dot":
        lhs = comp.instruction(inst.operands[0])
        ldims = _rt18_dims(lhs.shape) if lhs is not None else ()
        contract = [
            int(d)
            for d in (inst.attribute("lhs_contracting_dims") or "{}").strip("{}").split(",")
            if d.strip()
        ]
        if first_contract:
            contract = contract[:1]
        return 2 * prod(_rt18_dims(inst.shape)) * prod([ldims[d] for d in contract])
    if (
        cublas
        and inst.opcode == "custom-call"
        and _rt18_unquote(inst.attribute("custom_call_target")).startswith("__cublas$")
    ):
        cfg = _rt18_config(inst) or {}
        dn = cfg.get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
        contract = [int(d) for d in dn.get("lhs_contracting_dimensions", [])]
        lhs = comp.instruction(inst.operands[0])
        ldims = _rt18_dims(lhs.shape) if lhs is not None else ()
        from xla_inspect.model import Shape

        s = Shape(inst.shape)
        if tuple_all and s.is_tuple:
            out = sum(math.prod(d or 0 for d in e.dims) for e in s.elements)
        else:
            out = prod(_rt18_dims(inst.shape))
        return 2 * out * prod([ldims[d] for d in contract])
    return 0


@wrong(
    "gemm_flops",
    why="Clause 'A GEMM is a dot ... or a cuBLAS custom call': counts dot instructions only; on dense_cublas_h100.hlo (every GEMM a __cublas$lt$matmul call) it returns 0.",
)
def _rt18_gemm_flops_dots_only(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return int(
        sum(_rt18_gemm_one(c, i, cublas=False) for c in module.computations for i in c.instructions)
    )


@wrong(
    "gemm_flops",
    why="Clause 'whose output is the first element of its tuple': counts every element of the cuBLAS call's tuple, the s8[4194304] workspace included; dense_cublas_h100.hlo is overcounted by millions of flops per call.",
)
def _rt18_gemm_flops_whole_tuple(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return int(
        sum(
            _rt18_gemm_one(c, i, tuple_all=True)
            for c in module.computations
            for i in c.instructions
        )
    )


@wrong(
    "gemm_flops",
    why="Clause 'a fused computation two fusions run ... holds its GEMMs once' and 'one that nothing calls too': walks from ENTRY and recurses per call site; a fused GEMM computation called by two fusions counts twice, and a computation nothing calls counts 0 (e.g. a dedup'd Triton GEMM computation shared by two fusions).",
)
def _rt18_gemm_flops_per_call(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)

    def walk(name, depth=0):
        comp = module.computation(name)
        if comp is None or depth > 50:
            return 0
        total = 0
        for inst in comp.instructions:
            total += _rt18_gemm_one(comp, inst)
            for callee in inst.called_computations:
                total += walk(callee.removeprefix("%"), depth + 1)
        return total

    return int(walk(module.entry.name))


@wrong(
    "gemm_flops",
    why="Clause 'a dot may contract several dimensions at once': takes only the first lhs contracting dimension; on the pre-optimization module of jnp.einsum('ijk,jkn->in', a[8,16,32], b[16,32,64]) (lhs_contracting_dims={1,2}) it gives 2*512*16 instead of 2*512*512.",
)
def _rt18_gemm_flops_first_contract(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return int(
        sum(
            _rt18_gemm_one(c, i, first_contract=True)
            for c in module.computations
            for i in c.instructions
        )
    )


@wrong(
    "gemm_flops",
    why="Clause 'exact for shapes of any size, past 64 bits too': accumulates with numpy int64 products; a dot f32[2^22,2^22] x f32[2^22,2^22] (2*2^44*2^22 = 2^67 flops) wraps around.",
)
def _rt18_gemm_flops_int64(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)

    def prod(xs):
        return np.prod(np.asarray(list(xs), dtype=np.int64), dtype=np.int64)

    with np.errstate(over="ignore"):
        total = np.int64(0)
        for c in module.computations:
            for i in c.instructions:
                total = np.int64(total + np.int64(_rt18_gemm_one(c, i, prod=prod)))
    return int(total)


# ---- task 5: collective_overlap ----------------------------------------------------------------


def _rt18_overlap(
    hlo_text,
    *,
    by_order=False,
    keep_updates=False,
    entry_only=False,
    fusion_collectives=False,
    skip_sync=False,
):
    module = parse_hlo(hlo_text)
    fused = _rt18_fused_names(module)
    wrapped = {
        _rt18_calls(i)
        for c in module.computations
        for i in c.instructions
        if i.opcode == "async-start"
    }

    def holds_collective(name, deep):
        comps = _rt18_reach(module, [name]) if deep else [module.computation(name)]
        return any(
            i.opcode in _rt18_COLLECTIVES for c in comps if c is not None for i in c.instructions
        )

    out = {}
    comps = (
        [module.entry]
        if entry_only
        else [c for c in module.computations if c.name not in fused and c.name not in wrapped]
    )
    for comp in comps:
        insts = list(comp.instructions)
        for k, inst in enumerate(insts):
            op = inst.opcode
            if op in _rt18_COLLECTIVES:
                if not skip_sync:
                    out[inst.name] = []
                continue
            is_start = op in {c + "-start" for c in _rt18_COLLECTIVES}
            if op == "async-start":
                is_start = holds_collective(_rt18_calls(inst), fusion_collectives)
            if not is_start:
                continue
            family = op[: -len("-start")]
            chain, end = {inst.name}, None
            for j in range(k + 1, len(insts)):
                nxt = insts[j]
                if by_order:
                    if nxt.opcode == family + "-done":
                        end = j
                        break
                    continue
                if any(o in chain for o in nxt.operands):
                    if nxt.opcode.endswith("-update"):
                        chain.add(nxt.name)
                        continue
                    if nxt.opcode.endswith("-done"):
                        end = j
                        break
            between = insts[k + 1 : end] if end is not None else insts[k + 1 :]
            out[inst.name] = [b.opcode for b in between if keep_updates or b.name not in chain]
    return out


@wrong(
    "collective_overlap",
    why="Clause 'How do you find the done that belongs to a start?' (the done reads the start): pairs each start with the next done of its kind in print order; in programs.NESTED_COLLECTIVES %first-start is closed by %second-done, giving [parameter, all-gather-start, negate] instead of [..., all-gather-done, exponential].",
)
def _rt18_collective_overlap_next_done(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, by_order=True)


@wrong(
    "collective_overlap",
    why="Clause 'those updates are the collective's own steps, not in its list': lists the -update steps between start and done; a reduce-scatter-start -> async-update -> done lists 'async-update'.",
)
def _rt18_collective_overlap_keep_updates(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, keep_updates=True)


@wrong(
    "collective_overlap",
    why="Clause 'every computation that is not a fused computation': reads ENTRY only; programs.NESTED_COLLECTIVES' while-body collective-permute-start and all-reduce and the called computation's gathers are missing.",
)
def _rt18_collective_overlap_entry(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, entry_only=True)


@wrong(
    "collective_overlap",
    why="Clause 'An async-start wrapping anything else (a fusion...) is no collective, even a fusion whose fused computation holds one': counts an async fusion whose fused computation holds an all-reduce as a collective start; grad_fused_all_reduce_h100.hlo gets extra keys for its fusion-starts.",
)
def _rt18_collective_overlap_fused_ar(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, fusion_collectives=True)


@wrong(
    "collective_overlap",
    why="Clause 'A synchronous collective (a plain all-gather, ...) maps to []': leaves synchronous collectives out (nothing in flight); matmul_2x2_h100.hlo's plain all-gathers are missing keys.",
)
def _rt18_collective_overlap_no_sync(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, skip_sync=True)


# ---- task 6: overlap_options -------------------------------------------------------------------


@wrong(
    "overlap_options",
    why="Clause 'The budget holds for every stack of programs.FSDP_DOMAIN ... 2 to 16 layers': stops the combiner and allows 8 collectives in flight, which passes FSDP_CASES, but on a 16-layer 64-wide stack (x of 128 rows) only 8 of 16 gathers are async (budget 15).",
)
def _rt18_overlap_options_limit8() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 8,
    }


@wrong(
    "overlap_options",
    why="Clause 'every one of them but the first layer's an async pair': only turns the combiner off; with one collective in flight at a time the 6-layer 64-wide case (programs.FSDP_CASES) keeps 1 async pair and 5 synchronous gathers.",
)
def _rt18_overlap_options_combiner_only() -> dict[str, bool | int | str]:
    return {"xla_gpu_all_gather_combine_threshold_bytes": 0}


@wrong(
    "overlap_options",
    why="Clause 'an int for an integer one ... (not \"16\" for an int ...)': the right flags but values as strings, as XLA_FLAGS would spell them.",
)
def _rt18_overlap_options_strings() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": "0",
        "xla_gpu_experimental_parallel_collective_overlap_limit": "16",
    }


# ---- task 7: gather_free_specs -----------------------------------------------------------------


@wrong(
    "gather_free_specs",
    why="Clause 'splitting the contracted dimension trades gathers for a reduction': splits K (x's columns, w's rows) over 'model'; each device computes a partial product and XLA inserts a reduce-scatter/all-reduce, so a collective remains.",
)
def _rt18_gather_free_specs_split_k() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", "model"), PartitionSpec("model", None)


@wrong(
    "gather_free_specs",
    why="Clause 'bytes of x and w one device holds at most half of what they take replicated': keeps x's rows split and replicates w entirely; no collective, but per-device bytes are x/2 + w > (x + w)/2 (1024x2048 @ 2048x4096: 2 MiB + 16 MiB of 20 MiB).",
)
def _rt18_gather_free_specs_replicate_w() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec(None, None)


# ---- task 8: fused_dense -----------------------------------------------------------------------


@wrong(
    "fused_dense",
    why="Clause 'The same values as programs.handwritten_gelu_dense' (tanh approximation): uses the exact erf gelu (approximate=False); values differ by up to ~1e-3 on f32 96x160 @ 160x224.",
)
def _rt18_fused_dense_exact_gelu(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w + b, approximate=False)


@wrong(
    "fused_dense",
    why="Clause 'the result keeps ... the layer's dtype (bf16 in, bf16 out)': accumulates in f32 with preferred_element_type and returns f32; bf16 64x128 @ 128x256 gives f32.",
)
def _rt18_fused_dense_f32_out(x, w, b) -> jax.Array:
    h = jnp.matmul(x, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)
    return jax.nn.gelu(h, approximate=True)


@wrong(
    "fused_dense",
    why="Clause 'x may have any rank from 2': flattens leading dims with x.reshape(-1, k) but reshapes back to (x.shape[0], -1); for x bf16[3,40,72] it returns (3, 1920) instead of (3, 40, 48).",
)
def _rt18_fused_dense_reshape(x, w, b) -> jax.Array:
    h = x.reshape(-1, x.shape[-1]) @ w + b
    return jax.nn.gelu(h, approximate=True).reshape(x.shape[0], -1)


# ---- task 9: allreduce_elements ----------------------------------------------------------------

_rt18_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}


@wrong(
    "allreduce_elements",
    why="Clause 'without x64 enabled, a float64 parameter, a NumPy array ... is f32': takes the leaf's dtype as given; np.zeros((4, 4)) (float64) is reported under 'f64' instead of 'f32'.",
)
def _rt18_allreduce_elements_raw_dtype(params) -> dict[str, int]:
    out: Counter[str] = Counter()
    for leaf in jax.tree.leaves(params):
        n = math.prod(leaf.shape)
        if n:
            name = np.dtype(leaf.dtype).name
            out[_rt18_NAMES.get(name, name)] += n
    return dict(out)


@wrong(
    "allreduce_elements",
    why="Clause 'the same array at two places in the pytree is two parameters, all-reduced twice': dedupes leaves by identity (tied weights); {'a': w, 'b': w} with w f32[8, 8] counts 64 instead of 128.",
)
def _rt18_allreduce_elements_dedupe(params) -> dict[str, int]:
    out: Counter[str] = Counter()
    seen = set()
    for leaf in jax.tree.leaves(params):
        if id(leaf) in seen:
            continue
        seen.add(id(leaf))
        n = math.prod(leaf.shape)
        if n:
            name = jnp.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype)).name
            out[_rt18_NAMES.get(name, name)] += n
    return dict(out)


@wrong(
    "allreduce_elements",
    why="Clause 'A dtype XLA all-reduces nothing in ... has no key': keeps every dtype seen, with 0 for one whose parameters are all empty; {'w': f32[4,4], 'e': bf16[0,8]} gives {'f32': 16, 'bf16': 0}.",
)
def _rt18_allreduce_elements_zero_keys(params) -> dict[str, int]:
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(params):
        name = jnp.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype)).name
        key = _rt18_NAMES.get(name, name)
        out[key] = out.get(key, 0) + math.prod(leaf.shape)
    return out


@wrong(
    "allreduce_elements",
    why="Clause 'A pytree is JAX's (jax.tree: None is an empty subtree, a registered node ... holds children)': walks dicts/lists/tuples by hand and treats anything else with a shape as a leaf, anything without as nothing; a registered pytree node class (e.g. a flax struct / custom node holding two arrays) contributes nothing.",
)
def _rt18_allreduce_elements_handwalk(params) -> dict[str, int]:
    out: Counter[str] = Counter()

    def walk(node):
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v)
        elif hasattr(node, "shape") and hasattr(node, "dtype"):
            n = math.prod(node.shape)
            if n:
                name = jnp.dtype(jax.dtypes.canonicalize_dtype(node.dtype)).name
                out[_rt18_NAMES.get(name, name)] += n

    walk(params)
    return dict(out)
