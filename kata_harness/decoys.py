"""Decoys: plausible wrong answers that a kata's tests must reject.

A decoy module (``decoys/phaseN.py``) holds functions decorated with :func:`decoy`. In reference
mode each decoy is swapped into a fresh copy of the reference module, and every test it names in
``caught_by`` must fail against that copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ATTRIBUTE = "__kata_decoy__"


@dataclass(frozen=True, slots=True)
class Decoy:
    name: str
    replaces: str
    caught_by: tuple[str, ...]
    why: str
    function: Callable[..., Any]


def decoy(replaces: str, *, caught_by: list[str] | tuple[str, ...], why: str):
    """Mark a function as a wrong implementation of the task function ``replaces``."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        spec = Decoy(function.__name__, replaces, tuple(caught_by), why, function)
        setattr(function, ATTRIBUTE, spec)
        return function

    return register


def decoys_in(module: object) -> list[Decoy]:
    found = [getattr(v, ATTRIBUTE) for v in vars(module).values() if hasattr(v, ATTRIBUTE)]
    return sorted(found, key=lambda d: d.name)
