"""Red team, phase 3, round 15: a wrapping lambda that renames the module, Python scalars made
static, a before-file name spelled from the after-file's, ENTRY taken as the last computation
for layouts, a ROOT shape rebuilt without its tiles, reducers followed only from `reduce`, iota
counted as a constant, constant shapes rebuilt without tiles, an int64 total for the MLP, and
bfloat16 spelled f16."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


@wrong(
    "three_texts",
    why="Clause 'the three texts of jax.jit(f)': jits a forwarding wrapper `lambda *a: f(*a)` "
    "(so any callable, partials included, lowers the same way); the module is then named "
    "jit__lambda, not jit_<f's name>: on value_and_total(x f32[3,1]) every text says "
    "'module @jit__lambda' / 'HloModule jit__lambda' instead of jit_value_and_total.",
)
def _rt15_three_texts_forwarding_lambda(f, *args) -> dict[str, str]:
    lowered = jax.jit(lambda *a: f(*a)).lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "flops",
    why="Clause 'jax.jit(f) compiled for `args`': marks every Python scalar argument static "
    "(static_argnums, 'a float is not an array'), so it becomes a constant XLA can fold: "
    "scaled(x f32[4,5], 1.0) = x*1.0 + 1.0 compiles to one add (20 flops) instead of the "
    "traced multiply and add (40 flops).",
)
def _rt15_flops_static_python_scalars(f, *args) -> float:
    static = tuple(i for i, a in enumerate(args) if isinstance(a, (bool, int, float, complex)))
    compiled = jax.jit(f, static_argnums=static).lower(*args).compile()
    return float(compiled.cost_analysis().get("flops", 0.0))


@wrong(
    "dump_files",
    why="Clause 'return the paths of this compile's (before-optimizations, after-optimizations) "
    "HLO files': finds this compile's after file right, then spells the before file by "
    "replacing 'after' with 'before' in its name; XLA names them "
    "'.before_optimizations.txt' and '.cpu_after_optimizations.txt', so the returned "
    "'.cpu_before_optimizations.txt' does not exist (scale_and_shift with x f32[3]).",
)
def _rt15_dump_files_before_from_after_name(f, args: tuple, directory: str) -> tuple[Path, Path]:
    d = Path(directory)
    before_state = {p.name: p.stat().st_mtime_ns for p in d.iterdir()} if d.exists() else {}
    lowered = jax.jit(f).lower(*args)
    compiled = lowered.compile(
        compiler_options={"xla_dump_to": str(d), "xla_dump_hlo_as_text": True}
    )
    opt = compiled.as_text()
    candidates = sorted(p for p in d.iterdir() if p.name.endswith(".cpu_after_optimizations.txt"))
    changed = [
        p
        for p in candidates
        if p.name not in before_state or p.stat().st_mtime_ns != before_state[p.name]
    ]
    pool = changed or [p for p in candidates if p.read_text() == opt] or candidates
    after = pool[-1]
    before = after.with_name(after.name.replace("after", "before"))
    return before, after


@wrong(
    "entry_parameter_layouts",
    why="Clause 'the ENTRY computation's parameters': takes the last computation as ENTRY (JAX "
    "prints ENTRY last); on HAND_BRANCHES (the uncalled %orphan comes after ENTRY) it answers "
    "['{0}'] instead of ['{1,0}', '{}'].",
)
def _rt15_entry_parameter_layouts_last_computation(hlo_text: str) -> list[str]:
    entry = list(parse_hlo(hlo_text))[-1]

    def lay(shape) -> str:
        if shape.is_tuple:
            return "(" + ", ".join(lay(e) for e in shape.elements) + ")"
        return shape.layout or "{}"

    params = [i for i in entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(i.payload))
    return [lay(i.shape_info) for i in params]


@wrong(
    "entry_root",
    why="Clause 'the shape exactly as the instruction line prints it': tuples copied as printed, "
    "but an array shape rebuilt as dtype[dims]{minor_to_major} to tidy it, which drops what "
    "follows ':' in the layout: a ROOT 'f32[8,128]{1,0:T(8,128)}' (TPU-style module text) "
    "comes back as 'f32[8,128]{1,0}'.",
)
def _rt15_entry_root_rebuilt_layout(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info
    if s.is_tuple or s.minor_to_major is None:
        return root.opcode, root.shape
    dims = root.shape[root.shape.index("[") + 1 : root.shape.index("]")]
    return root.opcode, f"{s.dtype}[{dims}]{{{','.join(map(str, s.minor_to_major))}}}"


@wrong(
    "fusion_contents",
    why="Clause 'count the computations a fused computation calls in turn, by whatever attribute "
    "it names them': follows a `reduce`'s to_apply= and nested fusions' calls= (what the "
    "attention block has) but nothing else; on jnp.cumsum(x) with x f32[4,100] the kLoop "
    "fusions hold reduce-window ops whose to_apply= reducers' adds are missing.",
)
def _rt15_fusion_contents_reduce_only(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(comp_name: str, kinds: list[str]) -> None:
        for inst in module[comp_name]:
            if inst.opcode == "parameter":
                continue
            for k in kinds:
                out.setdefault(k, Counter())[inst.opcode] += 1
            if inst.opcode == "fusion":
                inner = kinds + [inst.attribute("kind")]
                for c in inst.called_computations:
                    walk(c, inner)
            elif inst.opcode == "reduce":
                for c in inst.called_computations:
                    walk(c, kinds)

    for comp in module:
        fused_names = set()
        for other in module:
            for inst in other:
                if inst.opcode == "fusion":
                    fused_names.update(inst.called_computations)
        if comp.name in fused_names:
            continue
        for inst in comp:
            if inst.opcode == "fusion":
                for c in inst.called_computations:
                    walk(c, [inst.attribute("kind")])
    return out


@wrong(
    "constants",
    why="Clause 'every constant instruction in the module': also lists `iota` instructions as "
    "constants ('an iota is a constant array XLA builds on the fly'); on "
    "jax.jit(lambda x: x + jnp.arange(x.shape[0], dtype=x.dtype)) at x f32[100000] (optimized) the "
    "iota gives an extra entry.",
)
def _rt15_constants_with_iota(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for comp in parse_hlo(hlo_text):
        for inst in comp:
            if inst.opcode == "constant":
                out.append((inst.shape, inst.payload))
            elif inst.opcode == "iota":
                out.append((inst.shape, inst.attribute("iota_dimension", "0")))
    return out


@wrong(
    "constants",
    why="Clause 'the shape as the instruction line prints it (with its layout)': rebuilds each "
    "array shape as dtype[dims]{minor_to_major}, which drops tiles and memory space after ':'; "
    "a constant 'f32[8,128]{1,0:T(8,128)}' (TPU-style text) comes back as 'f32[8,128]{1,0}'.",
)
def _rt15_constants_rebuilt_shape(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for comp in parse_hlo(hlo_text):
        for inst in comp:
            if inst.opcode != "constant":
                continue
            s = inst.shape_info
            shape = inst.shape
            if not s.is_tuple and s.minor_to_major is not None:
                dims = shape[shape.index("[") + 1 : shape.index("]")]
                shape = f"{s.dtype}[{dims}]{{{','.join(map(str, s.minor_to_major))}}}"
            out.append((shape, inst.payload))
    return out


@wrong(
    "mlp_flops",
    why="Clause 'Return the exact count (a Python int, any size) ... past 2**63': mimics XLA, "
    "which 'counts each op in an int64', by wrapping the total to a signed int64; each dot "
    "stays below 2**63 but the sum need not: (2**20, 2**20, 2**21, 2**20) has two dots of "
    "2**62 each and a total past 2**63, which this returns as a negative number.",
)
def _rt15_mlp_flops_int64_total(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    total = 2 * batch * in_dim * hidden + 2 * batch * hidden + 2 * batch * hidden * out_dim
    total += batch * out_dim
    total &= (1 << 64) - 1
    return total - (1 << 64) if total >= 1 << 63 else total


def _rt15_hlo_dtype(dtype) -> str:
    d = jnp.dtype(dtype)
    bits = d.itemsize * 8
    if jnp.issubdtype(d, jnp.floating):
        return f"f{bits}"
    if jnp.issubdtype(d, jnp.signedinteger):
        return f"s{bits}"
    return f"u{bits}"


def _rt15_shape(dtype, shape) -> str:
    t = _rt15_hlo_dtype(dtype)
    dims = ",".join(map(str, shape))
    if not shape:
        return f"{t}[]"
    return f"{t}[{dims}]{{{','.join(str(i) for i in reversed(range(len(shape))))}}}"


@wrong(
    "predict_entry_root",
    why="Clause 'XLA's dtype names (s32, bf16)': spells an input's dtype as 'f'/'s' + its bit "
    "width (jnp.issubdtype(bfloat16, floating) is True), so a bfloat16 input is spelled f16 "
    "(only the astype program's own 'bf16' is written out): 'x + 1' with x bfloat16[4,3] gives "
    "('fusion', 'f16[4,3]{1,0}'); XLA prints bf16[4,3]{1,0}. Right on every float32, float16 "
    "and int32 input, so on every listed case.",
)
def _rt15_predict_entry_root_bf16_as_f16(program: str, args: tuple) -> tuple[str, str]:
    x = args[0]
    shape, dtype = tuple(x.shape), x.dtype
    if program in ("x * 2 + 1", "x + 1"):
        return "fusion", _rt15_shape(dtype, shape)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        dt = jnp.float32 if jnp.issubdtype(dtype, jnp.integer) else dtype
        return "fusion", _rt15_shape(dt, shape)
    if program == "x.astype(jnp.bfloat16)":
        op = "copy" if jnp.dtype(dtype) == jnp.dtype(jnp.bfloat16) else "fusion"
        return op, "bf16" + _rt15_shape(dtype, shape).partition("[")[1] + _rt15_shape(
            dtype, shape
        ).partition("[")[2]
    if program == "x.sum(axis=1)":
        return "fusion", _rt15_shape(dtype, shape[:1] + shape[2:])
    if program == "x.max()":
        return "fusion", _rt15_shape(dtype, ())
    if program == "x.T":
        op = "copy" if len(shape) == 1 else "fusion"
        return op, _rt15_shape(dtype, shape[::-1])
    if program == "x itself":
        return "copy", _rt15_shape(dtype, shape)
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = int(np.prod(shape))
        new = (2, n // (2 * shape[-1]), shape[-1])
        if new[1] == 1:
            return "fusion", _rt15_shape(dtype, new)
        return "copy", _rt15_shape(dtype, new)
    if program == "(x * 2, x + 1)":
        s = _rt15_shape(dtype, shape)
        return "tuple", f"({s}, {s})"
    if program == "(x, x.sum())":
        return "tuple", f"({_rt15_shape(dtype, shape)}, {_rt15_shape(dtype, ())})"
    if program == "(v, x)":
        v = args[1]
        return "tuple", f"({_rt15_shape(v.dtype, tuple(v.shape))}, {_rt15_shape(dtype, shape)})"
    return "fusion", _rt15_shape(dtype, shape)
