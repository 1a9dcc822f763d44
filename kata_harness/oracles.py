"""Independent oracles the kata tests compare with, kept out of the test files.

XLA's own HLO parser (jaxlib's private ``jaxlib._hlo``, the one the reader's oracle tests use) is
the judge of what a module is: whether XLA reads a text at all, and what it makes of it.
"""

from __future__ import annotations

from typing import Any


def xla_module(text: str) -> Any:
    """The module XLA's parser builds from ``text`` (raises what XLA raises)."""
    from jaxlib import _hlo  # type: ignore[attr-defined]

    return _hlo.hlo_module_from_text(text)


def xla_accepts(text: str) -> bool:
    try:
        xla_module(text)
    except Exception:  # noqa: BLE001  (jaxlib raises its own error types)
        return False
    return True
