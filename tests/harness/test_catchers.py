"""The census's catchers-first order: a red-team answer runs first on the test that caught it
last time; every other item keeps its place, and a stale entry changes nothing but the time."""

from __future__ import annotations

import json

import pytest

from kata_harness import catchers

# items as (phase, variant, test); None marks a test run on the reference or a decoy
ITEMS = [
    ("phase3", None, "test_a"),
    ("phase3", "redteam-x", "test_a"),
    ("phase3", "redteam-y", "test_a"),
    ("phase3", None, "test_b"),
    ("phase3", "redteam-x", "test_b"),
    ("phase3", "redteam-y", "test_b"),
    ("phase3", "redteam-x", "test_c"),
]


def _key(item):
    phase, variant, test = item
    return None if variant is None else (phase, variant, test)


@pytest.fixture
def known(tmp_path, monkeypatch):
    path = tmp_path / "catchers.json"
    monkeypatch.setattr(catchers, "PATH", path)

    def write(entries):
        path.write_text(json.dumps(entries))

    return write


def test_the_catching_run_moves_to_its_variants_first_place(known):
    known({"phase3": {"redteam-x": "test_c", "redteam-y": "test_a"}})
    items = list(ITEMS)
    catchers.catchers_first(items, _key)
    assert items == [
        ("phase3", None, "test_a"),
        ("phase3", "redteam-x", "test_c"),
        ("phase3", "redteam-x", "test_a"),
        ("phase3", "redteam-y", "test_a"),
        ("phase3", None, "test_b"),
        ("phase3", "redteam-x", "test_b"),
        ("phase3", "redteam-y", "test_b"),
    ]


@pytest.mark.parametrize(
    "entries",
    [
        {},
        {"phase3": {"redteam-x": "test_gone", "redteam-gone": "test_b"}},
        {"phase4": {"redteam-x": "test_c"}},
    ],
    ids=["no file", "stale tests and answers", "another phase"],
)
def test_a_missing_or_stale_entry_keeps_the_order(known, entries):
    known(entries)
    items = list(ITEMS)
    catchers.catchers_first(items, _key)
    assert items == ITEMS


def test_update_replaces_the_checked_phases_and_keeps_the_others(known):
    known({"phase3": {"redteam-old": "test_a"}, "phase10": {"redteam-z": "test_z"}})
    written = catchers.update(
        [
            ("phase3", "redteam-x", "test_c"),
            ("phase3", "redteam-x", "test_d"),
            ("phase4", "p", "t"),
        ],
        ["phase3"],
    )
    assert written == 1
    assert catchers.load() == {
        "phase3": {"redteam-x": "test_c"},
        "phase10": {"redteam-z": "test_z"},
    }
    assert list(catchers.load()) == ["phase3", "phase10"]  # in phase order, not text order
