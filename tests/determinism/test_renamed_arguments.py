"""Renamed functions and arguments, defined in another file, give the pinned normalized HLO.

A learner names things as they like. Every program whose optimized HLO is pinned under
``snapshots/`` is rebuilt here from its source by ``ast`` with every parameter renamed and the
function itself renamed, compiled from a file name in another folder (so source paths, line
tables, function and argument names in the metadata all differ), run through the reference
``three_texts`` (phase 3) or ``stages`` (phase 4), normalized, and compared byte for byte with the
pinned file.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from kata_harness import curriculum, loading, snapshots
from xla_inspect.normalize import normalize_hlo

PREFIX = "renamed_"

# pinned test name -> (program in the phase's programs.py, its argument factory)
PINS = {
    "phase3": {
        "test_optimized_mlp_snapshot": ("mlp", "mlp_args"),
        "test_optimized_attention_snapshot": ("attention", "attention_args"),
    },
    "phase4": {  # one test pins six modules (programs.PINNED): syrupy names the n-th "<test>.n"
        "test_pinned_optimized_programs": ("repeated_affine", "pair"),
        "test_pinned_optimized_programs.1": ("quarter", "uniform"),
        "test_pinned_optimized_programs.2": ("row_norms", "matrix_arg"),
        "test_pinned_optimized_programs.3": ("lhs_transposed", "transposed_args"),
        "test_pinned_optimized_programs.4": ("exp_gap", "uniform"),
        "test_pinned_optimized_programs.5": ("moments", "uniform"),
    },
}


class _Rename(ast.NodeTransformer):
    """Rename chosen top-level functions and their parameters; keep the old name as an alias."""

    def __init__(self, functions: set[str]) -> None:
        self.functions = functions

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body: list[ast.stmt] = []
        for statement in node.body:
            body.append(statement)
            if isinstance(statement, ast.FunctionDef) and statement.name in self.functions:
                original = statement.name
                _rename_parameters(statement)
                statement.name = f"{PREFIX}{original.lstrip('_')}"
                body.append(ast.parse(f"{original} = {statement.name}").body[0])
        node.body = body
        return ast.fix_missing_locations(node)


def _rename_parameters(function: ast.FunctionDef) -> None:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    mapping = {a.arg: f"learner_input_{n}" for n, a in enumerate(every)}
    for argument in every:
        argument.arg = mapping[argument.arg]
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]


def _renamed_module(source: Path, functions: set[str], elsewhere: Path) -> SimpleNamespace:
    """Execute ``source`` with ``functions`` renamed, as if it lived at ``elsewhere``."""
    tree = _Rename(functions).visit(ast.parse(source.read_text(encoding="utf-8")))
    namespace: dict = {"__name__": f"{PREFIX}{source.stem}"}
    exec(compile(tree, str(elsewhere / f"{PREFIX}{source.name}"), "exec"), namespace)
    return SimpleNamespace(**namespace)


def _pinned_file(phase: str, test: str) -> Path:
    key = snapshots.platform_key()
    test_file = curriculum.KATAS_DIR / phase / f"test_{phase}.py"
    status = snapshots.pin_status(key, test_file)
    if not status.usable:
        pytest.skip(status.message)
    return snapshots.snapshot_dir(key, test_file) / f"{test}.txt"


def _optimized(phase: str, program, args) -> str:
    reference = loading.load_impl(curriculum.phase(int(phase.removeprefix("phase"))), "reference")
    if phase == "phase3":
        return reference.three_texts(program, *args)["optimized"]
    return reference.stages(program, *args)[1]


CASES = [(phase, test) for phase, tests in PINS.items() for test in tests]


@pytest.mark.parametrize(("phase", "test"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
def test_renamed_program_matches_the_pin(phase, test, tmp_path):
    """Covers: renamed function and argument names, another source path, another line layout."""
    pinned = _pinned_file(phase, test)
    program_name, args_name = PINS[phase][test]
    programs_file = curriculum.KATAS_DIR / phase / "programs.py"
    owner = _renamed_module(programs_file, {program_name}, tmp_path / "elsewhere")
    args = getattr(owner, args_name)()
    args = args if isinstance(args, tuple) else (args,)
    program = getattr(owner, program_name)
    optimized = _optimized(phase, program, args)
    assert f"jit_{program.__name__}" in optimized and "learner_input_0" in optimized, (
        "the renamed function and arguments did not reach the compiler"
    )
    actual = normalize_hlo(optimized)
    assert actual.encode("utf-8") == pinned.read_bytes(), (
        f"{program.__name__} with renamed arguments does not reproduce "
        f"{pinned.relative_to(curriculum.ROOT)}"
    )


def test_every_pinned_module_is_in_the_matrix():
    """Covers: completeness. A new pin must join PINS so renamed arguments are checked on it."""
    key = snapshots.platform_key()
    roots = sorted((snapshots.SNAPSHOTS_DIR / key).glob("jax-*/katas"))
    if not roots:
        pytest.skip(f"no snapshots are pinned for {key}")
    pinned = {(p.parent.parent.name, p.stem) for root in roots for p in root.rglob("*.txt")}
    listed = {(phase, test) for phase, tests in PINS.items() for test in tests}
    assert pinned == listed, (
        f"pinned but not listed: {sorted(pinned - listed)}; "
        f"listed but not pinned: {sorted(listed - pinned)}"
    )
