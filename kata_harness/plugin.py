"""The pytest plugin behind every kata test.

- ``--impl {katas,reference}`` (or ``KATAS_IMPL``) picks the module the ``kata`` fixture hands to
  a test, resolved from the test file's phase folder.
- In reference mode each kata test also runs against the shipped stub, against the accepted
  variants of its task and, with ``--decoys``, against the decoys that name it (the honest-kata
  checks). The stub and
  decoys must fail, for the right reason (:mod:`.verdict`): a pass is an honest-kata violation and
  a failure for another reason a broken decoy, both naming phase, task and test. Accepted
  variants must pass.
- Kata code may not reach into the test machinery (:mod:`.guard`), and every task function
  returns the type its task asks for (:mod:`.contract`).
- An unfinished task, a kata that does not import, or one that runs past the timeout is reported
  as one short line instead of a traceback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from . import curriculum, guard, loading, snapshots, verdict, versions
from .contract import ContractViolation
from .decoys import Accepted, Decoy

CPU_DEVICES = curriculum.CPU_DEVICES


@dataclass(frozen=True, slots=True)
class Variant:
    """What a kata test runs against: the learner's file, the reference, the stub, a decoy or an
    accepted variant."""

    kind: str
    spec: Decoy | Accepted | None = None

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.spec.name}" if self.spec else self.kind

    @property
    def expects_failure(self) -> bool:
        return self.kind in ("stub", "decoy")


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
        "--no-honesty",
        action="store_true",
        help="in reference mode, skip the honest-kata checks against stubs and decoys "
        "(needed when katas/ holds solved work instead of the shipped stubs)",
    )


def _filter_xla_flags() -> str | None:
    """Keep only dump flags in XLA_FLAGS so a user's tuning flags cannot change the facts."""
    flags = os.environ.get("XLA_FLAGS")
    if not flags:
        return None
    kept = [f for f in flags.split() if f.startswith("--xla_dump")]
    dropped = [f for f in flags.split() if not f.startswith("--xla_dump")]
    os.environ["XLA_FLAGS"] = " ".join(kept)
    return " ".join(dropped) or None


def pytest_configure(config: pytest.Config) -> None:
    impl = config.getoption("--impl")
    if impl not in loading.IMPLS:
        raise pytest.UsageError(f"KATAS_IMPL={impl!r} is not one of {', '.join(loading.IMPLS)}")
    if getattr(config.option, "update_snapshots", False) and impl != "reference":
        raise pytest.UsageError(
            "--snapshot-update is refused unless --impl=reference: snapshots are pinned from "
            f"the reference only; run: {snapshots.REPIN_COMMAND}"
        )
    config.stash[_dropped_flags] = _filter_xla_flags()
    guard.install()
    verdict.record_checks()
    import jax

    config.stash[_device_note] = None
    if jax.config.jax_num_cpu_devices != CPU_DEVICES:  # a nested pytester run has set it
        try:
            jax.config.update("jax_num_cpu_devices", CPU_DEVICES)
        except RuntimeError:  # JAX already ran in this process (pytest.main from a program)
            config.stash[_device_note] = (
                f"JAX was initialized before the tests with {jax.device_count()} device(s); "
                f"tests that need {CPU_DEVICES} CPU devices will skip"
            )
    config.addinivalue_line("markers", "task(function): the kata task a test checks")
    for phase in curriculum.phases():
        config.addinivalue_line("markers", f"{phase.name}: every test of {phase.title}")
        for task in phase.tasks:
            config.addinivalue_line("markers", f"{task.mark}: {task.id} {task.function}")


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


_dropped_flags = pytest.StashKey[str | None]()
_device_note = pytest.StashKey[str | None]()


def pytest_report_header(config: pytest.Config) -> list[str]:
    import jax

    lines = [
        f"katas: impl={config.getoption('--impl')}, jax {jax.__version__}, "
        f"snapshots for {snapshots.platform_key()}"
    ]
    lines += versions.header_lines() + snapshots.header_lines()
    dropped = config.stash.get(_dropped_flags, None)
    if dropped:
        lines.append(f"katas: ignoring XLA_FLAGS that change compilation: {dropped}")
    note = config.stash.get(_device_note, None)
    if note:
        lines.append(f"katas: {note}")
    return lines


def _task_of(node: pytest.Item | pytest.Function) -> tuple[curriculum.Phase, curriculum.Task]:
    phase = curriculum.phase_of_path(Path(node.path))
    mark = node.get_closest_marker("task")
    if phase is None or mark is None or not mark.args:
        raise pytest.UsageError(f"{node.nodeid}: a kata test needs @pytest.mark.task('<function>')")
    try:
        return phase, phase.task(mark.args[0])
    except KeyError as error:
        raise pytest.UsageError(f"{node.nodeid}: {error.args[0]}") from None


