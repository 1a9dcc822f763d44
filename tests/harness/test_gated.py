"""KATAS_GATED_FACTS=record: a gated fact that is off for the running JAX is evaluated and
recorded in the JUnit XML instead of asserted, every other outcome is the ordinary one, and
`katas upgrade-report --gate` fails on an ordinary failure only (kata_harness/gated.py)."""

from __future__ import annotations

import pytest

from katas_cli import upgrade_tests

OFF = "xla-attribute-table"  # >=0.12: off on the jax 0.10.2 the conftest below pretends to run
IN_TEST = "bf16-dots-stay-bf16"  # >=0.11

CONFTEST = """
from kata_harness import versions
versions.running_jax = lambda: "0.10.2"
"""

TESTS = f"""
from pytest_check import check
from kata_harness import versions

@versions.requires_jax("{OFF}")
def test_whole_fact_that_fails():
    assert 1 == 2

@versions.requires_jax("{OFF}")
def test_whole_fact_that_holds():
    pass

def test_fact_inside_a_test():
    if versions.checked("{IN_TEST}"):
        with check, versions.fact("{IN_TEST}"):
            assert 1 == 2
    assert 2 == 2

def test_ordinary_failure():
    assert 1 == 2
"""


@pytest.mark.battery
@pytest.mark.timeout(180)  # a pytest run that imports JAX, in a subprocess
def test_off_facts_are_recorded_and_only_ordinary_failures_fail(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_facts=TESTS)
    monkeypatch.setenv("KATAS_GATED_FACTS", "record")
    xml = pytester.path / "out.xml"
    result = pytester.runpytest_subprocess(
        "-p", "kata_harness.plugin", "-p", "no:randomly", f"--junit-xml={xml}"
    )
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*fact(s) recorded, not asserted on this version*"])
    run = upgrade_tests.read_junit(xml, "0.10.2", result.ret)
    assert run.outcomes == {
        "test_facts.py::test_whole_fact_that_fails": "skipped",
        "test_facts.py::test_whole_fact_that_holds": "skipped",
        "test_facts.py::test_fact_inside_a_test": "passed",
        "test_facts.py::test_ordinary_failure": "failed",
    }
    assert run.gated == {
        "test_facts.py::test_whole_fact_that_fails": {OFF: False},
        "test_facts.py::test_whole_fact_that_holds": {OFF: True},
        "test_facts.py::test_fact_inside_a_test": {IN_TEST: False},
    }
    lines, ok = upgrade_tests.gate_lines((run, run))
    assert not ok and lines[-1] == "gate: FAILED"
    assert "  test_facts.py::test_ordinary_failure: assert 1 == 2" in lines
    said = upgrade_tests._global_properties(xml)
    assert said["jax"] == "0.10.2" and said["katas-gated-facts"] == "record"
    assert OFF in said["katas-gates-off"]
    # a file that left facts unchecked is refused as the NEW side of a report
    with pytest.raises(Exception, match="not 0.12"):
        upgrade_tests.from_junit_elsewhere(xml, "0.12", run)


@pytest.mark.battery
@pytest.mark.timeout(180)  # a pytest run that imports JAX, in a subprocess
def test_without_recording_an_off_fact_is_skipped_as_before(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_facts=TESTS)
    result = pytester.runpytest_subprocess("-p", "kata_harness.plugin", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*fact(s) not checked on this version*"])
