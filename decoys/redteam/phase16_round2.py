"""Red-team wrong answers for phase 16, written from the contract only.

Round 2. Each function has its task's exact signature; module-level helpers start with `_rt2_`.
Where an answer has two halves (XLA and Inductor) only one half is wrong; the other is computed
the way the contract says, so that a test must look at the wrong half to catch it.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

# ---- shared, contract-following helpers (used for the half of an answer that is right) -------

_RT2_XLA_OPS = ("dot", "custom-call", "reduce", "reduce-window")


def _rt2_short(call: Any) -> str:
    return call.short_name


def _rt2_kernels_ok(code: str) -> list[str]:
    return [_rt2_short(c) for c in read_inductor(code).calls]


def _rt2_xla_kernels(hlo_text: str) -> list[Any]:
    module = parse_hlo(hlo_text)
    return [i for i in module.entry if i.opcode == "fusion" or i.opcode in _RT2_XLA_OPS]


def _rt2_xla_census_ok(hlo_text: str) -> dict[str, int]:
    library = fused = 0
    for inst in parse_hlo(hlo_text).entry:
        if inst.opcode in ("dot", "custom-call"):
            library += 1
        elif inst.opcode == "fusion":
            if inst.attribute("kind") == "kCustom":
                library += 1
            else:
                fused += 1
    return {"library": library, "fused": fused}


def _rt2_inductor_census_ok(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    fused = sum(1 for c in calls if c.kind == "fused")
    return {"library": len(calls) - fused, "fused": fused}


def _rt2_reaches(module: Any, names: tuple[str, ...]) -> list[Any]:
    """Every computation reachable through calls= (not to_apply=) from `names`."""
    seen: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen.append(name)
        for inst in module[name]:
            if inst.opcode == "fusion" or inst.attribute("calls"):
                todo.extend(_rt2_calls_of(inst))
    return [module[n] for n in seen]


def _rt2_calls_of(inst: Any) -> tuple[str, ...]:
    text = inst.attribute("calls")
    if not text:
        return ()
    return tuple(p.strip().lstrip("%") for p in text.strip("{}").split(",") if p.strip())


def _rt2_xla_reductions_ok(hlo_text: str) -> list[int]:
    module = parse_hlo(hlo_text)
    out = []
    for inst in _rt2_xla_kernels(hlo_text):
        own = 1 if inst.opcode in ("reduce", "reduce-window") else 0
        comps = _rt2_reaches(module, _rt2_calls_of(inst))
        own += sum(1 for c in comps for i in c if i.opcode in ("reduce", "reduce-window"))
        out.append(own)
    return out


def _rt2_inductor_reductions_ok(code: str) -> list[int]:
    graph = read_inductor(code)
    return [
        reduction_count(graph.kernels.get(c.kernel, "")) if c.kind == "fused" else 0
        for c in graph.calls
    ]


def _rt2_rank1_inputs(code: str) -> list[str]:
    """Inputs whose assert_size_stride size has one dimension (plain and grouped forms)."""
    tree = ast.parse(code)
    found: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "assert_size_stride" and len(node.args) >= 2:
            name, size = node.args[0], node.args[1]
            if isinstance(name, ast.Name) and isinstance(size, ast.Tuple) and len(size.elts) == 1:
                found.append(name.id)
        elif node.func.id == "assert_size_stride_grouped" and len(node.args) >= 2:
            names, sizes = node.args[0], node.args[1]
            if isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple):
                for n, s in zip(names.elts, sizes.elts, strict=False):
                    if isinstance(n, ast.Name) and isinstance(s, ast.Tuple) and len(s.elts) == 1:
                        found.append(n.id)
    return found


def _rt2_inductor_home(code: str, bias: str | None) -> str:
    if bias is None:
        return "none"
    for call in read_inductor(code).calls:
        if bias in call.arguments and call.kind != "fused":
            return "library"
    return "fused"


def _rt2_holds_dot(module: Any, inst: Any) -> bool:
    if inst.opcode in ("dot", "custom-call"):
        return True
    comps = _rt2_reaches(module, _rt2_calls_of(inst))
    return any(i.opcode == "dot" for c in comps for i in c)


def _rt2_xla_home_ok(hlo_text: str) -> str:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter" and len(i.shape_info.dims) == 1]
    if not params:
        return "none"
    bias = params[0].name
    for inst in module.entry:
        if bias in inst.operands and (inst.opcode == "fusion" or inst.opcode in _RT2_XLA_OPS):
            return "library" if _rt2_holds_dot(module, inst) else "fused"
    return "fused"


def _rt2_graph_kernels(code: str) -> int:
    return len(read_inductor(code).calls)


# ---- task 1: inductor_kernels ----------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="cuts the prefix with str.lstrip('cpp_fused_'), which strips a character set, not a "
    "prefix: the ops name must be the name without `cpp_fused_` and `_<n>`; wrong on "
    "recorded/dense_sigmoid_3d.txt ('nsafe_view_sigmoid' for cpp_fused__unsafe_view_sigmoid_0), "
    "layernorm_softmax ('oftmax_native_layer_norm') and mlp_b ('igmoid')",
)
def _rt2_lstrip_prefix(code: str) -> list[str]:
    out = []
    for call in read_inductor(code).calls:
        if call.kind == "fused":
            out.append(call.kernel.lstrip("cpp_fused_").rsplit("_", 1)[0])  # noqa: B005  (the wrong answer)
        else:
            out.append(call.short_name)
    return out


_RT2_KERNEL_LINE = re.compile(
    r"^\s*(?:\w+\s*=\s*)?(cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.aten\.\w+\.\w+)\("
)


@wrong(
    "inductor_kernels",
    why="finds `call` only as the Runner method (`def call(self, args):`), as every recording "
    "prints it: the contract's `call` may be a module-level `def call(args)` (older releases); "
    "wrong on programs.HANDWRITTEN (returns [] instead of bmm, add_relu, baddbmm, add_relu, "
    "_addmm_activation)",
)
def _rt2_runner_method_only(code: str) -> list[str]:
    start = code.find("def call(self, args):")
    if start < 0:
        return []
    body = code[start:].split("\nrunner = ", 1)[0]
    out = []
    for line in body.splitlines()[1:]:
        found = _RT2_KERNEL_LINE.match(line)
        if not found:
            continue
        name = found.group(1)
        if name.startswith("cpp_fused_"):
            out.append(re.sub(r"_\d+$", "", name[len("cpp_fused_") :]))
        elif name.startswith("extern_kernels."):
            out.append(name.split(".", 1)[1])
        else:
            out.append(name.split(".")[3])
    return out


@wrong(
    "inductor_kernels",
    why="lists each fused kernel once (the first time it is called, as the module defines it "
    "once): 'a kernel called twice appears twice'; wrong on recorded/mlp_d.txt (cpp_fused__unsafe_view_gelu_0 runs after both "
    "addmm calls: 5 kernels, this gives 4) and programs.HANDWRITTEN (add_relu twice)",
)
def _rt2_unique_kernels(code: str) -> list[str]:
    seen: set[str] = set()
    out = []
    for call in read_inductor(code).calls:
        if call.kind == "fused":
            if call.kernel in seen:
                continue
            seen.add(call.kernel)
        out.append(call.short_name)
    return out


@wrong(
    "inductor_kernels",
    why="names a fallback by the last dotted part of its callee (its overload, 'default') "
    "instead of `<op>`; wrong on recorded/addmm_gelu.txt (['default'], not "
    "['_addmm_activation']) and programs.HANDWRITTEN",
)
def _rt2_fallback_overload(code: str) -> list[str]:
    out = []
    for call in read_inductor(code).calls:
        if call.kind == "fallback":
            out.append(call.kernel.rsplit(".", 1)[-1])
        else:
            out.append(call.short_name)
    return out


# ---- task 2: kernel_census -------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="counts only kCustom fusions as XLA 'library', not the bare ENTRY `dot` and "
    "`custom-call` instructions the contract also counts (a bare custom-call it counts nowhere); "
    "wrong on programs.HANDWRITTEN_HLO['dense_library_call'] (library 0, should be 1)",
)
def _rt2_census_kcustom_only(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    library = fused = 0
    for inst in parse_hlo(hlo_text).entry:
        if inst.opcode == "fusion":
            if inst.attribute("kind") == "kCustom":
                library += 1
            else:
                fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt2_inductor_census_ok(inductor_code),
    }


@wrong(
    "kernel_census",
    why="Inductor 'library' counts only `extern_kernels.` calls, not fallbacks "
    "(`torch.ops.aten...`), which the contract counts as library; wrong on "
    "recorded/addmm_gelu.txt (library 0, should be 1) and programs.HANDWRITTEN (2, should be 3)",
)
def _rt2_census_extern_only(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    calls = read_inductor(inductor_code).calls
    return {
        "xla": _rt2_xla_census_ok(hlo_text),
        "inductor": {
            "library": sum(1 for c in calls if c.kind == "extern"),
            "fused": sum(1 for c in calls if c.kind == "fused"),
        },
    }


@wrong(
    "kernel_census",
    why="Inductor 'fused' counts the fused kernels the module DEFINES "
    "(`cpp_fused_... = async_compile...`), not the calls `call` runs; wrong on "
    "recorded/mlp_d.txt (1 definition called twice: 1, should be 2) and programs.HANDWRITTEN "
    "(3 defined, 2 calls)",
)
def _rt2_census_defined(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    defined = re.findall(r"^(cpp_fused_\w+)\s*=\s*async_compile", inductor_code, re.M)
    calls = read_inductor(inductor_code).calls
    return {
        "xla": _rt2_xla_census_ok(hlo_text),
        "inductor": {
            "library": sum(1 for c in calls if c.kind != "fused"),
            "fused": len(defined),
        },
    }


@wrong(
    "kernel_census",
    why="XLA 'fused' counts every ENTRY instruction that is not a parameter, constant, tuple "
    "or library call, so a `bitcast` (or copy) counts as a kernel: the contract counts only "
    "fusions; wrong on the JAX twin of dense_sigmoid_3d (its ENTRY bitcast of x: fused 2, "
    "should be 1)",
)
def _rt2_census_all_entry(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    library = fused = 0
    for inst in parse_hlo(hlo_text).entry:
        if inst.opcode in ("parameter", "constant", "tuple", "get-tuple-element"):
            continue
        if inst.opcode in ("dot", "custom-call") or inst.attribute("kind") == "kCustom":
            library += 1
        else:
            fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt2_inductor_census_ok(inductor_code),
    }


# ---- task 3: bias_homes ----------------------------------------------------------------------


@wrong(
    "bias_homes",
    why="finds the bias only in a plain `assert_size_stride(name, (N, ), ...)`, not in the "
    "grouped `assert_size_stride_grouped((...), ((N, ), ...), ...)` Inductor also writes; wrong "
    "on recorded/dense_relu.txt and dense_linear.txt (Inductor 'none', should be 'library')",
)
def _rt2_bias_plain_assert(hlo_text: str, inductor_code: str) -> dict[str, str]:
    found = re.search(r"assert_size_stride\((\w+), \((\d+), \)", inductor_code)
    bias = found.group(1) if found else None
    return {"xla": _rt2_xla_home_ok(hlo_text), "inductor": _rt2_inductor_home(inductor_code, bias)}


@wrong(
    "bias_homes",
    why="XLA 'library' only when the ENTRY instruction reading the bias is a kind=kCustom "
    "fusion; the contract also counts a fusion of another kind whose computation holds the "
    "dot, and a dot/custom-call taking the bias itself; wrong on "
    "programs.HANDWRITTEN_HLO['dense_output_fusion'] (kOutput) and ['dense_library_call'] "
    "(custom-call): 'fused', should be 'library'",
)
def _rt2_bias_kcustom_home(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter" and len(i.shape_info.dims) == 1]
    xla = "none"
    if params:
        xla = "fused"
        for inst in module.entry:
            if params[0].name in inst.operands and inst.attribute("kind") == "kCustom":
                xla = "library"
    rank1 = _rt2_rank1_inputs(inductor_code)
    inductor = _rt2_inductor_home(inductor_code, rank1[0] if rank1 else None)
    return {"xla": xla, "inductor": inductor}


@wrong(
    "bias_homes",
    why="Inductor 'library' only when the bias is an argument of `extern_kernels.addmm`; the "
    "contract also counts a fallback (`torch.ops.aten._addmm_activation`) taking it; wrong on "
    "recorded/addmm_gelu.txt ('fused', should be 'library')",
)
def _rt2_bias_addmm_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    rank1 = _rt2_rank1_inputs(inductor_code)
    if not rank1:
        inductor = "none"
    else:
        inductor = "fused"
        for call in read_inductor(inductor_code).calls:
            if call.kernel == "extern_kernels.addmm" and rank1[0] in call.arguments:
                inductor = "library"
    return {"xla": _rt2_xla_home_ok(hlo_text), "inductor": inductor}


@wrong(
    "bias_homes",
    why="takes the bias to be the LAST argument (x, w, b as the JAX/PyTorch functions are "
    "written) on both sides, 'none' when that one is not rank 1: the bias is the only rank-1 "
    "argument wherever it is; wrong on recorded/addmm_gelu.txt (its bias is arg1_1 of "
    "arg0_1..arg2_1: 'none', should be 'library') and "
    "programs.HANDWRITTEN_HLO['dense_library_call'] (b is parameter 0)",
)
def _rt2_bias_last_argument(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter"]
    last = max(params, key=lambda i: int(i.payload or 0) if (i.payload or "0").isdigit() else 0)
    xla = _rt2_xla_home_ok(hlo_text) if len(last.shape_info.dims) == 1 else "none"
    graph = read_inductor(inductor_code)
    rank1 = _rt2_rank1_inputs(inductor_code)
    bias = graph.inputs[-1] if graph.inputs and graph.inputs[-1] in rank1 else None
    return {"xla": xla, "inductor": _rt2_inductor_home(inductor_code, bias)}


# ---- task 4: reductions_per_kernel -----------------------------------------------------------


@wrong(
    "reductions_per_kernel",
    why="counts the DISTINCT accumulator names (`tmp_acc0`, `tmp_acc1`) in a kernel's C++; each "
    "loop nest declares its own `tmp_acc0` again, and the contract counts declarations; wrong "
    "on recorded/layernorm_softmax.txt (Inductor [1], should be [4])",
)
def _rt2_red_distinct_names(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    counts = []
    for call in graph.calls:
        if call.kind != "fused":
            counts.append(0)
            continue
        source = graph.kernels.get(call.kernel, "")
        counts.append(len(set(re.findall(r"\btmp_acc\d+\b", source))))
    return {"xla": _rt2_xla_reductions_ok(hlo_text), "inductor": counts}


@wrong(
    "reductions_per_kernel",
    why="counts every `tmp_acc...` declaration, the vectorized `tmp_acc0_vec` too, which the "
    "contract says belongs to the same reduction; wrong on recorded/layernorm_softmax.txt "
    "(Inductor [8], should be [4])",
)
def _rt2_red_vec_too(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    pattern = re.compile(r"^\s*[\w:<>]+\s+tmp_acc\d+\w*\s*=", re.M)
    counts = [
        len(pattern.findall(graph.kernels.get(c.kernel, ""))) if c.kind == "fused" else 0
        for c in graph.calls
    ]
    return {"xla": _rt2_xla_reductions_ok(hlo_text), "inductor": counts}


@wrong(
    "reductions_per_kernel",
    why="counts only `reduce` as a reduction, not `reduce-window` (the first half of each row "
    "reduction on XLA:CPU); wrong on the JAX twin of layernorm_softmax (the four "
    "wrapped_reduce-window fusions give 0, should be 1)",
)
def _rt2_red_reduce_only(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    xla = []
    for inst in _rt2_xla_kernels(hlo_text):
        n = 1 if inst.opcode == "reduce" else 0
        comps = _rt2_reaches(module, _rt2_calls_of(inst))
        n += sum(1 for c in comps for i in c if i.opcode == "reduce")
        xla.append(n)
    return {"xla": xla, "inductor": _rt2_inductor_reductions_ok(inductor_code)}


@wrong(
    "reductions_per_kernel",
    why="lists only the fused kernels on both sides (ENTRY fusions; cpp_fused_ calls), "
    "dropping library calls, fallbacks and bare dot/custom-call/reduce instructions, which "
    "are kernels with 0 (or 1) reductions; wrong on recorded/attention.txt (Inductor bmm, "
    "fused, bmm: one entry instead of three)",
)
def _rt2_red_fused_only(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    xla = []
    for inst in module.entry:
        if inst.opcode != "fusion" or inst.attribute("kind") == "kCustom":
            continue
        comps = _rt2_reaches(module, _rt2_calls_of(inst))
        xla.append(sum(1 for c in comps for i in c if i.opcode in ("reduce", "reduce-window")))
    graph = read_inductor(inductor_code)
    inductor = [
        reduction_count(graph.kernels.get(c.kernel, "")) for c in graph.calls if c.kind == "fused"
    ]
    return {"xla": xla, "inductor": inductor}


@wrong(
    "reductions_per_kernel",
    why="counts the reductions of the fusion's own called computation only, not of the "
    "computations that one calls in turn (`calls=` reaches further: a nested fusion or call); "
    "wrong on an HLO whose fusion calls a computation holding a nested reduce fusion (1 there, "
    "this gives 0)",
)
def _rt2_red_one_level(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    xla = []
    for inst in _rt2_xla_kernels(hlo_text):
        n = 1 if inst.opcode in ("reduce", "reduce-window") else 0
        for name in _rt2_calls_of(inst):
            comp = module.computation(name)
            if comp is not None:
                n += sum(1 for i in comp if i.opcode in ("reduce", "reduce-window"))
        xla.append(n)
    return {"xla": xla, "inductor": _rt2_inductor_reductions_ok(inductor_code)}


# ---- task 5: train_graphs --------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="takes codes[0] as the forward and codes[1] as the backward (the order "
    "run_and_get_code compiles them): the texts come 'in any order'; wrong on "
    "recorded/train_mlp_gelu.txt reversed (forward 6, backward 4, saved 5 counted from the "
    "forward's inputs: 6)",
)
def _rt2_train_order(codes: list[str]) -> dict[str, int]:
    forward, backward = read_inductor(codes[0]), read_inductor(codes[1])
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


@wrong(
    "train_graphs",
    why="counts only the fused C++ calls (`cpp_fused_`) as kernels, not the library GEMMs; "
    "wrong on recorded/train_mlp_gelu.txt (forward 2 and backward 3, should be 4 and 6)",
)
def _rt2_train_fused_only(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if g.is_backward)
    forward = next(g for g in graphs if not g.is_backward)
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {
        "forward": sum(1 for c in forward.calls if c.kind == "fused"),
        "backward": sum(1 for c in backward.calls if c.kind == "fused"),
        "saved": len(saved),
    }


@wrong(
    "train_graphs",
    why="'saved' counts only the backward inputs the forward COMPUTED (not named primals_<n>), "
    "as if graph inputs handed on were not saved; the contract counts every non-tangent input "
    "of the backward; wrong on recorded/train_mlp_gelu.txt (4: addmm, mul_2, mul_3, permute_2; "
    "should be 5 with primals_1)",
)
def _rt2_train_saved_activations(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if g.is_backward)
    forward = next(g for g in graphs if not g.is_backward)
    saved = [
        n for n in backward.inputs if not n.startswith("tangents_") and not n.startswith("primals_")
    ]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


# ---- task 6: predict_inductor_kernels --------------------------------------------------------


@wrong(
    "predict_inductor_kernels",
    why="charges a bias with no activation a fused kernel of its own (XLA's habit: bias add as "
    "a loop fusion); Inductor's addmm takes the bias; wrong on mlp_c (fused 1, should be 0) and "
    "mlp_a (2, should be 1)",
)
def _rt2_predict_bias_kernel(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    fused = sum(1 for _, bias, act in layers if act != "none" or bias)
    return {"library": len(layers), "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="counts one fused kernel per DISTINCT activation (the generated module defines "
    "cpp_fused__unsafe_view_gelu_0 once), but a kernel called twice runs twice; wrong on mlp_d "
    "(two gelu layers: fused 1, should be 2)",
)
def _rt2_predict_distinct_acts(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    acts = {act for _, _, act in layers if act != "none"}
    return {"library": len(layers), "fused": len(acts)}


@wrong(
    "predict_inductor_kernels",
    why="for an input of rank > 2 charges each layer without an activation a fused "
    "`_unsafe_view` copy kernel (read from cpp_fused__unsafe_view_gelu_0's name), but the view "
    "is a reinterpret_tensor and costs nothing; wrong on mlp_h ((3, 5, 24), two plain layers: "
    "fused 2, should be 0) and mlp_d (gelu, gelu, none on (2, 4, 24): fused 3, should be 2)",
)
def _rt2_predict_view_kernel(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    fused = 0
    for _, _, act in layers:
        if act != "none" or len(input_shape) > 2:
            fused += 1
    return {"library": len(layers), "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="the textbook rule (one GEMM per layer, one fused kernel per activation) ignores "
    "Inductor's CPU decompositions of tiny GEMMs (torch 2.15, checked live): one input row and "
    "a weight no larger than 16x16 turn addmm into a multiply-and-sum fused with what follows "
    "(cpp_fused_addmm_relu_t_0), and in_features 1 turns mm into a fused kernel "
    "(cpp_fused_mm_t_0); wrong on input (1, 16), layers [(8, True, 'relu')] (library 0, "
    "fused 1; this says 1, 1), on (1, 16), [(8, True, 'none')] (0, 1; this says 1, 0) and on "
    "(8, 1), [(16, False, 'none')] (0, 1; this says 1, 0)",
)
def _rt2_predict_textbook(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return {"library": len(layers), "fused": sum(1 for _, _, act in layers if act != "none")}


# ---- task 7: inference_call ------------------------------------------------------------------


@wrong(
    "inference_call",
    why="detaches the input only: the parameters still require grad, so AOTAutograd still "
    "compiles a forward graph with primals_<n> inputs that saves tensors for a backward; wrong "
    "on any MLP whose parameters require grad",
)
def _rt2_infer_detach_input(compiled: Any, x: Any) -> Any:
    return compiled(x.detach())


@wrong(
    "inference_call",
    why="switches the module to eval() (which only changes dropout/batch-norm behaviour), "
    "leaving autograd on: Inductor compiles a training forward graph (primals_<n>, saved "
    "tensors); wrong on any MLP whose parameters require grad",
)
def _rt2_infer_eval_mode(compiled: Any, x: Any) -> Any:
    compiled.eval()
    return compiled(x)


@wrong(
    "inference_call",
    why="detaches the OUTPUT: the call itself ran with grad enabled, so the graph Inductor "
    "compiled is AOTAutograd's forward (primals_<n> inputs, returns saved tensors); values "
    "match, the graph does not; wrong on any MLP whose parameters require grad",
)
def _rt2_infer_detach_output(compiled: Any, x: Any) -> Any:
    return compiled(x).detach()
