"""Shared fixtures for the HLO reader tests (prefixed `hlo_` to stay clear of other tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
CORPUS_FILES = sorted((HERE / "corpus").glob("*.hlo"))
FIXTURE_FILES = sorted((HERE / "fixtures").glob("*.hlo"))


def read_corpus(name: str) -> str:
    return (HERE / "corpus" / name).read_text()


def read_fixture(name: str) -> str:
    return (HERE / "fixtures" / name).read_text()


@pytest.fixture(scope="session")
def hlo_features_text() -> str:
    return read_fixture("features.hlo")


@pytest.fixture(scope="session")
def hlo_short_text() -> str:
    return read_fixture("minimal_short.hlo")
