"""Plausible wrong answers for phase 16, and correct answers spelled differently."""

import re

from kata_harness.decoys import accepted, decoy
from xla_inspect.inductor import fused_ops, read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_KERNEL = re.compile(
    r"^\s+(?:\w+ = )?(?:cpp_fused_(?:(?P<fused>\w+?)_)?\d+|extern_kernels\.(?P<extern>\w+)"
    r"|torch\.ops\.aten\.(?P<fallback>\w+)\.\w+)\("
)


def _call_lines(code):
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("def call("))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


_KERNEL_OPCODES = ("dot", "custom-call", "reduce", "reduce-window")


def _xla_kernels(module):
    entry = module.entry.instructions
    return [i for i in entry if i.opcode == "fusion" or i.opcode in _KERNEL_OPCODES]


def _reached(module, instruction):
    found, names, seen = [instruction], [], set()
    names += [
        n.lstrip("%") for n in (instruction.attribute("calls") or "").strip("{}").split(",") if n
    ]
    while names:
        name = names.pop()
        if name not in seen:
            seen.add(name)
            for inner in module[name].instructions:
                found.append(inner)
                calls = (inner.attribute("calls") or "").strip("{}")
                names += [n.strip().lstrip("%") for n in calls.split(",") if n.strip()]
    return found


def _census(hlo_text, inductor_code):
    xla = {"library": 0, "fused": 0}
    for i in parse_hlo(hlo_text).entry.instructions:
        if i.opcode in ("dot", "custom-call") or i.attribute("kind") == "kCustom":
            xla["library"] += 1
        elif i.opcode == "fusion":
            xla["fused"] += 1
    calls = read_inductor(inductor_code).calls
    fused = sum(c.kind == "fused" for c in calls)
    return {"xla": xla, "inductor": {"library": len(calls) - fused, "fused": fused}}


def _homes(hlo_text, inductor_code):
    module = parse_hlo(hlo_text)
    homes = {"xla": "none", "inductor": "none"}
    params = [i for i in module.entry.instructions if i.opcode == "parameter"]
    bias = [p.name for p in params if len(p.shape_info.dims) == 1]
    if bias:
        kernel = next(k for k in _xla_kernels(module) if bias[0] in k.operands)
        dot = any(i.opcode in ("dot", "custom-call") for i in _reached(module, kernel))
        homes["xla"] = "library" if dot else "fused"
    sizes = {}
    for line in _call_lines(inductor_code):
        single = re.match(r"\s+assert_size_stride\((\w+), \((\w+), \)", line)
        if single:
            sizes[single[1]] = 1
        grouped = re.match(r"\s+assert_size_stride_grouped\(\(([^)]*)\), \((.*?)\), \(\(", line)
        if grouped:
            names = [n.strip() for n in grouped[1].split(",") if n.strip()]
            dims = re.findall(r"\(([^()]*)\)", grouped[2])
            for name, size in zip(names, dims, strict=True):
                sizes[name] = len([d for d in size.split(",") if d.strip()])
    graph = read_inductor(inductor_code)
    name = next((n for n in graph.inputs if sizes.get(n) == 1), None)
    if name is not None:
        call = next(c for c in graph.calls if name in c.arguments)
        homes["inductor"] = "fused" if call.kind == "fused" else "library"
    return homes


def _reductions(hlo_text, inductor_code):
    module = parse_hlo(hlo_text)
    xla = [
        sum(i.opcode in ("reduce", "reduce-window") for i in _reached(module, k))
        for k in _xla_kernels(module)
    ]
    graph = read_inductor(inductor_code)
    inductor = [reduction_count(graph.kernels.get(c.kernel, "")) for c in graph.calls]
    return {"xla": xla, "inductor": inductor}


def _train(codes):
    graphs = [read_inductor(c) for c in codes]
    forward = next(g for g in graphs if not g.is_backward)
    backward = next(g for g in graphs if g.is_backward)
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


# ---- inductor_kernels ------------------------------------------------------------------


@decoy(
    "inductor_kernels",
    caught_by=[
        "test_inductor_kernels_of_recorded_code",
        "test_inductor_kernels_of_handwritten_code",
    ],
    why="lists the fused kernels in the order they are defined, then the library calls",
)
def inductor_kernels_definition_order(code):
    graph = read_inductor(code)
    fused = [fused_ops(name) for name in graph.kernels]
    return fused + [c.short_name for c in graph.calls if c.kind != "fused"]