def _variants(
    config: pytest.Config, phase: curriculum.Phase, task: curriculum.Task, test_name: str
) -> list[Variant]:
    if config.getoption("--impl") == "katas":
        return [Variant("katas")]
    variants = [Variant("reference")]
    if config.getoption("--no-honesty"):
        return variants
    variants.append(Variant("stub"))
    if config.getoption("--decoys"):
        variants += [
            Variant("decoy", d) for d in loading.phase_decoys(phase) if test_name in d.caught_by
        ]
    variants += [
        Variant("accepted", a) for a in loading.phase_accepted(phase) if a.replaces == task.function
    ]
    return variants


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kata" not in metafunc.fixturenames:
        return
    phase, task = _task_of(metafunc.definition)
    variants = _variants(metafunc.config, phase, task, metafunc.definition.originalname)
    if len(variants) == 1 and variants[0].kind == "katas":
        return
    metafunc.parametrize("kata", variants, indirect=True, ids=[v.id for v in variants])


@pytest.fixture
def kata(request: pytest.FixtureRequest) -> ModuleType:
    """The module under test: learner's kata, reference, shipped stub or a decoy."""
    variant: Variant = getattr(request, "param", Variant("katas"))
    phase, _ = _task_of(request.node)
    try:
        if variant.spec is not None:
            return loading.load_variant(phase, variant.spec)
        if variant.kind == "stub":
            return loading.load_stub(phase)
        return loading.load_impl(phase, variant.kind)
    except loading.KataLoadError as error:
        message = str(error)
    pytest.fail(message, pytrace=False)  # outside the except: no chained traceback


@pytest.fixture(autouse=True)
def _fresh_jax_caches():
    """Clear JAX's trace and compile caches so trace counting never leaks between tests."""
    import jax

    jax.clear_caches()
    yield


@pytest.fixture
def hlo_snapshot(request: pytest.FixtureRequest, snapshot):
    """Assert text (already normalized) against the pinned snapshot of this test."""
    callspec = getattr(request.node, "callspec", None)
    variant: Variant = callspec.params["kata"] if callspec else Variant("katas")
    key = snapshots.platform_key()
    status = snapshots.pin_status(key, Path(request.node.path))
    updating = bool(request.config.option.update_snapshots)
    calls = [0]  # syrupy names the n-th snapshot of a test "<test>.n" (the first has no suffix)

    def check(text: str) -> None:
        __tracebackhide__ = True
        action, message = snapshots.decide(variant.kind, updating, status)
        if action == "fail":
            pytest.fail(message, pytrace=False)
        if action == "skip":
            pytest.skip(message)
        if action == "update":
            snapshots.record_versions(key, Path(request.node.path))
        if action in ("update", "syrupy"):
            assert snapshot(extension_class=snapshots.NormalizedHloExtension) == text
            return
        index, calls[0] = calls[0], calls[0] + 1
        directory = snapshots.snapshot_dir(key, Path(request.node.path))
        suffix = f".{index}" if index else ""
        pinned = directory / f"{request.node.originalname}{suffix}.txt"
        if not pinned.is_file():
            pytest.skip(f"no snapshot pinned at {pinned.relative_to(curriculum.ROOT)}")
        snapshots.compare_with_pinned(pinned, text)

    return check


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if curriculum.phase_of_path(Path(item.path)) is None:
            continue
        phase, task = _task_of(item)
        item.add_marker(getattr(pytest.mark, phase.name))
        item.add_marker(getattr(pytest.mark, task.mark))


def _todo_message(text: str) -> str | None:
    match = verdict.TODO_PATTERN.search(text)
    if not match:
        return None
    try:
        phase = curriculum.phase(int(match.group(1)))
        task = phase.tasks[int(match.group(2)) - 1]
    except (KeyError, IndexError):
        return None
    kata_file = phase.kata_path.relative_to(curriculum.ROOT)
    return (
        f"{task.id} ({task.function}: {task.title}) is not done yet: edit {kata_file}; "
        f"hint: {task.hint_command}"
    )


def _short_failure(item: pytest.Item, call: pytest.CallInfo) -> str | None:
    """One line for an unfinished task or a timeout; None to keep pytest's own report."""
    if call.excinfo is None:
        return None
    error = call.excinfo.value
    todo = verdict.todo_of(error)
    if todo is not None:
        return _todo_message(str(todo))
    phase, task = _task_of(item)
    kata_file = phase.kata_path.relative_to(curriculum.ROOT)
    if isinstance(error, ContractViolation):
        return f"{error}; read the task's docstring in {kata_file}"
    if type(error).__name__ == "Failed" and str(error).startswith("Timeout"):
        timeout = item.config.getini("timeout")
        return (
            f"{task.id} ({task.function}) did not finish within {timeout} s: look for a "
            f"loop that never ends in {kata_file}"
        )
    if isinstance(error, AssertionError) or not isinstance(error, Exception):
        return None
    if type(error).__module__.startswith(("_pytest", "pytest_check")):
        return None
    if item.config.option.tbstyle in ("long", "native"):
        return None  # asked for the whole traceback
    item.stash[_traceback] = verdict.kata_traceback(error, Path(item.path))
    where = _kata_frame(call.excinfo.tb, item)
    message = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return (
        f"{task.id} ({task.function}) raised {type(error).__name__}: {message} "
        f"[{where}]; check what {kata_file} returns for this task"
    )


