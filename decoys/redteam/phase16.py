"""Red-team wrong answers for phase 16, written from the contract only.

Helpers carry an `_rt16_` prefix so that they never resolve to one of the reference's names.
"""

from __future__ import annotations

import re

from kata_harness.decoys import wrong
from xla_inspect.inductor import fused_ops, read_inductor, reduction_count
from xla_inspect.parse import parse_hlo


def _rt16_name(call):
    if call.kind == "fused":
        return fused_ops(call.kernel)
    if call.kind == "fallback":
        return call.kernel.split(".")[-2]
    return call.kernel.rsplit(".", 1)[-1]


def _rt16_entry_kernels(hlo_text):
    module = parse_hlo(hlo_text)
    kernels = [
        i
        for i in module.entry.instructions
        if i.opcode in ("fusion", "dot", "custom-call", "reduce", "reduce-window")
    ]
    return module, kernels


# ---- task 1: inductor_kernels -----------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="a fallback torch.ops.aten.<op>.<overload>(...) is a kernel too: greps only "
    "extern_kernels.* and cpp_fused_* calls; wrong on recorded/addmm_gelu.txt (_addmm_activation "
    "missed, [] instead of ['_addmm_activation']) and programs.HANDWRITTEN",
)
def inductor_kernels_no_fallbacks(code):
    found = []
    for m in re.finditer(
        r"^\s+(?:\w+ = )?(extern_kernels\.(\w+)|(cpp_fused_\w+?)_\d+)\(", code, re.M
    ):
        found.append(m[2] if m[2] else m[3].removeprefix("cpp_fused_"))
    return found


@wrong(
    "inductor_kernels",
    why="the name without the cpp_fused_ prefix keeps its leading underscore: strips every "
    "underscore at the front; wrong on recorded/layernorm_softmax.txt ('softmax_native_layer_norm' "
    "instead of '_softmax_native_layer_norm')",
)
def inductor_kernels_lstrip_underscore(code):
    return [_rt16_name(c).lstrip("_") for c in read_inductor(code).calls]


@wrong(
    "inductor_kernels",
    why="a kernel called twice appears twice: keeps each kernel once (first call); wrong on "
    "programs.HANDWRITTEN (add_relu called twice) and recorded/mlp_d.txt (the gelu kernel and "
    "addmm run twice)",
)
def inductor_kernels_deduplicated(code):
    out = []
    for call in read_inductor(code).calls:
        name = _rt16_name(call)
        if name not in out:
            out.append(name)
    return out


# ---- task 2: kernel_census --------------------------------------------------------------------


def _rt16_inductor_census(code, fallback_is_library=True):
    counts = {"library": 0, "fused": 0}
    for call in read_inductor(code).calls:
        if call.kind == "fused" or (call.kind == "fallback" and not fallback_is_library):
            counts["fused"] += 1
        else:
            counts["library"] += 1
    return counts


@wrong(
    "kernel_census",
    why="XLA 'library' counts ENTRY dot and custom-call instructions as well as kCustom fusions: "
    "counts only the kCustom fusions; wrong on programs.HANDWRITTEN_HLO['dense_library_call'] "
    "(a custom-call GEMM: library 0 instead of 1)",
)
def kernel_census_kcustom_only(hlo_text, inductor_code):
    _, kernels = _rt16_entry_kernels(hlo_text)
    xla = {"library": 0, "fused": 0}
    for i in kernels:
        if i.opcode == "fusion":
            xla["library" if i.attribute("kind") == "kCustom" else "fused"] += 1
    return {"xla": xla, "inductor": _rt16_inductor_census(inductor_code)}


