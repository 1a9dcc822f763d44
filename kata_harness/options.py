"""Command-line options, configuration and the report header of the kata plugin.

- ``--impl {katas,reference}`` (or ``KATAS_IMPL``) picks the module the ``kata`` fixture hands to
  a test; ``--spellings`` adds the accepted spellings in reference mode, ``--decoys`` the decoy
  sweep and the spellings; ``--no-honesty`` drops the stub and variant runs (for a tree whose
  katas/ holds solved work).
- A user's ``XLA_FLAGS`` keep only their dump flags, so tuning flags cannot change the facts;
  the harness adds its own (:data:`OWN_XLA_FLAGS`).
- Reference mode spreads its runs over the cores (pytest-xdist) unless told otherwise.
"""

from __future__ import annotations

import os
from importlib import metadata

import pytest

from . import curriculum, fresh, guard, interrupts, loading, predict, snapshots, verdict, versions

CPU_DEVICES = curriculum.CPU_DEVICES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("katas")
    group.addoption(
        "--impl",
        choices=loading.IMPLS,
        default=os.environ.get("KATAS_IMPL", "katas"),
        help="run kata tests against the learner's files (katas, default) or the reference "
        "solutions; the KATAS_IMPL environment variable sets the default",
    )
    group.addoption(
        "--decoys",
        action="store_true",
        default=os.environ.get("KATAS_DECOYS") == "1",
        help="in reference mode, also run every decoy against the tests it names (the full "
        "sweep; `katas dev check` runs it and prints the census); KATAS_DECOYS=1 sets it",
    )
    group.addoption(
        "--spellings",
        action="store_true",
        default=os.environ.get("KATAS_SPELLINGS") == "1",
        help="in reference mode, also run every accepted spelling of a task (a correct answer "
        "written differently from the reference) against its tests; --decoys and `katas dev "
        "check` run them too; KATAS_SPELLINGS=1 sets it",
    )
    group.addoption(
        "--no-honesty",
        action="store_true",
        help="in reference mode, skip the honest-kata checks against stubs and decoys "
        "(needed when katas/ holds solved work instead of the shipped stubs)",
    )
    group.addoption(
        "--group-skips",
        metavar="PATH",
        default=None,
        help="write the node ids of the tests that skipped because an optional group is "
        "missing to PATH, one per line (CI runs just those again once the groups are "
        "installed: `pytest @PATH`)",
    )
    group.addoption(
        fresh.OPTION,
        type=int,
        default=None,
        metavar="N",
        help="draw the fresh cases of predict and decide tests from seed N (default: from "
        "each kata file's content, so an edited file gets new cases)",
    )


# LLVM's optimization level for the machine code XLA emits: it decides no HLO pass, so the
# optimized HLO every test reads is the one XLA's default level (2) prints (the battery in
# tests/cli/test_programs.py compiles every program at both levels and compares the texts). At 0
# a compile takes 0.71 of the CPU time (bench/bench_llvm_level.py) and the README's test command
# 0.85; the machine code runs slower, and no test times it.
OWN_XLA_FLAGS = ("--xla_backend_optimization_level=0",)


def filter_xla_flags() -> str | None:
    """Keep only dump flags of a user's XLA_FLAGS, so tuning flags cannot change the facts, and
    add the harness's own; returns the user's flags dropped."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    kept = [f for f in flags if f.startswith("--xla_dump")]
    dropped = [f for f in flags if not f.startswith("--xla_dump") and f not in OWN_XLA_FLAGS]
    os.environ["XLA_FLAGS"] = " ".join([*kept, *OWN_XLA_FLAGS])
    return " ".join(dropped) or None


_dropped_flags = pytest.StashKey[str | None]()
_device_note = pytest.StashKey[str | None]()


def pytest_configure(config: pytest.Config) -> None:
    impl = config.getoption("--impl")
    if impl not in loading.IMPLS:
        raise pytest.UsageError(f"KATAS_IMPL={impl!r} is not one of {', '.join(loading.IMPLS)}")
    if getattr(config.option, "update_snapshots", False) and impl != "reference":
        raise pytest.UsageError(
            "--snapshot-update is refused unless --impl=reference: snapshots are pinned from "
            f"the reference only; run: {snapshots.REPIN_COMMAND}"
        )
    config.stash[_dropped_flags] = filter_xla_flags()
    guard.install()
    verdict.record_checks()
    config.stash[_device_note] = None
    if not hands_tests_to_workers(config):
        _configure_jax(config)
    interrupts.watch()
    config.addinivalue_line("markers", "task(function): the kata task a test checks")
    for phase in curriculum.phases():
        config.addinivalue_line("markers", f"{phase.name}: every test of {phase.title}")
        for task in phase.tasks:
            config.addinivalue_line("markers", f"{task.mark}: {task.id} {task.function}")


def hands_tests_to_workers(config: pytest.Config) -> bool:
    """Whether this process is pytest-xdist's controller: it collects and runs no test, so it
    needs neither JAX nor its backend (importing JAX and starting the CPU client before the
    workers start delayed every worker by that much)."""
    return (
        not hasattr(config, "workerinput")
        and not config.getoption("collectonly")
        and config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
    )


def _configure_jax(config: pytest.Config) -> None:
    import jax

    if jax.config.jax_num_cpu_devices != CPU_DEVICES:  # a nested pytester run has set it
        try:
            jax.config.update("jax_num_cpu_devices", CPU_DEVICES)
        except RuntimeError:  # JAX already ran in this process (pytest.main from a program)
            config.stash[_device_note] = (
                f"JAX was initialized before the tests with {jax.device_count()} device(s); "
                f"tests that need {CPU_DEVICES} CPU devices will skip"
            )
    predict.count_client_compiles()  # starts the backend: after the device count is set


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Reference mode runs every variant of every test: spread it over the cores (pytest-xdist,
    ``-n auto``, a test file per worker so its module-level compiles happen once) unless ``-n``
    is given, snapshots are being pinned, or this is a worker."""
    if (
        config.getoption("--impl") == "reference"
        and config.pluginmanager.hasplugin("xdist")
        and config.getoption("numprocesses", None) is None
        and not getattr(config.option, "update_snapshots", False)
        and "PYTEST_XDIST_WORKER" not in os.environ
    ):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadfile"


def pytest_report_header(config: pytest.Config) -> list[str]:
    impl = config.getoption("--impl")
    seed = config.getoption(fresh.OPTION)
    cases = (
        f"fresh cases: seed {seed} ({fresh.OPTION})"
        if seed is not None
        else f"fresh cases: seeded by each kata file's content ({fresh.OPTION}=N to fix them)"
    )
    if hands_tests_to_workers(config):  # no JAX in this process: the version installed
        lines = [
            f"katas: impl={impl}, jax {metadata.version('jax')}; the platform, its pins and the "
            "version gates are pytest-xdist's workers' (a test they skip says why)",
            cases,
        ]
    else:
        import jax

        platform = snapshots.platform_key()
        lines = [f"katas: impl={impl}, jax {jax.__version__}, snapshots for {platform}", cases]
        lines += versions.header_lines() + snapshots.header_lines()
    dropped = config.stash.get(_dropped_flags, None)
    if dropped:
        lines.append(f"katas: ignoring XLA_FLAGS that change compilation: {dropped}")
    note = config.stash.get(_device_note, None)
    if note:
        lines.append(f"katas: {note}")
    return lines
