"""Plausible wrong answers to phase 3; each must be caught by the tests it names.

Accepted variants are correct answers spelled differently; every test of their task must pass.
"""

import os
import re
from collections import Counter
from pathlib import Path

import jax
from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # no stub

from kata_harness.decoys import accepted, decoy
from xla_inspect.model import HloInstruction, Shape
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions, instructions

_STAGES = "test_three_texts_are_the_stages_of_this_program"


def _number(parameter: HloInstruction) -> int:
    """N of `parameter(N)` (the parser keeps it as the payload)."""
    assert parameter.payload is not None, parameter.name
    return int(parameter.payload)


def _cost(stage: jax.stages.Lowered | jax.stages.Compiled):
    cost = stage.cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    return cost


# --- three_texts ------------------------------------------------------------------------------


@decoy(
    "three_texts",
    caught_by=["test_optimized_hlo_is_fused", "test_optimized_mlp_snapshot"],
    why="takes the unoptimized HLO for the optimized one",
)
def texts_never_compiled(f, *args):
    lowered = jax.jit(f).lower(*args)
    hlo = lowered.as_text(dialect="hlo")
    return {"stablehlo": lowered.as_text(), "hlo": hlo, "optimized": hlo}


@decoy(
    "three_texts",
    caught_by=["test_stablehlo_is_the_lowered_program", "test_unoptimized_hlo_is_not_fused"],
    why="returns HLO as 'stablehlo' and the optimized text as 'hlo'",
)
def texts_shifted(f, *args):
    lowered = jax.jit(f).lower(*args)
    optimized = lowered.compile().as_text()
    return {"stablehlo": lowered.as_text(dialect="hlo"), "hlo": optimized, "optimized": optimized}


@decoy(
    "three_texts",
    caught_by=["test_unoptimized_hlo_is_not_fused", "test_optimized_hlo_is_fused"],
    why="swaps 'hlo' and 'optimized'",
)
def texts_swapped(f, *args):
    lowered = jax.jit(f).lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.compile().as_text(),
        "optimized": lowered.as_text(dialect="hlo"),
    }


_SEEN: dict = {}


@decoy(
    "three_texts",
    caught_by=[_STAGES],
    why="remembers the texts per function: a second call at other shapes gets the first's",
)
def texts_per_function(f, *args):
    if f not in _SEEN:
        lowered = jax.jit(f).lower(*args)
        _SEEN[f] = {
            "stablehlo": lowered.as_text(),
            "hlo": lowered.as_text(dialect="hlo"),
            "optimized": lowered.compile().as_text(),
        }
    return dict(_SEEN[f])


@accepted(
    "three_texts",
    why="compiler_ir objects printed, traced stage first; the HLO object printed with its large "
    "constants, as the lowered stage's as_text prints them (as_hlo_text() alone elides them)",
)
def texts_from_compiler_ir(f, *args):
    lowered = jax.jit(f).trace(*args).lower()
    hlo, optimized = lowered.compiler_ir("hlo"), lowered.compile().as_text()
    assert hlo is not None and optimized is not None, "this backend cannot print its programs"
    return {
        "stablehlo": str(lowered.compiler_ir("stablehlo")),
        "hlo": hlo.as_hlo_text(print_large_constants=True),
        "optimized": optimized,
    }


@decoy(
    "three_texts",
    caught_by=["test_three_texts_of_drawn_programs"],
    why="prints the compiled module itself with its large constants in full; the compiled "
    "stage's default print (as_text) elides them as {...}",
)
def texts_optimized_large_constants(f, *args):
    lowered = jax.jit(f).lower(*args)
    compiled = lowered.compile()
    executable = compiled.runtime_executable()
    assert executable is not None, "this backend has no executable to print"
    module = executable.hlo_modules()[0]
    options = _hlo.HloPrintOptions()
    options.print_large_constants = True
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": module.to_string(options),
    }


# --- dump_files -------------------------------------------------------------------------------

_SAME_AGAIN = "test_dump_of_the_same_function_again"


