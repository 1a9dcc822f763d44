"""Red-team wrong answers for phase 3, written from the contract only."""

import glob
import os
import re
from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# ---- entry_root ---------------------------------------------------------------------------


@wrong(
    "entry_root",
    why="'ENTRY need not be the last computation': takes the last computation's ROOT (JAX "
    "prints ENTRY last); on HAND_WRITTEN returns %spare's ('subtract', 's32[]')",
)
def rt_entry_root_last_computation(hlo_text):
    root = list(parse_hlo(hlo_text))[-1].root
    return (root.opcode, root.shape)


@wrong(
    "entry_root",
    why="'nor its ROOT the last line': takes ENTRY's last instruction; on HAND_WRITTEN returns "
    "('negate', 'f16[4,2]{0,1}') instead of the tuple",
)
def rt_entry_root_last_line(hlo_text):
    last = parse_hlo(hlo_text).entry.instructions[-1]
    return (last.opcode, last.shape)


# ---- entry_parameter_layouts -------------------------------------------------------------


@wrong(
    "entry_parameter_layouts",
    why="'in parameter-number order (the N of parameter(N), not the order of the lines)': "
    "keeps line order; on HAND_WRITTEN (parameter(1) declared first) and the unoptimized "
    "text of mixed (parameter(4) early)",
)
def rt_layouts_line_order(hlo_text):
    layouts = []
    for instruction in parse_hlo(hlo_text).entry:
        if instruction.opcode != "parameter":
            continue
        info = instruction.shape_info
        if info.is_tuple:
            layouts.append("(" + ", ".join(e.layout or "{}" for e in info.elements) + ")")
        else:
            layouts.append(info.layout or "{}")
    return layouts


@wrong(
    "entry_parameter_layouts",
    why="'read each layout from the text, never from the rank: a 2-D input can be {0,1}': "
    "derives row-major from the rank; on matmul (a asked column-major) gives {1,0} for a",
)
def rt_layouts_from_rank(hlo_text):
    def row_major(info):
        return "{" + ",".join(str(d) for d in reversed(range(len(info.dims)))) + "}"

    parameters = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    parameters.sort(key=lambda i: int(i.payload))
    layouts = []
    for instruction in parameters:
        info = instruction.shape_info
        if info.is_tuple:
            layouts.append("(" + ", ".join(row_major(e) for e in info.elements) + ")")
        else:
            layouts.append(row_major(info))
    return layouts


@wrong(
    "entry_parameter_layouts",
    why="'a tuple-shaped parameter's layout is its elements' layouts in parentheses': gives "
    "a tuple parameter '{}' (Shape.layout is None for a tuple); on HAND_WRITTEN parameter 1 "
    "should be '({0,1}, {})'",
)
def rt_layouts_tuple_as_empty(hlo_text):
    parameters = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    parameters.sort(key=lambda i: int(i.payload))
    return [i.shape_info.layout or "{}" for i in parameters]


# ---- fusion_contents ---------------------------------------------------------------------


def _rt_called_opcodes(module, name, counts):
    for instruction in module[name]:
        if instruction.opcode == "parameter":
            continue
        counts[instruction.opcode] += 1
        for callee in instruction.called_computations:
            _rt_called_opcodes(module, callee, counts)


@wrong(
    "fusion_contents",
    why="'fusions can sit in any computation (ENTRY, a while body, a conditional's branch)': "
    "looks at ENTRY's fusions only; on looped (fori_loop) the loop body's fusions are missed",
)
def rt_fusions_entry_only(hlo_text):
    module = parse_hlo(hlo_text)
    result = {}
    for instruction in module.entry:
        if instruction.opcode == "fusion":
            counts = result.setdefault(instruction.attribute("kind"), Counter())
            for callee in instruction.called_computations:
                _rt_called_opcodes(module, callee, counts)
    return result


@wrong(
    "fusion_contents",
    why="'count the computations a fused computation calls in turn (a reduce's reducer)': "
    "counts the called fused computation only; on attention the softmax's max/add reducers "
    "are missed",
)
def rt_fusions_no_reducer(hlo_text):
    module = parse_hlo(hlo_text)
    result = {}
    for computation in module:
        for instruction in computation:
            if instruction.opcode != "fusion":
                continue
            counts = result.setdefault(instruction.attribute("kind"), Counter())
            for callee in instruction.called_computations:
                counts.update(i.opcode for i in module[callee] if i.opcode != "parameter")
    return result


