"""Red-team wrong answers for phase 12, written from the contract only.

Round 4: each answer agrees with a correct one on the recordings and the hand-written modules
this red team could see (programs.RECORDINGS, programs.HANDWRITTEN, the listed cases), and is
wrong on a valid input named in its `why`: another nesting place, another spelling of a kind or
target, another rank or dtype, two instructions sharing one computation, a stack size inside the
stated domain but outside the listed cases.
"""

from __future__ import annotations

import json
import math
import re

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt4_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


# ---- shared helpers (not answers) --------------------------------------------------------------


def _rt4_config(instruction) -> dict:
    text = instruction.attribute("backend_config")
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _rt4_backend_kind(instruction) -> str | None:
    config = _rt4_config(instruction)
    for key in ("fusion_backend_config", "fusion_config"):
        inner = config.get(key)
        if isinstance(inner, dict) and inner.get("kind"):
            return inner["kind"]
    return None


def _rt4_kind(instruction) -> str:
    custom = _rt4_backend_kind(instruction)
    if custom:
        return f"kCustom({custom})"
    return instruction.attribute("kind") or "kCustom"


def _rt4_fusions(module):
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode == "fusion":
                yield computation, instruction


def _rt4_dims(shape_text: str) -> list[int]:
    body = shape_text.split("{")[0]
    inside = body[body.index("[") + 1 : body.index("]")]
    return [int(d) for d in inside.split(",") if d.strip()]


def _rt4_int_list(text: str | None) -> list[int]:
    if not text:
        return []
    return [int(d) for d in re.findall(r"\d+", text)]


def _rt4_first_array(shape_text: str) -> str:
    """The first array shape of a tuple shape (or the shape itself)."""
    found = re.search(r"[a-z0-9]+\[[0-9,]*\]", shape_text)
    return found.group(0) if found else shape_text


def _rt4_shapes_by_name(module) -> dict[str, str]:
    return {i.name: i.shape for c in module.computations for i in c.instructions}


# ---- task 1: fusion_kinds ----------------------------------------------------------------------