@decoy(
    "inductor_kernels",
    caught_by=["test_inductor_kernels_of_handwritten_code"],
    why="lists each kernel once: a fused kernel called twice is one kernel, not two runs",
)
def inductor_kernels_unique(code):
    seen = []
    for call in read_inductor(code).calls:
        if call.short_name not in seen:
            seen.append(call.short_name)
    return seen


@decoy(
    "inductor_kernels",
    caught_by=[
        "test_inductor_kernels_of_recorded_code",
        "test_inductor_kernels_of_handwritten_code",
    ],
    why="keeps the kernel's number (gelu_0): the number only counts kernels and moves",
)
def inductor_kernels_with_number(code):
    return [
        c.kernel.removeprefix("cpp_fused_") if c.kind == "fused" else c.short_name
        for c in read_inductor(code).calls
    ]


@decoy(
    "inductor_kernels",
    caught_by=[
        "test_inductor_kernels_of_recorded_code",
        "test_inductor_kernels_of_handwritten_code",
    ],
    why="knows fused kernels and extern_kernels only: an ATen fallback is a kernel too",
)
def inductor_kernels_without_fallbacks(code):
    return [c.short_name for c in read_inductor(code).calls if c.kind != "fallback"]


@accepted("inductor_kernels", why="the kernel lines of call, read with a regular expression")
def inductor_kernels_by_lines(code):
    found = []
    for line in _call_lines(code):
        match = _KERNEL.match(line)
        if match:
            found.append(match["extern"] or match["fallback"] or match["fused"] or "")
    return found


# ---- kernel_census -----------------------------------------------------------------------


@decoy(
    "kernel_census",
    caught_by=["test_kernel_census_of_both_compilers"],
    why="on XLA counts every ENTRY fusion as fused: a kCustom fusion is XLA:CPU's library GEMM",
)
def kernel_census_all_fusions_fused(hlo_text, inductor_code):
    entry = parse_hlo(hlo_text).entry
    xla = {
        "library": sum(i.opcode in ("dot", "custom-call") for i in entry.instructions),
        "fused": sum(i.opcode == "fusion" for i in entry.instructions),
    }
    calls = read_inductor(inductor_code).calls
    fused = sum(c.kind == "fused" for c in calls)
    return {"xla": xla, "inductor": {"library": len(calls) - fused, "fused": fused}}


@decoy(
    "kernel_census",
    caught_by=["test_kernel_census_of_other_spellings"],
    why="counts Inductor's fused kernel definitions, not the calls that run them",
)
def kernel_census_definitions(hlo_text, inductor_code):
    census = _census(hlo_text, inductor_code)
    census["inductor"]["fused"] = len(read_inductor(inductor_code).kernels)
    return census


@decoy(
    "kernel_census",
    caught_by=["test_kernel_census_of_both_compilers", "test_kernel_census_of_other_spellings"],
    why="counts extern_kernels calls only as library: an ATen fallback runs a library too",
)
def kernel_census_no_fallbacks(hlo_text, inductor_code):
    census = _census(hlo_text, inductor_code)
    calls = read_inductor(inductor_code).calls
    census["inductor"]["library"] = sum(c.kind == "extern" for c in calls)
    return census


# ---- bias_homes ----------------------------------------------------------------------------


@decoy(
    "bias_homes",
    caught_by=[
        "test_bias_homes_of_both_compilers",
        "test_bias_homes_of_other_spellings",
    ],
    why="assumes Inductor always folds a bias into addmm: added after the activation it is not",
)
def bias_homes_inductor_always_library(hlo_text, inductor_code):
    homes = _homes(hlo_text, inductor_code)
    if homes["inductor"] != "none":
        homes["inductor"] = "library"
    return homes


@decoy(
    "bias_homes",
    caught_by=["test_bias_homes_of_other_spellings"],
    why="assumes XLA always adds the bias in a loop fusion: another backend keeps it in the GEMM",
)
def bias_homes_xla_always_fused(hlo_text, inductor_code):
    homes = _homes(hlo_text, inductor_code)
    if homes["xla"] != "none":
        homes["xla"] = "fused"
    return homes


@decoy(
    "bias_homes",
    caught_by=[
        "test_bias_homes_of_both_compilers",
        "test_bias_homes_of_other_spellings",
    ],
    why="takes the first argument of the library call as the bias: mm and bmm take none",
)
def bias_homes_first_gemm_argument(hlo_text, inductor_code):
    homes = _homes(hlo_text, inductor_code)
    gemms = [c for c in read_inductor(inductor_code).calls if c.kind != "fused"]
    homes["inductor"] = "library" if gemms else "none"
    return homes