@wrong(
    "fusion_contents",
    why="'the computations it calls count for the outer kind as well': a nested fusion's "
    "computation is counted under its own kind only; on HAND_WRITTEN kLoop lacks the "
    "exponential/reduce/add of the kInput fusion inside it",
)
def rt_fusions_nested_own_kind_only(hlo_text):
    module = parse_hlo(hlo_text)
    result = {}

    def walk(name, counts):
        for instruction in module[name]:
            if instruction.opcode == "parameter":
                continue
            counts[instruction.opcode] += 1
            if instruction.opcode == "fusion":
                continue  # counted on its own, under its own kind, below
            for callee in instruction.called_computations:
                walk(callee, counts)

    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                counts = result.setdefault(instruction.attribute("kind"), Counter())
                for callee in instruction.called_computations:
                    walk(callee, counts)
    return result


# ---- constants ---------------------------------------------------------------------------


@wrong(
    "constants",
    why="'each instruction once: two constants with the same value are two entries': "
    "collects into a set; on HAND_WRITTEN the two s32[] constant(4) become one",
)
def rt_constants_deduplicated(hlo_text):
    found = {
        (i.shape, i.payload)
        for computation in parse_hlo(hlo_text)
        for i in computation
        if i.opcode == "constant"
    }
    return sorted(found)


@wrong(
    "constants",
    why="'every computation counts': walks only what ENTRY reaches through calls; on "
    "HAND_WRITTEN misses the uncalled %spare's pred, s32[2,2], f16 and s32 constants",
)
def rt_constants_reachable_only(hlo_text):
    module = parse_hlo(hlo_text)
    found, seen, todo = [], set(), [module.entry.name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for instruction in module[name]:
            if instruction.opcode == "constant":
                found.append((instruction.shape, instruction.payload))
            todo.extend(instruction.called_computations)
    return found


# ---- flops, mlp_flops --------------------------------------------------------------------


@wrong(
    "flops",
    why="'the compiled module, after its passes': asks the lowered stage's cost analysis; on "
    "shared_sum, (a+b)*c + (a+b)*d, the CSE'd add is counted twice (40 vs 32 flops at size 8)",
)
def rt_flops_lowered(f, *args):
    return float(jax.jit(f).lower(*args).cost_analysis().get("flops", 0.0))


@wrong(
    "flops",
    why="'transcendentals (exp, tanh, ...) are a separate count, not flops': adds them in; "
    "on looped (tanh) or attention (exp) the answer is too large",
)
def rt_flops_with_transcendentals(f, *args):
    analysis = jax.jit(f).lower(*args).compile().cost_analysis()
    return float(analysis.get("flops", 0.0) + analysis.get("transcendentals", 0.0))


@wrong(
    "mlp_flops",
    why="elementwise ops count one flop per element: counts the two matmuls only; on "
    "(8, 16, 32, 4) says 10240, XLA 10784",
)
def rt_mlp_flops_matmuls_only(batch, in_dim, hidden, out_dim):
    return 2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim


@wrong(
    "mlp_flops",
    why="the relu's max is one flop per element like the bias adds: treats relu as free; on "
    "(8, 16, 32, 4) says 10528, XLA 10784",
)
def rt_mlp_flops_relu_free(batch, in_dim, hidden, out_dim):
    return 2 * batch * hidden * (in_dim + out_dim) + batch * hidden + batch * out_dim


@wrong(
    "mlp_flops",
    why="a bias broadcast to (batch, hidden) is added to every element: counts each bias add "
    "once per bias entry (hidden + out_dim); on (2, 3, 5, 7) says 222, XLA 234",
)
def rt_mlp_flops_bias_per_vector(batch, in_dim, hidden, out_dim):
    return 2 * batch * hidden * (in_dim + out_dim) + batch * hidden + hidden + out_dim


# ---- predict_entry_root ------------------------------------------------------------------
# (adapted when the task's cases became drawn: each answer keeps its wrong idea, applied to the
# program and arguments it is given, on top of the README's rule)


def _rt_printed(dtype, dims) -> str:
    names = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}
    layout = "{" + ",".join(str(d) for d in reversed(range(len(dims)))) + "}" if dims else ""
    return f"{names[str(dtype)]}[{','.join(map(str, dims))}]{layout}"


