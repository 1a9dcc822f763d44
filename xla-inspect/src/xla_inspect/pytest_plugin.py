"""pytest plugin for HLO facts: a failing comparison of `Matches` prints the IR it matched.

Installing xla-inspect registers it (the `pytest11` entry point), so a test suite needs no
conftest line; this module imports neither JAX nor pytest internals beyond the hook, and
`hlo_facts` imports JAX only when called.

Then `assert facts.fusions(kind="kLoop") <= 3` fails with the query, the count and one line per
match (its computation and instruction; for a fusion, the opcodes it fused); with `-vv`, every
match and the first lines of each fusion's body. The `hlo_facts` fixture is
`xla_inspect.hlo_facts` itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from xla_inspect.facts import Matches
from xla_inspect.facts import hlo_facts as _hlo_facts

_BRIEF_LINES = 7
_BRIEF_CHARS = 480
# `3 >= matches` is shown as `matches <= 3`
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: Any, right: Any
) -> list[str] | None:
    """For `matches <op> other` (either side): the query, its count, the excerpts."""
    matches, other, shown_op = (
        (left, right, op) if isinstance(left, Matches) else (right, left, _MIRROR.get(op, op))
    )
    if not isinstance(matches, Matches):
        return None
    whole = config.get_verbosity(pytest.Config.VERBOSITY_ASSERTIONS) >= 2
    if whole:
        explained = matches.explain().splitlines()
    else:  # pytest cuts an explanation to 8 lines and 640 characters below -vv (outside CI)
        explained = matches.explain(True, _BRIEF_CHARS, _BRIEF_LINES).splitlines()
    return [f"{explained[0]}, asserted {shown_op} {other!r}", *explained[1:]]


@pytest.fixture
def hlo_facts() -> Any:
    """`xla_inspect.hlo_facts`: compile a function (or read a stage or HLO text) into facts."""
    return _hlo_facts