@wrong(
    "kernel_census",
    why="Inductor 'library' counts library calls AND fallbacks: counts a torch.ops.aten fallback "
    "as fused; wrong on recorded/addmm_gelu.txt (library 0, fused 1 instead of 1, 0)",
)
def kernel_census_fallback_fused(hlo_text, inductor_code):
    _, kernels = _rt16_entry_kernels(hlo_text)
    xla = {"library": 0, "fused": 0}
    for i in kernels:
        if i.opcode in ("dot", "custom-call") or (
            i.opcode == "fusion" and i.attribute("kind") == "kCustom"
        ):
            xla["library"] += 1
        elif i.opcode == "fusion":
            xla["fused"] += 1
    return {"xla": xla, "inductor": _rt16_inductor_census(inductor_code, False)}


@wrong(
    "kernel_census",
    why="'fused' counts every OTHER ENTRY fusion: counts all ENTRY fusions as fused, kCustom "
    "ones included (and as library too); wrong on the JAX twin of mlp_gelu (its YNN kCustom GEMM "
    "fusions counted twice)",
)
def kernel_census_kcustom_twice(hlo_text, inductor_code):
    _, kernels = _rt16_entry_kernels(hlo_text)
    xla = {"library": 0, "fused": 0}
    for i in kernels:
        if i.opcode in ("dot", "custom-call") or i.attribute("kind") == "kCustom":
            xla["library"] += 1
        if i.opcode == "fusion":
            xla["fused"] += 1
    return {"xla": xla, "inductor": _rt16_inductor_census(inductor_code)}


# ---- task 3: bias_homes -----------------------------------------------------------------------


def _rt16_rank1_inputs(code):
    import ast

    found = []
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "assert_size_stride" and len(node.args) >= 2:
            names, sizes = [node.args[0]], [node.args[1]]
        elif node.func.id == "assert_size_stride_grouped" and len(node.args) >= 2:
            names, sizes = list(node.args[0].elts), list(node.args[1].elts)
        else:
            continue
        for name, size in zip(names, sizes):
            if isinstance(name, ast.Name) and isinstance(size, ast.Tuple) and len(size.elts) == 1:
                found.append((name.id, size))
    return found


def _rt16_inductor_home(code):
    found = _rt16_rank1_inputs(code)
    if not found:
        return "none"
    bias = found[0][0]
    for call in read_inductor(code).calls:
        if any(re.search(rf"\b{bias}\b", a) for a in call.arguments):
            return "fused" if call.kind == "fused" else "library"
    return "none"


def _rt16_holds_dot(module, instruction):
    if instruction.opcode in ("dot", "custom-call"):
        return True
    pending, seen = list(instruction.called_computations), set()
    while pending:
        comp = module.computation(pending.pop())
        if comp is None or comp.name in seen:
            continue
        seen.add(comp.name)
        if any(i.opcode == "dot" for i in comp.instructions):
            return True
        pending.extend(comp.calls)
    return False


def _rt16_xla_home(hlo_text, pick_last=False, direct_only=False):
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry.instructions if i.opcode == "parameter"]
    rank1 = [p for p in params if len(p.shape_info.dims) == 1]
    if pick_last:
        rank1 = params[-1:] if params and len(params[-1].shape_info.dims) == 1 else []
    if not rank1:
        return "none"
    bias = rank1[0].name
    for i in module.entry.instructions:
        if bias in i.operands and i.opcode != "parameter":
            if direct_only:
                holds = i.opcode in ("dot", "custom-call") or i.attribute("kind") == "kCustom"
            else:
                holds = _rt16_holds_dot(module, i)
            if holds:
                return "library"
    return "fused"


@wrong(
    "bias_homes",
    why="'none' when the program has no bias, on Inductor's side too: assumes a bias and answers "
    "'library' if call holds an addmm, else 'fused'; wrong on recorded/dense_tanh_nobias.txt "
    "(mm + tanh: 'fused' instead of 'none')",
)
def bias_homes_always_has_bias(hlo_text, inductor_code):
    calls = read_inductor(inductor_code).calls
    inductor = "library" if any(c.kernel.endswith("addmm") for c in calls) else "fused"
    return {"xla": _rt16_xla_home(hlo_text), "inductor": inductor}