@wrong(
    "fusion_kinds",
    why=(
        'reads the custom kind with the regex "kind":"(\\w+)", so a kind holding a \'$\' is '
        "not read and the fusion counts as plain kCustom: breaks 'counted as kCustom(that "
        "kind)'; wrong on a cuDNN GEMM fusion (kind=kCustom, backend_config "
        '{"fusion_backend_config":{"kind":"__cudnn$fusion"}}, what XLA:GPU makes on H100 '
        "with --xla_gpu_cudnn_gemm_fusion_level=1): gives {'kCustom': 1} for "
        "{'kCustom(__cudnn$fusion)': 1}"
    ),
)
def _rt4_fusion_kinds_word_kind(hlo_text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, fusion in _rt4_fusions(parse_hlo(hlo_text)):
        config = fusion.attribute("backend_config") or ""
        found = re.search(r'"kind":"(\w+)"', config)
        key = f"kCustom({found.group(1)})" if found else (fusion.attribute("kind") or "kCustom")
        counts[key] = counts.get(key, 0) + 1
    return counts


@wrong(
    "fusion_kinds",
    why=(
        "counts fused computations (one per distinct calls=) instead of fusion instructions: "
        "'Fusion instructions of every computation ... counted'; wrong on a module where two "
        "fusion instructions share one fused computation (XLA:GPU's computation deduplication "
        "leaves identical fusions calling the same %fused_computation, e.g. two identical "
        "kLoop fusions of relu(x) and relu(y)): counts 1 where there are 2"
    ),
)
def _rt4_fusion_kinds_per_computation(hlo_text: str) -> dict[str, int]:
    seen: dict[str, str] = {}
    for _, fusion in _rt4_fusions(parse_hlo(hlo_text)):
        for called in fusion.called_computations:
            seen.setdefault(called, _rt4_kind(fusion))
    counts: dict[str, int] = {}
    for key in seen.values():
        counts[key] = counts.get(key, 0) + 1
    return counts


# ---- task 2: reduction_kinds -------------------------------------------------------------------


def _rt4_fusion_callers(module):
    """fused computation -> (fusion instruction, computation that holds the fusion)."""
    callers = {}
    for computation, fusion in _rt4_fusions(module):
        for called in fusion.called_computations:
            callers[called] = (fusion, computation.name)
    return callers


@wrong(
    "reduction_kinds",
    why=(
        "climbs at most one level of nesting to find the outermost fusion (fusion -> the fusion "
        "holding it) instead of to the top: breaks 'the outermost fusion whose fused "
        "computation reaches it'; right on the two-level nests of NESTED_REDUCTIONS, wrong on a "
        "reduce three fusions deep (a kLoop fusion with a reduce inside a kLoop fusion inside a "
        "kCustom __triton_nested_gemm_fusion): counts it under kLoop, not "
        "kCustom(__triton_nested_gemm_fusion)"
    ),
)
def _rt4_reduction_kinds_one_hop(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    callers = _rt4_fusion_callers(module)
    counts: dict[str, int] = {}
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode != "reduce":
                continue
            if computation.name not in callers:
                key = "unfused"
            else:
                fusion, home = callers[computation.name]
                if home in callers:  # one level up, no further
                    fusion, _ = callers[home]
                key = _rt4_kind(fusion)
            counts[key] = counts.get(key, 0) + 1
    return counts


_rt4_COMPUTATION_HEAD = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$")
_rt4_ARRAY_REDUCE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\S+)\s+reduce\(")
_rt4_FUSION_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\sfusion\(.*?kind=(k\w+)")


@wrong(
    "reduction_kinds",
    why=(
        "finds reduces with the line regex '= (\\S+) reduce(' whose shape group cannot hold a "
        "space, so a variadic reduce (tuple shape '(f32[64]{0}, s32[64]{0})') is never counted: "
        "breaks 'the module's reduce instructions (opcode reduce)'; wrong on jnp.argmax(x, "
        "axis=1) (a variadic value/index reduce in a kInput fusion): misses it"
    ),
)
def _rt4_reduction_kinds_line_regex(hlo_text: str) -> dict[str, int]:
    owner_of: dict[str, tuple[str, str]] = {}  # fused computation -> (kind, home computation)
    reduces: list[str] = []  # computation of each reduce
    current = None
    for line in hlo_text.splitlines():
        head = _rt4_COMPUTATION_HEAD.match(line)
        if head and "=" not in line.split("(")[0]:
            current = head.group(1)
            continue
        fusion = _rt4_FUSION_LINE.match(line)
        if fusion:
            custom = re.search(r'"kind":"([^"]+)"', line)
            kind = f"kCustom({custom.group(1)})" if custom else fusion.group(2)
            called = re.search(r"calls=%?([\w.\-]+)", line)
            if called:
                owner_of[called.group(1)] = (kind, current)
            continue
        if _rt4_ARRAY_REDUCE.match(line):
            reduces.append(current)
    counts: dict[str, int] = {}
    for home in reduces:
        key = "unfused"
        while home in owner_of:
            key, home = owner_of[home]
        counts[key] = counts.get(key, 0) + 1
    return counts


@wrong(
    "reduction_kinds",
    why=(
        "walks the call graph from ENTRY and, for a while loop, follows only body= (the loop's "
        "work), never condition=: breaks 'the module's reduce instructions'; right on scan_h100 "
        "(its condition only compares), wrong on jax.lax.while_loop(lambda x: jnp.max(x) < 10, "
        "...): the condition's reduce (in a kInput fusion of the condition computation, or "
        "unfused) is not counted"
    ),
)
def _rt4_reduction_kinds_body_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    counts: dict[str, int] = {}
    visited: set[tuple[str, str]] = set()

    def visit(name: str, outer: str | None) -> None:
        if (name, str(outer)) in visited or name not in module:
            return
        visited.add((name, str(outer)))
        for instruction in module[name].instructions:
            if instruction.opcode == "reduce":
                key = outer or "unfused"
                counts[key] = counts.get(key, 0) + 1
            if instruction.opcode == "fusion":
                for called in instruction.called_computations:
                    visit(called, outer or _rt4_kind(instruction))
            elif instruction.opcode == "while":
                body = instruction.attribute("body")
                if body:
                    visit(body.lstrip("%"), outer)
            elif instruction.opcode in ("call", "conditional", "async-start"):
                for called in instruction.called_computations:
                    visit(called, outer)

    visit(module.entry.name, None)
    return counts


@wrong(
    "reduction_kinds",
    why=(
        "counts 'unfused' reduces only in computations that are neither fused nor wrapped by an "
        "async-start (taking the wrapped computation as part of the async op, as task 5 does), "
        'while still following fusions there: breaks \'under "unfused" when no fusion holds '
        "it'; right on FUSIONS_ELSEWHERE (its async-start wraps a fusion), wrong on an "
        "async-start whose wrapped computation holds a bare reduce (%w (p: f32[64,32]) -> "
        "f32[32] { ... ROOT %r = f32[32] reduce(%p, %z), dimensions={0}, to_apply=%add }, "
        "started by %s = ((f32[64,32]), f32[32]) async-start(%x), calls=%w): drops that reduce"
    ),
)
def _rt4_reduction_kinds_async_wrapped_skipped(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    callers = _rt4_fusion_callers(module)
    wrapped: set[str] = set()
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode in ("async-start", "async-update", "async-done"):
                wrapped.update(instruction.called_computations)
    counts: dict[str, int] = {}
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode != "reduce":
                continue
            home, key = computation.name, None
            while home in callers:
                fusion, home = callers[home]
                key = _rt4_kind(fusion)
            if key is None:
                if computation.name in wrapped:
                    continue  # part of its async op, not a computation of its own
                key = "unfused"
            counts[key] = counts.get(key, 0) + 1
    return counts


# ---- task 3: library_epilogues -----------------------------------------------------------------


def _rt4_epilogue_of(instruction) -> str | None:
    target = (instruction.attribute("custom_call_target") or "").strip('"')
    config = _rt4_config(instruction)
    if target.startswith("__cublas$"):
        return config.get("gemm_backend_config", {}).get("epilogue", "DEFAULT")
    if target.startswith("__cudnn$"):
        return config.get("cudnn_conv_backend_config", {}).get("activation_mode", "kNone")
    return None


@wrong(
    "library_epilogues",
    why=(
        "reads the custom calls of ENTRY only: breaks 'each library call' of the module; every "
        "recording and hand-written module has its cuBLAS/cuDNN calls in ENTRY, but "
        "programs.scanned_softmax compiled for gpu-h100 with programs.CUBLAS puts its "
        "__cublas$lt$matmul in the while body (and programs.branches with CUBLAS puts them in "
        "the cond's branch computations): returns {} there"
    ),
)
def _rt4_library_epilogues_entry_only(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found: dict[str, str] = {}
    for instruction in module.entry.instructions:
        if instruction.opcode == "custom-call":
            epilogue = _rt4_epilogue_of(instruction)
            if epilogue is not None:
                found[instruction.name] = epilogue
    return found


@wrong(
    "library_epilogues",
    why=(
        "knows the cuBLAS targets by a list (__cublas$lt$matmul, __cublas$gemm) instead of the "
        "'__cublas$' prefix the contract gives: wrong on an FP8 GEMM for gpu-h100 with Triton "
        "GEMMs off (x, w float8_e4m3fn scaled, XLA makes custom_call_target="
        '"__cublas$lt$matmul$f8"): leaves that library call out'
    ),
)
def _rt4_library_epilogues_known_targets(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found: dict[str, str] = {}
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode != "custom-call":
                continue
            target = (instruction.attribute("custom_call_target") or "").strip('"')
            config = _rt4_config(instruction)
            if target in ("__cublas$lt$matmul", "__cublas$gemm"):
                found[instruction.name] = config["gemm_backend_config"].get("epilogue", "DEFAULT")
            elif target.startswith("__cudnn$conv"):
                conv = config.get("cudnn_conv_backend_config", {})
                found[instruction.name] = conv.get("activation_mode", "kNone")
    return found


@wrong(
    "library_epilogues",
    why=(
        "takes any target containing 'cublas'/'cudnn' as a library call and, when its "
        "backend_config is not JSON, records no epilogue as 'DEFAULT': breaks 'custom_call_target "
        "starting __cublas$ ... Other custom calls are not library calls'; wrong on "
        "jnp.linalg.qr of a batch of small matrices for gpu-h100 (jaxlib's typed-FFI "
        'custom_call_target="cublas_geqrf_batched_ffi", backend_config={}): reports it as '
        "'DEFAULT'"
    ),
)
def _rt4_library_epilogues_substring(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found: dict[str, str] = {}
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode != "custom-call":
                continue
            target = (instruction.attribute("custom_call_target") or "").lower()
            config = _rt4_config(instruction)
            if "cublas" in target:
                gemm = config.get("gemm_backend_config", {})
                found[instruction.name] = gemm.get("epilogue", "DEFAULT")
            elif "cudnn" in target:
                conv = config.get("cudnn_conv_backend_config", {})
                found[instruction.name] = conv.get("activation_mode", "kNone")
    return found


# ---- task 4: gemm_flops ------------------------------------------------------------------------


def _rt4_dot_flops(instruction, shapes, default_last: bool = False) -> int:
    out = math.prod(_rt4_dims(instruction.shape))
    lhs = _rt4_dims(shapes[instruction.operands[0]])
    contracting = _rt4_int_list(instruction.attribute("lhs_contracting_dims"))
    if not contracting and default_last:
        contracting = [len(lhs) - 1]
    return 2 * out * math.prod(lhs[d] for d in contracting)


def _rt4_cublas_flops(instruction, shapes) -> int:
    numbers = _rt4_config(instruction)["gemm_backend_config"]["dot_dimension_numbers"]
    out = math.prod(_rt4_dims(_rt4_first_array(instruction.shape)))
    lhs = _rt4_dims(shapes[instruction.operands[0]])
    contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
    return 2 * out * math.prod(lhs[d] for d in contracting)


@wrong(
    "gemm_flops",
    why=(
        "takes the lhs's last dimension as contracted when a dot prints no "
        "lhs_contracting_dims: breaks '(product of the lhs's contracting dimensions' sizes)', "
        "which is 1 for none; wrong on a dot that contracts nothing (an outer product or a "
        "batch-only dot, e.g. f32[64,32] dot(f32[64] a, f32[32] b)): 2*2048*32 instead of "
        "2*2048"
    ),
)
def _rt4_gemm_flops_default_contracting(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    shapes = _rt4_shapes_by_name(module)
    total = 0
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode == "dot":
                total += _rt4_dot_flops(instruction, shapes, default_last=True)
            elif instruction.opcode == "custom-call" and (
                instruction.attribute("custom_call_target") or ""
            ).strip('"').startswith("__cublas$"):
                total += _rt4_cublas_flops(instruction, shapes)
    return total


@wrong(
    "gemm_flops",
    why=(
        "counts the cuBLAS calls whose target is __cublas$lt$matmul or __cublas$gemm only: "
        "breaks 'a cuBLAS custom call' (any __cublas$ target); wrong on an FP8 GEMM for gpu-h100 "
        'with Triton GEMMs off (custom_call_target="__cublas$lt$matmul$f8", output '
        "(bf16[64,256], f32[], s8[...])): leaves out its 2*64*256*K flops"
    ),
)
def _rt4_gemm_flops_known_targets(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    shapes = _rt4_shapes_by_name(module)
    total = 0
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode == "dot":
                total += _rt4_dot_flops(instruction, shapes)
            elif instruction.opcode == "custom-call" and (
                instruction.attribute("custom_call_target") or ""
            ).strip('"') in ("__cublas$lt$matmul", "__cublas$gemm"):
                total += _rt4_cublas_flops(instruction, shapes)
    return total


@wrong(
    "gemm_flops",
    why=(
        "parses a shape's dims with the regex \\[(\\d[\\d,]*)\\] and skips a GEMM whose output "
        "has none: breaks 'every GEMM' (a scalar output has 1 element); wrong on a dot of two "
        "vectors (jnp.vdot / x @ y of f32[256] and f32[256]: f32[] dot(...), "
        "lhs_contracting_dims={0}): gives 0 for it instead of 512"
    ),
)
def _rt4_gemm_flops_skips_scalars(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    shapes = _rt4_shapes_by_name(module)
    total = 0
    for computation in module.computations:
        for instruction in computation.instructions:
            is_cublas = instruction.opcode == "custom-call" and (
                instruction.attribute("custom_call_target") or ""
            ).strip('"').startswith("__cublas$")
            if instruction.opcode != "dot" and not is_cublas:
                continue
            if not re.search(r"\[(\d[\d,]*)\]", _rt4_first_array(instruction.shape)):
                continue  # nothing to multiply
            total += (
                _rt4_cublas_flops(instruction, shapes)
                if is_cublas
                else _rt4_dot_flops(instruction, shapes)
            )
    return total


# ---- task 5: collective_overlap ----------------------------------------------------------------


def _rt4_holds_collective(module, name: str) -> str | None:
    if name not in module:
        return None
    for instruction in module[name].instructions:
        if instruction.opcode in _rt4_COLLECTIVES:
            return instruction.opcode
    return None


def _rt4_overlap(module, computations, is_start) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for computation in computations:
        instructions = computation.instructions
        for at, instruction in enumerate(instructions):
            if instruction.opcode in _rt4_COLLECTIVES:
                result[instruction.name] = []
            elif is_start(module, instruction):
                between = []
                for later in instructions[at + 1 :]:
                    if instruction.name in later.operands and later.opcode.endswith("-done"):
                        break
                    between.append(later.opcode)
                result[instruction.name] = between
    return result


def _rt4_not_fused_or_wrapped(module):
    skip: set[str] = set()
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode in ("fusion", "async-start", "async-update", "async-done"):
                skip.update(instruction.called_computations)
    return [c for c in module.computations if c.name not in skip]


@wrong(
    "collective_overlap",
    why=(
        "takes every native '<op>-start' as a collective start: breaks 'For each collective "
        "(all-gather, all-reduce, reduce-scatter, collective-permute, all-to-all)'; wrong on a "
        "module with a copy-start/copy-done pair (a memory-space or host-offload copy: "
        "recorded/block_tpu_v5e.hlo has two, and XLA:GPU makes them for jax.device_put to "
        "pinned_host inside jit): gives each copy-start a key, e.g. {'copy-start': "
        "['parameter', 'parameter', 'parameter'], ...} on block_tpu_v5e.hlo, where the answer "
        "is {}"
    ),
)
def _rt4_collective_overlap_any_start(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)

    def is_start(module, instruction):
        if instruction.opcode == "async-start":
            return any(_rt4_holds_collective(module, c) for c in instruction.called_computations)
        return instruction.opcode.endswith("-start")

    return _rt4_overlap(module, _rt4_not_fused_or_wrapped(module), is_start)


@wrong(
    "collective_overlap",
    why=(
        "takes a generic async-start as a collective only when its wrapped computation's ROOT "
        "is the collective: breaks 'whose wrapped computation (its calls=) holds the "
        "collective'; wrong on an async-start whose wrapped computation ends in a bitcast or "
        "tuple of the reduce-scatter (ROOT %t = tuple(%scattered)): drops that collective "
        "(and lists it nowhere)"
    ),
)
def _rt4_collective_overlap_root_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)

    def is_start(module, instruction):
        if instruction.opcode == "async-start":
            return any(
                c in module and module[c].root.opcode in _rt4_COLLECTIVES
                for c in instruction.called_computations
            )
        return instruction.opcode in {f"{op}-start" for op in _rt4_COLLECTIVES}

    return _rt4_overlap(module, _rt4_not_fused_or_wrapped(module), is_start)


@wrong(
    "collective_overlap",
    why=(
        "skips only the async-wrapped computations, not the fused ones: breaks 'of every "
        "computation that is not a fused computation'; wrong on a module where a fusion's "
        "computation holds the collective (an XLA:GPU collective fusion, e.g. a kCustom fusion "
        "whose fused computation holds an all-reduce): adds that all-reduce with []"
    ),
)
def _rt4_collective_overlap_fused_too(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    wrapped: set[str] = set()
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode in ("async-start", "async-update", "async-done"):
                wrapped.update(instruction.called_computations)

    def is_start(module, instruction):
        if instruction.opcode == "async-start":
            return any(_rt4_holds_collective(module, c) for c in instruction.called_computations)
        return instruction.opcode in {f"{op}-start" for op in _rt4_COLLECTIVES}

    kept = [c for c in module.computations if c.name not in wrapped]
    return _rt4_overlap(module, kept, is_start)


# ---- task 6: overlap_options -------------------------------------------------------------------


@wrong(
    "overlap_options",
    why=(
        "sizes the in-flight limit to the listed cases (6 layers at most): breaks 'The budget "
        "holds for every stack of programs.FSDP_DOMAIN ... 2 to 16 layers'; wrong on 16 layers "
        "of 64 wide, x 128 rows on gpu-h100: 6 async gathers and 10 synchronous (checked by "
        "compiling), not 15 of 16"
    ),
)
def _rt4_overlap_options_limit_six() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 6,
    }


@wrong(
    "overlap_options",
    why=(
        "stops the combining with a byte threshold just under the listed weights' size (8192: "
        "a 64x64 bf16 weight, nothing merges) instead of switching it off: breaks 'one "
        "all-gather per weight' for 'weights from 32 to 256 wide'; wrong on 16 layers of 32 "
        "wide, x 64 rows on gpu-h100: four 2 KiB gathers fit in 8192 bytes and are combined "
        "(3 starts and a synchronous tuple all-gather, checked by compiling)"
    ),
)
def _rt4_overlap_options_threshold_8k() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 8192,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 16,
    }


@wrong(
    "overlap_options",
    why=(
        "takes the README's 'limit of 8' as enough: breaks the budget for stacks deeper than 9 "
        "layers of FSDP_DOMAIN (right on every FSDP_CASES stack); wrong on 16 layers of 64 "
        "wide, x 128 rows on gpu-h100: 8 async gathers and 8 synchronous (checked by "
        "compiling), not 15 of 16"
    ),
)
def _rt4_overlap_options_limit_eight() -> dict[str, bool | int | str]:
    return {
        "xla_gpu_all_gather_combine_threshold_bytes": 0,
        "xla_gpu_experimental_parallel_collective_overlap_limit": 8,
    }


# ---- task 7: gather_free_specs -----------------------------------------------------------------


@wrong(
    "gather_free_specs",
    why=(
        "splits x's rows over 'model' and w's columns over 'data' (the mesh axes swapped): the "
        "output block of device (i, j) needs x's rows of data-index i, which devices of another "
        "'model' index hold, so XLA inserts a collective (all-to-all or collective-permute); "
        "wrong on every SPEC_CASES matmul, e.g. 1024x2048 @ 2048x4096 on gpu-h100"
    ),
)
def _rt4_gather_free_specs_axes_swapped() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("model", None), PartitionSpec(None, "data")


@wrong(
    "gather_free_specs",
    why=(
        "returns (spec of w, spec of x) instead of (spec of x, spec of w): x split by columns "
        "over 'model' (K split) and w by rows over 'data' need collectives; wrong on every "
        "SPEC_CASES matmul, e.g. 512x768 @ 768x1024 on gpu-a100"
    ),
)
def _rt4_gather_free_specs_swapped_order() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec(None, "model"), PartitionSpec("data", None)


@wrong(
    "gather_free_specs",
    why=(
        "splits K over 'model' on both sides (x P('data','model'), w P('model', None)): no "
        "gather, but the partial products must be summed (an all-reduce or reduce-scatter over "
        "'model'): breaks 'no collective at all'; wrong on every SPEC_CASES matmul, e.g. "
        "256x512 @ 512x256 on gpu-h100"
    ),
)
def _rt4_gather_free_specs_split_k() -> tuple[PartitionSpec, PartitionSpec]:
    return PartitionSpec("data", "model"), PartitionSpec("model", None)


# ---- task 8: fused_dense -----------------------------------------------------------------------


@wrong(
    "fused_dense",
    why=(
        "flattens x to 2-D so the GEMM is a plain cuBLAS matmul and never reshapes back: "
        "breaks 'The same values as programs.handwritten_gelu_dense(x, w, b)' for x of rank 3 "
        "(every DENSE_CASES x is 2-D); wrong on x bf16[4,16,128], w bf16[128,256], b "
        "bf16[256]: returns shape (64, 256) instead of (4, 16, 256)"
    ),
)
def _rt4_fused_dense_flattened(x, w, b) -> jax.Array:
    rows = x.reshape(-1, x.shape[-1])
    return jax.nn.gelu(rows @ w + b, approximate=True)


@wrong(
    "fused_dense",
    why=(
        "uses the exact (erf) gelu, jax.nn.gelu(..., approximate=False): not the values of the "
        "tanh approximation handwritten_gelu_dense computes (they differ by up to ~5e-4 "
        "absolute near |h|~2, beyond f32 tolerance), and cuBLAS-Lt has no erf epilogue, so the "
        "gelu stays a kLoop fusion after the call: not fewer kernels; wrong on DENSE_CASES "
        "'f32 96x160 @ 160x224'"
    ),
)
def _rt4_fused_dense_erf(x, w, b) -> jax.Array:
    return jax.nn.gelu(x @ w + b, approximate=False)


@wrong(
    "fused_dense",
    why=(
        "accumulates the GEMM in f32 (preferred_element_type) and casts back at the end: for "
        "bf16 inputs the convert between the product and the activation keeps the gelu out of "
        "the epilogue, so the kernel count does not drop below handwritten_gelu_dense's; "
        "wrong on DENSE_CASES 'bf16 64x128 @ 128x256' on gpu-h100 with programs.CUBLAS"
    ),
)
def _rt4_fused_dense_f32_accumulate(x, w, b) -> jax.Array:
    h = jnp.matmul(x, w, preferred_element_type=jnp.float32) + b.astype(jnp.float32)
    return jax.nn.gelu(h, approximate=True).astype(x.dtype)


# ---- task 9: allreduce_elements ----------------------------------------------------------------


def _rt4_leaves(params):
    return jax.tree_util.tree_leaves(params)


@wrong(
    "allreduce_elements",
    why=(
        "maps dtypes through a table of the two it saw (float32 -> f32, bfloat16 -> bf16) and "
        "passes any other name through: breaks 'HLO dtype name (f32, bf16, f16)'; wrong on "
        "params {'w': float16[64,128]}: gives {'float16': 8192} for {'f16': 8192}"
    ),
)
def _rt4_allreduce_elements_two_dtypes(params) -> dict[str, int]:
    names = {"float32": "f32", "bfloat16": "bf16"}
    out: dict[str, int] = {}
    for leaf in _rt4_leaves(params):
        name = jnp.dtype(leaf.dtype).name
        key = names.get(name, name)
        out[key] = out.get(key, 0) + math.prod(leaf.shape)
    return out


@wrong(
    "allreduce_elements",
    why=(
        "groups the gradients by element width (one flat array per 16 or 32 bits, named by the "
        "first dtype seen of that width): breaks 'one flat array per dtype'; wrong on params "
        "{'a': bfloat16[64,64], 'h': float16[32]} (bf16 and f16 are all-reduced apart): gives "
        "{'bf16': 4128} for {'bf16': 4096, 'f16': 32}"
    ),
)
def _rt4_allreduce_elements_by_width(params) -> dict[str, int]:
    hlo = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    first: dict[int, str] = {}
    out: dict[str, int] = {}
    for leaf in _rt4_leaves(params):
        dtype = jnp.dtype(leaf.dtype)
        key = first.setdefault(dtype.itemsize, hlo.get(dtype.name, dtype.name))
        out[key] = out.get(key, 0) + math.prod(leaf.shape)
    return out


@wrong(
    "allreduce_elements",
    why=(
        "counts a parameter's elements as rows * columns (math.prod(shape[:2])), as for the "
        "matrices and vectors of the MLP examples: breaks 'elements all-reduced'; wrong on a "
        "rank-3 or rank-4 parameter such as a conv kernel {'k': float32[3,3,16,32]}: gives 9 "
        "for 4608"
    ),
)
def _rt4_allreduce_elements_matrix_size(params) -> dict[str, int]:
    hlo = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    out: dict[str, int] = {}
    for leaf in _rt4_leaves(params):
        key = hlo[jnp.dtype(leaf.dtype).name]
        out[key] = out.get(key, 0) + math.prod(tuple(leaf.shape)[:2])
    return out


@wrong(
    "allreduce_elements",
    why=(
        "reads a dict of arrays one level deep (params.values() that have a shape), not the "
        "whole pytree: breaks 'params (a pytree of arrays or ShapeDtypeStructs)'; wrong on "
        "{'enc': {'w': f32[48,80], 'b': f32[80]}, 'head': f32[80,10]}: gives {'f32': 800} for "
        "{'f32': 4720}"
    ),
)
def _rt4_allreduce_elements_one_level(params) -> dict[str, int]:
    hlo = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
    values = params.values() if isinstance(params, dict) else params
    out: dict[str, int] = {}
    for leaf in values:
        if not hasattr(leaf, "shape"):
            continue
        key = hlo[jnp.dtype(leaf.dtype).name]
        out[key] = out.get(key, 0) + math.prod(leaf.shape)
    return out
