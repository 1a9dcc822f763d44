"""Plausible wrong answers to phase 3; each must be caught by the tests it names."""

import os
from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import decoy
from xla_inspect.parse import parse_hlo


@decoy("three_texts", caught_by=["test_optimized_hlo_is_fused", "test_optimized_mlp_snapshot",
                                 "test_optimized_attention_snapshot"],
       why="takes the unoptimized HLO for the optimized one")
def texts_never_compiled(f, *args):
    lowered = jax.jit(f).lower(*args)
    hlo = lowered.as_text(dialect="hlo")
    return {"stablehlo": lowered.as_text(), "hlo": hlo, "optimized": hlo}


@decoy("three_texts", caught_by=["test_stablehlo_is_the_lowered_program",
                                 "test_unoptimized_hlo_is_not_fused"],
       why="returns HLO as 'stablehlo' and the optimized text as 'hlo'")
def texts_shifted(f, *args):
    lowered = jax.jit(f).lower(*args)
    optimized = lowered.compile().as_text()
    return {"stablehlo": lowered.as_text(dialect="hlo"), "hlo": optimized, "optimized": optimized}


@decoy("dump_files", caught_by=["test_dump_holds_before_and_after"],
       why="sets XLA_FLAGS in the running process (read once at start-up: nothing is dumped)")
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
    return (found[0] if found else folder / "before_optimizations.txt",
            found[-1] if found else folder / "after_optimizations.txt")


@decoy("dump_files", caught_by=["test_dump_finds_this_compiles_files"],
       why="takes the first matching file in the directory, possibly from an earlier compile")
def dump_first_match(f, args, directory):
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    folder = Path(directory)
    return (sorted(folder.glob("*before_optimizations.txt"))[0],
            sorted(folder.glob("*after_optimizations.txt"))[0])


@decoy("dump_files", caught_by=["test_dump_holds_before_and_after"],
       why="globs *after_optimizations* and gets the buffer-assignment report")
