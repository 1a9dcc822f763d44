"""Phase 4's oracles: opcode counts of HLO texts (every computation), jax.stages' own before and
after of a program, the per-pass dumps XLA writes for test-owned programs (read file by file with
xla_inspect.passes) and the pass a dump shows changing an opcode, the optimized module of a
predict case compiled here, which of the lesson's rewrites this JAX's XLA makes, the types a
program's stages take and return, and which inputs a jaxpr transposes.

Each function takes a program, its compiled form, a dump or a module's text, never the kata's
answer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jax
import numpy as np

from xla_inspect import passes
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts
from xla_inspect.stablehlo import iter_operations, stablehlo_op_census

from .. import versions

_LAYOUT = re.compile(r"\{[^{}]*\}")
# The first line of a lowered module: `module @jit_f attributes {...}` (a name with characters
# MLIR's bare identifiers do not allow is quoted: `module @"jit_<lambda>"`).
_SHLO_MODULE = re.compile(r'^module @("(?:[^"\\]|\\.)*"|[^\s{]+)', re.MULTILINE)


def counts(hlo_text: str) -> Counter:
    """Opcode counts over every instruction of every computation."""
    return opcode_counts(parse_hlo(hlo_text))


def optimized_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def stages(f: Callable, args: tuple) -> tuple[Counter, Counter, tuple[str, str]]:
    """jax.stages' own before and after of ``f`` at ``args``, as counts, and their signature."""
    lowered = jax.jit(f).lower(*args)
    before, after = lowered.as_text(), optimized_text(lowered.compile())
    return stablehlo_op_census(before), counts(after), signature(before, after)


def signature(before: str, after: str) -> tuple[str, str]:
    """The module's name and the types StableHLO's `main` takes and returns, and the optimized
    module's name and the shapes its ENTRY takes (parameters in order) and returns, layouts left
    out: what a stage of other arguments (a scalar made a vector, a Python float's weak type
    lost, an unused argument kept) or of another function (jax.jit names the module after it)
    changes even where opcode counts do not."""
    found = _SHLO_MODULE.search(before)
    shlo_name = found.group(1) if found else "(no module line)"
    main = [
        str(op.attributes["function_type"])
        for op in iter_operations(before)
        if op.name == "func.func" and str(op.attributes["sym_name"]) == '"main"'
    ]
    module = parse_hlo(after)
    entry = module.entry
    parameters = sorted(
        (int(i.payload or 0), _LAYOUT.sub("", i.shape))
        for i in entry.instructions
        if i.opcode == "parameter"
    )
    root = next(_LAYOUT.sub("", i.shape) for i in entry.instructions if i.is_root)
    entry_types = f"({', '.join(shape for _, shape in parameters)}) -> {root}"
    return f"module @{shlo_name}: {' '.join(main)}", f"HloModule {module.name}: {entry_types}"


def pass_dumps(base: Path, programs: dict) -> dict:
    """Per-pass dumps of the programs ({key: (program, args, ...)}), each in ``base / key``.

    "files" is the dump read file by file: xla_inspect.passes lists the per-pass files in
    sequence order, parse_hlo reads each one; nothing here parses a file name. "before" is the
    module XLA starts from (its own before_optimizations file), "after" the one it compiled."""
    made = {}
    for key, (program, args, _, _) in programs.items():
        directory = base / key
        directory.mkdir()
        lowered = jax.jit(program).lower(*args)
        compiled = lowered.compile(
            compiler_options={
                "xla_dump_to": str(directory),
                "xla_dump_hlo_as_text": True,
                "xla_dump_hlo_pass_re": ".*",
            }
        )
        found = passes.pass_files(directory)
        start = found[0].path.with_name(f"{found[0].module_key}.before_optimizations.txt")
        made[key] = {
            "dir": directory,
            "files": [(f.pass_name, counts(f.path.read_text())) for f in found],
            "steps": passes.pass_timeline(directory),
            "before": counts(start.read_text()),
            "after": counts(optimized_text(compiled)),
        }
    return made


def culprit(dump, opcode, finder) -> str | None:
    """The pass that changed `opcode`, as xla_inspect.passes reads it off the dump."""
    step = finder(dump["steps"], opcode)
    return step.pass_name if step else None


@cache
def case_module(program: Callable, shape: tuple[int, ...], dtype: str, n: int):
    """xla_inspect's parse of the optimized module of one program at x of this shape and dtype."""
    x = np.zeros(shape, jax.numpy.dtype(dtype))
    return parse_hlo(optimized_text(jax.jit(program, static_argnums=1).lower(x, n).compile()))


def transposed_inputs(jaxpr: Any) -> set[int]:
    """The positions of the jaxpr's inputs that a `transpose` equation takes as its operand
    (the input itself, not a value computed from it), inside nested jaxprs (jit, custom rules)
    too."""
    open_jaxpr = jaxpr if hasattr(jaxpr, "invars") else jaxpr.jaxpr
    return _transposed(open_jaxpr, dict(enumerate(open_jaxpr.invars)))


def _transposed(jaxpr: Any, inputs: dict[int, Any]) -> set[int]:
    position = {id(var): index for index, var in inputs.items()}
    found: set[int] = set()
    for eqn in jaxpr.eqns:
        operands = {i: position.get(id(v)) for i, v in enumerate(eqn.invars)}
        if eqn.primitive.name == "transpose" and operands[0] is not None:
            found.add(operands[0])
        for value in eqn.params.values():
            inner: Any = value if hasattr(value, "invars") else getattr(value, "jaxpr", None)
            if hasattr(inner, "eqns") and len(inner.invars) == len(eqn.invars):
                mapped = {p: inner.invars[i] for i, p in operands.items() if p is not None}
                found |= _transposed(inner, mapped)
    return found


def rewrite_holds(name: str, dtype: str) -> bool:
    """Whether this JAX's XLA makes the rewrites the lesson states for the program at this dtype
    (kata_harness.versions says what older ones do instead)."""
    if name == "v + 1.0 applied n times to x":
        return versions.holds("float-constant-adds-kept")
    if "negative" in name and dtype == "bfloat16":
        return versions.holds("bf16-double-negation-removed")
    return True
