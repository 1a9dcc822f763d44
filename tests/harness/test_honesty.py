"""The honest-kata checks themselves, on a tiny course built here.

Reference mode: a stub fails only through its NotImplementedError, a decoy is caught only by an
assertion of the test (a decoy that dies of NameError, skips, or is caught by nothing is reported),
accepted variants must pass. Kata mode: each way a learner's file could pass without doing the
task (skip, patch pytest, load the reference, an object equal to everything) is refused with one
line. Each mode is one pytest run in a subprocess with ``KATAS_ROOT`` pointing at the course.
"""

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from .honesty_course import DECOYS, PROBES, REFERENCE, STUB, TASKS, TESTS

# each module-scoped run starts Python, JAX and pytest: a battery (CI runs it once)
pytestmark = [pytest.mark.timeout(240), pytest.mark.battery]


def _course(root: Path, phases: Mapping[int, str | None]) -> Path:
    """A course with one phase per entry; the entry is that phase's kata.py (None: the stub)."""
    (root / "conftest.py").write_text('pytest_plugins = ["kata_harness.plugin"]\n')
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = ["--import-mode=importlib"]\n'
    )
    (root / "decoys").mkdir()
    for number, kata in phases.items():
        folder = root / "katas" / f"phase{number}"
        folder.mkdir(parents=True)
        (folder / "tasks.toml").write_text(TASKS)
        (folder / f"test_phase{number}.py").write_text(TESTS)
        (folder / "kata.py").write_text(kata or STUB.format(n=number))
        (root / "reference" / f"phase{number}").mkdir(parents=True)
        (root / "reference" / f"phase{number}" / "kata.py").write_text(REFERENCE)
        (root / "decoys" / f"phase{number}.py").write_text(DECOYS)
    return root


