"""Shared fixtures for the HLO reader tests (prefixed `hlo_` to stay clear of other tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _fixture(name: str) -> str:
    return (HERE / "fixtures" / name).read_text()


@pytest.fixture(scope="session")
def hlo_features_text() -> str:
    return _fixture("features.hlo")


@pytest.fixture(scope="session")
def hlo_short_text() -> str:
    return _fixture("minimal_short.hlo")