def dump_loose_glob(f, args, directory):
    options = {"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    folder = Path(directory)
    return (next(folder.glob("*before_optimizations*")),
            sorted(folder.glob("*after_optimizations*"))[0])


@decoy("entry_parameter_layouts", caught_by=["test_parameter_layouts_of_optimized_mlp"],
       why="collects parameters of every computation, fused ones included")
def layouts_everywhere(hlo_text):
    module = parse_hlo(hlo_text)
    return [i.shape_info.layout for c in module for i in c if i.opcode == "parameter"]


@decoy("entry_parameter_layouts", caught_by=["test_parameter_layouts_by_number"],
       why="keeps the order of appearance instead of parameter(N)")
def layouts_in_text_order(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return [i.shape_info.layout for i in entry if i.opcode == "parameter"]


@decoy("entry_root", caught_by=["test_root_of_unoptimized_mlp", "test_root_of_optimized_mlp"],
       why="the ROOT of the first computation in the text")
def root_of_first_computation(hlo_text):
    root = next(iter(parse_hlo(hlo_text))).root
    return root.opcode, root.shape


@decoy("entry_root", caught_by=["test_root_of_unoptimized_mlp", "test_root_of_optimized_mlp",
                                "test_two_results_make_a_tuple_root"],
       why="shape without its layout")
def root_without_layout(hlo_text):
    root = parse_hlo(hlo_text).entry.root
    shape = root.shape_info
    parts = shape.elements or (shape,)
    texts = [f"{s.dtype}[{','.join(map(str, s.dims))}]" for s in parts]
    return root.opcode, f"({', '.join(texts)})" if shape.is_tuple else texts[0]


@decoy("fusion_contents", caught_by=["test_mlp_fusion_contents", "test_attention_fusion_contents"],
       why="counts the fusion instructions in ENTRY, not what they call")
def fusions_by_kind(hlo_text):
    contents = {}
    for i in parse_hlo(hlo_text).entry:
        if i.opcode == "fusion":
            contents.setdefault(i.attribute("kind"), Counter())[i.opcode] += 1
    return contents


@decoy("fusion_contents", caught_by=["test_mlp_fusion_contents"],
       why="pairs fusions with fused computations by order in the text")
def fusions_zipped_in_order(hlo_text):
    module = parse_hlo(hlo_text)
    fusions = [i for c in module for i in c if i.opcode == "fusion"]
    called = [c for c in module if c.name.startswith("fused_computation")]
    contents = {}
    for fusion, computation in zip(fusions, called, strict=False):
        counts = contents.setdefault(fusion.attribute("kind"), Counter())
        counts.update(i.opcode for i in computation if i.opcode != "parameter")
    return contents


@decoy("fusion_contents", caught_by=["test_mlp_fusion_contents"],
       why="counts the fused computations' parameters too")
def fusions_with_parameters(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for i in (i for c in module for i in c if i.opcode == "fusion"):
        counts = contents.setdefault(i.attribute("kind"), Counter())
        for name in i.called_computations:
            counts.update(j.opcode for j in module[name])
    return contents


@decoy("fusion_contents", caught_by=["test_attention_fusion_contents"],
       why="stops at the fused computation and misses the reducer a reduce calls")
def fusions_shallow(hlo_text):
    module = parse_hlo(hlo_text)
    contents = {}
    for i in (i for c in module for i in c if i.opcode == "fusion"):
        counts = contents.setdefault(i.attribute("kind"), Counter())
        for name in i.called_computations:
            counts.update(j.opcode for j in module[name] if j.opcode != "parameter")
    return contents


@decoy("constants", caught_by=["test_constants_inside_and_outside_fusions",
                               "test_attention_scale_is_folded"],
       why="looks only in ENTRY")
def constants_in_entry(hlo_text):
    return [(i.shape, i.payload) for i in parse_hlo(hlo_text).entry if i.opcode == "constant"]


@decoy("flops", caught_by=["test_matmul_flops_are_2mnk", "test_mlp_flops",
                           "test_transpose_costs_no_flops"],
       why="indexes cost_analysis()[0] as old docs do")
def flops_old_api(f, *args):
    return float(jax.jit(f).lower(*args).compile().cost_analysis()[0]["flops"])


@decoy("flops", caught_by=["test_transpose_costs_no_flops"],
       why="expects a 'flops' key even when XLA omits it for zero")
def flops_key_required(f, *args):
    return float(jax.jit(f).lower(*args).compile().cost_analysis()["flops"])


@decoy("flops", caught_by=["test_matmul_flops_are_2mnk", "test_mlp_flops"],
       why="reports multiply-adds (flops / 2)")
def flops_as_macs(f, *args):
    return float(jax.jit(f).lower(*args).compile().cost_analysis().get("flops", 0.0)) / 2


@decoy("entry_parameter_layouts", caught_by=["test_parameter_layouts_are_read_not_assumed"],
       why="writes the row-major layout for each parameter's rank instead of reading it")
def layouts_assumed_row_major(hlo_text):
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(i.payload))
    return ["{" + ",".join(str(d) for d in reversed(range(len(i.shape_info.dims)))) + "}"
            for i in params]


@decoy("fusion_contents", caught_by=["test_fusions_inside_a_loop_body"],
       why="looks for fusions in ENTRY only; a loop body has its own")
def fusions_in_entry_only(hlo_text):
    module = parse_hlo(hlo_text)

    def called(name):
        counts = Counter()
        for instruction in module[name]:
            if instruction.opcode != "parameter":
                counts[instruction.opcode] += 1
            for inner in instruction.called_computations:
                counts += called(inner)
        return counts

    contents = {}
    for instruction in module.entry:
        if instruction.opcode == "fusion":
            counts = contents.setdefault(instruction.attribute("kind"), Counter())
            for name in instruction.called_computations:
                counts += called(name)
    return contents


@decoy("flops", caught_by=["test_flops_are_those_of_the_compiled_module"],
       why="asks the lowered (unoptimized) module for its cost: CSE has not run yet")
def flops_before_compiling(f, *args):
    return float(jax.jit(f).lower(*args).cost_analysis().get("flops", 0.0))