def _run(root: Path, impl: str, *args: str) -> str:
    env = {
        **os.environ,
        "KATAS_ROOT": str(root),
        "KATAS_IMPL": impl,
        "PYTHONPATH": os.getcwd(),
        "COLUMNS": "1000",
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "katas",
            "-p",
            "no:cacheprovider",
            "-n0",
            "--decoys",
            "-p",
            "no:randomly",
            "-q",
            "--tb=line",
            "-rA",
            *args,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return run.stdout + run.stderr


@pytest.fixture(scope="module")
def tiny_course(tmp_path_factory) -> Path:
    return _course(tmp_path_factory.mktemp("course"), {1: None})


@pytest.fixture(scope="module")
def reference_run(tiny_course) -> str:
    return _run(tiny_course, "reference")


def _line(out: str, test: str) -> str:
    found = [
        line
        for line in out.splitlines()
        if test in line and line.startswith(("PASSED", "FAILED", "ERROR", "SKIPPED"))
    ]
    assert found, f"no line for {test} in:\n{out[-3000:]}"
    return found[0]


def test_reference_passes(reference_run):
    assert _line(reference_run, "test_double[reference]").startswith("PASSED")
    assert _line(reference_run, "test_count[reference]").startswith("PASSED")


def test_stub_counts_as_failing_through_its_todo(reference_run):
    for test in ("test_double[stub]", "test_double_raises_on_text[stub]", "test_count[stub]"):
        assert _line(reference_run, test).startswith("PASSED"), test


@pytest.mark.parametrize("decoy", ["off_by_one", "equal_to_everything"])
def test_decoy_caught_by_an_assertion(reference_run, decoy):
    test = "test_count" if decoy == "equal_to_everything" else "test_double"
    assert _line(reference_run, f"{test}[decoy-{decoy}]").startswith("PASSED")


def test_decoy_caught_by_pytest_raises_that_does_not_raise(reference_run):
    assert _line(reference_run, "test_double_raises_on_text[decoy-never_raises]").startswith(
        "PASSED"
    )


@pytest.mark.parametrize(
    ("decoy", "reason"),
    [
        ("misspelled", "NameError"),
        ("skipper", "Skipped"),
    ],
)
def test_decoy_that_dies_or_skips_is_broken_not_caught(reference_run, decoy, reason):
    line = _line(reference_run, f"test_double[decoy-{decoy}]")
    assert line.startswith("FAILED"), line
    assert "broken decoy: phase1.task1 (double) test_double" in line and reason in line, line


def test_decoy_that_passes_is_a_violation(reference_run):
    line = _line(reference_run, "test_double[decoy-correct_after_all]")
    assert line.startswith("FAILED") and "honest-kata violation" in line, line
    assert "passes on decoy 'correct_after_all'" in line, line


def test_accepted_variants_must_pass(reference_run):
    assert _line(reference_run, "test_double[accepted-plus_itself]").startswith("PASSED")
    assert _line(reference_run, "test_double_raises_on_text[accepted-plus_itself]").startswith(
        "PASSED"
    )
    assert _line(reference_run, "test_count[accepted-count_with_module_helper]").startswith(
        "PASSED"
    )
    line = _line(reference_run, "test_count[accepted-count_plus_one]")
    assert line.startswith("FAILED") and "rejects accepted variant 'count_plus_one'" in line


def test_dev_check_lists_every_gap_and_fails(tiny_course):
    env = {
        **os.environ,
        "KATAS_ROOT": str(tiny_course),
        "PYTHONPATH": os.getcwd(),
        "COLUMNS": "200",
        "PYTEST_XDIST_AUTO_NUM_WORKERS": "0",
    }
    code = "import sys; from katas_cli.main import main; sys.exit(main(['dev', 'check']))"
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tiny_course,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "phase1.task1 (double): decoy misspelled: test_double: broken decoy" in out
    assert "phase1.task1 (double): decoy skipper: test_double: broken decoy" in out
    assert (
        "phase1.task1 (double): decoy correct_after_all: test_double: honest-kata violation" in out
    )
    assert "phase1.task2 (count): 1 decoy(s), at least 2 needed" in out
    assert "phase1.task2 (count): accepted count_plus_one: test_count" in out
    assert "2 tasks, 3 tests, 3 cases; author decoys 3/6 caught" in out
    assert "phase1: 0 red-team answer(s) and 0 probe(s); at least 5 and 2 needed" in out
    assert "off_by_one" not in out  # caught decoys are not problems


def test_stub_that_fails_for_another_reason_is_broken(tmp_path):
    broken_stub = STUB.format(n=1).replace(
        'raise NotImplementedError("phase1 task 2: count")', "return undefined_name  # noqa"
    )
    out = _run(_course(tmp_path, {1: broken_stub}), "reference")
    line = _line(out, "test_count[stub]")
    assert "broken stub: phase1.task2 (count)" in line and "NameError" in line, line


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory) -> tuple[dict[str, int], str]:
    root = tmp_path_factory.mktemp("probes")
    numbers = {name: index for index, name in enumerate(PROBES, start=1)}
    kata = {n: textwrap.dedent(REFERENCE) + "\n" + PROBES[name] for name, n in numbers.items()}
    return numbers, _run(_course(root, kata), "katas")


@pytest.mark.parametrize(
    "probe",
    sorted(
        set(PROBES)
        - {"open_reference", "equal_to_everything", "raises", "rewrite_tests"}
        - {"generator_exit", "system_exit"}
    ),
)
def test_learner_file_reaching_into_the_harness_is_refused(probe_run, probe):
    numbers, out = probe_run
    n = numbers[probe]
    lines = out.splitlines()
    outcomes = [
        line.split()[0]
        for line in lines
        if f" katas/phase{n}/test_" in line and line.startswith(("PASSED", "FAILED", "ERROR"))
    ]
    assert outcomes and set(outcomes) <= {"FAILED", "ERROR"}, outcomes
    refusal = [line for line in lines if f"phase{n}: katas/phase{n}/kata.py line" in line]
    assert refusal and "kata code may not use the test machinery" in refusal[0], out[-3000:]


