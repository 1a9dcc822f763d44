"""Shared fixtures for the HLO reader tests (prefixed `hlo_` to stay clear of other tests), and
`run_cli`, which the CLI tests call."""

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


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """xla-inspect run in this process with ``argv``: (exit code, stdout, stderr)."""
    from xla_inspect.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
