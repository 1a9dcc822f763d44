"""`katas upgrade-report OLD NEW`: what moving JAX from OLD to NEW changes in the course.

Each version runs in its own environment (``uv run --with jax==V --with jaxlib==V``):

1. ``python -m katas_cli.upgrade capture OUT.json`` compiles every phase's programs (the
   recipes of ``katas/phaseN/programs.py`` that `katas show` uses, with the reference) and
   writes each one's normalized optimized HLO, plus the jax/jaxlib versions.
2. unless ``--no-tests``: the kata tests and the toolkit's oracle tests run against the
   reference with every version-gated fact that is off for that JAX evaluated and recorded
   instead of asserted (``KATAS_GATED_FACTS=record``, see ``kata_harness.gated``), snapshot
   and determinism tests left out (the HLO diff shows those); JUnit XML gives each test's
   ordinary outcome and the gated facts it recorded (:mod:`.upgrade_tests`). ``--new-junit``
   takes NEW's side from the JUnit XML of a run made with jax NEW instead (CI's main run).

Every step runs with a time limit (``--step-timeout``) and says on stderr what it is doing; a
step that fails or runs out of time ends the report with the step, the version and the last
lines it printed (exit 1), never a silent wait.

This process then parses both texts with ``xla_inspect`` and prints, per phase and program, what
changed: opcode counts over all computations, fusions by kind, collectives, ENTRY layouts and
the normalized HLO diff; then which gated facts hold on each side and the tests whose facts
differ between the two versions. With ``--gate`` it exits 1 when a test failed on either side
that is not a recorded gated fact: the report is then also the test run of the older JAX.
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from kata_harness import curriculum

from . import upgrade_tests
from .errors import RunError, UsageError
from .upgrade_tests import TestRun

DIFF_LINES = 40
STEP_TIMEOUT = 1800  # seconds: a cold environment plus the whole reference run, on 2 cores


def add_parser(sub) -> None:
    report = sub.add_parser(
        "upgrade-report",
        help="for maintainers: what moving JAX from OLD to NEW changes (HLO and test facts)",
    )
    report.add_argument("old", metavar="OLD", help="jax version, e.g. 0.11.2")
    report.add_argument("new", metavar="NEW", help="jax version, e.g. 0.12.0.1")
    report.add_argument("--no-tests", action="store_true", help="compare HLO only")
    report.add_argument(
        "--full-diff", action="store_true", help=f"whole HLO diffs (default: {DIFF_LINES} lines)"
    )
    report.add_argument("--json", action="store_true", help="machine-readable output")
    report.add_argument(
        "--gate",
        action="store_true",
        help="exit 1 when a test fails on either side that is not a recorded gated fact "
        "(CI's test run of the older JAX)",
    )
    report.add_argument(
        "--new-junit",
        type=Path,
        metavar="XML",
        help="NEW's test outcomes from this JUnit XML of a run with jax NEW (CI's main run) "
        "instead of running the tests again",
    )
    report.add_argument(
        "--step-timeout",
        type=float,
        default=STEP_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit of each step (default: {STEP_TIMEOUT})",
    )


# ---- inside one version's environment -------------------------------------------------------


def capture_all() -> dict:
    """Every recipe of every phase, compiled with the reference: {phase: {task: entry}}."""
    import jax
    import jaxlib.version

    from kata_harness.programs import recipe_for
    from xla_inspect.normalize import normalize_hlo

    from .errors import NothingToShow, ShowError
    from .show import capture_task

    programs: dict[str, dict[str, dict[str, str]]] = {}
    for phase in curriculum.phases():
        for task in phase.tasks:
            if recipe_for(task) is None:
                continue
            try:
                shown = capture_task(task, "reference")
            except (ShowError, NothingToShow) as error:
                entry = {"error": str(error)}
            else:
                entry = {
                    "about": shown.recipe.about,
                    "optimized": normalize_hlo(shown.capture.optimized_hlo_text),
                }
            programs.setdefault(phase.name, {})[task.function] = entry
    return {"jax": jax.__version__, "jaxlib": jaxlib.version.__version__, "programs": programs}


def _capture_main(argv: list[str]) -> int:
    (out,) = argv
    Path(out).write_text(json.dumps(capture_all(), indent=1, sort_keys=True), encoding="utf-8")
    return 0


# ---- driving both environments --------------------------------------------------------------


def _uv_run(version: str) -> list[str]:
    pins = ["--with", f"jax=={version}", "--with", f"jaxlib=={version}"]
    return ["uv", "run", "--quiet", "--compile-bytecode", *pins]


def _tail(output: str | bytes | None) -> str:
    text = output.decode(errors="replace") if isinstance(output, bytes) else (output or "")
    return " | ".join(text.strip().splitlines()[-5:])


def _run(
    command: list[str],
    what: str,
    timeout: float,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> int:
    """Run one step, saying so on stderr; fail with the step and its last lines. Its exit
    code (0 when ``check``)."""
    print(f"upgrade-report: {what} ...", file=sys.stderr, flush=True)
    try:
        result = subprocess.run(
            command,
            cwd=curriculum.ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as expired:
        output = _tail(expired.stdout) + " | " + _tail(expired.stderr)
        raise RunError(f"{what} did not finish within {timeout:g} s: {output}") from None
    if check and result.returncode != 0:
        raise RunError(
            f"{what} failed (exit {result.returncode}): " + _tail(result.stdout + result.stderr)
        )
    return result.returncode


def capture_version(version: str, workdir: Path, timeout: float = STEP_TIMEOUT) -> dict:
    out = workdir / f"hlo-{version}.json"
    command = _uv_run(version) + ["python", "-m", "katas_cli.upgrade", "capture", str(out)]
    _run(command, f"compiling the phases' programs with jax {version}", timeout)
    return json.loads(out.read_text(encoding="utf-8"))


def outcomes_of_tests(version: str, workdir: Path, timeout: float = STEP_TIMEOUT) -> TestRun:
    """The reference's test run with jax ``version``, gated facts off there recorded."""
    xml = workdir / f"tests-{version}.xml"
    command = upgrade_tests.pytest_command(_uv_run(version), xml)
    what = f"running the reference's tests with jax {version}"
    code = _run(command, what, timeout, upgrade_tests.test_env(), check=False)
    return upgrade_tests.read_junit(xml, version, code)