def _kata_frame(tb, item: pytest.Item) -> str:
    """The innermost traceback line in a kata file, else in the test file."""
    in_kata, in_test = None, None
    while tb is not None:
        filename = Path(tb.tb_frame.f_code.co_filename)
        if filename.name == curriculum.KATA_FILE:
            in_kata = f"{filename.parent.name}/{filename.name}:{tb.tb_lineno}"
        elif filename == Path(item.path):
            in_test = f"{filename.name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return in_kata or in_test or "?"


MAX_CAPTURED = 2000


def _truncate_sections(report: pytest.TestReport) -> None:
    """A kata that prints megabytes must not bury its failure: cut captured output short."""
    cut = []
    for title, text in report.sections:
        if len(text) > MAX_CAPTURED:
            text = f"{text[:MAX_CAPTURED]}\n... ({len(text) - MAX_CAPTURED} more characters cut)"
        cut.append((title, text))
    report.sections = cut


_call_error = pytest.StashKey[BaseException | None]()
_traceback = pytest.StashKey[str]()  # kata and test frames of an exception cut to one line


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Keep the test's own exception: pytest_check replaces it in the report."""
    verdict.start()
    outcome = yield
    item.stash[_call_error] = outcome.excinfo[1] if outcome.excinfo else None


def _errors(item: pytest.Item) -> list[BaseException]:
    """Every failure of the test's call: swallowed by check blocks, then the one that ended it."""
    errors = verdict.swallowed()
    last = item.stash.get(_call_error, None)
    return errors + ([last] if last is not None else [])


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    params = getattr(item, "callspec", None)
    if params is not None:
        variant = params.params.get("kata")
    else:
        variant = Variant("katas") if "kata" in getattr(item, "fixturenames", ()) else None
    if not isinstance(variant, Variant):
        return
    if report.when == "call":
        _judge(item, call, report, variant)
    if report.when == "call" or report.failed:
        _record(item, report, variant)


RECORD = "kata"


def _record(item: pytest.Item, report: pytest.TestReport, variant: Variant) -> None:
    """The structured outcome of a kata test, for the CLI and `katas dev check`.

    Added to ``report.user_properties`` as ``("kata", {...})``: phase, task id and function,
    test, variant id and kind, outcome after the honest-kata verdict, one-line message, and the
    kata's traceback when an exception from kata code was cut to that line.
    """
    phase, task = _task_of(item)
    text = report.longreprtext.strip() if report.failed or report.skipped else ""
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    report.user_properties.append(
        (
            RECORD,
            {
                "phase": phase.name,
                "task": task.id,
                "function": task.function,
                "test": getattr(item, "originalname", item.name),
                "variant": variant.id,
                "kind": variant.kind,
                "when": report.when,
                "outcome": report.outcome,
                "message": text.splitlines()[0][:300] if text else "",
                "traceback": item.stash.get(_traceback, ""),
            },
        )
    )


def _judge(
    item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, variant: Variant
) -> None:
    if variant.expects_failure:
        _invert(item, report, variant)
        return
    _truncate_sections(report)
    phase, task = _task_of(item)
    if report.skipped and call.excinfo and verdict.from_kata_code(call.excinfo.value):
        report.outcome = "failed"
        report.longrepr = (
            f"{task.id} ({task.function}) is not done: your code called "
            f"pytest.skip or pytest.xfail [{verdict.where(call.excinfo.value)}]"
        )
        return
    if report.failed and variant.kind == "katas":
        short = _short_failure(item, call)
        if short:
            report.longrepr = short
    elif report.failed and variant.kind == "accepted":
        assert isinstance(variant.spec, Accepted)
        report.longrepr = (
            f"honest-kata violation: {task.id} ({task.function}) "
            f"{item.originalname} rejects accepted variant {variant.spec.name!r} "
            f"({variant.spec.why})\n{report.longreprtext}"
        )


def _invert(item: pytest.Item, report: pytest.TestReport, variant: Variant) -> None:
    """Stub and decoy runs must fail through the test doing its job (see :mod:`.verdict`)."""
    phase, task = _task_of(item)
    errors = _errors(item)
    if report.skipped and not any(verdict.from_kata_code(e) for e in errors):
        return  # the test skipped for its own reason (a platform gate): nothing was judged
    judged = verdict.judge(variant.kind, phase, errors)
    if judged.caught:
        report.outcome = "passed"
        report.longrepr = None
        return
    test = getattr(item, "originalname", item.name)
    if variant.kind == "stub":
        what = f"the shipped stub {phase.kata_path.relative_to(curriculum.ROOT)}"
    else:
        assert isinstance(variant.spec, Decoy)
        what = f"decoy {variant.spec.name!r} ({variant.spec.why})"
    report.outcome = "failed"
    if judged.reason == "the test passed":
        report.longrepr = (
            f"honest-kata violation: {task.id} ({task.function}) {test} passes on {what}"
        )
    else:
        report.longrepr = (
            f"broken {variant.kind}: {task.id} ({task.function}) {test} on {what}: {judged.reason}"
        )