@wrong(
    "bias_homes",
    why="XLA 'library' also when the bias feeds an ENTRY kernel whose fused computation holds the "
    "dot: only looks for a dot/custom-call/kCustom instruction taking the bias; wrong on "
    "programs.HANDWRITTEN_HLO['dense_output_fusion'] (a kOutput fusion: 'fused' instead of "
    "'library')",
)
def bias_homes_direct_operand_only(hlo_text, inductor_code):
    return {
        "xla": _rt16_xla_home(hlo_text, direct_only=True),
        "inductor": _rt16_inductor_home(inductor_code),
    }


@wrong(
    "bias_homes",
    why="the bias is the only rank-1 ENTRY parameter, wherever it sits: takes the LAST parameter "
    "as the bias (as in x, w, b); wrong on programs.HANDWRITTEN_HLO['dense_library_call'] (b is "
    "parameter 0: 'none' instead of 'library')",
)
def bias_homes_last_parameter(hlo_text, inductor_code):
    return {
        "xla": _rt16_xla_home(hlo_text, pick_last=True),
        "inductor": _rt16_inductor_home(inductor_code),
    }


# ---- task 4: reductions_per_kernel ------------------------------------------------------------


def _rt16_xla_reductions(hlo_text):
    module, kernels = _rt16_entry_kernels(hlo_text)
    out = []
    for k in kernels:
        n = int(k.opcode in ("reduce", "reduce-window"))
        pending = [c for key, c in [("calls", k.attribute("calls"))] if c]
        seen = set()
        while pending:
            comp = module.computation(pending.pop().strip("%{} "))
            if comp is None or comp.name in seen:
                continue
            seen.add(comp.name)
            for i in comp.instructions:
                n += int(i.opcode in ("reduce", "reduce-window"))
                called = i.attribute("calls")
                if called:
                    pending.append(called)
        out.append(n)
    return out


@wrong(
    "reductions_per_kernel",
    why="one reduction per `tmp_acc<N> = <init>;` declaration: counts the distinct tmp_acc* "
    "names instead, but each loop nest declares its own tmp_acc0 again; wrong on "
    "recorded/layernorm_softmax.txt (2 instead of the 4 declarations)",
)
def reductions_per_kernel_every_acc_name(hlo_text, inductor_code):
    graph = read_inductor(inductor_code)
    inductor = []
    for call in graph.calls:
        if call.kind != "fused":
            inductor.append(0)
            continue
        inductor.append(len(set(re.findall(r"\btmp_acc\w*", graph.kernels.get(call.kernel, "")))))
    return {"xla": _rt16_xla_reductions(hlo_text), "inductor": inductor}


@wrong(
    "reductions_per_kernel",
    why="one entry per kernel call runs, library calls and fallbacks as 0: lists the fused "
    "kernels only; wrong on programs.HANDWRITTEN (3 library calls dropped) and recorded/mlp_gelu.txt",
)
def reductions_per_kernel_fused_only(hlo_text, inductor_code):
    graph = read_inductor(inductor_code)
    inductor = [reduction_count(graph.kernels[c.kernel]) for c in graph.calls if c.kind == "fused"]
    return {"xla": _rt16_xla_reductions(hlo_text), "inductor": inductor}


@wrong(
    "reductions_per_kernel",
    why="in the order call runs them, one per call: walks the kernel DEFINITIONS (source order, "
    "each once) and skips library calls; wrong on programs.HANDWRITTEN (exp_1 and mul_2 are "
    "defined but never called; add_relu runs twice)",
)
def reductions_per_kernel_definition_order(hlo_text, inductor_code):
    graph = read_inductor(inductor_code)
    inductor = [reduction_count(src) for src in graph.kernels.values()]
    return {"xla": _rt16_xla_reductions(hlo_text), "inductor": inductor}


