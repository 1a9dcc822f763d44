"""Red-team wrong answers for phase 3, round 8, written from the contract only.

New kinds of mistakes: rank-0 inputs, NumPy's integer promotion, regex opcodes that stop at a
hyphen, dims regexes that only know static sizes, nested fusions inlined, constants only in
"the places the hint names", a GPU-style bias epilogue, mtime slack in the dump search, and a
performance habit (donation) that changes the program.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_RT8_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt8_fmt(shape, dt) -> str:
    shape = tuple(int(d) for d in shape)
    name = _RT8_DT.get(str(dt), str(dt))
    if not shape:
        return f"{name}[]"
    dims = ",".join(str(d) for d in shape)
    layout = ",".join(str(i) for i in reversed(range(len(shape))))
    return f"{name}[{dims}]{{{layout}}}"


def _rt8_predict(program, args, bug=None):
    """A predictor of the ENTRY ROOT; `bug` switches on one wrong belief."""
    x = args[0]
    shape, dt = tuple(x.shape), str(x.dtype)
    is_int = dt == "int32"
    scalar_ops = {
        "x * 2 + 1": "add",
        "x + 1": "add",
        "jnp.sin(x)": "sine",
        "jnp.tanh(x)": "tanh",
        "x.astype(jnp.bfloat16)": "convert",
    }

    def elementwise(out_dt):
        if bug == "scalar_unfused" and not shape:
            return (scalar_ops[program], _rt8_fmt(shape, out_dt))
        return ("fusion", _rt8_fmt(shape, out_dt))

    def sum_dt():
        return "int64" if (bug == "int_sum_s64" and is_int) else dt

    def sum_fmt(s):
        d = sum_dt()
        if d == "int64":
            return _rt8_fmt(s, "float32").replace("f32", "s64", 1)
        return _rt8_fmt(s, d)

    if program in ("x * 2 + 1", "x + 1"):
        return elementwise(dt)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return elementwise("float32" if is_int else dt)
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bfloat16":
            return ("copy", _rt8_fmt(shape, dt))
        return elementwise("bfloat16")
    if program == "x.sum(axis=1)":
        return ("fusion", sum_fmt(shape[:1] + shape[2:]))
    if program == "x.max()":
        return ("fusion", _rt8_fmt((), dt))
    if program == "x.T":
        if len(shape) == 1:
            return ("copy", _rt8_fmt(shape, dt))
        return ("fusion", _rt8_fmt(shape[::-1], dt))
    if program == "x itself":
        return ("copy", _rt8_fmt(shape, dt))
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = 1
        for d in shape:
            n *= d
        new = (2, n // (2 * shape[-1]), shape[-1])
        if len(shape) == 2 and shape[0] == 2:
            return ("fusion", _rt8_fmt(new, dt))
        return ("copy", _rt8_fmt(new, dt))
    if program == "(x * 2, x + 1)":
        s = _rt8_fmt(shape, dt)
        return ("tuple", f"({s}, {s})")
    if program == "(x, x.sum())":
        return ("tuple", f"({_rt8_fmt(shape, dt)}, {sum_fmt(())})")
    if program == "(v, x)":
        v = args[1]
        return ("tuple", f"({_rt8_fmt(v.shape, v.dtype)}, {_rt8_fmt(shape, dt)})")
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="README: 'a lone element-wise op ... is a loop fusion too' holds for rank 0 as well; "
    "believes a scalar op needs no loop kernel and predicts the op itself (add, sine, convert); "
    "wrong on 'x * 2 + 1' with x float32[] (compiled ROOT: fusion f32[])",
)
def _rt8_predict_entry_root_scalar_unfused(program, args):
    return _rt8_predict(program, args, bug="scalar_unfused")


@wrong(
    "predict_entry_root",
    why="'the result's dtype is jnp's': applies NumPy's rule that summing int32 accumulates in "
    "int64; jnp keeps int32 (x64 off); wrong on 'x.sum(axis=1)' with x int32[4,3] "
    "(compiled ROOT: fusion s32[4]{0}, not s64[4]{0})",
)
def _rt8_predict_entry_root_int_sum_s64(program, args):
    return _rt8_predict(program, args, bug="int_sum_s64")


@wrong(
    "entry_root",
    why="'(opcode, shape ...) of ENTRY's ROOT instruction': reads the opcode with a \\w+\\( "
    "regex on the ROOT line, which keeps only the tail of a hyphenated opcode; wrong on a "
    "module whose ROOT is get-tuple-element (returns 'element') or custom-call ('call')",
)
def _rt8_entry_root_regex_opcode(hlo_text: str) -> tuple[str, str]:
    module = parse_hlo(hlo_text)
    root = next(inst for inst in module.entry if inst.is_root)
    lines = hlo_text.splitlines()
    line = next(
        l
        for l in lines
        if re.search(r"\bROOT\s+%?" + re.escape(root.name.lstrip("%")) + r"\s*=", l)
    )
    rhs = line.split("=", 1)[1]
    m = re.search(r"(\w+)\(", rhs[len(root.shape) + 1 :] if root.shape in rhs else rhs)
    return (m.group(1) if m else root.opcode, root.shape)


def _rt8_static_layout(shape: str) -> str:
    shape = shape.strip()
    if shape.startswith("("):
        inner = shape[1:-1]
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
        return "(" + ", ".join(_rt8_static_layout(p) for p in parts) + ")"
    m = re.fullmatch(r"[a-z0-9]+\[[0-9,]*\](\{.*\})?", shape)
    return m.group(1) if (m and m.group(1)) else "{}"


@wrong(
    "entry_parameter_layouts",
    why="'read each layout from the text': a dims regex [0-9,]* only knows static sizes, so a "
    "bounded dynamic parameter f32[<=4]{0} does not match and is reported as a scalar's '{}' "
    "(right on every static-shaped recording, wrong on ENTRY parameter f32[<=4]{0})",
)
def _rt8_entry_parameter_layouts_static_dims(hlo_text: str) -> list[str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(re.search(r"\d+", str(i.payload)).group(0)))
    return [_rt8_static_layout(i.shape) for i in params]


def _rt8_comps(module):
    return {c.name.lstrip("%"): c for c in module}


def _rt8_walk(comps, name, out, inline_nested):
    comp = comps[name.lstrip("%")]
    for inst in comp:
        if inst.opcode == "parameter":
            continue
        if inst.opcode == "fusion" and inline_nested:
            pass  # the nested fusion is "just a wrapper": count what it holds, not the fusion
        else:
            out[inst.opcode] += 1
        for callee in inst.called_computations:
            _rt8_walk(comps, callee, out, inline_nested)


def _rt8_fusions(module):
    for comp in module:
        for inst in comp:
            if inst.opcode == "fusion":
                yield inst


@wrong(
    "fusion_contents",
    why="'a fusion inside a fused computation is one more `fusion` of the outer kind': treats "
    "the nested fusion as a transparent wrapper, counting what it holds for the outer kind but "
    "not the `fusion` op itself; wrong on HAND_WRITTEN (kLoop lacks fusion: 1)",
)
def _rt8_fusion_contents_nested_inlined(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    comps = _rt8_comps(module)
    result: dict[str, Counter] = {}
    for inst in _rt8_fusions(module):
        kind = inst.attribute("kind")
        kind = str(kind).strip() if kind is not None else "kLoop"
        counts = result.setdefault(kind, Counter())
        for callee in inst.called_computations:
            _rt8_walk(comps, callee, counts, inline_nested=True)
    return result


@wrong(
    "constants",
    why="'every computation counts (... loop conditions and bodies, branches ...)': follows the "
    "hint literally and reads ENTRY plus the computations fusions call (recursively); misses "
    "constants in computations no fusion calls: HAND_WRITTEN's %spare (s32[] 4, pred[] true, "
    "s32[2,2] grid, f16[] 0.25)",
)
def _rt8_constants_entry_and_fused(hlo_text: str) -> list[tuple[str, str]]:
    module = parse_hlo(hlo_text)
    comps = _rt8_comps(module)
    seen_comps = []
    todo = [module.entry.name.lstrip("%")]
    while todo:
        name = todo.pop()
        if name in seen_comps:
            continue
        seen_comps.append(name)
        for inst in comps[name]:
            if inst.opcode == "fusion" or name != seen_comps[0]:
                todo.extend(c.lstrip("%") for c in inst.called_computations)
    out = []
    for name in seen_comps:
        for inst in comps[name]:
            if inst.opcode == "constant":
                out.append((inst.shape, str(inst.payload)))
    return out


@wrong(
    "mlp_flops",
    why="README's 'a bias add ... can ride along as an epilogue' read as 'costs nothing': "
    "counts both matmuls and relu but not the bias adds; wrong at (2, 3, 5, 7): XLA reports "
    "234, this gives 234 - 10 - 14 = 210",
)
def _rt8_mlp_flops_bias_epilogue(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return 2 * batch * in_dim * hidden + batch * hidden + 2 * batch * hidden * out_dim


def _rt8_module_number(p: Path) -> int:
    m = re.match(r"module_(\d+)", p.name)
    return int(m.group(1)) if m else -1


@wrong(
    "dump_files",
    why="'return the files XLA wrote for this compile ... not the first or last match': keeps "
    "files modified since one second before the compile (slack for timestamp resolution) and "
    "takes the highest module number; wrong when another process's higher-numbered dumps were "
    "written less than a second before the call",
)
def _rt8_dump_files_mtime_slack(f, args: tuple, directory: str) -> tuple[Path, Path]:
    import time

    d = Path(directory)
    start = time.time() - 1.0
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(d), "xla_dump_hlo_as_text": True}
    )
    recent = [p for p in d.iterdir() if p.is_file() and p.stat().st_mtime >= start]
    before = [p for p in recent if p.name.endswith(".before_optimizations.txt")]
    after = [p for p in recent if re.search(r"\.\w+_after_optimizations\.txt$", p.name)]
    b = max(before, key=_rt8_module_number)
    num = re.match(r"(module_\d+)", b.name).group(1)
    a = [p for p in after if p.name.startswith(num + ".")]
    return b, (a[0] if a else max(after, key=_rt8_module_number))


@wrong(
    "three_texts",
    why="'the three texts of jax.jit(f)': jits with donate_argnums for every argument (a "
    "performance habit), which adds input_output_alias to the module and lets XLA hand the "
    "input buffer back; wrong on value_and_total(x f32[3,1]) (header carries "
    "input_output_alias, texts differ from jax.jit(f)'s)",
)
def _rt8_three_texts_donated(f, *args) -> dict[str, str]:
    lowered = jax.jit(f, donate_argnums=tuple(range(len(args)))).lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


def _rt8_count_distinct_calls(comps, name, out):
    comp = comps[name.lstrip("%")]
    callees = set()
    for inst in comp:
        if inst.opcode == "parameter":
            continue
        out[inst.opcode] += 1
        callees.update(c.lstrip("%") for c in inst.called_computations)
    for callee in sorted(callees):  # each helper computation of this fused computation, once
        _rt8_count_distinct_calls(comps, callee, out)


@wrong(
    "fusion_contents",
    why="'once per call: a reducer that two reduces call counts twice': gathers the computations "
    "a fused computation calls into a set before recursing, so a reducer shared by two reduces "
    "of one fused computation counts once; wrong on HAND_BRANCHES (kInput add: 2 expected, gives 1)",
)
def _rt8_fusion_contents_callee_set(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    comps = _rt8_comps(module)
    result: dict[str, Counter] = {}
    for inst in _rt8_fusions(module):
        kind = inst.attribute("kind")
        kind = str(kind).strip() if kind is not None else "kLoop"
        counts = result.setdefault(kind, Counter())
        for callee in inst.called_computations:
            _rt8_count_distinct_calls(comps, callee, counts)
    return result


@wrong(
    "dump_files",
    why="'return the paths of this compile's ... HLO files': finds the right pair with os.listdir "
    "(names present before vs after, then rewritten ones by content) but returns Path(name), "
    "relative to the cwd instead of `directory`; wrong for any directory other than the cwd",
)
def _rt8_dump_files_bare_names(f, args: tuple, directory: str) -> tuple[Path, Path]:
    import os

    def snapshot():
        return {n: os.stat(os.path.join(directory, n)).st_mtime_ns for n in os.listdir(directory)}

    before_snap = snapshot()
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    )
    after_snap = snapshot()
    touched = [n for n, t in after_snap.items() if before_snap.get(n) != t]
    b = next(n for n in touched if n.endswith(".before_optimizations.txt"))
    prefix = b.split(".")[0] + "."
    a = next(n for n in touched if n.startswith(prefix) and n.endswith("_after_optimizations.txt"))
    return Path(b), Path(a)


def _rt8_upcast(a):
    dtype = getattr(a, "dtype", None)
    if dtype is not None and str(dtype) in ("bfloat16", "float16"):
        return a.astype("float32")
    return a


@wrong(
    "flops",
    why="'jax.jit(f) compiled for `args`': believes XLA:CPU does half-precision arithmetic in "
    "float32 anyway and upcasts 16-bit float inputs before compiling, so the converts the real "
    "program pays for vanish; wrong on scaled(x bf16[4,5], 2.0): XLA reports 122 flops, this 40",
)
def _rt8_flops_half_upcast(f, *args) -> float:
    args = jax.tree_util.tree_map(_rt8_upcast, args)
    analysis = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else {}
    return float(analysis.get("flops", 0.0))
