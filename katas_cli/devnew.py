"""`katas dev new phaseN`: the files of a new phase, with one worked task to copy from.

Writes the stub, tasks.toml, tests, programs, README lesson, reference and decoys of one task
(`count_adds`: how many `add` instructions XLA's optimized HLO of a program has) so that the
phase runs at once: the reference passes, the stub fails through its NotImplementedError, and
`katas dev check` names what is still missing (a second decoy, more tests, more tasks). Refuses to
touch a phase that has any of these files already.
"""

from __future__ import annotations

from pathlib import Path

from kata_harness import curriculum

from .errors import RunError

STUB = '''"""Phase {n}: TITLE. Edit this file only; the lesson is README.md next to it."""

from __future__ import annotations

from collections.abc import Callable


def count_adds(fn: Callable, *args) -> int:
    """How many `add` instructions the optimized HLO of `fn(*args)` has, in every computation
    (fused computations included)."""
    # TODO: compile fn for args and count the adds XLA kept
    raise NotImplementedError("phase{n} task 1: count_adds")
'''

REFERENCE = '''"""Phase {n} reference solutions."""

from __future__ import annotations

from collections.abc import Callable

import jax

from xla_inspect import parse_hlo
from xla_inspect.query import opcode_counts


def count_adds(fn: Callable, *args) -> int:
    # the optimized text is what ran; counting by opcode sees into every fused computation
    text = jax.jit(fn).lower(*args).compile().as_text()
    return opcode_counts(parse_hlo(text)).get("add", 0)
'''

TASKS = """title = "TITLE"

[[task]]
function = "count_adds"
title = "how many adds XLA kept"
hints = [
  "Which text is what ran: the lowered module or the compiled one? Where do fused adds live?",
  "Count instructions by opcode over every computation of the parsed module.",
]
"""

PROGRAMS = '''"""The programs phase {n}'s tests compile, and what `katas show` compiles per task."""

from __future__ import annotations

import numpy as np

from kata_harness.programs import Recipe


def chain(x, y):
    return (x + y) * (x + 1.0)


def args(n: int = 8):
    rng = np.random.default_rng(n)
    return rng.normal(size=(n,)).astype(np.float32), rng.normal(size=(n,)).astype(np.float32)


SHOWN = {{
    "count_adds": Recipe(lambda m: (chain, args()), "chain(x, y) with x, y f32[8]", given=True),
}}
'''

TESTS = '''"""Phase {n} tests."""

import jax
import pytest

from katas.phase{n}.programs import args, chain
from xla_inspect import parse_hlo


def _adds(fn, *values) -> int:
    module = parse_hlo(jax.jit(fn).lower(*values).compile().as_text())
    return sum(i.opcode == "add" for c in module.computations for i in c.instructions)


@pytest.mark.task("count_adds")
@pytest.mark.parametrize("n", [1, 8, 33])
def test_count_adds(kata, n):
    got = kata.count_adds(chain, *args(n))
    assert isinstance(got, int)
    assert got == _adds(chain, *args(n))
'''

DECOYS = '''"""Plausible wrong answers for phase {n}, and correct answers spelled differently."""

import jax

from kata_harness.decoys import decoy
from xla_inspect import parse_hlo
from xla_inspect.query import opcode_counts


@decoy("count_adds", caught_by=["test_count_adds"], why="counts the entry computation only")
def count_adds(fn, *args):
    text = jax.jit(fn).lower(*args).compile().as_text()
    return opcode_counts(parse_hlo(text), entry_only=True).get("add", 0)
'''

README = """# Phase {n}: TITLE

What this phase teaches, what to edit (only `kata.py`), what to look at in the IR, why it
matters for speed, and links to the JAX and XLA documentation.
"""


def new_phase(number: int) -> list[Path]:
    """Write the files of phase `number`; their paths, relative to the course root."""
    name = f"phase{number}"
    files = {
        curriculum.KATAS_DIR / name / curriculum.KATA_FILE: STUB,
        curriculum.KATAS_DIR / name / "tasks.toml": TASKS,
        curriculum.KATAS_DIR / name / f"test_{name}.py": TESTS,
        curriculum.KATAS_DIR / name / curriculum.PROGRAMS_FILE: PROGRAMS,
        curriculum.KATAS_DIR / name / "README.md": README,
        curriculum.REFERENCE_DIR / name / curriculum.KATA_FILE: REFERENCE,
        curriculum.DECOYS_DIR / f"{name}.py": DECOYS,
    }
    existing = [p for p in files if p.exists()]
    if existing:
        shown = ", ".join(str(p.relative_to(curriculum.ROOT)) for p in existing)
        raise RunError(f"{name} already has {shown}: nothing written")
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(n=number), encoding="utf-8")
    return [p.relative_to(curriculum.ROOT) for p in files]
