"""Phase 4's oracles: opcode counts of HLO texts (every computation), jax.stages' own before and
after of a program, the per-pass dumps XLA writes for test-owned programs (read file by file with
xla_inspect.passes) and the pass a dump shows changing an opcode, the optimized module of a
predict case compiled here, and which of the lesson's rewrites this JAX's XLA makes.

Each function takes a program, its compiled form, a dump or a module's text, never the kata's
answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path

import jax
import numpy as np

from xla_inspect import passes
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts
from xla_inspect.stablehlo import stablehlo_op_census

from .. import versions


def counts(hlo_text: str) -> Counter:
    """Opcode counts over every instruction of every computation."""
    return opcode_counts(parse_hlo(hlo_text))


def optimized_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def stages(f: Callable, args: tuple) -> tuple[Counter, Counter]:
    """jax.stages' own before and after of ``f`` at ``args``, as counts."""
    lowered = jax.jit(f).lower(*args)
    return stablehlo_op_census(lowered.as_text()), counts(optimized_text(lowered.compile()))


def pass_dumps(base: Path, programs: dict) -> dict:
    """Per-pass dumps of the programs ({key: (program, args, ...)}), each in ``base / key``.

    "files" is the dump read file by file: xla_inspect.passes lists the per-pass files in
    sequence order, parse_hlo reads each one; nothing here parses a file name."""
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
        files = [(f.pass_name, counts(f.path.read_text())) for f in passes.pass_files(directory)]
        assert files, f"XLA wrote no per-pass files for {key} into {directory}"
        made[key] = {
            "dir": directory,
            "files": files,
            "steps": passes.pass_timeline(directory),
            "before": counts(lowered.as_text(dialect="hlo")),
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


def rewrite_holds(name: str, dtype: str) -> bool:
    """Whether this JAX's XLA makes the rewrites the lesson states for the program at this dtype
    (kata_harness.versions says what older ones do instead)."""
    if name == "v + 1.0 applied n times to x":
        return versions.holds("float-constant-adds-kept")
    if "negative" in name and dtype == "bfloat16":
        return versions.holds("bf16-double-negation-removed")
    return True
