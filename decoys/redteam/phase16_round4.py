"""Red-team wrong answers for phase 16, written from the contract only.

Round 4: each answer agrees with a correct one on the recorded texts (katas/phase16/recorded/)
and on the JAX twins of programs.py compiled here in float32, and is wrong on a valid input they
lack (named in its `why`): a kernel number with two digits, a fallback with another overload, a
kernel call in an `if`/`try` block, an integer twin (bare ENTRY `dot`), a twin with a loop
(while body), fusions named otherwise, a bias that is not the last argument or reaches the
library call through a view, a `reduce-precision`, two fused kernels with the same operators, a
`double`/`int32_t` accumulator, a training step with a convolution or whose every input requires
grad, MLP layers on the sides of the tiny-product rules the recorded MLPs do not reach, and a
caller in eval mode, inside `torch.no_grad()`, or calling twice.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import fused_ops, read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

# ---- shared readers (correct unless a decoy says otherwise) --------------------------------

_rt4_KERNEL_OPCODES = {"fusion", "dot", "custom-call", "reduce", "reduce-window"}


def _rt4_short(call: Any) -> str:
    return call.short_name


def _rt4_kernel_names(code: str) -> list[str]:
    return [_rt4_short(c) for c in read_inductor(code).calls]


def _rt4_census_inductor(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    fused = sum(1 for c in calls if c.kind == "fused")
    return {"library": len(calls) - fused, "fused": fused}


def _rt4_kind(instruction: Any) -> str | None:
    kind = instruction.attribute("kind")
    return kind.strip() if kind else None


def _rt4_census_xla(hlo_text: str) -> dict[str, int]:
    library = fused = 0
    for instruction in parse_hlo(hlo_text).entry:
        if instruction.opcode in ("dot", "custom-call"):
            library += 1
        elif instruction.opcode == "fusion":
            if _rt4_kind(instruction) == "kCustom":
                library += 1
            else:
                fused += 1
    return {"library": library, "fused": fused}


def _rt4_called(instruction: Any) -> list[str]:
    """The computations an instruction's `calls=` names (not to_apply=)."""
    value = instruction.attribute("calls")
    if not value:
        return []
    return re.findall(r"%?([\w.\-]+)", value)


def _rt4_reached(module: Any, names: list[str]) -> list[Any]:
    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in module:
            continue
        computation = module[name]
        seen[name] = computation
        for instruction in computation:
            todo += _rt4_called(instruction)
    return list(seen.values())


def _rt4_xla_reductions(hlo_text: str, is_reduction=None) -> list[int]:
    is_reduction = is_reduction or (lambda op: op in ("reduce", "reduce-window"))
    module = parse_hlo(hlo_text)
    counts: list[int] = []
    for instruction in module.entry:
        if instruction.opcode not in _rt4_KERNEL_OPCODES:
            continue
        own = 1 if is_reduction(instruction.opcode) else 0
        for computation in _rt4_reached(module, _rt4_called(instruction)):
            own += sum(1 for i in computation if is_reduction(i.opcode))
        counts.append(own)
    return counts


def _rt4_inductor_reductions(code: str) -> list[int]:
    graph = read_inductor(code)
    return [
        reduction_count(graph.kernels.get(c.kernel, "")) if c.kind == "fused" else 0
        for c in graph.calls
    ]


def _rt4_rank(shape_text: str) -> int:
    inside = re.search(r"\[([^\]]*)\]", shape_text)
    if inside is None:
        return -1
    body = inside.group(1).strip()
    return 0 if not body else len(body.split(","))


def _rt4_xla_bias_home(hlo_text: str, holds_dot=None) -> str:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter" and _rt4_rank(i.shape) == 1]
    if not params:
        return "none"
    bias = params[0].name
    holds_dot = holds_dot or _rt4_holds_dot
    for instruction in module.entry:
        if bias not in instruction.operands or instruction.opcode not in _rt4_KERNEL_OPCODES:
            continue
        return "library" if holds_dot(module, instruction) else "fused"
    return "fused"


