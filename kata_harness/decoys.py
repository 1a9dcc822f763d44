"""Decoys and accepted variants: other answers to a task, run by the very tests of that task.

A decoy module (``decoys/phaseN.py``) holds two kinds of functions:

- :func:`decoy`: a plausible *wrong* answer. In reference mode it is swapped into a fresh copy of
  the reference module, and every test it names in ``caught_by`` must fail on that copy through
  an assertion of the test (see :mod:`kata_harness.verdict`).
- :func:`accepted`: a *correct* answer spelled differently from the reference (relu through
  ``jnp.where`` instead of ``jnp.maximum``, say). Swapped in the same way, every test of its task
  must pass, so the tests stay about the contract and not about the reference's spelling.

The author of a test shares its blind spots, so a red team that never saw the tests writes more
(``decoys/redteam/phaseN.py``, from the phase's README, stub, tasks.toml and programs.py only):

- :func:`wrong`: a plausible wrong answer, run by *every* test of its task (the red team does not
  know their names); it is caught when at least one of them fails through an assertion, as a
  learner's answer is "not done" when one test fails.
- a probe: a whole kata file (``decoys/redteam/phaseN_probes/NAME.py``, first line
  ``# probe: FUNCTION: why``) that tries to get around the harness (the guard, the predict
  refusal, the contract). It is loaded as a learner's file is, and rejected when the guard refuses
  it or a test of its task fails through an assertion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ATTRIBUTE = "__kata_decoy__"
MIN_DECOYS = 2  # per task: one wrong answer is one example of being wrong
MIN_RED_TEAM = 5  # red-team wrong answers per phase
MIN_PROBES = 2  # red-team probes per phase


@dataclass(frozen=True, slots=True)
class Decoy:
    name: str
    replaces: str
    caught_by: tuple[str, ...]
    why: str
    function: Callable[..., Any]
    gate: str | None = None  # a key of versions.GATES: wrong only where that fact holds


@dataclass(frozen=True, slots=True)
class Accepted:
    name: str
    replaces: str
    why: str
    function: Callable[..., Any]


@dataclass(frozen=True, slots=True)
class RedTeam:
    name: str
    replaces: str
    why: str
    function: Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Probe:
    name: str
    replaces: str
    why: str
    path: Path


PROBE_HEADER = re.compile(r"#\s*probe:\s*(\w+)\s*:\s*(.+)")


def decoy(
    replaces: str, *, caught_by: list[str] | tuple[str, ...], why: str, gate: str | None = None
):
    """Mark a function as a wrong implementation of the task function ``replaces``; ``gate``
    names the version-gated fact (``versions.GATES``) that makes it wrong, when only some JAX
    versions do."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        spec = Decoy(function.__name__, replaces, tuple(caught_by), why, function, gate)
        setattr(function, ATTRIBUTE, spec)
        return function

    return register


def accepted(replaces: str, *, why: str):
    """Mark a function as a correct implementation of ``replaces`` that every test must accept."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        setattr(function, ATTRIBUTE, Accepted(function.__name__, replaces, why, function))
        return function

    return register


def wrong(replaces: str, *, why: str):
    """Mark a function as a red-team wrong answer to ``replaces`` (``why``: the contract clause it
    breaks, and an input where it answers wrongly)."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        setattr(function, ATTRIBUTE, RedTeam(function.__name__, replaces, why, function))
        return function

    return register


def probe_of(path: Path) -> Probe:
    """The probe a kata file in a ``phaseN_probes`` folder declares on its first line."""
    first = path.read_text(encoding="utf-8").partition("\n")[0]
    found = PROBE_HEADER.fullmatch(first.strip())
    if found is None:
        raise ValueError(f"{path}: the first line must be '# probe: FUNCTION: why'")
    return Probe(path.stem, found.group(1), found.group(2).strip(), path)


def _registered(module: object) -> list[Decoy | Accepted | RedTeam]:
    found = [getattr(v, ATTRIBUTE) for v in vars(module).values() if hasattr(v, ATTRIBUTE)]
    return sorted(found, key=lambda d: d.name)


def decoys_in(module: object) -> list[Decoy]:
    """The decoys of ``module`` that are wrong on the running JAX (a gated one is listed in the
    run's header where its gate is off)."""
    from .versions import holds

    return [
        d for d in _registered(module) if isinstance(d, Decoy) and (d.gate is None or holds(d.gate))
    ]


def accepted_in(module: object) -> list[Accepted]:
    return [d for d in _registered(module) if isinstance(d, Accepted)]


def redteam_in(module: object) -> list[RedTeam]:
    return [d for d in _registered(module) if isinstance(d, RedTeam)]