# ---- task 5: train_graphs ---------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="the texts come in any order; the backward is the one taking tangents_<n>: assumes "
    "codes[0] is the forward; wrong on recorded/train_mlp_gelu.txt's two graphs given reversed",
)
def train_graphs_first_is_forward(codes):
    forward, backward = read_inductor(codes[0]), read_inductor(codes[1])
    saved = [i for i in backward.inputs if not i.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


@wrong(
    "train_graphs",
    why="'saved' excludes the gradients of the forward's outputs (tangents_<n>): counts every "
    "input of the backward; wrong on recorded/train_mlp_gelu.txt (6 instead of 5)",
)
def train_graphs_saved_with_tangents(codes):
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if any(i.startswith("tangents_") for i in g.inputs))
    forward = next(g for g in graphs if g is not backward)
    return {
        "forward": len(forward.calls),
        "backward": len(backward.calls),
        "saved": len(backward.inputs),
    }


@wrong(
    "train_graphs",
    why="kernels are fused kernels, library calls and fallbacks: counts only the cpp_fused_ "
    "calls; wrong on recorded/train_mlp_gelu.txt (the addmm/mm GEMMs are missed)",
)
def train_graphs_fused_only(codes):
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if any(i.startswith("tangents_") for i in g.inputs))
    forward = next(g for g in graphs if g is not backward)
    saved = [i for i in backward.inputs if not i.startswith("tangents_")]
    count = lambda g: sum(1 for c in g.calls if c.kind == "fused")  # noqa: E731
    return {"forward": count(forward), "backward": count(backward), "saved": len(saved)}


# ---- task 6: predict_inductor_kernels ---------------------------------------------------------


@wrong(
    "predict_inductor_kernels",
    why="the bias goes into the GEMM (addmm), it costs no kernel: counts a fused kernel per bias "
    "as well as per activation; wrong on MLP_CASES['mlp_a'] (fused 2+... instead of 1) and "
    "mlp_c (a single biased linear: fused 1 instead of 0)",
)
def predict_inductor_kernels_bias_kernel(input_shape, layers):
    fused = sum(1 for _, bias, act in layers if bias) + sum(1 for *_, a in layers if a != "none")
    return {"library": len(layers), "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="a linear layer is always a library call (mm without a bias): counts only the biased "
    "layers (addmm) as library; wrong on MLP_CASES['mlp_b'] (3 GEMMs, only 1 has a bias) and mlp_h",
)
def predict_inductor_kernels_addmm_only(input_shape, layers):
    library = sum(1 for _, bias, _ in layers if bias)
    return {"library": library, "fused": sum(1 for *_, a in layers if a != "none")}


@wrong(
    "predict_inductor_kernels",
    why="a 3-D input does not add kernels (the reshape is a view): adds a fused copy kernel per "
    "layer for an input of rank > 2; wrong on MLP_CASES['mlp_h'] ((3,5,24), two plain linears: "
    "fused 0, not 2)",
)
def predict_inductor_kernels_3d_copies(input_shape, layers):
    fused = sum(1 for *_, a in layers if a != "none")
    if len(input_shape) > 2:
        fused += len(layers)
    return {"library": len(layers), "fused": fused}


# ---- task 7: inference_call -------------------------------------------------------------------


@wrong(
    "inference_call",
    why="one inference graph with no primals_<n> inputs: detaching x alone leaves the parameters "
    "requiring grad, so Inductor still builds a forward (with saved tensors) and a backward; "
    "wrong on any MLP whose parameters require grad",
)
def inference_call_detach_input(compiled, x):
    return compiled(x.detach())


@wrong(
    "inference_call",
    why="eval() switches dropout/batchnorm, not autograd: the parameters still require grad, so "
    "the compiled graph is a training forward with primals_<n>; wrong on any MLP module",
)
def inference_call_eval_mode(compiled, x):
    compiled.eval()
    return compiled(x)


@wrong(
    "inference_call",
    why="the values must equal the module's eager output and the call must compile an inference "
    "graph: runs the eager module under no_grad instead of the compiled one (via _orig_mod), so "
    "Inductor compiles nothing; wrong on any compiled MLP (no inference graph is made)",
)
def inference_call_eager_module(compiled, x):
    import torch

    module = getattr(compiled, "_orig_mod", compiled)
    with torch.no_grad():
        return module(x)