def _rt_root(program, args):
    """The rule of the README (the base each wrong answer below changes in one place)."""
    x = args[0]
    dims, dtype = tuple(x.shape), str(x.dtype)
    if program == "(v, x)":
        return "tuple", f"({_rt_printed(args[1].dtype, tuple(args[1].shape))}, " + (
            f"{_rt_printed(dtype, dims)})"
        )
    if program == "(x * 2, x + 1)":
        return "tuple", f"({_rt_printed(dtype, dims)}, {_rt_printed(dtype, dims)})"
    if program == "(x, x.sum())":
        return "tuple", f"({_rt_printed(dtype, dims)}, {_rt_printed(dtype, ())})"
    if program.startswith("x.reshape"):
        return "copy", _rt_printed(dtype, (2, x.size // (2 * dims[-1]), dims[-1]))
    if program == "x itself" or (program == "x.T" and len(dims) == 1):
        return "copy", _rt_printed(dtype, dims)
    if program == "x.astype(jnp.bfloat16)":
        return ("copy" if dtype == "bfloat16" else "fusion"), _rt_printed("bfloat16", dims)
    if program in ("jnp.sin(x)", "jnp.tanh(x)") and dtype == "int32":
        dtype = "float32"
    shaped = {"x.sum(axis=1)": dims[:1] + dims[2:], "x.max()": (), "x.T": dims[::-1]}
    return "fusion", _rt_printed(dtype, shaped.get(program, dims))


@wrong(
    "predict_entry_root",
    why="'a result that is an input, or a reshape of one, is a copy': predicts the parameter "
    "itself and a bitcast for the reshape",
)
def rt_roots_input_passthrough(program, args):
    opcode, shape = _rt_root(program, args)
    if program == "x itself":
        return "parameter", shape
    if program.startswith("x.reshape"):
        return "bitcast", shape
    return opcode, shape


@wrong(
    "predict_entry_root",
    why="'a transpose writes its result in row-major order rather than changing the layout': "
    "predicts x.T of a matrix as f32[4,8]{0,1}",
)
def rt_roots_transpose_as_layout(program, args):
    opcode, shape = _rt_root(program, args)
    if program == "x.T" and args[0].ndim >= 2:
        return opcode, shape.replace("{1,0}", "{0,1}").replace("{2,1,0}", "{0,1,2}")
    return opcode, shape


@wrong(
    "predict_entry_root",
    why="'a lone element-wise op, a reduction or a transpose is a loop fusion too': predicts "
    "the bare op (sine, tanh, reduce, transpose) for one-op programs",
)
def rt_roots_lone_ops_unfused(program, args):
    opcode, shape = _rt_root(program, args)
    bare = {"jnp.sin(x)": "sine", "jnp.tanh(x)": "tanh", "x.sum(axis=1)": "reduce"}
    if program == "x.T" and opcode == "fusion":
        return "transpose", shape
    return bare.get(program, opcode), shape


@wrong(
    "predict_entry_root",
    why="'no braces on a scalar': writes a scalar result with an empty layout, f32[]{}, in "
    "x.max() and inside the (x, x.sum()) tuple",
)
def rt_roots_scalar_braces(program, args):
    opcode, shape = _rt_root(program, args)
    return opcode, shape.replace("[]", "[]{}")


# ---- three_texts, dump_files -------------------------------------------------------------

_RT_TEXTS = {}


@wrong(
    "three_texts",
    why="'every call compiles for the args it is given: the same f at other shapes is another "
    "program': caches the texts per function; value_and_total at (1, 4) returns the (3, 1) texts",
)
def rt_three_texts_cached_per_function(f, *args):
    if f not in _RT_TEXTS:
        lowered = jax.jit(f).lower(*args)
        _RT_TEXTS[f] = {
            "stablehlo": lowered.as_text(),
            "hlo": lowered.as_text(dialect="hlo"),
            "optimized": lowered.compile().as_text(),
        }
    return dict(_RT_TEXTS[f])


@wrong(
    "dump_files",
    why="'even of another process with higher module numbers ... not the first or last match': "
    "returns the before/after files with the highest module number in the directory",
)
def rt_dump_files_highest_number(f, args, directory):
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)

    def newest(pattern):
        matches = [p for p in glob.glob(os.path.join(directory, pattern)) if "buffer" not in p]
        matches = [p for p in matches if re.search(r"module_\d+\.", os.path.basename(p))]
        return Path(max(matches, key=lambda p: int(re.search(r"module_(\d+)", p).group(1))))

    return (
        newest("module_*.before_optimizations.txt"),
        newest("module_*.cpu_after_optimizations.txt"),
    )
