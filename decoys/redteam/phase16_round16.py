"""Red team, phase 16, round 16: a kernel regex keyed on `bufN =` targets, the number stripped
before the prefix, ENTRY kernels found by an exclusion list (the hint's "run no code of their
own"), `to_apply=` taken as the mark of a reduction, fusions listed before bare kernels, the
nameless layout copy dropped from a training graph, the backward found by its AOT ID comment,
the 16-wide bound applied to a bias-less one-output layer, the census read off the module's
definitions filtered by names that `call` mentions, the bias's home judged by its kernel's
op_name, and an eval() switch undone through the root's training flag only."""

from __future__ import annotations

import re

from kata_harness.decoys import wrong
from xla_inspect.inductor import fused_ops, read_inductor


def _rt16_comps(hlo_text):
    out, cur, entry = {}, None, None
    for l in hlo_text.splitlines():
        m = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", l)
        if m and not l.startswith(" "):
            cur = m.group(1)
            out[cur] = []
            if l.startswith("ENTRY"):
                entry = cur
        elif l.strip() == "}":
            cur = None
        elif cur is not None:
            out[cur].append(l)
    return out, entry


def _rt16_opcode(line):
    m = re.match(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$", line)
    if not m:
        return None
    rest = m.group(1)
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            mm = re.match(r"\s*([\w\-]+)\(", rest[i:])
            return mm.group(1) if mm else None
    return None


def _rt16_called(line):
    m = re.search(r"calls=%?([\w.\-]+)", line)
    return m.group(1) if m else None


def _rt16_reach_count(comps, name, pred):
    n = 0
    for l in comps.get(name, []):
        if pred(l):
            n += 1
        for c in re.findall(r"calls=%?([\w.\-]+)", l):
            n += _rt16_reach_count(comps, c, pred)
    return n


def _rt16_is_reduce(line):
    return _rt16_opcode(line) in ("reduce", "reduce-window")


def _rt16_inductor_red(code):
    g = read_inductor(code)
    acc = re.compile(r"^\s*[A-Za-z_][\w:<>, ]*?\s+tmp_acc\d+\s*=", re.M)
    return [
        0 if c.kind != "fused" else len(acc.findall(g.kernels.get(c.kernel, ""))) for c in g.calls
    ]


def _rt16_inductor_counts(code):
    g = read_inductor(code)
    return {
        "library": sum(1 for c in g.calls if c.kind != "fused"),
        "fused": sum(1 for c in g.calls if c.kind == "fused"),
    }


_rt16_buf_kernel_re = re.compile(
    r"^\s*(?:buf\d+\s*=\s*)?(cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.aten\.\w+\.\w+)\("
)


@wrong(
    "inductor_kernels",
    why=(
        "'Every kernel statement of call counts': this reads call line by line with a regex "
        "that allows an assignment target only of Inductor's usual `bufN = ` form, so a fallback "
        "assigned to any other name is not seen; wrong on recorded/cholesky.txt with its buffer "
        "`buf2` renamed `tril2` (the line `tril2 = torch.ops.aten.linalg_cholesky_ex.default(buf1)`): "
        "['eye_mul', 'addmm', '_linalg_check_errors'] instead of "
        "['eye_mul', 'addmm', 'linalg_cholesky_ex', '_linalg_check_errors']"
    ),
)
def _rt16_inductor_kernels_bufname_regex(code: str) -> list[str]:
    lines = code.splitlines()
    start = next(i for i, l in enumerate(lines) if re.match(r"\s*def call\(", l))
    indent = len(lines[start]) - len(lines[start].lstrip())
    out = []
    for l in lines[start + 1 :]:
        if l.strip() and len(l) - len(l.lstrip()) <= indent:
            break
        m = _rt16_buf_kernel_re.match(l)
        if not m:
            continue
        callee = m.group(1)
        if callee.startswith("cpp_fused_"):
            out.append(fused_ops(callee))
        elif callee.startswith("extern_kernels."):
            out.append(callee.split(".", 1)[1])
        else:
            out.append(callee.split(".")[3])
    return out


@wrong(
    "inductor_kernels",
    why=(
        "a fused kernel is named by its ops without the `cpp_fused_` prefix and the `_<n>` "
        'number, and `cpp_fused_0` (no named operator) is "": this strips the trailing `_<n>` '
        "FIRST and the prefix after, so `cpp_fused_0` becomes `cpp_fused` (no `cpp_fused_` "
        "prefix left to remove); wrong on the forward graph of recorded/train_conv_relu.txt, "
        "whose layout copy `cpp_fused_0(primals_1, ...)` gives 'cpp_fused' instead of ''"
    ),
)
def _rt16_inductor_kernels_number_before_prefix(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kind == "fused":
            out.append(re.sub(r"_\d+$", "", c.kernel).removeprefix("cpp_fused_"))
        elif c.kind == "fallback":
            out.append(c.kernel.split(".")[3])
        else:
            out.append(c.kernel.split(".", 1)[1])
    return out


_rt16_no_code = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


@wrong(
    "kernel_census",
    why=(
        "XLA 'fused' counts the ENTRY fusions other than kCustom and 'Other ENTRY instructions "
        "are not counted': this follows the hint's 'which ENTRY instructions run no code of "
        "their own' as an exclusion list (parameter, constant, tuple, get-tuple-element, "
        "bitcast) and counts every other non-library ENTRY instruction as fused; wrong on the "
        "JAX twin of conv_relu, whose bare ENTRY `convolution` is counted: xla fused 4 instead "
        "of 3"
    ),
)
def _rt16_kernel_census_exclusion_list(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    comps, entry = _rt16_comps(hlo_text)
    lib = fused = 0
    for l in comps[entry]:
        op = _rt16_opcode(l)
        if op is None or op in _rt16_no_code:
            continue
        if op in ("dot", "custom-call") or (op == "fusion" and "kind=kCustom" in l):
            lib += 1
        else:
            fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt16_inductor_counts(inductor_code),
    }


@wrong(
    "kernel_census",
    why=(
        "Inductor 'fused' counts the fused C++ kernel CALLS: this counts the kernels the module "
        "DEFINES (`cpp_fused_* = async_compile.cpp_pybinding(...)`) whose name `call` mentions "
        "at all, so a kernel called twice counts once; wrong on recorded/conv_relu.txt with its "
        "`cpp_fused_relu_1(buf2, buf3)` line written twice in call: inductor fused 2 instead "
        "of 3"
    ),
)
def _rt16_kernel_census_defined_and_mentioned(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    comps, entry = _rt16_comps(hlo_text)
    lib = fused = 0
    for l in comps[entry]:
        op = _rt16_opcode(l)
        if op == "fusion":
            if "kind=kCustom" in l:
                lib += 1
            else:
                fused += 1
        elif op in ("dot", "custom-call"):
            lib += 1
    defined = re.findall(r"^(cpp_fused_\w+)\s*=\s*async_compile", inductor_code, re.M)
    body = inductor_code[inductor_code.index("def call(") :]
    ifused = sum(1 for d in defined if re.search(r"\b" + re.escape(d) + r"\(", body))
    ilib = sum(1 for c in read_inductor(inductor_code).calls if c.kind != "fused")
    return {"xla": {"library": lib, "fused": fused}, "inductor": {"library": ilib, "fused": ifused}}


@wrong(
    "reductions_per_kernel",
    why=(
        "XLA counts reduce and reduce-window instructions: this takes the hint's 'a reduce names "
        "a reducer with to_apply' as the test and counts every instruction with a `to_apply=` "
        "(scatter, select-and-scatter and map name one too); wrong on "
        "jax.jit(lambda x, i, v: x.at[i].add(v).sum(-1)) on x[16,8], i s32[3], v[3,8], whose "
        "`wrapped_scatter` fusion holds a scatter with to_apply: xla [0, 1, 1] instead of [0, 0, 1]"
    ),
)
def _rt16_reductions_to_apply_marks_reduce(
    hlo_text: str, inductor_code: str
) -> dict[str, list[int]]:
    comps, entry = _rt16_comps(hlo_text)
    pred = lambda l: "to_apply=" in l  # noqa: E731
    xla = []
    for l in comps[entry]:
        op = _rt16_opcode(l)
        if op == "fusion":
            xla.append(_rt16_reach_count(comps, _rt16_called(l), pred))
        elif op in ("reduce", "reduce-window"):
            xla.append(1)
        elif op in ("dot", "custom-call"):
            xla.append(0)
    return {"xla": xla, "inductor": _rt16_inductor_red(inductor_code)}


@wrong(
    "reductions_per_kernel",
    why=(
        "'each ENTRY kernel in ENTRY order': this lists the ENTRY fusions first (the kernels "
        "that can hold reductions) and appends the bare dot / custom-call / reduce kernels "
        "after them; wrong on jax.jit(lambda x, w: jnp.maximum(x @ w.T, 0).sum(-1)) on int32 "
        "x[16,8], w[4,8], whose ENTRY runs a bare `dot` then the reduce fusion: xla [1, 0] "
        "instead of [0, 1]"
    ),
)
def _rt16_reductions_fusions_first(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    comps, entry = _rt16_comps(hlo_text)
    fus, bare = [], []
    for l in comps[entry]:
        op = _rt16_opcode(l)
        if op == "fusion":
            fus.append(_rt16_reach_count(comps, _rt16_called(l), _rt16_is_reduce))
        elif op in ("reduce", "reduce-window"):
            bare.append(1)
        elif op in ("dot", "custom-call"):
            bare.append(0)
    return {"xla": fus + bare, "inductor": _rt16_inductor_red(inductor_code)}


@wrong(
    "train_graphs",
    why=(
        "'forward'/'backward' count every kernel statement, `cpp_fused_0` (a kernel that fuses "
        "no named operator, the layout copy before a convolution's training step) included: "
        "this drops fused kernels whose name lists no operator as bookkeeping copies; wrong on "
        "recorded/train_conv_relu.txt, whose forward calls `cpp_fused_0(primals_1, ...)`: "
        "forward one less than the kernels its call runs"
    ),
)
def _rt16_train_graphs_nameless_copy_dropped(codes: list[str]) -> dict[str, int]:
    gs = [read_inductor(c) for c in codes]
    bw = next(g for g in gs if g.is_backward)
    fw = next(g for g in gs if not g.is_backward)

    def n(g):
        return sum(1 for c in g.calls if not (c.kind == "fused" and fused_ops(c.kernel) == ""))

    return {
        "forward": n(fw),
        "backward": n(bw),
        "saved": sum(1 for i in bw.inputs if not i.startswith("tangents_")),
    }


@wrong(
    "train_graphs",
    why=(
        "'The backward graph is the one whose call takes tangents_<n> inputs', texts 'in any "
        "order': this tells the graphs apart by the `# AOT ID: ['N_backward']` header comment "
        "and, when no text has one, takes them in the order run_and_get_code returns them "
        "(forward first); wrong on recorded/train_mlp_gelu.txt's two texts with comments "
        "dropped and passed backward first: forward 6, backward 4, saved 6 (the "
        "forward's inputs) instead of forward 4, backward 6, saved 5"
    ),
)
def _rt16_train_graphs_by_aot_id(codes: list[str]) -> dict[str, int]:
    bw_i = next((i for i, c in enumerate(codes) if "_backward']" in c), None)
    if bw_i is None:
        fw_c, bw_c = codes[0], codes[1]
    else:
        bw_c = codes[bw_i]
        fw_c = codes[1 - bw_i]
    fw, bw = read_inductor(fw_c), read_inductor(bw_c)
    return {
        "forward": len(fw.calls),
        "backward": len(bw.calls),
        "saved": sum(1 for i in bw.inputs if not i.startswith("tangents_")),
    }


@wrong(
    "predict_inductor_kernels",
    why=(
        "a layer WITHOUT a bias on one row is rewritten when its weight has one output, however "
        "wide its input: this applies the biased rule's 16 bound to it too (one output AND at "
        "most 16 input features), as if every rewrite unrolled at most 16 terms; wrong on "
        "x[1,20] -> [(1, False, 'none')] (rewritten: library 0, fused 1; predicted mm: "
        "library 1, fused 0)"
    ),
)
def _rt16_predict_inductor_kernels_nobias_row_bounded(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    rows = 1
    for d in input_shape[:-1]:
        rows *= d
    feat = input_shape[-1]
    lib = fused = 0
    pending = False
    for out, bias, act in layers:
        if bias:
            tiny = rows == 1 and (out == 1 or (feat <= 16 and out <= 16))
        else:
            tiny = (rows == 1 and out == 1 and feat <= 16) or (
                feat == 1 and rows >= 2 and out >= 2 and rows + out <= 32
            )
        if tiny:
            pending = True
        else:
            if pending:
                fused += 1
            lib += 1
            pending = False
        if act != "none":
            pending = True
        feat = out
    if pending:
        fused += 1
    return {"library": lib, "fused": fused}


@wrong(
    "bias_homes",
    why=(
        "XLA 'library' when the bias parameter is an operand of the kernel whose computation "
        "holds the dot: this decides it from the consumer's metadata, calling the bias's kernel "
        "the product's one when its op_name names the product (`dot_general`, `matmul`, "
        "`einsum`), else 'fused'; wrong on the JAX twin of dense_relu_row (x[1,8], w[8,8]), whose ENTRY "
        "`dot_add_fusion` (kind=kOutput) holds the dot and takes the bias but carries the "
        "add's op_name `jit(...)/add`: xla 'fused' instead of 'library'"
    ),
)
def _rt16_bias_homes_by_op_name(hlo_text: str, inductor_code: str) -> dict[str, str]:
    comps, entry = _rt16_comps(hlo_text)
    lines = comps[entry]
    bias = None
    for l in lines:
        m = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\w+\[[^\],]+\]\{0\}\s+parameter", l)
        if m:
            bias = m.group(1)
    xla = "none"
    if bias is not None:
        xla = "fused"
        for l in lines:
            if _rt16_opcode(l) in ("fusion", "dot", "custom-call") and re.search(
                r"[(,]\s*%?" + re.escape(bias) + r"\s*[,)]", l
            ):
                m = re.search(r'op_name="([^"]*)"', l)
                name = m.group(1) if m else ""
                xla = "library" if re.search(r"dot_general|matmul|einsum|dot", name) else "fused"
                break
    g = read_inductor(inductor_code)
    ibias = None
    for m in re.finditer(r"assert_size_stride\((\w+), \((\w+), \)", inductor_code):
        ibias = m.group(1)
    for m in re.finditer(
        r"assert_size_stride_grouped\(\(([^)]*)\), \((.*?)\), \(\(", inductor_code
    ):
        names = [n.strip() for n in m.group(1).split(",") if n.strip()]
        sizes = re.findall(r"\(([^()]*)\)", m.group(2))
        for n, s in zip(names, sizes):
            if len([x for x in s.split(",") if x.strip()]) == 1:
                ibias = n
    if ibias is None:
        ind = "none"
    else:
        ind = "fused"
        for c in g.calls:
            if ibias in c.arguments:
                ind = "library" if c.kind != "fused" else "fused"
                break
    return {"xla": xla, "inductor": ind}


@wrong(
    "inference_call",
    why=(
        "'the module stays in the mode it was in (train or eval)': this runs the call under "
        "torch.no_grad() with the module switched to eval() (an inference graph, no dropout), "
        "then restores it with compiled.train(was_training), the ROOT's flag, which "
        "train(mode) writes into every submodule; wrong on torch.compile(nn.Sequential("
        "nn.Linear(4, 3), nn.ReLU())) left in train mode with its ReLU set to eval(): after "
        "the call the ReLU reports training=True instead of False"
    ),
)
def _rt16_inference_call_eval_restore_root_mode(compiled, x):
    import torch

    was_training = compiled.training
    compiled.eval()
    try:
        with torch.no_grad():
            return compiled(x)
    finally:
        compiled.train(was_training)
