"""The test half of ``katas upgrade-report``: one reference run per JAX, read from JUnit XML.

Each run records version-gated facts instead of asserting them where they are off
(``KATAS_GATED_FACTS=record``, kata_harness.gated), so its outcomes are the ordinary ones of that
JAX (a failure is a real failure: ``--gate`` exits non-zero on one) and the ``gated-fact``
properties say which gated facts hold there. The NEW side may instead be read from the JUnit XML
of a run made elsewhere (CI's main run) when that file says it was made with the same JAX and
with no gated fact left unevaluated.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from .errors import RunError, UsageError

TEST_PATHS = ("katas", "tests/xla_inspect")
TEST_FILTER = "not snapshot and not pinned"
_FILTERED_WORDS = ("snapshot", "pinned")  # TEST_FILTER, applied to a JUnit file made elsewhere


@dataclass
class TestRun:
    """One version's run: each test's ordinary outcome (passed, failed or skipped), the gated
    facts each test evaluated ({test: {gate: True if it holds}}), pytest's exit code and the
    first line of each failure's message."""

    jax: str
    outcomes: dict[str, str]
    gated: dict[str, dict[str, bool]] = field(default_factory=dict)
    exit_code: int = 0
    source: str = "run here"
    messages: dict[str, str] = field(default_factory=dict)

    def failures(self) -> list[str]:
        return sorted(name for name, outcome in self.outcomes.items() if outcome == "failed")

    def facts(self) -> dict[str, str]:
        """Per test, what it says: the gated facts it recorded, else its outcome."""
        said = dict(self.outcomes)
        for name, gates in self.gated.items():
            said[name] = ", ".join(f"{g} {'holds' if ok else 'fails'}" for g, ok in gates.items())
        return said


def pytest_command(version_run: list[str], xml: Path) -> list[str]:
    command = version_run + ["pytest", *TEST_PATHS, "-k", TEST_FILTER]
    command += ["--impl=reference", "--no-honesty", "-q", "-p", "no:randomly"]
    # a crashed xdist worker is not replaced: the run ends with that test failed, never waits
    command += ["-p", "no:cacheprovider", "--max-worker-restart=0", f"--junit-xml={xml}"]
    return command


def test_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KATAS_"))}
    env["KATAS_GATED_FACTS"] = "record"
    return env


def read_junit(xml: Path, version: str, exit_code: int = 0, source: str = "run here") -> TestRun:
    """The outcomes and recorded gated facts of a JUnit file of this suite."""
    if not xml.is_file():
        raise RunError(f"the tests did not run with jax {version} (no {xml.name})")
    root = ElementTree.parse(xml).getroot()
    run = TestRun(version, {}, exit_code=exit_code, source=source)
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = "failed" if kinds & {"failure", "error"} else "passed"
        run.outcomes[name] = "skipped" if "skipped" in kinds else outcome
        for child in case:
            if child.tag in ("failure", "error"):
                said = (child.get("message") or child.text or "").strip().splitlines()
                run.messages[name] = said[0][:160] if said else ""
        for prop in case.iter("property"):
            if prop.get("name") == "gated-fact":
                gate, _, said = (prop.get("value") or "").rpartition(" ")
                run.gated.setdefault(name, {})[gate] = said == "holds"
    return run


def _global_properties(xml: Path) -> dict[str, str]:
    root = ElementTree.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    props = suite.find("properties") if suite is not None else None
    if props is None:
        return {}
    return {p.get("name", ""): p.get("value", "") for p in props.iter("property")}


def from_junit_elsewhere(xml: Path, version: str, old: TestRun) -> TestRun:
    """The NEW side from a JUnit file made by another run (``--new-junit``): it must say it ran
    jax ``version`` with every gated fact evaluated (none off, or recorded); only the tests the
    OLD side ran are kept (that run may have run more)."""
    if not xml.is_file():
        raise UsageError(f"--new-junit: no file {xml}")
    said = _global_properties(xml)
    if said.get("jax") != version:
        raise UsageError(
            f"--new-junit: {xml} was made with jax {said.get('jax', '(not said)')}, not {version}"
        )
    if said.get("katas-gates-off") != "none" and said.get("katas-gated-facts") != "record":
        raise UsageError(f"--new-junit: {xml} left gated facts unevaluated ({said})")
    whole = read_junit(xml, version, source=f"read from {xml.name}")
    kept = {n for n in whole.outcomes if n.startswith(tuple(p + "/" for p in TEST_PATHS))}
    kept = {n for n in kept if not any(w in n.lower() for w in _FILTERED_WORDS)}
    kept &= set(old.outcomes)
    run = TestRun(version, {n: whole.outcomes[n] for n in sorted(kept)}, source=whole.source)
    run.gated = {n: g for n, g in whole.gated.items() if n in kept}
    run.messages = {n: m for n, m in whole.messages.items() if n in kept}
    run.exit_code = 1 if run.failures() else 0
    return run


def gate_lines(runs: tuple[TestRun, TestRun]) -> tuple[list[str], bool]:
    """The report's closing lines for ``--gate`` and whether it passes: no ordinary failure (a
    failure that is not a recorded gated fact) and a clean pytest exit on either side."""
    lines, ok = [], True
    for run in runs:
        failed = run.failures()
        if failed or run.exit_code not in (0, 1):
            ok = False
        status = f"{len(failed)} ordinary test failure(s)"
        if run.exit_code not in (0, 1):
            status += f", pytest exit {run.exit_code}"
        lines.append(f"gate: jax {run.jax} ({run.source}): {status}")
        lines += [f"  {name}: {run.messages.get(name, '')}".rstrip(": ") for name in failed[:30]]
        if len(failed) > 30:
            lines.append(f"  ... {len(failed) - 30} more")
    lines.append("gate: passed" if ok else "gate: FAILED")
    return lines, ok


def gated_summary(runs: tuple[TestRun, TestRun]) -> list[str]:
    """Per gate, on each side: in how many tests the fact held and failed."""
    lines = []
    names = sorted({g for run in runs for gates in run.gated.values() for g in gates})
    for gate in names:
        sides = []
        for run in runs:
            said = [gates[gate] for gates in run.gated.values() if gate in gates]
            if said:
                sides.append(
                    f"jax {run.jax}: holds in {sum(said)}, fails in {len(said) - sum(said)}"
                )
            else:
                sides.append(f"jax {run.jax}: asserted (not off there)")
        lines.append(f"  {gate}: " + "; ".join(sides))
    return lines