# ---- comparing ------------------------------------------------------------------------------


def facts(text: str) -> dict:
    """What the report compares of one normalized optimized module."""
    from xla_inspect.parse import parse_hlo
    from xla_inspect.query import collectives, fusions, opcode_counts, parameter_layouts

    module = parse_hlo(text)
    return {
        "opcodes": dict(opcode_counts(module)),
        "fusions": dict(Counter(f.kind or "?" for f in fusions(module))),
        "collectives": sorted(
            f"{c.opcode} {c.replica_groups or ''}".strip() for c in collectives(module)
        ),
        "layouts": [f"parameter {p.number}: {p.shape}" for p in parameter_layouts(module)]
        + [f"ROOT: {module.entry.root.shape}"],
    }


def _counter_change(old: dict[str, int], new: dict[str, int]) -> str:
    keys = sorted(set(old) | set(new))
    moved = [
        f"{k} {old.get(k, 0)}->{new.get(k, 0)}" for k in keys if old.get(k, 0) != new.get(k, 0)
    ]
    return ", ".join(moved)


def compare_program(old: dict, new: dict, full_diff: bool) -> list[str]:
    """Lines describing how one program changed (empty when nothing did)."""
    if "error" in old or "error" in new:
        if old.get("error") == new.get("error"):
            return []
        return [f"error: {old.get('error', 'none')} -> {new.get('error', 'none')}"]
    if old["optimized"] == new["optimized"]:
        return []
    before, after = facts(old["optimized"]), facts(new["optimized"])
    lines = []
    for key in ("opcodes", "fusions"):
        change = _counter_change(before[key], after[key])
        if change:
            lines.append(f"{key}: {change}")
    for key in ("collectives", "layouts"):
        if before[key] != after[key]:
            gone = [x for x in before[key] if x not in after[key]]
            came = [x for x in after[key] if x not in before[key]]
            lines.append(f"{key}: - {gone or '[]'} + {came or '[]'}")
    diff = list(
        difflib.unified_diff(
            old["optimized"].splitlines(),
            new["optimized"].splitlines(),
            "old",
            "new",
            lineterm="",
            n=1,
        )
    )[2:]
    shown = diff if full_diff else diff[:DIFF_LINES]
    lines.append(f"normalized HLO diff ({len(diff)} lines):")
    lines += [f"  {line}" for line in shown]
    if len(shown) < len(diff):
        lines.append(f"  ... {len(diff) - len(shown)} more (--full-diff)")
    return lines


