"""Red team, phase 16, round 9: plausible wrong answers (each changes one thing of a right one)."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_RT9_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")


def _rt9_called(instruction: Any) -> list[str]:
    value = instruction.attribute("calls")
    if not value:
        return []
    return [n.strip().removeprefix("%") for n in value.strip("{}").split(",") if n.strip()]


def _rt9_reach(module: Any, names: list[str], seen: dict | None = None) -> list[Any]:
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
            todo.extend(_rt9_called(instruction))
    return found


def _rt9_xla_reductions(hlo_text: str, shared_seen: bool = False) -> list[int]:
    module = parse_hlo(hlo_text)
    seen: dict | None = {} if shared_seen else None
    out = []
    for inst in module.entry:
        if inst.opcode not in _RT9_KERNEL_OPS:
            continue
        n = 1 if inst.opcode in ("reduce", "reduce-window") else 0
        n += sum(
            1
            for comp in _rt9_reach(module, _rt9_called(inst), seen)
            for inner in comp
            if inner.opcode in ("reduce", "reduce-window")
        )
        out.append(n)
    return out


def _rt9_inductor_reductions(code: str, counter=reduction_count) -> list[int]:
    graph = read_inductor(code)
    sources = dict(graph.kernels)
    return [counter(sources.get(c.kernel, "")) if c.kind == "fused" else 0 for c in graph.calls]


def _rt9_label(c: Any) -> str:
    if c.kind == "fused":
        rest = c.kernel[len("cpp_fused_") :]
        return re.sub(r"(^|_)\d+$", "", rest)
    return c.short_name


def _rt9_inductor_census(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    return {
        "library": sum(1 for c in calls if c.kind != "fused"),
        "fused": sum(1 for c in calls if c.kind == "fused"),
    }


# ---- inductor_kernels --------------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="'a fallback torch.ops.aten.<op>.<overload>(...) as \"<op>\"', one entry per call: walks "
    "call's body with ast and keeps only bare expression statements (`kernel(buf0, ...)`), as "
    "every cpp_fused_ and extern_kernels call is written; a fallback assigned to a buffer "
    "(`buf5 = torch.ops.aten._addmm_activation.default(...)`, handwritten.HANDWRITTEN) is missed",
)
def _rt9_inductor_kernels_bare_statements_only(code: str) -> list[str]:
    graph = read_inductor(code)
    tree = ast.parse(code)
    assigned_lines = {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call)
    }
    return [_rt9_label(c) for c in graph.calls if c.line not in assigned_lines]


@wrong(
    "inductor_kernels",
    why="'the kernels call runs, in the order it runs them': sorts the calls by kind group "
    "(library calls first, then fallbacks, then fused kernels), reading the census order as "
    "run order; wrong on mlp_gelu (addmm, gelu, addmm runs as ['addmm','gelu','addmm'], this "
    "gives ['addmm','addmm','gelu'])",
)
def _rt9_inductor_kernels_grouped_by_kind(code: str) -> list[str]:
    calls = list(read_inductor(code).calls)
    order = {"fused": 1}
    calls.sort(key=lambda c: order.get(c.kind, 0))
    return [_rt9_label(c) for c in calls]


# ---- kernel_census -----------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="XLA 'library' = ENTRY dot/custom-call + kCustom fusions, 'fused' = every OTHER ENTRY "
    "fusion; this counts only kind=kLoop fusions as fused (the kind every elementwise fusion "
    "has), so an ENTRY fusion of another kind (kInput / kOutput: a reduction or a fusion "
    "with a nested dot) is not counted at all",
)
def _rt9_kernel_census_loop_kind_only(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for inst in module.entry:
        if inst.opcode in ("dot", "custom-call"):
            lib += 1
        elif inst.opcode == "fusion":
            kind = inst.attribute("kind") or ""
            if "kCustom" in kind:
                lib += 1
            elif "kLoop" in kind:
                fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt9_inductor_census(inductor_code),
    }


@wrong(
    "kernel_census",
    why="Inductor 'library' counts library calls AND fallbacks; this counts a fallback as "
    "library only when its op is a product ('mm' in its name: _addmm_activation) and any "
    "other fallback (torch.ops.aten.index.Tensor, index_put_ in handwritten.HANDWRITTEN_ROWS "
    "and the handwritten training backward) as fused, treating non-GEMM ATen work as "
    "'the work around the product'",
)
def _rt9_kernel_census_nongemm_fallback_fused(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for inst in module.entry:
        if inst.opcode in ("dot", "custom-call"):
            lib += 1
        elif inst.opcode == "fusion":
            if "kCustom" in (inst.attribute("kind") or ""):
                lib += 1
            else:
                fused += 1
    ilib = ifused = 0
    for c in read_inductor(inductor_code).calls:
        if c.kind == "fused":
            ifused += 1
        elif c.kind == "extern" or "mm" in c.short_name:
            ilib += 1
        else:
            ifused += 1
    return {"xla": {"library": lib, "fused": fused}, "inductor": {"library": ilib, "fused": ifused}}


# ---- reductions_per_kernel ---------------------------------------------------------------


def _rt9_root_reductions(hlo_text: str) -> list[int]:
    module = parse_hlo(hlo_text)
    out = []
    for inst in module.entry:
        if inst.opcode not in _RT9_KERNEL_OPS:
            continue
        if inst.opcode in ("reduce", "reduce-window"):
            out.append(1)
            continue
        n = 0
        for name in _rt9_called(inst):
            comp = module.computation(name)
            if comp is None:
                continue
            root = comp.root
            if root.opcode in ("reduce", "reduce-window"):
                n += 1
            elif root.opcode == "tuple":
                n += sum(
                    1
                    for o in root.operands
                    if (
                        comp.instruction(o.removeprefix("%")) is not None
                        and comp.instruction(o.removeprefix("%")).opcode
                        in ("reduce", "reduce-window")
                    )
                )
        out.append(n)
    return out


@wrong(
    "reductions_per_kernel",
    why="XLA: a kernel counts EVERY reduce/reduce-window of its computation and of those its "
    "calls= reaches; this looks only at the ROOT of the fused computation (a reduce, or a "
    "tuple of reduces for a multi-output fusion), so a reduce followed by elementwise work in "
    "the same fusion (a mean: reduce then multiply by 1/n), or a fusion whose reduce sits in "
    "a nested fusion, counts 0 instead of 1",
)
def _rt9_reductions_root_only(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt9_root_reductions(hlo_text),
        "inductor": _rt9_inductor_reductions(inductor_code),
    }


def _rt9_zero_init_accumulators(src: str) -> int:
    return len(re.findall(r"\btmp_acc\d+\s*=\s*0(?:\.0*)?f?\s*;", src))


@wrong(
    "reductions_per_kernel",
    why="Inductor: one per accumulator declaration `<type> tmp_acc<N> = <init>;` whatever the "
    "init; this counts only accumulators initialised to zero (`tmp_acc0 = 0;`), the init of "
    "a sum, and misses a max's `-std::numeric_limits<float>::infinity()` init: softmax's "
    "maximum in recorded/layernorm_softmax.txt (4 accumulators) gives 3",
)
def _rt9_reductions_zero_init_only(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt9_xla_reductions(hlo_text),
        "inductor": _rt9_inductor_reductions(inductor_code, _rt9_zero_init_accumulators),
    }


# ---- train_graphs ------------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="'forward'/'backward' = the number of kernels each call runs, fallbacks included; this "
    "counts cpp_fused_ and extern_kernels calls only (the two kinds the README's recordings "
    "show), so a backward that runs an ATen fallback (a bare torch.ops.aten... statement, "
    "handwritten_train) is one kernel short",
)
def _rt9_train_graphs_no_fallbacks(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bwd = next(g for g in graphs if any(n.startswith("tangents_") for n in g.inputs))
    fwd = next(g for g in graphs if g is not bwd)

    def count(g: Any) -> int:
        return sum(1 for c in g.calls if c.kind in ("fused", "library"))

    saved = [n for n in bwd.inputs if not n.startswith("tangents_")]
    return {"forward": count(fwd), "backward": count(bwd), "saved": len(saved)}


@wrong(
    "train_graphs",
    why="'saved' = the backward's inputs other than tangents_<n>; this counts only backward "
    "inputs named primals_<n> or returned by the forward under the SAME name, but the "
    "graphs name a saved activation differently (forward returns buf3, backward takes le / "
    "mul_2): handwritten_train's backward saves 3 (primals_3, primals_4, le), this says 2",
)
def _rt9_train_graphs_saved_by_name_match(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bwd = next(g for g in graphs if any(n.startswith("tangents_") for n in g.inputs))
    fwd = next(g for g in graphs if g is not bwd)
    outs = set(fwd.outputs)
    saved = [
        n
        for n in bwd.inputs
        if not n.startswith("tangents_") and (n in outs or n.startswith("primals_"))
    ]
    return {"forward": len(fwd.calls), "backward": len(bwd.calls), "saved": len(saved)}


# ---- predict_inductor_kernels ------------------------------------------------------------


def _rt9_tiny(rows: int, fin: int, out: int, bias: bool, variant: str) -> bool:
    if bias:
        if variant == "swap_in_out":
            return rows == 1 and (fin == 1 or (fin <= 16 and out <= 16))
        return rows == 1 and (out == 1 or (fin <= 16 and out <= 16))
    if rows == 1 and out == 1:
        return True
    if variant == "product32":
        return fin == 1 and rows >= 2 and out >= 2 and rows * out <= 32
    return fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32


def _rt9_predict(input_shape, layers, variant: str = "") -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    fin = input_shape[-1]
    library = fused = 0
    open_stretch = False
    for out, bias, act in layers:
        if _rt9_tiny(rows, fin, out, bias, variant):
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


@wrong(
    "predict_inductor_kernels",
    why="biased layer rewritten when one row and the weight has one OUTPUT or is at most "
    "16 x 16; this reads 'one output' as one input feature: x[1,32] -> linear(32->1, bias, "
    "'none') is rewritten (0 library, 1 fused) but this answers an addmm (1 library, 0 fused)",
)
def _rt9_predict_bias_one_input_feature(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt9_predict(input_shape, layers, "swap_in_out")


@wrong(
    "predict_inductor_kernels",
    why="no-bias one-feature rule: rows PLUS outputs at most 32; this uses rows TIMES outputs "
    "(the output's size): x[6,1] -> linear(1->8, no bias, 'none') is rewritten (6+8=14; 0 "
    "library, 1 fused) but this answers mm (48 > 32: 1 library, 0 fused)",
)
def _rt9_predict_rows_times_outputs(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt9_predict(input_shape, layers, "product32")


# ---- bias_homes --------------------------------------------------------------------------


def _rt9_xla_bias_home(hlo_text: str) -> str:
    module = parse_hlo(hlo_text)
    entry = module.entry
    bias = None
    for i in entry:
        if i.opcode == "parameter":
            m = re.fullmatch(r"\s*\w+\[([^\]]*)\].*", i.shape)
            if m and m.group(1).strip() and "," not in m.group(1):
                bias = i.name
                break
    if bias is None:
        return "none"
    for inst in entry:
        if inst.opcode not in _RT9_KERNEL_OPS:
            continue
        if bias in [o.removeprefix("%") for o in inst.operands]:
            if inst.opcode in ("dot", "custom-call"):
                return "library"
            return (
                "library"
                if any(i.opcode == "dot" for c in _rt9_reach(module, _rt9_called(inst)) for i in c)
                else "fused"
            )
    return "fused"


@wrong(
    "bias_homes",
    why="Inductor: the bias is the only input whose assert_size_stride size has ONE dimension; "
    "this takes the input with the smallest number of elements instead (the bias is the "
    "smallest tensor in every recording), so a scalar input (size (), dense_relu_scaled) or "
    "a tiny weight is taken for the bias: dense_relu_scaled answers 'fused' for a program "
    "with no bias ('none')",
)
def _rt9_bias_homes_smallest_input(hlo_text: str, inductor_code: str) -> dict[str, str]:
    tree = ast.parse(inductor_code)
    sizes: dict[str, int] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "assert_size_stride"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Tuple)
        ):
            dims = [e.value for e in node.args[1].elts if isinstance(e, ast.Constant)]
            sizes.setdefault(node.args[0].id, math.prod(dims) if dims else 1)
    bias = min(sizes, key=lambda n: sizes[n]) if sizes else None
    home = "none"
    if bias is not None:
        home = "fused"
        for c in read_inductor(inductor_code).calls:
            if bias in c.arguments:
                home = "fused" if c.kind == "fused" else "library"
                break
    return {"xla": _rt9_xla_bias_home(hlo_text), "inductor": home}


# ---- inference_call ----------------------------------------------------------------------


@wrong(
    "inference_call",
    why="'the values must equal the module's eager output': calls the compiled module under "
    "torch.no_grad() AND torch.autocast('cpu', dtype=torch.bfloat16), the usual inference "
    "recipe; the graph is an inference graph but the products run in bfloat16, so the values "
    "differ from the float32 eager output (relative error ~1e-2 on any MLP, e.g. 8x32->64)",
)
def _rt9_inference_call_autocast(compiled: Any, x: Any) -> Any:
    import torch

    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        return compiled(x)


@wrong(
    "bias_homes",
    why="Inductor: the bias is the only input whose assert_size_stride size has one dimension; "
    "this reads the sizes from the assert_size_stride_grouped((names), (sizes), ...) line "
    "only, the form every recording of torch 2.15 prints, so a call that checks its inputs "
    "one by one with plain assert_size_stride(bias, (16, ), ...) (handwritten.HANDWRITTEN, "
    "older releases) has no bias found and answers 'none' for a program with a bias",
)
def _rt9_bias_homes_grouped_assert_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    bias = None
    for node in ast.walk(ast.parse(inductor_code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "assert_size_stride_grouped"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Tuple)
            and isinstance(node.args[1], ast.Tuple)
        ):
            for name, size in zip(node.args[0].elts, node.args[1].elts):
                if (
                    isinstance(name, ast.Name)
                    and isinstance(size, ast.Tuple)
                    and len(size.elts) == 1
                ):
                    bias = name.id
    home = "none"
    if bias is not None:
        home = "fused"
        for c in read_inductor(inductor_code).calls:
            if bias in c.arguments:
                home = "fused" if c.kind == "fused" else "library"
                break
    return {"xla": _rt9_xla_bias_home(hlo_text), "inductor": home}
