"""The pytest plugin behind every kata test (``pytest_plugins = ["kata_harness.plugin"]``).

Each job lives in its own module; this one gathers their hooks and fixtures for pytest:

- :mod:`.options`: ``--impl``, ``--decoys``, ``--no-honesty``, XLA_FLAGS filtering, the header,
  the default xdist run in reference mode;
- :mod:`.variants`: what each test runs against (learner, reference, stub, decoys, accepted
  variants) and the ``kata`` fixture;
- :mod:`.judging`: the honest-kata verdict on stubs and decoys, one-line learner failures
  (:mod:`.messages`) and the structured record of every outcome (:mod:`.records`);
- :mod:`.fresh`: the ``fresh`` fixture, cases drawn per version of the learner's file;
- :mod:`.pins`: the ``hlo_snapshot`` fixture (pins themselves: :mod:`.snapshots`);
- :mod:`.unchecked`: the summary's list of tasks whose every test skipped (not done), and
  ``--group-skips`` (the tests a missing group skipped, for CI to run once the groups are in);
- :mod:`.gated`: version-gated facts recorded instead of asserted (``KATAS_GATED_FACTS=record``);
- :mod:`.collector`: Python's garbage collector set for the run once the tests are collected.

Kata code may not reach into the test machinery (:mod:`.guard`, installed at configure time), and
every task function returns the type its task asks for (:mod:`.contract`, applied on load).
"""

from .collector import pytest_collection_finish
from .fresh import fresh
from .gated import pytest_sessionstart
from .judging import (
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_makereport_when_caught,
)
from .options import (
    pytest_addoption,
    pytest_cmdline_main,
    pytest_configure,
    pytest_report_header,
)
from .pins import hlo_snapshot
from .unchecked import pytest_runtest_logreport, pytest_sessionfinish, pytest_terminal_summary
from .variants import (
    _fresh_jax_caches,
    kata,
    pytest_collection_modifyitems,
    pytest_generate_tests,
)

__all__ = [
    "_fresh_jax_caches",
    "fresh",
    "hlo_snapshot",
    "kata",
    "pytest_addoption",
    "pytest_cmdline_main",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_report_header",
    "pytest_runtest_call",
    "pytest_runtest_logreport",
    "pytest_runtest_makereport",
    "pytest_runtest_makereport_when_caught",
    "pytest_sessionfinish",
    "pytest_sessionstart",
    "pytest_terminal_summary",
]