def _rt4_holds_dot(module: Any, instruction: Any) -> bool:
    if instruction.opcode in ("dot", "custom-call"):
        return True
    return any(i.opcode == "dot" for c in _rt4_reached(module, _rt4_called(instruction)) for i in c)


def _rt4_call_body(code: str) -> list[ast.stmt]:
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node.body
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item.body
    return []


def _rt4_walk(body: list[ast.stmt]) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for statement in body:
        found.append(statement)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, ast.FunctionDef):
                found += _rt4_walk(inner)
        for handler in getattr(statement, "handlers", []):
            found += _rt4_walk(handler.body)
    return found


def _rt4_one_dim_inputs(code: str) -> list[str]:
    """The inputs whose assert_size_stride size has one dimension, in the order asserted."""
    found: list[str] = []
    for statement in _rt4_walk(_rt4_call_body(code)):
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            continue
        call = statement.value
        name = call.func.id if isinstance(call.func, ast.Name) else None
        try:
            if name == "assert_size_stride":
                size = ast.literal_eval(call.args[1])
                if len(size) == 1 and isinstance(call.args[0], ast.Name):
                    found.append(call.args[0].id)
            elif name == "assert_size_stride_grouped":
                names = [e.id for e in call.args[0].elts]  # type: ignore[attr-defined]
                sizes = ast.literal_eval(call.args[1])
                found += [n for n, s in zip(names, sizes, strict=False) if len(s) == 1]
        except (ValueError, IndexError, AttributeError, TypeError):
            continue
    return found


def _rt4_inductor_bias_home(code: str, reads=None) -> str:
    graph = read_inductor(code)
    ones = [n for n in _rt4_one_dim_inputs(code) if n in graph.inputs]
    if not ones:
        return "none"
    bias = ones[0]
    for call in graph.calls:
        read = reads(call) if reads else call.arguments
        if bias in read:
            return "fused" if call.kind == "fused" else "library"
    return "fused"


def _rt4_train(codes: list[str], pick=None, count=None) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    if pick is None:
        backward = next(g for g in graphs if g.is_backward)
        forward = next(g for g in graphs if not g.is_backward)
    else:
        forward, backward = pick(codes, graphs)
    saved = sum(1 for name in backward.inputs if not name.startswith("tangents_"))
    if count is None:
        return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": saved}
    fw, bw = (codes[graphs.index(forward)], codes[graphs.index(backward)])
    return {"forward": count(fw), "backward": count(bw), "saved": saved}


def _rt4_rows(shape: tuple[int, ...]) -> int:
    rows = 1
    for size in shape[:-1]:
        rows *= size
    return rows


def _rt4_tiny(rows: int, width: int, out: int, bias: bool) -> bool:
    if bias:
        return rows == 1 and (out == 1 or (width <= 16 and out <= 16))
    return (rows == 1 and out == 1) or (width == 1 and rows + out <= 32)


def _rt4_count(input_shape, layers, tiny) -> dict[str, int]:
    library = fused = 0
    pending = False
    width = input_shape[-1]
    for out, bias, activation in layers:
        if tiny(input_shape, width, out, bias):
            pending = True
        else:
            if pending:
                fused += 1
            pending = False
            library += 1
        if activation != "none":
            pending = True
        width = out
    return {"library": library, "fused": fused + (1 if pending else 0)}


# ---- task 1: inductor_kernels --------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why=(
        "the name of a fused kernel without the `_<n>` number: cuts two characters, assuming "
        "one digit; wrong on a graph with eleven or more fused kernels (`cpp_fused_add_10` "
        "gives `add_`, not `add`), e.g. the backward of a deep MLP"
    ),
)
def _rt4_kernels_one_digit_number(code: str) -> list[str]:
    names: list[str] = []
    for call in read_inductor(code).calls:
        if call.kind == "fused":
            names.append(call.kernel[len("cpp_fused_") : -2])
        else:
            names.append(call.short_name)
    return names


_rt4_DEFAULT_FALLBACK = re.compile(r"torch\.ops\.aten\.(\w+)\.default$")


