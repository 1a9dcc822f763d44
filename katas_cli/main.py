"""`katas`: the learner's and reviewer's command line. `katas --help` lists the commands.

Exit status: 0 ok (also "nothing to show" for a task without a program); 1 a check failed (a
phase still has failing tasks; for `show`/`graph`, a task not done yet or code that does not
compile: one line on stderr); 2 bad usage or input (one line on stderr saying what to do).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import upgrade
from .errors import NothingToShow, RunError, ShowError, UsageError

STAGE_NAMES = ("jaxpr", "stablehlo", "hlo", "optimized")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line on stderr, exit 2
        self.exit(2, f"katas: error: {message} (see: uv run katas --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="katas",
        description="Work through the XLA katas: progress, hints, "
        "watch mode, and the IR your code produces.",
    )
    parser.add_argument("--json", action="store_true", help="status as JSON (no command)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    status = sub.add_parser("status", help="every phase's progress and the current task (default)")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    listing = sub.add_parser("list", help="every task with its outcome and hints used")
    listing.add_argument("--filter", metavar="TEXT", help="only tasks whose id/name/title has TEXT")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    start = sub.add_parser("start", help="work on this phase: its first unfinished task is current")
    start.add_argument("phase", help="phaseN")
    hint = sub.add_parser("hint", help="the next hint level of a task (default: current task)")
    hint.add_argument("target", nargs="?", help="phaseN or phaseN.M (task number or function)")
    run = sub.add_parser("run", help="run one phase's tests against your kata file")
    run.add_argument("phase", help="phaseN")
    run.add_argument("-v", "--verbose", action="store_true", help="also show pytest's output")
    run.add_argument(
        "--full",
        action="store_true",
        help="the whole traceback (kata and test frames) when your code raised",
    )
    watch = sub.add_parser("watch", help="rerun the tests each time you save a kata file")
    watch.add_argument("phase", nargs="?", help="start on this phase (default: current task)")
    watch.add_argument("--manual", action="store_true", help="no file watching: Enter reruns")
    watch.add_argument("--poll", action="store_true", help="poll files (when saves are missed)")
    show = sub.add_parser("show", help="the IR your code (or the reference) produces")
    show.add_argument("phase", help="phaseN or phaseN.M")
    show.add_argument("task", nargs="?", help="task number or function name")
    show.add_argument("--stage", choices=STAGE_NAMES, default="optimized")
    show.add_argument("--reference", action="store_true", help="show the reference's IR")
    show.add_argument(
        "--target",
        metavar="NAME",
        help="compile for a TPU or GPU without the hardware (tpu-v5e:2x2, gpu-h100, ...; "
        "needs uv sync --group tpu / gpu)",
    )
    compare = sub.add_parser("compare", help="reviewers: your code and IR beside the reference")
    compare.add_argument("phase", help="phaseN or phaseN.M")
    compare.add_argument("task", nargs="?", help="task number or function name (default: all)")
    compare.add_argument("--unified", action="store_true", help="unified diffs, not side by side")
    compare.add_argument("--no-ir", action="store_true", help="compare source only (no compiling)")
    reset = sub.add_parser("reset", help="restore a phase's stub (backs up your file first)")
    reset.add_argument("phase", nargs="?", help="phaseN")
    reset.add_argument("--all", action="store_true", help="reset every phase")
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    graph = sub.add_parser("graph", help="the fusion graph of the optimized HLO as SVG")
    graph.add_argument("phase", help="phaseN or phaseN.M")
    graph.add_argument("task", nargs="?", help="task number or function name")
    graph.add_argument("-o", "--output", type=Path, help="SVG path (default .katas/graphs/...)")
    graph.add_argument("--reference", action="store_true", help="graph the reference's HLO")
    dev = sub.add_parser("dev", help="for contributors: checks of the course itself")
    dev_sub = dev.add_subparsers(
        dest="dev_command", parser_class=_Parser, metavar="DEV_COMMAND", required=True
    )
    dev_check = dev_sub.add_parser(
        "check",
        help="honesty census: tests, cases, decoys caught, accepted variants per task; "
        "fails on any gap",
    )
    dev_check.add_argument("phase", nargs="*", help="phaseN ... (default: every phase)")
    dev_check.add_argument(
        "--kata-seed",
        type=int,
        metavar="N",
        help="draw every fresh case from seed N (default: each kata file's content seeds its own)",
    )
    dev_check.add_argument(
        "--record",
        action="store_true",
        help="write the test that caught each red-team answer and probe to "
        "decoys/redteam/catchers.json, where the next census runs it first (only its time "
        "changes), and what each honest phase's census read to decoys/census-ledger.json",
    )
    dev_check.add_argument(
        "--changed",
        action="store_true",
        help="run only the phases whose census in decoys/census-ledger.json no longer holds "
        "(something they read changed), and one more drawn from the checkout (CI)",
    )
    dev_new = dev_sub.add_parser(
        "new", help="write the files of a new phase, with one worked task to start from"
    )
    dev_new.add_argument("phase", help="phaseN (a phase that does not exist yet)")
    upgrade.add_parser(sub)
    return parser


def _status(args: argparse.Namespace, console) -> int:
    from .report import render_status, to_json
    from .state import State
    from .status import refresh

    outcomes = refresh()
    if args.json:
        print(json.dumps(to_json(outcomes, State.load()), indent=1))
    else:
        render_status(console, outcomes, State.load())
    return 0


def _list(args: argparse.Namespace, console) -> int:
    from .report import render_list, to_json
    from .state import State
    from .status import refresh

    outcomes = refresh()
    state = State.load()
    if args.json:
        print(json.dumps(to_json(outcomes, state, args.filter), indent=1))
    else:
        render_list(console, outcomes, state, args.filter)
    return 0


def _hint(args: argparse.Namespace, console) -> int:
    from .hints import show_next_hint
    from .state import State
    from .status import current_task, first_unfinished, refresh, working_phase
    from .targets import parse_target

    if args.target is None:
        outcomes = refresh()
        task = current_task(outcomes, working_phase(State.load()))
    else:
        phase, task = parse_target(args.target)
        if task is None:
            task = first_unfinished(phase, refresh([phase])[phase.name]) or phase.tasks[0]
    show_next_hint(console, task, State.load())  # loaded after refresh, which saves the state
    return 0


def _start(args: argparse.Namespace, console) -> int:
    import time

    from .state import State
    from .status import available
    from .targets import parse_phase

    phase = parse_phase(args.phase)
    State.load().update(lambda current: setattr(current, "started", (phase.name, time.time())))
    console.print(
        f"working on {phase.name}: uv run katas watch shows it first, uv run katas hint "
        f"gives its current task's next hint",
        markup=False,
    )
    if not available(phase):
        console.print(
            f"{phase.name} needs a group that is not installed: its tests that compile skip "
            f"until {phase.install_command}; the tasks that read recorded modules run",
            markup=False,
        )
    return 0


def _run(args: argparse.Namespace, console) -> int:
    from .report import render_phase
    from .runner import run_phases
    from .state import State, phase_keys
    from .status import run_with_progress
    from .targets import parse_phase, require_file

    phase = parse_phase(args.phase)
    require_file(phase)
    keys = phase_keys([phase])
    if args.verbose:
        outcome = run_phases([phase], keys=keys, verbose=True)[phase.name]
    else:
        outcome = run_with_progress([phase], keys)[phase.name]
    State.load().update(lambda current: current.phases.update({phase.name: outcome}))
    render_phase(console, phase, outcome, full=args.full)
    return 0 if all(outcome.task(t).done for t in phase.tasks) else 1


def _one_task(phase_text: str, task_text: str | None):
    from kata_harness.programs import recipe_for

    from .targets import parse_target

    phase, task = parse_target(phase_text, task_text)
    if task is None:
        task = next((t for t in phase.tasks if recipe_for(t) is not None), None)
        if task is None:
            raise UsageError(
                f"nothing to show for {phase.name}: none of its tasks builds an array program"
            )
    return phase, task


def _show(args: argparse.Namespace, console) -> int:
    from rich.markup import escape

    from .show import capture_task, fusion_summary, highlight, stage_text

    _, task = _one_task(args.phase, args.task)
    shown = capture_task(task, "reference" if args.reference else "katas", target=args.target)
    text = stage_text(shown.capture, args.stage)
    who = "reference" if args.reference else "your code"
    if shown.recipe.given:
        who = "the tests' program"
    where = f" for {args.target}" if args.target else ""
    console.print(
        f"[bold]{task.id}[/] {task.function} ({who}): {args.stage}{escape(where)}, "
        f"program: {escape(shown.recipe.about)}"
    )
    if console.is_terminal:
        console.print(highlight(text, args.stage), end="")
    else:
        console.print(text, end="", markup=False)
    if args.stage == "optimized":
        console.print(fusion_summary(shown.capture.optimized_hlo_text), markup=False)
    return 0


def _compare(args: argparse.Namespace, console) -> int:
    from .compare import compare
    from .targets import parse_target

    phase, task = parse_target(args.phase, args.task)
    compare(
        console,
        phase,
        [task] if task else list(phase.tasks),
        unified=args.unified,
        ir=not args.no_ir,
    )
    return 0


def _reset(args: argparse.Namespace, console) -> int:
    from .reset import reset
    from .targets import all_phases, parse_phase

    if args.all == (args.phase is not None):
        raise UsageError("reset takes one phase (katas reset phaseN) or --all")
    phases = list(all_phases()) if args.all else [parse_phase(args.phase)]
    names = ", ".join(p.name for p in phases)
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(f"reset of {names} needs confirmation: rerun with --yes")
        answer = input(f"Reset {names} to the shipped stub? Your file is backed up first. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            console.print("nothing was reset")
            return 0
    for phase in phases:
        saved, commit, changed = reset(phase)
        if not changed:
            console.print(f"{phase.name}: already the stub of commit {commit[:10]}; left as is")
            continue
        where = f"your version is in {saved}" if saved else "there was no file to back up"
        console.print(f"{phase.name}: reset to the stub of commit {commit[:10]}; {where}")
    return 0


def _graph(args: argparse.Namespace, console) -> int:
    from .graph import graph_task

    _, task = _one_task(args.phase, args.task)
    impl = "reference" if args.reference else "katas"
    console.print(graph_task(task, impl, args.output), markup=False)
    return 0


def _dev(args: argparse.Namespace, console) -> int:
    from .devcheck import check
    from .targets import all_phases, parse_phase

    if args.dev_command == "new":
        return _dev_new(args.phase, console)
    phases = [parse_phase(p) for p in args.phase] if args.phase else list(all_phases())
    return check(console, phases, args.kata_seed, args.record, args.changed)


def _dev_new(phase: str, console) -> int:
    from .devnew import new_phase

    number = phase.removeprefix("phase")
    if not number.isdigit():
        raise UsageError(f"{phase!r} is not phaseN")
    for path in new_phase(int(number)):
        console.print(f"wrote {path}", markup=False)
    console.print(
        f"next: uv run pytest katas/phase{number} --impl=reference, then uv run katas dev check "
        f"phase{number} says what the phase still lacks (CONTRIBUTING.md)",
        markup=False,
    )
    return 0


COMMANDS = {
    "dev": _dev,
    "status": _status,
    "list": _list,
    "hint": _hint,
    "start": _start,
    "run": _run,
    "show": _show,
    "compare": _compare,
    "reset": _reset,
    "graph": _graph,
    "upgrade-report": upgrade.command,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .status import make_console

    console = make_console()
    try:
        if args.command == "watch":
            from .targets import parse_phase
            from .watch import watch

            start = parse_phase(args.phase) if args.phase else None
            return watch(console, manual=args.manual, poll=args.poll, start=start)
        return COMMANDS[args.command or "status"](args, console)
    except (UsageError, RunError) as error:
        print(f"katas: error: {error}", file=sys.stderr)
        return 2
    except NothingToShow as error:
        print(error)
        return 0
    except ShowError as error:
        print(f"katas: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def script() -> None:
    """The ``katas`` command. After ``katas dev check`` the process ends without Python's
    teardown: the census ran IREE's runtime in this process, and its native objects, finalized
    while the interpreter shuts down, can crash it (exit 139 after the census had printed "all
    honest", seen on about half the runs of ``katas dev check phase15``); the census's own exit
    code is the answer."""
    code = main()
    if sys.argv[1:3] == ["dev", "check"]:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
