"""`katas dev check`: the honesty census of the course, for contributors and CI.

Runs every phase's tests in reference mode (reference, stub, decoys, accepted variants) in this
process and reads the harness's structured record of each test (``report.user_properties``,
see ``kata_harness.records``). Per task it prints the tests, the cases they run on the
reference (parametrized cases), the decoys and how many were caught, the accepted variants and
how many passed. It fails when a task has fewer than two decoys or no test, a decoy is not caught
by every test it names (passes, or breaks instead of failing an assertion), an accepted variant
is rejected, or the stub passes a test.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from kata_harness import catchers, curriculum, fresh, loading, records
from kata_harness.curriculum import KINDS, Phase, Task
from kata_harness.decoys import MIN_DECOYS, MIN_PROBES, MIN_RED_TEAM
from kata_harness.records import TestRecord

from . import ledger
from .errors import RunError


@dataclass(slots=True)
class _Census:
    """A pytest plugin object collecting the harness's records, and the seconds each phase and
    each kind of variant took (setup, call and teardown: loading a kata file is in its setup)."""

    records: list[TestRecord] = field(default_factory=list)
    seconds: Counter = field(default_factory=Counter)

    def pytest_runtest_logreport(self, report) -> None:
        self.records += records.read(report)
        phase = re.search(r"katas/(phase\d+)/", report.nodeid)
        variant = re.search(r"\[([a-z]+)[^\]]*\]$", report.nodeid)
        if phase and variant:
            self.seconds[phase.group(1), variant.group(1)] += report.duration


def time_lines(seconds: Counter) -> list[str]:
    """Where the census spent its test time: by kind of variant, then the slowest phases."""
    total = sum(seconds.values())
    if not total:
        return []
    kinds, phases = Counter(), Counter()
    for (phase, kind), value in seconds.items():
        kinds[kind] += value
        phases[phase] += value
    share = ", ".join(f"{kind} {value / total:.0%}" for kind, value in kinds.most_common())
    slowest = ", ".join(f"{phase} {value:.0f} s" for phase, value in phases.most_common(5))
    return [
        f"test time {total:.0f} s (summed over workers): {share}",
        f"slowest phases: {slowest}",
    ]


@dataclass(slots=True)
class TaskCensus:
    task: Task
    tests: set[str] = field(default_factory=set)
    cases: int = 0
    decoys: dict[str, bool] = field(default_factory=dict)  # name -> caught by every test it names
    accepted: dict[str, bool] = field(default_factory=dict)  # name -> passed every test
    redteam: dict[str, bool] = field(default_factory=dict)  # name -> caught by one test
    probes: dict[str, bool] = field(default_factory=dict)  # name -> rejected by one test
    problems: list[str] = field(default_factory=list)


def census(phases: list[Phase], found: list[TestRecord]) -> list[TaskCensus]:
    """What the records say about each task of ``phases``."""
    rows = {(t.phase, t.function): TaskCensus(t) for p in phases for t in p.tasks}
    for phase in phases:
        for d in loading.phase_decoys(phase):
            rows[(phase.number, d.replaces)].decoys[d.name] = True
        for a in loading.phase_accepted(phase):
            rows[(phase.number, a.replaces)].accepted[a.name] = True
        for r in loading.phase_redteam(phase):
            rows[(phase.number, r.replaces)].redteam[r.name] = False
        for p in loading.phase_probes(phase):
            rows[(phase.number, p.replaces)].probes[p.name] = False
    failures: dict[tuple, list[str]] = defaultdict(list)
    for record in found:
        row = rows.get((int(record.phase.removeprefix("phase")), record.function))
        if row is None:
            continue
        kind, ok = record.kind, record.outcome == "passed"
        name = record.variant.removeprefix(f"{kind}-")
        if record.caught:
            (row.redteam if kind == "redteam" else row.probes)[name] = True
        if kind == "reference" and record.when == "call":
            row.tests.add(record.test)
            row.cases += 1
        if not ok and record.outcome != "skipped":
            failures[(row.task.id, kind, name)].append(f"{record.test}: {record.message}")
            if kind == "decoy":
                row.decoys[name] = False
            elif kind == "accepted":
                row.accepted[name] = False
    for row in rows.values():
        for name, caught in row.redteam.items():
            if not caught:
                broken = failures.get((row.task.id, "redteam", name))
                row.problems.append(
                    _not_judged("red-team answer", name, broken)
                    if broken
                    else f"red-team answer {name}: no test of the task fails on it"
                )
        for name, rejected in row.probes.items():
            if not rejected:
                broken = failures.get((row.task.id, "probe", name))
                row.problems.append(
                    _not_judged("probe", name, broken)
                    if broken
                    else f"probe {name}: the guard and every test accepted it"
                )
        if not row.tests:
            row.problems.append("no test ran on the reference")
        if len(row.decoys) < MIN_DECOYS:
            row.problems.append(f"{len(row.decoys)} decoy(s), at least {MIN_DECOYS} needed")
        for (task_id, kind, name), messages in failures.items():
            # a red-team answer that breaks one test is fine when another test catches it
            caught = {"redteam": row.redteam, "probe": row.probes}.get(kind, {}).get(name)
            if task_id == row.task.id and not caught:
                who = kind if kind in ("reference", "stub") else f"{kind} {name}"
                row.problems.append(f"{who}: {messages[0]}")
    return list(rows.values())


def _not_judged(what: str, name: str, broken: list[str]) -> str:
    """A red-team answer or probe no test caught and some test could not run (its file did not
    import, a timeout, an error outside the test's assertions): broken, not accepted, since the
    tests that broke never judged it (the lines after this one say how each broke)."""
    return (
        f"{what} {name}: broken, not judged: no test caught it and {len(broken)} test(s) "
        "could not run it"
    )


def _short_red_teams(rows: list[TaskCensus]) -> dict[int, str]:
    """Phases whose red team wrote fewer than MIN_RED_TEAM answers or MIN_PROBES probes, each
    with the line that says so."""
    lines = {}
    for phase in sorted({row.task.phase for row in rows}):
        mine = [row for row in rows if row.task.phase == phase]
        answers = sum(len(row.redteam) for row in mine)
        probes = sum(len(row.probes) for row in mine)
        if answers < MIN_RED_TEAM or probes < MIN_PROBES:
            lines[phase] = (
                f"phase{phase}: {answers} red-team answer(s) and {probes} probe(s); at least "
                f"{MIN_RED_TEAM} and {MIN_PROBES} needed (decoys/redteam/, written from the "
                "contract by someone who has not read the tests)"
            )
    return lines


def run(
    phases: list[Phase], seed: int | None = None, seconds: Counter | None = None
) -> list[TestRecord]:
    """Every test of ``phases`` in reference mode; ``seed`` draws every fresh case from that seed
    (``--kata-seed``), else each kata file's content seeds its own; ``seconds`` gets the test
    seconds by (phase, kind of variant)."""
    import pytest

    collector = _Census()
    args = [str(p.kata_path.parent) for p in phases]
    args += [
        "--impl=reference",
        "--decoys",
        "--rootdir",
        str(curriculum.ROOT),
        "-c",
        str(curriculum.ROOT / "pyproject.toml"),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        # The verdicts come from what `with check:` blocks swallowed (kata_harness.verdict), not
        # from pytest-check's report, whose pseudo-traceback of each failure walks the stack with
        # inspect.stack(): 9% of phase 7's census, spent on text nobody reads.
        "--check-max-tb=0",
        "-q",
    ]
    if seed is not None:
        args.append(f"{fresh.OPTION}={seed}")
    files = [f for p in phases for f in p.kata_path.parent.glob("test_*.py")]
    if len(files) == 1:  # one test file: worker processes would cost more than they save
        args += ["-p", "no:xdist"]
    with contextlib.redirect_stdout(io.StringIO()):
        code = pytest.main(args, plugins=[collector])
    if code in (
        pytest.ExitCode.INTERNAL_ERROR,
        pytest.ExitCode.USAGE_ERROR,
        pytest.ExitCode.INTERRUPTED,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        raise RunError(
            f"pytest stopped with {code.name.lower().replace('_', ' ')}; see why "
            "with: uv run pytest katas --impl=reference"
        )
    if seconds is not None:
        seconds.update(collector.seconds)
    return collector.records


def render(console: Console, rows: list[TaskCensus]) -> int:
    """Print the census, then each problem on a line; the number of tasks with problems."""
    table = Table(title="honesty census (reference mode)")
    table.add_column("task")
    table.add_column("function")
    for column in ("tests", "cases", "decoys", "caught", "red team", "probes", "accepted"):
        table.add_column(column, justify="right")
    table.add_column("")
    for row in rows:
        table.add_row(
            row.task.id,
            row.task.function,
            str(len(row.tests)),
            str(row.cases),
            str(len(row.decoys)),
            str(sum(row.decoys.values())),
            f"{sum(row.redteam.values())}/{len(row.redteam)}",
            f"{sum(row.probes.values())}/{len(row.probes)}",
            f"{sum(row.accepted.values())}/{len(row.accepted)}",
            "[red]gaps[/]" if row.problems else "ok",
        )
    console.print(table)
    for row in rows:
        for problem in row.problems:
            console.print(f"{row.task.id} ({row.task.function}): {problem}", markup=False)
    short = _short_red_teams(rows)
    for line in short.values():
        console.print(line, markup=False)
    bad = sum(bool(row.problems) for row in rows) + len(short)
    totals = (
        f"{len(rows)} tasks, {sum(len(r.tests) for r in rows)} tests, "
        f"{sum(r.cases for r in rows)} cases; author decoys "
        f"{sum(sum(r.decoys.values()) for r in rows)}/{sum(len(r.decoys) for r in rows)} caught; "
        f"red team {sum(sum(r.redteam.values()) for r in rows)}/"
        f"{sum(len(r.redteam) for r in rows)} caught, probes "
        f"{sum(sum(r.probes.values()) for r in rows)}/{sum(len(r.probes) for r in rows)} "
        f"rejected; {sum(len(r.accepted) for r in rows)} accepted variants"
    )
    console.print(f"{totals}; {bad} problem(s)" if bad else f"{totals}; all honest")
    kinds = Counter(row.task.kind for row in rows)
    console.print(
        "task kinds: "
        + ", ".join(f"{kinds[kind]} {kind}" for kind in KINDS)
        + f" ({kinds['predict'] + kinds['decide']} of {len(rows)} ask to predict or decide)"
    )
    return bad


def check(
    console: Console,
    phases: list[Phase],
    seed: int | None = None,
    record: bool = False,
    changed: bool = False,
) -> int:
    """The census of ``phases``; ``changed`` runs only those whose recorded census no longer
    holds (``ledger``), ``record`` writes the catching tests and the honest phases' keys."""
    if seed is not None:
        console.print(f"fresh cases: seed {seed}", markup=False)
    current = ledger.keys([p.number for p in phases], seed) if record or changed else None
    if changed and current is None:
        console.print("git cannot list the checkout's files: every phase runs", markup=False)
    elif changed and current is not None:
        names, held = ledger.to_run(current)
        if held:
            console.print(
                f"the census recorded honest in {ledger.PATH.relative_to(curriculum.ROOT)} holds "
                f"for {', '.join(held)} (nothing they read changed); running {', '.join(names)}",
                markup=False,
            )
        phases = [p for p in phases if p.name in names]
    seconds: Counter = Counter()
    found = run(phases, seed, seconds)
    rows = census(phases, found)
    if record:
        caught = [(r.phase, r.variant, r.test) for r in found if r.caught]
        written = catchers.update(caught, [p.name for p in phases])
        path = catchers.PATH.relative_to(curriculum.ROOT)
        console.print(f"{written} catching tests written to {path}", markup=False)
    bad = render(console, rows)
    if record and current is not None:
        gaps = {row.task.phase for row in rows if row.problems} | set(_short_red_teams(rows))
        honest = {p.name for p in phases if p.number not in gaps}
        kept = ledger.record({p.name: current[p.name] for p in phases}, honest)
        path = ledger.PATH.relative_to(curriculum.ROOT)
        console.print(f"{kept} honest phase(s) recorded in {path}", markup=False)
    for line in time_lines(seconds):
        console.print(line, markup=False)
    return 1 if bad else 0
