"""Which test caught each red-team answer and probe in the last census, so it runs there first.

A red-team answer or probe is judged over its task: the first test that fails on it through an
assertion catches it, and the task's later tests skip it (``variants.CAUGHT``). In file order an
answer first meets the tests that do not catch it (about a third of the census's red-team runs).
``decoys/redteam/catchers.json``, written by ``katas dev check --record``, names the test
that caught each one last time; that test's run of it moves to the front of its task.

The order changes the time, never a verdict: an answer the moved test does not catch goes on to
the task's other tests as before, so a stale or missing entry only costs the runs it would have
saved. Under pytest-xdist the move helps within a test file (a file runs on one worker).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from . import curriculum

PATH = curriculum.ROOT / "decoys" / "redteam" / "catchers.json"


def load() -> dict[str, dict[str, str]]:
    """{phase name: {variant id: test name}}; empty when the file is missing or unreadable."""
    try:
        found = json.loads(PATH.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def catchers_first[T](items: list[T], key: Callable[[T], tuple[str, str, str] | None]) -> None:
    """Move each red-team item whose test caught its variant last time to where that variant's
    first item stands (in place; every other item keeps its order). ``key`` gives an item's
    (phase name, variant id, test name) when it runs a red-team answer or probe, else None."""
    known = load()
    if not known:
        return
    first: dict[tuple[str, str], int] = {}
    places: list[float] = []
    for index, item in enumerate(items):
        found = key(item)
        place = float(index)
        if found is not None:
            phase, variant, test = found
            start = first.setdefault((phase, variant), index)
            if known.get(phase, {}).get(variant) == test and start < index:
                place = start - 0.5
        places.append(place)
    order = sorted(range(len(items)), key=places.__getitem__)
    items[:] = [items[i] for i in order]


def update(caught: Iterable[tuple[str, str, str]], phases: Iterable[str]) -> int:
    """Write what this census caught (phase name, variant id, test name) for ``phases``, keeping
    other phases' entries; the number of entries written."""
    known = load()
    fresh: dict[str, dict[str, str]] = {phase: {} for phase in phases}
    for phase, variant, test in caught:
        if phase in fresh:
            fresh[phase].setdefault(variant, test)
    known.update({phase: dict(sorted(entries.items())) for phase, entries in fresh.items()})
    ordered = dict(sorted(known.items(), key=lambda kv: int(kv[0].removeprefix("phase"))))
    PATH.write_text(json.dumps(ordered, indent=1) + "\n")
    return sum(len(entries) for entries in fresh.values())