def test_learner_file_opening_the_reference_is_refused(probe_run):
    numbers, out = probe_run
    n = numbers["open_reference"]
    line = _line(out, f"katas/phase{n}/test_phase{n}.py::test_double ")
    assert line.startswith("FAILED") and "KataGuardError" in line, line
    assert "opens reference/phase1/kata.py" in line, line


def test_learner_file_writing_the_tests_is_refused(probe_run):
    numbers, out = probe_run
    n = numbers["rewrite_tests"]
    line = _line(out, f"katas/phase{n}/test_phase{n}.py::test_double ")
    assert line.startswith("FAILED") and "KataGuardError" in line, line
    assert f"opens katas/phase{n}/test_phase1.py" in line, line


def test_result_equal_to_everything_is_refused(probe_run):
    numbers, out = probe_run
    n = numbers["equal_to_everything"]
    line = _line(out, f"katas/phase{n}/test_phase{n}.py::test_count ")
    assert line.startswith("FAILED"), line
    assert f"phase{n}.task2 (count) returned the wrong type: expected int, got Yes" in line, line


@pytest.mark.parametrize(
    ("probe", "raised"), [("generator_exit", "GeneratorExit"), ("system_exit", "SystemExit")]
)
def test_a_base_exception_from_kata_code_fails_the_task_in_one_line(probe_run, probe, raised):
    """Not an Exception, so neither the test's `except Exception` nor an assertion sees it:
    the task fails all the same, naming the task and the line that raised it."""
    numbers, out = probe_run
    n = numbers[probe]
    line = _line(out, f"katas/phase{n}/test_phase{n}.py::test_count ")
    assert line.startswith("FAILED"), line
    assert f"phase{n}.task2 (count) raised {raised} [phase{n}/kata.py:" in line, line
    assert "ends a test or the run without a verdict" in line, line


def test_an_exception_from_kata_code_is_one_line_unless_asked(probe_run, tmp_path):
    numbers, out = probe_run
    n = numbers["raises"]
    line = _line(out, f"katas/phase{n}/test_phase{n}.py::test_count ")
    assert (
        f"phase{n}.task2 (count) raised ZeroDivisionError: integer division or modulo by "
        f"zero [phase{n}/kata.py:"
    ) in line, line
    assert "Traceback" not in out.split(f"test_phase{n}.py::test_count")[0][-2000:]
    kata = textwrap.dedent(REFERENCE) + "\n" + PROBES["raises"]
    long = _run(_course(tmp_path, {1: kata}), "katas", "--tb=long", "-k", "test_count")
    assert "def _halve(items):" in long and "ZeroDivisionError" in long, long[-2000:]


def test_a_probe_that_never_answers_is_rejected_a_red_team_answer_that_hangs_is_broken(tmp_path):
    """The red team's probe (a learner's file) sleeping in a task is stopped by pytest-timeout
    and rejected: a learner's file that never answers fails its task. A red-team answer that
    sleeps is stopped too but stays broken: it must be caught by an assertion."""
    root = _course(tmp_path, {1: None})
    probes = root / "decoys" / "redteam" / "phase1_probes"
    probes.mkdir(parents=True)
    sleeps = "\nimport time\n\n\ndef double(x):\n    time.sleep(600)\n    return 2 * x\n"
    (probes / "never_answers.py").write_text(
        "# probe: double: sleeps instead of answering\n" + textwrap.dedent(REFERENCE) + sleeps
    )
    (root / "decoys" / "redteam" / "phase1_round1.py").write_text(
        "import time\n\nfrom kata_harness.decoys import wrong\n\n\n"
        "@wrong('double', why='sleeps instead of answering')\n"
        "def hangs(x):\n    time.sleep(600)\n    return 2 * x\n"
    )
    out = _run(root, "reference", "-o", "timeout=10", "-k", "double")
    assert _line(out, "test_double[probe-never_answers]").startswith("PASSED"), out[-3000:]
    assert "probe-never_answers is caught already (by test_double)" in out, out[-3000:]
    line = _line(out, "test_double[redteam-hangs]")
    assert line.startswith("FAILED") and "broken redteam" in line, line
    assert "the test timed out" in line, line