@decoy(
    "dump_files",
    caught_by=["test_dump_holds_before_and_after"],
    why="sets XLA_FLAGS in the running process (read once at start-up: nothing is dumped)",
)
def dump_through_env(f, args, directory):
    saved = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={directory} --xla_dump_hlo_as_text"
    try:
        jax.jit(f).lower(*args).compile()
    finally:  # restored so the decoy cannot leak into other tests; it fails on the missing files
        if saved is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = saved
    folder = Path(directory)
    found = sorted(folder.glob("*.txt"))
    return (
        found[0] if found else folder / "before_optimizations.txt",
        found[-1] if found else folder / "after_optimizations.txt",
    )


@decoy(
    "dump_files",
    caught_by=["test_dump_finds_this_compiles_files", _SAME_AGAIN],
    why="takes the first matching file in the directory, possibly from an earlier compile",
)
def dump_first_match(f, args, directory):
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    folder = Path(directory)
    return (
        sorted(folder.glob("*before_optimizations.txt"))[0],
        sorted(folder.glob("*after_optimizations.txt"))[0],
    )


@decoy(
    "dump_files",
    caught_by=[_SAME_AGAIN],
    why="takes the highest module number: another process's dump can be higher",
)
def dump_last_sorted(f, args, directory):
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    folder = Path(directory)
    return (
        sorted(folder.glob("*.before_optimizations.txt"))[-1],
        sorted(folder.glob("*_after_optimizations.txt"))[-1],
    )


@decoy(
    "dump_files",
    caught_by=[_SAME_AGAIN],
    why="finds the files by the function's name: an earlier compile of it has the same name",
)
def dump_by_function_name(f, args, directory):
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    folder = Path(directory)
    name = f"jit_{f.__name__}"
    return (
        next(
            p
            for p in sorted(folder.iterdir())
            if p.name.endswith(f"{name}.before_optimizations.txt")
        ),
        next(
            p
            for p in sorted(folder.iterdir())
            if p.name.endswith(f"{name}.cpu_after_optimizations.txt")
        ),
    )


@decoy(
    "dump_files",
    caught_by=["test_dump_holds_before_and_after"],
    why="globs *after_optimizations* and gets the buffer-assignment report",
)
def dump_loose_glob(f, args, directory):
    folder = Path(directory)
    existing = set(folder.iterdir()) if folder.is_dir() else set()
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    new = sorted(set(folder.iterdir()) - existing)
    return (
        next(p for p in new if "before_optimizations" in p.name),
        next(p for p in new if "after_optimizations-" in p.name),
    )


_DUMPED = re.compile(r"(module_\d+\..+)\.before_optimizations\.txt")


@accepted(
    "dump_files",
    why="the before file this compile wrote (new or rewritten) names the module; the after file "
    "shares it",
)
def dump_by_prefix(f, args, directory):
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    existing = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(folder), "xla_dump_hlo_as_text": True}
    )
    prefix = next(
        m.group(1)
        for p in folder.iterdir()
        if existing.get(p.name) != p.stat().st_mtime_ns and (m := _DUMPED.fullmatch(p.name))
    )
    after = next(
        p
        for p in folder.iterdir()
        if re.fullmatch(re.escape(prefix) + r"\.\w*after_optimizations\.txt", p.name)
    )
    return folder / f"{prefix}.before_optimizations.txt", after


# --- entry_parameter_layouts ------------------------------------------------------------------

_LAYOUTS_XLA = "test_parameter_layouts_as_xla_reads_them"
_SCALAR_TUPLE = "test_parameter_layouts_of_scalar_and_tuple_parameters"


@decoy(
    "entry_parameter_layouts",
    caught_by=["test_parameter_layouts_of_optimized_mlp", _LAYOUTS_XLA, _SCALAR_TUPLE],
    why="collects parameters of every computation, fused ones included",
)
def layouts_everywhere(hlo_text):
    module = parse_hlo(hlo_text)
    return [i.shape_info.layout or "{}" for c in module for i in c if i.opcode == "parameter"]


