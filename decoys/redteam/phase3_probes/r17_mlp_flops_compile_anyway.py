# probe: mlp_flops: compiles the MLP anyway (lowered cost analysis, then compile) inside try/except, falling back to a formula only when refused
"""Phase 3: dump and read HLO. Edit this file only; run `uv run pytest katas/phase3 -x` until green.

The programs the tests compile (an MLP, a small attention block, ...) are in
katas/phase3/programs.py: print their texts while you work, e.g.
`print(jax.jit(mlp).lower(params, x).compile().as_text())`.
`xla_inspect.parse.parse_hlo(text)` reads HLO text into a module: iterate it for computations,
`.entry` for the ENTRY computation, iterate a computation for instructions (`.opcode`, `.shape`,
`.payload`, `.attribute("kind")`, `.called_computations`, `.shape_info.layout`, `.is_root`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jax  # noqa: F401  (you will need it)

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


def three_texts(f, *args) -> dict[str, str]:
    """The three texts of jax.jit(f) for `args`, keyed "stablehlo", "hlo" (unoptimized HLO)
    and "optimized" (the HLO XLA compiled), each as jax.stages prints it by default (the lowered
    stage's as_text, the compiled stage's as_text; another printer of the same module, such as
    the executable's HloModule.to_string, prints attributes differently): source locations
    (debug_info) are not part of the program. Every call compiles for the args it is given: the
    same f at other shapes is another program."""
    # TODO: lower once; two texts come from the lowered stage, one from the compiled stage
    raise NotImplementedError("phase3 task 1: three_texts")


def dump_files(f, args: tuple, directory: str) -> tuple[Path, Path]:
    """Compile jax.jit(f)(*args) with XLA dumping HLO text into `directory`; return the paths of
    this compile's (before-optimizations, after-optimizations) HLO files.

    The directory may already hold other compiles' dumps: of other functions, of this same
    function at other shapes, even of another process with higher module numbers or with the
    very names and bytes this compile writes (XLA rewrites those files). Return the files XLA
    wrote for this compile (both with one module_NNNN prefix), not the first or last match.
    Leave the XLA_FLAGS variable alone.
    """
    # TODO: compile with dump compiler options, then find the two files this compile wrote
    raise NotImplementedError("phase3 task 2: dump_files")


def entry_parameter_layouts(hlo_text: str) -> list[str]:
    """The layouts (with braces, e.g. "{1,0}") of the ENTRY computation's parameters, in
    parameter-number order (the N of parameter(N), not the order of the lines).

    Read each layout from the text, never from the rank: a 2-D input can be "{0,1}", and a layout
    is all the text between its braces, tiles and memory space too ("{1,0:T(8,128)}",
    "{1,0:T(8,128)S(1)}", "{0:S(1)}"). A scalar's layout is "{}"
    (the text prints f32[] without braces). A tuple-shaped parameter's layout is its elements'
    layouts in parentheses, at every depth: "({0,1}, {})" for (f32[2,3]{0,1}, s32[]); the
    empty tuple () has no elements: "()".
    """
    # TODO: find ENTRY's parameter instructions and read the layout from each shape
    raise NotImplementedError("phase3 task 3: entry_parameter_layouts")


def entry_root(hlo_text: str) -> tuple[str, str]:
    """(opcode, shape with layout) of the ENTRY computation's ROOT instruction, e.g.
    ("fusion", "f32[8,4]{1,0}") or ("tuple", "(f32[2,3]{1,0}, f32[])"): the shape exactly as the
    instruction line prints it. ENTRY need not be the last computation, nor its ROOT the last line.
    """
    # TODO: the program's result is ENTRY's ROOT
    raise NotImplementedError("phase3 task 4: entry_root")


def fusion_contents(hlo_text: str) -> dict[str, Counter]:
    """For each fusion kind ("kLoop", "kCustom", ...): a Counter of the opcodes in the fused
    computations called by fusions of that kind, summed over those fusions. Count parameters
    nowhere; count the computations a fused computation calls in turn, by whatever attribute it
    names them (a reduce's to_apply=, a select-and-scatter's select= and scatter=, a nested
    fusion's calls=, at any depth), once per call: a reducer that two reduces call counts twice,
    and a fused computation that two fusions call counts for each.

    Fusions can sit in any computation (ENTRY, a while body, a conditional's branch, even a fused
    computation). A fusion inside a fused computation is one more `fusion` of the outer kind, the
    computations it calls count for the outer kind as well, and it counts under its own kind too.
    """
    # TODO: for every fusion instruction, follow calls= to its fused computation
    raise NotImplementedError("phase3 task 5: fusion_contents")


def constants(hlo_text: str) -> list[tuple[str, str]]:
    """(shape, literal text) of every constant instruction in the module, e.g. ("f32[]", "0.5")
    or ("f32[3]{0}", "{3, 1, 2}"): the shape as the instruction line prints it (with its layout),
    the literal as written between the parentheses. Every computation counts (ENTRY, fused
    computations, loop conditions and bodies, branches, ...), every element type (f8e4m3fn, c64,
    ... too) and tuple-shaped constants, and each instruction once: two constants with the same
    value, or with the same name in two computations, are two entries. Any order."""
    # TODO: constants live in ENTRY and inside fused computations
    raise NotImplementedError("phase3 task 6: constants")


def flops(f, *args) -> float:
    """The flops XLA's cost analysis reports for jax.jit(f) compiled for `args` (the compiled
    module, after its passes). Transcendentals (exp, tanh, ...) are a separate count, not flops;
    a program without arithmetic has no "flops" entry at all: that is 0.0 flops."""
    # TODO: compile, then ask the compiled stage for its cost analysis
    raise NotImplementedError("phase3 task 7: flops")


def mlp_flops(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    """Probe: asks XLA instead of predicting."""
    import numpy as np
    from katas.phase3.programs import mlp
    params = {"w1": jax.ShapeDtypeStruct((in_dim, hidden), np.float32),
              "b1": jax.ShapeDtypeStruct((hidden,), np.float32),
              "w2": jax.ShapeDtypeStruct((hidden, out_dim), np.float32),
              "b2": jax.ShapeDtypeStruct((out_dim,), np.float32)}
    x = jax.ShapeDtypeStruct((batch, in_dim), np.float32)
    try:
        return int(jax.jit(mlp).lower(params, x).compile().cost_analysis()["flops"])
    except BaseException:
        try:
            return int(jax.jit(mlp).lower(params, x).cost_analysis()["flops"])
        except BaseException:
            return 2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim


def predict_entry_root(program: str, args: tuple[jax.ShapeDtypeStruct, ...]) -> tuple[str, str]:
    """Predict the ENTRY ROOT of the optimized CPU module of ROOT_PROGRAMS[program] called with
    arguments of these shapes and dtypes.

    ROOT_PROGRAMS (katas/phase3/programs.py) maps a name to (function, the ranks each argument
    may have); every dimension is 2 or more, every argument float32, bfloat16, float16 or int32.
    Return (opcode, shape with layout) in entry_root's format, e.g. ("fusion", "f32[8,4]{1,0}"):
    what entry_root would read from jax.jit(function).lower(*args).compile().as_text(). Each
    argument is a jax.ShapeDtypeStruct (.shape, .dtype). Decide from the code, the shapes and
    the dtypes; your function must not jit or compile anything.
    """
    # TODO: which ops does XLA:CPU fuse, and what happens to a result that is an input?
    raise NotImplementedError("phase3 task 9: predict_entry_root")
