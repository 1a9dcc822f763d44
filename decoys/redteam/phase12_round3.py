"""Red-team wrong answers for phase 12, written from the contract only.

Round 3: aimed at what a capable learner writes that fits the recordings and the hand-written
modules but not the contract: other backend_config spellings, computations reached other than
through fusions, library-call targets beyond the recorded ones, GEMM output shapes with batch and
split-K dimensions, wrapped async computations, and decide answers sized to the listed cases.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")


# ---- shared helpers (each decoy breaks one thing, the rest is right) ----------------------------


def _config(ins) -> dict:
    text = ins.attribute("backend_config")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _kind(ins) -> str:
    cfg = _config(ins)
    inner = cfg.get("fusion_backend_config") or cfg.get("fusion_config") or {}
    if isinstance(inner, dict) and inner.get("kind"):
        return f"kCustom({inner['kind']})"
    return ins.attribute("kind", "?")


def _fusion_callees(module) -> set[str]:
    return {
        name
        for comp in module
        for ins in comp
        if ins.opcode == "fusion"
        for name in ins.called_computations
    }


def _dims(shape_text: str) -> tuple[int, ...]:
    found = re.match(r"\s*\(?\s*[a-z0-9]+\[([0-9,]*)\]", shape_text)
    if not found or not found.group(1):
        return ()
    return tuple(int(d) for d in found.group(1).split(","))


def _callers(module):
    """computation name -> [(calling instruction, computation it sits in)]."""
    out: dict[str, list] = {}
    for comp in module:
        for ins in comp:
            for name in ins.called_computations:
                out.setdefault(name, []).append((ins, comp))
    return out


# ---- task 1: fusion_kinds ------------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why="reads the custom kind only from GPU's fusion_backend_config: CPU's fusion_config "
    "{kind:__ynn_fusion} is counted as plain kCustom; wrong on block() compiled for this "
    "host's CPU",
)
def _rt3_fusion_kinds_gpu_spelling(hlo_text: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for comp in parse_hlo(hlo_text):
        for ins in comp:
            if ins.opcode != "fusion":
                continue
            inner = _config(ins).get("fusion_backend_config") or {}
            if isinstance(inner, dict) and inner.get("kind"):
                counts[f"kCustom({inner['kind']})"] += 1
            else:
                counts[ins.attribute("kind", "?")] += 1
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="walks ENTRY and the fused computations it reaches through fusions only, never while "
    "bodies, conditional branches, called or async-wrapped computations; wrong on any module "
    "with a fusion in a while body (a jax.lax.scan or fori_loop compiled for GPU)",
)
def _rt3_fusion_kinds_fusion_tree_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: Counter[str] = Counter()
    todo, seen = [module.entry.name], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in module:
            continue
        seen.add(name)
        for ins in module[name]:
            if ins.opcode == "fusion":
                counts[_kind(ins)] += 1
                todo.extend(ins.called_computations)
    return dict(counts)


@wrong(
    "fusion_kinds",
    why="counts kernels: the fusions of every computation that is not itself fused (ENTRY, "
    "while bodies, called computations), skipping fusions nested in fused computations, which "
    "the contract includes; wrong on NESTED_REDUCTIONS (the kLoop fusions inside the kInput "
    "and Triton fusions)",
)
def _rt3_fusion_kinds_kernels_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    fused = _fusion_callees(module)
    counts: Counter[str] = Counter()
    for comp in module:
        if comp.name in fused:
            continue
        for ins in comp:
            if ins.opcode == "fusion":
                counts[_kind(ins)] += 1
    return dict(counts)


# ---- task 2: reduction_kinds ---------------------------------------------------------------------


def _reduces(module):
    for comp in module:
        for ins in comp:
            if ins.opcode == "reduce":
                yield comp, ins


@wrong(
    "reduction_kinds",
    why="counts a reduce under the fusion that calls its computation directly (the innermost), "
    "not the outermost one; wrong on NESTED_REDUCTIONS (reduce.1 in a kLoop inside a kInput "
    "fusion counts kLoop, reduce.3 inside the Triton fusion counts kLoop)",
)
def _rt3_reduction_kinds_innermost(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    callers = _callers(module)
    counts: Counter[str] = Counter()
    for comp, _ in _reduces(module):
        kind = "unfused"
        for ins, _where in callers.get(comp.name, []):
            if ins.opcode == "fusion":
                kind = _kind(ins)
                break
        counts[kind] += 1
    return dict(counts)


@wrong(
    "reduction_kinds",
    why="a reduce whose computation is reached from a fusion through a call/to_apply/while "
    "(not a fusion's calls=) is counted unfused, and only fusions in ENTRY count as kernels: a "
    "reduce in a kInput fusion inside a while body (jax.lax.fori_loop summing rows on GPU) is "
    "counted unfused; wrong on any module with a reduction fusion in a loop body",
)
def _rt3_reduction_kinds_entry_kernels(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    # outermost kernel: a fusion in ENTRY; follow fusion calls= only
    kernel_of: dict[str, str] = {}
    for ins in module.entry:
        if ins.opcode != "fusion":
            continue
        kind = _kind(ins)
        todo = list(ins.called_computations)
        while todo:
            name = todo.pop()
            if name in kernel_of or name not in module:
                continue
            kernel_of[name] = kind
            todo.extend(
                c for i in module[name] if i.opcode == "fusion" for c in i.called_computations
            )
    counts: Counter[str] = Counter(
        kernel_of.get(comp.name, "unfused") for comp, _ in _reduces(module)
    )
    return dict(counts)


@wrong(
    "reduction_kinds",
    why="spells a custom fusion as bare 'kCustom' (the printed kind=) instead of as "
    "fusion_kinds spells it, kCustom(__triton); wrong on reductions_h100.hlo, whose softmax "
    "reduces run in a Triton fusion",
)
def _rt3_reduction_kinds_bare_kcustom(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    callers = _callers(module)

    def kernel(name: str, depth: int = 0) -> str | None:
        """The printed kind of the outermost fusion reaching computation `name`."""
        if depth > 50:
            return None
        for ins, where in callers.get(name, []):
            up = kernel(where.name, depth + 1)
            if up is not None:
                return up
            if ins.opcode == "fusion":
                return ins.attribute("kind", "?")
        return None

    counts: Counter[str] = Counter()
    for comp, _ in _reduces(module):
        counts[kernel(comp.name) or "unfused"] += 1
    return dict(counts)


# ---- task 3: library_epilogues -------------------------------------------------------------------


def _custom_calls(module):
    for comp in module:
        for ins in comp:
            if ins.opcode == "custom-call":
                yield ins, (ins.attribute("custom_call_target") or "").strip('"')


@wrong(
    "library_epilogues",
    why="knows cuBLAS only as __cublas$lt$matmul (the only target the recordings show); the "
    "legacy __cublas$gemm call (and __cublas$lt$matmul$f8) is left out; wrong on "
    "GEMMS_EVERYWHERE's legacy-gemm",
)
def _rt3_library_epilogues_lt_only(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for ins, target in _custom_calls(parse_hlo(hlo_text)):
        cfg = _config(ins)
        if target == "__cublas$lt$matmul":
            out[ins.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
        elif target.startswith("__cudnn$"):
            out[ins.name] = cfg.get("cudnn_conv_backend_config", {}).get("activation_mode", "kNone")
    return out


@wrong(
    "library_epilogues",
    why="leaves out the calls that fused nothing (epilogue DEFAULT, activation kNone), reading "
    "'what each call fused' as 'calls that fused something'; the contract maps every library "
    "call; wrong on dense_cublas_h100.hlo (h @ w3 has DEFAULT) and conv_h100.hlo",
)
def _rt3_library_epilogues_only_fused(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for ins, target in _custom_calls(parse_hlo(hlo_text)):
        cfg = _config(ins)
        if target.startswith("__cublas$"):
            value = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            if value != "DEFAULT":
                out[ins.name] = value
        elif target.startswith("__cudnn$"):
            value = cfg.get("cudnn_conv_backend_config", {}).get("activation_mode", "kNone")
            if value != "kNone":
                out[ins.name] = value
    return out


@wrong(
    "library_epilogues",
    why="takes every custom call that is not cuDNN for a cuBLAS GEMM (epilogue DEFAULT when "
    "its backend_config has none); the contract says 'other custom calls are not library "
    "calls'; wrong on a GPU module of jax.lax.top_k (custom call __gpu$TopK) or "
    "jnp.linalg.cholesky (cusolver_potrf_ffi)",
)
def _rt3_library_epilogues_other_calls_as_gemm(hlo_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for ins, target in _custom_calls(parse_hlo(hlo_text)):
        cfg = _config(ins)
        if target.startswith("__cudnn$"):
            out[ins.name] = cfg.get("cudnn_conv_backend_config", {}).get("activation_mode", "kNone")
        else:
            gemm = cfg.get("gemm_backend_config", {})
            out[ins.name] = gemm.get("epilogue", "DEFAULT") if isinstance(gemm, dict) else "DEFAULT"
    return out


# ---- task 4: gemm_flops --------------------------------------------------------------------------


def _gemm_parts(module):
    """(output dims, lhs dims, lhs contracting dims) of every dot and cuBLAS call."""
    shapes = {ins.name: ins.shape for comp in module for ins in comp}
    for comp in module:
        for ins in comp:
            if ins.opcode == "dot":
                contracting = ins.attribute("lhs_contracting_dims", "{}").strip("{}")
                dims = tuple(int(d) for d in contracting.split(",") if d.strip())
                yield ins, comp, _dims(ins.shape), _dims(shapes[ins.operands[0]]), dims
            elif ins.opcode == "custom-call" and (ins.attribute("custom_call_target") or "").strip(
                '"'
            ).startswith("__cublas$"):
                numbers = (
                    _config(ins).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
                )
                dims = tuple(int(d) for d in numbers.get("lhs_contracting_dimensions", []))
                yield ins, comp, _dims(ins.shape), _dims(shapes[ins.operands[0]]), dims


@wrong(
    "gemm_flops",
    why="the textbook 2*M*N*K with M, N the output's last two dims: drops the batch dimensions "
    "(and the split-K dimension) of the output that the contract counts in 'elements of the "
    "GEMM's output'; wrong on batched_triton.hlo / attention_cublas.hlo",
)
def _rt3_gemm_flops_textbook_mnk(hlo_text: str) -> int:
    total = 0
    for _, _, out, lhs, contracting in _gemm_parts(parse_hlo(hlo_text)):
        m, n = (out[-2], out[-1]) if len(out) >= 2 else (1, out[-1] if out else 1)
        total += 2 * m * n * math.prod(lhs[d] for d in contracting)
    return total


@wrong(
    "gemm_flops",
    why="takes K as the lhs's last dimension (row-major x @ w) instead of its contracting "
    "dimensions; wrong on GEMMS_EVERYWHERE (legacy cuBLAS gemm and the ENTRY dot contract the "
    "lhs's dimension 0, i.e. a transposed GEMM)",
)
def _rt3_gemm_flops_k_last(hlo_text: str) -> int:
    total = 0
    for _, _, out, lhs, _ in _gemm_parts(parse_hlo(hlo_text)):
        total += 2 * math.prod(out) * (lhs[-1] if lhs else 1)
    return total


@wrong(
    "gemm_flops",
    why="counts the dots of ENTRY and of fused computations only, skipping while bodies and "
    "called computations (where a scanned layer's GEMM sits); wrong on GEMMS_EVERYWHERE's "
    "dot in the while body",
)
def _rt3_gemm_flops_no_loops(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    fused = _fusion_callees(module)
    total = 0
    for _, comp, out, lhs, contracting in _gemm_parts(module):
        if comp.is_entry or comp.name in fused:
            total += 2 * math.prod(out) * math.prod(lhs[d] for d in contracting)
    return total


# ---- task 5: collective_overlap ------------------------------------------------------------------


def _is_collective(opcode: str) -> bool:
    return opcode in COLLECTIVES


def _wrapped(module) -> set[str]:
    return {
        name
        for comp in module
        for ins in comp
        if ins.opcode == "async-start"
        for name in ins.called_computations
    }


def _holds_collective(module, name: str) -> bool:
    return name in module and any(_is_collective(i.opcode) for i in module[name])


def _overlap(module, skip: set[str], key_wrapped: bool = False, only_compute: bool = False):
    out: dict[str, list[str]] = {}
    for comp in module:
        if comp.name in skip:
            continue
        instrs = list(comp)
        for at, ins in enumerate(instrs):
            op = ins.opcode
            is_async = False
            key = ins.name
            if op.endswith("-start") and _is_collective(op.removesuffix("-start")):
                is_async = True
            elif op == "async-start":
                held = [c for c in ins.called_computations if _holds_collective(module, c)]
                if not held:
                    continue
                is_async = True
                if key_wrapped:
                    key = next(i.name for i in module[held[0]] if _is_collective(i.opcode))
            elif _is_collective(op):
                out[ins.name] = []
                continue
            if not is_async:
                continue
            between = []
            for later in instrs[at + 1 :]:
                if later.opcode.endswith("-done") and ins.name in later.operands:
                    break
                if only_compute and (
                    later.opcode.endswith(("-start", "-done"))
                    or later.opcode
                    in ("parameter", "constant", "get-tuple-element", "bitcast", "tuple")
                ):
                    continue
                between.append(later.opcode)
            out[key] = between
    return out


@wrong(
    "collective_overlap",
    why="walks every non-fused computation, the async-start's wrapped computation included, so "
    "the reduce-scatter/all-reduce inside it is listed again as a synchronous collective; the "
    "contract says the wrapped computation is part of the start; wrong on ASYNC_COLLECTIVES",
)
def _rt3_collective_overlap_wrapped_twice(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    return _overlap(module, _fusion_callees(module))


@wrong(
    "collective_overlap",
    why="keys a generic async-start by the collective inside its wrapped computation (the "
    "reduce-scatter's own name) instead of by the start's name; wrong on ASYNC_COLLECTIVES",
)
def _rt3_collective_overlap_key_wrapped(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    return _overlap(module, _fusion_callees(module) | _wrapped(module), key_wrapped=True)


@wrong(
    "collective_overlap",
    why="lists only the work in flight: drops parameters, constants, get-tuple-elements, "
    "bitcasts, tuples and other collectives' starts/dones printed between start and done; the "
    "contract lists every instruction printed between; wrong on NESTED_COLLECTIVES (first-start "
    "has parameter, all-gather-start, negate, all-gather-done, exponential between)",
)
def _rt3_collective_overlap_compute_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    return _overlap(module, _fusion_callees(module) | _wrapped(module), only_compute=True)


# ---- task 6: overlap_options ---------------------------------------------------------------------


@wrong(
    "overlap_options",
    why="stops the combiner (threshold 0) but leaves the scheduler's one-collective-in-flight "
    "bound, so gathers it cannot start early enough stay synchronous; fails the 5-of-6 budget "
    "on '6 layers of 128 on gpu-h100'",
)
def _rt3_overlap_options_uncombine_only() -> dict[str, bool | int | str]:
    return {"xla_gpu_all_gather_combine_threshold_bytes": 0}


@wrong(
    "overlap_options",
    why="raises the in-flight bound but keeps the combiner, so all weights are still gathered "
    "by one tuple all-gather; breaks 'one all-gather per weight' on every FSDP case",
)
def _rt3_overlap_options_limit_only() -> dict[str, bool | int | str]:
    return {"xla_gpu_experimental_parallel_collective_overlap_limit": 8}


@wrong(
    "overlap_options",
    why="a combine threshold sized to the listed weights (8 KiB: one bf16[64,64] weight fits, "
    "two do not) instead of switching combining off: passes every FSDP_CASE, but weights of "
    "bf16[32,32] (2 KiB) are combined four at a time into one all-gather; wrong on fsdp with "
    "6 layers of 32 (x bf16[64,32]) on gpu-h100 (1 sync + 1 async gather, not 6)",
)
def _rt3_overlap_options_sized_threshold() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 8192,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }


@wrong(
    "overlap_options",
    why="an in-flight bound sized to the six-layer cases (5 = one per overlappable gather): "
    "passes every FSDP_CASE, but small weights are all started at once, so a deeper stack "
    "exceeds it; wrong on fsdp with 12 layers of 64 on gpu-h100 (7 of 12 gathers synchronous)",
)
def _rt3_overlap_options_limit_five() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 5,
    }


@wrong(
    "overlap_options",
    why="uses xla_gpu_enable_async_all_gather from older XLA guides: today's XLA no longer "
    "knows it and refuses the compile ('every option must be one today's XLA knows')",
)
def _rt3_overlap_options_removed_flag() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_enable_async_all_gather": True,
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 2,
    }


# ---- task 7: gather_free_specs -------------------------------------------------------------------


@wrong(
    "gather_free_specs",
    why="replicates w (only x's rows split): no collective, but one device holds half of x "
    "and all of w, more than half of the replicated bytes; breaks the memory budget on every "
    "SPEC_CASE",
)
def _rt3_gather_free_specs_replicate_w() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec(None, None)


@wrong(
    "gather_free_specs",
    why="splits w's columns over both mesh axes (model-major) to save memory: a device holds "
    "a quarter of the columns, not the half its P('data','model') output block needs, so XLA "
    "gathers w; breaks 'no collective' on every SPEC_CASE",
)
def _rt3_gather_free_specs_w_both_axes() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", None), PartitionSpec(None, ("model", "data"))


@wrong(
    "gather_free_specs",
    why="returns (w's spec, x's spec): x's columns (K) split over model, w's rows (K) over "
    "data, so each device holds partial products XLA must reduce; breaks 'no collective'",
)
def _rt3_gather_free_specs_swapped() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec(None, "model"), PartitionSpec("data", None)


# ---- task 8: fused_dense -------------------------------------------------------------------------


@wrong(
    "fused_dense",
    why="exact (erf) gelu: cuBLAS-Lt has no erf epilogue (dense_cublas_h100's fourth layer), "
    "so the GEMM keeps a BIAS epilogue and gelu is another kernel, and its values differ from "
    "the tanh approximation; wrong on 'bf16 64x128 @ 128x256'",
)
def _rt3_fused_dense_erf(x, w, b):
    return jax.nn.gelu(x @ w + b, approximate=False)


@wrong(
    "fused_dense",
    why="rewrites only the bf16 case (the only dtype the dense recordings show) and keeps the "
    "hand-written tanh formula for f32, which the GEMM rewriter does not match; wrong on "
    "'f32 96x160 @ 160x224' (no GELU epilogue, no fewer kernels)",
)
def _rt3_fused_dense_bf16_only(x, w, b):
    if x.dtype == jnp.bfloat16:
        return jax.nn.gelu(x @ w + b, approximate=True)
    h = x @ w + b
    return 0.5 * h * (1.0 + jnp.tanh(0.7978845608 * (h + 0.044715 * h**3)))


@wrong(
    "fused_dense",
    why="accumulates the product in f32 and casts back only after gelu, so a bf16 call's "
    "values are not programs.handwritten_gelu_dense's (bf16 bias add and gelu) and the "
    "result dtype differs for bf16 inputs (f32 bias after the cast); wrong on "
    "'bf16 40x72 @ 72x48'",
)
def _rt3_fused_dense_f32_accumulate(x, w, b):
    h = jnp.dot(x, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)
    return jax.nn.gelu(h, approximate=True)


# ---- task 9: allreduce_elements ------------------------------------------------------------------


def _leaves(params):
    return jax.tree_util.tree_leaves(params)


@wrong(
    "allreduce_elements",
    why="knows only the two dtypes of the recordings: anything not bfloat16 is filed under "
    "f32, so float16 gradients (all-reduced in f16) land in f32; wrong on params with a f16 "
    "leaf",
)
def _rt3_allreduce_elements_f16_as_f32(params) -> dict[str, int]:
    out: Counter[str] = Counter()
    for leaf in _leaves(params):
        key = "bf16" if jnp.dtype(leaf.dtype) == jnp.dtype(jnp.bfloat16) else "f32"
        out[key] += math.prod(leaf.shape)
    return dict(out)


@wrong(
    "allreduce_elements",
    why="weights are matrices and biases vectors: elements = shape[0] * shape[1] (or shape[0]), "
    "so a 3-D/4-D parameter (a conv kernel, a stacked layer) is undercounted and a scalar "
    "counted as 1 only by luck; wrong on params {'k': f32[3,3,8,16]}",
)
def _rt3_allreduce_elements_matrix_dims(params) -> dict[str, int]:
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    out: Counter[str] = Counter()
    for leaf in _leaves(params):
        shape = tuple(leaf.shape)
        n = shape[0] * shape[1] if len(shape) >= 2 else (shape[0] if shape else 1)
        out[names.get(jnp.dtype(leaf.dtype).name, jnp.dtype(leaf.dtype).name)] += n
    return dict(out)


@wrong(
    "allreduce_elements",
    why="iterates the top-level dict's values (the recordings' params are flat dicts) and "
    "skips what has no shape, so nested pytrees ({'layer': {'w': ..., 'b': ...}}, lists of "
    "layers) lose every nested leaf; wrong on params {'dense': {'w': f32[8,4]}}",
)
def _rt3_allreduce_elements_flat_dict(params) -> dict[str, int]:
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    values = params.values() if isinstance(params, dict) else params
    out: Counter[str] = Counter()
    for leaf in values:
        if not hasattr(leaf, "shape"):
            continue
        out[names.get(jnp.dtype(leaf.dtype).name, jnp.dtype(leaf.dtype).name)] += math.prod(
            leaf.shape
        )
    return dict(out)
