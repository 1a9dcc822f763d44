"""Red team, phase 16, round 11: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_RT11_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")
_RT11_REDUCTIONS = ("reduce", "reduce-window")


# ---- helpers: contract-following pieces, each answer changes one thing --------------------


def _rt11_called(instruction: Any) -> list[str]:
    value = instruction.attribute("calls")
    if not value:
        return []
    return [n.strip().removeprefix("%") for n in value.strip("{}").split(",") if n.strip()]


def _rt11_reach(module: Any, names: list[str], seen: dict | None = None) -> list[Any]:
    seen = {} if seen is None else seen
    found = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        computation = module.computation(name)
        if computation is None:
            continue
        seen[name] = computation
        found.append(computation)
        for instruction in computation:
            todo.extend(_rt11_called(instruction))
    return found


def _rt11_label(c: Any) -> str:
    if c.kind == "fused":
        rest = c.kernel[len("cpp_fused_") :]
        return "" if rest.isdigit() else re.sub(r"_\d+$", "", rest)
    return c.short_name


def _rt11_xla_reductions(hlo_text: str, shared_seen: bool = False) -> list[int]:
    module = parse_hlo(hlo_text)
    seen: dict = {}
    out = []
    for inst in module.entry:
        if inst.opcode not in _RT11_KERNEL_OPS:
            continue
        n = 1 if inst.opcode in _RT11_REDUCTIONS else 0
        comps = _rt11_reach(module, _rt11_called(inst), seen if shared_seen else None)
        n += sum(1 for comp in comps for inner in comp if inner.opcode in _RT11_REDUCTIONS)
        out.append(n)
    return out


def _rt11_inductor_reductions(code: str) -> list[int]:
    graph = read_inductor(code)
    sources = dict(graph.kernels)
    return [
        reduction_count(sources.get(c.kernel, "")) if c.kind == "fused" else 0 for c in graph.calls
    ]


def _rt11_xla_census(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    library = fused = 0
    for inst in module.entry:
        if inst.opcode in ("dot", "custom-call"):
            library += 1
        elif inst.opcode == "fusion":
            if (inst.attribute("kind") or "") == "kCustom":
                library += 1
            else:
                fused += 1
    return {"library": library, "fused": fused}


def _rt11_inductor_census(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    fused = sum(1 for c in calls if c.kind == "fused")
    return {"library": len(calls) - fused, "fused": fused}


def _rt11_split(codes: list[str]) -> tuple[Any, Any]:
    graphs = [read_inductor(c) for c in codes]
    bwd = [g for g in graphs if any(i.startswith("tangents_") for i in g.inputs)]
    fwd = [g for g in graphs if g not in bwd]
    return fwd[0], bwd[0]


def _rt11_predict(input_shape, layers, tiny) -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    fin = input_shape[-1]
    library = fused = 0
    open_stretch = False
    for index, (out, bias, act) in enumerate(layers):
        if tiny(index, rows, fin, out, bias):
            open_stretch = True
        else:
            if open_stretch:
                fused += 1
            open_stretch = False
            library += 1
        if act != "none":
            open_stretch = True
        fin = out
    if open_stretch:
        fused += 1
    return {"library": library, "fused": fused}


def _rt11_tiny(rows, fin, out, bias) -> bool:
    if bias:
        return rows == 1 and (out == 1 or (fin <= 16 and out <= 16))
    if rows == 1 and out == 1:
        return True
    return fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32


# ---- inductor_kernels --------------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why='a fused kernel\'s entry is its name without `cpp_fused_` and `_<n>`, `""` for '
    "`cpp_fused_0`: this cuts the number with re.sub(r'_\\d+$', ...) AFTER removing the prefix, "
    "so `cpp_fused_0` (prefix gone: '0', no underscore left before the digit) stays '0'; wrong "
    "on the forward of recorded/train_conv_relu.txt (layout copy `cpp_fused_0`: '0' instead of '')",
)
def _rt11_inductor_kernels_number_needs_underscore(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kind == "fused":
            out.append(re.sub(r"_\d+$", "", c.kernel.removeprefix("cpp_fused_")))
        else:
            out.append(c.short_name)
    return out


@wrong(
    "inductor_kernels",
    why="every kernel statement of `call` counts, a fallback too whatever it returns: this keeps "
    "a `torch.ops.aten` fallback only when its result is assigned to a buffer, taking a bare "
    "fallback statement for a check (like the `assert_*` lines); wrong on "
    "recorded/cholesky.txt (its `torch.ops.aten._linalg_check_errors.default(...)` statement, "
    "'_linalg_check_errors', is dropped from the list)",
)
def _rt11_inductor_kernels_bare_fallback_is_check(code: str) -> list[str]:
    return [
        _rt11_label(c)
        for c in read_inductor(code).calls
        if not (c.kind == "fallback" and c.out is None)
    ]


# ---- kernel_census -----------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="XLA 'library' counts ENTRY fusions of kind=kCustom, whatever they hold, and 'fused' every "
    "OTHER fusion: this decides by content, a fusion whose computations (nested ones too) hold a "
    "`dot` or `convolution` is library, whatever its kind; wrong on "
    "handwritten.HANDWRITTEN_HLO['dense_output_fusion'] (a kind=kOutput fusion holding dot + bias "
    "+ max: contract library 0 / fused 1, this library 1 / fused 0) and on the JAX twin of "
    "dense_relu_row (XLA:CPU folds the one-row product into a kLoop fusion: contract xla "
    "library 0 / fused 3, this library 1 / fused 2)",
)
def _rt11_kernel_census_library_by_content(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    library = fused = 0
    for inst in module.entry:
        if inst.opcode in ("dot", "custom-call"):
            library += 1
        elif inst.opcode == "fusion":
            holds = any(
                i.opcode in ("dot", "convolution")
                for comp in _rt11_reach(module, _rt11_called(inst))
                for i in comp
            )
            if holds:
                library += 1
            else:
                fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt11_inductor_census(inductor_code),
    }


@wrong(
    "kernel_census",
    why="Inductor 'fused' counts the fused C++ kernel CALLS, each call once: this counts the "
    "distinct fused kernels of `call` (a set of names, 'one kernel, one loop') while library "
    "calls are counted per call; wrong on handwritten.HANDWRITTEN (fused add_relu called twice: "
    "contract fused 2, this fused 1)",
)
def _rt11_kernel_census_fused_distinct(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    calls = read_inductor(inductor_code).calls
    fused = len({c.kernel for c in calls if c.kind == "fused"})
    library = sum(1 for c in calls if c.kind != "fused")
    return {"xla": _rt11_xla_census(hlo_text), "inductor": {"library": library, "fused": fused}}


# ---- bias_homes --------------------------------------------------------------------------


def _rt11_rank1_param(module: Any) -> str | None:
    for i in module.entry:
        if i.opcode == "parameter":
            m = re.fullmatch(r"\s*\w+\[([^\]]*)\].*", i.shape)
            if m and m.group(1).strip() and "," not in m.group(1):
                return i.name
    return None


def _rt11_inductor_bias_home(code: str) -> str:
    graph = read_inductor(code)
    m = None
    for m in re.finditer(r"assert_size_stride\((\w+), \(([^()]*)\)", code):
        dims = [d for d in m.group(2).split(",") if d.strip()]
        if len(dims) == 1:
            bias = m.group(1)
            for c in graph.calls:
                if any(bias in (a or "") for a in c.arguments):
                    return "fused" if c.kind == "fused" else "library"
            return "fused"
    return "none"


@wrong(
    "bias_homes",
    why="XLA 'library' when the bias is an operand of the ENTRY kernel whose computation holds "
    "the dot: this goes by NAMES, 'library' when the consuming instruction or the computation it "
    "calls is named like a GEMM (dot/gemm/matmul), as XLA:CPU names them (`%dot.3 = fusion(...)`, "
    "`calls=%fused_dot`); wrong on any module whose fusion holding dot + bias is named otherwise, "
    "e.g. dense_output_fusion with `%fusion`/`%fused_dot` renamed `%fusion.1`/`%fused_computation` "
    "(contract 'library', this 'fused'), and on a loop fusion named `%dot_add_fusion` holding only "
    "the bias add (contract 'fused', this 'library')",
)
def _rt11_bias_homes_xla_by_name(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    bias = _rt11_rank1_param(module)
    home = "none"
    if bias is not None:
        home = "fused"
        for inst in module.entry:
            if inst.opcode not in _RT11_KERNEL_OPS:
                continue
            if bias in [o.removeprefix("%") for o in inst.operands]:
                names = [inst.name] + _rt11_called(inst)
                if inst.opcode in ("dot", "custom-call") or any(
                    re.search(r"dot|gemm|matmul", n) for n in names
                ):
                    home = "library"
                break
    return {"xla": home, "inductor": _rt11_inductor_bias_home(inductor_code)}


@wrong(
    "bias_homes",
    why="Inductor: the bias is the input whose assert_size_stride size has ONE dimension and "
    "'library' when it is an argument of the library call: this takes the bias's home from "
    "the FIRST kernel of `call` ('the bias is read where the layer starts'): library if that "
    "kernel is a library call taking a rank-1 input, else fused; wrong on a layer whose first "
    "kernel is a fused prologue, e.g. conv_relu's layout copy or a scaled input "
    "(`cpp_fused_mul_0(x)` then `addmm(b, buf0, w)`: contract 'library', this 'fused')",
)
def _rt11_bias_homes_first_kernel(hlo_text: str, inductor_code: str) -> dict[str, str]:
    graph = read_inductor(inductor_code)
    rank1 = [
        m.group(1)
        for m in re.finditer(r"assert_size_stride\((\w+), \(([^()]*)\)", inductor_code)
        if len([d for d in m.group(2).split(",") if d.strip()]) == 1
    ]
    home = "none"
    if rank1:
        first = graph.calls[0] if graph.calls else None
        home = (
            "library"
            if first is not None
            and first.kind != "fused"
            and any(b in (a or "") for b in rank1 for a in first.arguments)
            else "fused"
        )
    module = parse_hlo(hlo_text)
    bias = _rt11_rank1_param(module)
    xla = "none"
    if bias is not None:
        xla = "fused"
        for inst in module.entry:
            if inst.opcode in _RT11_KERNEL_OPS and bias in [
                o.removeprefix("%") for o in inst.operands
            ]:
                if inst.opcode in ("dot", "custom-call") or any(
                    i.opcode == "dot" for c in _rt11_reach(module, _rt11_called(inst)) for i in c
                ):
                    xla = "library"
                break
    return {"xla": xla, "inductor": home}


# ---- reductions_per_kernel ---------------------------------------------------------------


@wrong(
    "reductions_per_kernel",
    why="Inductor: one reduction per `<type> tmp_acc<N> = <init>;`, whatever the init: this only "
    "counts accumulators that start at 0 (the README's `float tmp_acc0 = 0;`), missing a max "
    "reduction's `-std::numeric_limits<float>::infinity()` start; wrong on "
    "recorded/layernorm_softmax.txt (contract [4] for the one kernel, this fewer)",
)
def _rt11_reductions_zero_init_only(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    sources = dict(graph.kernels)
    counts = []
    for c in graph.calls:
        if c.kind != "fused":
            counts.append(0)
            continue
        src = sources.get(c.kernel, "")
        counts.append(len(re.findall(r"^\s*[\w:<>]+ tmp_acc\d+ = 0;", src, flags=re.M)))
    return {"xla": _rt11_xla_reductions(hlo_text), "inductor": counts}


@wrong(
    "reductions_per_kernel",
    why="Inductor: each kernel call gets ITS kernel's accumulators: this pairs the i-th fused "
    "call with the i-th kernel DEFINED in the module (definition order assumed to be call "
    "order, each defined once); wrong on handwritten.HANDWRITTEN (a fused kernel called twice, "
    "two defined and never called: contract [0, 2, 0, 2, 0], this [0, 2, 0, 0, 0]) and on "
    "the second text of handwritten_train.HANDWRITTEN_TRAIN_TWO_OUTPUTS, whose kernels are defined in "
    "another order than they run ([0, 0, 0, 0, 0, 1] read as [0, 0, 0, 1, 0, 0])",
)
def _rt11_reductions_by_definition_order(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    defined = list(re.findall(r"^(cpp_fused_\w+) = async_compile", inductor_code, flags=re.M))
    sources = dict(graph.kernels)
    counts = []
    k = 0
    for c in graph.calls:
        if c.kind != "fused":
            counts.append(0)
            continue
        name = defined[k] if k < len(defined) else c.kernel
        k += 1
        counts.append(reduction_count(sources.get(name, sources.get(c.kernel, ""))))
    return {"xla": _rt11_xla_reductions(hlo_text), "inductor": counts}


@wrong(
    "reductions_per_kernel",
    why="XLA: each ENTRY kernel counts the reduce/reduce-window of EVERY computation its calls= "
    "reaches: this walks with one visited set for the whole ENTRY (to avoid walking a "
    "computation twice), so a computation already reached from an earlier kernel counts 0 for "
    "the later kernel; wrong on a module where two ENTRY fusions call the same fused computation "
    "(or the same nested one) holding a reduce: contract [1, 1], this [1, 0]",
)
def _rt11_reductions_shared_visited(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt11_xla_reductions(hlo_text, shared_seen=True),
        "inductor": _rt11_inductor_reductions(inductor_code),
    }


# ---- train_graphs ------------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="'saved' = the backward's inputs other than tangents_<n>: this counts the backward "
    "inputs whose NAMES appear among the forward's inputs or returned names (matching by name "
    "across the two graphs, where the backward calls `addmm` what the forward returns as "
    "`buf0`); wrong on recorded/train_mlp_gelu.txt (5 saved; this finds only primals_1: 1)",
)
def _rt11_train_graphs_saved_by_name(codes: list[str]) -> dict[str, int]:
    fwd, bwd = _rt11_split(codes)
    names = set(fwd.inputs) | {o for o in fwd.outputs if o}
    saved = sum(1 for i in bwd.inputs if not i.startswith("tangents_") and i in names)
    return {"forward": len(fwd.calls), "backward": len(bwd.calls), "saved": saved}


@wrong(
    "train_graphs",
    why="the backward graph is the one whose call takes tangents_<n>: this takes the graph with "
    "MORE kernels as the backward ('the backward does about twice the work'), first one on a "
    "tie; wrong on recorded/train_conv_relu.txt (forward 3 kernels, backward 2: forward/backward "
    "swapped and 'saved' counted on the forward's primals) and on the 1-vs-1 ties of "
    "train_layernorm_softmax / train_relu_outputs when the backward comes second",
)
def _rt11_train_graphs_backward_is_bigger(codes: list[str]) -> dict[str, int]:
    graphs = sorted((read_inductor(c) for c in codes), key=lambda g: len(g.calls))
    fwd, bwd = graphs[0], graphs[-1]
    saved = sum(1 for i in bwd.inputs if not i.startswith("tangents_"))
    return {"forward": len(fwd.calls), "backward": len(bwd.calls), "saved": saved}


# ---- predict_inductor_kernels ------------------------------------------------------------


@wrong(
    "predict_inductor_kernels",
    why="the tiny-product rules hold for every layer, on the layer's own input: this applies "
    "them to the FIRST layer only ('the later layers read a computed buffer, which always goes "
    "to BLAS'); wrong on the README's x[1,8] -> [(8, True, 'relu'), (8, True, 'gelu')] "
    "(contract library 0, fused 1; this library 1, fused 2)",
)
def _rt11_predict_first_layer_only(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt11_predict(
        input_shape,
        layers,
        lambda index, rows, fin, out, bias: index == 0 and _rt11_tiny(rows, fin, out, bias),
    )


# ---- inference_call ----------------------------------------------------------------------


@wrong(
    "inference_call",
    why="the caller is left as it was, also when x itself requires grad: this detaches x IN "
    "PLACE (`x.detach_()`, 'the input must not carry autograd history') before calling the "
    "compiled module under torch.no_grad(), so the caller's x no longer requires grad (and a "
    "non-leaf x loses its graph) after the call; wrong on x = torch.randn(4, 8, requires_grad=True): "
    "afterwards x.requires_grad is False",
)
def _rt11_inference_call_detach_input_in_place(compiled: Any, x: Any) -> Any:
    import torch

    with torch.no_grad():
        if x.requires_grad:
            x.detach_()
        return compiled(x)