@wrong(
    "inductor_kernels",
    why=(
        "a fallback `torch.ops.aten.<op>.<overload>(...)` is a kernel whatever the overload: "
        "only `.default` is recognised; wrong on a graph with `torch.ops.aten.add.Tensor(...)` "
        "or `torch.ops.aten.index.Tensor(...)` (left out of the list)"
    ),
)
def _rt4_kernels_default_overload_only(code: str) -> list[str]:
    names: list[str] = []
    for call in read_inductor(code).calls:
        if call.kind == "fallback":
            found = _rt4_DEFAULT_FALLBACK.match(call.kernel)
            if found:
                names.append(found.group(1))
        else:
            names.append(call.short_name)
    return names


def _rt4_with_only(body: list[ast.stmt]) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, ast.With):  # the record_function block of a profiled module
            found += _rt4_with_only(statement.body)
    return found


def _rt4_dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_rt4_dotted(node.value)}.{node.attr}"
    return ""


def _rt4_kernels_in(statements: list[ast.stmt]) -> list[str]:
    names: list[str] = []
    for statement in statements:
        value = getattr(statement, "value", None)
        if not isinstance(statement, ast.Expr | ast.Assign) or not isinstance(value, ast.Call):
            continue
        callee = _rt4_dotted(value.func)
        if callee.startswith("cpp_fused_"):
            names.append(fused_ops(callee))
        elif callee.startswith("extern_kernels."):
            names.append(callee.removeprefix("extern_kernels."))
        elif callee.startswith("torch.ops.aten."):
            names.append(callee.split(".")[3])
    return names


@wrong(
    "inductor_kernels",
    why=(
        "a statement nested in any block of `call` counts: this walks `with` blocks only "
        "(the record_function of a profiled module); wrong on a `call` whose kernel call sits "
        "in an `if`, `for` or `try` block (or an `if` inside the `with`)"
    ),
)
def _rt4_kernels_with_blocks_only(code: str) -> list[str]:
    return _rt4_kernels_in(_rt4_with_only(_rt4_call_body(code)))


# ---- task 2: kernel_census -----------------------------------------------------------------


@wrong(
    "kernel_census",
    why=(
        "XLA `library` counts ENTRY `dot` instructions too: this counts kCustom fusions and "
        "custom-calls only (every float32 twin's GEMM is a kCustom fusion); wrong on an "
        "integer twin, e.g. dense_relu with int32 arrays, whose ENTRY holds a bare `dot` "
        "(XLA library 1, this 0)"
    ),
)
def _rt4_census_no_bare_dot(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    library = fused = 0
    for instruction in parse_hlo(hlo_text).entry:
        if instruction.opcode == "custom-call":
            library += 1
        elif instruction.opcode == "fusion":
            if _rt4_kind(instruction) == "kCustom":
                library += 1
            else:
                fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt4_census_inductor(inductor_code),
    }


@wrong(
    "kernel_census",
    why=(
        "XLA counts ENTRY instructions only: this counts the fusions, dots and custom-calls of "
        "every computation that is not a fused or reducer computation (while bodies and "
        "conditions, conditional branches, called computations); wrong on a twin with a "
        "loop (jax.lax.fori_loop over a dense layer: the fusions of the while body are "
        "counted; XLA's ENTRY holds only the while)"
    ),
)
def _rt4_census_all_unfused_computations(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    inner: set[str] = set()
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                inner.update(_rt4_called(instruction))
            to_apply = instruction.attribute("to_apply")
            if to_apply:
                inner.update(re.findall(r"%?([\w.\-]+)", to_apply))
    library = fused = 0
    for computation in module:
        if computation.name in inner:
            continue
        for instruction in computation:
            if instruction.opcode in ("dot", "custom-call"):
                library += 1
            elif instruction.opcode == "fusion":
                if _rt4_kind(instruction) == "kCustom":
                    library += 1
                else:
                    fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt4_census_inductor(inductor_code),
    }