def flips(old: dict[str, str], new: dict[str, str]) -> list[tuple[str, str, str]]:
    names = sorted(set(old) | set(new))
    return [
        (n, old.get(n, "absent"), new.get(n, "absent"))
        for n in names
        if old.get(n, "absent") != new.get(n, "absent")
    ]


def render(old: dict, new: dict, tests: tuple[TestRun, TestRun] | None, full_diff: bool) -> str:
    out = [
        f"JAX upgrade report: jax {old['jax']} (jaxlib {old['jaxlib']}) -> jax {new['jax']} "
        f"(jaxlib {new['jaxlib']})",
        "",
    ]
    changed = unchanged = 0
    phases = sorted(set(old["programs"]) | set(new["programs"]), key=lambda p: int(p[5:]))
    for phase in phases:
        old_phase, new_phase = old["programs"].get(phase, {}), new["programs"].get(phase, {})
        for task in sorted(set(old_phase) | set(new_phase)):
            lines = compare_program(
                old_phase.get(task, {"error": "absent"}),
                new_phase.get(task, {"error": "absent"}),
                full_diff,
            )
            if not lines:
                unchanged += 1
                continue
            changed += 1
            about = (new_phase.get(task) or old_phase.get(task) or {}).get("about", "")
            out.append(f"## {phase} {task}: {about}")
            out += lines + [""]
    out.insert(2, f"programs: {changed} changed, {unchanged} identical after normalization")
    out.insert(3, "")
    if tests is not None:
        out.append("## gated facts (recorded where off, asserted where on)")
        out += upgrade_tests.gated_summary(tests) or ["  none evaluated"]
        out.append("")
        flipped = flips(tests[0].facts(), tests[1].facts())
        out.append(f"## tests whose facts flip ({len(flipped)})")
        out += [f"  {name}: {a} -> {b}" for name, a, b in flipped] or ["  none"]
    return "\n".join(out).rstrip() + "\n"


def command(args: argparse.Namespace, console) -> int:
    if args.old == args.new:
        raise UsageError("upgrade-report compares two different jax versions")
    if args.no_tests and (args.gate or args.new_junit):
        raise UsageError("--gate and --new-junit need the tests (drop --no-tests)")
    with tempfile.TemporaryDirectory(prefix="katas-upgrade-") as tmp:
        workdir = Path(tmp)
        limit = args.step_timeout
        old, new = (capture_version(v, workdir, limit) for v in (args.old, args.new))
        tests = None
        if not args.no_tests:
            before = outcomes_of_tests(args.old, workdir, limit)
            if args.new_junit is not None:
                after = upgrade_tests.from_junit_elsewhere(args.new_junit, new["jax"], before)
            else:
                after = outcomes_of_tests(args.new, workdir, limit)
            tests = (before, after)
    lines, gate_ok = upgrade_tests.gate_lines(tests) if tests and args.gate else ([], True)
    if args.json:
        runs = None if tests is None else [vars(run) for run in tests]
        gate = {"passed": gate_ok, "lines": lines} if lines else None
        print(json.dumps({"old": old, "new": new, "tests": runs, "gate": gate}, indent=1))
    else:
        console.print(render(old, new, tests, args.full_diff), markup=False, end="")
        if lines:
            console.print("\n".join(["", *lines]), markup=False)
    return 0 if gate_ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] != ["capture"]:
        sys.exit("usage: python -m katas_cli.upgrade capture OUT.json")
    sys.exit(_capture_main(sys.argv[2:]))
