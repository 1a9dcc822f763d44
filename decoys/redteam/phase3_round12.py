"""Red-team wrong answers for phase 3, round 12, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt12_mlp(b, i, h, o, relu=1, bias=True, relu_on_out=False):
    n = 2 * b * i * h + 2 * b * h * o
    if bias:
        n += b * h + b * o
    n += relu * (b * o if relu_on_out else b * h)
    return n


@wrong(
    "mlp_flops",
    why="relu counted as compare + select (2 flops per element) instead of one maximum; "
    "(8,16,32,4): gives 11040, cost analysis 10784",
)
def _rt12_mlp_flops_relu_compare_select(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return _rt12_mlp(batch, in_dim, hidden, out_dim, relu=2)


@wrong(
    "mlp_flops",
    why="believes the bias adds ride in the matmul fusion's epilogue for free; README's "
    "(1024,1024,1024,2) count 2153777152 includes them; (8,16,32,4): gives 10496, not 10784",
)
def _rt12_mlp_flops_bias_epilogue_free(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return _rt12_mlp(batch, in_dim, hidden, out_dim, bias=False)


@wrong(
    "mlp_flops",
    why="relu counted on the output (batch*out_dim) as if applied after the last layer; "
    "(8,16,32,4): gives 10560, not 10784",
)
def _rt12_mlp_flops_relu_on_output(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return _rt12_mlp(batch, in_dim, hidden, out_dim, relu_on_out=True)


def _rt12_entry_lines(hlo_text):
    m = parse_hlo(hlo_text)
    return m, m.entry


@wrong(
    "entry_parameter_layouts",
    why="'a scalar's layout is \"{}\"': takes the first {...} after ' = ' on the "
    'parameter line, so a scalar parameter followed by metadata={op_name="s"} (as the optimized '
    "text prints every parameter) or sharding={replicated} gives that attribute's braces, not '{}'; "
    "e.g. jit(lambda s: s + 1) with s f32[] optimized: ['{op_name=\"s\"}']",
)
def _rt12_entry_parameter_layouts_first_braces(hlo_text: str) -> list[str]:
    m, entry = _rt12_entry_lines(hlo_text)
    lines = hlo_text.splitlines()
    out = []
    for inst in entry:
        if inst.opcode != "parameter":
            continue
        n = int(re.search(r"\d+", inst.payload).group())
        line = next(
            l
            for l in lines
            if re.search(rf"(^|[\s%]){re.escape(inst.name)} = ", l) and "parameter(" in l
        )
        rest = line.split(" = ", 1)[1]
        mm = re.search(r"\{[^{}]*\}", rest)
        out.append((n, mm.group() if mm else "{}"))
    return [l for _, l in sorted(out)]


def _rt12_layout(shape_text: str, sep: str) -> str:
    s = shape_text.strip()
    if s.startswith("("):
        inner = s[1:-1]
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur.strip():
            parts.append(cur)
        return "(" + sep.join(_rt12_layout(p, sep) for p in parts) + ")"
    i = s.find("]")
    rest = s[i + 1 :]
    return rest if rest.startswith("{") else "{}"


@wrong(
    "entry_parameter_layouts",
    why="tuple layouts joined with ',' not ', ': for (f32[2,3]{0,1}, s32[]) "
    "gives '({0,1},{})', contract says '({0,1}, {})'",
)
def _rt12_entry_parameter_layouts_tight_join(hlo_text: str) -> list[str]:
    entry = parse_hlo(hlo_text).entry
    ps = [
        (int(re.search(r"\d+", i.payload).group()), i.shape)
        for i in entry
        if i.opcode == "parameter"
    ]
    return [_rt12_layout(s, ",") for _, s in sorted(ps)]


@wrong(
    "entry_root",
    why="'ENTRY need not be the last computation': finds ENTRY as the first computation "
    "no other calls, not the one marked ENTRY; wrong on a text holding an uncalled computation before ENTRY",
)
def _rt12_entry_root_uncalled(hlo_text: str) -> tuple[str, str]:
    m = parse_hlo(hlo_text)
    called = set()
    for c in m:
        for i in c:
            called.update(getattr(x, "name", x) for x in i.called_computations)
    comp = next((c for c in m if c.name not in called), m.entry)
    for i in comp:
        if i.is_root:
            return (i.opcode, i.shape)
    return ("", "")


@wrong(
    "fusion_contents",
    why="'summed': counts each opcode once per fused computation (Counter(set(...))); "
    "x*2+1's kLoop fused computation holds two constants, counted once",
)
def _rt12_fusion_contents_set_per_comp(hlo_text: str) -> dict[str, Counter]:
    m = parse_hlo(hlo_text)
    comps = {c.name: c for c in m}
    out: dict[str, Counter] = {}

    def walk(name, kind):
        ops = set()
        for i in comps[name]:
            if i.opcode == "parameter":
                continue
            ops.add(i.opcode)
            for cc in i.called_computations:
                walk(getattr(cc, "name", cc), kind)
            if i.opcode == "fusion":
                walk_fusion(i)
        out.setdefault(kind, Counter()).update(ops)

    def walk_fusion(i):
        for cc in i.called_computations:
            walk(getattr(cc, "name", cc), i.attribute("kind"))

    for c in m:
        if any(
            c.name in [getattr(x, "name", x) for x in i.called_computations]
            for cc in m
            for i in cc
            if i.opcode == "fusion"
        ):
            continue
        for i in c:
            if i.opcode == "fusion":
                walk_fusion(i)
    return out


@wrong(
    "constants",
    why="'the literal as written between the parentheses': strips parentheses off the "
    "payload, eating a complex literal's own: c64[] constant((1, 2)) gives '1, 2', not '(1, 2)'",
)
def _rt12_constants_strip_parens(hlo_text: str) -> list[tuple[str, str]]:
    return [
        (i.shape, i.payload.strip().strip("()"))
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "constant"
    ]


_RT12_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt12_fmt(shape, dt):
    shape = tuple(int(d) for d in shape)
    n = _RT12_DT[str(dt)]
    if not shape:
        return f"{n}[]"
    return f"{n}[{','.join(map(str, shape))}]{{{','.join(str(i) for i in reversed(range(len(shape))))}}}"


def _rt12_predict(program, args, bug=None):
    x = args[0]
    shape, dt = tuple(int(d) for d in x.shape), str(x.dtype)
    if program in ("x * 2 + 1", "x + 1"):
        return ("fusion", _rt12_fmt(shape, dt))
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return ("fusion", _rt12_fmt(shape, "float32" if dt == "int32" else dt))
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bfloat16" or (bug == "f16_same_width" and dt == "float16"):
            return ("copy", _rt12_fmt(shape, "bfloat16"))
        return ("fusion", _rt12_fmt(shape, "bfloat16"))
    if program == "x.sum(axis=1)":
        return ("fusion", _rt12_fmt(shape[:1] + shape[2:], dt))
    if program == "x.max()":
        return ("fusion", _rt12_fmt((), dt))
    if program == "x.T":
        if len(shape) == 1:
            return ("copy", _rt12_fmt(shape, dt))
        return ("fusion", _rt12_fmt(shape[::-1], dt))
    if program == "x itself":
        return ("copy", _rt12_fmt(shape, dt))
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = 1
        for d in shape:
            n *= d
        new = (2, n // (2 * shape[-1]), shape[-1])
        return ("fusion" if len(shape) == 2 and shape[0] == 2 else "copy", _rt12_fmt(new, dt))
    if program == "(x * 2, x + 1)":
        s = _rt12_fmt(shape, dt)
        return ("tuple", f"({s}, {s})")
    if program == "(x, x.sum())":
        return ("tuple", f"({_rt12_fmt(shape, dt)}, {_rt12_fmt((), dt)})")
    if program == "(v, x)":
        v = args[1]
        return ("tuple", f"({_rt12_fmt(v.shape, v.dtype)}, {_rt12_fmt(x.shape, x.dtype)})")
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="believes a cast between two 16-bit floats is a same-width reinterpretation, "
    "so the result is a copy: x.astype(jnp.bfloat16) with x float16[3] predicts ('copy','bf16[3]{0}'); "
    "compiled ROOT is ('fusion','bf16[3]{0}')",
)
def _rt12_predict_entry_root_f16_cast_copy(program, args):
    return _rt12_predict(program, args, bug="f16_same_width")


@wrong(
    "three_texts",
    why="takes 'stablehlo' from jax.export.export(jax.jit(f))(*args).mlir_module(), "
    "the serialization's StableHLO: it prints source locations (loc(...)) and an extra "
    "jax.uses_shape_polymorphism attribute; on x*2+1 with x f32[3] it differs from lowered.as_text()",
)
def _rt12_three_texts_export_stablehlo(f, *args) -> dict[str, str]:
    import jax
    from jax import export as _ex

    lowered = jax.jit(f).lower(*args)
    return {
        "stablehlo": _ex.export(jax.jit(f))(*args).mlir_module(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "dump_files",
    why="'compile with XLA dumping HLO text into `directory`': to dodge other compiles' "
    "dumps it dumps into a fresh tempfile.mkdtemp(dir=directory) subdirectory and returns files there; "
    "the files are not in `directory` (path.parent != directory), on any f, e.g. x*0.5+[3,1,2]",
)
def _rt12_dump_files_private_subdir(f, args: tuple, directory: str):
    import tempfile
    from pathlib import Path

    import jax

    sub = tempfile.mkdtemp(prefix="dump_", dir=directory)
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": sub, "xla_dump_hlo_as_text": True}
    )
    files = sorted(Path(sub).iterdir())
    before = next(p for p in files if p.name.endswith(".before_optimizations.txt"))
    prefix = before.name.split(".")[0]
    after = next(
        p
        for p in files
        if p.name.startswith(prefix + ".")
        and p.name.endswith("_after_optimizations.txt")
        and "buffer" not in p.name
        and "memory" not in p.name
    )
    return before, after


@wrong(
    "predict_entry_root",
    why="overgeneralises 'x.T of a vector leaves x unchanged, so a copy' to every x "
    "whose transpose has x's shape: x.T with x float32[4,4] predicts ('copy','f32[4,4]{1,0}'); compiled "
    "ROOT is ('fusion','f32[4,4]{1,0}') (the values move; also f32[2,3,2])",
)
def _rt12_predict_entry_root_same_shape_transpose_copy(program, args):
    if program == "x.T":
        x = args[0]
        shape = tuple(int(d) for d in x.shape)
        if shape == shape[::-1]:
            return ("copy", _rt12_fmt(shape, str(x.dtype)))
    return _rt12_predict(program, args)