@wrong(
    "kernel_census",
    why=(
        "XLA `library` counts the ENTRY fusions of kind=kCustom: this takes an ENTRY fusion "
        "for a library GEMM when its NAME says so (`ynn_fusion`, `xnn_fusion`, `onednn`), "
        "as every kCustom fusion is named on jax 0.12 here; wrong on a module whose kCustom "
        "fusion is named otherwise (`%fusion.2 = ... kind=kCustom`, older XLA, or "
        "instructions renamed): counted as fused"
    ),
)
def _rt4_census_by_fusion_name(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    library = fused = 0
    for instruction in parse_hlo(hlo_text).entry:
        if instruction.opcode in ("dot", "custom-call"):
            library += 1
        elif instruction.opcode == "fusion":
            if re.search(r"ynn|xnn|onednn", instruction.name):
                library += 1
            else:
                fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt4_census_inductor(inductor_code),
    }


# ---- task 3: bias_homes --------------------------------------------------------------------


@wrong(
    "bias_homes",
    why=(
        "XLA: the bias is the only rank-1 ENTRY parameter wherever it stands: this looks at "
        "the last parameter only (the bias comes last in every twin here) and says `none` "
        "when it is not rank 1; wrong on a layer written f(b, x, w) (bias first): XLA `none` "
        "where the answer is `fused`"
    ),
)
def _rt4_bias_last_parameter(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(re.sub(r"\D", "", i.payload or "0") or 0))
    xla = "none" if not params or _rt4_rank(params[-1].shape) != 1 else _rt4_xla_bias_home(hlo_text)
    return {"xla": xla, "inductor": _rt4_inductor_bias_home(inductor_code)}


@wrong(
    "bias_homes",
    why=(
        "XLA `library` means the kernel reading the bias holds the `dot` (or a computation it "
        "calls does): this decides by the fusion's name (`dot`, `ynn`, `gemm`, `matmul` in "
        "it) or kind=kCustom; right on every twin compiled here (dense_relu_row's bias goes "
        "into `dot_add_fusion`), wrong on the same module with its fusions named "
        "`fusion.N` (older XLA): `fused` for the one-row layer whose kOutput fusion holds the dot"
    ),
)
def _rt4_bias_by_fusion_name(hlo_text: str, inductor_code: str) -> dict[str, str]:
    def by_name(_module: Any, instruction: Any) -> bool:
        if instruction.opcode in ("dot", "custom-call"):
            return True
        return _rt4_kind(instruction) == "kCustom" or bool(
            re.search(r"dot|ynn|gemm|matmul", instruction.name)
        )

    return {
        "xla": _rt4_xla_bias_home(hlo_text, holds_dot=by_name),
        "inductor": _rt4_inductor_bias_home(inductor_code),
    }


@wrong(
    "bias_homes",
    why=(
        "Inductor `library`: the bias is an argument of the library call, also as a view "
        "(`reinterpret_tensor(arg2_1, ...)` reads arg2_1): this matches bare names only; "
        "wrong on `extern_kernels.addmm(reinterpret_tensor(arg2_1, (16, 24), (0, 1), 0), "
        "...)` (a broadcast bias): `fused` where the answer is `library`"
    ),
)
def _rt4_bias_plain_names_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    tree_calls: dict[int, list[str]] = {}
    for statement in _rt4_walk(_rt4_call_body(inductor_code)):
        value = getattr(statement, "value", None)
        if isinstance(value, ast.Call):
            tree_calls[value.lineno] = [a.id for a in value.args if isinstance(a, ast.Name)]

    def plain(call: Any) -> list[str]:
        return tree_calls.get(call.line, [])

    return {
        "xla": _rt4_xla_bias_home(hlo_text),
        "inductor": _rt4_inductor_bias_home(inductor_code, reads=plain),
    }


# ---- task 4: reductions_per_kernel ---------------------------------------------------------


