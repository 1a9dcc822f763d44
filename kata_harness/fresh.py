"""Fresh cases for predict and decide tasks: new for every version of the learner's file,
reproducible on demand.

A test that draws its cases (shapes, dtypes, meshes, depths over the whole domain its contract
states) asks for the ``fresh`` fixture: a ``random.Random`` seeded by ``--kata-seed`` when given,
else by the content of the module under test and the test's id. The same file gets the same
cases, so a grade never changes between runs; an edited file gets new ones, so a table copied
from failure messages does not carry over. A failure names its one case and the seed
(:meth:`Fresh.where`); ``--kata-seed N`` draws those cases again.

In reference mode the shipped stub draws the reference's cases: it fails at its first call
whatever it is given, and the expected side that tests keep per case (compiles, captured
profiles) then serves both.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from types import ModuleType

import pytest

OPTION = "--kata-seed"


class Fresh(random.Random):
    """A seeded generator that remembers its seed."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.seed_value = seed

    def where(self) -> str:
        return f"fresh case, seed {self.seed_value}: rerun with {OPTION}={self.seed_value}"


def seed_of(module: ModuleType, test_id: str) -> int:
    path = getattr(module, "__file__", None)
    content = Path(path).read_bytes() if path and Path(path).is_file() else b""
    digest = hashlib.sha256(content + test_id.encode()).digest()
    return int.from_bytes(digest[:4], "big")


@pytest.fixture
def fresh(request: pytest.FixtureRequest, kata: ModuleType) -> Fresh:
    """Cases drawn for this test and this module under test (see the module docstring)."""
    fixed = request.config.getoption(OPTION)
    if fixed is not None:
        return Fresh(fixed)
    callspec = getattr(request.node, "callspec", None)
    variant = callspec.params.get("kata") if callspec is not None else None
    if getattr(variant, "kind", None) == "stub":
        from . import curriculum, loading

        phase = curriculum.phase_of_path(Path(request.node.path))
        if phase is not None:
            reference = loading.load_impl(phase, "reference")
            return Fresh(seed_of(reference, request.node.nodeid.replace("[stub", "[reference")))
    return Fresh(seed_of(kata, request.node.nodeid))