# ---- reductions_per_kernel -------------------------------------------------------------


@decoy(
    "reductions_per_kernel",
    caught_by=["test_reductions_per_kernel_of_both_compilers"],
    why="counts XLA's reduce only: the reduce-window that starts a row sum on CPU is one too",
)
def reductions_reduce_only(hlo_text, inductor_code):
    got = _reductions(hlo_text, inductor_code)
    module = parse_hlo(hlo_text)
    counts = []
    for i in module.entry.instructions:
        if i.opcode == "fusion" or i.opcode in ("dot", "custom-call", "reduce", "reduce-window"):
            called = (i.attribute("calls") or "").lstrip("%")
            inner = module[called].instructions if called else ()
            counts.append(sum(x.opcode == "reduce" for x in (i, *inner)))
    got["xla"] = counts
    return got


@decoy(
    "reductions_per_kernel",
    caught_by=["test_reductions_per_kernel_of_training_graphs"],
    why="counts vec_reduce_all calls: a column sum stores its vector accumulator without one",
)
def reductions_vec_reduce_all(hlo_text, inductor_code):
    got = _reductions(hlo_text, inductor_code)
    graph = read_inductor(inductor_code)
    got["inductor"] = [graph.kernels.get(c.kernel, "").count("vec_reduce_all") for c in graph.calls]
    return got


@decoy(
    "reductions_per_kernel",
    caught_by=["test_reductions_per_kernel_of_handwritten_code"],
    why="walks ENTRY fusions only: a library custom-call is a kernel too",
)
def reductions_fusions_only(hlo_text, inductor_code):
    got = _reductions(hlo_text, inductor_code)
    module = parse_hlo(hlo_text)
    kinds = [
        i.opcode
        for i in module.entry.instructions
        if i.opcode == "fusion" or i.opcode in ("dot", "custom-call", "reduce", "reduce-window")
    ]
    got["xla"] = [n for n, kind in zip(got["xla"], kinds, strict=True) if kind == "fusion"]
    return got


@decoy(
    "reductions_per_kernel",
    caught_by=[
        "test_reductions_per_kernel_of_both_compilers",
        "test_one_kernel_holds_every_reduction_of_layernorm_softmax",
    ],
    why="counts every tmp_acc name, the _vec, _arr and _local companions included",
)
def reductions_every_tmp_acc(hlo_text, inductor_code):
    got = _reductions(hlo_text, inductor_code)
    graph = read_inductor(inductor_code)
    got["inductor"] = [
        len(set(re.findall(r"\btmp_acc\w*", graph.kernels.get(c.kernel, "")))) for c in graph.calls
    ]
    return got


@accepted("reductions_per_kernel", why="xla_inspect.inductor.reduction_count on each kernel")
def reductions_with_reduction_count(hlo_text, inductor_code):
    got = _reductions(hlo_text, inductor_code)
    graph = read_inductor(inductor_code)
    got["inductor"] = [reduction_count(graph.kernels.get(c.kernel, "")) for c in graph.calls]
    return got


# ---- train_graphs ------------------------------------------------------------------------


@decoy(
    "train_graphs",
    caught_by=["test_train_graphs_in_any_order", "test_train_graphs_mlp_facts"],
    why="takes the first text as the forward: run_and_get_code's order is not a contract",
)
def train_graphs_first_is_forward(codes):
    forward, backward = (read_inductor(c) for c in codes)
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


@decoy(
    "train_graphs",
    caught_by=["test_train_graphs_in_any_order", "test_train_graphs_mlp_facts"],
    why="counts every input of the backward as saved, the output gradient too",
)
def train_graphs_tangents_saved(codes):
    got = _train(codes)
    backward = next(read_inductor(c) for c in codes if read_inductor(c).is_backward)
    got["saved"] = len(backward.inputs)
    return got


@decoy(
    "train_graphs",
    caught_by=["test_train_graphs_in_any_order", "test_train_graphs_mlp_facts"],
    why="counts fused kernels only: the GEMMs of the backward are library calls",
)
def train_graphs_fused_only(codes):
    got = _train(codes)
    graphs = [read_inductor(c) for c in codes]
    for graph in graphs:
        key = "backward" if graph.is_backward else "forward"
        got[key] = sum(c.kind == "fused" for c in graph.calls)
    return got


