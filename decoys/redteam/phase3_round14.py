"""Red team, phase 3, round 14: keep_unused texts, ShapeDtypeStructs that lose weak types,
parameters ordered by name, a split-on-spaces ROOT line, HloComputation.calls (deduplicated) for
reducers, a regex that skips ROOT constants, an MLIR dtype name, a same-dtype cast."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


@wrong(
    "three_texts",
    why="Clause 'the three texts of jax.jit(f)': lowers jax.jit(f, keep_unused=True) so "
    "that every input shows up as a parameter; on doubled_ignoring(x, unused) all three texts keep "
    "the unused parameter that jax.jit(f) drops.",
)
def _rt14_three_texts_keep_unused(f, *args) -> dict[str, str]:
    lowered = jax.jit(f, keep_unused=True).lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "three_texts",
    why="Clause 'for `args`' (a Python scalar is weakly typed): lowers on "
    "jax.ShapeDtypeStruct(np.shape(a), np.result_type(a)) to avoid transfers; the Python float "
    "becomes a strong float32, so scaled(x float16[4], 2.0) is computed in f32 in every text.",
)
def _rt14_three_texts_abstract_args(f, *args) -> dict[str, str]:
    specs = jax.tree.map(
        lambda a: jax.ShapeDtypeStruct(
            np.shape(a), jax.dtypes.canonicalize_dtype(np.result_type(a))
        ),
        args,
    )
    lowered = jax.jit(f).lower(*specs)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "flops",
    why="Clause 'compiled for `args`': compiles on ShapeDtypeStructs built with "
    "np.result_type, losing the Python scalar's weak type; scaled(x float16[4], 2.0) then "
    "converts x to f32: x float16[4] gives 12.0 flops, the real args 9.0.",
)
def _rt14_flops_abstract_args(f, *args) -> float:
    specs = jax.tree.map(
        lambda a: jax.ShapeDtypeStruct(
            np.shape(a), jax.dtypes.canonicalize_dtype(np.result_type(a))
        ),
        args,
    )
    return float(jax.jit(f).lower(*specs).compile().cost_analysis().get("flops", 0.0))


def _rt14_layout(shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_rt14_layout(e) for e in shape.elements) + ")"
    return shape.layout if shape.layout is not None else "{}"


@wrong(
    "entry_parameter_layouts",
    why="Clause 'in parameter-number order (the N of parameter(N))': "
    "orders parameters by instruction name (JAX names them Arg_0, Arg_1 / p0, p1 in number "
    "order); on HAND_WRITTEN the names bias, pair, s, w give order 3,1,0,2.",
)
def _rt14_entry_parameter_layouts_by_name(hlo_text: str) -> list[str]:
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=lambda i: i.name)
    return [_rt14_layout(i.shape_info) for i in params]


@wrong(
    "entry_root",
    why="Clause 'the shape exactly as the instruction line prints it': splits "
    "ENTRY's ROOT line on spaces (ROOT %name = SHAPE opcode(...)); a tuple shape holds spaces, so "
    "value_and_total's ROOT gives ('f32[])', '(f32[2,3]{1,0},') instead of ('tuple', '(f32[2,3]{1,0}, f32[])').",
)
def _rt14_entry_root_split_line(hlo_text: str) -> tuple[str, str]:
    entry = parse_hlo(hlo_text).entry
    root = entry.root
    line = hlo_text.splitlines()[root.line_no - 1] if root.line_no else ""
    parts = line.split()
    if len(parts) >= 5 and parts[0] == "ROOT":
        return (parts[4].split("(")[0], parts[3])
    return (root.opcode, root.shape)


@wrong(
    "fusion_contents",
    why="Clause 'a reducer that two reduces call counts twice': follows "
    "HloComputation.calls (each called name once per computation) instead of every "
    "instruction's called_computations; HAND_BRANCHES' kInput %two_sums calls %sum from two "
    "reduces, its add counted once.",
)
def _rt14_fusion_contents_comp_calls(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(name: str, kind: str) -> None:
        comp = module[name]
        for instr in comp:
            if instr.opcode != "parameter":
                out.setdefault(kind, Counter())[instr.opcode] += 1
            if instr.opcode == "fusion":
                for c in instr.called_computations:
                    walk(c, instr.attribute("kind"))
        for c in comp.calls:
            walk(c, kind)

    fused: set[str] = set()
    for comp in module:
        for instr in comp:
            if instr.opcode == "fusion":
                fused.update(instr.called_computations)
    inside: set[str] = set()

    def mark(name: str) -> None:
        for c in module[name].calls:
            if c not in inside:
                inside.add(c)
                mark(c)

    for c in fused:
        inside.add(c)
        mark(c)
    for comp in module:
        if comp.name in inside:
            continue
        for instr in comp:
            if instr.opcode == "fusion":
                for c in instr.called_computations:
                    walk(c, instr.attribute("kind"))
    return out


_RT14_CONST = re.compile(r"^\s*%\S+ = (\S+) constant\((.*?)\)(?:, |$)")


@wrong(
    "constants",
    why="Clause 'every constant instruction in the module': a line regex "
    "'^\\s*%name = shape constant(...)' does not match 'ROOT %c = ... constant(...)', so a "
    "constant that is a computation's ROOT (e.g. a while condition 'ROOT %f = pred[] "
    "constant(false)') is missed.",
)
def _rt14_constants_line_regex(hlo_text: str) -> list[tuple[str, str]]:
    by_line = {}
    for comp in parse_hlo(hlo_text):
        for instr in comp:
            if instr.opcode == "constant":
                by_line[instr.line_no] = (instr.shape, instr.payload)
    out = []
    for n, line in enumerate(hlo_text.splitlines(), start=1):
        if _RT14_CONST.match(line) and n in by_line:
            out.append(by_line[n])
    return out


@wrong(
    "mlp_flops",
    why="Clause 'Cost analysis reports a float32 ... compare with the exact count': "
    "mimics what XLA reports by rounding the exact count through np.float32; right up to 2**24, "
    "wrong on (1000, 1000, 1000, 3): 2008003000 exact, this gives 2008002944.",
)
def _rt14_mlp_flops_as_float32(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    exact = (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden * out_dim
        + 2 * batch * hidden
        + batch * out_dim
    )
    if exact < 2**63:
        return int(np.float32(exact))
    return exact


_RT14_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "i32"}
_RT14_DT_OK = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt14_arr(dt: str, shape: tuple[int, ...], names: dict[str, str]) -> str:
    dims = ",".join(str(d) for d in shape)
    if not shape:
        return f"{names[dt]}[]"
    lay = ",".join(str(d) for d in reversed(range(len(shape))))
    return f"{names[dt]}[{dims}]{{{lay}}}"


def _rt14_predict(program, args, names, same_cast_copy=True):
    x = args[0]
    dt = str(np.dtype(x.dtype)) if str(x.dtype) != "bfloat16" else "bfloat16"
    dt = str(x.dtype)
    shape = tuple(x.shape)
    a = lambda d, s: _rt14_arr(d, s, names)  # noqa: E731
    if program in ("x * 2 + 1", "x + 1"):
        return ("fusion", a(dt, shape))
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return ("fusion", a("float32" if dt == "int32" else dt, shape))
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bfloat16" and same_cast_copy:
            return ("copy", a(dt, shape))
        return ("fusion", a("bfloat16", shape))
    if program == "x.sum(axis=1)":
        return ("fusion", a(dt, shape[:1] + shape[2:]))
    if program == "x.max()":
        return ("fusion", a(dt, ()))
    if program == "x.T":
        if len(shape) == 1:
            return ("copy", a(dt, shape))
        return ("fusion", a(dt, shape[::-1]))
    if program == "x itself":
        return ("copy", a(dt, shape))
    if program == "x.reshape(2, -1, x.shape[-1])":
        new = (2, int(np.prod(shape)) // (2 * shape[-1]), shape[-1])
        return ("fusion" if new[1] == 1 else "copy", a(dt, new))
    if program == "(x * 2, x + 1)":
        return ("tuple", f"({a(dt, shape)}, {a(dt, shape)})")
    if program == "(x, x.sum())":
        return ("tuple", f"({a(dt, shape)}, {a(dt, ())})")
    if program == "(v, x)":
        v = args[1]
        return ("tuple", f"({a(str(v.dtype), tuple(v.shape))}, {a(dt, shape)})")
    return ("fusion", a(dt, shape))


@wrong(
    "predict_entry_root",
    why="Clause 'in entry_root's format' (HLO type names): spells int32 "
    "with StableHLO's name i32 (as the lowered stage prints tensor<8xi32>) instead of HLO's s32; "
    "'x + 1' with x int32[6] gives ('fusion', 'i32[6]{0}') not 's32[6]{0}'.",
)
def _rt14_predict_entry_root_mlir_int_name(program: str, args: tuple) -> tuple[str, str]:
    return _rt14_predict(program, args, _RT14_DT)


@wrong(
    "predict_entry_root",
    why="Clause 'what happens to a result that is an input': believes "
    "x.astype(jnp.bfloat16) always runs a convert (a fusion), also when x is already bfloat16, "
    "where the cast is a no-op and the result is the input, copied: x bfloat16[8,4] gives "
    "('fusion', ...) not ('copy', 'bf16[8,4]{1,0}').",
)
def _rt14_predict_entry_root_cast_always_converts(program: str, args: tuple) -> tuple[str, str]:
    return _rt14_predict(program, args, _RT14_DT_OK, same_cast_copy=False)


@wrong(
    "dump_files",
    why="Clause 'even of another process ... with the very names and bytes this "
    "compile writes (XLA rewrites those files)': finds this compile's files as the names that "
    "were not there before; when XLA only rewrote existing names it falls back to the first "
    "sorted before/after pair of the same jit_<name> module, e.g. module_0000 of scale_and_shift "
    "at another shape instead of the rewritten module_0002.",
)
def _rt14_dump_files_new_names_then_first(f, args: tuple, directory: str) -> tuple[Path, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in d.iterdir()}
    compiled = (
        jax.jit(f).lower(*args).compile({"xla_dump_to": str(d), "xla_dump_hlo_as_text": True})
    )
    module = compiled.as_text().split(None, 2)[1].rstrip(",")
    names = sorted(p.name for p in d.iterdir())
    new = [n for n in names if n not in before]
    pool = (
        new
        if any(n.endswith(".before_optimizations.txt") for n in new)
        else [n for n in names if f".{module}." in n]
    )
    first = next(n for n in pool if n.endswith(".before_optimizations.txt"))
    prefix = first.split(".")[0]
    after = next(
        n for n in pool if n.startswith(prefix + ".") and n.endswith("_after_optimizations.txt")
    )
    return d / first, d / after
