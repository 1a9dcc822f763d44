"""For reviewers: the learner's code beside the reference, and the IR each one compiles to.

Per task: the function's source from both files (read with `ast`, so a learner file that does
not import still shows), then, for tasks whose recipe (in the phase's `programs.py`) builds the
learner's program (not a `given` one of the tests), the normalized optimized HLO
(`xla_inspect.normalize.normalize_hlo`) of both. Side by side by default, changed rows marked
`|`, rows only on the left `<`, only on the right `>`; `--unified` prints unified diffs instead.
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kata_harness import curriculum
from kata_harness.curriculum import Phase, Task
from kata_harness.programs import recipe_for
from xla_inspect.normalize import normalize_hlo

from .show import ShowError, capture_task, fusion_summary

_ROW_STYLE = {" ": "", "|": "yellow", "<": "red", ">": "green"}


def function_source(path: Path, name: str) -> str:
    """The top-level function `name` of `path` with its decorators, or why it is missing."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except FileNotFoundError:
        return f"# {path.name} is missing"
    except SyntaxError as error:
        return f"# {path.name} does not parse: SyntaxError at line {error.lineno}: {error.msg}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return "\n".join(text.splitlines()[first - 1 : node.end_lineno])
    return f"# no function {name} in {path.name}"


def side_by_side(left: list[str], right: list[str]) -> list[tuple[str, str, str]]:
    """Rows (marker, left line, right line) aligned by difflib."""
    rows: list[tuple[str, str, str]] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += [(" ", a, b) for a, b in zip(left[i1:i2], right[j1:j2], strict=True)]
            continue
        a_part, b_part = left[i1:i2], right[j1:j2]
        for k in range(max(len(a_part), len(b_part))):
            a = a_part[k] if k < len(a_part) else None
            b = b_part[k] if k < len(b_part) else None
            marker = "|" if a is not None and b is not None else ("<" if b is None else ">")
            rows.append((marker, a or "", b or ""))
    return rows


def render_pair(console: Console, title: str, left: str, right: str, *, unified: bool) -> None:
    left_lines, right_lines = left.splitlines(), right.splitlines()
    if left_lines == right_lines:
        console.print(f"[bold]{title}[/]: identical")
        console.print(Text(left))
        return
    if unified:
        console.print(f"[bold]{title}[/]")
        diff = difflib.unified_diff(left_lines, right_lines, "learner", "reference", lineterm="")
        for line in diff:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            console.print(Text(line, style=style))
        return
    table = Table(title=title, title_justify="left", show_lines=False, expand=True)
    table.add_column("learner", ratio=1, overflow="fold")
    table.add_column("", width=1)
    table.add_column("reference", ratio=1, overflow="fold")
    for marker, a, b in side_by_side(left_lines, right_lines):
        style = _ROW_STYLE[marker]
        table.add_row(Text(a, style=style), Text(marker, style=style), Text(b, style=style))
    console.print(table)


def _ir(task: Task, impl: str) -> str:
    try:
        shown = capture_task(task, impl)
    except ShowError as error:
        return f"# {error}"
    return normalize_hlo(shown.capture.optimized_hlo_text)


def compare(
    console: Console, phase: Phase, tasks: list[Task], *, unified: bool, ir: bool = True
) -> None:
    learner = phase.kata_path.relative_to(curriculum.ROOT)
    reference = phase.reference_path.relative_to(curriculum.ROOT)
    console.print(f"[bold]{phase.name}[/]: {learner} (learner) vs {reference} (reference)")
    for task in tasks:
        console.rule(f"{task.id} {task.function}")
        render_pair(
            console,
            "source",
            function_source(phase.kata_path, task.function),
            function_source(phase.reference_path, task.function),
            unified=unified,
        )
        recipe = recipe_for(task)
        if not ir or recipe is None or recipe.given:  # a given program's IR is the same for both
            continue
        mine, theirs = _ir(task, "katas"), _ir(task, "reference")
        render_pair(console, "normalized optimized HLO", mine, theirs, unified=unified)
        for who, text in (("learner", mine), ("reference", theirs)):
            summary = fusion_summary(text)
            if summary:
                console.print(Text(f"{who} {summary}", style="dim"))