@decoy(
    "train_graphs",
    caught_by=["test_train_graphs_in_any_order"],
    why="one output gradient: saved is every input of the backward but one (a function of two "
    "outputs takes tangents_1 and tangents_2)",
)
def train_graphs_one_tangent(codes):
    got = _train(codes)
    backward = next(read_inductor(c) for c in codes if read_inductor(c).is_backward)
    got["saved"] = len(backward.inputs) - 1
    return got


@decoy(
    "train_graphs",
    caught_by=["test_train_graphs_in_any_order"],
    why="saved is what the forward returns after the loss: a second output is not saved",
)
def train_graphs_forward_outputs_after_loss(codes):
    got = _train(codes)
    forward = next(read_inductor(c) for c in codes if not read_inductor(c).is_backward)
    got["saved"] = len(forward.outputs) - 1
    return got


@accepted("train_graphs", why="the forward returns the loss and then exactly what it saves")
def train_graphs_from_forward_outputs(codes):
    graphs = [read_inductor(c) for c in codes]
    forward = next(g for g in graphs if not g.is_backward)
    backward = next(g for g in graphs if g.is_backward)
    saved = len(backward.inputs) - sum(n.startswith("tangents_") for n in backward.inputs)
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": saved}


# ---- predict_inductor_kernels --------------------------------------------------------------


@decoy(
    "predict_inductor_kernels",
    caught_by=["test_predict_inductor_kernels_on_recorded_mlps"],
    why="gives every layer a fused kernel, as if the bias were added outside the GEMM",
)
def predict_every_layer_fused(input_shape, layers):
    return {
        "library": len(layers),
        "fused": sum(act != "none" or bias for _, bias, act in layers),
    }


@decoy(
    "predict_inductor_kernels",
    caught_by=["test_predict_inductor_kernels_on_recorded_mlps"],
    why="counts a GEMM only for layers with a bias (addmm), forgetting mm",
)
def predict_addmm_only(input_shape, layers):
    return {
        "library": sum(bias for _, bias, _ in layers),
        "fused": sum(act != "none" for _, _, act in layers),
    }


@decoy(
    "predict_inductor_kernels",
    caught_by=["test_predict_inductor_kernels_on_recorded_mlps"],
    why="merges all activations into one fused kernel: a GEMM between them ends a kernel",
)
def predict_one_fused_kernel(input_shape, layers):
    return {
        "library": len(layers),
        "fused": int(any(act != "none" for _, _, act in layers)),
    }


# ---- inference_call ----------------------------------------------------------------------


@decoy(
    "inference_call",
    caught_by=["test_inference_call_compiles_one_inference_graph"],
    why="calls the module as it is: parameters that require grad make a training forward",
)
def inference_call_plain(compiled, x):
    return compiled(x)


@decoy(
    "inference_call",
    caught_by=["test_inference_call_compiles_one_inference_graph"],
    why="detaches the input only: the parameters still require grad",
)
def inference_call_detached(compiled, x):
    return compiled(x.detach())


@accepted("inference_call", why="inference_mode turns autograd off as no_grad does")
def inference_call_inference_mode(compiled, x):
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    with torch.inference_mode():
        return compiled(x)


@accepted("inference_call", why="set_grad_enabled(False) is no_grad's switch")
def inference_call_grad_disabled(compiled, x):
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    with torch.set_grad_enabled(False):
        return compiled(x)


@decoy(
    "predict_inductor_kernels",
    caught_by=["test_predict_inductor_kernels_on_fresh_mlps"],
    why="compiles the MLP with torch.compile and reads the count: not a prediction",
)
def predict_by_compiling(input_shape, layers):
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor.utils import run_and_get_code  # pyright: ignore[reportMissingImports]  (the torch group)

    widths = [input_shape[-1]] + [out for out, _, _ in layers]
    args = [torch.ones(input_shape)]
    for (out, bias, _), width in zip(layers, widths, strict=False):
        args += [torch.ones(out, width)] + ([torch.ones(out)] if bias else [])
    from katas.phase16.programs import torch_mlp

    with torch.no_grad():
        _, codes = run_and_get_code(torch.compile(torch_mlp(tuple(layers))), *args)
    calls = read_inductor(codes[0]).calls
    fused = sum(c.kind == "fused" for c in calls)
    return {"library": len(calls) - fused, "fused": fused}