@wrong(
    "reductions_per_kernel",
    why=(
        "XLA counts `reduce` and `reduce-window` instructions: this counts every opcode that "
        "starts with `reduce` (also `reduce-precision`, `reduce-scatter`); wrong on a twin "
        "that rounds with jax.lax.reduce_precision before its softmax (a loop fusion holding "
        "a reduce-precision counted as a reduction)"
    ),
)
def _rt4_reductions_reduce_prefix(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt4_xla_reductions(hlo_text, lambda op: op.startswith("reduce")),
        "inductor": _rt4_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why=(
        "Inductor: each kernel call's own C++ source: this looks the source up by the "
        "kernel's operators (task 1's short name), so two fused kernels with the same "
        "operators share the count of the last one defined; wrong on a graph with "
        "`cpp_fused_sum_1` (one accumulator) and `cpp_fused_sum_3` (two)"
    ),
)
def _rt4_reductions_by_short_name(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    by_ops = {fused_ops(name): reduction_count(src) for name, src in graph.kernels.items()}
    return {
        "xla": _rt4_xla_reductions(hlo_text),
        "inductor": [by_ops.get(c.short_name, 0) if c.kind == "fused" else 0 for c in graph.calls],
    }


_rt4_TYPED_ACCUMULATOR = re.compile(
    r"^\s*(?:float|bool|int64_t|IndexValue<float>|Welford<float>)\s+tmp_acc\d+\s*=", re.M
)


@wrong(
    "reductions_per_kernel",
    why=(
        "an accumulator is any `<type> tmp_acc<N> = <init>;`: this lists the types seen in "
        "the recorded kernels (float, bool, int64_t, IndexValue<float>, Welford<float>); "
        "wrong on a float64 or int32 reduction (`double tmp_acc0 = 0;`, "
        "`int32_t tmp_acc0 = 0;`, `Welford<double>`): 0 where the answer is 1"
    ),
)
def _rt4_reductions_known_types(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    return {
        "xla": _rt4_xla_reductions(hlo_text),
        "inductor": [
            len(_rt4_TYPED_ACCUMULATOR.findall(graph.kernels.get(c.kernel, "")))
            if c.kind == "fused"
            else 0
            for c in graph.calls
        ],
    }


# ---- task 5: train_graphs ------------------------------------------------------------------

_rt4_LINE_KERNEL = re.compile(r"^\s*(cpp_fused_\w+|extern_kernels\.\w+)\(", re.M)


def _rt4_line_count(code: str) -> int:
    body = code[code.index("def call") :]
    end = re.search(r"^\s*return\b", body, re.M)
    return len(_rt4_LINE_KERNEL.findall(body[: end.start() if end else len(body)]))


@wrong(
    "train_graphs",
    why=(
        "a kernel is also a fallback `buf = torch.ops.aten...(...)` or an assigned library "
        "call `buf2 = extern_kernels.convolution(...)`: this counts lines that start with a "
        "kernel call; wrong on the training step of a conv layer (forward "
        "`buf = extern_kernels.convolution(...)`, backward "
        "`torch.ops.aten.convolution_backward.default`)"
    ),
)
def _rt4_train_line_starts(codes: list[str]) -> dict[str, int]:
    return _rt4_train(codes, count=_rt4_line_count)


def _rt4_pick_by_none(codes: list[str], graphs: list[Any]) -> tuple[Any, Any]:
    with_none = [g for g in graphs if None in g.outputs]
    if len(with_none) == 1:
        backward = with_none[0]
        return next(g for g in graphs if g is not backward), backward
    return graphs[0], graphs[1]


@wrong(
    "train_graphs",
    why=(
        "the backward is the graph that takes `tangents_<n>`, in any order: this takes the "
        "graph that returns a None (the gradient of the data) for the backward, else the "
        "second text; wrong when every input of the loss requires grad (no None returned) "
        "and the texts come backward first: mean(relu(x @ w.T) ** 2) with w and x requiring "
        "grad gives forward 2, backward 3, saved 3 (checked on torch 2.15), this 3, 2, 2"
    ),
)
def _rt4_train_backward_returns_none(codes: list[str]) -> dict[str, int]:
    return _rt4_train(codes, pick=_rt4_pick_by_none)


@wrong(
    "train_graphs",
    why=(
        "`saved` counts the backward's inputs that are not tangents: this counts the "
        "forward's outputs from the first `primals_` one on (taking what precedes it for "
        "the user's outputs, all but one when no primal is saved); wrong on a step that "
        "returns more than the loss and saves no input: w -> ((relu(w) * 3).sum(), relu(w)) "
        "returns (loss, relu, mask) and the backward takes (le, tangents_1, tangents_2): "
        "saved 1, this 2 (checked on torch 2.15)"
    ),
)
def _rt4_train_saved_after_first_primal(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    forward = next(g for g in graphs if not g.is_backward)
    backward = next(g for g in graphs if g.is_backward)
    outputs = list(forward.outputs)
    first = next((i for i, n in enumerate(outputs) if n and n.startswith("primals_")), 1)
    user = outputs[:first]
    saved = len(outputs) - len(user)
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": saved}


# ---- task 6: predict_inductor_kernels ------------------------------------------------------


@wrong(
    "predict_inductor_kernels",
    why=(
        "a layer WITH a bias is rewritten only on one row: this applies the one-feature rule "
        "(rows + outputs <= 32) to every layer; wrong on x(4, 1) with [(5, True, 'none')] "
        "(Inductor: addmm, library 1 fused 0; this library 0 fused 1)"
    ),
)
def _rt4_predict_one_feature_any_bias(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    def tiny(shape, width, out, bias):
        rows = _rt4_rows(shape)
        if width == 1 and rows + out <= 32:
            return True
        return _rt4_tiny(rows, width, out, bias)

    return _rt4_count(input_shape, layers, tiny)


@wrong(
    "predict_inductor_kernels",
    why=(
        "a layer WITHOUT a bias on one row is rewritten only when it has one output: this "
        "applies the 16 x 16 rule of biased layers to it too; wrong on x(1, 8) with "
        "[(8, False, 'relu')] (Inductor: mm + relu, library 1 fused 1; this library 0 fused 1)"
    ),
)
def _rt4_predict_small_weight_any_bias(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    def tiny(shape, width, out, bias):
        rows = _rt4_rows(shape)
        if rows == 1 and width <= 16 and out <= 16:
            return True
        return _rt4_tiny(rows, width, out, bias)

    return _rt4_count(input_shape, layers, tiny)


@wrong(
    "predict_inductor_kernels",
    why=(
        "the rows of the one-feature rule are all the leading dimensions flattened: this "
        "adds the last leading dimension (the sequence) to the outputs; wrong on x(4, 8, 1) "
        "with [(5, False, 'none')] (32 rows + 5 > 32: mm, library 1; this 8 + 5: fused 1)"
    ),
)
def _rt4_predict_rows_last_leading_dim(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    def tiny(shape, width, out, bias):
        rows = _rt4_rows(shape)
        if not bias and width == 1 and rows != 1:
            return shape[-2] + out <= 32
        return _rt4_tiny(rows, width, out, bias)

    return _rt4_count(input_shape, layers, tiny)


# ---- task 7: inference_call ----------------------------------------------------------------


@wrong(
    "inference_call",
    why=(
        "grad mode is left as it was before the call: this turns it off and then back ON; "
        "wrong when the caller is inside torch.no_grad() (grad mode enabled afterwards)"
    ),
)
def _rt4_inference_set_grad_back_on(compiled: Any, x: Any) -> Any:
    import torch

    torch.set_grad_enabled(False)
    try:
        return compiled(x)
    finally:
        torch.set_grad_enabled(True)


@wrong(
    "inference_call",
    why=(
        "the module stays in the mode it was in: this calls it in eval mode under no_grad "
        "and then puts it in train mode; wrong on a module the caller had put in eval mode "
        "(left in train mode)"
    ),
)
def _rt4_inference_eval_then_train(compiled: Any, x: Any) -> Any:
    import torch

    with torch.no_grad():
        compiled.eval()
        try:
            return compiled(x)
        finally:
            compiled.train()


_rt4_warmed: set[int] = set()


@wrong(
    "inference_call",
    why=(
        "every call compiles/runs an inference graph: this calls under no_grad the first "
        "time it sees a module and plainly afterwards (believing the inference graph is "
        "cached); wrong on the second call with the same module under grad mode (Dynamo "
        "guards on grad mode: a forward/backward pair with primals_<n> inputs is compiled)"
    ),
)
def _rt4_inference_first_call_only(compiled: Any, x: Any) -> Any:
    import torch

    if id(compiled) in _rt4_warmed:
        return compiled(x)
    _rt4_warmed.add(id(compiled))
    with torch.no_grad():
        return compiled(x)