@decoy(
    "entry_parameter_layouts",
    caught_by=["test_parameter_layouts_by_number", _LAYOUTS_XLA, _SCALAR_TUPLE],
    why="keeps the order of appearance instead of parameter(N)",
)
def layouts_in_text_order(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return [i.shape_info.layout or "{}" for i in entry if i.opcode == "parameter"]


@decoy(
    "entry_parameter_layouts",
    caught_by=["test_parameter_layouts_are_read_not_assumed", _LAYOUTS_XLA, _SCALAR_TUPLE],
    why="writes the row-major layout for each parameter's rank instead of reading it",
)
def layouts_assumed_row_major(hlo_text):
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=_number)
    return [
        "{" + ",".join(str(d) for d in reversed(range(len(i.shape_info.dims)))) + "}"
        for i in params
    ]


@decoy(
    "entry_parameter_layouts",
    caught_by=["test_parameter_layouts_are_read_not_assumed", _LAYOUTS_XLA, _SCALAR_TUPLE],
    why="a scalar prints no braces, so it gets an empty string instead of {}",
)
def layouts_blank_for_scalars(hlo_text):
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=_number)
    return [i.shape_info.layout or "" for i in params]


_HEADER_LAYOUT = re.compile(r"\{[0-9,]*\}")


@decoy(
    "entry_parameter_layouts",
    caught_by=["test_parameter_layouts_are_read_not_assumed", _LAYOUTS_XLA, _SCALAR_TUPLE],
    why="reads the braces of entry_computation_layout: scalars have none, tuples flatten",
)
def layouts_from_header(hlo_text):
    header = parse_hlo(hlo_text).attributes["entry_computation_layout"]
    inputs = header[header.index("(") + 1 : header.index(")->")]
    return _HEADER_LAYOUT.findall(inputs)


def _layout_text(shape: Shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_layout_text(e) for e in shape.elements) + ")"
    return shape.layout if shape.layout is not None else "{}"


@accepted("entry_parameter_layouts", why="by parameter number through a dict, layout as printed")
def layouts_by_number(hlo_text):
    by_number = {_number(i): i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"}
    return [_layout_text(by_number[n].shape_info) for n in sorted(by_number)]


def _layout_if_elements(shape: Shape) -> str:
    if shape.elements:
        return "(" + ", ".join(_layout_if_elements(e) for e in shape.elements) + ")"
    return shape.layout if shape.layout is not None else "{}"


@decoy(
    "entry_parameter_layouts",
    caught_by=["test_parameter_layouts_of_drawn_modules"],
    why="tells a tuple by its elements (`if shape.elements:`): the empty tuple `()` has none, "
    "so it reads as a scalar, '{}'",
)
def layouts_empty_tuple_as_scalar(hlo_text):
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=_number)
    return [_layout_if_elements(i.shape_info) for i in params]


# --- entry_root -------------------------------------------------------------------------------

_ROOT_XLA = "test_root_as_xla_reads_it"


@decoy(
    "entry_root",
    caught_by=["test_root_of_unoptimized_mlp", "test_root_of_optimized_mlp", _ROOT_XLA],
    why="the ROOT of the first computation in the text",
)
def root_of_first_computation(hlo_text):
    root = next(iter(parse_hlo(hlo_text))).root
    return root.opcode, root.shape


@decoy(
    "entry_root",
    caught_by=[_ROOT_XLA],
    why="the ROOT of the last computation: JAX prints ENTRY last, a module need not",
)
def root_of_last_computation(hlo_text):
    root = list(parse_hlo(hlo_text))[-1].root
    return root.opcode, root.shape


@decoy(
    "entry_root",
    caught_by=[_ROOT_XLA],
    why="ENTRY's last instruction line, which need not be the ROOT",
)
def root_last_line(hlo_text):
    last = list(parse_hlo(hlo_text).entry)[-1]
    return last.opcode, last.shape


@decoy(
    "entry_root",
    caught_by=[
        "test_root_of_unoptimized_mlp",
        "test_root_of_optimized_mlp",
        "test_two_results_make_a_tuple_root",
        _ROOT_XLA,
        "test_root_shape_is_the_programs_result",
    ],
    why="shape without its layout",
)
def root_without_layout(hlo_text):
    root = parse_hlo(hlo_text).entry.root
    shape = root.shape_info
    parts = shape.elements or (shape,)
    texts = [f"{s.dtype}[{','.join(map(str, s.dims))}]" for s in parts]
    return root.opcode, f"({', '.join(texts)})" if shape.is_tuple else texts[0]


