"""Red team, phase 3, round 17: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt17_CACHE: dict = {}


@wrong(
    "three_texts",
    why="Clause 'Every call compiles for the args it is given': memoizes on "
    "f.__qualname__ and the args' shapes/dtypes, so two ELEMENTWISE lambdas (same qualname "
    "'<lambda>') at one shape get the first lambda's texts: (x+1) then (x*x+x) at f32[4].",
)
def _rt17_three_texts_memo_by_qualname(f, *args) -> dict[str, str]:
    key = (
        getattr(f, "__qualname__", repr(f)),
        tuple((np.shape(a), str(np.asarray(a).dtype)) for a in jax.tree_util.tree_leaves(args)),
    )
    if key not in _rt17_CACHE:
        lowered = jax.jit(f).lower(*args)
        _rt17_CACHE[key] = {
            "stablehlo": lowered.as_text(),
            "hlo": lowered.as_text(dialect="hlo"),
            "optimized": lowered.compile().as_text(),
        }
    return dict(_rt17_CACHE[key])


@wrong(
    "three_texts",
    why="Clause 'each as jax.stages prints it by default ... another printer "
    "of the same module, such as the executable's HloModule.to_string, prints attributes "
    "differently': reads the optimized text from runtime_executable().hlo_modules()[0]; "
    "differs on mlp(params, x f32[8,16]).",
)
def _rt17_three_texts_executable_module(f, *args) -> dict[str, str]:
    lowered = jax.jit(f).lower(*args)
    compiled = lowered.compile()
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": compiled.runtime_executable().hlo_modules()[0].to_string(),
    }


@wrong(
    "dump_files",
    why="Clause 'even of another process ... with the very names and bytes this "
    "compile writes (XLA rewrites those files)': keeps only names that were not in the "
    "directory before compiling, so a rewritten same-name pair is missed and it falls back to "
    "the highest-numbered pair, another process's module_9999 files.",
)
def _rt17_dump_files_new_names_only(f, args: tuple, directory: str) -> tuple[Path, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in d.iterdir()}
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(d), "xla_dump_hlo_as_text": True}
    )
    names = sorted(p.name for p in d.iterdir())
    new = [n for n in names if n not in before]

    def pick(pool, test):
        hits = [n for n in pool if test(n)]
        return hits or [n for n in names if test(n)]

    pre = pick(new, lambda n: n.endswith(".before_optimizations.txt"))
    post = pick(new, lambda n: n.endswith("_after_optimizations.txt"))
    return d / pre[-1], d / post[-1]


@wrong(
    "dump_files",
    why="Clause 'with higher module numbers ... not the first or last match': "
    "picks the highest module_NNNN for jit_<name> after compiling; a directory holding an "
    "earlier process's module_9999.jit_scale_and_shift.* files returns those, not this compile's.",
)
def _rt17_dump_files_highest_number(f, args: tuple, directory: str) -> tuple[Path, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(d), "xla_dump_hlo_as_text": True}
    )
    name = getattr(f, "__name__", "")
    pre = sorted(d.glob(f"module_*.jit_{name}.before_optimizations.txt"))
    post = sorted(d.glob(f"module_*.jit_{name}.cpu_after_optimizations.txt"))
    return pre[-1], post[-1]


def _rt17_rebuild(shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_rt17_rebuild(e) for e in shape.elements) + ")"
    m2m = shape.minor_to_major
    return "{" + ",".join(str(d) for d in (m2m or ())) + "}"


@wrong(
    "entry_parameter_layouts",
    why="Clause 'a layout is all the text between its braces, tiles "
    "and memory space too': rebuilds the layout from minor_to_major, so "
    "'{1,0:T(8,128)S(1)}' becomes '{1,0}'; differs on an ENTRY parameter f32[8,128]{1,0:T(8,128)}.",
)
def _rt17_entry_parameter_layouts_from_order(hlo_text: str) -> list[str]:
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(i.payload))
    return [_rt17_rebuild(i.shape_info) for i in params]


@wrong(
    "entry_parameter_layouts",
    why="Clause 'in parameter-number order (not the order of the "
    "lines)': keeps line order; HAND_WRITTEN lists parameter(1) first, and in the unoptimized "
    "text of mixed parameter(4) comes first.",
)
def _rt17_entry_parameter_layouts_line_order(hlo_text: str) -> list[str]:
    def lay(s):
        if s.is_tuple:
            return "(" + ", ".join(lay(e) for e in s.elements) + ")"
        return s.layout or "{}"

    return [lay(i.shape_info) for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]


@wrong(
    "entry_root",
    why="Clause 'the shape exactly as the instruction line prints it': strips "
    "XLA's /*index=5*/ comments from the shape as noise; differs on any ROOT tuple of six or "
    "more results, e.g. lambda x: tuple(x + i for i in range(6)).",
)
def _rt17_entry_root_strip_comments(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    return root.opcode, re.sub(r"\s*/\*.*?\*/\s*", " ", root.shape).replace("  ", " ")


@wrong(
    "entry_root",
    why="Clause 'ENTRY need not be the last computation, nor its ROOT the last "
    "line': takes the last computation's ROOT; on HAND_WRITTEN that is %spare's subtract "
    "(s32[]) instead of the tuple.",
)
def _rt17_entry_root_last_computation(hlo_text: str) -> tuple[str, str]:
    last = list(parse_hlo(hlo_text))[-1]
    return last.root.opcode, last.root.shape


@wrong(
    "fusion_contents",
    why="Clause 'a reducer that two reduces call counts twice': remembers "
    "visited computations per fusion kind, so HAND_BRANCHES' %two_sums counts %sum's add once "
    "(kInput add 1, not 2).",
)
def _rt17_fusion_contents_visited_set(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}
    seen: dict[str, set] = {}

    def walk(name, kind):
        if name in seen[kind]:
            return
        seen[kind].add(name)
        for ins in module[name]:
            if ins.opcode != "parameter":
                out[kind][ins.opcode] += 1
            for callee in ins.called_computations:
                walk(callee, kind)

    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                kind = ins.attribute("kind")
                out.setdefault(kind, Counter())
                seen.setdefault(kind, set())
                for callee in ins.called_computations:
                    walk(callee, kind)
    return out


@wrong(
    "fusion_contents",
    why="Clause 'Fusions can sit in any computation (ENTRY, a while body, a "
    "conditional's branch...)': only walks fusions in ENTRY; HAND_BRANCHES' kLoop fusions in "
    "%yes/%no and the kOutput one in %orphan are missed, and looped's body fusions too.",
)
def _rt17_fusion_contents_entry_only(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(name, counter):
        for ins in module[name]:
            if ins.opcode != "parameter":
                counter[ins.opcode] += 1
            for callee in ins.called_computations:
                walk(callee, counter)

    for ins in module.entry:
        if ins.opcode == "fusion":
            counter = out.setdefault(ins.attribute("kind"), Counter())
            for callee in ins.called_computations:
                walk(callee, counter)
    return out


@wrong(
    "constants",
    why="Clause 'each instruction once: two constants with the same value ... are "
    "two entries': collects into a set, so HAND_BRANCHES' %two_a and %two_b (f32[] 2) become "
    "one entry.",
)
def _rt17_constants_set(hlo_text: str) -> list[tuple[str, str]]:
    found = {(i.shape, i.payload) for c in parse_hlo(hlo_text) for i in c if i.opcode == "constant"}
    return sorted(found)


@wrong(
    "constants",
    why="Clause 'Every computation counts': follows calls from ENTRY only "
    "(reachable computations), so HAND_WRITTEN's uncalled %spare (pred, f16, s32[2,2] "
    "constants) is missed.",
)
def _rt17_constants_reachable(hlo_text: str) -> list[tuple[str, str]]:
    module = parse_hlo(hlo_text)
    out, stack, seen = [], [module.entry.name], set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for ins in module[name]:
            if ins.opcode == "constant":
                out.append((ins.shape, ins.payload))
            stack.extend(ins.called_computations)
    return out


@wrong(
    "flops",
    why="Clause 'the compiled module, after its passes': asks the lowered stage, so "
    "shared_sum's (a+b) is counted twice: 32 flops at f32[8] instead of 24.",
)
def _rt17_flops_lowered(f, *args) -> float:
    analysis = jax.jit(f).lower(*args).cost_analysis()
    if isinstance(analysis, list):
        analysis = analysis[0]
    return float(analysis.get("flops", 0.0))


@wrong(
    "flops",
    why="Clause 'Transcendentals (exp, tanh, ...) are a separate count, not flops': "
    "adds transcendentals in as work; differs on looped (sin, tanh) and attention (exp).",
)
def _rt17_flops_plus_transcendentals(f, *args) -> float:
    analysis = jax.jit(f).lower(*args).compile().cost_analysis()
    return float(analysis.get("flops", 0.0) + analysis.get("transcendentals", 0.0))


@wrong(
    "mlp_flops",
    why="Clause 'Return the exact count (a Python int, any size)... past 2**63': "
    "computes in numpy int64 for speed, wrapping past 2**63, e.g. (2**21, 2**20, 2**20, 2**20) "
    "where each dot is 2**62 flops and the exact total is past 2**63.",
)
def _rt17_mlp_flops_int64(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    b, i, h, o = (np.int64(v) for v in (batch, in_dim, hidden, out_dim))
    with np.errstate(over="ignore"):
        total = 2 * b * i * h + 2 * b * h + 2 * b * h * o + b * o
    return int(total)


@wrong(
    "mlp_flops",
    why="Clause 'compare with the exact count there': mimics cost_analysis's "
    "float32, returning int(np.float32(count)); (1000, 1000, 1000, 3) gives 2008002944 "
    "instead of the exact 2008003000.",
)
def _rt17_mlp_flops_float32(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    count = (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden
        + 2 * batch * hidden * out_dim
        + batch * out_dim
    )
    return int(np.float32(count))


@wrong(
    "mlp_flops",
    why="Clause 'exact count (a Python int, any size)': builds the count in "
    "float64 (2.0 * ...), exact only to 2**53; (2**20+1, 2**20+1, 2**20+1, 3) rounds.",
)
def _rt17_mlp_flops_float64(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return int(
        2.0 * batch * in_dim * hidden
        + 2.0 * batch * hidden
        + 2.0 * batch * hidden * out_dim
        + 1.0 * batch * out_dim
    )


_rt17_XLA = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt17_shape(dtype: str, dims) -> str:
    if not dims:
        return f"{dtype}[]"
    layout = ",".join(str(d) for d in reversed(range(len(dims))))
    return f"{dtype}[{','.join(str(d) for d in dims)}]{{{layout}}}"


def _rt17_predict(
    program,
    args,
    *,
    sin_keeps_int=False,
    vector_t_fuses=False,
    reshape_always_copy=False,
    cast_always_fuses=False,
):
    x = args[0]
    dt = _rt17_XLA[np.dtype(x.dtype).name]
    dims = tuple(x.shape)
    floaty = "f32" if dt == "s32" and not sin_keeps_int else dt
    if program in ("x * 2 + 1", "x + 1"):
        return "fusion", _rt17_shape(dt, dims)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return "fusion", _rt17_shape(floaty, dims)
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bf16" and not cast_always_fuses:
            return "copy", _rt17_shape("bf16", dims)
        return "fusion", _rt17_shape("bf16", dims)
    if program == "x.sum(axis=1)":
        return "fusion", _rt17_shape(dt, dims[:1] + dims[2:])
    if program == "x.max()":
        return "fusion", _rt17_shape(dt, ())
    if program == "x.T":
        if len(dims) == 1 and not vector_t_fuses:
            return "copy", _rt17_shape(dt, dims)
        return "fusion", _rt17_shape(dt, dims[::-1])
    if program == "x itself":
        return "copy", _rt17_shape(dt, dims)
    if program == "x.reshape(2, -1, x.shape[-1])":
        new = (2, int(np.prod(dims[:-1])) // 2, dims[-1])
        if new[1] == 1 and not reshape_always_copy:
            return "fusion", _rt17_shape(dt, new)
        return "copy", _rt17_shape(dt, new)
    if program == "(x * 2, x + 1)":
        s = _rt17_shape(dt, dims)
        return "tuple", f"({s}, {s})"
    if program == "(x, x.sum())":
        return "tuple", f"({_rt17_shape(dt, dims)}, {_rt17_shape(dt, ())})"
    if program == "(v, x)":
        v = args[1]
        return "tuple", (
            f"({_rt17_shape(_rt17_XLA[np.dtype(v.dtype).name], tuple(v.shape))}, "
            f"{_rt17_shape(dt, dims)})"
        )
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="Clause 'The result's dtype is jnp's (jnp.sin of an int32 array "
    "is float32)': keeps x's dtype for every program; jnp.sin(x) on int32[6] predicts s32[6]{0} "
    "instead of f32[6]{0}.",
)
def _rt17_predict_entry_root_keeps_dtype(program: str, args: tuple) -> tuple[str, str]:
    return _rt17_predict(program, args, sin_keeps_int=True)


@wrong(
    "predict_entry_root",
    why="Clause 'a program that leaves its input unchanged for some "
    "arguments (x.T of a vector...)': treats every transpose as a fusion; x.T on f32[5] "
    "predicts ('fusion', ...) instead of ('copy', 'f32[5]{0}').",
)
def _rt17_predict_entry_root_vector_transpose(program: str, args: tuple) -> tuple[str, str]:
    return _rt17_predict(program, args, vector_t_fuses=True)


@wrong(
    "predict_entry_root",
    why="Clause 'One exception: reshaping a matrix of two rows to "
    "[2,1,n] ... ROOT is a fusion': treats every reshape as a bitcast+copy; x.reshape on "
    "f32[2,7] predicts 'copy' instead of 'fusion'.",
)
def _rt17_predict_entry_root_reshape_copy(program: str, args: tuple) -> tuple[str, str]:
    return _rt17_predict(program, args, reshape_always_copy=True)


@wrong(
    "predict_entry_root",
    why="Clause 'astype to the dtype x already has' is a copy: treats "
    "every astype as a convert fusion; x.astype(bfloat16) on a bf16[4,3] input predicts "
    "'fusion' instead of 'copy'.",
)
def _rt17_predict_entry_root_cast_fuses(program: str, args: tuple) -> tuple[str, str]:
    return _rt17_predict(program, args, cast_always_fuses=True)
