"""The reader agrees with XLA's own C++ parser on every corpus module and text fixture.

The oracle is jaxlib's private `jaxlib._hlo.hlo_module_from_text`, used here only. Its opcodes
are enum members (`kExp` for `exponential`), so each instruction's opcode is read from the
C++ printer's canonical `name = shape opcode(...)` text instead, except for the generic async
ops, which the printer names after the op they wrap (`abs-start`): those are counted by enum
(`async-start`), as the hand-written fixture spells them.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip("jaxlib._hlo.hlo_module_from_text is absent in this jaxlib",
                allow_module_level=True)

HERE = Path(__file__).parent
TEXT_FILES = sorted(HERE.glob("corpus/*.hlo")) + sorted(HERE.glob("fixtures/*.hlo"))
_PRINTED_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")
_ASYNC = {"kAsyncStart": "async-start", "kAsyncUpdate": "async-update", "kAsyncDone": "async-done"}


def _oracle(text: str) -> tuple[int, Counter[str]]:
    module = _hlo.hlo_module_from_text(text)
    counts: Counter[str] = Counter()
    for computation in module.computations():
        for instruction in computation.instructions():
            opcode = _ASYNC.get(instruction.opcode.name)
            if opcode is None:
                opcode = _PRINTED_OPCODE.search(instruction.to_string()).group(1)
            counts[opcode] += 1
    return len(module.computations()), counts


@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: p.name)
def test_reader_matches_xla_parser(path) -> None:
    text = path.read_text()
    module = parse_hlo(text)
    computations, counts = _oracle(text)
    assert len(module.computations) == computations
    assert sum(len(c.instructions) for c in module.computations) == counts.total()
    assert opcode_counts(module) == counts