@accepted("entry_root", why="the instruction marked ROOT among ENTRY's instructions")
def root_marked(hlo_text):
    root = next(i for i in parse_hlo(hlo_text).entry if i.is_root)
    return root.opcode, root.shape_info.text


# --- fusion_contents --------------------------------------------------------------------------

_LIBRARY = "test_fusion_contents_as_xla_calls_them"
_NESTED = "test_nested_fusion_counts_for_both_kinds"


def _reached(module, name: str) -> Counter:
    counts = Counter()
    for instruction in module[name]:
        if instruction.opcode != "parameter":
            counts[instruction.opcode] += 1
        for inner in instruction.called_computations:
            counts += _reached(module, inner)
    return counts


@decoy(
    "fusion_contents",
    caught_by=["test_mlp_fusion_contents", "test_attention_fusion_contents", _LIBRARY],
    why="counts the fusion instructions in ENTRY, not what they call",
)
def fusions_by_kind(hlo_text):
    contents = {}
    for i in parse_hlo(hlo_text).entry:
        if i.opcode == "fusion":
            contents.setdefault(i.attribute("kind"), Counter())[i.opcode] += 1
    return contents


@decoy(
    "fusion_contents",
    caught_by=["test_mlp_fusion_contents", _LIBRARY],
    why="pairs fusions with fused computations by order in the text",
)
def fusions_zipped_in_order(hlo_text):
    module = parse_hlo(hlo_text)
    fusion_list = [i for c in module for i in c if i.opcode == "fusion"]
    called = [c for c in module if c.name.startswith("fused_computation")]
    contents = {}
    for fusion, computation in zip(fusion_list, called, strict=False):
        counts = contents.setdefault(fusion.attribute("kind"), Counter())
        counts.update(i.opcode for i in computation if i.opcode != "parameter")
    return contents


