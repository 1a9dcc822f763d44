"""Red team, phase 12, round 16: wrong answers built on xla_inspect's query helpers (which
measure something close to, but not, what the contract asks), a GELU spelled by an identity the
GEMM rewriter does not match, a root-only test for a wrapped collective, a backend_config read
to the end of the line, byte-width grouping of gradients, a GEMM left in f32."""

from __future__ import annotations

import json
import math
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import query
from xla_inspect.parse import parse_hlo

_rt16_FIVE = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")
_rt16_HLO = {"float32": "f32", "float64": "f32", "bfloat16": "bf16", "float16": "f16"}


def _rt16_json(ins):
    text = ins.attribute("backend_config") or ""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return {}


def _rt16_target(ins) -> str:
    return (ins.attribute("custom_call_target") or "").strip('"')


def _rt16_label(ins) -> str:
    kind = ins.attribute("kind") or ""
    cfg = _rt16_json(ins)
    sub = cfg.get("fusion_backend_config") or cfg.get("fusion_config") or {}
    custom = sub.get("kind") if isinstance(sub, dict) else None
    return f"{kind}({custom})" if custom else kind


# ---------------------------------------------------------------------------------------------
@wrong(
    "reduction_kinds",
    why="Clause 'counted under the kind of the OUTERMOST fusion whose fused computation reaches "
    "it': sums xla_inspect's Fusion.opcodes['reduce'] (which counts everything the fused "
    "computation reaches) over every fusion query.fusions() lists, nested ones too, so a reduce in "
    "a fusion nested in a fusion counts under both kinds; programs.NESTED_REDUCTIONS gives "
    "kLoop: 2 extra (row_sums inside the kInput fusion, row_maxes inside the Triton one): "
    "{kInput: 2, kLoop: 2, kCustom(__triton): 1, unfused: 2} instead of "
    "{kInput: 2, kCustom(__triton): 1, unfused: 2}.",
)
def _rt16_reduction_kinds_every_fusion_opcodes(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: Counter[str] = Counter()
    for fusion in query.fusions(module):
        out[fusion.label] += fusion.opcodes.get("reduce", 0)
    fused = query.fused_computation_names(module)
    for computation in module.computations:
        if computation.name in fused:
            continue
        out["unfused"] += sum(i.opcode == "reduce" for i in computation.instructions)
    return {k: v for k, v in out.items() if v}


# ---------------------------------------------------------------------------------------------
@wrong(
    "collective_overlap",
    why="Clauses 'these five opcodes only' / 'every computation that is not a fused computation' / "
    "'a generic async-start whose wrapped computation holds the collective is that collective's "
    "start': takes the collectives from xla_inspect's query.collectives(), which lists "
    "collective-broadcast and ragged-all-to-all too, lists collectives inside fused computations "
    "(grad_fused_all_reduce_h100.hlo: the all-reduce of the fused Triton collective gets a key) "
    "and knows no generic async-start (programs.ASYNC_COLLECTIVES: scatter-start and sum-start "
    "are missing, the wrapped %scattered / %reduced appear as synchronous [] instead).",
)
def _rt16_collective_overlap_query_collectives(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out: dict[str, list[str]] = {}
    for info in query.collectives(module):
        computation = module.computation(info.computation)
        if not info.opcode.endswith("-start"):
            out[info.name] = []
            continue
        ops = list(computation.instructions)
        index = next(k for k, i in enumerate(ops) if i.name == info.name)
        current = info.name
        between: list[str] = []
        for ins in ops[index + 1 :]:
            if current in ins.operands and ins.opcode.endswith("-update"):
                current = ins.name
                continue
            if current in ins.operands and ins.opcode.endswith("-done"):
                break
            between.append(ins.opcode)
        out[info.name] = between
    return out


# ---------------------------------------------------------------------------------------------
def _rt16_prod(dims) -> int:
    return math.prod(int(d) for d in dims)


@wrong(
    "gemm_flops",
    why="Clause '2 * (elements of the GEMM's output) * K': computes the output from the operands "
    "(the textbook M*K*N = |lhs| * |rhs| / K) instead of reading it, so a batch dimension, which "
    "both operands hold, is counted twice; a batched GEMM (batched_cublas.hlo, batched_triton.hlo, "
    "or jnp.einsum('bmk,bkn->bmn') on f32[4,8,16] x f32[4,16,32]: 2*4*8*32*16 = 32768) is "
    "over-counted by the batch size (131072).",
)
def _rt16_gemm_flops_from_operand_sizes(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = 0
    for dot in query.dots(module):
        lhs = _rt16_prod(_rt16_shape_dims(dot.lhs_shape))
        rhs = _rt16_prod(_rt16_shape_dims(dot.rhs_shape))
        dims = _rt16_shape_dims(dot.lhs_shape)
        k = _rt16_prod(dims[d] for d in dot.lhs_contracting_dims)
        if k:
            total += 2 * lhs * rhs // k
    for computation in module.computations:
        for ins in computation.instructions:
            if ins.opcode != "custom-call" or not _rt16_target(ins).startswith("__cublas$"):
                continue
            cfg = _rt16_json(ins).get("gemm_backend_config", {})
            dnums = cfg.get("dot_dimension_numbers", {})
            a = computation.instruction(ins.operands[0]).shape_info.dims
            b = computation.instruction(ins.operands[1]).shape_info.dims
            k = _rt16_prod(a[int(d)] for d in dnums.get("lhs_contracting_dimensions", []))
            if k:
                total += 2 * _rt16_prod(a) * _rt16_prod(b) // k
    return total


def _rt16_shape_dims(text: str) -> tuple[int, ...]:
    from xla_inspect.hlo.model import Shape

    return tuple(int(d or 0) for d in Shape(text).dims)


# ---------------------------------------------------------------------------------------------
@wrong(
    "fused_dense",
    why="Clause 'the activation fused into the cuBLAS call's epilogue': writes the tanh GELU "
    "through the identity 0.5*(1+tanh(z)) = sigmoid(2z), h*sigmoid(1.5957691216*(h+0.044715h^3)): "
    "the values match handwritten_gelu_dense, but XLA's GEMM rewriter matches op patterns, not "
    "math: with programs.CUBLAS on gpu-h100 (bf16 64x128 @ 128x256) the call keeps epilogue "
    "BIAS and a kLoop fusion follows it (2 kernels), as with the hand-written layer, instead of "
    "one BIAS_GELU call.",
)
def _rt16_fused_dense_sigmoid_identity(x, w, b) -> jax.Array:
    h = jnp.matmul(x, w) + b
    return h * jax.nn.sigmoid(1.5957691216 * (h + 0.044715 * h**3))


# ---------------------------------------------------------------------------------------------
@wrong(
    "library_epilogues",
    why="Clause 'custom call (custom_call_target starting __cublas$ / __cudnn$)': also takes "
    "fusions whose backend kind starts with __cudnn$ (a cuDNN GEMM fusion, kCustom(__cudnn$fusion), "
    "which the README names as cuDNN's) as library calls with activation kNone; a module with "
    'one `fusion(...), kind=kCustom, calls=%c, backend_config={"fusion_backend_config":'
    '{"kind":"__cudnn$fusion"}}` and one cuBLAS call gets an extra key for the fusion.',
)
def _rt16_library_epilogues_cudnn_fusion_counted(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for computation in module.computations:
        for ins in computation.instructions:
            cfg = _rt16_json(ins)
            if ins.opcode == "custom-call":
                target = _rt16_target(ins)
            elif ins.opcode == "fusion":
                target = str((cfg.get("fusion_backend_config") or {}).get("kind", ""))
            else:
                continue
            if target.startswith("__cublas$"):
                out[ins.name] = cfg.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$"):
                conv = cfg.get("cudnn_conv_backend_config", {})
                out[ins.name] = conv.get("activation_mode", "kNone")
    return out


# ---------------------------------------------------------------------------------------------
@wrong(
    "collective_overlap",
    why="Clause 'a generic async-start whose wrapped computation (its calls=) HOLDS the "
    "collective': tests only the wrapped computation's ROOT opcode (XLA's own wrappers have the "
    "op as root), so a wrapped computation that holds the reduce-scatter and ends in a bitcast or "
    "copy after it is taken for no collective; programs.ASYNC_COLLECTIVES with %wrapped_reduce_"
    "scatter ending `ROOT %out = bitcast(%scattered)` loses the key scatter-start (['negate']).",
)
def _rt16_collective_overlap_root_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    fused = query.fused_computation_names(module)
    wrapped: set[str] = set()
    for computation in module.computations:
        for ins in computation.instructions:
            if ins.opcode == "async-start":
                wrapped.update(c.removeprefix("%") for c in ins.called_computations)
    out: dict[str, list[str]] = {}
    for computation in module.computations:
        if computation.name in fused or computation.name in wrapped:
            continue
        ops = list(computation.instructions)
        for index, ins in enumerate(ops):
            if ins.opcode in _rt16_FIVE:
                out[ins.name] = []
                continue
            if ins.opcode == "async-start":
                called = [c.removeprefix("%") for c in ins.called_computations]
                inner = module.computation(called[0]) if called else None
                if inner is None or inner.root.opcode not in _rt16_FIVE:
                    continue
            elif not (ins.opcode.endswith("-start") and ins.opcode[: -len("-start")] in _rt16_FIVE):
                continue
            current = ins.name
            between: list[str] = []
            for later in ops[index + 1 :]:
                if current in later.operands and later.opcode.endswith("-update"):
                    current = later.name
                    continue
                if current in later.operands and later.opcode.endswith("-done"):
                    break
                between.append(later.opcode)
            out[ins.name] = between
    return out


# ---------------------------------------------------------------------------------------------
def _rt16_tail_config(line: str) -> dict:
    _, sep, rest = line.partition("backend_config=")
    if not sep:
        return {}
    try:
        return json.loads(rest.strip().rstrip(","))
    except ValueError:
        return {}


@wrong(
    "fusion_kinds",
    why="Clause 'a fusion whose backend_config names a kind ... is counted as its printed kind with "
    "that kind in brackets': reads the backend_config as the JSON from `backend_config=` to the "
    "end of the instruction (where XLA prints it in the recordings), so a fusion whose "
    'backend_config is followed by another attribute (`..., backend_config={"fusion_backend_'
    'config":{"kind":"__triton"}}, metadata={op_name="x"}`, legal HLO) is counted as bare '
    "kCustom instead of kCustom(__triton).",
)
def _rt16_fusion_kinds_config_to_line_end(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: Counter[str] = Counter()
    for computation in module.computations:
        for ins in computation.instructions:
            if ins.opcode != "fusion":
                continue
            kind = ins.attribute("kind") or ""
            cfg = _rt16_tail_config(ins.attributes_text)
            sub = cfg.get("fusion_backend_config") or cfg.get("fusion_config") or {}
            custom = sub.get("kind") if isinstance(sub, dict) else None
            out[f"{kind}({custom})" if custom else kind] += 1
    return dict(out)


# ---------------------------------------------------------------------------------------------
@wrong(
    "fusion_kinds",
    why="Clause 'Fusion instructions of every computation ... counted by kind' (each fusion once): "
    "counts an asynchronous fusion twice, once for its fusion-start (README: 'XLA may run a fusion "
    "asynchronously, printed as a fusion-start/fusion-done pair', taken as the kernel's launch, "
    "labelled from the fusion it wraps) and once for the fusion instruction parse_hlo puts in the "
    "wrapped computation; scan_h100.hlo (two fusion-starts of kLoop dynamic-slice fusions) gives "
    "kLoop: 7 instead of 5.",
)
def _rt16_fusion_kinds_async_start_counted_too(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out: Counter[str] = Counter()
    for computation in module.computations:
        for ins in computation.instructions:
            if ins.opcode == "fusion":
                out[_rt16_label(ins)] += 1
            elif ins.opcode == "async-start":
                for name in ins.called_computations:
                    inner = module.computation(name.removeprefix("%"))
                    if inner is not None and inner.root.opcode == "fusion":
                        out[_rt16_label(inner.root)] += 1
    return dict(out)


# ---------------------------------------------------------------------------------------------
@wrong(
    "allreduce_elements",
    why="Clause 'HLO dtype name -> elements all-reduced in that dtype': groups the gradients by "
    "byte width (the flat concatenated buffer is taken to be one per element size, as a byte "
    "buffer would be) and names each group after its first parameter's dtype, so bf16 and f16 "
    "gradients merge; {'a': sds((4,), bf16), 'b': sds((4,), f16)} gives {'bf16': 8} instead of "
    "{'bf16': 4, 'f16': 4}.",
)
def _rt16_allreduce_elements_by_width(params) -> dict[str, int]:
    names: dict[int, str] = {}
    counts: dict[int, int] = {}
    for leaf in jax.tree.leaves(params):
        dt = np.dtype(jax.dtypes.canonicalize_dtype(leaf.dtype))
        n = math.prod(int(d) for d in leaf.shape)
        if n == 0:
            continue
        names.setdefault(dt.itemsize, _rt16_HLO.get(dt.name, dt.name))
        counts[dt.itemsize] = counts.get(dt.itemsize, 0) + n
    return {names[w]: c for w, c in counts.items()}


# ---------------------------------------------------------------------------------------------
@wrong(
    "fused_dense",
    why="Clause 'the result keeps ... the layer's dtype (bf16 in, bf16 out)': accumulates the GEMM "
    "in f32 (preferred_element_type, 'the cuBLAS epilogue runs in f32 anyway') and returns the "
    "f32 result without casting back; bf16 x (64,128), w (128,256), b (256,) gives a float32 "
    "array instead of bfloat16 (values also differ by bf16 rounding).",
)
def _rt16_fused_dense_f32_result(x, w, b) -> jax.Array:
    h = jnp.matmul(x, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)
    return jax.nn.gelu(h, approximate=True)
