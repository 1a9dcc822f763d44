"""The IR a task's code produces: capture it through its phase's recipe, make it readable,
highlight it. The recipes live next to the tests, in `katas/phaseN/programs.py` (see
`kata_harness.programs`), so `katas show` compiles the programs the tests compile.

Stages: `jaxpr` (what tracing recorded), `stablehlo` (what JAX hands XLA), `hlo` (unoptimized
HLO), `optimized` (what XLA compiled; stack-frame tables and metadata stripped). On a terminal,
opcodes are coloured and fusions stand out (the `fusion` op, `kind=`, and the header of every
fused computation); elsewhere the text is printed plain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.text import Text

from kata_harness import loading
from kata_harness.curriculum import Task
from kata_harness.programs import Recipe, recipe_for
from xla_inspect.capture import Capture, capture
from xla_inspect.errors import InspectError
from xla_inspect.normalize import RULES, normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fused_computation_names, fusions

from .errors import NothingToShow, ShowError, UsageError

_BLANK_RUN = re.compile(r"\n{3,}")
_READABLE = [r for r in RULES if r.name in ("strip_stack_frame_tables", "strip_metadata")]


@dataclass(frozen=True, slots=True)
class Shown:
    task: Task
    recipe: Recipe
    capture: Capture


def _configure_jax() -> None:
    """Same device count as the test harness, so the compiled programs match the tests'."""
    import jax

    from kata_harness.curriculum import CPU_DEVICES  # not from the plugin: it imports pytest

    jax.config.update("jax_num_cpu_devices", CPU_DEVICES)


def capture_task(task: Task, impl: str, target: str | None = None) -> Shown:
    """Trace and compile the task's recipe with the learner's (`katas`) or reference module,
    for this machine or for the named TPU/GPU `target` (see `xla_inspect.targets`)."""
    if target is not None:
        from xla_inspect import targets

        try:
            missing = targets.get(target).missing()
        except targets.TargetError as error:
            raise UsageError(str(error)) from None
        if missing is not None:
            raise ShowError(missing)
    _configure_jax()
    recipe = recipe_for(task)
    if recipe is None:
        raise NothingToShow(
            f"nothing to show for {task.id} ({task.function}): it returns a Python value "
            "rather than building an array program; its tests say what it is checked on"
        )
    from kata_harness import curriculum

    phase = curriculum.phase(task.phase)
    try:
        module = loading.load_impl(phase, impl)
    except loading.KataLoadError as error:
        raise ShowError(str(error)) from None
    try:
        fn, args = recipe.build(module)
        return Shown(task, recipe, capture(fn, *args, target=target))
    except NotImplementedError:
        raise ShowError(_not_done(task)) from None
    except InspectError as error:  # capture wraps what tracing raised, a stub's raise included
        if isinstance(error.__cause__, NotImplementedError):
            raise ShowError(_not_done(task)) from None
        raise ShowError(f"{task.id} ({task.function}): {_first_line(error)}") from None
    except Exception as error:  # the learner's code may raise anything while tracing
        raise ShowError(
            f"{task.id} ({task.function}) raised {type(error).__name__} while "
            f"tracing: {_first_line(error)}"
        ) from None


def _not_done(task: Task) -> str:
    return (
        f"{task.id} ({task.function}) is not done yet: nothing to compile; "
        f"hint: {task.hint_command}"
    )


def _first_line(error: Exception) -> str:
    text = str(error)
    return text.splitlines()[0] if text else ""


def stage_text(captured: Capture, stage: str) -> str:
    """The stage's text, ending in one newline; optimized HLO without frame tables or metadata."""
    texts = {
        "jaxpr": lambda: str(captured.jaxpr),
        "stablehlo": lambda: captured.stablehlo_text,
        "hlo": lambda: captured.hlo_text,
        "optimized": lambda: normalize_hlo(captured.optimized_hlo_text, _READABLE),
    }
    return _BLANK_RUN.sub("\n\n", texts[stage]()).rstrip("\n") + "\n"


def fusion_summary(hlo_text: str) -> str:
    """`fusions: 2 (kLoop x2) ...` with what each absorbed; empty if the text does not parse."""
    try:
        found = fusions(parse_hlo(hlo_text))
    except InspectError:
        return ""
    if not found:
        return "fusions: none"
    lines = [f"fusions: {len(found)}"]
    for fusion in found:
        absorbed = ", ".join(f"{op} x{n}" for op, n in sorted(fusion.absorbed.items()))
        lines.append(f"  {fusion.name} ({fusion.label}) absorbs {absorbed or 'nothing'}")
    return "\n".join(lines)


_HLO_OP = re.compile(r"=\s+(?:\([^=]*?\)|[^\s(]+)\s+([a-z][a-z0-9\-]*)\(")
_HLO_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_KIND = re.compile(r"kind=k\w+|\"kind\":\"\w+\"")
_JAXPR_OP = re.compile(r"^\s+[^=\n]*?\s=\s([a-z_][a-z0-9_]*)")
_MLIR_OP = re.compile(r"\b(?:stablehlo|chlo|func|sdy|mhlo|tensor|arith)\.[a-z_]+")
_HEAVY = frozenset(
    {
        "dot",
        "dot_general",
        "convolution",
        "conv_general_dilated",
        "custom-call",
        "while",
        "conditional",
        "cond",
        "scan",
        "call",
        "all-reduce",
        "reduce",
    }
)


def _op_style(op: str) -> str:
    if op == "fusion":
        return "bold magenta"
    return "bold yellow" if op in _HEAVY or op.split(".")[-1] in _HEAVY else "cyan"


def highlight(text: str, stage: str) -> Text:
    """Rich text with opcodes, fusion kinds and fused-computation headers styled."""
    fused: frozenset[str] = frozenset()
    if stage in ("hlo", "optimized"):
        try:
            fused = fused_computation_names(parse_hlo(text))
        except InspectError:
            pass
    out = Text()
    for line in text.splitlines():
        piece = Text(line)
        if stage in ("hlo", "optimized"):
            header = _HLO_HEADER.match(line)
            if header:
                in_fusion = header.group(2) in fused
                piece.stylize("bold magenta" if in_fusion else "bold")
                if in_fusion:
                    piece.append("   # fused computation", style="magenta")
            elif match := _HLO_OP.search(line):
                piece.stylize(_op_style(match.group(1)), match.start(1), match.end(1))
            for kind in _KIND.finditer(line):
                piece.stylize("bold magenta", kind.start(), kind.end())
        elif stage == "jaxpr" and (match := _JAXPR_OP.match(line)):
            piece.stylize(_op_style(match.group(1)), match.start(1), match.end(1))
        elif stage == "stablehlo":
            for match in _MLIR_OP.finditer(line):
                piece.stylize(_op_style(match.group(0)), match.start(), match.end())
        out.append_text(piece)
        out.append("\n")
    return out
