"""Gated facts recorded instead of asserted (``KATAS_GATED_FACTS=record``, kata_harness.versions).

A run under an older JAX is then at once the ordinary test run of that JAX (every outcome is
what a plain run gives: a whole-test fact that is off skips with its gate's reason) and a record
of which gated facts hold there: each test that evaluated one carries the JUnit user property
``gated-fact`` = ``"NAME holds"`` or ``"NAME fails"``. ``katas upgrade-report`` reads both.

The run's JUnit XML also says which JAX ran and how gated facts were treated (the global
properties ``jax``, ``katas-gated-facts`` and ``katas-gates-off``), so a report can check a
JUnit file it is handed was made the way it needs.
"""

from __future__ import annotations

import pytest

from . import verdict, versions

PROPERTY = "gated-fact"
MARK = "katas_gate"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Register the mark; say in the JUnit XML which JAX ran and how gated facts were treated."""
    from _pytest.junitxml import xml_key

    session.config.addinivalue_line("markers", f"{MARK}(name): a whole-test gated fact, recorded")
    xml = session.config.stash.get(xml_key, None)
    if xml is None:
        return
    mode = "record" if versions.recording() else "all" if versions.check_all_facts() else "skip"
    xml.add_global_property("jax", versions.running_jax())
    xml.add_global_property("katas-gated-facts", mode)
    off = ",".join(g.name for g in versions.gated_off())
    xml.add_global_property("katas-gates-off", off or "none")


def start() -> None:
    versions.RECORDED.clear()


def finish(item: pytest.Item, outcome) -> None:
    """After a test's call: a whole-test fact that is off here is recorded and reported skipped
    with its gate's reason; every recorded fact becomes a ``gated-fact`` user property."""
    gates = [mark.args[0] for mark in item.iter_markers(MARK)]
    error = outcome.exception if outcome.excinfo else None
    if gates and not isinstance(error, pytest.skip.Exception):
        held = error is None and not verdict.swallowed()
        versions.RECORDED.extend((name, held) for name in gates)
        _forget_soft_failures()
        said = "holds" if held else "fails"
        reason = f"{versions.skip_reason(gates[0])} (recorded: the fact {said} here)"
        outcome.force_exception(pytest.skip.Exception(reason, _use_item_location=True))
    seen: dict[str, bool] = {}
    for name, held in versions.RECORDED:
        seen[name] = seen.get(name, True) and held
    for name, held in seen.items():
        item.user_properties.append((PROPERTY, f"{name} {'holds' if held else 'fails'}"))
    versions.RECORDED.clear()


def _forget_soft_failures() -> None:
    """A whole-test fact's `with check:` failures belong to the recorded fact, not the test."""
    from pytest_check import check_log

    check_log.clear_failures()
    verdict.start()
