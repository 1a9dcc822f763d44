"""Red-team (round 2) wrong answers for phase 3, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# one memo shared by every call (a learner "saving compile time")
_R2_LOWERED_BY_FUNCTION: dict = {}


# ---------------------------------------------------------------- three_texts


@wrong(
    "three_texts",
    why="'Every call compiles for the args it is given: the same f at other shapes is another "
    "program' -- memoizes the lowering on f alone; wrong on value_and_total at (1, 4) after "
    "(3, 1) (every text still says f32[3,1])",
)
def r2_three_texts_memo_on_function(f, *args):
    lowered = _R2_LOWERED_BY_FUNCTION.get(f)
    if lowered is None:
        lowered = jax.jit(f).lower(*args)
        _R2_LOWERED_BY_FUNCTION[f] = lowered
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


# ---------------------------------------------------------------- dump_files


@wrong(
    "dump_files",
    why="'return the files this compile wrote (before-optimizations, after-optimizations)' -- "
    "takes the first new file whose name contains 'after_optimizations', which sorts to "
    "...cpu_after_optimizations-buffer-assignment-values.txt, a buffer report, not the HLO; "
    "wrong on any compile (scale_and_shift included)",
)
def r2_dump_first_after_match(f, args: tuple, directory: str) -> tuple[Path, Path]:
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    before = set(folder.iterdir())
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(folder), "xla_dump_hlo_as_text": True}
    )
    new = sorted(p for p in folder.iterdir() if p not in before)
    first_before = next(p for p in new if "before_optimizations" in p.name)
    first_after = next(p for p in new if "after_optimizations" in p.name)
    return first_before, first_after


@wrong(
    "dump_files",
    why="'even of another process with higher module numbers ... not the first or last match' -- "
    "returns the pair with the highest module number in the directory; wrong whenever the "
    "directory already holds module_9999.* files of another process",
)
def r2_dump_highest_module_number(f, args: tuple, directory: str) -> tuple[Path, Path]:
    folder = Path(directory)
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(folder), "xla_dump_hlo_as_text": True}
    )
    numbers = [
        int(m.group(1))
        for p in folder.iterdir()
        if (m := re.match(r"module_(\d+)\..*\.before_optimizations\.txt$", p.name))
    ]
    prefix = f"module_{max(numbers):04d}."
    before = next(
        p
        for p in folder.iterdir()
        if p.name.startswith(prefix) and p.name.endswith(".before_optimizations.txt")
    )
    after = next(
        p
        for p in folder.iterdir()
        if p.name.startswith(prefix) and p.name.endswith("_after_optimizations.txt")
    )
    return before, after


# ---------------------------------------------------------------- entry_parameter_layouts


@wrong(
    "entry_parameter_layouts",
    why="'A tuple-shaped parameter's layout is its elements' layouts in parentheses: "
    '"({0,1}, {})"\' -- collects the brace groups with a regex, so a scalar element inside a '
    "tuple (no braces) disappears; wrong on HAND_WRITTEN: '({0,1})' for parameter 1",
)
def r2_layouts_brace_regex(hlo_text: str) -> list[str]:
    module = parse_hlo(hlo_text)
    found = []
    for instruction in module.entry:
        if instruction.opcode != "parameter":
            continue
        groups = re.findall(r"\{[^{}]*\}", instruction.shape)
        if instruction.shape.startswith("("):
            layout = "(" + ", ".join(groups) + ")"
        else:
            layout = groups[0] if groups else "{}"
        found.append((int(instruction.payload), layout))
    return [layout for _, layout in sorted(found)]


@wrong(
    "entry_parameter_layouts",
    why="'in parameter-number order (the N of parameter(N), not the order of the lines)' -- "
    "keeps line order; wrong on mixed's unoptimized text (parameter(4) listed before "
    "parameter(0)) and on HAND_WRITTEN (parameter(1) first)",
)
def r2_layouts_line_order(hlo_text: str) -> list[str]:
    def layout(shape):
        if shape.is_tuple:
            return "(" + ", ".join(layout(e) for e in shape.elements) + ")"
        return shape.layout or "{}"

    return [layout(i.shape_info) for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]


# ---------------------------------------------------------------- entry_root


@wrong(
    "entry_root",
    why="'ENTRY need not be the last computation, nor its ROOT the last line' -- takes the "
    "last line of ENTRY; wrong on HAND_WRITTEN (its last line is the dead negate, "
    "f16[4,2]{0,1}, not the tuple)",
)
def r2_root_entry_last_line(hlo_text: str) -> tuple[str, str]:
    last = parse_hlo(hlo_text).entry.instructions[-1]
    return (last.opcode, last.shape)


@wrong(
    "entry_root",
    why="'ENTRY need not be the last computation' -- takes the ROOT of the last computation "
    "(JAX prints ENTRY last); wrong on HAND_WRITTEN (%spare's subtract, s32[])",
)
def r2_root_last_computation(hlo_text: str) -> tuple[str, str]:
    root = list(parse_hlo(hlo_text))[-1].root
    return (root.opcode, root.shape)


# ---------------------------------------------------------------- fusion_contents


def _r2_count(module, name, kind, out, *, reducers=True, nested_own=True):
    for instruction in module[name]:
        if instruction.opcode == "parameter":
            continue
        out.setdefault(kind, Counter())[instruction.opcode] += 1
        if instruction.opcode == "fusion":
            called = instruction.called_computations[0]
            _r2_count(module, called, kind, out, reducers=reducers, nested_own=nested_own)
            if nested_own:
                inner = instruction.attribute("kind")
                _r2_count(module, called, inner, out, reducers=reducers, nested_own=nested_own)
        elif reducers:
            for called in instruction.called_computations:
                _r2_count(module, called, kind, out, reducers=reducers, nested_own=nested_own)


@wrong(
    "fusion_contents",
    why="'Fusions can sit in any computation (ENTRY, a while body, a conditional's branch...)' -- "
    "only ENTRY's fusions; wrong on looped (the tanh fusion lives in the while body: no sine, "
    "tanh, compare)",
)
def r2_fusions_entry_only(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}
    for instruction in module.entry:
        if instruction.opcode == "fusion":
            _r2_count(
                module, instruction.called_computations[0], instruction.attribute("kind"), out
            )
    return out


@wrong(
    "fusion_contents",
    why="'count the computations a fused computation calls in turn (a reduce's reducer)' -- "
    "stops at the fused computation; wrong on attention and value_and_total (the reducers' "
    "add/maximum are missing)",
)
def r2_fusions_no_reducers(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    inside = {
        c for comp in module for i in comp if i.opcode == "fusion" for c in i.called_computations
    }
    out: dict[str, Counter] = {}
    for computation in module:
        if computation.name in inside:
            continue
        for instruction in computation:
            if instruction.opcode == "fusion":
                _r2_count(
                    module,
                    instruction.called_computations[0],
                    instruction.attribute("kind"),
                    out,
                    reducers=False,
                )
    return out


@wrong(
    "fusion_contents",
    why="'A fusion inside a fused computation ... counts under its own kind too' -- a nested "
    "fusion's computation is counted for the outer kind only; wrong on HAND_WRITTEN (no "
    "kInput entry at all)",
)
def r2_fusions_nested_outer_only(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    inside = {
        c for comp in module for i in comp if i.opcode == "fusion" for c in i.called_computations
    }
    out: dict[str, Counter] = {}
    for computation in module:
        if computation.name in inside:
            continue
        for instruction in computation:
            if instruction.opcode == "fusion":
                _r2_count(
                    module,
                    instruction.called_computations[0],
                    instruction.attribute("kind"),
                    out,
                    nested_own=False,
                )
    return out


@wrong(
    "fusion_contents",
    why="'Fusions can sit in any computation ... even a fused computation' -- walks every "
    "computation's fusions flat, each fused computation once under its own caller's kind, "
    "so a nested fusion's ops are not counted for the outer kind; wrong on HAND_WRITTEN "
    "(kLoop lacks exponential/reduce/add from the inner kInput fusion)",
)
def r2_fusions_flat_every_fusion(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def ops(name, kind):
        for instruction in module[name]:
            if instruction.opcode == "parameter":
                continue
            out.setdefault(kind, Counter())[instruction.opcode] += 1
            if instruction.opcode != "fusion":
                for called in instruction.called_computations:
                    ops(called, kind)

    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                ops(instruction.called_computations[0], instruction.attribute("kind"))
    return out


# ---------------------------------------------------------------- constants


@wrong(
    "constants",
    why="'Every computation counts ... each instruction once' -- follows the calls from ENTRY, "
    "so a computation nothing calls is skipped; wrong on HAND_WRITTEN (%spare's s32[] 4, "
    "pred[] true, s32[2,2] and f16[] constants missing)",
)
def r2_constants_reachable_from_entry(hlo_text: str) -> list[tuple[str, str]]:
    module = parse_hlo(hlo_text)
    seen: set[str] = set()
    found: list[tuple[str, str]] = []

    def visit(computation):
        if computation.name in seen:
            return
        seen.add(computation.name)
        for instruction in computation:
            if instruction.opcode == "constant":
                found.append((instruction.shape, instruction.payload))
            for called in instruction.called_computations:
                visit(module[called])

    visit(module.entry)
    return found


@wrong(
    "constants",
    why="'two constants with the same value are two entries' -- de-duplicates (shape, literal); "
    "wrong on HAND_WRITTEN (s32[] 4 twice) and on attention's unoptimized text (-inf twice)",
)
def r2_constants_deduplicated(hlo_text: str) -> list[tuple[str, str]]:
    found: dict[tuple[str, str], None] = {}
    for computation in parse_hlo(hlo_text):
        for instruction in computation:
            if instruction.opcode == "constant":
                found.setdefault((instruction.shape, instruction.payload))
    return list(found)


@wrong(
    "constants",
    why="'the shape as the instruction line prints it (with its layout)' -- drops the layout; "
    "wrong on scale_and_shift ('f32[3]' instead of 'f32[3]{0}')",
)
def r2_constants_no_layout(hlo_text: str) -> list[tuple[str, str]]:
    return [
        (re.sub(r"\{[^{}]*\}$", "", i.shape), i.payload)
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "constant"
    ]


@wrong(
    "constants",
    why="'the literal as written between the parentheses' -- reads constants off the text with "
    "a greedy regex, so a constant line with metadata after it takes '1), metadata={...' as "
    "its literal; right on scale_and_shift and HAND_WRITTEN, wrong on looped's and mlp's "
    "optimized text",
)
def r2_constants_greedy_regex(hlo_text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in re.finditer(r"= (\S+) constant\((.*)\)", hlo_text)]


# ---------------------------------------------------------------- flops

_R2_FLOPS_BY_FUNCTION: dict = {}


@wrong(
    "flops",
    why="'for jax.jit(f) compiled for `args`' -- memoizes the count on f alone; wrong on the "
    "same f at a second shape (mlp at batch 8 then batch 2 answers 10784 again)",
)
def r2_flops_memo_on_function(f, *args) -> float:
    if f not in _R2_FLOPS_BY_FUNCTION:
        cost = jax.jit(f).lower(*args).compile().cost_analysis()
        _R2_FLOPS_BY_FUNCTION[f] = float(cost.get("flops", 0.0))
    return _R2_FLOPS_BY_FUNCTION[f]


@wrong(
    "flops",
    why="'the compiled module, after its passes' -- reads the lowered stage's cost analysis; "
    "wrong on shared_sum (40 before CSE, 32 compiled)",
)
def r2_flops_lowered_stage(f, *args) -> float:
    return float(jax.jit(f).lower(*args).cost_analysis().get("flops", 0.0))


@wrong(
    "flops",
    why="'Transcendentals (exp, tanh, ...) are a separate count, not flops' -- adds them in; "
    "wrong on looped (18 flops + 16 transcendentals)",
)
def r2_flops_with_transcendentals(f, *args) -> float:
    cost = jax.jit(f).lower(*args).compile().cost_analysis()
    return float(cost.get("flops", 0.0) + cost.get("transcendentals", 0.0))


# ---------------------------------------------------------------- mlp_flops (predict)


@wrong(
    "mlp_flops",
    why="'the flops XLA's cost analysis reports' (README: an (MxK)@(KxN) matmul costs exactly "
    "2*M*N*K) -- counts K multiplies and K-1 adds per output; wrong on every shape, "
    "e.g. (8,16,32,4): 10496 instead of 10784",
)
def r2_mlp_flops_k_minus_one_adds(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    first = batch * hidden * (2 * in_dim - 1)
    second = batch * out_dim * (2 * hidden - 1)
    return first + second + 2 * batch * hidden + batch * out_dim


@wrong(
    "mlp_flops",
    why="relu is a maximum XLA counts one flop per element -- treats relu as free; wrong on "
    "(8,16,32,4): 10528 instead of 10784",
)
def r2_mlp_flops_relu_free(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden * out_dim
        + batch * hidden
        + batch * out_dim
    )


# ---------------------------------------------------------------- predict_entry_root (predict)
# (adapted when the task's cases became drawn: each answer keeps its wrong idea, applied to the
# program and arguments it is given, on top of the README's rule)


def _r2_printed(dtype, dims) -> str:
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}
    layout = "{" + ",".join(str(d) for d in reversed(range(len(dims)))) + "}" if dims else ""
    return f"{names[str(dtype)]}[{','.join(map(str, dims))}]{layout}"


def _r2_root(program, args):
    """The rule of the README (the base each wrong answer below changes in one place)."""
    x = args[0]
    dims, dtype = tuple(x.shape), str(x.dtype)
    if program == "(v, x)":
        return "tuple", f"({_r2_printed(args[1].dtype, tuple(args[1].shape))}, " + (
            f"{_r2_printed(dtype, dims)})"
        )
    if program == "(x * 2, x + 1)":
        return "tuple", f"({_r2_printed(dtype, dims)}, {_r2_printed(dtype, dims)})"
    if program == "(x, x.sum())":
        return "tuple", f"({_r2_printed(dtype, dims)}, {_r2_printed(dtype, ())})"
    if program.startswith("x.reshape"):
        return "copy", _r2_printed(dtype, (2, x.size // (2 * dims[-1]), dims[-1]))
    if program == "x itself" or (program == "x.T" and len(dims) == 1):
        return "copy", _r2_printed(dtype, dims)
    if program == "x.astype(jnp.bfloat16)":
        return ("copy" if dtype == "bfloat16" else "fusion"), _r2_printed("bfloat16", dims)
    if program in ("jnp.sin(x)", "jnp.tanh(x)") and dtype == "int32":
        dtype = "float32"
    shaped = {"x.sum(axis=1)": dims[:1] + dims[2:], "x.max()": (), "x.T": dims[::-1]}
    return "fusion", _r2_printed(dtype, shaped.get(program, dims))


@wrong(
    "predict_entry_root",
    why="README: 'a transpose writes its result in row-major order rather than changing the "
    "layout' -- predicts x.T as a layout change, ('copy', 'f32[4,8]{0,1}'); wrong on x.T of "
    "any matrix",
)
def r2_roots_transpose_as_layout(program, args) -> tuple[str, str]:
    opcode, shape = _r2_root(program, args)
    if program == "x.T" and args[0].ndim == 2:
        return "copy", shape.replace("{1,0}", "{0,1}")
    return opcode, shape


@wrong(
    "predict_entry_root",
    why="README: 'a result that is an input, or a reshape of one (a free bitcast), is a copy' -- "
    "predicts the reshape as a free bitcast; wrong on every x.reshape case",
)
def r2_roots_reshape_bitcast(program, args) -> tuple[str, str]:
    opcode, shape = _r2_root(program, args)
    return ("bitcast" if program.startswith("x.reshape") else opcode), shape


@wrong(
    "predict_entry_root",
    why="two results of one element-wise loop are a tuple of two fusions on CPU, not one "
    "multi-output fusion -- predicts ('fusion', '(f32[2,5]{1,0}, f32[2,5]{1,0})'); wrong on "
    "every (x * 2, x + 1) case",
)
def r2_roots_multi_output_fusion(program, args) -> tuple[str, str]:
    opcode, shape = _r2_root(program, args)
    return ("fusion" if program == "(x * 2, x + 1)" else opcode), shape