@decoy(
    "fusion_contents",
    caught_by=["test_mlp_fusion_contents", _LIBRARY, _NESTED],
    why="counts the fused computations' parameters too",
)
def fusions_with_parameters(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for i in (i for c in module for i in c if i.opcode == "fusion"):
        counts = contents.setdefault(i.attribute("kind"), Counter())
        for name in i.called_computations:
            counts.update(j.opcode for j in module[name])
    return contents


@decoy(
    "fusion_contents",
    caught_by=[_LIBRARY, _NESTED],
    why="stops at the fused computation and misses the reducer a reduce calls",
)
def fusions_shallow(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for i in (i for c in module for i in c if i.opcode == "fusion"):
        counts = contents.setdefault(i.attribute("kind"), Counter())
        for name in i.called_computations:
            counts.update(j.opcode for j in module[name] if j.opcode != "parameter")
    return contents


@decoy(
    "fusion_contents",
    caught_by=["test_fusions_inside_loop_and_branch_bodies", _LIBRARY, _NESTED],
    why="looks for fusions in ENTRY only; loop and branch bodies have their own",
)
def fusions_in_entry_only(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for instruction in module.entry:
        if instruction.opcode == "fusion":
            counts = contents.setdefault(instruction.attribute("kind"), Counter())
            for name in instruction.called_computations:
                counts += _reached(module, name)
    return contents


@decoy(
    "fusion_contents",
    caught_by=["test_mlp_fusion_contents", _LIBRARY],
    why="keeps the last fusion of each kind instead of summing over them",
)
def fusions_last_wins(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for instruction in (i for c in module for i in c if i.opcode == "fusion"):
        contents[instruction.attribute("kind")] = sum(
            (_reached(module, name) for name in instruction.called_computations), Counter()
        )
    return contents


@decoy(
    "fusion_contents",
    caught_by=[_LIBRARY, _NESTED],
    why="skips fused computations when looking for fusions: a nested fusion loses its kind",
)
def fusions_not_nested(hlo_text):
    module = parse_hlo(hlo_text)
    fused = {
        name for c in module for i in c if i.opcode == "fusion" for name in i.called_computations
    }
    contents = {}
    for computation in module:
        if computation.name in fused:
            continue
        for instruction in computation:
            if instruction.opcode == "fusion":
                counts = contents.setdefault(instruction.attribute("kind"), Counter())
                for name in instruction.called_computations:
                    counts += _reached(module, name)
    return contents


_FUSION_VARIANTS = "test_fusion_contents_hold_under_renaming_and_reordering"


@decoy(
    "fusion_contents",
    caught_by=[_FUSION_VARIANTS],
    why="takes a reduce's reducer (a computation a fused computation calls) to be the computation "
    "printed just above it, as XLA prints them; another order XLA reads breaks the pairing",
)
def fusions_callee_printed_above(hlo_text):
    module = parse_hlo(hlo_text)
    order = [c.name for c in module]

    def reached(index: int) -> Counter:
        counts, above = Counter(), index
        for instruction in module[order[index]]:
            if instruction.opcode != "parameter":
                counts[instruction.opcode] += 1
            for _ in instruction.called_computations:
                above -= 1
                counts += reached(above)
        return counts

    contents = {}
    for instruction in (i for c in module for i in c if i.opcode == "fusion"):
        counts = contents.setdefault(instruction.attribute("kind"), Counter())
        for name in instruction.called_computations:
            counts += reached(order.index(name))
    return contents


@decoy(
    "fusion_contents",
    caught_by=[_LIBRARY, "test_branches_multi_output_and_shared_reducer"],
    why="xla_inspect.query.fusions: each computation a fusion reaches counts once, so a reducer "
    "called by two reduces of one fused computation counts once",
)
def fusions_from_library(hlo_text):
    contents = {}
    for fusion in fusions(parse_hlo(hlo_text)):
        counts = contents.setdefault(fusion.kind, Counter())
        counts.update({op: n for op, n in fusion.opcodes.items() if op != "parameter"})
    return contents


@accepted("fusion_contents", why="a work list of (computation name) per call, no recursion")
def fusions_by_work_list(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for instruction in (i for c in module for i in c if i.opcode == "fusion"):
        counts = contents.setdefault(instruction.attribute("kind"), Counter())
        pending = list(instruction.called_computations)
        while pending:
            for inner in module[pending.pop()]:
                if inner.opcode != "parameter":
                    counts[inner.opcode] += 1
                pending.extend(inner.called_computations)
    return contents


# --- constants --------------------------------------------------------------------------------

_CONSTANTS_XLA = "test_constants_as_xla_counts_them"
_DTYPES = "test_constants_of_every_dtype_and_computation"


@decoy(
    "constants",
    caught_by=[
        "test_constants_inside_and_outside_fusions",
        "test_attention_scale_is_folded",
        _CONSTANTS_XLA,
        _DTYPES,
    ],
    why="looks only in ENTRY",
)
def constants_in_entry(hlo_text):
    return [(i.shape, i.payload) for i in parse_hlo(hlo_text).entry if i.opcode == "constant"]


@decoy(
    "constants",
    caught_by=[_CONSTANTS_XLA, _DTYPES],
    why="a set of distinct constants: two instructions with the same value count once",
)
def constants_distinct(hlo_text):
    return sorted(
        {(i.shape, i.payload) for c in parse_hlo(hlo_text) for i in c if i.opcode == "constant"}
    )


@decoy(
    "constants",
    caught_by=["test_constants_inside_and_outside_fusions", _CONSTANTS_XLA, _DTYPES],
    why="shape without its layout",
)
def constants_without_layout(hlo_text):
    found = []
    for i in (i for c in parse_hlo(hlo_text) for i in c if i.opcode == "constant"):
        shape = i.shape_info
        found.append((f"{shape.dtype}[{','.join(map(str, shape.dims))}]", i.payload))
    return found


@decoy("constants", caught_by=[_CONSTANTS_XLA, _DTYPES], why="only floating-point constants")
def constants_float_only(hlo_text):
    return [
        (i.shape, i.payload)
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "constant" and i.shape.startswith(("f", "bf"))
    ]


@decoy(
    "constants",
    caught_by=[_CONSTANTS_XLA],
    why="ENTRY and fused computations only: loop conditions and other computations missed",
)
def constants_entry_and_fusions(hlo_text):
    module = parse_hlo(hlo_text)
    fused = {
        name for c in module for i in c if i.opcode == "fusion" for name in i.called_computations
    }
    return [
        (i.shape, i.payload)
        for c in module
        if c.is_entry or c.name in fused
        for i in c
        if i.opcode == "constant"
    ]


_CONSTANT_LINE = re.compile(r"= (\S+) constant\((.*)\)")


@decoy(
    "constants",
    caught_by=[_DTYPES],
    why="a greedy regex: the literal runs to the line's last parenthesis (metadata included)",
)
def constants_greedy_literal(hlo_text):
    return [(m[1], m[2]) for m in _CONSTANT_LINE.finditer(hlo_text)]


@decoy(
    "constants",
    caught_by=["test_constant_literals_as_xla_prints_them"],
    why="reads each literal from XLA's parse printed with its large constants in full: a literal "
    "the text elides as {...} comes back as the values XLA's parser made up for it",
)
def constants_reprinted_in_full(hlo_text):
    module = _hlo.hlo_module_from_text(hlo_text)
    options = _hlo.HloPrintOptions()
    options.print_large_constants = True
    return [
        (i.shape, i.payload)
        for c in parse_hlo(module.to_string(options))
        for i in c
        if i.opcode == "constant"
    ]


@accepted("constants", why="xla_inspect.query.instructions over the module")
def constants_from_library(hlo_text):
    return [
        (i.shape, i.payload) for _, i in instructions(parse_hlo(hlo_text)) if i.opcode == "constant"
    ]


# --- flops ------------------------------------------------------------------------------------

_COMPILED = "test_flops_are_those_of_the_compiled_module"


@decoy(
    "flops",
    caught_by=["test_matmul_flops_are_2mnk", "test_transcendentals_are_not_flops"],
    why="reports multiply-adds (flops / 2)",
)
def flops_as_macs(f, *args):
    return float(_cost(jax.jit(f).lower(*args).compile()).get("flops", 0.0)) / 2


@decoy(
    "flops",
    caught_by=[_COMPILED],
    why="asks the lowered (unoptimized) module for its cost: CSE has not run yet",
)
def flops_before_compiling(f, *args):
    return float(_cost(jax.jit(f).lower(*args)).get("flops", 0.0))


@decoy(
    "flops",
    caught_by=["test_transcendentals_are_not_flops"],
    why="adds the transcendentals to the flops",
)
def flops_with_transcendentals(f, *args):
    cost = _cost(jax.jit(f).lower(*args).compile())
    return float(cost.get("flops", 0.0) + cost.get("transcendentals", 0.0))


_FLOPS_SEEN: dict = {}


@decoy(
    "flops",
    caught_by=["test_matmul_flops_are_2mnk"],
    why="remembers the cost per function: the same matmul at other shapes costs the same",
)
def flops_per_function(f, *args):
    if f not in _FLOPS_SEEN:
        cost = _cost(jax.jit(f).lower(*args).compile())
        _FLOPS_SEEN[f] = float(cost.get("flops", 0.0))
    return _FLOPS_SEEN[f]


@accepted("flops", why="the traced stage, and a cost_analysis() that may be a one-item list")
def flops_traced(f, *args):
    cost = _cost(jax.jit(f).trace(*args).lower().compile())
    if isinstance(cost, list):
        cost = cost[0]
    return float(cost["flops"]) if "flops" in cost else 0.0


# ------------------------------------------------------------------------------------ mlp_flops


@decoy("mlp_flops", caught_by=["test_mlp_flops_predicted"], why="counts the two matmuls only")
def flops_dots_only(batch, in_dim, hidden, out_dim):
    return 2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim


@decoy(
    "mlp_flops",
    caught_by=["test_mlp_flops_predicted"],
    why="one flop per multiply-add instead of two",
)
def flops_macs(batch, in_dim, hidden, out_dim):
    return batch * in_dim * hidden + batch * hidden * out_dim + 2 * batch * hidden + batch * out_dim


@decoy(
    "mlp_flops",
    caught_by=["test_mlp_flops_predicted"],
    why="counts the bias adds but takes relu for free",
)
def flops_free_relu(batch, in_dim, hidden, out_dim):
    return 2 * batch * hidden * (in_dim + out_dim) + batch * hidden + batch * out_dim


@decoy(
    "mlp_flops",
    caught_by=["test_mlp_flops_predicted"],
    why="compiles the MLP and reads cost_analysis instead of predicting",
)
def flops_measured(batch, in_dim, hidden, out_dim):
    import numpy as np

    def mlp(p, x):
        return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    params = {
        "w1": np.ones((in_dim, hidden), np.float32),
        "b1": np.ones(hidden, np.float32),
        "w2": np.ones((hidden, out_dim), np.float32),
        "b2": np.ones(out_dim, np.float32),
    }
    x = np.ones((batch, in_dim), np.float32)
    cost = jax.jit(mlp).lower(params, x).compile().cost_analysis()
    return int(cost["flops"]) if cost else 0


_LISTED_FLOPS = {
    (8, 16, 32, 4): 10784,
    (2, 2, 2, 2): 44,
    (3, 5, 7, 2): 342,
    (64, 3, 2, 9): 3904,
    (5, 2, 40, 3): 2415,
}


@decoy(
    "mlp_flops",
    caught_by=["test_mlp_flops_predicted_on_fresh_shapes"],
    why="hard-codes the listed shapes' flops (copied from failure messages); any other shape "
    "gets the two matmuls only",
)
def flops_listed_shapes(batch, in_dim, hidden, out_dim):
    shape = (batch, in_dim, hidden, out_dim)
    if shape in _LISTED_FLOPS:
        return _LISTED_FLOPS[shape]
    return 2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim


@accepted("mlp_flops", why="factored per row of x: each row costs the same")
def flops_per_row(batch, in_dim, hidden, out_dim):
    return batch * (2 * hidden * (in_dim + out_dim) + 2 * hidden + out_dim)


# ---- predict_entry_root --------------------------------------------------------------------------

_XLA_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}
_LISTED = "test_predict_entry_root_of_the_listed_cases"
_FRESH = "test_predict_entry_root_on_fresh_cases"


def _row_major(dtype: str, dims: tuple[int, ...], names: dict[str, str] = _XLA_NAMES) -> str:
    layout = "{" + ",".join(str(d) for d in range(len(dims) - 1, -1, -1)) + "}" if dims else ""
    return f"{names[dtype]}[{','.join(map(str, dims))}]{layout}"


def _result(program: str, args) -> tuple[str, str, tuple[int, ...]]:
    """(opcode, result dtype, result dims) of one-result programs, by the rule."""
    x = args[0]
    dims, dtype = tuple(x.shape), str(x.dtype)
    unchanged = program == "x itself" or (program == "x.T" and x.ndim == 1)
    if unchanged or (program == "x.astype(jnp.bfloat16)" and dtype == "bfloat16"):
        return "copy", dtype, dims
    if program.startswith("x.reshape"):
        middle = x.size // (2 * dims[-1])
        return "fusion" if middle == 1 else "copy", dtype, (2, middle, dims[-1])
    if program in ("jnp.sin(x)", "jnp.tanh(x)") and dtype == "int32":
        return "fusion", "float32", dims
    if program == "x.astype(jnp.bfloat16)":
        return "fusion", "bfloat16", dims
    reduced = {"x.sum(axis=1)": dims[:1] + dims[2:], "x.max()": (), "x.T": dims[::-1]}
    return "fusion", dtype, reduced.get(program, dims)


@accepted("predict_entry_root", why="the result's opcode, dtype and dims first, printed after")
def roots_by_rule(program, args):
    x = args[0]
    own = _row_major(str(x.dtype), tuple(x.shape))
    if program == "(v, x)":
        return "tuple", f"({_row_major(str(args[1].dtype), tuple(args[1].shape))}, {own})"
    if program == "(x * 2, x + 1)":
        return "tuple", f"({own}, {own})"
    if program == "(x, x.sum())":
        return "tuple", f"({own}, {_row_major(str(x.dtype), ())})"
    opcode, dtype, dims = _result(program, args)
    return opcode, _row_major(dtype, dims)


@decoy(
    "predict_entry_root",
    caught_by=[_LISTED, _FRESH],
    why="a result that is an input is the parameter itself, a reshape of it a reshape",
)
def roots_without_copies(program, args):
    opcode, shape = roots_by_rule(program, args)
    if opcode == "copy":
        return ("reshape" if program.startswith("x.reshape") else "parameter"), shape
    return opcode, shape


@decoy(
    "predict_entry_root",
    caught_by=[_LISTED, _FRESH],
    why="a transpose only flips the layout of the same data, and a lone op is not fused",
)
def roots_transpose_by_layout(program, args):
    opcode, shape = roots_by_rule(program, args)
    if program == "x.T" and args[0].ndim > 1:
        return "transpose", shape.replace("{1,0}", "{0,1}").replace("{2,1,0}", "{0,1,2}")
    return ("sine" if program == "jnp.sin(x)" else opcode), shape


@decoy(
    "predict_entry_root",
    caught_by=[_LISTED, _FRESH],
    why="writes shapes as jnp prints dtypes, with a layout on the scalar too",
)
def roots_jnp_spelling(program, args):
    opcode, shape = roots_by_rule(program, args)
    return opcode, shape.replace("s32", "i32").replace("[]", "[]{}")


@decoy(
    "predict_entry_root",
    caught_by=["test_predict_entry_root_does_not_compile"],
    why="measures instead of predicting: compiles the program for zeros of the given shapes",
)
def roots_measured(program, args):
    import numpy as np

    from katas.phase3.programs import ROOT_PROGRAMS

    fn, _ = ROOT_PROGRAMS[program]
    text = jax.jit(fn).lower(*(np.zeros(a.shape, a.dtype) for a in args)).compile().as_text()
    assert text is not None, "this backend does not print its executable"
    root = parse_hlo(text).entry.root
    return root.opcode, root.shape


_OLD_TABLE = {
    "x * 2 + 1": ("fusion", "f32[8,4]{1,0}"),
    "jnp.sin(x)": ("fusion", "f32[3]{0}"),
    "jnp.tanh(x)": ("fusion", "f32[2,3,4]{2,1,0}"),
    "x + 1": ("fusion", "s32[6]{0}"),
    "x.astype(jnp.bfloat16)": ("fusion", "bf16[8,4]{1,0}"),
    "x.sum(axis=1)": ("fusion", "f32[8]{0}"),
    "x.max()": ("fusion", "f32[]"),
    "x.T": ("fusion", "f32[4,8]{1,0}"),
    "x itself": ("copy", "f32[8,4]{1,0}"),
    "x.reshape(2, -1, x.shape[-1])": ("copy", "f32[2,4,4]{2,1,0}"),
    "(x * 2, x + 1)": ("tuple", "(f32[2,5]{1,0}, f32[2,5]{1,0})"),
    "(x, x.sum())": ("tuple", "(f32[8,4]{1,0}, f32[])"),
    "(v, x)": ("tuple", "(f32[3]{0}, f32[8,4]{1,0})"),
}


@decoy(
    "predict_entry_root",
    caught_by=[_FRESH],
    why="memorised the table of the listed cases: one answer per program, whatever its arguments",
)
def roots_memorised_table(program, args):
    return _OLD_TABLE[program]


@decoy(
    "predict_entry_root",
    caught_by=[_FRESH],
    why="right on the listed cases, which are float32 and int32 only: spells every other dtype "
    "f32 (a table of the two dtypes it saw, f32 the default)",
)
def roots_two_dtypes_known(program, args):
    opcode, shape = roots_by_rule(program, args)
    return opcode, shape.replace("bf16", "f32").replace("f16", "f32")


@decoy(
    "predict_entry_root",
    caught_by=[_FRESH],
    why="right on the listed cases, which are rank 2: sums over the last axis instead of axis "
    "1, and takes x.T of a vector for a transpose fusion",
)
def roots_rank_two_only(program, args):
    x = args[0]
    if program == "x.sum(axis=1)":
        return "fusion", _row_major(str(x.dtype), tuple(x.shape)[:-1])
    if program == "x.T" and x.ndim == 1:
        return "fusion", _row_major(str(x.dtype), tuple(x.shape))
    return roots_by_rule(program, args)
