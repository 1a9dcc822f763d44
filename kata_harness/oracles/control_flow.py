"""Phase 7's oracles: the conditionals of a module as XLA's own parser builds it ((index type,
branches), in module order), and the `while` instructions XLA's module of a compiled program
holds (kata_harness.xla_counts reads XLA's objects, never the text).

Each function takes a module's text or a program and its arguments, never the kata's answer.
"""

from __future__ import annotations

from collections.abc import Callable

import jax

from .. import xla_counts
from . import xla_parsed


def conditionals_of_text(text: str) -> list[tuple[str, int]]:
    """XLA's own module of `text`: (index type, branches) per conditional, in text order."""
    return xla_counts.conditionals(xla_parsed(text), text)


def whiles_compiled(fn: Callable, args: tuple) -> int:
    """`while` instructions in XLA's module of ``fn`` compiled at ``args``, every computation."""
    compiled = jax.jit(fn).lower(*args).compile()
    return xla_counts.opcode_counts(compiled)["while"]
